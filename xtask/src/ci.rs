//! `cargo xtask ci`: every check a change must pass, in the order that fails fastest.

use std::process::Command;

use anyhow::{Context, bail};

/// Runs one cargo step and fails with its name if it fails.
fn cargo(step: &str, args: &[&str]) -> anyhow::Result<()> {
    cargo_with(step, args, &[])
}

/// Like [`cargo`], with environment variables.
fn cargo_with(step: &str, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<()> {
    eprintln!("==> {step}: cargo {}", args.join(" "));
    let status = Command::new(env!("CARGO"))
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("could not start cargo for step `{step}`"))?;
    if !status.success() {
        bail!("step `{step}` failed ({status})");
    }
    Ok(())
}

/// A cargo step: its name, arguments and environment.
type CargoStep = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The cargo steps CI starts with, in the order that fails fastest.
const CARGO_STEPS: &[CargoStep] = &[
    ("format", &["fmt", "--all", "--check"], &[]),
    (
        "clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    ),
    (
        "tests",
        &[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--profile",
            "ci",
        ],
        &[],
    ),
    // nextest runs no doctests: the examples of the docs run here, their assertions included.
    (
        "doctests",
        &["test", "--doc", "--workspace", "--locked"],
        &[],
    ),
    // The public API is documented: rustdoc's warnings (broken links...) fail the run.
    (
        "docs",
        &["doc", "--no-deps", "--workspace", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    ),
];

/// Runs the whole CI sequence.
pub fn run() -> anyhow::Result<()> {
    for (step, args, env) in CARGO_STEPS {
        cargo_with(step, args, env)?;
    }
    store_on_postgres()?;
    dashboard_tests()?;
    cluster_tests()?;
    slurm_tests()?;
    benchmate_tests()?;
    examples()?;
    browser()?;
    eprintln!("==> e2e: install, prepare, smoke run and report of the CPU suite");
    crate::e2e::run(&crate::e2e::E2eArgs::default())?;
    // After the e2e, whose environments fill the uv cache the stand-in Python installs from.
    crate::gpu_rehearsal::run()?;
    eprintln!("==> ci: all steps passed");
    Ok(())
}

/// The facade's embedding examples, in a scratch folder.
pub fn examples() -> anyhow::Result<()> {
    eprintln!("==> examples: the facade embedded as another tool would");
    let scratch = tempfile::tempdir().context("could not make a scratch folder")?;
    crate::examples::run(scratch.path())
}

/// The HTML reports of the fixture run folders checked in headless chromium (see
/// `xtask::browser`).
pub fn browser() -> anyhow::Result<()> {
    eprintln!("==> browser: HTML reports in headless chromium");
    let root = crate::e2e::repo_root();
    let bin = crate::e2e::build(&root)?;
    xtask::browser::check_fixture_pages(&root, &bin)
}

/// The results store's tests again, on a throwaway PostgreSQL server (`cargo xtask pg up`),
/// required to run: the same suite as on SQLite. The server is stopped even when they fail.
fn store_on_postgres() -> anyhow::Result<()> {
    use milabench_store::harness::{TEST_PG_REQUIRED, TEST_PG_URL};
    eprintln!("==> store on PostgreSQL: cargo xtask pg up");
    let url = crate::pg::up()?;
    let args = [
        "nextest",
        "run",
        "--package",
        "milabench-store",
        "--locked",
        "--profile",
        "ci",
        "-E",
        "test(/postgres::/)",
    ];
    eprintln!("==> store on PostgreSQL: cargo {}", args.join(" "));
    let tests = Command::new(env!("CARGO"))
        .args(args)
        .env(TEST_PG_URL, &url)
        .env(TEST_PG_REQUIRED, "1")
        .status()
        .context("could not start cargo for the PostgreSQL tests");
    let stopped = crate::pg::down();
    let status = tests?;
    stopped?;
    if !status.success() {
        bail!("step `store on PostgreSQL` failed ({status})");
    }
    Ok(())
}

/// The tests of `--publish` against the real dashboard server (`cargo xtask dashboard up`,
/// `tests/it/publish.rs`'s ignored tests), stopped even when they fail.
fn dashboard_tests() -> anyhow::Result<()> {
    use milabench_store::harness::TEST_DASHBOARD_URL;
    eprintln!("==> dashboard: cargo xtask dashboard up");
    let url = crate::dashboard::up()?;
    let tests = cargo_with(
        "publish to the real dashboard",
        &ignored_tests("publish::"),
        &[(TEST_DASHBOARD_URL, &url)],
    );
    let stopped = crate::dashboard::down();
    tests?;
    stopped
}

/// The multi-node tests against the real two-node harness (`tests/it/multinode.rs`, ignored
/// by default because they need root); where the harness cannot run, says why they are skipped.
fn cluster_tests() -> anyhow::Result<()> {
    if let Some(why) = xtask::cluster::unavailable() {
        eprintln!("==> multinode: SKIPPED, {why}");
        return Ok(());
    }
    cargo("multinode", &ignored_tests("multinode::"))
}

/// `cargo nextest` of the CLI tests under `filter` that are ignored by default (they need
/// root and a harness).
fn ignored_tests(filter: &str) -> [&str; 10] {
    [
        "nextest",
        "run",
        "--locked",
        "--profile",
        "ci",
        "--test",
        "it",
        "--run-ignored",
        "only",
        filter,
    ]
}

/// The Slurm tests (`tests/it/slurm.rs`, ignored by default
/// because they need root) against one harness cluster (`cargo xtask slurm up`) that they
/// share through its `SLURM_CONF`; torn down even when they fail. Where the harness cannot
/// run, says why they are skipped.
fn slurm_tests() -> anyhow::Result<()> {
    use xtask::slurm::{Slurm, TEST_SLURM_CONF, unavailable};
    if let Some(why) = unavailable() {
        eprintln!("==> slurm: SKIPPED, {why}");
        return Ok(());
    }
    eprintln!("==> slurm: cargo xtask slurm up");
    let slurm = Slurm::up()?;
    let conf = slurm.conf().display().to_string();
    cargo_with(
        "slurm",
        &ignored_tests("slurm::"),
        &[(TEST_SLURM_CONF, &conf)],
    )
}

/// benchmate's pytest suite, in a small venv without torch (`target/benchmate-tests-venv`:
/// pytest and voir from the package index, installed once and kept).
fn benchmate_tests() -> anyhow::Result<()> {
    let root = crate::e2e::repo_root();
    let venv = root.join("target/benchmate-tests-venv");
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    if !ready.exists() {
        eprintln!("==> benchmate: making {}", venv.display());
        let _ = std::fs::remove_dir_all(&venv);
        run_command(
            "benchmate venv",
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
        )?;
        run_command(
            "benchmate venv",
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "pytest",
                "voir>=0.2.19",
            ]),
        )?;
        std::fs::write(&ready, "pytest voir\n").context("could not mark the venv ready")?;
    }
    eprintln!("==> benchmate, the pack host and the device script's side-by-side: pytest");
    run_command(
        "benchmate tests",
        Command::new(&python)
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "benchmarks/_benchmate/tests",
                "benchmarks/_packhost/tests",
                "xtask/gpu/tests",
            ])
            .current_dir(&root),
    )
}

/// Runs `command` and fails with `step` when it fails.
pub(crate) fn run_command(step: &str, command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("could not start step `{step}`"))?;
    if !status.success() {
        bail!("step `{step}` failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 38, item 20: nextest skips doctests and CI had no `cargo test --doc`, so the
    /// assertions of the docs' examples never ran.
    #[test]
    fn ci_runs_the_doctests_that_nextest_skips() {
        let doctests = CARGO_STEPS
            .iter()
            .find(|(_, args, _)| args.starts_with(&["test", "--doc"]));
        assert!(
            doctests.is_some_and(|(_, args, _)| args.contains(&"--workspace")),
            "{CARGO_STEPS:?}"
        );
    }
}
