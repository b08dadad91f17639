//! Measurements for `cargo xtask bench` (run in release): what running a benchmark under
//! `run_plan` costs compared with running the same Python script bare.
//!
//! Prints one JSON object per line:
//! - `overhead_round` (one per round): the rates of a CPU-bound script (reporting a rate every
//!   50 ms on the data channel) run four ways back to back: `bare` (a plain spawn, the data
//!   written to `/dev/null`), `again` (the same once more: the A/A partner), `piped` (a plain
//!   spawn with the data channel a pipe drained by a thread and `PYTHONUNBUFFERED`, as
//!   `run_plan` starts it, without anything else of the harness) and `exec` (under `run_plan`).
//!   The four take turns at each position (the order rotates every round), so a cost of going
//!   first or last lands on all alike. Each run gives its rate over wall time and over its own
//!   CPU time: the second is the child's speed when it runs, the first also counts the time it
//!   waited for a core.
//! - `cpu`: the orchestrator's CPU time (getrusage of this process: writer, reader and waiter
//!   threads) over the wall time of a 6 s run (and of the short overhead runs, where the fixed
//!   per-run costs weigh more).
//! - `startup`: time from calling `run_plan` (or `Command::spawn` for the baseline) to the first
//!   statement of the child, median of several runs.
//!
//! Arguments: `[ROUNDS] [CHATTER]`: 12 rounds by default; CHATTER stdout lines every 20,000
//! iterations of the script (about 600 times a second) besides its 20 a second (default 0), to
//! see what a chatty benchmark costs.

#![allow(clippy::print_stdout)]

use std::io::Read;
use std::os::fd::AsRawFd;
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
chatter = int(sys.argv[2])
t0 = last = time.perf_counter()
c0 = time.process_time()
n = done = 0
while True:
    for _ in range(20000):
        n += 1
    for _ in range(chatter):
        print(f"progress {n}")
    now = time.perf_counter()
    if now - last >= 0.05:
        out.write(json.dumps({"task": "train", "rate": (n - done) / (now - last), "units": "items/s"}) + "\n")
        print(f"step {n}")
        done, last = n, now
    if now - t0 >= duration:
        break
print(f"FINAL {n / (now - t0)}")
print(f"CPU {n / (time.process_time() - c0)}")
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
        node_command: None,
        container: None,
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

/// Runs `argv` with a plain spawn, stdout read to the end; with `piped`, the data channel is a
/// pipe (`DATA_FD`, drained by a thread) and `PYTHONUNBUFFERED` is set, as `run_plan` does.
fn bare(argv: &[&str], piped: bool) -> String {
    let mut command = Command::new(argv[0]);
    command.args(&argv[1..]).stdout(Stdio::piped());
    let mut drain = None;
    if piped {
        let (mut reader, writer) = std::io::pipe().expect("pipe");
        let fd = nix::unistd::dup(&writer).expect("an inheritable copy of the pipe");
        drop(writer);
        command
            .env("DATA_FD", fd.as_raw_fd().to_string())
            .env("PYTHONUNBUFFERED", "1");
        drain = Some((
            fd,
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink())),
        ));
    }
    let mut child = command.spawn().expect("spawn");
    let thread = drain.map(|(fd, thread)| {
        drop(fd);
        thread
    });
    let mut text = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut text)
        .expect("read");
    assert!(child.wait().expect("wait").success());
    if let Some(thread) = thread {
        thread.join().expect("drain thread").expect("drain");
    }
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
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(12, |r| r.parse().expect("ROUNDS is a number"));
    let chatter = std::env::args().nth(2).unwrap_or_else(|| "0".to_owned());

    const WAYS: [&str; 4] = ["bare", "again", "piped", "exec"];
    let (mut exec_cpu, mut exec_wall) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let mut rates = serde_json::Map::new();
        let order: Vec<&str> = (0..WAYS.len())
            .map(|i| WAYS[(i + round) % WAYS.len()])
            .collect();
        for way in &order {
            let argv = ["python3", script, seconds, &chatter];
            let text = match *way {
                "exec" => {
                    let cpu = cpu_time();
                    let wall = Instant::now();
                    let text = under_exec(dir.path(), &argv, round);
                    exec_wall += wall.elapsed();
                    exec_cpu += cpu_time() - cpu;
                    text
                }
                way => bare(&argv, way == "piped"),
            };
            rates.insert(
                (*way).to_owned(),
                serde_json::json!({"wall": tagged(&text, "FINAL"), "cpu": tagged(&text, "CPU")}),
            );
        }
        println!(
            "{}",
            serde_json::json!({
                "figure": "overhead_round",
                "round": round,
                "order": order,
                "seconds": seconds,
                "chatter": chatter,
                "rates": rates,
            })
        );
    }
    // One longer run, so that the per-run costs (spawn, threads, the final process-tree sweep)
    // weigh little against the steady state.
    let cpu = cpu_time();
    let wall = Instant::now();
    under_exec(dir.path(), &["python3", script, "6", &chatter], 99);
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
        bare_start
            .push((tagged(&bare(&["python3", "-S", "-c", FIRST], false), "FIRST") - t0) * 1e3);
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
