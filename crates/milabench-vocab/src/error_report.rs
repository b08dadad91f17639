//! An error and its causes as text, the one way both front ends (`milabench`, `benchit`) show
//! a failed command.
//!
//! An error's message says what failed and how to fix it; its cause (`source()`) is not
//! repeated in the message but shown here, once, after it.

use std::error::Error;

/// An error with what a command was doing when it happened (`could not import runs/a`): the
/// context of both front ends' typed errors (what anyhow's `context` gives, kept typed so that
/// the exit code is still the wrapped error's). Shown before the error it wraps.
#[derive(Debug)]
pub struct InContext<E: Error + 'static> {
    /// What was being done.
    pub context: String,
    /// The error that happened.
    pub source: Box<E>,
}

impl<E: Error + 'static> std::fmt::Display for InContext<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.context)
    }
}

impl<E: Error + 'static> Error for InContext<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self.source.as_ref())
    }
}

impl<E: Error + 'static> InContext<E> {
    /// `source` with `context`, what was being done when it happened.
    pub fn new(source: E, context: impl std::fmt::Display) -> InContext<E> {
        InContext {
            context: context.to_string(),
            source: Box::new(source),
        }
    }
}

/// The lines a front end prints for a failed command: `error: <err>`, then
/// `  caused by: <cause>` for each cause of the `source()` chain.
pub fn error_report(err: &(dyn Error + 'static)) -> String {
    let mut texts = chain(err);
    let mut report = format!("error: {}", texts.next().unwrap_or_default());
    for cause in texts {
        report.push_str("\n  caused by: ");
        report.push_str(&cause);
    }
    report
}

/// `err` and its causes on one line, `<err>: <cause>: <cause>`: for a warning or a record that
/// keeps an error as text.
pub fn error_line(err: &(dyn Error + 'static)) -> String {
    chain(err).collect::<Vec<_>>().join(": ")
}

/// Whether `err` or one of its causes is a closed pipe (`EPIPE`): whoever read this program's
/// output stopped reading (`milabench resolve | head -1`). Both front ends end quietly with
/// exit code 0 then, as `head`-friendly tools (ripgrep, ls) do: the output is not wanted.
pub fn is_broken_pipe(err: &(dyn Error + 'static)) -> bool {
    std::iter::successors(Some(err), |&e| e.source()).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The texts of `err` and of each of its causes, in order; a cause whose text is the same as
/// the one before it (an error that shows its wrapped error as its own message) is left out.
fn chain(err: &(dyn Error + 'static)) -> impl Iterator<Item = String> {
    let mut previous: Option<String> = None;
    std::iter::successors(Some(err), |&e| e.source()).filter_map(move |e| {
        let text = e.to_string();
        if previous.as_deref() == Some(text.as_str()) {
            return None;
        }
        previous = Some(text.clone());
        Some(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message and an optional cause.
    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Wrapped {
        message: String,
        #[source]
        source: Option<Box<dyn Error + 'static>>,
    }

    fn wrapped(message: &str, source: Option<Box<dyn Error + 'static>>) -> Box<dyn Error> {
        Box::new(Wrapped {
            message: message.to_string(),
            source,
        })
    }

    #[test]
    fn a_closed_pipe_is_found_among_the_causes() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let err = wrapped("could not write to stdout", Some(Box::new(pipe)));
        assert!(is_broken_pipe(err.as_ref()));
        let disk = std::io::Error::other("No space left on device");
        let err = wrapped("could not write to stdout", Some(Box::new(disk)));
        assert!(!is_broken_pipe(err.as_ref()));
    }

    #[test]
    fn each_cause_is_shown_once_in_order() {
        let disk = std::io::Error::other("No space left on device");
        let err = wrapped(
            "could not write runs/a/b.data",
            Some(wrapped("could not record the run", Some(Box::new(disk)))),
        );
        assert_eq!(
            error_report(err.as_ref()),
            "error: could not write runs/a/b.data\n  caused by: could not record the run\n  caused by: No space left on device"
        );
        assert_eq!(
            error_line(err.as_ref()),
            "could not write runs/a/b.data: could not record the run: No space left on device"
        );
    }

    #[test]
    fn a_cause_repeating_the_one_before_is_left_out() {
        let err = wrapped(
            "disk full",
            Some(wrapped(
                "disk full",
                Some(Box::new(std::io::Error::other("ENOSPC"))),
            )),
        );
        assert_eq!(
            error_report(err.as_ref()),
            "error: disk full\n  caused by: ENOSPC"
        );
        // A cause is compared with the one just before it only: text that merely contains it
        // is not a repeat.
        let err = wrapped(
            "cannot write x: disk full",
            Some(Box::new(std::io::Error::other("disk full"))),
        );
        assert_eq!(
            error_line(err.as_ref()),
            "cannot write x: disk full: disk full"
        );
    }

    #[test]
    fn an_error_without_cause_is_one_line() {
        let err = std::io::Error::other("boom");
        assert_eq!(error_report(&err), "error: boom");
        assert_eq!(error_line(&err), "boom");
    }
}
