//! The live status tree of `benchit benchmark` on stderr: each input's models, invocations,
//! build stages and runtimes as they go, redrawn in place on a terminal, and the readable
//! numbers, sizes and paths in it.

use std::fmt::Write as _;
use std::io::IsTerminal;

use benchit::models::{Action, BuildResult, Input, InputResult, InputStatus, Observer};

use super::TRACEBACK_VAR;

/// The most lines of a tree redrawn in place while its input runs.
const LIVE_LINES: usize = 20;

/// The status tree on stderr: redrawn in place on a terminal; outside one, a line when an input
/// starts, warnings as they come, and the tree of each input when it ends.
pub(super) struct StatusDisplay {
    terminal: bool,
    tracebacks: bool,
    action: Action,
    /// The tree redrawn in place while an input runs (a terminal only).
    live: Option<indicatif::ProgressBar>,
    /// The running input's index and the number of inputs.
    position: (usize, usize),
}

impl StatusDisplay {
    pub(super) fn new(action: Action) -> StatusDisplay {
        StatusDisplay {
            terminal: std::io::stderr().is_terminal(),
            tracebacks: std::env::var(TRACEBACK_VAR).is_ok_and(|v| v == "1" || v == "true"),
            action,
            live: None,
            position: (0, 1),
        }
    }

    #[allow(clippy::print_stderr)]
    fn draw(&mut self, result: &InputResult, last: bool) {
        let mut text = render(result, self.action, self.tracebacks);
        if !last {
            // While in progress only the tail is redrawn, so that the cursor never has to move
            // above the top of a small terminal.
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() > LIVE_LINES {
                text = lines[lines.len() - LIVE_LINES..].join("\n") + "\n";
            }
        }
        let (index, total) = self.position;
        if !last && total > 1 {
            // Where `--all` is, above the running input's tree.
            text = format!(
                "[{}/{total}] {index} done, {} left\n{text}",
                index + 1,
                total - index - 1
            );
        }
        if last {
            self.clear();
            eprint!("{text}");
        } else {
            self.live
                .get_or_insert_with(|| {
                    indicatif::ProgressBar::new_spinner()
                        .with_style(
                            indicatif::ProgressStyle::with_template("{msg}")
                                .expect("a valid template"),
                        )
                        .with_finish(indicatif::ProgressFinish::AndClear)
                })
                .set_message(text.trim_end_matches('\n').to_owned());
        }
    }

    /// Takes the live tree off the terminal.
    fn clear(&mut self) {
        if let Some(live) = self.live.take() {
            live.finish_and_clear();
        }
    }
}

impl Observer for StatusDisplay {
    #[allow(clippy::print_stderr)]
    fn on_input_start(&mut self, input: &Input, index: usize, total: usize) {
        self.position = (index, total);
        if !self.terminal {
            eprintln!("[{}/{total}] {}", index + 1, input.arg);
        }
    }

    fn on_progress(&mut self, result: &InputResult) {
        // Events come at the pace of builds and measurements, not of model calls: every change
        // is drawn.
        if self.terminal {
            self.draw(result, false);
        }
    }

    #[allow(clippy::print_stderr)]
    fn on_warning(&mut self, message: &str) {
        self.clear();
        eprintln!("warning: {message}");
    }

    fn on_input_end(&mut self, result: &InputResult) {
        self.draw(result, true);
    }
}

/// The status tree of one input.
fn render(result: &InputResult, action: Action, tracebacks: bool) -> String {
    let mut out = String::new();
    let status = match result.status {
        InputStatus::Running => "running".to_string(),
        InputStatus::Done => format!("done in {:.1} s", result.seconds),
        InputStatus::Skipped => format!(
            "skipped: {}",
            result.skipped.as_deref().unwrap_or("not run")
        ),
        InputStatus::Failed => "FAILED".to_string(),
        InputStatus::Interrupted => "interrupted".to_string(),
    };
    let _ = writeln!(out, "{}: {status}", result.input);
    if result.models.is_empty() && matches!(result.status, InputStatus::Done) {
        let _ = writeln!(out, "  no model was called");
    }
    for model in &result.models {
        let m = &model.model;
        let indent = "  ".repeat(m.depth as usize + 1);
        let file_name = m.file.as_deref().and_then(|f| f.rsplit('/').next());
        let name = m.name.as_deref().or(file_name).unwrap_or("(unnamed)");
        let location = match (&m.file, m.line) {
            (Some(file), Some(line)) => format!(" at {}:{line}", short_path(file)),
            _ => String::new(),
        };
        let compiled = if m.compiled { ", torch.compile'd" } else { "" };
        let keras = if m.framework == "keras" {
            ", Keras"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{indent}{name}: {}{location}, {} parameters ({}){compiled}{keras}",
            m.class,
            thousands(m.parameters),
            bytes(m.parameter_bytes)
        );
        if let Some(failure) = &model.failure {
            let _ = writeln!(out, "{indent}  FAILED: {}", failure.message);
            if let Some(tb) = failure.traceback.as_deref().filter(|_| tracebacks) {
                indented(&mut out, tb, &format!("{indent}    "));
            }
        }
        for inv in &model.invocations {
            let shapes: Vec<String> = inv
                .input_shapes
                .iter()
                .map(|(k, shape)| {
                    let dtype = inv.input_dtypes.get(k).map(String::as_str).unwrap_or("");
                    format!("{k}: {dtype}{shape:?}")
                })
                .collect();
            let calls = inv
                .executed
                .map(|n| format!(", called {n}x"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{indent}  {}  {}{calls}",
                inv.invocation_hash,
                shapes.join(", ")
            );
            if let Some(build) = &inv.build {
                render_build(&mut out, &indent, build, action, tracebacks);
            }
        }
    }
    if let Some(failure) = &result.failure {
        let _ = writeln!(out, "  FAILED: {}", failure.message);
        if let Some(tb) = failure.traceback.as_deref().filter(|_| tracebacks) {
            indented(&mut out, tb, "    ");
        } else if failure.traceback.is_some() {
            let _ = writeln!(
                out,
                "    (full traceback: {TRACEBACK_VAR}=1; the script's output is in {})",
                result.log
            );
        }
    }
    out
}

fn render_build(
    out: &mut String,
    indent: &str,
    build: &BuildResult,
    action: Action,
    tracebacks: bool,
) {
    let pad = format!("{indent}    ");
    let stages: Vec<String> = build
        .stages
        .iter()
        .map(|s| {
            if s.ok {
                format!("{} {:.2} s", s.stage, s.seconds)
            } else {
                format!("{} FAILED", s.stage)
            }
        })
        .collect();
    let state = match (build.done, &build.failure) {
        (false, Some(_)) if stages.is_empty() => "not built".to_string(),
        (false, Some(_)) => format!("stopped ({})", stages.join(", ")),
        (false, None) => "in progress".to_string(),
        (true, _) if build.reused => "reused from the cache".to_string(),
        (true, _) if stages.is_empty() => "no ONNX build needed".to_string(),
        (true, _) => format!("built ({})", stages.join(", ")),
    };
    let _ = writeln!(out, "{pad}build {}: {state}", build.build_dir);
    for reason in build.rebuild_reasons.iter().filter(|r| !r.is_empty()) {
        let _ = writeln!(out, "{pad}  rebuilt: {reason}");
    }
    for stage in &build.stages {
        if stage.ok {
            // A note on a stage that went well: which exporter made the file.
            if let Some(note) = &stage.message {
                let _ = writeln!(out, "{pad}  {}: {note}", stage.stage);
            }
            continue;
        }
        let _ = writeln!(
            out,
            "{pad}  {} failed: {}",
            stage.stage,
            stage.message.as_deref().unwrap_or("see the stage log")
        );
        if let Some(tb) = stage.traceback.as_deref().filter(|_| tracebacks) {
            indented(out, tb, &format!("{pad}    "));
        }
    }
    if action == Action::Benchmark {
        let width = build
            .runtimes
            .iter()
            .map(|r| r.runtime.len())
            .max()
            .unwrap_or(0);
        for rt in &build.runtimes {
            match (&rt.statistics, rt.ok) {
                (Some(s), true) => {
                    let compile = rt
                        .compile_seconds
                        .map(|c| format!(", compiled in {c:.2} s"))
                        .unwrap_or_default();
                    let version = rt
                        .runtime_version
                        .as_deref()
                        .map(|v| format!(" v{v}"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "{pad}{:<width$}  mean {:.4} ms (±{:.4}), p90 {:.4} ms, {:.1}/s{version}{compile}",
                        rt.runtime,
                        s.mean_ms,
                        (s.ci95_high_ms - s.ci95_low_ms) / 2.0,
                        s.p90_ms,
                        s.throughput,
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "{pad}{:<width$}  FAILED: {}",
                        rt.runtime,
                        rt.message.as_deref().unwrap_or("failed")
                    );
                    if let Some(tb) = rt.traceback.as_deref().filter(|_| tracebacks) {
                        indented(out, tb, &format!("{pad}  "));
                    }
                }
            }
        }
    }
    if let Some(failure) = &build.failure
        && build.runtimes.iter().all(|r| r.ok)
    {
        let _ = writeln!(out, "{pad}FAILED: {}", failure.message);
    }
}

fn indented(out: &mut String, text: &str, pad: &str) {
    for line in text.trim_end().lines() {
        let _ = writeln!(out, "{pad}{line}");
    }
}

/// `path` relative to the current folder when it is under it.
fn short_path(path: &str) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            std::path::Path::new(path)
                .strip_prefix(cwd)
                .ok()
                .map(|p| p.display().to_string())
        })
        .unwrap_or_else(|| path.to_string())
}

/// `1234567` -> `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in B, KiB, MiB or GiB.
fn bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_readable() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(bytes(240), "240 B");
        assert_eq!(bytes(34_068), "33.3 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }
}
