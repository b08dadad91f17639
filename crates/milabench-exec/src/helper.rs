//! Helper programs: another program run to its end for what it answers (`nvidia-smi`, an
//! interpreter asked for its versions, the pack host, an ssh probe, Slurm's clients, an
//! installer), as opposed to the benchmark processes of a plan.
//!
//! [`HelperCommand::run`] captures standard output and standard error apart;
//! [`HelperCommand::run_lines`] hands them over merged, line by line as they come (an
//! installer's log). Either way the program reads the bytes given (or nothing) on its standard
//! input, a time limit bounds it and an [`Interrupt`] stops it.
//!
//! A helper with a time limit or an interrupt leads a process group of its own and carries a
//! tree token (see the `tree` module), so that a time-out (SIGKILL) or an interrupt (SIGTERM)
//! reaches everything it started. One with neither stays in the caller's process group, where
//! the terminal's Ctrl-C reaches it as it reaches the caller. Nothing is signalled once the
//! helper has been reaped: the end of a helper is awaited without reaping it (`waitid` with
//! `WNOWAIT`) while its time limit still runs, then the stoppers are dropped, then it is reaped,
//! so a process group id used again by the system is never signalled.
//!
//! Helpers start under the same lock as a plan's processes (see the `spawn` module), so they
//! never inherit a benchmark's data pipe.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use milabench_vocab::shell_quote;
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use crate::interrupt::{Interrupt, TriggerHook, WatchedGroup};
use crate::spawn::{in_own_tree, spawn_inheriting};
use crate::tree::{fresh_token, signal_tree};

/// A helper program to run: what to start, with what, and how long it may take.
#[derive(Debug, Clone)]
pub struct HelperCommand {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the caller's environment for it.
    pub env: Vec<(String, String)>,
    /// Variables of the caller's environment removed for it.
    pub env_remove: Vec<String>,
    /// Its working folder (the caller's when `None`).
    pub cwd: Option<PathBuf>,
    /// The bytes written to its standard input (none, and the input closed, when `None`).
    pub stdin: Option<Vec<u8>>,
    /// How long it may run; past it, it and everything it started are killed. `None` only for
    /// installers, which take as long as their downloads (give them an interrupt).
    pub time_limit: Option<Duration>,
    /// Stops it and everything it started (SIGTERM) when set, as it is on Ctrl-C.
    pub interrupt: Option<Interrupt>,
}

/// What a helper program printed, and how it ended.
#[derive(Debug, Clone)]
pub struct HelperOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// Its standard output (invalid UTF-8 replaced).
    pub stdout: String,
    /// Its standard error (invalid UTF-8 replaced).
    pub stderr: String,
    /// Whether its time limit killed it, and this is what it printed before
    /// ([`HelperCommand::run_to_limit`]; [`HelperCommand::run`] answers
    /// [`HelperError::TimedOut`] instead).
    pub timed_out: bool,
}

/// Why a helper program gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The program does not exist.
    #[error("`{program}` is not installed here (no such program on PATH, or no file at that path)")]
    NotFound {
        /// The program.
        program: String,
    },
    /// The program exists but could not be started.
    #[error("could not start `{program}`")]
    Start {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Its output could not be read, or its end could not be awaited.
    #[error("could not read the output of `{program}`")]
    Read {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It ran past its time limit and was killed with everything it started.
    #[error(
        "`{program}` gave no answer within {:.1} s and was killed with everything it started",
        .limit.as_secs_f64()
    )]
    TimedOut {
        /// The program.
        program: String,
        /// Its time limit.
        limit: Duration,
    },
}

impl HelperCommand {
    /// `program args` with the caller's environment and no input, killed after `time_limit`.
    pub fn new(
        program: impl AsRef<Path>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        time_limit: Duration,
    ) -> HelperCommand {
        HelperCommand {
            time_limit: Some(time_limit),
            ..HelperCommand::unlimited(program, args)
        }
    }

    /// `program args` with no time limit: for an installer, which takes as long as its
    /// downloads; give it an [`HelperCommand::interrupt`] so that Ctrl-C stops it.
    pub fn unlimited(
        program: impl AsRef<Path>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> HelperCommand {
        HelperCommand {
            program: program.as_ref().to_path_buf(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            stdin: None,
            time_limit: None,
            interrupt: None,
        }
    }

    /// The command as one line a shell would run the same way, for logs and messages.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|word| shell_quote(&word.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the program to its end, its standard output and standard error captured apart.
    /// A program that ends with a failure status is an answer too: see [`HelperOutput::status`].
    pub fn run(&self) -> Result<HelperOutput, HelperError> {
        let output = self.run_to_limit()?;
        if output.timed_out {
            return Err(self.timed_out());
        }
        Ok(output)
    }

    /// Runs the program as [`HelperCommand::run`] does, but a program killed by its time limit
    /// still gives what it printed before ([`HelperOutput::timed_out`] set): for a helper that
    /// answers several questions in turn, the answers it gave are kept.
    pub fn run_to_limit(&self) -> Result<HelperOutput, HelperError> {
        let mut running = self.start(Stdio::piped(), Stdio::piped())?;
        let stderr_pipe = running.child.stderr.take();
        let stderr_reader = std::thread::spawn(move || read_all(stderr_pipe));
        let stdout = read_all(running.child.stdout.take());
        let stderr = stderr_reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the reader thread panicked")));
        if stdout.is_err() || stderr.is_err() {
            running.kill();
        }
        let (status, timed_out) = running.finish_or_time_out()?;
        let text = |read: std::io::Result<Vec<u8>>| {
            read.map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .map_err(|source| self.read_error(source))
        };
        Ok(HelperOutput {
            status,
            stdout: text(stdout)?,
            stderr: text(stderr)?,
            timed_out,
        })
    }

    /// Runs the program to its end, its standard output and standard error merged into one
    /// pipe and passed to `on_line` a line at a time as they come (each line with its `\n`,
    /// but the last when it has none); how it ended.
    pub fn run_lines(&self, on_line: &mut dyn FnMut(&[u8])) -> Result<ExitStatus, HelperError> {
        let (reader, writer) = std::io::pipe().map_err(|source| self.start_error(source))?;
        let second_writer = writer
            .try_clone()
            .map_err(|source| self.start_error(source))?;
        let mut running = self.start(second_writer.into(), writer.into())?;
        let mut lines = BufReader::new(reader);
        let mut line = Vec::new();
        let read = loop {
            line.clear();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) => break Ok(()),
                Ok(_) => on_line(&line),
                Err(error) => break Err(error),
            }
        };
        if read.is_err() {
            running.kill();
        }
        let status = running.finish()?;
        read.map_err(|source| self.read_error(source))?;
        Ok(status)
    }

    /// Starts the program with these standard output and error, its input fed on a thread
    /// and its stoppers armed.
    fn start(&self, stdout: Stdio, stderr: Stdio) -> Result<Running<'_>, HelperError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(stdout)
            .stderr(stderr);
        for key in &self.env_remove {
            cmd.env_remove(key);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        let token = (self.time_limit.is_some() || self.interrupt.is_some()).then(fresh_token);
        if let Some(token) = &token {
            in_own_tree(&mut cmd, token);
        }
        let mut child = spawn_inheriting(&mut cmd, None, &[]).map_err(|source| {
            let missing_cwd = self.cwd.as_deref().is_some_and(|cwd| !cwd.is_dir());
            if source.kind() == std::io::ErrorKind::NotFound && !missing_cwd {
                HelperError::NotFound {
                    program: self.program_name(),
                }
            } else {
                self.start_error(source)
            }
        })?;
        // `cmd` holds the parent's copies of the output pipes' write ends: closed here, so that
        // the readers see the end of the output once the program and its children are done.
        drop(cmd);
        // The process is its group's leader, so its pid is the group id.
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let state = Arc::new(Mutex::new(Watch::default()));
        let feeder = child
            .stdin
            .take()
            .zip(self.stdin.clone())
            .map(|(mut pipe, bytes)| {
                // On a thread: a program that answers before it has read everything must not
                // block on a full pipe. One that exits without reading it all has failed, and
                // its output says why.
                std::thread::spawn(move || {
                    let _ = pipe.write_all(&bytes);
                })
            });
        let timer = self
            .time_limit
            .zip(token.clone())
            .map(|(limit, token)| arm_timer(pid, token, limit, Arc::clone(&state)));
        let hooks = self
            .interrupt
            .as_ref()
            .zip(token.clone())
            .map(|(interrupt, token)| arm_interrupt(interrupt, pid, token, Arc::clone(&state)));
        Ok(Running {
            command: self,
            child,
            pid,
            token,
            state,
            timer,
            hooks,
            feeder,
        })
    }

    fn program_name(&self) -> String {
        self.program.display().to_string()
    }

    fn start_error(&self, source: std::io::Error) -> HelperError {
        HelperError::Start {
            program: self.program_name(),
            source,
        }
    }

    fn timed_out(&self) -> HelperError {
        HelperError::TimedOut {
            program: self.program_name(),
            limit: self.time_limit.unwrap_or_default(),
        }
    }

    fn read_error(&self, source: std::io::Error) -> HelperError {
        HelperError::Read {
            program: self.program_name(),
            source,
        }
    }
}

impl HelperOutput {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// What it said about itself, for messages: its standard error, or its standard output
    /// when that is empty; trimmed.
    pub fn said(&self) -> &str {
        match self.stderr.trim() {
            "" => self.stdout.trim(),
            said => said,
        }
    }
}

/// Whether the stoppers may still signal the helper, and whether its time limit did.
#[derive(Debug, Default)]
struct Watch {
    /// The helper has ended and is about to be reaped: nothing may signal its group any more.
    ended: bool,
    /// The time limit killed it.
    timed_out: bool,
}

fn lock(state: &Mutex<Watch>) -> MutexGuard<'_, Watch> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A thread that kills the tree of `pid` once `limit` has passed, unless told to stop first
/// (by the sender, dropped or used).
fn arm_timer(
    pid: i32,
    token: String,
    limit: Duration,
    state: Arc<Mutex<Watch>>,
) -> (Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        if stopped.recv_timeout(limit) == Err(RecvTimeoutError::Timeout) {
            let mut state = lock(&state);
            if !state.ended {
                state.timed_out = true;
                signal_tree(Some(pid), &token, Signal::SIGKILL);
            }
        }
    });
    (stop, thread)
}

/// Registers the group of `pid` with `interrupt` (for its second Ctrl-C) and stops the tree
/// (SIGTERM) when it is set; at once when it is set already.
fn arm_interrupt(
    interrupt: &Interrupt,
    pid: i32,
    token: String,
    state: Arc<Mutex<Watch>>,
) -> (WatchedGroup, TriggerHook) {
    let stop = move || {
        if !lock(&state).ended {
            signal_tree(Some(pid), &token, Signal::SIGTERM);
        }
    };
    let hooks = (
        interrupt.watch_group(pid),
        interrupt.on_trigger(stop.clone()),
    );
    if interrupt.is_set() {
        stop();
    }
    hooks
}

/// A started helper and what stops it.
struct Running<'a> {
    command: &'a HelperCommand,
    child: Child,
    pid: i32,
    /// Its tree token, when it leads a process group of its own.
    token: Option<String>,
    state: Arc<Mutex<Watch>>,
    timer: Option<(Sender<()>, JoinHandle<()>)>,
    hooks: Option<(WatchedGroup, TriggerHook)>,
    feeder: Option<JoinHandle<()>>,
}

impl Running<'_> {
    /// Kills it and everything it started (its output could not be read, so it would block).
    fn kill(&mut self) {
        match &self.token {
            Some(token) => {
                signal_tree(Some(self.pid), token, Signal::SIGKILL);
            }
            None => {
                let _ = self.child.kill();
            }
        }
    }

    /// Waits for its end as [`Running::finish_or_time_out`] does; how it ended, or
    /// [`HelperError::TimedOut`] when the time limit killed it.
    fn finish(self) -> Result<ExitStatus, HelperError> {
        let command = self.command;
        match self.finish_or_time_out()? {
            (_, true) => Err(command.timed_out()),
            (status, false) => Ok(status),
        }
    }

    /// Waits for its end (its time limit still running), disarms the stoppers, reaps it; how
    /// it ended, and whether the time limit killed it.
    fn finish_or_time_out(mut self) -> Result<(ExitStatus, bool), HelperError> {
        let ended = loop {
            match waitid(
                Id::Pid(Pid::from_raw(self.pid)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            ) {
                Err(Errno::EINTR) => continue,
                other => break other,
            }
        };
        lock(&self.state).ended = true;
        drop(self.hooks.take());
        if let Some((stop, thread)) = self.timer.take() {
            drop(stop);
            let _ = thread.join();
        }
        if let Some(feeder) = self.feeder.take() {
            let _ = feeder.join();
        }
        let status = self.child.wait();
        ended.map_err(|errno| self.command.read_error(errno.into()))?;
        let status = status.map_err(|source| self.command.read_error(source))?;
        let timed_out = lock(&self.state).timed_out;
        Ok((status, timed_out))
    }
}

/// Everything `pipe` gives until its end.
fn read_all<R: Read>(pipe: Option<R>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::time::Instant;

    use super::*;

    fn sh(script: &str, time_limit: Duration) -> HelperCommand {
        HelperCommand::new("sh", ["-c", script], time_limit)
    }

    /// Whether a process carrying `entry` (`NAME=value`) in its environment is alive.
    fn alive_with(entry: &str) -> bool {
        std::fs::read_dir("/proc")
            .expect("proc")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .any(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                let zombie = stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z'));
                !zombie
                    && std::fs::read(e.path().join("environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == entry.as_bytes()))
            })
    }

    fn eventually(what: impl Fn() -> bool) -> bool {
        (0..250).any(|_| {
            let done = what();
            if !done {
                std::thread::sleep(Duration::from_millis(20));
            }
            done
        })
    }

    #[test]
    fn output_is_captured_apart_with_the_status() {
        let out = sh("echo out; echo err >&2; exit 3", Duration::from_secs(10))
            .run()
            .expect("runs");
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.success());
        assert_eq!(out.said(), "err");
    }

    #[test]
    fn said_is_stdout_when_stderr_is_empty() {
        let out = sh("echo ' only out '; exit 1", Duration::from_secs(10))
            .run()
            .expect("runs");
        assert_eq!(out.said(), "only out");
    }

    #[test]
    fn input_variables_and_folder_reach_the_program() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut command = sh(
            "cat; echo \"$HELPER_X\"; echo \"${HOME:-unset}\"; pwd",
            Duration::from_secs(10),
        );
        command.stdin = Some(b"from stdin\n".to_vec());
        command.env.push(("HELPER_X".into(), "x".into()));
        command.env_remove.push("HOME".into());
        command.cwd = Some(dir.path().canonicalize().expect("canonical"));
        let out = command.run().expect("runs");
        let cwd = dir.path().canonicalize().expect("canonical");
        assert_eq!(
            out.stdout,
            format!("from stdin\nx\nunset\n{}\n", cwd.display())
        );
    }

    #[test]
    fn a_large_input_that_is_not_read_does_not_block() {
        let mut command = sh("echo early", Duration::from_secs(10));
        command.stdin = Some(vec![b'x'; 4 << 20]);
        let out = command.run().expect("runs");
        assert_eq!(out.stdout, "early\n");
    }

    #[test]
    fn a_missing_program_is_not_found() {
        let err = HelperCommand::new("/nonexistent/helper", ["x"], Duration::from_secs(1))
            .run()
            .expect_err("missing");
        assert!(matches!(err, HelperError::NotFound { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/helper"), "{err}");
        let err = HelperCommand::new("no-such-helper-program-here", ["x"], Duration::from_secs(1))
            .run()
            .expect_err("missing");
        assert!(matches!(err, HelperError::NotFound { .. }), "{err:?}");
    }

    #[test]
    fn a_missing_folder_is_not_a_missing_program() {
        let mut command = sh("true", Duration::from_secs(1));
        command.cwd = Some("/nonexistent/folder".into());
        let err = command.run().expect_err("no folder");
        assert!(matches!(err, HelperError::Start { .. }), "{err:?}");
        assert_eq!(err.to_string(), "could not start `sh`");
    }

    #[test]
    fn past_its_time_limit_it_is_killed_with_what_it_started() {
        let marker = format!("HELPER_TIMEOUT_{}=1", std::process::id());
        let mut command = sh(
            "sleep 300 & setsid sleep 300 & echo started; wait",
            Duration::from_millis(500),
        );
        let (key, value) = marker.split_once('=').expect("entry");
        command.env.push((key.into(), value.into()));
        let start = Instant::now();
        let err = command.run().expect_err("killed");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        assert!(matches!(err, HelperError::TimedOut { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "`sh` gave no answer within 0.5 s and was killed with everything it started"
        );
        assert!(eventually(|| !alive_with(&marker)), "a child outlived it");
    }

    #[test]
    fn up_to_its_limit_what_it_printed_before_the_kill_is_kept() {
        let out = sh(
            "echo first; echo err >&2; sleep 300",
            Duration::from_millis(300),
        )
        .run_to_limit()
        .expect("an answer, cut short");
        assert!(out.timed_out);
        assert_eq!(out.stdout, "first\n");
        assert_eq!(out.stderr, "err\n");
        let whole = sh("echo all", Duration::from_secs(10))
            .run_to_limit()
            .expect("runs");
        assert!(!whole.timed_out && whole.success());
    }

    #[test]
    fn lines_come_merged_and_in_order() {
        let mut lines = Vec::new();
        let status = sh(
            "echo one; echo two >&2; printf three",
            Duration::from_secs(10),
        )
        .run_lines(&mut |line| lines.push(String::from_utf8_lossy(line).into_owned()))
        .expect("runs");
        assert!(status.success());
        assert_eq!(lines, ["one\n", "two\n", "three"]);
    }

    #[test]
    fn lines_past_the_time_limit_are_a_time_out() {
        let err = sh("echo one; sleep 300", Duration::from_millis(300))
            .run_lines(&mut |_| {})
            .expect_err("killed");
        assert!(matches!(err, HelperError::TimedOut { .. }), "{err:?}");
    }

    #[test]
    fn an_interrupt_stops_it_with_sigterm() {
        let interrupt = Interrupt::new();
        let mut command = HelperCommand::unlimited("sh", ["-c", "echo ready; sleep 300"]);
        command.interrupt = Some(interrupt.clone());
        let mut lines = 0;
        let status = command
            .run_lines(&mut |_| {
                lines += 1;
                interrupt.trigger();
            })
            .expect("ends");
        assert_eq!(lines, 1);
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
    }

    #[test]
    fn an_interrupt_set_before_the_start_stops_it_at_once() {
        let interrupt = Interrupt::new();
        interrupt.trigger();
        let mut command = sh("sleep 300", Duration::from_secs(60));
        command.interrupt = Some(interrupt);
        let start = Instant::now();
        let out = command.run().expect("ends");
        assert!(start.elapsed() < Duration::from_secs(20));
        assert_eq!(out.status.signal(), Some(Signal::SIGTERM as i32));
    }

    #[test]
    fn the_display_is_quoted_for_a_shell() {
        let command = HelperCommand::unlimited("/bin/echo", ["a b", "c", "it's"]);
        assert_eq!(command.display(), r"/bin/echo 'a b' c 'it'\''s'");
    }
}
