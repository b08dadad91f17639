//! A load run as the events of a run folder (`<run>/<name>.data`), so that `report`,
//! `compare`, the results store and the HTML page read it like any benchmark's:
//!
//! - `config` (the benchmark's name and tag, the scenario), `start` (the command), and `end`
//!   (return code 0, or 1 with the failure's reason as `error` events before it);
//! - `data` with `task: "train"`: output tokens per second in successive windows (one second,
//!   shorter in short runs) of the step measured, each token counted when it arrived, so the report's perf is the output-token
//!   throughput; for a sweep, the highest step that held (else the first);
//! - `data` with `task: "request"`: one per request (`ttft`, `tpot`, `itl` mean, `latency`,
//!   tokens, `status`, `error`), and `task: "load"`: each step's summary, its `scenario`,
//!   whether it `held`, whether it was `interrupted` (the run stopped before the step ended) and
//!   whether it is a step of a `sweep` (or of an SLO search, whose last step's event adds
//!   `slo_search`: the `rate` found, its 95% `interval` and each repeat's `rates`).

use std::time::SystemTime;

use milabench_metrics::format::{LOAD_TASK, REQUEST_TASK, TRAIN_TASK};
use milabench_metrics::{
    DataPayload, EndInfo, ErrorInfo, Event, Pipe, Record, ReturnCode, StartInfo,
};
use serde_json::{Map, Value, json};

use crate::client::{ErrorKind, RequestRecord};
use crate::run::{LoadResult, Scenario, Step};
use crate::summary::{output_arrivals, windows};

/// Throughput unit of the `train` events.
pub const UNITS: &str = "tokens/s";

impl LoadResult {
    /// Why the run counts as failed, if it does: failed requests in a single run; a step that
    /// sent no request; in a sweep, no step that held or a server that went away (refused or
    /// dropped connections).
    pub fn failure(&self) -> Option<String> {
        let is_sweep = self.sweep;
        let mut reasons = Vec::new();
        for step in &self.steps {
            let s = &step.summary;
            let gone = s
                .errors
                .keys()
                .any(|k| matches!(k, ErrorKind::Connect | ErrorKind::Disconnected));
            if s.failed > 0 && (!is_sweep || gone) {
                let kinds: Vec<String> = s
                    .errors
                    .iter()
                    .map(|(kind, e)| {
                        format!("{} {} (first: {})", e.count, kind.as_str(), e.example)
                    })
                    .collect();
                reasons.push(format!(
                    "{} of {} requests failed: {}",
                    s.failed,
                    s.requests,
                    kinds.join("; ")
                ));
            }
            if s.requests == 0 && !step.interrupted {
                reasons.push(match step.scenario {
                    Scenario::Server { rate } => format!(
                        "no request was sent: the schedule had no arrival in the window (Poisson arrivals at {rate} requests/s within --duration; where they fall depends on --seed); give a longer --duration or a higher --rate"
                    ),
                    _ => "no request was sent within --duration; give a longer one".to_owned(),
                });
            }
        }
        if let Some(reason) = &self.stopped {
            reasons.push(format!("the run ended early: {reason}"));
        }
        if is_sweep && self.highest_held_rate.is_none() && reasons.is_empty() {
            reasons.push("no rate of the sweep held the SLO".into());
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }

    /// The step whose throughput the `train` events carry: a sweep's highest that held, else
    /// the first.
    pub fn headline(&self) -> Option<&Step> {
        milabench_metrics::serving::headline(&self.steps)
    }
}

fn epoch(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn data(map: Value) -> Record {
    let Value::Object(map) = map else {
        unreachable!("data payloads are objects")
    };
    Record::new(
        Event::Data(Box::new(DataPayload::from_map(map))),
        Some(Pipe::Data),
    )
}

fn request_payload(step: usize, start: f64, r: &RequestRecord) -> Value {
    let itl_mean = (!r.itl.is_empty()).then(|| r.itl.iter().sum::<f64>() / r.itl.len() as f64);
    let mut m = Map::new();
    m.insert("task".into(), json!(REQUEST_TASK));
    m.insert("time".into(), json!(start + r.sent + r.latency));
    m.insert("step".into(), json!(step));
    m.insert("index".into(), json!(r.index));
    m.insert("scheduled".into(), json!(r.scheduled));
    m.insert("sent".into(), json!(r.sent));
    m.insert("ttft".into(), json!(r.ttft));
    m.insert("tpot".into(), json!(r.tpot()));
    m.insert("itl_mean".into(), json!(itl_mean));
    m.insert("latency".into(), json!(r.latency));
    m.insert("input_tokens".into(), json!(r.input_tokens));
    m.insert("output_tokens".into(), json!(r.output_tokens));
    m.insert("status".into(), json!(r.status));
    if let Some(e) = &r.error {
        m.insert("error".into(), json!({"kind": e.kind, "text": e.text}));
    }
    Value::Object(m)
}

/// The events of `result` for the benchmark `name`, started by `command`; `config` adds to the
/// `config` event (endpoint, model, ...).
pub fn records(
    result: &LoadResult,
    name: &str,
    command: &[String],
    config: Map<String, Value>,
) -> Vec<Record> {
    let first = result
        .steps
        .first()
        .map_or(SystemTime::now(), |s| s.started);
    let mut config_event = Map::new();
    config_event.insert("name".into(), json!(name));
    config_event.insert("tag".into(), json!([name]));
    config_event.extend(config);
    let mut out = vec![
        Record::new(Event::Config(Value::Object(config_event)), None),
        Record::new(
            Event::Start(Box::new(StartInfo {
                command: command.to_vec(),
                time: Some(epoch(first)),
                extra: Map::new(),
            })),
            None,
        ),
    ];
    if let Some(step) = result.headline() {
        let start = epoch(step.started);
        let ok: Vec<&RequestRecord> = step.records.iter().filter(|r| r.ok()).collect();
        let (times, tokens) = output_arrivals(&ok);
        if let Some((width, rates)) = windows(&times, &tokens, step.summary.duration) {
            for (i, rate) in rates.iter().enumerate() {
                out.push(data(json!({
                    "task": TRAIN_TASK,
                    "rate": rate,
                    "units": UNITS,
                    "time": start + width * (i + 1) as f64,
                })));
            }
        }
    }
    let mut last = epoch(first);
    for (i, step) in result.steps.iter().enumerate() {
        let start = epoch(step.started);
        for r in &step.records {
            out.push(data(request_payload(i, start, r)));
        }
        last = start + step.summary.duration;
        let mut summary = json!({
            "task": LOAD_TASK,
            "time": last,
            "step": i,
            "scenario": step.scenario,
            "sweep": result.sweep,
            "held": step.held,
            "interrupted": step.interrupted,
        });
        if let (Value::Object(m), Ok(Value::Object(s))) =
            (&mut summary, serde_json::to_value(&step.summary))
        {
            m.extend(s);
        }
        if let (Value::Object(m), Some(search), true) = (
            &mut summary,
            &result.slo_search,
            i + 1 == result.steps.len(),
        ) {
            m.insert("slo_search".into(), json!(search));
        }
        out.push(data(summary));
    }
    let failure = result.failure();
    if let Some(reason) = &failure {
        out.push(Record::new(
            Event::Error(Box::new(ErrorInfo {
                kind: Some("LoadFailure".into()),
                message: Some(reason.clone()),
                trace: None,
                extra: Map::new(),
            })),
            None,
        ));
    }
    out.push(Record::new(
        Event::End(Box::new(EndInfo {
            command: None,
            time: Some(last),
            return_code: ReturnCode::Code(i64::from(failure.is_some())),
            extra: Map::new(),
        })),
        None,
    ));
    out
}
