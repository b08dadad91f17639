//! Statistics of the measured times: median and p90 per id and pass.

use serde::Serialize;

use super::runner::{Outcome, RunRecord};
use milabench_stats::quantile;

/// The summary of one pass of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassSummary {
    /// Measured iterations.
    pub n: usize,
    /// Median time, ms.
    pub median_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
}

impl PassSummary {
    fn of(times: &[f64]) -> Option<PassSummary> {
        Some(PassSummary {
            n: times.len(),
            median_ms: quantile(times, 0.5)?,
            p90_ms: quantile(times, 0.9)?,
        })
    }
}

/// One row of the summary: a run and its statistics, or why it failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStats {
    /// The operator.
    pub op_name: String,
    /// The run id.
    pub id: String,
    /// `ok`, `dry-run` or `failed`.
    pub status: &'static str,
    /// Forward pass statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward: Option<PassSummary>,
    /// Backward pass statistics, with `--backward`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backward: Option<PassSummary>,
    /// The reason of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The statistics of each record.
pub fn summarize(records: &[RunRecord]) -> Vec<RunStats> {
    records
        .iter()
        .map(|record| {
            let mut row = RunStats {
                op_name: record.op_name.clone(),
                id: record.id.to_string(),
                status: "ok",
                forward: None,
                backward: None,
                error: None,
            };
            match &record.outcome {
                Outcome::Measured(metric) => {
                    row.forward = PassSummary::of(&metric.forward.measure_time);
                    row.backward = metric
                        .backward
                        .as_ref()
                        .and_then(|b| PassSummary::of(&b.measure_time));
                }
                Outcome::DryRun => row.status = "dry-run",
                Outcome::Failed(reason) => {
                    row.status = "failed";
                    row.error = Some(reason.clone());
                }
            }
            row
        })
        .collect()
}
