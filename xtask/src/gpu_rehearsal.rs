//! `cargo xtask gpu-rehearsal`: the GPU device run, rehearsed on this CPU machine so that on
//! the lent GPU only GPU code can fail.
//!
//! 1. `xtask/gpu/pack.sh` builds the pack exactly as for the GPU (stripped release binaries, the
//!    wheelhouse of what the lent image lacks), for this machine's Python version;
//! 2. the working tree plus `.gpu/` must stay under [`CARRY_LIMIT_MIB`] (what the device tool
//!    carries);
//! 3. a stand-in for the image's Python is made in `target/gpu-rehearsal/site`: a venv holding
//!    the part of the suite's closure the image is counted on for (`.gpu/image-provides.txt`,
//!    torch included), from the package index through the shared uv cache; kept between runs
//!    while that list is unchanged;
//! 4. `xtask/gpu/run.sh` runs from the pack over that interpreter, offline from the wheelhouse,
//!    with the CPU suite, a stand-in `nvidia-smi` (`xtask/gpu/rehearsal/nvidia-smi`) first on
//!    `PATH`, the suite's steps on the CPU (`SUITE_ARCH=cpu`) and benchit and the operators on
//!    the CPU; every step must pass, none may be skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::ci::run_command;

/// The most the working tree and `.gpu/` may weigh together: the device tool carries 64 MiB.
const CARRY_LIMIT_MIB: f64 = 60.0;

/// What the rehearsal runs of the CPU suite (the cheapest benchmarks: the e2e runs the rest).
const FIRST_WAVE: &str = "flops,opbench";

/// Runs the rehearsal.
pub fn run() -> anyhow::Result<()> {
    let root = crate::e2e::repo_root();
    let work = root.join("target/gpu-rehearsal");
    std::fs::create_dir_all(&work).context("could not make target/gpu-rehearsal")?;
    let uv = crate::e2e::uv_in(&work.join("tools"))?;
    let python = python_version()?;
    eprintln!("==> gpu-rehearsal: xtask/gpu/pack.sh for Python {python}");
    run_command(
        "gpu pack",
        Command::new("bash")
            .arg(root.join("xtask/gpu/pack.sh"))
            .env("TARGET_PYTHON", &python)
            .env("UV", &uv)
            .env("UV_CACHE_DIR", crate::e2e::user_uv_cache())
            .current_dir(&root),
    )?;
    let mib = carried_mib(&root)?;
    eprintln!("==> gpu-rehearsal: the working tree and .gpu/ weigh {mib:.1} MiB");
    if mib > CARRY_LIMIT_MIB {
        bail!(
            "the working tree and .gpu/ weigh {mib:.1} MiB, over the {CARRY_LIMIT_MIB} MiB the device run may carry: shrink the wheelhouse (xtask/gpu/image-packages.txt) or the tree"
        );
    }
    let site = stand_in_python(&root, &work, &uv)?;
    let out = work.join("out");
    let base = work.join("base");
    for folder in [&out, &base] {
        let _ = std::fs::remove_dir_all(folder);
    }
    let path = format!(
        "{}:{}",
        root.join("xtask/gpu/rehearsal").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    eprintln!(
        "==> gpu-rehearsal: xtask/gpu/run.sh over {}",
        site.display()
    );
    let status = Command::new("bash")
        .arg(root.join("xtask/gpu/run.sh"))
        .arg(&out)
        .current_dir(&root)
        .env("PATH", path)
        .env("PYTHON", &site)
        .env("BASE", &base)
        .env("CONFIG", root.join("config/cpu.yaml"))
        .env("FIRST", FIRST_WAVE)
        .env("FIDELITIES", "")
        .env("SUITE_ARCH", "cpu")
        .env("BENCHIT_DEVICE", "x86")
        .env("OPS_DEVICE", "cpu")
        .env(
            "OPS_CONFIG",
            root.join("benchmarks/opbench/configs/simple_add.json"),
        )
        .env("OPS_WARMUP", "2")
        .env("OPS_ITERATIONS", "5")
        .env("BUDGET_S", "1500")
        .env("UV_CACHE_DIR", crate::e2e::user_uv_cache())
        .status()
        .context("could not start xtask/gpu/run.sh")?;
    let steps = std::fs::read_to_string(out.join("steps.txt"))
        .context("xtask/gpu/run.sh wrote no steps.txt")?;
    let problems = problems(&steps);
    if !status.success() || !problems.is_empty() {
        bail!(
            "the device script's rehearsal failed ({status}); its outputs are in {}:\n{}",
            out.display(),
            problems.join("\n")
        );
    }
    if !out.join("all.tar.gz").is_file() {
        bail!("the device script wrote no all.tar.gz in {}", out.display());
    }
    eprintln!("==> gpu-rehearsal: {} steps passed", steps.lines().count());
    Ok(())
}

/// The lines of `steps.txt` that fail the rehearsal: a step that failed or was skipped for the
/// budget (a step the machine cannot run, such as Nsight without its tools, says `not run`).
fn problems(steps: &str) -> Vec<&str> {
    steps
        .lines()
        .filter(|line| {
            let mut words = line.split_whitespace().skip(1);
            match words.next() {
                Some("exit") => words.next() != Some("0"),
                Some("skipped:") => true,
                _ => false,
            }
        })
        .collect()
}

/// `major.minor` of `python3`.
fn python_version() -> anyhow::Result<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .context("could not run python3")?;
    if !out.status.success() {
        bail!("python3 could not tell its version");
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The stand-in for the image's Python: a venv with `.gpu/image-provides.txt` installed,
/// remade only when that list changes. Returns its interpreter.
fn stand_in_python(root: &Path, work: &Path, uv: &Path) -> anyhow::Result<PathBuf> {
    let provides = std::fs::read_to_string(root.join(".gpu/image-provides.txt"))
        .context("pack.sh wrote no .gpu/image-provides.txt")?;
    let site = work.join("site");
    let marker = site.join(".provides");
    let python = site.join("bin/python");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(provides.as_str()) {
        return Ok(python);
    }
    eprintln!(
        "==> gpu-rehearsal: the stand-in for the image's Python in {}",
        site.display()
    );
    let _ = std::fs::remove_dir_all(&site);
    run_command(
        "stand-in venv",
        Command::new(uv)
            .args(["venv", "--quiet", "--seed", "--python", "python3"])
            .arg(&site),
    )?;
    run_command(
        "stand-in packages",
        Command::new(uv)
            .args(["pip", "install", "--quiet", "--python"])
            .arg(&python)
            .arg("-r")
            .arg(root.join(".gpu/image-provides.txt"))
            .env("UV_CACHE_DIR", crate::e2e::user_uv_cache()),
    )?;
    std::fs::write(&marker, provides).context("could not mark the stand-in ready")?;
    Ok(python)
}

/// MiB of what the device tool carries: the files git tracks or would track, and `.gpu/`.
fn carried_mib(root: &Path) -> anyhow::Result<f64> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .context("could not run git ls-files")?;
    if !out.status.success() {
        bail!("git ls-files failed");
    }
    let mut bytes: u64 = out
        .stdout
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .filter_map(|name| {
            std::fs::metadata(root.join(String::from_utf8_lossy(name).as_ref())).ok()
        })
        .map(|meta| meta.len())
        .sum();
    bytes += folder_bytes(&root.join(".gpu"));
    Ok(bytes as f64 / (1024.0 * 1024.0))
}

fn folder_bytes(folder: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => folder_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::problems;

    /// A failed or skipped step fails the rehearsal; passed steps and those the machine cannot
    /// run do not.
    #[test]
    fn problems_are_the_failed_and_skipped_steps() {
        let steps = "sysinfo                  exit 0       1s  milabench sysinfo\n\
                     install                  exit 1      20s  milabench install\n\
                     benchit                  skipped: 10 s of the budget left, it needs about 40 s\n\
                     benchit-ops-ncu          not run: no ncu here, or no GPU\n";
        assert_eq!(
            problems(steps),
            [
                "install                  exit 1      20s  milabench install",
                "benchit                  skipped: 10 s of the budget left, it needs about 40 s",
            ]
        );
    }
}
