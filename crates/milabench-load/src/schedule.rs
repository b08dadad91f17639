//! Arrival schedules and how well actual arrivals follow them: seeded Poisson arrivals (the
//! same for the same seed, drawn one at a time as a run goes), burstier or smoother ones (gamma
//! gaps) and a ramp-up of the rate ([`ArrivalShape`]), and a Kolmogorov–Smirnov test of inter-arrival times against the
//! exponential distribution they were drawn from.

use std::time::Duration;

use serde::Serialize;

/// Arrival offsets from the start of a run of a Poisson process at `rate` requests per second,
/// for `duration`, at most `max` of them; the same seed gives the same schedule.
pub fn poisson(rate: f64, duration: Duration, max: usize, seed: u64) -> Vec<Duration> {
    PoissonArrivals::new(rate, duration, max, seed).collect()
}

/// How arrivals depart from a steady Poisson process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ArrivalShape {
    /// Shape of the gamma distribution of the gaps between arrivals, their mean kept at
    /// `1 / rate`: 1 is Poisson (exponential gaps), below 1 burstier, above 1 more even.
    pub burstiness: f64,
    /// How long the rate takes to rise linearly from 0 to its full value at the start of a run
    /// (zero: full rate at once).
    #[serde(serialize_with = "seconds")]
    pub ramp_up: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Default for ArrivalShape {
    /// Poisson at the full rate from the start.
    fn default() -> ArrivalShape {
        ArrivalShape {
            burstiness: 1.0,
            ramp_up: Duration::ZERO,
        }
    }
}

impl ArrivalShape {
    /// Whether these are a steady Poisson process's arrivals (the gaps then test against the
    /// exponential distribution).
    pub fn is_poisson(&self) -> bool {
        *self == ArrivalShape::default()
    }

    /// Whether the settings can work: a burstiness above 0.
    pub fn is_valid(&self) -> bool {
        self.burstiness.is_finite() && self.burstiness > 0.0
    }

    /// The time of the run at which a process at the full rate from the start would be at
    /// `u`: with a ramp of `r` seconds the rate's integral is `t² / 2r` until `r`, so
    /// `t = √(2 r u)` there and `u + r / 2` after.
    fn ramped(&self, u: f64) -> f64 {
        let r = self.ramp_up.as_secs_f64();
        if u < r / 2.0 {
            (2.0 * r * u).sqrt()
        } else {
            u + r / 2.0
        }
    }
}

/// The arrivals [`poisson`] gives, in the same order, drawn one at a time as they are asked
/// for (a long run holds none of those to come); with [`PoissonArrivals::shaped`], gamma gaps
/// and a ramp-up instead.
#[derive(Debug, Clone)]
pub struct PoissonArrivals {
    rng: fastrand::Rng,
    rate: f64,
    end: f64,
    /// Time of the last arrival as if the rate were full from the start.
    t: f64,
    left: usize,
    shape: ArrivalShape,
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
            shape: ArrivalShape::default(),
        }
    }

    /// The same arrivals drawn with `shape`'s gaps and ramp-up; the same seed gives the same
    /// schedule.
    pub fn shaped(self, shape: ArrivalShape) -> PoissonArrivals {
        PoissonArrivals { shape, ..self }
    }
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut fastrand::Rng) -> f64 {
    let u1 = 1.0 - rng.f64();
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A draw of the gamma distribution of shape `k` and scale 1 (Marsaglia and Tsang's method;
/// below shape 1, a draw of shape `k + 1` scaled by `U^(1/k)`).
fn gamma(rng: &mut fastrand::Rng, k: f64) -> f64 {
    if k < 1.0 {
        let u = 1.0 - rng.f64();
        return gamma(rng, k + 1.0) * u.powf(1.0 / k);
    }
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = 1.0 - rng.f64();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

impl Iterator for PoissonArrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.left == 0 {
            return None;
        }
        let k = self.shape.burstiness;
        self.t += if k == 1.0 {
            // Inverse transform: -ln(U) / rate with U in (0, 1].
            -(1.0 - self.rng.f64()).ln() / self.rate
        } else {
            // Gamma of shape k and scale 1 / (k rate): mean 1 / rate.
            gamma(&mut self.rng, k) / (k * self.rate)
        };
        let at = self.shape.ramped(self.t);
        if at >= self.end {
            self.left = 0;
            return None;
        }
        self.left -= 1;
        Some(Duration::from_secs_f64(at))
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

    /// Mean and coefficient of variation of the gaps of `shape`'s arrivals at 100/s for 200 s.
    fn gap_moments(shape: ArrivalShape, seed: u64) -> (f64, f64) {
        let times: Vec<f64> =
            PoissonArrivals::new(100.0, Duration::from_secs(200), usize::MAX, seed)
                .shaped(shape)
                .map(|d| d.as_secs_f64())
                .collect();
        let g = gaps(&times);
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn gamma_gaps_keep_the_rate_and_spread_by_the_burstiness() {
        for (k, cv) in [(0.25, 2.0), (1.0, 1.0), (4.0, 0.5)] {
            let shape = ArrivalShape {
                burstiness: k,
                ramp_up: Duration::ZERO,
            };
            let (mean, got) = gap_moments(shape, 5);
            assert!(
                (mean - 0.01).abs() < 0.0005,
                "burstiness {k}: mean gap {mean}"
            );
            // Gamma of shape k: coefficient of variation 1/√k.
            assert!((got - cv).abs() < 0.1 * cv, "burstiness {k}: cv {got}");
        }
        let bursty = ArrivalShape {
            burstiness: 0.5,
            ramp_up: Duration::ZERO,
        };
        assert_eq!(gap_moments(bursty, 5), gap_moments(bursty, 5));
        assert!(!bursty.is_poisson() && bursty.is_valid());
        assert!(
            !ArrivalShape {
                burstiness: 0.0,
                ..bursty
            }
            .is_valid()
        );
    }

    #[test]
    fn a_ramp_up_starts_slow_and_reaches_the_full_rate() {
        let shape = ArrivalShape {
            burstiness: 1.0,
            ramp_up: Duration::from_secs(10),
        };
        let times: Vec<f64> = PoissonArrivals::new(100.0, Duration::from_secs(20), usize::MAX, 9)
            .shaped(shape)
            .map(|d| d.as_secs_f64())
            .collect();
        let within = |a: f64, b: f64| times.iter().filter(|&&t| a <= t && t < b).count() as f64;
        // Rate 100 t / 10 over the ramp: 125 in its first half, 375 in its second, then 100/s.
        assert!(
            (within(0.0, 5.0) - 125.0).abs() < 40.0,
            "{}",
            within(0.0, 5.0)
        );
        assert!(
            (within(5.0, 10.0) - 375.0).abs() < 60.0,
            "{}",
            within(5.0, 10.0)
        );
        assert!(
            (within(10.0, 20.0) - 1000.0).abs() < 100.0,
            "{}",
            within(10.0, 20.0)
        );
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
