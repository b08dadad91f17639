//! benchit's measurement honesty, with `benchmate.benchit.measure` in a Python environment that
//! has torch (the managed benchit environment, or `--benchit-python`): the discovery overhead on
//! a script's own run time (pairs of a bare run and a run under discovery in one process; target
//! under 5%), and the worker's torch-eager latency next to a plain `timeit` loop of the same model
//! call in the same process (target within 2%). Each ratio is the median over back-to-back
//! pairs, which share the machine's speed of the moment; the side that goes first alternates, as
//! the first of a pair runs 1-2% slower here (see `measure.py`). Without such an
//! environment the figures are skipped with a line that says how to get them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

/// The example script measured against timeit (and named in the skip line).
const SCRIPT: &str = "benchmarks/benchit/mlp.py";

/// The scripts whose discovery overhead is measured: the MLP is the worst case (about 100 us a
/// model call, so a fixed cost per call weighs most), the others are closer to real models.
const OVERHEAD_SCRIPTS: [&str; 3] = [
    "benchmarks/benchit/mlp.py",
    "benchmarks/benchit/cnn.py",
    "benchmarks/benchit/transformer_block.py",
];

/// Back-to-back pairs (bare, under discovery) of each overhead figure: about 20 s for the MLP.
const OVERHEAD_PAIRS: usize = 501;

/// Rounds (worker, timeit) of the latency comparison, and calls timed in each.
const TIMEIT_ROUNDS: usize = 201;
const TIMEIT_ITERATIONS: usize = 200;

/// Runs the measurements and prints their lines of the table.
pub fn run(python: Option<&Path>) -> anyhow::Result<()> {
    eprintln!("==> bench: benchit (discovery overhead, worker latency vs timeit)");
    let root = crate::e2e::repo_root();
    let python = python.map_or_else(managed_python, Path::to_path_buf);
    if let Err(problem) = has_torch(&python, &root) {
        println!(
            "{:<40} skipped: {problem}; run `benchit {SCRIPT}` once to build the managed environment, or pass --benchit-python",
            "benchit: discovery overhead, timeit"
        );
        return Ok(());
    }
    let num = |v: &Value, key: &str| v[key].as_f64().unwrap_or(f64::NAN);
    for script in OVERHEAD_SCRIPTS {
        let runs = OVERHEAD_PAIRS.to_string();
        let overhead = measure(&python, &root, &["overhead", script, "--runs", &runs])?;
        let ratio = num(&overhead, "ratio");
        let name = Path::new(script)
            .file_name()
            .map_or(script.into(), |n| n.to_string_lossy());
        println!(
            "{:<40} ratio {ratio:.3} (median of {OVERHEAD_PAIRS} back-to-back pairs; fastest runs {:.1} ms under discovery vs {:.1} ms bare)  target < 1.05: {}",
            format!("benchit: discovery overhead ({name})"),
            num(&overhead, "discovery_seconds") * 1e3,
            num(&overhead, "bare_seconds") * 1e3,
            if ratio < 1.05 { "met" } else { "NOT met" }
        );
    }
    let timeit = measure(
        &python,
        &root,
        &[
            "timeit",
            SCRIPT,
            "--iterations",
            &TIMEIT_ITERATIONS.to_string(),
            "--rounds",
            &TIMEIT_ROUNDS.to_string(),
        ],
    )?;
    let ratio = num(&timeit, "ratio");
    println!(
        "{:<40} ratio {ratio:.3} (median of {TIMEIT_ROUNDS} back-to-back pairs; fastest rounds {:.2} us benchit vs {:.2} us timeit)  target within 2%: {}",
        "benchit: torch-eager latency vs timeit",
        num(&timeit, "worker_mean_ns") / 1e3,
        num(&timeit, "timeit_mean_ns") / 1e3,
        if (ratio - 1.0).abs() <= 0.02 {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

/// The interpreter of the managed benchit environment (under `$BENCHIT_HOME`); a path that does
/// not exist when no home folder is known, which `has_torch` then reports.
pub(super) fn managed_python() -> PathBuf {
    benchit::env::home_from_env()
        .map(|home| benchit::env::managed_python(&home).into_std_path_buf())
        .unwrap_or_default()
}

/// `python` with benchmate from the checkout on its path.
pub(super) fn python_command(python: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.current_dir(root)
        .env("PYTHONPATH", root.join("benchmarks/_benchmate"));
    cmd
}

/// Whether `python` imports torch, onnx and onnxruntime; the reason when not.
pub(super) fn has_torch(python: &Path, root: &Path) -> Result<(), String> {
    let out = python_command(python, root)
        .args(["-c", "import torch, onnx, onnxruntime"])
        .output()
        .map_err(|e| format!("{} cannot run ({e})", python.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} lacks torch, onnx or onnxruntime",
            python.display()
        ))
    }
}

/// Runs `python -m benchmate.benchit.measure ARGS` and reads its JSON line.
fn measure(python: &Path, root: &Path, args: &[&str]) -> anyhow::Result<Value> {
    let out = python_command(python, root)
        .args(["-m", "benchmate.benchit.measure"])
        .args(args)
        .output()
        .with_context(|| format!("could not start {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "benchmate.benchit.measure {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("measurement output is not JSON: {line}"))
}
