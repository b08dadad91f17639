//! The CPU suite end to end: wall time of `install` (warm), `prepare`, `run --fidelity smoke`
//! and `report` (the e2e flow), then each benchmark's mean rate under milabench next to the
//! same script, arguments and environment run bare with the venv's Python (no voir, no
//! milabench; rates read from its stdout). The two alternate for a number of rounds (the e2e
//! run is the first round under milabench; later rounds run `milabench run --select NAME`) and
//! the medians are compared, because a single smoke run swings by tens of percent on a busy
//! 2-core machine. torchrun benchmarks have no bare twin and are left out of the ratio.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::Value;

/// Runs the measurement and prints its lines of the table; `rounds` runs per side.
pub fn run(rounds: usize) -> anyhow::Result<()> {
    eprintln!("==> bench: suite (the smoke CPU suite end to end, then each benchmark bare)");
    let root = crate::e2e::repo_root();
    let bin = crate::e2e::build(&root)?;
    let base = tempfile::Builder::new()
        .prefix("milabench-bench-suite-")
        .tempdir()?;
    let timings = crate::e2e::flow(&root, &bin, base.path(), &[])?;
    let total: f64 = timings.iter().map(|(_, s)| s).sum();
    let steps: Vec<String> = timings
        .iter()
        .map(|(step, s)| format!("{step} {s:.0} s"))
        .collect();
    println!(
        "{:<40} {total:.0} s ({})",
        "suite: smoke CPU suite end to end",
        steps.join(", ")
    );
    let mut log_ratios = Vec::new();
    for entry in fs_err::read_dir(base.path().join("runs/e2e"))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "data") {
            continue;
        }
        let Some((name, first_under, command, env)) = read_run(&path)? else {
            continue;
        };
        let (mut under, mut bare) = (vec![first_under], Vec::new());
        for round in 0..rounds.max(1) {
            if round > 0 {
                under.push(rerun(&root, &bin, base.path(), &name, round)?);
            }
            match bare_rate(&command, &env)? {
                Some(rate) => bare.push(rate),
                None => break,
            }
        }
        if bare.is_empty() {
            continue;
        }
        let (under_median, bare_median) = (median(&mut under), median(&mut bare));
        let ratio = under_median / bare_median;
        log_ratios.push(ratio.ln());
        println!(
            "{:<40} ratio {ratio:.3}: {under_median:.3} under milabench vs {bare_median:.3} bare (medians of {} and {} runs)  target >= 0.99: {}",
            format!("suite: {name} rate"),
            under.len(),
            bare.len(),
            if ratio >= 0.99 { "met" } else { "NOT met" }
        );
    }
    // Single benchmarks still swing on a busy 2-core machine: the suite-wide geometric mean is
    // the steadier figure.
    if !log_ratios.is_empty() {
        let geomean = (log_ratios.iter().sum::<f64>() / log_ratios.len() as f64).exp();
        println!(
            "{:<40} ratio {geomean:.3} over {} benchmarks  target >= 0.99: {}",
            "suite: geometric mean of the rate ratios",
            log_ratios.len(),
            if geomean >= 0.99 { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

type RunFacts = (String, f64, Vec<String>, BTreeMap<String, String>);

/// The benchmark's name, mean train rate, command and environment from its `.data` file.
fn read_run(path: &Path) -> anyhow::Result<Option<RunFacts>> {
    let mut rates = Vec::new();
    let (mut name, mut command, mut env) = (String::new(), Vec::new(), BTreeMap::new());
    for line in fs_err::read_to_string(path)?.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match record["event"].as_str() {
            Some("config") => {
                name = record["data"]["name"].as_str().unwrap_or("?").to_string();
                let config = serde_json::to_string(&record["data"])?;
                env.insert("MILABENCH_CONFIG".into(), config);
                if let Some(stop) = record["data"]["voir"]["options"]["stop"].as_i64() {
                    env.insert("VOIR_EARLYSTOP_COUNT".into(), stop.to_string());
                }
            }
            Some("start") => {
                command = record["data"]["command"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
            }
            Some("data") if record["data"]["task"] == "train" => {
                if let Some(rate) = record["data"]["rate"].as_f64() {
                    rates.push(rate);
                }
            }
            _ => {}
        }
    }
    if rates.is_empty() || command.first().is_none_or(|c| !c.ends_with("/voir")) {
        return Ok(None);
    }
    Ok(Some((name, mean(&rates), command, env)))
}

/// Runs the voir command bare (the venv's python on the script, `--config` dropped) and returns
/// the mean of the rates it prints.
fn bare_rate(command: &[String], env: &BTreeMap<String, String>) -> anyhow::Result<Option<f64>> {
    let python = command[0].replace("/bin/voir", "/bin/python");
    let mut args: Vec<&String> = Vec::new();
    let mut rest = command[1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--config" {
            rest.next();
        } else {
            args.push(arg);
        }
    }
    let script = Path::new(args[0].as_str());
    let output = Command::new(&python)
        .args(&args)
        .envs(env)
        .env_remove("DATA_FD")
        .current_dir(script.parent().unwrap_or(Path::new(".")))
        .output()
        .with_context(|| format!("could not start {python}"))?;
    let rates: Vec<f64> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["task"] == "train")
        .filter_map(|r| r["rate"].as_f64())
        .collect();
    Ok((!rates.is_empty()).then(|| mean(&rates)))
}

/// Runs benchmark `name` once more under milabench (smoke fidelity, setup already done) in
/// `base` and returns its mean train rate.
fn rerun(root: &Path, bin: &Path, base: &Path, name: &str, round: usize) -> anyhow::Result<f64> {
    let run_name = format!("round{round}-{name}");
    let status = Command::new(bin)
        .env("UV_CACHE_DIR", crate::e2e::user_uv_cache())
        .arg("--base")
        .arg(base)
        .args([
            "run",
            "--config",
            crate::e2e::SUITE,
            "--fidelity",
            "smoke",
            "--no-setup",
        ])
        .args(["--run-name", &run_name, "--select", name])
        .current_dir(root)
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
            && let Some((found, rate, _, _)) = read_run(&path)?
            && found == name
        {
            return Ok(rate);
        }
    }
    anyhow::bail!("milabench run --select {name} recorded no rate for {name}")
}

/// The median of `values` (not empty).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}
