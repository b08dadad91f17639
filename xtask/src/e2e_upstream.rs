//! The Python milabench's own benchmarks, from its checkout (`tests/fixtures/upstream/milabench`,
//! commit f5a80277) and unchanged, installed, prepared, run and reported on this CPU: its test
//! benchmark (`tests/config/benchio.yaml`, as the Python tool's tests drive it: install, then
//! run) and, from its CI suite, `fp32` (the flops benchmark) and `resnet50` (torchvision),
//! sized for two cores with `--override`. Every benchmark folder is planned by its
//! `benchfile.py` through the pack host and imports our benchmate.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::bail;

use crate::e2e::{check_report, json_output, milabench_step};

/// The checkout, relative to the repository.
const CHECKOUT: &str = "tests/fixtures/upstream/milabench";

/// Sizes for two cores: the arguments of the Python tool's CI suite scaled down.
const TORCH_OVERRIDES: &[&str] = &[
    "fp32.argv.--m=256",
    "fp32.argv.--n=256",
    "fp32.argv.--number=2",
    "fp32.argv.--repeat=20",
    "resnet50.argv.--batch-size=4",
    "resnet50.argv.--precision=fp32",
    "resnet50.argv.--num-workers=1",
];

/// Runs the Python tool's benchmarks in `base`; returns each step's wall time.
pub fn flow(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let benchio = format!("{CHECKOUT}/tests/config/benchio.yaml");
    // Its suite passes `--batch_size`, which its main.py does not accept (`--batch-size`): the
    // Python tool fails it as well. The argument is left out.
    let no_batch = ["--override", "benchio.argv.--batch_size=null"];
    let mut timings = vec![
        (
            "upstream install (benchio)",
            milabench_step(
                root,
                bin,
                base,
                "install",
                &["install", "--config", &benchio],
            )?,
        ),
        (
            "upstream run (benchio)",
            milabench_step(
                root,
                bin,
                base,
                "run",
                &[
                    &[
                        "run",
                        "--config",
                        &benchio,
                        "--no-setup",
                        "--run-name",
                        "upstream-benchio",
                    ][..],
                    &no_batch[..],
                ]
                .concat(),
            )?,
        ),
    ];
    check(root, bin, &base.join("runs/upstream-benchio"), &["benchio"])?;
    let suite = format!("{CHECKOUT}/config/ci.yaml");
    let mut args = vec![
        "run",
        "--config",
        &suite,
        "--select",
        "fp32,resnet50",
        "--run-name",
        "upstream-torch",
    ];
    for value in TORCH_OVERRIDES {
        args.extend(["--override", value]);
    }
    timings.push((
        "upstream install, prepare and run (fp32, resnet50)",
        milabench_step(root, bin, base, "run", &args)?,
    ));
    check(
        root,
        bin,
        &base.join("runs/upstream-torch"),
        &["fp32", "resnet50"],
    )?;
    Ok(timings)
}

/// The run folder's report holds exactly `benches`, each clean with a rate.
fn check(root: &Path, bin: &Path, runs: &Path, benches: &[&str]) -> anyhow::Result<()> {
    let started = Instant::now();
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--runs"])
            .arg(runs)
            .current_dir(root),
        "milabench report",
    )?;
    let names: Vec<&str> = report["benchmarks"]
        .as_array()
        .map(|b| b.iter().filter_map(|b| b["name"].as_str()).collect())
        .unwrap_or_default();
    if names != benches {
        bail!("{} reports {names:?}, expected {benches:?}", runs.display());
    }
    check_report(&report)?;
    eprintln!(
        "==> e2e: {} reported in {:.1} s",
        runs.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
