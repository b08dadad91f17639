//! The estimates behind the 95% intervals of the report's figures (batch means from
//! `milabench-stats`, whose [`Interval`](milabench_stats::Interval) they become; see that crate
//! for why batch means), and the warm-up found in the rates.

use milabench_stats::{Estimate, steady_state_start};

use crate::stats::TRIM_FROM;
use crate::summary::{BenchSummary, RateSeries};

/// Where the rates of a benchmark's processes stopped warming up, after the fixed `skip` (the
/// benchmark leaves the skipped observations out of its data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmUp {
    /// The most observations any process still spent warming up (0: steady from the first).
    pub observations: usize,
    /// How much higher the pooled rate is without those observations, percent (negative when
    /// the warm-up was faster than the steady state).
    pub gain_pct: f64,
    /// The half-width of the 95% interval of the pooled rate without them, percent of it.
    pub steady_half_width_pct: f64,
}

impl WarmUp {
    /// Whether the fixed `skip` cut too little: the rates were still rising after it, and
    /// leaving out the rest of the warm-up raises the rate by more than the steady rate's
    /// interval (the warm-up itself widens the interval of all the rates, so that one would
    /// hide it).
    pub fn skip_too_short(&self) -> bool {
        self.observations > 0 && self.gain_pct > self.steady_half_width_pct
    }
}

/// The rates of `series` as the report's mean counts them: when they pool [`TRIM_FROM`] rates
/// or more, the one lowest and the one highest do not count (the Python tool's trimmed mean), so
/// that an interval is that of the figure it stands beside. Without this, one last rate a hundred
/// times the others (a short final batch, seen in a real 8-GPU run's `dlrm`) gave a mean of
/// 214,677 items/s an interval of ±1,180,000.
///
/// A trimmed rate is replaced by the mean of its series' other rates rather than removed, so
/// that every series keeps its length and so its batches: removing one of 9 rates would turn 3
/// batches of 3 into 2 of 4, and Student's t of 1 degree of freedom is three times that of 2.
/// The stand-in adds no spread, which understates a series' variance by about one part in its
/// length. A series with no other rate (one or two rates, both trimmed) is left empty.
fn trimmed<'a>(series: impl IntoIterator<Item = &'a RateSeries>) -> Vec<RateSeries> {
    let mut out: Vec<RateSeries> = series.into_iter().cloned().collect();
    let total: usize = out.iter().map(|s| s.rates.len()).sum();
    if total < TRIM_FROM {
        return out;
    }
    let all: Vec<((usize, usize), f64)> = out
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.rates.iter().enumerate().map(move |(j, &r)| ((i, j), r)))
        .collect();
    let lowest = all.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|p| p.0);
    let highest = all
        .iter()
        .filter(|p| Some(p.0) != lowest)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|p| p.0);
    let cut: Vec<(usize, usize)> = lowest.into_iter().chain(highest).collect();
    for (i, series) in out.iter_mut().enumerate() {
        let is_cut = |j: usize| cut.contains(&(i, j));
        if !cut.iter().any(|&(ci, _)| ci == i) {
            continue;
        }
        let kept: Vec<f64> = (0..series.rates.len())
            .filter(|&j| !is_cut(j))
            .map(|j| series.rates[j])
            .collect();
        if kept.is_empty() {
            series.rates.clear();
            continue;
        }
        let stand_in = kept.iter().sum::<f64>() / kept.len() as f64;
        for (j, rate) in series.rates.iter_mut().enumerate() {
            if is_cut(j) {
                *rate = stand_in;
            }
        }
    }
    out
}

/// The rates of `series` grouped by repeat, in first-seen order.
fn by_repeat<'a>(series: impl Iterator<Item = &'a RateSeries>) -> Vec<Vec<&'a [f64]>> {
    let mut groups: indexmap::IndexMap<Option<&str>, Vec<&[f64]>> = indexmap::IndexMap::new();
    for s in series {
        groups
            .entry(s.repeat.as_deref())
            .or_default()
            .push(&s.rates);
    }
    groups.into_values().collect()
}

impl BenchSummary {
    /// The mean of every training rate pooled (trimmed as the report's mean is), with its
    /// batch-means variance (each process weighs its share of the observations, as the pooled
    /// mean weighs them); with repeats
    /// (`run --repeat`), the variance from the spread of the repeats' means when that is larger
    /// (see [`Estimate::pooled_repeats`]).
    pub fn rate_estimate(&self) -> Estimate {
        Estimate::pooled_repeats(&by_repeat(trimmed(&self.rate_series).iter()))
    }

    /// The noise floor of the change from this benchmark's run to `other`'s, percent, measured
    /// from the repeats of the two (over the rates the report's means count; see
    /// [`milabench_stats::repeat_noise_floor_pct`]); `None` when neither run has two repeats.
    pub fn repeat_noise_floor_pct(&self, other: &BenchSummary) -> Option<f64> {
        let (base, this) = (trimmed(&self.rate_series), trimmed(&other.rate_series));
        milabench_stats::repeat_noise_floor_pct(&by_repeat(base.iter()), &by_repeat(this.iter()))
    }

    /// The throughput that counts in the score, before the success ratio: the sum over
    /// devices of each device's pooled rate for per-GPU plans, else the pooled rate.
    pub fn throughput_estimate(&self) -> Estimate {
        let mut devices: indexmap::IndexMap<&str, Vec<&RateSeries>> = indexmap::IndexMap::new();
        // Devices without a rate are left out, as the score's sum over devices leaves them.
        for series in self.rate_series.iter().filter(|s| !s.rates.is_empty()) {
            if let Some(dev) = &series.device {
                devices.entry(dev).or_default().push(series);
            }
        }
        // Each device's mean is trimmed on its own, as the score's per-device means are.
        let per_device = Estimate::weighted_sum(devices.into_values().map(|series| {
            (
                1.0,
                Estimate::pooled_repeats(&by_repeat(trimmed(series).iter())),
            )
        }));
        if per_device.mean > 0.0 {
            per_device
        } else {
            self.rate_estimate()
        }
    }

    /// The warm-up of each process found by [`steady_state_start`], and what it costs the
    /// pooled rate (both over the rates the report's mean counts).
    pub fn warm_up(&self) -> WarmUp {
        let series = trimmed(&self.rate_series);
        let steady_parts: Vec<&[f64]> = series
            .iter()
            .map(|s| &s.rates[steady_state_start(&s.rates)..])
            .collect();
        let observations = series
            .iter()
            .zip(&steady_parts)
            .map(|(all, steady)| all.rates.len() - steady.len())
            .max()
            .unwrap_or(0);
        let steady = Estimate::pooled(steady_parts.iter().copied());
        // Summed in the same order as `steady`, so that no warm-up gives a gain of exactly 0.
        let all = Estimate::pooled(series.iter().map(|s| s.rates.as_slice()));
        WarmUp {
            observations,
            gain_pct: (steady.mean / all.mean - 1.0) * 100.0,
            steady_half_width_pct: steady.relative_half_width() * 100.0,
        }
    }
}
