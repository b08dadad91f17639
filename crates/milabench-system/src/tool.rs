//! Running a helper program (`nvidia-smi`, `rocm-smi`, a venv's `python`) with a time limit.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a helper program run ended.
#[derive(Debug)]
pub(crate) enum ToolOutcome {
    /// It is not installed (not on `PATH`, or the path does not exist).
    NotFound,
    /// It ran and exited; stdout and stderr as (lossy) text.
    Exited {
        success: bool,
        stdout: String,
        stderr: String,
    },
    /// It could not be started, or ran past the time limit and was killed.
    Failed(String),
}

/// Runs `program args` with no stdin, waiting at most `timeout`.
pub(crate) fn run_tool(program: &Path, args: &[&str], timeout: Duration) -> ToolOutcome {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a time-out also ends what it started.
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return ToolOutcome::NotFound,
        Err(e) => return ToolOutcome::Failed(format!("could not start: {e}")),
    };
    // Read both pipes on threads so a chatty program cannot block on a full pipe.
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out = std::thread::spawn(move || drain(out_pipe.as_mut()));
    let err = std::thread::spawn(move || drain(err_pipe.as_mut()));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) | Err(_) => {
                if let Ok(pid) = i32::try_from(child.id()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Some(status) => ToolOutcome::Exited {
            success: status.success(),
            stdout,
            stderr,
        },
        None => ToolOutcome::Failed(format!("no answer within {:.1} s", timeout.as_secs_f64())),
    }
}

fn drain<R: Read>(pipe: Option<&mut R>) -> String {
    let mut buf = Vec::new();
    if let Some(p) = pipe {
        let _ = p.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// The first 120 characters of `text`, for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &t[..i]),
        None => t.to_owned(),
    }
}
