//! Seeded bootstrap confidence intervals (no global randomness: the same seed gives the same
//! interval).

use serde::Serialize;

/// A 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// 2.5th percentile of the resampled statistic.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub low: f64,
    /// 97.5th percentile of the resampled statistic.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub high: f64,
}

impl Interval {
    /// No interval.
    pub const NAN: Interval = Interval {
        low: f64::NAN,
        high: f64::NAN,
    };

    /// The 2.5th and 97.5th percentiles of `samples` (sorted in place; NaN ignored).
    pub fn from_samples(samples: &mut Vec<f64>) -> Interval {
        samples.retain(|x| !x.is_nan());
        if samples.is_empty() {
            return Interval::NAN;
        }
        samples.sort_by(f64::total_cmp);
        Interval {
            low: percentile(samples, 0.025),
            high: percentile(samples, 0.975),
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A small, fast, seedable generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Sorts, drops one min and one max when there are five values or more (the report's rule).
pub(crate) fn trimmed(values: &[f64]) -> Vec<f64> {
    let mut xs: Vec<f64> = values.to_vec();
    xs.sort_by(f64::total_cmp);
    if xs.len() >= 5 {
        xs.pop();
        xs.remove(0);
    }
    xs
}

/// Resamples the trimmed `values` with replacement `resamples` times; returns the 95% interval
/// of the mean and each resample's mean.
pub fn bootstrap_mean(values: &[f64], resamples: usize, seed: u64) -> (Interval, Vec<f64>) {
    let xs = trimmed(values);
    if xs.is_empty() {
        return (Interval::NAN, Vec::new());
    }
    let mut rng = SplitMix64::new(seed);
    let means: Vec<f64> = (0..resamples)
        .map(|_| {
            let sum: f64 = (0..xs.len()).map(|_| xs[rng.below(xs.len())]).sum();
            sum / xs.len() as f64
        })
        .collect();
    let mut sorted = means.clone();
    (Interval::from_samples(&mut sorted), means)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_interval() {
        let xs: Vec<f64> = (0..50).map(|i| 100.0 + f64::from(i % 7)).collect();
        let (a, _) = bootstrap_mean(&xs, 500, 7);
        let (b, _) = bootstrap_mean(&xs, 500, 7);
        let (c, _) = bootstrap_mean(&xs, 500, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mean = trimmed(&xs).iter().sum::<f64>() / 48.0;
        assert!(a.low < mean && mean < a.high, "{a:?} {mean}");
    }
}
