//! The per-benchmark summary (`milabench summary`): every file of a benchmark pooled, across
//! all run folders.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::error::ReportError;
use crate::ingest::{RunFile, RunSet};
use crate::stats::{GroupId, Stats, StatsQuery};

/// GPU statistics of one device.
#[derive(Debug, Clone, Serialize)]
pub struct GpuLoad {
    /// Used memory, MiB.
    pub memory: Stats,
    /// Compute load, 0 to 1.
    pub load: Stats,
    /// Power, W (NaN for data recorded without power).
    pub power: Stats,
}

/// The summary of one benchmark, field for field the Python tool's `analysis summary` object.
#[derive(Debug, Clone, Serialize)]
pub struct BenchSummary {
    /// `meta` of the last file (`null` if it had none).
    pub meta: Option<Value>,
    /// Benchmark name.
    pub name: String,
    /// Benchmark group.
    pub group: String,
    /// Number of files (processes).
    pub n: i64,
    /// Largest GPU count of its processes.
    pub ngpu: i64,
    /// Successful processes.
    pub successes: i64,
    /// Failed processes.
    pub failures: i64,
    /// Training rate, all processes pooled.
    pub train_rate: Stats,
    /// Wall time of each process, seconds.
    pub walltime: Stats,
    /// Training rate per GPU, for per-GPU plans.
    pub per_gpu: IndexMap<String, Stats>,
    /// GPU memory, load and power per device (samples with no load are left out).
    pub gpu_load: IndexMap<String, GpuLoad>,
    /// `config.weight` (0 if absent).
    pub weight: Value,
    /// Extra figures (none yet).
    pub extra: serde_json::Map<String, Value>,
    /// `config.enabled` (false if absent).
    pub enabled: Value,
    /// GPU energy of the first file, kJ (only when its samples had time stamps).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_finite")]
    pub energy: Option<f64>,
    /// Seconds covered by the GPU samples of the first file (sic: the Python key is misspelt).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_finite")]
    pub elpased: Option<f64>,
    /// `train_rate.mean / (energy / elpased)`: items per kJ.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_finite")]
    pub perf_watt: Option<f64>,
    /// Largest host memory of its processes, MiB, from telemetry samples (not serialised: the
    /// Python summary has no such key).
    #[serde(skip)]
    pub host_peak_memory: Option<f64>,
    /// What the GPUs' own energy counters counted over the benchmark's processes (not
    /// serialised: the Python summary has no such key); `None` without counters.
    #[serde(skip)]
    pub counter_energy: Option<CounterTotal>,
    /// Whether the configuration said `enabled` (not serialised).
    #[serde(skip)]
    pub enabled_given: bool,
    /// The training rates of each process in the order they were measured, for their
    /// intervals (not serialised).
    #[serde(skip)]
    pub rate_series: Vec<RateSeries>,
}

/// The GPUs' energy counters summed over a benchmark. A per-GPU process reads its own GPU, so
/// each counts; the processes of an `njobs` plan each read every GPU they see, so there each
/// device id counts once, with its largest reading (over several nodes, that undercounts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterTotal {
    /// Joules counted, in all.
    pub joules: f64,
    /// Mean power, watts: each GPU's joules over the seconds they cover, summed over GPUs.
    pub watts: f64,
}

impl CounterTotal {
    /// The total of `files`' counters; `None` when none has one.
    pub fn of(files: &[&RunFile]) -> Option<CounterTotal> {
        let mut total = CounterTotal {
            joules: 0.0,
            watts: 0.0,
        };
        let mut shared: IndexMap<&str, (f64, f64)> = IndexMap::new();
        let mut any = false;
        for file in files {
            for e in &file.counter_energy {
                any = true;
                if file.device.is_some() {
                    total.joules += e.joules;
                    total.watts += e.joules / e.seconds;
                } else {
                    let entry = shared.entry(e.device.as_str()).or_default();
                    if e.joules > entry.0 {
                        *entry = (e.joules, e.seconds);
                    }
                }
            }
        }
        for (joules, seconds) in shared.into_values() {
            total.joules += joules;
            total.watts += joules / seconds;
        }
        any.then_some(total)
    }
}

/// The training rates of one process, in the order they were measured.
#[derive(Debug, Clone)]
pub struct RateSeries {
    /// The `device` of per-GPU plans.
    pub device: Option<String>,
    /// The repeat of `run --repeat` (its tag's `R<i>`), if any.
    pub repeat: Option<String>,
    /// Training rates.
    pub rates: Vec<f64>,
}

fn opt_finite<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => crate::json::finite_or_null(x, s),
        None => s.serialize_none(),
    }
}

/// Benchmarks in first-seen order.
pub type Summary = IndexMap<String, BenchSummary>;

/// Groups the runs by benchmark name and computes their statistics (one polars query for all).
pub fn summarize(set: &RunSet) -> Result<Summary, ReportError> {
    summarize_runs(set.runs.iter())
}

/// [`summarize`] over any selection of runs.
pub fn summarize_runs<'a>(runs: impl Iterator<Item = &'a RunFile>) -> Result<Summary, ReportError> {
    let mut by_name: IndexMap<&str, Vec<&RunFile>> = IndexMap::new();
    for run in runs {
        by_name.entry(run.name()).or_default().push(run);
    }
    struct Ids {
        rate: GroupId,
        wall: GroupId,
        per_gpu: IndexMap<String, GroupId>,
        gpu: IndexMap<String, [GroupId; 3]>,
    }
    let mut query = StatsQuery::new();
    let mut ids = Vec::new();
    for files in by_name.values() {
        let rate = query.group();
        let wall = query.group();
        let mut per_gpu = IndexMap::new();
        let mut gpu: IndexMap<String, [GroupId; 3]> = IndexMap::new();
        for f in files {
            query.extend(rate, f.train_rates.iter().copied());
            query.extend(wall, f.walltime);
            // As in the Python tool, a device appears in `per_gpu` once one of its processes
            // measured a rate: a process that failed before its first rate adds no key, and so
            // no NaN to the score's sum over devices.
            if let Some(dev) = f.device.as_ref().filter(|_| !f.train_rates.is_empty()) {
                let g = match per_gpu.get(dev) {
                    Some(g) => *g,
                    None => *per_gpu.entry(dev.clone()).or_insert(query.group()),
                };
                query.extend(g, f.train_rates.iter().copied());
            }
            for reading in &f.gpu_readings {
                // The Python tool leaves out idle samples (no memory used, or no load). A
                // sample without a load at all (a MIG instance, whose utilisation NVML does not
                // report) still counts for memory and power, or such a GPU would show none.
                let Some(used) = reading.memory_used else {
                    continue;
                };
                if used == 1.0 || reading.load == Some(0.0) {
                    continue;
                }
                let dev = &f.gpu_devices[reading.device];
                // Looked up by reference first: a device id is cloned once per device, not once
                // per reading.
                let g = match gpu.get(dev) {
                    Some(g) => *g,
                    None => *gpu.entry(dev.clone()).or_insert([
                        query.group(),
                        query.group(),
                        query.group(),
                    ]),
                };
                query.extend(g[0], [used]);
                query.extend(g[1], reading.load);
                query.extend(g[2], reading.power);
            }
        }
        ids.push(Ids {
            rate,
            wall,
            per_gpu,
            gpu,
        });
    }
    let stats = query.run()?;
    let get = |g: GroupId| stats[g.index()];
    let mut out = Summary::new();
    for ((name, files), ids) in by_name.into_iter().zip(ids) {
        let last = files[files.len() - 1];
        let first = files[0];
        let config = &last.config;
        let train_rate = get(ids.rate);
        let successes = files.iter().filter(|f| f.success).count() as i64;
        let (energy, elpased, perf_watt) = if first.elapsed != 0.0 {
            (
                Some(first.energy_kj),
                Some(first.elapsed),
                Some(train_rate.mean / (first.energy_kj / first.elapsed)),
            )
        } else {
            (None, None, None)
        };
        let summary = BenchSummary {
            meta: last.meta.clone(),
            name: name.to_owned(),
            group: config
                .get("group")
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_owned(),
            n: files.len() as i64,
            ngpu: files.iter().map(|f| f.ngpu).max().unwrap_or(0),
            successes,
            failures: files.len() as i64 - successes,
            train_rate,
            walltime: get(ids.wall),
            per_gpu: ids.per_gpu.into_iter().map(|(d, g)| (d, get(g))).collect(),
            gpu_load: ids
                .gpu
                .into_iter()
                .map(|(d, [m, l, p])| {
                    (
                        d,
                        GpuLoad {
                            memory: get(m),
                            load: get(l),
                            power: get(p),
                        },
                    )
                })
                .collect(),
            weight: config.get("weight").cloned().unwrap_or(Value::from(0)),
            extra: serde_json::Map::new(),
            enabled: config.get("enabled").cloned().unwrap_or(Value::Bool(false)),
            enabled_given: config.get("enabled").is_some(),
            host_peak_memory: files
                .iter()
                .filter_map(|f| f.host_peak_memory)
                .reduce(f64::max),
            energy,
            elpased,
            perf_watt,
            counter_energy: CounterTotal::of(&files),
            rate_series: files
                .iter()
                .map(|f| RateSeries {
                    device: f.device.clone(),
                    repeat: repeat_of(&f.config),
                    rates: f.train_rates.clone(),
                })
                .collect(),
        };
        out.insert(name.to_owned(), summary);
    }
    Ok(out)
}

/// The repeat a process belongs to: the `R<i>` element of its configuration's `tag` (after the
/// name at HEAD, last in the Python tool's 2023 runs).
fn repeat_of(config: &Value) -> Option<String> {
    config["tag"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|part| {
            part.strip_prefix('R')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_owned)
}

/// The summary as pretty JSON (four-space indent, NaN as `null`).
pub fn summary_json(summary: &Summary) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    let _ = serde::Serialize::serialize(summary, &mut ser);
    String::from_utf8(buf).unwrap_or_default()
}
