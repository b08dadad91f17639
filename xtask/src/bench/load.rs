//! The load generator's measurement truth: the release build of `milabench-load`'s
//! `bench_truth` example drives the mock server (known TTFT, gap and token count) at 10, 200
//! and 1,000 requests/s; targets: medians within 0.5 ms of the truth at 10 requests/s and within
//! 2 ms at 1,000.

use anyhow::Context;

/// Runs the measurement and prints a line per rate.
pub fn run(seconds: u64) -> anyhow::Result<()> {
    eprintln!("==> bench: load (building the release measurement program)");
    let out = super::release_example_output(
        "milabench-load",
        "bench_truth",
        &[seconds.to_string()],
        "load",
    )?;
    for line in out.lines() {
        let f: serde_json::Value =
            serde_json::from_str(line).context("measurement output is not JSON")?;
        let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
        let rate = num("rate");
        let tolerance = if rate <= 10.0 { 0.5 } else { 2.0 };
        let worst = [
            "ttft_median_off_ms",
            "tpot_median_off_ms",
            "e2e_median_off_ms",
        ]
        .iter()
        .map(|k| num(k).abs())
        .fold(0.0, f64::max);
        println!(
            "{:<40} {:>8.1} req/s achieved, {} failed; median off truth: ttft {:+.3} tpot {:+.3} e2e {:+.3} ms; p99 late {:.3} ms; KS p {:.3}; CPU {:.0} us/request; target |off| < {tolerance} ms: {}",
            format!("load truth at {rate} req/s"),
            num("achieved"),
            f["failed"],
            num("ttft_median_off_ms"),
            num("tpot_median_off_ms"),
            num("e2e_median_off_ms"),
            num("lateness_p99_ms"),
            num("ks_p_value"),
            num("cpu_per_request_us"),
            if worst < tolerance { "met" } else { "NOT met" },
        );
    }
    Ok(())
}
