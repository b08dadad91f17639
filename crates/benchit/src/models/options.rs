//! The choices of a model benchmark: device, runtimes, build options, rebuild policy.

use std::fmt;
use std::time::Duration;

use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

/// The device models run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// The CPU.
    X86,
    /// An NVIDIA GPU (CUDA).
    Nvidia,
}

impl Device {
    /// The name used on the command line and in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Device::X86 => "x86",
            Device::Nvidia => "nvidia",
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A runtime that times a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// ONNX Runtime in-process (CPU provider on x86, CUDA provider on nvidia).
    Ort,
    /// The live torch model, eager.
    TorchEager,
    /// The live torch model under `torch.compile` (compile time reported apart).
    TorchCompiled,
    /// ONNX Runtime's TensorRT provider (nvidia only).
    Trt,
}

impl Runtime {
    /// The name used on the command line and in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Ort => "ort",
            Runtime::TorchEager => "torch-eager",
            Runtime::TorchCompiled => "torch-compiled",
            Runtime::Trt => "trt",
        }
    }

    /// Whether it runs an ONNX file (and so needs the build).
    pub fn needs_onnx(self) -> bool {
        matches!(self, Runtime::Ort | Runtime::Trt)
    }

    /// Whether it needs an NVIDIA GPU.
    pub fn needs_gpu(self) -> bool {
        self == Runtime::Trt
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do with a build already in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
pub enum RebuildPolicy {
    /// Reuse a valid build; rebuild when the model, inputs, tools or options changed.
    IfNeeded,
    /// Always rebuild from scratch.
    Always,
    /// Reuse a successful build even when it is stale (with a warning); build only what is
    /// missing.
    Never,
}

impl RebuildPolicy {
    /// The name used on the command line and in `state.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            RebuildPolicy::IfNeeded => "if_needed",
            RebuildPolicy::Always => "always",
            RebuildPolicy::Never => "never",
        }
    }
}

/// How a torch model becomes ONNX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Exporter {
    /// torchscript, then dynamo for a model torchscript fails on (recent transformers models,
    /// a transformer encoder layer); the export stage says when dynamo made the file. The
    /// default.
    Auto,
    /// `torch.onnx.export(..., dynamo=False)`: fast, MLAgility's.
    Torchscript,
    /// `torch.onnx.export(..., dynamo=True)`: torch's default since 2.9, slower to export.
    Dynamo,
}

impl Exporter {
    /// The name used on the command line and in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Exporter::Auto => "auto",
            Exporter::Torchscript => "torchscript",
            Exporter::Dynamo => "dynamo",
        }
    }
}

/// How far to go with each model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Discover the models only.
    Analyze,
    /// Discover and build.
    Build,
    /// Discover, build and time.
    Benchmark,
}

/// Everything a model benchmark needs besides its inputs.
#[derive(Debug, Clone)]
pub struct BenchmarkOptions {
    /// The build cache.
    pub cache_dir: Utf8PathBuf,
    /// The device.
    pub device: Device,
    /// The runtimes, in order (each is measured).
    pub runtimes: Vec<Runtime>,
    /// Timed calls per runtime.
    pub iterations: u32,
    /// Untimed calls before them.
    pub warmup: u32,
    /// Analyze, build or benchmark.
    pub action: Action,
    /// Depth of sub-module analysis (PyTorch models only).
    pub max_depth: u32,
    /// Whether Keras models are discovered too (see [`super::Framework`]).
    pub framework: super::Framework,
    /// The scripts' `sys.argv[1:]`.
    pub script_args: Vec<String>,
    /// What to do with cached builds.
    pub rebuild: RebuildPolicy,
    /// Delete build artifacts (keep text, YAML and JSON) after each model.
    pub lean_cache: bool,
    /// Skip scripts the cache database says were attempted.
    pub resume: bool,
    /// The limit of each input's worker.
    pub timeout: Duration,
    /// The ONNX opset of exports.
    pub opset: u32,
    /// Convert the optimised model to fp16 and run the ONNX runtimes on it.
    pub fp16: bool,
    /// The torch-to-ONNX exporter.
    pub exporter: Exporter,
    /// Samples per call, for the throughput.
    pub batch_size: u32,
    /// Only scripts carrying these labels run (empty: every script).
    pub labels: super::input::Labels,
}

impl BenchmarkOptions {
    /// The defaults of the command line with the cache in `cache_dir`: x86, `ort`, 100 timed
    /// calls after 10 warm-up calls, opset 17, auto exporter, if_needed, one hour, Keras
    /// for the scripts that import it.
    pub fn new(cache_dir: impl Into<Utf8PathBuf>) -> BenchmarkOptions {
        BenchmarkOptions {
            cache_dir: cache_dir.into(),
            device: Device::X86,
            runtimes: vec![Runtime::Ort],
            iterations: 100,
            warmup: 10,
            action: Action::Benchmark,
            max_depth: 0,
            framework: super::Framework::Auto,
            script_args: Vec::new(),
            rebuild: RebuildPolicy::IfNeeded,
            lean_cache: false,
            resume: false,
            timeout: Duration::from_secs(3600),
            opset: 17,
            fp16: false,
            exporter: Exporter::Auto,
            batch_size: 1,
            labels: super::input::Labels::new(),
        }
    }

    /// The build stages a torch model needs for these options, in order: none when only torch
    /// runtimes are timed.
    pub fn stages(&self) -> Vec<&'static str> {
        let needs_onnx = match self.action {
            Action::Analyze => false,
            Action::Build => true,
            Action::Benchmark => self.runtimes.iter().any(|r| r.needs_onnx()),
        };
        if !needs_onnx {
            return Vec::new();
        }
        let mut stages = vec!["export", "optimize"];
        if self.fp16 {
            stages.push("fp16");
        }
        stages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_follow_the_runtimes_and_fp16() {
        let mut options = BenchmarkOptions::new("/c");
        assert_eq!(options.stages(), ["export", "optimize"]);
        options.fp16 = true;
        assert_eq!(options.stages(), ["export", "optimize", "fp16"]);
        options.runtimes = vec![Runtime::TorchEager, Runtime::TorchCompiled];
        assert!(options.stages().is_empty());
        options.action = Action::Build;
        assert_eq!(options.stages(), ["export", "optimize", "fp16"]);
        options.action = Action::Analyze;
        assert!(options.stages().is_empty());
    }
}
