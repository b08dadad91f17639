//! Why a plan could not be run or recorded.

use milabench_metrics::MetricsError;

use crate::ExitCode;

/// A failure of the orchestrator itself. What a benchmark process does wrong (it crashes, hangs,
/// cannot be started) is not an error here: it is recorded in its `.data` file and in
/// [`crate::BenchOutcome`].
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Two processes of the plan have the same tag, so they would write the same files.
    #[error(
        "two processes of benchmark {bench} have the tag {tag}; each process needs its own tag \
         (its events go to <run>/<tag>.data)"
    )]
    DuplicateTag {
        /// The benchmark.
        bench: String,
        /// The tag given twice.
        tag: String,
    },
    /// A process has an empty command line.
    #[error("process {tag} of benchmark {bench} has an empty command line")]
    EmptyCommand {
        /// The benchmark.
        bench: String,
        /// The process.
        tag: String,
    },
    /// A folder or file of the run (run folder, `.data`, `.stdout`, `.stderr`, a planned file)
    /// could not be written.
    #[error(transparent)]
    Write(#[from] MetricsError),
    /// The data channel pipe could not be made.
    #[error("could not create the data-channel pipe for process {tag}")]
    Pipe {
        /// The process.
        tag: String,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
    /// The thread that reads the processes' pipes could not be started.
    #[error("could not start the thread that reads the processes' output")]
    Reading(#[source] std::io::Error),
    /// A process started on its own ([`crate::SupervisedChild`]) could not be started.
    #[error("could not start `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
    /// The watchdog asked for in [`crate::ExecOptions::watchdog`] (or given to
    /// [`crate::SupervisedChild::spawn`]) could not be started or fed.
    #[error(
        "could not start or feed the watchdog `{program}` that stops the benchmark should this program die"
    )]
    Watchdog {
        /// The watchdog program.
        program: String,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
}

impl ExecError {
    /// The exit code a command that ends on this error deserves: a plan that cannot work as
    /// written (duplicate tags, an empty command line) is bad input; a file, pipe or process the
    /// machine would not give is an internal or environment failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ExecError::DuplicateTag { .. } | ExecError::EmptyCommand { .. } => ExitCode::BadInput,
            ExecError::Write(e) => ExitCode::bad_input_or_internal(e.is_bad_input()),
            ExecError::Pipe { .. }
            | ExecError::Reading(_)
            | ExecError::Spawn { .. }
            | ExecError::Watchdog { .. } => ExitCode::Internal,
        }
    }
}
