//! Errors of the facade's combined steps.

use milabench_config::ConfigError;
use milabench_config::settings::SettingsError;

/// Why a facade step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Settings (file, environment, flags) are invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The suite or system file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No suite file was named.
    #[error(
        "no suite file given\n  fix: pass --config FILE (for example --config config/standard.yaml) or set MILABENCH_CONFIG"
    )]
    NoSuite,
    /// `system.options` or a `MILABENCH_*` option is invalid.
    #[error(transparent)]
    Options(#[from] milabench_config::settings::options::OptionError),
    /// A `requires_capabilities` expression cannot be evaluated.
    #[error("`requires_capabilities` of `{bench}`: {source}")]
    Capability {
        /// The benchmark.
        bench: String,
        /// What is wrong with the expression.
        source: milabench_config::placeholders::expr::ExprError,
    },
    /// A `benchfile.py` could not be evaluated by the pack host.
    #[error("benchmark `{bench}`: {message}\n  fix: {fix}")]
    PackHost {
        /// The benchmark (or its folder).
        bench: String,
        /// What went wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A scaling file (`sizer.config`, `sizer.save`) cannot be read or written.
    #[error(transparent)]
    Scaling(#[from] milabench_config::scaling::ScalingError),
    /// A sweep (`multirun`, `--sweep`) cannot be expanded.
    #[error(transparent)]
    Sweep(#[from] milabench_config::sweep::SweepError),
    /// The record of a sweep's finished runs cannot be read or written.
    #[error("the record of the sweep's finished runs, {}: {source}\n  fix: check the file (MILABENCH_MULTIRUN_CACHE or `multirun.cache` names it), or delete it to run the whole sweep again", path.display())]
    SweepRecord {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A benchmark cannot be planned.
    #[error(transparent)]
    Plan(#[from] milabench_plan::PlanError),
    /// An environment could not be found, built or pinned.
    #[error(transparent)]
    Env(#[from] milabench_env::EnvError),
    /// The results database is misnamed or cannot be used.
    #[error(transparent)]
    Store(#[from] milabench_store::StoreError),
    /// A run folder could not be reported.
    #[error(transparent)]
    Report(#[from] milabench_report::ReportError),
    /// `--fidelity` names no preset of the suite.
    #[error(
        "unknown fidelity `{name}`: there is no {}\n  fix: use one of: {}",
        path.display(),
        if known.is_empty() { "(none: the folder has no presets)".to_string() } else { known.join(", ") }
    )]
    UnknownFidelity {
        /// The preset asked for.
        name: String,
        /// Where it was looked for.
        path: std::path::PathBuf,
        /// The presets there are.
        known: Vec<String>,
    },
    /// A file could not be read.
    #[error("could not read {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file or folder could not be written.
    #[error("could not write {}: {source}\n  fix: check that the base folder is writable and has space (--base or MILABENCH_BASE)", path.display())]
    Write {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The run folder already holds a run and `--resume` was not asked.
    #[error(
        "{} already holds a run\n  fix: pass --resume to finish it, or choose another --run-name",
        .0.display()
    )]
    RunExists(std::path::PathBuf),
    /// Another process holds the run folder: a `run` of the same name, or a benchmark a killed
    /// `run` left behind.
    #[error(
        "{} is in use by {} (a `milabench run` of the same name, or a process it started that is still running)\n  fix: wait for it to end (or stop it), or choose another --run-name",
        path.display(),
        milabench_metrics::describe_holders(holders)
    )]
    RunInUse {
        /// The run folder.
        path: std::path::PathBuf,
        /// The live processes holding its lock.
        holders: Vec<u32>,
    },
    /// Another process runs this benchmark into the same shared run folder (two tasks of a job
    /// array given the same benchmark).
    #[error(
        "benchmark `{bench}` of {} is being run by {} (another process writing the same run folder)\n  fix: give each benchmark to one task only (`milabench slurm submit --per-bench` does), or wait for that one to end",
        path.display(),
        milabench_metrics::describe_holders(holders)
    )]
    BenchInUse {
        /// The benchmark.
        bench: String,
        /// The run folder.
        path: std::path::PathBuf,
        /// The live processes holding the benchmark's lock.
        holders: Vec<u32>,
    },
    /// The run folder's lock file could not be created or written.
    #[error(transparent)]
    RunLock(milabench_metrics::LockError),
    /// `--resume` names a run folder that does not exist.
    #[error(
        "--resume: there is no run to resume at {}\n  fix: give the --run-name of an earlier run (a folder under the runs folder), or leave out --resume to start a new run",
        .0.display()
    )]
    NoRunToResume(std::path::PathBuf),
    /// `--repeat` is 0 or above [`MAX_REPEAT`](crate::planning::MAX_REPEAT).
    #[error(
        "--repeat {0}: a run repeats its suite 1 to {max} times (each repeat of each benchmark writes its own files, and the whole schedule is planned before the first benchmark starts)\n  fix: give --repeat between 1 and {max}; for more measurements, start several runs and give them all to `milabench report --runs`",
        max = crate::planning::MAX_REPEAT
    )]
    RepeatOutOfRange(usize),
    /// `--resume` asked for other repeats than the run was started with.
    #[error(
        "--resume: the run at {} was started with {recorded}, not {asked}; resuming with other repeats would mix two plans in one folder\n  fix: leave out --repeat and --interleave (the run's own plan is taken), or start a new run",
        path.display()
    )]
    RepeatMismatch {
        /// The run folder.
        path: std::path::PathBuf,
        /// The plan it was started with.
        recorded: crate::planning::RepeatPlan,
        /// The plan asked for.
        asked: crate::planning::RepeatPlan,
    },
    /// A selected benchmark cannot be installed, prepared or run as written, or none is
    /// selected.
    #[error("{problem}\n  fix: {fix}")]
    NotRunnable {
        /// What is missing, naming the benchmark.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// The machine could not be described (CPU, memory, GPUs).
    #[error("cannot read this machine's facts: {0}")]
    System(#[source] milabench_system::SystemError),
    /// The orchestrator failed to run a benchmark (not the benchmark failing).
    #[error(transparent)]
    Exec(#[from] milabench_exec::ExecError),
    /// The `SLURM_*` variables of the job this process runs in cannot be read.
    #[error(
        "cannot read the Slurm allocation: {0}\n  fix: run milabench in the job's own environment, or pass --system FILE to describe the nodes yourself"
    )]
    SlurmAllocation(#[from] milabench_cluster::slurm::AllocationError),
    /// The machine has GPUs of more than one vendor and no arch was chosen.
    #[error(
        "GPUs of several vendors were found ({found})\n  fix: choose one with --arch or MILABENCH_GPU_ARCH"
    )]
    AmbiguousArch {
        /// The vendors found.
        found: String,
    },
}

impl Error {
    /// Whether the error is the user's input (as opposed to the machine or a bug).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::Settings(_)
                | Error::Config(_)
                | Error::NoSuite
                | Error::AmbiguousArch { .. }
                | Error::Options(_)
                | Error::Capability { .. }
                | Error::Sweep(_)
                | Error::Scaling(milabench_config::scaling::ScalingError::Shape { .. })
                | Error::Plan(_)
                | Error::PackHost { .. }
                | Error::UnknownFidelity { .. }
                | Error::RunExists(_)
                | Error::RunInUse { .. }
                | Error::BenchInUse { .. }
                | Error::NoRunToResume(_)
                | Error::RepeatMismatch { .. }
                | Error::RepeatOutOfRange(_)
                | Error::NotRunnable { .. }
                | Error::SlurmAllocation(_)
                | Error::Store(milabench_store::StoreError::UnknownScheme { .. })
        )
    }
}
