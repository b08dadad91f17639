//! The package installer: uv (found on `PATH`, or bootstrapped once into `<base>/tools` with the
//! interpreter's own pip) or plain pip inside each environment.

use camino::{Utf8Path, Utf8PathBuf};
use milabench_config::settings::Installer;
use milabench_exec::HelperCommand;

use crate::error::EnvError;
use crate::install::Sources;
use crate::process::{query, run_logged};
use crate::python::{Python, find_on_path};

/// The installer program, ready to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tool {
    /// uv.
    Uv {
        /// The `uv` executable.
        bin: Utf8PathBuf,
        /// Its version (`0.9.2`).
        version: String,
        /// Whether it was bootstrapped into the tools folder (else found on `PATH`).
        bootstrapped: bool,
    },
    /// pip, run as `<venv>/bin/python -m pip` (the version the interpreter's `venv` seeds).
    Pip,
}

impl Tool {
    /// The installer's name and version, as recorded in fingerprints (`uv 0.9.2`, `pip`).
    pub fn describe(&self) -> String {
        match self {
            Tool::Uv { version, .. } => format!("uv {version}"),
            Tool::Pip => "pip".to_string(),
        }
    }

    /// Finds or prepares the installer.
    ///
    /// For uv: `uv` on `path_var`, else `<tools>/uv/bin/uv`, else installs the `uv` package into
    /// `<tools>/uv` with `python -m pip install --target`, logging to `bootstrap_log`. The
    /// install goes to a temporary folder renamed into place, so an interrupted bootstrap
    /// leaves nothing that looks usable. The `uv` package comes from `sources` (a bundle made by
    /// `milabench bundle` holds it).
    pub fn prepare(
        installer: Installer,
        python: &Python,
        tools: &Utf8Path,
        bootstrap_log: &Utf8Path,
        path_var: Option<&str>,
        sources: &Sources,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<Tool, EnvError> {
        if installer == Installer::Pip {
            return Ok(Tool::Pip);
        }
        if let Some(bin) = find_on_path("uv", path_var)
            && let Some(version) = uv_version(&bin)
        {
            return Ok(Tool::Uv {
                bin,
                version,
                bootstrapped: false,
            });
        }
        let home = tools.join("uv");
        let bin = home.join("bin/uv");
        if let Some(version) = uv_version(&bin) {
            return Ok(Tool::Uv {
                bin,
                version,
                bootstrapped: true,
            });
        }
        bootstrap_uv(python, tools, &home, bootstrap_log, sources, on_line)?;
        let version = uv_version(&bin).ok_or_else(|| EnvError::UvBootstrap {
            tools: tools.to_path_buf(),
            python: python.executable.clone(),
            reason: format!("{bin} does not run after the install"),
            log: bootstrap_log.to_path_buf(),
        })?;
        Ok(Tool::Uv {
            bin,
            version,
            bootstrapped: true,
        })
    }
}

/// `uv --version` -> `0.9.2`.
fn uv_version(bin: &Utf8Path) -> Option<String> {
    if !bin.is_file() {
        return None;
    }
    let out = query(bin.as_std_path(), &["--version"])?;
    out.split_whitespace().nth(1).map(str::to_string)
}

fn bootstrap_uv(
    python: &Python,
    tools: &Utf8Path,
    home: &Utf8Path,
    log_path: &Utf8Path,
    sources: &Sources,
    on_line: &mut dyn FnMut(&str),
) -> Result<(), EnvError> {
    let failed = |reason: String| EnvError::UvBootstrap {
        tools: tools.to_path_buf(),
        python: python.executable.clone(),
        reason,
        log: log_path.to_path_buf(),
    };
    fs_err::create_dir_all(tools).map_err(EnvError::io("could not create", tools))?;
    if let Some(parent) = log_path.parent() {
        fs_err::create_dir_all(parent).map_err(EnvError::io("could not create", parent))?;
    }
    let mut log =
        fs_err::File::create(log_path).map_err(EnvError::io("could not create", log_path))?;
    let staging = tools.join(format!(".uv.partial-{}", std::process::id()));
    let _ = fs_err::remove_dir_all(&staging);
    let mut args: Vec<String> = [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--no-warn-script-location",
        "--target",
        staging.as_str(),
        "uv",
    ]
    .map(String::from)
    .to_vec();
    args.extend(sources.pip_args());
    let mut step = HelperCommand::unlimited(&python.executable, args);
    step.env_remove.push("PIP_REQUIRE_VIRTUALENV".into());
    let finished = run_logged(&step, log_path, &mut log, on_line)?;
    if !finished.success {
        let _ = fs_err::remove_dir_all(&staging);
        let mut reason = format!("pip failed{}", finished.status);
        if !finished.diagnosis.is_empty() {
            reason.push_str(": ");
            reason.push_str(&finished.diagnosis.join(" / "));
        }
        return Err(failed(reason));
    }
    let _ = fs_err::remove_dir_all(home);
    fs_err::rename(&staging, home).map_err(|e| failed(e.to_string()))?;
    Ok(())
}
