//! Errors of planning.

use milabench_config::suite::FieldError;

/// Why a benchmark cannot be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The benchmark has no `definition` folder.
    #[error("`{bench}` has no `definition`\n  fix: set `definition:` to the benchmark's folder")]
    NoDefinition {
        /// The benchmark.
        bench: String,
    },
    /// The benchmark does not run (disabled or not selected), so the resolution did not read
    /// its folder's benchfile.
    #[error(
        "`{bench}` is disabled or not selected, so it has no plan\n  fix: enable it (`enabled: true`) and select it"
    )]
    NotRunnable {
        /// The benchmark.
        bench: String,
    },
    /// A setting of the benchmark cannot be used (its `max_duration`).
    #[error(transparent)]
    Field(#[from] FieldError),
    /// An argument's placeholder or expression cannot be resolved.
    #[error("`{bench}`: {message}")]
    Placeholder {
        /// The benchmark.
        bench: String,
        /// What failed.
        message: String,
    },
    /// The benchmark's settings cannot be planned.
    #[error("`{bench}`: {message}")]
    Invalid {
        /// The benchmark.
        bench: String,
        /// What is wrong.
        message: String,
    },
}
