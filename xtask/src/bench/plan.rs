//! Plans for a thousand GPUs: `milabench run --dry-run=json` of the Python tool's
//! `standard.yaml` (its checkout in `tests/fixtures/upstream`, benchmark folders evaluated by the
//! pack host) for generated systems of 1 to 128 nodes of 8 GPUs each (an `nvidia-smi` stand-in
//! answering for 8 idle H100s), with the release build. Target: 128 nodes in under a second, and
//! the cost linear in nodes: the figure is each size's time, the ratio against one node and the
//! time per added node. Then `milabench check` of the same systems, its ssh probes answered by
//! an `ssh` stand-in that runs the probe here (what is measured is the orchestration of 127
//! probes in parallel, not a network); target: 128 nodes in under 5 s.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// Node counts measured.
const NODES: [usize; 5] = [1, 16, 32, 64, 128];
/// GPUs per node.
const GPUS: usize = 8;
/// Rounds per size; the figure is the median.
const ROUNDS: usize = 3;
/// The 128-node target of the dry run, seconds.
const TARGET_S: f64 = 1.0;
/// The 128-node target of `check`, seconds.
const CHECK_TARGET_S: f64 = 5.0;

/// Measures and prints the plan figures.
pub fn run() -> anyhow::Result<()> {
    eprintln!("==> bench: plans at scale (building the release milabench)");
    let program = super::multinode::release_milabench()?;
    let root = crate::e2e::repo_root();
    let suite = root.join("tests/fixtures/upstream/milabench/config/standard.yaml");
    let scratch = tempfile::tempdir().context("could not make a scratch folder")?;
    let stand_ins = scratch.path().join("bin");
    fs_err::create_dir_all(&stand_ins)?;
    write_script(&stand_ins.join("nvidia-smi"), &smi_script())?;
    write_script(&stand_ins.join("ssh"), SSH_SCRIPT)?;
    let path = format!(
        "{}:{}",
        stand_ins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    println!("## plans at scale (Python tool's standard.yaml, {GPUS} GPUs a node, release build)");
    let mut times = Vec::new();
    let mut systems = Vec::new();
    for nodes in NODES {
        let system = scratch.path().join(format!("system-{nodes}.yaml"));
        fs_err::write(&system, system_file(nodes))?;
        systems.push((nodes, system.clone()));
        let mut rounds = Vec::new();
        let mut processes = 0;
        for round in 0..ROUNDS {
            let base = scratch.path().join(format!("base-{nodes}-{round}"));
            let began = Instant::now();
            let out = Command::new(&program)
                .args(["run", "--config"])
                .arg(&suite)
                .arg("--system")
                .arg(&system)
                .arg("--base")
                .arg(&base)
                .arg("--dry-run=json")
                .env("PATH", &path)
                .env("MILABENCH_GPU_ARCH", "cuda")
                .output()
                .context("could not start milabench")?;
            rounds.push(began.elapsed().as_secs_f64());
            if !out.status.success() {
                bail!(
                    "run --dry-run of {nodes} nodes failed:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let plans: serde_json::Value = serde_json::from_slice(&out.stdout)
                .context("run --dry-run=json printed no JSON")?;
            processes = plans.as_array().map_or(0, |p| {
                p.iter()
                    .map(|b| b["processes"].as_array().map_or(0, Vec::len))
                    .sum()
            });
        }
        rounds.sort_by(f64::total_cmp);
        let median = rounds[ROUNDS / 2];
        times.push((nodes, median));
        println!(
            "{:<40} {:>9.0} ms  {:>6} processes planned",
            format!("plan: run --dry-run, {nodes} nodes"),
            median * 1000.0,
            processes
        );
    }
    let (_, one) = times[0];
    let (_, last) = times[times.len() - 1];
    let per_node = (last - one) / (NODES[NODES.len() - 1] - 1) as f64;
    println!(
        "{:<40} {:>9.2} ms per added node; 128 nodes / 1 node = {:.2}x; target 128 nodes < {TARGET_S} s: {}",
        "plan: cost per node",
        per_node * 1000.0,
        last / one,
        if last < TARGET_S { "met" } else { "NOT met" }
    );
    // The base folder the probes look for "there" (here, through the stand-in).
    fs_err::create_dir_all(scratch.path().join("base-check"))?;
    let mut checks = Vec::new();
    for (nodes, system) in &systems {
        let mut rounds = Vec::new();
        for _ in 0..ROUNDS {
            let began = Instant::now();
            let out = Command::new(&program)
                .args(["check", "--config"])
                .arg(root.join("config/cpu.yaml"))
                .arg("--system")
                .arg(system)
                .arg("--base")
                .arg(scratch.path().join("base-check"))
                .args(["--format", "json"])
                .env("PATH", &path)
                .env("MILABENCH_GPU_ARCH", "cpu")
                // A closed local port: the index check answers at once.
                .env("UV_INDEX_URL", "http://127.0.0.1:9/simple")
                .output()
                .context("could not start milabench check")?;
            rounds.push(began.elapsed().as_secs_f64());
            let report: serde_json::Value =
                serde_json::from_slice(&out.stdout).with_context(|| {
                    format!(
                        "check of {nodes} nodes printed no JSON: {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                })?;
            let unreached = report.as_array().map_or(0, |checks| {
                checks
                    .iter()
                    .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("node ")))
                    .filter(|c| c["status"] != "ok")
                    .count()
            });
            if unreached > 0 {
                bail!("check of {nodes} nodes: {unreached} node checks did not pass:\n{report:#}");
            }
        }
        rounds.sort_by(f64::total_cmp);
        let median = rounds[ROUNDS / 2];
        checks.push(median);
        println!(
            "{:<40} {:>9.0} ms",
            format!("plan: check, {nodes} nodes"),
            median * 1000.0
        );
    }
    let last = checks[checks.len() - 1];
    println!(
        "{:<40} 128 nodes / 1 node = {:.2}x; target 128 nodes < {CHECK_TARGET_S} s: {}",
        "plan: check cost",
        last / checks[0],
        if last < CHECK_TARGET_S {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

/// An `ssh` that runs the command it is given (its last argument) here, as the node would.
const SSH_SCRIPT: &str = "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n";

/// A system file of `nodes` nodes, the first the main one on this machine.
fn system_file(nodes: usize) -> String {
    let mut text = String::from("system:\n  arch: cuda\n  nodes:\n");
    for i in 0..nodes {
        let ip = if i == 0 {
            "127.0.0.1".to_string()
        } else {
            format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256)
        };
        text.push_str(&format!(
            "    - {{name: \"node{i}\", ip: {ip}, user: bench, main: {}, sshport: 22}}\n",
            i == 0
        ));
    }
    text
}

/// An `nvidia-smi` that answers the CSV query for [`GPUS`] idle H100s.
fn smi_script() -> String {
    let lines: Vec<String> = (0..GPUS)
        .map(|i| {
            format!(
                "{i}, GPU-0000000{i}, NVIDIA H100 80GB HBM3, 1, 81559, 0, 0, 30, 70.0, 1980, 2619"
            )
        })
        .collect();
    format!("#!/bin/sh\ncat <<'EOF'\n{}\nEOF\n", lines.join("\n"))
}

/// Writes an executable script.
fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    fs_err::write(path, text)?;
    xtask::host::set_mode(path, 0o755)
}
