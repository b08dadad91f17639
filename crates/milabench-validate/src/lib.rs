//! Validation layers: judge a milabench event stream (live or replayed from `.data` files) and
//! say what went wrong, with the verdicts, messages and exit-code contributions of the Python
//! tool's layers (`error`, `ensure_rate`, `loss`, `planning`, `usage`, `version`).
//!
//! Each layer sees every entry of every process (except processes tagged `nolog`), keeps a small
//! state per process tag, and at the end writes its sections into one shared [`Summary`] and
//! returns a count of problems; the run's validation code is the bitwise OR of those counts.

mod layers;
mod replay;
mod summary;

use std::fmt;
use std::str::FromStr;

use milabench_metrics::{Record, Tag};
use serde_json::Value;

pub use layers::Layer;
pub use replay::{Replay, ReplayEntry, ReplayError, replay_entries};
pub use summary::Summary;

/// One entry as a layer sees it: which process sent it, that process's configuration, and the
/// record.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The process tag (`bench.D0`).
    pub tag: &'a Tag,
    /// The process's resolved configuration (its `config` event), or `null` if none was seen.
    pub config: &'a Value,
    /// The record.
    pub record: &'a Record,
}

/// The name of a validation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LayerName {
    /// Every process must report a training rate, and every rate must be a measurement (a number
    /// from 0 to 1e12 items/s).
    EnsureRate,
    /// Failed processes, with their tracebacks grouped by exception.
    Error,
    /// The loss must not be NaN (an increasing loss is only a warning).
    Loss,
    /// The number of processes must match the plan.
    Planning,
    /// GPUs must be busy (load and memory above thresholds).
    Usage,
    /// Machine metadata and the milabench version must be recorded.
    Version,
}

impl LayerName {
    /// Every layer, in report order.
    pub const ALL: [LayerName; 6] = [
        LayerName::EnsureRate,
        LayerName::Error,
        LayerName::Loss,
        LayerName::Planning,
        LayerName::Usage,
        LayerName::Version,
    ];

    /// The layers that always run: `error`, `ensure_rate`, `version`.
    pub const DEFAULT: [LayerName; 3] =
        [LayerName::EnsureRate, LayerName::Error, LayerName::Version];

    /// The layer's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            LayerName::EnsureRate => "ensure_rate",
            LayerName::Error => "error",
            LayerName::Loss => "loss",
            LayerName::Planning => "planning",
            LayerName::Usage => "usage",
            LayerName::Version => "version",
        }
    }
}

impl fmt::Display for LayerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A layer name that does not exist.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "validation layer `{0}` does not exist; known layers: ensure_rate, error, loss, planning, usage, version (or `all`)"
)]
pub struct UnknownLayer(pub String);

impl LayerName {
    /// The layers a run or replay uses: [`LayerName::DEFAULT`] and those named in `extra`
    /// (layer names, or `all`).
    pub fn selection<S: AsRef<str>>(extra: &[S]) -> Result<Vec<LayerName>, UnknownLayer> {
        let mut names = LayerName::DEFAULT.to_vec();
        for name in extra {
            match name.as_ref() {
                "all" => names.extend(LayerName::ALL),
                other => names.push(other.parse()?),
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
}

impl FromStr for LayerName {
    type Err = UnknownLayer;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LayerName::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownLayer(s.to_owned()))
    }
}

/// Facts about the machine some layers need.
#[derive(Debug, Clone, Default)]
pub struct ValidationContext {
    /// Number of GPUs the run could use (the `planning` layer expects one process per GPU for
    /// `per_gpu` plans).
    pub gpu_count: usize,
}

/// The outcome of one layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerVerdict {
    /// Which layer.
    pub layer: LayerName,
    /// How many problems it counted (0: satisfied).
    pub code: u64,
}

/// The outcome of a validation: the text report and each layer's verdict.
#[derive(Debug, Clone)]
pub struct ValidationReport {
    /// The rendered report (empty if no layer had anything to say).
    pub text: String,
    /// Per layer, in report order.
    pub verdicts: Vec<LayerVerdict>,
}

impl ValidationReport {
    /// The bitwise OR of every layer's count, as the Python tool computes its exit status.
    pub fn combined_code(&self) -> u64 {
        self.verdicts.iter().fold(0, |acc, v| acc | v.code)
    }

    /// Whether every layer was satisfied.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.code == 0)
    }
}

/// A set of layers fed with entries, then asked for their report.
#[derive(Debug)]
pub struct Validation {
    layers: Vec<Layer>,
    /// Live streams by name: the tag and configuration of their latest `config` event.
    streams: std::collections::HashMap<String, (Tag, std::sync::Arc<Value>)>,
}

impl Validation {
    /// The given layers (duplicates removed, sorted in report order).
    pub fn new(names: &[LayerName], context: &ValidationContext) -> Validation {
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        Validation {
            layers: names
                .into_iter()
                .map(|name| Layer::new(name, context))
                .collect(),
            streams: std::collections::HashMap::new(),
        }
    }

    /// Feeds one record of the live event stream `stream` (a `.data` file as it is written),
    /// as [`replay_entries`] would read it back: a `config` event names the process of the
    /// records after it and is not itself observed; records before it are dropped.
    pub fn observe_stream(&mut self, stream: &str, record: &Record) {
        if let milabench_metrics::Event::Config(config) = &record.event {
            let tag = replay::config_tag(config);
            self.streams.insert(
                stream.to_string(),
                (tag, std::sync::Arc::new(config.clone())),
            );
            return;
        }
        let Some((tag, config)) = self.streams.get(stream) else {
            return;
        };
        let (tag, config) = (tag.clone(), config.clone());
        self.observe(Entry {
            tag: &tag,
            config: &config,
            record,
        });
    }

    /// Feeds one entry to every layer; entries of `nolog` processes are ignored.
    pub fn observe(&mut self, entry: Entry<'_>) {
        if entry.tag.is_nolog() {
            return;
        }
        for layer in &mut self.layers {
            layer.observe(entry);
        }
    }

    /// Feeds every replayed entry, in order (see [`replay_entries`]).
    pub fn observe_replay(&mut self, entries: &[ReplayEntry]) {
        for e in entries {
            self.observe(Entry {
                tag: &e.tag,
                config: &e.config,
                record: &e.record,
            });
        }
    }

    /// Every layer writes its sections; returns the text and the verdicts.
    pub fn finish(&self) -> ValidationReport {
        let mut summary = Summary::new();
        let verdicts = self
            .layers
            .iter()
            .map(|layer| LayerVerdict {
                layer: layer.name(),
                code: layer.report(&mut summary),
            })
            .collect();
        ValidationReport {
            text: summary.render(),
            verdicts,
        }
    }
}
