//! `cargo xtask bench`: performance figures, each measured against a baseline in the same run.

use clap::Args;

mod benchit;
mod exec;
mod install;
mod multinode;
mod ops;
mod report;
mod resolve;
mod store;
mod suite;
mod system;

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
    /// Only these benchmarks of the CPU suite (comma-separated names) in the suite figure: its
    /// run and rate comparison cover just them [default: all].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub suite_select: Vec<String>,
    /// Measure only these figures (comma-separated) [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Figure>,
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
    /// benchit's discovery overhead and latency honesty.
    Benchit,
    /// benchit ops: expansion speed and timing overhead.
    Ops,
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
        Figure::Benchit,
        Figure::Ops,
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
            Figure::Exec => exec::run()?,
            Figure::Suite => suite::run(args.suite_rounds, &args.suite_select)?,
            Figure::Multinode => multinode::run()?,
            Figure::Benchit => benchit::run(python)?,
            Figure::Ops => ops::run(python)?,
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
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            package,
            "--example",
            example,
            "--",
        ])
        .args(args)
        .output()
        .with_context(|| format!("could not start cargo for the {what} measurement"))?;
    if !output.status.success() {
        bail!(
            "the {what} measurement failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("measurement output is not UTF-8")
}
