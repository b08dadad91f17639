//! The writer loop: runs on the caller's thread, owns every file of the plan, and is the only
//! place where process state changes.
//!
//! This file holds the loop's state (the runner and each process's), the plan's checks and
//! files, and [`run_plan`], its entry; its parts hold the runner's work by job: `launch`
//! (starting a process), `records` (what each record does), `events` (the loop and a
//! process's finish), `stopping` (signals, timers, an interruption, containers removed).

use std::collections::{BTreeSet, VecDeque};
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ExitStatus};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use milabench_metrics::{DataFileWriter, ErrorInfo, Event, MetricsError, ProcessJudge, Record};
use milabench_plan::{BenchPlan, ProcessSpec};
use nix::sys::signal::Signal;

use crate::error::ExecError;
use crate::options::{ExecObserver, ExecOptions, RunningSampler};
use crate::outcome::{BenchOutcome, ProcessOutcome};
use crate::poller::Pipes;
use crate::reader::{Decoded, Stream};
use crate::tree::{fresh_token, signal_tree};
use crate::watchdog::Watchdog;

mod events;
mod launch;
mod records;
mod stopping;

use stopping::remove_containers;

/// Messages from the reading, waiter and sampler threads to the writer loop.
pub(crate) enum Msg {
    /// What one round of the reading thread read, in order.
    Batch(Vec<Msg>),
    /// Decoded output of one pipe.
    Output {
        proc: usize,
        stream: Stream,
        decoded: Decoded,
    },
    /// A pipe reached end of file (or could not be read).
    Closed {
        proc: usize,
        stream: Stream,
        error: Option<String>,
    },
    /// The process exited.
    Exited {
        proc: usize,
        status: Result<ExitStatus, String>,
    },
    /// A telemetry record from a sampler.
    Telemetry { proc: usize, record: Box<Record> },
    /// Look at the interrupt flag.
    Wake,
}

/// Messages in flight at most: with 64 KiB reads, a few MiB however fast processes write.
const CHANNEL_DEPTH: usize = 64;

/// While a sampler is stopping, how often the writer looks whether it has ended.
const SAMPLER_POLL: Duration = Duration::from_millis(5);

/// After the process exits, how long its descendants may keep its pipes open before they are
/// stopped (at most the grace period).
const DRAIN_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stopping {
    No,
    /// SIGTERM sent at that instant.
    Term(Instant),
    /// SIGKILL sent at that instant.
    Kill(Instant),
}

struct Proc<'a> {
    spec: &'a ProcessSpec,
    tag: String,
    token: String,
    writer: DataFileWriter,
    stdout: Option<File>,
    stderr: Option<File>,
    pid: Option<i32>,
    launched: Instant,
    exit: Option<i64>,
    /// When the exit was seen; descendants still holding a pipe a moment later are stopped.
    exited_at: Option<Instant>,
    open_streams: usize,
    stopping: Stopping,
    timed_out: bool,
    interrupted: bool,
    /// The verdict on its records so far.
    judge: ProcessJudge,
    /// Its training rates, for the precision stop.
    rates: Vec<f64>,
    sampler: Option<Box<dyn RunningSampler>>,
    outcome: Option<ProcessOutcome>,
    /// The write end of a remote rank's standard input: closing it stops the rank.
    stdin: Option<ChildStdin>,
    /// The last non-blank line it wrote to stderr (ssh's own complaint, when it fails).
    last_stderr: Option<String>,
}

fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

fn exit_code(status: ExitStatus) -> i64 {
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(signal)) => -i64::from(signal),
        (None, None) => -1,
    }
}

fn error_record(kind: &str, message: String) -> Record {
    Record::new(
        Event::Error(Box::new(ErrorInfo {
            kind: Some(kind.to_owned()),
            message: Some(message),
            ..ErrorInfo::default()
        })),
        None,
    )
}

fn spawn_error_kind(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => "FileNotFoundError",
        std::io::ErrorKind::PermissionDenied => "PermissionError",
        _ => "OSError",
    }
}

struct Runner<'a, 'o> {
    plan: &'a BenchPlan,
    run_dir: &'a Path,
    options: &'a ExecOptions,
    observer: &'o mut dyn ExecObserver,
    tx: SyncSender<Msg>,
    /// The thread that reads every process's pipes.
    pipes: Pipes,
    /// The one receiver of the reading, waiter and sampler threads' messages.
    rx: Receiver<Msg>,
    /// Messages taken from `rx` while a sampler was stopped, handled before any newer one.
    deferred: VecDeque<Msg>,
    procs: Vec<Proc<'a>>,
    /// Processes launched without an `end` yet: the loop runs while there are any.
    live_count: usize,
    /// Live processes with a timer running (exited with a pipe still open, or being stopped):
    /// the only ones the loop's timers look at, so that a message costs the same however many
    /// processes run.
    timed: BTreeSet<usize>,
    deadline: Option<Instant>,
    timed_out: bool,
    interrupted: bool,
    /// The precision reached when the plan was stopped for it.
    precise: Option<f64>,
    /// Consecutive checks within the precision target (see [`PrecisionStop::check`]).
    precise_streak: usize,
    fatal: Option<ExecError>,
    watchdog: Option<Watchdog>,
}

fn write_error(path: PathBuf, error: std::io::Error) -> ExecError {
    ExecError::Write(MetricsError::Write { path, error })
}

fn write_planned_files(plan: &BenchPlan) -> Result<(), ExecError> {
    for file in &plan.files {
        let path = file.path.as_std_path();
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, &file.content)
        };
        write().map_err(|error| write_error(path.to_path_buf(), error))?;
    }
    Ok(())
}

fn check_plan(plan: &BenchPlan) -> Result<(), ExecError> {
    let mut seen = std::collections::HashSet::new();
    for spec in &plan.processes {
        let tag = spec.tag_name();
        if spec.argv.is_empty() {
            return Err(ExecError::EmptyCommand {
                bench: plan.bench.clone(),
                tag,
            });
        }
        if !seen.insert(tag.clone()) {
            return Err(ExecError::DuplicateTag {
                bench: plan.bench.clone(),
                tag,
            });
        }
    }
    Ok(())
}

/// Runs every process of `plan` at once and records what they report in `run_dir`.
///
/// Writes the plan's files, then for each process appends to `<run_dir>/<tag>.data`: `config`,
/// `meta` (when [`ExecOptions::meta`] gives one), `start`, every stdout/stderr `line` and
/// data-channel record as it arrives, `error`s the orchestrator sees (the program cannot be
/// started, the plan's `max_duration` expired, a pipe cannot be read, an interruption) and `end`
/// once the process exited and its pipes are drained. Raw stdout and stderr text also go to
/// `<tag>.stdout` and `<tag>.stderr`. A process that sends `{"$event": "stop"}` is stopped
/// (SIGTERM to its tree, SIGKILL after [`ExecOptions::grace`]). When every process has ended,
/// whatever is left of their trees is killed.
///
/// Returns `Err` only when the orchestrator itself fails (a file cannot be written, the plan is
/// malformed); the processes are stopped first. Benchmark failures are in the outcome.
pub fn run_plan(
    plan: &BenchPlan,
    run_dir: &Path,
    options: &ExecOptions,
    observer: &mut dyn ExecObserver,
) -> Result<BenchOutcome, ExecError> {
    check_plan(plan)?;
    std::fs::create_dir_all(run_dir).map_err(|error| write_error(run_dir.to_path_buf(), error))?;
    write_planned_files(plan)?;
    let started = Instant::now();
    if options.interrupt.is_set() {
        return Ok(BenchOutcome {
            bench: plan.bench.clone(),
            processes: Vec::new(),
            interrupted: true,
            timed_out: false,
            duration: Duration::ZERO,
            precise: None,
        });
    }
    let watchdog = match &options.watchdog {
        Some(command) => Some(
            Watchdog::start(command, &options.keep_open).map_err(|error| ExecError::Watchdog {
                program: command.program.display().to_string(),
                error,
            })?,
        ),
        None => None,
    };
    let (tx, rx) = sync_channel(CHANNEL_DEPTH);
    let pipes = Pipes::start(tx.clone(), options.max_line_bytes).map_err(ExecError::Reading)?;
    let wake = tx.clone();
    let interrupt_hook = options.interrupt.on_trigger(move || {
        let _ = wake.try_send(Msg::Wake);
    });
    let mut runner = Runner {
        plan,
        run_dir,
        options,
        observer,
        tx,
        pipes,
        rx,
        deferred: VecDeque::new(),
        live_count: 0,
        timed: BTreeSet::new(),
        procs: Vec::with_capacity(plan.processes.len()),
        deadline: plan.max_duration.map(|d| started + d),
        timed_out: false,
        interrupted: false,
        precise: None,
        precise_streak: 0,
        fatal: None,
        watchdog,
    };
    for (idx, spec) in plan.processes.iter().enumerate() {
        if let Err(e) = runner.launch(idx, spec, fresh_token()) {
            runner.fail(e);
            break;
        }
    }
    runner.event_loop();
    drop(interrupt_hook);
    // Nothing a benchmark started outlives it.
    for p in &runner.procs {
        if let Some(pid) = p.pid {
            signal_tree(Some(pid), &p.token, Signal::SIGKILL);
        }
    }
    remove_containers(&runner.procs);
    if let Some(watchdog) = runner.watchdog.take() {
        watchdog.finish();
    }
    if let Some(fatal) = runner.fatal {
        return Err(fatal);
    }
    Ok(BenchOutcome {
        bench: plan.bench.clone(),
        processes: runner.procs.into_iter().filter_map(|p| p.outcome).collect(),
        interrupted: runner.interrupted,
        timed_out: runner.timed_out,
        duration: started.elapsed(),
        precise: runner.precise,
    })
}
