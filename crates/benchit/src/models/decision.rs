//! What to do with one target invocation, decided before anything is written or sent to the
//! worker: skip it (the device cannot be used here, or the cached build cannot be used under
//! `--rebuild never`), or run the stages that are missing or stale (none: the cached build is
//! loaded as it is) and then time the runtimes asked for. Pure: the cached build is read by
//! the caller ([`CachedBuild::read`]) and passed in.

use super::input::InputKind;
use super::options::{Action, BenchmarkOptions};
use super::protocol::{BenchmarkRequest, InvocationEvent};
use super::results::{Failure, FailureKind};
use super::staleness::{self, CachedBuild, Decision, Wanted};
use super::state::{Versions, stage_output};

/// What [`decide`] knows of a target invocation besides its cached build.
pub(crate) struct Invocation<'a> {
    /// The worker's event.
    pub event: &'a InvocationEvent,
    /// The kind of input it comes from (an ONNX file is received rather than exported).
    pub input_kind: InputKind,
    /// The tool versions the worker reported.
    pub versions: &'a Versions,
    /// The options of the call.
    pub options: &'a BenchmarkOptions,
    /// Why the device cannot be used here, when it cannot.
    pub device_problem: Option<&'a str>,
}

/// What to do with a target invocation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BuildDecision {
    /// Neither build nor time it: its build fails at once, for this reason.
    Skip(Failure),
    /// Build what `plan` says, then time `benchmarks`.
    Build {
        /// The stages the options ask for, in order: what the finished build holds.
        wanted: Vec<&'static str>,
        /// Start afresh or keep the cached build, the stages to run now (none: it is loaded
        /// as it is), why, and a warning for the person.
        plan: Decision,
        /// The runtimes to time, each with the ONNX file it reads (none unless benchmarking).
        benchmarks: Vec<BenchmarkRequest>,
    },
}

/// Decides what to do with `invocation`, whose build in the cache is `cached`.
pub(crate) fn decide(invocation: &Invocation<'_>, cached: &CachedBuild) -> BuildDecision {
    let options = invocation.options;
    if let Some(problem) = invocation.device_problem {
        return BuildDecision::Skip(Failure {
            kind: FailureKind::WorkerError,
            message: problem.to_string(),
            traceback: None,
        });
    }
    let wanted = wanted_stages(options, invocation.input_kind);
    let event = invocation.event;
    let needs = Wanted {
        build_name: &cached.name,
        model_hash: &event.weights_hash,
        input_shapes: &event.input_shapes,
        input_dtypes: &event.input_dtypes,
        versions: invocation.versions,
        opset: options.opset,
        exporter: options.exporter.as_str(),
        stages: &wanted,
    };
    let plan = match staleness::decide(options.rebuild, cached, &needs) {
        Ok(plan) => plan,
        Err(unusable) => {
            return BuildDecision::Skip(Failure {
                kind: FailureKind::Cache,
                message: unusable.to_string(),
                traceback: None,
            });
        }
    };
    let benchmarks = if options.action == Action::Benchmark {
        let onnx_stage = if options.fp16 { "fp16" } else { "optimize" };
        options
            .runtimes
            .iter()
            .map(|runtime| BenchmarkRequest {
                runtime: runtime.as_str().to_string(),
                onnx: runtime.needs_onnx().then(|| {
                    stage_output(&cached.dir, &cached.name, options.opset, onnx_stage).to_string()
                }),
            })
            .collect()
    } else {
        Vec::new()
    };
    BuildDecision::Build {
        wanted,
        plan,
        benchmarks,
    }
}

/// The stages the options ask for the models of an input of `kind`.
fn wanted_stages(options: &BenchmarkOptions, kind: InputKind) -> Vec<&'static str> {
    let mut stages = options.stages();
    if kind == InputKind::Onnx
        && let Some(first) = stages.first_mut()
    {
        *first = "receive";
    }
    stages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::options::{Exporter, RebuildPolicy, Runtime};
    use crate::models::state::tests::sample_state;

    /// The target invocation of the sample build, as the worker reports it.
    fn event() -> InvocationEvent {
        let state = sample_state();
        InvocationEvent {
            model_hash: "2a1e15ca".into(),
            invocation_hash: "24adc42f".into(),
            parent_invocation_hash: None,
            input_shapes: state.expected_input_shapes,
            input_dtypes: state.expected_input_dtypes,
            is_target: true,
            weights_hash: state.model_hash,
        }
    }

    fn versions() -> Versions {
        let state = sample_state();
        Versions {
            benchit: state.benchit_version,
            torch: state.torch_version,
            onnx: state.onnx_version,
            onnxruntime: state.onnxruntime_version,
        }
    }

    /// The sample build as the cache holds it: `state` and the outputs of `outputs`.
    fn cached(state: Option<crate::models::state::BuildState>, outputs: &[&str]) -> CachedBuild {
        CachedBuild {
            name: "hello_world_24adc42f".into(),
            dir: "/cache/hello_world_24adc42f".into(),
            state: Ok(state),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn decide_with(
        options: &BenchmarkOptions,
        kind: InputKind,
        device_problem: Option<&str>,
        build: &CachedBuild,
    ) -> BuildDecision {
        let event = event();
        let versions = versions();
        decide(
            &Invocation {
                event: &event,
                input_kind: kind,
                versions: &versions,
                options,
                device_problem,
            },
            build,
        )
    }

    fn build_of(decision: BuildDecision) -> (Vec<&'static str>, Decision, Vec<BenchmarkRequest>) {
        match decision {
            BuildDecision::Build {
                wanted,
                plan,
                benchmarks,
            } => (wanted, plan, benchmarks),
            BuildDecision::Skip(failure) => panic!("skipped: {failure:?}"),
        }
    }

    fn options() -> BenchmarkOptions {
        let mut options = BenchmarkOptions::new("/cache");
        options.exporter = Exporter::Torchscript;
        options.runtimes = vec![Runtime::Ort, Runtime::TorchEager];
        options
    }

    #[test]
    fn a_new_build_runs_every_stage_then_each_runtime() {
        let options = options();
        let (wanted, plan, benchmarks) = build_of(decide_with(
            &options,
            InputKind::Script,
            None,
            &cached(None, &[]),
        ));
        assert_eq!(wanted, ["export", "optimize"]);
        assert!(plan.fresh);
        assert_eq!(plan.stages, ["export", "optimize"]);
        assert_eq!(
            benchmarks,
            [
                BenchmarkRequest {
                    runtime: "ort".into(),
                    onnx: Some(
                        "/cache/hello_world_24adc42f/onnx/hello_world_24adc42f-op17-opt.onnx"
                            .into()
                    ),
                },
                BenchmarkRequest {
                    runtime: "torch-eager".into(),
                    onnx: None,
                },
            ]
        );
    }

    #[test]
    fn a_valid_cached_build_is_loaded_without_stages() {
        let options = options();
        let build = cached(Some(sample_state()), &["export", "optimize"]);
        let (wanted, plan, benchmarks) =
            build_of(decide_with(&options, InputKind::Script, None, &build));
        assert_eq!(wanted, ["export", "optimize"]);
        assert!(!plan.fresh && plan.stages.is_empty() && plan.reasons.is_empty());
        assert_eq!(benchmarks.len(), 2);
    }

    #[test]
    fn fp16_adds_a_stage_and_its_file_is_timed() {
        let mut options = options();
        options.fp16 = true;
        let build = cached(Some(sample_state()), &["export", "optimize"]);
        let (wanted, plan, benchmarks) =
            build_of(decide_with(&options, InputKind::Script, None, &build));
        assert_eq!(wanted, ["export", "optimize", "fp16"]);
        assert_eq!(plan.stages, ["fp16"]);
        let onnx = benchmarks[0].onnx.as_deref().unwrap_or_default();
        assert!(onnx.ends_with("-op17-opt-f16.onnx"), "{onnx}");
    }

    #[test]
    fn an_onnx_file_is_received_rather_than_exported() {
        let options = options();
        let (wanted, plan, _) = build_of(decide_with(
            &options,
            InputKind::Onnx,
            None,
            &cached(None, &[]),
        ));
        assert_eq!(wanted, ["receive", "optimize"]);
        assert_eq!(plan.stages, ["receive", "optimize"]);
    }

    #[test]
    fn building_only_times_nothing() {
        let mut options = options();
        options.action = Action::Build;
        let (_, plan, benchmarks) = build_of(decide_with(
            &options,
            InputKind::Script,
            None,
            &cached(None, &[]),
        ));
        assert_eq!(plan.stages, ["export", "optimize"]);
        assert!(benchmarks.is_empty());
    }

    #[test]
    fn a_device_that_cannot_be_used_skips_the_build() {
        let options = options();
        let decision = decide_with(
            &options,
            InputKind::Script,
            Some("needs a GPU"),
            &cached(None, &[]),
        );
        assert_eq!(
            decision,
            BuildDecision::Skip(Failure {
                kind: FailureKind::WorkerError,
                message: "needs a GPU".into(),
                traceback: None,
            })
        );
    }

    #[test]
    fn an_unreadable_build_is_skipped_under_rebuild_never() {
        let mut options = options();
        options.rebuild = RebuildPolicy::Never;
        let mut build = cached(None, &[]);
        build.state = Err("state.yaml: bad".into());
        let BuildDecision::Skip(failure) = decide_with(&options, InputKind::Script, None, &build)
        else {
            panic!("not skipped");
        };
        assert_eq!(failure.kind, FailureKind::Cache);
        assert!(
            failure.message.contains("--rebuild never"),
            "{}",
            failure.message
        );
    }
}
