//! Arrival schedules and how well actual arrivals follow them: seeded Poisson arrivals (the
//! same for the same seed, drawn one at a time as a run goes), and a Kolmogorov–Smirnov test of inter-arrival times against the
//! exponential distribution they were drawn from.

use std::time::Duration;

/// Arrival offsets from the start of a run of a Poisson process at `rate` requests per second,
/// for `duration`, at most `max` of them; the same seed gives the same schedule.
pub fn poisson(rate: f64, duration: Duration, max: usize, seed: u64) -> Vec<Duration> {
    PoissonArrivals::new(rate, duration, max, seed).collect()
}

/// The arrivals [`poisson`] gives, in the same order, drawn one at a time as they are asked
/// for (a long run holds none of those to come).
#[derive(Debug, Clone)]
pub struct PoissonArrivals {
    rng: fastrand::Rng,
    rate: f64,
    end: f64,
    t: f64,
    left: usize,
}

impl PoissonArrivals {
    /// The arrivals at `rate` requests per second within `duration`, at most `max`, drawn with
    /// `seed`.
    pub fn new(rate: f64, duration: Duration, max: usize, seed: u64) -> PoissonArrivals {
        PoissonArrivals {
            rng: fastrand::Rng::with_seed(seed),
            rate,
            end: duration.as_secs_f64(),
            t: 0.0,
            left: max,
        }
    }
}

impl Iterator for PoissonArrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.left == 0 {
            return None;
        }
        // Inverse transform: -ln(U) / rate with U in (0, 1].
        self.t += -(1.0 - self.rng.f64()).ln() / self.rate;
        if self.t >= self.end {
            self.left = 0;
            return None;
        }
        self.left -= 1;
        Some(Duration::from_secs_f64(self.t))
    }
}

/// The result of a one-sample Kolmogorov–Smirnov test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct KsTest {
    /// Number of samples.
    pub n: usize,
    /// The largest distance between the empirical and the expected distribution functions.
    pub statistic: f64,
    /// Probability of a distance at least this large if the samples follow the distribution
    /// (asymptotic Kolmogorov distribution with Stephens' small-sample correction).
    pub p_value: f64,
}

/// Tests `samples` (inter-arrival times in seconds) against the exponential distribution of
/// mean `1 / rate`. NaN statistic and p-value without samples.
pub fn ks_exponential(samples: &[f64], rate: f64) -> KsTest {
    let n = samples.len();
    if n == 0 {
        return KsTest {
            n,
            statistic: f64::NAN,
            p_value: f64::NAN,
        };
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let nf = n as f64;
    let statistic = sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let cdf = 1.0 - (-rate * x.max(0.0)).exp();
            let above = (i + 1) as f64 / nf - cdf;
            let below = cdf - i as f64 / nf;
            above.max(below)
        })
        .fold(0.0, f64::max);
    let root = nf.sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * statistic;
    KsTest {
        n,
        statistic,
        p_value: kolmogorov_tail(lambda),
    }
}

/// `P(K > lambda)` of the Kolmogorov distribution: `2 Σ (-1)^(k-1) exp(-2 k² λ²)`.
fn kolmogorov_tail(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u32 % 2 == 1 { term } else { -term };
        if term < 1e-12 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Successive differences of `times` (seconds, in order).
pub fn gaps(times: &[f64]) -> Vec<f64> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first arrivals (ns) of seed 7 at 200 requests/s, as drawn all at once before the
    /// schedule was streamed.
    const PINNED_ARRIVALS_NS: [u128; 3] = [7_422_443, 8_680_711, 15_015_104];

    #[test]
    fn poisson_schedule_is_seeded_bounded_and_at_its_rate() {
        let a = poisson(200.0, Duration::from_secs(10), usize::MAX, 7);
        assert_eq!(a, poisson(200.0, Duration::from_secs(10), usize::MAX, 7));
        assert_ne!(a, poisson(200.0, Duration::from_secs(10), usize::MAX, 8));
        assert!((a.len() as f64 - 2000.0).abs() < 150.0, "{}", a.len());
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(*a.last().unwrap() < Duration::from_secs(10));
        assert_eq!(poisson(200.0, Duration::from_secs(10), 5, 7).len(), 5);
        // The schedule as drawn before arrivals were made lazily (seed 7), and streamed alike.
        let first: Vec<u128> = a.iter().take(3).map(Duration::as_nanos).collect();
        assert_eq!(first, PINNED_ARRIVALS_NS);
        let streamed: Vec<Duration> =
            PoissonArrivals::new(200.0, Duration::from_secs(10), usize::MAX, 7).collect();
        assert_eq!(streamed, a);
    }

    #[test]
    fn ks_accepts_the_exponential_and_rejects_a_constant() {
        let times: Vec<f64> = poisson(50.0, Duration::from_secs(40), usize::MAX, 3)
            .iter()
            .map(Duration::as_secs_f64)
            .collect();
        let good = ks_exponential(&gaps(&times), 50.0);
        assert!(good.p_value > 0.05, "{good:?}");
        let constant = vec![0.02; 500];
        let bad = ks_exponential(&constant, 50.0);
        assert!(bad.p_value < 1e-6, "{bad:?}");
        // Right shape, wrong rate.
        let wrong = ks_exponential(&gaps(&times), 80.0);
        assert!(wrong.p_value < 1e-6, "{wrong:?}");
    }

    #[test]
    fn kolmogorov_tail_matches_known_values() {
        // Critical values of the Kolmogorov distribution: P(K > 1.358) = 0.05, P(K > 1.628) = 0.01.
        assert!((kolmogorov_tail(1.358) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_tail(1.628) - 0.01).abs() < 1e-3);
        assert_eq!(kolmogorov_tail(0.0), 1.0);
    }
}
