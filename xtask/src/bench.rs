//! `cargo xtask bench`: performance figures, each measured against a baseline in the same run.

use clap::Args;

/// Options of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {}

/// Runs every benchmark and prints the table.
pub fn run(_args: &BenchArgs) -> anyhow::Result<()> {
    Ok(())
}
