//! Running real processes: tiny Python scripts that speak the data-channel protocol, one per
//! fault the orchestrator must survive.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use milabench_exec::{
    BenchOutcome, BenchPlan, ContainerProcess, ExecObserver, ExecOptions, Launch, PlannedFile,
    ProcessOutcome, ProcessSpec, RecordSink, RunningSampler, SampledProcess, SamplerFactory,
    run_plan,
};
use milabench_metrics::{Event, ProcessVerdict, Record, ReturnCode};
use serde_json::{Value, json};

/// Python helpers every script starts with: `send(obj)` on the data channel (the `DATA_FD` pipe,
/// or smuggled in stdout when `DATA_FD=1`).
const PRELUDE: &str = r#"
import json, os, signal, subprocess, sys, time
FD = int(os.environ["DATA_FD"])
_chan = None if FD == 1 else os.fdopen(FD, "w", buffering=1)
def send(obj):
    text = json.dumps(obj) + "\n"
    if _chan is None:
        h = text.encode().hex().translate(str.maketrans("abcdef", ":;<=>?"))
        sys.stdout.write("\x1b[" + h + "z")
        sys.stdout.flush()
    else:
        _chan.write(text)
def rate(r):
    send({"task": "train", "rate": r, "units": "items/s"})
"#;

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run_dir(&self) -> PathBuf {
        self.path("run")
    }

    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, format!("{PRELUDE}\n{body}")).unwrap();
        path.to_str().unwrap().to_owned()
    }

    fn spec(&self, tag: &[&str], argv: &[&str]) -> ProcessSpec {
        ProcessSpec {
            tag: tag.iter().map(|s| s.to_string()).collect(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: IndexMap::new(),
            cwd: Utf8PathBuf::from_path_buf(self.dir.path().to_path_buf()).unwrap(),
            node: None,
            devices: Vec::new(),
            use_stdout: false,
            nolog: false,
            launch: Launch::Local,
            node_command: None,
            container: None,
            job: None,
            config: json!({"name": tag[0], "tag": tag}),
        }
    }

    /// A plan of one process running `body` with python3.
    fn plan(&self, body: &str) -> BenchPlan {
        let script = self.script("main.py", body);
        BenchPlan {
            bench: "bench".into(),
            processes: vec![self.spec(&["bench", "D0"], &["python3", &script])],
            files: Vec::new(),
            max_duration: None,
        }
    }

    fn run(&self, plan: &BenchPlan) -> BenchOutcome {
        run_plan(plan, &self.run_dir(), &options(), &mut ()).unwrap()
    }

    /// The events of `<tag>.data` as JSON.
    fn events(&self, tag: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.run_dir().join(format!("{tag}.data"))).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.run_dir().join(name)).unwrap_or_default()
    }
}

fn options() -> ExecOptions {
    ExecOptions {
        grace: Duration::from_millis(200),
        ..ExecOptions::default()
    }
}

fn names(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

fn only(outcome: &BenchOutcome) -> &ProcessOutcome {
    assert_eq!(outcome.processes.len(), 1);
    &outcome.processes[0]
}

fn end_code(events: &[Value]) -> Value {
    let end = events.last().unwrap();
    assert_eq!(end["event"], "end", "{events:?}");
    end["data"]["return_code"].clone()
}

/// Whether `pid` is still running (a zombie waiting for its reaper does not count).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            state != 'Z' && state != 'X'
        }
        Err(_) => false,
    }
}

#[test]
fn success_with_rates_records_everything_in_order() {
    let b = Bench::new();
    let plan = b.plan(
        r#"
send({"$event": "phase", "$data": {"name": "init"}})
print("hello from stdout")
print("a warning", file=sys.stderr)
for i in range(3):
    rate(100.0 + i)
send({"task": "train", "loss": 0.5})
print(os.environ["PYTHONUNBUFFERED"], os.environ.get("MILABENCH_USE_STDOUT"))
"#,
    );
    let mut opts = options();
    opts.meta = Some(json!({"cpu": {"count": 2}}));
    let outcome = run_plan(&plan, &b.run_dir(), &opts, &mut ()).unwrap();
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(0));
    assert_eq!(p.rate_count, 3);
    assert!(p.success() && outcome.success(), "{outcome:?}");
    assert!(!outcome.interrupted && !outcome.timed_out);

    let events = b.events("bench.D0");
    let names = names(&events);
    // `config`, `meta` and `start` come first; after them the order between pipes (stdout and
    // the data channel) is whatever the reader threads saw first.
    assert_eq!(&names[..3], ["config", "meta", "start"]);
    assert!(names.contains(&"phase"), "{names:?}");
    assert_eq!(events[0]["data"], plan.processes[0].config);
    assert_eq!(events[1]["data"]["cpu"]["count"], 2);
    assert_eq!(events[2]["data"]["command"][0], "python3");
    assert!(events[2]["data"]["time"].as_f64().unwrap() > 1.6e9);
    assert_eq!(names.iter().filter(|n| **n == "data").count(), 4);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "line" && e["pipe"] == "stderr" && e["data"] == "a warning\n")
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "data" && e["pipe"] == "data" && e["data"]["rate"] == 102.0)
    );
    assert_eq!(end_code(&events), 0);
    assert_eq!(b.text("bench.D0.stdout"), "hello from stdout\n1 None\n");
    assert_eq!(b.text("bench.D0.stderr"), "a warning\n");
}

#[test]
fn non_zero_exit_is_a_failure() {
    let b = Bench::new();
    let outcome = b.run(&b.plan("rate(1.0)\nsys.exit(3)"));
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(3));
    assert!(!p.success() && !outcome.success());
    assert_eq!(end_code(&b.events("bench.D0")), 3);
}

#[test]
fn an_exception_is_a_failure_with_its_traceback() {
    let b = Bench::new();
    let outcome = b.run(&b.plan("rate(1.0)\nraise ValueError('boom')"));
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(1));
    assert!(!p.success());
    assert!(b.text("bench.D0.stderr").contains("ValueError: boom"));
}

#[test]
fn max_duration_stops_a_hanging_benchmark() {
    let b = Bench::new();
    let mut plan = b.plan("rate(1.0)\ntime.sleep(60)");
    plan.max_duration = Some(Duration::from_millis(500));
    let t = Instant::now();
    let outcome = b.run(&plan);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(t.elapsed() >= Duration::from_millis(500));
    let p = only(&outcome);
    assert!(p.timed_out && outcome.timed_out);
    assert_eq!(p.return_code, ReturnCode::Code(-15));
    assert!(!p.success());
    let events = b.events("bench.D0");
    let error = events.iter().find(|e| e["event"] == "error").unwrap();
    assert_eq!(error["data"]["type"], "TimeoutError");
    let message = events.iter().find(|e| e["event"] == "message").unwrap();
    assert!(
        message["data"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 0.5 seconds"),
        "{message}"
    );
    assert_eq!(end_code(&events), -15);
}

#[test]
fn sigterm_ignored_means_sigkill_after_the_grace_period() {
    let b = Bench::new();
    // The stop request comes after SIGTERM is ignored, so the orchestrator's SIGTERM (sent on
    // `stop`, as on a timeout) is certainly ignored and only SIGKILL ends the process.
    let plan = b.plan(
        r#"
signal.signal(signal.SIGTERM, signal.SIG_IGN)
rate(1.0)
send({"$event": "stop"})
while True:
    time.sleep(0.05)
"#,
    );
    let t = Instant::now();
    let outcome = b.run(&plan);
    assert!(t.elapsed() < Duration::from_secs(10));
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(-9));
    assert_eq!(p.verdict, ProcessVerdict::EarlyStopped);
    assert!(p.success());
}

#[test]
fn no_grandchild_survives() {
    let b = Bench::new();
    let pids = b.path("pids");
    let plan = b.plan(&format!(
        r#"
PIDS = {pids:?}
sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
# A child in the same group, one in its own session, and a daemon (double fork, setsid, no pipes).
a = subprocess.Popen(sleeper)
b = subprocess.Popen(sleeper, start_new_session=True)
c = subprocess.Popen([sys.executable, "-c", '''
import os, subprocess, sys, time
if os.fork() == 0:
    os.setsid()
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open({pids:?} + ".daemon", "w") as f:
        f.write(str(p.pid))
    time.sleep(60)
'''], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=())
c.wait()
while not os.path.exists(PIDS + ".daemon"):
    time.sleep(0.01)
with open(PIDS, "w") as f:
    f.write(f"{{a.pid}} {{b.pid}} {{open(PIDS + '.daemon').read()}}")
rate(1.0)
"#
    ));
    let t = Instant::now();
    let outcome = b.run(&plan);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(only(&outcome).return_code, ReturnCode::Code(0));
    let text = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    // Give the kernel a moment to deliver the final SIGKILLs.
    let wait = Instant::now();
    while pids.iter().any(|&p| alive(p)) && wait.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!alive(pid), "process {pid} survived the benchmark");
    }
}

#[test]
fn garbage_on_the_data_channel_is_recorded_and_the_run_goes_on() {
    let b = Bench::new();
    let plan = b.plan(
        r#"
_chan.write("this is not json\n")
_chan.write('{"rate": 1}{"rate": 2}\n')
_chan.flush()
os.write(FD, b"\xff\xfe not utf-8\n")
sys.stdout.buffer.write(b"caf\xe9 latin-1\n")
sys.stdout.flush()
rate(5.0)
"#,
    );
    let outcome = b.run(&plan);
    let p = only(&outcome);
    assert_eq!(p.rate_count, 1);
    assert!(p.success(), "{p:?}");
    let events = b.events("bench.D0");
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "format_error")
        .collect();
    assert_eq!(errors.len(), 3, "{events:?}");
    assert_eq!(errors[0]["data"]["line"], "this is not json\n");
    assert_eq!(errors[2]["data"]["type"], "UnicodeDecodeError");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "line" && e["data"].as_str().unwrap().starts_with("caf"))
    );
    assert_eq!(end_code(&events), 0);
}

/// Peak resident memory of this test process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_flood_on_the_data_channel_and_stdout_keeps_memory_bounded() {
    let b = Bench::new();
    let before = peak_rss_kib();
    let plan = b.plan(
        r#"
block = b"x" * (1 << 20)
for _ in range(100):       # 100 MiB without a newline on the data channel
    os.write(FD, block)
os.write(FD, b"\n")
line = b"y" * 1023 + b"\n"
chunk = line * 1024
for _ in range(10):        # 10 MiB of short lines on stdout
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
rate(7.0)
"#,
    );
    let outcome = b.run(&plan);
    let p = only(&outcome);
    assert!(p.success(), "{p:?}");
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 64 * 1024, "memory grew by {grown} KiB");
    let events = b.events("bench.D0");
    let cut: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "format_error")
        .collect();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0]["data"]["type"], "LineTooLong");
    assert_eq!(
        events.iter().filter(|e| e["event"] == "line").count(),
        10 * 1024
    );
    assert_eq!(
        std::fs::metadata(b.run_dir().join("bench.D0.stdout"))
            .unwrap()
            .len(),
        10 << 20
    );
}

#[test]
fn never_reporting_a_rate_is_a_failure() {
    let b = Bench::new();
    let outcome = b.run(&b.plan("print('working')"));
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(0));
    assert_eq!(p.rate_count, 0);
    assert!(!p.success());
}

#[test]
fn a_missing_script_is_a_failure() {
    let b = Bench::new();
    let mut plan = b.plan("");
    plan.processes[0].argv = vec![
        "python3".into(),
        b.path("nope/main.py").to_str().unwrap().into(),
    ];
    let outcome = b.run(&plan);
    let p = only(&outcome);
    assert_eq!(p.return_code, ReturnCode::Code(2));
    assert!(b.text("bench.D0.stderr").contains("can't open file"));
}

#[test]
fn a_missing_program_or_folder_is_recorded_without_panic() {
    let b = Bench::new();
    let mut plan = b.plan("");
    plan.processes[0].argv = vec!["/no/such/program".into()];
    let mut second = plan.processes[0].clone();
    second.tag = vec!["bench".into(), "D1".into()];
    second.argv = vec!["python3".into(), "-c".into(), "pass".into()];
    second.cwd = "/no/such/folder".into();
    plan.processes.push(second);
    let outcome = b.run(&plan);
    assert_eq!(outcome.processes.len(), 2);
    for p in &outcome.processes {
        assert_eq!(p.return_code, ReturnCode::Other(json!("ERROR")));
        assert!(!p.success());
        assert!(
            p.errors[0].starts_with("FileNotFoundError: could not start"),
            "{p:?}"
        );
    }
    for tag in ["bench.D0", "bench.D1"] {
        let events = b.events(tag);
        assert_eq!(names(&events), ["config", "start", "error", "end"]);
        assert_eq!(end_code(&events), "ERROR");
    }
}

#[test]
fn early_stop_stops_the_process_and_counts_as_success() {
    let b = Bench::new();
    let plan = b.plan(
        r#"
for i in range(5):
    rate(10.0)
send({"$event": "stop"})
time.sleep(60)
"#,
    );
    let t = Instant::now();
    let outcome = b.run(&plan);
    assert!(t.elapsed() < Duration::from_secs(10));
    let p = only(&outcome);
    assert_eq!(p.verdict, ProcessVerdict::EarlyStopped);
    assert_eq!(p.return_code, ReturnCode::Code(-15));
    assert!(p.success() && outcome.success());
    let events = b.events("bench.D0");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "stop" && e["pipe"] == "data" && e["data"].is_null())
    );
}

#[test]
fn a_precise_rate_stops_the_plan_like_an_early_stop() {
    let b = Bench::new();
    // Two processes of steady rates that would go on for a minute.
    let script = b.script(
        "steady.py",
        r#"
for i in range(600):
    rate(100.0 + (i * 7919 % 10) / 10)
    time.sleep(0.1)
"#,
    );
    let mut plan = b.plan("");
    plan.processes = vec![
        b.spec(&["bench", "D0"], &["python3", &script]),
        b.spec(&["bench", "D1"], &["python3", &script]),
    ];
    let precision = milabench_exec::PrecisionStop {
        share: 0.01,
        min_observations: 12,
        hold: 3,
    };
    let options = ExecOptions {
        precision: Some(precision),
        ..options()
    };
    let outcome = run_plan(&plan, &b.run_dir(), &options, &mut ()).unwrap();
    let reached = outcome.precise.expect("stopped for precision");
    assert!(reached <= 0.01, "{reached}");
    assert!(outcome.success(), "{outcome:?}");
    for (p, tag) in outcome.processes.iter().zip(["bench.D0", "bench.D1"]) {
        assert!(
            p.verdict == ProcessVerdict::EarlyStopped && p.rate_count >= 12 && p.rate_count < 600,
            "{p:?}"
        );
        let events = b.events(tag);
        assert!(
            events.iter().any(|e| e["event"] == "message"
                && e["data"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("within the --precision target of 1%"))),
            "{events:?}"
        );
    }
}

#[test]
fn a_noisy_rate_runs_until_the_benchmark_stops_itself() {
    let b = Bench::new();
    let plan = b.plan(
        r#"
import random
noise = random.Random(1)
for i in range(30):
    rate(noise.uniform(10.0, 1000.0))
"#,
    );
    let options = ExecOptions {
        precision: Some(milabench_exec::PrecisionStop {
            share: 0.01,
            min_observations: 10,
            hold: 1,
        }),
        ..options()
    };
    let outcome = run_plan(&plan, &b.run_dir(), &options, &mut ()).unwrap();
    assert_eq!(outcome.precise, None);
    let p = only(&outcome);
    assert!(
        p.verdict == ProcessVerdict::Succeeded && p.rate_count == 30,
        "{p:?}"
    );
}

#[test]
fn processes_of_a_plan_run_concurrently_with_their_own_files() {
    let b = Bench::new();
    let script = b.script(
        "main.py",
        r#"
# Each copy announces itself, then waits for the other: only concurrent copies both succeed.
me, other = sys.argv[1], sys.argv[2]
open(me + ".here", "w").close()
deadline = time.time() + 20
while not os.path.exists(other + ".here"):
    if time.time() > deadline:
        sys.exit("the other process never ran alongside")
    time.sleep(0.01)
rate(float(me))
print(os.environ["CUDA_VISIBLE_DEVICES"], FD)
"#,
    );
    let mut first = b.spec(&["bench", "D0"], &["python3", &script, "1", "2"]);
    first.env.insert("CUDA_VISIBLE_DEVICES".into(), "0".into());
    let mut second = b.spec(&["bench", "D1"], &["python3", &script, "2", "1"]);
    second.env.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
    let plan = BenchPlan {
        bench: "bench".into(),
        processes: vec![first, second],
        files: vec![PlannedFile {
            path: Utf8PathBuf::from_path_buf(b.path("extra/deep/voirconf.json")).unwrap(),
            content: "{}".into(),
        }],
        max_duration: None,
    };
    let outcome = b.run(&plan);
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(b.path("extra/deep/voirconf.json")).unwrap(),
        "{}"
    );
    for (tag, device, rate) in [("bench.D0", "0", 1.0), ("bench.D1", "1", 2.0)] {
        let events = b.events(tag);
        assert!(events.iter().any(|e| e["data"]["rate"] == rate));
        assert!(
            b.text(&format!("{tag}.stdout"))
                .starts_with(&format!("{device} "))
        );
    }
}

#[test]
fn interrupt_stops_everything_and_leaves_readable_files() {
    let b = Bench::new();
    let script = b.script(
        "main.py",
        "rate(1.0)\nprint('up', flush=True)\ntime.sleep(60)",
    );
    let plan = BenchPlan {
        bench: "bench".into(),
        processes: vec![
            b.spec(&["bench", "0"], &["python3", &script]),
            b.spec(&["bench", "1"], &["python3", &script]),
        ],
        files: Vec::new(),
        max_duration: None,
    };
    let opts = options();
    let interrupt = opts.interrupt.clone();
    let trigger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        interrupt.trigger();
    });
    let t = Instant::now();
    let outcome = run_plan(&plan, &b.run_dir(), &opts, &mut ()).unwrap();
    trigger.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(outcome.interrupted && !outcome.success());
    for p in &outcome.processes {
        assert!(p.interrupted);
        assert_eq!(p.return_code, ReturnCode::Other(json!("ERROR")));
    }
    for tag in ["bench.0", "bench.1"] {
        let events = b.events(tag);
        assert_eq!(end_code(&events), "ERROR");
        assert!(
            events
                .iter()
                .any(|e| e["event"] == "error" && e["data"]["type"] == "KeyboardInterrupt")
        );
    }
    // A plan started after the interruption does not launch anything.
    let again = run_plan(&plan, &b.run_dir(), &opts, &mut ()).unwrap();
    assert!(again.interrupted && again.processes.is_empty());
}

/// A process "in a container" whose removal command writes a line to `removed`.
fn in_container(b: &Bench, tag: &[&str], script: &str) -> ProcessSpec {
    let removed = b.path("removed");
    ProcessSpec {
        container: Some(ContainerProcess {
            runtime: "podman",
            name: tag.join("."),
            stop: Some(vec![
                "sh".into(),
                "-c".into(),
                format!("echo \"$0\" >> {}", removed.display()),
                tag.join("."),
            ]),
        }),
        ..b.spec(tag, &["python3", script])
    }
}

#[test]
fn a_timeout_or_an_interrupt_removes_the_container_and_a_clean_end_does_not() {
    let b = Bench::new();
    // It ignores SIGTERM, as a container whose client does not pass it on: killed after the
    // grace period, then its container removed.
    let hangs = b.script(
        "hangs.py",
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nrate(1.0)\ntime.sleep(60)",
    );
    let ends = b.script("ends.py", "rate(1.0)");
    // A clean end: its container removed itself (`--rm`), nothing to do.
    let clean = BenchPlan {
        bench: "bench".into(),
        processes: vec![in_container(&b, &["bench", "ends"], &ends)],
        files: Vec::new(),
        max_duration: None,
    };
    assert!(b.run(&clean).success());
    assert!(!b.path("removed").exists(), "a clean end removes nothing");
    let mut plan = BenchPlan {
        bench: "bench".into(),
        processes: vec![in_container(&b, &["bench", "hangs"], &hangs)],
        files: Vec::new(),
        max_duration: Some(Duration::from_millis(1500)),
    };
    let outcome = b.run(&plan);
    assert!(outcome.timed_out);
    let removed = std::fs::read_to_string(b.path("removed")).unwrap_or_default();
    assert!(removed.lines().all(|l| l == "bench.hangs"), "{removed}");
    assert!(
        removed.contains("bench.hangs"),
        "the stopped container was removed"
    );

    std::fs::remove_file(b.path("removed")).unwrap();
    plan.max_duration = None;
    let opts = options();
    let interrupt = opts.interrupt.clone();
    let trigger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        interrupt.trigger();
    });
    let outcome = run_plan(&plan, &b.run_dir(), &opts, &mut ()).unwrap();
    trigger.join().unwrap();
    assert!(outcome.interrupted);
    let removed = std::fs::read_to_string(b.path("removed")).unwrap_or_default();
    assert!(
        removed.contains("bench.hangs"),
        "Ctrl-C removed it: {removed}"
    );
}

#[test]
fn data_smuggled_in_stdout_is_separated() {
    let b = Bench::new();
    let mut plan = b.plan(
        r#"
print("plain text")
rate(3.0)
print(os.environ["DATA_FD"], os.environ["MILABENCH_USE_STDOUT"])
"#,
    );
    plan.processes[0].use_stdout = true;
    let outcome = b.run(&plan);
    assert!(only(&outcome).success(), "{outcome:?}");
    let events = b.events("bench.D0");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "data" && e["pipe"] == "data" && e["data"]["rate"] == 3.0)
    );
    assert_eq!(b.text("bench.D0.stdout"), "plain text\n1 1\n");
}

#[derive(Default)]
struct Seen {
    starts: Vec<String>,
    rates: Vec<f64>,
    ends: Vec<(String, bool)>,
}

impl ExecObserver for Seen {
    fn on_start(&mut self, tag: &str, _spec: &ProcessSpec) {
        self.starts.push(tag.to_owned());
    }
    fn on_record(&mut self, _tag: &str, record: &Record) {
        if let Event::Data(d) = &record.event
            && let Some(rate) = d.rate
        {
            self.rates.push(rate);
        }
    }
    fn on_end(&mut self, outcome: &ProcessOutcome) {
        self.ends.push((outcome.tag.clone(), outcome.success()));
    }
}

/// Counts rates and, told that the loop is caught up once the first came, lets the process go
/// on to its second (by creating `release`).
struct CaughtUp {
    rates: usize,
    release: PathBuf,
    /// How many rates had been seen at each `on_caught_up`.
    caught_up_at: Vec<usize>,
}

impl ExecObserver for CaughtUp {
    fn on_record(&mut self, _tag: &str, record: &Record) {
        if let Event::Data(d) = &record.event
            && d.rate.is_some()
        {
            self.rates += 1;
        }
    }
    fn on_caught_up(&mut self) {
        self.caught_up_at.push(self.rates);
        if self.rates == 1 {
            std::fs::write(&self.release, "").unwrap();
        }
    }
}

/// The observer is told when every record that came was delivered: the process below writes
/// its second rate only once told so after its first (or after 20 s, and the test fails).
#[test]
fn the_observer_is_told_when_the_loop_is_caught_up() {
    let b = Bench::new();
    let release = b.path("release");
    let plan = b.plan(&format!(
        "rate(4.0)\ndeadline = time.time() + 20\nwhile not os.path.exists({:?}) and time.time() < deadline:\n    time.sleep(0.01)\nrate(5.0)",
        release.to_str().unwrap()
    ));
    let mut seen = CaughtUp {
        rates: 0,
        release,
        caught_up_at: Vec::new(),
    };
    let began = std::time::Instant::now();
    let outcome = run_plan(&plan, &b.run_dir(), &options(), &mut seen).unwrap();
    assert!(outcome.success());
    assert_eq!(seen.rates, 2);
    assert!(seen.caught_up_at.contains(&1), "{:?}", seen.caught_up_at);
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "{:?}",
        began.elapsed()
    );
}

struct TickSampler {
    seen_pids: Arc<Mutex<Vec<u32>>>,
}

struct Ticking {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl RunningSampler for Ticking {
    fn request_stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    fn stop(self: Box<Self>) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap();
    }
}

impl SamplerFactory for TickSampler {
    fn start(
        &self,
        process: &SampledProcess<'_>,
        sink: RecordSink,
    ) -> Option<Box<dyn RunningSampler>> {
        self.seen_pids.lock().unwrap().push(process.pid);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                let record = Record::new(
                    Event::from_parts("data", json!({"task": "main", "cpudata": {"load": 1.0}})),
                    Some(milabench_metrics::Pipe::Data),
                );
                sink.send(record);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Some(Box::new(Ticking { stop, thread }))
    }
}

#[test]
fn observer_and_sampler_see_the_run() {
    let b = Bench::new();
    let plan = b.plan("rate(4.0)\ntime.sleep(0.3)\nrate(5.0)");
    let pids = Arc::new(Mutex::new(Vec::new()));
    let mut opts = options();
    opts.sampler = Some(Arc::new(TickSampler {
        seen_pids: pids.clone(),
    }));
    let mut seen = Seen::default();
    let outcome = run_plan(&plan, &b.run_dir(), &opts, &mut seen).unwrap();
    assert!(outcome.success());
    assert_eq!(seen.starts, ["bench.D0"]);
    assert_eq!(seen.rates, [4.0, 5.0]);
    assert_eq!(seen.ends, [("bench.D0".to_owned(), true)]);
    assert_eq!(pids.lock().unwrap().len(), 1);
    let events = b.events("bench.D0");
    let samples = events
        .iter()
        .filter(|e| e["data"]["cpudata"]["load"] == 1.0)
        .count();
    assert!(samples >= 3, "{samples}");
    assert_eq!(end_code(&events), 0);
}

/// A sampler that sends as fast as the channel takes, then one last record when stopped (as
/// the system sampler sends the energy counters).
struct FloodSampler;

impl SamplerFactory for FloodSampler {
    fn start(
        &self,
        _process: &SampledProcess<'_>,
        sink: RecordSink,
    ) -> Option<Box<dyn RunningSampler>> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let sample = |load: f64| {
            Record::new(
                Event::from_parts("data", json!({"task": "main", "cpudata": {"load": load}})),
                Some(milabench_metrics::Pipe::Data),
            )
        };
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                sink.send(sample(1.0));
            }
            sink.send(sample(2.0));
        });
        Some(Box::new(Ticking { stop, thread }))
    }
}

/// Scale bench, N = 256: the run hung after every process ended. Stopping a process's sampler
/// waited for its thread, which waited for room in the channel that only the waiting thread
/// empties. Each sampler's last record must also be in its file before the `end`.
#[test]
fn stopping_samplers_of_a_full_channel_neither_hangs_nor_loses_their_last_records() {
    let b = Bench::new();
    let script = b.script("main.py", "rate(1.0)\ntime.sleep(0.2)");
    let mut plan = b.plan("rate(1.0)");
    plan.processes = (0..4)
        .map(|i| b.spec(&["bench", &format!("D{i}")], &["python3", &script]))
        .collect();
    let mut opts = options();
    opts.sampler = Some(Arc::new(FloodSampler));
    let (done, finished) = std::sync::mpsc::channel();
    let run_dir = b.run_dir();
    std::thread::spawn(move || {
        let outcome = run_plan(&plan, &run_dir, &opts, &mut ());
        let _ = done.send(outcome.map(|o| o.success()));
    });
    let success = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ended (it hung while stopping its samplers)");
    assert!(success.unwrap());
    for i in 0..4 {
        let events = b.events(&format!("bench.D{i}"));
        let last_sample = events
            .iter()
            .rposition(|e| e["data"]["cpudata"]["load"].is_number())
            .expect("samples");
        assert_eq!(events[last_sample]["data"]["cpudata"]["load"], 2.0, "D{i}");
        assert_eq!(end_code(&events), 0);
    }
}

#[test]
fn duplicate_tags_are_refused_before_anything_starts() {
    let b = Bench::new();
    let mut plan = b.plan("rate(1.0)");
    plan.processes.push(plan.processes[0].clone());
    let err = run_plan(&plan, &b.run_dir(), &options(), &mut ()).unwrap_err();
    assert!(err.to_string().contains("bench.D0"), "{err}");
    assert!(!Path::new(&b.run_dir()).join("bench.D0.data").exists());
}

#[test]
fn a_failed_rank_stops_the_other_ranks_of_its_job() {
    let bench = Bench::new();
    let waits = bench.script("waits.py", "time.sleep(60)");
    let fails = bench.script(
        "fails.py",
        "print('peer lost', file=sys.stderr)\nsys.exit(3)",
    );
    let lone = bench.script("lone.py", "time.sleep(2)\nrate(1.0)");
    let rank = |tag: &[&str], node: &str, script: &str| ProcessSpec {
        node: Some(node.into()),
        job: Some("ddp.0".into()),
        ..bench.spec(tag, &["python3", script])
    };
    let plan = BenchPlan {
        bench: "ddp".into(),
        processes: vec![
            rank(&["ddp", "0", "a"], "a", &waits),
            rank(&["ddp", "0", "b", "nolog"], "b", &fails),
            // Not a rank of that job: it runs to its end.
            bench.spec(&["ddp", "alone"], &["python3", &lone]),
        ],
        files: Vec::new(),
        max_duration: None,
    };
    let started = std::time::Instant::now();
    let outcome = bench.run(&plan);
    assert!(started.elapsed() < Duration::from_secs(30), "rank 0 waited");
    let rank0 = &outcome.processes[0];
    assert!(!rank0.success());
    assert_eq!(
        rank0.errors,
        [
            "RankFailed: stopped: the rank on node `b` (ddp.0.b.nolog) failed: exited with status 3: peer lost"
        ]
    );
    assert!(outcome.processes[2].success(), "{:?}", outcome.processes[2]);
}
