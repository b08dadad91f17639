//! The milabench facade: one crate that other Rust tools embed to resolve suites, install,
//! plan, run and report them ([`Session::execute`] does all of `milabench run`). It exports
//! what an embedder names: the settings ([`settings`]), what observers receive ([`observe`]),
//! the results ([`results`]) and the process exit codes every front end shares ([`ExitCode`]);
//! the layer crates underneath are its own business.
//!
//! ```no_run
//! use milabench::settings::{EnvVars, Settings, SettingsFlags};
//! let env = EnvVars::from_process();
//! let settings = Settings::load(&SettingsFlags::default(), &env)?;
//! let resolved = milabench::resolve(&settings, &milabench::Selection::default(), &env)?;
//! for bench in resolved.suite.runnable() {
//!     println!("{} {:?}", bench.name, bench.argv);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// The settings a session is made from (built-in defaults, a settings file, `MILABENCH_*`
/// variables, flags), resolved once into typed values.
pub mod settings {
    pub use milabench_config::settings::{Arch, EnvVars, Installer, Settings, SettingsFlags};
}

/// What observers of a session receive: its processes' specs, records and outcomes, the plans
/// of its benchmarks, the install's progress, the preflight's checks; and what a front end
/// passes in (an interrupt, a watchdog, a precision stop, the validation layers).
pub mod observe {
    pub use milabench_cluster::{Check, Status};
    pub use milabench_env::{EnvError, Event as EnvEvent, InstallGroup, Outcome as InstallOutcome};
    pub use milabench_exec::{
        BenchOutcome, ExecObserver, Interrupt, PrecisionStop, ProcessOutcome, ProcessSpec,
        WatchdogCommand, error_line, error_report, install_ctrl_c,
    };
    pub use milabench_metrics::{Event, Record, ReturnCode};
    pub use milabench_plan::BenchPlan;
    pub use milabench_validate::{LayerName, ValidationReport};

    pub use crate::events::{RunEvent, RunObserver, RunSummary, SetupFailure};
}

/// The results of runs as the report reads them: the table, its score, its renderings.
pub mod results {
    pub use milabench_report::{
        Format, REPORT_PAGE, REPORT_TEXT, Report, ReportOptions, RunSet, SuiteEntry, render,
        render_html, report_runs,
    };
}

pub mod arch;
mod cache;
pub mod check;
pub mod ci_matrix;
mod containers;
pub mod error;
mod events;
pub mod host;
pub mod local_gpus;
pub mod pack_host;
mod pipeline;
mod planning;
mod prepared;
mod resolve;
mod run;
pub mod scaffold;
mod session;
pub mod shared_data;
mod sizer;
pub mod sweep;

pub use error::Error;
pub use milabench_exec::ExitCode;
pub use pipeline::{
    DryRun, Phase, ReportFiles, RunReport, RunRequest, RunResult, Stop, install_exit_code,
};
pub use planning::{
    MAX_REPEAT, PlannedBench, REPEAT_FILE, RepeatOrder, RepeatPlan, plan_context,
    plan_contexts_made, plan_one, plan_suite,
};
pub use resolve::{
    DefaultSuite, Resolved, SLURM_SYSTEM_ORIGIN, Selection, arch_of, default_suite, report_entries,
    resolve, slurm_allocation,
};
pub use run::{RUN_LOCK_FILE, RunFolder, RunOptions};
pub use session::{
    BundleOptions, BundleSummary, GroupSurvey, InstallObserver, InstallOptions, InstallPlan,
    InstallSummary, RunRecord, Session, SessionRequest, VALIDATION_FILE,
};
pub use sweep::{Sweep, SweepDriver, SweepOutcome, SweepRecord, SweepRun, sweep_of};
