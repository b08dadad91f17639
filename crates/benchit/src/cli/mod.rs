//! Command-line entry point of `benchit`: argument parsing and the handlers of each command.
//! The handlers print; the library modules they call never do.

mod cache;
mod models;
mod ops;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Benchmark the PyTorch models a Python script uses on several runtimes, or operator workloads
/// described in PARAM-style JSON configs.
///
/// `benchit SCRIPT.py ...` is short for `benchit benchmark SCRIPT.py ...`.
#[derive(Debug, Parser)]
#[command(name = "benchit", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Discover the models of Python scripts (or take .onnx files), build them, and time them on
    /// each runtime.
    Benchmark(models::BenchmarkArgs),
    /// Run operator microbenchmarks from a PARAM-style JSON config.
    Ops(ops::OpsArgs),
    /// Inspect and manage the build cache.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
}

/// Names the first argument may take without being a script.
const COMMANDS: [&str; 4] = ["benchmark", "ops", "cache", "help"];

/// Inserts `benchmark` when the first argument is an input file (`x.py`, `x.onnx`,
/// `x.py::hash`), so that `benchit x.py` works like `benchit benchmark x.py`.
fn with_default_command(mut args: Vec<OsString>) -> Vec<OsString> {
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let is_option = first.starts_with('-');
        if !is_option && !COMMANDS.contains(&first) && looks_like_input(first) {
            args.insert(1, OsString::from("benchmark"));
        }
    }
    args
}

/// Whether `arg` names a script or an ONNX file (the part before `::`).
fn looks_like_input(arg: &str) -> bool {
    let file = arg.split("::").next().unwrap_or(arg).to_ascii_lowercase();
    file.ends_with(".py") || file.ends_with(".onnx")
}

/// Parses the command line and runs `benchit`; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse_from(with_default_command(std::env::args_os().collect()));
    match cli.command {
        Command::Benchmark(args) => models::run(args),
        Command::Ops(args) => ops::run(args),
        Command::Cache(command) => cache::run(command),
    }
}

/// Says that `what` is not built yet and exits with status 2 (temporary, while the commands are
/// being written).
#[allow(clippy::print_stderr)]
fn not_yet(what: &str, _inputs: &[String]) -> ExitCode {
    eprintln!("error: benchit {what} is not available in this build yet.");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        with_default_command(words.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect()
    }

    #[test]
    fn a_script_first_means_benchmark() {
        assert_eq!(
            argv(&["benchit", "mlp.py"]),
            ["benchit", "benchmark", "mlp.py"]
        );
        assert_eq!(
            argv(&["benchit", "M.ONNX", "--runtime", "ort"]),
            ["benchit", "benchmark", "M.ONNX", "--runtime", "ort"]
        );
        assert_eq!(
            argv(&["benchit", "mlp.py::24adc42f"]),
            ["benchit", "benchmark", "mlp.py::24adc42f"]
        );
    }

    #[test]
    fn commands_and_options_are_left_alone() {
        assert_eq!(
            argv(&["benchit", "ops", "-c", "a.json"]),
            ["benchit", "ops", "-c", "a.json"]
        );
        assert_eq!(argv(&["benchit", "--help"]), ["benchit", "--help"]);
        assert_eq!(argv(&["benchit", "cach"]), ["benchit", "cach"]);
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
