//! `milabench resolve`: print the resolved suite.

use milabench::ExitCode;

use crate::args::{GlobalArgs, ResolveArgs};

/// Resolves the suite and prints it.
pub fn run(_global: &GlobalArgs, _args: &ResolveArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("resolve is being wired up")
}
