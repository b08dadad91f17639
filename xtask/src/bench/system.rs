//! Telemetry sampler cost: the release build of `milabench-system`'s `bench_sampler` example
//! measures the sampler thread's CPU time per sample (host `cpudata` + the process tree) and the
//! slowdown of a CPU-bound loop with sampling every 0.1 s; baseline: the same loop without the
//! sampler, in adjacent runs of the same process.

use anyhow::Context;

/// Runs the measurement and prints its lines of the table.
pub fn run() -> anyhow::Result<()> {
    eprintln!("==> bench: sampler (building the release measurement program)");
    let line = super::release_example_output("milabench-system", "bench_sampler", &[], "sampler")?;
    let f: serde_json::Value =
        serde_json::from_str(line.trim()).context("measurement output is not JSON")?;
    let num = |key: &str| f[key].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<40} {:>9.1} us  baseline (poll interval {} s) share of one core {:>6.3}%",
        "sampler CPU time per sample",
        num("cpu_per_sample_us"),
        num("interval_s"),
        num("cpu_share_pct"),
    );
    let slowdown = num("slowdown_pct");
    let target = num("target_pct");
    println!(
        "{:<40} {:>9.2} %   baseline (no sampler) {:>7.1} ms  with {:>7.1} ms  target < {}%: {}",
        "sampler slowdown of a CPU loop at 0.1 s",
        slowdown,
        num("loop_plain_ms"),
        num("loop_sampled_ms"),
        target,
        if slowdown < target { "met" } else { "NOT met" }
    );
    Ok(())
}
