//! What observers of a session receive and the summaries they are given: the phases of
//! [`crate::Session::execute`], the suite-level events of a run ([`RunEvent`], to a
//! [`RunObserver`]) and of an install ([`InstallObserver`]). A leaf of the facade: it uses the
//! layer crates only, so `run`, `session`, `pipeline` and `sizer` all use it and none of them
//! the others for these types.

use std::path::PathBuf;

use milabench_config::ResolvedBench;
use milabench_env::{EnvError, Environments, Event as EnvEvent, InstallGroup, Outcome};
use milabench_exec::{BenchOutcome, ExecObserver};
use milabench_plan::BenchPlan;

/// A phase of [`crate::Session::execute`], in the order they come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The fast checks of the machine and the suite.
    Preflight,
    /// The environments of the install groups are built.
    Install,
    /// The benchmarks' prepare steps run.
    Prepare,
    /// The benchmarks run.
    Run,
    /// The report is made and written beside the run.
    Report,
}

/// Something that happened at the level of the suite, for live display.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A phase of [`crate::Session::execute`] starts.
    Phase(Phase),
    /// The benchmarks the run may run, in the order it runs them (each repeat of each), told
    /// once, just before [`Phase::Run`] starts.
    Schedule {
        /// The benchmarks.
        benches: &'a [&'a ResolvedBench],
    },
    /// The preflight failed: nothing is installed or run.
    PreflightFailed {
        /// The failed checks.
        checks: &'a [milabench_cluster::Check],
    },
    /// The install ended (successfully or not).
    Installed {
        /// What became of each group.
        summary: &'a InstallSummary,
    },
    /// The prepare steps ended.
    Prepared {
        /// Their processes.
        summary: &'a RunSummary,
        /// The benchmarks whose prepare step failed: the run records them as failed.
        failures: &'a [SetupFailure],
    },
    /// The machine the suite runs on, in one paragraph (once, before the first benchmark).
    System {
        /// The paragraph.
        header: &'a str,
    },
    /// A benchmark is about to start.
    BenchStart {
        /// Its plan.
        plan: &'a BenchPlan,
    },
    /// A benchmark is skipped because the system does not meet its requirements.
    Skipped {
        /// The benchmark.
        bench: &'a str,
        /// The unmet `requires_capabilities` expressions.
        unmet: &'a [String],
    },
    /// A benchmark was not run (or prepared) because its set-up failed, or its benchfile gave
    /// no plan.
    SetupFailed {
        /// The benchmark and why.
        failure: &'a SetupFailure,
    },
    /// A benchmark was left out because the run folder already holds it complete.
    AlreadyDone {
        /// The benchmark.
        bench: &'a str,
    },
    /// A benchmark ended.
    BenchEnd {
        /// What happened.
        outcome: &'a BenchOutcome,
    },
}

/// Live view of a suite run: suite-level events plus every process event (of the prepare
/// steps and of the run).
pub trait RunObserver: ExecObserver {
    /// A suite-level event.
    fn on_run_event(&mut self, event: RunEvent<'_>);

    /// Where the progress of an install goes, if this observer shows it (the default: it
    /// does not).
    fn install_observer(&mut self) -> Option<&mut dyn InstallObserver> {
        None
    }
}

/// An observer that ignores everything.
impl RunObserver for () {
    fn on_run_event(&mut self, _event: RunEvent<'_>) {}
}

/// A benchmark whose set-up failed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupFailure {
    /// The benchmark.
    pub bench: String,
    /// What failed, in words (which step, its status, where its log is).
    pub reason: String,
}

/// What a suite run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The run folder.
    pub run_dir: PathBuf,
    /// One outcome per benchmark run.
    pub outcomes: Vec<BenchOutcome>,
    /// Benchmarks skipped for unmet capabilities.
    pub skipped: Vec<String>,
    /// Benchmarks left out because they were already complete (`--resume`).
    pub already_done: Vec<String>,
    /// Benchmarks not run because their set-up failed (recorded as failed in the run folder).
    pub failed_setup: Vec<SetupFailure>,
    /// The run was interrupted.
    pub interrupted: bool,
    /// The command line of the first process of each benchmark planned, in the run's order
    /// (for the sizer's observations, without planning again).
    pub(crate) first_argv: Vec<(String, Vec<String>)>,
}

impl RunSummary {
    /// Every benchmark that ran succeeded, none failed its set-up, and the run was not
    /// interrupted.
    pub fn success(&self) -> bool {
        !self.interrupted
            && self.failed_setup.is_empty()
            && self.outcomes.iter().all(BenchOutcome::success)
    }
}

/// Receives what an install does, as it does it. Every method has an empty default.
pub trait InstallObserver {
    /// Progress of the interpreter, installer or a group (stages, waiting, installer output).
    fn on_env_event(&mut self, event: EnvEvent<'_>) {
        let _ = event;
    }
    /// The interpreter and installer are ready, and the groups known.
    fn on_environments(&mut self, plan: &InstallPlan) {
        let _ = plan;
    }
    /// Work on `group` starts.
    fn on_group_start(&mut self, group: &InstallGroup) {
        let _ = group;
    }
    /// Work on `group` ended.
    fn on_group_end(&mut self, group: &InstallGroup, result: &Result<Outcome, EnvError>) {
        let _ = (group, result);
    }
}

/// An install observer that ignores everything.
impl InstallObserver for () {}

/// The environments of the selected benchmarks, ready to install or pin.
#[derive(Debug)]
pub struct InstallPlan {
    /// The groups of the selected benchmarks.
    pub groups: Vec<InstallGroup>,
    /// Interpreter, installer and layout.
    pub envs: Environments,
}

/// What an install did: one result per group, in order (it stops after an interrupted one).
#[derive(Debug)]
pub struct InstallSummary {
    /// The groups and what became of each.
    pub results: Vec<(InstallGroup, Result<Outcome, EnvError>)>,
    /// The installer, in words (`uv 0.9.1`).
    pub tool: String,
    /// The interpreter's version.
    pub python: String,
}

impl InstallSummary {
    /// Whether every group is installed or up to date.
    pub fn success(&self) -> bool {
        self.results.iter().all(|(_, result)| result.is_ok())
    }
}
