//! Supervision at scale: N processes of one small protocol-speaking benchmark (`scale/main.py`:
//! a rate every 100 ms; a GPU-sample-sized event, a loss and a line of stdout every second; no
//! torch) run by the release `milabench run` through a generated suite whose plan is `njobs`
//! with `n: N`, for N = 8, 64, 256 and 512 on this machine, each run started under the soft
//! open-file limit of a default login (1,024), which ours raises itself and the Python tool's
//! run gets raised for it.
//!
//! For each run: the orchestrator's own CPU (its threads' run time in
//! `/proc/PID/task/*/schedstat`, in nanoseconds, read every 500 ms, a thread that ended
//! counting with its last reading; the benchmark processes are not counted) per 1,000 data
//! events over the steady part of the window in which every process was running (from the
//! last process's first event to the first process's last one, less [`EDGE`] at each end, so
//! start-up, the processes' first samples and ends, and the report are left out), its peak
//! RSS (`VmHWM`), the delay from an event's own timestamp (written by the process just before
//! it writes the line) to the line being in the run folder's `.data` file (the files are read
//! every 20 ms, so the delay includes up to 20 ms of polling), and lost or reordered events:
//! each process numbers its events and says at its end how many it wrote
//! (`SCALE_COUNTS/<id>`), and every `.data` file must hold exactly that sequence, in order.
//!
//! Our tool is measured three ways: plain (its SQLite results store is always on), with every
//! validation layer (`--validations all`), and with those and the dashboard drawing in a
//! pseudo-terminal (`script`, 120x40). The Python milabench (`--scale-python`, its `milabench`
//! program) runs the same benchmark folder, which it accepts unchanged, with `--dash no`.
//! Our ways run three times at the smallest N, where the window holds so little CPU that the
//! machine's own noise moves it by half, and the median is kept (every run is printed).
//! Goals: our CPU per event at least 10 times lower than the Python tool's, within 2 times from
//! N = 8 to 512, and nothing lost or reordered.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use serde_json::Value;

use super::tree_cpu::CpuTrace;

/// Runs of each of our ways at the smallest N, whose median is kept.
const SMALLEST_REPEATS: usize = 3;

/// Process counts measured by default.
pub const COUNTS: [usize; 4] = [8, 64, 256, 512];
/// The soft open-file limit every run starts under: a default login's.
const NOFILE: u32 = 1024;
/// How often the run folder is read for new lines.
const POLL: Duration = Duration::from_millis(20);
/// Polls between two samples of the orchestrator's CPU (100 ms: its whole-life figure, in clock
/// ticks) and memory.
const SAMPLE_EVERY: u32 = 5;
/// Polls between two readings of its threads' own clocks (500 ms: the window's figure).
const CLOCK_EVERY: u32 = 25;
/// Left out at each end of the window: the processes' first samples and their ends, and the
/// last steps of the start-up, are not a steady cost per event (a fifth of the window at most).
const EDGE: f64 = 2.0;
/// The benchmark folder, written out for each run.
const MAIN_PY: &str = include_str!("scale/main.py");
const BENCHFILE_PY: &str = include_str!("scale/benchfile.py");
/// Least ratio of the Python tool's CPU per event to ours.
const TARGET_RATIO: f64 = 10.0;
/// Most spread of our CPU per event across the process counts (largest / smallest).
const TARGET_FLAT: f64 = 2.0;

/// A way of running the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Ours, plain lines.
    Plain,
    /// Ours with `--validations all`.
    Validations,
    /// Ours with `--validations all` and the dashboard in a pseudo-terminal.
    Dashboard,
    /// The Python milabench, `--dash no`.
    Python,
}

impl Way {
    fn label(self) -> &'static str {
        match self {
            Way::Plain => "ours",
            Way::Validations => "ours +validations",
            Way::Dashboard => "ours +validations +dash",
            Way::Python => "Python milabench",
        }
    }
}

/// What one run measured.
#[derive(Debug, Default)]
struct Figures {
    /// Data events written by the processes, in all.
    events: usize,
    /// Data events per second inside the window.
    events_per_s: f64,
    /// Orchestrator CPU milliseconds per 1,000 data events inside the window, less its edges.
    cpu_ms_per_1000: f64,
    /// Orchestrator CPU seconds over its whole life (start-up and report included).
    cpu_total_s: f64,
    /// With the dashboard: what its view's thread took of that, and what the rest did.
    view: Option<ViewCost>,
    /// Seconds of the window.
    window_s: f64,
    /// The window in which every process ran: from the last process's first event to the
    /// first process's last one (Unix times).
    window: (f64, f64),
    /// Peak resident memory of the orchestrator, MiB.
    peak_rss_mib: f64,
    /// Delay from an event's timestamp to its line in the run folder: median and 99th
    /// percentile, milliseconds.
    delay_p50_ms: f64,
    delay_p99_ms: f64,
    /// Events a process said it wrote that are not in the files.
    lost: usize,
    /// Events out of their process's order in the files.
    reordered: usize,
    /// The exit status, when not 0.
    status: Option<String>,
}

/// The dashboard's share of the window's CPU: its view's frames cost per second of the run,
/// whatever the events.
#[derive(Debug, Default, Clone, Copy)]
struct ViewCost {
    /// The view's thread, CPU milliseconds per second of the window.
    ms_per_s: f64,
    /// Everything else, CPU milliseconds per 1,000 data events.
    rest_ms_per_1000: f64,
}

/// Measures and prints the scale table: `seconds` per run, process counts `counts`, and the
/// Python milabench beside ours when `python_milabench` (its `milabench` program) is given, up
/// to `python_max_n` processes: it starts them one at a time, 1 to 3 s each here (its
/// orchestrator runs `git` and a Python subprocess to describe the machine for each), so 256
/// took 4 minutes to start on a quiet machine and would take about 13 under load.
pub fn run(
    seconds: u64,
    counts: &[usize],
    python_milabench: Option<&Path>,
    python_max_n: usize,
) -> anyhow::Result<()> {
    let counts = if counts.is_empty() {
        &COUNTS[..]
    } else {
        counts
    };
    eprintln!("==> bench: supervision at scale (building the release milabench)");
    let ours = super::multinode::release_milabench()?;
    let python = find_python()?;
    let mut ways = vec![Way::Plain, Way::Validations, Way::Dashboard];
    if let Some(program) = python_milabench {
        anyhow::ensure!(
            program.is_file(),
            "--scale-python {}: no such program; give the `milabench` of a venv where the \
             Python milabench is installed",
            program.display()
        );
        ways.push(Way::Python);
    }
    println!(
        "## supervision at scale ({seconds} s runs, njobs plan, release build; load average {})",
        super::load::load_average()
    );
    println!(
        "{:<26} {:>5} {:>9} {:>10} {:>11} {:>9} {:>8} {:>13} {:>6} {:>9}",
        "",
        "N",
        "events",
        "events/s",
        "CPU ms/1k",
        "CPU all",
        "RSS MiB",
        "delay p50/99",
        "lost",
        "reordered"
    );
    let mut results: BTreeMap<(usize, &'static str), Figures> = BTreeMap::new();
    for &n in counts {
        for &way in &ways {
            if way == Way::Python && n > python_max_n {
                println!(
                    "{:<26} {n:>5} not run (over --scale-python-max {python_max_n})",
                    way.label()
                );
                continue;
            }
            let program = if way == Way::Python {
                python_milabench.context("the Python milabench")?
            } else {
                ours.as_path()
            };
            // The smallest N's window holds little CPU (20 to 30 ms at 8), which the machine's
            // own noise moves by half: it is measured three times and its median kept.
            let repeats = if way != Way::Python && Some(&n) == counts.iter().min() {
                SMALLEST_REPEATS
            } else {
                1
            };
            let mut tries = Vec::new();
            for _ in 0..repeats {
                let figures = measure(way, program, &python, n, seconds)
                    .with_context(|| format!("{} with {n} processes", way.label()))?;
                print_line(way, n, &figures);
                tries.push(figures);
            }
            let figures = median_run(tries);
            if repeats > 1 {
                println!(
                    "{:<26} {n:>5} {:>9} {:>10} {:>11.2}   (the median of {repeats} runs, kept)",
                    "  median", "", "", figures.cpu_ms_per_1000
                );
            }
            results.insert((n, way.label()), figures);
        }
    }
    println!("(load average at the end {})", super::load::load_average());
    verdicts(&results, counts, python_milabench.is_some());
    Ok(())
}

/// The run of median CPU per event among `tries` (at least one), with the events lost or
/// reordered in any of them: a damaged run counts even when it is not the one kept.
fn median_run(mut tries: Vec<Figures>) -> Figures {
    let lost = tries.iter().map(|f| f.lost).sum();
    let reordered = tries.iter().map(|f| f.reordered).sum();
    tries.sort_by(|a, b| a.cpu_ms_per_1000.total_cmp(&b.cpu_ms_per_1000));
    Figures {
        lost,
        reordered,
        ..tries.swap_remove(tries.len() / 2)
    }
}

/// Prints one run's line (and its view's, with the dashboard).
fn print_line(way: Way, n: usize, figures: &Figures) {
    println!(
        "{:<26} {n:>5} {:>9} {:>10.0} {:>11.2} {:>7.2} s {:>8.1} {:>6.0}/{:<6.0} {:>6} {:>9}{}",
        way.label(),
        figures.events,
        figures.events_per_s,
        figures.cpu_ms_per_1000,
        figures.cpu_total_s,
        figures.peak_rss_mib,
        figures.delay_p50_ms,
        figures.delay_p99_ms,
        figures.lost,
        figures.reordered,
        figures
            .status
            .as_deref()
            .map(|s| format!("  (exit {s})"))
            .unwrap_or_default(),
    );
    if let Some(view) = figures.view {
        println!(
            "{:<26} {n:>5} {:>9} {:>10} {:>11.2}   (the view's thread: {:.2} ms of CPU a second)",
            "  less the view's frames", "", "", view.rest_ms_per_1000, view.ms_per_s
        );
    }
}

/// The goal lines: the ratio to the Python tool at each N, the spread over N, nothing lost.
fn verdicts(results: &BTreeMap<(usize, &'static str), Figures>, counts: &[usize], python: bool) {
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    let cost = |n: usize, way: Way| results.get(&(n, way.label())).map(|f| f.cpu_ms_per_1000);
    if python {
        let ratios: Vec<String> = counts
            .iter()
            .filter_map(|&n| Some((n, cost(n, Way::Python)? / cost(n, Way::Plain)?)))
            .map(|(n, ratio)| format!("N={n} {ratio:.1}x"))
            .collect();
        let least = counts
            .iter()
            .filter_map(|&n| Some(cost(n, Way::Python)? / cost(n, Way::Plain)?))
            .fold(f64::INFINITY, f64::min);
        println!(
            "{:<40} {}  target >= {TARGET_RATIO}x: {}",
            "scale: Python CPU per event / ours",
            ratios.join(", "),
            met(least >= TARGET_RATIO)
        );
    }
    for way in [Way::Plain, Way::Validations, Way::Dashboard] {
        let costs: Vec<f64> = counts.iter().filter_map(|&n| cost(n, way)).collect();
        let flat = spread(&costs);
        println!(
            "{:<40} largest / smallest CPU per event {flat:.2}  target <= {TARGET_FLAT}: {}",
            format!("scale: {} flat in N", way.label()),
            met(flat <= TARGET_FLAT)
        );
        // A spread can be a fall: a fixed cost per second shared by more events as N grows.
        let smallest = counts.iter().min().and_then(|&n| cost(n, way));
        let largest = counts.iter().max().and_then(|&n| cost(n, way));
        if let (Some(first), Some(last)) = (smallest, largest) {
            println!(
                "{:<40} CPU per event at the largest N / at the smallest {:.2}  target <= {TARGET_FLAT}: {}",
                format!("scale: {} growth in N", way.label()),
                last / first,
                met(last / first <= TARGET_FLAT)
            );
        }
    }
    // The view's frames cost per second, not per event: the rest is the supervision's.
    let views: Vec<(usize, ViewCost)> = counts
        .iter()
        .filter_map(|&n| Some((n, results.get(&(n, Way::Dashboard.label()))?.view?)))
        .collect();
    if !views.is_empty() {
        let rests: Vec<f64> = views.iter().map(|(_, v)| v.rest_ms_per_1000).collect();
        let flat = spread(&rests);
        let per_second: Vec<String> = views
            .iter()
            .map(|(n, v)| format!("N={n} {:.2}", v.ms_per_s))
            .collect();
        println!(
            "{:<40} largest / smallest CPU per event {flat:.2}  target <= {TARGET_FLAT}: {}; the view's frames, ms a second: {}",
            "scale: +dash less the view flat in N",
            met(flat <= TARGET_FLAT),
            per_second.join(", ")
        );
    }
    let damaged: usize = results
        .iter()
        .filter(|((_, label), _)| *label != Way::Python.label())
        .map(|(_, f)| f.lost + f.reordered)
        .sum();
    println!(
        "{:<40} {damaged} lost or reordered events in our runs  target 0: {}",
        "scale: nothing lost or reordered",
        met(damaged == 0)
    );
}

/// The Python interpreter the benchmark runs with (the first `python3` on `PATH`, resolved).
fn find_python() -> anyhow::Result<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("python3"))
                .find(|p| p.is_file())
        })
        .context("no python3 on PATH: the scale benchmark is a Python script")?;
    Ok(fs_err::canonicalize(found)?)
}

/// Runs the suite once `way` with `n` processes for `seconds` and measures it.
fn measure(
    way: Way,
    program: &Path,
    python: &Path,
    n: usize,
    seconds: u64,
) -> anyhow::Result<Figures> {
    // The Python tool takes seconds to start each process.
    let limit = Duration::from_secs(seconds * 2 + 600 + 4 * n as u64);
    let scratch = tempfile::Builder::new()
        .prefix("milabench-bench-scale-")
        .tempdir()?;
    let root = scratch.path();
    let bench = root.join("bench");
    fs_err::create_dir_all(&bench)?;
    fs_err::write(bench.join("main.py"), MAIN_PY)?;
    fs_err::write(bench.join("benchfile.py"), BENCHFILE_PY)?;
    let venv = root.join("base/venv/scale/bin");
    fs_err::create_dir_all(&venv)?;
    std::os::unix::fs::symlink(python, venv.join("python"))?;
    let counts = root.join("counts");
    fs_err::create_dir_all(&counts)?;
    let ready = root.join("ready");
    fs_err::create_dir_all(&ready)?;
    let suite = root.join("suite.yaml");
    fs_err::write(
        &suite,
        format!(
            "scale:\n  inherits: _defaults\n  definition: {}\n  install_group: scale\n  \
             enabled: true\n  weight: 1\n  tags: [monogpu]\n  max_duration: {}\n  \
             plan:\n    method: njobs\n    n: {n}\n",
            bench.display(),
            limit.as_secs()
        ),
    )?;
    let base = root.join("base");
    let mut argv: Vec<String> = vec![program.display().to_string()];
    let path = |p: &Path| p.display().to_string();
    match way {
        Way::Python => argv.extend([
            "run".into(),
            "--base".into(),
            path(&base),
            "--config".into(),
            path(&suite),
            "--run-name".into(),
            "scale".into(),
            "--dash".into(),
            "no".into(),
        ]),
        _ => {
            argv.extend([
                "--base".into(),
                path(&base),
                "run".into(),
                "--config".into(),
                path(&suite),
                "--no-setup".into(),
                "--no-check".into(),
                "--run-name".into(),
                "scale".into(),
            ]);
            if way != Way::Plain {
                argv.extend(["--validations".into(), "all".into()]);
            }
            argv.push(
                if way == Way::Dashboard {
                    "--dash"
                } else {
                    "--no-dash"
                }
                .into(),
            );
        }
    }
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    // Ours raises its soft limit to the hard one when it starts; the Python tool does not and
    // wedges at about 200 processes under 1,024 files, so its run is given the raised limit
    // that ours takes itself.
    let raise = if way == Way::Python {
        " && ulimit -S -n \"$(ulimit -H -n)\""
    } else {
        ""
    };
    let inner = format!("ulimit -S -n {NOFILE}{raise} && exec {}", quoted.join(" "));
    let log = root.join("orchestrator.log");
    let mut command = if way == Way::Dashboard {
        let mut command = Command::new("script");
        command
            .args([
                "-qec",
                &format!("stty cols 120 rows 40 && {inner}"),
                "/dev/null",
            ])
            .env("TERM", "xterm-256color");
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", &inner]);
        command
    };
    command
        .current_dir(root)
        .env("SCALE_SECONDS", seconds.to_string())
        .env("SCALE_COUNTS", &counts)
        .env("SCALE_READY", &ready)
        .env("SCALE_N", n.to_string())
        .env_remove("MILABENCH_DB")
        .env_remove("CI")
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&log)?.into_file())
        .stderr(fs_err::File::create(root.join("orchestrator.err"))?.into_file());
    let mut child = command
        .spawn()
        .with_context(|| format!("could not start {}", argv[0]))?;
    let run_folder = base.join("runs/scale");
    let mut watcher = Watcher::default();
    // The whole life's CPU, from clock ticks: the last sample is the figure.
    let mut cpu_total_s = 0.0;
    let mut clocks = ThreadClocks::default();
    let mut steady = CpuTrace::default();
    let mut view = CpuTrace::default();
    let mut peak_rss_kib = 0u64;
    let mut orchestrator = (way != Way::Dashboard).then_some(child.id());
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |t| t as f64);
    let began = Instant::now();
    let mut polls = 0u32;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if began.elapsed() > limit {
            let _ = child.kill();
            bail!("the run took more than {} s", limit.as_secs());
        }
        if polls.is_multiple_of(SAMPLE_EVERY) {
            if orchestrator.is_none() {
                orchestrator = child_named(child.id(), "milabench");
            }
            if let Some(pid) = orchestrator
                && let Some((cpu_ticks, rss)) = own_usage(pid)
            {
                cpu_total_s = cpu_ticks / ticks;
                peak_rss_kib = peak_rss_kib.max(rss);
            }
        }
        if polls.is_multiple_of(CLOCK_EVERY)
            && let Some(pid) = orchestrator
            && let Some((cpu, view_cpu)) = clocks.read(pid)
        {
            let now = unix_now();
            steady.record(now, cpu);
            view.record(now, view_cpu);
        }
        watcher.poll(&run_folder, polls.is_multiple_of(25))?;
        polls += 1;
        std::thread::sleep(POLL);
    };
    watcher.poll(&run_folder, true)?;
    let err = fs_err::read_to_string(root.join("orchestrator.err")).unwrap_or_default();
    let mut figures = check_files(&run_folder, &counts, n).with_context(|| {
        format!(
            "the run's files are not what its processes wrote (status {status}):\n{}",
            tail(&err)
        )
    })?;
    if !status.success() {
        figures.status = Some(
            status
                .code()
                .map_or_else(|| status.to_string(), |c| c.to_string()),
        );
    }
    let window = figures.window_s;
    anyhow::ensure!(
        window > 1.0,
        "the processes never all ran at once for a second (window {window:.2} s): give more \
         --scale-seconds"
    );
    let (from, to) = figures.window;
    let edge = EDGE.min(window / 5.0);
    let (from, to) = (from + edge, to - edge);
    let cpu = steady.between(from, to);
    let per_1000 = |cpu: f64| cpu * 1e3 / (figures.events_per_s * (to - from)) * 1e3;
    figures.cpu_ms_per_1000 = per_1000(cpu);
    if way == Way::Dashboard {
        let view_cpu = view.between(from, to);
        figures.view = Some(ViewCost {
            ms_per_s: view_cpu * 1e3 / (to - from),
            rest_ms_per_1000: per_1000(cpu - view_cpu),
        });
    }
    figures.cpu_total_s = cpu_total_s;
    figures.peak_rss_mib = peak_rss_kib as f64 / 1024.0;
    let mut delays = watcher.delays;
    delays.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        delays
            .get(((delays.len() as f64 - 1.0) * q).round() as usize)
            .map_or(f64::NAN, |d| d * 1e3)
    };
    figures.delay_p50_ms = quantile(0.5);
    figures.delay_p99_ms = quantile(0.99);
    Ok(figures)
}

/// The last lines of `text`.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The child of `parent` whose command is `name`.
fn child_named(parent: u32, name: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (command, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: u32 = rest.split(' ').nth(1)?.parse().ok()?;
        (ppid == parent && command == name).then_some(pid)
    })
}

/// A process's own CPU ticks (user + system, not its children's) and its peak RSS in KiB.
fn own_usage(pid: u32) -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // After the name: state is field 3 of proc(5); utime is 14 and stime 15.
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0);
    Some((ticks, rss))
}

/// The largest of `costs` over the smallest.
fn spread(costs: &[f64]) -> f64 {
    let (low, high) = costs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &c| (l.min(c), h.max(c)));
    high / low
}

/// The name of the dashboard's thread, which draws the view's frames.
const VIEW_THREAD: &str = "dashboard";

/// The CPU time of a process's threads from their own clocks (`schedstat`, nanoseconds: the
/// clock ticks of `/proc/PID/stat` are 10 ms, a tenth of what 8 processes cost a second), each
/// thread that has ended counting with its last reading.
#[derive(Default)]
struct ThreadClocks {
    /// Each thread's last reading, and whether it is the view's.
    seen: HashMap<u32, (u64, bool)>,
}

impl ThreadClocks {
    /// The process's CPU seconds so far, and those of its view's thread; `None` once it is
    /// gone.
    fn read(&mut self, pid: u32) -> Option<(f64, f64)> {
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
        {
            let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let ns = std::fs::read_to_string(entry.path().join("schedstat"))
                .ok()
                .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok());
            if let Some(ns) = ns {
                let view = self
                    .seen
                    .get(&tid)
                    .map(|&(_, view)| view)
                    .unwrap_or_else(|| {
                        std::fs::read_to_string(entry.path().join("comm"))
                            .is_ok_and(|name| name.trim() == VIEW_THREAD)
                    });
                self.seen.insert(tid, (ns, view));
            }
        }
        let sum = |only_view: bool| {
            self.seen
                .values()
                .filter(|(_, view)| *view || !only_view)
                .map(|(ns, _)| ns)
                .sum::<u64>() as f64
                / 1e9
        };
        Some((sum(false), sum(true)))
    }
}

/// Reads the run folder's `.data` files as they grow and times each event's arrival.
#[derive(Default)]
struct Watcher {
    files: HashMap<PathBuf, (fs_err::File, Vec<u8>)>,
    /// Seconds from each event's timestamp to the poll that found its line.
    delays: Vec<f64>,
}

impl Watcher {
    /// Reads what was appended to the files since the last poll; with `scan`, also opens the
    /// files that appeared.
    fn poll(&mut self, folder: &Path, scan: bool) -> anyhow::Result<()> {
        if scan && folder.is_dir() {
            for entry in fs_err::read_dir(folder)? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "data") && !self.files.contains_key(&path)
                {
                    let file = fs_err::File::open(&path)?;
                    self.files.insert(path, (file, Vec::new()));
                }
            }
        }
        let mut chunk = Vec::new();
        for (file, pending) in self.files.values_mut() {
            chunk.clear();
            file.read_to_end(&mut chunk)?;
            if chunk.is_empty() {
                continue;
            }
            let now = unix_now();
            pending.extend_from_slice(&chunk);
            let complete = pending
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            for line in pending[..complete].split(|&b| b == b'\n') {
                if let Some((_, _, written)) = scale_mark(line) {
                    self.delays.push(now - written);
                }
            }
            pending.drain(..complete);
        }
        Ok(())
    }
}

/// The `scale` mark of a data event line: the process's id, the event's number and the time
/// it was written.
fn scale_mark(line: &[u8]) -> Option<(String, u64, f64)> {
    if !line.windows(8).any(|w| w == b"\"scale\":") {
        return None;
    }
    let record: Value = serde_json::from_slice(line).ok()?;
    let mark = record["data"]["scale"].as_array()?;
    Some((
        mark.first()?.as_str()?.to_owned(),
        mark.get(1)?.as_u64()?,
        mark.get(2)?.as_f64()?,
    ))
}

/// Checks the run folder's `.data` files against what the `n` processes said they wrote (in
/// `counts`) and returns the event count, the losses, the reorderings and the window.
fn check_files(folder: &Path, counts: &Path, n: usize) -> anyhow::Result<Figures> {
    let mut said: HashMap<String, u64> = HashMap::new();
    for entry in fs_err::read_dir(counts)? {
        let entry = entry?;
        let id = entry.file_name().to_string_lossy().into_owned();
        let count = fs_err::read_to_string(entry.path())?.trim().parse()?;
        said.insert(id, count);
    }
    anyhow::ensure!(
        said.len() == n,
        "{} of {n} processes finished and said how many events they wrote",
        said.len()
    );
    let mut figures = Figures::default();
    // Per process: the file it is in, the next number expected, its first and last times.
    let mut seen: HashMap<String, (PathBuf, u64, f64, f64)> = HashMap::new();
    let mut times = Vec::new();
    for entry in fs_err::read_dir(folder)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "data") {
            continue;
        }
        for line in fs_err::read(&path)?.split(|&b| b == b'\n') {
            let Some((id, number, written)) = scale_mark(line) else {
                continue;
            };
            figures.events += 1;
            times.push(written);
            let entry = seen
                .entry(id.clone())
                .or_insert_with(|| (path.clone(), 0, written, written));
            anyhow::ensure!(entry.0 == path, "process {id}'s events are in two files");
            if number < entry.1 {
                figures.reordered += 1;
                continue;
            }
            figures.lost += (number - entry.1) as usize;
            entry.1 = number + 1;
            entry.3 = written;
        }
    }
    for (id, count) in &said {
        let next = seen.get(id).map_or(0, |(_, next, _, _)| *next);
        figures.lost += count.saturating_sub(next) as usize;
    }
    let from = seen.values().map(|s| s.2).fold(f64::NEG_INFINITY, f64::max);
    let to = seen.values().map(|s| s.3).fold(f64::INFINITY, f64::min);
    figures.window_s = to - from;
    figures.window = (from, to);
    let inside = times.iter().filter(|&&t| t >= from && t <= to).count();
    figures.events_per_s = inside as f64 / figures.window_s;
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::{Figures, median_run};

    fn run(cpu: f64, lost: usize, reordered: usize) -> Figures {
        Figures {
            cpu_ms_per_1000: cpu,
            lost,
            reordered,
            ..Figures::default()
        }
    }

    #[test]
    fn the_median_run_is_kept_with_the_damage_of_every_run() {
        let kept = median_run(vec![run(22.0, 0, 0), run(13.0, 2, 0), run(14.0, 0, 1)]);
        assert_eq!(kept.cpu_ms_per_1000, 14.0);
        assert_eq!((kept.lost, kept.reordered), (2, 1));
        let alone = median_run(vec![run(7.5, 0, 0)]);
        assert_eq!((alone.cpu_ms_per_1000, alone.lost), (7.5, 0));
    }
}
