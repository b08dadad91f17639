//! `usage`: GPUs must be busy: average load below the threshold is a failure, average memory use
//! below its threshold a warning.

use indexmap::{IndexMap, IndexSet};
use milabench_metrics::Event;
use serde_json::Value;

use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct DeviceUsage {
    load_sum: f64,
    mem_sum: f64,
    count: f64,
    max_load: f64,
    max_mem: f64,
}

#[derive(Debug, Default)]
struct TagUsage {
    devices: IndexMap<String, DeviceUsage>,
    load_threshold: f64,
    mem_threshold: f64,
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
        let Event::Data(data) = &entry.record.event else {
            return;
        };
        let state = self.tags.entry(entry.tag.as_str().to_owned()).or_default();
        state.load_threshold = threshold(entry.config, "gpu_load_threshold");
        state.mem_threshold = threshold(entry.config, "gpu_mem_threshold");
        let Some(gpus) = &data.gpudata else { return };
        for (device, sample) in gpus {
            self.devices.insert(device.clone());
            let [used, total] = sample.memory.unwrap_or([0.0, 1.0]);
            let load = sample.load.unwrap_or(0.0);
            let mem = used / total;
            let d = state.devices.entry(device.clone()).or_default();
            d.load_sum += load;
            d.mem_sum += mem;
            d.count += 1.0;
            d.max_load = d.max_load.max(load);
            d.max_mem = d.max_mem.max(mem);
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        let mut failed = 0;
        summary.section("GPU Usage Tracking", |summary| {
            for (tag, usage) in &self.tags {
                summary.section(tag.as_str(), |summary| {
                    for device in &self.devices {
                        let Some(d) = usage.devices.get(device) else {
                            continue;
                        };
                        let load = d.load_sum / d.count;
                        if load < usage.load_threshold {
                            summary.add(format!(
                                "* Device {device} loads is below threshold {load:5.2} < {:5.2} (max load: {:5.2})",
                                usage.load_threshold, d.max_load
                            ));
                            failed += 1;
                        }
                        let mem = d.mem_sum / d.count;
                        if mem < usage.mem_threshold {
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
