//! `benchit benchmark`: discover, build and time the models of scripts (or ONNX files), with a
//! live status tree on stderr and a summary (or one JSON document) on stdout.
//!
//! This file holds the flags of `benchmark` and `attach` and their handlers; `status` draws the
//! live tree, `summary` prints what was measured.

use std::io::Write;
use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use milabench_exec::{ExitCode, Interrupt};

use benchit::models::cache::{CACHE_VAR, default_cache_dir};
use benchit::models::input::parse_label_filter;
use benchit::models::scripts_in;
use benchit::models::{
    Action, BenchmarkOptions, Device, Exporter, Framework, RebuildPolicy, Runtime,
};

use crate::{Format, worker_command};

mod status;
mod summary;

use status::StatusDisplay;
use summary::print_results;

/// Set to `1` to see full Python tracebacks under failures.
pub(crate) const TRACEBACK_VAR: &str = "BENCHIT_TRACEBACK";

/// Arguments of `benchit benchmark`.
#[derive(Debug, Args)]
#[command(
    about = "Discover the models of Python scripts (or take .onnx files), build them and time them on each runtime",
    long_about = "Discover the models of Python scripts (or take .onnx files), build them and time \
        them on each runtime.\n\n\
        Each input runs in its own Python worker. A script runs as `python script.py` runs it (its \
        `if __name__ == \"__main__\":` block runs too); every torch.nn.Module it calls is \
        discovered (and every Keras model, in scripts that import tensorflow or keras: see \
        --framework), and each unique (model, input shapes) pair, an invocation, is built: ONNX \
        export, ONNX Runtime optimisation, fp16 conversion with --fp16. Every runtime asked for \
        is then timed on the model it claims: --warmup untimed calls, then --iterations timed \
        ones (torch-compiled's compile time is reported apart). Latencies are reported as mean, \
        median, p90, p99, standard deviation, min and a 95% confidence interval of the mean; \
        throughput is --batch-size / mean.\n\n\
        Build cache: one folder per invocation, <cache>/<script>[_<author label>]_<hash>, with \
        state.yaml (what the build holds and how it was made), stats.yaml (the model and each \
        runtime's measurements), stage logs and onnx/. Worker logs (the script's own output) go \
        to <cache>/logs/<script>.log.\n\n\
        --rebuild if_needed (default) reuses a build unless the model's weights, the input \
        shapes or dtypes, the tool versions (benchit, torch, onnx, onnxruntime), the opset or \
        the exporter changed, or the build failed; `always` rebuilds every time; `never` reuses \
        a successful build even when stale (with a warning) and refuses an unreadable one. Only \
        missing stages run: a second call with the same options rebuilds nothing.\n\n\
        Failures stay with their model: a script error, a worker crash, or a worker running past \
        --timeout marks what was in progress as failed and the next input runs. \
        BENCHIT_TRACEBACK=1 shows full Python tracebacks. Ctrl-C stops the worker; no build is \
        left claiming success.\n\n\
        The worker runs in benchit's own Python environment (torch, onnx, onnxruntime, \
        benchmate), built on first use under $BENCHIT_HOME (default ~/.local/share/benchit); \
        BENCHIT_WORKER='python -m benchmate.benchit' uses an interpreter of yours instead.\n\n\
        Exit status: 0 everything measured, 1 some model or input failed, 2 bad input, \
        3 a file or folder the machine would not read or write (a full disk), 130 interrupted.",
    after_help = "Examples:\n  \
        benchit benchmarks/benchit/mlp.py --runtime ort torch-eager\n  \
        benchit mlp.py --analyze-only                 # list models and invocation hashes\n  \
        benchit mlp.py::24adc42f --iterations 500     # one invocation\n  \
        benchit model.onnx --fp16\n  \
        benchit mlp.py --script-args \"--batch 8\" --batch-size 8 --format json\n  \
        benchit resnet.py --with torchvision           # a package the script imports\n  \
        benchit --all --search-dir models/ --resume  # every script of a folder, each in its own worker\n  \
        benchit cache list"
)]
pub(crate) struct BenchmarkArgs {
    /// Python scripts (`script.py`, `script.py::HASH,HASH`) or ONNX files (`model.onnx`).
    #[arg(required_unless_present = "all", value_name = "INPUT")]
    inputs: Vec<String>,
    /// Every Python script of the search folder (not its sub-folders), in name order, each in
    /// its own worker; a failing script never stops the others. With --resume, scripts already
    /// attempted are skipped.
    #[arg(long, conflicts_with = "inputs")]
    all: bool,
    /// The folder relative inputs and --all are looked up in [default: the current folder].
    #[arg(long, value_name = "DIR")]
    search_dir: Option<Utf8PathBuf>,
    /// Discover the models only (no build, no timing).
    #[arg(long, conflicts_with = "build_only")]
    analyze_only: bool,
    /// Also analyse sub-modules down to this depth (PyTorch models only: Keras models are
    /// analysed at the top level alone, as in MLAgility).
    #[arg(long, default_value_t = 0, value_name = "D")]
    max_depth: u32,
    /// Which models to discover: auto finds Keras models too in scripts that import tensorflow
    /// or keras, pytorch never, keras in every script. Keras needs TensorFlow, installed into a
    /// second environment the first time (about 1.5 GB).
    #[arg(long, value_enum, default_value = "auto")]
    framework: Framework,
    /// Arguments for the scripts, split like a shell would (`--script-args "--batch 8"`).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    script_args: Option<String>,
    /// A package the scripts import that benchit's environment lacks (torchvision,
    /// transformers, timm...), as a pip requirement; repeat for several (`--with torchvision
    /// --with 'timm>=1.0'`). They are installed, once per set of packages, into an environment
    /// of their own: benchit's packages plus them, torch kept at benchit's version.
    #[arg(long = "with", value_name = "PACKAGE")]
    with: Vec<String>,
    /// Skip scripts the cache says were already attempted.
    #[arg(long)]
    resume: bool,
    /// Only scripts whose first line `# labels: key::v1,v2 ...` has, for each key given, one of
    /// the values given.
    #[arg(long, num_args = 1.., value_name = "KEY::VALUES")]
    labels: Vec<String>,
    #[command(flatten)]
    build: BuildArgs,
    /// Output format on stdout: text (one line per model and runtime) or json (typed results).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// How models are built and timed: the options `benchit benchmark` and `benchit attach` share.
#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The device the models run on.
    #[arg(long, value_enum, default_value = "x86")]
    device: Device,
    /// Runtimes to time; each one is measured. Default: ort.
    #[arg(long = "runtime", alias = "runtimes", value_enum, num_args = 1.., value_name = "RUNTIME")]
    runtimes: Vec<Runtime>,
    /// Timed calls per runtime.
    #[arg(long, default_value_t = 100, value_name = "N")]
    iterations: u32,
    /// Untimed calls before the timed ones.
    #[arg(long, default_value_t = 10, value_name = "N")]
    warmup: u32,
    /// Discover and build, do not time.
    #[arg(long)]
    build_only: bool,
    /// What to do with cached builds.
    #[arg(long, value_enum, default_value = "if_needed")]
    rebuild: RebuildPolicy,
    /// The build cache [default: ~/.cache/benchit].
    #[arg(long, env = CACHE_VAR, value_name = "DIR")]
    cache_dir: Option<Utf8PathBuf>,
    /// After each model, delete build artifacts (keep text, YAML and JSON files).
    #[arg(long)]
    lean_cache: bool,
    /// Seconds each input's worker may run (1 or more).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// ONNX opset of exports.
    #[arg(long, default_value_t = 17, value_name = "N")]
    opset: u32,
    /// Convert the optimised model to fp16; ONNX runtimes then run it.
    #[arg(long)]
    fp16: bool,
    /// How torch models become ONNX.
    #[arg(long, value_enum, default_value = "auto")]
    exporter: Exporter,
    /// Samples per call, to turn latency into throughput.
    #[arg(long, default_value_t = 1, value_name = "N")]
    batch_size: u32,
}

impl BuildArgs {
    /// The options these flags ask for, with the script-only ones at their defaults.
    fn options(&self) -> crate::errors::Result<BenchmarkOptions> {
        let cache_dir = match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => default_cache_dir()?,
        };
        let mut options = BenchmarkOptions::new(cache_dir);
        options.device = self.device;
        if !self.runtimes.is_empty() {
            options.runtimes = self.runtimes.clone();
        }
        options.iterations = self.iterations;
        options.warmup = self.warmup;
        if self.build_only {
            options.action = Action::Build;
        }
        options.rebuild = self.rebuild;
        options.lean_cache = self.lean_cache;
        options.timeout = Duration::from_secs(self.timeout);
        options.opset = self.opset;
        options.fp16 = self.fp16;
        options.exporter = self.exporter;
        options.batch_size = self.batch_size;
        Ok(options)
    }
}

impl BenchmarkArgs {
    /// The inputs as paths from `cwd`: every script of the search folder with --all, else the
    /// inputs given, relative ones under --search-dir when it is given.
    fn input_args(&self, cwd: &Utf8Path) -> crate::errors::Result<Vec<String>> {
        let Some(dir) = &self.search_dir else {
            if self.all {
                return Ok(scripts_in(cwd)?.iter().map(|p| relative(p, cwd)).collect());
            }
            return Ok(self.inputs.clone());
        };
        if self.all {
            return Ok(scripts_in(&cwd.join(dir))?
                .iter()
                .map(|p| relative(p, cwd))
                .collect());
        }
        Ok(self
            .inputs
            .iter()
            .map(|input| {
                if Utf8Path::new(input).is_absolute() {
                    input.clone()
                } else {
                    dir.join(input).into_string()
                }
            })
            .collect())
    }

    /// The build options with the script ones of these flags.
    fn options(&self) -> crate::errors::Result<BenchmarkOptions> {
        let mut options = self.build.options()?;
        if self.analyze_only {
            options.action = Action::Analyze;
        }
        options.max_depth = self.max_depth;
        options.script_args = match &self.script_args {
            None => Vec::new(),
            Some(line) => shlex::split(line).ok_or_else(|| {
                crate::errors::usage!("--script-args `{line}` has unbalanced quotes")
            })?,
        };
        options.framework = self.framework;
        options.resume = self.resume;
        options.labels =
            parse_label_filter(&self.labels).map_err(crate::errors::BenchitError::Usage)?;
        Ok(options)
    }
}

/// Runs `benchit benchmark`; returns the exit status.
pub(crate) fn run(args: &BenchmarkArgs) -> crate::errors::Result<ExitCode> {
    let options = args.options()?;
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| Utf8PathBuf::from_path_buf(d).ok())
        .ok_or_else(|| crate::errors::usage!("the current folder is not a UTF-8 path"))?;
    let inputs = args.input_args(&cwd)?;
    // Bad input is reported before the Python environment is prepared.
    let checked = benchit::models::check(&inputs, &cwd, &options)?;
    let arch = match options.device {
        Device::X86 => "cpu",
        Device::Nvidia => "cuda",
    };
    // The handler comes first, so that Ctrl-C during the first build of the environment is
    // honoured even when SIGINT was inherited as ignored (the installer's processes get the
    // default action back: a caught signal is reset at exec).
    let interrupt = Interrupt::new();
    let ctrl_c = milabench_exec::install_ctrl_c(interrupt.clone())?;
    let worker = worker_command(
        arch,
        options.framework.keras_reason(&checked).as_deref(),
        &args.with,
    )?;
    let mut display = StatusDisplay::new(options.action);
    let report =
        benchit::models::benchmark(&inputs, &cwd, &options, &worker, &interrupt, &mut display);
    ctrl_c.uninstall();
    let report = report?;
    print_results(&report, args.format, options.action)?;
    Ok(if report.interrupted {
        ExitCode::Interrupted
    } else if report.success() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}

/// Arguments of `benchit attach`.
#[derive(Debug, Args)]
#[command(
    about = "Build and time the model of the Python program that started benchit (benchmate's benchmark_model)",
    long_about = "Build and time the model of the Python program that started benchit.\n\n\
        This is the other end of benchmate's `benchmark_model(model, inputs, ...)`: that \
        function starts `benchit attach` with pipes and acts as the worker, speaking the worker \
        protocol (docs/benchit-protocol.md) on this command's stdin and stdout. The model is \
        built, cached and timed exactly as a script's would be (same cache, staleness rules and \
        statistics); its builds are named <name>_<invocation hash>. Once the program says \
        `done`, the result (the JSON of one input of `benchit --format json`) is printed as one \
        line on stdout; progress goes to stderr. People do not run this command by hand.\n\n\
        Exit status: 0 everything measured, 1 a build or runtime failed, 2 bad input, \
        3 a file or folder the machine would not read or write (a full disk), 130 interrupted.",
    after_help = "From Python:\n  \
        from benchmate.benchit.api import benchmark_model\n  \
        result = benchmark_model(model, (torch.rand(8, 64),), runtimes=[\"ort\", \"torch-eager\"])\n  \
        print(result.runtimes[\"ort\"].mean_ms)"
)]
pub(crate) struct AttachArgs {
    /// The name the model's builds are filed under (letters, digits, `_`, `-`, `.`).
    #[arg(long, value_name = "NAME")]
    name: String,
    #[command(flatten)]
    build: BuildArgs,
}

/// Runs `benchit attach`; returns the exit status.
pub(crate) fn attach(args: &AttachArgs) -> crate::errors::Result<ExitCode> {
    let options = args.build.options()?;
    let interrupt = Interrupt::new();
    let ctrl_c = milabench_exec::install_ctrl_c(interrupt.clone())?;
    let mut display = StatusDisplay::new(options.action);
    let result =
        benchit::models::benchmark_attached(&args.name, &options, &interrupt, &mut display);
    ctrl_c.uninstall();
    let result = result?;
    let mut line = serde_json::to_string(&result)?;
    line.push('\n');
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    Ok(if interrupt.is_set() {
        ExitCode::Interrupted
    } else if result.success() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}

/// `path` relative to `cwd` when it is under it, else as it is.
fn relative(path: &Utf8Path, cwd: &Utf8Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's `as_str` (protocol, files) agrees with the command line and with serde.
    fn names_agree<T: clap::ValueEnum + serde::Serialize>(value: T, name: &str) {
        let possible = value.to_possible_value().expect("a visible value");
        assert_eq!(possible.get_name(), name);
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            format!("\"{name}\"")
        );
    }

    #[test]
    fn names_are_the_same_everywhere() {
        for runtime in [
            Runtime::Ort,
            Runtime::TorchEager,
            Runtime::TorchCompiled,
            Runtime::Trt,
        ] {
            names_agree(runtime, runtime.as_str());
        }
        for policy in [
            RebuildPolicy::IfNeeded,
            RebuildPolicy::Always,
            RebuildPolicy::Never,
        ] {
            names_agree(policy, policy.as_str());
        }
        for device in [Device::X86, Device::Nvidia] {
            names_agree(device, device.as_str());
        }
        for exporter in [Exporter::Auto, Exporter::Torchscript, Exporter::Dynamo] {
            names_agree(exporter, exporter.as_str());
        }
        for framework in [Framework::Auto, Framework::Pytorch, Framework::Keras] {
            names_agree(framework, framework.as_str());
        }
    }
}
