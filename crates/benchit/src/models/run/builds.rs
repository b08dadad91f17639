//! The builds of one input: each target invocation's decision, its folder and `state.yaml`,
//! and what the worker sends back for it (stages, benchmarks), recorded as results.

use camino::Utf8Path;
use milabench_exec::error_line;

use super::{Pending, Run};
use crate::models::cache::clean_folder;
use crate::models::decision::{BuildDecision, Invocation, decide};
use crate::models::input::{InputKind, build_name};
use crate::models::options::{Action, Runtime};
use crate::models::protocol::{BenchmarkEvent, BuildRequest, InvocationEvent, Reply, StageEvent};
use crate::models::results::{
    BuildResult, Failure, FailureKind, InputStatus, InvocationResult, RuntimeResult, StageResult,
};
use crate::models::staleness::CachedBuild;
use crate::models::state::{
    BuildConfig, BuildInfo, BuildState, BuildStats, BuildStatus, ModelInfo, RuntimeRecord,
    STATE_FILE, STATS_FILE, StateError, now, read_yaml_or_set_aside, write_yaml,
};
use crate::models::stats::Statistics;

impl Run<'_, '_> {
    pub(super) fn build_mut(&mut self, invocation_hash: &str) -> Option<&mut BuildResult> {
        self.result
            .invocation_mut(invocation_hash)
            .and_then(|i| i.build.as_mut())
    }

    /// Records an invocation; for a target, decides the build and returns the reply.
    pub(super) fn add_invocation(&mut self, inv: InvocationEvent) -> Reply {
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
    pub(super) fn plan_build(&mut self, inv: &InvocationEvent) -> (Reply, BuildResult) {
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

    pub(super) fn new_state(&self, name: &str, inv: &InvocationEvent) -> BuildState {
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

    pub(super) fn model_of(
        &self,
        model_hash: &str,
    ) -> Option<&crate::models::protocol::ModelEvent> {
        self.result
            .models
            .iter()
            .map(|m| &m.model)
            .find(|m| m.model_hash == model_hash)
    }

    pub(super) fn model_info(&self, inv: &InvocationEvent) -> ModelInfo {
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

    pub(super) fn save_state(
        &self,
        dir: &Utf8Path,
        state: &mut BuildState,
    ) -> Result<(), StateError> {
        state.updated = now();
        write_yaml(&dir.join(STATE_FILE), state)
    }

    pub(super) fn stage(&mut self, event: StageEvent) {
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

    pub(super) fn benchmark(&mut self, event: BenchmarkEvent) {
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

    pub(super) fn invocation_done(&mut self, invocation_hash: &str) {
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
    pub(super) fn finish_build(
        &mut self,
        mut p: Pending,
        invocation_hash: &str,
        failure: Option<Failure>,
    ) {
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
    pub(super) fn close_pending(&mut self) {
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
    pub(super) fn check_targets(&mut self) {
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
