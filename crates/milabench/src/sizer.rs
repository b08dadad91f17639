//! `sizer.save`: after a run, each benchmark that succeeded adds what it measured (its batch
//! size, its largest GPU memory, its mean rate, its CPU workers) to the scaling file as one
//! observation; the observations already there are kept. `sizer.config` (read when planning)
//! then fits a memory model to them for `auto_batch`.
//!
//! The batch size is read from the benchmark's planned arguments (`--batch-size N`,
//! `--batch_size=N`, `batch_size=N`), where `auto_batch(n)` has already been evaluated; a
//! benchmark without such an argument, or without GPU memory samples, adds nothing.

use std::path::{Path, PathBuf};

use milabench_config::placeholders::{ArgResolver, LaunchContext};
use milabench_config::scaling::{NewObservation, ScalingFile};
use milabench_config::settings::options::{CpuOptions, OptionSource, SizerOptions};
use milabench_report::{Report, ReportOptions, report_runs};

use crate::error::Error;
use crate::resolve::Resolved;

/// The batch size an argument list asks for, if it names one.
pub fn batch_size_of<S: AsRef<str>>(argv: &[S]) -> Option<u64> {
    const NAMES: [&str; 2] = ["batch-size", "batch_size"];
    let mut args = argv.iter().map(AsRef::as_ref).peekable();
    while let Some(arg) = args.next() {
        let bare = arg.trim_start_matches('-');
        if let Some((name, value)) = bare.split_once('=') {
            if NAMES.contains(&name) {
                return value.trim().parse().ok();
            }
        } else if arg.starts_with('-') && NAMES.contains(&bare) {
            return args.peek().and_then(|v| v.trim().parse().ok());
        }
    }
    None
}

/// Adds the observations of the run in `run_dir` (its report `report`, read here when `None`;
/// the command lines its benchmarks ran with, `first_argv`, the first of each as
/// [`RunSummary`](crate::observe::RunSummary) keeps them) to the file `sizer.save` names;
/// returns the file and the benchmarks added, or `None` when `sizer.save` is not set.
pub fn save_observations(
    resolved: &Resolved,
    run_dir: &Path,
    report: Option<&Report>,
    first_argv: &[(String, Vec<String>)],
) -> Result<Option<(PathBuf, Vec<String>)>, Error> {
    let system = resolved.suite.system.tree.to_json();
    let source = OptionSource::new(&resolved.host.env, system.get("options"));
    let Some(save) = SizerOptions::read(&source)?.save else {
        return Ok(None);
    };
    let save = PathBuf::from(save);
    let n_worker = ArgResolver::new(LaunchContext {
        system: system.clone(),
        host_cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        gpu_count: resolved.suite.system.gpu_count,
        cpu: CpuOptions::read(&source)?,
        ..LaunchContext::default()
    })
    .variables()
    .get("n_worker")
    .and_then(serde_json::Value::as_u64)
    .unwrap_or(0);
    let batch_sizes: Vec<(&str, u64)> = first_argv
        .iter()
        .filter_map(|(bench, argv)| Some((bench.as_str(), batch_size_of(argv)?)))
        .collect();
    let read;
    let report = match report {
        Some(report) => report,
        None => {
            let runs = [run_dir.display().to_string()];
            (read, _) = report_runs(
                &runs,
                Some(&resolved.report_entries()),
                &ReportOptions::default(),
            )?;
            &read
        }
    };
    let time = jiff::Timestamp::now().as_second();
    let mut file = ScalingFile::load(&save)?;
    let mut added = Vec::new();
    for row in &report.rows {
        let Some((_, batch_size)) = batch_sizes.iter().find(|(b, _)| *b == row.name) else {
            continue;
        };
        let measured = row.fail == 0.0 && row.peak_memory.is_finite() && row.perf.is_finite();
        if !measured {
            continue;
        }
        file.add(
            &row.name,
            &NewObservation {
                batch_size: *batch_size,
                memory_mib: row.peak_memory.max(0.0).round() as u64,
                perf: row.perf,
                cpu: n_worker,
                time,
            },
        );
        added.push(row.name.clone());
    }
    if !added.is_empty() {
        file.save(&save)?;
    }
    Ok(Some((save, added)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_in_arguments() {
        assert_eq!(batch_size_of(&["--batch-size", "64"]), Some(64));
        assert_eq!(batch_size_of(&["x", "--batch_size=32"]), Some(32));
        assert_eq!(batch_size_of(&["batch_size=8", "--lr", "1"]), Some(8));
        assert_eq!(batch_size_of(&["--lr", "1", "batch-size"]), None);
        assert_eq!(batch_size_of(&["--batch-size"]), None);
        assert_eq!(batch_size_of::<&str>(&[]), None);
    }
}
