//! Progress through a known number of steps on stderr: a bar with the current step's name on a
//! terminal, one line per step otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Progress through `total` steps of some work.
pub(crate) struct Steps {
    what: &'static str,
    total: usize,
    done: usize,
    bar: Option<ProgressBar>,
}

impl Steps {
    /// Progress of `what` (`importing`) through `total` steps: a bar when stderr is a terminal.
    pub fn new(what: &'static str, total: usize) -> Steps {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos}/{len} {elapsed} {wide_msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(what);
            bar
        });
        Steps {
            what,
            total,
            done: 0,
            bar,
        }
    }

    /// Step `name` starts (the one after those done).
    #[allow(clippy::print_stderr)]
    pub fn start(&mut self, name: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(name.to_owned()),
            None => eprintln!("{} {}/{}: {name}", self.what, self.done + 1, self.total),
        }
    }

    /// The step started last is done.
    pub fn done(&mut self) {
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
