//! The sweep step of `cargo xtask e2e`: the CPU suite's `resnet50` at smoke fidelity over two
//! batch sizes, then over two `OMP_NUM_THREADS` (`run --sweep`, the environments of the main
//! flow), then `report --sweep` of each sweep's two runs, whose curve must hold a positive rate
//! at both points, and its HTML page, loaded in chromium.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::e2e::{SUITE, json_output, milabench_step};

/// The swept benchmark.
const BENCH: &str = "resnet50";

/// A sweep of the step: its run name, its axis, the key its report must have as axis, the
/// swept values, and the names of its runs.
struct Axis {
    run_name: &'static str,
    sweep: &'static str,
    key: &'static str,
    values: [f64; 2],
    runs: [&'static str; 2],
}

/// The batch size, then the number of OpenMP threads (the benchmark's `env`, which its
/// processes get over the planner's `OMP_NUM_THREADS`).
const AXES: [Axis; 2] = [
    Axis {
        run_name: "e2e-sweep",
        sweep: "resnet50.argv.--batch-size=[4,8]",
        key: "resnet50.argv.--batch-size",
        values: [4.0, 8.0],
        runs: ["e2e-sweep-batch-size4", "e2e-sweep-batch-size8"],
    },
    Axis {
        run_name: "e2e-threads",
        sweep: "resnet50.env.OMP_NUM_THREADS=[1,2]",
        key: "resnet50.env.OMP_NUM_THREADS",
        values: [1.0, 2.0],
        runs: [
            "e2e-threads-OMP_NUM_THREADS1",
            "e2e-threads-OMP_NUM_THREADS2",
        ],
    },
];

/// Runs each sweep in `base` (where the main flow installed and prepared the suite) and
/// checks its report and, in chromium, its page; returns each step's wall time.
pub fn flow(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let browser = xtask::browser::ensure_chromium()?;
    let mut timings = Vec::new();
    for axis in &AXES {
        timings.extend(one_sweep(root, bin, base, &browser, axis)?);
    }
    Ok(timings)
}

/// The sweep of `axis`: its runs, `report --sweep` in JSON and HTML, their checks.
fn one_sweep(
    root: &Path,
    bin: &Path,
    base: &Path,
    browser: &Path,
    axis: &Axis,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let seconds = milabench_step(
        root,
        bin,
        base,
        "run --sweep",
        &[
            "run",
            "--config",
            SUITE,
            "--fidelity",
            "smoke",
            "--no-setup",
            "--select",
            BENCH,
            "--run-name",
            axis.run_name,
            "--sweep",
            axis.sweep,
        ],
    )
    .with_context(|| {
        format!(
            "the sweep's record is {}",
            base.join("multirun.cache").display()
        )
    })?;
    let mut timings = vec![("sweep run", seconds)];
    let started = Instant::now();
    let runs: Vec<_> = axis
        .runs
        .iter()
        .map(|name| base.join("runs").join(name))
        .collect();
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--sweep"])
            .args(&runs)
            .current_dir(root),
        "milabench report --sweep",
    )?;
    let page = base.join(format!("{}.html", axis.run_name));
    let status = Command::new(bin)
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .arg("--sweep")
        .args(&runs)
        .current_dir(root)
        .status()
        .context("could not start milabench report --sweep --format html")?;
    if !status.success() {
        bail!("milabench report --sweep --format html failed ({status})");
    }
    timings.push(("sweep report", started.elapsed().as_secs_f64()));
    check_sweep(axis, &report, &std::fs::read_to_string(&page)?)?;
    let problems = xtask::browser::sweep_page_problems(browser, &page, &report)?;
    if !problems.is_empty() {
        bail!(
            "{} in chromium:\n  {}",
            page.display(),
            problems.join("\n  ")
        );
    }
    Ok(timings)
}

/// The sweep's JSON report has the benchmark's curve with a positive rate at both points, the
/// swept key as its axis, and its page a rate and a memory plot.
fn check_sweep(axis: &Axis, report: &serde_json::Value, page: &str) -> anyhow::Result<()> {
    if report["axis"] != axis.key || report["x"] != serde_json::json!(axis.values) {
        bail!("the sweep report's axis is not {}: {report}", axis.key);
    }
    let curve = report["curves"]
        .as_array()
        .and_then(|curves| curves.iter().find(|c| c["bench"] == BENCH))
        .with_context(|| format!("no curve of {BENCH} in {report}"))?;
    let rates: Vec<f64> = curve["cells"]
        .as_array()
        .map(|cells| cells.iter().filter_map(|c| c["rate"].as_f64()).collect())
        .unwrap_or_default();
    if rates.len() != 2 || rates.iter().any(|r| *r <= 0.0) {
        bail!(
            "{BENCH} has no positive rate at both points of {}: {curve}",
            axis.key
        );
    }
    if page.matches("<svg").count() < 2 {
        bail!("the sweep page has no rate and memory plots");
    }
    Ok(())
}
