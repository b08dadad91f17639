//! Decoding a record line straight into [`Record`], without building a JSON tree first: the serde
//! path of the `.data` decoder (the reference its fast path, `skim`, must agree with).
//!
//! Most lines of a `.data` file are `data` events whose payload is an object of a few numbers,
//! sometimes with a nested `gpudata` object per device. Parsing them into `serde_json::Value`
//! and then picking the fields costs an ordered map per object; here the payload's keys are
//! visited as the parser meets them and filed into the typed fields with the same rules as
//! [`DataPayload::from_map`] (a value of an unexpected shape goes to `extra`), and what the
//! reader did not ask for ([`Fields`]) is stepped over unread. When `event` comes after `data` in
//! a line, or the payload has another shape, the tree path decides, so the result is always the
//! one [`Event::from_parts`] gives, reduced to the fields asked for.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::event::{CpuSample, DataPayload, Event, GpuSample, Pipe, Record};
use crate::fields::Fields;
use crate::format::{DataKey, EventName, RecordKey, SampleKey};
use crate::lenient::Key;

/// What the serde path made of a line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Visited {
    /// A record with the fields asked for.
    Record(Record),
    /// A record of an event not asked for.
    Skipped,
    /// Not a JSON object with a string `event`.
    NotARecord,
}

/// Parses one line as a record, keeping `fields`; [`Visited::NotARecord`] when it is not a JSON
/// object with a string `event` (the caller then tries a tree, and classifies the line).
pub(crate) fn decode_record(text: &str, fields: Fields) -> Visited {
    let mut de = serde_json::Deserializer::from_str(text);
    match de.deserialize_map(RecordVisitor { fields }) {
        Ok(visited) if de.end().is_ok() => visited,
        _ => Visited::NotARecord,
    }
}

/// Visits the top-level object.
struct RecordVisitor {
    fields: Fields,
}

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Visited;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let fields = self.fields;
        let keep_extra = fields.wants_extra();
        let mut name: Option<Key<'de>> = None;
        let mut event: Option<Event> = None;
        let mut skipped = false;
        let mut early_data: Option<Value> = None;
        let mut pipe = None;
        let mut bad_event = false;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match RecordKey::parse(key.as_str().as_bytes()) {
                Some(RecordKey::Event) => match map.next_value_seed(ScalarSeed { keep_extra })? {
                    Scalar::Text(text) => name = Some(text),
                    _ => bad_event = true,
                },
                Some(RecordKey::Data) => match &name {
                    Some(n) if !fields.wants_event(EventName::parse(n.as_str().as_bytes())) => {
                        map.next_value::<IgnoredAny>()?;
                        skipped = true;
                    }
                    Some(n) => {
                        event = Some(map.next_value_seed(PayloadSeed {
                            name: n.as_str(),
                            fields,
                        })?);
                    }
                    None => early_data = Some(map.next_value()?),
                },
                Some(RecordKey::Pipe) if !fields.wants_pipe() => {
                    map.next_value::<IgnoredAny>()?;
                }
                Some(RecordKey::Pipe) => match map.next_value_seed(ScalarSeed { keep_extra })? {
                    Scalar::Text(text) => pipe = Some(Pipe::from_name(text.as_str())),
                    Scalar::Null | Scalar::Ignored => {}
                    Scalar::Other(other) => {
                        extra.insert(key.as_str().to_owned(), other);
                    }
                },
                None if keep_extra => {
                    let value = map.next_value()?;
                    extra.insert(key.as_str().to_owned(), value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(name) = name.filter(|_| !bad_event) else {
            return Ok(Visited::NotARecord);
        };
        if skipped && event.is_none() {
            return Ok(Visited::Skipped);
        }
        let event = match event {
            Some(event) => event,
            None => Event::from_parts(name.as_str(), early_data.unwrap_or(Value::Null)),
        };
        Ok(match fields.project(Record { event, pipe, extra }) {
            Some(record) => Visited::Record(record),
            None => Visited::Skipped,
        })
    }
}

/// Reads a [`Scalar`]; arrays and objects are stepped over unread unless `keep_extra`.
struct ScalarSeed {
    keep_extra: bool,
}

impl<'de> DeserializeSeed<'de> for ScalarSeed {
    type Value = Scalar<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(ScalarVisitor {
            keep_extra: self.keep_extra,
        })
    }
}

/// A string (borrowed when it has no escapes), `null`, or any other JSON value (an array or an
/// object `Ignored` when it is not kept).
enum Scalar<'de> {
    Text(Key<'de>),
    Null,
    Other(Value),
    Ignored,
}

struct ScalarVisitor {
    keep_extra: bool,
}

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Key::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Key::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Key::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other(Value::from(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar<'de>, A::Error> {
        let seq = SeqAccessDeserializer::new(seq);
        if self.keep_extra {
            <Value as Deserialize>::deserialize(seq).map(Scalar::Other)
        } else {
            IgnoredAny::deserialize(seq).map(|_| Scalar::Ignored)
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar<'de>, A::Error> {
        let map = MapAccessDeserializer::new(map);
        if self.keep_extra {
            <Value as Deserialize>::deserialize(map).map(Scalar::Other)
        } else {
            IgnoredAny::deserialize(map).map(|_| Scalar::Ignored)
        }
    }
}

/// Decodes the `data` field of a record whose event name is known, keeping `fields`.
struct PayloadSeed<'a> {
    name: &'a str,
    fields: Fields,
}

impl<'de> DeserializeSeed<'de> for PayloadSeed<'_> {
    type Value = Event;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Event, D::Error> {
        match EventName::parse(self.name.as_bytes()) {
            Some(EventName::Data) => match deserializer.deserialize_any(DataVisitor {
                fields: self.fields,
            })? {
                Either::Typed(payload) => Ok(Event::Data(payload)),
                Either::Other(value) => Ok(Event::from_parts(self.name, value)),
            },
            _ => {
                let value = <Value as Deserialize>::deserialize(deserializer)?;
                Ok(Event::from_parts(self.name, value))
            }
        }
    }
}

/// A value decoded into its typed form, or kept as JSON when it has another shape.
enum Either<T> {
    Typed(T),
    Other(Value),
}

/// Implements the non-object cases of a visitor that expects an object: each becomes
/// `Either::Other` with the JSON value the parser saw.
macro_rules! other_shapes {
    () => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Either::Other(
                serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
            ))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::String(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::String(v)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Either::Other(Value::Null))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            <Value as Deserialize>::deserialize(SeqAccessDeserializer::new(seq)).map(Either::Other)
        }
    };
}

/// The payload of a `data` event, keeping `fields`.
struct DataVisitor {
    fields: Fields,
}

impl<'de> Visitor<'de> for DataVisitor {
    type Value = Either<Box<DataPayload>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a data payload")
    }

    other_shapes!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Filled in its box: the payload is large, and moving it would cost a copy per record.
        let mut payload = Box::<DataPayload>::default();
        // Kept until the task is known: the fields decide at the end (`Fields::project`).
        let keep_extra = self.fields.may_want_payload_extra();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let field = DataKey::parse(key.as_str().as_bytes());
            match field {
                Some(key) if !self.fields.wants_data(key) => {
                    map.next_value::<IgnoredAny>()?;
                }
                None if !keep_extra => {
                    map.next_value::<IgnoredAny>()?;
                }
                Some(DataKey::Gpudata) => match map.next_value_seed(GpuDataSeed { keep_extra })? {
                    Either::Typed(samples) => payload.gpudata = Some(samples),
                    Either::Other(value) => payload.set(field, key.as_str(), value),
                },
                Some(DataKey::Cpudata) => {
                    match map.next_value_seed(SampleSeed::<CpuSample>::new(keep_extra))? {
                        Either::Typed(sample) => payload.cpudata = Some(sample),
                        Either::Other(value) => payload.set(field, key.as_str(), value),
                    }
                }
                _ => {
                    let value = map.next_value()?;
                    payload.set(field, key.as_str(), value);
                }
            }
        }
        Ok(Either::Typed(payload))
    }
}

/// `gpudata`: one sample per device id; keys outside the format's tables are kept when
/// `keep_extra`.
struct GpuDataSeed {
    keep_extra: bool,
}

impl<'de> DeserializeSeed<'de> for GpuDataSeed {
    type Value = Either<Vec<(String, GpuSample)>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(GpuDataVisitor {
            keep_extra: self.keep_extra,
        })
    }
}

struct GpuDataVisitor {
    keep_extra: bool,
}

impl<'de> Visitor<'de> for GpuDataVisitor {
    type Value = Either<Vec<(String, GpuSample)>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GPU samples by device")
    }

    other_shapes!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut samples = Vec::new();
        while let Some(id) = map.next_key::<String>()? {
            let sample = match map.next_value_seed(SampleSeed::<GpuSample>::new(self.keep_extra))? {
                Either::Typed(sample) => sample,
                Either::Other(value) => GpuSample::from_value(value),
            };
            samples.push((id, sample));
        }
        Ok(Either::Typed(samples))
    }
}

/// An object whose keys are filed one by one into typed fields (`gpudata` and `cpudata`
/// samples).
trait Sample: Default {
    /// Whether `key` has a typed field (the others go to `extra`).
    fn is_typed(key: Option<SampleKey>) -> bool;
    /// Files one key (see [`DataPayload::set`]).
    fn set(&mut self, key: &str, value: Value);
}

impl Sample for GpuSample {
    fn is_typed(key: Option<SampleKey>) -> bool {
        key.is_some()
    }
    fn set(&mut self, key: &str, value: Value) {
        GpuSample::set(self, key, value);
    }
}

impl Sample for CpuSample {
    fn is_typed(key: Option<SampleKey>) -> bool {
        matches!(key, Some(SampleKey::Memory | SampleKey::Load))
    }
    fn set(&mut self, key: &str, value: Value) {
        CpuSample::set(self, key, value);
    }
}

/// Decodes one [`Sample`], or keeps the value when it is not an object; keys without a typed
/// field are kept only when `keep_extra`.
struct SampleSeed<T> {
    keep_extra: bool,
    sample: std::marker::PhantomData<T>,
}

impl<T> SampleSeed<T> {
    fn new(keep_extra: bool) -> Self {
        SampleSeed {
            keep_extra,
            sample: std::marker::PhantomData,
        }
    }
}

impl<'de, T: Sample> DeserializeSeed<'de> for SampleSeed<T> {
    type Value = Either<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Sample> Visitor<'de> for SampleSeed<T> {
    type Value = Either<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a monitor sample")
    }

    other_shapes!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut sample = T::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if self.keep_extra || T::is_typed(SampleKey::parse(key.as_str().as_bytes())) {
                let value = map.next_value()?;
                sample.set(key.as_str(), value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Either::Typed(sample))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow path: a tree first, then the typed event.
    fn via_tree(text: &str) -> Option<Record> {
        let Value::Object(map) = serde_json::from_str::<Value>(text).ok()? else {
            return None;
        };
        crate::reader::record_from_map(map)
    }

    #[test]
    fn gives_the_same_records_as_the_tree_path() {
        let lines = [
            r#"{"event": "data", "data": {"rate": 12.5, "units": "items/s", "task": "train"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 17.5, "gpudata": {"0": {"memory": [1, 2.5], "load": 0.9, "temperature": 60, "power": 300.5, "odd": [1]}, "1": 3}}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"gpudata": [1, 2], "cpudata": {"memory": [1, 2], "load": 5}, "process": {"memory": [3]}}}"#,
            r#"{"event": "data", "data": {"loss": "Infinity", "progress": [1, 70], "rate": "fast", "task": 3}, "pipe": "data"}"#,
            r#"{"event": "data", "data": [1, 2], "pipe": "data"}"#,
            r#"{"event": "data", "data": null}"#,
            r#"{"data": {"rate": 1.0, "task": "train"}, "event": "data", "pipe": "data"}"#,
            r#"{"event": "line", "data": "step 1\n", "pipe": "stderr"}"#,
            r#"{"event": "config", "data": {"name": "x", "tag": ["x", "D0"]}, "pipe": null, "extra": {"a": 1}}"#,
            r#"{"event": "stop", "data": null, "pipe": "data"}"#,
            r#"{"event": "end", "data": {"return_code": 0, "time": 3.5}, "pipe": 7}"#,
            r#"{"event": "phase", "data": {"name": "init"}, "pipe": null}"#,
            r#"{"pipe": "data"}"#,
            r#"{"event": 3, "data": {}}"#,
        ];
        for line in lines {
            let want = via_tree(line).map_or(Visited::NotARecord, Visited::Record);
            assert_eq!(decode_record(line, Fields::ALL), want, "{line}");
        }
    }

    #[test]
    fn lines_that_are_not_single_objects_are_refused() {
        for line in [
            "[1, 2]",
            "3",
            r#"{"event": "data", "data": {}} {}"#,
            r#"{"event": "x""#,
        ] {
            assert_eq!(
                decode_record(line, Fields::ALL),
                Visited::NotARecord,
                "{line}"
            );
        }
    }
}
