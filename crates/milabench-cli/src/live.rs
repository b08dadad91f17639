//! Live display of a run on stderr: one line per benchmark as it starts and ends, and in a
//! terminal a status line (elapsed time, latest rate, progress toward the early stop; for a
//! prepare step, the latest line of its output) that `indicatif` rewrites in place. Outside a
//! terminal only the start and end lines are printed.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};

use milabench::observe::{
    Event, ExecObserver, Failure, Pipe, ProcessOutcome, ProcessSpec, Record, ReturnCode,
};
use milabench::observe::{RunEvent, RunObserver};

/// Prints run progress on stderr.
pub struct LiveDisplay {
    terminal: bool,
    /// The status line while one is shown (a terminal only): from a draw to the next line.
    status: Option<ProgressBar>,
    /// Judge processes by their exit status only (prepare steps report no rate).
    exit_status_only: bool,
    bench: String,
    started: Instant,
    last_draw: Instant,
    rate: Option<f64>,
    units: String,
    progress: Option<(f64, f64)>,
    /// Last line each process wrote on stderr, to explain a failure.
    last_stderr: std::collections::HashMap<String, String>,
    /// The latest line a process wrote (stdout or stderr), shown while a prepare step runs.
    last_output: String,
    /// Lines kept instead of printed (while the dashboard holds the terminal).
    held: Option<Vec<String>>,
}

impl LiveDisplay {
    /// A display that draws a status line when stderr is a terminal.
    pub fn new() -> LiveDisplay {
        LiveDisplay {
            terminal: std::io::stderr().is_terminal(),
            status: None,
            exit_status_only: false,
            bench: String::new(),
            started: Instant::now(),
            last_draw: Instant::now(),
            rate: None,
            units: String::new(),
            progress: None,
            last_stderr: std::collections::HashMap::new(),
            held: None,
            last_output: String::new(),
        }
    }

    /// A display that keeps its lines, and draws no status line, until [`Self::release`].
    pub fn held() -> LiveDisplay {
        LiveDisplay {
            held: Some(Vec::new()),
            ..LiveDisplay::new()
        }
    }

    /// Prints the lines kept so far, and the later ones as they come.
    #[allow(clippy::print_stderr)]
    pub fn release(&mut self) {
        for line in self.held.take().unwrap_or_default() {
            eprintln!("{line}");
        }
    }

    /// A display for prepare steps, which succeed by exiting with status 0.
    pub fn for_prepare() -> LiveDisplay {
        LiveDisplay {
            exit_status_only: true,
            ..LiveDisplay::new()
        }
    }

    /// Whether the process's end is shown as a success. A rank kept out of reports (`nolog`,
    /// the remote ranks of a multi-node job) is still shown failing when it failed: which node
    /// broke is what the person needs to know.
    pub(crate) fn passed(&self, outcome: &ProcessOutcome) -> bool {
        if self.exit_status_only || outcome.nolog {
            outcome.exited_cleanly()
        } else {
            outcome.success()
        }
    }

    #[allow(clippy::print_stderr)]
    fn line(&mut self, text: &str) {
        if let Some(held) = &mut self.held {
            held.push(text.to_owned());
            return;
        }
        // The status line gives way to the line, until the next draw.
        if let Some(status) = self.status.take() {
            status.finish_and_clear();
        }
        eprintln!("{text}");
    }

    fn draw(&mut self) {
        if !self.terminal || self.held.is_some() || self.last_draw.elapsed().as_millis() < 200 {
            return;
        }
        self.last_draw = Instant::now();
        let status = if self.exit_status_only {
            self.last_output.clone()
        } else {
            let rate = self
                .rate
                .map(|r| format!("{r:.2} {}", self.units))
                .unwrap_or_else(|| "no rate yet".into());
            let progress = self
                .progress
                .map(|(done, total)| format!(", {done:.0}/{total:.0} observations"))
                .unwrap_or_default();
            format!("{rate}{progress}")
        };
        let text = format!(
            "  {} {:>6.1}s  {status}",
            self.bench,
            self.started.elapsed().as_secs_f64()
        );
        // A line longer than the terminal would wrap, and `\r` would not go back over it.
        let width = ratatui::crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
        self.status
            .get_or_insert_with(|| {
                // Cleared when the display ends, as when a line is printed.
                ProgressBar::new_spinner()
                    .with_style(ProgressStyle::with_template("{msg}").expect("a valid template"))
                    .with_finish(ProgressFinish::AndClear)
            })
            .set_message(fit(&text, width.saturating_sub(1)));
    }
}

impl ExecObserver for LiveDisplay {
    fn on_start(&mut self, _tag: &str, _spec: &ProcessSpec) {}

    fn on_record(&mut self, tag: &str, record: &Record) {
        if let (Event::Line(line), Some(Pipe::Stderr)) = (&record.event, &record.pipe)
            && !line.trim().is_empty()
        {
            self.last_stderr
                .insert(tag.to_string(), line.trim().to_string());
        }
        if let Event::Line(line) = &record.event
            && self.exit_status_only
            && !line.trim().is_empty()
        {
            line.trim().clone_into(&mut self.last_output);
            self.draw();
        }
        if let Event::Data(data) = &record.event {
            if let Some(rate) = data.rate {
                self.rate = Some(rate);
                if let Some(units) = &data.units {
                    self.units = units.clone();
                }
            }
            if let Some([done, total]) = data.progress {
                self.progress = Some((done, total));
            }
            self.draw();
        }
    }

    fn on_end(&mut self, outcome: &ProcessOutcome) {
        if !self.passed(outcome) {
            // What failed a process that exited with 0, besides its error events.
            let measured = outcome
                .verdict
                .failures()
                .iter()
                .find(|f| matches!(f, Failure::NanLoss | Failure::BadRates { .. }));
            let status = match (&outcome.return_code, measured) {
                (ReturnCode::Code(0), _) if outcome.rate_count == 0 => {
                    "exited with status 0 without reporting a rate".to_string()
                }
                (ReturnCode::Code(0), Some(failure)) => {
                    format!("exited with status 0 but {failure}")
                }
                (ReturnCode::Code(code), _) if *code < 0 => format!("killed by signal {}", -code),
                (ReturnCode::Code(code), _) => format!("exited with status {code}"),
                (ReturnCode::Other(value), _) => format!("ended with {value}"),
            };
            let detail = outcome
                .errors
                .last()
                .or_else(|| self.last_stderr.get(&outcome.tag));
            let reason = match detail {
                Some(detail) => format!("{status}: {}", detail.trim()),
                None => status,
            };
            self.line(&format!(
                "  {} failed, {reason} (events in {})",
                outcome.tag,
                outcome.data_file.display()
            ));
        }
    }
}

impl RunObserver for LiveDisplay {
    fn on_run_event(&mut self, event: RunEvent<'_>) {
        match event {
            RunEvent::System { header } => self.line(header.trim_end()),
            RunEvent::BenchStart { plan } => {
                self.bench = plan.bench.clone();
                self.started = Instant::now();
                self.last_output.clear();
                self.rate = None;
                self.progress = None;
                let n = plan.processes.len();
                self.line(&format!(
                    "{}: starting {n} process{}",
                    plan.bench,
                    if n == 1 { "" } else { "es" }
                ));
            }
            RunEvent::Skipped { bench, unmet } => self.line(&format!(
                "{bench}: skipped, this system does not meet {}",
                unmet.join(", ")
            )),
            RunEvent::SetupFailed { failure } => self.line(&format!(
                "{}: FAILED before it ran: {}",
                failure.bench, failure.reason
            )),
            RunEvent::AlreadyDone { bench } => self.line(&format!(
                "{bench}: already complete in this run folder, not run again"
            )),
            RunEvent::BenchEnd { outcome } => {
                let verdict = if outcome.interrupted {
                    "interrupted"
                } else if outcome.processes.iter().all(|p| self.passed(p)) {
                    "ok"
                } else {
                    "FAILED"
                };
                let rate = self
                    .rate
                    .map(|r| format!(", last rate {r:.2} {}", self.units))
                    .unwrap_or_default();
                let precise = outcome
                    .precise
                    .map(|share| format!(", stopped once precise to ±{:.2}%", share * 100.0))
                    .unwrap_or_default();
                self.line(&format!(
                    "{}: {verdict} in {:.1}s{rate}{precise}",
                    outcome.bench,
                    outcome.duration.as_secs_f64()
                ));
            }
            // The phases and their results, which the pipeline's view shows.
            RunEvent::Phase(_)
            | RunEvent::Schedule { .. }
            | RunEvent::PreflightFailed { .. }
            | RunEvent::Installed { .. }
            | RunEvent::Prepared { .. } => {}
        }
    }
}

/// `text` cut to `width` characters, an ellipsis marking the cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn status_lines_are_cut_to_the_terminal() {
        assert_eq!(fit("prepare ok", 20), "prepare ok");
        assert_eq!(fit("downloading 12%", 8), "downloa…");
        assert_eq!(fit("é", 0), "");
    }
}
