//! The messages of mode `models` of the worker protocol (`docs/benchit-protocol.md`): the
//! request and replies Rust sends, the events the worker answers with. Unknown keys are ignored;
//! an unknown event is a protocol error.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The first line Rust sends: what the worker should run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Run a Python script and discover its models.
    Script {
        /// Absolute path of the script.
        script: String,
        /// The script's `sys.argv[1:]`.
        script_args: Vec<String>,
        /// Invocation hashes to build and benchmark; empty: every invocation.
        targets: Vec<String>,
        /// How deep sub-modules are analysed (PyTorch models only).
        max_depth: u32,
        /// Discover Keras models too (the worker's environment has TensorFlow).
        keras: bool,
        /// Discover only; the worker then waits for no reply.
        analyze_only: bool,
    },
    /// Take an ONNX file as the model.
    Onnx {
        /// Absolute path of the file.
        path: String,
    },
    /// Announce the one model the Python program holds (benchmate's `benchmark_model`).
    Model {
        /// The name its builds are filed under.
        name: String,
    },
}

/// What Rust answers to an `invocation` event that is a target: build and benchmark it, or skip.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Reply {
    /// Leave this invocation alone.
    Skip {
        /// Always `true`.
        skip: bool,
    },
    /// Build the listed stages and run the listed benchmarks.
    Build(BuildRequest),
}

impl Reply {
    /// The reply that skips an invocation.
    pub fn skip() -> Reply {
        Reply::Skip { skip: true }
    }
}

/// The stages to (re)build and the runtimes to time for one invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildRequest {
    /// The build folder.
    pub build_dir: String,
    /// The build name (file names under `onnx/` start with it).
    pub build_name: String,
    /// The stages to run, in order; empty when the cache holds a valid build.
    pub stages: Vec<String>,
    /// The ONNX opset of the export.
    pub opset: u32,
    /// `torchscript` or `dynamo`.
    pub exporter: String,
    /// The runtimes to time, in order.
    pub benchmarks: Vec<BenchmarkRequest>,
    /// Untimed calls before the timed ones.
    pub warmup: u32,
    /// Timed calls.
    pub iterations: u32,
    /// `x86` or `nvidia`.
    pub device: String,
}

/// One runtime to time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchmarkRequest {
    /// The runtime name (`ort`, `trt`, `torch-eager`, `torch-compiled`).
    pub runtime: String,
    /// The ONNX file it runs, for ONNX runtimes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onnx: Option<String>,
}

/// One line from the worker.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// First line: the versions of the worker's packages.
    Hello(Hello),
    /// A model discovered.
    Model(ModelEvent),
    /// A unique (model, inputs) pair at its first call.
    Invocation(InvocationEvent),
    /// One build stage finished.
    Stage(StageEvent),
    /// Facts about an ONNX file of the build.
    OnnxInfo(OnnxInfo),
    /// One runtime timed (or failed).
    Benchmark(BenchmarkEvent),
    /// Everything asked for one invocation is done.
    InvocationDone {
        /// The invocation.
        invocation_hash: String,
    },
    /// Call counts of every invocation, at the end.
    Calls {
        /// One entry per invocation.
        invocations: Vec<CallCount>,
    },
    /// The user's script raised or exited with a non-zero status.
    ScriptError(ScriptError),
    /// The worker could not do what was asked (an ONNX file with dynamic shapes, a bad request).
    Error(WorkerFault),
    /// Last line.
    Done,
}

/// The `hello` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Python version.
    #[serde(default)]
    pub python: Option<String>,
    /// torch version (`None` when missing).
    #[serde(default)]
    pub torch: Option<String>,
    /// onnx version.
    #[serde(default)]
    pub onnx: Option<String>,
    /// onnxruntime version.
    #[serde(default)]
    pub onnxruntime: Option<String>,
    /// benchmate version.
    #[serde(default)]
    pub benchmate: Option<String>,
}

/// The `model` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEvent {
    /// `sha256(repr(model))[:8]`.
    pub model_hash: String,
    /// The class name.
    pub class: String,
    /// The module defining the class.
    #[serde(default)]
    pub module: Option<String>,
    /// Where the model was constructed.
    #[serde(default)]
    pub file: Option<String>,
    /// Line of `file`.
    #[serde(default)]
    pub line: Option<u32>,
    /// The variable holding it.
    #[serde(default)]
    pub name: Option<String>,
    /// Parameter count.
    #[serde(default)]
    pub parameters: u64,
    /// Bytes of the parameters.
    #[serde(default)]
    pub parameter_bytes: u64,
    /// 0 for a top-level model.
    #[serde(default)]
    pub depth: u32,
    /// The parent's model hash for a sub-module.
    #[serde(default)]
    pub parent_hash: Option<String>,
    /// Whether it was made by `torch.compile`.
    #[serde(default)]
    pub compiled: bool,
    /// `pytorch`, `keras`, or `onnx` for an ONNX file given as input.
    #[serde(default = "pytorch")]
    pub framework: String,
}

/// The framework of a `model` event that names none (a worker older than Keras support).
fn pytorch() -> String {
    "pytorch".into()
}

/// The `invocation` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvocationEvent {
    /// The model.
    pub model_hash: String,
    /// The invocation hash (MLAgility's "Hash").
    pub invocation_hash: String,
    /// The parent's invocation for a sub-module.
    #[serde(default)]
    pub parent_invocation_hash: Option<String>,
    /// Shape of each input.
    #[serde(default)]
    pub input_shapes: IndexMap<String, Vec<i64>>,
    /// dtype of each input.
    #[serde(default)]
    pub input_dtypes: IndexMap<String, String>,
    /// Whether it is to be built and benchmarked (the worker then waits for a reply).
    pub is_target: bool,
    /// sha256 over the model's repr and its weights: staleness of a build.
    pub weights_hash: String,
}

/// The `stage` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageEvent {
    /// The invocation built.
    pub invocation_hash: String,
    /// The stage name.
    pub stage: String,
    /// `ok` or `error`.
    pub status: String,
    /// Duration, seconds.
    #[serde(default)]
    pub seconds: f64,
    /// The file it wrote.
    #[serde(default)]
    pub output: Option<String>,
    /// One line, on error; on success, a note (which exporter made the file).
    #[serde(default)]
    pub message: Option<String>,
    /// The full traceback, on error.
    #[serde(default)]
    pub traceback: Option<String>,
}

/// The `onnx_info` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnnxInfo {
    /// The invocation.
    #[serde(default, skip_serializing)]
    pub invocation_hash: String,
    /// The ONNX file.
    pub file: String,
    /// Its IR version.
    #[serde(default)]
    pub ir_version: Option<u32>,
    /// Its opset.
    #[serde(default)]
    pub opset: Option<u32>,
    /// Its size.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Operator counts.
    #[serde(default)]
    pub ops: IndexMap<String, u64>,
    /// Input dimensions.
    #[serde(default)]
    pub inputs: IndexMap<String, Vec<i64>>,
}

/// The `benchmark` event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BenchmarkEvent {
    /// The invocation timed.
    pub invocation_hash: String,
    /// The runtime.
    pub runtime: String,
    /// `ok` or `error`.
    pub status: String,
    /// The runtime's version.
    #[serde(default)]
    pub runtime_version: Option<String>,
    /// The ORT execution provider or torch device.
    #[serde(default)]
    pub provider: Option<String>,
    /// First-call compile time of `torch-compiled`.
    #[serde(default)]
    pub compile_seconds: Option<f64>,
    /// Untimed calls made.
    #[serde(default)]
    pub warmup: Option<u32>,
    /// One time per timed call, nanoseconds.
    #[serde(default)]
    pub times_ns: Vec<u64>,
    /// One line, on error.
    #[serde(default)]
    pub message: Option<String>,
    /// The full traceback, on error.
    #[serde(default)]
    pub traceback: Option<String>,
}

/// One entry of the `calls` event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallCount {
    /// The invocation.
    pub invocation_hash: String,
    /// How many times it ran.
    pub executed: u64,
    /// Time spent in those calls, seconds.
    #[serde(default)]
    pub seconds: f64,
}

/// The `script_error` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptError {
    /// The exception type (`SyntaxError`, `SystemExit`, ...).
    pub kind: String,
    /// One line.
    pub message: String,
    /// The full traceback.
    #[serde(default)]
    pub traceback: Option<String>,
}

/// The `error` event: the worker could not do what was asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerFault {
    /// The model concerned (its calls could not be analysed, an ONNX file with dynamic
    /// dimensions); `None` when the whole input failed.
    #[serde(default)]
    pub model_hash: Option<String>,
    /// The invocation whose build it concerns (`invocation_done` follows).
    #[serde(default)]
    pub invocation_hash: Option<String>,
    /// One line.
    pub message: String,
    /// The full traceback, when there is one.
    #[serde(default)]
    pub traceback: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_the_protocol_document_parse() {
        let lines = [
            r#"{"event": "hello", "python": "3.11.9", "torch": "2.15.0", "onnx": null, "extra": 1}"#,
            r#"{"event": "model", "model_hash": "2a1e15ca", "class": "SmallModel", "module": "hello_world", "file": "/abs/hello_world.py", "line": 12, "name": "model", "parameters": 60, "parameter_bytes": 240, "depth": 0, "parent_hash": null, "compiled": false}"#,
            r#"{"event": "model", "model_hash": "5d2bd3a6", "class": "Sequential", "module": "keras.src.models.sequential", "file": "/abs/keras_mlp.py", "line": 20, "name": "model", "parameters": 78, "parameter_bytes": 312, "depth": 0, "parent_hash": null, "compiled": false, "framework": "keras"}"#,
            r#"{"event": "invocation", "model_hash": "2a1e15ca", "invocation_hash": "24adc42f", "parent_invocation_hash": null, "input_shapes": {"x": [11]}, "input_dtypes": {"x": "float32"}, "is_target": true, "weights_hash": "ab"}"#,
            r#"{"event": "stage", "invocation_hash": "24adc42f", "stage": "export", "status": "ok", "seconds": 0.18, "output": "/c/a.onnx", "message": null, "traceback": null}"#,
            r#"{"event": "onnx_info", "invocation_hash": "24adc42f", "file": "a.onnx", "ir_version": 8, "opset": 17, "size_bytes": 1234, "ops": {"Gemm": 1}, "inputs": {"x": [11]}}"#,
            r#"{"event": "benchmark", "invocation_hash": "24adc42f", "runtime": "ort", "status": "ok", "runtime_version": "1.31.1", "provider": "CPUExecutionProvider", "compile_seconds": null, "warmup": 10, "times_ns": [12000, 11800], "message": null, "traceback": null}"#,
            r#"{"event": "invocation_done", "invocation_hash": "24adc42f"}"#,
            r#"{"event": "calls", "invocations": [{"invocation_hash": "24adc42f", "executed": 2, "seconds": 0.0004}]}"#,
            r#"{"event": "script_error", "kind": "SyntaxError", "message": "bad", "traceback": "..."}"#,
            r#"{"event": "error", "message": "freeze the model's input shapes"}"#,
            r#"{"event": "done"}"#,
        ];
        for line in lines {
            serde_json::from_str::<Event>(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert!(serde_json::from_str::<Event>(r#"{"event": "surprise"}"#).is_err());
        let frameworks: Vec<String> = lines[1..3]
            .iter()
            .map(|line| match serde_json::from_str::<Event>(line).unwrap() {
                Event::Model(model) => model.framework,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(frameworks, ["pytorch", "keras"], "pytorch when not said");
    }

    #[test]
    fn requests_and_replies_are_the_documented_json() {
        let request = Request::Script {
            script: "/abs/hello.py".into(),
            script_args: vec!["--batch".into(), "2".into()],
            targets: vec!["24adc42f".into()],
            max_depth: 0,
            keras: true,
            analyze_only: false,
        };
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"request":"script","script":"/abs/hello.py","script_args":["--batch","2"],"targets":["24adc42f"],"max_depth":0,"keras":true,"analyze_only":false}"#
        );
        assert_eq!(
            serde_json::to_string(&Reply::skip()).unwrap(),
            r#"{"skip":true}"#
        );
        let reply = Reply::Build(BuildRequest {
            build_dir: "/c/b".into(),
            build_name: "b".into(),
            stages: vec!["export".into()],
            opset: 17,
            exporter: "torchscript".into(),
            benchmarks: vec![BenchmarkRequest {
                runtime: "torch-eager".into(),
                onnx: None,
            }],
            warmup: 10,
            iterations: 100,
            device: "x86".into(),
        });
        assert_eq!(
            serde_json::to_string(&reply).unwrap(),
            r#"{"build_dir":"/c/b","build_name":"b","stages":["export"],"opset":17,"exporter":"torchscript","benchmarks":[{"runtime":"torch-eager"}],"warmup":10,"iterations":100,"device":"x86"}"#
        );
    }
}
