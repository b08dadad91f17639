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

use clap::{CommandFactory as _, FromArgMatches as _};

pub use args::Cli;

/// Parses the command line (ours, or the Python milabench's spellings of the same flags), runs
/// the command and returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let matches = args::with_python_spellings(Cli::command()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if cli.global.verbose {
        debug_trail();
    }
    // A run of hundreds of processes needs more descriptors than a login's default soft limit;
    // where the hard limit is as low, the spawn that runs out says so.
    if let Err(e) = milabench::observe::raise_open_file_limit() {
        tracing::debug!("the open-file limit could not be raised: {e}");
    }
    match commands::dispatch(cli) {
        Ok(code) => code.into(),
        // The reader of stdout went away (`| head`): a quiet end, once for every command.
        Err(err) if milabench_vocab::is_broken_pipe(&err) => milabench::ExitCode::Success.into(),
        Err(err) => errors::report(&err).into(),
    }
}

/// Sends the `tracing` events of debug level and above (the facade's trail of what it
/// resolved, planned and started) to stderr, one line each (`-v`).
fn debug_trail() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::DEBUG)
        .without_time()
        .with_target(false)
        .init();
}
