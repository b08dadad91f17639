//! `milabench install`: build each install group's environment, with a progress display, a
//! one-line result per group and a summary. Also what `pin` and `run` share with it: the session
//! of an install's flags, and the display of install progress.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use milabench::config::settings::{Arch, EnvVars, Installer, SettingsFlags};
use milabench::env::{EnvError, Event, InstallGroup, Outcome, Verdict};
use milabench::{
    ExitCode, GroupSurvey, InstallObserver, InstallOptions, InstallPlan, InstallSummary, Session,
};

use crate::args::{ArchArg, EnvArgs, GlobalArgs, InstallArgs, InstallerArg, SuiteArgs};
use crate::output::warn;
use crate::settings::suite_session;

/// The session of `install` and `pin`: the suite with the interpreter, arch and installer
/// flags in its settings.
pub(super) fn install_session(
    global: &GlobalArgs,
    suite: &SuiteArgs,
    env_args: &EnvArgs,
    installer: Option<Installer>,
) -> anyhow::Result<Session> {
    let more = SettingsFlags {
        python: env_args.python.clone(),
        arch: env_args.arch.map(arch),
        installer,
        ..SettingsFlags::default()
    };
    suite_session(global, suite, more, None, EnvVars::from_process())
}

fn arch(arg: ArchArg) -> Arch {
    match arg {
        ArchArg::Cuda => Arch::Cuda,
        ArchArg::Rocm => Arch::Rocm,
        ArchArg::Xpu => Arch::Xpu,
        ArchArg::Hpu => Arch::Hpu,
        ArchArg::Cpu => Arch::Cpu,
    }
}

/// The installer `--installer` names, if it does.
pub(super) fn installer(arg: Option<InstallerArg>) -> Option<Installer> {
    arg.map(|i| match i {
        InstallerArg::Uv => Installer::Uv,
        InstallerArg::Pip => Installer::Pip,
    })
}

/// Builds the environments (or, with `--dry-run`, says what that would do).
pub fn run(global: &GlobalArgs, args: &InstallArgs) -> anyhow::Result<ExitCode> {
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
    Ok(summarize(&summary, &session.resolved().arch))
}

/// Runs `session`'s install with a handler of Ctrl-C, SIGTERM and SIGHUP: a signal stops the
/// running installer's process group (nothing is left writing into the environment) and the
/// install ends as interrupted (exit 130).
pub(super) fn install_stoppably(
    session: &Session,
    options: InstallOptions,
) -> anyhow::Result<InstallSummary> {
    let interrupt = milabench::exec::Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let options = InstallOptions {
        interrupt: Some(interrupt),
        ..options
    };
    let summary = session.install(&options, &mut InstallView::new());
    ctrl_c.uninstall();
    Ok(summary?)
}

/// Prints what an install would do per group; returns the exit code of the first group that
/// could not be surveyed.
fn show_surveys(surveys: &[GroupSurvey]) -> ExitCode {
    let mut exit = ExitCode::Success;
    for (group, survey) in surveys {
        let survey = match survey {
            Ok(survey) => survey,
            Err(e) => {
                say(&format!("{}: FAILED", group.name));
                crate::errors::show(e);
                if exit == ExitCode::Success {
                    exit = e.exit_code();
                }
                continue;
            }
        };
        let python = &survey.base.python;
        let made = if survey.base.existing {
            format!(
                "overlay venv (--system-site-packages) over the existing {} (Python {}, torch {})",
                python.executable,
                python.version,
                python.torch.as_deref().unwrap_or("absent")
            )
        } else {
            format!(
                "new venv from {} (Python {})",
                python.executable, python.version
            )
        };
        let state = if survey.up_to_date {
            "up to date"
        } else {
            "would be built"
        };
        say(&format!(
            "{}: {state}: {} ({made})",
            group.name, survey.venv
        ));
        let (mut present, mut added, mut replaced) = (0, 0, 0);
        for req in &survey.requirements {
            let have = req.installed.as_deref().unwrap_or("");
            let line = match req.verdict {
                Verdict::Present => {
                    present += 1;
                    format!("  present  {} ({} {have})", req.requirement, req.name)
                }
                Verdict::Replaced => {
                    replaced += 1;
                    format!(
                        "  replace  {} ({} {have} present)",
                        req.requirement, req.name
                    )
                }
                Verdict::Added => {
                    added += 1;
                    format!("  add      {}", req.requirement)
                }
            };
            say(&line);
        }
        say(&format!(
            "{}: {present} present, {added} to add, {replaced} to replace",
            group.name
        ));
    }
    say("install --dry-run: nothing was changed");
    exit
}

/// Prints the closing line of an install; returns the exit code it deserves (that of the
/// first failed group).
pub(super) fn summarize(summary: &InstallSummary, arch: &str) -> ExitCode {
    let (mut installed, mut up_to_date, mut failed) = (0, 0, 0);
    let mut exit = ExitCode::Success;
    for (_, result) in &summary.results {
        match result {
            Ok(Outcome::UpToDate { .. }) => up_to_date += 1,
            Ok(Outcome::Installed { .. }) => installed += 1,
            Err(e) => {
                failed += 1;
                if exit == ExitCode::Success {
                    exit = e.exit_code();
                }
            }
        }
    }
    let mut counts = vec![];
    for (n, what) in [
        (installed, "installed"),
        (up_to_date, "up to date"),
        (failed, "failed"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    say(&format!(
        "install: {} of {} group(s) ({}, Python {}, arch {arch})",
        counts.join(", "),
        summary.results.len(),
        summary.tool,
        summary.python
    ));
    exit
}

/// What a person sees of an install: the progress display, and one result line per group.
pub(super) struct InstallView {
    progress: Progress,
    /// The installer and interpreter, once known: `uv 0.9.1, Python 3.11.9`.
    tools: String,
}

impl InstallView {
    /// A view on stderr (progress) and stdout (results).
    pub fn new() -> InstallView {
        InstallView {
            progress: Progress::new(),
            tools: String::new(),
        }
    }
}

impl InstallObserver for InstallView {
    fn on_environments(&mut self, plan: &InstallPlan) {
        self.progress.done();
        self.tools = format!(
            "{}, Python {}",
            plan.envs.tool.describe(),
            plan.envs.python.version
        );
    }

    fn on_env_event(&mut self, event: Event<'_>) {
        self.progress.event(event);
    }

    fn on_group_start(&mut self, group: &InstallGroup) {
        for fallback in group.unpinned_fallbacks() {
            warn(&format!(
                "{}: no requirements.{}.txt for `{}`, installing {} unpinned (`milabench pin --variant {}` writes one)",
                group.name, group.variant, fallback.bench, fallback.path, group.variant
            ));
        }
        self.progress.start(&group.name);
    }

    fn on_group_end(&mut self, group: &InstallGroup, result: &Result<Outcome, EnvError>) {
        self.progress.done();
        match result {
            Ok(Outcome::UpToDate { venv, fingerprint }) => say(&format!(
                "{}: up to date, nothing to do ({venv}, fingerprint {})",
                group.name,
                &fingerprint.hash[..12]
            )),
            Ok(Outcome::Installed { venv, elapsed, .. }) => say(&format!(
                "{}: installed in {:.1} s with {} ({venv})",
                group.name,
                elapsed.as_secs_f64(),
                self.tools
            )),
            Err(e) => {
                say(&format!("{}: FAILED", group.name));
                crate::errors::show(e);
            }
        }
    }
}

/// A bare progress display reports environment events (`pin` uses it so).
impl InstallObserver for Progress {
    fn on_env_event(&mut self, event: Event<'_>) {
        self.event(event);
    }
}

/// Prints a result line on stdout.
#[allow(clippy::print_stdout)]
pub(super) fn say(line: &str) {
    println!("{line}");
}

/// Shows what an install or pin is doing: a spinner with the stage and the installer's latest
/// line on a terminal, one line per stage otherwise.
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    terminal: bool,
    group: String,
    stage: &'static str,
}

impl Progress {
    /// A display on stderr (plain lines when stderr is not a terminal).
    pub fn new() -> Progress {
        Progress {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            group: String::new(),
            stage: "",
        }
    }

    /// Work on `group` starts.
    pub fn start(&mut self, group: &str) {
        self.group = group.to_string();
        self.stage = "checking";
    }

    /// Shows an event.
    #[allow(clippy::print_stderr)]
    pub fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Stage { group, stage } => {
                self.group = group.to_string();
                self.stage = stage.describe();
                if self.terminal {
                    let bar = self.bar.get_or_insert_with(|| {
                        let bar = ProgressBar::new_spinner();
                        bar.set_style(
                            ProgressStyle::with_template(
                                "{spinner} {prefix:.bold} {elapsed:>4} {wide_msg}",
                            )
                            .expect("a valid template"),
                        );
                        bar.enable_steady_tick(Duration::from_millis(120));
                        bar
                    });
                    bar.set_prefix(format!("{group}: {}", self.stage));
                    bar.set_message("");
                } else {
                    eprintln!("{group}: {}", self.stage);
                }
            }
            Event::Waiting { group, holders } => {
                let line = format!(
                    "{group}: waiting for {}, which is installing this group (the environment is used once it is done)",
                    milabench::metrics::describe_holders(holders)
                );
                match &self.bar {
                    Some(bar) => bar.suspend(|| eprintln!("{line}")),
                    None => eprintln!("{line}"),
                }
            }
            Event::Line { line, .. } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(line.trim().to_string());
                }
            }
        }
    }

    /// The current group is finished: clears the spinner.
    pub fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
