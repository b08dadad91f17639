//! `milabench prepare`: run each selected benchmark's prepare step.

use milabench::config::settings::EnvVars;
use milabench::exec::ProcessOutcome;
use milabench::run::{RunSummary, SetupFailure};
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
    Ok(prepare(&session)?.0)
}

/// Runs the prepare steps of `session` with a live display; returns the exit code (and says
/// which benchmarks failed) and the failures, each with its reason.
pub(super) fn prepare(session: &Session) -> anyhow::Result<(ExitCode, Vec<SetupFailure>)> {
    let interrupt = milabench::exec::Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let options = super::run::run_options(interrupt, 1, false, None)?;
    let summary = session.prepare(&options, &mut LiveDisplay::for_prepare());
    ctrl_c.uninstall();
    let summary = summary?;
    Ok((judge(&summary), failures(&summary)))
}

/// The benchmarks whose prepare step failed, with the status of their first failed process and
/// where its log is.
fn failures(summary: &RunSummary) -> Vec<SetupFailure> {
    summary
        .outcomes
        .iter()
        .filter_map(|outcome| {
            let failed = outcome.processes.iter().find(|p| !p.exited_cleanly())?;
            Some(SetupFailure {
                bench: outcome.bench.clone(),
                reason: format!(
                    "its prepare step failed ({}); its log: {}",
                    match (&failed.return_code, failed.errors.first()) {
                        (_, Some(error)) => error.clone(),
                        (milabench::metrics::ReturnCode::Code(code), None) => {
                            format!("exit status {code}")
                        }
                        (other, None) => format!("ended with {other:?}"),
                    },
                    failed.data_file.display()
                ),
            })
        })
        .collect()
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
