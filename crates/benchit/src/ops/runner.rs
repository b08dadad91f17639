//! Running expanded runs with the Python worker and writing PARAM's JSON-lines output.
//!
//! The output file `<prefix>_<pid>_<unix time>.json` gets a setup line (`run_options`,
//! `sys_info`, `start_time`), one line per run (`op_name`, `id`, `metric` or `error`, `config`),
//! optionally `{"trace_file": ...}`, and always a closing `{"finish_time": ...}` line: after a
//! failure, a worker crash, a timeout or Ctrl-C too. A run whose spec is invalid, or that raises
//! in the worker, is recorded as failed and the next one runs; a worker that dies is restarted for
//! the runs after.

use std::io::Write;
use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{HelperCommand, Interrupt, error_line};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::expand::{ExpandedRun, RunId};
use super::nsight::{NsightOptions, batch_config};
use crate::worker::{Worker, WorkerCommand, WorkerError, WorkerOptions};

/// How iterations are timed (PARAM's `--exec-mode`; they differ on CUDA only, see the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ExecMode {
    /// Each iteration timed on its own, the device synchronised around it.
    Discrete,
    /// All iterations back to back under one timer; one value, the mean.
    Continuous,
    /// Back to back, each call timed with device events.
    #[cfg_attr(feature = "clap", value(name = "continuous_events"))]
    ContinuousEvents,
}

/// What `benchit ops` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The config file (for the setup line).
    pub config_file: Utf8PathBuf,
    /// torch device string: `cpu`, `cuda`, `cuda:1`.
    pub device: String,
    /// Untimed-for-results warm-up iterations per run.
    pub warmup: u32,
    /// Measured iterations per run.
    pub iterations: u32,
    /// Also time the backward pass.
    pub backward: bool,
    /// How iterations are timed.
    pub exec_mode: ExecMode,
    /// Empty the GPU's L2 cache before each timed call in discrete mode (PARAM's
    /// `--cuda-l2-cache off`); nothing off CUDA.
    pub flush_l2: bool,
    /// Wrap each measured pass in the NVTX range [`super::nsight::NVTX_RANGE`] (the runs of a
    /// batch profiled by Nsight).
    pub nvtx: bool,
    /// Profile the measured runs in batches under Nsight Compute or Nsight Systems.
    pub nsight: Option<NsightOptions>,
    /// Write a torch profiler trace.
    pub profile: bool,
    /// Output files are `<prefix>_<pid>_<unix time>.json` (and `_trace.json`, `_worker.log`).
    pub output_prefix: String,
    /// Append the records to `<prefix>.json` (one file for every run of this prefix) instead
    /// of writing a new `<prefix>_<pid>_<unix time>.json`.
    pub append: bool,
    /// `--resume-id`, recorded in the setup line.
    pub resume_id: Option<String>,
    /// `--stop-id`, recorded in the setup line.
    pub stop_id: Option<String>,
    /// How long one worker may live.
    pub timeout: Duration,
}

impl RunOptions {
    /// `-w 0 -i 0`: nothing is measured; every run gets a record with an empty metric (PARAM's
    /// way to list configs), and no worker is needed.
    pub fn is_dry_run(&self) -> bool {
        self.warmup == 0 && self.iterations == 0
    }
}

/// Per-iteration times (milliseconds) and peak memory (MiB, where the device reports it) of one
/// pass, under PARAM's keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassTimes {
    /// Warm-up times, ms.
    #[serde(rename = "warmup.time")]
    pub warmup_time: Vec<f64>,
    /// Peak memory of each warm-up iteration, MiB (empty when not available).
    #[serde(rename = "warmup.gpu.memory", default)]
    pub warmup_memory: Vec<f64>,
    /// Measured times, ms.
    #[serde(rename = "measure.time")]
    pub measure_time: Vec<f64>,
    /// Peak memory of each measured iteration, MiB (empty when not available).
    #[serde(rename = "measure.gpu.memory", default)]
    pub measure_memory: Vec<f64>,
}

/// The timings of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// The forward pass (the operator call).
    pub forward: PassTimes,
    /// The backward pass, with `--backward`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<PassTimes>,
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Timed.
    Measured(Metric),
    /// Not timed: `-w 0 -i 0`.
    DryRun,
    /// Failed, with a one-line reason.
    Failed(String),
}

/// One run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The operator.
    pub op_name: String,
    /// The id.
    pub id: RunId,
    /// What happened.
    pub outcome: Outcome,
}

/// What a call to [`run`] did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The output file.
    pub output: Utf8PathBuf,
    /// One record per run attempted, in order.
    pub records: Vec<RunRecord>,
    /// The profiler trace, with `--profile`.
    pub trace_file: Option<Utf8PathBuf>,
    /// Whether Ctrl-C ended the run early.
    pub interrupted: bool,
    /// Why the run ended before its last id (the worker could not start, a timeout), if so.
    pub error: Option<String>,
    /// The worker's log file (stderr of every worker started).
    pub worker_log: Utf8PathBuf,
}

/// Why nothing could be written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The output file could not be created or written.
    #[error("cannot write the output file {path}; check -o/--output-prefix")]
    Output {
        /// The file.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Events of the ops worker.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum WorkerEvent {
    Hello {
        #[serde(default)]
        sys_info: Map<String, Value>,
    },
    Result {
        id: String,
        metric: Metric,
    },
    Failed {
        id: String,
        message: String,
    },
    Trace {
        file: Utf8PathBuf,
    },
    Done,
}

/// The output file, written line by line and flushed.
struct Output {
    path: Utf8PathBuf,
    file: std::fs::File,
}

impl Output {
    fn line(&mut self, value: &Value) -> Result<(), RunError> {
        let mut text = value.to_string();
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| RunError::Output {
                path: self.path.clone(),
                source,
            })
    }
}

fn now_text() -> String {
    jiff::Zoned::now().strftime("%Y-%m-%dT%H:%M:%S").to_string()
}

/// Runs `runs` and writes the output file. `worker` is `None` only for a dry run
/// ([`RunOptions::is_dry_run`]); `on_record` sees each record as it is written.
pub fn run(
    runs: &[ExpandedRun],
    options: &RunOptions,
    worker: Option<&WorkerCommand>,
    interrupt: &Interrupt,
    on_record: &mut dyn FnMut(&RunRecord),
) -> Result<RunSummary, RunError> {
    let stem = format!(
        "{}_{}_{}",
        options.output_prefix,
        std::process::id(),
        jiff::Timestamp::now().as_second()
    );
    // A name of its own per run could never be appended to: `--append` names the file by the
    // prefix alone.
    let path = if options.append {
        Utf8PathBuf::from(format!("{}.json", options.output_prefix))
    } else {
        Utf8PathBuf::from(format!("{stem}.json"))
    };
    let trace = options
        .profile
        .then(|| absolute(&Utf8PathBuf::from(format!("{stem}_trace.json"))));
    let mut session = Session {
        command: worker,
        options,
        log: absolute(&Utf8PathBuf::from(format!("{stem}_worker.log"))),
        trace: trace.clone(),
        interrupt,
        worker: None,
        started: 0,
        batches: 0,
    };
    // `-o results/add` writes into `results/`, made when missing.
    if let Some(folder) = path.parent().filter(|f| !f.as_str().is_empty()) {
        fs_err::create_dir_all(folder).map_err(|source| RunError::Output {
            path: path.clone(),
            source,
        })?;
    }
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(options.append)
        .truncate(!options.append)
        .open(&path)
        .map_err(|source| RunError::Output {
            path: path.clone(),
            source,
        })?;
    let mut out = Output {
        path: path.clone(),
        file: opened,
    };
    let mut summary = RunSummary {
        output: path,
        records: Vec::new(),
        trace_file: None,
        interrupted: false,
        error: None,
        worker_log: session.log.clone(),
    };
    let start_time = now_text();
    let needs_worker = !options.is_dry_run() && runs.iter().any(|r| r.spec.is_ok());
    let mut sys_info = host_info();
    if needs_worker {
        match session.start() {
            Ok(info) => sys_info.extend(info),
            Err(_) if interrupt.is_set() => summary.interrupted = true,
            Err(problem) => summary.error = Some(problem),
        }
    }
    out.line(&json!({
        "run_options": run_options(options),
        "sys_info": sys_info,
        "start_time": start_time,
    }))?;
    let result = run_each(runs, &mut session, &mut out, &mut summary, on_record);
    if summary.error.is_none() && !summary.interrupted && session.worker.is_some() {
        match session.end() {
            Ok(file) => summary.trace_file = file,
            Err(problem) => summary.error = Some(problem),
        }
    }
    // The closing line goes out whatever happened above.
    let failed = summary
        .records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
        .count();
    let mut closing = vec![];
    if let Some(file) = &summary.trace_file {
        closing.push(json!({"trace_file": file}));
    }
    closing.push(json!({
        "finish_time": now_text(),
        "runs": summary.records.len(),
        "failed": failed,
        "interrupted": summary.interrupted,
        "error": summary.error,
    }));
    for line in closing {
        out.line(&line)?;
    }
    result.map(|()| summary)
}

fn run_each(
    runs: &[ExpandedRun],
    session: &mut Session<'_>,
    out: &mut Output,
    summary: &mut RunSummary,
    on_record: &mut dyn FnMut(&RunRecord),
) -> Result<(), RunError> {
    if summary.error.is_some() || summary.interrupted {
        return Ok(());
    }
    let mut queued: Vec<&ExpandedRun> = Vec::new();
    for run in runs {
        if session.interrupt.is_set() {
            summary.interrupted = true;
            break;
        }
        if queued.first().is_some_and(|q| q.op_name != run.op_name) {
            profile_batch(&mut queued, session, out, summary)?;
        }
        let outcome = match &run.spec {
            Err(problem) => Outcome::Failed(problem.clone()),
            Ok(_) if session.options.is_dry_run() => Outcome::DryRun,
            Ok(_) => match session.measure(run) {
                Step::Done(outcome) => outcome,
                Step::Interrupted => {
                    summary.interrupted = true;
                    break;
                }
                Step::Fatal(outcome, problem) => {
                    write_record(run, outcome, out, summary, on_record)?;
                    summary.error = Some(problem);
                    break;
                }
            },
        };
        let measured = matches!(outcome, Outcome::Measured(_));
        write_record(run, outcome, out, summary, on_record)?;
        if let Some(nsight) = &session.options.nsight
            && measured
        {
            queued.push(run);
            if queued.len() >= nsight.batch_size {
                profile_batch(&mut queued, session, out, summary)?;
            }
        }
    }
    if !summary.interrupted {
        profile_batch(&mut queued, session, out, summary)?;
    }
    Ok(())
}

/// Profiles the queued runs (if any) in one child under Nsight and writes its record; a batch
/// that fails sets the summary's error and the next batch still runs.
fn profile_batch(
    queued: &mut Vec<&ExpandedRun>,
    session: &mut Session<'_>,
    out: &mut Output,
    summary: &mut RunSummary,
) -> Result<(), RunError> {
    let options = session.options;
    let (Some(nsight), Some(first), Some(last)) = (&options.nsight, queued.first(), queued.last())
    else {
        return Ok(());
    };
    session.batches += 1;
    let tool = nsight.tool.name();
    // Everything of the batches goes into one folder beside the output file.
    let folder = format!(
        "{}_nsight",
        summary.output.as_str().trim_end_matches(".json")
    );
    let stem = format!("{folder}/batch_{}", session.batches);
    let config_file = Utf8PathBuf::from(format!("{stem}.json"));
    let written = fs_err::create_dir_all(&folder)
        .and_then(|()| fs_err::write(&config_file, batch_config(queued).to_string()));
    let command = nsight.command(&stem, &config_file, options);
    let command_text = command.join(" ");
    let problem = match written {
        Err(err) => Some(format!("cannot write the batch config: {err}")),
        Ok(()) => {
            let mut child = HelperCommand::new(&command[0], &command[1..], options.timeout);
            child
                .env
                .push(("CUDA_VISIBLE_DEVICES".into(), nsight.cuda_device.clone()));
            child.interrupt = Some(session.interrupt.clone());
            match child.run() {
                Ok(done) if done.success() => None,
                Ok(done) => Some(format!(
                    "{tool} ended with {}: {}",
                    done.status,
                    done.said().lines().last().unwrap_or("")
                )),
                Err(err) => Some(error_line(&err)),
            }
        }
    };
    let mut line = json!({
        format!("{tool}_file"): nsight.output_file(&stem),
        format!("{tool}_cmd_str"): command_text,
        "config": config_file,
        "start_run_id": first.full_id(),
        "end_run_id": last.full_id(),
    });
    if let Some(problem) = &problem {
        line["error"] = json!(problem);
        summary
            .error
            .get_or_insert_with(|| format!("profiling a batch failed: {problem}"));
    }
    queued.clear();
    out.line(&line)
}

fn write_record(
    run: &ExpandedRun,
    outcome: Outcome,
    out: &mut Output,
    summary: &mut RunSummary,
    on_record: &mut dyn FnMut(&RunRecord),
) -> Result<(), RunError> {
    let mut line = json!({"op_name": run.op_name, "id": run.id.to_string()});
    match &outcome {
        Outcome::Measured(metric) => line["metric"] = json!(metric),
        Outcome::DryRun => line["metric"] = json!({}),
        Outcome::Failed(reason) => line["error"] = json!(reason),
    }
    line["config"] = run.config.clone();
    out.line(&line)?;
    let record = RunRecord {
        op_name: run.op_name.clone(),
        id: run.id.clone(),
        outcome,
    };
    on_record(&record);
    summary.records.push(record);
    Ok(())
}

/// What measuring one run led to.
enum Step {
    /// The run ended (timed or failed); go on.
    Done(Outcome),
    /// Ctrl-C.
    Interrupted,
    /// The run failed and nothing more can run.
    Fatal(Outcome, String),
}

/// The worker currently serving the runs, restarted after a crash.
struct Session<'a> {
    command: Option<&'a WorkerCommand>,
    options: &'a RunOptions,
    log: Utf8PathBuf,
    trace: Option<Utf8PathBuf>,
    interrupt: &'a Interrupt,
    worker: Option<Worker>,
    /// Workers started so far.
    started: usize,
    /// Nsight batches profiled so far (they number their files).
    batches: usize,
}

impl Session<'_> {
    /// Starts a worker, sends the setup request and returns its `sys_info`.
    fn start(&mut self) -> Result<Map<String, Value>, String> {
        let Some(command) = self.command else {
            return Err("no worker command was given for a run that measures".into());
        };
        let cwd = absolute(Utf8Path::new("."));
        // A restarted worker writes its own log: `<log>.1`, `<log>.2`, ...
        let log = if self.started == 0 {
            self.log.clone()
        } else {
            Utf8PathBuf::from(format!("{}.{}", self.log, self.started))
        };
        self.started += 1;
        let mut worker = Worker::spawn(
            command,
            WorkerOptions {
                mode: "ops",
                cwd: &cwd,
                log: &log,
                env: Vec::new(),
                timeout: self.options.timeout,
                interrupt: self.interrupt.clone(),
            },
        )
        .map_err(|e| error_line(&e))?;
        let setup = json!({
            "request": "setup",
            "device": self.options.device,
            "warmup": self.options.warmup,
            "iterations": self.options.iterations,
            "backward": self.options.backward,
            "exec_mode": self.options.exec_mode,
            "flush_l2": self.options.flush_l2,
            "nvtx": self.options.nvtx,
            "profile": self.trace,
        });
        worker.send(&setup).map_err(|e| error_line(&e))?;
        match worker.next_event::<WorkerEvent>() {
            Ok(Some(WorkerEvent::Hello { sys_info })) => {
                self.worker = Some(worker);
                Ok(sys_info)
            }
            Ok(Some(other)) => Err(format!(
                "the benchit worker sent {other:?} before hello; see its log {log}"
            )),
            Ok(None) => {
                let exit = worker.finish();
                Err(format!(
                    "the benchit worker {exit} before it was ready{}; see its log {log}",
                    last_line(&log)
                ))
            }
            Err(err) => Err(error_line(&err)),
        }
    }

    fn measure(&mut self, run: &ExpandedRun) -> Step {
        if self.worker.is_none()
            && let Err(problem) = self.start()
        {
            if self.interrupt.is_set() {
                return Step::Interrupted;
            }
            return Step::Fatal(Outcome::Failed(problem.clone()), problem);
        }
        let id = run.id.to_string();
        let worker = self
            .worker
            .as_mut()
            .expect("start() keeps the worker it started");
        let job = json!({"request": "run", "op_name": run.op_name, "id": id, "config": run.config});
        if let Err(err) = worker.send(&job) {
            return self.lost(error_line(&err));
        }
        match worker.next_event::<WorkerEvent>() {
            Ok(Some(WorkerEvent::Result { id: got, metric })) if got == id => {
                Step::Done(Outcome::Measured(metric))
            }
            Ok(Some(WorkerEvent::Failed { id: got, message })) if got == id => {
                Step::Done(Outcome::Failed(message))
            }
            Ok(Some(other)) => self.lost(format!(
                "the benchit worker answered {other:?} to a request for {id}"
            )),
            Ok(None) => {
                let log = worker.log().to_path_buf();
                let exit = self.worker.take().map(Worker::finish);
                let exit = exit.map_or_else(String::new, |e| e.to_string());
                Step::Done(Outcome::Failed(format!(
                    "the worker {exit} while running it{}; see {log}",
                    last_line(&log)
                )))
            }
            Err(WorkerError::Interrupted) => Step::Interrupted,
            Err(err @ WorkerError::Timeout { .. }) => {
                let problem = err.to_string();
                Step::Fatal(Outcome::Failed(problem.clone()), problem)
            }
            Err(err) => self.lost(error_line(&err)),
        }
    }

    /// The worker is unusable: this run fails, the next one gets a new worker.
    fn lost(&mut self, problem: String) -> Step {
        self.worker = None;
        Step::Done(Outcome::Failed(problem))
    }

    /// Asks the worker to finish (writing the trace) and waits for `done`.
    fn end(&mut self) -> Result<Option<Utf8PathBuf>, String> {
        let Some(mut worker) = self.worker.take() else {
            return Ok(None);
        };
        worker
            .send(&json!({"request": "end"}))
            .map_err(|e| error_line(&e))?;
        let mut trace = None;
        loop {
            match worker.next_event::<WorkerEvent>() {
                Ok(Some(WorkerEvent::Trace { file })) => trace = Some(file),
                Ok(Some(WorkerEvent::Done)) => break,
                Ok(Some(other)) => {
                    return Err(format!("the benchit worker sent {other:?} at the end"));
                }
                Ok(None) => {
                    let log = worker.log().to_path_buf();
                    let exit = worker.finish();
                    return Err(format!(
                        "the benchit worker {exit} before it was done{}; see {log}",
                        last_line(&log)
                    ));
                }
                Err(err) => return Err(error_line(&err)),
            }
        }
        // Everything was said: how the process then ends (torch's teardown can outlast the
        // grace period and be stopped) changes nothing.
        worker.finish();
        Ok(trace)
    }
}

/// ` (last log line: ...)` when the log has one.
fn last_line(log: &Utf8Path) -> String {
    let text = fs_err::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or_else(String::new, |l| {
            format!(
                " (last log line: {})",
                l.trim().chars().take(300).collect::<String>()
            )
        })
}

/// `path` from the current folder (the current folder itself for `.`).
fn absolute(path: &Utf8Path) -> Utf8PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let Some(cwd) = std::env::current_dir()
        .ok()
        .and_then(|d| Utf8PathBuf::from_path_buf(d).ok())
    else {
        return path.to_path_buf();
    };
    if path == "." { cwd } else { cwd.join(path) }
}

/// What the Rust side knows of the host; the worker adds Python's and torch's facts.
fn host_info() -> Map<String, Value> {
    let hostname = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    let mut info = Map::new();
    info.insert("hostname".into(), json!(hostname));
    info.insert("pid".into(), json!(std::process::id()));
    info.insert("cwd".into(), json!(absolute(Utf8Path::new("."))));
    info.insert("benchit_version".into(), json!(env!("CARGO_PKG_VERSION")));
    info
}

fn run_options(options: &RunOptions) -> Value {
    json!({
        "config": options.config_file,
        "device": options.device,
        "warmup": options.warmup,
        "iteration": options.iterations,
        "pass_type": if options.backward { "backward" } else { "forward" },
        "op_exec_mode": options.exec_mode,
        "cuda_l2_cache": !options.flush_l2,
        "nsight": options.nsight.as_ref().map(|n| json!({
            "tool": n.tool.name(),
            "bin": n.bin,
            "warmup": n.warmup,
            "iteration": n.iterations,
            "run_batch_size": n.batch_size,
            "batch_cuda_device": n.cuda_device,
        })),
        "resume_op_run_id": options.resume_id,
        "stop_op_run_id": options.stop_id,
        "profile": options.profile,
        "append": options.append,
        "output_prefix": options.output_prefix,
        "timeout_s": options.timeout.as_secs(),
    })
}
