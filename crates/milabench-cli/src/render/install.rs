//! How installs look: a spinner with the stage and the installer's latest line on a terminal
//! (one line per stage otherwise), a result line per group, and a closing line.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use milabench::install::{EnvError, Event, InstallGroup, Outcome, Survey, Verdict};
use milabench::{ExitCode, GroupSurvey, InstallObserver, InstallPlan, InstallSummary};

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
    /// What the installer said it downloads, for the current group.
    downloads: Downloads,
}

impl Progress {
    /// A display on stderr (plain lines when stderr is not a terminal).
    pub fn new() -> Progress {
        Progress {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            group: String::new(),
            stage: "",
            downloads: Downloads::default(),
        }
    }

    /// Work on `group` starts.
    pub fn start(&mut self, group: &str) {
        self.group = group.to_string();
        self.stage = "checking";
        self.downloads = Downloads::default();
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
                    milabench::install::describe_holders(holders)
                );
                match &self.bar {
                    Some(bar) => bar.suspend(|| eprintln!("{line}")),
                    None => eprintln!("{line}"),
                }
            }
            Event::Line { line, .. } => {
                let started = self.downloads.read(line);
                match &self.bar {
                    Some(bar) => bar.set_message(match self.downloads.summary() {
                        Some(summary) => format!("{summary} | {}", line.trim()),
                        None => line.trim().to_string(),
                    }),
                    // In a log, one line per download: what takes the time of an install.
                    None if started => eprintln!("{}: {}", self.group, line.trim()),
                    None => {}
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

/// The downloads an installer announces (uv: `Downloading torch (766.4MiB)`, then ` Downloaded
/// torch`): how many packages and bytes, and how many of them are done.
#[derive(Debug, Default, PartialEq)]
struct Downloads {
    /// Each package announced and its size in bytes (`None` when not said).
    sizes: Vec<(String, Option<f64>)>,
    /// The packages done.
    done: Vec<String>,
}

impl Downloads {
    /// Takes note of an installer's line; whether it announced a download.
    fn read(&mut self, line: &str) -> bool {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Downloading ") {
            let (name, size) = match rest.split_once(" (") {
                Some((name, size)) => (name, bytes(size.trim_end_matches(')'))),
                None => (rest, None),
            };
            self.sizes.push((name.trim().to_string(), size));
            return true;
        }
        if let Some(name) = line.strip_prefix("Downloaded ") {
            self.done.push(name.trim().to_string());
        }
        false
    }

    /// `downloaded 1/3 packages, 12.0 of 780.4 MiB`, once a download was announced.
    fn summary(&self) -> Option<String> {
        if self.sizes.is_empty() {
            return None;
        }
        let size_of = |name: &str| {
            self.sizes
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, size)| *size)
                .unwrap_or(0.0)
        };
        let total: f64 = self.sizes.iter().filter_map(|(_, size)| *size).sum();
        let done: f64 = self.done.iter().map(|name| size_of(name)).sum();
        const MIB: f64 = 1024.0 * 1024.0;
        Some(format!(
            "downloaded {}/{} packages, {:.1} of {:.1} MiB",
            self.done.len(),
            self.sizes.len(),
            done / MIB,
            total / MIB
        ))
    }
}

/// Bytes of a size as uv writes it (`766.4MiB`, `12.0KiB`, `1.2GiB`, `512B`).
fn bytes(size: &str) -> Option<f64> {
    let unit_at = size.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = size.split_at(unit_at);
    let number: f64 = number.trim().parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(number * scale)
}

/// Prints what an install would do per group (`install --dry-run`); returns the exit code of
/// the first group that could not be surveyed.
pub(crate) fn show_surveys(surveys: &[GroupSurvey]) -> ExitCode {
    let mut exit = ExitCode::Success;
    for (group, survey) in surveys {
        match survey {
            Ok(survey) => survey_lines(&group.name, survey)
                .iter()
                .for_each(|line| say(line)),
            Err(e) => {
                say(&format!("{}: FAILED", group.name));
                crate::errors::show(e);
                if exit == ExitCode::Success {
                    exit = e.exit_code();
                }
            }
        }
    }
    say("install --dry-run: nothing was changed");
    exit
}

/// What one group's survey says: the environment it would build or keep, a line per
/// requirement (present, to replace, to add), and their counts.
fn survey_lines(group: &str, survey: &Survey) -> Vec<String> {
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
    let mut lines = vec![format!("{group}: {state}: {} ({made})", survey.venv)];
    let (mut present, mut added, mut replaced) = (0, 0, 0);
    for req in &survey.requirements {
        let have = req.installed.as_deref().unwrap_or("");
        lines.push(match req.verdict {
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
        });
    }
    lines.push(format!(
        "{group}: {present} present, {added} to add, {replaced} to replace"
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_are_counted_in_packages_and_bytes() {
        let mut downloads = Downloads::default();
        assert!(!downloads.read("Resolved 12 packages in 80ms"));
        assert_eq!(downloads.summary(), None);
        assert!(downloads.read("Downloading torch (766.4MiB)"));
        assert!(downloads.read("Downloading numpy (16.0MiB)"));
        assert!(downloads.read("Downloading tiny"));
        assert!(!downloads.read(" Downloaded numpy"));
        assert_eq!(
            downloads.summary().as_deref(),
            Some("downloaded 1/3 packages, 16.0 of 782.4 MiB")
        );
        assert_eq!(bytes("1.5GiB"), Some(1.5 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(bytes("512B"), Some(512.0));
        assert_eq!(bytes("12 parsecs"), None);
    }
}
