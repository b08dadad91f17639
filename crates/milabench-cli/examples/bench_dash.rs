//! Measurement for `cargo xtask bench --only exec --dash` (run in release): what the dashboard
//! of `milabench run --dash` costs a benchmark, with the protocol of `milabench-exec`'s
//! `bench_exec` example.
//!
//! Prints one JSON object per line:
//! - `overhead_round` (one per round): the rates of a CPU-bound script (a rate every 50 ms on
//!   the data channel, a line on stdout and one on stderr with each) run four ways back to
//!   back, in an order that rotates every round: `bare` (a plain spawn), `again` (the same: the
//!   A/A partner), `exec` (under `run_plan`, nothing observing) and `dash` (under `run_plan`
//!   with the dashboard observing and drawing a 120x40 screen, its escape sequences thrown
//!   away: the drawing is done, the terminal's own work is not). Each gives its rate over wall
//!   time and over its own CPU time.
//! - `cpu`: this process's CPU time over the wall time of a 6 s run under `run_plan`, without
//!   and with the dashboard.
//!
//! Argument: `[ROUNDS]`, 12 by default.

#![allow(clippy::print_stdout)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use milabench::observe::{RunEvent, RunObserver};
use milabench_cli::dash::{BenchBudget, Dashboard, Screen};
use milabench_exec::{BenchPlan, ExecObserver, ExecOptions, Launch, ProcessSpec, run_plan};

const CPU_BOUND: &str = r#"
import json, os, sys, time
fd = os.environ.get("DATA_FD")
out = os.fdopen(int(fd), "w", buffering=1) if fd else open(os.devnull, "w")
duration = float(sys.argv[1])
t0 = last = time.perf_counter()
c0 = time.process_time()
n = done = 0
while True:
    for _ in range(20000):
        n += 1
    now = time.perf_counter()
    if now - last >= 0.05:
        out.write(json.dumps({"task": "train", "rate": (n - done) / (now - last), "units": "items/s", "loss": 1.0 / n}) + "\n")
        print(f"step {n}")
        print(f"step {n}", file=sys.stderr)
        done, last = n, now
    if now - t0 >= duration:
        break
print(f"FINAL {n / (now - t0)}")
print(f"CPU {n / (time.process_time() - c0)}")
"#;

fn plan(dir: &Path, argv: &[&str]) -> BenchPlan {
    BenchPlan {
        bench: "bench".into(),
        processes: vec![ProcessSpec {
            tag: vec!["bench".into(), "0".into()],
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: Default::default(),
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
        }],
        files: Vec::new(),
        max_duration: None,
    }
}

/// The observer of the `dash` way: a dashboard drawing into nothing.
fn dashboard() -> Dashboard {
    let budget = BenchBudget {
        name: "bench".into(),
        max_duration: Some(Duration::from_secs(60)),
        stop: Some(60),
    };
    let screen = Screen::Writer {
        out: Box::new(std::io::sink()),
        size: (120, 40),
    };
    Dashboard::start(vec![budget], screen, true).expect("the dashboard starts")
}

/// Runs `argv` under `run_plan` in a fresh run folder, observed by `observer`; returns its
/// stdout text.
fn under_exec(dir: &Path, argv: &[&str], run: &str, observer: &mut dyn RunObserver) -> String {
    let run_dir = dir.join(run);
    let plan = plan(dir, argv);
    observer.on_run_event(RunEvent::BenchStart { plan: &plan });
    let outcome = run_plan(&plan, &run_dir, &ExecOptions::default(), observer).expect("run_plan");
    observer.on_run_event(RunEvent::BenchEnd { outcome: &outcome });
    assert!(outcome.processes[0].return_code.is_zero(), "{outcome:?}");
    std::fs::read_to_string(run_dir.join("bench.0.stdout")).expect("stdout file")
}

/// An observer that ignores everything, as `bench_exec` runs.
struct Nothing;

impl ExecObserver for Nothing {}

impl RunObserver for Nothing {
    fn on_run_event(&mut self, _event: RunEvent<'_>) {}
}

fn bare(argv: &[&str]) -> String {
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let t = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    t(usage.user_time()) + t(usage.system_time())
}

/// This process's share of a core while `f` runs.
fn percent_of_core(f: impl FnOnce()) -> f64 {
    let (cpu, wall) = (cpu_time(), Instant::now());
    f();
    100.0 * (cpu_time() - cpu).as_secs_f64() / wall.elapsed().as_secs_f64()
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("cpu_bound.py");
    std::fs::write(&script, CPU_BOUND).expect("write script");
    let script = script.to_str().expect("UTF-8 path");
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(12, |r| r.parse().expect("ROUNDS is a number"));
    const WAYS: [&str; 4] = ["bare", "again", "exec", "dash"];
    for round in 0..rounds {
        let mut rates = serde_json::Map::new();
        let order: Vec<&str> = (0..WAYS.len())
            .map(|i| WAYS[(i + round) % WAYS.len()])
            .collect();
        for way in &order {
            let argv = ["python3", script, "1"];
            let run = format!("{way}{round}");
            let text = match *way {
                "exec" => under_exec(dir.path(), &argv, &run, &mut Nothing),
                "dash" => under_exec(dir.path(), &argv, &run, &mut dashboard()),
                _ => bare(&argv),
            };
            rates.insert(
                (*way).to_owned(),
                serde_json::json!({"wall": tagged(&text, "FINAL"), "cpu": tagged(&text, "CPU")}),
            );
        }
        println!(
            "{}",
            serde_json::json!({"figure": "overhead_round", "round": round, "order": order, "rates": rates})
        );
    }
    let argv = ["python3", script, "6"];
    let exec = percent_of_core(|| {
        under_exec(dir.path(), &argv, "long-exec", &mut Nothing);
    });
    let dash = percent_of_core(|| {
        under_exec(dir.path(), &argv, "long-dash", &mut dashboard());
    });
    println!(
        "{}",
        serde_json::json!({"figure": "cpu", "exec_percent_of_core": exec, "dash_percent_of_core": dash})
    );
}
