//! Typed events of the milabench stream, one per line of a `.data` file.
//!
//! Every kind the Python tool writes has a variant; fields it does not know are kept in `extra`
//! maps so that a record read and written again loses nothing. A payload whose shape does not fit
//! its kind becomes [`Event::Other`] with the raw JSON, rather than an error.

use serde_json::{Map, Value};

use crate::json::{as_f64, float_value};

/// Where an entry came from: the data channel, the process's stdout or stderr, or (absent) the
/// orchestrator itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pipe {
    /// The benchmark data channel (`DATA_FD`, or smuggled in stdout).
    Data,
    /// A line of the process's standard output.
    Stdout,
    /// A line of the process's standard error.
    Stderr,
    /// Any other name found in a file.
    Other(String),
}

impl Pipe {
    /// The name written in the `pipe` field.
    pub fn as_str(&self) -> &str {
        match self {
            Pipe::Data => "data",
            Pipe::Stdout => "stdout",
            Pipe::Stderr => "stderr",
            Pipe::Other(name) => name,
        }
    }

    /// The pipe called `name`.
    pub fn from_name(name: &str) -> Pipe {
        match name {
            "data" => Pipe::Data,
            "stdout" => Pipe::Stdout,
            "stderr" => Pipe::Stderr,
            other => Pipe::Other(other.to_owned()),
        }
    }
}

/// One entry of the stream: `{"event": ..., "data": ..., "pipe": ...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// What happened, with its payload.
    pub event: Event,
    /// Which channel carried it; `None` for entries made by the orchestrator.
    pub pipe: Option<Pipe>,
    /// Top-level keys other than `event`, `data` and `pipe`, kept as read.
    pub extra: Map<String, Value>,
}

impl Record {
    /// A record with no extra keys.
    pub fn new(event: Event, pipe: Option<Pipe>) -> Record {
        Record {
            event,
            pipe,
            extra: Map::new(),
        }
    }

    /// The record as a JSON object, keys in the order the Python tool writes them.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("event".into(), Value::String(self.event.name().to_owned()));
        map.insert("data".into(), self.event.data_value());
        map.insert(
            "pipe".into(),
            self.pipe
                .as_ref()
                .map_or(Value::Null, |p| Value::String(p.as_str().to_owned())),
        );
        for (k, v) in &self.extra {
            map.insert(k.clone(), v.clone());
        }
        Value::Object(map)
    }
}

/// An event and its payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The resolved configuration of the benchmark process, sent before it starts.
    Config(Value),
    /// Machine metadata (CPU, GPUs, versions).
    Meta(Value),
    /// The process was started.
    Start(Box<StartInfo>),
    /// voir entered a phase (`init`, `parse_args`, `load_script`, `run_script`, `finalize`).
    Phase(String),
    /// A measurement sent by the benchmark on the data channel.
    Data(Box<DataPayload>),
    /// A line of stdout or stderr, with its trailing newline.
    Line(String),
    /// An exception in the benchmark or in the orchestrator.
    Error(Box<ErrorInfo>),
    /// An exception inside a voir instrument; the benchmark went on.
    OverseerError(Box<ErrorInfo>),
    /// A data-channel line that was not valid JSON.
    FormatError(Box<FormatErrorInfo>),
    /// The benchmark asked to be stopped (early stop): the run counts as a success.
    Stop,
    /// The process ended.
    End(Box<EndInfo>),
    /// A message from the orchestrator (skips, timeouts).
    Message(String),
    /// Any other event, or a known event whose payload has an unexpected shape.
    Other {
        /// The event name.
        name: String,
        /// The payload as read.
        data: Value,
    },
}

impl Event {
    /// The event name as written in the `event` field.
    pub fn name(&self) -> &str {
        match self {
            Event::Config(_) => "config",
            Event::Meta(_) => "meta",
            Event::Start(_) => "start",
            Event::Phase(_) => "phase",
            Event::Data(_) => "data",
            Event::Line(_) => "line",
            Event::Error(_) => "error",
            Event::OverseerError(_) => "overseer_error",
            Event::FormatError(_) => "format_error",
            Event::Stop => "stop",
            Event::End(_) => "end",
            Event::Message(_) => "message",
            Event::Other { name, .. } => name,
        }
    }

    /// Builds the typed event from its name and payload; never fails (see [`Event::Other`]).
    pub fn from_parts(name: &str, data: Value) -> Event {
        match name {
            "config" => Event::Config(data),
            "meta" => Event::Meta(data),
            "stop" if data.is_null() => Event::Stop,
            "line" => match data {
                Value::String(s) => Event::Line(s),
                data => other(name, data),
            },
            "data" => match data {
                Value::Object(map) => Event::Data(Box::new(DataPayload::from_map(map))),
                data => other(name, data),
            },
            "phase" => match data {
                Value::Object(ref map) if map.len() == 1 && map.contains_key("name") => {
                    match &map["name"] {
                        Value::String(s) => Event::Phase(s.clone()),
                        _ => other(name, data),
                    }
                }
                data => other(name, data),
            },
            "message" => match data {
                Value::Object(ref map) if map.len() == 1 => match map.get("message") {
                    Some(Value::String(s)) => Event::Message(s.clone()),
                    _ => other(name, data),
                },
                data => other(name, data),
            },
            "start" => match data {
                Value::Object(map) => StartInfo::from_map(map).map_or_else(
                    |map| other(name, Value::Object(map)),
                    |s| Event::Start(Box::new(s)),
                ),
                data => other(name, data),
            },
            "end" => match data {
                Value::Object(map) => Event::End(Box::new(EndInfo::from_map(map))),
                data => other(name, data),
            },
            "error" | "overseer_error" => match data {
                Value::Object(map) => {
                    let info = Box::new(ErrorInfo::from_map(map));
                    if name == "error" {
                        Event::Error(info)
                    } else {
                        Event::OverseerError(info)
                    }
                }
                data => other(name, data),
            },
            "format_error" => match data {
                Value::Object(map) => Event::FormatError(Box::new(FormatErrorInfo::from_map(map))),
                data => other(name, data),
            },
            _ => other(name, data),
        }
    }

    /// The payload as JSON, as it is written in the `data` field.
    pub fn data_value(&self) -> Value {
        match self {
            Event::Config(v) | Event::Meta(v) => v.clone(),
            Event::Start(s) => s.to_value(),
            Event::Phase(name) => obj([("name", Value::String(name.clone()))]),
            Event::Data(d) => d.to_value(),
            Event::Line(s) => Value::String(s.clone()),
            Event::Error(e) | Event::OverseerError(e) => e.to_value(),
            Event::FormatError(f) => f.to_value(),
            Event::Stop => Value::Null,
            Event::End(e) => e.to_value(),
            Event::Message(m) => obj([("message", Value::String(m.clone()))]),
            Event::Other { data, .. } => data.clone(),
        }
    }
}

fn other(name: &str, data: Value) -> Event {
    Event::Other {
        name: name.to_owned(),
        data,
    }
}

fn obj<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn pair(value: &Value) -> Option<[f64; 2]> {
    match value {
        Value::Array(items) if items.len() == 2 => Some([as_f64(&items[0])?, as_f64(&items[1])?]),
        _ => None,
    }
}

fn number_value(x: f64) -> Value {
    // Integral values are written as integers, as the Python side sent them.
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        float_value(x)
    }
}

fn pair_value(p: [f64; 2], integral: bool) -> Value {
    if integral {
        Value::Array(vec![number_value(p[0]), number_value(p[1])])
    } else {
        Value::Array(vec![float_value(p[0]), float_value(p[1])])
    }
}

/// Moves `value` into `slot` when `parse` accepts it, else keeps it under `key` in `extra`.
fn take<T>(
    slot: &mut Option<T>,
    key: &str,
    value: Value,
    extra: &mut Map<String, Value>,
    parse: impl FnOnce(&Value) -> Option<T>,
) {
    match parse(&value) {
        Some(v) => *slot = Some(v),
        None => {
            extra.insert(key.to_owned(), value);
        }
    }
}

/// Moves a string `value` into `slot`, else keeps the value under `key` in `extra`.
fn take_string(slot: &mut Option<String>, key: &str, value: Value, extra: &mut Map<String, Value>) {
    match value {
        Value::String(text) => *slot = Some(text),
        other => {
            extra.insert(key.to_owned(), other);
        }
    }
}

/// The payload of a `data` event: what a benchmark measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataPayload {
    /// `train`, `early_stop`, `main` (monitors), or another task name.
    pub task: Option<String>,
    /// Time stamp of the sample, seconds since the epoch.
    pub time: Option<f64>,
    /// Throughput, in `units` (items/s).
    pub rate: Option<f64>,
    /// Unit of the other numbers of the record.
    pub units: Option<String>,
    /// Training loss; may be NaN.
    pub loss: Option<f64>,
    /// `[current, total]`.
    pub progress: Option<[f64; 2]>,
    /// GPU monitor sample, by device id.
    pub gpudata: Option<Vec<(String, GpuSample)>>,
    /// CPU monitor sample.
    pub cpudata: Option<CpuSample>,
    /// Every other key (`process`, `iodata`, `netdata`, `memory_peak`, `value`, ...).
    pub extra: Map<String, Value>,
}

impl DataPayload {
    /// Splits a JSON object into the known fields and the rest.
    pub fn from_map(map: Map<String, Value>) -> DataPayload {
        let mut d = DataPayload::default();
        for (key, value) in map {
            d.set(&key, value);
        }
        d
    }

    /// Files one key of the payload: into its typed field when the value has the expected
    /// shape, else into `extra`.
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        let d = self;
        match key {
            "task" => take_string(&mut d.task, key, value, &mut d.extra),
            "time" => take(&mut d.time, key, value, &mut d.extra, as_f64),
            "rate" => take(&mut d.rate, key, value, &mut d.extra, as_f64),
            "units" => take_string(&mut d.units, key, value, &mut d.extra),
            "loss" => take(&mut d.loss, key, value, &mut d.extra, as_f64),
            "progress" => take(&mut d.progress, key, value, &mut d.extra, pair),
            "gpudata" => match value {
                Value::Object(gpus) => {
                    d.gpudata = Some(
                        gpus.into_iter()
                            .map(|(id, s)| (id, GpuSample::from_value(s)))
                            .collect(),
                    );
                }
                value => {
                    d.extra.insert(key.to_owned(), value);
                }
            },
            "cpudata" => match value {
                Value::Object(m) => d.cpudata = Some(CpuSample::from_map(m)),
                value => {
                    d.extra.insert(key.to_owned(), value);
                }
            },
            _ => {
                d.extra.insert(key.to_owned(), value);
            }
        }
    }

    /// The payload as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        if let Some(t) = &self.task {
            m.insert("task".into(), Value::String(t.clone()));
        }
        if let Some(x) = self.time {
            m.insert("time".into(), float_value(x));
        }
        if let Some(x) = self.rate {
            m.insert("rate".into(), float_value(x));
        }
        if let Some(u) = &self.units {
            m.insert("units".into(), Value::String(u.clone()));
        }
        if let Some(x) = self.loss {
            m.insert("loss".into(), float_value(x));
        }
        if let Some(p) = self.progress {
            m.insert("progress".into(), pair_value(p, true));
        }
        if let Some(g) = &self.gpudata {
            let gpus = g.iter().map(|(id, s)| (id.clone(), s.to_value())).collect();
            m.insert("gpudata".into(), Value::Object(gpus));
        }
        if let Some(c) = &self.cpudata {
            m.insert("cpudata".into(), c.to_value());
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

/// One GPU of a `gpudata` sample.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuSample {
    /// `[used, total]` in MiB.
    pub memory: Option<[f64; 2]>,
    /// Compute utilisation, 0 to 1.
    pub load: Option<f64>,
    /// Degrees Celsius.
    pub temperature: Option<f64>,
    /// Watts; absent in data written by older voir versions.
    pub power: Option<f64>,
    /// Other keys, or the whole value when it was not an object (under `""`).
    pub extra: Map<String, Value>,
}

impl GpuSample {
    pub(crate) fn from_value(value: Value) -> GpuSample {
        let mut s = GpuSample::default();
        let Value::Object(map) = value else {
            s.extra.insert(String::new(), value);
            return s;
        };
        for (key, value) in map {
            s.set(&key, value);
        }
        s
    }

    /// Files one key of the sample (see [`DataPayload::set`]).
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        let s = self;
        match key {
            "memory" => take(&mut s.memory, key, value, &mut s.extra, pair),
            "load" => take(&mut s.load, key, value, &mut s.extra, as_f64),
            "temperature" => take(&mut s.temperature, key, value, &mut s.extra, as_f64),
            "power" => take(&mut s.power, key, value, &mut s.extra, as_f64),
            _ => {
                s.extra.insert(key.to_owned(), value);
            }
        }
    }

    fn to_value(&self) -> Value {
        if let Some(v) = self.extra.get("") {
            return v.clone();
        }
        let mut m = Map::new();
        if let Some(p) = self.memory {
            m.insert("memory".into(), pair_value(p, false));
        }
        for (key, x) in [
            ("load", self.load),
            ("temperature", self.temperature),
            ("power", self.power),
        ] {
            if let Some(x) = x {
                m.insert(key.into(), float_value(x));
            }
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

/// A `cpudata` sample.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuSample {
    /// `[used, total]` in bytes.
    pub memory: Option<[f64; 2]>,
    /// CPU load in percent.
    pub load: Option<f64>,
    /// Other keys.
    pub extra: Map<String, Value>,
}

impl CpuSample {
    fn from_map(map: Map<String, Value>) -> CpuSample {
        let mut s = CpuSample::default();
        for (key, value) in map {
            s.set(&key, value);
        }
        s
    }

    /// Files one key of the sample (see [`DataPayload::set`]).
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        let s = self;
        match key {
            "memory" => take(&mut s.memory, key, value, &mut s.extra, pair),
            "load" => take(&mut s.load, key, value, &mut s.extra, as_f64),
            _ => {
                s.extra.insert(key.to_owned(), value);
            }
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if let Some(p) = self.memory {
            m.insert("memory".into(), pair_value(p, true));
        }
        if let Some(x) = self.load {
            m.insert("load".into(), float_value(x));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

/// Payload of `start`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StartInfo {
    /// The command line.
    pub command: Vec<String>,
    /// Seconds since the epoch.
    pub time: Option<f64>,
    /// Other keys.
    pub extra: Map<String, Value>,
}

impl StartInfo {
    fn from_map(map: Map<String, Value>) -> Result<StartInfo, Map<String, Value>> {
        let command = match map.get("command") {
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            None => Vec::new(),
            Some(_) => return Err(map),
        };
        let mut info = StartInfo {
            command,
            ..StartInfo::default()
        };
        for (key, value) in map {
            match key.as_str() {
                "command" => {}
                "time" => take(&mut info.time, &key, value, &mut info.extra, as_f64),
                _ => {
                    info.extra.insert(key, value);
                }
            }
        }
        Ok(info)
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "command".into(),
            Value::Array(self.command.iter().cloned().map(Value::String).collect()),
        );
        if let Some(t) = self.time {
            m.insert("time".into(), float_value(t));
        }
        m.extend(self.extra.clone());
        Value::Object(m)
    }
}

/// The `return_code` of an `end` event.
#[derive(Debug, Clone, PartialEq)]
pub enum ReturnCode {
    /// The process exit status (negative: killed by that signal).
    Code(i64),
    /// Anything else (the Python tool writes the string `"ERROR"` when its loop crashed).
    Other(Value),
}

impl ReturnCode {
    /// Whether the process ended with status 0.
    pub fn is_zero(&self) -> bool {
        matches!(self, ReturnCode::Code(0))
    }
}

/// Payload of `end`.
#[derive(Debug, Clone, PartialEq)]
pub struct EndInfo {
    /// The command line, when recorded.
    pub command: Option<Value>,
    /// Seconds since the epoch.
    pub time: Option<f64>,
    /// How the process ended.
    pub return_code: ReturnCode,
    /// Other keys.
    pub extra: Map<String, Value>,
}

impl EndInfo {
    fn from_map(map: Map<String, Value>) -> EndInfo {
        let mut info = EndInfo {
            command: None,
            time: None,
            return_code: ReturnCode::Other(Value::Null),
            extra: Map::new(),
        };
        for (key, value) in map {
            match key.as_str() {
                "command" => info.command = Some(value),
                "time" => take(&mut info.time, &key, value, &mut info.extra, as_f64),
                "return_code" => {
                    info.return_code = match value.as_i64() {
                        Some(code) => ReturnCode::Code(code),
                        None => ReturnCode::Other(value),
                    }
                }
                _ => {
                    info.extra.insert(key, value);
                }
            }
        }
        info
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if let Some(c) = &self.command {
            m.insert("command".into(), c.clone());
        }
        if let Some(t) = self.time {
            m.insert("time".into(), float_value(t));
        }
        m.insert(
            "return_code".into(),
            match &self.return_code {
                ReturnCode::Code(c) => Value::from(*c),
                ReturnCode::Other(v) => v.clone(),
            },
        );
        m.extend(self.extra.clone());
        Value::Object(m)
    }
}

/// Payload of `error` and `overseer_error`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorInfo {
    /// Exception class name (`type` in the file).
    pub kind: Option<String>,
    /// Exception message.
    pub message: Option<String>,
    /// Formatted traceback, when the orchestrator had one.
    pub trace: Option<String>,
    /// Other keys.
    pub extra: Map<String, Value>,
}

impl ErrorInfo {
    fn from_map(map: Map<String, Value>) -> ErrorInfo {
        let mut info = ErrorInfo::default();
        for (key, value) in map {
            match key.as_str() {
                "type" => take_string(&mut info.kind, &key, value, &mut info.extra),
                "message" => take_string(&mut info.message, &key, value, &mut info.extra),
                "trace" => take_string(&mut info.trace, &key, value, &mut info.extra),
                _ => {
                    info.extra.insert(key, value);
                }
            }
        }
        info
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (key, v) in [
            ("type", &self.kind),
            ("message", &self.message),
            ("trace", &self.trace),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), Value::String(v.clone()));
            }
        }
        m.extend(self.extra.clone());
        Value::Object(m)
    }
}

/// Payload of `format_error`: a data-channel line that could not be decoded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FormatErrorInfo {
    /// The raw line, newline included.
    pub line: String,
    /// The decoding error class (`JSONDecodeError`, `UnicodeDecodeError`).
    pub kind: String,
    /// The decoder's message.
    pub message: String,
}

impl FormatErrorInfo {
    fn from_map(map: Map<String, Value>) -> FormatErrorInfo {
        let get = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        FormatErrorInfo {
            line: get("line"),
            kind: get("type"),
            message: get("message"),
        }
    }

    fn to_value(&self) -> Value {
        obj([
            ("line", Value::String(self.line.clone())),
            ("type", Value::String(self.kind.clone())),
            ("message", Value::String(self.message.clone())),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(event: &str, data: Value) {
        let ev = Event::from_parts(event, data.clone());
        assert_eq!(ev.name(), event);
        assert_eq!(ev.data_value(), data, "{event}");
    }

    #[test]
    fn known_payloads_round_trip() {
        round_trip("config", json!({"name": "bench", "tag": ["bench", "D0"]}));
        round_trip(
            "start",
            json!({"command": ["voir", "main.py"], "time": 1.5}),
        );
        round_trip("phase", json!({"name": "init"}));
        round_trip("line", json!("hello\n"));
        round_trip("stop", Value::Null);
        round_trip("message", json!({"message": "skip"}));
        round_trip("error", json!({"type": "ValueError", "message": "bad"}));
        round_trip(
            "end",
            json!({"command": ["voir"], "time": 2.5, "return_code": -15}),
        );
        round_trip("end", json!({"time": 2.5, "return_code": "ERROR"}));
        round_trip(
            "data",
            json!({"task": "train", "rate": 8034.06, "units": "items/s", "zzz": [1, 2]}),
        );
        round_trip("data", json!({"task": "train", "progress": [0, 9]}));
        round_trip(
            "data",
            json!({"task": "main", "time": 17.5, "gpudata": {"0": {"memory": [1277.75, 46068.0], "load": 0.88, "temperature": 41.0, "power": 329.21}}}),
        );
        round_trip("custom-event", json!({"anything": 1}));
    }

    #[test]
    fn data_fields_are_typed() {
        let ev = Event::from_parts(
            "data",
            json!({"task": "train", "rate": 10.5, "loss": 1, "odd": true}),
        );
        let Event::Data(d) = ev else {
            panic!("not data")
        };
        assert_eq!(d.task.as_deref(), Some("train"));
        assert_eq!(d.rate, Some(10.5));
        assert_eq!(d.loss, Some(1.0));
        assert_eq!(d.extra["odd"], json!(true));
    }

    #[test]
    fn unexpected_shapes_become_other() {
        assert!(matches!(
            Event::from_parts("data", json!([1, 2])),
            Event::Other { .. }
        ));
        assert!(matches!(
            Event::from_parts("start", json!({"command": 3})),
            Event::Other { .. }
        ));
        let Event::Data(d) = Event::from_parts("data", json!({"rate": "fast"})) else {
            panic!()
        };
        assert_eq!(d.rate, None);
        assert_eq!(d.extra["rate"], json!("fast"));
    }
}
