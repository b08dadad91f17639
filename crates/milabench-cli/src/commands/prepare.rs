//! `milabench prepare`: run each selected benchmark's prepare step.

use milabench::ExitCode;
use milabench::RunOptions;
use milabench::settings::EnvVars;

use crate::args::{GlobalArgs, PrepareArgs};
use crate::live::LiveDisplay;
use crate::settings::suite_session;

/// Runs the prepare steps with a live display; says where their logs are and which failed.
pub fn run(global: &GlobalArgs, args: &PrepareArgs) -> crate::errors::Result<ExitCode> {
    super::refuse_github_issues(args.traces.github_issues)?;
    let session = suite_session(
        global,
        &args.suite,
        Default::default(),
        None,
        EnvVars::from_process(),
    )?;
    let options = RunOptions {
        watchdog: Some(super::watchdog()?),
        ..RunOptions::default()
    };
    let ctrl_c = milabench::observe::install_ctrl_c(options.interrupt.clone())?;
    let summary = session.prepare(&options, &mut LiveDisplay::for_prepare());
    ctrl_c.uninstall();
    let summary = summary?;
    crate::render::prepare_lines(&summary);
    Ok(summary.prepare_exit_code())
}
