//! One Python worker process (`python -m benchmate.benchit <mode>`): started and stopped through
//! `milabench-exec` ([`SupervisedChild`]: its own process group and tree, Ctrl-C, the watchdog),
//! fed JSON lines on stdin, read JSON lines from stdout, its stderr in a log file, stopped on
//! deadline, Ctrl-C or drop. See `docs/benchit-protocol.md`.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{
    ExecError, ExitCode, Interrupt, SupervisedChild, TriggerHook, WatchdogCommand,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The environment variable that replaces `<python> -m benchmate.benchit` with a command of the
/// user's (split like a shell would split it).
pub const WORKER_VAR: &str = "BENCHIT_WORKER";

/// Time between SIGTERM and SIGKILL when a worker is stopped, and how long a worker whose
/// requests ended may take to exit on its own.
const GRACE: Duration = Duration::from_secs(3);

/// How a worker is started: a program and the arguments before the mode, and the watchdog that
/// kills it should benchit die.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program (an interpreter, usually).
    pub program: String,
    /// Its first arguments (`-m benchmate.benchit`); the mode is appended.
    pub args: Vec<String>,
    /// Started beside each worker to kill it should benchit be killed (see
    /// [`milabench_exec::WatchdogCommand`]); `None`: a worker outlives a killed benchit until it
    /// reads its closed stdin.
    pub watchdog: Option<WatchdogCommand>,
}

impl WorkerCommand {
    /// `python -m benchmate.benchit` with the given interpreter.
    pub fn python(python: &Utf8Path) -> WorkerCommand {
        WorkerCommand {
            program: python.to_string(),
            args: vec!["-m".into(), "benchmate.benchit".into()],
            watchdog: None,
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
            watchdog: None,
        })
    }

    /// [`WORKER_VAR`] when set and not empty.
    pub fn from_env() -> Result<Option<WorkerCommand>, WorkerError> {
        match std::env::var(WORKER_VAR) {
            Ok(line) if !line.trim().is_empty() => Self::parse(&line).map(Some),
            _ => Ok(None),
        }
    }

    /// The same command, its workers watched by `watchdog`.
    pub fn with_watchdog(self, watchdog: WatchdogCommand) -> WorkerCommand {
        WorkerCommand {
            watchdog: Some(watchdog),
            ..self
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
    /// Ctrl-C: once set, reads fail with [`WorkerError::Interrupted`].
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
    #[error("could not start the benchit worker `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The worker's watchdog could not be started or told of the worker.
    #[error("could not watch the benchit worker `{command}`")]
    Watch {
        /// The command line.
        command: String,
        /// The cause.
        source: ExecError,
    },
    /// The log file could not be created.
    #[error("could not create the worker log {path}")]
    Log {
        /// The log file.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The worker stopped reading its requests.
    #[error("the benchit worker stopped reading its requests; see its log {log}")]
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

impl WorkerError {
    /// The exit code a command that ends on this error deserves: a worker command that cannot
    /// be used is bad input; a worker or log the machine would not start or create is an
    /// environment failure; a worker that stops answering, times out or breaks the protocol
    /// failed what it was asked, like a benchmark; Ctrl-C is an interruption.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            WorkerError::BadCommand { .. } => ExitCode::BadInput,
            WorkerError::Spawn { .. } | WorkerError::Log { .. } => ExitCode::Internal,
            WorkerError::Watch { source, .. } => source.exit_code(),
            WorkerError::Send { .. }
            | WorkerError::Timeout { .. }
            | WorkerError::Protocol { .. } => ExitCode::BenchmarkFailures,
            WorkerError::Interrupted => ExitCode::Interrupted,
        }
    }
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
    /// The exit of a process whose status is `status`, or an unknown end without one.
    fn from_status(status: Option<ExitStatus>) -> WorkerExit {
        WorkerExit {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
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

/// What a read of the worker waits for: a line of its output, the end of it, or Ctrl-C.
enum Incoming {
    /// One line the worker wrote.
    Line(String),
    /// The worker closed its output (or reading it failed).
    Closed,
    /// Ctrl-C (sent by the interrupt's hook).
    Interrupted,
}

/// A running worker: a process benchit started, or the Python program that started benchit
/// ([`Worker::over_stdio`]). Dropping a started one stops its process tree.
pub struct Worker {
    /// The worker process, when benchit started it.
    process: Option<SupervisedChild>,
    requests: Option<Box<dyn Write + Send>>,
    incoming: Receiver<Incoming>,
    /// Whether the worker's output has ended.
    closed: bool,
    /// Wakes a waiting read on Ctrl-C; unregistered with the worker.
    _interrupt_hook: TriggerHook,
    started: Instant,
    timeout: Duration,
    interrupt: Interrupt,
    log: Utf8PathBuf,
    exit: Option<WorkerExit>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("pid", &self.process.as_ref().map(SupervisedChild::id))
            .field("log", &self.log)
            .finish()
    }
}

/// The channel a worker's reads wait on: lines of `source`, read on a thread of their own, and
/// a message from `interrupt` on Ctrl-C, so that a read waits for a line, the deadline or Ctrl-C
/// without polling.
fn incoming(
    source: impl std::io::Read + Send + 'static,
    interrupt: &Interrupt,
) -> std::io::Result<(Receiver<Incoming>, TriggerHook)> {
    let (sender, incoming) = mpsc::channel();
    let on_interrupt: Sender<Incoming> = sender.clone();
    std::thread::Builder::new()
        .name("benchit-worker-reader".into())
        .spawn(move || {
            for line in BufReader::new(source).lines() {
                let Ok(line) = line else { break };
                if sender.send(Incoming::Line(line)).is_err() {
                    return;
                }
            }
            let _ = sender.send(Incoming::Closed);
        })?;
    let hook = interrupt.on_trigger(move || {
        let _ = on_interrupt.send(Incoming::Interrupted);
    });
    Ok((incoming, hook))
}

impl Worker {
    /// Starts `command` with `options.mode` appended, supervised by `milabench-exec` (its own
    /// process group and tree, watched by `command.watchdog`).
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
            .stderr(Stdio::from(log));
        let line = || format!("{} {}", command.display(), options.mode);
        let mut child =
            SupervisedChild::spawn(&mut cmd, &options.interrupt, command.watchdog.as_ref())
                .map_err(|err| match err {
                    ExecError::Spawn { error, .. } => WorkerError::Spawn {
                        command: line(),
                        source: error,
                    },
                    other => WorkerError::Watch {
                        command: line(),
                        source: other,
                    },
                })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (incoming, hook) =
            incoming(stdout, &options.interrupt).map_err(|source| WorkerError::Spawn {
                command: line(),
                source,
            })?;
        Ok(Worker {
            requests: child
                .stdin
                .take()
                .map(|stdin| Box::new(stdin) as Box<dyn Write + Send>),
            process: Some(child),
            incoming,
            closed: false,
            _interrupt_hook: hook,
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
        let (incoming, hook) =
            incoming(std::io::stdin(), &interrupt).map_err(|source| WorkerError::Spawn {
                command: "the benchit protocol on stdin".into(),
                source,
            })?;
        Ok(Worker {
            process: None,
            requests: Some(Box::new(std::io::stdout())),
            incoming,
            closed: false,
            _interrupt_hook: hook,
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
            // Set before the hook was registered, or its message already taken.
            if self.interrupt.is_set() {
                self.stop();
                return Err(WorkerError::Interrupted);
            }
            if self.closed {
                return Ok(None);
            }
            let left = self.timeout.saturating_sub(self.started.elapsed());
            match self.incoming.recv_timeout(left) {
                Ok(Incoming::Line(line)) if line.trim().is_empty() => continue,
                Ok(Incoming::Line(line)) => {
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
                Ok(Incoming::Closed) | Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Ok(Incoming::Interrupted) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    self.stop();
                    return Err(WorkerError::Timeout {
                        seconds: self.timeout.as_secs(),
                    });
                }
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
        match self.process.as_mut().and_then(|p| p.wait_timeout(GRACE)) {
            Some(status) => {
                let exit = WorkerExit::from_status(Some(status));
                self.exit = Some(exit);
                exit
            }
            None => self.stop(),
        }
    }

    /// Stops the worker's process tree (SIGTERM, then SIGKILL after the grace period). A worker
    /// over stdio is only no longer answered: it is the program that started benchit.
    fn stop(&mut self) -> WorkerExit {
        if let Some(exit) = self.exit {
            return exit;
        }
        self.requests = None;
        let status = self.process.as_mut().and_then(|p| p.stop(GRACE));
        let exit = WorkerExit::from_status(status);
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
            watchdog: None,
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
    fn a_timed_out_worker_takes_what_left_its_process_group_with_it() {
        let interrupt = Interrupt::new();
        let (mut worker, dir) = sh(
            "setsid sleep 30 & echo $! > escaped.pid; echo '{}'; trap '' TERM; sleep 30",
            Duration::from_millis(500),
            &interrupt,
        );
        assert!(worker.next_event::<Value>().unwrap().is_some());
        let pid = fs_err::read_to_string(dir.path().join("escaped.pid")).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        assert!(std::path::Path::new(&stat).exists(), "it runs");
        let err = worker.next_event::<Value>().unwrap_err();
        assert!(matches!(err, WorkerError::Timeout { .. }), "{err}");
        // Gone, or a zombie where no init process reaps orphans.
        let gone = (0..250).any(|_| {
            let alive = fs_err::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| !rest.starts_with('Z'))
            });
            if alive {
                std::thread::sleep(Duration::from_millis(20));
            }
            !alive
        });
        assert!(
            gone,
            "setsid took {pid} out of the group, not out of the tree"
        );
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
