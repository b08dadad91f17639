//! Sampler cost, for `cargo xtask bench` (run in release): CPU time per sample of the sampler
//! thread (host `cpudata` + the process tree, as beside a CPU benchmark), and the slowdown of a
//! CPU-bound loop while the sampler runs at 0.1 s against the same loop without it. Prints one
//! JSON object. The slowdown is the median over adjacent pairs of runs (with, without), which
//! resists the drifts of a shared machine better than comparing two averages.

#![allow(clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use milabench_system::{GpuDiscovery, Sampler, SamplerConfig};

const INTERVAL: Duration = Duration::from_millis(100);
const PAIRS: usize = 11;

/// About 0.7 s of integer work on one core, the same every time.
fn workload() -> Duration {
    let start = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..300_000_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    black_box(x);
    start.elapsed()
}

fn config() -> SamplerConfig {
    SamplerConfig::new(INTERVAL).process(std::process::id())
}

fn main() {
    // Warm up (page faults, frequency).
    workload();
    let mut plain = Vec::new();
    let mut sampled = Vec::new();
    let mut samples = 0u64;
    let mut cpu = Duration::ZERO;
    for _ in 0..PAIRS {
        plain.push(workload());
        let handle = Sampler::start(GpuDiscovery::none(), config(), |e| {
            black_box(e);
        })
        .expect("sampler starts");
        sampled.push(workload());
        let stats = handle.stop();
        samples += stats.samples;
        cpu += stats.cpu_time.unwrap_or_default();
    }
    let mut ratios: Vec<f64> = plain
        .iter()
        .zip(&sampled)
        .map(|(p, s)| s.as_secs_f64() / p.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios[ratios.len() / 2];
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64()
    };
    let (base, with) = (median(&mut plain), median(&mut sampled));
    let per_sample_us = cpu.as_secs_f64() * 1e6 / samples.max(1) as f64;
    println!(
        "{}",
        serde_json::json!({
            "interval_s": INTERVAL.as_secs_f64(),
            "samples": samples,
            "cpu_per_sample_us": per_sample_us,
            "cpu_share_pct": per_sample_us / 1e6 / INTERVAL.as_secs_f64() * 100.0,
            "loop_plain_ms": base * 1e3,
            "loop_sampled_ms": with * 1e3,
            "slowdown_pct": (ratio - 1.0) * 100.0,
            "target_pct": 0.2,
        })
    );
}
