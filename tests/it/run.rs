//! `milabench run` and `prepare` end to end with tiny protocol-speaking benchmarks (no torch):
//! success, failures that do not stop the run, time limits, skips, dry runs and `--resume`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{LoggedChild, milabench, run, wait_for};

/// A scratch project: `benchmarks/`, a suite file and a base folder whose environment's
/// `python` is the system interpreter (a real venv is not needed to run these benchmarks).
pub(crate) struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    pub(crate) fn new(suite: &str) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let venv_bin = dir.path().join("base/venv/tiny/bin");
        fs_err::create_dir_all(&venv_bin).expect("venv folder");
        let python = which_python3();
        std::os::unix::fs::symlink(python, venv_bin.join("python")).expect("symlink python");
        fs_err::write(dir.path().join("suite.yaml"), suite).expect("suite");
        Project { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `benchmarks/<name>/main.py` with a python launcher.
    pub(crate) fn bench(&self, name: &str, main: &str) {
        let folder = self.path().join("benchmarks").join(name);
        fs_err::create_dir_all(&folder).expect("bench folder");
        fs_err::write(folder.join("main.py"), main).expect("main.py");
        fs_err::write(folder.join("benchfile.yaml"), "launcher: python\n").expect("benchfile");
    }

    pub(crate) fn milabench(&self) -> std::process::Command {
        let mut cmd = milabench(self.path());
        cmd.env("MILABENCH_BASE", self.path().join("base"));
        cmd
    }

    /// `milabench run --no-setup --config suite.yaml ARGS`: the suite of this project, without
    /// install and prepare (the environment is the system interpreter).
    pub(crate) fn run_command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.milabench();
        cmd.args(["run", "--no-setup", "--config", "suite.yaml"])
            .args(args);
        cmd
    }

    pub(crate) fn data_file(&self, run: &str, tag: &str) -> String {
        fs_err::read_to_string(
            self.path()
                .join("base/runs")
                .join(run)
                .join(format!("{tag}.data")),
        )
        .unwrap_or_default()
    }
}

fn which_python3() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("python3"))
                .find(|p| p.is_file())
        })
        .expect("python3 on PATH")
}

/// A benchmark that reports `n` rates through DATA_FD, then exits with `code`.
pub(crate) fn reporting(n: usize, code: i32) -> String {
    format!(
        "import json, os, sys\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
         for i in range({n}):\n    out.write(json.dumps({{'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'}}) + '\\n')\n\
         out.write(json.dumps({{'task': 'train', 'loss': 0.5}}) + '\\n')\nprint('bye')\nsys.exit({code})\n"
    )
}

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 30
good:
  inherits: _base
  definition: benchmarks/good
crashes:
  inherits: _base
  definition: benchmarks/crashes
missing:
  inherits: _base
  definition: benchmarks/missing
silent:
  inherits: _base
  definition: benchmarks/silent
slow:
  inherits: _base
  definition: benchmarks/slow
  max_duration: 1
needs-gpus:
  inherits: _base
  definition: benchmarks/good
  requires_capabilities: [\"gpu['count'] > 1\"]
";

fn project() -> Project {
    let project = Project::new(SUITE);
    project.bench("good", &reporting(6, 0));
    project.bench("crashes", "raise RuntimeError('boom')\n");
    project.bench("silent", "print('I never report a rate')\n");
    project.bench("slow", "import time\ntime.sleep(60)\n");
    fs_err::create_dir_all(project.path().join("benchmarks/missing")).expect("missing folder");
    project
}

#[test]
fn failures_are_recorded_and_the_run_goes_on() {
    let project = project();
    let started = Instant::now();
    let out = run(&mut project.run_command(&["--run-name", "r1"]));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the 1 s limit of `slow` was honoured"
    );
    assert_eq!(out.code, 1, "failures give exit code 1:\n{}", out.stderr);
    // Every benchmark was tried; the skipped one says why.
    for bench in ["good", "crashes", "missing", "silent", "slow"] {
        assert!(
            out.stderr.contains(&format!("{bench}: starting")),
            "{bench} started:\n{}",
            out.stderr
        );
    }
    assert!(
        out.stderr
            .contains("needs-gpus: skipped, this system does not meet gpu['count'] > 1"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("good: ok"), "{}", out.stderr);
    assert!(out.stderr.contains("crashes: FAILED"), "{}", out.stderr);
    // The report has the right rate for the good benchmark: mean of 101..104 (min and max dropped).
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("good "))
        .expect("good row");
    assert!(row.contains("102.50"), "{row}");
    // Skipped for its capabilities: a row without numbers, not a missing benchmark's failure.
    let skipped = out
        .stdout
        .lines()
        .find(|l| l.starts_with("needs-gpus "))
        .expect("needs-gpus row");
    assert!(
        skipped.starts_with("needs-gpus |  nan | nan |"),
        "{skipped}"
    );
    // What each failure left in its file.
    let good = project.data_file("r1", "good.D0");
    for event in [
        "\"config\"",
        "\"meta\"",
        "\"start\"",
        "\"data\"",
        "\"line\"",
        "\"end\"",
    ] {
        assert!(good.contains(event), "good.D0.data has {event}");
    }
    assert!(
        project
            .data_file("r1", "crashes.D0")
            .contains("RuntimeError")
    );
    let missing = project.data_file("r1", "missing.D0");
    assert!(
        missing.contains("\"end\""),
        "missing main.py still ends: {missing}"
    );
    let slow = project.data_file("r1", "slow.D0");
    assert!(slow.contains("\"error\""), "timeout recorded: {slow}");
    // The HTML report is in the run folder, named at the end, with the crash's note.
    let page = project.path().join("base/runs/r1/report.html");
    assert!(
        out.stderr
            .contains(&format!("HTML report: {}", page.display())),
        "{}",
        out.stderr
    );
    let html = fs_err::read_to_string(&page).expect("report.html written");
    assert!(html.contains("crashes.D0 failed"), "{html}");
    assert!(html.contains("RuntimeError"), "{html}");
}

#[test]
fn dry_run_prints_the_commands() {
    let project = project();
    let out = run(&mut project.run_command(&["--dry-run", "--select", "good"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("#!/bin/sh"));
    assert!(
        out.stdout
            .contains("# --- good (1 process, stopped after 30 s)")
    );
    assert!(out.stdout.contains("/base/venv/tiny/bin/python"));
    assert!(out.stdout.contains("benchmarks/good/main.py"));
    assert!(
        !project.path().join("base/runs").exists(),
        "a dry run runs nothing"
    );
}

/// `-v` leaves a debug trail on stderr of what was resolved, planned and started; without it,
/// none.
#[test]
fn verbose_tells_what_was_resolved_planned_and_started() {
    let project = project();
    let out = run(&mut project.run_command(&["--dry-run", "--select", "good", "-v"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("resolved "), "{}", out.stderr);
    assert!(out.stderr.contains("benchmark(s) to run"), "{}", out.stderr);
    assert!(out.stderr.contains("planned good.D0"), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("#!/bin/sh"),
        "the plan stays on stdout"
    );
    let quiet = run(&mut project.run_command(&["--dry-run", "--select", "good"]));
    assert!(!quiet.stderr.contains("planned"), "{}", quiet.stderr);
    let ran = run(&mut project.run_command(&["--select", "good", "--run-name", "traced", "-v"]));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("starting good: 1 process(es)"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_json_dry_run_prints_the_plans() {
    let project = project();
    let out = run(&mut project.run_command(&["--dry-run=json", "--select", "good"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plans: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON plans");
    let plan = &plans[0];
    assert_eq!(plan["bench"], "good");
    assert_eq!(plan["max_duration_seconds"], 30.0);
    let process = &plan["processes"][0];
    assert!(
        process["argv"][1]
            .as_str()
            .is_some_and(|a| a.ends_with("benchmarks/good/main.py")),
        "{process}"
    );
    assert_eq!(process["env"]["MILABENCH_NAME"], "good");
    assert!(!project.path().join("base/runs").exists());
}

#[test]
fn prepare_runs_prepare_scripts() {
    let project = project();
    fs_err::write(
        project.path().join("benchmarks/good/prepare.py"),
        "import os, pathlib\npathlib.Path(os.environ['MILABENCH_DATA_DIR'], 'good.txt').write_text('x')\n",
    )
    .expect("prepare.py");
    let out =
        run(project
            .milabench()
            .args(["prepare", "--config", "suite.yaml", "--select", "good"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(project.path().join("base/data/good.txt").is_file());
}

/// `check`'s "prepared data" line for `good`, with `extra` options: its status and detail.
fn prepared_check(project: &Project, extra: &[&str]) -> (String, String) {
    let out = run(project
        .milabench()
        .args(["check", "--config", "suite.yaml", "--select", "good"])
        .args(["--exclude", "needs-gpus", "--format", "json"])
        .args(extra));
    let checks: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    let check = checks
        .as_array()
        .expect("list")
        .iter()
        .find(|c| c["name"] == "prepared data")
        .unwrap_or_else(|| panic!("no prepared data check in {checks}"));
    (
        check["status"].as_str().unwrap_or_default().to_string(),
        check["detail"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn check_knows_whether_prepare_ran_with_the_arguments_of_this_run() {
    let project = project();
    fs_err::write(
        project.path().join("benchmarks/good/prepare.py"),
        "import sys\nsys.exit(int('fail' in sys.argv))\n",
    )
    .expect("prepare.py");
    let (status, detail) = prepared_check(&project, &[]);
    assert_eq!(
        (status.as_str(), detail.as_str()),
        ("warn", "not prepared: good")
    );
    let prepare = |extra: &[&str]| {
        run(project
            .milabench()
            .args(["prepare", "--config", "suite.yaml", "--select", "good"])
            .args(["--exclude", "needs-gpus"])
            .args(extra))
    };
    // A failed prepare records nothing.
    let failed = prepare(&["--override", "good.argv.fail=1"]);
    assert_ne!(failed.code, 0, "{}", failed.stderr);
    assert_eq!(prepared_check(&project, &[]).0, "warn");
    let out = prepare(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (status, detail) = prepared_check(&project, &[]);
    assert_eq!(
        (status.as_str(), detail.as_str()),
        ("ok", "1 benchmark(s) prepared")
    );
    // Other arguments (another size, another fidelity) mean another preparation.
    let (status, detail) = prepared_check(&project, &["--override", "good.argv.--size=2"]);
    assert_eq!(status, "warn");
    assert_eq!(detail, "prepared with other arguments: good");
}

#[test]
fn resume_finishes_a_killed_run() {
    let project = Project::new(
        "_base:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n\
         first:\n  inherits: _base\n  definition: benchmarks/first\n\
         second:\n  inherits: _base\n  definition: benchmarks/second\n",
    );
    project.bench("first", &reporting(3, 0));
    // The second benchmark waits for a file that only the test creates.
    let gate = project.path().join("gate");
    project.bench(
        "second",
        &format!(
            "import os, time\nwhile not os.path.exists({gate:?}):\n    time.sleep(0.05)\n{}",
            reporting(3, 0)
        ),
    );
    let mut child = project
        .run_command(&["--run-name", "killed"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !project
        .data_file("killed", "second.D0")
        .contains("\"start\"")
    {
        assert!(Instant::now() < deadline, "second benchmark never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL the orchestrator");
    child.wait().expect("reaped");
    // Its watchdog kills the waiting benchmark, and the run is free once that is done.
    wait_for("the killed run's folder is free", || {
        std::fs::File::open(project.path().join("base/runs/killed/.milabench.lock"))
            .is_ok_and(|lock| lock.try_lock().is_ok())
    });
    fs_err::write(&gate, "open").expect("gate");
    // The killed run folder already reports what it holds.
    let partial = run(project
        .milabench()
        .args(["report", "--runs", "base/runs/killed"]));
    assert!(
        partial.stdout.contains("first"),
        "{}\n{}",
        partial.stdout,
        partial.stderr
    );
    let out = run(&mut project.run_command(&["--run-name", "killed", "--resume"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("first: already complete"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("second: ok"), "{}", out.stderr);
    // The killed attempt was set aside, not mixed into the new file, and both rows report.
    let runs = project.path().join("base/runs/killed");
    assert!(
        runs.join("second.D0.data.1").is_file(),
        "partial attempt kept"
    );
    let second = out
        .stdout
        .lines()
        .find(|l| l.starts_with("second "))
        .expect("second row");
    assert!(
        second.contains(" 0 |"),
        "second succeeded in the report: {second}"
    );
    // Reusing the name without --resume is refused before anything runs.
    let again = run(&mut project.run_command(&["--run-name", "killed"]));
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("already holds a run"),
        "{}",
        again.stderr
    );
    assert!(again.stderr.contains("--resume"), "{}", again.stderr);
}

/// Issue 37: `--resume` judged a finished benchmark by its exit status and rates alone, so one
/// that exited with 0 after an `error` event or a NaN loss (a failure for the run that recorded
/// it) was left out as complete. It now applies the run's own rule, and runs them again.
#[test]
fn resume_runs_again_what_failed_with_an_error_event_or_a_nan_loss() {
    let project = Project::new(
        "_base:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n\
         good:\n  inherits: _base\n  definition: benchmarks/good\n\
         errs:\n  inherits: _base\n  definition: benchmarks/errs\n\
         nanloss:\n  inherits: _base\n  definition: benchmarks/nanloss\n",
    );
    // Each counts its runs in `<name>.runs`, reports rates, then exits with 0.
    let counted = |name: &str, extra: &str| {
        let runs = project.path().join(format!("{name}.runs"));
        format!(
            "with open({runs:?}, 'a') as f:\n    f.write('run\\n')\n{}",
            reporting(3, 0).replace("print('bye')", extra)
        )
    };
    project.bench("good", &counted("good", "print('bye')"));
    project.bench(
        "errs",
        &counted(
            "errs",
            "out.write(json.dumps({'$event': 'error', '$data': {'type': 'RuntimeError', 'message': 'boom'}}) + '\\n')",
        ),
    );
    project.bench(
        "nanloss",
        &counted(
            "nanloss",
            "out.write(json.dumps({'task': 'train', 'loss': float('nan')}) + '\\n')",
        ),
    );
    let first = run(&mut project.run_command(&["--run-name", "flaky"]));
    assert_ne!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let resumed = run(&mut project.run_command(&["--run-name", "flaky", "--resume"]));
    assert!(
        resumed.stderr.contains("good: already complete"),
        "{}",
        resumed.stderr
    );
    let runs = |name: &str| {
        fs_err::read_to_string(project.path().join(format!("{name}.runs")))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(runs("good"), 1);
    assert_eq!(runs("errs"), 2, "{}", resumed.stderr);
    assert_eq!(runs("nanloss"), 2, "{}", resumed.stderr);
}

#[test]
fn a_run_name_is_a_name_not_a_path() {
    let project = project();
    for name in ["../../escaped", ".", "~/x", "/tmp/milabench-abs"] {
        let out = run(&mut project.run_command(&["--run-name", name, "--select", "good"]));
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("the run name `{name}` is not a folder name")),
            "{name}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("--base"),
            "the fix is named: {}",
            out.stderr
        );
    }
    assert!(!project.path().join("base/runs").exists(), "nothing ran");
    assert!(!project.path().join("~").exists(), "no literal `~` folder");
    assert!(
        !project.path().join("good.D0.data").exists(),
        "nothing written into the current folder"
    );
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: u32) -> bool {
    fs_err::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// The pid written into `path`, once the file holds one.
fn pid_in(path: &Path) -> u32 {
    let mut pid = None;
    wait_for(&format!("a pid in {}", path.display()), || {
        pid = fs_err::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        pid.is_some()
    });
    pid.unwrap_or_default()
}

/// Runs `cmd` like [`run`], killing it and failing after 20 s (a run that should have been
/// refused may otherwise wait forever for its gate).
fn run_refused(cmd: &mut std::process::Command) -> crate::common::Output {
    LoggedChild::spawn(cmd).end_within(Duration::from_secs(20))
}

/// Kills a process when dropped, so a failing test leaves nothing running.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .status();
    }
}

/// A suite of one benchmark, `gated`, that writes its pid to `bench.pid`, waits for the file
/// `gate`, then reports three rates; with `stray`, it first starts a process that escapes its
/// process tree (an orphan in its own session, no inherited environment, inherited
/// descriptors) and sleeps,
/// its pid in `stray.pid` (only once: not again on `--resume`).
fn gated_project(stray: bool) -> Project {
    let project = Project::new(
        "gated:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  definition: benchmarks/gated\n",
    );
    let dir = project.path().display().to_string();
    let stray_code = if stray {
        // A double fork: the sleeper's parent exits at once, so it is nobody's descendant.
        format!(
            "import subprocess, sys\nif not os.path.exists('{dir}/stray.pid'):\n    \
             sleeper = \"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True, close_fds=False); print(p.pid, flush=True)\"\n    \
             middle = subprocess.Popen([sys.executable, '-c', sleeper], env={{}}, close_fds=False, stdout=subprocess.PIPE, text=True)\n    \
             pid = middle.stdout.readline().strip()\n    middle.wait()\n    \
             open('{dir}/stray.pid.tmp', 'w').write(pid)\n    os.rename('{dir}/stray.pid.tmp', '{dir}/stray.pid')\n"
        )
    } else {
        String::new()
    };
    project.bench(
        "gated",
        &format!(
            "import os, time\n{stray_code}open('{dir}/bench.pid.tmp', 'w').write(str(os.getpid()))\n\
             os.rename('{dir}/bench.pid.tmp', '{dir}/bench.pid')\n\
             while not os.path.exists('{dir}/gate'):\n    time.sleep(0.05)\n{}",
            reporting(3, 0)
        ),
    );
    project
}

#[test]
fn a_second_run_of_the_same_name_is_refused_while_the_first_runs() {
    let project = gated_project(false);
    let mut first = project
        .run_command(&["--run-name", "shared"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let bench = KillOnDrop(pid_in(&project.path().join("bench.pid")));
    for args in [
        &["--run-name", "shared"][..],
        &["--run-name", "shared", "--resume"][..],
    ] {
        let second = run_refused(&mut project.run_command(args));
        assert_eq!(second.code, 2, "{args:?}: {}", second.stderr);
        assert!(
            second.stderr.contains("base/runs/shared is in use by pids")
                && second.stderr.contains(&format!("by pids {}, ", first.id())),
            "{args:?}: the holder is named, the orchestrator first: {}",
            second.stderr
        );
        assert!(
            second.stderr.contains("choose another --run-name"),
            "{}",
            second.stderr
        );
    }
    fs_err::write(project.path().join("gate"), "open").expect("gate");
    assert!(first.wait().expect("waits").success());
    drop(bench);
    let data = project.data_file("shared", "gated.D0");
    assert_eq!(
        data.matches("\"event\":\"start\"").count(),
        1,
        "the benchmark ran once: {data}"
    );
    assert!(
        !project
            .path()
            .join("base/runs/shared/gated.D0.data.1")
            .exists(),
        "no second attempt was set aside"
    );
}

#[test]
fn a_killed_run_takes_its_benchmark_along_and_resume_waits_for_what_is_left() {
    let project = gated_project(true);
    let mut orchestrator = project
        .run_command(&["--run-name", "killed"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let stray = KillOnDrop(pid_in(&project.path().join("stray.pid")));
    let bench = KillOnDrop(pid_in(&project.path().join("bench.pid")));
    orchestrator.kill().expect("SIGKILL the orchestrator");
    orchestrator.wait().expect("reaped");
    wait_for("the benchmark dies with its orchestrator", || {
        !alive(bench.0)
    });
    assert!(alive(stray.0), "the stray process escaped the tree");

    // The stray still holds the run (it inherited the run's lock): no second copy starts.
    let refused = run_refused(&mut project.run_command(&["--run-name", "killed", "--resume"]));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("is in use by pid {}", stray.0)),
        "{}",
        refused.stderr
    );
    assert!(
        !project
            .path()
            .join("base/runs/killed/gated.D0.data.1")
            .exists(),
        "nothing started"
    );

    drop(stray);
    fs_err::write(project.path().join("gate"), "open").expect("gate");
    let mut resumed = None;
    wait_for("the run is free once the stray is gone", || {
        let out = run(&mut project.run_command(&["--run-name", "killed", "--resume"]));
        let in_use = out.code == 2 && out.stderr.contains("is in use by");
        if !in_use {
            resumed = Some(out);
        }
        !in_use
    });
    let resumed = resumed.expect("resumed");
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert!(resumed.stderr.contains("gated: ok"), "{}", resumed.stderr);
}

/// Mistakes that must stop `run` and `prepare` before anything is installed, prepared or run,
/// each with a message naming the benchmark and the fix (issue 22, items 9 and 10).
#[test]
fn unrunnable_selections_are_refused_before_anything_runs() {
    let project = Project::new(
        "lonely:\n  enabled: true\n  tags: [monogpu]\n  definition: benchmarks/alone\n\
         lost:\n  inherits: _defaults\n  enabled: true\n  tags: [monogpu]\n  definition: benchmarks/nowhere\n\
         good:\n  inherits: _defaults\n  enabled: true\n  tags: [monogpu]\n  install_group: tiny\n  definition: benchmarks/good\n\
         sleepy:\n  inherits: _defaults\n  enabled: false\n  tags: [monogpu]\n  definition: benchmarks/good\n",
    );
    project.bench("good", &reporting(3, 0));
    let cases: &[(&str, &[&str])] = &[
        ("no _defaults", &["run", "--no-setup", "--select", "lonely"]),
        ("no _defaults, prepare", &["prepare", "--select", "lonely"]),
        (
            "missing definition folder",
            &["run", "--no-setup", "--select", "lost"],
        ),
        (
            "only a disabled benchmark",
            &["run", "--no-setup", "--select", "sleepy"],
        ),
        (
            "resume of a run that does not exist",
            &[
                "run",
                "--no-setup",
                "--select",
                "good",
                "--run-name",
                "nosuch",
                "--resume",
            ],
        ),
    ];
    let mut report = String::new();
    for (name, args) in cases {
        let out = run(project
            .milabench()
            .args(&args[..1])
            .args(["--config", "suite.yaml"])
            .args(&args[1..]));
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        let stderr = out
            .stderr
            .replace(&project.path().display().to_string(), "[PROJECT]");
        report.push_str(&format!("## {name}\n{stderr}\n"));
    }
    assert!(
        !project.path().join("base/runs").exists(),
        "nothing ran, no run folder"
    );
    insta::assert_snapshot!("unrunnable_selections", report);
}

/// Validation runs inside `run`: a NaN loss (with `--validations loss`) or an error in the
/// event stream fails the run, and the verdict is the one `milabench replay` gives on the run
/// folder (issue 23).
#[test]
fn validation_during_run_gives_the_verdict_replay_gives() {
    let suite = format!("{SUITE}nanloss:\n  inherits: _base\n  definition: benchmarks/nanloss\n");
    let project = Project::new(&suite);
    project.bench(
        "nanloss",
        "import json, os\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
         for i in range(6):\n    out.write(json.dumps({'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'}) + '\\n')\n\
         for loss in (0.5, float('nan')):\n    out.write(json.dumps({'task': 'train', 'loss': loss}) + '\\n')\n",
    );
    project.bench("crashes", "raise RuntimeError('boom')\n");
    for (run_name, select, layers) in [("nan", "nanloss", "loss"), ("err", "crashes", "error")] {
        let out = run(&mut project.run_command(&[
            "--select",
            select,
            "--run-name",
            run_name,
            "--validations",
            layers,
        ]));
        assert_eq!(out.code, 1, "{run_name}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("validation layer `"),
            "{run_name}: {}",
            out.stderr
        );
        let folder = project.path().join("base/runs").join(run_name);
        let recorded = fs_err::read_to_string(folder.join("validation.txt")).expect("recorded");
        assert!(!recorded.trim().is_empty(), "{run_name}: nothing recorded");
        assert!(
            out.stdout.contains(recorded.trim()),
            "{run_name}: {}",
            out.stdout
        );
        let replay = run(project
            .milabench()
            .arg("replay")
            .arg(&folder)
            .args(["--validations", layers]));
        assert_eq!(replay.code, 1, "{run_name}: {}", replay.stderr);
        let replayed = replay.stdout.split_once('\n').map_or("", |(_, rest)| rest);
        assert_eq!(replayed.trim(), recorded.trim(), "{run_name}");
    }
}

#[test]
fn run_precision_stops_a_benchmark_once_its_rate_is_precise() {
    let project = Project::new(
        "\
steady:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 120
  definition: benchmarks/steady
",
    );
    // Would report steady rates for 100 s; 10 rates are enough at 1%.
    project.bench(
        "steady",
        "import json, os, time\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
         for i in range(2000):\n    out.write(json.dumps({'task': 'train', 'rate': 100.0 + i * 7919 % 10 / 10, 'units': 'items/s'}) + '\\n')\n    time.sleep(0.05)\n",
    );
    let out = run(&mut project.run_command(&["--run-name", "p", "--precision", "1%"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("steady: ok in") && out.stderr.contains("stopped once precise to ±"),
        "{}",
        out.stderr
    );
    let data = project.data_file("p", "steady.D0");
    assert!(
        data.contains("within the --precision target of 1%"),
        "{data}"
    );
    let rates = data.matches("\"rate\"").count();
    assert!((10..2000).contains(&rates), "{rates} rates");
    let refused = run(&mut project.run_command(&["--precision", "0%"]));
    assert_eq!(refused.code, 2);
    assert!(
        refused
            .stderr
            .contains("is not a percentage above 0; give e.g. 1%"),
        "{}",
        refused.stderr
    );
}

/// `run` records into the results database as it goes (`db list` shows the run, `history` its
/// benchmark), and a database that is down only skips the recording, saying how to import the
/// run later (issue 28).
#[test]
fn run_records_into_the_results_database_and_goes_on_without_it() {
    let project = project();
    let out = run(&mut project.run_command(&["--select", "good", "--run-name", "kept"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("recorded in "), "{}", out.stderr);
    let list = run(project.milabench().args(["db", "list", "--format", "json"]));
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.contains("\"kept\""), "{}", list.stdout);
    let history = run(project.milabench().args(["history", "--bench", "good"]));
    assert!(history.stdout.contains("kept"), "{}", history.stdout);

    let down = run(project
        .run_command(&["--select", "good", "--run-name", "unrecorded"])
        .env("MILABENCH_DB", "postgres://nobody@127.0.0.1:1/none"));
    assert_eq!(down.code, 0, "the run completes: {}", down.stderr);
    assert!(
        down.stderr.contains("results store skipped")
            && down.stderr.contains("milabench db import"),
        "{}",
        down.stderr
    );
    assert!(!project.data_file("unrecorded", "good.D0").is_empty());
}

/// A suite whose selected benchmarks all weigh 0 has no score: said, with the fix, instead of a
/// bare `Score: -1.00` (issue 22, item 9).
#[test]
fn all_zero_weights_say_there_is_no_score() {
    let project = project();
    let out = run(&mut project.run_command(&[
        "--select",
        "good",
        "--run-name",
        "weightless",
        "--override",
        "good.weight=0",
        "--override",
        "needs-gpus.weight=0",
    ]));
    assert!(
        out.stderr
            .contains("no enabled benchmark has a weight above 0, so there is no score")
            && out.stderr.contains("give the benchmarks a `weight:`"),
        "{}",
        out.stderr
    );
    let weighted = run(&mut project.run_command(&["--select", "good", "--run-name", "weighted"]));
    assert!(!weighted.stderr.contains("no score"), "{}", weighted.stderr);
}

/// The tags of the processes of run `run`, in the order they started (the `time` of their
/// `start` event).
fn launch_order(project: &Project, run: &str) -> Vec<String> {
    let folder = project.path().join("base/runs").join(run);
    let mut started: Vec<(f64, String)> = fs_err::read_dir(&folder)
        .expect("run folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|x| x == "data"))
        .map(|path| {
            let text = fs_err::read_to_string(&path).expect("data file");
            let time = text
                .lines()
                .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON line"))
                .find(|line| line["event"] == "start")
                .and_then(|line| line["data"]["time"].as_f64())
                .expect("a start event with its time");
            let tag = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            (time, tag)
        })
        .collect();
    started.sort_by(|a, b| a.0.total_cmp(&b.0));
    started.into_iter().map(|(_, tag)| tag).collect()
}

/// `--repeat 2` runs each benchmark's repeats in a row; `--interleave` alternates them
/// benchmark by benchmark (issue 29, item 4). Each repeat keeps its own files
/// (`<name>.R<i>.D0.data`, as the Python tool names them), the report pools them by benchmark,
/// and two runs interleaved the same way compare as "cannot tell".
#[test]
fn repeats_run_in_a_row_by_default_and_alternate_with_interleave() {
    let project = Project::new(
        "\
_base:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 30
a:
  inherits: _base
  definition: benchmarks/a
b:
  inherits: _base
  definition: benchmarks/b
",
    );
    project.bench("a", &reporting(20, 0));
    project.bench("b", &reporting(20, 0));
    let out = run(&mut project.run_command(&["--run-name", "row", "--repeat", "2"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        launch_order(&project, "row"),
        ["a.R0.D0", "a.R1.D0", "b.R0.D0", "b.R1.D0"]
    );
    // The report pools the repeats of a benchmark: one row each, two processes.
    let row = out
        .stdout
        .lines()
        .find(|line| line.starts_with("a "))
        .unwrap_or_else(|| panic!("a row for `a`:\n{}", out.stdout));
    assert_eq!(row.split('|').nth(2).map(str::trim), Some("2"), "{row}");
    for name in ["x", "y"] {
        let out =
            run(&mut project.run_command(&["--run-name", name, "--repeat", "2", "--interleave"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(
            launch_order(&project, name),
            ["a.R0.D0", "b.R0.D0", "a.R1.D0", "b.R1.D0"]
        );
    }
    let runs = project.path().join("base/runs");
    let out = run(project
        .milabench()
        .args(["compare", "--threshold", "5%"])
        .args([runs.join("x"), runs.join("y")]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let verdicts: Vec<&str> = out
        .stdout
        .lines()
        .filter(|line| line.starts_with("a ") || line.starts_with("b "))
        .map(|line| line.rsplit("  ").next().unwrap_or_default())
        .collect();
    assert_eq!(verdicts, ["cannot tell", "cannot tell"], "{}", out.stdout);
    let dry = run(&mut project.run_command(&["--repeat", "2", "--interleave", "--dry-run"]));
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let order: Vec<&str> = ["a.R0.D0", "b.R0.D0", "a.R1.D0", "b.R1.D0"]
        .into_iter()
        .filter(|tag| dry.stdout.contains(tag))
        .collect();
    assert_eq!(order.len(), 4, "{}", dry.stdout);
    let positions: Vec<usize> = order
        .iter()
        .map(|tag| dry.stdout.find(tag).expect("tag"))
        .collect();
    assert!(positions.is_sorted(), "{}", dry.stdout);
}

#[test]
fn a_run_goes_on_when_its_program_is_replaced_midway() {
    // A rebuild or an upgrade during a long run replaces the program's file: the benchmarks
    // after it still start their watchdog (through /proc/self/exe) and run.
    let suite = "\
_base:
  inherits: _defaults
  install_group: tiny
  weight: 1
  max_duration: 30
first:
  inherits: _base
  definition: benchmarks/first
second:
  inherits: _base
  definition: benchmarks/second
";
    let project = Project::new(suite);
    let copy = project.path().join("milabench-copy");
    fs_err::copy(env!("CARGO_BIN_EXE_milabench"), &copy).unwrap();
    project.bench(
        "first",
        &format!(
            "import os\nos.remove({:?})\n{}",
            copy.display(),
            reporting(6, 0)
        ),
    );
    project.bench("second", &reporting(6, 0));
    let mut cmd = std::process::Command::new(&copy);
    crate::common::hermetic(&mut cmd, project.path());
    cmd.env("MILABENCH_BASE", project.path().join("base"))
        .args([
            "run",
            "--no-setup",
            "--config",
            "suite.yaml",
            "--run-name",
            "r",
        ]);
    let out = run(&mut cmd);
    assert!(!copy.exists(), "the first benchmark removed the program");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("second: ok"), "{}", out.stderr);
}

#[test]
fn a_skip_is_recorded_so_a_later_report_of_the_folder_agrees() {
    let project = project();
    let out = run(&mut project.run_command(&["--run-name", "r1"]));
    assert!(out.stderr.contains("needs-gpus: skipped"), "{}", out.stderr);
    // The record, worded as the Python tool words it, so either tool excuses the benchmark.
    assert_eq!(
        project.data_file("r1", "needs-gpus"),
        "{\"event\":\"message\",\"data\":{\"message\":\"Skip needs-gpus because the following \
         capability is not satisfied: gpu['count'] > 1\"},\"pipe\":null}\n"
    );
    let row = |stdout: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with("needs-gpus "))
            .unwrap_or_else(|| panic!("no needs-gpus row in\n{stdout}"))
            .to_owned()
    };
    let later = run(project.milabench().args([
        "report",
        "--runs",
        "base/runs/r1",
        "--config",
        "suite.yaml",
    ]));
    assert_eq!(row(&later.stdout), row(&out.stdout));
    assert!(row(&later.stdout).starts_with("needs-gpus |  nan | nan |"));
    assert!(
        !later.stderr.contains("needs-gpus.data"),
        "{}",
        later.stderr
    );
}

/// Issue 38, item 6: `--resume` of a finished `--repeat 2 --interleave` run without `--repeat`
/// ran everything again as `.D0`, and `--resume --dry-run` listed repeats the resume skips.
#[test]
fn resume_keeps_the_repeats_the_run_was_started_with() {
    let project = Project::new(
        "\
_base:
  inherits: _defaults
  install_group: tiny
  weight: 1
  max_duration: 30
a:
  inherits: _base
  definition: benchmarks/a
b:
  inherits: _base
  definition: benchmarks/b
",
    );
    project.bench("a", &reporting(6, 0));
    project.bench("b", &reporting(6, 0));
    let start = ["--run-name", "r", "--repeat", "2", "--interleave"];
    let out = run(&mut project.run_command(&start));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let folder = project.path().join("base/runs/r");
    let files = || {
        let mut names: Vec<String> = fs_err::read_dir(&folder)
            .expect("run folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".data"))
            .collect();
        names.sort();
        names
    };
    let before = files();
    assert_eq!(before.len(), 4, "{before:?}");
    // A dry run of the resume lists nothing: everything is done.
    let dry = run(&mut project.run_command(&["--run-name", "r", "--resume", "--dry-run=json"]));
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_eq!(dry.stdout.trim(), "[]", "{}", dry.stdout);
    let out = run(&mut project.run_command(&["--run-name", "r", "--resume"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(files(), before, "nothing ran again");
    // Other repeats than the run's are refused.
    for other in [&["--repeat", "3"][..], &["--repeat", "2"]] {
        let out =
            run(&mut project.run_command(&[&["--run-name", "r", "--resume"][..], other].concat()));
        assert_eq!(out.code, 2, "{other:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("was started with --repeat 2 --interleave"),
            "{}",
            out.stderr
        );
    }
    // With the same repeats: taken.
    let out = run(&mut project.run_command(&[&start[..], &["--resume"]].concat()));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// Issue 38, item 13: SIGHUP (a closed terminal, a lost ssh session) killed `run` at once: no
/// `end` event, no report. It is handled as SIGTERM.
#[test]
fn sighup_stops_the_run_as_sigterm_does() {
    let project = Project::new(
        "slow:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  max_duration: 60\n  definition: benchmarks/slow\n",
    );
    project.bench(
        "slow",
        &format!(
            "{}import time\ntime.sleep(60)\n",
            reporting(3, 0).replace("sys.exit(0)", "")
        ),
    );
    let mut milabench = LoggedChild::spawn(&mut project.run_command(&["--run-name", "hup"]));
    milabench.wait_for(
        "the benchmark reported its rates",
        Duration::from_secs(20),
        || project.data_file("hup", "slow.D0").contains("\"loss\""),
    );
    milabench.signal("-HUP");
    let out = milabench.end_within(Duration::from_secs(40));
    let stderr = out.stderr;
    assert_eq!(out.code, 130, "{stderr}");
    assert!(
        project.data_file("hup", "slow.D0").contains("\"end\""),
        "{stderr}"
    );
    assert!(
        project.path().join("base/runs/hup/report.html").is_file(),
        "{stderr}"
    );
}

/// Issue 38, item 10: `--repeat 1000000 --dry-run` planned for a minute past 4.6 GB before
/// printing anything, and a real run took 114 s to answer SIGTERM. The count is bounded, and
/// refused (exit 2, before anything is planned or installed) with the reason.
#[test]
fn a_repeat_count_beyond_the_bound_is_refused_before_planning() {
    let project = Project::new(
        "a:\n  inherits: _defaults\n  install_group: tiny\n  definition: benchmarks/a\n",
    );
    project.bench("a", &reporting(3, 0));
    for (count, dry) in [("1000000", true), ("1000000", false), ("0", false)] {
        let mut args = vec!["--repeat", count];
        if dry {
            args.push("--dry-run");
        }
        let out = run(&mut project.run_command(&args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "--repeat {count}: a run repeats its suite 1 to 1000 times"
            )),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(
            !project.path().join("base/runs").exists(),
            "nothing was started"
        );
    }
    let out = run(&mut project.run_command(&["--repeat", "1000", "--dry-run=json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// A benchfile that cannot be planned (it raises, ends the pack host, or returns no command) is
/// its benchmark's failure, recorded in the run and counted in the report; the others run.
/// `--dry-run` names every broken benchfile.
#[test]
fn a_broken_benchfile_fails_its_own_benchmark_and_the_others_run() {
    let suite = "_base:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  \
                 weight: 1\n  max_duration: 30\n"
        .to_string()
        + &["good", "raises", "exits", "badplan"]
            .map(|b| format!("{b}:\n  inherits: _base\n  definition: benchmarks/{b}\n"))
            .concat();
    let project = Project::new(&suite);
    project.bench("good", &reporting(3, 0));
    let benchfile = |name: &str, top: &str, plan: &str| {
        let folder = project.path().join("benchmarks").join(name);
        fs_err::create_dir_all(&folder).expect("bench folder");
        fs_err::write(folder.join("main.py"), reporting(3, 0)).expect("main.py");
        fs_err::write(
            folder.join("benchfile.py"),
            format!(
                "{top}\nfrom milabench.pack import Package\nimport milabench.commands as cmd\n\
                 class B(Package):\n    main_script = 'main.py'\n\
                 \n    def build_run_plan(self):\n        return {plan}\n__pack__ = B\n"
            ),
        )
        .expect("benchfile.py");
    };
    let command = "cmd.PackCommand(self, *self.argv, lazy=True)";
    benchfile("raises", "raise RuntimeError('blew up at import')", command);
    benchfile("exits", "import os\nos._exit(3)", command);
    benchfile("badplan", "", "42");

    let dry = run(&mut project.run_command(&["--dry-run"]));
    assert_eq!(dry.code, 2, "{}", dry.stderr);
    for (bench, said) in [
        ("raises", "RuntimeError: blew up at import"),
        ("exits", "the pack host exited with status 3"),
        ("badplan", "B.build_run_plan returned 42, not a command"),
    ] {
        assert!(
            dry.stderr.contains(&format!(
                "error: benchmark `{bench}`: its benchfile.py gives no plan: {said}"
            )),
            "{bench}: {}",
            dry.stderr
        );
    }
    assert!(
        dry.stdout.contains("benchmarks/good/main.py"),
        "{}",
        dry.stdout
    );

    let prepare = run(project
        .milabench()
        .args(["prepare", "--config", "suite.yaml"]));
    assert_eq!(prepare.code, 1, "{}", prepare.stderr);
    assert!(
        prepare
            .stderr
            .contains("raises: FAILED before it ran: its benchfile.py gives no plan: RuntimeError"),
        "{}",
        prepare.stderr
    );

    let out = run(&mut project.run_command(&["--run-name", "broken"]));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "exits: FAILED before it ran: its benchfile.py gives no plan: \
             the pack host exited with status 3"
        ),
        "{}",
        out.stderr
    );
    assert!(
        project
            .data_file("broken", "raises")
            .contains("BenchfileFailed")
    );
    // The `fail` column of the breakdown.
    let fails: Vec<(&str, &str)> = out
        .stdout
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim);
            Some((cells.next()?, cells.next()?))
        })
        .filter(|(bench, _)| ["good", "raises", "exits", "badplan"].contains(bench))
        .take(4)
        .collect();
    assert_eq!(
        fails,
        [
            ("badplan", "1"),
            ("exits", "1"),
            ("good", "0"),
            ("raises", "1")
        ],
        "{}",
        out.stdout
    );
}

/// `milabench new`'s benchmark with its records smuggled through stdout (`use_stdout: true`,
/// `DATA_FD=1`, as under torchrun or on a remote rank; issue 53, W9): each record ends in a
/// newline, as voir writes them, so that every one is read and the benchmark succeeds.
#[test]
fn the_templated_benchmark_smuggles_its_records_through_stdout() {
    let project = Project::new(
        "tpl:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  definition: benchmarks/tpl\n  argv: {--observations: 3, --interval: 0.05}\n",
    );
    let made = run(project
        .milabench()
        .args(["new", "tpl", "--dest"])
        .arg(project.path().join("benchmarks")));
    assert_eq!(made.code, 0, "{}", made.stderr);
    fs_err::write(
        project.path().join("benchmarks/tpl/benchfile.yaml"),
        "launcher: python\nuse_stdout: true\n",
    )
    .expect("benchfile");
    let out = run(&mut project.run_command(&["--no-check", "--run-name", "t1"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let data = project.data_file("t1", "tpl.D0");
    assert!(!data.contains("format_error"), "{data}");
    assert_eq!(data.matches("\"rate\"").count(), 3, "{data}");
}

/// A plan of more processes than the soft open-file limit allows descriptors for (about four
/// each) runs whole: `milabench` raises its soft limit to the hard one first (issue 50, item 2:
/// 512 processes under a login's default of 1,024 failed with "Too many open files").
#[test]
fn a_plan_needing_more_files_than_the_soft_limit_runs_whole() {
    let project = Project::new(
        "many:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  \
         max_duration: 60\n  definition: benchmarks/many\n  plan:\n    method: njobs\n    n: 24\n",
    );
    project.bench("many", &reporting(3, 0));
    let mut limited = std::process::Command::new("sh");
    limited
        .args(["-c", "ulimit -Sn 64 && exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_milabench"))
        .args(["run", "--no-setup", "--config", "suite.yaml"])
        .args(["--run-name", "many", "--no-dash"]);
    crate::common::hermetic(&mut limited, project.path());
    limited.env("MILABENCH_BASE", project.path().join("base"));
    let out = run(&mut limited);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for job in 0..24 {
        let data = project.data_file("many", &format!("many.{job}"));
        assert_eq!(data.matches("\"rate\"").count(), 3, "job {job}: {data}");
    }
}
