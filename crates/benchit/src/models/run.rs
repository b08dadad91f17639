//! One input through its worker: start the worker, answer each target invocation with the
//! stages and runtimes it needs (after the staleness decision and with `state.yaml` marked
//! running), record what comes back in the build folder, and turn a crash, a timeout or Ctrl-C
//! into failures of what was in progress, never into a build that claims success.

use std::collections::HashMap;
use std::time::Instant;

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{Interrupt, error_line};

use super::cache::Cache;
use super::input::{Input, InputKind, labels_match};
use super::options::{Action, BenchmarkOptions};
use super::protocol::{Event, Hello, Request};
use super::results::{Failure, FailureKind, InputResult, InputStatus, ModelResult};
use super::state::{BuildState, BuildStats, Versions};
use crate::worker::{Worker, WorkerCommand, WorkerError, WorkerOptions};

/// Receives progress while inputs run. Every method has an empty default.
pub trait Observer {
    /// An input starts (`index` of `total`, from 0).
    fn on_input_start(&mut self, _input: &Input, _index: usize, _total: usize) {}
    /// Something changed in the input being run.
    fn on_progress(&mut self, _result: &InputResult) {}
    /// Something a person should know.
    fn on_warning(&mut self, _message: &str) {}
    /// An input ended.
    fn on_input_end(&mut self, _result: &InputResult) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {}

/// What every input of a call shares.
pub(crate) struct Context<'a> {
    /// The options (runtimes deduplicated).
    pub options: &'a BenchmarkOptions,
    /// The build cache.
    pub cache: &'a Cache,
    /// How the worker is reached.
    pub connection: Connection<'a>,
    /// Ctrl-C.
    pub interrupt: &'a Interrupt,
    /// The workers' working folder.
    pub cwd: &'a Utf8Path,
    /// Why the device cannot be used here (no GPU for `nvidia`), when it cannot.
    pub device_problem: Option<String>,
    /// Identifies this benchit process in `state.yaml`.
    pub uid: String,
}

/// How an input's worker is reached.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Connection<'a> {
    /// A worker process started with this command for each input.
    Spawn(&'a WorkerCommand),
    /// The Python program that started benchit, over benchit's stdin and stdout.
    Stdio,
}

/// A build being made or measured for one invocation.
struct Pending {
    state: BuildState,
    stats: BuildStats,
    dir: Utf8PathBuf,
}

/// One input in progress.
struct Run<'a, 'o> {
    cx: &'a Context<'a>,
    input: &'a Input,
    observer: &'o mut dyn Observer,
    result: InputResult,
    versions: Versions,
    pending: HashMap<String, Pending>,
}

/// Runs `input` through its own worker.
pub(crate) fn run_input(
    cx: &Context<'_>,
    input: &Input,
    observer: &mut dyn Observer,
) -> InputResult {
    let started = Instant::now();
    let mut run = Run {
        cx,
        input,
        observer,
        result: InputResult {
            input: input.arg.clone(),
            path: input.path.clone(),
            kind: input.kind,
            status: InputStatus::Running,
            log: cx.cache.log_path(input.stem()),
            versions: None,
            labels: input.script.labels.clone(),
            models: Vec::new(),
            failure: None,
            skipped: None,
            warnings: Vec::new(),
            seconds: 0.0,
        },
        versions: Versions::of(&Hello::default()),
        pending: HashMap::new(),
    };
    for warning in &input.script.label_warnings {
        run.warn(format!("{}: {warning}", input.arg));
    }
    run.go();
    run.result.seconds = started.elapsed().as_secs_f64();
    run.result
}

impl Run<'_, '_> {
    fn warn(&mut self, message: String) {
        self.observer.on_warning(&message);
        self.result.warnings.push(message);
    }

    fn fail(&mut self, kind: FailureKind, message: String, traceback: Option<String>) {
        self.result.status = if kind == FailureKind::Interrupted {
            InputStatus::Interrupted
        } else {
            InputStatus::Failed
        };
        self.result.failure = Some(Failure {
            kind,
            message,
            traceback,
        });
    }

    fn go(&mut self) {
        let options = self.cx.options;
        if self.input.kind == InputKind::Script
            && !labels_match(&self.input.script.labels, &options.labels)
        {
            self.result.status = InputStatus::Skipped;
            self.result.skipped = Some("its labels do not match --labels".into());
            return;
        }
        // A model handed over live is no script of the cache database.
        let scripted = self.input.kind != InputKind::Model;
        if scripted {
            match self.cx.cache.set_aside_unreadable_database() {
                Ok(Some(warning)) => self.warn(warning),
                Ok(None) => {}
                Err(e) => return self.fail(FailureKind::Cache, error_line(&e), None),
            }
        }
        if options.resume && scripted {
            match self.cx.cache.attempted(&self.input.path) {
                Ok(true) => {
                    self.result.status = InputStatus::Skipped;
                    self.result.skipped = Some("already attempted (--resume)".into());
                    return;
                }
                Ok(false) => {}
                Err(e) => return self.fail(FailureKind::Cache, error_line(&e), None),
            }
        }
        if scripted && let Err(e) = self.cx.cache.record_attempt(&self.input.path) {
            return self.fail(FailureKind::Cache, error_line(&e), None);
        }
        let log = self.result.log.clone();
        let spawned = match self.cx.connection {
            Connection::Spawn(command) => Worker::spawn(
                command,
                WorkerOptions {
                    mode: "models",
                    cwd: self.cx.cwd,
                    log: &log,
                    env: Vec::new(),
                    timeout: options.timeout,
                    interrupt: self.cx.interrupt.clone(),
                },
            ),
            Connection::Stdio => {
                Worker::over_stdio(&log, options.timeout, self.cx.interrupt.clone())
            }
        };
        let mut worker = match spawned {
            Ok(worker) => worker,
            Err(e) => return self.fail(FailureKind::Start, error_line(&e), None),
        };
        let request = match self.input.kind {
            InputKind::Script => Request::Script {
                script: self.input.path.to_string(),
                script_args: options.script_args.clone(),
                targets: self.input.targets.clone(),
                max_depth: options.max_depth,
                keras: options.framework.discovers_keras(self.input),
                analyze_only: options.action == Action::Analyze,
            },
            InputKind::Onnx => Request::Onnx {
                path: self.input.path.to_string(),
            },
            InputKind::Model => Request::Model {
                name: self.input.arg.clone(),
            },
        };
        let outcome = worker
            .send(&request)
            .and_then(|()| self.converse(&mut worker));
        match outcome {
            Ok(true) => {
                let exit = worker.finish();
                if self.result.failure.is_none() {
                    self.result.status = InputStatus::Done;
                }
                // A worker stopped by its grace period after `done` (signal) finished its work.
                if exit.code.is_some_and(|code| code != 0) {
                    self.warn(format!(
                        "{}: the worker {exit} after finishing; see its log {log}",
                        self.input.arg
                    ));
                }
            }
            Ok(false) => {
                let exit = worker.finish();
                self.fail(
                    FailureKind::Crash,
                    format!("the worker {exit} before finishing; see its log {log}"),
                    None,
                );
            }
            Err(e) => {
                drop(worker);
                let kind = match &e {
                    WorkerError::Timeout { .. } => FailureKind::Timeout,
                    WorkerError::Interrupted => FailureKind::Interrupted,
                    WorkerError::Protocol { .. } => FailureKind::Protocol,
                    _ => FailureKind::Crash,
                };
                let message = match kind {
                    // Where the script was stuck is in its output.
                    FailureKind::Timeout => format!("{e}; see its log {log}"),
                    _ => error_line(&e),
                };
                self.fail(kind, message, None);
            }
        }
        self.close_pending();
        self.check_targets();
        if self.result.status == InputStatus::Interrupted
            && scripted
            && let Err(e) = self.cx.cache.forget_attempt(&self.input.path)
        {
            self.warn(format!("{}: {}", self.input.arg, error_line(&e)));
        }
        self.observer.on_progress(&self.result);
    }

    /// Reads events until `done` (`Ok(true)`) or the end of the stream (`Ok(false)`).
    fn converse(&mut self, worker: &mut Worker) -> Result<bool, WorkerError> {
        while let Some(event) = worker.next_event::<Event>()? {
            match event {
                Event::Hello(hello) => {
                    self.versions = Versions::of(&hello);
                    self.result.versions = Some(hello);
                }
                Event::Model(model) => {
                    if !self
                        .result
                        .models
                        .iter()
                        .any(|m| m.model.model_hash == model.model_hash)
                    {
                        self.result.models.push(ModelResult {
                            model,
                            invocations: Vec::new(),
                            failure: None,
                        });
                    }
                }
                Event::Invocation(invocation) => {
                    let wants_reply =
                        invocation.is_target && self.cx.options.action != Action::Analyze;
                    let reply = self.add_invocation(invocation);
                    if wants_reply {
                        self.observer.on_progress(&self.result);
                        worker.send(&reply)?;
                    }
                }
                Event::Stage(stage) => self.stage(stage),
                Event::OnnxInfo(info) => {
                    if let Some(p) = self.pending.get_mut(&info.invocation_hash) {
                        p.stats.onnx_info.retain(|i| i.file != info.file);
                        p.stats.onnx_info.push(info.clone());
                    }
                    if let Some(build) = self.build_mut(&info.invocation_hash) {
                        build.onnx.retain(|i| i.file != info.file);
                        build.onnx.push(info);
                    }
                }
                Event::Benchmark(benchmark) => self.benchmark(benchmark),
                Event::InvocationDone { invocation_hash } => self.invocation_done(&invocation_hash),
                Event::Calls { invocations } => {
                    for call in invocations {
                        if let Some(inv) = self.result.invocation_mut(&call.invocation_hash) {
                            inv.executed = Some(call.executed);
                            inv.seconds = Some(call.seconds);
                        }
                    }
                }
                Event::ScriptError(error) => {
                    let mut message = script_error_message(&error);
                    if error.kind == "SystemExit" {
                        message.push_str(&exit_explained(
                            self.result.log.as_std_path(),
                            !self.cx.options.script_args.is_empty(),
                        ));
                    }
                    self.fail(FailureKind::ScriptError, message, error.traceback);
                }
                Event::Error(fault) => self.worker_error(fault),
                Event::Done => return Ok(true),
            }
            self.observer.on_progress(&self.result);
        }
        Ok(false)
    }

    /// An `error` event: a failure of the model it names, else of the whole input.
    fn worker_error(&mut self, fault: super::protocol::WorkerFault) {
        let failure = Failure {
            kind: FailureKind::WorkerError,
            message: fault.message,
            traceback: fault.traceback,
        };
        if let Some(build) = fault
            .invocation_hash
            .as_deref()
            .and_then(|hash| self.build_mut(hash))
        {
            build.failure = Some(failure);
            return;
        }
        let model = fault.model_hash.as_deref().and_then(|hash| {
            self.result
                .models
                .iter_mut()
                .find(|m| m.model.model_hash == hash)
        });
        match model {
            Some(model) => model.failure = Some(failure),
            None => self.fail(failure.kind, failure.message, failure.traceback),
        }
    }
}

mod builds;
mod messages;

pub(crate) use messages::device_problem;
use messages::{exit_explained, script_error_message};
