//! Errors of this crate.

/// What can go wrong while collecting system facts or starting the sampler.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// sysinfo could not read the system (no `/proc`, unsupported platform).
    #[error("could not read the system's CPU and memory facts: {0}")]
    Sysinfo(String),
    /// The sampler thread could not be started.
    #[error("could not start the telemetry sampler thread")]
    Thread(#[source] std::io::Error),
}

impl SystemError {
    pub(crate) fn sysinfo(e: impl std::fmt::Display) -> SystemError {
        SystemError::Sysinfo(e.to_string())
    }
}
