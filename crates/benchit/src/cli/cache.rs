//! `benchit cache`: list, inspect, delete and report builds. (Being built: issue 8.)

use std::process::ExitCode;

use clap::Subcommand;

/// The `benchit cache` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum CacheCommand {
    /// List the builds in the cache.
    List,
}

/// Runs a `benchit cache` command.
pub(crate) fn run(command: CacheCommand) -> ExitCode {
    match command {
        CacheCommand::List => crate::cli::not_yet("the build cache", &[]),
    }
}
