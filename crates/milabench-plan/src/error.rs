//! Errors of planning.

use milabench_config::ConfigError;

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
    /// The suite configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
}
