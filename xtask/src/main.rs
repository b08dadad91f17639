//! Developer flows for the milabench workspace, run as `cargo xtask <flow>`.
//!
//! - `ci`: formatting check, clippy with warnings denied, every test under nextest.
//! - `bench`: the performance table, each figure a ratio against a baseline measured in the
//!   same run.
//! - `e2e`: real install (torch from the package index), prepare, smoke run and report of the
//!   CPU suite; then benchit on an example script and an operator config (`--only` picks one).
//! - `examples`: the facade's embedding examples, built and run on a scratch suite (`ci` runs
//!   them too).
//! - `pg up|down`: a throwaway PostgreSQL server on a loopback port for the store's tests.
//! - `cluster up|down`: two network namespaces with real sshd, for multi-node runs and tests.
//! - `browser`: the HTML reports of the fixture run folders (and a generated 150-file run)
//!   checked in headless chromium, screenshots in `target/browser/` (`ci` runs it too).
//! - `dashboard up|down`: the real milabench dashboard server (and its PostgreSQL) on a loopback
//!   port, for the tests of `--publish`.
//! - `slurm up|down`: a one-node Slurm (munged, slurmctld, slurmd on loopback) for the Slurm tests.
//! - `gpu-rehearsal`: the GPU device script run from its pack on this CPU machine (`ci` runs it).

// A developer tool: printing progress and tables is its whole job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod ci;
mod dashboard;
mod e2e;
mod e2e_benchit;
mod e2e_containers;
mod e2e_sweep;
mod e2e_upstream;
mod e2e_vllm_cpu;
mod examples;
mod gpu_rehearsal;
mod pg;

use xtask::{cluster, slurm};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "Developer flows for the milabench workspace"
)]
struct Cli {
    #[command(subcommand)]
    flow: Flow,
}

#[derive(Debug, Subcommand)]
enum Flow {
    /// Format check, clippy (warnings denied) and all tests: what `.ci/run` executes.
    Ci,
    /// Measure the performance targets and print them as a table.
    Bench(Box<bench::BenchArgs>),
    /// Real install, prepare, smoke run and report of the CPU suite in a scratch base folder,
    /// then benchit (models and ops) with its managed environment.
    E2e(e2e::E2eArgs),
    /// Build and run the facade's embedding examples on a scratch suite.
    Examples,
    /// A throwaway PostgreSQL server (initdb in a temporary folder, loopback port) for the
    /// results store's tests: `up` prints its URL, `down` stops it and removes it.
    Pg(pg::PgArgs),
    /// The real milabench dashboard server (Flask over the `pg` harness's PostgreSQL, from the
    /// sources in tests/fixtures/dashboard) on a loopback port, for the tests of `--publish`:
    /// `up` prints its URL, `down` stops it and its PostgreSQL.
    Dashboard(dashboard::DashboardArgs),
    /// Two "nodes" on this machine (network namespaces, each with its own address and sshd),
    /// for multi-node runs and tests; needs root.
    Cluster(cluster::ClusterArgs),
    /// The HTML reports of the fixture run folders and of a generated 150-file run, loaded in
    /// headless chromium (installed with apt-get when missing): no console message, the JSON
    /// report's numbers in the table, a plot per benchmark; screenshots in target/browser/.
    Browser,
    /// A one-node Slurm on this machine (munged, slurmctld and slurmd on loopback), for the
    /// Slurm tests; needs root.
    Slurm(slurm::SlurmArgs),
    /// The GPU device run rehearsed on this CPU machine: the pack built as for the GPU
    /// (xtask/gpu/pack.sh) and checked against what the device tool carries, then
    /// xtask/gpu/run.sh from it over a stand-in for the image's Python, offline, on the CPU
    /// suite; every step must pass.
    GpuRehearsal,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().flow {
        Flow::Ci => ci::run(),
        Flow::Bench(args) => bench::run(&args),
        Flow::E2e(args) => e2e::run(&args),
        Flow::Examples => ci::examples(),
        Flow::Pg(args) => pg::run(&args),
        Flow::Dashboard(args) => dashboard::run(&args),
        Flow::Cluster(args) => cluster::run_cli(&args),
        Flow::Browser => ci::browser(),
        Flow::Slurm(args) => slurm::run_cli(&args),
        Flow::GpuRehearsal => gpu_rehearsal::run(),
    }
}
