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
    /// The benchmark ran in the baseline but not in this run (a regression).
    Missing,
    /// Every process of the benchmark failed in this run (a regression).
    Failed,
    /// The benchmark ran in this run but measured no rate (a regression).
    NoRate,
    /// The baseline has no rate for the benchmark: nothing to compare with.
    NoBaseline,
}

impl Verdict {
    /// How the verdict is written in the text table.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::Missing => "missing",
            Verdict::Failed => "failed",
            Verdict::NoRate => "no rate",
            Verdict::NoBaseline => "no baseline",
        }
    }
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
    /// The rows that regressed: slower than the baseline, beyond the noise, by more than
    /// `limit_pct` percent; or missing, failed or without a rate in the compared run where the
    /// baseline has a rate.
    pub fn regressions(&self, limit_pct: f64) -> Vec<&CompareRow> {
        self.rows
            .iter()
            .filter(|r| match r.verdict {
                Verdict::Slower => -r.change_pct > limit_pct,
                Verdict::Missing | Verdict::Failed | Verdict::NoRate => true,
                Verdict::Faster | Verdict::WithinNoise | Verdict::NoBaseline => false,
            })
            .collect()
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
                (None, _) => (Interval::NAN, Verdict::NoBaseline),
                _ if !baseline.is_finite() => (Interval::NAN, Verdict::NoBaseline),
                (Some(_), None) => (Interval::NAN, Verdict::Missing),
                (Some(_), Some(b)) if b.failures == b.n => (Interval::NAN, Verdict::Failed),
                (Some(_), Some(_)) if !perf.is_finite() => (Interval::NAN, Verdict::NoRate),
                (Some(a), Some(b)) => {
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
            let verdict = r.verdict.as_str();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bench: &str, verdict: Verdict, change_pct: f64) -> CompareRow {
        CompareRow {
            bench: bench.to_owned(),
            run: "new".to_owned(),
            baseline: 100.0,
            perf: 100.0 + change_pct,
            change_pct,
            change_ci95: Interval::NAN,
            verdict,
        }
    }

    #[test]
    fn regressions_are_slowdowns_beyond_the_limit_and_benchmarks_lost() {
        let comparison = Comparison {
            baseline: "base".to_owned(),
            runs: vec!["new".to_owned()],
            rows: vec![
                row("a", Verdict::Slower, -10.0),
                row("b", Verdict::Slower, -3.0),
                row("c", Verdict::Faster, 20.0),
                row("d", Verdict::WithinNoise, -30.0),
                row("e", Verdict::Missing, f64::NAN),
                row("f", Verdict::Failed, -1.0),
                row("g", Verdict::NoRate, f64::NAN),
                row("h", Verdict::NoBaseline, f64::NAN),
            ],
        };
        let names = |limit| -> Vec<String> {
            comparison
                .regressions(limit)
                .iter()
                .map(|r| r.bench.clone())
                .collect()
        };
        assert_eq!(names(5.0), ["a", "e", "f", "g"]);
        assert_eq!(names(0.0), ["a", "b", "e", "f", "g"]);
        assert_eq!(names(50.0), ["e", "f", "g"]);
    }
}
