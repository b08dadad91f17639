//! `benchit ops`: operator microbenchmarks from JSON configs. (Being built: issue 9.)

use std::process::ExitCode;

use clap::Args;

/// Arguments of `benchit ops`.
#[derive(Debug, Args)]
pub(crate) struct OpsArgs {
    /// Path of the JSON config.
    #[arg(short, long)]
    config: String,
}

/// Runs `benchit ops`.
pub(crate) fn run(args: OpsArgs) -> ExitCode {
    crate::cli::not_yet("operator benchmarking", std::slice::from_ref(&args.config))
}
