//! The embedding examples of the facade (`crates/milabench/examples`), built and run as another
//! tool would use them: `run_with_observer` runs the whole pipeline of `milabench run`
//! (preflight, a real install of the group's environment, prepare, run, report) on a tiny
//! protocol-speaking benchmark of a scratch suite and prints its events as JSON lines;
//! `suite_statistics` reads the run folder back.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, ensure};
use serde_json::Value;

/// The scratch suite: one benchmark in an install group of its own (no requirements but the
/// ones every environment gets).
const SUITE: &str = "hello:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  max_duration: 60\n  definition: benchmarks/hello\n";

/// The benchmark: a few rates and losses on the data channel.
const MAIN: &str = "import json, os\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\nfor i in range(8):\n    out.write(json.dumps({'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'}) + '\\n')\n    out.write(json.dumps({'task': 'train', 'loss': 1.0 / (i + 1)}) + '\\n')\n";

/// Runs both examples in `scratch`.
pub fn run(scratch: &Path) -> anyhow::Result<()> {
    let bench = scratch.join("benchmarks/hello");
    std::fs::create_dir_all(&bench)?;
    std::fs::write(bench.join("main.py"), MAIN)?;
    std::fs::write(bench.join("benchfile.yaml"), "launcher: python\n")?;
    std::fs::write(bench.join("requirements.in"), "")?;
    std::fs::write(scratch.join("suite.yaml"), SUITE)?;

    let events = example(
        scratch,
        "run_with_observer",
        &["suite.yaml", "base", "hello"],
    )?;
    let lines: Vec<Value> = events
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("run_with_observer printed lines that are not JSON:\n{events}"))?;
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["kind"].as_str()).collect();
    for kind in ["bench_start", "start", "rate", "end", "bench_end", "done"] {
        ensure!(kinds.contains(&kind), "no `{kind}` event in:\n{events}");
    }
    let phases: Vec<&str> = lines.iter().filter_map(|l| l["phase"].as_str()).collect();
    ensure!(
        phases == ["Preflight", "Install", "Prepare", "Run", "Report"],
        "the phases of `milabench run` did not all run, in order: {phases:?}"
    );
    let done = lines.last().context("no event")?;
    ensure!(done["success"] == true, "the run failed: {done}");
    let run_dir = done["run_dir"].as_str().context("no run folder")?;

    let stats = example(scratch, "suite_statistics", &["suite.yaml", run_dir])?;
    let stats: Value = serde_json::from_str(&stats).context("suite_statistics printed no JSON")?;
    let row = &stats["benchmarks"][0];
    ensure!(
        row["bench"] == "hello" && row["perf"].as_f64().is_some_and(|p| p > 100.0),
        "unexpected statistics: {stats:#}"
    );
    Ok(())
}

/// `cargo run --example NAME -- ARGS` in `cwd`; its stdout.
fn example(cwd: &Path, name: &str, args: &[&str]) -> anyhow::Result<String> {
    eprintln!("==> example {name}");
    let output = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--locked", "--manifest-path"])
        .arg(crate::e2e::repo_root().join("Cargo.toml"))
        .args(["-p", "milabench", "--example", name, "--"])
        .args(args)
        .current_dir(cwd)
        .output()
        .with_context(|| format!("could not start the example {name}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    ensure!(
        output.status.success(),
        "example {name} failed ({}):\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout)
}
