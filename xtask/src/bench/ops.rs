//! `benchit ops` figures: the Rust expansion of a 100k-id range config (release program
//! `benchit`'s `bench_ops_expand`; baseline: writing the expanded configs as JSON lines in the
//! same run), and the worker's per-iteration timing overhead on a trivial operator next to a bare
//! `perf_counter_ns` loop in the same Python process (`benchmate.benchit.ops_measure`, in the
//! managed benchit environment or `--benchit-python`; skipped with a line without torch).

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// Runs the measurements and prints their lines of the table.
pub fn run(python: Option<&Path>) -> anyhow::Result<()> {
    eprintln!("==> bench: benchit ops (expansion speed, timing overhead)");
    let line = super::release_example_output("benchit", "bench_ops_expand", &[], "ops expansion")?;
    let figure: Value =
        serde_json::from_str(line.trim()).context("measurement output is not JSON")?;
    let num = |v: &Value, key: &str| v[key].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<40} {:>9.1} ms  ({:.0} ids/s)  baseline ({}) {:.1} ms  ratio {:.2}x",
        figure["name"].as_str().unwrap_or("ops: expand"),
        num(&figure, "value_ms"),
        num(&figure, "ids_per_second"),
        figure["baseline"].as_str().unwrap_or("?"),
        num(&figure, "baseline_ms"),
        num(&figure, "value_ms") / num(&figure, "baseline_ms"),
    );
    let root = crate::e2e::repo_root();
    let python = python.map_or_else(super::benchit::managed_python, Path::to_path_buf);
    if let Err(problem) = super::benchit::has_torch(&python, &root) {
        println!(
            "{:<40} skipped: {problem}; run `benchit ops -c benchmarks/opbench/configs/simple_add.json` once to build the managed environment, or pass --benchit-python",
            "ops: timing overhead"
        );
        return Ok(());
    }
    let out = super::benchit::python_command(&python, &root)
        .args([
            "-m",
            "benchmate.benchit.ops_measure",
            "--iterations",
            "20000",
            "--rounds",
            "7",
        ])
        .output()
        .with_context(|| format!("could not start {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "benchmate.benchit.ops_measure failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    let overhead: Value = serde_json::from_str(line)
        .with_context(|| format!("measurement output is not JSON: {line}"))?;
    println!(
        "{:<40} {:.0} ns per call reported vs {:.0} ns bare perf_counter_ns loop (ratio {:.3})",
        "ops: timed call, torch.add of 1 element",
        num(&overhead, "worker_call_ns"),
        num(&overhead, "bare_call_ns"),
        num(&overhead, "worker_call_ns") / num(&overhead, "bare_call_ns"),
    );
    println!(
        "{:<40} {:.0} ns per iteration vs {:.0} ns bare (bookkeeping +{:.0} ns)",
        "ops: loop wall time per iteration",
        num(&overhead, "worker_wall_ns"),
        num(&overhead, "bare_wall_ns"),
        num(&overhead, "worker_wall_ns") - num(&overhead, "bare_wall_ns"),
    );
    Ok(())
}
