//! Statistics of rate series: how precisely a benchmark's mean rate is known, how the
//! precision of several processes combines, whether a change between two runs is real, and
//! where a series' warm-up ends.
//!
//! # Why batch means
//!
//! Successive rates of one process are correlated (a slow step is followed by another: caches,
//! clocks, the data loader), so `std / sqrt(n)` understates the error of their mean, often by a
//! factor of two or more. Two remedies respect the correlation: a moving-block bootstrap and
//! non-overlapping batch means. Batch means is used here because it is deterministic (no seed, the
//! same data always gives the same interval), costs one pass and no allocation beyond the
//! batches, and is cheap enough to recompute after every observation while a benchmark runs
//! (`run --precision`); a bootstrap needs a seed, a thousand resamples and a block length that is
//! no easier to choose than a batch size. A series of `n` observations is cut into
//! `b = floor(sqrt(n))` batches of `floor(n / b)` observations (the oldest remainder is left
//! out): both the batch count and the batch size grow with `n`, so the batch means become
//! independent and the interval consistent as a series grows, and Student's t with `b - 1`
//! degrees of freedom accounts for the few batches of short series.
//!
//! Processes are independent of each other, so estimates combine as weighted sums: variances add
//! with the squared weights and the degrees of freedom follow Welch and Satterthwaite.

mod interval;
mod quantile;

pub use interval::Interval;
pub use quantile::{quantile, quantile_sorted};

/// An estimated mean with the variance of that estimate and its degrees of freedom; a 95%
/// interval is `mean ± half_width()`. NaN variance: too few observations to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimated mean.
    pub mean: f64,
    /// Variance of `mean` as an estimator (not of the observations).
    pub variance: f64,
    /// Degrees of freedom of `variance` (NaN when it is not known).
    pub dof: f64,
}

/// The fewest observations of a series that give an interval (two batches of two).
pub const MIN_OBSERVATIONS: usize = 4;

impl Estimate {
    /// Nothing known.
    pub const NAN: Estimate = Estimate {
        mean: f64::NAN,
        variance: f64::NAN,
        dof: f64::NAN,
    };

    /// The mean of `series` (observations in time order) with its batch-means variance; the
    /// variance is NaN below [`MIN_OBSERVATIONS`].
    pub fn of_series(series: &[f64]) -> Estimate {
        let n = series.len();
        if n == 0 {
            return Estimate::NAN;
        }
        let mean = series.iter().sum::<f64>() / n as f64;
        if n < MIN_OBSERVATIONS {
            return Estimate {
                mean,
                ..Estimate::NAN
            };
        }
        let batches = n.isqrt();
        let size = n / batches;
        let batched = &series[n - batches * size..];
        let means: Vec<f64> = batched
            .chunks_exact(size)
            .map(|batch| batch.iter().sum::<f64>() / size as f64)
            .collect();
        let grand = means.iter().sum::<f64>() / batches as f64;
        let spread = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (batches - 1) as f64;
        // `spread` estimates the variance of the mean of `size` observations; the mean of `n`
        // has `size / n` of it.
        Estimate {
            mean,
            variance: spread * size as f64 / n as f64,
            dof: (batches - 1) as f64,
        }
    }

    /// `Σ weight × estimate` of independent estimates: variances add with the squared weights,
    /// degrees of freedom by Welch–Satterthwaite. NaN as soon as one part's variance is unknown;
    /// nothing summed gives NaN.
    pub fn weighted_sum(parts: impl IntoIterator<Item = (f64, Estimate)>) -> Estimate {
        let mut mean = 0.0;
        let mut variance = 0.0;
        let mut dof_denominator = 0.0;
        // Welch–Satterthwaite lies between the smallest and the sum of the parts' degrees of
        // freedom; kept there, rounding cannot take it below a whole number it equals.
        let (mut dof_low, mut dof_high) = (f64::INFINITY, 0.0);
        let mut any = false;
        for (weight, part) in parts {
            any = true;
            mean += weight * part.mean;
            let v = weight * weight * part.variance;
            variance += v;
            if v != 0.0 {
                dof_denominator += v * v / part.dof;
                dof_low = part.dof.min(dof_low);
                dof_high += part.dof;
            }
        }
        if !any {
            return Estimate::NAN;
        }
        let dof = if dof_denominator == 0.0 {
            // Every part exactly known (or of weight 0): nothing to be uncertain about.
            f64::INFINITY
        } else {
            (variance * variance / dof_denominator)
                .max(dof_low)
                .min(dof_high)
        };
        Estimate {
            mean,
            variance,
            dof: if variance.is_nan() { f64::NAN } else { dof },
        }
    }

    /// The mean of every observation of independent series pooled together (each series weighs
    /// its share of the observations).
    pub fn pooled<'a>(series: impl IntoIterator<Item = &'a [f64]> + Clone) -> Estimate {
        let total: usize = series.clone().into_iter().map(<[f64]>::len).sum();
        Estimate::weighted_sum(
            series
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(|s| (s.len() as f64 / total as f64, Estimate::of_series(s))),
        )
    }

    /// An estimate known only by its 95% interval `mean ± half_width` (one stored without its
    /// degrees of freedom): the variance the half-width gives under the normal quantile, with
    /// infinite degrees of freedom. Since the interval came from Student's t, whose quantile is
    /// above the normal one, the variance is never understated and the intervals built from it
    /// are never narrower than the exact ones would be. A NaN half-width: nothing known.
    pub fn from_interval(mean: f64, half_width: f64) -> Estimate {
        const Z: f64 = 1.959_963_984_540_054;
        let sd = half_width / Z;
        Estimate {
            mean,
            variance: sd * sd,
            dof: if half_width.is_nan() {
                f64::NAN
            } else {
                f64::INFINITY
            },
        }
    }

    /// The mean of series grouped into repeats (the same measurement started again later, as
    /// `run --repeat` does), every observation pooled as [`Estimate::pooled`] pools them, with
    /// the larger of two variances: the batch-means one, which sees the noise inside each
    /// process, and one from how far the repeats' own means spread (`s² Σ wᵢ²`, the repeats
    /// weighted by their observations, with one degree of freedom fewer than repeats), which
    /// also sees the machine drifting between repeats. Under two repeats, the batch-means
    /// estimate.
    pub fn pooled_repeats(repeats: &[Vec<&[f64]>]) -> Estimate {
        let pooled = Estimate::pooled(repeats.iter().flatten().copied());
        let parts: Vec<(f64, f64)> = repeats
            .iter()
            .filter_map(|series| {
                let n: usize = series.iter().map(|s| s.len()).sum();
                (n > 0).then(|| (n as f64, Estimate::pooled(series.iter().copied()).mean))
            })
            .collect();
        if parts.len() < 2 {
            return pooled;
        }
        let total: f64 = parts.iter().map(|(n, _)| n).sum();
        let k = parts.len() as f64;
        let spread_of_means = parts
            .iter()
            .map(|(_, m)| (m - pooled.mean).powi(2))
            .sum::<f64>()
            / (k - 1.0);
        let weights = parts.iter().map(|(n, _)| (n / total).powi(2)).sum::<f64>();
        let between = Estimate {
            mean: pooled.mean,
            variance: spread_of_means * weights,
            dof: k - 1.0,
        };
        // The larger variance, with its own degrees of freedom: a combination of this estimate
        // with others (a change between runs, the score) then never has less variance than
        // either. An unknown pooled variance (NaN) gives way to the repeats'.
        if pooled.variance >= between.variance {
            pooled
        } else {
            between
        }
    }

    /// The same estimate multiplied by `factor`.
    pub fn scaled(self, factor: f64) -> Estimate {
        Estimate {
            mean: self.mean * factor,
            variance: self.variance * factor * factor,
            dof: self.dof,
        }
    }

    /// Half the width of the 95% interval: `t(0.975, dof) × sqrt(variance)` (0 for an exact
    /// estimate, NaN when the variance is unknown).
    pub fn half_width(&self) -> f64 {
        if self.variance == 0.0 {
            return 0.0;
        }
        t_975(self.dof) * self.variance.sqrt()
    }

    /// `half_width / |mean|`: the precision as a share of the mean.
    pub fn relative_half_width(&self) -> f64 {
        self.half_width() / self.mean.abs()
    }

    /// The relative change `other / self - 1`, in percent, with its variance by the delta
    /// method (the two estimates are independent).
    pub fn change_to(&self, other: &Estimate) -> Estimate {
        let ratio = other.mean / self.mean;
        let rel_base = self.variance / (self.mean * self.mean);
        let rel_other = other.variance / (other.mean * other.mean);
        let relative = Estimate::weighted_sum([
            (
                ratio,
                Estimate {
                    mean: 1.0,
                    variance: rel_other,
                    dof: other.dof,
                },
            ),
            (
                ratio,
                Estimate {
                    mean: 0.0,
                    variance: rel_base,
                    dof: self.dof,
                },
            ),
        ]);
        Estimate {
            mean: ratio - 1.0,
            ..relative
        }
        .scaled(100.0)
    }
}

/// What a change between two runs means, given its interval and the smallest effect that
/// matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// The interval excludes no change and the change is beyond the threshold, upwards.
    Better,
    /// The interval excludes no change and the change is beyond the threshold, downwards.
    Worse,
    /// The interval contains no change, or the change is within the threshold.
    CannotTell,
}

/// Judges a relative change (in percent, as [`Estimate::change_to`] gives it) against its 95%
/// interval and `threshold_pct`: a change counts only when the interval leaves out 0 and the
/// change itself is larger than the threshold (both, so that a precise but negligible change
/// and a large but noisy one both say "cannot tell"). An unknown interval cannot tell.
pub fn judge(change_pct: &Estimate, threshold_pct: f64) -> Judgement {
    let half = change_pct.half_width();
    let (low, high) = (change_pct.mean - half, change_pct.mean + half);
    if low > 0.0 && change_pct.mean > threshold_pct {
        Judgement::Better
    } else if high < 0.0 && change_pct.mean < -threshold_pct {
        Judgement::Worse
    } else {
        Judgement::CannotTell
    }
}

/// The smallest change that counts when nothing better is known, percent: a change between
/// two runs is better or worse only beyond it (and beyond its interval, see [`judge`]).
///
/// An interval made inside one run sees the noise of that run's rates, not how far a second
/// run of the same machine lands from the first (clocks, heat, neighbours, the page cache):
/// two back-to-back runs of a sleep-bound benchmark differed by 0.2% with an interval of
/// ±0.1%, a "better" at a threshold of 0. Measured A/A pairs: the Python tool's two runs of
/// `benchio` kept as test fixtures differ by 2.8%; a sleep-bound test benchmark on a loaded
/// 2-core machine by 1.0% to 14.4% (median 4.2%) over five pairs. 5% is above the usual of
/// those and half the 10% change a comparison must still see; criterion's noise threshold
/// plays the same part (1% there, for micro-benchmarks repeated thousands of times). Runs with
/// repeats (`run --repeat`) measure a floor of their own ([`repeat_noise_floor_pct`]), which
/// raises this one when larger: repeats made in a row see less drift than runs made hours
/// apart, so they do not lower it.
pub const DEFAULT_NOISE_FLOOR_PCT: f64 = 5.0;

/// The noise floor of a change between two measurements made of repeats (the same measurement
/// started again, as `run --repeat` does), percent: the change that two such measurements of
/// the same machine stay within 95% of the time, predicted from how far the repeats' means
/// spread. Each argument holds one measurement's series grouped by repeat.
///
/// The repeats' means, each relative to its measurement's mean of them, give a pooled variance
/// `s²` of one repeat's mean with `k_a + k_b - 2` degrees of freedom; the change of two
/// measurements of `k_a` and `k_b` repeats then has the standard deviation `s √(1/k_a + 1/k_b)`
/// and the floor is Student's `t(0.975)` times that (a prediction interval: the few degrees of
/// freedom of a few repeats widen it, so two repeats that happen to agree do not promise
/// much). Its spread includes the noise inside each repeat as well as the drift between them,
/// as the change between two runs does. `None` when neither measurement has two repeats with
/// rates.
pub fn repeat_noise_floor_pct(baseline: &[Vec<&[f64]>], other: &[Vec<&[f64]>]) -> Option<f64> {
    // Per measurement: the number of repeats with rates and the sum of the squared relative
    // deviations of their means.
    let spread = |repeats: &[Vec<&[f64]>]| -> (f64, f64) {
        let means: Vec<f64> = repeats
            .iter()
            .map(|series| Estimate::pooled(series.iter().copied()).mean)
            .filter(|mean| mean.is_finite())
            .collect();
        let k = means.len() as f64;
        let grand = means.iter().sum::<f64>() / k;
        if means.len() < 2 || grand == 0.0 {
            return (k.min(1.0), 0.0);
        }
        let squares = means.iter().map(|m| (m / grand - 1.0).powi(2)).sum();
        (k, squares)
    };
    let (k_a, squares_a) = spread(baseline);
    let (k_b, squares_b) = spread(other);
    let dof = (k_a - 1.0).max(0.0) + (k_b - 1.0).max(0.0);
    if dof < 1.0 || k_a < 1.0 || k_b < 1.0 {
        return None;
    }
    let variance = (squares_a + squares_b) / dof;
    Some(t_975(dof) * (variance * (1.0 / k_a + 1.0 / k_b)).sqrt() * 100.0)
}

/// The 97.5th percentile of Student's t with `dof` degrees of freedom, fractional degrees
/// included (below 1 counts as 1; infinite is the normal quantile).
pub fn t_975(dof: f64) -> f64 {
    const Z: f64 = 1.959_963_984_540_054;
    if dof.is_nan() {
        return f64::NAN;
    }
    let v = dof.max(1.0);
    if v > 1e6 {
        // The Cornish–Fisher series in 1/v: its first term is below 1e-6 here.
        let z2 = Z * Z;
        return Z + Z * (z2 + 1.0) / (4.0 * v);
    }
    // The two-sided tail of t is I_{v/(v+t²)}(v/2, 1/2), falling with t; below 13 for v >= 1
    // (t(1) = 12.7062). Bisection to the last bit.
    let tail = |t: f64| regularized_beta(v / (v + t * t), v / 2.0, 0.5);
    let (mut low, mut high) = (0.0_f64, 13.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high {
            break;
        }
        if tail(mid) > 0.05 {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// The regularised incomplete beta function `I_x(a, b)`, by its continued fraction (Lentz's
/// method) on the side where it converges fast.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function (Numerical Recipes' `betacf`).
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a - 1.0 + 2.0 * m) * (a + 2.0 * m));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 1.0 + 2.0 * m));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x >= 0.5` (Lanczos, g = 7: relative error about 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |acc, (i, c)| acc + c / (x + i as f64 + 1.0));
    0.5 * std::f64::consts::TAU.ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Where the steady state of `series` begins: the number of leading observations to leave out.
///
/// MSER truncation first: the `d` (at most half the series) whose removal minimises the squared
/// error of the mean of the rest, `Σ (x - mean)² / (n - d)²`; removing warm-up observations
/// lowers the spread faster than it shrinks the count, removing steady ones does not. On
/// correlated series that minimum often lies some way into the steady part (a calm stretch
/// lowers the spread by chance), so the answer is then moved back to the earliest `d` whose
/// mean is within half a standard error (batch means) of the minimum's: a warm-up that moves
/// the mean by less than that is noise. 0 for series too short to tell (under 10
/// observations).
pub fn steady_state_start(series: &[f64]) -> usize {
    const SHORTEST: usize = 10;
    let n = series.len();
    if n < SHORTEST {
        return 0;
    }
    // Sums of the suffixes: `suffix[d]` is the sum (and sum of squares) of `series[d..]`.
    let mut suffix = vec![(0.0, 0.0); n + 1];
    for d in (0..n).rev() {
        let (sum, squares) = suffix[d + 1];
        suffix[d] = (sum + series[d], squares + series[d] * series[d]);
    }
    let mean_from = |d: usize| suffix[d].0 / (n - d) as f64;
    let mut best = (f64::INFINITY, 0);
    for (d, &(sum, squares)) in suffix.iter().enumerate().take(n / 2 + 1) {
        let k = (n - d) as f64;
        let error = (squares - sum * sum / k).max(0.0) / (k * k);
        if error < best.0 {
            best = (error, d);
        }
    }
    let minimum = best.1;
    let steady = mean_from(minimum);
    let tolerance = Estimate::of_series(&series[minimum..]).variance.sqrt() / 2.0;
    (0..minimum)
        .find(|&d| (mean_from(d) - steady).abs() <= tolerance)
        .unwrap_or(minimum)
}

/// When a run may stop for precision (`run --precision`): the pooled 95% interval of its
/// processes' rates has been within `share` of their mean at each of the last `hold` checks
/// (one check per new rate), and every reporting process has sent `min_observations` rates.
///
/// Stopping at the first check under the target would pick the lucky moments of a variance
/// estimated from a few batches: by simulation of AR(1) rates, the interval that the report
/// then computes was over the target in 56-80% of such stops, and over 1.5 times it in 17-34%.
/// With at least 25 rates (5 batches) and the target held over 10 checks, that falls to 1-5%
/// (over 1.5 times: about 0.1%) for series that reach the target early, at the cost of the
/// extra observations (see the test `a_stop_keeps_its_promise_in_the_report`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionRule {
    /// Target half-width as a share of the mean (0.01 for 1%).
    pub share: f64,
    /// Fewest rates each reporting process must have sent.
    pub min_observations: usize,
    /// Consecutive checks the target must hold at.
    pub hold: usize,
}

impl PrecisionRule {
    /// The default fewest rates per process: five batch means.
    pub const MIN_OBSERVATIONS: usize = 25;
    /// The default number of consecutive checks within the target.
    pub const HOLD: usize = 10;

    /// The rule for target `share` with the default minimum and hold.
    pub fn new(share: f64) -> PrecisionRule {
        PrecisionRule {
            share,
            min_observations: Self::MIN_OBSERVATIONS,
            hold: Self::HOLD,
        }
    }

    /// One check after a new rate of `series` (each process's rates in order): `streak`
    /// counts the consecutive checks within the target so far. Returns the relative half-width
    /// reached when the run should stop.
    pub fn check<'a>(
        &self,
        series: impl IntoIterator<Item = &'a [f64]> + Clone,
        streak: &mut usize,
    ) -> Option<f64> {
        if series
            .clone()
            .into_iter()
            .any(|rates| rates.len() < self.min_observations)
        {
            *streak = 0;
            return None;
        }
        let reached = Estimate::pooled(series).relative_half_width();
        // NaN (constant zero rates, too few) never counts.
        if reached.is_nan() || reached > self.share {
            *streak = 0;
            return None;
        }
        *streak += 1;
        (*streak >= self.hold).then_some(reached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u = 1.0 - rng.f64();
        let v = rng.f64();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// An AR(1) series around `mean`: `x[t] - mean = phi (x[t-1] - mean) + sd ε`, started in
    /// its stationary distribution.
    fn ar1(rng: &mut fastrand::Rng, n: usize, mean: f64, phi: f64, sd: f64) -> Vec<f64> {
        let mut x = normal(rng) * sd / (1.0 - phi * phi).sqrt();
        (0..n)
            .map(|_| {
                let out = mean + x;
                x = phi * x + sd * normal(rng);
                out
            })
            .collect()
    }

    /// Issue 38, item 8: a change between a run and the same run scaled by 0.97 had a third of
    /// the degrees of freedom cut off by rounding (1.999... floored to 1), tripling its
    /// interval. The interval follows the scale smoothly.
    #[test]
    fn the_change_interval_moves_smoothly_with_the_data() {
        let base = [100.0, 103.0, 98.0, 101.0, 99.5, 102.0, 97.0, 100.5, 101.5];
        let before = Estimate::of_series(&base);
        assert_eq!(before.dof, 2.0);
        let widths: Vec<f64> = (900..=1100)
            .map(|per_mille| {
                let factor = f64::from(per_mille) / 1000.0;
                let after: Vec<f64> = base.iter().map(|x| x * factor).collect();
                // The width relative to the ratio, which scales it.
                before.change_to(&Estimate::of_series(&after)).half_width() / factor
            })
            .collect();
        let (low, high) = widths
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(l, h), w| (l.min(*w), h.max(*w)));
        assert!(high / low < 1.0 + 1e-6, "from {low} to {high}");
    }

    #[test]
    fn the_t_quantile_joins_its_table_and_tends_to_the_normal() {
        // Student's t table, to its four decimals.
        for (dof, t) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (3.0, 3.1824),
            (5.0, 2.5706),
            (10.0, 2.2281),
            (30.0, 2.0423),
        ] {
            assert!((t_975(dof) - t).abs() < 5e-5, "t({dof}) = {}", t_975(dof));
        }
        assert_eq!(t_975(0.2), t_975(1.0));
        // Fractional degrees fall between their neighbours.
        assert!(t_975(4.0) > t_975(4.5) && t_975(4.5) > t_975(5.0));
        assert!((t_975(2.0 - 1e-12) - t_975(2.0)).abs() < 1e-9);
        assert!((t_975(31.0) - 2.0395).abs() < 1e-4, "{}", t_975(31.0));
        assert!((t_975(60.0) - 2.0003).abs() < 1e-4, "{}", t_975(60.0));
        assert!((t_975(f64::INFINITY) - 1.96).abs() < 1e-3);
        assert!(t_975(f64::NAN).is_nan());
    }

    #[test]
    fn batch_means_cover_the_true_mean_of_correlated_series() {
        // 1,000 AR(1) series with lag-one correlation 0.5 (each rate remembers half of the
        // last one's deviation): the i.i.d. error would cover about 76% of the time.
        let mut rng = fastrand::Rng::with_seed(29);
        let trials = 1000;
        let mut covered = 0;
        let mut iid_covered = 0;
        for _ in 0..trials {
            let series = ar1(&mut rng, 400, 100.0, 0.5, 5.0);
            let e = Estimate::of_series(&series);
            if (e.mean - 100.0).abs() <= e.half_width() {
                covered += 1;
            }
            let n = series.len() as f64;
            let var = series.iter().map(|x| (x - e.mean).powi(2)).sum::<f64>() / (n - 1.0);
            if (e.mean - 100.0).abs() <= 1.96 * (var / n).sqrt() {
                iid_covered += 1;
            }
        }
        assert!(
            (930..=970).contains(&covered),
            "covered {covered} of {trials}"
        );
        assert!(
            iid_covered < 850,
            "the i.i.d. interval covered {iid_covered}"
        );
    }

    #[test]
    fn pooled_processes_cover_the_true_mean() {
        // Two processes (two GPUs) of different lengths pooled as the report pools them.
        let mut rng = fastrand::Rng::with_seed(7);
        let mut covered = 0;
        for _ in 0..1000 {
            let a = ar1(&mut rng, 300, 100.0, 0.5, 5.0);
            let b = ar1(&mut rng, 200, 100.0, 0.5, 5.0);
            let e = Estimate::pooled([a.as_slice(), b.as_slice()]);
            if (e.mean - 100.0).abs() <= e.half_width() {
                covered += 1;
            }
        }
        assert!((930..=970).contains(&covered), "covered {covered}");
    }

    #[test]
    fn repeats_that_drift_apart_widen_the_interval_enough_to_cover() {
        // Five repeats of 100 rates each; every repeat is shifted by a drift of the machine
        // (2% standard deviation), which the rates inside a repeat cannot see.
        let mut rng = fastrand::Rng::with_seed(31);
        let (mut covered, mut pooled_covered) = (0, 0);
        for _ in 0..1000 {
            let repeats: Vec<Vec<f64>> = (0..5)
                .map(|_| {
                    let drift = 2.0 * normal(&mut rng);
                    ar1(&mut rng, 100, 100.0 + drift, 0.5, 2.0)
                })
                .collect();
            let grouped: Vec<Vec<&[f64]>> = repeats.iter().map(|r| vec![r.as_slice()]).collect();
            let e = Estimate::pooled_repeats(&grouped);
            if (e.mean - 100.0).abs() <= e.half_width() {
                covered += 1;
            }
            let p = Estimate::pooled(repeats.iter().map(Vec::as_slice));
            if (p.mean - 100.0).abs() <= p.half_width() {
                pooled_covered += 1;
            }
        }
        assert!((930..=970).contains(&covered), "covered {covered}");
        assert!(
            pooled_covered < 700,
            "batch means alone covered {pooled_covered}"
        );
    }

    #[test]
    fn repeats_without_drift_keep_the_batch_means_interval_mostly() {
        let mut rng = fastrand::Rng::with_seed(37);
        let mut covered = 0;
        for _ in 0..1000 {
            let repeats: Vec<Vec<f64>> = (0..3)
                .map(|_| ar1(&mut rng, 100, 100.0, 0.5, 2.0))
                .collect();
            let grouped: Vec<Vec<&[f64]>> = repeats.iter().map(|r| vec![r.as_slice()]).collect();
            let e = Estimate::pooled_repeats(&grouped);
            if (e.mean - 100.0).abs() <= e.half_width() {
                covered += 1;
            }
        }
        // The larger of two variances: still about 95%.
        assert!((930..=970).contains(&covered), "covered {covered}");
        let one = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            Estimate::pooled_repeats(&[vec![&one[..]]]),
            Estimate::of_series(&one)
        );
    }

    #[test]
    fn short_constant_and_empty_series() {
        assert!(Estimate::of_series(&[1.0, 2.0, 3.0]).half_width().is_nan());
        assert_eq!(Estimate::of_series(&[1.0, 2.0, 3.0]).mean, 2.0);
        assert_eq!(Estimate::of_series(&[5.0; 9]).half_width(), 0.0);
        assert!(Estimate::of_series(&[]).mean.is_nan());
        assert!(
            Estimate::pooled([[1.0; 9].as_slice(), &[2.0]])
                .variance
                .is_nan()
        );
        let sum = Estimate::weighted_sum([(2.0, Estimate::of_series(&[5.0; 9]))]);
        assert_eq!((sum.mean, sum.half_width()), (10.0, 0.0));
    }

    #[test]
    fn a_planted_warm_up_is_found_within_a_few_observations() {
        // 12 observations climbing from 40% to 100% of the steady rate, then 88 steady ones.
        let mut rng = fastrand::Rng::with_seed(3);
        let warm = 12;
        let mut near = 0;
        for _ in 0..200 {
            let mut series = ar1(&mut rng, 100, 100.0, 0.5, 2.0);
            for (i, x) in series.iter_mut().take(warm).enumerate() {
                *x -= 60.0 * (1.0 - i as f64 / warm as f64);
            }
            let found = steady_state_start(&series);
            if found.abs_diff(warm) <= 3 {
                near += 1;
            }
        }
        assert!(
            near >= 190,
            "found within 3 observations {near} times of 200"
        );
    }

    #[test]
    fn a_steady_series_has_little_warm_up() {
        let mut rng = fastrand::Rng::with_seed(5);
        let mut starts = Vec::new();
        for _ in 0..200 {
            starts.push(steady_state_start(&ar1(&mut rng, 100, 100.0, 0.5, 2.0)));
        }
        starts.sort_unstable();
        assert!(starts[100] <= 5, "median start {}", starts[100]);
        assert_eq!(steady_state_start(&[1.0, 2.0, 3.0]), 0);
    }

    /// Judgements of `trials` comparisons of two runs of two processes each, the second run's
    /// rates scaled by `factor`.
    fn judgements(seed: u64, factor: f64, threshold: f64) -> [usize; 3] {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut counts = [0; 3];
        let run = |rng: &mut fastrand::Rng, scale: f64| {
            let series: Vec<Vec<f64>> = (0..2)
                .map(|_| {
                    ar1(rng, 100, 100.0, 0.5, 2.0)
                        .iter()
                        .map(|x| x * scale)
                        .collect()
                })
                .collect();
            Estimate::pooled(series.iter().map(Vec::as_slice))
        };
        for _ in 0..1000 {
            let a = run(&mut rng, 1.0);
            let b = run(&mut rng, factor);
            let i = match judge(&a.change_to(&b), threshold) {
                Judgement::Better => 0,
                Judgement::Worse => 1,
                Judgement::CannotTell => 2,
            };
            counts[i] += 1;
        }
        counts
    }

    #[test]
    fn two_runs_of_the_same_machine_cannot_tell() {
        let [better, worse, cannot] = judgements(11, 1.0, 1.0);
        assert!(
            cannot >= 950,
            "better {better}, worse {worse}, cannot tell {cannot}"
        );
    }

    #[test]
    fn real_changes_beyond_the_threshold_are_seen_and_small_ones_are_not() {
        let [_, worse, _] = judgements(13, 0.95, 1.0);
        assert!(worse >= 950, "a 5% slowdown was seen {worse} times");
        let [better, _, _] = judgements(17, 1.05, 1.0);
        assert!(better >= 950, "a 5% speed-up was seen {better} times");
        // A fifth of a percent is under a 1% threshold (the change of two runs has a standard
        // error of about 0.4% here).
        let [better, worse, _] = judgements(19, 1.002, 1.0);
        assert!(better + worse <= 50, "better {better}, worse {worse}");
    }

    /// A run of `repeats` repeats of 100 AR(1) rates each, every repeat's level drifting by a
    /// normal share `drift` of the mean, scaled by `factor`.
    fn drifting_run(
        rng: &mut fastrand::Rng,
        repeats: usize,
        drift: f64,
        factor: f64,
    ) -> Vec<Vec<f64>> {
        (0..repeats)
            .map(|_| {
                let level = 100.0 * (1.0 + drift * normal(rng)) * factor;
                ar1(rng, 100, level, 0.5, 0.2)
            })
            .collect()
    }

    fn grouped(run: &[Vec<f64>]) -> Vec<Vec<&[f64]>> {
        run.iter().map(|r| vec![r.as_slice()]).collect()
    }

    /// Issue 53: two runs of a machine whose level drifts between runs (by 1.5% here) each have
    /// a narrow interval of their own, so that at a threshold of 0 most A/A pairs say better or
    /// worse; the default noise floor says cannot tell for nearly all, and still sees a 10%
    /// change.
    #[test]
    fn the_default_noise_floor_keeps_a_drifting_a_a_pair_from_crying_wolf() {
        let mut rng = fastrand::Rng::with_seed(41);
        let (mut wolf_at_zero, mut wolf, mut seen) = (0, 0, 0);
        for _ in 0..1000 {
            let a = Estimate::pooled(drifting_run(&mut rng, 1, 0.015, 1.0)[0].chunks(50));
            let b = Estimate::pooled(drifting_run(&mut rng, 1, 0.015, 1.0)[0].chunks(50));
            let slower = Estimate::pooled(drifting_run(&mut rng, 1, 0.015, 0.9)[0].chunks(50));
            let told = |j: Judgement| usize::from(j != Judgement::CannotTell);
            wolf_at_zero += told(judge(&a.change_to(&b), 0.0));
            wolf += told(judge(&a.change_to(&b), DEFAULT_NOISE_FLOOR_PCT));
            seen += usize::from(
                judge(&a.change_to(&slower), DEFAULT_NOISE_FLOOR_PCT) == Judgement::Worse,
            );
        }
        assert!(
            wolf_at_zero > 500,
            "a threshold of 0 cried wolf {wolf_at_zero} times"
        );
        assert!(
            wolf <= 50,
            "the default floor cried wolf {wolf} times of 1000"
        );
        assert!(seen >= 950, "a 10% slowdown was seen {seen} times of 1000");
    }

    /// The floor measured from repeats holds the change of two runs of a drifting machine 95%
    /// of the time (a prediction interval), whatever the drift, and grows with it.
    #[test]
    fn the_floor_from_repeats_holds_the_change_of_two_runs_of_the_machine() {
        let mut rng = fastrand::Rng::with_seed(43);
        for drift in [0.005, 0.05] {
            let mut held = 0;
            let mut floors = Vec::new();
            for _ in 0..1000 {
                let a = drifting_run(&mut rng, 3, drift, 1.0);
                let b = drifting_run(&mut rng, 2, drift, 1.0);
                let floor = repeat_noise_floor_pct(&grouped(&a), &grouped(&b)).unwrap();
                let mean = |run: &[Vec<f64>]| Estimate::pooled(run.iter().map(Vec::as_slice)).mean;
                let change = (mean(&b) / mean(&a) - 1.0) * 100.0;
                held += usize::from(change.abs() <= floor);
                floors.push(floor);
            }
            assert!(
                (930..=970).contains(&held),
                "drift {drift}: held {held} of 1000"
            );
            floors.sort_by(f64::total_cmp);
            let median = floors[500];
            assert!(
                median > 100.0 * drift && median < 1000.0 * drift,
                "drift {drift}: median floor {median}%"
            );
        }
        // Neither run with two repeats: nothing measured; one run with them is enough.
        let single = drifting_run(&mut rng, 1, 0.01, 1.0);
        let three = drifting_run(&mut rng, 3, 0.01, 1.0);
        assert_eq!(
            repeat_noise_floor_pct(&grouped(&single), &grouped(&single)),
            None
        );
        assert!(repeat_noise_floor_pct(&grouped(&single), &grouped(&three)).is_some());
        assert_eq!(repeat_noise_floor_pct(&[], &grouped(&three)), None);
    }

    #[test]
    fn an_estimate_rebuilt_from_its_interval_is_never_narrower() {
        let mut rng = fastrand::Rng::with_seed(23);
        let a = Estimate::of_series(&ar1(&mut rng, 100, 100.0, 0.5, 2.0));
        let b = Estimate::of_series(&ar1(&mut rng, 100, 100.0, 0.5, 2.0));
        let rebuilt = |e: &Estimate| Estimate::from_interval(e.mean, e.half_width());
        assert!((rebuilt(&a).half_width() - a.half_width()).abs() < 1e-9);
        let exact = a.change_to(&b).half_width();
        let stored = rebuilt(&a).change_to(&rebuilt(&b)).half_width();
        assert!(
            stored >= exact && stored < exact * 1.2,
            "{stored} vs {exact}"
        );
        assert!(Estimate::from_interval(1.0, f64::NAN).half_width().is_nan());
        assert_eq!(Estimate::from_interval(1.0, 0.0).half_width(), 0.0);
    }

    #[test]
    fn the_change_interval_is_in_percent() {
        let a = Estimate {
            mean: 100.0,
            variance: 1.0,
            dof: 10.0,
        };
        let b = Estimate {
            mean: 110.0,
            variance: 1.21,
            dof: 10.0,
        };
        let change = a.change_to(&b);
        assert!((change.mean - 10.0).abs() < 1e-9);
        // (1.1)² × (0.0001 + 0.0001) × 100²
        assert!((change.variance - 2.42).abs() < 1e-9, "{change:?}");
        assert!((change.dof - 20.0).abs() < 1e-9);
    }

    /// The stop's promise, checked the way a person reads it: the report's interval of the
    /// stopped run (two more rates land after the stop) is within the target.
    #[test]
    fn a_stop_keeps_its_promise_in_the_report() {
        let target = 0.02;
        let rule = PrecisionRule::new(target);
        let eager = PrecisionRule {
            min_observations: 10,
            hold: 1,
            ..rule
        };
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut stops, mut over, mut far_over, mut eager_over) = (0, 0, 0, 0);
        for _ in 0..1000 {
            let series = ar1(&mut rng, 182, 100.0, 0.5, 2.0);
            let stop_of = |rule: &PrecisionRule| {
                let mut streak = 0;
                (1..=180).find(|&n| rule.check([&series[..n]], &mut streak).is_some())
            };
            let reported = |n: usize| Estimate::of_series(&series[..n + 2]).relative_half_width();
            if let Some(n) = stop_of(&eager) {
                eager_over += usize::from(reported(n) > target);
            }
            if let Some(n) = stop_of(&rule) {
                stops += 1;
                over += usize::from(reported(n) > target);
                far_over += usize::from(reported(n) > 1.5 * target);
            }
        }
        assert!(stops > 950, "the target is reachable here: {stops} stops");
        assert!(
            eager_over > 400,
            "stopping at the first check is optimistic: {eager_over}"
        );
        assert!(
            over <= 50,
            "{over} of {stops} stops over the target in the report"
        );
        assert_eq!(far_over, 0, "{far_over} stops far over the target");
    }
}
