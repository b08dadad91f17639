//! Serving benchmarks: the `load` and `request` data events of an LLM load run (`milabench
//! load`, or a serving benchmark of a suite), read into the steps of each process's run, and the
//! rows of the report's serving table.
//!
//! A `load` event is one step's summary as the load generator wrote it (`milabench_load::Summary`
//! with the step's `scenario`, `held` and `sweep`): latencies in seconds as `{"p50": {"value":
//! ...}, ...}`, throughputs as `{"value": ...}`. A `request` event is one request: its `step`,
//! `ttft` and `tpot` in seconds (`null` when it has none) and an `error` when it failed. Values
//! missing or of another shape read as not recorded (NaN), never as an error.
//!
//! The report's one pass over each file hands every `data` event to a [`ServingEvents`], so
//! serving figures cost no second reading; only the HTML page reads a serving file again, for its
//! requests' latencies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use milabench_metrics::format::{LOAD_TASK, REQUEST_TASK};
use milabench_metrics::{DataFile, DataPayload, Event, Fields, ReadItem, serving};
use milabench_stats::Interval;
use serde_json::{Map, Value};

use crate::error::ReportError;
use crate::ingest::RunSet;

/// The parts of a `.data` line the serving reader asks for: the `task` of `data` events and, for
/// the load generator's tasks, the keys outside the format's tables, where its figures are (the
/// extra keys of every other line, such as the monitors' `iodata`, are skipped unread).
pub(crate) const SERVING_FIELDS: Fields = Fields::SERVING_EXTRA;

/// How a step released its requests (its `load` event's `scenario`).
#[derive(Debug, Clone, PartialEq)]
pub enum LoadScenario {
    /// Every request queued at once.
    Offline,
    /// Poisson arrivals at `rate` requests per second (a sweep's steps are such runs).
    Server {
        /// Offered requests per second.
        rate: f64,
    },
    /// A fixed number of requests in flight.
    Concurrency {
        /// Requests in flight.
        n: u64,
    },
    /// A scenario this report does not know, by the name it was written with.
    Other(String),
}

impl LoadScenario {
    /// Reads `{"kind": "server", "rate": 20}`, as the load generator writes it; also
    /// `{"server": {"rate": 20}}` and a bare name (`"offline"`).
    fn from_value(value: &Value) -> LoadScenario {
        let (kind, fields) = match value {
            Value::String(kind) => (kind.as_str(), None),
            Value::Object(map) => match map.get("kind").and_then(Value::as_str) {
                Some(kind) => (kind, Some(map)),
                None => match map.iter().next() {
                    Some((kind, Value::Object(inner))) if map.len() == 1 => {
                        (kind.as_str(), Some(inner))
                    }
                    _ => ("", None),
                },
            },
            _ => ("", None),
        };
        let number = |key: &str| fields.and_then(|f| f.get(key));
        match kind {
            "offline" => LoadScenario::Offline,
            "server" => LoadScenario::Server {
                rate: number("rate").and_then(Value::as_f64).unwrap_or(f64::NAN),
            },
            "concurrency" => LoadScenario::Concurrency {
                n: number("n").and_then(Value::as_u64).unwrap_or(0),
            },
            other => LoadScenario::Other(other.to_owned()),
        }
    }

    /// The offered rate of a server run.
    pub fn rate(&self) -> Option<f64> {
        match self {
            LoadScenario::Server { rate } => Some(*rate),
            _ => None,
        }
    }

    /// How the table says it: `offline`, `server 20 req/s`, `concurrency 8`.
    pub fn label(&self) -> String {
        match self {
            LoadScenario::Offline => "offline".to_owned(),
            LoadScenario::Server { rate } => format!("server {} req/s", rate_text(*rate)),
            LoadScenario::Concurrency { n } => format!("concurrency {n}"),
            LoadScenario::Other(kind) if kind.is_empty() => "not recorded".to_owned(),
            LoadScenario::Other(kind) => kind.clone(),
        }
    }
}

/// A rate with at most two decimals, trailing zeros left out (`20`, `22.5`, `11`).
fn rate_text(rate: f64) -> String {
    let text = format!("{rate:.2}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A latency's median and 99th percentile, seconds (NaN when not recorded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One step's summary, as its `load` event gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    /// How its requests were released.
    pub scenario: LoadScenario,
    /// Whether it held: no failed request and, with an SLO, 99% of requests within it.
    pub held: bool,
    /// Whether the run was stopped before the step ended (it then never counts as held).
    pub interrupted: bool,
    /// Requests sent.
    pub requests: u64,
    /// Requests that succeeded.
    pub succeeded: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Time to first token from the scheduled send time (from the actual send in runs recorded
    /// before the load generator kept the former), seconds.
    pub ttft: Percentiles,
    /// Time per output token after the first, `(e2e - ttft) / (tokens - 1)` (vLLM's), seconds.
    pub tpot: Percentiles,
    /// Time per output token with the first, `e2e / tokens` (GuideLLM's), seconds (NaN in
    /// runs recorded before the load generator kept it).
    pub tpot_with_first: Percentiles,
    /// End-to-end latency from the scheduled send time (as `ttft`), seconds.
    pub e2e: Percentiles,
    /// Successful requests per second.
    pub request_throughput: f64,
    /// Output tokens of successful requests per second.
    pub output_throughput: f64,
    /// Requests per second within the SLO (`None`: no SLO was given).
    pub goodput: Option<f64>,
    /// Share of the requests sent that met the SLO (`None`: no SLO was given).
    pub slo_attainment: Option<f64>,
}

impl StepSummary {
    fn from_payload(load: &Map<String, Value>) -> StepSummary {
        let number = |pointer: &str| {
            load_pointer(load, pointer)
                .and_then(Value::as_f64)
                .unwrap_or(f64::NAN)
        };
        let count = |key: &str| load.get(key).and_then(Value::as_u64).unwrap_or(0);
        let percentiles = |key: &str| Percentiles {
            p50: number(&format!("/{key}/p50/value")),
            p99: number(&format!("/{key}/p99/value")),
        };
        // From the schedule where the run kept it, else (older runs) from the actual send.
        let from_schedule = |key: &str| {
            let scheduled = format!("{key}_from_schedule");
            percentiles(if load.contains_key(&scheduled) {
                &scheduled
            } else {
                key
            })
        };
        StepSummary {
            scenario: load
                .get("scenario")
                .map_or(LoadScenario::Other(String::new()), LoadScenario::from_value),
            held: load.get("held").and_then(Value::as_bool).unwrap_or(false),
            interrupted: load
                .get("interrupted")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            requests: count("requests"),
            succeeded: count("succeeded"),
            failed: count("failed"),
            ttft: from_schedule("ttft"),
            tpot: percentiles("tpot"),
            tpot_with_first: percentiles("tpot_with_first"),
            e2e: from_schedule("e2e"),
            request_throughput: number("/request_throughput/value"),
            output_throughput: number("/output_throughput/value"),
            goodput: load_pointer(load, "/goodput/value").and_then(Value::as_f64),
            slo_attainment: load.get("slo_attainment").and_then(Value::as_f64),
        }
    }

    /// Whether the step was judged against an SLO.
    pub fn has_slo(&self) -> bool {
        self.slo_attainment.is_some() || self.goodput.is_some()
    }

    /// Whether the step held its SLO.
    pub fn verdict(&self) -> SloVerdict {
        match (self.has_slo(), self.held) {
            _ if self.interrupted => SloVerdict::Interrupted,
            (false, _) => SloVerdict::NoSlo,
            (true, true) => SloVerdict::Held,
            (true, false) => SloVerdict::NotHeld,
        }
    }
}

/// A number column of the serving table, one definition for every rendering.
pub(crate) struct ServingColumn {
    /// The text report's and Markdown's header, and the page's `data-col`.
    pub(crate) header: &'static str,
    /// The page's header.
    pub(crate) label: &'static str,
    /// The JSON report's key.
    pub(crate) key: &'static str,
    /// Decimals shown.
    pub(crate) decimals: usize,
    /// The value (NaN: none).
    pub(crate) value: fn(&StepSummary) -> f64,
}

impl ServingColumn {
    /// The cell's text: the value with the column's decimals, `-` for none.
    pub(crate) fn text(&self, step: &StepSummary) -> String {
        let value = (self.value)(step);
        if value.is_nan() {
            "-".to_owned()
        } else {
            format!("{value:.0$}", self.decimals)
        }
    }
}

/// The serving table's number columns, between the scenario and the SLO verdict: latencies in
/// milliseconds, rates per second.
pub(crate) const SERVING_COLUMNS: [ServingColumn; 11] = [
    ServingColumn {
        header: "ok",
        label: "requests ok",
        key: "ok",
        decimals: 0,
        value: |s| s.succeeded as f64,
    },
    ServingColumn {
        header: "failed",
        label: "failed",
        key: "failed",
        decimals: 0,
        value: |s| s.failed as f64,
    },
    ServingColumn {
        header: "ttft_p50",
        label: "TTFT p50 ms",
        key: "ttft_p50_ms",
        decimals: 2,
        value: |s| s.ttft.p50 * 1e3,
    },
    ServingColumn {
        header: "ttft_p99",
        label: "TTFT p99 ms",
        key: "ttft_p99_ms",
        decimals: 2,
        value: |s| s.ttft.p99 * 1e3,
    },
    ServingColumn {
        header: "tpot_p50",
        label: "TPOT p50 ms",
        key: "tpot_p50_ms",
        decimals: 2,
        value: |s| s.tpot.p50 * 1e3,
    },
    ServingColumn {
        header: "tpot_p99",
        label: "TPOT p99 ms",
        key: "tpot_p99_ms",
        decimals: 2,
        value: |s| s.tpot.p99 * 1e3,
    },
    ServingColumn {
        header: "tpot_all_p50",
        label: "TPOT with first p50 ms",
        key: "tpot_with_first_p50_ms",
        decimals: 2,
        value: |s| s.tpot_with_first.p50 * 1e3,
    },
    ServingColumn {
        header: "e2e_p99",
        label: "e2e p99 ms",
        key: "e2e_p99_ms",
        decimals: 2,
        value: |s| s.e2e.p99 * 1e3,
    },
    ServingColumn {
        header: "req/s",
        label: "requests/s",
        key: "request_throughput",
        decimals: 2,
        value: |s| s.request_throughput,
    },
    ServingColumn {
        header: "tokens/s",
        label: "output tokens/s",
        key: "output_throughput",
        decimals: 2,
        value: |s| s.output_throughput,
    },
    ServingColumn {
        header: "goodput",
        label: "goodput req/s",
        key: "goodput",
        decimals: 2,
        value: |s| s.goodput.unwrap_or(f64::NAN),
    },
];

/// What the serving table's columns mean, in lines short enough for a terminal.
pub(crate) const SERVING_NOTE: [&str; 4] = [
    "Latencies in ms: ttft time to first token (to the first token of any kind, reasoning included, not only of the answer's text), tpot time per output token without the first, (e2e - ttft) / (tokens - 1) as vLLM counts it, tpot_all with the first, e2e / tokens as GuideLLM counts it, e2e end to end; ttft and e2e from the scheduled send time, the client's send delay included (from the actual send in older runs, which did not record it); p50 median, p99 99th percentile.",
    "Output tokens: the server's usage (completion_tokens), else the stream's token events counted (never fewer than those).",
    "req/s and tokens/s: successful requests and their output tokens per second; goodput: requests per second within the SLO.",
    "slo: held (no failed request, 99% within the SLO), NOT held, - without an SLO, interrupted (the run stopped before the step ended). A sweep shows its highest rate that held; an SLO search the mean of its searches' highest rates that held, with their 95% interval.",
];

/// What the JSON report's serving keys mean (its `serving_definitions`), by key.
pub(crate) const SERVING_DEFINITIONS: [(&str, &str); 7] = [
    (
        "ttft_p50_ms",
        "time to first token (p50, p99; ms): to the first token event of any kind, reasoning included, not only of the answer's text; from the request's scheduled send time, the client's own send delay included (from the actual send in older runs, which did not record it)",
    ),
    (
        "tpot_p50_ms",
        "time per output token without the first (p50, p99; ms): (e2e - ttft) / (output tokens - 1), as vLLM counts it",
    ),
    (
        "tpot_with_first_p50_ms",
        "time per output token with the first (p50; ms): e2e / output tokens, as GuideLLM counts it",
    ),
    (
        "e2e_p99_ms",
        "end-to-end latency (p99; ms), from the scheduled send time as ttft",
    ),
    (
        "output_tokens",
        "the server's usage (completion_tokens), else the stream's token events counted (never fewer than those)",
    ),
    (
        "request_throughput",
        "successful requests per second; output_throughput their output tokens per second; goodput requests per second within the SLO",
    ),
    (
        "slo",
        "held: no failed request and 99% of requests within the SLO; not held; interrupted; null without an SLO",
    ),
];

/// `pointer` (`/a/b`) into a payload's map.
fn load_pointer<'v>(map: &'v Map<String, Value>, pointer: &str) -> Option<&'v Value> {
    let mut parts = pointer.trim_start_matches('/').split('/');
    let first = map.get(parts.next()?)?;
    parts.try_fold(first, |value, key| value.get(key))
}

/// What one process's `load` events hold: one step, or the steps of a sweep of rates.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingRun {
    /// Whether the steps are a sweep of rates (server runs at rising rates until one did not
    /// hold).
    pub sweep: bool,
    /// The steps in order; never empty.
    pub steps: Vec<StepSummary>,
    /// What an SLO search found, when the steps are one.
    pub slo_search: Option<SearchFigure>,
}

/// The result of an SLO search: the highest rate whose p99 bounds held, the mean over its
/// repeated searches, with their 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchFigure {
    /// Requests per second.
    pub rate: f64,
    /// The 95% interval, when there were at least two searches.
    pub interval: Option<Interval>,
}

impl SearchFigure {
    /// Reads a `load` event's `slo_search` (`{"rate": .., "interval": [low, high] | null}`).
    fn from_payload(load: &Map<String, Value>) -> Option<SearchFigure> {
        let search = load.get("slo_search")?;
        let interval = search.get("interval").and_then(|i| {
            Some(Interval {
                low: i.get(0)?.as_f64()?,
                high: i.get(1)?.as_f64()?,
            })
        });
        Some(SearchFigure {
            rate: search.get("rate")?.as_f64()?,
            interval,
        })
    }
}

impl serving::ServingStep for StepSummary {
    fn rate(&self) -> Option<f64> {
        self.scenario.rate()
    }

    fn held(&self) -> bool {
        self.held
    }
}

impl ServingRun {
    /// A sweep's highest rate that held.
    pub fn highest_held_rate(&self) -> Option<f64> {
        serving::highest_held_rate(&self.steps)
    }

    /// The step whose numbers stand for the run (the one whose output tokens/s are the
    /// benchmark's perf): a sweep's highest rate that held, else the first step.
    pub fn headline(&self) -> Option<&StepSummary> {
        serving::headline(&self.steps)
    }

    /// How the run released its requests: the step's scenario, or for a sweep `sweep: highest
    /// held 40 req/s` (`sweep: none held from 10 req/s` when none did).
    pub fn scenario(&self) -> String {
        if let Some(search) = self.slo_search {
            return match search.interval {
                Some(Interval { low, high }) => format!(
                    "SLO search: {} req/s [{}, {}]",
                    rate_text(search.rate),
                    rate_text(low),
                    rate_text(high)
                ),
                None => format!("SLO search: {} req/s", rate_text(search.rate)),
            };
        }
        if !self.sweep {
            return self
                .headline()
                .map_or_else(String::new, |s| s.scenario.label());
        }
        let first = self.steps.iter().find_map(|s| s.scenario.rate());
        match (self.highest_held_rate(), first) {
            (Some(rate), _) => format!("sweep: highest held {} req/s", rate_text(rate)),
            (None, Some(first)) => format!("sweep: none held from {} req/s", rate_text(first)),
            (None, None) => "sweep: none held".to_owned(),
        }
    }

    /// The SLO verdict of the headline step: for a sweep, whether some rate held.
    pub fn verdict(&self) -> SloVerdict {
        self.headline()
            .map_or(SloVerdict::NoSlo, StepSummary::verdict)
    }

    /// A sweep's first rate that did not hold: where the SLO broke (an SLO search's steps
    /// bisect, so it has none).
    pub fn break_rate(&self) -> Option<f64> {
        if !self.sweep || self.slo_search.is_some() {
            return None;
        }
        self.steps
            .iter()
            .find(|s| !s.held)
            .and_then(|s| s.scenario.rate())
    }
}

/// The latencies of one step's successful requests (its `request` events), seconds, in file
/// order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepLatencies {
    /// Time to first token of each request that has one, from its scheduled send time (the
    /// client's send delay included, as the serving table's).
    pub ttft: Vec<f64>,
    /// Time per output token of each request that has one (an answer of one token has none).
    pub tpot: Vec<f64>,
}

/// The serving events of one file, gathered as its `data` events go by: the steps of its `load`
/// events and the latencies of its successful `request` events, by step.
#[derive(Debug, Default)]
pub(crate) struct ServingEvents {
    steps: BTreeMap<u64, StepSummary>,
    latencies: BTreeMap<u64, StepLatencies>,
    sweep: bool,
    slo_search: Option<SearchFigure>,
}

impl ServingEvents {
    /// Takes in one `data` event; those that are neither `load` nor `request` are passed over.
    pub(crate) fn observe(&mut self, data: &DataPayload) {
        let DataPayload { task, extra, .. } = data;
        let step = extra.get("step").and_then(Value::as_u64);
        match task.as_deref() {
            Some(REQUEST_TASK) if !extra.contains_key("error") => {
                let own = self.latencies.entry(step.unwrap_or(0)).or_default();
                let seconds = |key: &str| extra.get(key).and_then(Value::as_f64);
                // From the scheduled send time: the send's delay (`sent - scheduled`, kept by
                // every run that records both) added to the time from the actual send.
                let delay = seconds("sent")
                    .zip(seconds("scheduled"))
                    .map_or(0.0, |(sent, scheduled)| (sent - scheduled).max(0.0));
                own.ttft.extend(seconds("ttft").map(|ttft| ttft + delay));
                own.tpot.extend(seconds("tpot"));
            }
            Some(LOAD_TASK) => {
                self.sweep |= extra.get("sweep").and_then(Value::as_bool) == Some(true);
                self.slo_search = self.slo_search.take().or(SearchFigure::from_payload(extra));
                let at = step.unwrap_or(self.steps.len() as u64);
                self.steps.insert(at, StepSummary::from_payload(extra));
            }
            _ => {}
        }
    }

    /// The run, and the latencies of each step (parallel to the run's steps); `None` when no
    /// `load` event went by.
    pub(crate) fn finish(mut self) -> Option<(ServingRun, Vec<StepLatencies>)> {
        if self.steps.is_empty() {
            return None;
        }
        let per_step = self
            .steps
            .keys()
            .map(|at| self.latencies.remove(at).unwrap_or_default())
            .collect();
        let run = ServingRun {
            sweep: self.sweep || self.steps.len() > 1,
            steps: self.steps.into_values().collect(),
            slo_search: self.slo_search,
        };
        Some((run, per_step))
    }
}

/// Reads the serving events of the file at `path` (see [`ServingEvents::finish`]). Its bad lines
/// were counted when the report first read it.
pub(crate) fn read_serving(
    path: &Path,
) -> Result<Option<(ServingRun, Vec<StepLatencies>)>, ReportError> {
    let mut records = DataFile::new(path.to_owned()).records_with(SERVING_FIELDS)?;
    let mut events = ServingEvents::default();
    while let Some(item) = records.next_lent() {
        if let ReadItem::Record(record) = item
            && let Event::Data(data) = &record.event
        {
            events.observe(data);
        }
    }
    Ok(events.finish())
}

/// Whether a run met its SLO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloVerdict {
    /// It held: no failed request, and 99% of requests within the SLO.
    Held,
    /// It did not hold.
    NotHeld,
    /// No SLO was given.
    NoSlo,
    /// The run was stopped before the step ended: no verdict.
    Interrupted,
}

impl SloVerdict {
    /// `held`, `NOT held`, `-` or `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            SloVerdict::Held => "held",
            SloVerdict::NotHeld => "NOT held",
            SloVerdict::NoSlo => "-",
            SloVerdict::Interrupted => "interrupted",
        }
    }
}

/// One row of the serving table: a process of a serving benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingRow {
    /// The row's name: the benchmark, or the process's tag when the benchmark has several.
    pub name: String,
    /// The benchmark.
    pub bench: String,
    /// The process's `.data` file.
    pub path: PathBuf,
    /// What its `load` events hold.
    pub run: ServingRun,
    /// The numbers that stand for the run ([`ServingRun::headline`]).
    pub step: StepSummary,
}

/// The serving table of `runs`: one row per process with `load` events, benchmarks in the
/// order of `names` (the main table's), processes in folder order.
pub(crate) fn serving_rows<'n>(
    names: impl Iterator<Item = &'n str>,
    runs: &RunSet,
) -> Vec<ServingRow> {
    let mut rows = Vec::new();
    for bench in names {
        let own: Vec<_> = runs
            .runs
            .iter()
            .filter(|r| r.name() == bench)
            .filter_map(|r| {
                let serving = r.serving.as_deref()?;
                Some((r, serving, serving.headline()?))
            })
            .collect();
        for (run, serving, step) in &own {
            let name = if own.len() > 1 {
                run.tag()
            } else {
                bench.to_owned()
            };
            rows.push(ServingRow {
                name,
                bench: bench.to_owned(),
                path: run.path.clone(),
                run: (*serving).clone(),
                step: (*step).clone(),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(scenario: Value, held: bool, slo: bool) -> StepSummary {
        let interval = |v: f64| json!({"value": v, "low": v * 0.9, "high": v * 1.1});
        let latency = |p50: f64, p99: f64| {
            json!({"count": 100, "mean": interval(p50), "p50": interval(p50),
                   "p90": interval(p99), "p95": interval(p99), "p99": interval(p99)})
        };
        let mut load = json!({
            "task": "load", "step": 0, "scenario": scenario, "held": held,
            "requests": 100, "succeeded": 98, "failed": 2,
            "ttft": latency(0.02, 0.045), "tpot": latency(0.005, 0.0075),
            "tpot_with_first": latency(0.006, 0.009),
            "itl": latency(0.005, 0.008), "e2e": latency(0.095, 0.2),
            "request_throughput": interval(19.5), "output_throughput": interval(312.0),
            "goodput": null, "slo_attainment": null,
        });
        if slo {
            load["goodput"] = interval(19.0);
            load["slo_attainment"] = json!(0.95);
        }
        let Value::Object(map) = load else {
            unreachable!()
        };
        StepSummary::from_payload(&map)
    }

    #[test]
    fn latencies_come_from_the_schedule_where_kept_and_from_the_send_in_older_runs() {
        let old = step(json!({"kind": "server", "rate": 10.0}), true, false);
        assert_eq!((old.ttft.p99, old.e2e.p99), (0.045, 0.2));
        let p99 = |v: f64| json!({"p50": {"value": v / 2.0}, "p99": {"value": v}});
        let Value::Object(new) = json!({
            "ttft": p99(0.045), "e2e": p99(0.2),
            "ttft_from_schedule": p99(0.05), "e2e_from_schedule": p99(0.25),
        }) else {
            unreachable!()
        };
        let new = StepSummary::from_payload(&new);
        assert_eq!((new.ttft.p99, new.e2e.p99), (0.05, 0.25));
        assert_eq!((new.ttft.p50, new.e2e.p50), (0.025, 0.125));
    }

    /// The serving table gives TPOT both ways (issue 52, item 2): without the first token
    /// (vLLM's) and with it (GuideLLM's), read from the `load` event.
    #[test]
    fn tpot_is_read_without_and_with_the_first_token() {
        let s = step(json!({"kind": "server", "rate": 10.0}), true, false);
        assert_eq!((s.tpot.p50, s.tpot_with_first.p50), (0.005, 0.006));
        let column = SERVING_COLUMNS
            .iter()
            .find(|c| c.key == "tpot_with_first_p50_ms")
            .expect("a column of TPOT with the first token");
        assert_eq!(column.text(&s), "6.00");
        assert!(SERVING_NOTE[0].contains("tpot_all with the first, e2e / tokens"));
        assert!(SERVING_NOTE[1].contains("usage"));
        let keys: Vec<&str> = SERVING_DEFINITIONS.iter().map(|(key, _)| *key).collect();
        for key in [
            "ttft_p50_ms",
            "tpot_p50_ms",
            "tpot_with_first_p50_ms",
            "output_tokens",
        ] {
            assert!(keys.contains(&key), "{key} defined");
        }
    }

    /// The page's TTFT distributions are from the scheduled send time, as the table's: a
    /// request sent 30 ms late counts those 30 ms (issue 52, item 2: they were from the send).
    #[test]
    fn plotted_ttft_includes_the_send_delay() {
        let mut events = ServingEvents::default();
        for (scheduled, sent) in [(0.0, 0.0), (0.1, 0.13)] {
            let Value::Object(extra) = json!({
                "step": 0, "scheduled": scheduled, "sent": sent, "ttft": 0.02, "tpot": 0.005,
            }) else {
                unreachable!()
            };
            events.observe(&DataPayload {
                task: Some(REQUEST_TASK.to_owned()),
                extra,
                ..DataPayload::default()
            });
        }
        let Value::Object(load) =
            json!({"task": "load", "step": 0, "scenario": {"kind": "server", "rate": 10.0}})
        else {
            unreachable!()
        };
        events.observe(&DataPayload {
            task: Some(LOAD_TASK.to_owned()),
            extra: load,
            ..DataPayload::default()
        });
        let (_, latencies) = events.finish().expect("a step");
        let ttft: Vec<String> = latencies[0]
            .ttft
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect();
        assert_eq!(ttft, ["0.020", "0.050"]);
    }

    /// A step the run stopped before its end is said to be interrupted, never held or not
    /// held (issue 53, W14: the load generator marks it; the report read it as NOT held).
    #[test]
    fn an_interrupted_step_has_no_verdict() {
        let mut s = step(json!({"kind": "server", "rate": 20.0}), false, true);
        assert_eq!(s.verdict(), SloVerdict::NotHeld);
        s.interrupted = true;
        assert_eq!(s.verdict(), SloVerdict::Interrupted);
        assert_eq!(s.verdict().as_str(), "interrupted");
    }

    #[test]
    fn a_load_event_gives_its_numbers() {
        let s = step(json!({"kind": "server", "rate": 20.0}), true, true);
        assert_eq!(s.scenario, LoadScenario::Server { rate: 20.0 });
        assert_eq!((s.requests, s.succeeded, s.failed), (100, 98, 2));
        assert_eq!(
            s.ttft,
            Percentiles {
                p50: 0.02,
                p99: 0.045
            }
        );
        assert_eq!(
            s.tpot,
            Percentiles {
                p50: 0.005,
                p99: 0.0075
            }
        );
        assert_eq!(s.e2e.p99, 0.2);
        assert_eq!((s.request_throughput, s.output_throughput), (19.5, 312.0));
        assert_eq!((s.goodput, s.slo_attainment), (Some(19.0), Some(0.95)));
        let none = step(json!({"kind": "offline"}), true, false);
        assert_eq!((none.goodput, none.slo_attainment), (None, None));
        assert!(!none.has_slo());
        // Missing or odd values are not recorded, not an error.
        let Value::Object(empty) = json!({"ttft": {"p50": "fast"}}) else {
            unreachable!()
        };
        let odd = StepSummary::from_payload(&empty);
        assert!(odd.ttft.p50.is_nan() && odd.request_throughput.is_nan());
        assert_eq!(odd.scenario.label(), "not recorded");
    }

    #[test]
    fn scenarios_read_in_either_shape_and_say_their_rate() {
        for (value, label) in [
            (json!({"kind": "server", "rate": 20.0}), "server 20 req/s"),
            (json!({"server": {"rate": 22.5}}), "server 22.5 req/s"),
            (
                json!({"kind": "server", "rate": 11.000000000000002}),
                "server 11 req/s",
            ),
            (json!({"kind": "concurrency", "n": 8}), "concurrency 8"),
            (json!("offline"), "offline"),
            (json!({"kind": "burst"}), "burst"),
        ] {
            assert_eq!(LoadScenario::from_value(&value).label(), label, "{value}");
        }
    }

    #[test]
    fn a_sweep_stands_for_its_highest_rate_that_held() {
        let server =
            |rate: f64, held: bool| step(json!({"kind": "server", "rate": rate}), held, true);
        let sweep = ServingRun {
            sweep: true,
            steps: vec![server(10.0, true), server(20.0, true), server(40.0, false)],
            slo_search: None,
        };
        assert_eq!(sweep.headline(), Some(&sweep.steps[1]));
        assert_eq!(sweep.scenario(), "sweep: highest held 20 req/s");
        assert_eq!(sweep.verdict(), SloVerdict::Held);
        assert_eq!(sweep.break_rate(), Some(40.0));
        let broken = ServingRun {
            sweep: true,
            steps: vec![server(10.0, false)],
            slo_search: None,
        };
        assert_eq!(broken.headline(), Some(&broken.steps[0]));
        assert_eq!(broken.scenario(), "sweep: none held from 10 req/s");
        assert_eq!(broken.verdict(), SloVerdict::NotHeld);
        assert_eq!(broken.break_rate(), Some(10.0));
        let single = ServingRun {
            sweep: false,
            steps: vec![server(20.0, true)],
            slo_search: None,
        };
        assert_eq!(single.scenario(), "server 20 req/s");
        assert_eq!(single.break_rate(), None);
        let no_slo = ServingRun {
            sweep: false,
            steps: vec![step(json!({"kind": "concurrency", "n": 8}), true, false)],
            slo_search: None,
        };
        assert_eq!(no_slo.verdict(), SloVerdict::NoSlo);
        assert_eq!(no_slo.verdict().as_str(), "-");
    }

    #[test]
    fn an_slo_search_shows_its_rate_with_the_interval_of_its_repeats() {
        let load = |search: Value| {
            let Value::Object(m) = json!({"slo_search": search}) else {
                unreachable!()
            };
            SearchFigure::from_payload(&m)
        };
        let found = load(json!({"rates": [40.0, 44.0], "rate": 42.0, "interval": [30.5, 53.5]}));
        assert_eq!(
            found,
            Some(SearchFigure {
                rate: 42.0,
                interval: Some(Interval {
                    low: 30.5,
                    high: 53.5
                })
            })
        );
        let server =
            |rate: f64, held: bool| step(json!({"kind": "server", "rate": rate}), held, true);
        let mut run = ServingRun {
            sweep: true,
            steps: vec![server(10.0, true), server(55.0, false), server(32.5, true)],
            slo_search: found,
        };
        assert_eq!(run.scenario(), "SLO search: 42 req/s [30.5, 53.5]");
        assert_eq!(run.break_rate(), None);
        assert_eq!(run.headline(), Some(&run.steps[2]));
        run.slo_search = load(json!({"rates": [40.0], "rate": 40.0, "interval": null}));
        assert_eq!(run.scenario(), "SLO search: 40 req/s");
        assert_eq!(load(json!({"rate": "fast"})), None);
    }
}
