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
//! - `bench_truth aiperf DIR RATE SECONDS`, `bench_truth inference-perf DIR` and
//!   `bench_truth vllm REPORT`: the same figures read from the records of AIPerf, inference-perf
//!   and vLLM's `bench serve` (each in its own terms: see each function);
//! - `bench_truth floor RATE SECONDS`: no client, a bare thread sleeping to the same Poisson
//!   schedule: the lateness this machine's timer and scheduler give, which no client can beat.
//!
//! `BENCH_TRUTH_TOKENS` sets the mock server's tokens per answer (16 by default) for every
//! mode.
//!
//! Each run prints one JSON line: the requests, each median's distance from the truth, the
//! p50 and p99 lateness of the sends against the schedule, the Kolmogorov–Smirnov test of the
//! inter-arrival times against the exponential (p-value and statistic), when the schedule
//! started (Unix seconds) and for how long it ran (`clock`: Unix seconds, or the monotonic clock
//! where a tool records only that), the p50 and p99 of TTFT and ITL, and (our client only) its
//! own CPU per request and its latest send.

use std::io::{BufRead as _, Write as _};
use std::time::{Duration, Instant};

use milabench_load::mock::{self, MockConfig, MockServer};
use milabench_load::schedule::{gaps, ks_exponential, poisson};
use milabench_load::summary::quantile;
use milabench_load::{Scenario, Stop, run};
use serde_json::Value;

/// Tokens per answer of the mock server, in `serve` and in the truth the others compare with
/// (16 when unset): 1 measures what a request costs apart from its stream's events.
const TOKENS_VAR: &str = "BENCH_TRUTH_TOKENS";

const USAGE: &str = "usage: bench_truth truth [SECONDS] | bench_truth serve | bench_truth client URL RATE SECONDS | bench_truth guidellm REPORT | bench_truth aiperf DIR RATE SECONDS | bench_truth inference-perf DIR | bench_truth vllm REPORT | bench_truth floor RATE SECONDS";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config = MockConfig::default();
    if let Ok(tokens) = std::env::var(TOKENS_VAR) {
        config.output_tokens = tokens
            .parse()
            .map_err(|e| format!("{TOKENS_VAR}={tokens}: not a token count ({e})"))?;
    }
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["truth"] => truth(config, 10),
        ["truth", seconds] => truth(config, seconds.parse()?),
        ["serve"] => serve(config),
        ["client", url, rate, seconds] => client(config, url, rate.parse()?, seconds.parse()?),
        ["guidellm", report] => guidellm(config, report),
        ["aiperf", dir, rate, seconds] => aiperf(config, dir, rate.parse()?, seconds.parse()?),
        ["inference-perf", dir] => inference_perf(config, dir),
        ["vllm", report] => vllm(config, report),
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
        "ttft_p50_ms": s.ttft.p50.value * 1e3,
        "ttft_p99_ms": s.ttft.p99.value * 1e3,
        "itl_p50_ms": s.itl.p50.value * 1e3,
        "itl_p99_ms": s.itl.p99.value * 1e3,
        "lateness_p50_ms": s.lateness.p50 * 1e3,
        "lateness_p99_ms": s.lateness.p99 * 1e3,
        "lateness_max_ms": step.records.iter().map(|r| r.sent - r.scheduled).fold(0.0, f64::max) * 1e3,
        "ks_p_value": s.arrivals.map(|k| k.p_value),
        "ks_statistic": s.arrivals.map(|k| k.statistic),
        "cpu_per_request_us": s.cpu_per_request * 1e6,
        "started": step.started.duration_since(std::time::UNIX_EPOCH)?.as_secs_f64(),
        "seconds": seconds,
        "clock": "unix",
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
    let p99_ms = |metric: &str| {
        bench["metrics"][metric]["successful"]["percentiles"]["p99"]
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
        "ttft_p50_ms": median_ms("time_to_first_token_ms"),
        "ttft_p99_ms": p99_ms("time_to_first_token_ms"),
        "itl_p50_ms": median_ms("inter_token_latency_ms"),
        "itl_p99_ms": p99_ms("inter_token_latency_ms"),
        "lateness_p50_ms": quantile(&late, 0.5).value * 1e3,
        "lateness_p99_ms": quantile(&late, 0.99).value * 1e3,
        "ks_p_value": ks.p_value,
        "ks_statistic": ks.statistic,
        "started": bench["start_time"],
        "seconds": seconds,
        "clock": "unix",
    });
    print_line(&line);
    Ok(())
}

/// The figures of AIPerf's records (`profile_export.jsonl` in `dir`) of one Poisson run at `rate`
/// for `seconds`. AIPerf does not record the schedule: its lateness is `request_start -
/// credit_issued`, from when its timing service let a request go to when a worker sent it, a
/// lower bound on the lateness against the schedule. TTFT and ITL (its `inter_chunk_latency`,
/// one per event after the first) are its own, per request.
fn aiperf(
    config: MockConfig,
    dir: &str,
    rate: f64,
    seconds: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(std::path::Path::new(dir).join("profile_export.jsonl"))?;
    let records: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let failed = |r: &Value| !r["error"].is_null();
    let ns = |r: &Value, k: &str| r["metadata"][k].as_f64().unwrap_or(f64::NAN) / 1e9;
    let late: Vec<f64> = records
        .iter()
        .map(|r| ns(r, "request_start_ns") - ns(r, "credit_issued_ns"))
        .collect();
    let ok: Vec<&Value> = records.iter().filter(|r| !failed(r)).collect();
    let ttft: Vec<f64> = ok
        .iter()
        .filter_map(|r| r["metrics"]["time_to_first_token"]["value"].as_f64())
        .map(|ms| ms / 1e3)
        .collect();
    let itl: Vec<f64> = ok
        .iter()
        .filter_map(|r| r["metrics"]["inter_chunk_latency"]["value"].as_array())
        .flatten()
        .filter_map(Value::as_f64)
        .map(|ms| ms / 1e3)
        .collect();
    let starts: Vec<f64> = records.iter().map(|r| ns(r, "request_start_ns")).collect();
    print_line(&peer_line(
        config,
        PeerRun {
            rate,
            requests: records.len(),
            failed: records.len() - ok.len(),
            achieved: ok.len() as f64 / seconds,
            late: Percentiles::of(late),
            ttft: Percentiles::of(ttft),
            itl: Percentiles::of(itl),
            starts: &starts,
            clock: "unix",
        },
    ));
    Ok(())
}

/// The figures of inference-perf's reports in `dir` (one Poisson stage). Its lateness is its
/// `schedule_delay` (the send against its schedule, as ours); it keeps only percentiles of it and
/// of TTFT and ITL, which are read as they are. Its per-request records give the sends' times
/// (its monotonic clock).
fn inference_perf(config: MockConfig, dir: &str) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::Path::new(dir);
    let read = |name: &str| -> Result<Value, Box<dyn std::error::Error>> {
        Ok(serde_json::from_str(&std::fs::read_to_string(
            dir.join(name),
        )?)?)
    };
    let stage = read("stage_0_lifecycle_metrics.json")?;
    let requests = read("per_request_lifecycle_metrics.json")?;
    let load = &stage["load_summary"];
    let given = |v: &Value| Percentiles {
        p50: v["median"].as_f64().unwrap_or(f64::NAN),
        p99: v["p99"].as_f64().unwrap_or(f64::NAN),
    };
    let latency = &stage["successes"]["latency"];
    let starts: Vec<f64> = requests
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["start_time"].as_f64())
        .collect();
    print_line(&peer_line(
        config,
        PeerRun {
            rate: load["requested_rate"].as_f64().unwrap_or(f64::NAN),
            requests: starts.len(),
            failed: stage["failures"]["count"].as_u64().unwrap_or(0) as usize,
            achieved: load["achieved_rate"].as_f64().unwrap_or(f64::NAN),
            late: given(&load["schedule_delay"]),
            ttft: given(&latency["time_to_first_token"]),
            itl: given(&latency["inter_token_latency"]),
            starts: &starts,
            clock: "monotonic",
        },
    ));
    Ok(())
}

/// The figures of vLLM's `bench serve` result (`--save-result --save-detailed`). It does not
/// record the schedule: its lateness is its `client_queue_time`, from when its generator woke
/// from its sleep to the send, a lower bound (a late wake-up is not in it). TTFT and ITL are its
/// own per-request lists; its send times are its monotonic clock's.
fn vllm(config: MockConfig, report: &str) -> Result<(), Box<dyn std::error::Error>> {
    let r: Value = serde_json::from_str(&std::fs::read_to_string(report)?)?;
    let list = |k: &str| -> Vec<f64> {
        r[k].as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect()
    };
    let itl: Vec<f64> = r["itls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    let starts = list("start_times");
    let count = |k: &str| r[k].as_u64().unwrap_or(0) as usize;
    print_line(&peer_line(
        config,
        PeerRun {
            rate: r["request_rate"].as_f64().unwrap_or(f64::NAN),
            requests: count("completed") + count("failed"),
            failed: count("failed"),
            achieved: r["request_throughput"].as_f64().unwrap_or(f64::NAN),
            late: Percentiles::of(list("queue_times")),
            ttft: Percentiles::of(list("ttfts").into_iter().filter(|t| *t > 0.0).collect()),
            itl: Percentiles::of(itl),
            starts: &starts,
            clock: "monotonic",
        },
    ));
    Ok(())
}

/// The median and the 99th percentile of some times, seconds.
struct Percentiles {
    p50: f64,
    p99: f64,
}

impl Percentiles {
    fn of(mut times: Vec<f64>) -> Percentiles {
        times.sort_by(f64::total_cmp);
        Percentiles {
            p50: quantile(&times, 0.5).value,
            p99: quantile(&times, 0.99).value,
        }
    }
}

/// One peer's run as read from its records: times in seconds, `starts` the sends' times on
/// `clock`.
struct PeerRun<'a> {
    rate: f64,
    requests: usize,
    failed: usize,
    achieved: f64,
    late: Percentiles,
    ttft: Percentiles,
    itl: Percentiles,
    starts: &'a [f64],
    clock: &'static str,
}

/// A peer's JSON line, with the same fields as our client's; the run's window is its first to
/// last send.
fn peer_line(config: MockConfig, run: PeerRun) -> Value {
    let first = run.starts.iter().copied().fold(f64::INFINITY, f64::min);
    let last = run.starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sent = run.starts.to_vec();
    sent.sort_by(f64::total_cmp);
    let ks = ks_exponential(&gaps(&sent), run.rate);
    serde_json::json!({
        "rate": run.rate,
        "requests": run.requests,
        "failed": run.failed,
        "achieved": run.achieved,
        "ttft_median_off_ms": off_ms(run.ttft.p50, config.ttft),
        "tpot_median_off_ms": off_ms(run.itl.p50, config.gap),
        "ttft_p50_ms": run.ttft.p50 * 1e3,
        "ttft_p99_ms": run.ttft.p99 * 1e3,
        "itl_p50_ms": run.itl.p50 * 1e3,
        "itl_p99_ms": run.itl.p99 * 1e3,
        "lateness_p50_ms": run.late.p50 * 1e3,
        "lateness_p99_ms": run.late.p99 * 1e3,
        "ks_p_value": ks.p_value,
        "ks_statistic": ks.statistic,
        "started": first,
        "seconds": last - first,
        "clock": run.clock,
    })
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
