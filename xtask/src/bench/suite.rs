//! The CPU suite end to end: wall time of `install` (warm), `prepare`, `run --fidelity smoke`
//! and `report` (the e2e flow), then each benchmark's mean rate under milabench next to its bare
//! twin: the process milabench plans for it (`run --dry-run=json`: same script, arguments,
//! environment and folder) started with the venv's Python instead of voir, so without voir and
//! without milabench (rates read from its stdout). Each round runs three back to back: milabench,
//! the bare twin, and the bare twin again, the twin always in the middle and the other two
//! swapping places every round. The ratio milabench / twin is the figure; the ratio second twin /
//! twin, made the same way, is an A/A calibration: what two identical runs differ by on this
//! machine. The per-round ratios are combined into geometric means with 95% intervals, because a
//! single smoke run swings by tens of percent on a busy 2-core machine: a ratio under 0.99 whose
//! interval reaches 0.99 cannot be told from noise, and is said so. torchrun benchmarks have no
//! bare twin and are left out of the ratio.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::Context;

use super::{geometric_mean_interval, listed};
use serde_json::Value;

/// Runs the measurement and prints its lines of the table; `rounds` runs per side, for the
/// benchmarks named in `select` (all when empty).
pub fn run(rounds: usize, select: &[String]) -> anyhow::Result<()> {
    eprintln!("==> bench: suite (the smoke CPU suite end to end, then each benchmark bare)");
    let root = crate::e2e::repo_root();
    let bin = crate::e2e::build(&root)?;
    let base = tempfile::Builder::new()
        .prefix("milabench-bench-suite-")
        .tempdir()?;
    let names = select.join(",");
    let selection = (!select.is_empty()).then_some(names.as_str());
    let timings = crate::e2e::flow(&root, &bin, base.path(), selection)?;
    let total: f64 = timings.iter().map(|(_, s)| s).sum();
    let steps: Vec<String> = timings
        .iter()
        .map(|(step, s)| format!("{step} {s:.0} s"))
        .collect();
    let label = match selection {
        None => "suite: smoke CPU suite end to end".to_owned(),
        Some(names) => format!("suite: smoke run of {names}"),
    };
    println!("{label:<40} {total:.0} s ({})", steps.join(", "));
    let (mut log_ratios, mut log_calibrations) = (Vec::new(), Vec::new());
    for entry in fs_err::read_dir(base.path().join("runs/e2e"))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "data") {
            continue;
        }
        let Some((name, _)) = read_run(&path)? else {
            continue;
        };
        let twin = bare_twin(&root, &bin, base.path(), &name)?;
        // A round shares the machine's state of the moment, so its ratios cancel slow drifts;
        // milabench and the second twin swap places around the first twin every round, so a cost
        // of going first or last cancels too, and both ratios are made alike. (The e2e run above
        // is no partner: it ran minutes before.)
        let (mut ratios, mut calibrations) = (Vec::new(), Vec::new());
        for round in 1..=rounds.max(1) {
            let milabench_first = round % 2 == 1;
            let (under, twin_rate, again) = if milabench_first {
                let under = rerun(&root, &bin, base.path(), &name, round)?;
                (under, twin.rate()?, twin.rate()?)
            } else {
                let again = twin.rate()?;
                let twin_rate = twin.rate()?;
                (
                    rerun(&root, &bin, base.path(), &name, round)?,
                    twin_rate,
                    again,
                )
            };
            let (Some(bare), Some(again)) = (twin_rate, again) else {
                break;
            };
            ratios.push(under / bare);
            calibrations.push(again / bare);
        }
        if ratios.is_empty() {
            continue;
        }
        let (ratio, low, high) = geometric_mean_interval(&ratios);
        let (calibration, calibration_low, calibration_high) =
            geometric_mean_interval(&calibrations);
        log_ratios.push(ratio.ln());
        log_calibrations.push(calibration.ln());
        let verdict = if ratio >= 0.99 {
            "met"
        } else if high >= 0.99 {
            "cannot tell: the interval reaches 0.99"
        } else {
            "NOT met"
        };
        println!(
            "{:<40} ratio {ratio:.3} (95% interval {low:.3}..{high:.3}; {} rounds: {})  A/A {calibration:.3} ({calibration_low:.3}..{calibration_high:.3}: {})  target >= 0.99: {verdict}",
            format!("suite: {name} rate"),
            ratios.len(),
            listed(&ratios),
            listed(&calibrations),
        );
    }
    // Single benchmarks still swing on a busy 2-core machine: the suite-wide geometric mean is
    // the steadier figure.
    if !log_ratios.is_empty() {
        let (geomean, calibration) = (mean(&log_ratios).exp(), mean(&log_calibrations).exp());
        println!(
            "{:<40} ratio {geomean:.3} over {} benchmarks (A/A {calibration:.3})  target >= 0.99: {}",
            "suite: geometric mean of the rate ratios",
            log_ratios.len(),
            if geomean >= 0.99 { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

/// The benchmark's name and mean train rate from its `.data` file, when voir ran it (torchrun
/// benchmarks have no bare twin).
fn read_run(path: &Path) -> anyhow::Result<Option<(String, f64)>> {
    let mut rates = Vec::new();
    let (mut name, mut voir) = (String::new(), false);
    for line in fs_err::read_to_string(path)?.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match record["event"].as_str() {
            Some("config") => {
                name = record["data"]["name"].as_str().unwrap_or("?").to_string();
            }
            Some("start") => {
                voir = record["data"]["command"][0]
                    .as_str()
                    .is_some_and(|c| c.ends_with("/voir"));
            }
            Some("data") if record["data"]["task"] == "train" => {
                if let Some(rate) = record["data"]["rate"].as_f64() {
                    rates.push(rate);
                }
            }
            _ => {}
        }
    }
    Ok((voir && !rates.is_empty()).then(|| (name, mean(&rates))))
}

/// The process milabench plans for a benchmark, to be started without voir.
struct BareTwin {
    python: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: String,
}

/// The bare twin of benchmark `name`: its planned process (`milabench run --dry-run=json`, smoke
/// fidelity) with `voir --config FILE` replaced by the venv's Python.
fn bare_twin(root: &Path, bin: &Path, base: &Path, name: &str) -> anyhow::Result<BareTwin> {
    let output = smoke_run(root, bin, base)
        .args(["--dry-run=json", "--select", name])
        .output()
        .with_context(|| format!("could not start milabench run --dry-run for {name}"))?;
    anyhow::ensure!(
        output.status.success(),
        "milabench run --dry-run=json --select {name} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let plans: Value = serde_json::from_slice(&output.stdout)?;
    let process = &plans[0]["processes"][0];
    let argv: Vec<String> = process["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let voir = argv
        .first()
        .filter(|program| program.ends_with("/voir"))
        .with_context(|| format!("{name}: the planned command is not voir's: {argv:?}"))?;
    let mut args = Vec::new();
    let mut rest = argv[1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--config" {
            rest.next();
        } else {
            args.push(arg.clone());
        }
    }
    let env = process["env"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect();
    Ok(BareTwin {
        python: voir.replace("/bin/voir", "/bin/python"),
        args,
        env,
        cwd: process["cwd"].as_str().unwrap_or(".").to_string(),
    })
}

impl BareTwin {
    /// Runs the twin once and returns the mean of the train rates it prints.
    fn rate(&self) -> anyhow::Result<Option<f64>> {
        let output = Command::new(&self.python)
            .args(&self.args)
            .envs(&self.env)
            .env_remove("DATA_FD")
            .current_dir(&self.cwd)
            .output()
            .with_context(|| format!("could not start {}", self.python))?;
        let rates: Vec<f64> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|r| r["task"] == "train")
            .filter_map(|r| r["rate"].as_f64())
            .collect();
        Ok((!rates.is_empty()).then(|| mean(&rates)))
    }
}

/// Runs benchmark `name` once more under milabench (smoke fidelity, setup already done) in
/// `base` and returns its mean train rate.
fn rerun(root: &Path, bin: &Path, base: &Path, name: &str, round: usize) -> anyhow::Result<f64> {
    let run_name = format!("round{round}-{name}");
    let status = smoke_run(root, bin, base)
        .env("UV_CACHE_DIR", crate::e2e::user_uv_cache())
        .arg("--no-setup")
        .args(["--run-name", &run_name, "--select", name])
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("could not start milabench run for {name}"))?;
    anyhow::ensure!(
        status.success(),
        "milabench run --select {name} failed ({status})"
    );
    for entry in fs_err::read_dir(base.join("runs").join(&run_name))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "data")
            && let Some((found, rate)) = read_run(&path)?
            && found == name
        {
            return Ok(rate);
        }
    }
    anyhow::bail!("milabench run --select {name} recorded no rate for {name}")
}

/// `milabench --base BASE run --config SUITE --fidelity smoke`, started in the repository.
fn smoke_run(root: &Path, bin: &Path, base: &Path) -> Command {
    let mut command = Command::new(bin);
    command
        .arg("--base")
        .arg(base)
        .args(["run", "--config", crate::e2e::SUITE, "--fidelity", "smoke"])
        .current_dir(root);
    command
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}
