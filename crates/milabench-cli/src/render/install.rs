//! How installs look: a spinner with the stage and the installer's latest line on a terminal
//! (one line per stage otherwise), a result line per group, and a closing line.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use milabench::env::{EnvError, Event, InstallGroup, Outcome};
use milabench::{InstallObserver, InstallPlan, InstallSummary};

use crate::output::warn;

/// Prints the closing line of an install: how many groups were installed, up to date or
/// failed, with the installer, the interpreter and the arch.
pub(crate) fn summarize(summary: &InstallSummary, arch: &str) {
    let (mut installed, mut up_to_date, mut failed) = (0, 0, 0);
    for (_, result) in &summary.results {
        match result {
            Ok(Outcome::UpToDate { .. }) => up_to_date += 1,
            Ok(Outcome::Installed { .. }) => installed += 1,
            Err(_) => failed += 1,
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
}

/// What a person sees of an install: the progress display, and one result line per group.
pub(crate) struct InstallView {
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
pub(crate) fn say(line: &str) {
    println!("{line}");
}

/// Shows what an install or pin is doing: a spinner with the stage and the installer's latest
/// line on a terminal, one line per stage otherwise.
pub(crate) struct Progress {
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
