//! The layers themselves, one module each.

mod ensure_rate;
mod error;
mod loss;
mod planning;
mod usage;
mod version;

use indexmap::IndexMap;

use crate::summary::Summary;
use crate::{Entry, LayerName, ValidationContext};

/// One validation layer with its state.
#[derive(Debug)]
pub enum Layer {
    /// See [`LayerName::EnsureRate`].
    EnsureRate(ensure_rate::EnsureRate),
    /// See [`LayerName::Error`].
    Error(error::ErrorLayer),
    /// See [`LayerName::Loss`].
    Loss(loss::LossLayer),
    /// See [`LayerName::Planning`].
    Planning(planning::PlanningLayer),
    /// See [`LayerName::Usage`].
    Usage(usage::UsageLayer),
    /// See [`LayerName::Version`].
    Version(version::VersionLayer),
}

impl Layer {
    /// A fresh layer.
    pub fn new(name: LayerName, context: &ValidationContext) -> Layer {
        match name {
            LayerName::EnsureRate => Layer::EnsureRate(Default::default()),
            LayerName::Error => Layer::Error(Default::default()),
            LayerName::Loss => Layer::Loss(Default::default()),
            LayerName::Planning => Layer::Planning(planning::PlanningLayer::new(context.gpu_count)),
            LayerName::Usage => Layer::Usage(Default::default()),
            LayerName::Version => Layer::Version(Default::default()),
        }
    }

    /// Which layer this is.
    pub fn name(&self) -> LayerName {
        match self {
            Layer::EnsureRate(_) => LayerName::EnsureRate,
            Layer::Error(_) => LayerName::Error,
            Layer::Loss(_) => LayerName::Loss,
            Layer::Planning(_) => LayerName::Planning,
            Layer::Usage(_) => LayerName::Usage,
            Layer::Version(_) => LayerName::Version,
        }
    }

    /// Takes one entry into account.
    pub fn observe(&mut self, entry: Entry<'_>) {
        match self {
            Layer::EnsureRate(l) => l.observe(entry),
            Layer::Error(l) => l.observe(entry),
            Layer::Loss(l) => l.observe(entry),
            Layer::Planning(l) => l.observe(entry),
            Layer::Usage(l) => l.observe(entry),
            Layer::Version(l) => l.observe(entry),
        }
    }

    /// Writes the layer's sections and returns its problem count.
    pub fn report(&self, summary: &mut Summary) -> u64 {
        match self {
            Layer::EnsureRate(l) => l.report(summary),
            Layer::Error(l) => l.report(summary),
            Layer::Loss(l) => l.report(summary),
            Layer::Planning(l) => l.report(summary),
            Layer::Usage(l) => l.report(summary),
            Layer::Version(l) => l.report(summary),
        }
    }
}

/// Groups per-tag states by everything before the tag's last component (`bench.0.R1` goes to
/// `bench.0` with index `R1`), keeping first-seen order.
fn group_by_bench<'a, T>(
    states: impl IntoIterator<Item = (&'a String, &'a T)>,
) -> IndexMap<&'a str, Vec<(&'a str, &'a T)>>
where
    T: 'a,
{
    let mut grouped: IndexMap<&str, Vec<(&str, &T)>> = IndexMap::new();
    for (tag, state) in states {
        let (group, index) = match tag.rsplit_once('.') {
            Some((g, i)) if !g.is_empty() => (g, i),
            _ => (tag.as_str(), ""),
        };
        grouped.entry(group).or_default().push((index, state));
    }
    grouped
}
