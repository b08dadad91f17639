//! Command handlers: one module per command, each turning parsed arguments into a call to the
//! facade and a rendering of its result.

mod resolve;

use milabench::ExitCode;

use crate::args::{Cli, Command};

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Resolve(args) => resolve::run(&cli.global, &args),
    }
}
