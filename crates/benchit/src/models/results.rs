//! The typed results of a model benchmark: per input, its models, their invocations, the build
//! and what each runtime measured, or why not.

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use serde::Serialize;

use super::input::{InputKind, Labels};
use super::protocol::{Hello, ModelEvent, OnnxInfo};
use super::stats::Statistics;

/// Everything a benchmark call did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BenchmarkReport {
    /// One entry per input, in order.
    pub inputs: Vec<InputResult>,
    /// Ctrl-C stopped the call.
    pub interrupted: bool,
    /// Inputs not run: after Ctrl-C, or once the worker could not start.
    pub not_run: Vec<String>,
}

impl BenchmarkReport {
    /// Whether every input and every model did what was asked.
    pub fn success(&self) -> bool {
        !self.interrupted && self.not_run.is_empty() && self.inputs.iter().all(InputResult::success)
    }
}

/// How an input went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputStatus {
    /// Being worked on.
    Running,
    /// The worker finished.
    Done,
    /// Skipped (see `skipped`).
    Skipped,
    /// The script or the worker failed (see `failure`).
    Failed,
    /// Ctrl-C.
    Interrupted,
}

/// Why an input (or what was in progress in it) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The user's script raised or exited with a non-zero status.
    ScriptError,
    /// The worker reported it could not do what was asked.
    WorkerError,
    /// The worker process ended without finishing.
    Crash,
    /// The input ran past `--timeout`.
    Timeout,
    /// The worker wrote something that is not the protocol.
    Protocol,
    /// The worker could not start.
    Start,
    /// The build cache failed.
    Cache,
    /// Ctrl-C.
    Interrupted,
}

/// A failure with its one-line message and, when there is one, the full traceback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// One line.
    pub message: String,
    /// The traceback (shown with `BENCHIT_TRACEBACK=1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

/// One input: a script or an ONNX file.
#[derive(Debug, Clone, Serialize)]
pub struct InputResult {
    /// The argument as given.
    pub input: String,
    /// The file.
    pub path: Utf8PathBuf,
    /// Script or ONNX file.
    pub kind: InputKind,
    /// Where it stands.
    pub status: InputStatus,
    /// The worker's log (its stderr and the script's output).
    pub log: Utf8PathBuf,
    /// The worker's package versions.
    pub versions: Option<Hello>,
    /// The script's labels.
    pub labels: Labels,
    /// The models discovered, in order.
    pub models: Vec<ModelResult>,
    /// Why the input failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Why the input was skipped (`--resume`, `--labels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Things a person should know (stale builds, unknown targets, malformed labels).
    pub warnings: Vec<String>,
    /// Seconds the input took.
    pub seconds: f64,
}

impl InputResult {
    /// Whether the input and each of its builds did what was asked.
    pub fn success(&self) -> bool {
        self.failure.is_none()
            && self.models.iter().all(|m| m.failure.is_none())
            && self
                .models
                .iter()
                .flat_map(|m| &m.invocations)
                .filter_map(|i| i.build.as_ref())
                .all(BuildResult::success)
    }

    /// The invocation with hash `hash`.
    pub fn invocation_mut(&mut self, hash: &str) -> Option<&mut InvocationResult> {
        self.models
            .iter_mut()
            .flat_map(|m| m.invocations.iter_mut())
            .find(|i| i.invocation_hash == hash)
    }
}

/// A discovered model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelResult {
    /// What the worker said about it.
    #[serde(flatten)]
    pub model: ModelEvent,
    /// Its unique invocations, in order.
    pub invocations: Vec<InvocationResult>,
    /// What the worker could not do with it (inputs it cannot describe, dynamic dimensions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// One unique (model, inputs) pair.
#[derive(Debug, Clone, Serialize)]
pub struct InvocationResult {
    /// The invocation hash.
    pub invocation_hash: String,
    /// The parent's invocation, for sub-modules.
    pub parent_invocation_hash: Option<String>,
    /// Input shapes.
    pub input_shapes: IndexMap<String, Vec<i64>>,
    /// Input dtypes.
    pub input_dtypes: IndexMap<String, String>,
    /// Whether it was selected for building.
    pub is_target: bool,
    /// How many times the script called it (known at the end).
    pub executed: Option<u64>,
    /// Time the script spent in it, seconds.
    pub seconds: Option<f64>,
    /// The build and measurements, for targets.
    pub build: Option<BuildResult>,
}

/// The build of an invocation and its measurements.
#[derive(Debug, Clone, Serialize)]
pub struct BuildResult {
    /// The build name.
    pub build_name: String,
    /// The build folder.
    pub build_dir: Utf8PathBuf,
    /// The stages asked for.
    pub planned_stages: Vec<String>,
    /// The cache held every stage needed (none ran); `false` when none was needed.
    pub reused: bool,
    /// Why the cache was not reused as it was.
    pub rebuild_reasons: Vec<String>,
    /// The stages run.
    pub stages: Vec<StageResult>,
    /// ONNX files of the build.
    pub onnx: Vec<OnnxInfo>,
    /// One entry per runtime asked for.
    pub runtimes: Vec<RuntimeResult>,
    /// The worker finished this invocation.
    pub done: bool,
    /// Why nothing (more) could be done for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

impl BuildResult {
    /// Whether every stage and runtime succeeded.
    pub fn success(&self) -> bool {
        self.failure.is_none()
            && self.stages.iter().all(|s| s.ok)
            && self.runtimes.iter().all(|r| r.ok)
    }
}

/// One build stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageResult {
    /// The stage.
    pub stage: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its duration.
    pub seconds: f64,
    /// The file it wrote.
    pub output: Option<String>,
    /// Why it failed; on success, a note (the export made by dynamo after torchscript failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The traceback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

/// What one runtime measured.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeResult {
    /// The runtime.
    pub runtime: String,
    /// Whether it was measured.
    pub ok: bool,
    /// Its version.
    pub runtime_version: Option<String>,
    /// The ORT provider or torch device.
    pub provider: Option<String>,
    /// Compile time of `torch-compiled`, apart from the measurements.
    pub compile_seconds: Option<f64>,
    /// Latency statistics.
    pub statistics: Option<Statistics>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The traceback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}
