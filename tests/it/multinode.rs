//! Multi-node runs against the real two-node harness (`cargo xtask cluster`: two network
//! namespaces, each with its own address and a real sshd): the orchestrator runs inside node
//! `a`, rank 0 there and rank 1 over ssh on node `b`. Tiny protocol-speaking benchmarks (no
//! torch) play each fault: a node that does not answer ssh, a wrong key, a remote rank that
//! crashes, one that hangs past `max_duration`, Ctrl-C. Each must end with a message naming
//! the node and the cause, a readable run folder, a non-zero exit, and no process left on
//! either node.
//!
//! These tests need root (network namespaces, sshd): they are `#[ignore]`d with that reason,
//! and `cargo xtask ci` runs them (`--run-ignored only`) where the harness is available, or
//! says why it skips them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use xtask::cluster::{Cluster, Node, PAIR_SUITE as SUITE, PYTHON_SEND};

use crate::common::{LoggedChild, Output, hermetic, run, wait_for};

/// Follows [`PYTHON_SEND`] (records smuggled in stdout, as every rank of a multi-node job
/// sends them): notes which node's network namespace the rank runs in.
const PRELUDE: &str = r#"
import json, os, signal, subprocess, sys, time
assert os.environ["DATA_FD"] == "1"
remote = "nolog" in json.loads(os.environ["MILABENCH_CONFIG"])["tag"]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "remote.started" if remote else "local.started"), "w") as f:
    f.write(os.readlink("/proc/self/ns/net"))
"#;

/// A cluster, a project whose benchmark `pair` runs `local` as rank 0 and `remote` as rank 1.
struct TwoNodes {
    cluster: Cluster,
    dir: tempfile::TempDir,
}

impl TwoNodes {
    fn new(local: &str, remote: &str, suite_extra: &str) -> TwoNodes {
        let cluster = Cluster::up().expect("the cluster harness starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let venv_bin = dir.path().join("base/venv/tiny/bin");
        fs_err::create_dir_all(&venv_bin).expect("venv folder");
        std::os::unix::fs::symlink("/usr/bin/python3", venv_bin.join("python")).expect("python");
        let bench = dir.path().join("benchmarks/pair");
        fs_err::create_dir_all(&bench).expect("bench folder");
        let indent = |code: &str| {
            code.lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        };
        fs_err::write(
            bench.join("main.py"),
            format!(
                "{PYTHON_SEND}{PRELUDE}\nif remote:\n{}else:\n{}",
                indent(remote),
                indent(local)
            ),
        )
        .expect("main.py");
        fs_err::write(bench.join("benchfile.yaml"), "launcher: python\n").expect("benchfile");
        fs_err::write(
            dir.path().join("suite.yaml"),
            format!("{SUITE}{suite_extra}"),
        )
        .expect("suite");
        TwoNodes { cluster, dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn node(&self, name: &str) -> &Node {
        self.cluster
            .nodes
            .iter()
            .find(|n| n.name == name)
            .expect("node")
    }

    /// `milabench run` inside node `a` with `system` as the system file.
    fn run_command(&self, system: &Path) -> Command {
        let mut cmd = self
            .cluster
            .command_in(self.node("a"), Path::new(env!("CARGO_BIN_EXE_milabench")));
        hermetic(&mut cmd, self.path());
        cmd.env("MILABENCH_BASE", self.path().join("base"))
            .args(["run", "--no-setup", "--config", "suite.yaml", "--system"])
            .arg(system);
        cmd
    }

    /// `run` without its preflight: the faults are met by the ranks themselves.
    fn run(&self) -> Output {
        run(self
            .run_command(&self.cluster.system_file())
            .arg("--no-check"))
    }

    fn run_dir(&self) -> PathBuf {
        self.path().join("base/runs/golden")
    }

    fn file(&self, name: &str) -> String {
        fs_err::read_to_string(self.run_dir().join(name)).unwrap_or_default()
    }

    /// The run failed (exit 1) saying each of `needles` on stderr, left a readable run folder
    /// and nothing running on either node.
    fn assert_failed_saying(&self, out: &Output, needles: &[&str]) {
        assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
        for needle in needles {
            assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        }
        self.assert_readable();
        self.assert_nothing_left();
    }

    /// Every `.data` file of the run parses line by line, and `report` reads the folder.
    fn assert_readable(&self) {
        let entries = fs_err::read_dir(self.run_dir()).expect("run folder");
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "data") {
                for line in fs_err::read_to_string(&path).expect("data").lines() {
                    serde_json::from_str::<serde_json::Value>(line)
                        .unwrap_or_else(|e| panic!("{}: {e}: {line}", path.display()));
                }
            }
        }
        let report = run(crate::common::milabench(self.path())
            .args(["report", "--runs"])
            .arg(self.run_dir()));
        assert!(report.code <= 1, "report: {}", report.stderr);
        assert!(report.stdout.contains("pair"), "{}", report.stdout);
    }

    /// Nothing is left on either node but its sshd (milabench has exited by now).
    fn assert_nothing_left(&self) {
        for node in &self.cluster.nodes {
            let sshd = self.cluster.sshd_pid(node);
            wait_for(&format!("node {} holds only its sshd", node.name), || {
                self.cluster
                    .pids(node)
                    .iter()
                    .all(|pid| Some(*pid) == sshd && alive(*pid))
            });
        }
    }

    fn netns_id(&self, node: &str) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.node(node).netns])
            .args(["readlink", "/proc/self/ns/net"])
            .output()
            .expect("readlink");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(
            stat[stat.rfind(')').unwrap_or(0) + 2..].chars().next(),
            Some('Z')
        )
    })
}

const REPORTS: &str = "for i in range(6):\n    send({'task': 'train', 'rate': 10.0 + i, 'units': 'items/s'})\n    time.sleep(0.05)\nprint('rank 0 done')";
const SLEEPS: &str = "time.sleep(300)";

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn two_ranks_one_over_ssh_and_the_run_reports_like_one_node() {
    let nodes = TwoNodes::new(
        REPORTS,
        "print('hello from b')\nprint('warning from b', file=sys.stderr)\nsend({'task': 'train', 'rate': 1.0})",
        "",
    );
    let out = nodes.run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let bench = nodes.path().join("benchmarks/pair");
    assert_eq!(
        fs_err::read_to_string(bench.join("remote.started")).expect("rank 1 ran"),
        nodes.netns_id("b"),
        "rank 1 ran on node b"
    );
    assert_eq!(
        fs_err::read_to_string(bench.join("local.started")).expect("rank 0 ran"),
        nodes.netns_id("a"),
        "rank 0 ran on node a"
    );
    assert!(nodes.file("pair.0.a.data").contains("\"rate\":15.0"));
    assert!(nodes.file("pair.0.a.stdout").contains("rank 0 done"));
    assert!(nodes.file("pair.0.b.nolog.stdout").contains("hello from b"));
    assert!(
        nodes
            .file("pair.0.b.nolog.stderr")
            .contains("warning from b")
    );
    let remote = nodes.file("pair.0.b.nolog.data");
    assert!(remote.contains("\"rate\":1.0"), "{remote}");
    assert!(remote.contains("\"return_code\":0"), "{remote}");
    assert!(out.stdout.contains("pair"), "{}", out.stdout);
    nodes.assert_readable();
    nodes.assert_nothing_left();
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn a_node_that_does_not_answer_ssh_is_named_with_the_cause() {
    let nodes = TwoNodes::new(SLEEPS, "pass", "");
    nodes
        .cluster
        .stop_sshd(nodes.node("b"))
        .expect("sshd of b stops");
    nodes.assert_failed_saying(
        &nodes.run(),
        &[
            "could not run the rank on node `b` over ssh",
            "Connection refused",
            "the rank on node `b`",
        ],
    );
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn a_wrong_key_is_named_with_the_cause() {
    let nodes = TwoNodes::new(SLEEPS, "pass", "");
    let other = nodes.path().join("other_key");
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .expect("ssh-keygen");
    assert!(status.success());
    let system = nodes.path().join("system.yaml");
    let text = nodes.cluster.system_yaml().replace(
        &nodes.cluster.key.display().to_string(),
        &other.display().to_string(),
    );
    fs_err::write(&system, text).expect("system file");
    let out = run(nodes.run_command(&system).arg("--no-check"));
    nodes.assert_failed_saying(&out, &["node `b`", "Permission denied"]);
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn a_remote_rank_that_crashes_stops_rank_zero() {
    let nodes = TwoNodes::new(
        SLEEPS,
        "print('remote boom', file=sys.stderr)\nsys.exit(3)",
        "",
    );
    nodes.assert_failed_saying(
        &nodes.run(),
        &["stopped: the rank on node `b` (pair.0.b.nolog) failed: exited with status 3: remote boom"],
    );
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn a_remote_rank_hanging_past_max_duration_is_stopped_on_its_node() {
    // Rank 1 ignores SIGTERM and leaves a grandchild in a session of its own.
    let nodes = TwoNodes::new(
        SLEEPS,
        "subprocess.Popen(['setsid', 'sleep', '300'])\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)",
        "  max_duration: 3\n",
    );
    nodes.assert_failed_saying(
        &nodes.run(),
        &["pair.0.b.nolog failed", "longer than 3 seconds"],
    );
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn ctrl_c_stops_every_rank_on_every_node() {
    let nodes = TwoNodes::new(SLEEPS, SLEEPS, "");
    let mut milabench = LoggedChild::spawn(&mut nodes.run_command(&nodes.cluster.system_file()));
    let bench = nodes.path().join("benchmarks/pair");
    // The preflight's ssh probes come first: a loaded machine may take a while.
    milabench.wait_for("both ranks started", Duration::from_secs(60), || {
        bench.join("remote.started").exists() && bench.join("local.started").exists()
    });
    // `ip netns exec` replaced itself with milabench: the pid is the orchestrator's.
    milabench.signal("-INT");
    let out = milabench.end_within(Duration::from_secs(40));
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(
        nodes
            .file("pair.0.b.nolog.data")
            .contains("KeyboardInterrupt")
    );
    nodes.assert_readable();
    nodes.assert_nothing_left();
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn check_finds_a_node_that_does_not_answer() {
    let nodes = TwoNodes::new("pass", "pass", "");
    let check = || {
        let mut cmd = nodes
            .cluster
            .command_in(nodes.node("a"), Path::new(env!("CARGO_BIN_EXE_milabench")));
        hermetic(&mut cmd, nodes.path());
        cmd.env("MILABENCH_BASE", nodes.path().join("base"))
            .args(["check", "--config", "suite.yaml", "--system"])
            .arg(nodes.cluster.system_file());
        run(&mut cmd)
    };
    let up = check();
    // The status column is as wide as its widest status: compare words, not spaces.
    assert!(
        (up.stdout.lines()).any(|l| l.split_whitespace().take(3).eq(["ok", "node", "b"])),
        "{}",
        up.stdout
    );
    nodes
        .cluster
        .stop_sshd(nodes.node("b"))
        .expect("sshd of b stops");
    let down = check();
    assert_eq!(down.code, 1, "{}", down.stdout);
    assert!(
        down.stdout.contains("FAIL  node b")
            && down.stdout.contains("Connection refused")
            && down.stdout.contains("fix: `ssh -p 2222"),
        "{}",
        down.stdout
    );
}

#[test]
#[ignore = "needs root and network namespaces: cargo xtask ci runs it"]
fn run_does_not_start_with_a_node_down() {
    let nodes = TwoNodes::new(SLEEPS, "pass", "");
    nodes
        .cluster
        .stop_sshd(nodes.node("b"))
        .expect("sshd of b stops");
    let out = run(&mut nodes.run_command(&nodes.cluster.system_file()));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("the preflight failed, nothing was run")
            && out.stderr.contains("FAIL  node b")
            && out.stderr.contains("--no-check"),
        "{}",
        out.stderr
    );
    assert!(
        !nodes.run_dir().join("pair.D0.data").exists()
            && fs_err::read_dir(nodes.run_dir())
                .map(|entries| entries
                    .flatten()
                    .all(|e| e.file_name().to_string_lossy().starts_with('.')))
                .unwrap_or(true),
        "no benchmark ran"
    );
    nodes.assert_nothing_left();
}
