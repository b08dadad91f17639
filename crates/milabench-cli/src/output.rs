//! What the command line prints besides command results: warnings and errors on stderr.

/// Prints a warning on stderr.
#[allow(clippy::print_stderr)]
pub fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// Writes a command's result to `path`, or to stdout when there is none.
#[allow(clippy::print_stdout)]
pub fn write_output(path: Option<&camino::Utf8Path>, text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    match path {
        Some(path) => std::fs::write(path, text).with_context(|| {
            format!("could not write {path}; check the folder exists and is writable")
        }),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                // A closed pipe (`| head`) is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("could not write to stdout"),
            }
        }
    }
}

/// Prints an informational line on stderr.
#[allow(clippy::print_stderr)]
pub fn note(message: &str) {
    eprintln!("{message}");
}
