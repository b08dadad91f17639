//! What several commands show alike: the install progress and results
//! ([`install`]), the live view and the results of the whole pipeline ([`pipeline`]), the
//! preflight's table, the closing lines of prepare steps and of `sizer.save`.

pub(crate) mod install;
pub(crate) mod pipeline;

use std::path::Path;

use milabench::observe::{Check, Status};
use milabench::observe::{RunSummary, SetupFailure};

use crate::output::{note, warn};

/// The checks as a table, each problem with its fix under it.
pub(crate) fn check_table(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        let status = match check.status {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!(
            "{status:<4}  {:<width$}  {}\n",
            check.name, check.detail
        ));
        if !check.fix.is_empty() {
            out.push_str(&format!("      {:<width$}  fix: {}\n", "", check.fix));
        }
    }
    out
}

/// Says where the prepare steps of `summary` wrote their logs and which failed.
pub(crate) fn prepare_lines(summary: &RunSummary) {
    if summary.outcomes.is_empty() {
        note("nothing to prepare");
        return;
    }
    note(&format!("prepare logs: {}", summary.run_dir.display()));
    let failed: Vec<String> = summary
        .setup_failures()
        .into_iter()
        .map(|f| f.bench)
        .collect();
    if !summary.interrupted && !failed.is_empty() {
        warn(&format!("prepare failed for: {}", failed.join(", ")));
    }
}

/// Says that the run goes on without the benchmarks whose prepare step failed.
pub(crate) fn setup_failure_line(failures: &[SetupFailure]) {
    if failures.is_empty() {
        return;
    }
    warn(&format!(
        "prepare failed for {}: the other benchmarks run (pass --no-setup to run without preparing)",
        failures
            .iter()
            .map(|f| f.bench.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
}

/// The line that says what `sizer.save` recorded.
pub(crate) fn sizer_saved_line(file: &Path, benches: &[String]) -> String {
    if benches.is_empty() {
        format!(
            "sizer.save: nothing added to {} (no benchmark succeeded with a batch-size argument and GPU memory samples)",
            file.display()
        )
    } else {
        format!(
            "sizer.save: observations of {} added to {}",
            benches.join(", "),
            file.display()
        )
    }
}
