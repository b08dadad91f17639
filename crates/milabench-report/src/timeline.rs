//! What each process of a run did over time, for the HTML report's plots and failure notes:
//! its rates, its GPUs' load, memory and power, the CPU load and memory of its process tree and
//! of the machine, when it stopped early, how it ended and the last lines of its standard error.
//! The report's numbers do not come from here (they come from [`crate::build_report`]); this
//! only draws them out in time.

use std::collections::VecDeque;

use indexmap::IndexMap;
use milabench_metrics::format::{DataKey, EventName, TRAIN_TASK};
use milabench_metrics::{DataFile, Event, Fields, Pipe, ReadItem, ReturnCode};
use serde_json::Value;

use crate::error::ReportError;
use crate::ingest::RunFile;

/// How many lines of standard error a failure note keeps (the last ones).
pub const STDERR_TAIL: usize = 20;

/// One GPU's readings over time (seconds since the process started).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuSeries {
    /// Compute load, percent.
    pub load: Vec<(f64, f64)>,
    /// Used memory, MiB.
    pub memory: Vec<(f64, f64)>,
    /// Power, W.
    pub power: Vec<(f64, f64)>,
}

/// One process (one `.data` file) over time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// The benchmark (`config.name`).
    pub bench: String,
    /// The file's tag (its name without `.data`).
    pub tag: String,
    /// Training rates: seconds since the start when the record had a time, and the rate.
    pub rates: Vec<(Option<f64>, f64)>,
    /// Readings of the GPUs, by device id.
    pub gpus: IndexMap<String, GpuSeries>,
    /// CPU load of the process tree (`process` samples), percent.
    pub process_load: Vec<(f64, f64)>,
    /// Resident memory of the process tree (`process` samples), MiB.
    pub process_memory: Vec<(f64, f64)>,
    /// CPU load of the whole machine (`cpudata` samples, taken at the same instants as the
    /// process tree's but another quantity: never joined with them into one series), percent.
    pub machine_load: Vec<(f64, f64)>,
    /// Used memory of the whole machine (`cpudata` samples), MiB.
    pub machine_memory: Vec<(f64, f64)>,
    /// When the benchmark asked to stop early (seconds since the start; the time of the last
    /// record before it), if it did.
    pub early_stop: Option<f64>,
    /// Whether it asked to stop early, with or without a time.
    pub stopped_early: bool,
    /// The exit status, as written (`None`: no `end` event).
    pub return_code: Option<String>,
    /// The last [`STDERR_TAIL`] lines of standard error.
    pub stderr_tail: Vec<String>,
    /// Exceptions recorded (`error` events): type and message.
    pub errors: Vec<String>,
}

const MIB: f64 = 1024.0 * 1024.0;

/// The parts of a `.data` line a timeline reads.
const TIMELINE_FIELDS: Fields = Fields::PIPE
    .with(Fields::event(EventName::Stop))
    .with(Fields::event(EventName::End))
    .with(Fields::event(EventName::Line))
    .with(Fields::event(EventName::Error))
    .with(Fields::data(DataKey::Task))
    .with(Fields::data(DataKey::Rate))
    .with(Fields::data(DataKey::Time))
    .with(Fields::data(DataKey::Gpudata))
    .with(Fields::data(DataKey::Cpudata))
    .with(Fields::data(DataKey::Process));

/// `[used, total]` → used.
fn used(pair: Option<&Value>) -> Option<f64> {
    pair?.as_array()?.first()?.as_f64()
}

/// Reads the time lines of `run`'s file (which the report already read once for its numbers).
pub fn read_timeline(run: &RunFile) -> Result<Timeline, ReportError> {
    let file = DataFile::new(run.path.clone());
    let mut t = Timeline {
        bench: run.name().to_owned(),
        tag: file.tag.as_str().to_owned(),
        ..Timeline::default()
    };
    let mut origin = run.start_time;
    let mut first_time: Option<f64> = None;
    let mut last_time: Option<f64> = None;
    let mut stderr = VecDeque::with_capacity(STDERR_TAIL);
    let mut records = file.records_with(TIMELINE_FIELDS)?;
    while let Some(item) = records.next_lent() {
        let ReadItem::Record(record) = item else {
            continue;
        };
        match &record.event {
            Event::Data(d) => {
                let since = d.time.map(|now| {
                    let zero = *origin.get_or_insert_with(|| *first_time.get_or_insert(now));
                    now - zero
                });
                if since.is_some() {
                    last_time = since;
                }
                if d.task.as_deref() == Some(TRAIN_TASK)
                    && let Some(rate) = d.rate
                    && rate.is_finite()
                {
                    t.rates.push((since, rate));
                }
                let Some(at) = since else { continue };
                for (id, gpu) in d.gpudata.iter().flatten() {
                    let series = t.gpus.entry(id.clone()).or_default();
                    if let Some(load) = gpu.load {
                        series.load.push((at, load * 100.0));
                    }
                    if let Some([used, _]) = gpu.memory {
                        series.memory.push((at, used));
                    }
                    if let Some(power) = gpu.power {
                        series.power.push((at, power));
                    }
                }
                if let Some(process) = d.extra.get(DataKey::Process.as_str()) {
                    if let Some(load) = process.get("load").and_then(Value::as_f64) {
                        t.process_load.push((at, load));
                    }
                    if let Some(bytes) = used(process.get("memory")) {
                        t.process_memory.push((at, bytes / MIB));
                    }
                }
                if let Some(cpu) = &d.cpudata {
                    if let Some(load) = cpu.load {
                        t.machine_load.push((at, load));
                    }
                    if let Some([bytes, _]) = cpu.memory {
                        t.machine_memory.push((at, bytes / MIB));
                    }
                }
            }
            Event::Stop => {
                t.stopped_early = true;
                t.early_stop = last_time;
            }
            Event::End(end) => {
                t.return_code = Some(match &end.return_code {
                    ReturnCode::Code(code) => code.to_string(),
                    ReturnCode::Other(value) => value.to_string(),
                });
            }
            Event::Line(line) if record.pipe == Some(Pipe::Stderr) => {
                if stderr.len() == STDERR_TAIL {
                    stderr.pop_front();
                }
                stderr.push_back(line.trim_end().to_owned());
            }
            Event::Error(e) => t.errors.push(format!(
                "{}: {}",
                e.kind.as_deref().unwrap_or("error"),
                e.message.as_deref().unwrap_or("")
            )),
            _ => {}
        }
    }
    t.stderr_tail = stderr.into();
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::load_runs;

    fn folder(lines: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bench.D0.data"), lines.join("\n") + "\n").unwrap();
        dir
    }

    #[test]
    fn series_are_timed_from_the_start_and_the_end_is_kept() {
        let dir = folder(&[
            r#"{"event": "config", "data": {"name": "bench", "device": "0"}, "pipe": null}"#,
            r#"{"event": "start", "data": {"command": ["x"], "time": 100.0}, "pipe": null}"#,
            r#"{"event": "data", "data": {"task": "train", "rate": 10.0, "time": 101.0}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 101.5, "gpudata": {"0": {"memory": [500, 1000], "load": 0.5, "power": 200}}}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 102.0, "process": {"load": 1.5, "memory": [1048576, 2097152]}}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "train", "rate": 12.0}, "pipe": "data"}"#,
            r#"{"event": "line", "data": "Traceback\n", "pipe": "stderr"}"#,
            r#"{"event": "line", "data": "out\n", "pipe": "stdout"}"#,
            r#"{"event": "error", "data": {"type": "RuntimeError", "message": "boom"}, "pipe": "data"}"#,
            r#"{"event": "stop", "data": null, "pipe": "data"}"#,
            r#"{"event": "end", "data": {"return_code": 1, "time": 103.0}, "pipe": null}"#,
        ]);
        let set = load_runs(&[dir.path().to_str().unwrap()]).unwrap();
        let t = read_timeline(&set.runs[0]).unwrap();
        assert_eq!(t.tag, "bench.D0");
        assert_eq!(t.rates, [(Some(1.0), 10.0), (None, 12.0)]);
        assert_eq!(t.gpus["0"].load, [(1.5, 50.0)]);
        assert_eq!(t.gpus["0"].memory, [(1.5, 500.0)]);
        assert_eq!(t.gpus["0"].power, [(1.5, 200.0)]);
        assert_eq!(t.process_load, [(2.0, 1.5)]);
        assert_eq!(t.process_memory, [(2.0, 1.0)]);
        assert_eq!(t.early_stop, Some(2.0));
        assert_eq!(t.return_code.as_deref(), Some("1"));
        assert_eq!(t.stderr_tail, ["Traceback"]);
        assert_eq!(t.errors, ["RuntimeError: boom"]);
    }

    /// Issue 53, K8: the sampler writes the machine's `cpudata` and the process tree's
    /// `process` as two lines of one instant; they are two series, never one line through
    /// both (which drew a vertical stroke at every instant).
    #[test]
    fn machine_and_process_samples_of_one_instant_are_two_series() {
        let sample = |at: f64| {
            [
                format!(
                    r#"{{"event": "data", "data": {{"task": "main", "time": {at}, "cpudata": {{"memory": [2097152, 4194304], "load": 90.0}}}}, "pipe": null}}"#
                ),
                format!(
                    r#"{{"event": "data", "data": {{"task": "main", "time": {at}, "process": {{"load": 5.0, "memory": [1048576, 4194304]}}}}, "pipe": null}}"#
                ),
            ]
        };
        let mut lines = vec![
            r#"{"event": "config", "data": {"name": "bench"}, "pipe": null}"#.to_owned(),
            r#"{"event": "start", "data": {"command": ["x"], "time": 100.0}, "pipe": null}"#
                .to_owned(),
        ];
        lines.extend(sample(101.0));
        lines.extend(sample(104.0));
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let dir = folder(&lines);
        let set = load_runs(&[dir.path().to_str().unwrap()]).unwrap();
        let t = read_timeline(&set.runs[0]).unwrap();
        assert_eq!(t.process_load, [(1.0, 5.0), (4.0, 5.0)]);
        assert_eq!(t.machine_load, [(1.0, 90.0), (4.0, 90.0)]);
        assert_eq!(t.process_memory, [(1.0, 1.0), (4.0, 1.0)]);
        assert_eq!(t.machine_memory, [(1.0, 2.0), (4.0, 2.0)]);
    }
}
