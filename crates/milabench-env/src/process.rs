//! Running the installer's child processes through `milabench-exec`'s [`HelperCommand`]: merged
//! output streamed line by line into the log file and to the caller, exit status kept,
//! interruption recognised; and short questions to an interpreter or to uv.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use camino::Utf8Path;
use milabench_exec::{HelperCommand, Interrupt};

use crate::error::EnvError;

/// How long a question to an interpreter or to uv (its version, the probe of an interpreter,
/// the versions of a few packages) may take: a cold interpreter on a network file system
/// answers in seconds.
const QUERY_TIME_LIMIT: Duration = Duration::from_secs(60);

/// How a finished step ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Whether it exited with status 0.
    pub success: bool,
    /// ` (exit status N)` or ` (killed by signal N)`.
    pub status: String,
    /// Whether it died of SIGINT/SIGTERM (the user's Ctrl-C reaches the whole process group),
    /// or ended after its [`HelperCommand::interrupt`] was set.
    pub interrupted: bool,
    /// The lines that look like the installer's own diagnosis of the failure.
    pub diagnosis: Vec<String>,
}

/// Runs `step`, appending its output to `log` (a header line first) and passing each line to
/// `on_line`.
pub(crate) fn run_logged(
    step: &HelperCommand,
    log_path: &Utf8Path,
    log: &mut fs_err::File,
    on_line: &mut dyn FnMut(&str),
) -> Result<Finished, EnvError> {
    let write_err = EnvError::io("could not write the log", log_path);
    writeln!(log, "$ {}", step.display()).map_err(write_err)?;
    let mut tail: Vec<String> = Vec::new();
    // The first failure to write the log, reported once the step has ended.
    let mut log_failure = None;
    let status = step.run_lines(&mut |bytes| {
        if log_failure.is_none()
            && let Err(e) = log.write_all(bytes)
        {
            log_failure = Some(e);
        }
        let text = String::from_utf8_lossy(bytes);
        let line = text.trim_end();
        on_line(line);
        tail.push(line.to_string());
        if tail.len() > 200 {
            tail.drain(..100);
        }
    })?;
    if let Some(e) = log_failure {
        return Err(EnvError::io("could not write the log", log_path)(e));
    }
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

/// Runs `program args` and returns its trimmed standard output, or `None` when it cannot
/// start, fails or takes longer than [`QUERY_TIME_LIMIT`].
pub(crate) fn query(program: &Path, args: &[&str]) -> Option<String> {
    let out = HelperCommand::new(program, args, QUERY_TIME_LIMIT)
        .run()
        .ok()?;
    out.success().then(|| out.stdout.trim().to_string())
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
}
