//! Running the installer's child processes: merged output streamed line by line into the log
//! file and to the caller, exit status kept, interruption recognised.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{Interrupt, TriggerHook, WatchedGroup};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::error::EnvError;

/// A command to run: program, arguments and the environment changes it needs.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// The program (a path or a name looked up on `PATH`).
    pub program: Utf8PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// Variables removed for it.
    pub env_remove: Vec<String>,
    /// Working directory, if not inherited.
    pub cwd: Option<Utf8PathBuf>,
    /// With an interrupt, the step runs in a process group of its own, which the interrupt
    /// stops (SIGTERM; SIGKILL with [`Interrupt::kill_now`]): a signal to the orchestrator
    /// alone then ends the installer and every process it started rather than orphaning them.
    pub interrupt: Option<Interrupt>,
}

impl Step {
    /// `program args...` with the inherited environment.
    pub fn new(program: impl Into<Utf8PathBuf>, args: impl IntoIterator<Item = String>) -> Self {
        Step {
            program: program.into(),
            args: args.into_iter().collect(),
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            interrupt: None,
        }
    }

    /// The command as one shell-like line, for logs.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(quote)
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn expression(&self) -> duct::Expression {
        let mut expr = duct::cmd(self.program.as_std_path(), &self.args)
            .stderr_to_stdout()
            .stdin_null()
            .unchecked();
        for (key, value) in &self.env {
            expr = expr.env(key, value);
        }
        for key in &self.env_remove {
            expr = expr.env_remove(key);
        }
        if let Some(cwd) = &self.cwd {
            expr = expr.dir(cwd.as_std_path());
        }
        if self.interrupt.is_some() {
            expr = expr.before_spawn(|cmd| {
                cmd.process_group(0);
                Ok(())
            });
        }
        expr
    }
}

/// While the returned guards live, `interrupt` stops the process group of the step `reader`
/// runs (its own: see [`Step::interrupt`]); an interrupt already set stops it at once.
fn stop_on_trigger(
    interrupt: &Interrupt,
    reader: &duct::ReaderHandle,
) -> Option<(WatchedGroup, TriggerHook)> {
    let pgid = i32::try_from(*reader.pids().first()?).ok()?;
    let stop = move || {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    };
    let guards = (interrupt.watch_group(pgid), interrupt.on_trigger(stop));
    if interrupt.is_set() {
        stop();
    }
    Some(guards)
}

/// How a finished step ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Whether it exited with status 0.
    pub success: bool,
    /// ` (exit status N)` or ` (killed by signal N)`.
    pub status: String,
    /// Whether it died of SIGINT/SIGTERM (the user's Ctrl-C reaches the whole process group),
    /// or ended after its [`Step::interrupt`] was set.
    pub interrupted: bool,
    /// The lines that look like the installer's own diagnosis of the failure.
    pub diagnosis: Vec<String>,
}

/// Runs `step`, appending its output to `log` (a header line first) and passing each line to
/// `on_line`.
pub(crate) fn run_logged(
    step: &Step,
    log_path: &Utf8Path,
    log: &mut fs_err::File,
    on_line: &mut dyn FnMut(&str),
) -> Result<Finished, EnvError> {
    let write_err = EnvError::io("could not write the log", log_path);
    writeln!(log, "$ {}", step.display()).map_err(write_err)?;
    let reader = step
        .expression()
        .reader()
        .map_err(|source| EnvError::Spawn {
            program: step.program.to_string(),
            source,
        })?;
    let stop = step
        .interrupt
        .as_ref()
        .and_then(|interrupt| stop_on_trigger(interrupt, &reader));
    let mut lines = BufReader::new(&reader);
    let mut buf = Vec::new();
    let mut tail: Vec<String> = Vec::new();
    loop {
        buf.clear();
        let n = lines
            .read_until(b'\n', &mut buf)
            .map_err(|source| EnvError::Spawn {
                program: step.program.to_string(),
                source,
            })?;
        if n == 0 {
            break;
        }
        log.write_all(&buf)
            .map_err(EnvError::io("could not write the log", log_path))?;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end();
        on_line(line);
        tail.push(line.to_string());
        if tail.len() > 200 {
            tail.drain(..100);
        }
    }
    // Unwatched before the child is reaped, so that its group id, free again, is never signalled.
    drop(stop);
    let output = reader
        .try_wait()
        .map_err(|source| EnvError::Spawn {
            program: step.program.to_string(),
            source,
        })?
        .expect("the child has exited once its output is closed");
    let status = output.status;
    let interrupted = matches!(status.signal(), Some(2 | 15))
        || (status.code() == Some(130) && !status.success())
        || step.interrupt.as_ref().is_some_and(Interrupt::is_set);
    let status_text = match (status.code(), status.signal()) {
        (Some(0), _) => String::new(),
        (Some(code), _) => format!(" (exit status {code})"),
        (None, Some(sig)) => format!(" (killed by signal {sig})"),
        (None, None) => " (ended abnormally)".to_string(),
    };
    writeln!(
        log,
        "# exit: {}",
        if status_text.is_empty() {
            "success"
        } else {
            status_text.trim()
        }
    )
    .map_err(EnvError::io("could not write the log", log_path))?;
    log.flush()
        .map_err(EnvError::io("could not write the log", log_path))?;
    Ok(Finished {
        success: status.success(),
        status: status_text,
        interrupted,
        diagnosis: diagnosis(&tail),
    })
}

/// The lines of an installer's output that explain a failure: uv's `error:`/`×`/`╰─▶` lines,
/// pip's `ERROR:` lines, Python's last exception line.
pub(crate) fn diagnosis(lines: &[String]) -> Vec<String> {
    let mut picked: Vec<String> = Vec::new();
    for line in lines {
        let t = line.trim();
        let marked = t.starts_with("error:")
            || t.starts_with("ERROR:")
            || t.starts_with("×")
            || t.starts_with("╰─▶")
            || t.starts_with("help:")
            || t.starts_with("cause:")
            || t.starts_with("Because ")
            || t.contains("Error:")
            || t.contains("No space left on device");
        if marked && !picked.iter().any(|p| p == t) {
            picked.push(t.to_string());
        }
    }
    if picked.is_empty() {
        picked.extend(
            lines
                .iter()
                .rev()
                .map(|l| l.trim())
                .find(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    if picked.len() > 6 {
        picked.drain(..picked.len() - 6);
    }
    picked
}

/// Runs `step` and returns its trimmed standard output, or `None` when it cannot start or fails.
pub(crate) fn capture(step: &Step) -> Option<String> {
    let out = duct::cmd(step.program.as_std_path(), &step.args)
        .stdout_capture()
        .stderr_null()
        .stdin_null()
        .unchecked()
        .run()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Quotes a word for display when it holds characters a shell would split on.
fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnosis_keeps_the_installers_error_lines() {
        let lines: Vec<String> = [
            "Resolved 3 packages",
            "  × No solution found when resolving dependencies:",
            "  ╰─▶ Because zzz-not-a-package was not found in the package registry",
            "done",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let picked = diagnosis(&lines);
        assert_eq!(picked.len(), 2);
        assert!(picked[1].contains("zzz-not-a-package"));
        assert_eq!(
            diagnosis(&["a".into(), "last words".into(), "".into()]),
            ["last words"]
        );
    }

    #[test]
    fn display_quotes_spaces() {
        let step = Step::new("/bin/echo", ["a b".to_string(), "c".to_string()]);
        assert_eq!(step.display(), "/bin/echo 'a b' c");
    }
}
