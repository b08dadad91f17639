//! Why a load run could not be made.

use std::path::PathBuf;

/// A load run that could not start or go on. Failed requests are not errors: they are counted in
/// the results with their reason.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The endpoint is not an `http://HOST:PORT/...` URL.
    #[error("invalid endpoint `{endpoint}`: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing answers at the endpoint before the run starts.
    #[error("cannot connect to {endpoint}: is the server running and listening there?")]
    Unreachable {
        /// The endpoint as given.
        endpoint: String,
        /// The connection error.
        #[source]
        source: std::io::Error,
    },
    /// The prompts file cannot be read.
    #[error("prompts file {}{}: {reason}", path.display(), line_suffix(*line))]
    PromptsFile {
        /// The file.
        path: PathBuf,
        /// The line at fault (1-based), or 0 for the whole file.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A setting that cannot work (a zero rate, no requests, ...).
    #[error("invalid load settings: {0}")]
    Settings(String),
    /// The asynchronous runtime or a thread of the run could not be started.
    #[error("cannot start the load generator")]
    Runtime(#[source] std::io::Error),
}

impl LoadError {
    /// Whether the error is the user's input (an endpoint, a prompts file or settings that
    /// cannot work) rather than the machine or the server (nothing answering, no thread).
    pub fn is_bad_input(&self) -> bool {
        match self {
            LoadError::Endpoint { .. } | LoadError::PromptsFile { .. } | LoadError::Settings(_) => {
                true
            }
            LoadError::Unreachable { .. } | LoadError::Runtime(_) => false,
        }
    }
}

fn line_suffix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(", line {line}")
    }
}
