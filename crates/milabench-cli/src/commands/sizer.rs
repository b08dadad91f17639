//! `milabench sizer show`: the memory model of each benchmark of a scaling file.

use milabench::ExitCode;
use milabench::suite::{ScalingFile, observations, to_bytes};

use crate::args::{SizerCommand, SizerShowArgs, TableFormat};
use crate::output::write_output;
use crate::table::{Table, number};

/// Runs a `sizer` command.
pub fn run(command: &SizerCommand) -> crate::errors::Result<ExitCode> {
    match command {
        SizerCommand::Show(args) => show(args),
    }
}

/// One benchmark's model, for the table and its JSON.
#[derive(serde::Serialize)]
struct ModelRow {
    bench: String,
    observations: usize,
    mib_per_item: Option<f64>,
    base_mib: Option<f64>,
    rms_error_mib: Option<f64>,
    max_error_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_size_for_capacity: Option<f64>,
}

fn show(args: &SizerShowArgs) -> crate::errors::Result<ExitCode> {
    if !args.file.is_file() {
        crate::errors::bail!(
            "the scaling file {} does not exist\n  fix: name a file that `sizer.save` wrote (docs/sweeps.md)",
            args.file
        );
    }
    let capacity_mib = match &args.capacity {
        Some(text) => Some(to_bytes(text).map(|b| b / (1024.0 * 1024.0)).ok_or_else(|| {
            crate::errors::usage!(
                "--capacity {text:?} is not a memory size\n  fix: write it like `80 GiB`, `81920 MiB` or `40GB`"
            )
        })?),
        None => None,
    };
    let file = ScalingFile::load(args.file.as_std_path())?;
    let items: Vec<ModelRow> = file
        .benches()
        .map(|(bench, entry)| {
            let model = file.memory_model(bench);
            ModelRow {
                bench: bench.to_string(),
                observations: observations(entry).len(),
                mib_per_item: model.map(|m| m.mib_per_item),
                base_mib: model.map(|m| m.base_mib),
                rms_error_mib: model.map(|m| m.rms_error_mib),
                max_error_mib: model.map(|m| m.max_error_mib),
                batch_size_for_capacity: capacity_mib
                    .and_then(|c| model.map(|m| m.batch_size_for(c).floor())),
            }
        })
        .collect();
    let mut columns = vec![
        "bench",
        "obs",
        "MiB/item",
        "base MiB",
        "rms err MiB",
        "max err MiB",
    ];
    if capacity_mib.is_some() {
        columns.push("batch size");
    }
    let rows = items
        .iter()
        .map(|row| {
            let mut cells = vec![
                row.bench.clone(),
                row.observations.to_string(),
                number(row.mib_per_item, 1),
                number(row.base_mib, 0),
                number(row.rms_error_mib, 0),
                number(row.max_error_mib, 0),
            ];
            if capacity_mib.is_some() {
                cells.push(number(row.batch_size_for_capacity, 0));
            }
            cells
        })
        .collect();
    let table = Table {
        columns: &columns,
        rows,
        items: &items,
    };
    write_output(None, &table.render(TableFormat::Text)?)?;
    Ok(ExitCode::Success)
}
