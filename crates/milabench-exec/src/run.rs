//! The writer loop: runs on the caller's thread, owns every file of the plan, and is the only
//! place where process state changes.

use std::collections::{BTreeSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ExitStatus};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use milabench_metrics::format::{INTERRUPT_ERROR, TRAIN_TASK};
use milabench_metrics::{
    DataFileWriter, EndInfo, ErrorInfo, Event, MetricsError, ProcessJudge, Record, ReturnCode,
    StartInfo,
};
use milabench_plan::{BenchPlan, ProcessSpec};
use nix::sys::signal::Signal;
use serde_json::Value;

use crate::error::ExecError;
use crate::helper::HelperCommand;
use crate::options::{ExecObserver, ExecOptions, RecordSink, RunningSampler, SampledProcess};
use crate::outcome::{BenchOutcome, ProcessOutcome};
use crate::reader::{Decoded, Stream, drain};
use crate::spawn::spawn;
use crate::tree::{fresh_token, signal_tree};
use crate::watchdog::Watchdog;

/// Messages from reader, waiter and sampler threads to the writer loop.
pub(crate) enum Msg {
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
    /// The one receiver of every reader, waiter and sampler thread's messages.
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

impl<'a> Runner<'a, '_> {
    /// Processes without an `end` event yet.
    fn live(&self) -> Vec<usize> {
        (0..self.procs.len())
            .filter(|&i| self.procs[i].outcome.is_none())
            .collect()
    }

    /// Has the loop's timers look at process `idx` (it exited or is being stopped), unless it
    /// has already ended (a process given up on after SIGKILL may still report its exit).
    fn watch_timer(&mut self, idx: usize) {
        if self.procs[idx].outcome.is_none() {
            self.timed.insert(idx);
        }
    }

    /// Appends a record to the process's file, updating what the outcome needs.
    fn record(&mut self, idx: usize, record: Record) {
        if let Err(e) = self.procs[idx].writer.append(&record) {
            self.fail(ExecError::Write(e));
        }
        self.recorded(idx, &record);
    }

    /// Appends records read together to the process's file with one write, then updates what
    /// the outcome needs from each.
    fn record_all(&mut self, idx: usize, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        if let Err(e) = self.procs[idx].writer.append_all(records) {
            self.fail(ExecError::Write(e));
        }
        for record in records {
            self.recorded(idx, record);
        }
    }

    /// What follows a record's append: the outcome's counts, the observer, an early stop and
    /// the precision stop.
    fn recorded(&mut self, idx: usize, record: &Record) {
        let p = &mut self.procs[idx];
        p.judge.observe(record);
        let mut new_rate = false;
        if let Event::Data(d) = &record.event
            && d.task.as_deref() == Some(TRAIN_TASK)
            && let Some(rate) = d.rate
        {
            p.rates.push(rate);
            new_rate = true;
        }
        let p = &self.procs[idx];
        self.observer.on_record(&p.tag, record);
        if matches!(record.event, Event::Stop) && p.exit.is_none() {
            self.stop(idx, Instant::now());
        }
        if new_rate {
            self.check_precision();
        }
    }

    /// Stops the plan the way an early stop does once its rate is precise enough.
    fn check_precision(&mut self) {
        let Some(target) = self.options.precision else {
            return;
        };
        if self.precise.is_some() || self.timed_out || self.interrupted {
            return;
        }
        let reporting: Vec<&[f64]> = self
            .procs
            .iter()
            .map(|p| p.rates.as_slice())
            .filter(|rates| !rates.is_empty())
            .collect();
        let Some(reached) = target.check(reporting.iter().copied(), &mut self.precise_streak)
        else {
            return;
        };
        self.precise = Some(reached);
        let message = format!(
            "Stopping because the rate is known to ±{:.2}% (95% interval, {} observations), within the --precision target of {}%",
            reached * 100.0,
            reporting.iter().map(|r| r.len()).sum::<usize>(),
            target.share * 100.0
        );
        for i in self.live() {
            if self.procs[i].exit.is_none() {
                self.record(i, Record::new(Event::Message(message.clone()), None));
                self.record(i, Record::new(Event::Stop, None));
            }
        }
    }

    /// A write failed: keep the first error and stop everything.
    fn fail(&mut self, error: ExecError) {
        if self.fatal.is_none() {
            self.fatal = Some(error);
            let now = Instant::now();
            for i in self.live() {
                self.stop(i, now);
            }
        }
    }

    fn raw_text(&mut self, idx: usize, stream: Stream, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let ext = match stream {
            Stream::Stdout | Stream::SmuggledStdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Data => return,
        };
        let path = self.run_dir.join(format!("{}.{ext}", self.procs[idx].tag));
        let p = &mut self.procs[idx];
        if ext == "stderr"
            && let Some(line) = String::from_utf8_lossy(text)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
        {
            p.last_stderr = Some(line.trim().to_owned());
        }
        let slot = if ext == "stdout" {
            &mut p.stdout
        } else {
            &mut p.stderr
        };
        let result = match slot {
            Some(f) => f.write_all(text),
            None => OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| {
                    f.write_all(text)?;
                    *slot = Some(f);
                    Ok(())
                }),
        };
        if let Err(error) = result {
            self.fail(write_error(path, error));
        }
    }

    /// SIGTERM to the process's tree (for a remote rank: its standard input closed, which
    /// makes the remote side stop the rank); SIGKILL follows after the grace period.
    /// A process in a container gets SIGTERM through its client (podman and docker pass it
    /// on to the container), so it has the grace period to end; the container itself is
    /// removed when the grace period is over ([`Runner::check_timers`]) and again before
    /// [`run_plan`] returns ([`remove_containers`]).
    fn stop(&mut self, idx: usize, now: Instant) {
        let p = &mut self.procs[idx];
        if let (Some(pid), Stopping::No) = (p.pid, p.stopping) {
            if p.stdin.take().is_none() {
                signal_tree(Some(pid), &p.token, Signal::SIGTERM);
            }
            p.stopping = Stopping::Term(now);
            self.watch_timer(idx);
        }
    }

    /// Why a process failed, in a few words, when it did (for its peers' messages).
    fn failure(&self, idx: usize) -> Option<String> {
        let p = &self.procs[idx];
        let code = p.exit?;
        if p.judge.stop_seen() || (code == 0 && p.judge.errors().is_empty()) {
            return None;
        }
        Some(match p.judge.errors().last() {
            Some(error) => error.clone(),
            None => match &p.last_stderr {
                Some(line) => format!("exited with status {code}: {line}"),
                None => format!("exited with status {code}"),
            },
        })
    }

    /// A rank of a distributed job failed: its peers would wait for it until `max_duration`,
    /// so they are stopped now, with an error that names the failed rank's node and cause.
    fn stop_peers(&mut self, idx: usize) {
        let p = &self.procs[idx];
        let (Some(job), false, false) = (&p.spec.job, p.interrupted, p.timed_out) else {
            return;
        };
        let Some(cause) = self.failure(idx) else {
            return;
        };
        let node = p.spec.node.as_deref().unwrap_or("this machine");
        let message = format!(
            "stopped: the rank on node `{node}` ({}) failed: {cause}",
            p.tag
        );
        let now = Instant::now();
        for peer in self.live() {
            if peer != idx
                && self.procs[peer].spec.job.as_ref() == Some(job)
                && self.procs[peer].stopping == Stopping::No
            {
                self.record(peer, error_record("RankFailed", message.clone()));
                self.stop(peer, now);
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Output {
                proc,
                stream,
                decoded,
            } => {
                if self.procs[proc].outcome.is_some() {
                    return;
                }
                self.raw_text(proc, stream, &decoded.text);
                self.record_all(proc, &decoded.records);
            }
            Msg::Closed {
                proc,
                stream,
                error,
            } => {
                if self.procs[proc].outcome.is_some() {
                    return;
                }
                self.procs[proc].open_streams -= 1;
                if let Some(e) = error {
                    let name = match stream {
                        Stream::Data => "data channel",
                        Stream::Stderr => "stderr",
                        Stream::Stdout | Stream::SmuggledStdout => "stdout",
                    };
                    self.record(
                        proc,
                        error_record("OSError", format!("could not read the {name}: {e}")),
                    );
                }
                self.maybe_finish(proc);
            }
            Msg::Exited { proc, status } => {
                let code = match status {
                    Ok(status) => exit_code(status),
                    Err(e) => {
                        self.record(
                            proc,
                            error_record("OSError", format!("could not wait for the process: {e}")),
                        );
                        -1
                    }
                };
                self.procs[proc].exit = Some(code);
                self.procs[proc].exited_at = Some(Instant::now());
                self.watch_timer(proc);
                self.procs[proc].stdin = None;
                self.maybe_finish(proc);
            }
            Msg::Telemetry { proc, record } => {
                if self.procs[proc].outcome.is_none() {
                    self.record(proc, *record);
                }
            }
            Msg::Wake => {}
        }
    }

    /// ssh itself failed (status 255, and not because the rank was stopped): say which node
    /// could not be reached and why, in ssh's own words.
    fn ssh_failure(&mut self, idx: usize, code: i64) {
        let p = &self.procs[idx];
        let Some(target) = p.spec.launch.ssh_target() else {
            return;
        };
        if code != 255 || p.stopping != Stopping::No {
            return;
        }
        let cause = p
            .last_stderr
            .clone()
            .unwrap_or_else(|| "ssh exited with status 255".into());
        let message = format!(
            "could not run the rank on node `{}` over ssh ({}): {cause}\n  fix: check that \
             `ssh -i <sshkey> -p {} {}@{} true` works from this machine (node up, sshd \
             listening, the system file's `sshkey` authorized there)",
            target.node,
            target.describe(),
            target.port,
            target.user,
            target.host
        );
        self.record(idx, error_record("SSHError", message));
    }

    fn maybe_finish(&mut self, idx: usize) {
        let p = &self.procs[idx];
        if p.outcome.is_none() && p.exit.is_some() && p.open_streams == 0 {
            self.finish(idx);
        }
    }

    /// Writes `end` and closes the process's books.
    fn finish(&mut self, idx: usize) {
        if let Some(code) = self.procs[idx].exit {
            // After the pipes are drained, so that ssh's last words are known.
            self.ssh_failure(idx, code);
        }
        if let Some(sampler) = self.procs[idx].sampler.take() {
            self.stop_sampler(idx, sampler);
        }
        let p = &self.procs[idx];
        let return_code = match p.exit {
            Some(code) if !p.interrupted => ReturnCode::Code(code),
            _ => ReturnCode::Other(Value::String("ERROR".into())),
        };
        let end = Record::new(
            Event::End(Box::new(EndInfo {
                command: Some(Value::from(p.spec.argv.clone())),
                time: Some(now_epoch()),
                return_code: return_code.clone(),
                extra: serde_json::Map::new(),
            })),
            None,
        );
        self.record(idx, end);
        let p = &mut self.procs[idx];
        if let Some(pid) = p.pid {
            self.options.interrupt.remove_group(pid);
        }
        let outcome = ProcessOutcome {
            tag: p.tag.clone(),
            return_code,
            verdict: p.judge.verdict(),
            errors: p.judge.errors().to_vec(),
            timed_out: p.timed_out,
            interrupted: p.interrupted,
            duration: p.launched.elapsed(),
            rate_count: p.judge.rate_count(),
            nolog: p.spec.nolog,
            data_file: p.writer.path().to_path_buf(),
        };
        self.observer.on_end(&outcome);
        self.procs[idx].outcome = Some(outcome);
        self.live_count -= 1;
        self.timed.remove(&idx);
        self.procs[idx].stdin = None;
        self.stop_peers(idx);
    }

    /// Stops the sampler of process `idx`, writing every record it sent before the process's
    /// `end`. The sampler may be waiting for room in the channel, which only this thread
    /// empties (hundreds of processes fill it): the messages taken meanwhile are set aside for
    /// the event loop, except the sampler's own records, written at once.
    fn stop_sampler(&mut self, idx: usize, mut sampler: Box<dyn RunningSampler>) {
        sampler.request_stop();
        while !sampler.is_finished() {
            if let Ok(msg) = self.rx.recv_timeout(SAMPLER_POLL) {
                self.take_aside(idx, msg);
            }
        }
        // What it sent is in the channel now, among the `CHANNEL_DEPTH` oldest messages.
        for _ in 0..CHANNEL_DEPTH {
            match self.rx.try_recv() {
                Ok(msg) => self.take_aside(idx, msg),
                Err(_) => break,
            }
        }
        sampler.stop();
    }

    /// Writes `msg` now if it is a record of the sampler of `idx`, else keeps it for the loop.
    fn take_aside(&mut self, idx: usize, msg: Msg) {
        match msg {
            Msg::Telemetry { proc, record } if proc == idx => self.record(idx, *record),
            other => self.deferred.push_back(other),
        }
    }

    /// How long descendants may keep a pipe open after the process exited.
    fn drain_window(&self) -> Duration {
        self.options.grace.min(DRAIN_WINDOW)
    }

    fn next_timer(&self) -> Option<Instant> {
        let grace = self.options.grace;
        let deadline = self.deadline.filter(|_| !self.timed_out);
        self.timed
            .iter()
            .filter_map(|&i| match self.procs[i].stopping {
                Stopping::No => self.procs[i].exited_at.map(|at| at + self.drain_window()),
                Stopping::Term(at) => Some(at + grace),
                Stopping::Kill(at) => Some(at + grace.max(Duration::from_secs(1))),
            })
            .chain(deadline)
            .min()
    }

    fn check_timers(&mut self, now: Instant) {
        if let Some(deadline) = self.deadline
            && !self.timed_out
            && now >= deadline
        {
            self.timed_out = true;
            let message = format!(
                "Terminating process because it ran for longer than {} seconds \
                 (max_duration of {})",
                seconds(self.plan.max_duration.unwrap_or_default()),
                self.plan.bench
            );
            for i in self.live() {
                self.procs[i].timed_out = true;
                self.record(i, error_record("TimeoutError", message.clone()));
                self.record(i, Record::new(Event::Message(message.clone()), None));
                self.stop(i, now);
            }
        }
        let grace = self.options.grace;
        let drain = self.drain_window();
        let timed: Vec<usize> = self.timed.iter().copied().collect();
        for i in timed {
            let p = &mut self.procs[i];
            match p.stopping {
                Stopping::No if p.exited_at.is_some_and(|at| now >= at + drain) => {
                    // The process exited but its descendants still hold a pipe: the benchmark
                    // is over, stop them.
                    self.stop(i, now);
                }
                Stopping::Term(at) if now >= at + grace => {
                    if let Some(pid) = p.pid {
                        signal_tree(Some(pid), &p.token, Signal::SIGKILL);
                    }
                    p.stopping = Stopping::Kill(now);
                    // Killing the client leaves its container running: remove it now, on a
                    // thread of its own (the removal runs again at the end of the plan, where
                    // a failure would show).
                    if let Some(removal) = container_removal(p.spec) {
                        std::thread::spawn(move || {
                            let _ = removal.run();
                        });
                    }
                }
                Stopping::Kill(at) if now >= at + grace.max(Duration::from_secs(1)) => {
                    // Killed and still not done: a pipe is held by something outside the tree,
                    // or the process is stuck in the kernel. Stop waiting for it.
                    if p.exit.is_none() {
                        self.record(
                            i,
                            error_record(
                                "TimeoutError",
                                "the process did not exit after SIGKILL".into(),
                            ),
                        );
                    }
                    self.finish(i);
                }
                _ => {}
            }
        }
    }

    fn on_interrupt(&mut self) {
        self.interrupted = true;
        let now = Instant::now();
        for i in self.live() {
            self.procs[i].interrupted = true;
            self.record(
                i,
                error_record(
                    INTERRUPT_ERROR,
                    "milabench was interrupted; the process group was stopped".into(),
                ),
            );
            self.stop(i, now);
        }
    }

    /// Writes `config`, `meta` and `start`, then starts the process and its threads.
    fn launch(
        &mut self,
        idx: usize,
        spec: &'a ProcessSpec,
        token: String,
    ) -> Result<(), ExecError> {
        let tag = spec.tag_name();
        let writer = DataFileWriter::open(self.run_dir.join(format!("{tag}.data")))?;
        self.procs.push(Proc {
            spec,
            tag,
            token,
            writer,
            stdout: None,
            stderr: None,
            pid: None,
            launched: Instant::now(),
            exit: None,
            exited_at: None,
            open_streams: 0,
            stopping: Stopping::No,
            timed_out: false,
            interrupted: false,
            judge: ProcessJudge::default(),
            rates: Vec::new(),
            sampler: None,
            outcome: None,
            stdin: None,
            last_stderr: None,
        });
        self.live_count += 1;
        self.record(idx, Record::new(Event::Config(spec.config.clone()), None));
        if let Some(meta) = self.options.meta_for(spec.node.as_deref()) {
            self.record(idx, Record::new(Event::Meta(meta.clone()), None));
        }
        let start = Record::new(
            Event::Start(Box::new(StartInfo {
                command: spec.argv.clone(),
                time: Some(now_epoch()),
                extra: serde_json::Map::new(),
            })),
            None,
        );
        self.tell_watchdog(&self.procs[idx].token.clone(), None)?;
        let spawned = spawn(spec, &self.procs[idx].token, &self.options.keep_open);
        self.procs[idx].launched = Instant::now();
        self.record(idx, start);
        let mut spawned = match spawned {
            Ok(s) => s,
            Err(e) => {
                let message = format!("could not start {} (in {}): {e}", spec.argv[0], spec.cwd);
                self.record(idx, error_record(spawn_error_kind(&e), message));
                self.finish(idx);
                return Ok(());
            }
        };
        let pid = spawned.child.id() as i32;
        self.procs[idx].stdin = spawned.child.stdin.take();
        self.options.interrupt.add_group(pid);
        if let Err(e) = self.tell_watchdog(&self.procs[idx].token.clone(), Some(pid)) {
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            return Err(e);
        }
        if let Some(removal) = spec.container.as_ref().and_then(|c| c.stop.as_ref())
            && let Some(watchdog) = &mut self.watchdog
            && let Err(error) = watchdog.watch_container(removal)
        {
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            return Err(self.watchdog_error(error));
        }
        self.procs[idx].pid = Some(pid);
        let max_line = self.options.max_line_bytes;
        let mut readers: Vec<(Stream, Box<dyn std::io::Read + Send>)> = Vec::new();
        if let Some(out) = spawned.child.stdout.take() {
            let stream = if spec.use_stdout {
                Stream::SmuggledStdout
            } else {
                Stream::Stdout
            };
            readers.push((stream, Box::new(out)));
        }
        if let Some(err) = spawned.child.stderr.take() {
            readers.push((Stream::Stderr, Box::new(err)));
        }
        if let Some(data) = spawned.data.take() {
            readers.push((Stream::Data, Box::new(data)));
        }
        self.procs[idx].open_streams = readers.len();
        for (stream, source) in readers {
            let tx = self.tx.clone();
            let thread = std::thread::Builder::new()
                .name(format!("milabench-read-{pid}"))
                .spawn(move || drain(source, idx, stream, max_line, tx));
            if let Err(e) = thread {
                self.procs[idx].open_streams -= 1;
                self.record(
                    idx,
                    error_record("OSError", format!("could not start a reader thread: {e}")),
                );
            }
        }
        let tx = self.tx.clone();
        let mut child = spawned.child;
        let waiter = std::thread::Builder::new()
            .name(format!("milabench-wait-{pid}"))
            .spawn(move || {
                let status = child.wait().map_err(|e| e.to_string());
                let _ = tx.send(Msg::Exited { proc: idx, status });
            });
        if let Err(e) = waiter {
            // Without a waiter the exit is never seen: kill it and say so.
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            self.record(
                idx,
                error_record("OSError", format!("could not start a waiter thread: {e}")),
            );
            self.procs[idx].exit = Some(-9);
            self.procs[idx].stopping = Stopping::Kill(Instant::now());
            self.watch_timer(idx);
        }
        self.observer.on_start(&self.procs[idx].tag, spec);
        if let Some(factory) = &self.options.sampler {
            let target = SampledProcess {
                tag: &self.procs[idx].tag,
                pid: pid as u32,
                devices: &spec.devices,
                node: spec.node.as_deref(),
            };
            let sink = RecordSink {
                proc: idx,
                tx: self.tx.clone(),
            };
            self.procs[idx].sampler = factory.start(&target, sink);
        }
        Ok(())
    }

    /// Names a process tree to the watchdog, if there is one.
    fn tell_watchdog(&mut self, token: &str, pgid: Option<i32>) -> Result<(), ExecError> {
        let Some(watchdog) = &mut self.watchdog else {
            return Ok(());
        };
        watchdog
            .watch(token, pgid)
            .map_err(|error| self.watchdog_error(error))
    }

    fn watchdog_error(&self, error: std::io::Error) -> ExecError {
        ExecError::Watchdog {
            program: self
                .options
                .watchdog
                .as_ref()
                .map(|w| w.program.display().to_string())
                .unwrap_or_default(),
            error,
        }
    }

    fn event_loop(&mut self) {
        while self.live_count > 0 {
            if self.options.interrupt.is_set() && !self.interrupted {
                self.on_interrupt();
            }
            let msg = match (self.deferred.pop_front(), self.next_timer()) {
                (Some(msg), _) => Ok(msg),
                (None, Some(at)) => self
                    .rx
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
                (None, None) => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match msg {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                // The runner holds a sender: this cannot happen.
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.check_timers(Instant::now());
        }
    }
}

/// How long removing one container may take (`podman rm --force` waits for its stop timeout).
const CONTAINER_REMOVAL_LIMIT: Duration = Duration::from_secs(60);

/// The command that removes the container of `spec`, when it runs in one that must be
/// removed by name (podman, docker).
fn container_removal(spec: &ProcessSpec) -> Option<HelperCommand> {
    let stop = spec.container.as_ref()?.stop.as_ref()?;
    let (program, args) = stop.split_first()?;
    Some(HelperCommand::new(program, args, CONTAINER_REMOVAL_LIMIT))
}

/// Removes the containers of the processes that were stopped or did not end well, so that
/// none is left behind (a container that ended on its own removed itself: `--rm`). One at a
/// time, each within [`CONTAINER_REMOVAL_LIMIT`]; a container already gone is no error.
fn remove_containers(procs: &[Proc<'_>]) {
    for p in procs {
        let ended_well = p.stopping == Stopping::No && p.exit == Some(0);
        if p.pid.is_some()
            && !ended_well
            && let Some(removal) = container_removal(p.spec)
        {
            // The runtime says why it could not; the next run's `check` finds what is left.
            let _ = removal.run();
        }
    }
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
        rx,
        deferred: VecDeque::new(),
        procs: Vec::with_capacity(plan.processes.len()),
        live_count: 0,
        timed: BTreeSet::new(),
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
