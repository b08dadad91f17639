//! Precision-driven runs against the fixed observation count, on this machine's CPU suite
//! (issue 29): installed and prepared once in a scratch base folder (uv's cache is the user's,
//! as for `cargo xtask e2e`), then three runs back to back: two with the suite's fixed counts
//! (`fixed-a`, `fixed-b`) and one with `--precision PCT` (whose ceiling is the same count).
//! Per benchmark: the observations each process made and the wall time in both, the precision
//! each reached (the report's 95% interval), and whether the precision run stopped early; each
//! time change is printed beside the change between the two fixed runs (the A/A floor: on a busy
//! machine, times swing by tens of percent between identical runs). Then the
//! A/A false-verdict rate: `compare fixed-a fixed-b`, two runs of the same machine, should say
//! "cannot tell" for every benchmark; every "better" or "worse" is a false verdict.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::Value;

use crate::e2e::{SUITE, build, json_output, milabench_step, repo_root};

/// What one benchmark did in one run.
#[derive(Debug, Default)]
struct BenchRun {
    /// The most rates any of its processes reported.
    observations: usize,
    /// From its first process's start to its last one's end, seconds.
    seconds: f64,
    /// The precision stop ended it.
    stopped_precise: bool,
}

/// Runs the measurement and prints its lines of the table: `target_pct` for `--precision`,
/// `fidelity` for every run (the suite's own counts when `None`), the benchmarks of `select`
/// (all when empty).
pub fn run(target_pct: f64, fidelity: Option<&str>, select: &[String]) -> anyhow::Result<()> {
    eprintln!("==> bench: precision (install and prepare of the CPU suite, then three runs of it)");
    let root = repo_root();
    let bin = build(&root)?;
    let base = tempfile::Builder::new()
        .prefix("milabench-bench-precision-")
        .tempdir()?;
    let names = select.join(",");
    let mut selection = vec!["--config", SUITE];
    if !select.is_empty() {
        selection.extend(["--select", names.as_str()]);
    }
    for step in ["install", "prepare"] {
        milabench_step(
            &root,
            &bin,
            base.path(),
            step,
            &[&[step][..], &selection].concat(),
        )?;
    }
    let precision = format!("{target_pct}%");
    let mut walls = BTreeMap::new();
    for (name, extra) in [
        ("fixed-a", &[][..]),
        ("fixed-b", &[][..]),
        ("precise", &["--precision", precision.as_str()][..]),
    ] {
        let mut args = vec!["run", "--no-setup", "--run-name", name];
        args.extend(&selection);
        if let Some(fidelity) = fidelity {
            args.extend(["--fidelity", fidelity]);
        }
        args.extend(extra);
        walls.insert(name, milabench_step(&root, &bin, base.path(), name, &args)?);
    }
    let runs = base.path().join("runs");
    let fixed = bench_runs(&runs.join("fixed-a"))?;
    let again = bench_runs(&runs.join("fixed-b"))?;
    let precise = bench_runs(&runs.join("precise"))?;
    let fixed_precision = reached_precision(&bin, &runs.join("fixed-a"))?;
    let precise_precision = reached_precision(&bin, &runs.join("precise"))?;
    let (mut fixed_total, mut again_total, mut precise_total) = (0.0, 0.0, 0.0);
    for (bench, f) in &fixed {
        let (Some(p), Some(a)) = (precise.get(bench), again.get(bench)) else {
            continue;
        };
        fixed_total += f.seconds;
        again_total += a.seconds;
        precise_total += p.seconds;
        let shown = |map: &BTreeMap<String, f64>| {
            map.get(bench)
                .map_or_else(|| "?".to_owned(), |pct| format!("±{pct:.1}%"))
        };
        println!(
            "{:<40} observations {} -> {} ({}), precision {} -> {}, time {:.1} s -> {:.1} s ({:+.0}%; A/A {:+.0}%)",
            format!("precision {target_pct}%: {bench}"),
            f.observations,
            p.observations,
            if p.stopped_precise {
                "stopped once precise"
            } else {
                "not precise before the fixed count"
            },
            shown(&fixed_precision),
            shown(&precise_precision),
            f.seconds,
            p.seconds,
            (p.seconds / f.seconds - 1.0) * 100.0,
            (a.seconds / f.seconds - 1.0) * 100.0
        );
    }
    let early = precise.values().filter(|p| p.stopped_precise).count();
    println!(
        "{:<40} benchmark time {fixed_total:.0} s -> {precise_total:.0} s ({:+.0}%; A/A: the second fixed run {:+.0}%), run wall time {:.0} s -> {:.0} s; {early} of {} benchmarks stopped early",
        format!("precision {target_pct}%: the suite"),
        (precise_total / fixed_total - 1.0) * 100.0,
        (again_total / fixed_total - 1.0) * 100.0,
        walls["fixed-a"],
        walls["precise"],
        precise.len(),
    );
    // The default noise floor too: what `compare` says without --threshold.
    for threshold in [Some(0.0), Some(target_pct), None] {
        let (false_verdicts, judged) = false_verdicts(&bin, &runs, threshold)?;
        let at = threshold.map_or_else(
            || "the default threshold".to_owned(),
            |pct| format!("--threshold {pct}%"),
        );
        let which = if false_verdicts.is_empty() {
            String::new()
        } else {
            format!(": {}", false_verdicts.join(", "))
        };
        println!(
            "{:<40} {} of {judged} benchmarks judged better or worse ({:.0}%) at {at}{which}  target: 0 (two runs of one machine)",
            "precision: A/A false verdicts",
            false_verdicts.len(),
            100.0 * false_verdicts.len() as f64 / judged.max(1) as f64,
        );
    }
    Ok(())
}

/// Per benchmark of the run folder `dir`: observations, wall time and how it stopped.
fn bench_runs(dir: &Path) -> anyhow::Result<BTreeMap<String, BenchRun>> {
    let mut out: BTreeMap<String, BenchRun> = BTreeMap::new();
    let mut spans: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "data") {
            continue;
        }
        let (mut name, mut rates, mut precise) = (String::new(), 0, false);
        let (mut start, mut end) = (f64::NAN, f64::NAN);
        for line in fs_err::read_to_string(&path)?.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let data = &record["data"];
            match record["event"].as_str() {
                Some("config") => name = data["name"].as_str().unwrap_or("?").to_owned(),
                Some("start") => start = data["time"].as_f64().unwrap_or(f64::NAN),
                Some("end") => end = data["time"].as_f64().unwrap_or(f64::NAN),
                Some("data") if data["task"] == "train" && data["rate"].is_number() => rates += 1,
                Some("message") => {
                    precise |= data["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("within the --precision target"));
                }
                _ => {}
            }
        }
        let bench = out.entry(name.clone()).or_default();
        bench.observations = bench.observations.max(rates);
        bench.stopped_precise |= precise;
        let span = spans
            .entry(name)
            .or_insert((f64::INFINITY, f64::NEG_INFINITY));
        *span = (span.0.min(start), span.1.max(end));
    }
    for (name, (start, end)) in spans {
        if let Some(bench) = out.get_mut(&name) {
            bench.seconds = end - start;
        }
    }
    Ok(out)
}

/// Per benchmark of the run folder `dir`: the half-width of the 95% interval of its perf, percent
/// of it (`milabench report --format json`).
fn reached_precision(bin: &Path, dir: &Path) -> anyhow::Result<BTreeMap<String, f64>> {
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--runs"])
            .arg(dir),
        "milabench report",
    )?;
    Ok(report["benchmarks"]
        .as_array()
        .context("the report has no benchmarks")?
        .iter()
        .filter_map(|row| {
            let perf = row["perf"].as_f64()?;
            let low = row["perf_ci95"]["low"].as_f64()?;
            let high = row["perf_ci95"]["high"].as_f64()?;
            Some((
                row["name"].as_str()?.to_owned(),
                (high - low) / 2.0 / perf * 100.0,
            ))
        })
        .collect())
}

/// `compare fixed-a fixed-b [--threshold PCT]`: the benchmarks judged better or worse (with
/// their verdict), and how many were judged at all.
fn false_verdicts(
    bin: &Path,
    runs: &Path,
    threshold: Option<f64>,
) -> anyhow::Result<(Vec<String>, usize)> {
    // Exit 1 when a benchmark is "worse": read the verdicts whatever the status.
    let output = Command::new(bin)
        .args(["compare", "--format", "json"])
        .args(threshold.map(|pct| format!("--threshold={pct}%")))
        .arg(runs.join("fixed-a"))
        .arg(runs.join("fixed-b"))
        .output()
        .context("could not start milabench compare")?;
    let comparison: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "milabench compare did not print JSON: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let verdicts: Vec<(&str, &str)> = comparison["rows"]
        .as_array()
        .context("the comparison has no rows")?
        .iter()
        .filter_map(|row| Some((row["bench"].as_str()?, row["verdict"].as_str()?)))
        .filter(|(_, v)| matches!(*v, "better" | "worse" | "cannot_tell"))
        .collect();
    let false_verdicts = verdicts
        .iter()
        .filter(|(_, v)| *v != "cannot_tell")
        .map(|(bench, verdict)| format!("{bench} {verdict}"))
        .collect();
    Ok((false_verdicts, verdicts.len()))
}
