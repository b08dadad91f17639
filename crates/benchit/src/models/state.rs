//! The files of one build folder: `state.yaml` (what the build holds and how it was made; its
//! fields follow MLAgility's state file) and `stats.yaml` (the model and what each runtime
//! measured). Both are written atomically (a temporary file renamed over the old one), so a
//! crash leaves the previous version or the new one, never half a file.

use camino::{Utf8Path, Utf8PathBuf};
use indexmap::IndexMap;
use milabench_exec::error_line;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::input::Labels;
use super::protocol::{Hello, OnnxInfo};
use super::stats::Statistics;

/// The state file of a build folder.
pub const STATE_FILE: &str = "state.yaml";
/// The statistics file of a build folder.
pub const STATS_FILE: &str = "stats.yaml";

/// Where a build stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    /// Nothing done yet.
    NotStarted,
    /// Stages are running (a crash leaves this on disk, which counts as failed).
    BuildRunning,
    /// Every stage of the build succeeded.
    SuccessfulBuild,
    /// A stage failed, or the worker ended during a stage.
    FailedBuild,
}

impl BuildStatus {
    /// The name written in `state.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            BuildStatus::NotStarted => "not_started",
            BuildStatus::BuildRunning => "build_running",
            BuildStatus::SuccessfulBuild => "successful_build",
            BuildStatus::FailedBuild => "failed_build",
        }
    }
}

/// The options a build was made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildConfig {
    /// The build name (its folder's name).
    pub build_name: String,
    /// ONNX opset of the export.
    pub onnx_opset: u32,
    /// The stages the build is meant to hold, in order.
    pub sequence: Vec<String>,
    /// `torchscript` or `dynamo`.
    pub exporter: String,
    /// Whether the fp16 model was asked for.
    pub fp16: bool,
}

/// Progress of the stages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// Every stage of the build, in order.
    pub all_build_stages: Vec<String>,
    /// The stages done, in order.
    pub completed_build_stages: Vec<String>,
    /// Seconds per stage.
    pub build_stage_execution_times: IndexMap<String, f64>,
    /// The export (or received file) exists.
    pub base_onnx_exported: bool,
    /// The optimised model exists.
    pub opt_onnx_exported: bool,
    /// The fp16 model exists.
    pub converted_onnx_exported: bool,
    /// The stage running now (`None` when none is).
    pub current_build_stage: Option<String>,
    /// Why the build failed, one line.
    #[serde(default)]
    pub failure: Option<String>,
}

/// `state.yaml`: what a build folder holds and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildState {
    /// Where the build stands.
    pub build_status: BuildStatus,
    /// The cache holding the build.
    pub cache_dir: String,
    /// Build options.
    pub config: BuildConfig,
    /// Input shapes the build was made for.
    pub expected_input_shapes: IndexMap<String, Vec<i64>>,
    /// Input dtypes the build was made for.
    pub expected_input_dtypes: IndexMap<String, String>,
    /// Stage progress.
    pub info: BuildInfo,
    /// The files the stages wrote, in order.
    pub intermediate_results: Vec<String>,
    /// sha256 of the model's repr and weights (of the file, for ONNX inputs).
    pub model_hash: String,
    /// `pytorch`, `pytorch_compiled` or `onnx_file`.
    pub model_type: String,
    /// The benchit version that made the build.
    pub benchit_version: String,
    /// torch version of the worker.
    pub torch_version: Option<String>,
    /// onnx version of the worker.
    pub onnx_version: Option<String>,
    /// onnxruntime version of the worker.
    pub onnxruntime_version: Option<String>,
    /// The rebuild policy of the call that wrote this file.
    pub rebuild: String,
    /// Which benchit process wrote this file (process id and start time).
    pub uid: String,
    /// When this file was written (RFC 3339).
    pub updated: String,
}

/// Build stages in the order they run.
const STAGE_ORDER: [&str; 4] = ["receive", "export", "optimize", "fp16"];

impl BuildState {
    /// Sets the stages the build holds after this call: those completed and kept, and `wanted`,
    /// in build order; `config.fp16` says whether the fp16 model is one of them.
    pub fn plan_stages(&mut self, wanted: &[&str]) {
        let completed = &self.info.completed_build_stages;
        self.info.all_build_stages = STAGE_ORDER
            .iter()
            .filter(|s| wanted.contains(s) || completed.iter().any(|c| c == *s))
            .map(|s| s.to_string())
            .collect();
        self.config.sequence = self.info.all_build_stages.clone();
        self.config.fp16 = self.config.sequence.iter().any(|s| s == "fp16");
    }

    /// Derives the `*_onnx_exported` flags and `intermediate_results` from the completed stages
    /// of the build in `build_dir`.
    pub fn sync_outputs(&mut self, build_dir: &Utf8Path) {
        let done = |names: &[&str]| {
            self.info
                .completed_build_stages
                .iter()
                .any(|c| names.contains(&c.as_str()))
        };
        self.info.base_onnx_exported = done(&["export", "receive"]);
        self.info.opt_onnx_exported = done(&["optimize"]);
        self.info.converted_onnx_exported = done(&["fp16"]);
        self.intermediate_results = self
            .info
            .completed_build_stages
            .iter()
            .map(|stage| {
                stage_output(
                    build_dir,
                    &self.config.build_name,
                    self.config.onnx_opset,
                    stage,
                )
                .to_string()
            })
            .collect();
    }
}

/// The tool versions that make a build stale when they change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Versions {
    /// benchit (this crate).
    pub benchit: String,
    /// torch.
    pub torch: Option<String>,
    /// onnx.
    pub onnx: Option<String>,
    /// onnxruntime.
    pub onnxruntime: Option<String>,
}

impl Versions {
    /// This benchit and the worker's packages.
    pub fn of(hello: &Hello) -> Versions {
        Versions {
            benchit: env!("CARGO_PKG_VERSION").to_string(),
            torch: hello.torch.clone(),
            onnx: hello.onnx.clone(),
            onnxruntime: hello.onnxruntime.clone(),
        }
    }
}

/// The model of a build, for `stats.yaml` and reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The 8-hex model hash.
    pub hash: String,
    /// The invocation hash.
    pub invocation_hash: String,
    /// The class (`onnx` for ONNX files).
    pub class: String,
    /// Where it was made.
    pub file: Option<String>,
    /// Line of `file`.
    pub line: Option<u32>,
    /// The variable holding it.
    pub name: Option<String>,
    /// Parameter count.
    pub parameters: u64,
    /// Bytes of the parameters.
    pub parameter_bytes: u64,
    /// Input shapes.
    pub input_shapes: IndexMap<String, Vec<i64>>,
    /// Input dtypes.
    pub input_dtypes: IndexMap<String, String>,
}

/// What one runtime measured, in `stats.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeRecord {
    /// `ok` or `error`.
    pub status: String,
    /// The runtime's version.
    pub runtime_version: Option<String>,
    /// The execution provider or torch device.
    pub provider: Option<String>,
    /// torch.compile's first call, seconds.
    pub compile_seconds: Option<f64>,
    /// Untimed calls.
    pub warmup: Option<u32>,
    /// Statistics of the timed calls.
    pub statistics: Option<Statistics>,
    /// Why it failed.
    pub message: Option<String>,
    /// The raw times, nanoseconds.
    pub times_ns: Vec<u64>,
}

/// `stats.yaml`: the model of a build and what each runtime measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildStats {
    /// The build name.
    pub build_name: String,
    /// The script (or ONNX file) it came from.
    pub script: String,
    /// The script's labels.
    pub labels: Labels,
    /// The model.
    pub model: ModelInfo,
    /// `x86` or `nvidia`.
    pub device: String,
    /// The ONNX files of the build.
    pub onnx_info: Vec<OnnxInfo>,
    /// Per runtime, the latest measurement.
    pub runtimes: IndexMap<String, RuntimeRecord>,
    /// When this file was written (RFC 3339).
    pub updated: String,
}

/// A file of a build folder that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading or writing failed.
    #[error(
        "cannot read or write {path}; check that the folder is writable and the disk is not full"
    )]
    Io {
        /// The file.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not what benchit writes.
    #[error("{path} is damaged ({problem})")]
    Corrupt {
        /// The file.
        path: Utf8PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// Reads a YAML file of a build folder; `Ok(None)` when it does not exist.
pub fn read_yaml<T: DeserializeOwned>(path: &Utf8Path) -> Result<Option<T>, StateError> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    serde_saphyr::from_str(&text)
        .map(Some)
        .map_err(|e| StateError::Corrupt {
            path: path.to_path_buf(),
            problem: e.to_string().lines().next().unwrap_or_default().to_string(),
        })
}

/// Reads the YAML file at `path` as [`read_yaml`] does, the default when it does not exist;
/// one that cannot be read is renamed to `<path>.unreadable` (replacing an older one), so that
/// what it holds is never written over, and the default comes with the warning that says so.
pub fn read_yaml_or_set_aside<T: DeserializeOwned + Default>(
    path: &Utf8Path,
) -> (T, Option<String>) {
    match read_yaml(path) {
        Ok(value) => (value.unwrap_or_default(), None),
        Err(problem) => {
            let aside = Utf8PathBuf::from(format!("{path}.unreadable"));
            let warning = match fs_err::rename(path, &aside) {
                Ok(()) => format!(
                    "{}: kept aside as {aside}, and a new one started",
                    error_line(&problem)
                ),
                Err(e) => format!(
                    "{}, and it could not be kept aside ({e}): it will be written over; copy it elsewhere to keep it",
                    error_line(&problem)
                ),
            };
            (T::default(), Some(warning))
        }
    }
}

/// Writes `value` as YAML to `path` atomically: a temporary file beside it, then a rename.
pub fn write_yaml<T: Serialize>(path: &Utf8Path, value: &T) -> Result<(), StateError> {
    let text = serde_saphyr::to_string(value).map_err(|e| StateError::Corrupt {
        path: path.to_path_buf(),
        problem: format!("cannot serialise: {e}"),
    })?;
    write_atomic(path, &text)
}

/// Writes `text` to `path` atomically.
pub fn write_atomic(path: &Utf8Path, text: &str) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    };
    let temp = Utf8PathBuf::from(format!("{path}.tmp{}", std::process::id()));
    fs_err::write(&temp, text).map_err(io)?;
    fs_err::rename(&temp, path).map_err(io)
}

/// The ONNX file a stage writes, under `<build_dir>/onnx/`.
pub fn stage_output(
    build_dir: &Utf8Path,
    build_name: &str,
    opset: u32,
    stage: &str,
) -> Utf8PathBuf {
    let suffix = match stage {
        "export" | "receive" => "base",
        "optimize" => "opt",
        _ => "opt-f16",
    };
    build_dir
        .join("onnx")
        .join(format!("{build_name}-op{opset}-{suffix}.onnx"))
}

/// A time stamp for the files (RFC 3339, UTC, seconds).
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample_state() -> BuildState {
        BuildState {
            build_status: BuildStatus::SuccessfulBuild,
            cache_dir: "/c".into(),
            config: BuildConfig {
                build_name: "hello_world_24adc42f".into(),
                onnx_opset: 17,
                sequence: vec!["export".into(), "optimize".into()],
                exporter: "torchscript".into(),
                fp16: false,
            },
            expected_input_shapes: [("x".to_string(), vec![11])].into_iter().collect(),
            expected_input_dtypes: [("x".to_string(), "float32".to_string())]
                .into_iter()
                .collect(),
            info: BuildInfo {
                all_build_stages: vec!["export".into(), "optimize".into()],
                completed_build_stages: vec!["export".into(), "optimize".into()],
                build_stage_execution_times: [("export".to_string(), 0.18)].into_iter().collect(),
                base_onnx_exported: true,
                opt_onnx_exported: true,
                converted_onnx_exported: false,
                current_build_stage: None,
                failure: None,
            },
            intermediate_results: vec!["/c/b/onnx/b-op17-opt.onnx".into()],
            model_hash: "ab".repeat(32),
            model_type: "pytorch".into(),
            benchit_version: "0.1.0".into(),
            torch_version: Some("2.15.0".into()),
            onnx_version: Some("1.23.2".into()),
            onnxruntime_version: None,
            rebuild: "if_needed".into(),
            uid: "42-2026".into(),
            updated: "2026-11-22T06:00:00Z".into(),
        }
    }

    #[test]
    fn state_round_trips_through_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join(STATE_FILE);
        let state = sample_state();
        write_yaml(&path, &state).unwrap();
        let text = fs_err::read_to_string(&path).unwrap();
        assert!(text.contains("build_status: successful_build"), "{text}");
        assert!(!text.contains("!!python"), "{text}");
        let back: BuildState = read_yaml(&path).unwrap().unwrap();
        assert_eq!(back, state);
        // No temporary file is left behind.
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn missing_and_damaged_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join(STATE_FILE);
        assert!(read_yaml::<BuildState>(&path).unwrap().is_none());
        fs_err::write(&path, "build_status: [oops\n").unwrap();
        let err = read_yaml::<BuildState>(&path).unwrap_err().to_string();
        assert!(err.contains("state.yaml is damaged"), "{err}");
    }

    #[test]
    fn planned_stages_keep_what_the_build_holds() {
        let mut state = sample_state();
        state.plan_stages(&[]);
        assert_eq!(state.config.sequence, ["export", "optimize"]);
        state.plan_stages(&["export", "optimize", "fp16"]);
        assert_eq!(state.info.all_build_stages, ["export", "optimize", "fp16"]);
        assert!(state.config.fp16);
        state.info.completed_build_stages = vec!["export".into()];
        state.sync_outputs(Utf8Path::new("/c/b"));
        assert!(state.info.base_onnx_exported);
        assert!(!state.info.opt_onnx_exported && !state.info.converted_onnx_exported);
        assert_eq!(
            state.intermediate_results,
            ["/c/b/onnx/hello_world_24adc42f-op17-base.onnx"]
        );
    }

    #[test]
    fn stage_outputs_have_fixed_names() {
        let dir = Utf8Path::new("/c/b");
        assert_eq!(
            stage_output(dir, "b", 17, "export"),
            "/c/b/onnx/b-op17-base.onnx"
        );
        assert_eq!(
            stage_output(dir, "b", 17, "optimize"),
            "/c/b/onnx/b-op17-opt.onnx"
        );
        assert_eq!(
            stage_output(dir, "b", 13, "fp16"),
            "/c/b/onnx/b-op13-opt-f16.onnx"
        );
    }
}
