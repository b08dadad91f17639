//! How a failed command is shown to a person and which exit code it gets.

use milabench::ExitCode;

/// Prints `err` with its causes on stderr and returns the exit code it deserves.
#[allow(clippy::print_stderr)]
pub fn report(err: &anyhow::Error) -> ExitCode {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    match err.downcast_ref::<milabench::env::EnvError>() {
        Some(e) if e.is_interrupted() => ExitCode::Interrupted,
        Some(e) if !e.is_bad_input() => ExitCode::BenchmarkFailures,
        _ => ExitCode::BadInput,
    }
}
