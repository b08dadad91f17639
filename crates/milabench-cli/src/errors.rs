//! How a failed command is shown to a person and which exit code it gets.

use std::error::Error;

use milabench::ExitCode;
use milabench::scaffold::ScaffoldError;
use milabench_config::ConfigError;
use milabench_config::scaling::ScalingError;
use milabench_config::settings::SettingsError;
use milabench_config::sweep::SweepError;
use milabench_env::EnvError;
use milabench_exec::{ExecError, error_report};
use milabench_load::LoadError;
use milabench_metrics::MetricsError;
use milabench_report::ReportError;
use milabench_store::StoreError;
use milabench_store::publish::PublishError;
use milabench_validate::ReplayError;

/// Prints `err` with its causes on stderr and returns the exit code it deserves.
pub fn report(err: &anyhow::Error) -> ExitCode {
    show(err.as_ref());
    exit_code(err)
}

/// Prints `err` and each of its causes on stderr, each once.
#[allow(clippy::print_stderr)]
pub fn show(err: &(dyn Error + 'static)) {
    eprintln!("{}", error_report(err));
}

/// The exit code of the first error of `err`'s chain whose kind is known here; a message of
/// the command line's own (a flag's check) is bad input.
fn exit_code(err: &anyhow::Error) -> ExitCode {
    err.chain()
        .find_map(known_exit_code)
        .unwrap_or(ExitCode::BadInput)
}

/// The exit code of `err` when its type is one of the libraries' errors, or an I/O error (the
/// machine's failure).
fn known_exit_code(err: &(dyn Error + 'static)) -> Option<ExitCode> {
    let bad_input_or_internal = ExitCode::bad_input_or_internal;
    if let Some(e) = err.downcast_ref::<milabench::Error>() {
        Some(e.exit_code())
    } else if let Some(e) = err.downcast_ref::<EnvError>() {
        Some(e.exit_code())
    } else if let Some(e) = err.downcast_ref::<ExecError>() {
        Some(e.exit_code())
    } else if let Some(e) = err.downcast_ref::<ScaffoldError>() {
        Some(e.exit_code())
    } else if let Some(e) = err.downcast_ref::<StoreError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if let Some(e) = err.downcast_ref::<PublishError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if let Some(e) = err.downcast_ref::<ReportError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if let Some(e) = err.downcast_ref::<MetricsError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if let Some(e) = err.downcast_ref::<ScalingError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if let Some(e) = err.downcast_ref::<LoadError>() {
        Some(bad_input_or_internal(e.is_bad_input()))
    } else if err.is::<ConfigError>()
        || err.is::<SettingsError>()
        || err.is::<SweepError>()
        || err.is::<ReplayError>()
    {
        Some(ExitCode::BadInput)
    } else if err.is::<std::io::Error>() {
        Some(ExitCode::Internal)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_check_is_bad_input() {
        let err = anyhow::anyhow!("--repeat and --sweep cannot be used together");
        assert_eq!(exit_code(&err), ExitCode::BadInput);
    }

    #[test]
    fn the_first_known_error_of_the_chain_decides() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let err = anyhow::Error::new(full).context("could not create the output folder");
        assert_eq!(exit_code(&err), ExitCode::Internal);
        // A suite file that cannot be read is the user's input, though its cause is an I/O
        // error.
        let suite = ConfigError::Read {
            what: "suite file",
            path: "nope.yaml".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let err = anyhow::Error::new(milabench::Error::Config(suite)).context("resolving");
        assert_eq!(exit_code(&err), ExitCode::BadInput);
        let interrupted = EnvError::Interrupted {
            group: "torch".into(),
            log: "install.log".into(),
        };
        assert_eq!(
            exit_code(&anyhow::Error::new(interrupted)),
            ExitCode::Interrupted
        );
    }
}
