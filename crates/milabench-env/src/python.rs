//! The Python interpreter environments are made from: which one, and which version it is.

use std::fmt;

use camino::{Utf8Path, Utf8PathBuf};

use crate::error::EnvError;
use crate::process::query;

/// The oldest Python any environment accepts (torch and voir need it).
pub const MIN_PYTHON: PythonVersion = PythonVersion {
    major: 3,
    minor: 10,
    patch: 0,
};

/// A Python version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonVersion {
    /// Major (3).
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch (0 when not given).
    pub patch: u32,
}

impl PythonVersion {
    /// Parses `3.11`, `3.11.7`, or a lower bound `>=3.11` (the only specifier form accepted).
    pub fn parse(text: &str) -> Option<PythonVersion> {
        let text = text.trim().trim_start_matches(">=").trim();
        let mut parts = text.split('.').map(|p| p.trim().parse::<u32>());
        let major = parts.next()?.ok()?;
        let minor = parts.next().unwrap_or(Ok(0)).ok()?;
        let patch = parts.next().unwrap_or(Ok(0)).ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(PythonVersion {
            major,
            minor,
            patch,
        })
    }
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A probed interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Python {
    /// The real executable (`sys.executable`), shims resolved.
    pub executable: Utf8PathBuf,
    /// Its version.
    pub version: PythonVersion,
    /// The version of torch it has installed, if any (read from the package metadata, without
    /// importing torch).
    pub torch: Option<String>,
    /// Its `site-packages` folders (`site.getsitepackages()`).
    pub site_packages: Vec<Utf8PathBuf>,
}

/// Prints the version, the real executable, the `site-packages` folders (joined with `:`) and
/// torch's version (an empty line without torch).
const PROBE: &str = "import os, site, sys; v = sys.version_info; print('%d.%d.%d' % (v[0], v[1], v[2])); print(sys.executable); print(os.pathsep.join(site.getsitepackages()))\n\
try:\n    from importlib.metadata import version; print(version('torch'))\n\
except Exception:\n    print()";

impl Python {
    /// Finds the interpreter: `explicit` (a path, or a name looked up on `path_var`) when given,
    /// else `python3` on `path_var`; then asks it for its version and real executable.
    pub fn find(explicit: Option<&Utf8Path>, path_var: Option<&str>) -> Result<Python, EnvError> {
        let wanted = explicit.unwrap_or(Utf8Path::new("python3"));
        let program = if wanted.components().count() > 1 {
            if !wanted.is_file() {
                return Err(EnvError::PythonNotFound {
                    tried: wanted.to_string(),
                    reason: "does not exist".into(),
                });
            }
            wanted.to_path_buf()
        } else {
            find_on_path(wanted.as_str(), path_var).ok_or_else(|| EnvError::PythonNotFound {
                tried: wanted.to_string(),
                reason: "is not on PATH".into(),
            })?
        };
        let out = query(program.as_std_path(), &["-c", PROBE]).ok_or_else(|| {
            EnvError::PythonNotFound {
                tried: program.to_string(),
                reason: "does not run as a Python interpreter".into(),
            }
        })?;
        let mut lines = out.lines();
        let version = lines.next().and_then(PythonVersion::parse);
        let executable = lines.next().filter(|e| !e.is_empty());
        let site_packages = lines
            .next()
            .unwrap_or("")
            .split(':')
            .filter(|p| !p.is_empty())
            .map(Utf8PathBuf::from)
            .collect();
        let torch = lines
            .next()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        match (version, executable) {
            (Some(version), Some(executable)) => Ok(Python {
                executable: executable.into(),
                version,
                torch,
                site_packages,
            }),
            _ => Err(EnvError::PythonNotFound {
                tried: program.to_string(),
                reason: "did not report its version".into(),
            }),
        }
    }

    /// Fails when this interpreter is older than `needed` for `group`.
    pub fn check(&self, group: &str, needed: PythonVersion) -> Result<(), EnvError> {
        if self.version < needed {
            return Err(EnvError::PythonTooOld {
                group: group.to_string(),
                python: self.executable.clone(),
                found: self.version.to_string(),
                needed: format!("{}.{}", needed.major, needed.minor),
            });
        }
        Ok(())
    }
}

/// The first executable file called `name` in the folders of `path_var` (a `PATH` value).
pub fn find_on_path(name: &str, path_var: Option<&str>) -> Option<Utf8PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path_var?
        .split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| Utf8Path::new(dir).join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        let v = PythonVersion::parse(">=3.11").expect("parses");
        assert_eq!(v.to_string(), "3.11.0");
        assert!(PythonVersion::parse("3.10.4").expect("parses") < v);
        assert!(PythonVersion::parse("3.x").is_none());
        assert!(PythonVersion::parse("3.1.2.3").is_none());
    }

    #[test]
    fn missing_interpreter_is_named() {
        let err = Python::find(
            Some(Utf8Path::new("python-does-not-exist")),
            Some("/nonexistent"),
        )
        .expect_err("not found");
        assert!(err.to_string().contains("python-does-not-exist"), "{err}");
        let err = Python::find(Some(Utf8Path::new("/no/such/python")), None).expect_err("absent");
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn the_probe_reads_torch_s_version() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        let fake = |name: &str, torch_line: &str| {
            let path = root.join(name);
            fs_err::write(
                &path,
                format!(
                    "#!/bin/sh\nprintf '3.11.7\\n/opt/site/bin/python3\\n/opt/a:/opt/b\\n{torch_line}'\n"
                ),
            )
            .expect("write");
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            Python::find(Some(&path), None).expect("probed")
        };
        let with = fake("with-torch", "2.5.1+cu124\\n");
        assert_eq!(with.torch.as_deref(), Some("2.5.1+cu124"));
        assert_eq!(with.executable, "/opt/site/bin/python3");
        assert_eq!(with.site_packages, ["/opt/a", "/opt/b"]);
        assert_eq!(fake("without-torch", "\\n").torch, None);
        // A real interpreter answers the probe too (this one has no torch).
        let real = Python::find(None, std::env::var("PATH").ok().as_deref()).expect("python3");
        assert!(real.version >= MIN_PYTHON);
    }

    #[test]
    fn too_old_names_group_and_versions() {
        let python = Python {
            executable: "/usr/bin/python3".into(),
            version: PythonVersion::parse("3.8.10").expect("parses"),
            torch: None,
            site_packages: Vec::new(),
        };
        let err = python.check("torch", MIN_PYTHON).expect_err("too old");
        let text = err.to_string();
        assert!(text.contains("`torch`") && text.contains("3.10") && text.contains("3.8.10"));
    }
}
