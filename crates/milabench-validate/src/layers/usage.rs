//! `usage`: GPUs must be busy: average load below the threshold is a failure, average memory use
//! below its threshold a warning.
//!
//! Beyond the Python layer: processes of a CPU-only machine (config `arch: cpu`, or a `meta`
//! without accelerators) are said to be out of the layer's reach instead of passing silently,
//! and device entries that carry no reading (our sampler's `{"error": ...}` for a GPU that could
//! not be read) are counted apart rather than as idle samples. A device whose samples carry
//! memory but never a load (NVML reports no utilisation for MIG instances) is said to be
//! unchecked for load rather than failed as idle, and each average is over the samples that
//! carry its figure.

use indexmap::{IndexMap, IndexSet};
use milabench_metrics::Event;
use serde_json::Value;

use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct DeviceUsage {
    load_sum: f64,
    mem_sum: f64,
    /// Samples that carried a load.
    load_count: f64,
    /// Samples that carried memory figures.
    mem_count: f64,
    max_load: f64,
    max_mem: f64,
}

#[derive(Debug, Default)]
struct TagUsage {
    devices: IndexMap<String, DeviceUsage>,
    /// Per device, samples without any reading.
    unreadable: IndexMap<String, u64>,
    load_threshold: f64,
    mem_threshold: f64,
    cpu_only: bool,
}

/// Whether a `config` or `meta` payload says the machine has no accelerator.
fn says_cpu_only(config: &Value, meta: Option<&Value>) -> bool {
    if config.get("arch").and_then(Value::as_str) == Some("cpu") {
        return true;
    }
    let Some(acc) = meta.and_then(|m| m.get("accelerators")) else {
        return false;
    };
    acc.get("arch").and_then(Value::as_str) == Some("cpu")
        || acc
            .get("gpus")
            .and_then(Value::as_object)
            .is_some_and(|g| g.is_empty())
}

/// Per process and GPU: sums and maxima of load and memory use.
#[derive(Debug, Default)]
pub struct UsageLayer {
    tags: IndexMap<String, TagUsage>,
    devices: IndexSet<String>,
}

fn threshold(config: &Value, key: &str) -> f64 {
    config
        .get("validation")
        .and_then(|v| v.get("usage"))
        .and_then(|u| u.get(key))
        .and_then(Value::as_f64)
        .unwrap_or(0.5)
}

impl UsageLayer {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let data = match &entry.record.event {
            Event::Data(data) => data,
            Event::Meta(meta) => {
                if says_cpu_only(entry.config, Some(meta)) {
                    let state = self.tags.entry(entry.tag.as_str().to_owned()).or_default();
                    state.cpu_only = true;
                }
                return;
            }
            _ => return,
        };
        let state = self.tags.entry(entry.tag.as_str().to_owned()).or_default();
        state.load_threshold = threshold(entry.config, "gpu_load_threshold");
        state.mem_threshold = threshold(entry.config, "gpu_mem_threshold");
        state.cpu_only |= says_cpu_only(entry.config, None);
        let Some(gpus) = &data.gpudata else { return };
        for (device, sample) in gpus {
            if sample.memory.is_none() && sample.load.is_none() {
                *state.unreadable.entry(device.clone()).or_default() += 1;
                continue;
            }
            self.devices.insert(device.clone());
            let d = state.devices.entry(device.clone()).or_default();
            if let Some(load) = sample.load {
                d.load_sum += load;
                d.load_count += 1.0;
                d.max_load = d.max_load.max(load);
            }
            if let Some([used, total]) = sample.memory {
                let mem = used / total;
                d.mem_sum += mem;
                d.mem_count += 1.0;
                d.max_mem = d.max_mem.max(mem);
            }
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        let mut failed = 0;
        summary.section("GPU Usage Tracking", |summary| {
            let cpu_only: Vec<&str> = self
                .tags
                .iter()
                .filter(|(_, u)| u.cpu_only && u.devices.is_empty())
                .map(|(tag, _)| tag.as_str())
                .collect();
            if !cpu_only.is_empty() {
                summary.add(format!(
                    "* does not apply to {} CPU-only process(es) ({}): there is no GPU to check",
                    cpu_only.len(),
                    cpu_only.join(", ")
                ));
            }
            for (tag, usage) in &self.tags {
                summary.section(tag.as_str(), |summary| {
                    for (device, n) in &usage.unreadable {
                        summary.add(format!(
                            "* Device {device} could not be read in {n} sample(s) (see the run's telemetry messages)"
                        ));
                    }
                    for device in &self.devices {
                        let Some(d) = usage.devices.get(device) else {
                            continue;
                        };
                        if d.load_count == 0.0 {
                            summary.add(format!(
                                "* Device {device} reports no load (NVML gives none for MIG instances): its load is not checked"
                            ));
                        }
                        let load = d.load_sum / d.load_count;
                        if d.load_count > 0.0 && load < usage.load_threshold {
                            summary.add(format!(
                                "* Device {device} loads is below threshold {load:5.2} < {:5.2} (max load: {:5.2})",
                                usage.load_threshold, d.max_load
                            ));
                            failed += 1;
                        }
                        let mem = d.mem_sum / d.mem_count;
                        if d.mem_count > 0.0 && mem < usage.mem_threshold {
                            summary.add(format!(
                                "* Device {device} used memory is below threshold {mem:5.2} < {:5.2} (max use: {:5.2})",
                                usage.mem_threshold, d.max_mem
                            ));
                        }
                    }
                });
            }
        });
        failed
    }
}

#[cfg(test)]
mod tests {
    use milabench_metrics::{Event, Record, Tag};
    use serde_json::{Value, json};

    use crate::{Entry, LayerName, Validation, ValidationContext};

    fn validate(tag: &str, config: &Value, events: Vec<Event>) -> (String, u64) {
        let tag = Tag::new(tag);
        let mut v = Validation::new(&[LayerName::Usage], &ValidationContext::default());
        for event in events {
            let record = Record::new(event, None);
            v.observe(Entry {
                tag: &tag,
                config,
                record: &record,
            });
        }
        let report = v.finish();
        let code = report.combined_code();
        (report.text, code)
    }

    fn data(v: Value) -> Event {
        Event::from_parts("data", v)
    }

    #[test]
    fn cpu_only_runs_are_out_of_reach() {
        let cpu = json!({"arch": "cpu"});
        let (text, code) = validate(
            "bench.0",
            &cpu,
            vec![data(json!({"task": "main", "cpudata": {"load": 50.0}}))],
        );
        assert_eq!(code, 0);
        assert!(
            text.contains("* does not apply to 1 CPU-only process(es) (bench.0)"),
            "{text}"
        );
        // A meta without accelerators says the same, whatever the config's arch.
        let meta = Event::Meta(json!({"accelerators": {"arch": "cpu", "gpus": {}}}));
        let (text, code) = validate("bench.0", &json!({"arch": "cuda"}), vec![meta]);
        assert_eq!(code, 0);
        assert!(text.contains("does not apply"), "{text}");
    }

    #[test]
    fn idle_gpus_fail_and_unreadable_samples_are_apart() {
        let config = json!({"arch": "cuda"});
        let idle =
            json!({"task": "main", "gpudata": {"0": {"memory": [10.0, 80000.0], "load": 0.0}}});
        let lost = json!({"task": "main", "gpudata": {"1": {"error": "GPU 1 is lost"}}});
        let (text, code) = validate("bench.D0", &config, vec![data(idle), data(lost)]);
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("* Device 0 loads is below threshold"),
            "{text}"
        );
        assert!(
            text.contains("* Device 1 could not be read in 1 sample(s)"),
            "{text}"
        );
        assert!(!text.contains("Device 1 loads"), "{text}");
    }

    #[test]
    fn a_gpu_without_loads_is_not_failed_as_idle() {
        let config = json!({"arch": "cuda"});
        let mig = json!({"task": "main", "gpudata": {"0": {"memory": [60000.0, 80000.0],
                                                             "power": 300.0}}});
        let (text, code) = validate("bench.D0", &config, vec![data(mig.clone()), data(mig)]);
        assert_eq!(code, 0, "{text}");
        assert!(
            text.contains("* Device 0 reports no load (NVML gives none for MIG instances)"),
            "{text}"
        );
        assert!(!text.contains("below threshold"), "{text}");
    }
}
