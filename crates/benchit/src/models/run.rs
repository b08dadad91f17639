//! One input through its worker: start the worker, answer each target invocation with the
//! stages and runtimes it needs (after the staleness decision and with `state.yaml` marked
//! running), record what comes back in the build folder, and turn a crash, a timeout or Ctrl-C
//! into failures of what was in progress, never into a build that claims success.

use std::collections::HashMap;
use std::time::Instant;

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::{Interrupt, error_line};

use super::cache::{Cache, clean_folder};
use super::decision::{BuildDecision, Invocation, decide};
use super::input::{Input, InputKind, build_name, labels_match};
use super::options::{Action, BenchmarkOptions, Device, Runtime};
use super::protocol::{
    BenchmarkEvent, BuildRequest, Event, Hello, InvocationEvent, Reply, Request, StageEvent,
};
use super::results::{
    BuildResult, Failure, FailureKind, InputResult, InputStatus, InvocationResult, ModelResult,
    RuntimeResult, StageResult,
};
use super::staleness::CachedBuild;
use super::state::{
    BuildConfig, BuildInfo, BuildState, BuildStats, BuildStatus, ModelInfo, RuntimeRecord,
    STATE_FILE, STATS_FILE, StateError, Versions, now, read_yaml_or_set_aside, write_yaml,
};
use super::stats::Statistics;
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

    fn build_mut(&mut self, invocation_hash: &str) -> Option<&mut BuildResult> {
        self.result
            .invocation_mut(invocation_hash)
            .and_then(|i| i.build.as_mut())
    }

    /// Records an invocation; for a target, decides the build and returns the reply.
    fn add_invocation(&mut self, inv: InvocationEvent) -> Reply {
        let mut entry = InvocationResult {
            invocation_hash: inv.invocation_hash.clone(),
            parent_invocation_hash: inv.parent_invocation_hash.clone(),
            input_shapes: inv.input_shapes.clone(),
            input_dtypes: inv.input_dtypes.clone(),
            is_target: inv.is_target,
            executed: None,
            seconds: None,
            build: None,
        };
        let reply = if inv.is_target && self.cx.options.action != Action::Analyze {
            let (reply, build) = self.plan_build(&inv);
            entry.build = Some(build);
            reply
        } else {
            Reply::skip()
        };
        match self
            .result
            .models
            .iter_mut()
            .find(|m| m.model.model_hash == inv.model_hash)
        {
            Some(model) => model.invocations.push(entry),
            None => self.warn(format!(
                "{}: the worker reported invocation {} of a model it never announced ({})",
                self.input.arg, inv.invocation_hash, inv.model_hash
            )),
        }
        reply
    }

    /// Decides the build of target invocation `inv`, and when there is one to make or time,
    /// prepares its folder and `state.yaml` and returns the reply that asks the worker for it.
    fn plan_build(&mut self, inv: &InvocationEvent) -> (Reply, BuildResult) {
        let options = self.cx.options;
        let name = build_name(
            self.input.stem(),
            &self.input.script.labels,
            &inv.invocation_hash,
        );
        let dir = self.cx.cache.build_dir(&name);
        let mut build = BuildResult {
            build_name: name.clone(),
            build_dir: dir.clone(),
            planned_stages: Vec::new(),
            reused: false,
            rebuild_reasons: Vec::new(),
            stages: Vec::new(),
            onnx: Vec::new(),
            runtimes: Vec::new(),
            done: false,
            failure: None,
        };
        let cached = CachedBuild::read(name.clone(), dir.clone(), options.opset);
        let invocation = Invocation {
            event: inv,
            input_kind: self.input.kind,
            versions: &self.versions,
            options,
            device_problem: self.cx.device_problem.as_deref(),
        };
        let (stages, decision, benchmarks) = match decide(&invocation, &cached) {
            BuildDecision::Skip(failure) => {
                build.failure = Some(failure);
                return (Reply::skip(), build);
            }
            BuildDecision::Build {
                wanted,
                plan,
                benchmarks,
            } => (wanted, plan, benchmarks),
        };
        if let Some(warning) = &decision.warning {
            self.warn(warning.clone());
        }
        build.planned_stages = decision.stages.clone();
        build.reused = !stages.is_empty() && decision.stages.is_empty();
        build.rebuild_reasons = decision.reasons.clone();
        let prepared = self
            .cx
            .cache
            .prepare_build(&name, decision.fresh)
            .and_then(|dir| {
                self.cx.cache.record_build(&self.input.path, &name)?;
                Ok(dir)
            });
        if let Err(e) = prepared {
            build.failure = Some(Failure {
                kind: FailureKind::Cache,
                message: error_line(&e),
                traceback: None,
            });
            return (Reply::skip(), build);
        }
        let kept = if decision.fresh {
            None
        } else {
            cached.state.ok().flatten()
        };
        let mut state = kept.unwrap_or_else(|| self.new_state(&name, inv));
        state.rebuild = options.rebuild.as_str().to_string();
        state.uid = self.cx.uid.clone();
        if let Some(first) = decision.stages.first() {
            // The stages from `first` on are redone; what came after them in the old build
            // was made from outputs that are about to change.
            let keep = stages.iter().position(|s| s == first).unwrap_or(0);
            state.info.completed_build_stages.truncate(keep);
            state.build_status = BuildStatus::BuildRunning;
            state.info.current_build_stage = Some(first.clone());
            state.info.failure = None;
        } else {
            state.build_status = BuildStatus::SuccessfulBuild;
        }
        state.plan_stages(&stages);
        state.sync_outputs(&dir);
        if let Err(e) = self.save_state(&dir, &mut state) {
            build.failure = Some(Failure {
                kind: FailureKind::Cache,
                message: error_line(&e),
                traceback: None,
            });
            return (Reply::skip(), build);
        }
        let stats_path = dir.join(STATS_FILE);
        let (mut stats, unreadable): (BuildStats, _) = read_yaml_or_set_aside(&stats_path);
        if let Some(warning) = unreadable {
            self.warn(warning);
        }
        stats.build_name = name.clone();
        stats.script = self.input.path.to_string();
        stats.labels = self.input.script.labels.clone();
        stats.device = options.device.as_str().to_string();
        stats.model = self.model_info(inv);
        self.pending.insert(
            inv.invocation_hash.clone(),
            Pending {
                state,
                stats,
                dir: dir.clone(),
            },
        );
        let reply = Reply::Build(BuildRequest {
            build_dir: dir.to_string(),
            build_name: name,
            stages: decision.stages,
            opset: options.opset,
            exporter: options.exporter.as_str().to_string(),
            benchmarks,
            warmup: options.warmup,
            iterations: options.iterations,
            device: options.device.as_str().to_string(),
        });
        (reply, build)
    }

    fn new_state(&self, name: &str, inv: &InvocationEvent) -> BuildState {
        let model_type = match (
            self.input.kind,
            self.model_of(&inv.model_hash).map(|m| m.compiled),
        ) {
            (InputKind::Onnx, _) => "onnx_file",
            (_, Some(true)) => "pytorch_compiled",
            _ => "pytorch",
        };
        BuildState {
            build_status: BuildStatus::NotStarted,
            cache_dir: self.cx.cache.dir().to_string(),
            config: BuildConfig {
                build_name: name.to_string(),
                onnx_opset: self.cx.options.opset,
                sequence: Vec::new(),
                exporter: self.cx.options.exporter.as_str().to_string(),
                fp16: self.cx.options.fp16,
            },
            expected_input_shapes: inv.input_shapes.clone(),
            expected_input_dtypes: inv.input_dtypes.clone(),
            info: BuildInfo::default(),
            intermediate_results: Vec::new(),
            model_hash: inv.weights_hash.clone(),
            model_type: model_type.to_string(),
            benchit_version: self.versions.benchit.clone(),
            torch_version: self.versions.torch.clone(),
            onnx_version: self.versions.onnx.clone(),
            onnxruntime_version: self.versions.onnxruntime.clone(),
            rebuild: String::new(),
            uid: String::new(),
            updated: String::new(),
        }
    }

    fn model_of(&self, model_hash: &str) -> Option<&super::protocol::ModelEvent> {
        self.result
            .models
            .iter()
            .map(|m| &m.model)
            .find(|m| m.model_hash == model_hash)
    }

    fn model_info(&self, inv: &InvocationEvent) -> ModelInfo {
        let model = self.model_of(&inv.model_hash);
        ModelInfo {
            hash: inv.model_hash.clone(),
            invocation_hash: inv.invocation_hash.clone(),
            class: model.map(|m| m.class.clone()).unwrap_or_default(),
            file: model.and_then(|m| m.file.clone()),
            line: model.and_then(|m| m.line),
            name: model.and_then(|m| m.name.clone()),
            parameters: model.map_or(0, |m| m.parameters),
            parameter_bytes: model.map_or(0, |m| m.parameter_bytes),
            input_shapes: inv.input_shapes.clone(),
            input_dtypes: inv.input_dtypes.clone(),
        }
    }

    fn save_state(&self, dir: &Utf8Path, state: &mut BuildState) -> Result<(), StateError> {
        state.updated = now();
        write_yaml(&dir.join(STATE_FILE), state)
    }

    fn stage(&mut self, event: StageEvent) {
        let ok = event.status == "ok";
        if let Some(mut p) = self.pending.remove(&event.invocation_hash) {
            let info = &mut p.state.info;
            info.build_stage_execution_times
                .insert(event.stage.clone(), event.seconds);
            if ok {
                info.completed_build_stages.push(event.stage.clone());
                let next = info
                    .all_build_stages
                    .iter()
                    .skip_while(|s| **s != event.stage)
                    .nth(1)
                    .cloned();
                info.current_build_stage = next;
            } else {
                info.current_build_stage = None;
                info.failure = Some(format!(
                    "{}: {}",
                    event.stage,
                    event.message.clone().unwrap_or_else(|| "failed".into())
                ));
                p.state.build_status = BuildStatus::FailedBuild;
            }
            p.state.sync_outputs(&p.dir);
            if let Err(e) = self.save_state(&p.dir.clone(), &mut p.state) {
                self.warn(error_line(&e));
            }
            self.pending.insert(event.invocation_hash.clone(), p);
        }
        if let Some(build) = self.build_mut(&event.invocation_hash) {
            build.stages.push(StageResult {
                stage: event.stage,
                ok,
                seconds: event.seconds,
                output: event.output,
                message: event.message,
                traceback: event.traceback,
            });
        }
    }

    fn benchmark(&mut self, event: BenchmarkEvent) {
        let batch_size = self.cx.options.batch_size;
        let ok = event.status == "ok";
        let statistics = if ok {
            Statistics::of(&event.times_ns, batch_size)
        } else {
            None
        };
        let message = match (&event.message, ok, &statistics) {
            (Some(m), _, _) => Some(m.clone()),
            (None, true, None) => Some("no timed call (--iterations 0?)".to_string()),
            (None, false, _) => Some("failed".to_string()),
            _ => None,
        };
        let ok = ok && statistics.is_some();
        if let Some(p) = self.pending.get_mut(&event.invocation_hash) {
            p.stats.runtimes.insert(
                event.runtime.clone(),
                RuntimeRecord {
                    status: if ok { "ok" } else { "error" }.to_string(),
                    runtime_version: event.runtime_version.clone(),
                    provider: event.provider.clone(),
                    compile_seconds: event.compile_seconds,
                    warmup: event.warmup,
                    statistics: statistics.clone(),
                    message: message.clone(),
                    times_ns: event.times_ns.clone(),
                },
            );
        }
        if let Some(build) = self.build_mut(&event.invocation_hash) {
            build.runtimes.retain(|r| r.runtime != event.runtime);
            build.runtimes.push(RuntimeResult {
                runtime: event.runtime,
                ok,
                runtime_version: event.runtime_version,
                provider: event.provider,
                compile_seconds: event.compile_seconds,
                statistics,
                message,
                traceback: event.traceback,
            });
        }
    }

    fn invocation_done(&mut self, invocation_hash: &str) {
        let Some(mut p) = self.pending.remove(invocation_hash) else {
            return;
        };
        let benchmark = self.cx.options.action == Action::Benchmark;
        let failure = self.build_mut(invocation_hash).and_then(|build| {
            let asked = !build.planned_stages.is_empty() || benchmark;
            let silent = build.stages.is_empty() && build.runtimes.is_empty();
            build.failure.clone().or_else(|| {
                (asked && silent).then(|| Failure {
                    kind: FailureKind::ScriptError,
                    message: "the model's first call raised: nothing was built or measured (see the script's error)".into(),
                    traceback: None,
                })
            })
        });
        if failure.is_none() && p.state.build_status == BuildStatus::BuildRunning {
            let all_done = p
                .state
                .info
                .all_build_stages
                .iter()
                .all(|s| p.state.info.completed_build_stages.contains(s));
            p.state.build_status = if all_done {
                BuildStatus::SuccessfulBuild
            } else {
                p.state.info.failure = Some("the worker skipped stages it was asked for".into());
                BuildStatus::FailedBuild
            };
            p.state.info.current_build_stage = None;
        }
        self.finish_build(p, invocation_hash, failure);
    }

    /// Writes the final state and stats of a build and marks it done (`failure`: why it ended
    /// early).
    fn finish_build(&mut self, mut p: Pending, invocation_hash: &str, failure: Option<Failure>) {
        if failure.is_some() && p.state.build_status == BuildStatus::BuildRunning {
            p.state.build_status = BuildStatus::FailedBuild;
            p.state.info.failure = failure.as_ref().map(|f| f.message.clone());
            p.state.info.current_build_stage = None;
        }
        let dir = p.dir.clone();
        if let Err(e) = self.save_state(&dir, &mut p.state) {
            self.warn(error_line(&e));
        }
        p.stats.updated = now();
        if let Err(e) = write_yaml(&dir.join(STATS_FILE), &p.stats) {
            self.warn(error_line(&e));
        }
        if self.cx.options.lean_cache
            && let Err(e) = clean_folder(&dir)
        {
            self.warn(error_line(&e));
        }
        let requested: Vec<Runtime> = if self.cx.options.action == Action::Benchmark {
            self.cx.options.runtimes.clone()
        } else {
            Vec::new()
        };
        let reason = failure
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_else(|| "the worker did not report it".into());
        if let Some(build) = self.build_mut(invocation_hash) {
            build.done = failure.is_none();
            for runtime in requested {
                if !build.runtimes.iter().any(|r| r.runtime == runtime.as_str()) {
                    build.runtimes.push(RuntimeResult {
                        runtime: runtime.as_str().to_string(),
                        ok: false,
                        runtime_version: None,
                        provider: None,
                        compile_seconds: None,
                        statistics: None,
                        message: Some(reason.clone()),
                        traceback: None,
                    });
                }
            }
            if build.failure.is_none() {
                build.failure = failure;
            }
        }
    }

    /// Marks every build still in progress as failed with the input's failure.
    fn close_pending(&mut self) {
        let failure = self.result.failure.clone().unwrap_or(Failure {
            kind: FailureKind::Crash,
            message: "the worker ended without finishing this model".into(),
            traceback: None,
        });
        let hashes: Vec<String> = self.pending.keys().cloned().collect();
        for hash in hashes {
            if let Some(p) = self.pending.remove(&hash) {
                self.finish_build(p, &hash, Some(failure.clone()));
            }
        }
    }

    /// Warns about `::` targets the script never invoked.
    fn check_targets(&mut self) {
        let seen: Vec<String> = self
            .result
            .models
            .iter()
            .flat_map(|m| m.invocations.iter().map(|i| i.invocation_hash.clone()))
            .collect();
        let missing: Vec<String> = self
            .input
            .targets
            .iter()
            .filter(|t| !seen.contains(t))
            .cloned()
            .collect();
        if !missing.is_empty() && self.result.status == InputStatus::Done {
            self.warn(format!(
                "{}: no invocation has hash {}; the script's invocations are {}",
                self.input.arg,
                missing.join(", "),
                if seen.is_empty() {
                    "none".to_string()
                } else {
                    seen.join(", ")
                }
            ));
        }
    }
}

/// How the worker's message for a script that failed to download something begins.
const DOWNLOAD_FAILURE: &str = "the script tried to download ";

/// One line for a `script_error`: `the script raised Kind: message` (the worker's message may
/// already start with the kind), or the message alone where the worker wrote a sentence about
/// the script (`SystemExit`'s status, a download it tried: [`DOWNLOAD_FAILURE`]).
fn script_error_message(error: &super::protocol::ScriptError) -> String {
    let message = error
        .message
        .strip_prefix(&format!("{}: ", error.kind))
        .unwrap_or(&error.message);
    if error.kind == "SystemExit" || message.starts_with(DOWNLOAD_FAILURE) {
        message.to_string()
    } else {
        format!("the script raised {}: {message}", error.kind)
    }
}

/// What a script that exited with an error status last printed (its output goes to `log`),
/// as `: <line>`, and for a command-line error (argparse's `error:` line, click's `Error:`)
/// how to give the script its arguments (`given`: whether some were); empty when it printed
/// nothing.
fn exit_explained(log: &std::path::Path, given: bool) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return String::new();
    };
    let usage = text.lines().any(|l| {
        let l = l.trim_start().to_ascii_lowercase();
        l.starts_with("usage:")
    });
    let command_line = usage && (last.contains(": error: ") || last.starts_with("Error: "));
    let mut out = format!(": {}", excerpt(last, 240));
    if command_line && given {
        out.push_str("; check the arguments given with --script-args");
    } else if command_line {
        out.push_str("; give the script its arguments with --script-args \"...\"");
    }
    out
}

/// `text` cut to at most `max` characters, with `…` where it was cut.
fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Why `device` cannot run here, if it cannot: `nvidia` needs an NVIDIA GPU.
pub(crate) fn device_problem(device: Device, runtimes: &[Runtime]) -> Option<String> {
    let wants_gpu = device == Device::Nvidia || runtimes.iter().any(|r| r.needs_gpu());
    if !wants_gpu {
        return None;
    }
    let (gpus, _) = milabench_system::discover(Some("cuda")).devices();
    gpus.is_empty().then(|| {
        "needs a GPU: --device nvidia (and trt) run on an NVIDIA GPU, and none was found on this machine; use --device x86".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::protocol::ScriptError;

    #[test]
    fn script_errors_read_as_one_line() {
        let error = |kind: &str, message: &str| ScriptError {
            kind: kind.into(),
            message: message.into(),
            traceback: None,
        };
        assert_eq!(
            script_error_message(&error(
                "SyntaxError",
                "SyntaxError: invalid syntax (a.py, line 4)"
            )),
            "the script raised SyntaxError: invalid syntax (a.py, line 4)"
        );
        assert_eq!(
            script_error_message(&error("ValueError", "bad")),
            "the script raised ValueError: bad"
        );
        assert_eq!(
            script_error_message(&error("SystemExit", "the script exited with status 3")),
            "the script exited with status 3"
        );
        let download = "the script tried to download with torch.hub, and this machine cannot reach it (gaierror: ...)";
        assert_eq!(script_error_message(&error("URLError", download)), download);
        // A script's own message that happens to read like the worker's is still its own.
        assert_eq!(
            script_error_message(&error("ValueError", "the script gave up")),
            "the script raised ValueError: the script gave up"
        );
    }

    #[test]
    fn an_exit_status_comes_with_the_scripts_last_words() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("script.log");
        assert_eq!(exit_explained(&log, false), "", "no log");
        std::fs::write(
            &log,
            "usage: train.py [-h] --width WIDTH\n\
             train.py: error: the following arguments are required: --width\n\n",
        )
        .unwrap();
        assert_eq!(
            exit_explained(&log, false),
            ": train.py: error: the following arguments are required: --width; give the script \
             its arguments with --script-args \"...\""
        );
        assert!(
            exit_explained(&log, true).ends_with("; check the arguments given with --script-args")
        );
        std::fs::write(&log, "loading\nout of data, giving up\n").unwrap();
        assert_eq!(exit_explained(&log, false), ": out of data, giving up");
        std::fs::write(&log, "x".repeat(300)).unwrap();
        assert_eq!(exit_explained(&log, false).chars().count(), 2 + 240 + 1);
    }
}
