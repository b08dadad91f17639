//! `cargo xtask ci`: every check a change must pass, in the order that fails fastest.

use std::process::Command;

use anyhow::{Context, bail};

/// Runs one cargo step and fails with its name if it fails.
fn cargo(step: &str, args: &[&str]) -> anyhow::Result<()> {
    eprintln!("==> {step}: cargo {}", args.join(" "));
    let status = Command::new(env!("CARGO"))
        .args(args)
        .status()
        .with_context(|| format!("could not start cargo for step `{step}`"))?;
    if !status.success() {
        bail!("step `{step}` failed ({status})");
    }
    Ok(())
}

/// Runs the whole CI sequence.
pub fn run() -> anyhow::Result<()> {
    cargo("format", &["fmt", "--all", "--check"])?;
    cargo(
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
    )?;
    cargo(
        "tests",
        &[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--profile",
            "ci",
        ],
    )?;
    eprintln!("==> ci: all steps passed");
    Ok(())
}
