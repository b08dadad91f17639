//! The `milabench` command line: clap definitions, settings resolution and one handler module
//! per command. Handlers call the `milabench` facade and decide what a person sees; the
//! libraries underneath never print.

mod args;
mod commands;
pub mod dash;
mod database;
mod errors;
mod live;
mod output;
mod publish;
mod render;
mod settings;
mod steps;
mod table;

use clap::Parser;

pub use args::Cli;

/// Parses the command line, runs the command and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code.into(),
        Err(err) => errors::report(&err).into(),
    }
}
