//! `loss`: the training loss must not be NaN; an increase is a warning.

use indexmap::IndexMap;
use milabench_metrics::Event;

use super::group_by_bench;
use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct LossState {
    nan_count: u64,
    loss_count: u64,
    increased_count: u64,
    previous: Option<f64>,
}

/// Per process: how many losses after the first were seen, NaN, or not lower than the one
/// before. (The first loss of a process is never checked, as in the Python tool.)
#[derive(Debug, Default)]
pub struct LossLayer {
    states: IndexMap<String, LossState>,
    nan_total: u64,
}

impl LossLayer {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let Event::Data(data) = &entry.record.event else {
            return;
        };
        let state = self
            .states
            .entry(entry.tag.as_str().to_owned())
            .or_default();
        let Some(loss) = data.loss else { return };
        if let Some(previous) = state.previous.replace(loss) {
            let nan = u64::from(loss.is_nan());
            state.nan_count += nan;
            state.loss_count += 1;
            self.nan_total += nan;
            if loss >= previous {
                state.increased_count += 1;
            }
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        summary.section("Loss Tracking", |summary| {
            for (bench, states) in group_by_bench(&self.states) {
                summary.section(bench, |summary| {
                    let pick = |f: fn(&LossState) -> bool| -> Vec<&str> {
                        states
                            .iter()
                            .filter(|(_, s)| f(s))
                            .map(|(i, _)| *i)
                            .collect()
                    };
                    let lists = [
                        (pick(|s| s.loss_count == 0), "No loss was found"),
                        (pick(|s| s.nan_count > 0), "Loss was NaN"),
                        (pick(|s| s.increased_count > 0), "Loss increased"),
                    ];
                    for (tags, what) in lists {
                        if !tags.is_empty() {
                            summary.add(format!(
                                "* {} x {bench} {what} ({})",
                                tags.len(),
                                tags.join(", ")
                            ));
                        }
                    }
                });
            }
        });
        self.nan_total
    }
}
