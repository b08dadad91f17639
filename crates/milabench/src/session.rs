//! [`Session`]: one suite, resolved once from settings, and everything done with it (install,
//! prepare, run with validation, report). The CLI is one front end of it; another Rust tool
//! builds a session the same way and passes its own observers.
//!
//! ```no_run
//! use milabench::settings::{EnvVars, Settings, SettingsFlags};
//! use milabench::{Session, SessionRequest};
//!
//! let env = EnvVars::from_process();
//! let settings = Settings::load(&SettingsFlags::default(), &env)?;
//! let session = Session::new(settings, env, SessionRequest::default())?;
//! for bench in session.resolved().suite.runnable() {
//!     println!("{}", bench.name);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use camino::Utf8Path;
use milabench_config::settings::{EnvVars, Settings};
use milabench_env::{
    BundleTarget, Bundled, EnvError, EnvOptions, Environments, Event as EnvEvent, InstallGroup,
    ProjectTree, Sources, Survey, install_groups,
};
use milabench_exec::{ExecObserver, ProcessOutcome, ProcessSpec, error_line};
use milabench_metrics::Record;
use milabench_report::{Report, ReportOptions, RunSet, report_runs};
use milabench_store::{
    BenchEnd, PackStatus, RunEnd, RunRecorder, RunStart, Store, StoreLocation, SweepPoint,
};
use milabench_validate::{LayerName, Validation, ValidationContext, ValidationReport};

use crate::error::Error;
pub use crate::events::{InstallObserver, InstallPlan, InstallSummary};
use crate::events::{RunEvent, RunObserver, RunSummary};
use crate::planning::{PlannedBench, plan_one, prefetch_pack_host, repeat_contexts};
use crate::repeat::RepeatOrder;
use crate::resolve::{Resolved, Selection, resolve};
use crate::run::{RunFolder, RunOptions};
use crate::sweep::SweepRun;

pub use milabench_vocab::run_files::VALIDATION_FILE;

/// What a session works on besides the settings: the selection and the fidelity preset.
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    /// `--select`, `--exclude` and `--override`.
    pub selection: Selection,
    /// A fidelity preset (`smoke`, `normal`, `high`): `fidelity/<name>.yaml` beside the suite,
    /// applied as an override after the suite's own.
    pub fidelity: Option<String>,
    /// The run of a sweep this session makes: its name, options and overrides are applied,
    /// and it is written to [`SWEEP_FILE`](crate::sweep::SWEEP_FILE) in the run folder.
    pub sweep: Option<SweepRun>,
}

/// A suite resolved once, with its settings and environment: what `install`, `prepare`, `run`
/// and `report` share, so that each sees the same benchmarks with the same arguments.
#[derive(Debug)]
pub struct Session {
    settings: Settings,
    resolved: Resolved,
    /// The run of a sweep this session makes, if any.
    sweep: Option<SweepRun>,
    /// The results database `run` records into, checked when the session is made.
    store: StoreLocation,
}

/// What to install.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Rebuild environments that are up to date.
    pub force: bool,
    /// The requirements variant (default: the arch).
    pub variant: Option<String>,
    /// Where packages come from (`--find-links`, `--offline`).
    pub sources: Sources,
    /// Stops the install when triggered (Ctrl-C, SIGTERM): the running installer's process
    /// group is stopped and its group ends as interrupted. `None`: the installer stays in this
    /// process's group.
    pub interrupt: Option<milabench_exec::Interrupt>,
}

/// One group and what an install would do for it (or why that could not be told).
pub type GroupSurvey = (InstallGroup, Result<Survey, EnvError>);

/// What to put in a wheelhouse.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The requirements variant (default: the arch) and where the packages come from.
    pub install: InstallOptions,
    /// The wheelhouse folder.
    pub dest: camino::Utf8PathBuf,
    /// The machine the wheels are for.
    pub target: BundleTarget,
    /// Whether to add uv, for an offline install to bootstrap it (not needed with
    /// `--installer pip`).
    pub with_uv: bool,
}

/// What a bundle downloaded: one result per group (and one for uv first, when asked for).
#[derive(Debug)]
pub struct BundleSummary {
    /// The groups (named `uv` for the installer) and what became of each.
    pub results: Vec<(String, Result<Bundled, EnvError>)>,
}

impl BundleSummary {
    /// Whether every download succeeded.
    pub fn success(&self) -> bool {
        self.results.iter().all(|(_, result)| result.is_ok())
    }
}

/// What the run step did: the processes, the validation layers' verdicts on their event
/// streams, and what became of its record in the results database.
#[derive(Debug)]
pub struct RunRecord {
    /// The benchmarks run, skipped and left out.
    pub summary: RunSummary,
    /// The layers' report on the run's events (also written to [`VALIDATION_FILE`]).
    pub validation: ValidationReport,
    /// Where the run was recorded (the database, as a person should see it), or `None` when
    /// the store was skipped (see `store_problems`): the run folder stays the source of truth.
    pub recorded_in: Option<String>,
    /// What went wrong with the results database, each with how to import the run later.
    pub store_problems: Vec<String>,
    /// The scaling file `sizer.save` names and the benchmarks whose observation the run added.
    pub sizer_saved: Option<(std::path::PathBuf, Vec<String>)>,
    /// The run folder's report, computed once when the run ended (for the results store and
    /// [`Session::execute`]'s files); `None` for a folder shared with other runs. Taken by
    /// `execute`.
    pub report: Option<Result<(Report, RunSet), Error>>,
}

impl RunRecord {
    /// Whether every benchmark succeeded and every validation layer was satisfied.
    pub fn success(&self) -> bool {
        self.summary.success() && self.validation.passed()
    }
}

impl Session {
    /// Resolves the suite of `settings` for `request`: the one resolution every later step
    /// uses.
    pub fn new(
        mut settings: Settings,
        env: EnvVars,
        request: SessionRequest,
    ) -> Result<Session, Error> {
        let mut selection = request.selection;
        if let Some(run) = &request.sweep {
            settings.run_name = Some(run.name.clone());
            selection.overrides.extend(run.overrides.iter().cloned());
            selection.options.extend(run.options.iter().cloned());
        }
        if let Some(name) = &request.fidelity {
            selection
                .overrides
                .push(fidelity_override(&settings, name)?);
        }
        let resolved = resolve(&settings, &selection, &env)?;
        let store = StoreLocation::resolve(settings.db.as_deref(), settings.base.as_std_path())?;
        Ok(Session {
            settings,
            resolved,
            sweep: request.sweep,
            store,
        })
    }

    /// The resolved suite and system.
    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    /// The run of a sweep this session makes, if any.
    pub fn sweep(&self) -> Option<&SweepRun> {
        self.sweep.as_ref()
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the suite's resolution warned about (unknown keys, benchmarks without definition).
    pub fn warnings(&self) -> &[String] {
        &self.resolved.suite.warnings
    }

    /// The processes the suite would start, `repeat` times over in `order` (for `--dry-run`).
    pub fn plan(&self, repeat: usize, order: RepeatOrder) -> Result<Vec<PlannedBench>, Error> {
        let contexts = repeat_contexts(&self.resolved, repeat)?;
        let benches: Vec<_> = self.resolved.suite.runnable().collect();
        prefetch_pack_host(&benches, &contexts);
        order
            .schedule(repeat, benches.len())
            .into_iter()
            .map(|(index, bench)| plan_one(benches[bench], &contexts[index]))
            .collect()
    }

    /// The install groups of the selected benchmarks and the interpreter and installer that
    /// build them (which may bootstrap uv: progress goes to `observer`).
    pub fn environments(
        &self,
        options: &InstallOptions,
        observer: &mut dyn InstallObserver,
    ) -> Result<InstallPlan, Error> {
        let variant = options.variant.as_deref();
        self.resolved.check_runnable()?;
        let config = self.settings.config.as_deref().ok_or(Error::NoSuite)?;
        let project = ProjectTree::locate(config.parent().unwrap_or(Utf8Path::new(".")))?;
        let benches = self.resolved.suite.runnable();
        let groups = install_groups(benches, &project, &self.resolved.arch, variant)?;
        let mut envs = Environments::prepare_with_sources(
            &EnvOptions {
                layout: self.settings.layout(),
                project,
                python: self.settings.python.as_deref(),
                installer: self.settings.installer,
                arch: self.resolved.arch.clone(),
                path_var: Some(&self.resolved.host.path),
            },
            options.sources.clone(),
            &mut |event| observer.on_env_event(event),
        )?;
        envs.interrupt = options.interrupt.clone();
        Ok(InstallPlan { groups, envs })
    }

    /// Builds the environment of every selected install group (up-to-date ones are left
    /// alone). A failing group does not stop the others; an interrupted one does.
    pub fn install(
        &self,
        options: &InstallOptions,
        observer: &mut dyn InstallObserver,
    ) -> Result<InstallSummary, Error> {
        let plan = self.environments(options, observer)?;
        observer.on_environments(&plan);
        let mut summary = InstallSummary {
            results: Vec::new(),
            tool: plan.envs.tool.describe(),
            python: plan.envs.python.version.to_string(),
        };
        for group in plan.groups {
            observer.on_group_start(&group);
            let result = plan.envs.install(&group, options.force, &mut |event| {
                observer.on_env_event(event)
            });
            observer.on_group_end(&group, &result);
            let interrupted = result.as_ref().is_err_and(EnvError::is_interrupted);
            summary.results.push((group, result));
            if interrupted {
                break;
            }
        }
        Ok(summary)
    }

    /// What an install would do for each selected group (`install --dry-run`): the interpreter,
    /// whether the venv is up to date, what is present and what would be added. Changes no
    /// environment.
    pub fn survey(
        &self,
        options: &InstallOptions,
        observer: &mut dyn InstallObserver,
    ) -> Result<Vec<GroupSurvey>, Error> {
        let plan = self.environments(options, observer)?;
        observer.on_environments(&plan);
        Ok(plan
            .groups
            .into_iter()
            .map(|group| {
                let survey = plan.envs.survey(&group);
                (group, survey)
            })
            .collect())
    }

    /// Downloads every package the selected groups install into a wheelhouse, for
    /// `install --offline --find-links DIR` on a machine without a network. A failing group
    /// does not stop the others.
    pub fn bundle(
        &self,
        options: &BundleOptions,
        observer: &mut dyn InstallObserver,
    ) -> Result<BundleSummary, Error> {
        let plan = self.environments(&options.install, observer)?;
        observer.on_environments(&plan);
        let dest = &options.dest;
        let mut results = Vec::new();
        let mut on_event = |event: EnvEvent<'_>| observer.on_env_event(event);
        if options.with_uv {
            let result = plan.envs.bundle_uv(dest, &options.target, &mut on_event);
            results.push(("uv".to_string(), result));
        }
        for group in &plan.groups {
            let result = plan
                .envs
                .bundle(group, dest, &options.target, &mut on_event);
            let interrupted = result.as_ref().is_err_and(EnvError::is_interrupted);
            results.push((group.name.clone(), result));
            if interrupted {
                break;
            }
        }
        Ok(BundleSummary { results })
    }

    /// Runs the prepare step of every selected benchmark, with the arguments `run` gives them.
    pub fn prepare(
        &self,
        options: &RunOptions,
        observer: &mut dyn RunObserver,
    ) -> Result<RunSummary, Error> {
        self.resolved.check_runnable()?;
        crate::run::prepare_suite(&self.resolved, options, observer)
    }

    /// Claims the run folder (see [`RunFolder::claim`]): before any set-up, so that a second run
    /// of the same name is refused before it installs anything.
    pub fn claim_run_folder(&self, resume: bool) -> Result<RunFolder, Error> {
        self.resolved.check_runnable()?;
        RunFolder::claim(&self.resolved, resume)
    }

    /// Claims the run folder shared with other runs of other benchmarks (see
    /// [`RunFolder::claim_shared`]).
    pub fn claim_shared_run_folder(&self) -> Result<RunFolder, Error> {
        self.resolved.check_runnable()?;
        RunFolder::claim_shared(&self.resolved)
    }

    /// Runs the suite into `folder`, with the validation layers `validations` (see
    /// [`LayerName::selection`]) judging the event stream as it is recorded; their report is
    /// written to [`VALIDATION_FILE`] in the run folder.
    pub fn run(
        &self,
        folder: &RunFolder,
        options: &RunOptions,
        validations: &[LayerName],
        observer: &mut dyn RunObserver,
    ) -> Result<RunRecord, Error> {
        let context = ValidationContext {
            gpu_count: self.resolved.suite.system.gpu_count,
        };
        // Written first, so that a run stopped half-way still says which point of its sweep
        // it is (`db import` groups it).
        if let Some(run) = &self.sweep {
            crate::sweep::write_sweep_file(folder.path(), run)?;
        }
        let location = &self.store;
        let import_later = format!(
            "the run folder keeps everything; import it later with `milabench db import {}`",
            folder.path().display()
        );
        let mut store_problems = Vec::new();
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let start = RunStart {
            name: self.resolved.run_name.clone(),
            namespace: String::new(),
            folder: folder.path().to_path_buf(),
            meta: None,
            started,
            sweep: self.sweep.as_ref().map(SweepPoint::of),
        };
        let recorder = match Store::open(location).and_then(|store| store.begin_run(&start)) {
            Ok(recorder) => Some(recorder),
            Err(e) => {
                store_problems.push(format!(
                    "results store skipped ({}): {}; {import_later}",
                    location.shown(),
                    error_line(&e)
                ));
                None
            }
        };
        let mut watching = Watching {
            validation: Validation::new(validations, &context),
            recorder,
            database: location.shown(),
            store_problems: Vec::new(),
            inner: observer,
        };
        let summary = crate::run::run_suite(&self.resolved, options, folder, &mut watching);
        let validation = watching.validation.finish();
        store_problems.append(&mut watching.store_problems);
        // The folder's report, computed once for the store and the run's files; a folder
        // shared with other runs is reported whole by the store and for this run's benchmarks
        // alone by `write_report`, so there each computes its own.
        let report = match &summary {
            Ok(summary) if !folder.is_shared() => Some(self.report(
                folder.path(),
                &ReportOptions {
                    excused: summary.skipped.clone(),
                    ..ReportOptions::default()
                },
            )),
            _ => None,
        };
        let mut recorded_in = None;
        if let Some(recorder) = watching.recorder {
            let end = RunEnd {
                suite: Some(self.resolved.report_entries()),
                profile: self.suite_name(),
                excused: summary
                    .as_ref()
                    .map(|s| s.skipped.clone())
                    .unwrap_or_default(),
                interrupted: summary.as_ref().map_or(true, |s| s.interrupted),
            };
            let finished = match &report {
                None => recorder.finish(&end).map_err(|e| error_line(&e)),
                Some(Ok((report, _))) => recorder
                    .finish_with_report(&end, Some(report))
                    .map_err(|e| error_line(&e)),
                // A run that measured nothing has no statistics, only its status.
                Some(Err(Error::Report(
                    milabench_report::ReportError::NoDataFiles { .. }
                    | milabench_report::ReportError::NoRuns { .. },
                ))) => recorder
                    .finish_with_report(&end, None)
                    .map_err(|e| error_line(&e)),
                Some(Err(e)) => Err(error_line(e)),
            };
            match finished {
                Ok(_) => recorded_in = Some(location.shown()),
                Err(e) => store_problems.push(format!(
                    "the results store {} did not take the run's statistics: {e}; {import_later}",
                    location.shown(),
                )),
            }
        }
        let summary = summary?;
        let computed = report
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .map(|(r, _)| r);
        let sizer_saved = crate::sizer::save_observations(
            &self.resolved,
            folder.path(),
            computed,
            &summary.first_argv,
        )?;
        let file = folder.path().join(VALIDATION_FILE);
        write_validation(&file, &validation.text, folder.is_shared())
            .map_err(|source| Error::Write { path: file, source })?;
        Ok(RunRecord {
            summary,
            validation,
            recorded_in,
            store_problems,
            sizer_saved,
            report,
        })
    }

    /// The suite's name: its file's stem.
    fn suite_name(&self) -> Option<String> {
        let config = self.settings.config.as_deref()?;
        config.file_stem().map(str::to_string)
    }

    /// The report of the run folder `run_dir` against this suite (its benchmarks missing from
    /// the run count as failures, those in `excused` do not).
    pub fn report(
        &self,
        run_dir: &Path,
        options: &ReportOptions,
    ) -> Result<(Report, RunSet), Error> {
        let entries = self.resolved.report_entries();
        let runs = [run_dir.display().to_string()];
        Ok(report_runs(&runs, Some(&entries), options)?)
    }

    /// The report of the selected benchmarks alone in `run_dir`: their `.data` files
    /// (`<bench>.<tag>.data`), not those other runs sharing the folder write
    /// ([`RunFolder::claim_shared`]).
    pub fn report_selected(
        &self,
        run_dir: &Path,
        options: &ReportOptions,
    ) -> Result<(Report, RunSet), Error> {
        let entries = self.resolved.report_entries();
        let prefixes: Vec<String> = self
            .resolved
            .suite
            .runnable()
            .map(|b| format!("{}.", b.name))
            .collect();
        let read = std::fs::read_dir(run_dir).map_err(|source| Error::Read {
            path: run_dir.to_path_buf(),
            source,
        })?;
        let mut files: Vec<String> = read
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| {
                name.ends_with(".data") && prefixes.iter().any(|p| name.starts_with(p.as_str()))
            })
            .map(|name| run_dir.join(name).display().to_string())
            .collect();
        files.sort();
        Ok(report_runs(&files, Some(&entries), options)?)
    }

    /// The environment variables this session was made with.
    pub fn env(&self) -> &EnvVars {
        &self.resolved.host.env
    }

    /// The preflight of the suite on this machine and its nodes (see [`CheckOptions`](crate::CheckOptions)).
    pub fn check(
        &self,
        options: &crate::check::CheckOptions,
    ) -> Result<Vec<milabench_cluster::Check>, Error> {
        crate::check::preflight(&self.resolved, options)
    }

    /// The run folder of this session's run name.
    pub fn run_dir(&self) -> PathBuf {
        crate::run::run_dir(&self.resolved)
    }
}

/// Passes every event on to the inner observer, feeds the records to the validation layers as
/// they are written, and records each benchmark's end in the results database.
struct Watching<'a> {
    validation: Validation,
    recorder: Option<RunRecorder>,
    /// Failures of the recorder (the run goes on without it).
    /// The results store, as messages name it.
    database: String,
    store_problems: Vec<String>,
    inner: &'a mut dyn RunObserver,
}

impl Watching<'_> {
    /// Records a benchmark's end; a failure stops recording (said once).
    fn record(&mut self, end: &BenchEnd) {
        let Some(recorder) = &mut self.recorder else {
            return;
        };
        if let Err(e) = recorder.bench_finished(end) {
            self.store_problems.push(format!(
                "results store skipped ({}) from `{}` on: {}; import the run folder later with `milabench db import`",
                self.database,
                end.name,
                error_line(&e)
            ));
            self.recorder = None;
        }
    }
}

impl ExecObserver for Watching<'_> {
    fn on_start(&mut self, tag: &str, spec: &ProcessSpec) {
        self.inner.on_start(tag, spec);
    }

    fn on_record(&mut self, tag: &str, record: &Record) {
        self.validation.observe_stream(tag, record);
        self.inner.on_record(tag, record);
    }

    fn on_end(&mut self, outcome: &ProcessOutcome) {
        self.inner.on_end(outcome);
    }

    fn on_caught_up(&mut self) {
        self.inner.on_caught_up();
    }
}

impl RunObserver for Watching<'_> {
    fn on_run_event(&mut self, event: RunEvent<'_>) {
        match &event {
            RunEvent::BenchEnd { outcome } => self.record(&BenchEnd {
                name: outcome.bench.clone(),
                status: PackStatus::from(&outcome.verdict()),
                exit_code: outcome.exit_code(),
            }),
            RunEvent::Skipped { bench, .. } => self.record(&BenchEnd {
                name: (*bench).to_string(),
                status: PackStatus::Skipped,
                exit_code: None,
            }),
            _ => {}
        }
        self.inner.on_run_event(event);
    }
}

/// The override layer of a fidelity preset: `fidelity/<name>.yaml` beside the suite file.
fn fidelity_override(settings: &Settings, name: &str) -> Result<String, Error> {
    let suite = settings.config.as_deref().ok_or(Error::NoSuite)?;
    let folder = suite
        .parent()
        .unwrap_or(Utf8Path::new("."))
        .join("fidelity");
    let path = folder.join(format!("{name}.yaml"));
    if !path.is_file() {
        let mut known: Vec<String> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".yaml").map(str::to_string)
            })
            .collect();
        known.sort();
        return Err(Error::UnknownFidelity {
            name: name.to_string(),
            path: path.into_std_path_buf(),
            known,
        });
    }
    std::fs::read_to_string(&path).map_err(|source| Error::Read {
        path: path.into_std_path_buf(),
        source,
    })
}

/// Writes the validation report `text` to `file`: replacing it, or, for a run sharing its
/// folder with others, appended in one write (so that reports of runs ending at once do not
/// mix).
fn write_validation(file: &Path, text: &str, shared: bool) -> std::io::Result<()> {
    if !shared {
        return std::fs::write(file, text);
    }
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)?;
    std::io::Write::write_all(&mut out, text.as_bytes())
}
