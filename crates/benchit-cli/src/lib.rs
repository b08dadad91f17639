//! Command-line interface of `benchit`: clap definitions, one handler per command, the live
//! status display and the printing of results. The handlers print; the `benchit` library they
//! call never does. Exit codes are `milabench-vocab`'s [`ExitCode`], shared with `milabench`.

mod cache;
mod errors;
mod models;
mod ops;

use std::ffi::OsString;

use clap::{Parser, Subcommand};
use milabench_exec::{ExitCode, WatchdogCommand, error_report};

use crate::errors::BenchitError;

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
// Each command's help (about, long_about, examples) is on its arguments struct: a doc comment
// here would replace it.
enum Command {
    Benchmark(models::BenchmarkArgs),
    Attach(models::AttachArgs),
    Ops(ops::OpsArgs),
    Cache(cache::CacheArgs),
    /// Internal: the watchdog started beside each worker; it kills the worker's process tree
    /// should benchit die (reads `milabench-exec`'s watch lines on stdin).
    #[command(name = WATCHDOG_COMMAND, hide = true)]
    Watchdog,
}

/// The hidden command that serves as the workers' watchdog.
const WATCHDOG_COMMAND: &str = "__watchdog";

/// Names the first argument may take without being a script.
const COMMANDS: [&str; 6] = [
    "benchmark",
    "attach",
    "ops",
    "cache",
    "help",
    WATCHDOG_COMMAND,
];

/// How a command prints its results on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// For people: a table.
    Text,
    /// One JSON document.
    Json,
}

/// Inserts `benchmark` when the first argument is an input file (`x.py`, `x.onnx`,
/// `x.py::hash`) or an option of `benchmark` (`--all`), so that `benchit x.py` works like
/// `benchit benchmark x.py`.
fn with_default_command(mut args: Vec<OsString>) -> Vec<OsString> {
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let benchmark_option = first.starts_with('-') && !TOP_LEVEL_OPTIONS.contains(&first);
        let input =
            !first.starts_with('-') && !COMMANDS.contains(&first) && looks_like_input(first);
        if benchmark_option || input {
            args.insert(1, OsString::from("benchmark"));
        }
    }
    args
}

/// The options of `benchit` itself; any other option first belongs to `benchmark`.
const TOP_LEVEL_OPTIONS: [&str; 4] = ["-h", "--help", "-V", "--version"];

/// Whether `arg` names a file (it has a `.` or a `/`): then `benchmark` checks it is a script or
/// an ONNX file, with a message that says so.
fn looks_like_input(arg: &str) -> bool {
    arg.contains('.') || arg.contains('/')
}

/// Parses the command line and runs `benchit`; returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse_from(with_default_command(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Benchmark(args) => models::run(&args),
        Command::Attach(args) => models::attach(&args),
        Command::Ops(args) => ops::run(&args),
        Command::Cache(args) => cache::run(args),
        Command::Watchdog => {
            milabench_exec::serve_watchdog(std::io::stdin().lock());
            Ok(ExitCode::Success)
        }
    };
    exit(result).into()
}

/// The exit code of a command's result; an error is printed on stderr first, with each of its
/// causes once.
#[allow(clippy::print_stderr)]
fn exit(result: errors::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        // The reader of stdout went away (`| head`): a quiet end, once for every command.
        Err(err) if milabench_exec::is_broken_pipe(&err) => ExitCode::Success,
        Err(err) => {
            eprintln!("{}", error_report(&err));
            err.exit_code()
        }
    }
}

/// This program's hidden watchdog command, started beside each worker.
fn watchdog() -> errors::Result<WatchdogCommand> {
    WatchdogCommand::this_program(vec![WATCHDOG_COMMAND.into()]).map_err(|e| {
        BenchitError::from(e)
            .context("cannot find the benchit program to start the workers' watchdog")
    })
}

/// The worker command, watched by this program's watchdog: `BENCHIT_WORKER`, or the managed
/// environment for `arch` (`cpu`, `cuda`), built on first use with its progress on stderr; the
/// Keras environment (TensorFlow too) when `keras_reason` says why it is needed.
#[allow(clippy::print_stderr)]
fn worker_command(
    arch: &str,
    keras_reason: Option<&str>,
    with: &[String],
) -> errors::Result<benchit::env::PreparedWorker> {
    use benchit::env::{EnvSettings, install_log, prepare_worker};
    let settings = EnvSettings {
        keras: keras_reason.is_some(),
        with: with.to_vec(),
        ..EnvSettings::from_env(arch)?
    };
    let mut last_stage = None;
    let prepared = prepare_worker(&settings, &mut |event| {
        if let milabench_env::Event::Stage { group, stage } = event
            && last_stage != Some(stage)
        {
            if last_stage.is_none() {
                if !with.is_empty() {
                    eprintln!(
                        "setting up a benchit environment with {} in {} (once for these packages: benchit's packages plus them; uv links what they share from its cache)",
                        with.join(", "),
                        settings.home
                    );
                }
                match keras_reason {
                    None if !with.is_empty() => {}
                    None => eprintln!(
                        "setting up the benchit Python environment in {} (first use, or its requirements changed; this takes minutes)",
                        settings.home
                    ),
                    Some(reason) => eprintln!(
                        "setting up benchit's Keras environment in {} ({reason}): benchit's packages plus TensorFlow's CPU wheel and tf2onnx, about 1.5 GB more on disk (uv links torch from its cache); this takes minutes, once",
                        settings.home
                    ),
                }
            }
            last_stage = Some(stage);
            eprintln!("  {group}: {}", stage.describe());
        }
    });
    let command = prepared.map_err(|err| {
        BenchitError::from(err).context(format!(
            "the benchit Python environment is not ready; the install log is {}",
            install_log(&settings.home, &settings.group_name())
        ))
    })?;
    Ok(command.with_watchdog(watchdog()?))
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
    fn an_option_of_benchmark_first_means_benchmark() {
        assert_eq!(
            argv(&["benchit", "--all", "--search-dir", "models"]),
            ["benchit", "benchmark", "--all", "--search-dir", "models"]
        );
        assert_eq!(
            argv(&["benchit", "--runtime", "ort", "mlp.py"]),
            ["benchit", "benchmark", "--runtime", "ort", "mlp.py"]
        );
    }

    #[test]
    fn commands_and_options_are_left_alone() {
        assert_eq!(
            argv(&["benchit", "ops", "-c", "a.json"]),
            ["benchit", "ops", "-c", "a.json"]
        );
        assert_eq!(argv(&["benchit", "--help"]), ["benchit", "--help"]);
        assert_eq!(argv(&["benchit", "-V"]), ["benchit", "-V"]);
        assert_eq!(argv(&["benchit", "cach"]), ["benchit", "cach"]);
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
