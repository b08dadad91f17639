//! `milabench history`: one benchmark's perf over the runs of the results database.

use milabench::ExitCode;
use milabench::store::HistoryQuery;

use crate::args::{GlobalArgs, HistoryArgs};
use crate::output::{note, write_output};
use crate::table::{Table, number, short_time, system};

/// Prints the history.
pub fn run(global: &GlobalArgs, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let mut store = super::store::open(global)?;
    let rows = store.history(&HistoryQuery {
        bench: args.bench.clone(),
        gpu: args.gpu.clone(),
        since: args.since,
    })?;
    if rows.is_empty() {
        note(&format!(
            "no results match in {}; `milabench db list` shows its runs, `milabench db import FOLDER` adds one",
            store.location()
        ));
    }
    let table = Table {
        columns: &[
            "bench", "run", "date", "system", "perf", "sem%", "n", "fail", "change", "vs",
        ],
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.bench.clone(),
                    r.run.clone(),
                    short_time(r.date.as_deref()),
                    system(r.gpu_model.as_deref(), r.gpu_count, None),
                    number(r.perf, 2),
                    number(r.sem_pct.map(|x| x * 100.0), 1),
                    r.n.map_or_else(String::new, |n| n.to_string()),
                    r.fail.map_or_else(String::new, |n| n.to_string()),
                    r.change_pct
                        .map_or_else(String::new, |c| format!("{c:+.1}%")),
                    r.previous_run.clone().unwrap_or_default(),
                ]
            })
            .collect(),
        items: &rows,
    };
    write_output(None, &table.render(args.format)?)?;
    Ok(ExitCode::Success)
}
