//! Why a command failed, how that is shown to a person and which exit code it gets: one error
//! type for every handler ([`CliError`]) and one match deciding its exit code.

use std::error::Error;

use milabench::ExitCode;
use milabench::install::EnvError;
use milabench::observe::ExecError;
use milabench::publish::PublishError;
use milabench::replay::{ReplayError, UnknownLayer};
use milabench::results::{MetricsError, ReportError};
use milabench::serving::LoadError;
use milabench::settings::SettingsError;
use milabench::slurm::SubmitError;
use milabench::store::StoreError;
use milabench::suite::{ConfigError, ScalingError, SweepError};
use milabench::system::SystemError;
use milabench::{ScaffoldError, SharedDataError};
use milabench_vocab::{InContext, error_report};

/// What a command handler returns.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// Why a command failed: one variant per library whose error reaches the command line (kept as
/// its source, shown with the same text), the command line's own checks, and what was being
/// done when one of these happened. [`CliError::exit_code`] is the one place an error's exit
/// code is decided.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The facade refused or failed the command.
    #[error("{0}")]
    Facade(#[from] milabench::Error),
    /// A Python environment could not be found, built or pinned.
    #[error("{0}")]
    Env(#[from] EnvError),
    /// A process could not be started or supervised.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// `new` could not write its benchmark folder.
    #[error("{0}")]
    Scaffold(#[from] ScaffoldError),
    /// The results database is misnamed or cannot be used.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// Run folders could not be pushed to the dashboard.
    #[error("{0}")]
    Publish(#[from] PublishError),
    /// Run folders could not be reported.
    #[error("{0}")]
    Report(#[from] ReportError),
    /// Event files or run folders could not be read or written.
    #[error("{0}")]
    Metrics(#[from] MetricsError),
    /// A scaling file could not be read or written.
    #[error("{0}")]
    Scaling(#[from] ScalingError),
    /// `load` could not run or record its scenario.
    #[error("{0}")]
    Load(#[from] LoadError),
    /// A suite or system file is invalid.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// Settings (file, environment, flags) are invalid.
    #[error("{0}")]
    Settings(#[from] SettingsError),
    /// A sweep cannot be expanded.
    #[error("{0}")]
    Sweep(#[from] SweepError),
    /// An event file cannot be replayed.
    #[error("{0}")]
    Replay(#[from] ReplayError),
    /// A Slurm submission, or following it, failed.
    #[error("{0}")]
    Submit(#[from] SubmitError),
    /// A prepared base could not be shared or archived.
    #[error("{0}")]
    SharedData(#[from] SharedDataError),
    /// This machine's facts could not be read.
    #[error("{0}")]
    System(#[from] SystemError),
    /// `--validations` names a layer that does not exist.
    #[error("{0}")]
    UnknownLayer(#[from] UnknownLayer),
    /// Arguments built from the Python milabench's spelling do not parse.
    #[error("{0}")]
    Args(#[from] clap::Error),
    /// Output could not be written as JSON (a bug: every value written is serialisable).
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Output could not be written as YAML (a bug, as for JSON).
    #[error("{0}")]
    Yaml(#[from] serde_saphyr::SerializeError),
    /// A file, folder or stream of the command line's own failed (the machine's failure).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The command line's own check refused its input (flags that cannot go together, a
    /// value out of range); the message names the problem and the fix.
    #[error("{0}")]
    Usage(String),
    /// What the command was doing when an error happened.
    #[error(transparent)]
    Context(InContext<CliError>),
}

impl CliError {
    /// The exit code this error gives the process.
    pub fn exit_code(&self) -> ExitCode {
        let bad_input_or_internal = ExitCode::bad_input_or_internal;
        match self {
            CliError::Facade(e) => e.exit_code(),
            CliError::Env(e) => e.exit_code(),
            CliError::Exec(e) => e.exit_code(),
            CliError::Scaffold(e) => e.exit_code(),
            CliError::Store(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Publish(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Report(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Metrics(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Scaling(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Load(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Submit(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::SharedData(e) => bad_input_or_internal(e.is_bad_input()),
            CliError::Config(_)
            | CliError::Settings(_)
            | CliError::Sweep(_)
            | CliError::Replay(_)
            | CliError::UnknownLayer(_)
            | CliError::Args(_)
            | CliError::Usage(_) => ExitCode::BadInput,
            CliError::System(_) | CliError::Json(_) | CliError::Yaml(_) | CliError::Io(_) => {
                ExitCode::Internal
            }
            CliError::Context(e) => e.source.exit_code(),
        }
    }

    /// This error with `context`, what was being done when it happened, shown before it.
    pub fn context(self, context: impl std::fmt::Display) -> CliError {
        CliError::Context(InContext::new(self, context))
    }
}

/// `context` and `with_context` on results and options, as anyhow's, giving a [`CliError`].
pub trait Context<T> {
    /// The error (or the absence of a value) with `context`, what was being done, before it.
    fn context(self, context: impl std::fmt::Display) -> Result<T>;

    /// As [`Context::context`], the context computed only on failure.
    fn with_context<D: std::fmt::Display>(self, context: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Into<CliError>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(context))
    }

    fn with_context<D: std::fmt::Display>(self, context: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| e.into().context(context()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.ok_or_else(|| CliError::Usage(context.to_string()))
    }

    fn with_context<D: std::fmt::Display>(self, context: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| CliError::Usage(context().to_string()))
    }
}

/// A [`CliError::Usage`] of a formatted message.
macro_rules! usage {
    ($($message:tt)*) => {
        $crate::errors::CliError::Usage(format!($($message)*))
    };
}

/// Returns a [`CliError::Usage`] of a formatted message.
macro_rules! bail {
    ($($message:tt)*) => {
        return Err($crate::errors::usage!($($message)*).into())
    };
}

pub(crate) use {bail, usage};

/// Prints `err` with its causes on stderr and returns the exit code it deserves.
pub fn report(err: &CliError) -> ExitCode {
    show(err);
    err.exit_code()
}

/// Prints `err` and each of its causes on stderr, each once.
#[allow(clippy::print_stderr)]
pub fn show(err: &(dyn Error + 'static)) {
    eprintln!("{}", error_report(err));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_check_is_bad_input() {
        let err = usage!("--repeat and --sweep cannot be used together");
        assert_eq!(err.exit_code(), ExitCode::BadInput);
    }

    #[test]
    fn a_context_keeps_the_exit_code_of_its_error() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let err = CliError::from(full).context("could not create the output folder");
        assert_eq!(err.exit_code(), ExitCode::Internal);
        // A suite file that cannot be read is the user's input, though its cause is an I/O
        // error.
        let suite = ConfigError::Read {
            what: "suite file",
            path: "nope.yaml".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let err = CliError::from(milabench::Error::Config(suite)).context("resolving");
        assert_eq!(err.exit_code(), ExitCode::BadInput);
        let interrupted = EnvError::Interrupted {
            group: "torch".into(),
            log: "install.log".into(),
        };
        assert_eq!(
            CliError::from(interrupted).exit_code(),
            ExitCode::Interrupted
        );
    }

    /// The report shows each text once: a variant's own text (its library error's) is not
    /// repeated as a cause.
    #[test]
    fn a_library_error_is_shown_once() {
        let err = CliError::from(std::io::Error::other("disk full")).context("writing");
        assert_eq!(error_report(&err), "error: writing\n  caused by: disk full");
    }

    /// A closed pipe is found under the contexts and variants (the top of `main` ends quietly).
    #[test]
    fn a_broken_pipe_is_found_under_contexts() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let err = CliError::from(pipe).context("could not write to stdout");
        assert!(milabench_vocab::is_broken_pipe(&err));
    }
}
