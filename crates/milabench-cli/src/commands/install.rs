//! `milabench install`: build each install group's environment, with a progress display, a
//! one-line result per group and a summary. Also the set-up shared with `pin`: settings, suite,
//! groups, interpreter and installer.

use std::io::IsTerminal as _;
use std::time::Duration;

use anyhow::Context as _;
use camino::Utf8Path;
use indicatif::{ProgressBar, ProgressStyle};
use milabench::ExitCode;
use milabench::config::settings::{Arch, EnvVars, Installer, SettingsFlags};
use milabench::env::{
    EnvOptions, Environments, Event, InstallGroup, Outcome, ProjectTree, install_groups,
};

use crate::args::{ArchArg, EnvArgs, GlobalArgs, InstallArgs, InstallerArg, SuiteArgs};
use crate::output::warn;
use crate::settings::load_suite_settings;

/// Everything `install` and `pin` work on.
pub(super) struct Setup {
    /// The groups of the selected benchmarks.
    pub groups: Vec<InstallGroup>,
    /// Interpreter, installer and layout.
    pub envs: Environments,
    /// The variant asked for, if any.
    pub variant: Option<String>,
    /// The arch in force.
    pub arch: String,
}

/// Resolves the suite, groups the selected benchmarks and prepares the interpreter and the
/// installer (which may bootstrap uv, shown on `progress`).
pub(super) fn setup(
    global: &GlobalArgs,
    suite: &SuiteArgs,
    env_args: &EnvArgs,
    installer: Option<Installer>,
    variant: Option<&str>,
    progress: &mut Progress,
) -> anyhow::Result<Setup> {
    let env = EnvVars::from_process();
    let more = SettingsFlags {
        python: env_args.python.clone(),
        arch: env_args.arch.map(arch),
        installer,
        ..SettingsFlags::default()
    };
    let settings = load_suite_settings(global, suite, more, &env)?;
    let resolved = milabench::resolve(&settings, &suite.selection(), &env)?;
    for warning in &resolved.suite.warnings {
        warn(warning);
    }
    resolved.check_runnable()?;
    let benches: Vec<_> = resolved.suite.runnable().collect();
    let config = settings.config.as_deref().context("no suite file")?;
    let project = ProjectTree::locate(config.parent().unwrap_or(Utf8Path::new(".")))?;
    let groups = install_groups(benches, &project, &resolved.arch, variant)?;
    let path_var = std::env::var("PATH").ok();
    let envs = Environments::prepare(
        &EnvOptions {
            layout: settings.layout(),
            project,
            python: settings.python.as_deref(),
            installer: settings.installer,
            arch: resolved.arch.clone(),
            path_var: path_var.as_deref(),
        },
        &mut |event| progress.event(event),
    )?;
    progress.done();
    Ok(Setup {
        groups,
        envs,
        variant: variant.map(str::to_string),
        arch: resolved.arch,
    })
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

/// Builds the environments.
pub fn run(global: &GlobalArgs, args: &InstallArgs) -> anyhow::Result<ExitCode> {
    let installer = args.installer.map(|i| match i {
        InstallerArg::Uv => Installer::Uv,
        InstallerArg::Pip => Installer::Pip,
    });
    let mut progress = Progress::new();
    let setup = setup(
        global,
        &args.suite,
        &args.env,
        installer,
        args.variant.as_deref(),
        &mut progress,
    )?;
    let envs = &setup.envs;
    let tool = envs.tool.describe();
    let python = format!("Python {}", envs.python.version);
    let (mut installed, mut up_to_date, mut failed) = (0, 0, 0);
    let mut exit = ExitCode::Success;
    for group in &setup.groups {
        for fallback in group.unpinned_fallbacks() {
            warn(&format!(
                "{}: no requirements.{}.txt for `{}`, installing {} unpinned (`milabench pin --variant {}` writes one)",
                group.name, group.variant, fallback.bench, fallback.path, group.variant
            ));
        }
        progress.start(&group.name);
        let result = envs.install(group, args.force, &mut |event| progress.event(event));
        progress.done();
        match result {
            Ok(Outcome::UpToDate { venv, fingerprint }) => {
                up_to_date += 1;
                say(&format!(
                    "{}: up to date, nothing to do ({venv}, fingerprint {})",
                    group.name,
                    &fingerprint.hash[..12]
                ));
            }
            Ok(Outcome::Installed { venv, elapsed, .. }) => {
                installed += 1;
                say(&format!(
                    "{}: installed in {:.1} s with {tool}, {python} ({venv})",
                    group.name,
                    elapsed.as_secs_f64()
                ));
            }
            Err(e) => {
                failed += 1;
                let interrupted = e.is_interrupted();
                say(&format!("{}: FAILED", group.name));
                exit = crate::errors::report(&anyhow::Error::new(e));
                if interrupted {
                    break;
                }
            }
        }
    }
    let mut summary = vec![];
    for (n, what) in [
        (installed, "installed"),
        (up_to_date, "up to date"),
        (failed, "failed"),
    ] {
        if n > 0 {
            summary.push(format!("{n} {what}"));
        }
    }
    say(&format!(
        "install: {} of {} group(s) ({tool}, {python}, arch {})",
        summary.join(", "),
        setup.groups.len(),
        setup.arch
    ));
    Ok(exit)
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
