//! Running a helper program (`nvidia-smi`, `rocm-smi`, a venv's `python`, the pack host) with a
//! time limit, in its own process group, its output captured.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a helper program run ended.
#[derive(Debug)]
pub enum ToolOutcome {
    /// It is not installed (not on `PATH`, or the path does not exist).
    NotFound,
    /// It ran and exited; stdout and stderr as (lossy) text.
    Exited {
        /// It exited with status 0.
        success: bool,
        /// Its standard output.
        stdout: String,
        /// Its standard error.
        stderr: String,
    },
    /// It could not be started, or ran past the time limit and was killed.
    Failed(String),
}

/// Runs `program args` with no stdin, waiting at most `timeout`.
pub(crate) fn run_tool(program: &Path, args: &[&str], timeout: Duration) -> ToolOutcome {
    run_tool_with(program, args, &[], None, timeout)
}

/// Runs `program args` with the variables `env` added to this process's and `input` on its
/// standard input (none when `None`), waiting at most `timeout`; past it, its whole process
/// group is killed.
pub fn run_tool_with(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    input: Option<&[u8]>,
    timeout: Duration,
) -> ToolOutcome {
    let child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
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
    // Written on a thread too: a program that answers before it has read everything must not
    // block on a full pipe. One that exits without reading it all has failed; its output says why.
    let feeder = child
        .stdin
        .take()
        .zip(input.map(<[u8]>::to_vec))
        .map(|(mut stdin, bytes)| {
            std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            })
        });
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
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
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
