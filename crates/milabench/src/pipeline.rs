//! [`Session::execute`]: everything `milabench run` does, in one call an embedder makes too:
//! the preflight, the install of the environments, the prepare steps, the run with its
//! validation and results store, the report and the files written beside the run
//! (`report.html`, `validation.txt`). Each phase is announced to the observer
//! ([`RunEvent::Phase`]) and what it did is passed on as it ends, so a front end shows the same
//! thing at the same moment whether it runs the steps one by one or all at once.
//!
//! ```no_run
//! use milabench::settings::{EnvVars, Settings, SettingsFlags};
//! use milabench::{RunRequest, Session, SessionRequest};
//!
//! let env = EnvVars::from_process();
//! let settings = Settings::load(&SettingsFlags::default(), &env)?;
//! let session = Session::new(settings, env, SessionRequest::default())?;
//! let result = session.execute(&RunRequest::default(), &mut ())?;
//! std::process::exit(result.exit_code().code().into());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use milabench_cluster::{Check, Status};
use milabench_env::EnvError;
use milabench_exec::{ExitCode, Interrupt, PrecisionStop, WatchdogCommand};
use milabench_metrics::ReturnCode;
use milabench_plan::BenchPlan;
use milabench_report::{
    Format, REPORT_PAGE, REPORT_TEXT, Report, ReportOptions, RunSet, render, render_html,
};
use milabench_validate::LayerName;

use crate::check::CheckOptions;
use crate::error::Error;
pub use crate::events::Phase;
use crate::events::{InstallSummary, RunEvent, RunObserver, RunSummary, SetupFailure};
use crate::planning::PlannedBench;
use crate::repeat::RepeatPlan;
use crate::run::RunOptions;
use crate::session::{InstallOptions, RunRecord, Session};

/// What `execute` is asked to do: the flags of `milabench run`, each with its default.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The repeats asked for (`--repeat`, `--interleave`); `None`: once, or on resume the
    /// run's recorded repeats.
    pub repeat: Option<RepeatPlan>,
    /// Go on with the run of this name, leaving out what it holds complete.
    pub resume: bool,
    /// Share the run folder with other runs of other benchmarks (a Slurm job array).
    pub shared_folder: bool,
    /// Run the fast preflight first, and stop when a check fails.
    pub preflight: bool,
    /// Install the environments and run the prepare steps first.
    pub setup: bool,
    /// The validation layers that judge the event streams.
    pub validations: Vec<LayerName>,
    /// Stop each benchmark once its rate is this precise (`--precision`).
    pub precision: Option<PrecisionStop>,
    /// SIGTERM-to-SIGKILL grace period of the benchmarks' processes.
    pub grace: Duration,
    /// Stops every phase when triggered (the front end's Ctrl-C handler sets it).
    pub interrupt: Interrupt,
    /// The watchdog started beside each process (see [`milabench_exec::WatchdogCommand`]).
    pub watchdog: Option<WatchdogCommand>,
    /// The milabench program the nodes of the system must have at the same path; `None`: this
    /// process's own.
    pub program: Option<PathBuf>,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            repeat: None,
            resume: false,
            shared_folder: false,
            preflight: true,
            setup: true,
            validations: LayerName::DEFAULT.to_vec(),
            precision: None,
            grace: RunOptions::default().grace,
            interrupt: Interrupt::new(),
            watchdog: None,
            program: None,
        }
    }
}

/// Why `execute` stopped before running the benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A preflight check failed (see [`RunResult::preflight_failures`]).
    Preflight,
    /// An environment could not be built (see [`RunResult::install`]).
    Install,
    /// The interrupt was triggered during the set-up.
    Interrupted,
}

/// The report `execute` made of the run folder.
#[derive(Debug)]
pub struct RunReport {
    /// The results table and score.
    pub report: Report,
    /// The runs read, for a page.
    pub set: RunSet,
    /// What reading the run folder and scoring warned about.
    pub warnings: Vec<String>,
    /// Where the HTML page was written, or why it was not (`None`: not asked for, e.g. in a
    /// folder shared with runs still writing into it).
    pub page: Option<Result<PathBuf, String>>,
    /// Where the text table was written, or why it was not (`None`: not asked for).
    pub text: Option<Result<PathBuf, String>>,
}

/// What `execute` did, phase by phase.
#[derive(Debug)]
pub struct RunResult {
    /// The run folder.
    pub run_dir: PathBuf,
    /// Why the benchmarks did not run, when they did not.
    pub stopped: Option<Stop>,
    /// The failed preflight checks.
    pub preflight_failures: Vec<Check>,
    /// What the install did (`None`: no set-up asked for, or stopped before).
    pub install: Option<InstallSummary>,
    /// The run itself (`None`: stopped before it).
    pub run: Option<RunRecord>,
    /// The report of the run folder (`None`: no benchmark ran).
    pub report: Option<RunReport>,
}

impl RunResult {
    /// The exit code a front end ends with: 130 when interrupted; the first failed group's when
    /// an install failed; 1 when the preflight, a benchmark, a validation layer or the report's
    /// gate failed; 0 otherwise (also when nothing was selected to run).
    pub fn exit_code(&self) -> ExitCode {
        match self.stopped {
            Some(Stop::Interrupted) => return ExitCode::Interrupted,
            Some(Stop::Preflight) => return ExitCode::BenchmarkFailures,
            Some(Stop::Install) => {
                return self
                    .install
                    .as_ref()
                    .map_or(ExitCode::BenchmarkFailures, install_exit_code);
            }
            None => {}
        }
        let Some(run) = &self.run else {
            return ExitCode::Success;
        };
        // No report: nothing ran (all skipped or none selected).
        let passed = self
            .report
            .as_ref()
            .is_none_or(|r| run.success() && r.report.passes());
        if run.summary.interrupted {
            ExitCode::Interrupted
        } else if passed {
            ExitCode::Success
        } else {
            ExitCode::BenchmarkFailures
        }
    }
}

impl RunSummary {
    /// The benchmarks whose set-up (in this summary of prepare steps) failed: those whose
    /// benchfile gave no plan, and those whose prepare step failed, each with the status of its
    /// first failed process and where its log is.
    pub fn setup_failures(&self) -> Vec<SetupFailure> {
        let failed_steps = self.outcomes.iter().filter_map(|outcome| {
            let failed = outcome.processes.iter().find(|p| !p.exited_cleanly())?;
            let status = match (&failed.return_code, failed.errors.first()) {
                (_, Some(error)) => error.clone(),
                (ReturnCode::Code(code), None) => format!("exit status {code}"),
                (other, None) => format!("ended with {other:?}"),
            };
            Some(SetupFailure {
                bench: outcome.bench.clone(),
                reason: format!(
                    "its prepare step failed ({status}); its log: {}",
                    failed.data_file.display()
                ),
            })
        });
        self.failed_setup
            .iter()
            .cloned()
            .chain(failed_steps)
            .collect()
    }

    /// The exit code of prepare steps: 130 when interrupted, 1 when one failed.
    pub fn prepare_exit_code(&self) -> ExitCode {
        if self.interrupted {
            ExitCode::Interrupted
        } else if self.setup_failures().is_empty() {
            ExitCode::Success
        } else {
            ExitCode::BenchmarkFailures
        }
    }
}

impl Session {
    /// Runs the whole pipeline of `milabench run` as `request` asks: claims the run folder
    /// (before any set-up, so a second run of the same name is refused at once), runs the
    /// preflight, installs and prepares (a benchmark whose prepare step failed is recorded as
    /// failed and the others run), runs the suite with validation and the results store,
    /// then reports the run folder and writes its page. Errors are the ones that stop it all
    /// (a suite that cannot run, a folder that cannot be written); failures of benchmarks and
    /// checks are in the result.
    pub fn execute(
        &self,
        request: &RunRequest,
        observer: &mut dyn RunObserver,
    ) -> Result<RunResult, Error> {
        let repeats = crate::run::repeat_plan(&self.run_dir(), request.resume, request.repeat)?;
        let folder = if request.shared_folder {
            self.claim_shared_run_folder()?
        } else {
            self.claim_run_folder(request.resume)?
        };
        let mut result = RunResult {
            run_dir: folder.path().to_path_buf(),
            stopped: None,
            preflight_failures: Vec::new(),
            install: None,
            run: None,
            report: None,
        };
        if request.preflight {
            observer.on_run_event(RunEvent::Phase(Phase::Preflight));
            result.preflight_failures = self.preflight_failures(request)?;
            if !result.preflight_failures.is_empty() {
                observer.on_run_event(RunEvent::PreflightFailed {
                    checks: &result.preflight_failures,
                });
                result.stopped = Some(Stop::Preflight);
                return Ok(result);
            }
        }
        let mut failed_setup = Vec::new();
        if request.setup {
            // In a container the environments come with the image: nothing is installed on
            // the host (the prepare steps run in the image).
            if self.resolved().suite.system.container.is_none() {
                observer.on_run_event(RunEvent::Phase(Phase::Install));
                let options = InstallOptions {
                    interrupt: Some(request.interrupt.clone()),
                    ..InstallOptions::default()
                };
                let install = match observer.install_observer() {
                    Some(install_observer) => self.install(&options, install_observer)?,
                    None => self.install(&options, &mut ())?,
                };
                observer.on_run_event(RunEvent::Installed { summary: &install });
                let installed = install.success();
                result.install = Some(install);
                if !installed {
                    result.stopped = Some(if request.interrupt.is_set() {
                        Stop::Interrupted
                    } else {
                        Stop::Install
                    });
                    return Ok(result);
                }
            }
            observer.on_run_event(RunEvent::Phase(Phase::Prepare));
            let options = self.run_options(request, RepeatPlan::default(), false);
            let prepared = self.prepare(&options, observer)?;
            failed_setup = prepared.setup_failures();
            observer.on_run_event(RunEvent::Prepared {
                summary: &prepared,
                failures: &failed_setup,
            });
            if prepared.interrupted {
                result.stopped = Some(Stop::Interrupted);
                return Ok(result);
            }
        }
        let benches: Vec<_> = self.resolved().suite.runnable().collect();
        let schedule: Vec<_> = repeats
            .order
            .schedule(repeats.repeat, benches.len())
            .into_iter()
            .map(|(_, bench)| benches[bench])
            .collect();
        observer.on_run_event(RunEvent::Schedule { benches: &schedule });
        observer.on_run_event(RunEvent::Phase(Phase::Run));
        let mut options = self.run_options(request, repeats, request.resume);
        options.failed_setup = failed_setup;
        let mut run = self.run(&folder, &options, &request.validations, observer)?;
        drop(folder);
        let summary = &run.summary;
        let ran = !(summary.outcomes.is_empty()
            && summary.already_done.is_empty()
            && summary.failed_setup.is_empty());
        if ran {
            observer.on_run_event(RunEvent::Phase(Phase::Report));
            // Who reports a shared folder as a whole writes its page.
            let files = ReportFiles {
                page: !request.shared_folder,
                text: false,
            };
            // Skipped for unmet capabilities: absent on purpose, not failed.
            let excused = summary.skipped.clone();
            let report = match run.report.take() {
                Some(computed) => {
                    let (report, set) = computed?;
                    write_report_files(&summary.run_dir, report, set, files)
                }
                None => {
                    self.write_report(&summary.run_dir, excused, files, request.shared_folder)?
                }
            };
            result.report = Some(report);
        }
        result.run = Some(run);
        Ok(result)
    }

    /// What `execute` would start for `request`, without starting anything (`run --dry-run`):
    /// the plans of the schedule, less, on resume, the benchmarks the run folder already holds
    /// complete.
    pub fn dry_run(&self, request: &RunRequest) -> Result<DryRun, Error> {
        let run_dir = self.run_dir();
        let repeats = crate::run::repeat_plan(&run_dir, request.resume, request.repeat)?;
        let mut dry_run = DryRun::default();
        for planned in self.plan(repeats.repeat, repeats.order)? {
            match planned {
                PlannedBench::Run(plan)
                    if request.resume && crate::run::already_complete(&plan, &run_dir) => {}
                PlannedBench::Run(plan) => dry_run.plans.push(plan),
                PlannedBench::Skipped { bench, unmet } => dry_run.skipped.push((bench, unmet)),
                PlannedBench::BrokenBenchfile { bench, reason } => {
                    dry_run.broken.push((bench, reason));
                }
            }
        }
        // Each repeat of a broken benchmark is broken the same way: said once.
        dry_run.broken.dedup();
        Ok(dry_run)
    }

    /// The failed checks of the fast preflight (no package index round trip; warnings are
    /// `milabench check`'s to show: the set-up installs what is missing anyway).
    fn preflight_failures(&self, request: &RunRequest) -> Result<Vec<Check>, Error> {
        let program = match &request.program {
            Some(program) => program.clone(),
            None => std::env::current_exe().map_err(|source| Error::Read {
                path: PathBuf::from("/proc/self/exe"),
                source,
            })?,
        };
        let checks = self.check(&CheckOptions {
            need_disk_gib: None,
            package_index: false,
            program,
        })?;
        Ok(checks
            .into_iter()
            .filter(|c| c.status == Status::Fail)
            .collect())
    }

    /// The run options of `request`, with `repeats`, resuming or not.
    fn run_options(&self, request: &RunRequest, repeats: RepeatPlan, resume: bool) -> RunOptions {
        RunOptions {
            repeat: repeats.repeat,
            order: repeats.order,
            resume,
            grace: request.grace,
            interrupt: request.interrupt.clone(),
            watchdog: request.watchdog.clone(),
            precision: request.precision,
            failed_setup: Vec::new(),
        }
    }

    /// The report of the run folder `run_dir` (its benchmarks in `excused` absent on purpose)
    /// and the files `files` asks for written into it. A file that cannot be written is said in
    /// the result, not fatal: the folder holds what it shows. In a folder `shared` with other
    /// runs, only the selected benchmarks are read (others may still be writing).
    pub fn write_report(
        &self,
        run_dir: &Path,
        excused: Vec<String>,
        files: ReportFiles,
        shared: bool,
    ) -> Result<RunReport, Error> {
        let options = ReportOptions {
            excused,
            ..ReportOptions::default()
        };
        let (report, set) = if shared {
            self.report_selected(run_dir, &options)?
        } else {
            self.report(run_dir, &options)?
        };
        Ok(write_report_files(run_dir, report, set, files))
    }
}

/// The run report of `report` and `set` (the report of the run folder `run_dir`), with the
/// files `files` asks for written into `run_dir`.
fn write_report_files(
    run_dir: &Path,
    report: Report,
    set: RunSet,
    files: ReportFiles,
) -> RunReport {
    let warnings = set
        .warnings()
        .into_iter()
        .chain(report.score_problem())
        .collect();
    let write = |name: &str, text: Result<String, String>| {
        let path = run_dir.join(name);
        text.and_then(|text| std::fs::write(&path, text).map_err(|e| e.to_string()))
            .map(|()| path)
    };
    let text = files
        .text
        .then(|| write(REPORT_TEXT, Ok(render(&report, Format::Text))));
    let page = files.page.then(|| {
        write(
            REPORT_PAGE,
            render_html(&report, &set).map_err(|e| e.to_string()),
        )
    });
    RunReport {
        report,
        set,
        warnings,
        page,
        text,
    }
}

/// What [`Session::dry_run`] found a run would do.
#[derive(Debug, Default)]
pub struct DryRun {
    /// The plans the run would start, in its order.
    pub plans: Vec<BenchPlan>,
    /// The benchmarks this system does not meet the requirements of, with the unmet
    /// `requires_capabilities` expressions.
    pub skipped: Vec<(String, Vec<String>)>,
    /// The benchmarks whose `benchfile.py` gives no plan, and why (a run records each as
    /// failed).
    pub broken: Vec<(String, String)>,
}

impl DryRun {
    /// The plans as a shell script that does what the run would do (`run --dry-run`).
    pub fn script(&self) -> String {
        milabench_plan::render_script(&self.plans)
    }
}

/// Which report files [`Session::write_report`] writes into the run folder.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportFiles {
    /// [`REPORT_PAGE`], the HTML page.
    pub page: bool,
    /// [`REPORT_TEXT`], the text table.
    pub text: bool,
}

/// The exit code of an install summary: that of its first failed group.
pub fn install_exit_code(summary: &InstallSummary) -> ExitCode {
    summary
        .results
        .iter()
        .find_map(|(_, result)| result.as_ref().err())
        .map_or(ExitCode::Success, EnvError::exit_code)
}
