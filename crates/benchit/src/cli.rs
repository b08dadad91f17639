//! Command-line entry point of `benchit`.

use clap::{Parser, Subcommand};

/// Benchmark the PyTorch models a Python script uses, or operator workloads from JSON configs.
///
/// Not available yet in this build: `benchit` is being ported. Both commands below exit with
/// status 2 and say so, rather than pretending to measure anything.
#[derive(Debug, Parser)]
#[command(name = "benchit", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Discover, export and benchmark the models of Python scripts.
    Models {
        /// Python scripts to analyse.
        scripts: Vec<String>,
    },
    /// Run operator microbenchmarks from a PARAM-style JSON config.
    Ops {
        /// Path of the JSON config.
        #[arg(short, long)]
        config: String,
    },
}

/// Parses the command line and runs `benchit`; returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let what = match cli.command {
        Command::Models { .. } => "model benchmarking",
        Command::Ops { .. } => "operator benchmarking",
    };
    let message = format!(
        "error: benchit {what} is not available in this build yet.\n\
         Use `milabench` for suite benchmarks in the meantime."
    );
    anstream_eprintln(&message);
    std::process::ExitCode::from(2)
}

#[allow(clippy::print_stderr)]
fn anstream_eprintln(message: &str) {
    eprintln!("{message}");
}
