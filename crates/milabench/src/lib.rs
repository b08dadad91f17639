//! The milabench facade: one crate that other Rust tools embed to resolve suites, install,
//! plan, run and report them ([`Session::execute`] does all of `milabench run`). It exports
//! what an embedder names, item by item in named modules: the settings ([`settings`]), the
//! resolved suite ([`suite`]), what observers receive ([`observe`]), an install's reports
//! ([`install`]), the results ([`results`]), the results database ([`store`]), the dashboard
//! push ([`publish`]), Slurm submission ([`slurm`]), the serving load generator ([`serving`]),
//! the replay of event files ([`replay`]), this machine's facts ([`system`]); the session, its
//! requests and results at the root, with the process exit codes every front end shares
//! ([`ExitCode`]). The layer crates underneath are its own business: none is re-exported whole.
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
    pub use milabench_config::settings::{
        Arch, EnvVars, Installer, Settings, SettingsError, SettingsFlags,
    };
}

/// The suite as resolved: its benchmarks typed once over the raw configuration tree, why a
/// suite, system or sweep is refused, and the sizer's scaling files.
pub mod suite {
    pub use milabench_config::placeholders::sizer::to_bytes;
    pub use milabench_config::scaling::{ScalingError, ScalingFile, observations};
    pub use milabench_config::sweep::SweepError;
    pub use milabench_config::{ConfigError, Node, ResolvedBench, Value};
}

/// What observers of a session receive: its processes' specs, records and outcomes, the plans
/// of its benchmarks, the preflight's checks; and what a front end passes in or sets up (an
/// interrupt, a watchdog, a precision stop, the validation layers, the open-file limit).
pub mod observe {
    pub use milabench_cluster::{Check, Status};
    pub use milabench_exec::{
        BenchOutcome, ExecError, ExecObserver, Interrupt, PrecisionStop, ProcessOutcome,
        ProcessSpec, WatchdogCommand, error_line, error_report, install_ctrl_c,
        raise_open_file_limit, serve_watchdog,
    };
    pub use milabench_metrics::{DataPayload, Event, Failure, GpuSample, Pipe, Record, ReturnCode};
    pub use milabench_plan::BenchPlan;
    pub use milabench_validate::{LayerName, ValidationReport};

    pub use crate::events::{RunEvent, RunObserver, RunSummary, SetupFailure};
}

/// What an install reports and surveys: its events and outcomes per install group, what an
/// environment has of each requirement, the wheelhouse of a bundle, a venv's fingerprint, who
/// holds a group's lock.
pub mod install {
    pub use milabench_env::{
        BundleTarget, EnvError, Event, InstallGroup, Outcome, Sources, Survey, Verdict,
        patch_progress_bars, read_fingerprint,
    };
    pub use milabench_metrics::describe_holders;
}

/// The results of runs as the report reads them: the table, its score, its renderings, the
/// summary, the comparison of runs, the sweep report, the run folders' `.data` files.
pub mod results {
    pub use milabench_metrics::{MetricsError, consolidate_runs, discover_data_files};
    pub use milabench_report::{
        DEFAULT_NOISE_FLOOR_PCT, Format, REPORT_PAGE, REPORT_TEXT, Report, ReportError,
        ReportOptions, RunSelection, RunSet, SuiteEntry, SweepInput, Verdict, compare_runs,
        csv_lines, load_runs, markdown_text, render, render_comparison, render_comparison_html,
        render_html, render_sweep_csv, render_sweep_html, render_sweep_json, render_sweep_markdown,
        render_sweep_text, report_loaded, report_runs, report_sweep, summarize, summary_json,
    };
}

/// The results database: runs imported and queried, their history, the points of sweeps.
pub mod store {
    pub use milabench_store::{
        HistoryQuery, HistoryRow, ImportOptions, ImportOutcome, RunSummary, Store, StoreError,
        StoreLocation, SweepPoint, run_folders,
    };
}

/// Run folders pushed to a milabench dashboard (`--publish`).
pub mod publish {
    pub use milabench_store::publish::{
        ArchiveLimits, DEFAULT_DASHBOARD_URL, PublishError, PublishEvent, PushKey, check_url,
        publish, zip_run_folders,
    };
}

/// A suite run submitted to Slurm and followed to its end (`slurm submit`), and the queue's
/// words for a job.
pub mod slurm {
    pub use milabench_cluster::slurm::{JobStatus, QueuePlace};
    pub use milabench_cluster::submission::{
        JobObserver, PerBench, ReportOutput, Submission, SubmissionRequest, SubmitError, SuiteWords,
    };
}

/// The LLM serving load generator (`milabench load`): a load spec, its run against an
/// OpenAI-compatible endpoint (a server started for it when asked), what it measured, and its
/// results as a run folder's events.
pub mod serving {
    pub use milabench_load::events::records;
    pub use milabench_load::schedule::ArrivalShape;
    pub use milabench_load::server::{ManagedServer, STOP_GRACE, ServerOutput, command_and_url};
    pub use milabench_load::workload::{LengthDist, Workload};
    pub use milabench_load::{
        Api, DEFINITIONS, Endpoint, Interval, LatencySummary, LoadError, LoadResult, LoadSpec,
        Measured, RequestOptions, ResultsFile, Scenario, Slo, SloSearch, Step, Stop, Summary,
        parse_duration, run,
    };
    pub use milabench_metrics::DataChannelWriter;
}

/// An event file replayed through the validation layers (`replay`).
pub mod replay {
    pub use milabench_validate::{
        ReplayError, UnknownLayer, Validation, ValidationContext, replay_entries,
    };
}

/// What `milabench sysinfo` shows: the machine's facts (CPU, memory, GPUs, software) found
/// once, outside a suite.
pub mod system {
    pub use milabench_system::{SystemError, SystemFacts, discover};
}

mod arch;
mod cache;
mod check;
mod ci_matrix;
mod containers;
mod error;
mod events;
mod host;
mod local_gpus;
mod pack_host;
mod pipeline;
mod planning;
mod prepared;
mod repeat;
mod resolve;
mod run;
mod scaffold;
mod session;
mod shared_data;
mod sizer;
mod sweep;

pub use arch::arch_detections;
pub use check::CheckOptions;
pub use ci_matrix::{CiGroup, ci_groups};
pub use error::Error;
pub use milabench_exec::ExitCode;
pub use pipeline::{
    DryRun, Phase, ReportFiles, RunReport, RunRequest, RunResult, Stop, install_exit_code,
};
pub use planning::{PlannedBench, plan_context, plan_contexts_made, plan_one, plan_suite};
pub use repeat::{MAX_REPEAT, REPEAT_FILE, RepeatOrder, RepeatPlan};
pub use resolve::{
    DefaultSuite, Resolved, SLURM_SYSTEM_ORIGIN, Selection, arch_of, default_suite, report_entries,
    resolve, slurm_allocation,
};
pub use run::{RUN_LOCK_FILE, RunFolder, RunOptions};
pub use scaffold::{ScaffoldError, new_benchmark};
pub use session::{
    BundleOptions, BundleSummary, GroupSurvey, InstallObserver, InstallOptions, InstallPlan,
    InstallSummary, RunRecord, Session, SessionRequest, VALIDATION_FILE,
};
pub use shared_data::{
    SharedDataError, SharedSetup, SharedStep, archive_shared_data, shared_setup,
};
pub use sweep::{
    Sweep, SweepDriver, SweepOutcome, SweepRecord, SweepRun, load_sweep_file, sweep_of,
};
