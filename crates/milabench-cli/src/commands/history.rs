//! `milabench history`: one benchmark's perf over the runs of the results database, each change
//! judged against the noise.

use milabench::ExitCode;
use milabench_report::Verdict;
use milabench_store::{HistoryQuery, HistoryRow};

use crate::args::{GlobalArgs, HistoryArgs};
use crate::output::{note, warn, write_output};
use crate::table::{Table, number, short_time, system};

/// Prints the history.
pub fn run(global: &GlobalArgs, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let mut store = crate::database::open_existing(global)?;
    let rows = store.history(&HistoryQuery {
        bench: args.bench.clone(),
        gpu: args.gpu.clone(),
        since: args.since,
        threshold_pct: args.threshold.unwrap_or(0.0),
    })?;
    if rows.is_empty() {
        note(&format!(
            "no results match in {}; `milabench db list` shows its runs, `milabench db import FOLDER` adds one",
            store.location()
        ));
    }
    let table = Table {
        columns: &[
            "bench", "run", "date", "system", "perf", "sem%", "n", "fail", "change", "95% CI",
            "verdict", "vs",
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
                    r.change_ci95
                        .filter(|ci| ci.low.is_finite() && ci.high.is_finite())
                        .map_or_else(String::new, |ci| {
                            format!("[{:+.1}%, {:+.1}%]", ci.low, ci.high)
                        }),
                    r.verdict
                        .map_or_else(String::new, |v| v.as_str().to_owned()),
                    r.previous_run.clone().unwrap_or_default(),
                ]
            })
            .collect(),
        items: &rows,
    };
    write_output(None, &table.render(args.format)?)?;
    let Some(threshold) = args.threshold else {
        return Ok(ExitCode::Success);
    };
    let regressions = latest_regressions(&rows);
    for row in &regressions {
        warn(&format!(
            "regression: {} in {}: {:.1}% slower than {}, beyond the noise and the {threshold}% threshold",
            row.bench,
            row.run,
            -row.change_pct.unwrap_or(f64::NAN),
            row.previous_run.as_deref().unwrap_or_default()
        ));
    }
    Ok(if regressions.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}

/// The rows that are the latest of their benchmark on their system and are worse than the
/// previous comparable run (the rows come ordered by benchmark, then time).
fn latest_regressions(rows: &[HistoryRow]) -> Vec<&HistoryRow> {
    let mut latest: std::collections::BTreeMap<(&str, Option<&str>, i64), &HistoryRow> =
        std::collections::BTreeMap::new();
    for row in rows {
        latest.insert(
            (row.bench.as_str(), row.gpu_model.as_deref(), row.gpu_count),
            row,
        );
    }
    latest
        .into_values()
        .filter(|row| row.verdict == Some(Verdict::Worse))
        .collect()
}
