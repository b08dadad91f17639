//! Typed events of the milabench stream, one per line of a `.data` file.
//!
//! Every kind the Python tool writes has a variant; fields it does not know are kept in `extra`
//! maps so that a record read and written again loses nothing. A payload whose shape does not fit
//! its kind becomes [`Event::Other`] with the raw JSON, rather than an error.

use serde_json::{Map, Value};

use crate::format::{
    DataKey, EndKey, ErrorKey, EventName, FormatErrorKey, MessageKey, PhaseKey, PipeName,
    RecordKey, SampleKey, StartKey, exit_status, is_command, is_stop, only_string,
};
use crate::json::{as_f64, float_value};
use crate::lenient::NumbersReader;

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
            Pipe::Data => PipeName::Data.as_str(),
            Pipe::Stdout => PipeName::Stdout.as_str(),
            Pipe::Stderr => PipeName::Stderr.as_str(),
            Pipe::Other(name) => name,
        }
    }

    /// The pipe called `name`.
    pub fn from_name(name: &str) -> Pipe {
        PipeName::parse(name.as_bytes()).map_or_else(|| Pipe::Other(name.to_owned()), Pipe::from)
    }
}

impl From<PipeName> for Pipe {
    fn from(name: PipeName) -> Pipe {
        match name {
            PipeName::Data => Pipe::Data,
            PipeName::Stdout => Pipe::Stdout,
            PipeName::Stderr => Pipe::Stderr,
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
        map.insert(
            RecordKey::Event.as_str().into(),
            Value::String(self.event.name().to_owned()),
        );
        map.insert(RecordKey::Data.as_str().into(), self.event.data_value());
        map.insert(
            RecordKey::Pipe.as_str().into(),
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
        let name = match self {
            Event::Config(_) => EventName::Config,
            Event::Meta(_) => EventName::Meta,
            Event::Start(_) => EventName::Start,
            Event::Phase(_) => EventName::Phase,
            Event::Data(_) => EventName::Data,
            Event::Line(_) => EventName::Line,
            Event::Error(_) => EventName::Error,
            Event::OverseerError(_) => EventName::OverseerError,
            Event::FormatError(_) => EventName::FormatError,
            Event::Stop => EventName::Stop,
            Event::End(_) => EventName::End,
            Event::Message(_) => EventName::Message,
            Event::Other { name, .. } => return name,
        };
        name.as_str()
    }

    /// Builds the typed event from its name and payload; never fails (see [`Event::Other`]).
    pub fn from_parts(name: &str, data: Value) -> Event {
        let Some(known) = EventName::parse(name.as_bytes()) else {
            return other(name, data);
        };
        match known {
            EventName::Config => Event::Config(data),
            EventName::Meta => Event::Meta(data),
            EventName::Stop if is_stop(&data) => Event::Stop,
            EventName::Stop => other(name, data),
            EventName::Line => match data {
                Value::String(s) => Event::Line(s),
                data => other(name, data),
            },
            EventName::Data => match data {
                Value::Object(map) => Event::Data(Box::new(DataPayload::from_map(map))),
                data => other(name, data),
            },
            EventName::Phase => match only_string(&data, PhaseKey::Name.as_str()) {
                Some(phase) => Event::Phase(phase.to_owned()),
                None => other(name, data),
            },
            EventName::Message => match only_string(&data, MessageKey::Message.as_str()) {
                Some(message) => Event::Message(message.to_owned()),
                None => other(name, data),
            },
            EventName::Start => match data {
                Value::Object(map) => StartInfo::from_map(map).map_or_else(
                    |map| other(name, Value::Object(map)),
                    |s| Event::Start(Box::new(s)),
                ),
                data => other(name, data),
            },
            EventName::End => match data {
                Value::Object(map) => Event::End(Box::new(EndInfo::from_map(map))),
                data => other(name, data),
            },
            EventName::Error | EventName::OverseerError => match data {
                Value::Object(map) => {
                    let info = Box::new(ErrorInfo::from_map(map));
                    if known == EventName::Error {
                        Event::Error(info)
                    } else {
                        Event::OverseerError(info)
                    }
                }
                data => other(name, data),
            },
            EventName::FormatError => match data {
                Value::Object(map) => Event::FormatError(Box::new(FormatErrorInfo::from_map(map))),
                data => other(name, data),
            },
        }
    }

    /// The payload as JSON, as it is written in the `data` field.
    pub fn data_value(&self) -> Value {
        match self {
            Event::Config(v) | Event::Meta(v) => v.clone(),
            Event::Start(s) => s.to_value(),
            Event::Phase(name) => obj([(PhaseKey::Name.as_str(), Value::String(name.clone()))]),
            Event::Data(d) => d.to_value(),
            Event::Line(s) => Value::String(s.clone()),
            Event::Error(e) | Event::OverseerError(e) => e.to_value(),
            Event::FormatError(f) => f.to_value(),
            Event::Stop => Value::Null,
            Event::End(e) => e.to_value(),
            Event::Message(m) => obj([(MessageKey::Message.as_str(), Value::String(m.clone()))]),
            Event::Other { data, .. } => data.clone(),
        }
    }
}

/// The string of an object whose one key is `key`; `None` for any other value.
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

/// The pair of numbers of an array, by the rule of [`NumbersReader`].
fn pair(value: &Value) -> Option<[f64; 2]> {
    let Value::Array(items) = value else {
        return None;
    };
    let mut numbers = NumbersReader::default();
    for item in items {
        numbers.push(as_f64(item));
    }
    numbers.pair()
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
            d.set(DataKey::parse(key.as_bytes()), &key, value);
        }
        d
    }

    /// Files one key of the payload (`field`, the name it spells, if any): into its typed field
    /// when the value has the expected shape, else into `extra`.
    pub(crate) fn set(&mut self, field: Option<DataKey>, key: &str, value: Value) {
        let d = self;
        match field {
            Some(DataKey::Task) => take_string(&mut d.task, key, value, &mut d.extra),
            Some(DataKey::Time) => take(&mut d.time, key, value, &mut d.extra, as_f64),
            Some(DataKey::Rate) => take(&mut d.rate, key, value, &mut d.extra, as_f64),
            Some(DataKey::Units) => take_string(&mut d.units, key, value, &mut d.extra),
            Some(DataKey::Loss) => take(&mut d.loss, key, value, &mut d.extra, as_f64),
            Some(DataKey::Progress) => take(&mut d.progress, key, value, &mut d.extra, pair),
            Some(DataKey::Gpudata) => match value {
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
            Some(DataKey::Cpudata) => match value {
                Value::Object(m) => d.cpudata = Some(CpuSample::from_map(m)),
                value => {
                    d.extra.insert(key.to_owned(), value);
                }
            },
            // `process` and `gpu_energy` are kept as read (the report reads them from there).
            Some(DataKey::Process | DataKey::GpuEnergy) | None => {
                d.extra.insert(key.to_owned(), value);
            }
        }
    }

    /// The payload as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        let mut put = |key: DataKey, value: Value| m.insert(key.as_str().into(), value);
        if let Some(t) = &self.task {
            put(DataKey::Task, Value::String(t.clone()));
        }
        if let Some(x) = self.time {
            put(DataKey::Time, float_value(x));
        }
        if let Some(x) = self.rate {
            put(DataKey::Rate, float_value(x));
        }
        if let Some(u) = &self.units {
            put(DataKey::Units, Value::String(u.clone()));
        }
        if let Some(x) = self.loss {
            put(DataKey::Loss, float_value(x));
        }
        if let Some(p) = self.progress {
            put(DataKey::Progress, pair_value(p, true));
        }
        if let Some(g) = &self.gpudata {
            let gpus = g.iter().map(|(id, s)| (id.clone(), s.to_value())).collect();
            put(DataKey::Gpudata, Value::Object(gpus));
        }
        if let Some(c) = &self.cpudata {
            put(DataKey::Cpudata, c.to_value());
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
        match SampleKey::parse(key.as_bytes()) {
            Some(SampleKey::Memory) => take(&mut s.memory, key, value, &mut s.extra, pair),
            Some(SampleKey::Load) => take(&mut s.load, key, value, &mut s.extra, as_f64),
            Some(SampleKey::Temperature) => {
                take(&mut s.temperature, key, value, &mut s.extra, as_f64);
            }
            Some(SampleKey::Power) => take(&mut s.power, key, value, &mut s.extra, as_f64),
            None => {
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
            m.insert(SampleKey::Memory.as_str().into(), pair_value(p, false));
        }
        for (key, x) in [
            (SampleKey::Load, self.load),
            (SampleKey::Temperature, self.temperature),
            (SampleKey::Power, self.power),
        ] {
            if let Some(x) = x {
                m.insert(key.as_str().into(), float_value(x));
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
        match SampleKey::parse(key.as_bytes()) {
            Some(SampleKey::Memory) => take(&mut s.memory, key, value, &mut s.extra, pair),
            Some(SampleKey::Load) => take(&mut s.load, key, value, &mut s.extra, as_f64),
            Some(SampleKey::Temperature | SampleKey::Power) | None => {
                s.extra.insert(key.to_owned(), value);
            }
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if let Some(p) = self.memory {
            m.insert(SampleKey::Memory.as_str().into(), pair_value(p, true));
        }
        if let Some(x) = self.load {
            m.insert(SampleKey::Load.as_str().into(), float_value(x));
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
        let command = match map.get(StartKey::Command.as_str()) {
            Some(command) if is_command(command) => command
                .as_array()
                .into_iter()
                .flatten()
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
            match StartKey::parse(key.as_bytes()) {
                Some(StartKey::Command) => {}
                Some(StartKey::Time) => {
                    take(&mut info.time, &key, value, &mut info.extra, as_f64);
                }
                None => {
                    info.extra.insert(key, value);
                }
            }
        }
        Ok(info)
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            StartKey::Command.as_str().into(),
            Value::Array(self.command.iter().cloned().map(Value::String).collect()),
        );
        if let Some(t) = self.time {
            m.insert(StartKey::Time.as_str().into(), float_value(t));
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
            match EndKey::parse(key.as_bytes()) {
                Some(EndKey::Command) => info.command = Some(value),
                Some(EndKey::Time) => take(&mut info.time, &key, value, &mut info.extra, as_f64),
                Some(EndKey::ReturnCode) => {
                    info.return_code = match exit_status(&value) {
                        Some(code) => ReturnCode::Code(code),
                        None => ReturnCode::Other(value),
                    }
                }
                None => {
                    info.extra.insert(key, value);
                }
            }
        }
        info
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if let Some(c) = &self.command {
            m.insert(EndKey::Command.as_str().into(), c.clone());
        }
        if let Some(t) = self.time {
            m.insert(EndKey::Time.as_str().into(), float_value(t));
        }
        m.insert(
            EndKey::ReturnCode.as_str().into(),
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
            let slot = match ErrorKey::parse(key.as_bytes()) {
                Some(ErrorKey::Type) => &mut info.kind,
                Some(ErrorKey::Message) => &mut info.message,
                Some(ErrorKey::Trace) => &mut info.trace,
                None => {
                    info.extra.insert(key, value);
                    continue;
                }
            };
            take_string(slot, &key, value, &mut info.extra);
        }
        info
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (key, v) in [
            (ErrorKey::Type, &self.kind),
            (ErrorKey::Message, &self.message),
            (ErrorKey::Trace, &self.trace),
        ] {
            if let Some(v) = v {
                m.insert(key.as_str().into(), Value::String(v.clone()));
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
        let get = |k: FormatErrorKey| {
            map.get(k.as_str())
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        FormatErrorInfo {
            line: get(FormatErrorKey::Line),
            kind: get(FormatErrorKey::Type),
            message: get(FormatErrorKey::Message),
        }
    }

    fn to_value(&self) -> Value {
        obj([
            (
                FormatErrorKey::Line.as_str(),
                Value::String(self.line.clone()),
            ),
            (
                FormatErrorKey::Type.as_str(),
                Value::String(self.kind.clone()),
            ),
            (
                FormatErrorKey::Message.as_str(),
                Value::String(self.message.clone()),
            ),
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

    /// Every field of the format's `data` and sample tables, spelled by the table, lands in its
    /// typed slot (`process` is kept as read) and is written back under the same spelling.
    #[test]
    fn every_field_of_the_format_has_its_typed_slot() {
        let sample = || -> Value {
            let field = |key: SampleKey| match key {
                SampleKey::Memory => json!([1, 2]),
                SampleKey::Load | SampleKey::Temperature | SampleKey::Power => json!(0.5),
            };
            let fields = SampleKey::ALL
                .iter()
                .map(|&k| (k.as_str().to_owned(), field(k)));
            Value::Object(fields.collect())
        };
        let mut payload = Map::new();
        for &key in DataKey::ALL {
            let value = match key {
                DataKey::Task | DataKey::Units => json!("x"),
                DataKey::Time | DataKey::Rate | DataKey::Loss => json!(1.5),
                DataKey::Progress => json!([1, 2]),
                DataKey::Gpudata => json!({"0": sample()}),
                DataKey::Cpudata | DataKey::Process => sample(),
                DataKey::GpuEnergy => json!({"0": {"joules": 12.5, "seconds": 2.0}}),
            };
            payload.insert(key.as_str().to_owned(), value);
        }
        let d = DataPayload::from_map(payload.clone());
        let extra: Vec<&String> = d.extra.keys().collect();
        assert_eq!(
            extra,
            [DataKey::Process.as_str(), DataKey::GpuEnergy.as_str()]
        );
        let gpu = &d.gpudata.as_ref().unwrap()[0].1;
        assert!(gpu.extra.is_empty(), "{gpu:?}");
        let cpu = d.cpudata.as_ref().unwrap();
        let cpu_extra: Vec<&String> = cpu.extra.keys().collect();
        assert_eq!(
            cpu_extra,
            [SampleKey::Temperature.as_str(), SampleKey::Power.as_str()]
        );
        assert!(d.task.is_some() && d.units.is_some() && d.progress.is_some());
        assert!(d.time.is_some() && d.rate.is_some() && d.loss.is_some());
        let written = d.to_value();
        let mut keys: Vec<&String> = written.as_object().unwrap().keys().collect();
        let mut want: Vec<&String> = payload.keys().collect();
        keys.sort();
        want.sort();
        assert_eq!(keys, want);
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
