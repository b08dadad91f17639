//! The load generator against a server of known timing, with the release build of
//! `milabench-load`'s `bench_truth` example.
//!
//! Truth: our client drives the mock server (known TTFT, gap and token count) at 10, 200 and
//! 1,000 requests/s; targets: medians within 0.5 ms of the truth at 10 requests/s and within
//! 2 ms at 1,000, and the inter-arrival times of the sends passing a Kolmogorov–Smirnov test
//! against the exponential of the rate (p-value at least [`KS_LEVEL`]). Each line also gives
//! the p99 lateness of the sends.
//!
//! Side by side: one mock server (`bench_truth serve`, a process of its own) is driven by our
//! client (`bench_truth client`, a process per run), by GuideLLM (see `guidellm`) and by AIPerf,
//! inference-perf and vLLM's `bench serve` (see `peers`), each run a process of its own, with the
//! same scenario: Poisson arrivals, streamed completions, prompts of 32 tokens, answers of 16.
//! For each client the highest rate it sustains (no failed request, p99 lateness under 1 ms) is
//! searched: from a start rate, doubling while runs hold (halving while they do not, down to
//! 1 request/s), then bisecting between the highest rate that held and the lowest that did not,
//! in a bounded number of runs. A run's CPU is its process tree's over the schedule's window
//! (start-up and report left out), per request sent. Every client's records are read by the same
//! program (`bench_truth client`, `guidellm`, `aiperf`, `inference-perf`, `vllm`). The peers
//! other than GuideLLM search down from 25 requests/s, then run once at 100 and 400 for achieved
//! against asked. Before each search, the machine's own lateness is measured as the baseline: a
//! bare thread sleeping to a Poisson schedule (`bench_truth floor`); on a machine busy with other
//! work it is often above 1 ms by itself. The lines end with the table of `docs/measuring.md`.
//! Target: ours sustains at least 5x the best peer's rate, with TTFT and TPOT medians at least as
//! close to the truth (to within the mock server's own 0.05 ms).
//!
//! Last, what a request costs our client apart from its stream's events: a mock server whose
//! answers have one token, 10,000 requests/s three times (met when most hold), then our rate
//! search against it (see `short_answers`).

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

use super::LoadPeer;
use super::guidellm;
use super::peers::{self, Tool};
use super::tree_cpu::{CpuTrace, wait_traced};

/// A run holds when the 99th percentile of its lateness is below this, in milliseconds.
const LATENESS_MS: f64 = 1.0;

/// Tokens per answer of the side by side (the mock server's default).
const STREAM_TOKENS: u32 = 16;

/// The first rate of our client's search, requests/s, and its most runs.
const OURS_START: f64 = 250.0;
const OURS_RUNS: usize = 8;

/// The search of our client against one-token answers (what a request costs apart from its
/// stream's events): its first rate, and the rate it is to hold on this machine.
const SHORT_START: f64 = 2500.0;
const SHORT_TARGET: f64 = 10_000.0;

/// Runs at [`SHORT_TARGET`] before the search, for the target's verdict.
const TARGET_TRIES: usize = 3;

/// The variable of `bench_truth` that sets the mock server's tokens per answer.
const TOKENS_VAR: &str = "BENCH_TRUTH_TOKENS";

/// The same for GuideLLM, whose runs take a minute each here (its ten worker processes import
/// torch before the first request).
const GUIDELLM_START: f64 = 1.0;
const GUIDELLM_RUNS: usize = 4;

/// The same for AIPerf, inference-perf and vLLM's client, and the rates each then runs once at
/// for achieved against asked.
const PEER_START: f64 = 25.0;
const PEER_RUNS: usize = 5;
const PEER_LADDER: [f64; 2] = [100.0, 400.0];

/// The lowest rate either search tries, requests/s.
const FLOOR: f64 = 1.0;

/// Medians closer to the truth than this to each other count as equally close, milliseconds:
/// the mock server's own error (its sleep's overshoot) is tens of microseconds.
const TRUTH_RESOLUTION_MS: f64 = 0.05;

/// The rate of the machine's own lateness, measured before each search, requests/s.
const BARE_RATE: f64 = 100.0;

/// Runs the measurements and prints their lines: `seconds` per rate.
/// `peers` are the clients beside ours (all when empty).
pub fn run(seconds: u64, peers: &[LoadPeer]) -> anyhow::Result<()> {
    eprintln!("==> bench: load (building the release measurement program)");
    let program = super::release_example("milabench-load", "bench_truth", "load")?;
    truth(&program, seconds)?;
    let peers: Vec<LoadPeer> = if peers.is_empty() {
        vec![
            LoadPeer::Guidellm,
            LoadPeer::Aiperf,
            LoadPeer::InferencePerf,
            LoadPeer::Vllm,
        ]
    } else {
        peers
            .iter()
            .copied()
            .filter(|p| *p != LoadPeer::None)
            .collect()
    };
    side_by_side(&program, seconds, &peers)?;
    short_answers(&program, seconds)
}

/// Our client against one-token answers (`BENCH_TRUTH_TOKENS=1`: the first token, usage and
/// the end in one write 20 ms after the request): the cost of a request apart from its stream's
/// events. First [`SHORT_TARGET`] itself [`TARGET_TRIES`] times, the target being met when most
/// of them hold: a single run there rides on the machine's stalls (a kernel thread holding the
/// runtime's core for milliseconds makes a hundred sends late), and the tries come before the
/// search because the search's overloaded runs leave the machine busy for a while (the mock
/// server then runs a thread for each of 4,096 connections). Then the highest rate held. Prints
/// the tries, the search and the verdict.
fn short_answers(program: &Path, seconds: u64) -> anyhow::Result<()> {
    let server = MockProcess::start(program, 1)?;
    let client = "milabench-load, 1-token answers";
    eprintln!(
        "==> bench: load: {client}: {TARGET_TRIES} runs at {SHORT_TARGET:.0} req/s, then its rate search"
    );
    let busy = bare(program, seconds)?;
    let mut held = 0;
    for n in 1..=TARGET_TRIES {
        let load = load_average();
        let trial = ours(program, &server.url, SHORT_TARGET, seconds, 1)?;
        let ok = trial.held();
        println!(
            "{:<40} {}, latest send {:.3} ms, KS D {:.3}; load average {load} at its start: {}",
            format!("load target: {client}, try {n}"),
            trial.figures(),
            trial.late_max_ms,
            trial.ks_statistic,
            if ok { "held" } else { "did not hold" },
        );
        held += usize::from(ok);
    }
    let trials = search(client, SHORT_START, OURS_RUNS, |rate| {
        ours(program, &server.url, rate, seconds, 1)
    })?;
    println!(
        "{:<40} sustains {} (a bare thread's p99 late {:.3} ms before, load average {}); {SHORT_TARGET:.0} req/s held in {held} of {TARGET_TRIES} tries: target >= {SHORT_TARGET:.0} req/s in most tries: {}",
        "load: 1-token answers",
        sustains(&trials),
        busy.bare_p99_ms,
        busy.load,
        if 2 * held > TARGET_TRIES {
            "met"
        } else {
            "NOT met"
        },
    );
    Ok(())
}

/// The significance level of the arrivals' Kolmogorov–Smirnov test.
const KS_LEVEL: f64 = 0.05;

fn truth(program: &Path, seconds: u64) -> anyhow::Result<()> {
    let out = Command::new(program)
        .args(["truth", &seconds.to_string()])
        .output()
        .with_context(|| format!("could not start {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "the load truth measurement failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for line in String::from_utf8(out.stdout)?.lines() {
        let f: Value = serde_json::from_str(line).context("measurement output is not JSON")?;
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
            "{:<40} {:>8.1} req/s achieved, {} failed; median off truth: ttft {:+.3} tpot {:+.3} e2e {:+.3} ms; p99 late {:.3} ms; KS p {:.3} (D {:.3}); CPU {:.0} us/request; target |off| < {tolerance} ms and KS p >= {KS_LEVEL}: {}",
            format!("load truth at {rate} req/s"),
            num("achieved"),
            f["failed"],
            num("ttft_median_off_ms"),
            num("tpot_median_off_ms"),
            num("e2e_median_off_ms"),
            num("lateness_p99_ms"),
            num("ks_p_value"),
            num("ks_statistic"),
            num("cpu_per_request_us"),
            if worst < tolerance && num("ks_p_value") >= KS_LEVEL {
                "met"
            } else {
                "NOT met"
            },
        );
    }
    Ok(())
}

/// One client's run at one rate, as `bench_truth` reports it, with its CPU.
#[derive(Debug, Clone)]
struct Trial {
    rate: f64,
    requests: f64,
    failed: f64,
    achieved: f64,
    ttft_ms: (f64, f64),
    itl_ms: (f64, f64),
    late_p50_ms: f64,
    late_p99_ms: f64,
    /// The latest send (our client only; NaN for the others).
    late_max_ms: f64,
    ttft_off_ms: f64,
    tpot_off_ms: f64,
    ks_p: f64,
    ks_statistic: f64,
    cpu_us_per_request: f64,
}

impl Trial {
    /// Reads a `bench_truth` JSON line; `trace` is the CPU of the client's processes, and
    /// `to_unix` is added to the line's times where they are on the monotonic clock.
    fn read(line: &str, trace: &CpuTrace, to_unix: f64) -> anyhow::Result<Trial> {
        let f: Value = serde_json::from_str(line.trim())
            .with_context(|| format!("measurement output is not a JSON line: {line:?}"))?;
        let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
        let (started, seconds, requests) = (num("started"), num("seconds"), num("requests"));
        let started = match f["clock"].as_str() {
            Some("monotonic") => started + to_unix,
            _ => started,
        };
        Ok(Trial {
            rate: num("rate"),
            requests,
            failed: num("failed"),
            achieved: num("achieved"),
            ttft_ms: (num("ttft_p50_ms"), num("ttft_p99_ms")),
            itl_ms: (num("itl_p50_ms"), num("itl_p99_ms")),
            late_p50_ms: num("lateness_p50_ms"),
            late_p99_ms: num("lateness_p99_ms"),
            late_max_ms: num("lateness_max_ms"),
            ttft_off_ms: num("ttft_median_off_ms"),
            tpot_off_ms: num("tpot_median_off_ms"),
            ks_p: num("ks_p_value"),
            ks_statistic: num("ks_statistic"),
            cpu_us_per_request: trace.between(started, started + seconds) / requests * 1e6,
        })
    }

    /// No failed request and the p99 lateness under `LATENESS_MS`.
    fn held(&self) -> bool {
        self.failed == 0.0 && self.requests > 0.0 && self.late_p99_ms < LATENESS_MS
    }

    /// Lateness, CPU and medians, for the lines of the table.
    fn figures(&self) -> String {
        format!(
            "late p50 {:.3} ms, p99 {:.3} ms, CPU {:.0} us/request, median off truth: ttft {:+.3} ms, tpot {:+.3} ms",
            self.late_p50_ms,
            self.late_p99_ms,
            self.cpu_us_per_request,
            self.ttft_off_ms,
            self.tpot_off_ms
        )
    }
}

/// Runs `probe` from `start` requests/s: doubling while runs hold, halving while none has (down
/// to `FLOOR`), then bisecting between the highest rate that held and the lowest that did not
/// until they are within 20%, `most` runs in all; prints a line per run.
fn search(
    client: &str,
    start: f64,
    most: usize,
    mut probe: impl FnMut(f64) -> anyhow::Result<Trial>,
) -> anyhow::Result<Vec<Trial>> {
    let mut trials = Vec::new();
    let (mut held, mut broke): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = start;
    while trials.len() < most {
        let load = load_average();
        let trial = probe(rate)?;
        println!(
            "{:<40} {} requests, {} failed, KS p {:.3} (D {:.3}); {}; load average {load} at its start: {}",
            format!("load search: {client} at {rate:.0} req/s"),
            trial.requests,
            trial.failed,
            trial.ks_p,
            trial.ks_statistic,
            trial.figures(),
            if trial.held() { "held" } else { "did not hold" },
        );
        if trial.held() {
            held = Some(held.map_or(rate, |h: f64| h.max(rate)));
        } else {
            broke = Some(broke.map_or(rate, |b: f64| b.min(rate)));
        }
        trials.push(trial);
        rate = match (held, broke) {
            (Some(h), None) => h * 2.0,
            (None, Some(b)) if b / 2.0 >= FLOOR => b / 2.0,
            (Some(h), Some(b)) if b / h > 1.2 => (h * b).sqrt(),
            _ => break,
        };
    }
    Ok(trials)
}

/// The highest-rate run that held, if any.
fn best(trials: &[Trial]) -> Option<&Trial> {
    trials
        .iter()
        .filter(|t| t.held())
        .max_by(|a, b| a.rate.total_cmp(&b.rate))
}

/// The run a client is shown by: its best, or its lowest rate when none held.
fn shown(trials: &[Trial]) -> Option<&Trial> {
    best(trials).or_else(|| trials.iter().min_by(|a, b| a.rate.total_cmp(&b.rate)))
}

/// What a client sustains, for the side-by-side line.
fn sustains(trials: &[Trial]) -> String {
    match (best(trials), shown(trials)) {
        (Some(t), _) => format!("{:.0} req/s ({})", t.rate, t.figures()),
        (None, Some(t)) => format!(
            "under {:.0} req/s (no rate tried held; at {:.0} req/s: {})",
            t.rate,
            t.rate,
            t.figures()
        ),
        (None, None) => "nothing (no run)".into(),
    }
}

/// The mock server in a process of its own, serving until its standard input closes.
struct MockProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl MockProcess {
    /// Starts `bench_truth serve` with `tokens` per answer.
    fn start(program: &Path, tokens: u32) -> anyhow::Result<MockProcess> {
        let mut child = Command::new(program)
            .arg("serve")
            .env(TOKENS_VAR, tokens.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("could not start {}", program.display()))?;
        let stdin = child.stdin.take();
        let mut url = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out).read_line(&mut url)?;
        }
        let url = url.trim().to_owned();
        if url.is_empty() {
            bail!("the mock server did not say its address");
        }
        Ok(MockProcess { child, stdin, url })
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        // Closing its input stops it.
        self.stdin.take();
        let _ = self.child.wait();
    }
}

/// The machine's own lateness: a bare thread sleeping to a Poisson schedule at `BARE_RATE` for
/// `seconds` (`bench_truth floor`), no client can be on time more than it; prints its line and
/// returns its p99 with the load average.
fn bare(program: &Path, seconds: u64) -> anyhow::Result<Busy> {
    let out = Command::new(program)
        .args(["floor", &BARE_RATE.to_string(), &seconds.to_string()])
        .output()
        .with_context(|| format!("could not start {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "the bare thread's lateness measurement failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let f: Value = serde_json::from_slice(&out.stdout).context("measurement output is not JSON")?;
    let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
    let load = load_average();
    println!(
        "{:<40} late p50 {:.3} ms, p99 {:.3} ms (a thread sleeping to the schedule, no client); load average {load}",
        format!("load floor: bare thread at {BARE_RATE:.0} req/s"),
        num("lateness_p50_ms"),
        num("lateness_p99_ms"),
    );
    Ok(Busy {
        bare_p99_ms: num("lateness_p99_ms"),
        load,
    })
}

/// Our client at `rate` for `seconds` against `url` (whose answers have `tokens` tokens), a
/// process of its own.
fn ours(program: &Path, url: &str, rate: f64, seconds: u64, tokens: u32) -> anyhow::Result<Trial> {
    let mut child = Command::new(program)
        .args(["client", url, &rate.to_string(), &seconds.to_string()])
        .env(TOKENS_VAR, tokens.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start {}", program.display()))?;
    let (status, trace) = wait_traced(&mut child)?;
    let mut line = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut line)?;
    }
    if !status.success() {
        bail!("our client failed at {rate} requests/s ({status})");
    }
    Trial::read(&line, &trace, 0.0)
}

/// GuideLLM's run at `rate`, its report read by `bench_truth guidellm`.
fn guidellm_trial(
    guidellm: &guidellm::GuideLlm,
    program: &Path,
    url: &str,
    rate: f64,
    seconds: u64,
) -> anyhow::Result<Trial> {
    let (report, trace) = guidellm.run(url, rate, seconds)?;
    let args = ["guidellm".into(), report.display().to_string()];
    read_records(program, &args, &trace, 0.0)
}

/// A peer's run at `rate`, its records read by `bench_truth`.
fn peer_trial(
    peer: &peers::Peer,
    program: &Path,
    url: &str,
    rate: f64,
    seconds: u64,
) -> anyhow::Result<Trial> {
    let (args, trace, to_unix) = peer.run(url, rate, seconds)?;
    read_records(program, &args, &trace, to_unix)
}

/// Reads a client's records with `bench_truth ARGS`; `trace` is its CPU, `to_unix` turns its
/// monotonic times into Unix times.
fn read_records(
    program: &Path,
    args: &[String],
    trace: &CpuTrace,
    to_unix: f64,
) -> anyhow::Result<Trial> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("could not start {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "reading the records ({}) failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Trial::read(&String::from_utf8(out.stdout)?, trace, to_unix)
}

/// How busy the machine was before a client's runs: a bare thread's p99 lateness, ms, and the
/// load average.
struct Busy {
    bare_p99_ms: f64,
    load: String,
}

/// A client's row of the side-by-side table.
struct Row {
    client: String,
    /// Its runs, or why it has none.
    trials: Result<Vec<Trial>, String>,
    /// Its lateness is a lower bound (it does not record the schedule).
    lower_bound: bool,
    /// What it reports as lateness and whether its latencies include its own queue.
    lateness: &'static str,
    busy: Busy,
}

/// Measures the machine, then runs `searches` for one client.
fn measured(
    program: &Path,
    seconds: u64,
    client: &str,
    searches: impl FnOnce() -> anyhow::Result<Vec<Trial>>,
) -> anyhow::Result<(Busy, Result<Vec<Trial>, String>)> {
    eprintln!("==> bench: load side by side: {client}'s rate search");
    let busy = bare(program, seconds)?;
    Ok((busy, searches().map_err(|e| format!("{e:#}"))))
}

/// The peers' search and ladder with `probe`.
fn peer_runs(
    client: &str,
    mut probe: impl FnMut(f64) -> anyhow::Result<Trial>,
) -> anyhow::Result<Vec<Trial>> {
    let mut trials = search(client, PEER_START, PEER_RUNS, &mut probe)?;
    for rate in PEER_LADDER {
        if trials.iter().all(|t| t.rate < rate) {
            let trial = probe(rate)?;
            println!(
                "{:<40} {} requests, {} failed, {:.1} req/s achieved; {}",
                format!("load ladder: {client} at {rate:.0} req/s"),
                trial.requests,
                trial.failed,
                trial.achieved,
                trial.figures()
            );
            trials.push(trial);
        }
    }
    Ok(trials)
}

fn side_by_side(program: &Path, seconds: u64, chosen: &[LoadPeer]) -> anyhow::Result<()> {
    let load = load_average();
    let server = MockProcess::start(program, STREAM_TOKENS)?;
    let url = server.url.clone();
    let (busy, ours) = measured(program, seconds, "milabench-load", || {
        search("milabench-load", OURS_START, OURS_RUNS, |rate| {
            ours(program, &url, rate, seconds, STREAM_TOKENS)
        })
    })?;
    let mut rows = vec![Row {
        client: "milabench-load".into(),
        trials: ours,
        lower_bound: false,
        lateness: "sent - scheduled, every request; TTFT from the send: no, lateness beside it",
        busy,
    }];
    let peers_dir = super::target_dir().join("bench-peers");
    for &peer in chosen {
        let tool = match peer {
            LoadPeer::Guidellm => {
                let name = format!("GuideLLM {}", guidellm::VERSION);
                eprintln!("==> bench: load side by side: installing {name} unless it is there");
                let lateness =
                    "resolve_start - targeted_start (send - schedule); TTFT from the send: no";
                let (busy, trials) =
                    match guidellm::install(&super::target_dir().join("bench-guidellm")) {
                        Ok(guidellm) => measured(program, seconds, &name, || {
                            search(&name, GUIDELLM_START, GUIDELLM_RUNS, |rate| {
                                guidellm_trial(&guidellm, program, &url, rate, seconds)
                            })
                        })?,
                        Err(e) => (
                            bare(program, seconds)?,
                            Err(format!("not installed: {e:#}")),
                        ),
                    };
                rows.push(Row {
                    client: name,
                    trials,
                    lower_bound: false,
                    lateness,
                    busy,
                });
                continue;
            }
            LoadPeer::Aiperf => Tool::AiPerf,
            LoadPeer::InferencePerf => Tool::InferencePerf,
            LoadPeer::Vllm => Tool::Vllm,
            LoadPeer::None => continue,
        };
        eprintln!(
            "==> bench: load side by side: installing {} unless it is there",
            tool.name()
        );
        let (busy, trials) = match peers::install(tool, &peers_dir) {
            Ok(peer) => measured(program, seconds, tool.name(), || {
                peer_runs(tool.name(), |rate| {
                    peer_trial(&peer, program, &url, rate, seconds)
                })
            })?,
            Err(e) => (
                bare(program, seconds)?,
                Err(format!("not installed: {e:#}")),
            ),
        };
        rows.push(Row {
            client: tool.name().into(),
            trials,
            lower_bound: tool.lateness_is_a_lower_bound(),
            lateness: tool.lateness(),
            busy,
        });
    }
    let after = bare(program, seconds)?;
    summary(&rows, &load, &after);
    table(&rows, &after);
    Ok(())
}

/// The line of the 5x target: ours against the best peer.
fn summary(rows: &[Row], load: &str, after: &Busy) {
    let trials = |row: &Row| row.trials.as_deref().unwrap_or(&[]).to_vec();
    let ours = trials(&rows[0]);
    let peers: Vec<(String, Vec<Trial>)> = rows[1..]
        .iter()
        .filter(|row| row.trials.is_ok())
        .map(|row| (row.client.clone(), trials(row)))
        .collect();
    // The best peer: its highest rate held (a lower bound's counts as held: the peer's favour),
    // else its lowest rate tried (it sustains less than that).
    let best_peer = peers
        .iter()
        .filter_map(|(name, t)| {
            let rate = best(t)
                .map(|b| (b.rate, true))
                .or_else(|| shown(t).map(|s| (s.rate, false)))?;
            Some((name, t, rate))
        })
        .max_by(|a, b| a.2.0.total_cmp(&b.2.0));
    let Some((name, theirs, (their_rate, held))) = best_peer else {
        println!(
            "{:<40} milabench-load sustains {} (load average {load} at the start); no peer ran",
            "load side by side",
            sustains(&ours)
        );
        return;
    };
    let (ratio, ratio_text) = match best(&ours) {
        None => (0.0, "none (milabench-load held no rate)".to_owned()),
        Some(o) if held => (o.rate / their_rate, format!("{:.1}", o.rate / their_rate)),
        Some(o) => (o.rate / their_rate, format!("> {:.1}", o.rate / their_rate)),
    };
    let closer = rows.iter().skip(1).all(|row| {
        match (shown(&ours), row.trials.as_deref().ok().and_then(shown)) {
            (Some(o), Some(t)) => {
                let as_close =
                    |ours: f64, theirs: f64| ours.abs() <= theirs.abs() + TRUTH_RESOLUTION_MS;
                as_close(o.ttft_off_ms, t.ttft_off_ms) && as_close(o.tpot_off_ms, t.tpot_off_ms)
            }
            (Some(_), None) => true,
            _ => false,
        }
    });
    println!(
        "{:<40} milabench-load sustains {}; the best peer, {name}, sustains {}; ratio {ratio_text}, timings {} close to the truth as every peer's (load average {load} at the start; a bare thread's p99 late {:.3} ms at the end): target >= 5 with timings at least as close: {}",
        "load side by side",
        sustains(&ours),
        sustains(theirs),
        if closer { "at least as" } else { "not as" },
        after.bare_p99_ms,
        if ratio >= 5.0 && closer {
            "met"
        } else {
            "NOT met"
        },
    );
}

/// The side-by-side table in the markdown layout of `docs/measuring.md`.
fn table(rows: &[Row], after: &Busy) {
    println!();
    println!(
        "| client | highest rate held (p99 late < 1 ms) | achieved / asked, requests/s | CPU per request | TTFT p50 / p99 (truth 20 ms) | ITL p50 / p99 (truth 5 ms) | lateness read; tail includes the client's queue | machine before its runs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in rows {
        let busy = format!(
            "bare thread p99 {:.2} ms, load {}",
            row.busy.bare_p99_ms, row.busy.load
        );
        let trials = match &row.trials {
            Ok(trials) if !trials.is_empty() => trials,
            Ok(_) => {
                println!(
                    "| {} | no run | | | | | {} | {busy} |",
                    row.client, row.lateness
                );
                continue;
            }
            Err(why) => {
                println!(
                    "| {} | skipped: {} | | | | | {} | {busy} |",
                    row.client,
                    why.replace('\n', " ").replace('|', "/"),
                    row.lateness
                );
                continue;
            }
        };
        let mut by_rate: Vec<&Trial> = trials.iter().collect();
        by_rate.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let lates = by_rate
            .iter()
            .map(|t| format!("{:.2}", t.late_p99_ms))
            .collect::<Vec<_>>()
            .join(", ");
        let rates = by_rate
            .iter()
            .map(|t| rate_text(t.rate))
            .collect::<Vec<_>>()
            .join(", ");
        let held = match best(trials) {
            Some(t) if row.lower_bound => format!(
                "at most {} (its lower bound of lateness held there: p99 {:.2} ms); p99 {lates} ms at {rates}",
                rate_text(t.rate),
                t.late_p99_ms
            ),
            Some(t) => format!(
                "{} (p99 {:.2} ms); p99 {lates} ms at {rates}",
                rate_text(t.rate),
                t.late_p99_ms
            ),
            None => format!(
                "none from {} (p99 {lates} ms at {rates})",
                rate_text(by_rate[0].rate)
            ),
        };
        let achieved = by_rate
            .iter()
            .map(|t| format!("{:.1} / {}", t.achieved, rate_text(t.rate)))
            .collect::<Vec<_>>()
            .join("; ");
        let Some(main) = shown(trials) else { continue };
        let Some(&top) = by_rate.last() else { continue };
        let cpu = if top.rate > main.rate {
            format!(
                "{:.0} us at {}, {:.0} at {}",
                main.cpu_us_per_request,
                rate_text(main.rate),
                top.cpu_us_per_request,
                rate_text(top.rate)
            )
        } else {
            format!(
                "{:.0} us at {}",
                main.cpu_us_per_request,
                rate_text(main.rate)
            )
        };
        let pair = |(p50, p99): (f64, f64), digits: usize| {
            format!("{p50:.digits$} / {p99:.2} ms (at {})", rate_text(main.rate))
        };
        println!(
            "| {} | {held} | {achieved} | {cpu} | {} | {} | {} | {busy} |",
            row.client,
            pair(main.ttft_ms, 2),
            pair(main.itl_ms, 3),
            row.lateness
        );
    }
    println!(
        "\nAfter the last client: a bare thread's p99 lateness {:.2} ms, load average {}.",
        after.bare_p99_ms, after.load
    );
}

/// A rate as the table writes it: whole requests/s, or two decimals below 10.
fn rate_text(rate: f64) -> String {
    if rate < 10.0 && rate.fract() != 0.0 {
        format!("{rate:.2}")
    } else {
        format!("{rate:.0}")
    }
}

/// The machine's load average over the last minute (`/proc/loadavg`), as written there: other
/// work on the machine delays the clients' sends.
pub(super) fn load_average() -> String {
    fs_err::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::{Trial, best, search};

    /// A run at `rate` that holds below `limit` requests/s.
    fn run_below(limit: f64) -> impl FnMut(f64) -> anyhow::Result<Trial> {
        move |rate| {
            Ok(Trial {
                rate,
                requests: 100.0,
                failed: 0.0,
                achieved: rate,
                ttft_ms: (20.1, 21.0),
                itl_ms: (5.0, 5.1),
                late_p50_ms: 0.1,
                late_p99_ms: if rate < limit { 0.5 } else { 2.0 },
                late_max_ms: 3.0,
                ttft_off_ms: 0.1,
                tpot_off_ms: 0.0,
                ks_p: 0.5,
                ks_statistic: 0.01,
                cpu_us_per_request: 100.0,
            })
        }
    }

    #[test]
    fn the_search_doubles_then_bisects_to_within_a_fifth() {
        let trials = search("test", 250.0, 8, run_below(600.0)).unwrap();
        let rates: Vec<f64> = trials.iter().map(|t| t.rate.round()).collect();
        assert_eq!(rates, [250.0, 500.0, 1000.0, 707.0, 595.0]);
        assert_eq!(best(&trials).unwrap().rate.round(), 595.0);
    }

    #[test]
    fn the_search_halves_to_the_floor_within_its_runs() {
        let trials = search("test", 8.0, 8, run_below(0.5)).unwrap();
        let rates: Vec<f64> = trials.iter().map(|t| t.rate).collect();
        assert_eq!(rates, [8.0, 4.0, 2.0, 1.0]);
        assert!(best(&trials).is_none());
        assert_eq!(search("test", 250.0, 3, run_below(0.5)).unwrap().len(), 3);
    }
}
