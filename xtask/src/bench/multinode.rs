//! Multi-node figures, against the two-node harness of `cargo xtask cluster` (root only):
//! the time from `milabench run` to both ranks of a two-node benchmark started (rank 1 over
//! ssh on the other node), against two bare `ssh node true` round trips measured in the same
//! run; and `milabench check` of the two-node system, whose target is under a second. Both use
//! the release build of `milabench`, as users run it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use xtask::cluster::{Cluster, PAIR_SUITE as SUITE, PYTHON_SEND};

/// Rounds of each measurement; the figures are medians.
const ROUNDS: usize = 7;

/// A benchmark whose ranks write the time their code started (`<rank>.started`) and exit;
/// rank 0 reports one rate so that the run succeeds.
const PAIR_MAIN: &str = r#"
import json, os, sys, time
started = time.time()
remote = "nolog" in json.loads(os.environ["MILABENCH_CONFIG"])["tag"]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "remote.started" if remote else "local.started"), "w") as f:
    f.write(repr(started))
if not remote:
    send({"task": "train", "rate": 1.0, "units": "items/s"})
"#;

/// Measures and prints the multi-node figures, or says why they are skipped.
pub fn run() -> anyhow::Result<()> {
    println!("## multi-node (two network namespaces with real sshd, release build)");
    if let Some(why) = xtask::cluster::unavailable() {
        println!("skipped: {why}");
        return Ok(());
    }
    let program = release_milabench()?;
    let cluster = Cluster::up()?;
    let project = tempfile::tempdir()?;
    let result = measure(&cluster, &program, project.path());
    cluster.down();
    result
}

fn measure(cluster: &Cluster, program: &Path, dir: &Path) -> anyhow::Result<()> {
    let venv_bin = dir.join("base/venv/tiny/bin");
    fs_err::create_dir_all(&venv_bin)?;
    std::os::unix::fs::symlink("/usr/bin/python3", venv_bin.join("python"))?;
    let bench = dir.join("benchmarks/pair");
    fs_err::create_dir_all(&bench)?;
    fs_err::write(bench.join("main.py"), format!("{PYTHON_SEND}{PAIR_MAIN}"))?;
    fs_err::write(bench.join("benchfile.yaml"), "launcher: python\n")?;
    fs_err::write(dir.join("suite.yaml"), SUITE)?;
    let [a, b] = &cluster.nodes;
    let milabench = |args: &[&str]| {
        let mut cmd = cluster.command_in(a, program);
        cmd.current_dir(dir)
            .env("MILABENCH_BASE", dir.join("base"))
            .env("MILABENCH_GPU_ARCH", "cpu")
            .args(args)
            .arg("--system")
            .arg(cluster.system_file());
        cmd
    };
    let (mut ssh, mut started, mut unchecked, mut check) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let clock = Instant::now();
        for _ in 0..2 {
            succeed(cluster.ssh(a, b, &["true"]), "ssh node true")?;
        }
        ssh.push(clock.elapsed());
        for (checked, times) in [(true, &mut started), (false, &mut unchecked)] {
            let name = format!("bench-{round}-{checked}");
            let mut args = vec!["run", "--no-setup", "--config", "suite.yaml"];
            args.extend(["--run-name", &name]);
            if !checked {
                args.push("--no-check");
            }
            for file in ["local.started", "remote.started"] {
                let _ = std::fs::remove_file(bench.join(file));
            }
            let launched = now();
            succeed(milabench(&args), "milabench run")?;
            let rank0 = started_at(&bench.join("local.started"))?;
            let rank1 = started_at(&bench.join("remote.started"))?;
            times.push(Duration::from_secs_f64(rank0.max(rank1) - launched));
        }
        let clock = Instant::now();
        succeed(
            milabench(&["check", "--config", "suite.yaml"]),
            "milabench check",
        )?;
        check.push(clock.elapsed());
    }
    let (ssh, started, unchecked, check) = (
        median(ssh),
        median(started),
        median(unchecked),
        median(check),
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("| figure (median of {ROUNDS}) | time | against 2x `ssh node true` |");
    println!("|---|---|---|");
    println!(
        "| 2x `ssh node true` (baseline) | {:.0} ms | 1.00 |",
        ms(ssh)
    );
    for (what, time) in [
        ("`run` to both ranks started", started),
        ("`run --no-check` to both ranks started", unchecked),
        ("`check` of the two-node system (target < 1 s)", check),
    ] {
        println!(
            "| {what} | {:.0} ms | {:.2} |",
            ms(time),
            time.as_secs_f64() / ssh.as_secs_f64()
        );
    }
    Ok(())
}

/// Builds the release `milabench` and returns its path.
pub(super) fn release_milabench() -> anyhow::Result<PathBuf> {
    build_release_milabench(&crate::e2e::repo_root(), None)
        .context("building the release milabench failed")?;
    Ok(super::target_dir().join("release/milabench"))
}

/// `cargo build --release --bin milabench` of the checkout at `source`, into `target` when
/// given (else cargo's own choice); fails unless it succeeds.
pub(super) fn build_release_milabench(source: &Path, target: Option<&Path>) -> anyhow::Result<()> {
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "build",
            "--release",
            "--quiet",
            "--locked",
            "--bin",
            "milabench",
        ])
        .current_dir(source);
    if let Some(target) = target {
        cargo.env("CARGO_TARGET_DIR", target);
    }
    let status = cargo.status().context("could not start cargo")?;
    if !status.success() {
        bail!("cargo build of {} failed", source.display());
    }
    Ok(())
}

/// Runs `cmd` and fails with its output unless it exits with 0.
fn succeed(mut cmd: Command, what: &str) -> anyhow::Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Seconds since the epoch, as Python's `time.time()` gives them.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The start time a rank wrote into `path`.
fn started_at(path: &Path) -> anyhow::Result<f64> {
    let text = fs_err::read_to_string(path)?;
    text.trim()
        .parse()
        .with_context(|| format!("{} holds no time: {text:?}", path.display()))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}
