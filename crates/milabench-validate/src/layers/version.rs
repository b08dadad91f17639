//! `version`: machine metadata and the milabench version must be recorded.

use indexmap::IndexMap;
use milabench_metrics::Event;
use serde_json::Value;

use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct VersionState {
    has_meta: bool,
    has_version: bool,
}

/// Per process that sent data or metadata: was there a `meta` event, and did it name a
/// milabench version?
#[derive(Debug, Default)]
pub struct VersionLayer {
    states: IndexMap<String, VersionState>,
}

impl VersionLayer {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        match &entry.record.event {
            Event::Data(_) => {
                self.states
                    .entry(entry.tag.as_str().to_owned())
                    .or_default();
            }
            Event::Meta(meta) => {
                let state = self
                    .states
                    .entry(entry.tag.as_str().to_owned())
                    .or_default();
                state.has_meta = true;
                let tag = meta
                    .get("milabench")
                    .and_then(|m| m.get("tag"))
                    .and_then(Value::as_str);
                state.has_version = tag.is_some_and(|t| t != "<tag>");
            }
            _ => {}
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        let mut fatal = 0;
        for (tag, state) in &self.states {
            summary.section(tag.as_str(), |summary| {
                if !state.has_meta {
                    summary.add("* no metadata was received");
                    fatal += 1;
                }
                if !state.has_version {
                    summary.add("* no milabench version was saved");
                }
            });
        }
        fatal
    }
}
