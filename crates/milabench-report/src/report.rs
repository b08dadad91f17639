//! The report table: one row per benchmark, the suite score and the failure-rate gate.

use indexmap::IndexMap;
use serde_json::Value;

use milabench_stats::{Estimate, Interval};

use crate::interval::WarmUp;
use crate::serving::ServingRow;
use crate::summary::{BenchSummary, Summary};

/// A benchmark the suite expects, with the weight it counts for (from a suite file, or from the
/// `config` events of the data).
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteEntry {
    /// Benchmark name.
    pub name: String,
    /// Weight in the score.
    pub weight: Option<f64>,
    /// Whether it counts.
    pub enabled: Option<bool>,
    /// Group, used to order rows.
    pub group: Option<String>,
}

/// How `enabled` is shown: the Python tool prints the value it found (`True`, `False`, `1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Enabled {
    /// A boolean from a configuration.
    Bool(bool),
    /// The default `1` of benchmarks that were expected but not run.
    Int(i64),
}

impl Enabled {
    fn from_value(v: &Value) -> Enabled {
        match v {
            Value::Bool(b) => Enabled::Bool(*b),
            Value::Number(n) => Enabled::Int(n.as_i64().unwrap_or(0)),
            _ => Enabled::Bool(false),
        }
    }

    /// Whether the benchmark counts in the score.
    pub fn is_on(self) -> bool {
        match self {
            Enabled::Bool(b) => b,
            Enabled::Int(i) => i != 0,
        }
    }

    /// Python's `str()`.
    pub fn python_str(self) -> String {
        match self {
            Enabled::Bool(true) => "True".into(),
            Enabled::Bool(false) => "False".into(),
            Enabled::Int(i) => i.to_string(),
        }
    }
}

/// One row of the breakdown table. NaN marks a value that does not exist (a benchmark expected
/// by the suite but absent from the data has NaN `n`, `fail`, `perf`, ...).
#[derive(Debug, Clone)]
pub struct ReportRow {
    /// Benchmark name.
    pub name: String,
    /// Failed processes.
    pub fail: f64,
    /// Processes.
    pub n: f64,
    /// GPUs used.
    pub ngpu: f64,
    /// Mean training rate (trimmed, pooled).
    pub perf: f64,
    /// Standard error over the mean.
    pub sem_pct: f64,
    /// Standard deviation over the mean.
    pub std_pct: f64,
    /// Largest GPU memory use, MiB (NaN without GPU samples, as the Python tool).
    pub peak_memory: f64,
    /// Largest host memory use of the benchmark's processes, MiB, from the telemetry samples
    /// (the resident memory of the process tree, else the machine's used memory); NaN without
    /// such samples. Not in the text report, whose layout is the Python tool's.
    pub host_peak_memory: f64,
    /// Throughput that counts in the score (per-GPU sums for per-GPU plans) × success ratio.
    pub score: f64,
    /// Weight in the suite score.
    pub weight: f64,
    /// GPU energy, kJ.
    pub energy_kj: f64,
    /// Items per kJ.
    pub perf_watt: f64,
    /// What the GPUs' own energy counters counted, kJ (NaN without counters; not in the
    /// text report, whose layout is the Python tool's).
    pub counter_energy_kj: f64,
    /// `perf` per watt of the counters' mean power (items per joule; NaN without counters).
    pub counter_perf_per_watt: f64,
    /// Mean over GPUs of the median power (only when GPU samples exist).
    pub median_watt: Option<f64>,
    /// Whether it counts.
    pub enabled: Enabled,
    /// 95% interval of `perf` (batch means of each process, pooled).
    pub perf_ci: Interval,
    /// 95% interval of `score`.
    pub score_ci: Interval,
    /// The warm-up found in the rates after the fixed `skip` (`None` without data).
    pub warm_up: Option<WarmUp>,
}

impl ReportRow {
    /// Whether the fixed `skip` cut too little (see [`WarmUp::skip_too_short`]).
    pub fn skip_too_short(&self) -> bool {
        self.warm_up.is_some_and(|w| w.skip_too_short())
    }
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    /// Run folders, as given.
    pub sources: Vec<String>,
    /// System facts (`cpu`, `n_cpu`, `product`, `n_gpu`, `memory`) from the first `meta`.
    pub system: Vec<(String, Value)>,
    /// Rows, ordered by group then name.
    pub rows: Vec<ReportRow>,
    /// Whether the `median_watt` column is shown.
    pub has_median_watt: bool,
    /// Whether some row has energy-counter figures (their columns are shown in JSON, CSV,
    /// Markdown and the page).
    pub has_counter_energy: bool,
    /// Σ fail / max(Σ n, 1).
    pub failure_rate: f64,
    /// Weighted geometric mean of `score + 1` (−1 when no weight counts).
    pub score: f64,
    /// 95% interval of the score (the rows' intervals through the weighted geometric mean).
    pub score_ci: Interval,
    /// `--price`.
    pub price: Option<f64>,
    /// Number of processes that failed.
    pub failed_files: usize,
    /// The serving table: one row per process of a serving benchmark (empty from
    /// [`build_report`], which sees no process; [`crate::report_runs`] fills it).
    pub serving: Vec<ServingRow>,
}

/// The failure rate above which a report says FAIL.
pub const FAILURE_RATE_GATE: f64 = 0.01;

impl Report {
    /// Whether the failure rate passes the gate.
    pub fn passes(&self) -> bool {
        self.failure_rate <= FAILURE_RATE_GATE
    }

    /// Why the score says nothing, when it does not: no enabled benchmark has a weight, so the
    /// score is the Python tool's `-1` for "none" (kept in its column for compatibility).
    pub fn score_problem(&self) -> Option<String> {
        let weighted = self
            .rows
            .iter()
            .any(|row| row.enabled.is_on() && row.weight > 0.0);
        (!weighted && !self.rows.is_empty()).then(|| {
            "no enabled benchmark has a weight above 0, so there is no score (-1.00 stands for none)\n  fix: give the benchmarks a `weight:` in the suite (1 is the usual default)".to_owned()
        })
    }
}

/// Options of [`build_report`].
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Price of the machine, for the price/performance line.
    pub price: Option<f64>,
    /// Expected benchmarks that are absent for a reason (skipped for unmet capabilities): their
    /// rows stay `nan` instead of counting as failures.
    pub excused: Vec<String>,
    /// Which of each benchmark's runs to keep (`--latest`, `--filter-failures`).
    pub selection: crate::RunSelection,
}

/// Weights taken from the `config` events of the data, when no suite file is given.
pub fn weights_from_summary(summary: &Summary) -> Vec<SuiteEntry> {
    summary
        .values()
        .map(|s| SuiteEntry {
            name: s.name.clone(),
            weight: s.weight.as_f64(),
            // A benchmark that ran was enabled, unless its configuration says otherwise.
            enabled: if s.enabled_given {
                s.enabled.as_bool().or(s.enabled.as_i64().map(|i| i != 0))
            } else {
                Some(true)
            },
            group: Some(s.group.clone()),
        })
        .collect()
}

/// Builds the table and the scores. `suite` lists the benchmarks the suite expects and gives
/// their weights: an enabled one absent from the data counts as one failed process (`fail 1`,
/// `n 0`, the intent of the Python tool, whose check never fires), unless it is in
/// `options.excused`; a disabled one gets a `nan` row.
pub fn build_report(
    sources: &[String],
    summary: &Summary,
    suite: &[SuiteEntry],
    failed_files: usize,
    options: &ReportOptions,
) -> Report {
    let suite: IndexMap<&str, &SuiteEntry> = suite.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut names: Vec<&str> = summary.keys().map(String::as_str).collect();
    for name in suite.keys() {
        if !summary.contains_key(*name) {
            names.push(name);
        }
    }
    names.sort_unstable();
    names.dedup();
    let group_of = |name: &str| -> String {
        if !suite.is_empty() {
            suite
                .get(name)
                .and_then(|e| e.group.clone())
                .unwrap_or_else(|| name.to_owned())
        } else {
            summary
                .get(name)
                .map_or_else(|| name.to_owned(), |s| s.group.clone())
        }
    };
    names.sort_by_cached_key(|n| group_of(n));

    let mut rows = Vec::with_capacity(names.len());
    let mut estimates = Vec::new();
    for name in &names {
        let entry = suite.get(name).copied();
        let mut row = make_row(name, summary.get(*name), entry);
        if entry.is_some()
            && !summary.contains_key(*name)
            && row.0.enabled.is_on()
            && !options.excused.iter().any(|e| e == name)
        {
            row.0.n = 0.0;
            row.0.fail = 1.0;
        }
        estimates.push(row.1);
        rows.push(row.0);
    }
    let has_median_watt = rows.iter().any(|r| r.median_watt.is_some());
    let has_counter_energy = rows.iter().any(|r| !r.counter_energy_kj.is_nan());
    let fail: f64 = rows.iter().map(|r| r.fail).filter(|x| !x.is_nan()).sum();
    let n: f64 = rows.iter().map(|r| r.n).filter(|x| !x.is_nan()).sum();
    let failure_rate = fail / n.max(1.0);
    let score = suite_score(rows.iter().map(|r| (r.score, r.weight, r.enabled)));
    let score_ci = score_interval(score, &rows, &estimates);
    Report {
        sources: sources.to_vec(),
        system: system_block(summary),
        rows,
        has_median_watt,
        has_counter_energy,
        failure_rate,
        score,
        score_ci,
        price: options.price,
        failed_files,
        serving: Vec::new(),
    }
}

/// Weighted geometric mean of `score + 1`: `exp(Σ w·ln(1 + s) / Σ w)` with `w = weight ×
/// enabled` and NaN scores counted as 0; −1 when the weights sum to 0.
pub fn suite_score(rows: impl Iterator<Item = (f64, f64, Enabled)>) -> f64 {
    let mut num = 0.0;
    let mut den = 0.0;
    for (score, weight, enabled) in rows {
        let w = if enabled.is_on() { weight } else { 0.0 };
        let s = if score.is_nan() { 0.0 } else { score };
        num += (1.0 + s).ln() * w;
        den += w;
    }
    if den == 0.0 { -1.0 } else { (num / den).exp() }
}

/// A row and the estimate of its score (NaN without data).
fn make_row(
    name: &str,
    s: Option<&BenchSummary>,
    entry: Option<&SuiteEntry>,
) -> (ReportRow, Estimate) {
    let weight = entry
        .and_then(|e| e.weight)
        .or_else(|| s.and_then(|s| s.weight.as_f64()))
        .unwrap_or(0.0);
    let enabled = match (entry.and_then(|e| e.enabled), s) {
        (Some(b), _) => Enabled::Bool(b),
        (None, Some(s)) => Enabled::from_value(&s.enabled),
        (None, None) => Enabled::Int(1),
    };
    let mut row = ReportRow {
        name: name.to_owned(),
        fail: f64::NAN,
        n: f64::NAN,
        ngpu: s.map_or(0.0, |s| s.ngpu as f64),
        perf: f64::NAN,
        sem_pct: f64::NAN,
        std_pct: f64::NAN,
        peak_memory: f64::NAN,
        host_peak_memory: s.and_then(|s| s.host_peak_memory).unwrap_or(f64::NAN),
        score: f64::NAN,
        weight,
        energy_kj: s.and_then(|s| s.energy).unwrap_or(0.0),
        perf_watt: s.and_then(|s| s.perf_watt).unwrap_or(0.0),
        counter_energy_kj: f64::NAN,
        counter_perf_per_watt: f64::NAN,
        median_watt: None,
        enabled,
        perf_ci: Interval::NAN,
        score_ci: Interval::NAN,
        warm_up: None,
    };
    let Some(s) = s else {
        return (row, Estimate::NAN);
    };
    row.n = s.n as f64;
    row.fail = s.failures as f64;
    row.perf = s.train_rate.mean;
    row.std_pct = s.train_rate.std / row.perf;
    row.sem_pct = s.train_rate.sem / row.perf;
    if !s.gpu_load.is_empty() {
        row.peak_memory = s
            .gpu_load
            .values()
            .map(|g| g.memory.max)
            .fold(f64::NEG_INFINITY, f64::max);
        let power: Vec<f64> = s.gpu_load.values().map(|g| g.power.median).collect();
        row.median_watt = Some(power.iter().sum::<f64>() / power.len() as f64);
    }
    let acc: f64 = s.per_gpu.values().map(|p| p.mean).sum();
    let ratio = 1.0 - row.fail / row.n.max(1.0);
    row.score = (if acc > 0.0 { acc } else { row.perf }) * ratio;
    row.perf_ci = Interval::around(row.perf, s.rate_estimate().half_width());
    let score = Estimate {
        mean: row.score,
        ..s.throughput_estimate().scaled(ratio)
    };
    row.score_ci = Interval::of(&score);
    row.warm_up = Some(s.warm_up());
    if let Some(counter) = s.counter_energy {
        row.counter_energy_kj = counter.joules / 1000.0;
        row.counter_perf_per_watt = row.perf / counter.watts;
    }
    (row, score)
}

/// The interval of the suite score by the delta method: the score is `exp(Σ (w/W) ln(1 + s))`,
/// so `ln(1 + s)` of each row has the variance `var(s) / (1 + s)²` and the score that of their
/// weighted sum times the score squared. Rows whose score counts as 0 (failed, absent) are
/// exact; a counted row without an interval leaves the score without one.
fn score_interval(score: f64, rows: &[ReportRow], estimates: &[Estimate]) -> Interval {
    let total: f64 = rows
        .iter()
        .filter(|r| r.enabled.is_on())
        .map(|r| r.weight)
        .sum();
    if total == 0.0 {
        return Interval::NAN;
    }
    let parts = rows
        .iter()
        .zip(estimates)
        .filter(|(r, _)| r.enabled.is_on() && r.weight != 0.0)
        .map(|(r, e)| {
            let log_part = if r.score.is_nan() {
                Estimate {
                    mean: 0.0,
                    variance: 0.0,
                    dof: f64::INFINITY,
                }
            } else {
                Estimate {
                    mean: (1.0 + r.score).ln(),
                    variance: e.variance / (1.0 + r.score).powi(2),
                    dof: e.dof,
                }
            };
            (r.weight / total, log_part)
        });
    let log_score = Estimate::weighted_sum(parts);
    Interval::around(score, log_score.scaled(score).half_width())
}

fn system_block(summary: &Summary) -> Vec<(String, Value)> {
    let Some(meta) = summary
        .values()
        .filter_map(|s| s.meta.as_ref())
        .find(|m| m.as_object().is_some_and(|o| !o.is_empty()))
    else {
        return Vec::new();
    };
    // Host memory, bytes (recorded by this tool only).
    let host_memory = meta
        .get("memory")
        .and_then(|m| m.get("total"))
        .and_then(Value::as_f64);
    let mut out = Vec::new();
    for (key, value) in meta.as_object().into_iter().flatten() {
        match key.as_str() {
            "accelerators" => {
                let gpus = value.get("gpus").and_then(Value::as_object);
                let last = gpus.and_then(|g| g.values().next_back());
                out.push((
                    "product".into(),
                    last.and_then(|g| g.get("product"))
                        .cloned()
                        .unwrap_or(Value::from("NA")),
                ));
                out.push(("n_gpu".into(), Value::from(gpus.map_or(0, |g| g.len()))));
                let memory = match (last, host_memory) {
                    (Some(gpu), _) => python_str(
                        gpu.get("memory")
                            .and_then(|m| m.get("total"))
                            .unwrap_or(&Value::from(0)),
                    ),
                    // No GPU: the memory that counts is the host's.
                    (None, Some(bytes)) => {
                        format!("{:.1} GiB (host)", bytes / (1u64 << 30) as f64)
                    }
                    (None, None) => "NA".to_owned(),
                };
                out.push(("memory".into(), Value::String(memory)));
            }
            "cpu" => {
                out.push((
                    "cpu".into(),
                    value.get("brand").cloned().unwrap_or(Value::Null),
                ));
                out.push((
                    "n_cpu".into(),
                    value.get("count").cloned().unwrap_or(Value::Null),
                ));
            }
            _ => {}
        }
    }
    out
}

/// Python's `str()` of a JSON scalar.
pub(crate) fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.fract() == 0.0 && x.abs() < 1e16 {
                format!("{x:.1}")
            } else {
                format!("{x}")
            }
        }
        other => other.to_string(),
    }
}
