//! The sweep step of `cargo xtask e2e`: the CPU suite's `resnet50` at smoke fidelity over two
//! batch sizes (`run --sweep`, the environments of the main flow), then `report --sweep` of
//! its two runs, whose curve must hold a positive rate at both points, and its HTML page.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::e2e::{SUITE, json_output, milabench_step};

/// The swept benchmark and its axis.
const BENCH: &str = "resnet50";
const AXIS: &str = "resnet50.argv.--batch-size=[4,8]";

/// Runs the sweep in `base` (where the main flow installed and prepared the suite) and checks
/// its report; returns each step's wall time.
pub fn flow(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
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
            "e2e-sweep",
            "--sweep",
            AXIS,
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
    let runs: Vec<_> = ["e2e-sweep-batch-size4", "e2e-sweep-batch-size8"]
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
    let page = base.join("sweep.html");
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
    check_sweep(&report, &std::fs::read_to_string(&page)?)?;
    Ok(timings)
}

/// The sweep's JSON report has the benchmark's curve with a positive rate at both batch sizes,
/// the swept value as its axis, and its page a rate and a memory plot.
fn check_sweep(report: &serde_json::Value, page: &str) -> anyhow::Result<()> {
    if report["axis"] != "resnet50.argv.--batch-size"
        || report["x"] != serde_json::json!([4.0, 8.0])
    {
        bail!("the sweep report's axis is not the batch size: {report}");
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
        bail!("{BENCH} has no positive rate at both batch sizes: {curve}");
    }
    if page.matches("<svg").count() < 2 {
        bail!("the sweep page has no rate and memory plots");
    }
    Ok(())
}
