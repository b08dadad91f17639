//! `ensure_rate`: every process must report a training rate.

use indexmap::IndexMap;
use milabench_metrics::Event;

use super::group_by_bench;
use crate::Entry;
use crate::summary::Summary;

/// Sum of the `rate` values of each process (a sum, as in the Python tool: a "few" rate means a
/// small sum), and the number of processes that ended with none.
#[derive(Debug, Default)]
pub struct EnsureRate {
    rates: IndexMap<String, f64>,
    errors: u64,
}

impl EnsureRate {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let tag = entry.tag.as_str();
        match &entry.record.event {
            Event::Start(_) => {
                self.rates.entry(tag.to_owned()).or_insert(0.0);
            }
            Event::Data(data) => {
                let sum = self.rates.entry(tag.to_owned()).or_insert(0.0);
                *sum += data.rate.unwrap_or(0.0);
            }
            Event::End(_) => {
                let sum = *self.rates.entry(tag.to_owned()).or_insert(0.0);
                if sum <= 0.0 || sum.is_nan() {
                    self.errors += 1;
                }
            }
            _ => {}
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        summary.section("Metric Collection", |summary| {
            for (bench, rates) in group_by_bench(&self.rates) {
                summary.section(bench, |summary| {
                    let mut low = Vec::new();
                    let mut none = Vec::new();
                    for (index, &rate) in rates {
                        if rate == 0.0 {
                            none.push(index);
                        } else if rate < 30.0 {
                            low.push(index);
                        }
                    }
                    if !low.is_empty() {
                        summary.add(format!(
                            "* {} x Few training rate retrieved ({})",
                            low.len(),
                            low.join(", ")
                        ));
                    }
                    if !none.is_empty() {
                        summary.add(format!(
                            "* {} x no training rate retrieved ({})",
                            none.len(),
                            none.join(", ")
                        ));
                    }
                });
            }
        });
        self.errors
    }
}
