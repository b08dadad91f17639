//! Comparing runs: per benchmark, the change of `perf` against the first run and whether it
//! exceeds the noise of the rate samples (bootstrap interval of the difference of means).

use std::fmt::Write as _;

use serde::Serialize;

use crate::bootstrap::{Interval, SplitMix64, trimmed};
use crate::error::ReportError;
use crate::ingest::load_runs;
use crate::summary::summarize;

/// What a change means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Faster than the baseline, beyond the noise.
    Faster,
    /// Slower than the baseline, beyond the noise.
    Slower,
    /// The interval of the change contains 0.
    WithinNoise,
    /// The benchmark is missing from one of the two runs, or has no rate.
    Missing,
}

/// One benchmark of one run against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Benchmark name.
    pub bench: String,
    /// The run compared with the baseline.
    pub run: String,
    /// Baseline perf.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub baseline: f64,
    /// This run's perf.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub perf: f64,
    /// Relative change, percent.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub change_pct: f64,
    /// 95% bootstrap interval of the relative change, percent.
    pub change_ci95: Interval,
    /// Whether the change is beyond the noise.
    pub verdict: Verdict,
}

/// The comparison of several runs with the first.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The baseline run folder.
    pub baseline: String,
    /// The other run folders.
    pub runs: Vec<String>,
    /// Per run and benchmark.
    pub rows: Vec<CompareRow>,
}

impl Comparison {
    /// The largest significant slowdown, percent (0 if none).
    pub fn worst_slowdown_pct(&self) -> f64 {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Slower)
            .map(|r| -r.change_pct)
            .fold(0.0, f64::max)
    }
}

/// Compares every run folder of `runs[1..]` with `runs[0]`.
pub fn compare_runs(
    runs: &[String],
    resamples: usize,
    seed: u64,
) -> Result<Comparison, ReportError> {
    let mut summaries = Vec::new();
    for run in runs {
        let set = load_runs(std::slice::from_ref(run))?;
        summaries.push(summarize(&set)?);
    }
    let Some((base, others)) = summaries.split_first() else {
        return Ok(Comparison {
            baseline: String::new(),
            runs: Vec::new(),
            rows: Vec::new(),
        });
    };
    let mut rows = Vec::new();
    for (run, summary) in runs[1..].iter().zip(others) {
        let mut names: Vec<&String> = base.keys().chain(summary.keys()).collect();
        names.sort();
        names.dedup();
        for (i, name) in names.into_iter().enumerate() {
            let a = base.get(name);
            let b = summary.get(name);
            let baseline = a.map_or(f64::NAN, |s| s.train_rate.mean);
            let perf = b.map_or(f64::NAN, |s| s.train_rate.mean);
            let change_pct = (perf / baseline - 1.0) * 100.0;
            let (ci, verdict) = match (a, b) {
                (Some(a), Some(b)) if baseline.is_finite() && perf.is_finite() => {
                    let ci =
                        change_interval(&a.rates, &b.rates, resamples, seed.wrapping_add(i as u64));
                    let verdict = if ci.low > 0.0 {
                        Verdict::Faster
                    } else if ci.high < 0.0 {
                        Verdict::Slower
                    } else {
                        Verdict::WithinNoise
                    };
                    (ci, verdict)
                }
                _ => (Interval::NAN, Verdict::Missing),
            };
            rows.push(CompareRow {
                bench: name.clone(),
                run: run.clone(),
                baseline,
                perf,
                change_pct,
                change_ci95: ci,
                verdict,
            });
        }
    }
    Ok(Comparison {
        baseline: runs[0].clone(),
        runs: runs[1..].to_vec(),
        rows,
    })
}

/// Bootstrap interval of `mean(b) / mean(a) - 1`, percent, over the trimmed rates.
fn change_interval(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> Interval {
    let (a, b) = (trimmed(a), trimmed(b));
    if a.is_empty() || b.is_empty() {
        return Interval::NAN;
    }
    let mut rng = SplitMix64::new(seed);
    let mut mean =
        |xs: &[f64]| (0..xs.len()).map(|_| xs[rng.below(xs.len())]).sum::<f64>() / xs.len() as f64;
    let mut changes: Vec<f64> = (0..resamples)
        .map(|_| {
            let ma = mean(&a);
            let mb = mean(&b);
            (mb / ma - 1.0) * 100.0
        })
        .collect();
    Interval::from_samples(&mut changes)
}

/// A text table of the comparison.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Baseline: {}", c.baseline);
    let width = c
        .rows
        .iter()
        .map(|r| r.bench.len())
        .max()
        .unwrap_or(5)
        .max(5);
    for run in &c.runs {
        let _ = writeln!(out, "\nRun: {run}");
        let _ = writeln!(
            out,
            "{:<width$} | {:>10} | {:>10} | {:>8} | {:>19} | verdict",
            "bench", "baseline", "perf", "change", "95% CI of change"
        );
        let _ = writeln!(out, "{}", "-".repeat(width + 71));
        for r in c.rows.iter().filter(|r| &r.run == run) {
            let ci = if r.change_ci95.low.is_nan() {
                String::new()
            } else {
                format!("[{:+.1}%, {:+.1}%]", r.change_ci95.low, r.change_ci95.high)
            };
            let change = if r.change_pct.is_nan() {
                String::new()
            } else {
                format!("{:+.1}%", r.change_pct)
            };
            let verdict = match r.verdict {
                Verdict::Faster => "faster",
                Verdict::Slower => "slower",
                Verdict::WithinNoise => "within noise",
                Verdict::Missing => "missing",
            };
            let _ = writeln!(
                out,
                "{:<width$} | {} | {} | {change:>8} | {ci:>19} | {verdict}",
                r.bench,
                crate::pyfmt::fixed(r.baseline, 10, 2),
                crate::pyfmt::fixed(r.perf, 10, 2),
            );
        }
    }
    out
}
