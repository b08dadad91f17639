//! Install speed, with the debug `milabench` binary on throwaway projects:
//!
//! - the second `install` of an unchanged suite (fingerprint check only), against the start-up
//!   of `python3 -c pass`; target under 0.5 s;
//! - with `--torch`: a cold install of a group needing torch from the package index, with uv and
//!   with pip (each with an empty cache of its own), and uv again with its cache warm (a second
//!   environment needing torch). These download gigabytes; they are opt-in.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Runs the measurements and prints their lines of the table.
pub fn run(torch: bool) -> anyhow::Result<()> {
    eprintln!("==> bench: install (building the debug milabench binary)");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--bin", "milabench"])
        .current_dir(&root)
        .status()
        .context("could not start cargo")?;
    if !status.success() {
        bail!("building milabench failed");
    }
    let bin = super::target_dir().join("debug/milabench");
    let work = tempfile::tempdir()?;

    // Second install of an unchanged suite.
    let tiny = work.path().join("tiny");
    let wheels = tiny.join("wheels");
    for (name, version) in [("voir", "0.2.99"), ("tinydep", "1.0")] {
        check(
            Command::new("python3")
                .arg(root.join("tests/fixtures/install/make_wheel.py"))
                .arg(&wheels)
                .args([name, version]),
        )?;
    }
    let find_links = format!("[--no-index, --find-links, {}]", wheels.display());
    project(&tiny, "tinydep\n", Some(&find_links))?;
    let base = tiny.join("base");
    check(&mut install(&bin, &tiny, &base, &[]))?;
    let second = median(5, || check(&mut install(&bin, &tiny, &base, &[])))?;
    let python = median(5, || check(Command::new("python3").args(["-c", "pass"])))?;
    line(
        "install: second call, unchanged suite",
        second,
        "python3 -c pass",
        python,
        Some(Duration::from_millis(500)),
    );

    if torch {
        // uv as bootstrapped above, so the cold figures exclude the bootstrap.
        let uv_dir = base.join("tools/uv/bin");
        let path = format!(
            "{}:{}",
            uv_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let heavy = work.path().join("torch");
        project(&heavy, "torch\n", None)?;
        let uv_base = heavy.join("base-uv");
        let pip_base = heavy.join("base-pip");
        eprintln!("==> bench: install torch with uv, cold cache (downloads about 3 GB)");
        let uv_cold = timed(|| check(install(&bin, &heavy, &uv_base, &[]).env("PATH", &path)))?;
        eprintln!("==> bench: install torch with uv again, warm cache (--force)");
        let uv_warm =
            timed(|| check(install(&bin, &heavy, &uv_base, &["--force"]).env("PATH", &path)))?;
        eprintln!("==> bench: install torch with pip, cold cache (downloads about 3 GB)");
        let pip_cold = timed(|| {
            check(&mut install(
                &bin,
                &heavy,
                &pip_base,
                &["--installer", "pip"],
            ))
        })?;
        line(
            "install: torch group, uv, cold cache",
            uv_cold,
            "pip, cold cache",
            pip_cold,
            None,
        );
        line(
            "install: torch group, uv, warm cache",
            uv_warm,
            "uv, cold cache",
            uv_cold,
            None,
        );
    }
    Ok(())
}

/// A project with one enabled benchmark `b` in install group `g`.
fn project(dir: &Path, requirements: &str, pip_args: Option<&str>) -> anyhow::Result<()> {
    fs_err::create_dir_all(dir.join("b"))?;
    fs_err::write(dir.join("b/requirements.in"), requirements)?;
    let mut suite = String::from(
        "b:\n  inherits: _defaults\n  enabled: true\n  tags: [monogpu]\n  definition: b\n  install_group: g\n",
    );
    if let Some(args) = pip_args {
        suite.push_str(&format!("  pip:\n    args: {args}\n"));
    }
    fs_err::write(dir.join("suite.yaml"), suite)?;
    Ok(())
}

fn install(bin: &Path, dir: &Path, base: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .args([
            "install",
            "--arch",
            "cpu",
            "--config",
            "suite.yaml",
            "--base",
        ])
        .arg(base)
        .args(args);
    cmd
}

/// A fresh venv of this machine's Python for a peer tool of a bench, made by a uv bootstrapped
/// into its own folder and sharing the user's uv cache (as `cargo xtask e2e` does).
pub(super) struct ScratchVenv {
    /// The bootstrapped uv.
    uv: std::path::PathBuf,
    /// The user's uv cache.
    pub cache: std::path::PathBuf,
    /// The venv's `python`.
    pub python: std::path::PathBuf,
}

impl ScratchVenv {
    /// Makes an empty venv at `venv` (removing what was there), with uv bootstrapped in `tools`.
    pub fn create(venv: &Path, tools: &Path) -> anyhow::Result<ScratchVenv> {
        let path = std::env::var("PATH").ok();
        let python = milabench_env::Python::find(None, path.as_deref())?;
        let scratch = ScratchVenv {
            uv: crate::e2e::uv_in(tools)?,
            cache: crate::e2e::user_uv_cache(),
            python: venv.join("bin/python"),
        };
        if venv.exists() {
            fs_err::remove_dir_all(venv)?;
        }
        check(
            scratch
                .uv(&["venv", "--quiet", "--python", python.executable.as_str()])
                .arg(venv),
        )?;
        Ok(scratch)
    }

    /// `uv ARGS` with the shared cache.
    pub fn uv(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.uv);
        cmd.env("UV_CACHE_DIR", &self.cache).args(args);
        cmd
    }

    /// `uv pip install ARGS` into the venv.
    pub fn install(&self, args: &[&str]) -> Command {
        let python = self.python.to_string_lossy();
        self.uv(&[&["pip", "install", "--python", &python], args].concat())
    }
}

/// Runs `cmd`, which must succeed; its output is in the error when it does not.
pub(super) fn check(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn timed(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

fn median(n: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let mut times = (0..n)
        .map(|_| timed(&mut f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    times.sort();
    Ok(times[n / 2])
}

fn line(
    name: &str,
    value: Duration,
    baseline_name: &str,
    baseline: Duration,
    target: Option<Duration>,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let verdict = match target {
        Some(t) => format!(
            "  target < {} ms: {}",
            t.as_millis(),
            if value < t { "met" } else { "NOT met" }
        ),
        None => String::new(),
    };
    println!(
        "{name:<40} {:>9.2} ms  baseline ({baseline_name}) {:>9.2} ms  ratio {:>5.2}x{verdict}",
        ms(value),
        ms(baseline),
        ms(value) / ms(baseline),
    );
}
