//! Reading run folders into one aggregate per `.data` file, streaming each file once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use milabench_metrics::format::{DataKey, EventName, SampleKey, TRAIN_TASK, skipped_bench};
use milabench_metrics::{
    DataFile, Event, Failure, Fields, MAX_RATE, ProblemTally, ProcessJudge, ProcessVerdict,
    RateFault, ReadItem, discover_data_files,
};
use serde_json::Value;

use crate::error::ReportError;
use crate::serving::{SERVING_FIELDS, ServingEvents, ServingRun};

/// The parts of a `.data` line the report reads: what its figures use (serving steps included),
/// and what the verdict on the process reads.
const REPORT_FIELDS: Fields = ProcessJudge::FIELDS
    .with(Fields::event(EventName::Meta))
    .with(Fields::event(EventName::Message))
    .with(Fields::data(DataKey::Time))
    .with(Fields::data(DataKey::Cpudata))
    .with(Fields::data(DataKey::Process))
    .with(Fields::data(DataKey::GpuEnergy))
    .with(Fields::data(DataKey::Gpudata))
    .with(SERVING_FIELDS);

/// One device's reading in a `gpudata` sample, reduced to what the report uses.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuReading {
    /// The device: an index into [`RunFile::gpu_devices`].
    pub device: usize,
    /// Memory used, MiB (`memory[0]` when `memory` is a pair of numbers).
    pub memory_used: Option<f64>,
    /// Compute utilisation, 0 to 1.
    pub load: Option<f64>,
    /// Watts.
    pub power: Option<f64>,
}

/// What one process recorded, reduced to what the report needs.
#[derive(Debug, Clone)]
pub struct RunFile {
    /// The `.data` file.
    pub path: PathBuf,
    /// Its `config` event.
    pub config: Value,
    /// Its `meta` event, if any.
    pub meta: Option<Value>,
    /// `start.time` (`None` when the process never said it started).
    pub start_time: Option<f64>,
    /// Training rates (`data` records with `task: train` and a `rate`), those that are
    /// measurements (see [`RateFault`]).
    pub train_rates: Vec<f64>,
    /// GPU device ids seen in the file, in first-seen order.
    pub gpu_devices: Vec<String>,
    /// GPU readings kept for this process (only its own device for per-GPU plans), every
    /// sample's readings one after the other; `device` indexes `gpu_devices`.
    pub gpu_readings: Vec<GpuReading>,
    /// Largest host memory the process used, MiB: the resident memory of its process tree
    /// (`process` samples), else the machine's used memory (`cpudata`); `None` without either.
    pub host_peak_memory: Option<f64>,
    /// Energy drawn by the GPUs, kJ (0 without time stamps or power).
    pub energy_kj: f64,
    /// Seconds between the first and last GPU sample (0 without time stamps).
    pub elapsed: f64,
    /// `end.time - start.time` (`None` for a process that did not finish).
    pub walltime: Option<f64>,
    /// GPUs the process used: machines × (devices for njobs plans, else 1).
    pub ngpu: i64,
    /// The `device` of per-GPU plans, as text.
    pub device: Option<String>,
    /// The process succeeded ([`ProcessVerdict::is_success`]).
    pub success: bool,
    /// Why the process counts as failed for a fault of its file (it did not finish, or
    /// recorded rates that are not measurements); empty otherwise.
    pub faults: Vec<String>,
    /// What its `load` events hold, for a process of a serving benchmark.
    pub serving: Option<Box<ServingRun>>,
    /// What the GPUs' own energy counters counted while it ran (its `gpu_energy` record; only
    /// its own device for per-GPU plans); empty without counters.
    pub counter_energy: Vec<CounterEnergy>,
}

/// One GPU's energy counter over one process (a `gpu_energy` record's entry).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterEnergy {
    /// The GPU's device id, as in `gpudata`.
    pub device: String,
    /// Joules counted.
    pub joules: f64,
    /// Seconds they cover.
    pub seconds: f64,
}

impl RunFile {
    /// The benchmark name (`config.name`).
    pub fn name(&self) -> &str {
        self.config
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The process tag: the file's name without `.data`.
    pub fn tag(&self) -> String {
        DataFile::new(self.path.clone()).tag.as_str().to_owned()
    }
}

/// Every run file found under some run folders, plus what could not be used.
#[derive(Debug, Clone, Default)]
pub struct RunSet {
    /// The folders as given.
    pub sources: Vec<String>,
    /// Usable process runs, in folder order.
    pub runs: Vec<RunFile>,
    /// How many `.data` files were found.
    pub files_found: usize,
    /// Bad lines, counted per file and kind.
    pub line_problems: ProblemTally,
    /// Files that were left out, with the reason (files without `config`, links to folders,
    /// duplicates, files that cannot be read).
    pub skipped: Vec<(PathBuf, String)>,
    /// Benchmarks the run recorded as skipped for an unmet capability (files holding only
    /// their skip `message`, as both tools write them), once each, in folder order: absent
    /// from the data for a reason, so not failures.
    pub skipped_benches: Vec<String>,
}

impl RunSet {
    /// Warnings a person should see: bad lines, skipped files and processes counted as failed
    /// for a fault of their own file, one sentence each.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.line_problems.warnings();
        out.extend(
            self.skipped
                .iter()
                .map(|(path, why)| format!("{}: {why}", path.display())),
        );
        for run in &self.runs {
            out.extend(
                run.faults
                    .iter()
                    .map(|why| format!("{}: {why}", run.path.display())),
            );
        }
        out
    }
}

/// How many `.data` files this process read for reports (see [`data_file_reads`]).
static DATA_FILE_READS: AtomicUsize = AtomicUsize::new(0);

/// How many `.data` files this process read for reports: a run reports its folder once, so
/// each of its files is read once.
pub fn data_file_reads() -> usize {
    DATA_FILE_READS.load(Ordering::Relaxed)
}

/// Reads every `.data` file under `sources`.
///
/// Fails only when a folder does not exist, no `.data` file is found, or no file holds a
/// benchmark run; anything less is a warning in the returned set. A process that did not
/// finish is a failed run, not a skipped file.
pub fn load_runs<S: AsRef<str>>(sources: &[S]) -> Result<RunSet, ReportError> {
    let paths: Vec<&Path> = sources.iter().map(|s| Path::new(s.as_ref())).collect();
    let found = discover_data_files(&paths)?;
    let files = found.files;
    let mut set = RunSet {
        sources: sources.iter().map(|s| s.as_ref().to_owned()).collect(),
        files_found: files.len(),
        skipped: found
            .skipped
            .into_iter()
            .map(|s| (s.path, s.reason.to_string()))
            .collect(),
        ..RunSet::default()
    };
    if files.is_empty() && set.skipped.is_empty() {
        return Err(ReportError::NoDataFiles {
            sources: set.sources,
        });
    }
    DATA_FILE_READS.fetch_add(files.len(), Ordering::Relaxed);
    for (file, (outcome, problems)) in files.iter().zip(read_in_parallel(&files)) {
        set.line_problems.merge(problems);
        match outcome {
            Ok(FileOutcome::Run(run)) => set.runs.push(*run),
            Ok(FileOutcome::SkipRecord(bench)) => {
                if !set.skipped_benches.contains(&bench) {
                    set.skipped_benches.push(bench);
                }
            }
            Ok(FileOutcome::Unusable(why)) => set.skipped.push((file.path.clone(), why)),
            // A file that cannot be opened is one file lost, not the whole report; the warning
            // says why, with the system's words.
            Err(e) => {
                let cause = std::error::Error::source(&e)
                    .map(|cause| format!(": {cause}"))
                    .unwrap_or_default();
                set.skipped.push((
                    file.path.clone(),
                    format!("{e}{cause}; the file was skipped, check its permissions"),
                ));
            }
        }
    }
    if set.runs.is_empty() {
        return Err(ReportError::NoRuns {
            sources: set.sources.clone(),
            warnings: set.warnings(),
        });
    }
    Ok(set)
}

/// What reading one file gave, and its bad lines.
type FileRead = (Result<FileOutcome, ReportError>, ProblemTally);

/// Reads `files` on as many threads as there are cores (files are independent); the results
/// come back in the order of `files`, so reports and warnings do not depend on timing.
fn read_in_parallel(files: &[DataFile]) -> Vec<FileRead> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(files.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let read_some = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(file) = files.get(i) else {
                return done;
            };
            let mut problems = ProblemTally::default();
            let outcome = read_run_file(file, &mut problems);
            done.push((i, (outcome, problems)));
        }
    };
    let mut slots: Vec<Option<FileRead>> = files.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(read_some)).collect();
        let mine = read_some();
        let theirs = helpers.into_iter().flat_map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        for (i, read) in mine.into_iter().chain(theirs) {
            slots[i] = Some(read);
        }
    });
    slots
        .into_iter()
        .map(|slot| slot.expect("every file is read once"))
        .collect()
}

#[derive(Default)]
struct Pending {
    judge: ProcessJudge,
    config: Option<Value>,
    meta: Option<Value>,
    start: Option<f64>,
    end: Option<f64>,
    duplicate: Option<&'static str>,
    train_rates: Vec<f64>,
    /// GPU device ids, in first-seen order.
    devices: Vec<String>,
    /// Every GPU reading, one sample's after the other.
    gpu_readings: Vec<GpuReading>,
    /// Each `gpudata` sample: its time stamp and how many readings it holds.
    gpu_samples: Vec<(Option<f64>, usize)>,
    process_peak: Option<f64>,
    cpudata_peak: Option<f64>,
    /// The benchmark a skip `message` names.
    skip: Option<String>,
    /// The serving events (a serving benchmark's `load` and `request` steps) seen.
    serving: ServingEvents,
    /// The `gpu_energy` record's entries.
    counter_energy: Vec<CounterEnergy>,
}

const MIB: f64 = 1024.0 * 1024.0;

fn raise(peak: &mut Option<f64>, bytes: Option<f64>) {
    if let Some(b) = bytes.filter(|b| b.is_finite()) {
        *peak = Some(peak.map_or(b / MIB, |p| p.max(b / MIB)));
    }
}

/// What one `.data` file holds.
#[derive(Debug, Clone)]
pub enum FileOutcome {
    /// One process's run.
    Run(Box<RunFile>),
    /// The record of a benchmark the run skipped for an unmet capability: its name.
    SkipRecord(String),
    /// Not a usable run, and why.
    Unusable(String),
}

/// Aggregates one file.
pub fn read_run_file(
    file: &DataFile,
    problems: &mut ProblemTally,
) -> Result<FileOutcome, ReportError> {
    let mut p = Pending::default();
    let mut records = file.records_with(REPORT_FIELDS)?;
    while let Some(item) = records.next_lent_mut() {
        let record = match item {
            ReadItem::Record(record) => record,
            ReadItem::Problem(problem) => {
                problems.add(&file.path, problem);
                continue;
            }
        };
        p.judge.observe(record);
        match &mut record.event {
            // Taken, not copied: the reader replaces the record on the next line.
            Event::Config(c) => p.config = Some(std::mem::take(c)),
            Event::Meta(m) => p.meta = Some(std::mem::take(m)),
            Event::Data(d) => {
                if d.task.as_deref() == Some(TRAIN_TASK)
                    && let Some(rate) = d.rate
                    && RateFault::of(rate).is_none()
                {
                    p.train_rates.push(rate);
                }
                p.serving.observe(d);
                raise(
                    &mut p.cpudata_peak,
                    d.cpudata
                        .as_ref()
                        .and_then(|c| c.memory)
                        .map(|[used, _]| used),
                );
                if let Some(Value::Object(gpus)) = d.extra.get(DataKey::GpuEnergy.as_str()) {
                    p.counter_energy = gpus
                        .iter()
                        .filter_map(|(device, entry)| {
                            Some(CounterEnergy {
                                device: device.clone(),
                                joules: entry.get("joules")?.as_f64()?,
                                seconds: entry.get("seconds")?.as_f64()?,
                            })
                        })
                        .filter(|e| e.joules.is_finite() && e.seconds > 0.0)
                        .collect();
                }
                let process = d.extra.get(DataKey::Process.as_str());
                raise(
                    &mut p.process_peak,
                    process.and_then(|s| s.get(SampleKey::Memory.as_str())?.get(0)?.as_f64()),
                );
                if let Some(gpus) = &d.gpudata {
                    for (id, sample) in gpus {
                        let device = device_index(&mut p.devices, id);
                        p.gpu_readings.push(GpuReading {
                            device,
                            memory_used: sample.memory.map(|[used, _]| used),
                            load: sample.load,
                            power: sample.power,
                        });
                    }
                    p.gpu_samples
                        .push((d.time.filter(|t| *t != 0.0), gpus.len()));
                }
            }
            Event::Message(message) => {
                if let Some(bench) = skipped_bench(message) {
                    p.skip = Some(bench.to_owned());
                }
            }
            Event::Start(start) => {
                if p.start.is_some() {
                    p.duplicate = Some("start");
                }
                p.start = Some(start.time.unwrap_or(f64::NAN));
            }
            Event::End(end) => {
                if p.end.is_some() {
                    p.duplicate = Some("end");
                }
                p.end = Some(end.time.unwrap_or(f64::NAN));
            }
            _ => {}
        }
    }
    let serving = std::mem::take(&mut p.serving)
        .finish()
        .map(|(run, _)| Box::new(run));
    Ok(finish(file, p, serving))
}

/// The index of device `id` in the file's table, added when new.
fn device_index(devices: &mut Vec<String>, id: &str) -> usize {
    match devices.iter().position(|known| known == id) {
        Some(index) => index,
        None => {
            devices.push(id.to_owned());
            devices.len() - 1
        }
    }
}

fn finish(file: &DataFile, p: Pending, serving: Option<Box<ServingRun>>) -> FileOutcome {
    let config = match p.config {
        Some(c) if c.as_object().is_some_and(|m| !m.is_empty()) => c,
        found => {
            return match p.skip {
                Some(bench) => FileOutcome::SkipRecord(bench),
                None if found.is_some() => FileOutcome::Unusable(
                    "its `config` event is empty (no benchmark name, no settings): not a benchmark run (skipped)".into(),
                ),
                None => {
                    FileOutcome::Unusable("no `config` event: not a benchmark run (skipped)".into())
                }
            };
        }
    };
    if let Some(which) = p.duplicate {
        return FileOutcome::Unusable(format!(
            "two `{which}` events: the file mixes several processes (skipped)"
        ));
    }
    let verdict = p.judge.verdict();
    let mut faults = Vec::new();
    match (&verdict, p.judge.errors().first()) {
        // A process that recorded why it never started (a benchfile that gave no plan, a
        // failed set-up) failed for that reason, which the error layer shows.
        (ProcessVerdict::Unfinished(_), Some(error)) => faults.push(format!(
            "it never started: {}",
            error.lines().next().unwrap_or_default()
        )),
        (ProcessVerdict::Unfinished(missing), None) => faults.push(format!(
            "no `{}` event: the benchmark did not finish, so it counts as failed; re-run it",
            missing.as_str()
        )),
        _ => {}
    }
    for failure in verdict.failures() {
        if let Failure::BadRates { .. } = failure {
            faults.push(format!(
                "{failure}, so the benchmark counts as failed; a rate must be a number from 0 to {MAX_RATE:e} items/s"
            ));
        }
    }
    let device = config.get("device").and_then(|d| match d {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    });
    // The readings of the plan's own device (per-GPU plans), else all of them.
    let own_device = device
        .as_ref()
        .map(|dev| p.devices.iter().position(|known| known == dev));
    let mut kept = Vec::new();
    let mut energy = 0.0;
    let mut first_time = None;
    let mut last_time: Option<f64> = None;
    let mut readings_left = p.gpu_readings.as_slice();
    for (now, count) in p.gpu_samples {
        let (readings, rest) = readings_left.split_at(count);
        readings_left = rest;
        if first_time.is_none() {
            first_time = now;
        }
        let before = kept.len();
        match own_device {
            Some(own) => match readings.iter().find(|r| Some(r.device) == own) {
                Some(reading) => kept.push(*reading),
                None => continue,
            },
            None => kept.extend(readings),
        }
        if let (Some(now), Some(last)) = (now, last_time) {
            for reading in &kept[before..] {
                // Data from older voir versions has no power: it adds no energy.
                energy += reading.power.unwrap_or(0.0) * (now - last);
            }
        }
        last_time = now;
    }
    let elapsed = match (first_time, last_time) {
        (Some(first), Some(last)) => last - first,
        _ => 0.0,
    };
    let machines = config
        .get("num_machines")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let method = config
        .get("plan")
        .and_then(|p| p.get("method"))
        .and_then(Value::as_str);
    let local = if method == Some("njobs") {
        config
            .get("devices")
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as i64
    } else {
        1
    };
    // A per-GPU process counts its own device's counter only.
    let mut counter_energy = p.counter_energy;
    if let Some(own) = &device {
        counter_energy.retain(|e| &e.device == own);
    }
    FileOutcome::Run(Box::new(RunFile {
        path: file.path.clone(),
        config,
        meta: p.meta,
        start_time: p.start,
        train_rates: p.train_rates,
        gpu_devices: p.devices,
        gpu_readings: kept,
        host_peak_memory: p.process_peak.or(p.cpudata_peak),
        energy_kj: energy / 1000.0,
        elapsed,
        walltime: p.start.zip(p.end).map(|(start, end)| end - start),
        ngpu: machines * local,
        device,
        success: verdict.is_success(),
        faults,
        serving,
        counter_energy,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report keeps the extra keys of the load generator's lines only: those of every other
    /// line (the monitors' `iodata` and `netdata`) would send a quarter of a GPU run's lines down
    /// the decoder's slow path for nothing.
    #[test]
    fn the_report_asks_for_the_serving_lines_extra_keys_only() {
        assert!(!REPORT_FIELDS.wants_extra());
        assert!(!REPORT_FIELDS.wants_payload_extra(Some("main")));
        assert!(REPORT_FIELDS.wants_payload_extra(Some(milabench_metrics::format::LOAD_TASK)));
        assert!(REPORT_FIELDS.wants_data(DataKey::GpuEnergy));
    }

    /// `lines` as one run folder's `bench.D0.data`, read.
    fn read(lines: &[&str]) -> RunFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.D0.data");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut problems = ProblemTally::default();
        match read_run_file(&DataFile::new(path), &mut problems).unwrap() {
            FileOutcome::Run(run) => *run,
            other => panic!("{other:?}"),
        }
    }

    const CONFIG: &str =
        r#"{"event": "config", "data": {"name": "bench", "tag": ["bench", "D0"]}, "pipe": null}"#;
    const START: &str =
        r#"{"event": "start", "data": {"command": ["x"], "time": 100.0}, "pipe": null}"#;
    const RATE: &str =
        r#"{"event": "data", "data": {"task": "train", "rate": 10.0}, "pipe": "data"}"#;
    const END: &str =
        r#"{"event": "end", "data": {"return_code": 0, "time": 103.0}, "pipe": null}"#;

    /// Issue 48: the files of serving benchmarks were read a second time for their steps. The
    /// file here is a FIFO that hands its lines to the first reading only (a second opening sees
    /// no line), so a second reading would find no step.
    #[cfg(unix)]
    #[test]
    fn serving_steps_come_from_the_one_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.D0.data");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let load = r#"{"event": "data", "data": {"task": "load", "step": 0, "scenario": {"kind": "offline"}, "held": true}, "pipe": "data"}"#;
        let content = [CONFIG, START, load, END].join("\n") + "\n";
        let writer_path = path.clone();
        // Every later opening gets no line. Not joined: with one reading, it ends up waiting for a
        // reader that never comes.
        std::thread::spawn(move || {
            std::fs::write(&writer_path, content).unwrap();
            loop {
                let _ = std::fs::write(&writer_path, "");
            }
        });
        let mut problems = ProblemTally::default();
        let FileOutcome::Run(run) = read_run_file(&DataFile::new(path), &mut problems).unwrap()
        else {
            panic!("not a run");
        };
        let serving = run.serving.expect("the steps of the one reading");
        assert_eq!(serving.steps.len(), 1);
        assert!(serving.steps[0].held);
    }

    /// Issue 47: a process's `gpu_energy` record (the GPUs' own counters) is kept, only its own
    /// GPU's for a per-GPU plan; the benchmark's total counts each GPU once.
    #[test]
    fn the_energy_counters_are_read_and_totalled() {
        let energy = r#"{"event": "data", "data": {"task": "main", "time": 103.0, "gpu_energy": {"0": {"joules": 600.0, "seconds": 2.0}, "1": {"joules": 900.0, "seconds": 3.0}}}, "pipe": "data"}"#;
        let all = read(&[CONFIG, START, RATE, energy, END]);
        assert_eq!(all.counter_energy.len(), 2);
        let own = r#"{"event": "config", "data": {"name": "bench", "tag": ["bench", "D1"], "device": "1"}, "pipe": null}"#;
        let one = read(&[own, START, RATE, energy, END]);
        assert_eq!(
            one.counter_energy,
            [CounterEnergy {
                device: "1".into(),
                joules: 900.0,
                seconds: 3.0
            }]
        );
        // Two njobs processes read both GPUs: each counts once.
        let total = crate::summary::CounterTotal::of(&[&all, &all]).unwrap();
        assert_eq!((total.joules, total.watts), (1500.0, 600.0));
        // Per-GPU processes each count their own.
        let total = crate::summary::CounterTotal::of(&[&one, &one]).unwrap();
        assert_eq!((total.joules, total.watts), (1800.0, 600.0));
        assert!(crate::summary::CounterTotal::of(&[&read(&[CONFIG, START, RATE, END])]).is_none());
    }

    /// Issue 37: the report judged a process by its own rule, which did not see `error` events:
    /// a process that recorded one and exited with 0 passed here and failed in the run.
    #[test]
    fn processes_are_judged_by_the_one_verdict() {
        assert!(read(&[CONFIG, START, RATE, END]).success);
        let error = r#"{"event": "error", "data": {"type": "RuntimeError", "message": "boom"}, "pipe": "data"}"#;
        let failed = read(&[CONFIG, START, RATE, error, END]);
        assert!(!failed.success && failed.faults.is_empty(), "{failed:?}");
        let stop = r#"{"event": "stop", "data": null, "pipe": "data"}"#;
        assert!(read(&[CONFIG, START, RATE, error, stop, END]).success);
        let unfinished = read(&[CONFIG, START, RATE]);
        assert!(!unfinished.success);
        assert_eq!(
            unfinished.faults,
            ["no `end` event: the benchmark did not finish, so it counts as failed; re-run it"]
        );
    }

    /// A process recorded as failed before it started (its benchfile gave no plan) is said to
    /// have never started, with its error, rather than told to be re-run.
    #[test]
    fn a_process_that_never_started_says_why() {
        let error = r#"{"event": "error", "data": {"type": "BenchfileFailed", "message": "its benchfile.py gives no plan: boom\n  fix: fix it"}, "pipe": null}"#;
        let end = r#"{"event": "end", "data": {"return_code": 1, "time": 103.0}, "pipe": null}"#;
        let never = read(&[CONFIG, error, end]);
        assert!(!never.success);
        assert_eq!(
            never.faults,
            ["it never started: BenchfileFailed: its benchfile.py gives no plan: boom"]
        );
    }
}
