//! `milabench run --dash` on a real terminal (tmux: keys sent, the screen captured) and the
//! same run piped (plain lines).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{run, wait_for_within};
use crate::run::Project;

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 60
  voir:
    options:
      stop: 30
quick:
  inherits: _base
  definition: benchmarks/quick
crashes:
  inherits: _base
  definition: benchmarks/crashes
steady:
  inherits: _base
  definition: benchmarks/steady
  # Long enough for the slowest resize test on a busy machine: it is stopped by Ctrl-C.
  max_duration: 600
after:
  inherits: _base
  definition: benchmarks/quick
";

/// A benchmark making `n` observations `pause` seconds apart: a rate, a loss and its progress
/// to the early stop each, and a line on stderr.
fn paced(n: usize, pause: f64) -> String {
    format!(
        "import json, os, sys, time\n\
         out = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
         for i in range({n}):\n    \
             out.write(json.dumps({{'task': 'train', 'rate': 100.0 + i, 'units': 'items/s', 'loss': 1.0 / (i + 1)}}) + '\\n')\n    \
             out.write(json.dumps({{'task': 'early_stop', 'progress': [i + 1, {n}]}}) + '\\n')\n    \
             print(f'step {{i}}', file=sys.stderr)\n    \
             time.sleep({pause})\n"
    )
}

fn project(steady_steps: usize) -> Project {
    let project = Project::new(SUITE);
    project.bench("quick", &paced(5, 0.05));
    project.bench("crashes", "raise RuntimeError('boom')\n");
    project.bench("steady", &paced(steady_steps, 0.25));
    project
}

/// tmux, installed with apt-get when it is missing (as the harnesses install what they need).
fn tmux() -> PathBuf {
    let find = || {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join("tmux"))
            .find(|path| path.is_file())
    };
    if let Some(path) = find() {
        return path;
    }
    let installed = Command::new("apt-get")
        .args(["update", "-q"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends", "tmux"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    match find() {
        Some(path) if installed => path,
        _ => panic!(
            "this test drives the dashboard under tmux, which is missing and could not be installed\n  fix: apt-get install tmux"
        ),
    }
}

/// A tmux server of its own (its own socket), killed when dropped; its one session is named
/// `dash`.
pub(crate) struct Tmux {
    program: PathBuf,
    socket: String,
}

impl Tmux {
    /// A server for the test `name` (tests may run as threads of one process).
    pub(crate) fn new(name: &str) -> Tmux {
        Tmux {
            program: tmux(),
            socket: format!("milabench-{name}-{}", std::process::id()),
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> String {
        let out = Command::new(&self.program)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Opens the session the other methods look at, `columns` x `rows`, running `command`.
    pub(crate) fn start(&self, columns: u16, rows: u16, command: &str) {
        self.command(&[
            "new-session",
            "-d",
            "-s",
            "dash",
            "-x",
            &columns.to_string(),
            "-y",
            &rows.to_string(),
            command,
        ]);
    }

    pub(crate) fn screen(&self) -> String {
        self.command(&["capture-pane", "-p", "-t", "dash"])
    }

    /// Waits until the screen holds `text`; returns the screen.
    fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("the screen to show {text:?}"), |screen| {
            screen.contains(text)
        })
    }

    /// Waits until `condition` holds of the screen; returns the screen.
    fn wait_until(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        let mut screen = String::new();
        wait_for_within(what, Duration::from_secs(60), || {
            screen = self.screen();
            condition(&screen)
        });
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new(&self.program)
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Quotes `text` for sh.
pub(crate) fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The shell command that runs `milabench run --dash` in `dir`, its stdout, exit code and the
/// terminal's settings after it to files.
fn dash_command(dir: &Path) -> String {
    let base = dir.join("base");
    let vars = [
        ("MILABENCH_BASE", base.to_str().expect("UTF-8")),
        ("MILABENCH_GPU_ARCH", "cpu"),
        ("USER", "tester"),
    ];
    let vars: Vec<String> = vars
        .iter()
        .map(|(k, v)| format!("{k}={}", quoted(v)))
        .collect();
    format!(
        "cd {} && env -u CI {} {} run --no-setup --config suite.yaml --run-name dash --dash > stdout.txt; echo $? > code.txt; stty -a > stty.txt; sleep 600",
        quoted(dir.to_str().expect("UTF-8")),
        vars.join(" "),
        quoted(env!("CARGO_BIN_EXE_milabench")),
    )
}

#[test]
fn the_dashboard_shows_the_run_and_q_leaves_it_going() {
    let project = project(60);
    let tmux = Tmux::new("dash-q");
    start(&tmux, &project, 120, 36);
    // The view: the suite's progress, every benchmark's name, the failure marked, a rate with
    // its unit, the stderr of the running process.
    let screen = tmux.wait_for("steady.D0  rate");
    for text in [
        "milabench · 2/4 done · 1 running · 1 left · 1 failed",
        "✓ quick ok",
        "✗ crashes FAILED",
        "▶ steady running",
        "· after",
        "items/s",
        "stderr of steady.D0",
        "q close this view",
    ] {
        assert!(
            screen.contains(text),
            "the screen shows {text:?}:\n{screen}"
        );
    }
    assert!(
        !project.path().join("code.txt").exists(),
        "the run goes on while the view is up"
    );
    // `q` closes the view and leaves the run going: the plain lines take over on the terminal,
    // the last benchmark runs and the report is written.
    tmux.command(&["send-keys", "-t", "dash", "q"]);
    let screen = tmux.wait_for("crashes: FAILED");
    assert!(screen.contains("steady: starting 1 process"), "{screen}");
    assert!(
        !project.path().join("code.txt").exists(),
        "q did not stop the run:\n{screen}"
    );
    let screen = tmux.wait_for("after: ok");
    assert!(screen.contains("steady: ok"), "{screen}");
    wait_for_within("the run to end", Duration::from_secs(60), || {
        project.path().join("code.txt").exists()
    });
    let code = fs_err::read_to_string(project.path().join("code.txt")).expect("exit code");
    assert_eq!(code.trim(), "1", "a failure gives 1:\n{screen}");
    let report = fs_err::read_to_string(project.path().join("stdout.txt")).expect("report");
    for bench in ["quick", "crashes", "steady", "after"] {
        assert!(
            report.lines().any(|l| l.starts_with(&format!("{bench} "))),
            "{bench} is in the report:\n{report}"
        );
    }
    assert!(project.path().join("base/runs/dash/report.html").is_file());
}

/// Starts `milabench run --dash` of `project` in a new tmux session of `columns` x `rows`.
fn start(tmux: &Tmux, project: &Project, columns: u16, rows: u16) {
    tmux.start(columns, rows, &dash_command(project.path()));
}

#[test]
fn the_view_fits_a_resized_terminal_and_ctrl_c_stops_the_run_and_restores_it() {
    let project = project(2000);
    let tmux = Tmux::new("dash-resize");
    start(&tmux, &project, 120, 36);
    tmux.wait_for("steady.D0  rate");
    // Narrower than the list needs, then tiny: what fits is drawn, the summary first.
    tmux.command(&["resize-window", "-t", "dash", "-x", "60", "-y", "14"]);
    // Until the view redraws, tmux shows the old frame cut to the new size.
    tmux.wait_until("no list at 60 columns", |screen| {
        screen.contains("stderr of steady.D0") && !screen.contains("benchmarks")
    });
    tmux.command(&["resize-window", "-t", "dash", "-x", "30", "-y", "3"]);
    wait_for_within("a one-line view", Duration::from_secs(20), || {
        let screen = tmux.screen();
        screen.starts_with("milabench · 2/4 done") && !screen.contains("stderr")
    });
    tmux.command(&["resize-window", "-t", "dash", "-x", "120", "-y", "36"]);
    tmux.wait_for("▶ steady running");
    // Ctrl-C, a key in the view's raw mode, still interrupts the run: it stops, says so with
    // 130, and the terminal is as it was (line editing and echo back on).
    tmux.command(&["send-keys", "-t", "dash", "C-c"]);
    wait_for_within("the run to stop", Duration::from_secs(30), || {
        project.path().join("stty.txt").exists()
    });
    let code = fs_err::read_to_string(project.path().join("code.txt")).expect("exit code");
    assert_eq!(code.trim(), "130", "{}", tmux.screen());
    let stty = fs_err::read_to_string(project.path().join("stty.txt")).expect("stty");
    let flags: Vec<&str> = stty.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig"] {
        assert!(flags.contains(&flag), "{flag} restored:\n{stty}");
    }
    let screen = tmux.screen();
    assert!(screen.contains("steady: interrupted"), "{screen}");
}

#[test]
fn piped_the_run_prints_plain_lines() {
    let project = project(3);
    let out = run(&mut project.run_command(&["--run-name", "piped"]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"(?m)^System: .*$", "System: [HOST]");
    settings.add_filter(r"in \d+\.\ds", "in [T]s");
    settings.add_filter(r"last rate \d+\.\d+", "last rate [RATE]");
    let text = out
        .stderr
        .replace(&project.path().display().to_string(), "[PROJECT]");
    settings.bind(|| insta::assert_snapshot!(text));
}

/// Issue 41: the long commands say each step in a log; here `prepare` (a line when each
/// benchmark's step starts and ends) and `db import` of several folders (a line per folder).
#[test]
fn long_commands_say_each_step_when_piped() {
    let project = project(1);
    for bench in ["quick", "steady"] {
        fs_err::write(
            project
                .path()
                .join(format!("benchmarks/{bench}/prepare.py")),
            "print('downloading')\n",
        )
        .expect("prepare script");
    }
    let mut prepare = project.milabench();
    prepare.args([
        "prepare",
        "--config",
        "suite.yaml",
        "--select",
        "quick,steady",
    ]);
    let out = run(&mut prepare);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in ["quick: starting 1 process", "quick: ok", "steady: ok"] {
        assert!(out.stderr.contains(line), "{line}:\n{}", out.stderr);
    }
    let runs = crate::common::fixtures().join("milabench/runs/tests-runs");
    let folders: Vec<_> = fs_err::read_dir(&runs)
        .expect("fixture runs")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_dir())
        .take(2)
        .collect();
    let mut import = project.milabench();
    import.args(["db", "import"]).args(&folders);
    let out = run(&mut import);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for (i, folder) in folders.iter().enumerate() {
        let line = format!("importing {}/2: {}", i + 1, folder.display());
        assert!(out.stderr.contains(&line), "{line}:\n{}", out.stderr);
    }
}

/// The variable that makes [`the_dashboard_up_then_a_panic`] do its part: set only by
/// [`a_panic_gives_the_terminal_back`], which runs it under tmux.
const PANIC_HELPER: &str = "MILABENCH_TEST_DASH_PANIC";

/// Not a test of its own: the program [`a_panic_gives_the_terminal_back`] runs on a terminal
/// (this test binary, asked for this one test). It shows the dashboard on the terminal, waits
/// for the file `go` in the current folder, then panics on the run's thread (here, the test's)
/// as a bug would. Without [`PANIC_HELPER`] it does nothing.
#[test]
#[ignore = "a helper that a_panic_gives_the_terminal_back runs under tmux"]
fn the_dashboard_up_then_a_panic() {
    use milabench_cli::dash::{BenchBudget, Dashboard, Screen};
    if std::env::var_os(PANIC_HELPER).is_none() {
        return;
    }
    let budget = BenchBudget {
        name: "doomed".into(),
        max_duration: None,
        stop: None,
    };
    let _dash = Dashboard::start(vec![budget], Screen::Terminal, false).expect("the view opens");
    wait_for_within("the test says go", Duration::from_secs(60), || {
        Path::new("go").exists()
    });
    panic!("a bug while the dashboard is up");
}

/// Issue 41: a panic while the dashboard is up leaves the alternate screen, shows the cursor
/// and takes the terminal out of raw mode before the panic's message is printed, and no frame
/// is drawn over the message after.
#[test]
fn a_panic_gives_the_terminal_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = Tmux::new("dash-panic");
    let test_binary = std::env::current_exe().expect("this test binary");
    let command = format!(
        "cd {} && env {PANIC_HELPER}=1 {} --exact dash::the_dashboard_up_then_a_panic --ignored --nocapture; echo $? > code.txt; stty -a > stty.txt; sleep 600",
        quoted(dir.path().to_str().expect("UTF-8")),
        quoted(test_binary.to_str().expect("UTF-8")),
    );
    tmux.start(100, 30, &command);
    let pane = |format: &str| tmux.command(&["display-message", "-p", "-t", "dash", format]);
    tmux.wait_for("doomed");
    assert_eq!(
        pane("#{alternate_on} #{cursor_flag}").trim(),
        "1 0",
        "the view is up"
    );
    fs_err::write(dir.path().join("go"), "").expect("go");
    wait_for_within("the helper to end", Duration::from_secs(30), || {
        dir.path().join("stty.txt").exists()
    });
    let screen = tmux.screen();
    let code = fs_err::read_to_string(dir.path().join("code.txt")).expect("exit code");
    assert_eq!(code.trim(), "101", "the panic fails the helper:\n{screen}");
    assert_eq!(
        pane("#{alternate_on} #{cursor_flag}").trim(),
        "0 1",
        "the main screen, the cursor shown:\n{screen}"
    );
    let stty = fs_err::read_to_string(dir.path().join("stty.txt")).expect("stty");
    let flags: Vec<&str> = stty.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig", "opost"] {
        assert!(flags.contains(&flag), "{flag}: out of raw mode:\n{stty}");
    }
    assert!(
        screen.contains("a bug while the dashboard is up"),
        "the message on the main screen:\n{screen}"
    );
    assert!(
        !screen.contains("milabench ·"),
        "no frame drawn over it:\n{screen}"
    );
}

/// The `milabench` process of `project`'s run: the one whose working folder is the project's.
fn run_process(project: &Project) -> Option<String> {
    let dir = std::fs::canonicalize(project.path()).ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().into_string().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let is_run = cmdline.split(|b| *b == 0).any(|w| w == b"--dash");
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            (is_run && cwd == dir).then_some(pid)
        })
}

/// Whether process `pid` still runs (a zombie awaiting its reaper does not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

#[test]
fn a_terminal_that_goes_away_ends_the_run_instead_of_a_spinning_orphan() {
    let project = project(400);
    let tmux = Tmux::new("dash-hangup");
    start(&tmux, &project, 120, 36);
    tmux.wait_for("steady.D0  rate");
    let pid = run_process(&project).expect("the run's process");
    /// Kills the run should the test fail, so that no orphan outlives it.
    struct Reaper<'a>(&'a str);
    impl Drop for Reaper<'_> {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-9", self.0]).output();
        }
    }
    let _reaper = Reaper(&pid);
    // The window closes (as when an ssh connection drops): the terminal hangs up.
    tmux.command(&["kill-server"]);
    wait_for_within(
        "the run to end after its terminal hung up",
        Duration::from_secs(30),
        || !alive(&pid),
    );
    let data = fs_err::read_to_string(project.path().join("base/runs/dash/steady.D0.data"))
        .expect("what was measured is kept");
    assert!(data.contains("\"rate\""), "{data}");
}
