//! Wheelhouses for machines without a network: `pip download` of everything a group installs
//! (its requirement files under its constraints, voir, and uv for the installer's bootstrap),
//! for a target Python version and platform. [`Sources`] with `offline` then installs from the
//! folder alone.
//!
//! benchmate is not downloaded: it is installed from the checkout, and its build backend needs
//! no other package.

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::HelperCommand;

use crate::error::EnvError;
use crate::group::InstallGroup;
use crate::install::{Environments, Event, Stage, VOIR, check};
use crate::process::run_logged;

/// The machine a bundle is for, when it is not this one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleTarget {
    /// Its Python version (`3.11`); wheels for this interpreter's version when unset.
    pub python_version: Option<String>,
    /// Its platform tags (`manylinux_2_28_x86_64`); this machine's when unset.
    pub platforms: Vec<String>,
}

impl BundleTarget {
    /// pip's arguments for the target; binary wheels only when it is another machine (pip
    /// cannot build source packages for another platform).
    fn pip_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(version) = &self.python_version {
            args.extend(["--python-version".to_string(), version.clone()]);
        }
        for platform in &self.platforms {
            args.extend(["--platform".to_string(), platform.clone()]);
        }
        if !args.is_empty() {
            args.push("--only-binary=:all:".to_string());
        }
        args
    }
}

/// What a bundle of one group wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundled {
    /// The install group (`uv` for the installer).
    pub group: String,
    /// The wheelhouse.
    pub dest: Utf8PathBuf,
    /// The log of the download.
    pub log: Utf8PathBuf,
}

impl Environments {
    /// Downloads every package `group` installs (its requirement files under its constraints,
    /// and voir) into `dest`, with the interpreter's pip; files already there are kept.
    pub fn bundle(
        &self,
        group: &InstallGroup,
        dest: &Utf8Path,
        target: &BundleTarget,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Bundled, EnvError> {
        crate::install::no_overrides_with_pip(
            group,
            "a bundle is downloaded with pip: install this group from the package index",
        )?;
        let mut args = Vec::new();
        for req in &group.requirements {
            args.extend(["-r".to_string(), req.path.to_string()]);
        }
        for c in self.constraint_files(group)? {
            args.extend(["-c".to_string(), c.to_string()]);
        }
        args.push(VOIR.to_string());
        args.extend(group.installer_args.iter().cloned());
        self.download(&group.name, args, dest, target, on_event)
    }

    /// Downloads the `uv` package into `dest`, so that an offline install can bootstrap uv
    /// from it.
    pub fn bundle_uv(
        &self,
        dest: &Utf8Path,
        target: &BundleTarget,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Bundled, EnvError> {
        let args = ["--no-deps", "uv"].map(String::from).to_vec();
        self.download("uv", args, dest, target, on_event)
    }

    fn download(
        &self,
        group: &str,
        packages: Vec<String>,
        dest: &Utf8Path,
        target: &BundleTarget,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Bundled, EnvError> {
        fs_err::create_dir_all(dest).map_err(EnvError::io("could not create", dest))?;
        let log_path = self.layout.logs.join("bundle").join(format!("{group}.log"));
        let log_dir = log_path.parent().expect("a log file has a folder");
        fs_err::create_dir_all(log_dir).map_err(EnvError::io("could not create", log_dir))?;
        let mut log =
            fs_err::File::create(&log_path).map_err(EnvError::io("could not create", &log_path))?;
        let mut args: Vec<String> = [
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-input",
            "--dest",
            dest.as_str(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(packages);
        args.extend(self.sources.pip_args());
        args.extend(target.pip_args());
        let mut step = HelperCommand::unlimited(&self.python.executable, args);
        step.env.push((
            "PIP_CACHE_DIR".into(),
            self.layout.cache.join("pip").to_string(),
        ));
        step.env_remove.push("PIP_REQUIRE_VIRTUALENV".into());
        step.cwd = Some(self.project.root.clone().into());
        on_event(Event::Stage {
            group,
            stage: Stage::Download,
        });
        let finished = run_logged(&step, &log_path, &mut log, &mut |line| {
            on_event(Event::Line { group, line })
        })?;
        check(group, Stage::Download, finished, &log_path)?;
        Ok(Bundled {
            group: group.to_string(),
            dest: dest.to_path_buf(),
            log: log_path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_target_asks_for_binary_wheels_only() {
        assert!(BundleTarget::default().pip_args().is_empty());
        let target = BundleTarget {
            python_version: Some("3.11".into()),
            platforms: vec!["manylinux_2_28_x86_64".into()],
        };
        assert_eq!(
            target.pip_args(),
            [
                "--python-version",
                "3.11",
                "--platform",
                "manylinux_2_28_x86_64",
                "--only-binary=:all:"
            ]
        );
    }
}
