//! The report's projection of a `.data` line: only the fields its figures use, decoded straight
//! from the line's text. Typed [`milabench_metrics::Record`]s keep every field of every event,
//! which costs allocations the report does not need; this decoder reads the same fields with the
//! same rules (a quoted `"NaN"` is a number, a value of another shape is absent, an event whose
//! payload has another shape is not that event) and skips the rest of the line unread. Keys and
//! rules come from [`milabench_metrics::format`], as the typed decoder's do. Tests check both
//! decoders agree on every line of the fixtures, on odd shapes and on every field of the format's
//! tables.

use std::fmt;

use milabench_metrics::format::{
    DataKey, EndKey, EventName, MessageKey, RecordKey, SampleKey, StartKey, TRAIN_TASK,
    exit_status, is_command, is_stop, only_string, skipped_bench,
};
use milabench_metrics::lenient::{Key, Number, Numbers};
use milabench_metrics::lenient_value;
use milabench_metrics::{LineDecoder, LineOutcome};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// What one record tells the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// The `config` event's payload.
    Config(Value),
    /// The `meta` event's payload.
    Meta(Value),
    /// `start`, with its time (NaN when absent).
    Start(f64),
    /// `end`, with its time (NaN when absent) and whether the return code is 0.
    End(f64, bool),
    /// `stop` (early stop).
    Stop,
    /// A `data` event.
    Data(DataFacts),
    /// A `message` recording that the run skipped this benchmark for an unmet capability: its
    /// name (see [`milabench_metrics::format::skip_message`]).
    Skip(String),
}

/// The fields of a `data` payload the report uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataFacts {
    /// `task` is [`TRAIN_TASK`].
    pub train: bool,
    /// `rate`.
    pub rate: Option<f64>,
    /// `loss`.
    pub loss: Option<f64>,
    /// `time`.
    pub time: Option<f64>,
    /// `cpudata.memory[0]`: bytes used on the machine.
    pub cpu_memory_used: Option<f64>,
    /// `process.memory[0]`: resident bytes of the benchmark's process tree.
    pub process_memory: Option<f64>,
    /// `gpudata`: one reading per device.
    pub gpudata: Option<Vec<GpuReading>>,
}

/// One device's reading in a `gpudata` sample, reduced to what the report uses.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuReading {
    /// The device: an index into [`FactDecoder::devices`].
    pub device: usize,
    /// Memory used, MiB (`memory[0]` when `memory` is a pair of numbers).
    pub memory_used: Option<f64>,
    /// Compute utilisation, 0 to 1.
    pub load: Option<f64>,
    /// Watts.
    pub power: Option<f64>,
}

/// Decodes the lines of one file into [`Fact`]s; every other event is skipped. GPU device ids
/// are kept once, in [`FactDecoder::devices`], and readings refer to them by index.
#[derive(Debug, Clone, Default)]
pub struct FactDecoder {
    devices: Vec<String>,
}

impl FactDecoder {
    /// The GPU device ids seen so far, in first-seen order.
    pub fn devices(&self) -> &[String] {
        &self.devices
    }
}

impl LineDecoder for FactDecoder {
    type Item = Fact;

    /// The reference decoder, which reads the lines the fast path declines.
    fn decode(&mut self, text: &str) -> LineOutcome<Fact> {
        let mut de = serde_json::Deserializer::from_str(text);
        match de.deserialize_map(LineVisitor(&mut self.devices)) {
            Ok(outcome) if de.end().is_ok() => outcome,
            _ => LineOutcome::NotARecord,
        }
    }

    /// The fast path (`skim`), for the common lines.
    fn decode_bytes(&mut self, bytes: &[u8]) -> Option<LineOutcome<Fact>> {
        crate::skim::decode(bytes, &mut self.devices)
    }
}

/// The top-level object: `event` names the payload's decoder.
struct LineVisitor<'a>(&'a mut Vec<String>);

impl<'de> Visitor<'de> for LineVisitor<'_> {
    type Value = LineOutcome<Fact>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name: Option<Key<'de>> = None;
        let mut fact: Option<Option<Fact>> = None;
        let mut early_data: Option<Value> = None;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match (RecordKey::parse(key.as_str().as_bytes()), &name) {
                (Some(RecordKey::Event), _) => name = Some(map.next_value()?),
                (Some(RecordKey::Data), Some(event)) => {
                    fact = Some(map.next_value_seed(PayloadSeed(event.as_str(), self.0))?);
                }
                (Some(RecordKey::Data), None) => early_data = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(name) = name else {
            return Ok(LineOutcome::NotARecord);
        };
        let fact = match fact {
            Some(fact) => fact,
            // The payload came before the event name (or not at all): decoded from its tree.
            None => PayloadSeed(name.as_str(), self.0)
                .deserialize(early_data.unwrap_or(Value::Null))
                .map_err(de::Error::custom)?,
        };
        Ok(fact.map_or(LineOutcome::Skipped, LineOutcome::Item))
    }
}

/// The payload of the event it names; `None` for events the report does not use, and for
/// payloads of another shape. Carries the file's device table.
struct PayloadSeed<'a, 'd>(&'a str, &'d mut Vec<String>);

impl<'de> DeserializeSeed<'de> for PayloadSeed<'_, '_> {
    type Value = Option<Fact>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Fact>, D::Error> {
        let devices = self.1;
        Ok(match EventName::parse(self.0.as_bytes()) {
            Some(EventName::Config) => Some(Fact::Config(Value::deserialize(deserializer)?)),
            Some(EventName::Meta) => Some(Fact::Meta(Value::deserialize(deserializer)?)),
            Some(EventName::Stop) => {
                is_stop(&Value::deserialize(deserializer)?).then_some(Fact::Stop)
            }
            Some(EventName::Start) => Object::<StartFacts>::new(devices)
                .deserialize(deserializer)?
                .map(|s| Fact::Start(s.time.unwrap_or(f64::NAN))),
            Some(EventName::End) => Object::<EndFacts>::new(devices)
                .deserialize(deserializer)?
                .map(|e| Fact::End(e.time.unwrap_or(f64::NAN), e.return_code_zero)),
            Some(EventName::Data) => Object::<DataFacts>::new(devices)
                .deserialize(deserializer)?
                .map(Fact::Data),
            Some(EventName::Message) => {
                let payload = Value::deserialize(deserializer)?;
                only_string(&payload, MessageKey::Message.as_str())
                    .and_then(skipped_bench)
                    .map(|name| Fact::Skip(name.to_owned()))
            }
            _ => {
                IgnoredAny::deserialize(deserializer)?;
                None
            }
        })
    }
}

/// A payload decoded from an object's entries; `None` when it is not one of its kind.
trait FromObject: Sized {
    /// Reads the entries; `devices` is the file's device table.
    fn from_object<'de, A: MapAccess<'de>>(
        map: A,
        devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error>;
}

/// Decodes an object with [`FromObject`]; any other value is consumed and gives `None`.
struct Object<'d, T>(&'d mut Vec<String>, std::marker::PhantomData<T>);

impl<'d, T> Object<'d, T> {
    fn new(devices: &'d mut Vec<String>) -> Self {
        Object(devices, std::marker::PhantomData)
    }
}

impl<'de, T: FromObject> DeserializeSeed<'de> for Object<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: FromObject> Visitor<'de> for Object<'_, T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
        T::from_object(map, self.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
}

/// `start`: a start only when `command`, if present, is a list of strings.
struct StartFacts {
    time: Option<f64>,
}

impl FromObject for StartFacts {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        _devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let (mut time, mut command_ok) = (None, true);
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match StartKey::parse(key.as_str().as_bytes()) {
                Some(StartKey::Time) => time = map.next_value::<Number>()?.0,
                Some(StartKey::Command) => {
                    // Read as a tree: a start event comes once per file.
                    command_ok = is_command(&map.next_value::<Value>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(command_ok.then_some(StartFacts { time }))
    }
}

/// `end`.
struct EndFacts {
    time: Option<f64>,
    return_code_zero: bool,
}

impl FromObject for EndFacts {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        _devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let mut end = EndFacts {
            time: None,
            return_code_zero: false,
        };
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match EndKey::parse(key.as_str().as_bytes()) {
                Some(EndKey::Time) => end.time = map.next_value::<Number>()?.0,
                Some(EndKey::ReturnCode) => {
                    end.return_code_zero = exit_status(&map.next_value::<Value>()?) == Some(0);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(end))
    }
}

impl FromObject for DataFacts {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let mut d = DataFacts::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match DataKey::parse(key.as_str().as_bytes()) {
                Some(DataKey::Task) => d.train = map.next_value::<IsTrain>()?.0,
                Some(DataKey::Rate) => d.rate = map.next_value::<Number>()?.0,
                Some(DataKey::Loss) => d.loss = map.next_value::<Number>()?.0,
                Some(DataKey::Time) => d.time = map.next_value::<Number>()?.0,
                Some(DataKey::Cpudata) => {
                    let sample = map.next_value_seed(Object::<MemorySample>::new(devices))?;
                    d.cpu_memory_used = sample.and_then(|s| s.0.pair.map(|[used, _]| used));
                }
                Some(DataKey::Process) => {
                    // Non-finite values count as absent where they are used, so a quoted "NaN"
                    // here and the typed events' plain number read agree.
                    let sample = map.next_value_seed(Object::<MemorySample>::new(devices))?;
                    d.process_memory = sample.and_then(|s| s.0.first);
                }
                Some(DataKey::Gpudata) => {
                    d.gpudata = map
                        .next_value_seed(Object::<GpuSamples>::new(devices))?
                        .map(|g| g.0);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(d))
    }
}

/// A `cpudata` or `process` sample: the numbers of its `memory`.
struct MemorySample(Numbers);

impl FromObject for MemorySample {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        _devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let mut memory = Numbers::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if SampleKey::parse(key.as_str().as_bytes()) == Some(SampleKey::Memory) {
                memory = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(MemorySample(memory)))
    }
}

/// `gpudata`: one reading per device id, in the file's order.
struct GpuSamples(Vec<GpuReading>);

impl FromObject for GpuSamples {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let mut readings = Vec::new();
        while let Some(id) = map.next_key::<Key<'de>>()? {
            let device = match devices.iter().position(|known| known == id.as_str()) {
                Some(index) => index,
                None => {
                    devices.push(id.as_str().to_owned());
                    devices.len() - 1
                }
            };
            let reading = map.next_value_seed(Object::<GpuReading>::new(devices))?;
            readings.push(GpuReading {
                device,
                ..reading.unwrap_or_default()
            });
        }
        Ok(Some(GpuSamples(readings)))
    }
}

impl FromObject for GpuReading {
    fn from_object<'de, A: MapAccess<'de>>(
        mut map: A,
        _devices: &mut Vec<String>,
    ) -> Result<Option<Self>, A::Error> {
        let mut r = GpuReading::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match SampleKey::parse(key.as_str().as_bytes()) {
                Some(SampleKey::Memory) => {
                    r.memory_used = map.next_value::<Numbers>()?.pair.map(|[used, _]| used);
                }
                Some(SampleKey::Load) => r.load = map.next_value::<Number>()?.0,
                Some(SampleKey::Power) => r.power = map.next_value::<Number>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(r))
    }
}

/// Whether a value is the string [`TRAIN_TASK`].
struct IsTrain(bool);

lenient_value!(IsTrain, bool, IsTrain, "a task name", {
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == TRAIN_TASK)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
});

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use milabench_metrics::format::{
        ErrorKey, FormatErrorKey, MessageKey, NON_FINITE, PhaseKey, PipeName,
    };
    use milabench_metrics::{Event, ReadItem, Record, RecordReader};
    use serde_json::{Map, json};

    use super::*;

    /// A GPU reading as text: device id, memory used, load, power.
    type Gpu = (String, Option<f64>, Option<f64>, Option<f64>);

    /// A fact as text, with non-finite memory counted as absent (the report ignores it either
    /// way) and GPU readings named by device id.
    fn describe(fact: Fact, devices: &[String]) -> String {
        let Fact::Data(d) = fact else {
            return format!("{fact:?}");
        };
        let finite = |x: Option<f64>| x.filter(|x| x.is_finite());
        let gpus: Option<Vec<Gpu>> = d.gpudata.map(|readings| {
            readings
                .into_iter()
                .map(|r| (devices[r.device].clone(), r.memory_used, r.load, r.power))
                .collect()
        });
        format!(
            "data train={} rate={:?} loss={:?} time={:?} cpu={:?} process={:?} gpus={gpus:?}",
            d.train,
            d.rate,
            d.loss,
            d.time,
            finite(d.cpu_memory_used),
            finite(d.process_memory),
        )
    }

    /// What the report used to take from a typed record, as [`describe`] writes it.
    fn describe_typed(record: Record) -> Option<String> {
        let fact = match record.event {
            Event::Config(c) => Fact::Config(c),
            Event::Meta(m) => Fact::Meta(m),
            Event::Start(s) => Fact::Start(s.time.unwrap_or(f64::NAN)),
            Event::End(e) => Fact::End(e.time.unwrap_or(f64::NAN), e.return_code.is_zero()),
            Event::Stop => Fact::Stop,
            Event::Message(m) => Fact::Skip(skipped_bench(&m)?.to_owned()),
            Event::Data(d) => {
                let mut devices = Vec::new();
                let gpudata = d.gpudata.map(|gpus| {
                    gpus.into_iter()
                        .map(|(id, s)| {
                            devices.push(id);
                            GpuReading {
                                device: devices.len() - 1,
                                memory_used: s.memory.map(|[used, _]| used),
                                load: s.load,
                                power: s.power,
                            }
                        })
                        .collect()
                });
                let process = d
                    .extra
                    .get(DataKey::Process.as_str())
                    .and_then(|p| p.get(SampleKey::Memory.as_str()));
                let facts = DataFacts {
                    train: d.task.as_deref() == Some(TRAIN_TASK),
                    rate: d.rate,
                    loss: d.loss,
                    time: d.time,
                    cpu_memory_used: d.cpudata.and_then(|c| c.memory).map(|[used, _]| used),
                    process_memory: process.and_then(|m| m.get(0)).and_then(Value::as_f64),
                    gpudata,
                };
                return Some(describe(Fact::Data(facts), &devices));
            }
            _ => return None,
        };
        Some(describe(fact, &[]))
    }

    /// Both decoders over `text`: the facts, and the typed records reduced to facts.
    fn both(text: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut reader = RecordReader::with_decoder(text, FactDecoder::default());
        let items: Vec<_> = reader.by_ref().collect();
        let devices = reader.decoder().devices();
        let facts = items
            .into_iter()
            .map(|item| match item {
                ReadItem::Record(fact) => describe(fact, devices),
                ReadItem::Problem(p) => format!("problem {} {:?}", p.line, p.kind),
            })
            .collect();
        let typed = RecordReader::new(text)
            .filter_map(|item| match item {
                ReadItem::Record(record) => describe_typed(record),
                ReadItem::Problem(p) => Some(format!("problem {} {:?}", p.line, p.kind)),
            })
            .collect();
        (facts, typed)
    }

    /// Lines of unusual shapes, each decoded the same way by every decoder.
    const ODD_LINES: &[&str] = &[
        r#"{"event": "data", "data": {"rate": 12.5, "units": "items/s", "task": "train"}, "pipe": "data"}"#,
        r#"{"event": "data", "data": {"rate": NaN, "loss": -Infinity, "task": "train"}}"#,
        r#"{"event": "data", "data": {"rate": "NaN", "loss": "x", "task": 3, "time": [1]}}"#,
        r#"{"data": {"rate": 1.0, "task": "train"}, "event": "data", "pipe": "data"}"#,
        r#"{"event": "data", "data": {"task": "main", "time": 17.5, "gpudata": {"0": {"memory": [1, 2.5], "load": 0.9, "power": 300.5, "odd": [1]}, "1": 3, "2": {"memory": [1]}}}}"#,
        r#"{"event": "data", "data": {"gpudata": [1, 2], "cpudata": {"memory": [1, 2], "load": 5}, "process": {"memory": [3]}}}"#,
        r#"{"event": "data", "data": {"cpudata": {"memory": ["NaN", 2]}, "process": {"memory": ["NaN", 1]}}}"#,
        r#"{"event": "data", "data": {"cpudata": 7, "process": [1], "gpudata": {"0": null}}}"#,
        r#"{"event": "data", "data": {"gpudata": {"0": {"memory": [1, 2]}}, "gpudata": {"1": {"load": 1}}}}"#,
        r#"{"event": "data", "data": [1, 2], "pipe": "data"}"#,
        r#"{"event": "data", "data": null}"#,
        r#"{"event": "data"}"#,
        r#"{"event": "config", "data": {"name": "x", "tag": ["x", "D0"]}, "pipe": null}"#,
        r#"{"event": "config"}"#,
        r#"{"event": "meta", "data": [1]}"#,
        r#"{"event": "stop", "data": null, "pipe": "data"}"#,
        r#"{"event": "stop"}"#,
        r#"{"event": "stop", "data": {"why": 1}}"#,
        r#"{"event": "start", "data": {"command": ["voir", "main.py"], "time": 1.5}}"#,
        r#"{"event": "start", "data": {"command": "voir main.py", "time": 1.5}}"#,
        r#"{"event": "start", "data": {"command": ["voir", 3]}}"#,
        r#"{"event": "start", "data": {"time": "NaN"}}"#,
        r#"{"event": "start", "data": 3}"#,
        r#"{"event": "end", "data": {"return_code": 0, "time": 3.5}, "pipe": 7}"#,
        r#"{"event": "end", "data": {"return_code": 0.0}}"#,
        r#"{"event": "end", "data": {"return_code": "ERROR", "time": 2}}"#,
        r#"{"event": "end", "data": {"return_code": -15}}"#,
        r#"{"event": "end", "data": null}"#,
        r#"{"event": "line", "data": "step 1\n", "pipe": "stderr"}"#,
        r#"{"event": "phase", "data": {"name": "init"}, "pipe": null}"#,
        r#"{"event": "d\u0061ta", "data": {"r\u0061te": 2, "task": "tr\u0061in"}}"#,
        r#"{"pipe": "data"}"#,
        r#"{"event": 3, "data": {}}"#,
        r#"[1, 2]"#,
        r#"not json"#,
        r#"{"event": "data", "data": {"rate": 1}} {}"#,
        r#"{"event": "data", "data": {"rate": 1"#,
    ];

    fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("data" | "txt")
            ) {
                out.push(path);
            }
        }
    }

    /// Every `.data` file of the fixtures' run folders and replays.
    fn fixture_files() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/milabench");
        let mut files = Vec::new();
        files_under(&root.join("runs"), &mut files);
        files_under(&root.join("replays"), &mut files);
        files
    }

    #[test]
    fn agrees_with_the_typed_records_on_every_fixture_line() {
        let files = fixture_files();
        assert!(files.len() > 10, "{files:?}");
        for file in files {
            let text = std::fs::read(&file).unwrap();
            let (facts, typed) = both(&text);
            assert_eq!(facts, typed, "{}", file.display());
        }
    }

    #[test]
    fn agrees_with_the_typed_records_on_odd_shapes() {
        let text = ODD_LINES.join("\n");
        let (facts, typed) = both(text.as_bytes());
        assert_eq!(facts, typed);
        assert!(facts.len() > 20, "{facts:#?}");
    }

    /// Runs the fast path and the serde decoder on every line; records where the fast path
    /// answered and any answer (fact or device table) that differs from the serde decoder's.
    #[derive(Clone, Default)]
    struct FastAndSerde {
        devices: Vec<String>,
        lines: usize,
        answered: usize,
        mismatches: Vec<String>,
    }

    impl LineDecoder for FastAndSerde {
        type Item = ();

        fn decode_bytes(&mut self, bytes: &[u8]) -> Option<LineOutcome<()>> {
            self.lines += 1;
            let mut fast_devices = self.devices.clone();
            let fast = crate::skim::decode(bytes, &mut fast_devices);
            let text = String::from_utf8_lossy(bytes);
            let mut serde = FactDecoder {
                devices: std::mem::take(&mut self.devices),
            };
            let reference = serde.decode(&text);
            self.devices = serde.devices;
            if let Some(fast) = fast {
                self.answered += 1;
                let fast = format!("{fast:?} {fast_devices:?}");
                let reference = format!("{reference:?} {:?}", self.devices);
                if std::str::from_utf8(bytes).is_err() {
                    self.mismatches.push(format!(
                        "{text}\n  fast path answered a line that is not UTF-8"
                    ));
                } else if fast != reference {
                    self.mismatches
                        .push(format!("{text}\n  fast:  {fast}\n  serde: {reference}"));
                }
            }
            Some(LineOutcome::Skipped)
        }

        fn decode(&mut self, _: &str) -> LineOutcome<()> {
            unreachable!("every line is answered by decode_bytes")
        }
    }

    /// Every line of `text` through [`FastAndSerde`].
    fn fast_and_serde(text: &[u8]) -> FastAndSerde {
        let mut reader = RecordReader::with_decoder(text, FastAndSerde::default());
        reader.by_ref().for_each(drop);
        reader.decoder().clone()
    }

    #[test]
    fn the_fast_path_answers_as_serde_does_on_fixtures_and_odd_lines() {
        let files = fixture_files();
        let (mut lines, mut answered) = (0, 0);
        for file in files {
            let seen = fast_and_serde(&std::fs::read(&file).unwrap());
            assert!(
                seen.mismatches.is_empty(),
                "{}: {:#?}",
                file.display(),
                seen.mismatches
            );
            lines += seen.lines;
            answered += seen.answered;
        }
        // The fast path is there for the common lines: most fixture lines take it.
        assert!(answered * 10 > lines * 8, "{answered} of {lines} lines");
        let odd = fast_and_serde(ODD_LINES.join("\n").as_bytes());
        assert!(odd.mismatches.is_empty(), "{:#?}", odd.mismatches);
        assert!(odd.answered >= 5, "{} odd lines answered", odd.answered);
    }

    #[test]
    fn the_fast_path_answers_the_usual_samples() {
        let lines = [
            r#"{"event": "data", "data": {"rate": 1000.25, "units": "items/s", "task": "train"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"loss": 0.5, "task": "train"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"progress": [3, 70], "task": "early_stop"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 1700000000.5, "gpudata": {"0": {"memory": [40000, 81920.0], "load": 0.97, "temperature": 61.0, "power": 312.5}}}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 17.5, "cpudata": {"memory": [27789398016, 1076052807680], "load": 12.5}, "process": {"memory": [123, 0]}}, "pipe": "data"}"#,
            r#"{"event": "line", "data": "step 3: training goes on\n", "pipe": "stderr"}"#,
            r#"{"event":"phase","data":{"name":"init"},"pipe":null}"#,
            "{\"event\": \"line\", \"data\": \" 50%|\u{2588}\u{2588}\u{2588}\u{258c}  | 5/10\\r\", \"pipe\": \"stderr\"}",
        ];
        let seen = fast_and_serde(lines.join("\n").as_bytes());
        assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
        assert_eq!(seen.answered, lines.len());
        assert_eq!(seen.devices, ["0"]);
    }

    /// A value of the shape `key` has in a monitor sample.
    fn sample_value(key: SampleKey) -> Value {
        match key {
            SampleKey::Memory => json!([40000, 81920.5]),
            SampleKey::Load => json!(0.97),
            SampleKey::Temperature => json!(61),
            SampleKey::Power => json!(312.5),
        }
    }

    /// A monitor sample of the fields `keys`, spelled by the format.
    fn sample(keys: &[SampleKey]) -> Value {
        let fields = keys
            .iter()
            .map(|&k| (k.as_str().to_owned(), sample_value(k)));
        Value::Object(fields.collect())
    }

    /// A value of the shape `key` has in a `data` payload (samples with every field).
    fn data_value(key: DataKey) -> Value {
        match key {
            DataKey::Task => json!(TRAIN_TASK),
            DataKey::Time => json!(1700000000.5),
            DataKey::Rate => json!(1000.25),
            DataKey::Units => json!("items/s"),
            DataKey::Loss => json!(0.5),
            DataKey::Progress => json!([3, 70]),
            DataKey::Gpudata => json!({"0": sample(SampleKey::ALL)}),
            DataKey::Cpudata | DataKey::Process => sample(SampleKey::ALL),
        }
    }

    /// A record line of event `name` with `payload`, keys spelled by the format.
    fn record_line(name: EventName, payload: Value) -> String {
        let mut line = Map::new();
        line.insert(RecordKey::Event.as_str().into(), json!(name.as_str()));
        line.insert(RecordKey::Data.as_str().into(), payload);
        line.insert(
            RecordKey::Pipe.as_str().into(),
            json!(PipeName::Data.as_str()),
        );
        Value::Object(line).to_string()
    }

    /// A line of every event of the format with the payload it carries, every field spelled from
    /// the format's tables: a `data` line per field and per sample field, one with all of them,
    /// and one per number field with each of Python's non-finite spellings, quoted.
    fn lines_from_the_format() -> Vec<String> {
        let mut lines = Vec::new();
        let data = |fields: &mut dyn Iterator<Item = (DataKey, Value)>| {
            let payload = fields.map(|(k, v)| (k.as_str().to_owned(), v)).collect();
            record_line(EventName::Data, Value::Object(payload))
        };
        for &key in DataKey::ALL {
            lines.push(data(&mut std::iter::once((key, data_value(key)))));
            for &(spelling, _) in &NON_FINITE {
                lines.push(data(&mut std::iter::once((key, json!(spelling)))));
            }
        }
        for &field in SampleKey::ALL {
            let one = sample(&[field]);
            lines.push(data(
                &mut [(DataKey::Gpudata, json!({"0": one.clone()}))].into_iter(),
            ));
            lines.push(data(&mut [(DataKey::Cpudata, one.clone())].into_iter()));
            lines.push(data(&mut [(DataKey::Process, one)].into_iter()));
        }
        lines.push(data(&mut DataKey::ALL.iter().map(|&k| (k, data_value(k)))));
        for &name in EventName::ALL {
            let keyed = |pairs: &[(&str, Value)]| {
                Value::Object(
                    pairs
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), v.clone()))
                        .collect(),
                )
            };
            let payload = match name {
                EventName::Config => json!({"name": "bench", "tag": ["bench", "D0"]}),
                EventName::Meta => json!({"cpu": {"count": 8}}),
                EventName::Start => keyed(&[
                    (StartKey::Command.as_str(), json!(["voir", "main.py"])),
                    (StartKey::Time.as_str(), json!(1.5)),
                ]),
                EventName::End => keyed(&[
                    (EndKey::Command.as_str(), json!(["voir", "main.py"])),
                    (EndKey::Time.as_str(), json!(3.5)),
                    (EndKey::ReturnCode.as_str(), json!(0)),
                ]),
                EventName::Phase => keyed(&[(PhaseKey::Name.as_str(), json!("init"))]),
                EventName::Message => keyed(&[(MessageKey::Message.as_str(), json!("skip"))]),
                EventName::Error | EventName::OverseerError => keyed(&[
                    (ErrorKey::Type.as_str(), json!("ValueError")),
                    (ErrorKey::Message.as_str(), json!("bad")),
                    (ErrorKey::Trace.as_str(), json!("...")),
                ]),
                EventName::FormatError => keyed(&[
                    (FormatErrorKey::Line.as_str(), json!("{\n")),
                    (FormatErrorKey::Type.as_str(), json!("JSONDecodeError")),
                    (FormatErrorKey::Message.as_str(), json!("bad")),
                ]),
                EventName::Line => json!("step 1\n"),
                EventName::Stop => Value::Null,
                EventName::Data => continue,
            };
            lines.push(record_line(name, payload));
        }
        // A message that records a skipped benchmark is a fact; one with another field is not.
        let skip = milabench_metrics::format::skip_message("bench", "gpu['count'] > 1");
        lines.push(record_line(
            EventName::Message,
            json!({MessageKey::Message.as_str(): skip}),
        ));
        lines.push(record_line(
            EventName::Message,
            json!({MessageKey::Message.as_str(): skip, "extra": 1}),
        ));
        lines
    }

    /// The format's tables are the one definition of the line both decoders read: a line spelled
    /// from them gives the report's facts the typed records give, on both of the report's paths,
    /// and every field the report reads is read (a decoder with its own spelling of a key, or
    /// its own rule, would disagree here).
    #[test]
    fn every_field_of_the_format_is_read_alike_by_every_decoder() {
        let lines = lines_from_the_format();
        let text = lines.join("\n");
        let (facts, typed) = both(text.as_bytes());
        assert_eq!(facts, typed);
        let seen = fast_and_serde(text.as_bytes());
        assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
        // The fast path reads the usual shapes itself: every data line with plain values.
        assert!(
            seen.answered * 2 > lines.len(),
            "{} of {}",
            seen.answered,
            lines.len()
        );

        let all = record_line(
            EventName::Data,
            Value::Object(
                DataKey::ALL
                    .iter()
                    .map(|&k| (k.as_str().to_owned(), data_value(k)))
                    .collect(),
            ),
        );
        let gpu = GpuReading {
            device: 0,
            memory_used: Some(40000.0),
            load: Some(0.97),
            power: Some(312.5),
        };
        let want = Fact::Data(DataFacts {
            train: true,
            rate: Some(1000.25),
            loss: Some(0.5),
            time: Some(1700000000.5),
            cpu_memory_used: Some(40000.0),
            process_memory: Some(40000.0),
            gpudata: Some(vec![gpu]),
        });
        let mut devices = Vec::new();
        assert_eq!(
            crate::skim::decode(all.as_bytes(), &mut devices),
            Some(LineOutcome::Item(want.clone()))
        );
        assert_eq!(FactDecoder::default().decode(&all), LineOutcome::Item(want));
        // The events the report reads besides `data`: config, meta, start, end, stop and the
        // message that records a skip.
        let other_facts = facts.iter().filter(|f| !f.starts_with("data")).count();
        assert_eq!(other_facts, 6, "{facts:#?}");
        assert!(facts.iter().any(|f| f == "Skip(\"bench\")"), "{facts:#?}");
    }

    #[test]
    fn the_fast_path_declines_lines_that_are_not_utf8() {
        for bad in [&b"\xe2\x96"[..], b"\xff", b"\xed\xa0\x80", b"\xc3"] {
            let mut line = br#"{"event": "line", "data": "step "#.to_vec();
            line.extend_from_slice(bad);
            line.extend_from_slice(br#"", "pipe": "stderr"}"#);
            assert_eq!(
                crate::skim::decode(&line, &mut Vec::new()),
                None,
                "{line:?}"
            );
        }
    }

    mod generated {
        use proptest::prelude::*;

        use super::fast_and_serde;

        const KEYS: &[&str] = &[
            "event",
            "data",
            "pipe",
            "task",
            "rate",
            "loss",
            "time",
            "cpudata",
            "process",
            "gpudata",
            "memory",
            "load",
            "power",
            "units",
            "0",
            "1",
            "r\\u0061te",
        ];

        fn scalar() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(vec![
                    "0",
                    "-0",
                    "12",
                    "1000.25",
                    "-3.5e-3",
                    "1E400",
                    "18446744073709551616",
                    "01",
                    "1.",
                    "-",
                    ".5",
                    "NaN",
                    "-Infinity",
                    "Infinity",
                    "\"train\"",
                    "\"NaN\"",
                    "\"x\"",
                    "\"tr\\u0061in\"",
                    "\"a\\\"b\"",
                    "\"a\\nb\\\\\"",
                    "\"\\ud800\"",
                    "\"\\x\"",
                    "\"\\u12\"",
                    "\"\\u00E9\\/\"",
                    "\"\u{e9}t\u{e9}\"",
                    "\"\u{2588}\u{2588}\u{258c}  50%\"",
                    "\"a~BAD~b\"",
                    "\"~BAD~\"",
                    "true",
                    "false",
                    "null",
                    "nul",
                    "[1, 2]",
                    "[\"NaN\", 2]",
                    "{}",
                    "[]",
                ])
                .prop_map(str::to_owned),
                any::<f64>().prop_map(|x| x.to_string()),
                any::<i64>().prop_map(|x| x.to_string()),
                // Decimal and exponent forms of any digits, rounding cases and overflow included.
                (any::<u64>(), 0usize..20, prop::option::of(-400i32..400)).prop_map(
                    |(digits, point, exponent)| {
                        let digits = digits.to_string();
                        let at = point.min(digits.len());
                        let (int, frac) = digits.split_at(digits.len() - at);
                        let mut text = if frac.is_empty() {
                            int.to_owned()
                        } else {
                            format!("{}.{frac}", if int.is_empty() { "0" } else { int })
                        };
                        if let Some(e) = exponent {
                            text.push_str(&format!("e{e}"));
                        }
                        text
                    }
                ),
            ]
        }

        fn value() -> impl Strategy<Value = String> {
            scalar().prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4)
                        .prop_map(|items| format!("[{}]", items.join(", "))),
                    prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(
                        |members| {
                            let members: Vec<String> = members
                                .iter()
                                .map(|(key, value)| format!("\"{key}\": {value}"))
                                .collect();
                            format!("{{{}}}", members.join(", "))
                        }
                    ),
                ]
            })
        }

        fn line() -> impl Strategy<Value = String> {
            let event = prop::sample::select(vec![
                "\"data\"",
                "\"line\"",
                "\"config\"",
                "\"stop\"",
                "\"phase\"",
                "\"d\\u0061ta\"",
                "3",
            ]);
            let member = prop_oneof![
                2 => event.prop_map(|e| format!("\"event\": {e}")),
                2 => value().prop_map(|v| format!("\"data\": {v}")),
                1 => value().prop_map(|v| format!("\"pipe\": {v}")),
            ];
            (
                prop::collection::vec(member, 0..4),
                any::<bool>(),
                prop::option::of(0usize..200),
            )
                .prop_map(|(members, compact, cut)| {
                    let line = if compact {
                        format!("{{{}}}", members.join(",")).replace(": ", ":")
                    } else {
                        format!(" {{ {} }} ", members.join(" , "))
                    };
                    match cut {
                        Some(at) if at < line.len() && line.is_char_boundary(at) => {
                            line[..at].to_owned()
                        }
                        _ => line,
                    }
                })
        }

        /// `text` with each `~BAD~` replaced by a byte sequence that is not UTF-8 (a cut
        /// character, a stray byte, an encoded surrogate, in turn).
        fn with_bad_utf8(text: &str) -> Vec<u8> {
            const BAD: [&[u8]; 3] = [b"\xe2\x96", b"\xff", b"\xed\xa0\x80"];
            let mut out = Vec::new();
            for (i, piece) in text.split("~BAD~").enumerate() {
                if i > 0 {
                    out.extend_from_slice(BAD[i % BAD.len()]);
                }
                out.extend_from_slice(piece.as_bytes());
            }
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn the_fast_path_never_disagrees_with_serde(lines in prop::collection::vec(line(), 1..6)) {
                let seen = fast_and_serde(&with_bad_utf8(&lines.join("\n")));
                prop_assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
            }
        }
    }
}
