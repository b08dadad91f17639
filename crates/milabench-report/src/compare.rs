//! Comparing runs: per benchmark, the change of `perf` against the first run, its 95% interval
//! (batch means of each process's rates, through the ratio of the two means) and a verdict:
//! better, worse or cannot tell, given the smallest change that counts: `--threshold`, else
//! [`DEFAULT_NOISE_FLOOR_PCT`] or the larger noise floor the runs' repeats measure.

use std::fmt::Write as _;

use serde::Serialize;

use milabench_stats::{DEFAULT_NOISE_FLOOR_PCT, Estimate, Interval, Judgement, judge};
use milabench_vocab::TextTable;

use crate::error::ReportError;
use crate::ingest::load_runs;
use crate::summary::summarize;

/// What a change means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Faster than the baseline, beyond the noise and the threshold.
    Better,
    /// Slower than the baseline, beyond the noise and the threshold.
    Worse,
    /// The interval of the change contains 0, or the change is within the threshold.
    CannotTell,
    /// The benchmark ran in the baseline but not in this run (a regression).
    Missing,
    /// Every process of the benchmark failed in this run (a regression).
    Failed,
    /// Every process of the benchmark failed in this run and in the baseline: nothing got
    /// worse.
    FailedInBoth,
    /// The benchmark ran in this run but measured no rate (a regression).
    NoRate,
    /// The baseline has no rate for the benchmark: nothing to compare with.
    NoBaseline,
}

impl Verdict {
    /// How the verdict is written in the text table.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::CannotTell => "cannot tell",
            Verdict::Missing => "missing",
            Verdict::Failed => "failed",
            Verdict::FailedInBoth => "failed in both",
            Verdict::NoRate => "no rate",
            Verdict::NoBaseline => "no baseline",
        }
    }
}

impl From<Judgement> for Verdict {
    fn from(judgement: Judgement) -> Verdict {
        match judgement {
            Judgement::Better => Verdict::Better,
            Judgement::Worse => Verdict::Worse,
            Judgement::CannotTell => Verdict::CannotTell,
        }
    }
}

/// Where the smallest change that counts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdOrigin {
    /// Given by the person (`--threshold`).
    Option,
    /// The default noise floor, [`DEFAULT_NOISE_FLOOR_PCT`]: nothing measured it.
    Default,
    /// Measured from the repeats of the two runs (`run --repeat`, see
    /// [`milabench_stats::repeat_noise_floor_pct`]), above the default.
    Repeats,
}

impl ThresholdOrigin {
    /// How the origin is said in the text outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            ThresholdOrigin::Option => "--threshold",
            ThresholdOrigin::Default => "the default noise floor",
            ThresholdOrigin::Repeats => "measured from the repeats",
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
    /// 95% interval of the relative change, percent.
    pub change_ci95: Interval,
    /// Whether the change is beyond the noise.
    pub verdict: Verdict,
    /// The smallest change that counted for the verdict, percent (`null` for the verdicts
    /// that judge no change: missing, failed, ...).
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub threshold_pct: f64,
    /// Where that threshold came from (`null` with it).
    pub threshold_from: Option<ThresholdOrigin>,
}

impl CompareRow {
    /// The verdict as the tables say it: with its threshold when the repeats measured it (the
    /// table's header says the others').
    pub fn verdict_text(&self) -> String {
        match self.threshold_from {
            Some(ThresholdOrigin::Repeats) => format!(
                "{} (threshold {:.1}%, {})",
                self.verdict.as_str(),
                self.threshold_pct,
                ThresholdOrigin::Repeats.as_str()
            ),
            _ => self.verdict.as_str().to_owned(),
        }
    }
}

/// The comparison of several runs with the first.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The baseline run folder.
    pub baseline: String,
    /// The other run folders.
    pub runs: Vec<String>,
    /// The smallest change that counts, percent: `--threshold`, else the default noise floor
    /// (a benchmark whose runs have repeats measures its own: see its row).
    pub threshold_pct: f64,
    /// Where that threshold came from: `option` or `default`.
    pub threshold_from: ThresholdOrigin,
    /// Per run and benchmark.
    pub rows: Vec<CompareRow>,
}

impl Comparison {
    /// The rows that regressed: worse than the baseline (beyond the noise and the threshold),
    /// by more than `limit_pct` percent; or missing, failed or without a rate in the compared
    /// run where the baseline has a rate.
    pub fn regressions(&self, limit_pct: f64) -> Vec<&CompareRow> {
        self.rows
            .iter()
            .filter(|r| match r.verdict {
                Verdict::Worse => -r.change_pct > limit_pct,
                Verdict::Missing | Verdict::Failed | Verdict::NoRate => true,
                Verdict::Better
                | Verdict::CannotTell
                | Verdict::FailedInBoth
                | Verdict::NoBaseline => false,
            })
            .collect()
    }
}

/// Compares every run folder of `runs[1..]` with `runs[0]`; a change counts when its interval
/// leaves out 0 and it is larger than the threshold (see [`judge`]): `threshold_pct` percent
/// when given, else [`DEFAULT_NOISE_FLOOR_PCT`], or the noise floor measured from the repeats
/// of a benchmark's two runs when that is larger.
pub fn compare_runs(
    runs: &[String],
    threshold_pct: Option<f64>,
) -> Result<Comparison, ReportError> {
    let (run_threshold, threshold_from) = match threshold_pct {
        Some(pct) => (pct, ThresholdOrigin::Option),
        None => (DEFAULT_NOISE_FLOOR_PCT, ThresholdOrigin::Default),
    };
    let mut summaries = Vec::new();
    for run in runs {
        let set = load_runs(std::slice::from_ref(run))?;
        summaries.push(summarize(&set)?);
    }
    let Some((base, others)) = summaries.split_first() else {
        return Ok(Comparison {
            baseline: String::new(),
            runs: Vec::new(),
            threshold_pct: run_threshold,
            threshold_from,
            rows: Vec::new(),
        });
    };
    let mut rows = Vec::new();
    for (run, summary) in runs[1..].iter().zip(others) {
        let mut names: Vec<&String> = base.keys().chain(summary.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let a = base.get(name);
            let b = summary.get(name);
            let baseline = a.map_or(f64::NAN, |s| s.train_rate.mean);
            let perf = b.map_or(f64::NAN, |s| s.train_rate.mean);
            let change_pct = (perf / baseline - 1.0) * 100.0;
            let unjudged = |verdict| (Interval::NAN, verdict, f64::NAN, None);
            let (ci, verdict, threshold_pct, threshold_from) = match (a, b) {
                (None, _) => unjudged(Verdict::NoBaseline),
                _ if !baseline.is_finite() => unjudged(Verdict::NoBaseline),
                (Some(_), None) => unjudged(Verdict::Missing),
                (Some(a), Some(b)) if b.failures == b.n && a.failures == a.n => {
                    unjudged(Verdict::FailedInBoth)
                }
                (Some(_), Some(b)) if b.failures == b.n => unjudged(Verdict::Failed),
                (Some(_), Some(_)) if !perf.is_finite() => unjudged(Verdict::NoRate),
                (Some(a), Some(b)) => {
                    // Centred on the report's (trimmed) means, with the spread of the pooled
                    // rates of each run.
                    let base = Estimate {
                        mean: baseline,
                        ..a.rate_estimate()
                    };
                    let this = Estimate {
                        mean: perf,
                        ..b.rate_estimate()
                    };
                    let change = base.change_to(&this);
                    let (threshold, from) = match threshold_from {
                        // Repeats in a row see less of the drift than runs hours apart: they
                        // raise the default floor, never lower it.
                        ThresholdOrigin::Default => a
                            .repeat_noise_floor_pct(b)
                            .filter(|floor| *floor > run_threshold)
                            .map_or((run_threshold, threshold_from), |floor| {
                                (floor, ThresholdOrigin::Repeats)
                            }),
                        _ => (run_threshold, threshold_from),
                    };
                    (
                        Interval::of(&change),
                        judge(&change, threshold).into(),
                        threshold,
                        Some(from),
                    )
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
                threshold_pct,
                threshold_from,
            });
        }
    }
    Ok(Comparison {
        baseline: runs[0].clone(),
        runs: runs[1..].to_vec(),
        threshold_pct: run_threshold,
        threshold_from,
        rows,
    })
}

/// A text table of the comparison.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Baseline: {}", c.baseline);
    let _ = writeln!(out, "Threshold: {}", threshold_line(c));
    let number = |x: f64| crate::pyfmt::fixed(x, 0, 2);
    for run in &c.runs {
        let _ = writeln!(out, "\nRun: {run}");
        let mut table = TextTable::new([
            "bench",
            "baseline",
            "perf",
            "change",
            "95% CI of change",
            "verdict",
        ])
        .right_aligned(1..5);
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
            table.row([
                r.bench.clone(),
                number(r.baseline),
                number(r.perf),
                change,
                ci,
                r.verdict_text(),
            ]);
        }
        out.push_str(&table.render());
    }
    out
}

/// The threshold of a comparison and where it came from, as the text and HTML outputs say it.
pub fn threshold_line(c: &Comparison) -> String {
    match c.threshold_from {
        ThresholdOrigin::Default => format!(
            "{}% ({}; --threshold sets another, repeats (run --repeat) that spread more raise it)",
            c.threshold_pct,
            c.threshold_from.as_str()
        ),
        _ => format!("{}% ({})", c.threshold_pct, c.threshold_from.as_str()),
    }
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
            threshold_pct: 0.0,
            threshold_from: Some(ThresholdOrigin::Option),
        }
    }

    #[test]
    fn a_large_rate_widens_its_column() {
        let mut big = row("b", Verdict::Better, 1.0);
        big.perf = 19_095_462_563.28;
        let comparison = Comparison {
            baseline: "base".to_owned(),
            runs: vec!["new".to_owned()],
            threshold_pct: 0.0,
            threshold_from: ThresholdOrigin::Option,
            rows: vec![row("a", Verdict::Worse, -10.0), big],
        };
        let text = render_comparison(&comparison);
        let lines: Vec<&str> = text.lines().skip(4).collect();
        // The perf column (right-aligned) ends at the same place on every line.
        let end_of = |line: &str, cell: &str| line.find(cell).map(|i| i + cell.len());
        let header_end = end_of(lines[0], "perf");
        assert_eq!(header_end, end_of(lines[1], "90.00"), "{text}");
        assert_eq!(header_end, end_of(lines[2], "19095462563.28"), "{text}");
    }

    #[test]
    fn regressions_are_slowdowns_beyond_the_limit_and_benchmarks_lost() {
        let comparison = Comparison {
            baseline: "base".to_owned(),
            runs: vec!["new".to_owned()],
            threshold_pct: 0.0,
            threshold_from: ThresholdOrigin::Option,
            rows: vec![
                row("a", Verdict::Worse, -10.0),
                row("b", Verdict::Worse, -3.0),
                row("c", Verdict::Better, 20.0),
                row("d", Verdict::CannotTell, -30.0),
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
