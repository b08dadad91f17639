//! `milabench prepare`: run each selected benchmark's prepare step.

use std::time::Duration;

use milabench::ExitCode;
use milabench::config::settings::EnvVars;
use milabench::run::RunOptions;

use crate::args::{GlobalArgs, PrepareArgs};
use crate::live::LiveDisplay;
use crate::output::{note, warn};
use crate::settings::load_suite_settings;

/// Runs the command.
pub fn run(global: &GlobalArgs, args: &PrepareArgs) -> anyhow::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings = load_suite_settings(global, &args.suite, Default::default(), &env)?;
    let resolved = milabench::resolve(&settings, &args.suite.selection(), &env)?;
    for warning in &resolved.suite.warnings {
        warn(warning);
    }
    resolved.check_runnable()?;
    let interrupt = milabench::exec::Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let options = RunOptions {
        repeat: 1,
        resume: false,
        grace: Duration::from_secs(10),
        interrupt,
        path: std::env::var("PATH").unwrap_or_default(),
        watchdog: Some(super::watchdog()?),
        precision: None,
    };
    let summary =
        milabench::run::prepare_suite(&resolved, &env, &options, &mut LiveDisplay::for_prepare())?;
    ctrl_c.uninstall();
    if summary.outcomes.is_empty() {
        note("nothing to prepare");
        return Ok(ExitCode::Success);
    }
    let failed: Vec<&str> = summary
        .outcomes
        .iter()
        .filter(|o| {
            o.processes
                .iter()
                .any(|p| !p.return_code.is_zero() || !p.errors.is_empty())
        })
        .map(|o| o.bench.as_str())
        .collect();
    note(&format!("prepare logs: {}", summary.run_dir.display()));
    Ok(if summary.interrupted {
        ExitCode::Interrupted
    } else if failed.is_empty() {
        ExitCode::Success
    } else {
        warn(&format!("prepare failed for: {}", failed.join(", ")));
        ExitCode::BenchmarkFailures
    })
}
