//! Statistics of the measured times (median and p90 per id and pass) and the text table.

use std::fmt::Write as _;

use serde::Serialize;

use super::runner::{Outcome, RunRecord};
use crate::models::stats::quantile_sorted;

/// The `q` quantile of a list, linearly interpolated between the nearest ranks (numpy's default,
/// as `benchit benchmark`'s statistics); `None` for an empty list.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, q))
}

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

/// The text table: one line per run and pass, with median and p90 in milliseconds; failures
/// show their reason.
pub fn table(rows: &[RunStats]) -> String {
    let op_width = rows
        .iter()
        .map(|r| r.op_name.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let id_width = rows.iter().map(|r| r.id.len()).max().unwrap_or(0).max(2);
    let mut text = format!(
        "{:<op_width$}  {:<id_width$}  {:<8}  {:>5}  {:>12}  {:>12}\n",
        "operator", "id", "pass", "n", "median ms", "p90 ms"
    );
    for row in rows {
        let mut pass = |name: &str, summary: &PassSummary| {
            let _ = writeln!(
                text,
                "{:<op_width$}  {:<id_width$}  {name:<8}  {:>5}  {:>12.4}  {:>12.4}",
                row.op_name, row.id, summary.n, summary.median_ms, summary.p90_ms
            );
        };
        if let Some(forward) = &row.forward {
            pass("forward", forward);
        }
        if let Some(backward) = &row.backward {
            pass("backward", backward);
        }
        let note = match (&row.error, row.status) {
            (Some(error), _) => Some(format!("FAILED: {error}")),
            (None, "dry-run") => Some("not measured (-w 0 -i 0)".to_string()),
            (None, _) if row.forward.is_none() => Some("no measured iteration (-i 0)".to_string()),
            _ => None,
        };
        if let Some(note) = note {
            let _ = writeln!(
                text,
                "{:<op_width$}  {:<id_width$}  {note}",
                row.op_name, row.id
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[3.0], 0.9), Some(3.0));
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.5));
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((quantile(&ten, 0.9).unwrap() - 9.1).abs() < 1e-9);
    }
}
