//! The milabench facade: one crate that other Rust tools embed to resolve suites and, as the
//! layers arrive, install, plan, run and report them. It re-exports the layer crates and the
//! process exit codes every front end shares ([`ExitCode`]), and holds the steps that combine
//! them (settings -> system -> suite).
//!
//! ```no_run
//! use milabench::config::settings::{EnvVars, Settings, SettingsFlags};
//! let env = EnvVars::from_process();
//! let settings = Settings::load(&SettingsFlags::default(), &env)?;
//! let resolved = milabench::resolve(&settings, &milabench::Selection::default(), &env)?;
//! for bench in resolved.suite.runnable() {
//!     println!("{} {:?}", bench.name, bench.argv()?);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use milabench_cluster as cluster;
pub use milabench_config as config;
pub use milabench_env as env;
pub use milabench_exec as exec;
pub use milabench_metrics as metrics;
pub use milabench_plan as plan;
pub use milabench_report as report;
pub use milabench_store as store;
pub use milabench_system as system;
pub use milabench_validate as validate;

pub mod arch;
mod cache;
pub mod check;
pub mod error;
pub mod host;
pub mod local_gpus;
pub mod pack_host;
pub mod pipeline;
pub mod planning;
mod prepared;
pub mod resolve;
pub mod run;
pub mod scaffold;
pub mod session;
pub mod sizer;
pub mod sweep;

pub use error::Error;
pub use milabench_exec::ExitCode;
pub use pipeline::{Phase, ReportFiles, RunReport, RunRequest, RunResult, Stop};
pub use planning::{PlannedBench, REPEAT_FILE, RepeatOrder, RepeatPlan, plan_suite};
pub use resolve::{Resolved, Selection, resolve};
pub use session::{
    BundleOptions, BundleSummary, GroupSurvey, InstallObserver, InstallOptions, InstallPlan,
    InstallSummary, RunRecord, Session, SessionRequest,
};
pub use sweep::{Sweep, SweepRecord, SweepRun, sweep_of};
