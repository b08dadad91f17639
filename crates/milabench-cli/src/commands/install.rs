//! `milabench install`: build each install group's environment, with a progress display, a
//! one-line result per group and a summary (see [`crate::render::install`]).

use milabench::{ExitCode, InstallOptions, InstallSummary, Session};

use crate::args::{GlobalArgs, InstallArgs};
use crate::render::install::{InstallView, Progress, show_surveys, summarize};
use crate::settings::{install_session, installer};

/// Builds the environments (or, with `--dry-run`, says what that would do).
pub fn run(global: &GlobalArgs, args: &InstallArgs) -> crate::errors::Result<ExitCode> {
    super::refuse_github_issues(args.traces.github_issues)?;
    let session = install_session(global, &args.suite, &args.env, installer(args.installer))?;
    let options = InstallOptions {
        force: args.force,
        variant: args.variant.clone(),
        sources: args.sources.sources(),
        interrupt: None,
    };
    if args.dry_run {
        let mut progress = Progress::new();
        let surveys = session.survey(&options, &mut progress)?;
        progress.done();
        return Ok(show_surveys(&surveys));
    }
    let summary = install_stoppably(&session, options)?;
    summarize(&summary, &session.resolved().arch);
    Ok(milabench::install_exit_code(&summary))
}

/// Runs `session`'s install with a handler of Ctrl-C, SIGTERM and SIGHUP: a signal stops the
/// running installer's process group (nothing is left writing into the environment) and the
/// install ends as interrupted (exit 130).
fn install_stoppably(
    session: &Session,
    options: InstallOptions,
) -> crate::errors::Result<InstallSummary> {
    let interrupt = milabench::observe::Interrupt::new();
    let ctrl_c = milabench::observe::install_ctrl_c(interrupt.clone())?;
    let options = InstallOptions {
        interrupt: Some(interrupt),
        ..options
    };
    let summary = session.install(&options, &mut InstallView::new());
    ctrl_c.uninstall();
    Ok(summary?)
}
