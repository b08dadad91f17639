//! What a measured rate may be: the report and the validation layers judge rates by the same
//! rule.

use std::fmt;

/// The largest rate taken as a measurement, items per second. No benchmark comes within many
/// orders of magnitude of it; a larger value comes from a division by a near-zero time, and
/// averaging such values overflows to infinity.
pub const MAX_RATE: f64 = 1e12;

/// Why a rate is not a measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateFault {
    /// NaN.
    NotANumber,
    /// Below zero.
    Negative(f64),
    /// Infinite, or above [`MAX_RATE`].
    TooLarge(f64),
}

impl RateFault {
    /// `Some(fault)` when `rate` cannot be a measured rate.
    pub fn of(rate: f64) -> Option<RateFault> {
        if rate.is_nan() {
            Some(RateFault::NotANumber)
        } else if rate < 0.0 {
            Some(RateFault::Negative(rate))
        } else if rate > MAX_RATE {
            Some(RateFault::TooLarge(rate))
        } else {
            None
        }
    }
}

impl fmt::Display for RateFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateFault::NotANumber => f.write_str("NaN"),
            RateFault::Negative(x) => write!(f, "{x} (negative)"),
            RateFault::TooLarge(x) if x.is_infinite() => f.write_str("infinite"),
            RateFault::TooLarge(x) => write!(f, "{x:e} (above {MAX_RATE:e} items/s)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finite_non_negative_plausible_rates_are_measurements() {
        for ok in [0.0, 12.5, 7878.45, MAX_RATE] {
            assert_eq!(RateFault::of(ok), None, "{ok}");
        }
        assert_eq!(RateFault::of(f64::NAN), Some(RateFault::NotANumber));
        assert_eq!(RateFault::of(-3.0), Some(RateFault::Negative(-3.0)));
        assert_eq!(
            RateFault::of(f64::INFINITY),
            Some(RateFault::TooLarge(f64::INFINITY))
        );
        assert_eq!(RateFault::of(1e308), Some(RateFault::TooLarge(1e308)));
        assert_eq!(
            RateFault::of(f64::NEG_INFINITY).unwrap().to_string(),
            "-inf (negative)"
        );
        assert_eq!(
            RateFault::of(1e308).unwrap().to_string(),
            "1e308 (above 1e12 items/s)"
        );
        assert_eq!(
            RateFault::of(f64::INFINITY).unwrap().to_string(),
            "infinite"
        );
    }
}
