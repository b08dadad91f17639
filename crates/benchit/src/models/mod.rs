//! Model benchmarking: discover the models of Python scripts (or take ONNX files), build them
//! (ONNX export, ORT optimisation, optional fp16) into a cache, and time them on each runtime.
//!
//! The Python worker (`python -m benchmate.benchit models`) runs the user's code; this module
//! owns everything else: inputs and labels, the build cache and its `state.yaml`, staleness and
//! rebuild policies, one worker per input with a timeout, statistics, and typed results. It
//! never prints: progress goes to an [`Observer`].
//!
//! ```no_run
//! use benchit::models::{BenchmarkOptions, Runtime, Quiet, benchmark_script};
//! use benchit::worker::WorkerCommand;
//!
//! let mut options = BenchmarkOptions::new("/tmp/benchit-cache");
//! options.runtimes = vec![Runtime::Ort, Runtime::TorchEager];
//! let worker = WorkerCommand::parse("python3 -m benchmate.benchit")?;
//! let result = benchmark_script("benchmarks/benchit/mlp.py", &options, &worker, &mut Quiet)?;
//! for model in &result.models {
//!     println!("{} {}", model.model.class, model.invocations.len());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cache;
mod decision;
pub mod framework;
pub mod input;
pub mod options;
pub mod protocol;
pub mod report;
pub mod results;
mod run;
pub mod staleness;
pub mod state;
pub mod stats;

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::Interrupt;

pub use cache::{Cache, CacheError};
pub use framework::Framework;
pub use input::{Input, InputError, InputKind, scripts_in};
pub use milabench_stats::Interval;
pub use options::{Action, BenchmarkOptions, Device, Exporter, RebuildPolicy, Runtime};
pub use results::{
    BenchmarkReport, BuildResult, Failure, FailureKind, InputResult, InputStatus, InvocationResult,
    ModelResult, RuntimeResult, StageResult,
};
pub use run::{Observer, Quiet};
pub use stats::Statistics;

use milabench_exec::ExitCode;

use crate::worker::WorkerCommand;

/// Why a benchmark could not start.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// An input cannot be used.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The options contradict each other or the inputs.
    #[error("{0}")]
    Options(String),
    /// The cache cannot be used.
    #[error(transparent)]
    Cache(#[from] CacheError),
}

impl ModelsError {
    /// The exit code a command that ends on this error deserves: inputs and options are bad
    /// input; the cache has its own classes.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ModelsError::Input(_) | ModelsError::Options(_) => ExitCode::BadInput,
            ModelsError::Cache(e) => e.exit_code(),
        }
    }
}

/// Parses `inputs` (relative to `cwd`) and checks the options against them: what
/// [`benchmark`] refuses before anything runs, for callers that want to know before preparing
/// the worker.
pub fn check(
    inputs: &[String],
    cwd: &Utf8Path,
    options: &BenchmarkOptions,
) -> Result<Vec<Input>, ModelsError> {
    let inputs = inputs
        .iter()
        .map(|arg| Input::parse(arg, cwd))
        .collect::<Result<Vec<_>, _>>()?;
    validate(options, &inputs)?;
    Ok(inputs)
}

/// Checks the options against the inputs.
fn validate(options: &BenchmarkOptions, inputs: &[Input]) -> Result<(), ModelsError> {
    let bad = |message: String| Err(ModelsError::Options(message));
    if options.runtimes.is_empty() {
        return bad("no runtime given; name at least one with --runtime (ort, torch-eager, torch-compiled, trt)".into());
    }
    if options.iterations == 0 {
        return bad("--iterations must be at least 1".into());
    }
    if options.batch_size == 0 {
        return bad("--batch-size must be at least 1".into());
    }
    if options.device == Device::X86
        && let Some(r) = options.runtimes.iter().find(|r| r.needs_gpu())
    {
        return bad(format!(
            "runtime {r} runs on an NVIDIA GPU; add --device nvidia, or use ort on x86"
        ));
    }
    if options.action == Action::Benchmark
        && let Some(input) = inputs.iter().find(|i| i.kind == InputKind::Onnx)
        && let Some(r) = options.runtimes.iter().find(|r| !r.needs_onnx())
    {
        return bad(format!(
            "{} is an ONNX file and runtime {r} needs the torch model; use --runtime ort for ONNX files, or benchmark the script that makes the model",
            input.arg
        ));
    }
    Ok(())
}

/// Benchmarks `inputs` (`script.py`, `script.py::HASH,HASH`, `model.onnx`; relative to `cwd`)
/// one worker each, in order. Ctrl-C through `interrupt` stops the current worker and skips the
/// rest (`interrupted` in the report).
pub fn benchmark(
    inputs: &[String],
    cwd: &Utf8Path,
    options: &BenchmarkOptions,
    worker: &WorkerCommand,
    interrupt: &Interrupt,
    observer: &mut dyn Observer,
) -> Result<BenchmarkReport, ModelsError> {
    let inputs = check(inputs, cwd, options)?;
    let connection = run::Connection::Spawn(worker);
    run_inputs(&inputs, cwd, options, connection, interrupt, observer)
}

/// Builds and times the one model that the Python program which started this process holds
/// (benchmate's `benchmark_model`), speaking the worker protocol over this process's stdin and
/// stdout: nothing else may write to stdout meanwhile. Its builds are filed under `name` in the
/// cache, with the same staleness rules and statistics as a script's.
pub fn benchmark_attached(
    name: &str,
    options: &BenchmarkOptions,
    interrupt: &Interrupt,
    observer: &mut dyn Observer,
) -> Result<InputResult, ModelsError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        return Err(ModelsError::Options(format!(
            "`{name}` cannot name builds; use letters, digits, `_`, `-` and `.`"
        )));
    }
    let cwd = current_dir()?;
    let input = Input {
        arg: name.to_string(),
        path: cwd.join(name),
        kind: InputKind::Model,
        targets: Vec::new(),
        script: Default::default(),
    };
    validate(options, std::slice::from_ref(&input))?;
    let report = run_inputs(
        std::slice::from_ref(&input),
        &cwd,
        options,
        run::Connection::Stdio,
        interrupt,
        observer,
    )?;
    Ok(only_input(report))
}

/// The result of the one input of `report`.
fn only_input(report: BenchmarkReport) -> InputResult {
    report
        .inputs
        .into_iter()
        .next()
        .expect("one input gives one result")
}

/// Runs `inputs` one worker each, in order (see [`benchmark`]).
fn run_inputs(
    inputs: &[Input],
    cwd: &Utf8Path,
    options: &BenchmarkOptions,
    connection: run::Connection<'_>,
    interrupt: &Interrupt,
    observer: &mut dyn Observer,
) -> Result<BenchmarkReport, ModelsError> {
    let mut runtimes: Vec<Runtime> = Vec::new();
    for runtime in &options.runtimes {
        if !runtimes.contains(runtime) {
            runtimes.push(*runtime);
        }
    }
    let options = BenchmarkOptions {
        runtimes,
        ..options.clone()
    };
    let cache = Cache::create(&options.cache_dir)?;
    let cx = run::Context {
        options: &options,
        cache: &cache,
        connection,
        interrupt,
        cwd,
        device_problem: run::device_problem(options.device, &options.runtimes),
        uid: format!("{}-{}", std::process::id(), state::now()),
    };
    let mut report = BenchmarkReport::default();
    // A worker that cannot start for one input cannot start for the next ones either.
    let mut cannot_start = false;
    for (index, input) in inputs.iter().enumerate() {
        if interrupt.is_set() || cannot_start {
            report.not_run.push(input.arg.clone());
            continue;
        }
        observer.on_input_start(input, index, inputs.len());
        let result = run::run_input(&cx, input, observer);
        observer.on_input_end(&result);
        cannot_start = result
            .failure
            .as_ref()
            .is_some_and(|f| f.kind == FailureKind::Start);
        report.inputs.push(result);
    }
    report.interrupted = interrupt.is_set();
    Ok(report)
}

/// The current folder, for relative inputs.
fn current_dir() -> Result<Utf8PathBuf, ModelsError> {
    std::env::current_dir()
        .ok()
        .and_then(|d| Utf8PathBuf::from_path_buf(d).ok())
        .ok_or_else(|| ModelsError::Options("the current folder is not a UTF-8 path".into()))
}

/// Benchmarks every model of the Python script `script` (optionally `script.py::HASH,HASH`).
pub fn benchmark_script(
    script: impl AsRef<str>,
    options: &BenchmarkOptions,
    worker: &WorkerCommand,
    observer: &mut dyn Observer,
) -> Result<InputResult, ModelsError> {
    one(
        script.as_ref(),
        InputKind::Script,
        options,
        worker,
        observer,
    )
}

/// Benchmarks one model: an ONNX file, or the invocation `script.py::HASH` of a script.
pub fn benchmark_model(
    model: impl AsRef<str>,
    options: &BenchmarkOptions,
    worker: &WorkerCommand,
    observer: &mut dyn Observer,
) -> Result<InputResult, ModelsError> {
    let model = model.as_ref();
    let kind = if model.contains("::") {
        InputKind::Script
    } else {
        InputKind::Onnx
    };
    if kind == InputKind::Script && model.split_once("::").is_some_and(|(_, t)| t.contains(',')) {
        return Err(ModelsError::Options(format!(
            "`{model}` names several invocations; benchmark_model takes one (`script.py::HASH`), benchmark_script takes several"
        )));
    }
    one(model, kind, options, worker, observer)
}

fn one(
    arg: &str,
    kind: InputKind,
    options: &BenchmarkOptions,
    worker: &WorkerCommand,
    observer: &mut dyn Observer,
) -> Result<InputResult, ModelsError> {
    let cwd = current_dir()?;
    let input = Input::parse(arg, &cwd)?;
    if input.kind != kind {
        return Err(ModelsError::Options(match kind {
            InputKind::Script => format!("`{arg}` is not a Python script (.py)"),
            InputKind::Onnx | InputKind::Model => {
                format!("`{arg}` is neither an ONNX file nor `script.py::HASH`")
            }
        }));
    }
    let report = benchmark(
        &[arg.to_string()],
        &cwd,
        options,
        worker,
        &Interrupt::new(),
        observer,
    )?;
    Ok(only_input(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake worker of the CLI tests and one of its scripts.
    fn fixture(name: &str) -> String {
        format!(
            "{}/../../tests/fixtures/benchit/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[derive(Default)]
    struct Recorder {
        starts: usize,
        progress: usize,
        ends: usize,
    }

    impl Observer for Recorder {
        fn on_input_start(&mut self, _: &Input, _: usize, _: usize) {
            self.starts += 1;
        }
        fn on_progress(&mut self, _: &InputResult) {
            self.progress += 1;
        }
        fn on_input_end(&mut self, _: &InputResult) {
            self.ends += 1;
        }
    }

    #[test]
    fn the_library_returns_typed_results_and_reports_progress() {
        let cache = tempfile::tempdir().unwrap();
        let mut options = BenchmarkOptions::new(Utf8Path::from_path(cache.path()).unwrap());
        options.runtimes = vec![Runtime::Ort, Runtime::TorchEager];
        options.iterations = 3;
        let worker =
            WorkerCommand::parse(&format!("python3 {}", fixture("fake_models_worker.py"))).unwrap();
        let mut recorder = Recorder::default();
        let result =
            benchmark_script(fixture("two_models.py"), &options, &worker, &mut recorder).unwrap();
        assert!(result.success(), "{result:?}");
        assert_eq!(result.models.len(), 2);
        let build = result.models[0].invocations[0].build.as_ref().unwrap();
        assert_eq!(build.build_name, "two_models_tester_24adc42f");
        let eager = build.runtimes[1].statistics.as_ref().unwrap();
        assert_eq!((eager.iterations, eager.median_ms), (3, 2.001));
        assert_eq!((recorder.starts, recorder.ends), (1, 1));
        assert!(recorder.progress > 5);

        let one = benchmark_model(
            format!("{}::5b2e7d10", fixture("two_models.py")),
            &options,
            &worker,
            &mut Quiet,
        )
        .unwrap();
        let built: Vec<&str> = one
            .models
            .iter()
            .flat_map(|m| &m.invocations)
            .filter_map(|i| i.build.as_ref().map(|b| b.build_name.as_str()))
            .collect();
        assert_eq!(built, ["two_models_tester_5b2e7d10"]);
        let err = benchmark_model(fixture("two_models.py"), &options, &worker, &mut Quiet)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is neither an ONNX file nor `script.py::HASH`"),
            "{err}"
        );
    }

    fn inputs(dir: &Utf8Path, args: &[&str]) -> Vec<Input> {
        args.iter().map(|a| Input::parse(a, dir).unwrap()).collect()
    }

    #[test]
    fn contradictory_options_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = Utf8Path::from_path(dir.path()).unwrap();
        fs_err::write(cwd.join("m.onnx"), "").unwrap();
        fs_err::write(cwd.join("s.py"), "").unwrap();
        let mut options = BenchmarkOptions::new("/c");
        validate(&options, &inputs(cwd, &["s.py", "m.onnx"])).unwrap();
        options.runtimes = vec![Runtime::Ort, Runtime::TorchEager];
        let err = validate(&options, &inputs(cwd, &["m.onnx"])).unwrap_err();
        assert!(
            err.to_string()
                .contains("m.onnx is an ONNX file and runtime torch-eager")
        );
        options.runtimes = vec![Runtime::Trt];
        let err = validate(&options, &inputs(cwd, &["s.py"])).unwrap_err();
        assert!(err.to_string().contains("add --device nvidia"));
        options.device = Device::Nvidia;
        validate(&options, &inputs(cwd, &["s.py"])).unwrap();
        options.iterations = 0;
        assert!(validate(&options, &[]).is_err());
    }
}
