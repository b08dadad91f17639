//! Errors of the facade's combined steps, and the exit code each deserves.

use milabench_config::ConfigError;
use milabench_config::settings::SettingsError;
use milabench_exec::ExitCode;

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
    #[error(
        "`requires_capabilities` of `{bench}` cannot be evaluated\n  fix: write comparisons over the system such as `gpu['count'] > 1` or `len(nodes) >= 2`"
    )]
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
    /// A node could not be made ready for the run's containers (its image pulled, loaded or
    /// converted, or its folders made).
    #[error(
        "the container image {image} could not be made ready on node {node}: {said}\n  fix: check the image name and that the node reaches its registry (`milabench check` probes each node), or give a local file (`container.archive`, a .sif or .sqsh image)"
    )]
    ContainerImage {
        /// The node.
        node: String,
        /// The image.
        image: String,
        /// What the runtime said.
        said: String,
    },
    /// A scaling file (`sizer.config`, `sizer.save`) cannot be read or written.
    #[error(transparent)]
    Scaling(#[from] milabench_config::scaling::ScalingError),
    /// A sweep (`multirun`, `--sweep`) cannot be expanded.
    #[error(transparent)]
    Sweep(#[from] milabench_config::sweep::SweepError),
    /// The record of a sweep's finished runs cannot be read or written.
    #[error("could not read or write the record of the sweep's finished runs, {}\n  fix: check the file (MILABENCH_MULTIRUN_CACHE or `multirun.cache` names it), or delete it to run the whole sweep again", path.display())]
    SweepRecord {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--resume` was given to a sweep, which goes on where it stopped by itself.
    #[error(
        "--resume does not apply to a sweep: a sweep started again skips its finished runs by itself (recorded in {})\n  fix: run the same command without --resume",
        record.display()
    )]
    SweepResume {
        /// The sweep's record of finished runs.
        record: std::path::PathBuf,
    },
    /// A run of a sweep cannot start: its name or one of its settings is refused. Found before
    /// the sweep's first run, for every run.
    #[error("sweep run `{run}` cannot start; nothing of the sweep ran")]
    SweepRun {
        /// The run's name.
        run: String,
        /// Why.
        source: Box<Error>,
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
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file or folder could not be written.
    #[error("could not write {}\n  fix: check that the base folder is writable and has space (--base or MILABENCH_BASE)", path.display())]
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
    /// `--repeat` is 0 or above [`MAX_REPEAT`](crate::repeat::MAX_REPEAT).
    #[error(
        "--repeat {0}: a run repeats its suite 1 to {max} times (each repeat of each benchmark writes its own files, and the whole schedule is planned before the first benchmark starts)\n  fix: give --repeat between 1 and {max}; for more measurements, start several runs and give them all to `milabench report --runs`",
        max = crate::repeat::MAX_REPEAT
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
        recorded: crate::repeat::RepeatPlan,
        /// The plan asked for.
        asked: crate::repeat::RepeatPlan,
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
    #[error("cannot read this machine's facts")]
    System(#[source] milabench_system::SystemError),
    /// The orchestrator failed to run a benchmark (not the benchmark failing).
    #[error(transparent)]
    Exec(#[from] milabench_exec::ExecError),
    /// The `SLURM_*` variables of the job this process runs in cannot be read.
    #[error(
        "cannot read the Slurm allocation\n  fix: run milabench in the job's own environment, or pass --system FILE to describe the nodes yourself"
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
    /// The exit code a command that ends on this error deserves: [`ExitCode::BadInput`] for
    /// what the user gave (suite, system file, settings, flags, names),
    /// [`ExitCode::Internal`] for what the machine would not do (a file that cannot be written,
    /// a database that cannot be reached) or a bug, [`ExitCode::BenchmarkFailures`] for an
    /// installer that failed, [`ExitCode::Interrupted`] for Ctrl-C.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Settings(_)
            | Error::Config(_)
            | Error::NoSuite
            | Error::Options(_)
            | Error::Capability { .. }
            | Error::PackHost { .. }
            | Error::Sweep(_)
            | Error::Plan(_)
            | Error::UnknownFidelity { .. }
            | Error::RunExists(_)
            | Error::RunInUse { .. }
            | Error::BenchInUse { .. }
            | Error::NoRunToResume(_)
            | Error::RepeatOutOfRange(_)
            | Error::RepeatMismatch { .. }
            | Error::NotRunnable { .. }
            | Error::SlurmAllocation(_)
            | Error::SweepResume { .. }
            | Error::AmbiguousArch { .. } => ExitCode::BadInput,
            Error::SweepRecord { .. }
            | Error::Read { .. }
            | Error::Write { .. }
            | Error::System(_)
            | Error::ContainerImage { .. } => ExitCode::Internal,
            Error::SweepRun { source, .. } => source.exit_code(),
            Error::Env(e) => e.exit_code(),
            Error::Exec(e) => e.exit_code(),
            Error::Scaling(e) => ExitCode::bad_input_or_internal(e.is_bad_input()),
            Error::Store(e) => ExitCode::bad_input_or_internal(e.is_bad_input()),
            Error::Report(e) => ExitCode::bad_input_or_internal(e.is_bad_input()),
            Error::RunLock(e) => ExitCode::bad_input_or_internal(e.is_bad_input()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::path::PathBuf;

    use milabench_env::EnvError;
    use milabench_metrics::MetricsError;

    use super::*;

    #[test]
    fn the_users_input_is_bad_input() {
        assert_eq!(Error::NoSuite.exit_code(), ExitCode::BadInput);
        assert_eq!(Error::RepeatOutOfRange(0).exit_code(), ExitCode::BadInput);
        let scheme = milabench_store::StoreError::UnknownScheme {
            scheme: "mysql".into(),
        };
        assert_eq!(Error::Store(scheme).exit_code(), ExitCode::BadInput);
        let not_installed = EnvError::NotInstalled {
            bench: "llama".into(),
            group: "torch".into(),
            venv: "venv/torch".into(),
            state: "not installed".into(),
        };
        assert_eq!(Error::Env(not_installed).exit_code(), ExitCode::BadInput);
    }

    #[test]
    fn a_full_disk_is_an_internal_or_environment_failure() {
        let full = || std::io::Error::from(ErrorKind::StorageFull);
        let write = Error::Write {
            path: PathBuf::from("runs/r/meta.json"),
            source: full(),
        };
        assert_eq!(write.exit_code(), ExitCode::Internal);
        assert_eq!(
            write.to_string().lines().next(),
            Some("could not write runs/r/meta.json"),
            "the cause is left to `source`"
        );
        let data = milabench_exec::ExecError::Write(MetricsError::Write {
            path: PathBuf::from("runs/r/bench.D0.data"),
            error: full(),
        });
        assert_eq!(Error::Exec(data).exit_code(), ExitCode::Internal);
        let install = EnvError::Io {
            action: "could not create",
            path: "venv/torch".into(),
            source: std::io::Error::other("No space left on device"),
        };
        assert_eq!(Error::Env(install).exit_code(), ExitCode::Internal);
        let scaling = milabench_config::scaling::ScalingError::Write {
            path: PathBuf::from("scaling.yaml"),
            source: full(),
        };
        assert_eq!(Error::Scaling(scaling).exit_code(), ExitCode::Internal);
    }

    #[test]
    fn a_failed_install_is_a_failure_of_what_was_asked() {
        let failed = EnvError::StepFailed {
            group: "torch".into(),
            step: "installing packages".into(),
            status: " (exit status 1)".into(),
            details: String::new(),
            log: "install.log".into(),
        };
        assert_eq!(Error::Env(failed).exit_code(), ExitCode::BenchmarkFailures);
    }

    #[test]
    fn ctrl_c_during_an_install_is_an_interruption() {
        let interrupted = EnvError::Interrupted {
            group: "torch".into(),
            log: "install.log".into(),
        };
        assert_eq!(Error::Env(interrupted).exit_code(), ExitCode::Interrupted);
    }
}
