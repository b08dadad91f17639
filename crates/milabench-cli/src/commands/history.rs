//! `milabench history`: one benchmark's perf over the runs of the results database, each change
//! judged against the noise; the runs of a sweep, and one point of it followed over time.

use milabench::ExitCode;
use milabench::results::{DEFAULT_NOISE_FLOOR_PCT, Verdict};
use milabench::store::{HistoryQuery, HistoryRow, Store, SweepPoint};

use crate::args::{GlobalArgs, HistoryArgs, TableFormat};
use crate::output::{note, warn, write_output};
use crate::table::{Table, number, short_time, system};

/// Prints the history, or with `--sweep` alone the sweep's runs.
pub fn run(global: &GlobalArgs, args: &HistoryArgs) -> crate::errors::Result<ExitCode> {
    let mut store = crate::database::open_existing(global)?;
    if let Some(sweep) = &args.sweep
        && args.bench.is_none()
        && args.point.is_empty()
        && args.gpu.is_none()
        && args.since.is_none()
        && args.threshold.is_none()
    {
        return sweep_runs(&mut store, sweep, args);
    }
    let rows = store.history(&HistoryQuery {
        bench: args.bench.clone(),
        gpu: args.gpu.clone(),
        since: args.since,
        sweep: args.sweep.clone(),
        point: args.point.clone(),
        threshold_pct: args.threshold,
    })?;
    if rows.is_empty() {
        match &args.sweep {
            Some(sweep) => nothing_in_sweep(&mut store, sweep)?,
            None => note(&format!(
                "no results match in {}; `milabench db list` shows its runs, `milabench db import FOLDER` adds one",
                store.location()
            )),
        }
    }
    // The point of each run, when some are runs of a sweep.
    let with_points = rows.iter().any(|r| r.sweep.is_some());
    let columns: Vec<&str> = [
        "bench", "run", "point", "date", "system", "perf", "sem%", "n", "fail", "change", "95% CI",
        "verdict", "vs",
    ]
    .into_iter()
    .filter(|c| with_points || *c != "point")
    .collect();
    let table = Table {
        columns: &columns,
        rows: rows
            .iter()
            .map(|r| {
                let mut cells = vec![r.bench.clone(), r.run.clone()];
                if with_points {
                    cells.push(point(r.sweep.as_ref()));
                }
                cells.extend([
                    short_time(r.date.as_deref()),
                    system(r.gpu_model.as_deref(), r.gpu_count, r.cpu.as_deref()),
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
                ]);
                cells
            })
            .collect(),
        items: &rows,
    };
    let mut text = table.render(args.format)?;
    if matches!(args.format, TableFormat::Text | TableFormat::Md)
        && rows.iter().any(|r| r.verdict.is_some())
    {
        // The JSON rows carry it as `threshold_pct`.
        text.push_str(&match args.threshold {
            Some(pct) => format!("Threshold: {pct}% (--threshold)\n"),
            None => format!(
                "Threshold: {DEFAULT_NOISE_FLOOR_PCT}% (the default noise floor; --threshold sets another)\n"
            ),
        });
    }
    write_output(None, &text)?;
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

/// The sweep's runs, oldest first, with their points.
fn sweep_runs(
    store: &mut Store,
    sweep: &str,
    args: &HistoryArgs,
) -> crate::errors::Result<ExitCode> {
    let runs = store.sweep_runs(sweep)?;
    if runs.is_empty() {
        nothing_in_sweep(store, sweep)?;
    }
    let mut columns = crate::database::RUN_COLUMNS.to_vec();
    columns.insert(1, "point");
    let table = Table {
        columns: &columns,
        rows: runs
            .iter()
            .map(|r| {
                let mut cells = crate::database::run_cells(r);
                cells.insert(1, point(r.sweep.as_ref()));
                cells
            })
            .collect(),
        items: &runs,
    };
    write_output(None, &table.render(args.format)?)?;
    Ok(ExitCode::Success)
}

/// Says that nothing matched in sweep `sweep`, and which sweeps the store knows.
fn nothing_in_sweep(store: &mut Store, sweep: &str) -> crate::errors::Result<()> {
    let known = store.sweeps()?;
    let fix = if known.contains(&sweep.to_owned()) {
        format!("`milabench history --sweep {sweep}` lists its runs and their points")
    } else if known.is_empty() {
        "it holds no run of a sweep: `milabench run --sweep` and a system file's `multirun` record theirs, `milabench db import` groups the folders of one".to_owned()
    } else {
        format!("its sweeps: {}", known.join(", "))
    };
    note(&format!(
        "no results of sweep `{sweep}` match in {}; {fix}",
        store.location()
    ));
    Ok(())
}

/// The settings of a run's point, empty for a run outside sweeps.
fn point(sweep: Option<&SweepPoint>) -> String {
    sweep.map_or_else(String::new, SweepPoint::shown)
}

/// The rows that are the latest of their benchmark on their system (at their point of a sweep)
/// and are worse than the previous comparable run (the rows come ordered by benchmark, then
/// time).
fn latest_regressions(rows: &[HistoryRow]) -> Vec<&HistoryRow> {
    type Comparable<'a> = (&'a str, Option<&'a str>, i64, Option<&'a SweepPoint>);
    let mut latest: std::collections::BTreeMap<Comparable<'_>, &HistoryRow> =
        std::collections::BTreeMap::new();
    for row in rows {
        latest.insert(
            (
                row.bench.as_str(),
                row.gpu_model.as_deref(),
                row.gpu_count,
                row.sweep.as_ref(),
            ),
            row,
        );
    }
    latest
        .into_values()
        .filter(|row| row.verdict == Some(Verdict::Worse))
        .collect()
}
