//! Running a suite: benchmarks one after the other in suite order (repeats in a row or
//! interleaved, see [`RepeatOrder`]), each through
//! `milabench-exec`, with the machine's `meta` recorded once per host and telemetry sampled
//! beside every process. Skipped benchmarks are reported, not silently dropped; `--resume`
//! leaves out the benchmarks a run folder already holds complete.

pub use milabench_vocab::run_files::RUN_LOCK_FILE;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use milabench_exec::{
    ExecOptions, Interrupt, RecordSink, RunningSampler, SampledProcess, SamplerFactory, run_plan,
};
use milabench_metrics::{Event, FolderLock, LockError, ProcessJudge, ReadItem, Record};
use milabench_plan::BenchPlan;
use milabench_system::{
    Collector, GpuDiscovery, MilabenchVersion, SamplerConfig, SamplerPool, SystemFacts,
};

use crate::error::Error;
pub use crate::events::{RunEvent, RunObserver, RunSummary, SetupFailure};

use crate::planning::{PlannedBench, plan_context, plan_one, repeat_contexts};
use crate::repeat::{MAX_REPEAT, REPEAT_FILE, RepeatOrder, RepeatPlan};
use crate::resolve::Resolved;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Times to run each benchmark.
    pub repeat: usize,
    /// Whether the repeats run in a row or interleaved.
    pub order: RepeatOrder,
    /// Leave out benchmarks whose processes already completed in the run folder.
    pub resume: bool,
    /// SIGTERM-to-SIGKILL grace period.
    pub grace: Duration,
    /// Set by the Ctrl-C handler.
    pub interrupt: Interrupt,
    /// The watchdog started beside each benchmark, which kills it should the orchestrator die
    /// (see [`milabench_exec::WatchdogCommand`]); the `milabench` binary names itself.
    pub watchdog: Option<milabench_exec::WatchdogCommand>,
    /// Stop each benchmark once its rate is precise enough (`run --precision`); `None`: the
    /// benchmarks decide.
    pub precision: Option<milabench_exec::PrecisionStop>,
    /// Benchmarks whose set-up (install or prepare step) failed: each is recorded as failed,
    /// with the reason, instead of being run; the others run.
    pub failed_setup: Vec<SetupFailure>,
}

impl Default for RunOptions {
    /// Once, not resuming, a grace period of 10 s, no watchdog, no precision stop.
    fn default() -> Self {
        RunOptions {
            repeat: 1,
            order: RepeatOrder::InARow,
            resume: false,
            grace: Duration::from_secs(10),
            interrupt: Interrupt::new(),
            watchdog: None,
            precision: None,
            failed_setup: Vec::new(),
        }
    }
}

/// A run folder this process has claimed: created and locked (`<run>/.milabench.lock`), so that
/// no other `run` writes into it while this one, or any process it started, lives. The lock is
/// released when this value is dropped and the run's processes have ended.
#[derive(Debug)]
pub struct RunFolder {
    path: PathBuf,
    lock: FolderLock,
    /// Claimed with [`RunFolder::claim_shared`]: each benchmark is locked on its own.
    shared: bool,
}

impl RunFolder {
    /// Claims the run folder of `resolved`: refused while another process holds it (even a
    /// benchmark left running by a killed `milabench run`); with `resume`, when there is no such
    /// run; without, when it already holds a run.
    pub fn claim(resolved: &Resolved, resume: bool) -> Result<RunFolder, Error> {
        let path = run_dir(resolved);
        if resume && !path.is_dir() {
            return Err(Error::NoRunToResume(path));
        }
        let lock = FolderLock::try_acquire(path.join(RUN_LOCK_FILE))
            .map_err(|e| folder_in_use(e, &path))?;
        if !resume && holds_data(&path) {
            return Err(Error::RunExists(path));
        }
        Ok(RunFolder {
            path,
            lock,
            shared: false,
        })
    }

    /// Claims the run folder of `resolved` to resume it beside other processes that do the
    /// same for other benchmarks (the tasks of a Slurm job array writing one folder): its lock
    /// is taken shared (refused while a [`RunFolder::claim`] holds it, and keeping such a
    /// claim out while held), and each benchmark, when it runs, takes a lock of its own,
    /// refused while another process runs that benchmark. Everything
    /// else a run writes into the folder is each benchmark's own, but for the validation
    /// report, which such runs append to.
    pub fn claim_shared(resolved: &Resolved) -> Result<RunFolder, Error> {
        let path = run_dir(resolved);
        if !path.is_dir() {
            return Err(Error::NoRunToResume(path));
        }
        let lock = FolderLock::try_acquire_shared(path.join(RUN_LOCK_FILE))
            .map_err(|e| folder_in_use(e, &path))?;
        Ok(RunFolder {
            path,
            lock,
            shared: true,
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether other processes may write other benchmarks into the folder at once
    /// ([`RunFolder::claim_shared`]).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The lock of `bench` in a shared folder, `None` in a folder of its own.
    fn lock_bench(&self, bench: &str) -> Result<Option<FolderLock>, Error> {
        if !self.shared {
            return Ok(None);
        }
        let path = bench_lock_file(&self.path, bench);
        match FolderLock::try_acquire(&path) {
            Ok(lock) => Ok(Some(lock)),
            Err(LockError::Held { holders, .. }) => Err(Error::BenchInUse {
                bench: bench.to_string(),
                path: self.path.clone(),
                holders,
            }),
            Err(other) => Err(Error::RunLock(other)),
        }
    }
}

/// The lock file of benchmark `bench` in a shared run folder: `.milabench.<bench>.lock`.
pub fn bench_lock_file(run_dir: &Path, bench: &str) -> PathBuf {
    run_dir.join(format!(".milabench.{bench}.lock"))
}

/// The error of a run folder whose lock was not taken.
fn folder_in_use(error: LockError, path: &Path) -> Error {
    match error {
        LockError::Held { holders, .. } => Error::RunInUse {
            path: path.to_path_buf(),
            holders,
        },
        other => Error::RunLock(other),
    }
}

/// The run folder of a resolved suite: `<runs>/<run name>` (a run name is never a path; see
/// [`milabench_config::run_name`]).
pub fn run_dir(resolved: &Resolved) -> PathBuf {
    let name = &resolved.run_name;
    let runs = &resolved.suite.system.dirs.runs;
    if runs.as_str().is_empty() {
        PathBuf::from("runs").join(name)
    } else {
        runs.join(name).into_std_path_buf()
    }
}

/// Tells the debug trail (`-v`) that the processes of `plan` start.
fn started(plan: &BenchPlan) {
    tracing::debug!(
        "starting {}: {} process(es)",
        plan.bench,
        plan.processes.len()
    );
}

/// Creates the data, cache and scratch folders of every runnable benchmark.
fn make_bench_folders(resolved: &Resolved) -> Result<(), Error> {
    for bench in resolved.suite.runnable() {
        let folders = &bench.folders;
        for dir in [&folders.data, &folders.cache, &folders.extra, &folders.runs] {
            if !dir.as_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|source| Error::Write {
                    path: dir.clone().into_std_path_buf(),
                    source,
                })?;
            }
        }
    }
    Ok(())
}

/// Telemetry beside each process: `milabench-system`'s sampler writing into its `.data` file.
struct Telemetry {
    /// The run's one sampling thread, shared by every process.
    pool: SamplerPool,
    gpus: GpuDiscovery,
    /// The benchmark's `voir.options.gpu_poll` (3 s by default).
    interval: Duration,
}

struct RunningTelemetry(milabench_system::SamplerHandle);

impl RunningSampler for RunningTelemetry {
    fn request_stop(&mut self) {
        self.0.request_stop();
    }

    fn is_finished(&self) -> bool {
        self.0.is_finished()
    }

    fn stop(self: Box<Self>) {
        let _ = self.0.stop();
    }
}

impl SamplerFactory for Telemetry {
    fn start(
        &self,
        process: &SampledProcess<'_>,
        sink: RecordSink,
    ) -> Option<Box<dyn RunningSampler>> {
        if process.node.is_some_and(|n| n != "local") && process.tag.ends_with(".nolog") {
            return None;
        }
        let gpus: Vec<u32> = process
            .devices
            .iter()
            .filter_map(|d| d.parse().ok())
            .collect();
        let config = SamplerConfig::new(self.interval)
            .gpus(gpus)
            .process(process.pid);
        let notice = sink.clone();
        match Collector::new(self.gpus.clone(), config) {
            Ok(collector) => {
                let handle = self.pool.add(collector, move |event: Event| {
                    sink.send(Record::new(event, None));
                });
                Some(Box::new(RunningTelemetry(handle)))
            }
            // The process runs all the same; its file says why it has no samples.
            Err(e) => {
                let message = format!(
                    "telemetry was not sampled beside this process ({e}): its GPU and memory figures are missing"
                );
                notice.send(Record::new(Event::Message(message), None));
                None
            }
        }
    }
}

/// Runs every runnable benchmark of the suite into `folder` (claimed with
/// [`RunFolder::claim`]).
pub fn run_suite(
    resolved: &Resolved,
    options: &RunOptions,
    folder: &RunFolder,
    observer: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let run_dir = folder.path.clone();
    let keep_open = folder.lock.shared_file();
    make_bench_folders(resolved)?;
    crate::containers::ready_nodes(resolved, &options.interrupt)?;
    let gpus = resolved.host.discovery.clone();
    let facts = SystemFacts::collect(&gpus, false).map_err(Error::System)?;
    let sampling = SamplerPool::start().map_err(Error::System)?;
    let version = MilabenchVersion::new(env!("CARGO_PKG_VERSION"));
    let mut python_cache: HashMap<PathBuf, Option<milabench_system::PythonVersions>> =
        HashMap::new();
    observer.on_run_event(RunEvent::System {
        header: &facts.header(),
    });
    let mut summary = RunSummary {
        run_dir: run_dir.clone(),
        ..RunSummary::default()
    };
    if !options.resume {
        let plan = RepeatPlan {
            repeat: options.repeat,
            order: options.order,
        };
        let path = run_dir.join(REPEAT_FILE);
        let text = serde_json::to_string(&plan).expect("a repeat plan serialises");
        std::fs::write(&path, text).map_err(|source| Error::Write { path, source })?;
    }
    let contexts = repeat_contexts(resolved, options.repeat)?;
    let benches: Vec<_> = resolved.suite.runnable().collect();
    crate::planning::prefetch_pack_host(&benches, &contexts);
    for (index, position) in options.order.schedule(options.repeat, benches.len()) {
        let bench = benches[position];
        if options.interrupt.is_set() {
            summary.interrupted = true;
            return Ok(summary);
        }
        if let Some(failure) = options.failed_setup.iter().find(|f| f.bench == bench.name) {
            record_not_run(&run_dir, bench, failure, "SetupFailed")?;
            observer.on_run_event(RunEvent::SetupFailed { failure });
            summary.failed_setup.push(failure.clone());
            continue;
        }
        let plan = match plan_one(bench, &contexts[index])? {
            PlannedBench::Skipped { bench, unmet } => {
                record_skip(&run_dir, &bench, &unmet)?;
                observer.on_run_event(RunEvent::Skipped {
                    bench: &bench,
                    unmet: &unmet,
                });
                summary.skipped.push(bench);
                continue;
            }
            PlannedBench::BrokenBenchfile {
                bench: name,
                reason,
            } => {
                let failure = SetupFailure {
                    bench: name,
                    reason: format!("its benchfile.py gives no plan: {reason}"),
                };
                record_not_run(&run_dir, bench, &failure, "BenchfileFailed")?;
                observer.on_run_event(RunEvent::SetupFailed { failure: &failure });
                summary.failed_setup.push(failure);
                continue;
            }
            PlannedBench::Run(plan) => plan,
        };
        if let Some(first) = plan.processes.first() {
            summary
                .first_argv
                .push((plan.bench.clone(), first.argv.clone()));
        }
        // Held until the benchmark has ended, and by its processes.
        let bench_lock = folder.lock_bench(&plan.bench)?;
        if options.resume && already_complete(&plan, &run_dir) {
            observer.on_run_event(RunEvent::AlreadyDone { bench: &plan.bench });
            summary.already_done.push(plan.bench.clone());
            continue;
        }
        set_aside_partial_files(&plan, &run_dir)?;
        let venv = &bench.folders.venv;
        let python =
            (!venv.as_str().is_empty()).then(|| venv.join("bin/python").into_std_path_buf());
        let versions = python.and_then(|p| {
            python_cache
                .entry(p.clone())
                .or_insert_with(|| milabench_system::python_versions(&p, Duration::from_secs(30)))
                .clone()
        });
        let sampler: Arc<dyn SamplerFactory> = Arc::new(Telemetry {
            pool: sampling.clone(),
            gpus: gpus.clone(),
            interval: milabench_system::poll_interval(&bench.config.to_json()),
        });
        let exec_options = ExecOptions {
            grace: options.grace,
            meta: Some(facts.meta(&version, versions.as_ref())),
            interrupt: options.interrupt.clone(),
            sampler: Some(sampler),
            keep_open: std::iter::once(keep_open.clone())
                .chain(bench_lock.as_ref().map(FolderLock::shared_file))
                .collect(),
            watchdog: options.watchdog.clone(),
            precision: options.precision,
            ..ExecOptions::default()
        };
        started(&plan);
        observer.on_run_event(RunEvent::BenchStart { plan: &plan });
        let outcome = run_plan(&plan, &run_dir, &exec_options, observer)?;
        observer.on_run_event(RunEvent::BenchEnd { outcome: &outcome });
        let interrupted = outcome.interrupted;
        summary.outcomes.push(outcome);
        if interrupted {
            summary.interrupted = true;
            return Ok(summary);
        }
    }
    Ok(summary)
}

/// Records in `<run_dir>/<bench>.data` that `bench` failed before it ran (`kind`: its set-up,
/// its benchfile): its `config`, an `error` event of that kind with the reason and an `end`
/// with status 1, so that every report of the folder counts it as failed and says why.
fn record_not_run(
    run_dir: &Path,
    bench: &milabench_config::ResolvedBench,
    failure: &SetupFailure,
    kind: &str,
) -> Result<(), Error> {
    let mut config = bench.config.to_json();
    if let Some(map) = config.as_object_mut() {
        map.insert("tag".into(), serde_json::json!([bench.name]));
    }
    let error = milabench_metrics::ErrorInfo {
        kind: Some(kind.into()),
        message: Some(failure.reason.clone()),
        trace: None,
        extra: Default::default(),
    };
    let end = milabench_metrics::EndInfo {
        command: None,
        time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs_f64()),
        return_code: milabench_metrics::ReturnCode::Code(1),
        extra: Default::default(),
    };
    write_records(
        run_dir,
        &failure.bench,
        [
            Event::Config(config),
            Event::Error(Box::new(error)),
            Event::End(Box::new(end)),
        ],
    )
}

/// Records in `<run_dir>/<bench>.data` that `bench` was skipped for its `unmet` capabilities:
/// one `message` per condition, worded as the Python tool words them, so that a later report of
/// the folder (by either tool) excuses the benchmark as this run's report did.
fn record_skip(run_dir: &Path, bench: &str, unmet: &[String]) -> Result<(), Error> {
    let messages = unmet
        .iter()
        .map(|condition| Event::Message(milabench_metrics::format::skip_message(bench, condition)));
    write_records(run_dir, bench, messages)
}

/// Writes `events` as `<run_dir>/<bench>.data`, the record of a benchmark that did not run.
fn write_records(
    run_dir: &Path,
    bench: &str,
    events: impl IntoIterator<Item = Event>,
) -> Result<(), Error> {
    let text: String = events
        .into_iter()
        .map(|event| milabench_metrics::record_to_line(&Record::new(event, None)))
        .collect();
    let path = run_dir.join(format!("{bench}.data"));
    std::fs::create_dir_all(run_dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| Error::Write { path, source })
}

/// Runs the prepare step of every runnable benchmark (once per benchmark, no time limit), with
/// events recorded under `<runs>/prepare.<time>/`. Benchmarks with nothing to prepare are left
/// out of the summary.
pub fn prepare_suite(
    resolved: &Resolved,
    options: &RunOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let runs = run_dir(resolved)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let stamp = jiff::Zoned::now().strftime("%Y-%m-%d_%H-%M-%S").to_string();
    let prepare_dir = runs.join(format!("prepare.{stamp}"));
    make_bench_folders(resolved)?;
    crate::containers::ready_nodes(resolved, &options.interrupt)?;
    let ctx = plan_context(resolved, None)?;
    let mut summary = RunSummary {
        run_dir: prepare_dir.clone(),
        ..RunSummary::default()
    };
    let benches: Vec<_> = resolved.suite.runnable().collect();
    crate::planning::prefetch_pack_host(&benches, std::slice::from_ref(&ctx));
    for bench in benches {
        if options.interrupt.is_set() {
            summary.interrupted = true;
            break;
        }
        let exec_options = ExecOptions {
            grace: options.grace,
            interrupt: options.interrupt.clone(),
            watchdog: options.watchdog.clone(),
            ..ExecOptions::default()
        };
        let install = crate::planning::install_override_plan(bench, &ctx);
        let prepare = install
            .as_ref()
            .ok()
            .map(|_| crate::planning::prepare_plan(bench, &ctx));
        let broken = [
            install.as_ref().err(),
            prepare.as_ref().and_then(|p| p.as_ref().err()),
        ]
        .into_iter()
        .flatten()
        .find_map(|error| crate::planning::benchfile_failure(bench, error));
        if let Some(reason) = broken {
            // Its failure is this benchmark's: the run records it, the others go on.
            let failure = SetupFailure {
                bench: bench.name.clone(),
                reason: format!("its benchfile.py gives no plan: {reason}"),
            };
            observer.on_run_event(RunEvent::SetupFailed { failure: &failure });
            summary.failed_setup.push(failure);
            continue;
        }
        if let Some(install) = install? {
            started(&install);
            observer.on_run_event(RunEvent::BenchStart { plan: &install });
            let outcome = run_plan(&install, &prepare_dir, &exec_options, observer)?;
            observer.on_run_event(RunEvent::BenchEnd { outcome: &outcome });
            let installed = outcome.exited_cleanly();
            summary.interrupted |= outcome.interrupted;
            if installed {
                crate::planning::record_install_override(bench)?;
            } else {
                // Its failure is this benchmark's: its prepare step does not run.
                summary.outcomes.push(outcome);
                continue;
            }
        }
        let Some(plan) = prepare.transpose()?.flatten() else {
            continue;
        };
        started(&plan);
        observer.on_run_event(RunEvent::BenchStart { plan: &plan });
        let outcome = run_plan(&plan, &prepare_dir, &exec_options, observer)?;
        observer.on_run_event(RunEvent::BenchEnd { outcome: &outcome });
        if outcome.exited_cleanly()
            && let Some(process) = plan.processes.first()
        {
            crate::prepared::record(bench, &process.argv)?;
        }
        summary.interrupted |= outcome.interrupted;
        summary.outcomes.push(outcome);
    }
    Ok(summary)
}

/// Whether a run folder already holds event files.
/// The repeats of the run in `run_dir`: those its start recorded ([`REPEAT_FILE`]); for a
/// folder without the record (an older milabench's, the Python tool's), read from its files'
/// tags (`<bench>.R<i>.…`: the highest `i` plus one, in a row).
pub fn recorded_repeats(run_dir: &Path) -> RepeatPlan {
    if let Some(plan) = std::fs::read_to_string(run_dir.join(REPEAT_FILE))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
    {
        return plan;
    }
    let highest = std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let tag = name.strip_suffix(".data")?.to_owned();
            tag.split('.')
                .filter_map(|part| part.strip_prefix('R')?.parse::<usize>().ok())
                .next_back()
        })
        .max();
    RepeatPlan {
        repeat: highest.map_or(1, |i| i + 1),
        order: RepeatOrder::InARow,
    }
}

/// The repeats a run goes with: `asked` (once when `None`) for a new run; for `resume`, the
/// run's own ([`recorded_repeats`]), and `asked` repeats that differ are refused. A count
/// of 0 or above [`MAX_REPEAT`] is refused.
pub fn repeat_plan(
    run_dir: &Path,
    resume: bool,
    asked: Option<RepeatPlan>,
) -> Result<RepeatPlan, Error> {
    if let Some(asked) = asked
        && !(1..=MAX_REPEAT).contains(&asked.repeat)
    {
        return Err(Error::RepeatOutOfRange(asked.repeat));
    }
    if !resume {
        return Ok(asked.unwrap_or_default());
    }
    let recorded = recorded_repeats(run_dir);
    match asked {
        Some(asked) if asked != recorded => Err(Error::RepeatMismatch {
            path: run_dir.to_owned(),
            recorded,
            asked,
        }),
        _ => Ok(recorded),
    }
}

fn holds_data(run_dir: &Path) -> bool {
    std::fs::read_dir(run_dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "data"))
    })
}

/// Renames what an unfinished earlier attempt of `plan` left (`<tag>.data`, `.stdout`,
/// `.stderr`) to `<tag>.data.<n>` etc., so the new attempt starts clean files (one process per
/// file, as reports expect) and nothing recorded is lost.
fn set_aside_partial_files(plan: &BenchPlan, run_dir: &Path) -> Result<(), Error> {
    for process in &plan.processes {
        let tag = process.tag_name();
        if !run_dir.join(format!("{tag}.data")).exists() {
            continue;
        }
        let attempt = (1..)
            .find(|n| !run_dir.join(format!("{tag}.data.{n}")).exists())
            .unwrap_or(1);
        for suffix in ["data", "stdout", "stderr"] {
            let from = run_dir.join(format!("{tag}.{suffix}"));
            if from.exists() {
                let to = run_dir.join(format!("{tag}.{suffix}.{attempt}"));
                std::fs::rename(&from, &to).map_err(|source| Error::Write { path: to, source })?;
            }
        }
    }
    Ok(())
}

/// Whether every process of `plan` already succeeded in `run_dir` (what `--resume` leaves out):
/// the verdict on its `.data` file ([`milabench_metrics::ProcessVerdict`], the rule the run
/// applied live) is a success.
pub fn already_complete(plan: &BenchPlan, run_dir: &Path) -> bool {
    plan.processes.iter().all(|process| {
        let path = run_dir.join(format!("{}.data", process.tag_name()));
        let Ok(mut records) =
            milabench_metrics::DataFile::new(path).records_with(ProcessJudge::FIELDS)
        else {
            return false;
        };
        let mut judge = ProcessJudge::default();
        while let Some(item) = records.next_lent() {
            if let ReadItem::Record(record) = item {
                judge.observe(record);
            }
        }
        judge.verdict().is_success()
    })
}
