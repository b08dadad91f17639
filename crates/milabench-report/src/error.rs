//! Why a report could not be made.

/// Errors of report building.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run folder could not be read.
    #[error(transparent)]
    Metrics(#[from] milabench_metrics::MetricsError),
    /// The folders hold no `.data` file at all.
    #[error(
        "no .data files found under {}; give the folder of a run (e.g. <base>/runs/<run name>) or a folder of runs",
        sources.join(", ")
    )]
    NoDataFiles {
        /// The folders as given.
        sources: Vec<String>,
    },
    /// `.data` files exist but none holds a benchmark run.
    #[error(
        "none of the .data files under {} holds a benchmark run (a `config` event); {}",
        sources.join(", "),
        if warnings.is_empty() { "the files are empty".to_owned() } else { warnings.join("; ") }
    )]
    NoRuns {
        /// The folders as given.
        sources: Vec<String>,
        /// What was wrong with the files.
        warnings: Vec<String>,
    },
    /// The statistics query failed (a bug).
    #[error("internal error while aggregating the report's statistics (a bug: please report it)")]
    Polars(#[from] polars::error::PolarsError),
}

impl ReportError {
    /// Whether the error is the user's input (folders without runs) rather than the machine
    /// failing to read them or a bug.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ReportError::Metrics(e) => e.is_bad_input(),
            ReportError::NoDataFiles { .. } | ReportError::NoRuns { .. } => true,
            ReportError::Polars(_) => false,
        }
    }
}
