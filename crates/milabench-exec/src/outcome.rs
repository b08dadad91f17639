//! What happened to the processes of a plan.

use std::path::PathBuf;
use std::time::Duration;

use milabench_metrics::{ProcessVerdict, ReturnCode};

/// How one process of a plan ended, as recorded in its `.data` file.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOutcome {
    /// The tag (`bench.D0`).
    pub tag: String,
    /// The `return_code` written in its `end` event: the exit status (negative: the signal that
    /// killed it), or the string `"ERROR"` when it could not be started or was aborted by the
    /// orchestrator (interrupted).
    pub return_code: ReturnCode,
    /// The verdict on its records ([`ProcessVerdict`], the one rule the readers of its file
    /// apply too).
    pub verdict: ProcessVerdict,
    /// Messages of the `error` events recorded for it (from the benchmark or the orchestrator),
    /// as `type: message`.
    pub errors: Vec<String>,
    /// It was stopped because the plan's `max_duration` expired.
    pub timed_out: bool,
    /// It was stopped because the run was interrupted.
    pub interrupted: bool,
    /// From launch to the `end` event.
    pub duration: Duration,
    /// Number of training rates it reported (`data` events with `task: "train"` and a `rate`).
    pub rate_count: usize,
    /// Its events are kept out of reports (`ProcessSpec::nolog`).
    pub nolog: bool,
    /// Its `.data` file.
    pub data_file: PathBuf,
}

impl ProcessOutcome {
    /// Whether the process succeeded ([`ProcessVerdict::is_success`]).
    pub fn success(&self) -> bool {
        self.verdict.is_success()
    }

    /// Exited with 0 and sent no `error` event: what a process that reports no rates (a
    /// prepare step, a rank kept out of reports) must do to count as done.
    pub fn exited_cleanly(&self) -> bool {
        self.return_code.is_zero() && self.errors.is_empty()
    }
}

/// What happened when one benchmark plan ran.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOutcome {
    /// The benchmark's name.
    pub bench: String,
    /// One entry per process of the plan, in plan order.
    pub processes: Vec<ProcessOutcome>,
    /// The run was interrupted (Ctrl-C): the caller should stop and exit with code 130.
    pub interrupted: bool,
    /// The plan's `max_duration` expired before every process ended.
    pub timed_out: bool,
    /// From the first launch to the last `end` event.
    pub duration: Duration,
    /// Stopped by [`crate::PrecisionStop`]: the half-width reached, as a share of the rate.
    pub precise: Option<f64>,
}

impl BenchOutcome {
    /// Every process succeeded (see [`ProcessOutcome::success`]) and the run was not
    /// interrupted.
    pub fn success(&self) -> bool {
        self.verdict().is_success()
    }

    /// The verdict on the benchmark: [`ProcessVerdict::Interrupted`] when the run was
    /// interrupted, else that of its first process that did not succeed, else
    /// [`ProcessVerdict::Succeeded`].
    pub fn verdict(&self) -> ProcessVerdict {
        if self.interrupted {
            return ProcessVerdict::Interrupted;
        }
        self.failures()
            .next()
            .map_or(ProcessVerdict::Succeeded, |failed| failed.verdict.clone())
    }

    /// The exit status of its first process that did not succeed, else of its first process;
    /// `None` when none ended with a status.
    pub fn exit_code(&self) -> Option<i64> {
        self.failures()
            .chain(&self.processes)
            .find_map(|p| match p.return_code {
                ReturnCode::Code(code) => Some(code),
                ReturnCode::Other(_) => None,
            })
    }

    /// Every process exited cleanly (see [`ProcessOutcome::exited_cleanly`]) within the time
    /// limit, and the run was not interrupted: how a prepare step succeeds.
    pub fn exited_cleanly(&self) -> bool {
        !self.interrupted
            && !self.timed_out
            && self.processes.iter().all(ProcessOutcome::exited_cleanly)
    }

    /// The processes that failed.
    pub fn failures(&self) -> impl Iterator<Item = &ProcessOutcome> {
        self.processes.iter().filter(|p| !p.success())
    }
}
