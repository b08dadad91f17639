//! Measurement truth of the load generator (for `cargo xtask bench --only load`), in four
//! modes:
//!
//! - `bench_truth truth [SECONDS]`: the mock server with known timing driven by the `server`
//!   scenario at 10, 200 and 1,000 requests/s, each for SECONDS (default 10);
//! - `bench_truth serve`: the mock server alone, for another client; prints its URL on a line
//!   and serves until its standard input closes;
//! - `bench_truth client URL RATE SECONDS`: one `server` run against the mock server at URL;
//! - `bench_truth guidellm REPORT`: the same figures read from GuideLLM's JSON report of one
//!   Poisson run against the mock server, so that both clients are judged by the same code;
//! - `bench_truth floor RATE SECONDS`: no client, a bare thread sleeping to the same Poisson
//!   schedule: the lateness this machine's timer and scheduler give, which no client can beat.
//!
//! Each run prints one JSON line: the requests, each median's distance from the truth, the
//! p50 and p99 lateness of the sends against the schedule, the Kolmogorov–Smirnov test of the
//! inter-arrival times against the exponential (p-value and statistic), when the schedule started (Unix seconds) and
//! for how long it ran, and (our client only) its own CPU per request and its p99 TTFT and ITL.

use std::io::{BufRead as _, Write as _};
use std::time::{Duration, Instant};

use milabench_load::mock::{self, MockConfig, MockServer};
use milabench_load::schedule::{gaps, ks_exponential, poisson};
use milabench_load::summary::quantile;
use milabench_load::{Scenario, Stop, run};
use serde_json::Value;

const USAGE: &str = "usage: bench_truth truth [SECONDS] | bench_truth serve | bench_truth client URL RATE SECONDS | bench_truth guidellm REPORT | bench_truth floor RATE SECONDS";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = MockConfig::default();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["truth"] => truth(config, 10),
        ["truth", seconds] => truth(config, seconds.parse()?),
        ["serve"] => serve(config),
        ["client", url, rate, seconds] => client(config, url, rate.parse()?, seconds.parse()?),
        ["guidellm", report] => guidellm(config, report),
        ["floor", rate, seconds] => floor(rate.parse()?, seconds.parse()?),
        _ => Err(USAGE.into()),
    }
}

/// The client against a mock server of its own at each rate.
fn truth(config: MockConfig, seconds: u64) -> Result<(), Box<dyn std::error::Error>> {
    for rate in [10.0, 200.0, 1000.0] {
        let server = MockServer::start(config)?;
        client(config, &server.url(), rate, seconds)?;
    }
    Ok(())
}

/// Serves until standard input closes.
fn serve(config: MockConfig) -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(config)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.url())?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        line?;
    }
    Ok(())
}

/// One `server` run at `rate` against the mock server at `url` (timed by `config`); prints its
/// JSON line.
fn client(
    config: MockConfig,
    url: &str,
    rate: f64,
    seconds: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let spec = mock::load_spec(url, Scenario::Server { rate }, Duration::from_secs(seconds))?;
    let result = run(&spec, &Stop::new())?;
    let step = &result.steps[0];
    let s = &step.summary;
    let line = serde_json::json!({
        "rate": rate,
        "requests": s.requests,
        "failed": s.failed,
        "achieved": s.request_throughput.value,
        "ttft_median_off_ms": off_ms(s.ttft.p50.value, config.ttft),
        "tpot_median_off_ms": off_ms(s.tpot.p50.value, config.gap),
        "itl_median_off_ms": off_ms(s.itl.p50.value, config.gap),
        "e2e_median_off_ms": off_ms(s.e2e.p50.value, config.e2e()),
        "ttft_p99_ms": s.ttft.p99.value * 1e3,
        "itl_p99_ms": s.itl.p99.value * 1e3,
        "lateness_p50_ms": s.lateness.p50 * 1e3,
        "lateness_p99_ms": s.lateness.p99 * 1e3,
        "ks_p_value": s.arrivals.map(|k| k.p_value),
        "ks_statistic": s.arrivals.map(|k| k.statistic),
        "cpu_per_request_us": s.cpu_per_request * 1e6,
        "started": step.started.duration_since(std::time::UNIX_EPOCH)?.as_secs_f64(),
        "seconds": seconds,
    });
    print_line(&line);
    Ok(())
}

/// The figures of GuideLLM's report of one Poisson run against the mock server (timed by
/// `config`). Its lateness is `resolve_start - targeted_start`: the moment its worker begins
/// sending a request against the moment the schedule meant, as our client's `sent - scheduled`;
/// its TPOT is its `inter_token_latency_ms`, (latency - TTFT) / (tokens - 1) as ours.
fn guidellm(config: MockConfig, report: &str) -> Result<(), Box<dyn std::error::Error>> {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(report)?)?;
    let bench = &report["benchmarks"][0];
    let requests = &bench["requests"];
    let listed = |status: &str| requests[status].as_array().cloned().unwrap_or_default();
    let (successful, errored) = (listed("successful"), listed("errored"));
    let mut sends: Vec<(f64, f64)> = [&successful, &errored, &listed("incomplete")]
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let timings = &r["info"]["timings"];
            Some((
                timings["targeted_start"].as_f64()?,
                timings["resolve_start"].as_f64()?,
            ))
        })
        .collect();
    sends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut late: Vec<f64> = sends.iter().map(|(due, sent)| sent - due).collect();
    late.sort_by(f64::total_cmp);
    let rate = bench["config"]["strategy"]["rate"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let sent: Vec<f64> = sends.iter().map(|s| s.1).collect();
    let median_ms = |metric: &str| {
        bench["metrics"][metric]["successful"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    let seconds = bench["duration"].as_f64().unwrap_or(f64::NAN);
    let ks = ks_exponential(&gaps(&sent), rate);
    let line = serde_json::json!({
        "rate": rate,
        "requests": sends.len(),
        "failed": errored.len(),
        "achieved": successful.len() as f64 / seconds,
        "ttft_median_off_ms": median_ms("time_to_first_token_ms") - config.ttft.as_secs_f64() * 1e3,
        "tpot_median_off_ms": median_ms("inter_token_latency_ms") - config.gap.as_secs_f64() * 1e3,
        "lateness_p50_ms": quantile(&late, 0.5).value * 1e3,
        "lateness_p99_ms": quantile(&late, 0.99).value * 1e3,
        "ks_p_value": ks.p_value,
        "ks_statistic": ks.statistic,
        "started": bench["start_time"],
        "seconds": seconds,
    });
    print_line(&line);
    Ok(())
}

/// A thread sleeping to the Poisson schedule of `client` at `rate` for `seconds`, with the
/// operating system's sleep as our dispatcher does: how late it wakes.
fn floor(rate: f64, seconds: u64) -> Result<(), Box<dyn std::error::Error>> {
    let schedule = poisson(rate, Duration::from_secs(seconds), usize::MAX, 1);
    let start = Instant::now() + Duration::from_millis(20);
    let mut late: Vec<f64> = schedule
        .iter()
        .map(|at| {
            let due = start + *at;
            while let Some(left) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(left);
            }
            due.elapsed().as_secs_f64()
        })
        .collect();
    late.sort_by(f64::total_cmp);
    print_line(&serde_json::json!({
        "rate": rate,
        "requests": late.len(),
        "lateness_p50_ms": quantile(&late, 0.5).value * 1e3,
        "lateness_p99_ms": quantile(&late, 0.99).value * 1e3,
    }));
    Ok(())
}

/// How far `measured` (seconds) is from `truth`, in milliseconds.
fn off_ms(measured: f64, truth: Duration) -> f64 {
    (measured - truth.as_secs_f64()) * 1e3
}

fn print_line(line: &Value) {
    #[allow(clippy::print_stdout)]
    {
        println!("{line}");
    }
}
