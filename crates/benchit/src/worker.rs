//! One Python worker process (`python -m benchmate.benchit <mode>`): started in its own process
//! group, fed JSON lines on stdin, read JSON lines from stdout, its stderr in a log file, stopped
//! on deadline, Ctrl-C or drop. See `docs/benchit-protocol.md`.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{Interrupt, WatchedGroup};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The environment variable that replaces `<python> -m benchmate.benchit` with a command of the
/// user's (split like a shell would split it).
pub const WORKER_VAR: &str = "BENCHIT_WORKER";

/// Time between SIGTERM and SIGKILL when a worker is stopped.
const GRACE: Duration = Duration::from_secs(3);

/// How often a waiting read looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(100);

/// How a worker is started: a program and the arguments before the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program (an interpreter, usually).
    pub program: String,
    /// Its first arguments (`-m benchmate.benchit`); the mode is appended.
    pub args: Vec<String>,
}

impl WorkerCommand {
    /// `python -m benchmate.benchit` with the given interpreter.
    pub fn python(python: &Utf8Path) -> WorkerCommand {
        WorkerCommand {
            program: python.to_string(),
            args: vec!["-m".into(), "benchmate.benchit".into()],
        }
    }

    /// Parses a command line such as the value of [`WORKER_VAR`].
    pub fn parse(line: &str) -> Result<WorkerCommand, WorkerError> {
        let words = shlex::split(line).ok_or_else(|| WorkerError::BadCommand {
            line: line.to_string(),
            problem: "unbalanced quotes".into(),
        })?;
        let mut words = words.into_iter();
        let program = words.next().ok_or_else(|| WorkerError::BadCommand {
            line: line.to_string(),
            problem: "it is empty".into(),
        })?;
        Ok(WorkerCommand {
            program,
            args: words.collect(),
        })
    }

    /// [`WORKER_VAR`] when set and not empty.
    pub fn from_env() -> Result<Option<WorkerCommand>, WorkerError> {
        match std::env::var(WORKER_VAR) {
            Ok(line) if !line.trim().is_empty() => Self::parse(&line).map(Some),
            _ => Ok(None),
        }
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What [`Worker::spawn`] needs besides the command.
#[derive(Debug, Clone)]
pub struct WorkerOptions<'a> {
    /// The worker mode: `models` or `ops`.
    pub mode: &'a str,
    /// The working folder of the worker.
    pub cwd: &'a Utf8Path,
    /// The file receiving the worker's stderr (and the user script's output); created or
    /// truncated.
    pub log: &'a Utf8Path,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// How long the worker may live in all.
    pub timeout: Duration,
    /// Ctrl-C: a set flag makes reads fail with [`WorkerError::Interrupted`].
    pub interrupt: Interrupt,
}

/// Why talking to a worker failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker command line cannot be used.
    #[error(
        "{WORKER_VAR}=`{line}` cannot be used: {problem}; give a command such as `python3 -m benchmate.benchit`"
    )]
    BadCommand {
        /// The command line.
        line: String,
        /// What is wrong.
        problem: String,
    },
    /// The process could not start.
    #[error("could not start the benchit worker `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The log file could not be created.
    #[error("could not create the worker log {path}: {source}")]
    Log {
        /// The log file.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The worker stopped reading its requests.
    #[error("the benchit worker stopped reading its requests ({source}); see its log {log}")]
    Send {
        /// The worker's log.
        log: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The deadline passed; the worker was stopped.
    #[error("timed out after {seconds} s (--timeout); the worker was stopped")]
    Timeout {
        /// The timeout, seconds.
        seconds: u64,
    },
    /// Ctrl-C; the worker was stopped.
    #[error("interrupted; the worker was stopped")]
    Interrupted,
    /// The worker wrote something that is not an event of the protocol.
    #[error(
        "the benchit worker broke the protocol ({problem}) with the line `{line}`; see its log {log}"
    )]
    Protocol {
        /// The offending line (cut to 200 characters).
        line: String,
        /// What is wrong with it.
        problem: String,
        /// The worker's log.
        log: Utf8PathBuf,
    },
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerExit {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, otherwise.
    pub signal: Option<i32>,
}

impl WorkerExit {
    fn from_status(status: ExitStatus) -> WorkerExit {
        WorkerExit {
            code: status.code(),
            signal: status.signal(),
        }
    }

    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl fmt::Display for WorkerExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exited with code {code}"),
            (None, Some(9)) => f.write_str("was killed by signal 9 (SIGKILL; out of memory?)"),
            (None, Some(signal)) => write!(f, "was killed by signal {signal}"),
            (None, None) => f.write_str("ended in an unknown way"),
        }
    }
}

/// A running worker: a process benchit started, or the Python program that started benchit
/// ([`Worker::over_stdio`]). Dropping a started one stops its process group.
pub struct Worker {
    /// The worker process and its group's watch, when benchit started it.
    process: Option<(Child, WatchedGroup)>,
    requests: Option<Box<dyn Write + Send>>,
    lines: Receiver<std::io::Result<String>>,
    started: Instant,
    timeout: Duration,
    interrupt: Interrupt,
    log: Utf8PathBuf,
    exit: Option<WorkerExit>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("pid", &self.process.as_ref().map(|(child, _)| child.id()))
            .field("log", &self.log)
            .finish()
    }
}

/// Reads `source` line by line on a thread of its own, so that waiting for a line can watch a
/// deadline and Ctrl-C.
fn line_reader(
    source: impl std::io::Read + Send + 'static,
) -> std::io::Result<Receiver<std::io::Result<String>>> {
    let (sender, lines) = mpsc::channel();
    std::thread::Builder::new()
        .name("benchit-worker-reader".into())
        .spawn(move || {
            for line in BufReader::new(source).lines() {
                let failed = line.is_err();
                if sender.send(line).is_err() || failed {
                    break;
                }
            }
        })?;
    Ok(lines)
}

impl Worker {
    /// Starts `command` with `options.mode` appended, in a new process group.
    pub fn spawn(
        command: &WorkerCommand,
        options: WorkerOptions<'_>,
    ) -> Result<Worker, WorkerError> {
        if let Some(parent) = options.log.parent() {
            fs_err::create_dir_all(parent).map_err(|source| WorkerError::Log {
                path: options.log.to_path_buf(),
                source,
            })?;
        }
        let log = std::fs::File::create(options.log).map_err(|source| WorkerError::Log {
            path: options.log.to_path_buf(),
            source,
        })?;
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .arg(options.mode)
            .current_dir(options.cwd)
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0);
        let mut child = cmd.spawn().map_err(|source| WorkerError::Spawn {
            command: format!("{} {}", command.display(), options.mode),
            source,
        })?;
        let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let watched = options.interrupt.watch_group(pgid);
        let stdout = child.stdout.take().expect("stdout is piped");
        let lines = line_reader(stdout).map_err(|source| WorkerError::Spawn {
            command: command.display(),
            source,
        })?;
        Ok(Worker {
            requests: child
                .stdin
                .take()
                .map(|stdin| Box::new(stdin) as Box<dyn Write + Send>),
            process: Some((child, watched)),
            lines,
            started: Instant::now(),
            timeout: options.timeout,
            interrupt: options.interrupt,
            log: options.log.to_path_buf(),
            exit: None,
        })
    }

    /// The worker is the program that started benchit (benchmate's `benchmark_model`): its
    /// events arrive on benchit's stdin and replies go to benchit's stdout, so nothing else may
    /// print on stdout until [`Worker::finish`]. `log` names where that program's own output
    /// goes, for messages; the timeout and Ctrl-C end the conversation as for a started worker.
    pub fn over_stdio(
        log: &Utf8Path,
        timeout: Duration,
        interrupt: Interrupt,
    ) -> Result<Worker, WorkerError> {
        let lines = line_reader(std::io::stdin()).map_err(|source| WorkerError::Spawn {
            command: "the benchit protocol on stdin".into(),
            source,
        })?;
        Ok(Worker {
            process: None,
            requests: Some(Box::new(std::io::stdout())),
            lines,
            started: Instant::now(),
            timeout,
            interrupt,
            log: log.to_path_buf(),
            exit: None,
        })
    }

    /// The worker's log file.
    pub fn log(&self) -> &Utf8Path {
        &self.log
    }

    /// Sends one JSON line.
    pub fn send<T: Serialize>(&mut self, message: &T) -> Result<(), WorkerError> {
        let mut line = serde_json::to_string(message).expect("protocol messages serialise");
        line.push('\n');
        let log = self.log.clone();
        let stdin = self.requests.as_mut().ok_or_else(|| WorkerError::Send {
            log: log.clone(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        })?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|source| WorkerError::Send { log, source })
    }

    /// The next event, parsed as `E`; `None` once the worker closed its output. On timeout,
    /// Ctrl-C or a line that is not an `E`, the worker is stopped and an error returned.
    pub fn next_event<E: DeserializeOwned>(&mut self) -> Result<Option<E>, WorkerError> {
        loop {
            if self.interrupt.is_set() {
                self.stop();
                return Err(WorkerError::Interrupted);
            }
            let left = self.timeout.saturating_sub(self.started.elapsed());
            if left.is_zero() {
                self.stop();
                return Err(WorkerError::Timeout {
                    seconds: self.timeout.as_secs(),
                });
            }
            match self.lines.recv_timeout(left.min(POLL)) {
                Ok(Ok(line)) if line.trim().is_empty() => continue,
                Ok(Ok(line)) => {
                    return match serde_json::from_str::<E>(&line) {
                        Ok(event) => Ok(Some(event)),
                        Err(err) => {
                            self.stop();
                            Err(WorkerError::Protocol {
                                line: line.chars().take(200).collect(),
                                problem: err.to_string(),
                                log: self.log.clone(),
                            })
                        }
                    };
                }
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => continue,
            }
        }
    }

    /// Closes the worker's stdin, waits for it to exit (stopping it when it does not within the
    /// grace period) and returns how it ended.
    pub fn finish(mut self) -> WorkerExit {
        self.requests = None;
        if let Some(exit) = self.exit {
            return exit;
        }
        if let Some(status) = self.wait_for_exit(GRACE) {
            let exit = WorkerExit::from_status(status);
            self.exit = Some(exit);
            return exit;
        }
        self.stop()
    }

    /// The exit status once the process has ended, or `None` when it is still running after
    /// `grace`.
    fn wait_for_exit(&mut self, grace: Duration) -> Option<ExitStatus> {
        let (child, _) = self.process.as_mut()?;
        let until = Instant::now() + grace;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process group: SIGTERM, then SIGKILL after the grace period. A worker over
    /// stdio is only no longer answered: it is the program that started benchit.
    fn stop(&mut self) -> WorkerExit {
        if let Some(exit) = self.exit {
            return exit;
        }
        self.requests = None;
        let Some(pid) = self.process.as_ref().map(|(child, _)| child.id()) else {
            let exit = WorkerExit {
                code: None,
                signal: None,
            };
            self.exit = Some(exit);
            return exit;
        };
        let pgid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
        let _ = killpg(pgid, Signal::SIGTERM);
        let status = self.wait_for_exit(GRACE).or_else(|| {
            let _ = killpg(pgid, Signal::SIGKILL);
            self.process.as_mut()?.0.wait().ok()
        });
        // Whatever the group's other processes were doing, they go too.
        let _ = killpg(pgid, Signal::SIGKILL);
        let exit = status.map_or(
            WorkerExit {
                code: None,
                signal: None,
            },
            WorkerExit::from_status,
        );
        self.exit = Some(exit);
        exit
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn sh(script: &str, timeout: Duration, interrupt: &Interrupt) -> (Worker, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let cwd = Utf8Path::from_path(dir.path()).unwrap().to_path_buf();
        let log = cwd.join("logs/worker.log");
        let command = WorkerCommand {
            program: "sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
        };
        let worker = Worker::spawn(
            &command,
            WorkerOptions {
                mode: "models",
                cwd: &cwd,
                log: &log,
                env: vec![("GREETING".into(), "hi".into())],
                timeout,
                interrupt: interrupt.clone(),
            },
        )
        .unwrap();
        (worker, dir)
    }

    #[test]
    fn events_flow_both_ways_and_stderr_goes_to_the_log() {
        let interrupt = Interrupt::new();
        let script = r#"read line; echo "log line $1" >&2; echo "{\"event\":\"echo\",\"got\":$line,\"mode\":\"$1\",\"greeting\":\"$GREETING\"}""#;
        let (mut worker, _dir) = sh(script, Duration::from_secs(10), &interrupt);
        worker.send(&serde_json::json!({"n": 1})).unwrap();
        let event: Value = worker.next_event().unwrap().unwrap();
        assert_eq!(event["got"]["n"], 1);
        assert_eq!(event["mode"], "models");
        assert_eq!(event["greeting"], "hi");
        assert!(worker.next_event::<Value>().unwrap().is_none());
        let log = worker.log().to_path_buf();
        let exit = worker.finish();
        assert!(exit.success(), "{exit}");
        assert_eq!(fs_err::read_to_string(log).unwrap(), "log line models\n");
    }

    #[test]
    fn a_hanging_worker_times_out_and_is_killed() {
        let interrupt = Interrupt::new();
        let (mut worker, _dir) = sh(
            "trap '' TERM; sleep 30",
            Duration::from_millis(300),
            &interrupt,
        );
        let started = Instant::now();
        let err = worker.next_event::<Value>().unwrap_err();
        assert!(matches!(err, WorkerError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let exit = worker.finish();
        assert_eq!(exit.signal, Some(9), "{exit}");
    }

    #[test]
    fn ctrl_c_stops_the_worker() {
        let interrupt = Interrupt::new();
        let (mut worker, _dir) = sh("sleep 30", Duration::from_secs(60), &interrupt);
        interrupt.trigger();
        let err = worker.next_event::<Value>().unwrap_err();
        assert!(matches!(err, WorkerError::Interrupted), "{err}");
        assert_eq!(worker.finish().signal, Some(15));
    }

    #[test]
    fn a_line_that_is_not_an_event_is_a_protocol_error() {
        #[derive(Debug, serde::Deserialize)]
        struct Event {
            #[serde(rename = "event")]
            _event: String,
        }
        let interrupt = Interrupt::new();
        let (mut worker, _dir) = sh(
            "echo 'hello there'; sleep 30",
            Duration::from_secs(60),
            &interrupt,
        );
        let err = worker.next_event::<Event>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`hello there`"), "{text}");
        assert!(text.contains("worker.log"), "{text}");
    }

    #[test]
    fn crashes_are_described() {
        let interrupt = Interrupt::new();
        let (mut worker, _dir) = sh("kill -9 $$", Duration::from_secs(10), &interrupt);
        assert!(worker.next_event::<Value>().unwrap().is_none());
        let exit = worker.finish();
        assert_eq!(
            exit.to_string(),
            "was killed by signal 9 (SIGKILL; out of memory?)"
        );
        let (mut worker, _dir) = sh("exit 3", Duration::from_secs(10), &interrupt);
        assert!(worker.next_event::<Value>().unwrap().is_none());
        assert_eq!(worker.finish().to_string(), "exited with code 3");
    }

    #[test]
    fn worker_command_lines_are_split_like_a_shell() {
        let cmd = WorkerCommand::parse("'/opt/my python/bin/python' -m benchmate.benchit").unwrap();
        assert_eq!(cmd.program, "/opt/my python/bin/python");
        assert_eq!(cmd.args, ["-m", "benchmate.benchit"]);
        let err = WorkerCommand::parse("python 'oops")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unbalanced quotes"), "{err}");
        assert!(WorkerCommand::parse("   ").is_err());
    }
}
