//! `milabench prepare`: run each selected benchmark's prepare step.

use milabench::config::settings::EnvVars;
use milabench::exec::ProcessOutcome;
use milabench::run::RunSummary;
use milabench::{ExitCode, Session};

use crate::args::{GlobalArgs, PrepareArgs};
use crate::live::LiveDisplay;
use crate::output::{note, warn};
use crate::settings::suite_session;

/// Runs the command.
pub fn run(global: &GlobalArgs, args: &PrepareArgs) -> anyhow::Result<ExitCode> {
    let session = suite_session(
        global,
        &args.suite,
        Default::default(),
        None,
        EnvVars::from_process(),
    )?;
    prepare(&session)
}

/// Runs the prepare steps of `session` with a live display; returns the exit code (and says
/// which benchmarks failed).
pub(super) fn prepare(session: &Session) -> anyhow::Result<ExitCode> {
    let interrupt = milabench::exec::Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let options = super::run::run_options(interrupt, 1, false, None)?;
    let summary = session.prepare(&options, &mut LiveDisplay::for_prepare());
    ctrl_c.uninstall();
    Ok(judge(&summary?))
}

/// The exit code of prepare steps.
fn judge(summary: &RunSummary) -> ExitCode {
    if summary.outcomes.is_empty() {
        note("nothing to prepare");
        return ExitCode::Success;
    }
    let failed: Vec<&str> = summary
        .outcomes
        .iter()
        .filter(|o| !o.processes.iter().all(ProcessOutcome::exited_cleanly))
        .map(|o| o.bench.as_str())
        .collect();
    note(&format!("prepare logs: {}", summary.run_dir.display()));
    if summary.interrupted {
        ExitCode::Interrupted
    } else if failed.is_empty() {
        ExitCode::Success
    } else {
        warn(&format!("prepare failed for: {}", failed.join(", ")));
        ExitCode::BenchmarkFailures
    }
}
