//! What an install of a group would do, without doing it (`milabench install --dry-run`): the
//! interpreter the venv is made from, whether the venv is up to date, and for each requirement
//! whether the environment already has it, would get it, or would get another version of it.
//!
//! The requirements are read from the group's files as written (names and `==` pins); the
//! versions present are read from the package metadata the interpreter sees, without importing
//! anything. Requirements the installer would pull in besides those written are not resolved
//! here (a pinned file lists them all).

use camino::Utf8PathBuf;

use crate::error::EnvError;
use crate::fingerprint;
use crate::group::InstallGroup;
use crate::install::{BaseInterpreter, Environments, VOIR, is_whole};
use crate::process::query;

/// The package name of benchmate, installed (editable) in every environment.
const BENCHMATE: &str = "benchmate";

/// What an environment has of one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Present in a version the requirement accepts (as far as its `==` pin says).
    Present,
    /// Present in another version than its `==` pin: the install puts the pinned one in the
    /// venv.
    Replaced,
    /// Absent: the install adds it.
    Added,
}

/// One requirement of a group and what the environment has of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementState {
    /// The requirement as written (`torch==2.5.1`).
    pub requirement: String,
    /// The package name.
    pub name: String,
    /// The version the environment has, if any.
    pub installed: Option<String>,
    /// What the install does about it.
    pub verdict: Verdict,
}

/// What an install of one group would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survey {
    /// The interpreter the venv is (or would be) made from.
    pub base: BaseInterpreter,
    /// The venv.
    pub venv: Utf8PathBuf,
    /// Whether the venv is finished for the current inputs (an install would do nothing).
    pub up_to_date: bool,
    /// Each requirement (the group's files', voir, benchmate) with what is present of it: in
    /// the venv when it is up to date, else in the interpreter for an overlay, else nothing
    /// (a fresh venv starts empty).
    pub requirements: Vec<RequirementState>,
}

impl Environments {
    /// What [`Environments::install`] would do for `group`; changes nothing.
    pub fn survey(&self, group: &InstallGroup) -> Result<Survey, EnvError> {
        let base = self.interpreter(group)?;
        let wanted = self.fingerprint(group)?;
        let group = &*Self::as_installed(group, &base);
        let venv = self.venv(group);
        let up_to_date = fingerprint::read(&venv).is_some_and(|f| f.hash == wanted.hash)
            && is_whole(&venv, base.python.version);
        let mut wanted: Vec<(String, String, Option<String>)> = Vec::new();
        for req in &group.requirements {
            let text = fs_err::read_to_string(&req.path)
                .map_err(EnvError::io("could not read", &req.path))?;
            wanted.extend(text.lines().filter_map(requirement));
        }
        for name in [VOIR, BENCHMATE] {
            if !wanted.iter().any(|(_, n, _)| same_name(n, name)) {
                wanted.push((name.to_string(), name.to_string(), None));
            }
        }
        let looked_in = if up_to_date {
            Some(venv.join("bin/python"))
        } else if base.existing {
            Some(base.python.executable.clone())
        } else {
            None
        };
        let names: Vec<&str> = wanted.iter().map(|(_, n, _)| n.as_str()).collect();
        let installed = match &looked_in {
            Some(python) => installed_versions(python, &names),
            None => vec![None; names.len()],
        };
        let requirements = wanted
            .into_iter()
            .zip(installed)
            .map(|((requirement, name, pin), installed)| {
                let verdict = match (&installed, &pin) {
                    (None, _) => Verdict::Added,
                    (Some(have), Some(pin)) if have != pin => Verdict::Replaced,
                    (Some(_), _) => Verdict::Present,
                };
                RequirementState {
                    requirement,
                    name,
                    installed,
                    verdict,
                }
            })
            .collect();
        Ok(Survey {
            base,
            venv,
            up_to_date,
            requirements,
        })
    }
}

/// A requirement line -> (the requirement, its name, its `==` version); `None` for blank lines,
/// comments and options (`-r`, `--extra-index-url`, ...).
fn requirement(line: &str) -> Option<(String, String, Option<String>)> {
    let line = line.split(" #").next().unwrap_or("").trim();
    let line = line.trim_end_matches('\\').trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with('-') {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .unwrap_or(line.len());
    let name = &line[..end];
    if name.is_empty() {
        return None;
    }
    let spec = line[end..].split(';').next().unwrap_or("").trim();
    let spec = match spec.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or("", |(_, s)| s.trim()),
        None => spec,
    };
    let pin = spec
        .strip_prefix("==")
        .filter(|v| !v.contains([',', '*']))
        .map(|v| v.trim().to_string());
    Some((line.to_string(), name.to_string(), pin))
}

/// Whether two package names are the same once normalised (PEP 503).
fn same_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    norm(a) == norm(b)
}

/// Lists `name<TAB>version` (version empty when absent) for each name on the command line.
const VERSIONS: &str = "import sys\n\
from importlib.metadata import version\n\
for name in sys.argv[1:]:\n    \
try:\n        v = version(name)\n    \
except Exception:\n        v = ''\n    \
print(name + '\\t' + v)";

/// The version of each of `names` that `python` sees (`None` when absent, or when the
/// interpreter cannot be asked).
fn installed_versions(python: &camino::Utf8Path, names: &[&str]) -> Vec<Option<String>> {
    let mut args = vec!["-c", VERSIONS];
    args.extend(names);
    let out = query(python.as_std_path(), &args).unwrap_or_default();
    let found: Vec<(&str, &str)> = out.lines().filter_map(|l| l.split_once('\t')).collect();
    names
        .iter()
        .map(|name| {
            found
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_lines_give_names_and_pins() {
        let parse = |l: &str| requirement(l).map(|(_, n, p)| (n, p));
        assert_eq!(
            parse("torch==2.5.1+cu124 ; python_version >= '3.10'  # via x"),
            Some(("torch".into(), Some("2.5.1+cu124".into())))
        );
        assert_eq!(
            parse("Pillow[extra]==10.0"),
            Some(("Pillow".into(), Some("10.0".into())))
        );
        assert_eq!(parse("numpy>=1.2,<2"), Some(("numpy".into(), None)));
        assert_eq!(parse("foo==1.*"), Some(("foo".into(), None)));
        assert_eq!(parse("# a comment"), None);
        assert_eq!(parse("--extra-index-url https://x"), None);
        assert_eq!(parse("-r other.txt"), None);
        assert_eq!(parse("   "), None);
        assert!(same_name("typing_extensions", "Typing-Extensions"));
    }

    #[test]
    fn versions_are_read_from_the_interpreter() {
        let python = crate::python::Python::find(None, std::env::var("PATH").ok().as_deref())
            .expect("python3 on PATH");
        let got = installed_versions(&python.executable, &["pip", "no-such-package-here"]);
        assert!(got[0].is_some(), "pip has a version: {got:?}");
        assert_eq!(got[1], None);
    }
}
