//! This machine's programs, as the harnesses need them: finding one, and installing Debian
//! packages with `apt-get` when a harness finds its servers missing (CI starts from a fresh
//! machine).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::bail;

/// Sets the permission bits of `path` to `mode` (`0o755` for a script).
pub fn set_mode(path: &std::path::Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// The first `program` on `PATH`, then in `/usr/sbin` and `/sbin` (daemons live there, and
/// `PATH` may leave them out).
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Installs Debian's `packages` (without recommended ones), running `apt-get update` first
/// only when the install fails (a fresh machine has no package lists yet).
pub fn apt_install(packages: &[&str]) -> anyhow::Result<()> {
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if install() {
        return Ok(());
    }
    let updated = Command::new("apt-get")
        .args(["update", "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !updated || !install() {
        bail!(
            "could not install Debian's {} with apt-get\n  fix: install them as root (apt-get install {}) and run again",
            packages.join(", "),
            packages.join(" ")
        );
    }
    Ok(())
}
