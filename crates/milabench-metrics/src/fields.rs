//! The parts of a `.data` line a reader asks for ([`Fields`]): the decoder skips every other part
//! unread, and gives records that hold exactly the parts asked for.

use std::ops::BitOr;

use serde_json::Map;

use crate::event::{DataPayload, Event, Record};
use crate::format::{DataKey, EventName, LOAD_TASK, REQUEST_TASK, RecordKey};

/// The parts of a `.data` line a reader asks for: events by name (each with its whole payload,
/// except `data`, whose fields are asked for one by one), the fields of `data` payloads, events
/// the format does not name, the `pipe` of records, and the keys outside the format's tables (the
/// `extra` maps, values of a field that do not have its shape included), or only those of the
/// `data` payloads of the load generator's tasks ([`Fields::SERVING_EXTRA`]).
///
/// A reader given these gives the records [`Fields::ALL`] gives, less every part not asked for:
/// records of events not asked for are left out, typed fields not asked for are absent (the
/// `pipe` too, without [`Fields::PIPE`]), and `extra` maps are empty without [`Fields::EXTRA`] (a
/// `data` payload's `process` sample and `gpu_energy` record, which are kept as read, are there
/// when [`DataKey::Process`] and [`DataKey::GpuEnergy`] are asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    /// One bit per [`EventName`], by position, and [`UNKNOWN_EVENT`] for the others.
    events: u32,
    /// One bit per [`DataKey`], by position.
    data: u32,
    pipe: bool,
    extra: bool,
    /// The `extra` maps of `data` payloads whose task is [`LOAD_TASK`] or [`REQUEST_TASK`].
    serving_extra: bool,
}

/// The bit of events the format does not name.
const UNKNOWN_EVENT: u32 = 1 << 31;

impl Fields {
    /// Nothing: every record is left out.
    pub const NONE: Fields = Fields {
        events: 0,
        data: 0,
        pipe: false,
        extra: false,
        serving_extra: false,
    };

    /// Every part of every line: records as written.
    pub const ALL: Fields = Fields {
        events: u32::MAX,
        data: u32::MAX,
        pipe: true,
        extra: true,
        serving_extra: true,
    };

    /// Events whose name the format does not know, with their payloads.
    pub const UNKNOWN_EVENTS: Fields = Fields {
        events: UNKNOWN_EVENT,
        ..Fields::NONE
    };

    /// The `pipe` of the records asked for (which channel carried them).
    pub const PIPE: Fields = Fields {
        pipe: true,
        ..Fields::NONE
    };

    /// The keys outside the format's tables, and values that do not have their field's shape,
    /// kept in the `extra` maps of the records asked for.
    pub const EXTRA: Fields = Fields {
        extra: true,
        ..Fields::NONE
    };

    /// The `task` of `data` payloads, and the `extra` maps (as with [`Fields::EXTRA`]) of those
    /// whose task is the load generator's ([`LOAD_TASK`]: a step's summary, [`REQUEST_TASK`]: a
    /// request), where its figures are. The payloads of every other task (monitor samples with
    /// keys outside the format's tables, such as `iodata`) are read without building theirs.
    pub const SERVING_EXTRA: Fields = Fields {
        serving_extra: true,
        ..Fields::data(DataKey::Task)
    };

    /// Event `name`, with its payload (for `data`: only the fields asked for with
    /// [`Fields::data`]).
    pub const fn event(name: EventName) -> Fields {
        Fields {
            events: 1 << name as u32,
            ..Fields::NONE
        }
    }

    /// Field `key` of `data` events (and `data` events).
    pub const fn data(key: DataKey) -> Fields {
        Fields {
            events: 1 << EventName::Data as u32,
            data: 1 << key as u32,
            ..Fields::NONE
        }
    }

    /// These fields and `other`.
    pub const fn with(self, other: Fields) -> Fields {
        Fields {
            events: self.events | other.events,
            data: self.data | other.data,
            pipe: self.pipe || other.pipe,
            extra: self.extra || other.extra,
            serving_extra: self.serving_extra || other.serving_extra,
        }
    }

    /// Whether events named `name` (`None`: a name the format does not know) are asked for.
    pub const fn wants_event(self, name: Option<EventName>) -> bool {
        let bit = match name {
            Some(name) => 1 << name as u32,
            None => UNKNOWN_EVENT,
        };
        self.events & bit != 0
    }

    /// Whether field `key` of `data` payloads is asked for.
    pub const fn wants_data(self, key: DataKey) -> bool {
        self.data & (1 << key as u32) != 0
    }

    /// Whether the `pipe` of records is asked for.
    pub const fn wants_pipe(self) -> bool {
        self.pipe
    }

    /// Whether the `extra` maps are asked for.
    pub const fn wants_extra(self) -> bool {
        self.extra
    }

    /// Whether the `extra` maps of a `data` payload whose task is `task` are asked for.
    pub fn wants_payload_extra(self, task: Option<&str>) -> bool {
        self.extra || (self.serving_extra && matches!(task, Some(LOAD_TASK | REQUEST_TASK)))
    }

    /// Whether the `extra` maps of some `data` payloads are asked for: a decoder that learns the
    /// task only at the end of the payload keeps them until then.
    pub(crate) const fn may_want_payload_extra(self) -> bool {
        self.extra || self.serving_extra
    }

    /// `record` reduced to these fields; `None` when its event is not asked for. The decoder's
    /// paths that do not skip what is not asked for on their own end here.
    pub(crate) fn project(self, mut record: Record) -> Option<Record> {
        if !self.wants_event(EventName::parse(record.event.name().as_bytes())) {
            return None;
        }
        if self == Fields::ALL {
            return Some(record);
        }
        if !self.pipe {
            // A value of another shape than a pipe's goes with the pipe.
            record.pipe = None;
            record
                .extra
                .retain(|key, _| RecordKey::parse(key.as_bytes()) != Some(RecordKey::Pipe));
        }
        if !self.extra {
            record.extra.clear();
        }
        match &mut record.event {
            Event::Data(payload) => self.project_data(payload),
            Event::Start(start) => self.project_extra(&mut start.extra),
            Event::End(end) => self.project_extra(&mut end.extra),
            Event::Error(error) | Event::OverseerError(error) => {
                self.project_extra(&mut error.extra);
            }
            _ => {}
        }
        Some(record)
    }

    fn project_extra(self, extra: &mut Map<String, serde_json::Value>) {
        if !self.extra {
            extra.clear();
        }
    }

    /// A `data` payload reduced to the fields asked for: a value under a field's key in `extra`
    /// (kept as read, or of another shape than the field's) goes with that field.
    fn project_data(self, d: &mut DataPayload) {
        let DataPayload {
            task,
            time,
            rate,
            units,
            loss,
            progress,
            gpudata,
            cpudata,
            extra,
        } = d;
        let keep_extra = self.wants_payload_extra(task.as_deref());
        let wants = |key| self.wants_data(key);
        if !wants(DataKey::Task) {
            *task = None;
        }
        if !wants(DataKey::Time) {
            *time = None;
        }
        if !wants(DataKey::Rate) {
            *rate = None;
        }
        if !wants(DataKey::Units) {
            *units = None;
        }
        if !wants(DataKey::Loss) {
            *loss = None;
        }
        if !wants(DataKey::Progress) {
            *progress = None;
        }
        if !wants(DataKey::Gpudata) {
            *gpudata = None;
        }
        if !wants(DataKey::Cpudata) {
            *cpudata = None;
        }
        if !keep_extra {
            for (_, sample) in gpudata.iter_mut().flatten() {
                sample.extra.clear();
            }
            if let Some(sample) = cpudata {
                sample.extra.clear();
            }
        }
        extra.retain(|key, _| match DataKey::parse(key.as_bytes()) {
            Some(key @ (DataKey::Process | DataKey::GpuEnergy)) => self.wants_data(key),
            Some(key) => keep_extra && self.wants_data(key),
            None => keep_extra,
        });
    }
}

impl BitOr for Fields {
    type Output = Fields;

    fn bitor(self, other: Fields) -> Fields {
        self.with(other)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::GpuSample;

    #[test]
    fn every_name_and_key_has_its_own_bit() {
        for &name in EventName::ALL {
            let fields = Fields::event(name);
            for &other in EventName::ALL {
                assert_eq!(fields.wants_event(Some(other)), name == other);
            }
            assert!(!fields.wants_event(None));
            assert!(Fields::ALL.wants_event(Some(name)));
        }
        for &key in DataKey::ALL {
            let fields = Fields::data(key);
            assert!(fields.wants_event(Some(EventName::Data)));
            for &other in DataKey::ALL {
                assert_eq!(fields.wants_data(other), key == other);
            }
        }
        assert!(Fields::UNKNOWN_EVENTS.wants_event(None));
        assert!(Fields::ALL.wants_pipe() && Fields::PIPE.wants_pipe());
        assert!(!Fields::data(DataKey::Rate).wants_pipe());
        assert!(Fields::ALL.wants_extra() && !Fields::NONE.wants_extra());
        assert_eq!(
            Fields::event(EventName::Stop) | Fields::EXTRA,
            Fields::event(EventName::Stop).with(Fields::EXTRA)
        );
    }

    #[test]
    fn a_record_keeps_only_what_is_asked_for() {
        let data = Event::from_parts(
            "data",
            json!({"task": "train", "rate": 2.5, "loss": "x", "units": "items/s", "odd": 1,
                   "process": {"memory": [1, 2]}, "gpudata": {"0": {"load": 0.5, "fan": 3}}}),
        );
        let mut record = Record::new(data, None);
        record.extra.insert("host".into(), json!("a"));
        let fields = Fields::data(DataKey::Rate) | Fields::data(DataKey::Gpudata);
        let Some(kept) = fields.project(record.clone()) else {
            panic!("data is asked for")
        };
        assert!(kept.extra.is_empty());
        let Event::Data(d) = kept.event else { panic!() };
        let gpu = GpuSample {
            load: Some(0.5),
            ..GpuSample::default()
        };
        assert_eq!(
            *d,
            DataPayload {
                rate: Some(2.5),
                gpudata: Some(vec![("0".into(), gpu)]),
                ..DataPayload::default()
            }
        );
        // With the extra keys: those of fields asked for, and the unknown ones.
        let fields = Fields::data(DataKey::Loss) | Fields::data(DataKey::Process) | Fields::EXTRA;
        let Event::Data(d) = fields.project(record.clone()).unwrap().event else {
            panic!()
        };
        let keys: Vec<&str> = d.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["loss", "odd", "process"]);
        assert_eq!(Fields::event(EventName::Stop).project(record.clone()), None);
        assert_eq!(Fields::ALL.project(record.clone()), Some(record));
        let other = Record::new(Event::from_parts("custom", json!(1)), None);
        assert_eq!(
            Fields::ALL.with(Fields::NONE).project(other.clone()),
            Some(other.clone())
        );
        assert_eq!(Fields::event(EventName::Data).project(other), None);
    }

    /// `gpu_energy` is kept as read, as `process` is: asking for it is enough, without the
    /// extra keys. The load generator's extra keys come only with its own tasks.
    #[test]
    fn kept_as_read_fields_and_serving_extras_come_without_every_extra_key() {
        let payload = |task: &str| {
            Event::from_parts(
                "data",
                json!({"task": task, "gpu_energy": {"0": {"joules": 1.5, "seconds": 2.0}},
                       "step": 3}),
            )
        };
        let extra_keys = |fields: Fields, task: &str| {
            let Some(Record {
                event: Event::Data(d),
                ..
            }) = fields.project(Record::new(payload(task), None))
            else {
                panic!("data is asked for")
            };
            d.extra.keys().cloned().collect::<Vec<_>>()
        };
        let energy = Fields::data(DataKey::GpuEnergy);
        assert_eq!(extra_keys(energy, "main"), ["gpu_energy"]);
        let serving = energy | Fields::SERVING_EXTRA;
        assert_eq!(extra_keys(serving, "main"), ["gpu_energy"]);
        for task in [LOAD_TASK, REQUEST_TASK] {
            assert_eq!(extra_keys(serving, task), ["gpu_energy", "step"]);
        }
        assert!(!Fields::SERVING_EXTRA.wants_extra());
        assert!(Fields::SERVING_EXTRA.wants_data(DataKey::Task));
        assert!(Fields::ALL.wants_payload_extra(Some("main")));
    }
}
