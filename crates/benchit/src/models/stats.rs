//! Statistics of one runtime's timed calls: latency mean, median, p90, p99, standard deviation,
//! extremes, throughput and the 95% confidence interval of the mean (Student's t from
//! `milabench-stats`, so that short runs get honest, wider intervals).

use milabench_stats::{Estimate, Interval, quantile_sorted};
use serde::{Deserialize, Serialize};

/// The summary of the timed calls of one model on one runtime. Latencies in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    /// Timed calls.
    pub iterations: usize,
    /// Mean latency.
    pub mean_ms: f64,
    /// Median latency.
    pub median_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Sample standard deviation (0 for a single call).
    pub std_ms: f64,
    /// Fastest call.
    pub min_ms: f64,
    /// Slowest call.
    pub max_ms: f64,
    /// Lower bound of the 95% confidence interval of the mean.
    pub ci95_low_ms: f64,
    /// Upper bound of the 95% confidence interval of the mean.
    pub ci95_high_ms: f64,
    /// Samples per second: batch size / mean latency.
    pub throughput: f64,
    /// The batch size the throughput counts.
    pub batch_size: u32,
}

impl Statistics {
    /// The 95% interval of the mean latency, ms.
    pub fn ci95(&self) -> Interval {
        Interval {
            low: self.ci95_low_ms,
            high: self.ci95_high_ms,
        }
    }

    /// The statistics of `times_ns`; `None` when there is no time.
    pub fn of(times_ns: &[u64], batch_size: u32) -> Option<Statistics> {
        if times_ns.is_empty() {
            return None;
        }
        let mut ms: Vec<f64> = times_ns.iter().map(|&t| t as f64 / 1e6).collect();
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let mean = ms.iter().sum::<f64>() / n as f64;
        let std = if n > 1 {
            (ms.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        // One call: a point interval, as a series of equal calls has.
        let ci95 = if n > 1 {
            Interval::of(&Estimate::of_independent(&ms))
        } else {
            Interval::around(mean, 0.0)
        };
        Some(Statistics {
            iterations: n,
            mean_ms: mean,
            median_ms: quantile_sorted(&ms, 0.5),
            p90_ms: quantile_sorted(&ms, 0.9),
            p99_ms: quantile_sorted(&ms, 0.99),
            std_ms: std,
            min_ms: ms[0],
            max_ms: ms[n - 1],
            ci95_low_ms: ci95.low,
            ci95_high_ms: ci95.high,
            throughput: if mean > 0.0 {
                f64::from(batch_size) * 1000.0 / mean
            } else {
                f64::INFINITY
            },
            batch_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn nothing_timed_gives_no_statistics() {
        assert_eq!(Statistics::of(&[], 1), None);
    }

    #[test]
    fn known_sample() {
        // 1..=10 ms.
        let times: Vec<u64> = (1..=10).map(|ms| ms * 1_000_000).collect();
        let s = Statistics::of(&times, 1).unwrap();
        assert_eq!(s.iterations, 10);
        assert!(close(s.mean_ms, 5.5, 1e-12));
        assert!(close(s.median_ms, 5.5, 1e-12));
        assert!(close(s.p90_ms, 9.1, 1e-12));
        assert!(close(s.p99_ms, 9.91, 1e-12));
        assert!(close(s.std_ms, 3.027_650_354, 1e-9));
        assert_eq!((s.min_ms, s.max_ms), (1.0, 10.0));
        // mean ± t(9) * s / sqrt(10) = 5.5 ± 2.262157 * 0.957427
        assert!(close(s.ci95_low_ms, 5.5 - 2.165_851, 1e-5));
        assert!(close(s.ci95_high_ms, 5.5 + 2.165_851, 1e-5));
        assert!(close(s.throughput, 1000.0 / 5.5, 1e-9));
    }

    #[test]
    fn throughput_counts_the_batch() {
        let s = Statistics::of(&[2_000_000, 2_000_000], 8).unwrap();
        assert!(close(s.throughput, 4000.0, 1e-9));
        assert_eq!(s.std_ms, 0.0);
        assert_eq!(s.ci95_low_ms, s.ci95_high_ms);
    }

    #[test]
    fn a_single_call_has_a_point_interval() {
        let s = Statistics::of(&[1_500_000], 1).unwrap();
        assert_eq!((s.mean_ms, s.median_ms, s.p99_ms), (1.5, 1.5, 1.5));
        assert_eq!((s.std_ms, s.ci95_low_ms, s.ci95_high_ms), (0.0, 1.5, 1.5));
    }

    /// The intervals use the exact t of `milabench-stats`: within the rounding of the printed
    /// three-decimal table benchit kept before.
    #[test]
    fn intervals_agree_with_the_printed_t_table() {
        for (n, t) in [(2u64, 12.706), (5, 2.776), (10, 2.262), (31, 2.042)] {
            let times: Vec<u64> = (1..=n).map(|ms| ms * 1_000_000).collect();
            let s = Statistics::of(&times, 1).unwrap();
            let half_width = s.ci95().half_width();
            let from_table = t * s.std_ms / (n as f64).sqrt();
            assert!(
                close(half_width / from_table, 1.0, 5.1e-4 / t),
                "n = {n}: {half_width} vs {from_table}"
            );
        }
    }
}
