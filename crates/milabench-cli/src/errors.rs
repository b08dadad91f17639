//! How a failed command is shown to a person and which exit code it gets.

use milabench::ExitCode;
use milabench::env::EnvError;

/// Prints `err` with its causes on stderr and returns the exit code it deserves.
pub fn report(err: &anyhow::Error) -> ExitCode {
    show(err.as_ref());
    match err.downcast_ref::<EnvError>() {
        Some(e) => exit_code_of_env(e),
        None => ExitCode::BadInput,
    }
}

/// Prints `err` and each of its causes on stderr.
#[allow(clippy::print_stderr)]
pub fn show(err: &(dyn std::error::Error + 'static)) {
    eprintln!("error: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
}

/// The exit code of an environment that could not be built: interrupted, the machine's or the
/// installer's failure, or the user's input.
pub fn exit_code_of_env(err: &EnvError) -> ExitCode {
    if err.is_interrupted() {
        ExitCode::Interrupted
    } else if err.is_bad_input() {
        ExitCode::BadInput
    } else {
        ExitCode::BenchmarkFailures
    }
}
