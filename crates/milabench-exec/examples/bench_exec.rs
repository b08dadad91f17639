//! Measurements for `cargo xtask bench` (run in release): what running a benchmark under
//! `run_plan` costs compared with running the same Python script bare.
//!
//! Prints one JSON object per line:
//! - `overhead`: rate of a CPU-bound script (reporting a rate every 50 ms on the data channel)
//!   under `run_plan`, divided by its rate run bare: best against best of alternated runs, and
//!   the median of the ratios of each pair.
//! - `cpu`: the orchestrator's CPU time (getrusage of this process: writer, reader and waiter
//!   threads) over the wall time of a 6 s run (and of the short overhead runs, where the fixed
//!   per-run costs weigh more).
//! - `startup`: time from calling `run_plan` (or `Command::spawn` for the baseline) to the first
//!   statement of the child, median of several runs.

#![allow(clippy::print_stdout)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use milabench_exec::{BenchPlan, ExecOptions, Launch, ProcessSpec, run_plan};
use nix::sys::resource::{UsageWho, getrusage};

const CPU_BOUND: &str = r#"
import json, os, sys, time
fd = os.environ.get("DATA_FD")
out = os.fdopen(int(fd), "w", buffering=1) if fd else open(os.devnull, "w")
duration = float(sys.argv[1])
t0 = last = time.perf_counter()
n = done = 0
while True:
    for _ in range(20000):
        n += 1
    now = time.perf_counter()
    if now - last >= 0.05:
        out.write(json.dumps({"task": "train", "rate": (n - done) / (now - last), "units": "items/s"}) + "\n")
        print(f"step {n}")
        done, last = n, now
    if now - t0 >= duration:
        break
print(f"FINAL {n / (now - t0)}")
"#;

const FIRST: &str = "import time; print(f'FIRST {time.time()}')";

fn epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn spec(dir: &Path, argv: &[&str]) -> ProcessSpec {
    ProcessSpec {
        tag: vec!["bench".into(), "0".into()],
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: IndexMap::new(),
        cwd: Utf8PathBuf::from_path_buf(dir.to_path_buf()).expect("UTF-8 temp dir"),
        node: None,
        devices: Vec::new(),
        use_stdout: false,
        nolog: false,
        launch: Launch::Local,
        job: None,
        config: serde_json::json!({"name": "bench"}),
    }
}

/// Runs `argv` under `run_plan` in a fresh run folder; returns its stdout text.
fn under_exec(dir: &Path, argv: &[&str], run: usize) -> String {
    let run_dir = dir.join(format!("run{run}"));
    let plan = BenchPlan {
        bench: "bench".into(),
        processes: vec![spec(dir, argv)],
        files: Vec::new(),
        max_duration: None,
    };
    let outcome = run_plan(&plan, &run_dir, &ExecOptions::default(), &mut ()).expect("run_plan");
    assert!(outcome.processes[0].return_code.is_zero(), "{outcome:?}");
    std::fs::read_to_string(run_dir.join("bench.0.stdout")).expect("stdout file")
}

/// Runs `argv` with a plain spawn, stdout read to the end.
fn bare(argv: &[&str]) -> String {
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut text = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut text)
        .expect("read");
    assert!(child.wait().expect("wait").success());
    text
}

fn tagged(text: &str, tag: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(tag))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {tag} line in {text:?}"))
}

fn cpu_time() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let t = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    t(usage.user_time()) + t(usage.system_time())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("cpu_bound.py");
    std::fs::write(&script, CPU_BOUND).expect("write script");
    let script = script.to_str().expect("UTF-8 path");
    let seconds = "1";
    let pairs = 11;

    let (mut exec_rates, mut bare_rates) = (Vec::new(), Vec::new());
    let (mut exec_cpu, mut exec_wall) = (Duration::ZERO, Duration::ZERO);
    for i in 0..pairs {
        bare_rates.push(tagged(&bare(&["python3", script, seconds]), "FINAL"));
        let cpu = cpu_time();
        let wall = Instant::now();
        let text = under_exec(dir.path(), &["python3", script, seconds], i);
        exec_wall += wall.elapsed();
        exec_cpu += cpu_time() - cpu;
        exec_rates.push(tagged(&text, "FINAL"));
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
    println!(
        "{}",
        serde_json::json!({
            "figure": "overhead",
            "ratio_best": best(&exec_rates) / best(&bare_rates),
            "ratio_median": median(exec_rates.iter().zip(&bare_rates).map(|(e, b)| e / b).collect()),
            "exec_rate": best(&exec_rates),
            "bare_rate": best(&bare_rates),
            "runs": pairs,
            "seconds": seconds,
        })
    );
    // One longer run, so that the per-run costs (spawn, threads, the final process-tree sweep)
    // weigh little against the steady state.
    let cpu = cpu_time();
    let wall = Instant::now();
    under_exec(dir.path(), &["python3", script, "6"], 99);
    let (long_wall, long_cpu) = (wall.elapsed(), cpu_time() - cpu);
    println!(
        "{}",
        serde_json::json!({
            "figure": "cpu",
            "percent_of_core": 100.0 * long_cpu.as_secs_f64() / long_wall.as_secs_f64(),
            "cpu_ms": long_cpu.as_secs_f64() * 1e3,
            "wall_ms": long_wall.as_secs_f64() * 1e3,
            "short_runs_percent": 100.0 * exec_cpu.as_secs_f64() / exec_wall.as_secs_f64(),
        })
    );

    let (mut exec_start, mut bare_start) = (Vec::new(), Vec::new());
    for i in 0..21 {
        let t0 = epoch();
        bare_start.push((tagged(&bare(&["python3", "-S", "-c", FIRST]), "FIRST") - t0) * 1e3);
        let t0 = epoch();
        let text = under_exec(dir.path(), &["python3", "-S", "-c", FIRST], 100 + i);
        exec_start.push((tagged(&text, "FIRST") - t0) * 1e3);
    }
    let (exec_ms, bare_ms) = (median(exec_start), median(bare_start));
    println!(
        "{}",
        serde_json::json!({
            "figure": "startup",
            "exec_ms": exec_ms,
            "bare_ms": bare_ms,
            "extra_ms": exec_ms - bare_ms,
        })
    );
}
