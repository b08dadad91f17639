//! Errors of run-folder access.

use std::path::PathBuf;

/// Why run data could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// A run folder given on the command line does not exist.
    #[error(
        "run folder {} does not exist; check the path (run folders are under <base>/runs/<run name>)",
        path.display()
    )]
    MissingFolder {
        /// The path as given.
        path: PathBuf,
    },
    /// `report --consolidate` found no run folder to gather.
    #[error(
        "{} holds no run folder to consolidate; give the folder that holds the run folders (<base>/runs)",
        path.display()
    )]
    NoRunFolders {
        /// The folder searched.
        path: PathBuf,
    },
    /// `report --consolidate` would replace a folder it did not make.
    #[error(
        "{} exists and was not made by --consolidate; choose another --run-name",
        path.display()
    )]
    ConsolidateTarget {
        /// The folder.
        path: PathBuf,
    },
    /// A folder or file could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// What was being read.
        path: PathBuf,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
    /// The data channel `DATA_FD` names cannot be opened.
    #[error("cannot open the data channel DATA_FD={fd}")]
    Channel {
        /// The descriptor, as `DATA_FD` gives it.
        fd: String,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
    /// An event file could not be written.
    #[error(
        "could not write {}; check that the disk is not full and the folder is writable",
        path.display()
    )]
    Write {
        /// What was being written.
        path: PathBuf,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
}

impl MetricsError {
    /// Whether the error is the user's input (a run folder that is not there) rather than the
    /// machine failing to read or write a file.
    pub fn is_bad_input(&self) -> bool {
        match self {
            MetricsError::MissingFolder { .. }
            | MetricsError::NoRunFolders { .. }
            | MetricsError::ConsolidateTarget { .. } => true,
            MetricsError::Read { .. }
            | MetricsError::Write { .. }
            | MetricsError::Channel { .. } => false,
        }
    }
}
