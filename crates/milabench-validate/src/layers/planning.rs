//! `planning`: the processes that reported a loss must match the plan (njobs `n`, or one per
//! GPU), and every process of a benchmark must share the same plan.

use indexmap::{IndexMap, IndexSet};
use milabench_metrics::Event;
use serde_json::Value;

use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct PlanState {
    errors: u64,
    method: String,
    njobs: i64,
    with_loss: IndexSet<String>,
}

/// Per benchmark name: its plan and which processes reported a loss.
#[derive(Debug)]
pub struct PlanningLayer {
    gpus: usize,
    plans: IndexMap<String, PlanState>,
}

impl PlanningLayer {
    pub(super) fn new(gpus: usize) -> PlanningLayer {
        PlanningLayer {
            gpus,
            plans: IndexMap::new(),
        }
    }

    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let Event::Data(data) = &entry.record.event else {
            return;
        };
        let plan = entry.config.get("plan");
        let method = plan
            .and_then(|p| p.get("method"))
            .and_then(Value::as_str)
            .unwrap_or("per_gpu")
            .replace('-', "_");
        let njobs = plan
            .and_then(|p| p.get("n"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let bench = entry.tag.bench().to_owned();
        let state = self.plans.entry(bench).or_insert_with(|| PlanState {
            method: method.clone(),
            njobs,
            ..PlanState::default()
        });
        state.errors += u64::from(state.method != method);
        state.errors += u64::from(state.njobs != njobs);
        state.errors += u64::from(method != "per_gpu" && method != "njobs");
        if data.loss.is_some() {
            state.with_loss.insert(entry.tag.as_str().to_owned());
        }
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        let mut failed = 0;
        if self.plans.is_empty() {
            summary.add("* no data received");
            failed += 1;
        }
        for (bench, plan) in &self.plans {
            summary.section(bench.as_str(), |summary| {
                let count = plan.with_loss.len();
                if count == 0 {
                    summary.add("* no data received");
                    failed += 1;
                }
                if plan.method == "njobs" && i64::try_from(count).ok() != Some(plan.njobs) {
                    summary.add(format!(
                        "* Wrong number of configs; expected (njobs: {}) but got (config: {count})",
                        plan.njobs
                    ));
                    failed += 1;
                }
                // Without GPUs, a per-GPU plan runs one process, on the CPU.
                let per_gpu = self.gpus.max(1);
                if plan.method == "per_gpu" && count != per_gpu {
                    summary.add(format!(
                        "* Wrong number of configs; expected (ngpus: {}) but got (config: {count})",
                        per_gpu
                    ));
                    failed += 1;
                }
                if plan.errors > 0 {
                    summary.add("* Config is inconsistent");
                    failed += 1;
                }
            });
        }
        failed
    }
}
