//! `ensure_rate`: every process must report a training rate, and every rate must be a
//! measurement (a number from 0 to [`MAX_RATE`]).

use indexmap::IndexMap;
use milabench_metrics::{Event, MAX_RATE, RateFault};

use super::group_by_bench;
use crate::Entry;
use crate::summary::Summary;

/// The rates one process reported.
#[derive(Debug, Default)]
struct ProcessRates {
    /// Sum of its measured rates.
    sum: f64,
    /// How many rates were not measurements, and the first of them.
    faults: Option<(usize, RateFault)>,
}

/// Sum of the `rate` values of each process (a sum, as in the Python tool: a "few" rate means a
/// small sum), the rates that are not measurements, and the number of processes that ended
/// with no rate or with a rate that is not a measurement.
#[derive(Debug, Default)]
pub struct EnsureRate {
    rates: IndexMap<String, ProcessRates>,
    errors: u64,
}

impl EnsureRate {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let tag = entry.tag.as_str();
        match &entry.record.event {
            Event::Start(_) => {
                self.rates.entry(tag.to_owned()).or_default();
            }
            Event::Data(data) => {
                let process = self.rates.entry(tag.to_owned()).or_default();
                if let Some(rate) = data.rate {
                    match RateFault::of(rate) {
                        None => process.sum += rate,
                        Some(fault) => process.faults.get_or_insert((0, fault)).0 += 1,
                    }
                }
            }
            Event::End(_) => {
                let process = self.rates.entry(tag.to_owned()).or_default();
                if process.sum <= 0.0 || process.faults.is_some() {
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
                    let mut faulty = Vec::new();
                    for (index, process) in rates {
                        if process.sum == 0.0 {
                            none.push(index);
                        } else if process.sum < 30.0 {
                            low.push(index);
                        }
                        if let Some((count, first)) = process.faults {
                            faulty.push(format!("{index}: {count}, first {first}"));
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
                    if !faulty.is_empty() {
                        summary.add(format!(
                            "* {} x rates that are not measurements ({}); a rate must be a number from 0 to {MAX_RATE:e} items/s",
                            faulty.len(),
                            faulty.join("; ")
                        ));
                    }
                });
            }
        });
        self.errors
    }
}

#[cfg(test)]
mod tests {
    use milabench_metrics::{DataPayload, EndInfo, Record, ReturnCode, Tag};
    use serde_json::Value;

    use super::*;
    use crate::{LayerName, Validation, ValidationContext};

    fn validate(rates: &[f64]) -> (String, u64) {
        let tag = Tag::new("bench.D0");
        let mut events = vec![Event::Start(Box::default())];
        events.extend(rates.iter().map(|&rate| {
            Event::Data(Box::new(DataPayload {
                rate: Some(rate),
                ..DataPayload::default()
            }))
        }));
        events.push(Event::End(Box::new(EndInfo {
            command: None,
            time: None,
            return_code: ReturnCode::Code(0),
            extra: serde_json::Map::new(),
        })));
        let mut validation =
            Validation::new(&[LayerName::EnsureRate], &ValidationContext::default());
        for event in events {
            validation.observe(crate::Entry {
                tag: &tag,
                config: &Value::Null,
                record: &Record::new(event, None),
            });
        }
        let report = validation.finish();
        let code = report.combined_code();
        (report.text, code)
    }

    #[test]
    fn rates_that_are_not_measurements_are_errors_with_their_reason() {
        assert_eq!(validate(&[100.0, 120.0]), (String::new(), 0));
        for (rates, said) in [
            (&[100.0, f64::NAN][..], "D0: 1, first NaN"),
            (&[f64::INFINITY, 100.0, 1e308], "D0: 2, first infinite"),
            (&[1e308, 100.0], "D0: 1, first 1e308 (above 1e12 items/s)"),
            (&[-5.0, 100.0], "D0: 1, first -5 (negative)"),
        ] {
            let (text, code) = validate(rates);
            assert_eq!(code, 1, "{rates:?}");
            assert!(
                text.contains(&format!("* 1 x rates that are not measurements ({said}); a rate must be a number from 0 to 1e12 items/s")),
                "{rates:?}: {text}"
            );
        }
    }
}
