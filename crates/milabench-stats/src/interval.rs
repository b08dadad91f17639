//! The one 95% interval type, and the intervals of a mean and of a quantile.
//!
//! Every interval the workspace shows or stores is an [`Interval`]: the report's figures and
//! changes, `load`'s latencies and throughputs, an SLO search's rate, benchit's runtimes. With
//! the `serde` feature it serialises as `{"low": .., "high": ..}`, `null` for a missing bound.

use crate::Estimate;

/// A 95% interval from `low` to `high`; NaN bounds when there is none.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Interval {
    /// Lower bound.
    #[cfg_attr(feature = "serde", serde(serialize_with = "finite_or_null"))]
    pub low: f64,
    /// Upper bound.
    #[cfg_attr(feature = "serde", serde(serialize_with = "finite_or_null"))]
    pub high: f64,
}

/// Writes a float, or `null` for NaN and infinities.
#[cfg(feature = "serde")]
fn finite_or_null<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_none()
    }
}

impl Interval {
    /// No interval.
    pub const NAN: Interval = Interval {
        low: f64::NAN,
        high: f64::NAN,
    };

    /// `center ± half_width`.
    pub fn around(center: f64, half_width: f64) -> Interval {
        Interval {
            low: center - half_width,
            high: center + half_width,
        }
    }

    /// The interval of an estimate, centred on its mean.
    pub fn of(estimate: &Estimate) -> Interval {
        Interval::around(estimate.mean, estimate.half_width())
    }

    /// Half the width (NaN for no interval).
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    /// Whether both bounds are known (finite).
    pub fn is_known(&self) -> bool {
        self.low.is_finite() && self.high.is_finite()
    }

    /// The distribution-free interval of the `q` quantile of `sorted` (ascending): the order
    /// statistics of ranks `nq ± 1.96 √(nq(1-q))`, which assume nothing about the
    /// distribution. A bound whose rank falls outside the sample is NaN; so are both for an
    /// empty sample.
    pub fn of_quantile(sorted: &[f64], q: f64) -> Interval {
        let n = sorted.len() as f64;
        let spread = 1.96 * (n * q * (1.0 - q)).sqrt();
        let rank = |r: f64| {
            let r = r.round();
            if r >= 1.0 && r <= n {
                sorted[r as usize - 1]
            } else {
                f64::NAN
            }
        };
        Interval {
            low: rank(n * q - spread),
            high: rank(n * q + spread + 1.0),
        }
    }
}

impl Estimate {
    /// The mean of independent `samples` (in any order) with the variance of that mean,
    /// `s² / n`, and `n - 1` degrees of freedom: Student's t interval of a mean. The variance
    /// is NaN for fewer than two samples.
    pub fn of_independent(samples: &[f64]) -> Estimate {
        let n = samples.len();
        if n == 0 {
            return Estimate::NAN;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Estimate {
                mean,
                ..Estimate::NAN
            };
        }
        let dof = (n - 1) as f64;
        let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / dof;
        Estimate {
            mean,
            variance: variance / n as f64,
            dof,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_its_centre_plus_or_minus_its_half_width() {
        let i = Interval::around(10.0, 2.5);
        assert_eq!((i.low, i.high, i.half_width()), (7.5, 12.5, 2.5));
        assert!(i.is_known());
        assert!(!Interval::NAN.is_known());
        assert!(Interval::NAN.half_width().is_nan());
    }

    #[test]
    fn students_interval_of_independent_samples() {
        // s = 2, t(2 dof) = 4.302653: 42 ± 4.302653 × 2 / √3.
        let e = Estimate::of_independent(&[40.0, 44.0, 42.0]);
        let i = Interval::of(&e);
        let half = 4.302_652_729_911_275 * 2.0 / 3f64.sqrt();
        assert!((i.low - (42.0 - half)).abs() < 1e-9, "{i:?}");
        assert!((i.high - (42.0 + half)).abs() < 1e-9, "{i:?}");
        let one = Estimate::of_independent(&[5.0]);
        assert_eq!(one.mean, 5.0);
        assert!(!Interval::of(&one).is_known());
        assert!(Estimate::of_independent(&[]).mean.is_nan());
    }

    #[test]
    fn a_quantile_interval_is_made_of_order_statistics() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        let median = Interval::of_quantile(&sorted, 0.5);
        assert!(median.low < 50.5 && median.high > 50.5, "{median:?}");
        assert_eq!(median.low.fract(), 0.0);
        // The 99th percentile of 100 samples: the upper rank falls past the last one.
        assert!(Interval::of_quantile(&sorted, 0.99).high.is_nan());
        assert!(!Interval::of_quantile(&[], 0.5).is_known());
    }
}
