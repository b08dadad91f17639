//! Why a `benchit` command failed and which exit code it gets: one error type for every
//! handler ([`BenchitError`]) and one match deciding its exit code.

use benchit::env::SetupError;
use benchit::models::{CacheError, InputError, ModelsError};
use benchit::ops::{ConfigError, RunError, SelectError};
use benchit::worker::WorkerError;
use milabench_env::EnvError;
use milabench_exec::{ExecError, ExitCode};
use milabench_vocab::InContext;

/// What a command handler returns.
pub(crate) type Result<T, E = BenchitError> = std::result::Result<T, E>;

/// Why a command failed: one variant per library error that reaches the command line (kept as
/// its source, shown with the same text), the command line's own checks, and what was being
/// done when one of these happened. [`BenchitError::exit_code`] is the one place an error's
/// exit code is decided.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchitError {
    /// A managed Python environment could not be set up.
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// A Python environment could not be found or built.
    #[error("{0}")]
    Env(#[from] EnvError),
    /// The worker failed or could not be started.
    #[error("{0}")]
    Worker(#[from] WorkerError),
    /// Models could not be benchmarked.
    #[error("{0}")]
    Models(#[from] ModelsError),
    /// The build cache could not be read or changed.
    #[error("{0}")]
    Cache(#[from] CacheError),
    /// A process could not be started or supervised.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// An input (script, model file) cannot be benchmarked as given.
    #[error("{0}")]
    Input(#[from] InputError),
    /// An operator config is invalid.
    #[error("{0}")]
    OpsConfig(#[from] ConfigError),
    /// `--select`/`--resume` names runs that do not exist.
    #[error("{0}")]
    Select(#[from] SelectError),
    /// The operator runs could not be carried out or recorded.
    #[error("{0}")]
    OpsRun(#[from] RunError),
    /// Output could not be written as JSON (a bug: every value written is serialisable).
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A file or stream of the command line's own failed (the machine's failure).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The command line's own check refused its input; the message names the problem and the
    /// fix.
    #[error("{0}")]
    Usage(String),
    /// What the command was doing when an error happened.
    #[error(transparent)]
    Context(InContext<BenchitError>),
}

impl BenchitError {
    /// The exit code this error gives the process: an environment that cannot be built for a
    /// reason of the user's (no Python, a package that does not exist) is bad input, a failing
    /// install a failure, Ctrl-C during the install an interruption, a file the machine would
    /// not write an internal failure.
    pub(crate) fn exit_code(&self) -> ExitCode {
        match self {
            BenchitError::Setup(e) => e.exit_code(),
            BenchitError::Env(e) => e.exit_code(),
            BenchitError::Worker(e) => e.exit_code(),
            BenchitError::Models(e) => e.exit_code(),
            BenchitError::Cache(e) => e.exit_code(),
            BenchitError::Exec(e) => e.exit_code(),
            BenchitError::Input(_)
            | BenchitError::OpsConfig(_)
            | BenchitError::Select(_)
            | BenchitError::Usage(_) => ExitCode::BadInput,
            BenchitError::OpsRun(_) | BenchitError::Json(_) | BenchitError::Io(_) => {
                ExitCode::Internal
            }
            BenchitError::Context(e) => e.source.exit_code(),
        }
    }

    /// This error with `context`, what was being done when it happened, shown before it.
    pub(crate) fn context(self, context: impl std::fmt::Display) -> BenchitError {
        BenchitError::Context(InContext::new(self, context))
    }
}

/// A [`BenchitError::Usage`] of a formatted message.
macro_rules! usage {
    ($($message:tt)*) => {
        $crate::errors::BenchitError::Usage(format!($($message)*))
    };
}

/// Returns a [`BenchitError::Usage`] of a formatted message.
macro_rules! bail {
    ($($message:tt)*) => {
        return Err($crate::errors::usage!($($message)*))
    };
}

pub(crate) use {bail, usage};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_of_error_has_its_exit_code() {
        let err = usage!("--script-args `a 'b` has unbalanced quotes");
        assert_eq!(err.exit_code(), ExitCode::BadInput);
        let package = SetupError::BadPackage("torch==".into());
        assert_eq!(BenchitError::from(package).exit_code(), ExitCode::BadInput);
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let err = BenchitError::from(full).context("could not write the report");
        assert_eq!(err.exit_code(), ExitCode::Internal);
        let failed = SetupError::Env(EnvError::StepFailed {
            group: "benchit".into(),
            step: "installing packages".into(),
            status: String::new(),
            details: String::new(),
            log: "install.log".into(),
        });
        let err = BenchitError::from(failed).context("the benchit Python environment is not ready");
        assert_eq!(err.exit_code(), ExitCode::BenchmarkFailures);
        let interrupted = SetupError::Env(EnvError::Interrupted {
            group: "benchit".into(),
            log: "install.log".into(),
        });
        assert_eq!(
            BenchitError::from(interrupted).exit_code(),
            ExitCode::Interrupted
        );
    }
}
