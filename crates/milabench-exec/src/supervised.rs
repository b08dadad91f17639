//! One process started on its own rather than as part of a plan (a tool's long-lived worker,
//! such as benchit's Python worker), supervised the way a plan's processes are: it leads a
//! process group of its own and carries a tree token, so that stopping it reaches everything it
//! started (see the `tree` module); Ctrl-C's second signal ([`Interrupt::kill_now`]) reaches its
//! group; and a watchdog, when one is named, kills its tree should this program die.
//!
//! The caller keeps its own protocol with the process (its pipes are public, as in
//! [`std::process::Child`]); this type only starts, waits for and stops it. A waiter thread
//! reaps the process, so waiting with a time limit needs no polling.

use std::fmt;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::error::ExecError;
use crate::interrupt::{Interrupt, WatchedGroup};
use crate::spawn::{in_own_tree, spawn_inheriting};
use crate::tree::{fresh_token, signal_tree};
use crate::watchdog::{Watchdog, WatchdogCommand};

/// A started process and everything it starts; dropping it SIGKILLs what is left of its tree.
pub struct SupervisedChild {
    /// Its standard input, when the command piped it.
    pub stdin: Option<ChildStdin>,
    /// Its standard output, when the command piped it.
    pub stdout: Option<ChildStdout>,
    /// Its standard error, when the command piped it.
    pub stderr: Option<ChildStderr>,
    pid: i32,
    token: String,
    /// The exit status, from the waiter thread (closed without one if waiting failed).
    exited: Receiver<ExitStatus>,
    /// Whether the process has been reaped, and its status when it could be had.
    ended: Option<Option<ExitStatus>>,
    _group: WatchedGroup,
    watchdog: Option<Watchdog>,
}

impl fmt::Debug for SupervisedChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisedChild")
            .field("pid", &self.pid)
            .field("token", &self.token)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl SupervisedChild {
    /// Starts `cmd` as the leader of a new process group carrying a fresh tree token, its group
    /// registered with `interrupt`; with `watchdog`, a watchdog process is started first and
    /// told of the tree, so that it is killed should this program die before stopping it.
    ///
    /// A program that cannot be started is [`ExecError::Spawn`]; a watchdog that cannot be
    /// started or told is [`ExecError::Watchdog`] (the process is then killed).
    pub fn spawn(
        cmd: &mut Command,
        interrupt: &Interrupt,
        watchdog: Option<&WatchdogCommand>,
    ) -> Result<SupervisedChild, ExecError> {
        let token = fresh_token();
        let watchdog_error = |command: &WatchdogCommand, error| ExecError::Watchdog {
            program: command.program.display().to_string(),
            error,
        };
        let mut started_watchdog = match watchdog {
            Some(command) => {
                let mut started =
                    Watchdog::start(command, &[]).map_err(|e| watchdog_error(command, e))?;
                started
                    .watch(&token, None)
                    .map_err(|e| watchdog_error(command, e))?;
                Some(started)
            }
            None => None,
        };
        in_own_tree(cmd, &token);
        let mut child = spawn_inheriting(cmd, None, &[]).map_err(|error| ExecError::Spawn {
            program: cmd.get_program().to_string_lossy().into_owned(),
            error,
        })?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let group = interrupt.watch_group(pid);
        let kill = |token: &str| signal_tree(Some(pid), token, Signal::SIGKILL);
        if let (Some(started), Some(command)) = (&mut started_watchdog, watchdog)
            && let Err(error) = started.watch(&token, Some(pid))
        {
            kill(&token);
            let _ = child.wait();
            return Err(watchdog_error(command, error));
        }
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (sender, exited) = mpsc::channel();
        let waiter = std::thread::Builder::new()
            .name(format!("milabench-wait-{pid}"))
            .spawn(move || {
                if let Ok(status) = child.wait() {
                    let _ = sender.send(status);
                }
            });
        if let Err(error) = waiter {
            kill(&token);
            return Err(ExecError::Spawn {
                program: format!("a waiter thread for process {pid}"),
                error,
            });
        }
        Ok(SupervisedChild {
            stdin,
            stdout,
            stderr,
            pid,
            token,
            exited,
            ended: None,
            _group: group,
            watchdog: started_watchdog,
        })
    }

    /// The process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Waits at most `limit` for the process to end; its exit status, or `None` while it still
    /// runs (or when its status could not be had).
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        if let Some(ended) = self.ended {
            return ended;
        }
        match self.exited.recv_timeout(limit) {
            Ok(status) => self.ended = Some(Some(status)),
            Err(mpsc::RecvTimeoutError::Disconnected) => self.ended = Some(None),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        self.ended.flatten()
    }

    /// Stops the process and everything it started: SIGTERM to its tree, SIGKILL after `grace`,
    /// and SIGKILL to whatever of the tree is left once it has ended. Returns its exit status
    /// (`None` when it could not be had: the process did not end even after SIGKILL).
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.ended.is_none() {
            signal_tree(Some(self.pid), &self.token, Signal::SIGTERM);
            if self.wait_timeout(grace).is_none() {
                signal_tree(Some(self.pid), &self.token, Signal::SIGKILL);
                self.wait_timeout(grace.max(Duration::from_secs(1)));
            }
        }
        signal_tree(Some(self.pid), &self.token, Signal::SIGKILL);
        self.ended.flatten()
    }
}

impl Drop for SupervisedChild {
    fn drop(&mut self) {
        // Nothing it started outlives it; the waiter thread reaps the process.
        signal_tree(Some(self.pid), &self.token, Signal::SIGKILL);
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    use super::*;

    /// Whether `pid` is gone (or a zombie nobody reaps, as happens without an init process).
    fn gone(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
    }

    fn wait_until_gone(pid: i32) -> bool {
        (0..500).any(|_| {
            let done = gone(pid);
            if !done {
                std::thread::sleep(Duration::from_millis(20));
            }
            done
        })
    }

    /// `sh -c script` with stdout piped; the first line it prints.
    fn sh(script: &str, interrupt: &Interrupt) -> (SupervisedChild, String) {
        let mut child = SupervisedChild::spawn(
            Command::new("sh")
                .args(["-c", script])
                .stdout(Stdio::piped()),
            interrupt,
            None,
        )
        .expect("sh starts");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("piped"))
            .read_line(&mut line)
            .expect("a line");
        (child, line.trim().to_string())
    }

    #[test]
    fn stop_reaches_descendants_that_left_the_group() {
        let interrupt = Interrupt::new();
        let (mut child, line) = sh(
            "trap '' TERM; setsid sleep 30 & echo $!; while :; do sleep 1; done",
            &interrupt,
        );
        let escaped: i32 = line.parse().expect("a pid");
        assert!(!gone(escaped), "the escaped grandchild runs");
        let status = child.stop(Duration::from_millis(200)).expect("a status");
        assert_eq!(status.signal(), Some(9), "TERM is ignored, KILL follows");
        assert!(wait_until_gone(escaped), "setsid did not save it");
    }

    #[test]
    fn a_process_that_ends_is_waited_for_and_dropping_kills_what_it_left() {
        let interrupt = Interrupt::new();
        let (mut child, line) = sh("sleep 30 & echo $!; exit 3", &interrupt);
        let left: i32 = line.parse().expect("a pid");
        let status = child.wait_timeout(Duration::from_secs(30)).expect("ended");
        assert_eq!(status.code(), Some(3));
        assert_eq!(child.wait_timeout(Duration::ZERO), Some(status), "kept");
        assert!(!gone(left), "its background job outlives it until the drop");
        drop(child);
        assert!(wait_until_gone(left));
    }

    #[test]
    fn a_second_ctrl_c_reaches_its_group() {
        let interrupt = Interrupt::new();
        let (mut child, _) = sh("echo up; sleep 30", &interrupt);
        interrupt.kill_now();
        let status = child.wait_timeout(Duration::from_secs(30)).expect("ended");
        assert_eq!(status.signal(), Some(9));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = SupervisedChild::spawn(
            &mut Command::new("/nonexistent/program"),
            &Interrupt::new(),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, ExecError::Spawn { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/program"), "{err}");
    }
}
