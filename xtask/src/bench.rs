//! `cargo xtask bench`: performance figures, each measured against a baseline in the same run.

use clap::Args;

mod exec;
mod report;
mod resolve;
mod system;

/// Options of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Size of the generated run folder for the ingestion figure, MiB.
    #[arg(long, default_value_t = 1024)]
    pub ingest_mb: usize,
}

/// Runs every benchmark and prints the table.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    resolve::run()?;
    report::run(args.ingest_mb)?;
    system::run()?;
    exec::run()?;
    Ok(())
}
