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
    /// The prompts file (or the trace to replay) cannot be read.
    #[error("{what} {}{}: {reason}", path.display(), line_suffix(*line))]
    PromptsFile {
        /// What the file is: `prompts file` or `trace`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The line at fault (1-based), or 0 for the whole file.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The server's certificate was refused, or TLS could not be agreed on.
    #[error(
        "TLS with {endpoint} failed: is the certificate right for this name, and signed by an authority this machine trusts? (--ca-cert FILE trusts a private one)"
    )]
    Tls {
        /// The endpoint as given.
        endpoint: String,
        /// What TLS said.
        #[source]
        source: std::io::Error,
    },
    /// An https endpoint whose server answered the TLS handshake with something else.
    #[error("TLS with {endpoint} failed: the server does not speak TLS: use http://")]
    NotTls {
        /// The endpoint as given.
        endpoint: String,
    },
    /// An http endpoint whose server speaks TLS.
    #[error("{endpoint} answered nothing HTTP can read: the server speaks TLS: use https://")]
    SpeaksTls {
        /// The endpoint as given.
        endpoint: String,
    },
    /// The `--ca-cert` file of an https endpoint cannot be used.
    #[error("CA certificate file {}: {reason}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A setting that cannot work (a zero rate, no requests, ...).
    #[error("invalid load settings: {0}")]
    Settings(String),
    /// The server the run was to start could not be started.
    #[error("cannot start the server `{program}`: check the command, or install it")]
    ServerStart {
        /// The server's program.
        program: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The server started for the run ended before it answered its health check.
    #[error(
        "the server exited ({status}) {waited:.0} s after it started, before it was ready (its output says why)"
    )]
    ServerExited {
        /// Its exit status, in words.
        status: String,
        /// Seconds since it was started.
        waited: f64,
    },
    /// The server started for the run did not answer its health check in time.
    #[error("{}", not_ready(url, *timeout, *last_status))]
    ServerNotReady {
        /// The health URL.
        url: String,
        /// How long it was given.
        timeout: std::time::Duration,
        /// The last status the health URL answered, when it answered at all.
        last_status: Option<u16>,
    },
    /// The run was asked to end while it waited for its server.
    #[error("stopped before the server was ready: {0}")]
    StoppedWaiting(String),
    /// The run folder of the results (`--run-dir`) cannot be created.
    #[error("cannot create --run-dir {}: {error}", dir.display())]
    RunDir {
        /// The folder.
        dir: PathBuf,
        /// Why (shown in the message, not as a cause).
        error: std::io::Error,
    },
    /// The results file already holds the results of a run.
    #[error(
        "{} already holds the results of a run: give another --run-dir or --name, or remove the file",
        path.display()
    )]
    ResultsExist {
        /// The file.
        path: PathBuf,
    },
    /// The results file cannot be created in its run folder.
    #[error("cannot write the results file {} in --run-dir: {error}", path.display())]
    ResultsFile {
        /// The file.
        path: PathBuf,
        /// Why (shown in the message, not as a cause).
        error: std::io::Error,
    },
    /// The results could not be written to their file.
    #[error(transparent)]
    Results(#[from] milabench_metrics::MetricsError),
    /// The asynchronous runtime or a thread of the run could not be started.
    #[error("cannot start the load generator")]
    Runtime(#[source] std::io::Error),
}

impl LoadError {
    /// Whether the error is the user's input (an endpoint, its scheme included, a prompts file
    /// or settings that cannot work) rather than the machine or the server (nothing answering, no thread).
    pub fn is_bad_input(&self) -> bool {
        match self {
            LoadError::Endpoint { .. }
            | LoadError::PromptsFile { .. }
            | LoadError::Settings(_)
            | LoadError::CaFile { .. }
            | LoadError::NotTls { .. }
            | LoadError::SpeaksTls { .. }
            | LoadError::ServerStart { .. }
            | LoadError::RunDir { .. }
            | LoadError::ResultsExist { .. }
            | LoadError::ResultsFile { .. } => true,
            LoadError::Results(e) => e.is_bad_input(),
            LoadError::Unreachable { .. }
            | LoadError::Tls { .. }
            | LoadError::ServerExited { .. }
            | LoadError::ServerNotReady { .. }
            | LoadError::StoppedWaiting(_)
            | LoadError::Runtime(_) => false,
        }
    }
}

/// Why a started server was not ready: nothing answered, or what it answered instead.
fn not_ready(url: &str, timeout: std::time::Duration, last_status: Option<u16>) -> String {
    let seconds = timeout.as_secs_f64();
    match last_status {
        None => format!(
            "the server did not answer {url} with success within {seconds} s: give it longer with --ready-timeout, or check its output"
        ),
        Some(code) => format!(
            "the server is up but not ready: {url} still answered HTTP {code} after {seconds} s; give it longer with --ready-timeout, check its output, or name the path that answers once it is ready with --health"
        ),
    }
}

fn line_suffix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(", line {line}")
    }
}
