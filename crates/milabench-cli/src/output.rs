//! What the command line prints besides command results: warnings and errors on stderr.

/// Prints a warning on stderr.
#[allow(clippy::print_stderr)]
pub fn warn(message: &str) {
    eprintln!("warning: {message}");
}
