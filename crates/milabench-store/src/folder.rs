//! What the store keeps of a run folder, read with `milabench-metrics`: the system facts of a
//! `meta` event, and per `.data` file one pack (config, command, outcome) with its metrics.

use std::path::{Path, PathBuf};

use milabench_metrics::format::{DataKey, EventName};
use milabench_metrics::{
    DataFile, Event, Fields, ProcessJudge, ProcessVerdict, ReadItem, ReturnCode,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::StoreError;

/// The system a run was measured on, from its `meta` event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemFacts {
    /// Host name (`os.nodename`).
    pub host: Option<String>,
    /// CPU model (`cpu.brand`).
    pub cpu: Option<String>,
    /// Accelerator family (`accelerators.arch`).
    pub gpu_arch: Option<String>,
    /// Product name of the first GPU.
    pub gpu_model: Option<String>,
    /// Number of GPUs.
    pub gpu_count: i64,
    /// Driver version (`accelerators.system`: the first key naming a driver).
    pub driver: Option<String>,
    /// PyTorch version (`pytorch.torch`).
    pub torch: Option<String>,
    /// milabench version (`milabench.tag`).
    pub milabench: Option<String>,
    /// Seconds since the epoch the facts were taken (`date`).
    pub date: Option<f64>,
}

impl SystemFacts {
    /// The facts found in a `meta` payload (missing keys stay empty).
    pub fn from_meta(meta: &Value) -> SystemFacts {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let accelerators = meta.get("accelerators");
        let gpus = accelerators
            .and_then(|a| a.get("gpus"))
            .and_then(Value::as_object);
        let driver = accelerators
            .and_then(|a| a.get("system"))
            .and_then(Value::as_object)
            .and_then(|system| {
                system
                    .iter()
                    .find(|(k, _)| k.to_ascii_lowercase().contains("driver"))
                    .map(|(_, v)| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
            });
        SystemFacts {
            host: text(meta.get("os").and_then(|o| o.get("nodename"))),
            cpu: text(meta.get("cpu").and_then(|c| c.get("brand"))),
            gpu_arch: text(accelerators.and_then(|a| a.get("arch"))),
            gpu_model: text(
                gpus.and_then(|g| g.values().next())
                    .and_then(|g| g.get("product")),
            ),
            gpu_count: gpus.map_or(0, |g| g.len() as i64),
            driver,
            torch: text(meta.get("pytorch").and_then(|p| p.get("torch"))),
            milabench: text(meta.get("milabench").and_then(|m| m.get("tag"))),
            date: meta.get("date").and_then(Value::as_f64),
        }
    }
}

/// How a benchmark process ended: its [`ProcessVerdict`], in the words of the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackStatus {
    /// It succeeded (kept out of reports included).
    Done,
    /// The benchmark asked to stop early (a success).
    EarlyStop,
    /// It failed (a non-zero exit status, an `error` event, a NaN loss, no training rate, ...).
    Failed,
    /// No `start` or no `end`: the process was killed or is still running; or the run was
    /// interrupted while it ran.
    Incomplete,
    /// Not run (its requirements were not met, or the run stopped before it).
    Skipped,
}

impl From<&ProcessVerdict> for PackStatus {
    fn from(verdict: &ProcessVerdict) -> PackStatus {
        match verdict {
            ProcessVerdict::Succeeded | ProcessVerdict::KeptOut => PackStatus::Done,
            ProcessVerdict::EarlyStopped => PackStatus::EarlyStop,
            ProcessVerdict::Failed(_) => PackStatus::Failed,
            ProcessVerdict::Unfinished(_) | ProcessVerdict::Interrupted => PackStatus::Incomplete,
        }
    }
}

impl PackStatus {
    /// The word stored in `packs.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            PackStatus::Done => "done",
            PackStatus::EarlyStop => "early_stop",
            PackStatus::Failed => "failed",
            PackStatus::Incomplete => "incomplete",
            PackStatus::Skipped => "skipped",
        }
    }
}

/// One measurement of a pack, as the dashboard's narrow table holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// The line of its record in the file (from 0).
    pub seq: i64,
    /// Time stamp of the record, when it had one.
    pub ts: Option<f64>,
    /// `rate`, `loss`, `gpu.load`, `gpu.memory`, `gpu.temperature`, `gpu.power`,
    /// `cpu.load`, `cpu.memory`, `walltime`.
    pub name: &'static str,
    /// The record's `task` (`train`, `main`, ...).
    pub namespace: Option<String>,
    /// The value (NaN is kept as null).
    pub value: f64,
    /// Unit.
    pub unit: Option<String>,
    /// The GPU a `gpu.*` value is about.
    pub gpu_id: Option<String>,
}

/// One `.data` file: a benchmark process.
#[derive(Debug, Clone)]
pub struct PackRecord {
    /// The process tag (file name without `.data`).
    pub tag: String,
    /// The benchmark name (`config.name`, else the tag's first part).
    pub name: String,
    /// The `config` event.
    pub config: Option<Value>,
    /// The `meta` event.
    pub meta: Option<Value>,
    /// `start.command`.
    pub command: Option<Vec<String>>,
    /// How it ended.
    pub status: PackStatus,
    /// `end.return_code` when it is a number.
    pub exit_code: Option<i64>,
    /// GPUs of the process: its `devices` list, else 1 for a `device`.
    pub ngpu: Option<i64>,
    /// `start.time`.
    pub start_ts: Option<f64>,
    /// `end.time`.
    pub end_ts: Option<f64>,
    /// The job number (`config.job-number`).
    pub job_id: Option<i64>,
    /// Its measurements.
    pub metrics: Vec<MetricRow>,
    /// Lines that could not be read.
    pub bad_lines: usize,
}

impl PackRecord {
    /// A pack of process `tag` of benchmark `name` with nothing read yet (incomplete: no `end`).
    pub fn new(tag: String, name: String) -> PackRecord {
        PackRecord {
            tag,
            name,
            config: None,
            meta: None,
            command: None,
            status: PackStatus::Incomplete,
            exit_code: None,
            ngpu: None,
            start_ts: None,
            end_ts: None,
            job_id: None,
            metrics: Vec::new(),
            bad_lines: 0,
        }
    }
}

/// The parts of a `.data` line a pack holds: the verdict's, the system facts, and the metrics.
const PACK_FIELDS: Fields = ProcessJudge::FIELDS
    .with(Fields::event(EventName::Meta))
    .with(Fields::data(DataKey::Time))
    .with(Fields::data(DataKey::Units))
    .with(Fields::data(DataKey::Gpudata))
    .with(Fields::data(DataKey::Cpudata));

/// Reads one `.data` file into a pack.
pub fn read_pack(file: &DataFile) -> Result<PackRecord, StoreError> {
    let mut pack = PackRecord::new(file.tag.as_str().to_owned(), file.tag.bench().to_owned());
    let mut judge = ProcessJudge::default();
    let mut records = file.records_with(PACK_FIELDS)?;
    while let Some(item) = records.next_lent() {
        let first_row = pack.metrics.len();
        let record = match item {
            ReadItem::Record(r) => r,
            ReadItem::Problem(_) => {
                pack.bad_lines += 1;
                continue;
            }
        };
        judge.observe(record);
        match &record.event {
            Event::Config(config) => {
                if let Some(name) = config.get("name").and_then(Value::as_str) {
                    pack.name = name.to_owned();
                }
                pack.job_id = config.get("job-number").and_then(Value::as_i64);
                pack.ngpu = match (config.get("devices"), config.get("device")) {
                    (Some(Value::Array(d)), _) => Some(d.len() as i64),
                    (_, Some(d)) if !d.is_null() => Some(1),
                    _ => None,
                };
                pack.config = Some(config.clone());
            }
            Event::Meta(meta) if meta.as_object().is_some_and(|m| !m.is_empty()) => {
                pack.meta = Some(meta.clone());
            }
            Event::Start(start) => {
                pack.command = Some(start.command.clone());
                pack.start_ts = start.time;
            }
            Event::End(end) => {
                pack.end_ts = end.time;
                pack.exit_code = match end.return_code {
                    ReturnCode::Code(c) => Some(c),
                    ReturnCode::Other(_) => None,
                };
                if let (Some(start), Some(end)) = (pack.start_ts, pack.end_ts) {
                    pack.metrics.push(MetricRow {
                        seq: 0,
                        ts: Some(end),
                        name: "walltime",
                        namespace: None,
                        value: end - start,
                        unit: Some("s".into()),
                        gpu_id: None,
                    });
                }
            }
            Event::Data(data) => data_metrics(data, &mut pack.metrics),
            _ => {}
        }
        // The record's line, known once the reader has it back.
        let seq = records.lines_read() as i64 - 1;
        for row in &mut pack.metrics[first_row..] {
            row.seq = seq;
        }
    }
    pack.status = PackStatus::from(&judge.verdict());
    Ok(pack)
}

/// The metrics of one `data` record (the dashboard's mapping; progress records carry none),
/// their `seq` left for the caller.
fn data_metrics(data: &milabench_metrics::DataPayload, out: &mut Vec<MetricRow>) {
    let row = |name: &'static str, value: f64, unit: Option<&str>, gpu: Option<&str>| MetricRow {
        seq: 0,
        ts: data.time,
        name,
        namespace: data.task.clone(),
        value,
        unit: unit.map(str::to_owned),
        gpu_id: gpu.map(str::to_owned),
    };
    if let Some(rate) = data.rate {
        out.push(row("rate", rate, data.units.as_deref(), None));
    }
    if let Some(loss) = data.loss {
        out.push(row("loss", loss, None, None));
    }
    for (gpu, sample) in data.gpudata.iter().flatten() {
        let gpu = Some(gpu.as_str());
        if let Some(load) = sample.load {
            out.push(row("gpu.load", load, None, gpu));
        }
        if let Some([used, _]) = sample.memory {
            out.push(row("gpu.memory", used, Some("MiB"), gpu));
        }
        if let Some(t) = sample.temperature {
            out.push(row("gpu.temperature", t, Some("C"), gpu));
        }
        if let Some(p) = sample.power {
            out.push(row("gpu.power", p, Some("W"), gpu));
        }
    }
    if let Some(cpu) = &data.cpudata {
        if let Some(load) = cpu.load {
            out.push(row("cpu.load", load, Some("%"), None));
        }
        if let Some([used, _]) = cpu.memory {
            out.push(row("cpu.memory", used, Some("B"), None));
        }
    }
}

/// The run folders `folder` stands for: itself when it holds `.data` files of its own (a run
/// folder, or a folder without any, which the import then refuses), else each folder under it
/// that does (a folder of runs, such as `<base>/runs`), sorted. Install and prepare logs are not
/// runs ([`milabench_metrics::discover_data_files`] leaves them out).
pub fn run_folders(folder: &Path) -> Vec<PathBuf> {
    let Ok(found) = milabench_metrics::discover_data_files(&[folder]) else {
        return vec![folder.to_owned()];
    };
    let mut runs: Vec<PathBuf> = found
        .files
        .iter()
        .filter_map(|file| file.path.parent().map(Path::to_path_buf))
        .collect();
    runs.sort();
    runs.dedup();
    if runs.is_empty() || runs.iter().any(|run| run == folder) {
        return vec![folder.to_owned()];
    }
    runs
}

/// The listing of a run folder's `.data` files recorded with an imported run: one
/// `NAME<TAB>SIZE` line per file, sorted. Event files only grow, so a folder whose listing did not
/// change holds nothing new, and one whose files did not all grow or stay is not the run that was
/// imported ([`growth`]).
pub fn fingerprint(root: &Path, files: &[DataFile]) -> Result<String, StoreError> {
    let mut entries = Vec::with_capacity(files.len());
    for file in files {
        let len = std::fs::metadata(&file.path)
            .map_err(|source| StoreError::Io {
                path: file.path.clone(),
                source,
            })?
            .len();
        let name = file.path.strip_prefix(root).unwrap_or(&file.path);
        entries.push(format!("{}\t{len}\n", name.display()));
    }
    entries.sort();
    Ok(entries.concat())
}

/// How a folder's files ([`fingerprint`] `now`) compare with those recorded at an import
/// (`was`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Growth {
    /// The same files with the same sizes.
    Same,
    /// Every recorded file is there, none shorter, and some are longer or new.
    Grew,
    /// A recorded file is shorter, or gone (`now` is `None`).
    Shrank {
        /// The file, relative to its run folder.
        file: String,
        /// Its recorded size.
        was: u64,
        /// Its size now.
        now: Option<u64>,
    },
    /// The record is a digest (written by an earlier milabench) that differs: whether the
    /// files grew cannot be told.
    Unknown,
}

/// Compares the listings `was` (recorded) and `now` (see [`Growth`]).
pub(crate) fn growth(was: &str, now: &str) -> Growth {
    if was == now {
        return Growth::Same;
    }
    if !was.contains('\t') {
        // Earlier milabench versions recorded the SHA-256 of the listing.
        let digest: String = Sha256::digest(now.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        return if digest == was {
            Growth::Same
        } else {
            Growth::Unknown
        };
    }
    let sizes = |listing: &str| -> std::collections::HashMap<String, u64> {
        listing
            .lines()
            .filter_map(|line| line.rsplit_once('\t'))
            .map(|(name, len)| (name.to_owned(), len.parse().unwrap_or(0)))
            .collect()
    };
    let now = sizes(now);
    let mut was: Vec<_> = sizes(was).into_iter().collect();
    was.sort();
    for (file, was) in was {
        let len = now.get(&file).copied();
        if len.is_none_or(|len| len < was) {
            return Growth::Shrank {
                file,
                was,
                now: len,
            };
        }
    }
    Growth::Grew
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_grows_only_when_no_file_shrinks_or_goes() {
        let was = "a.data\t10\nb.data\t20\n";
        assert_eq!(growth(was, was), Growth::Same);
        assert_eq!(growth(was, "a.data\t10\nb.data\t25\n"), Growth::Grew);
        assert_eq!(
            growth(was, "a.data\t10\nb.data\t20\nc.data\t1\n"),
            Growth::Grew
        );
        assert_eq!(
            growth(was, "a.data\t9\nb.data\t25\n"),
            Growth::Shrank {
                file: "a.data".into(),
                was: 10,
                now: Some(9)
            }
        );
        assert_eq!(
            growth(was, "a.data\t10\n"),
            Growth::Shrank {
                file: "b.data".into(),
                was: 20,
                now: None
            }
        );
        let digest: String = Sha256::digest(was.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(growth(&digest, was), Growth::Same);
        assert_eq!(growth(&digest, "a.data\t11\n"), Growth::Unknown);
    }

    /// A pack's status is the verdict on its file ([`ProcessVerdict`]), so the database agrees
    /// with the run and the report on which processes failed.
    #[test]
    fn a_pack_status_is_the_verdict_on_its_file() {
        let status = |lines: &[&str]| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("bench.D0.data");
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            read_pack(&DataFile::new(path)).unwrap().status
        };
        let config = r#"{"event": "config", "data": {"name": "bench"}, "pipe": null}"#;
        let start = r#"{"event": "start", "data": {"command": ["x"], "time": 1.0}, "pipe": null}"#;
        let rate = r#"{"event": "data", "data": {"task": "train", "rate": 10.0}, "pipe": "data"}"#;
        let nan = r#"{"event": "data", "data": {"task": "train", "loss": NaN}, "pipe": "data"}"#;
        let stop = r#"{"event": "stop", "data": null, "pipe": "data"}"#;
        let end = |code: i64| {
            format!(
                r#"{{"event": "end", "data": {{"return_code": {code}, "time": 2.0}}, "pipe": null}}"#
            )
        };
        let (ok, killed) = (end(0), end(-15));
        assert_eq!(status(&[config, start, rate, &ok]), PackStatus::Done);
        assert_eq!(status(&[config, start, rate, nan, &ok]), PackStatus::Failed);
        assert_eq!(status(&[config, start, &ok]), PackStatus::Failed);
        assert_eq!(
            status(&[config, start, rate, stop, &killed]),
            PackStatus::EarlyStop
        );
        assert_eq!(status(&[config, start, rate]), PackStatus::Incomplete);
    }

    #[test]
    fn system_facts_come_from_the_meta_event() {
        let meta = serde_json::json!({
            "cpu": {"brand": "EPYC", "count": 8},
            "os": {"nodename": "g1"},
            "accelerators": {"arch": "cuda",
                "gpus": {"0": {"product": "H100"}, "1": {"product": "H100"}},
                "system": {"CUDA_DRIVER": 12040, "DRIVER_VERSION": "550.1"}},
            "pytorch": {"torch": "2.3.1"},
            "milabench": {"tag": "v1"},
            "date": 1700000000.5
        });
        let facts = SystemFacts::from_meta(&meta);
        assert_eq!(facts.gpu_model.as_deref(), Some("H100"));
        assert_eq!(facts.gpu_count, 2);
        assert_eq!(facts.driver.as_deref(), Some("12040"));
        assert_eq!(facts.host.as_deref(), Some("g1"));
        assert_eq!(facts.torch.as_deref(), Some("2.3.1"));
        assert_eq!(facts.date, Some(1700000000.5));
        assert_eq!(SystemFacts::from_meta(&serde_json::json!({})).gpu_count, 0);
    }
}
