//! The Python side of benchit: the managed `benchit` environment (torch, onnx, onnxruntime,
//! benchmate), built with `milabench-env` on first use and kept in step with
//! `benchmarks/benchit/requirements.in` by its fingerprint, or a worker command the user names.
//!
//! Scripts with Keras models run in a second environment, `benchit-keras`: the same packages
//! plus `requirements-keras.in` (TensorFlow's CPU wheel, tf2onnx), built the first time a script
//! needs it. A group of its own rather than TensorFlow added to the first one: the first stays
//! exactly what its requirements say (a PyTorch user never pays for TensorFlow, and an install
//! of TensorFlow cannot move a package a PyTorch script relies on), both are kept up to date by
//! the same fingerprints, and uv links the second one's shared packages (torch) from its cache
//! instead of copying them.
//!
//! Packages a user's scripts import and benchit's environment lacks (torchvision, transformers,
//! timm...) come with `benchit --with PACKAGE`: they go into an environment of their own per set
//! of packages, `benchit-with-<packages>`, for the same reasons, so a script needing one package
//! never changes the environment of the others.

use camino::{Utf8Path, Utf8PathBuf};
use milabench_env::{
    EnvError, EnvOptions, Environments, Event, InstallGroup, MIN_PYTHON, ProjectTree,
    RequirementFile,
};
use milabench_exec::ExitCode;
use milabench_vocab::{BaseLayout, DirOverrides, Installer};

use crate::worker::{WorkerCommand, WorkerError};

/// The folder holding the managed environment (`venv/benchit`, `logs/install`, `tools`).
pub const HOME_VAR: &str = "BENCHIT_HOME";

/// The interpreter the managed environment is made from (default: `python3` on `PATH`).
pub const PYTHON_VAR: &str = "BENCHIT_PYTHON";

/// The install group name of the managed environment.
pub const GROUP: &str = "benchit";

/// The install group name of the managed environment with TensorFlow, for Keras models.
pub const KERAS_GROUP: &str = "benchit-keras";

/// Where the worker comes from and where its environment lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSettings {
    /// The base folder of the managed environment.
    pub home: Utf8PathBuf,
    /// The interpreter to make it from, when not `python3` on `PATH`.
    pub python: Option<Utf8PathBuf>,
    /// A worker command replacing the managed environment (`BENCHIT_WORKER`).
    pub worker: Option<WorkerCommand>,
    /// The accelerator family whose constraints apply (`cpu`, `cuda`).
    pub arch: String,
    /// Where to look for the checkout holding benchmate (the current folder, usually).
    pub start: Utf8PathBuf,
    /// Whether the worker needs TensorFlow: the Keras environment ([`KERAS_GROUP`]).
    pub keras: bool,
    /// Packages added to the environment (`benchit --with`), as pip requirements.
    pub with: Vec<String>,
}

/// Why the worker could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `BENCHIT_WORKER` is unusable.
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// Building the environment failed.
    #[error("could not set up the benchit Python environment")]
    Env(#[from] EnvError),
    /// A path is not UTF-8 or the home folder is unknown.
    #[error("{0}")]
    Path(String),
    /// A file of the environments' home could not be written or locked.
    #[error("{what}; check that the folder is writable and the disk is not full")]
    Io {
        /// What could not be done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A `--with` package is not a requirement.
    #[error(
        "--with `{0}` is not a package requirement\n  fix: name a package, with a version if you like: --with torchvision --with 'timm>=1.0'"
    )]
    BadPackage(String),
    /// `--with` and a worker of the user's own.
    #[error(
        "--with adds packages to benchit's own environment, but BENCHIT_WORKER names another interpreter\n  fix: install {0} into that interpreter, or unset BENCHIT_WORKER"
    )]
    WithOwnWorker(String),
}

impl SetupError {
    /// The exit code a command that ends on this error deserves: the user's input (a worker
    /// command, a path, a package) is bad input; the environment's build has its own classes.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            SetupError::Worker(e) => e.exit_code(),
            SetupError::Env(e) => e.exit_code(),
            SetupError::Path(_) | SetupError::BadPackage(_) | SetupError::WithOwnWorker(_) => {
                ExitCode::BadInput
            }
            SetupError::Io { .. } => ExitCode::Internal,
        }
    }
}

impl EnvSettings {
    /// Settings from the environment: [`HOME_VAR`] (default `~/.local/share/benchit`),
    /// [`PYTHON_VAR`], `BENCHIT_WORKER`, for accelerator family `arch`.
    pub fn from_env(arch: &str) -> Result<EnvSettings, SetupError> {
        let home = home_from_env()?;
        let start = std::env::current_dir()
            .ok()
            .and_then(|d| Utf8PathBuf::from_path_buf(d).ok())
            .ok_or_else(|| SetupError::Path("the current folder is not a UTF-8 path".into()))?;
        Ok(EnvSettings {
            home,
            python: std::env::var(PYTHON_VAR)
                .ok()
                .filter(|p| !p.is_empty())
                .map(Utf8PathBuf::from),
            worker: WorkerCommand::from_env()?,
            arch: arch.to_string(),
            start,
            keras: false,
            with: Vec::new(),
        })
    }

    /// The install group these settings use: [`GROUP`] or [`KERAS_GROUP`], followed by
    /// `-with-<packages>-<hash>` when packages are added: the packages sorted, each spelled
    /// with letters, digits, `.` and `-`, joined by `+` and cut to keep the name within 100
    /// characters; then 12 hex digits of the SHA-256 of the exact requirement set (each
    /// requirement in lower case without spaces, sorted, duplicates dropped), so that
    /// `timm>=1.0`, `timm<=1.0` and `timm==1.0` each get an environment of their own.
    pub fn group_name(&self) -> String {
        use sha2::{Digest as _, Sha256};
        let base = base_group(self.keras);
        if self.with.is_empty() {
            return base.to_string();
        }
        let mut exact: Vec<String> = self
            .with
            .iter()
            .map(|spec| {
                spec.chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase()
            })
            .collect();
        exact.sort();
        exact.dedup();
        let digest = Sha256::digest(exact.join("\n").as_bytes());
        let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        let mut specs: Vec<String> = exact
            .iter()
            .map(|spec| {
                spec.chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '.' {
                            c
                        } else {
                            '-'
                        }
                    })
                    .collect::<String>()
                    .trim_matches('-')
                    .to_string()
            })
            .collect();
        specs.dedup();
        let readable = format!("{base}-with-{}", specs.join("+"));
        let kept: String = readable.chars().take(100 - 1 - hash.len()).collect();
        format!("{kept}-{hash}")
    }

    /// The interpreter of the environment these settings use ([`EnvSettings::group_name`])
    /// once it is installed: for tools that run a `--with` environment's Python directly, such
    /// as `cargo xtask e2e`'s pytest suites.
    pub fn group_python(&self) -> Utf8PathBuf {
        group_python(&self.home, &self.group_name())
    }

    /// The `--with` packages, checked: each names a package (no pip option, no second line).
    fn checked_with(&self) -> Result<&[String], SetupError> {
        for spec in &self.with {
            let spec_ok = spec
                .trim()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
                && !spec.contains(['\n', '\r']);
            if !spec_ok {
                return Err(SetupError::BadPackage(spec.clone()));
            }
        }
        Ok(&self.with)
    }
}

/// The `benchit` install group of the checkout `project`: `benchmarks/benchit`'s pinned
/// `requirements.<arch>.txt` when there is one, else its `requirements.in`, under
/// `constraints/<arch>.txt`; with `keras`, the [`KERAS_GROUP`] group, which adds
/// `requirements-keras.in`; with `with`, the file of the packages `benchit --with` adds (the
/// group is then named by [`EnvSettings::group_name`]).
pub fn install_group(
    project: &ProjectTree,
    arch: &str,
    keras: bool,
    with: Option<(&str, &Utf8Path)>,
) -> InstallGroup {
    let folder = project.root.join("benchmarks/benchit");
    let pinned = folder.join(format!("requirements.{arch}.txt"));
    let (path, is_pinned) = if pinned.is_file() {
        (pinned, true)
    } else {
        (folder.join("requirements.in"), false)
    };
    let mut requirements = vec![RequirementFile {
        bench: GROUP.into(),
        path,
        pinned: is_pinned,
    }];
    if keras {
        requirements.push(RequirementFile {
            bench: KERAS_GROUP.into(),
            path: folder.join("requirements-keras.in"),
            pinned: false,
        });
    }
    let name = with
        .map_or(base_group(keras), |(group, _)| group)
        .to_string();
    if let Some((_, file)) = with {
        requirements.push(RequirementFile {
            bench: name.clone(),
            path: file.to_owned(),
            pinned: false,
        });
    }
    InstallGroup {
        name: name.clone(),
        benches: vec![name],
        definitions: vec![folder],
        variant: arch.into(),
        requirements,
        constraints: project.constraints(arch),
        extra_constraints: Vec::new(),
        overrides: Vec::new(),
        installer_args: Vec::new(),
        min_python: MIN_PYTHON,
        venv: None,
        python: None,
    }
}

/// The worker command: `BENCHIT_WORKER` when set, else `python -m benchmate.benchit` in the
/// managed environment (the Keras one when `settings.keras`), installed or brought up to date
/// first (progress through `on_event`; the installer's full output goes to
/// [`install_log`]). The environment stays held in use while the returned worker lives: a
/// rebuild by another benchit process (its requirements changed) waits until it is dropped.
pub fn prepare_worker(
    settings: &EnvSettings,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<PreparedWorker, SetupError> {
    let with = settings.checked_with()?;
    if let Some(worker) = &settings.worker {
        if !with.is_empty() {
            return Err(SetupError::WithOwnWorker(with.join(", ")));
        }
        return Ok(PreparedWorker {
            command: worker.clone(),
            _in_use: None,
        });
    }
    let project = ProjectTree::locate(&settings.start)?;
    let layout = BaseLayout::new(&settings.home, &DirOverrides::default());
    let path_var = std::env::var("PATH").ok();
    let envs = Environments::prepare(
        &EnvOptions {
            layout,
            project: project.clone(),
            python: settings.python.as_deref(),
            installer: Installer::Uv,
            arch: settings.arch.clone(),
            path_var: path_var.as_deref(),
        },
        on_event,
    )?;
    let group_name = settings.group_name();
    let with_file = settings.home.join(format!("requirements/{group_name}.in"));
    if !with.is_empty() {
        let text: String = with
            .iter()
            .map(|spec| format!("{}\n", spec.trim()))
            .collect();
        fs_err::create_dir_all(settings.home.join("requirements"))
            .and_then(|()| fs_err::write(&with_file, text))
            .map_err(|source| SetupError::Io {
                what: format!("could not write the --with packages to {with_file}"),
                source,
            })?;
    }
    let group = install_group(
        &project,
        &settings.arch,
        settings.keras,
        (!with.is_empty()).then_some((group_name.as_str(), with_file.as_path())),
    );
    let venv = envs.venv(&group);
    let in_use_path = Environments::lock_file(&venv).with_extension("in-use");
    let lock_err = |source: std::io::Error| SetupError::Io {
        what: format!(
            "could not lock {in_use_path}, which keeps an environment in use from being rebuilt"
        ),
        source,
    };
    let open = || {
        fs_err::create_dir_all(venv.parent().unwrap_or(Utf8Path::new(".")))
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&in_use_path)
            })
            .map_err(lock_err)
    };
    // Users hold the lock shared; a rebuild takes it alone, so it waits for them to finish.
    loop {
        let in_use = open()?;
        in_use.lock_shared().map_err(lock_err)?;
        if envs.is_current(&group)? {
            return Ok(PreparedWorker {
                command: WorkerCommand::python(&python_of(&venv)),
                _in_use: Some(in_use),
            });
        }
        drop(in_use);
        let rebuild = open()?;
        if rebuild.try_lock().is_err() {
            on_event(Event::Waiting {
                group: &group.name,
                holders: &[],
            });
            rebuild.lock().map_err(lock_err)?;
        }
        envs.install(&group, false, on_event)?;
    }
}

/// The worker command of a prepared environment; while it lives, the managed environment it
/// runs in is held in use (a shared lock beside the venv), so that another benchit process does
/// not rebuild it under a running script.
#[derive(Debug)]
pub struct PreparedWorker {
    command: WorkerCommand,
    _in_use: Option<std::fs::File>,
}

impl PreparedWorker {
    /// The same worker, with `watchdog` started beside each worker process.
    pub fn with_watchdog(self, watchdog: milabench_exec::WatchdogCommand) -> PreparedWorker {
        PreparedWorker {
            command: self.command.with_watchdog(watchdog),
            ..self
        }
    }
}

impl std::ops::Deref for PreparedWorker {
    type Target = WorkerCommand;

    fn deref(&self) -> &WorkerCommand {
        &self.command
    }
}

/// The install group without added packages: [`KERAS_GROUP`] when `keras`, else [`GROUP`].
fn base_group(keras: bool) -> &'static str {
    if keras { KERAS_GROUP } else { GROUP }
}

/// The base folder of the managed environment: [`HOME_VAR`], else `~/.local/share/benchit`.
pub fn home_from_env() -> Result<Utf8PathBuf, SetupError> {
    match std::env::var(HOME_VAR) {
        Ok(home) if !home.is_empty() => Ok(Utf8PathBuf::from(home)),
        _ => {
            let user_home = std::env::var("HOME").map_err(|_| {
                SetupError::Path(format!(
                    "HOME is not set; set {HOME_VAR} to the folder for benchit's Python environment"
                ))
            })?;
            Ok(Utf8PathBuf::from(user_home).join(".local/share/benchit"))
        }
    }
}

/// The interpreter the managed environment under `home` has once it is installed (for tools
/// that run the worker's Python directly, such as the measurements of `cargo xtask bench`).
pub fn managed_python(home: &Utf8Path) -> Utf8PathBuf {
    group_python(home, GROUP)
}

/// The interpreter of the Keras environment under `home` once it is installed.
pub fn managed_keras_python(home: &Utf8Path) -> Utf8PathBuf {
    group_python(home, KERAS_GROUP)
}

/// Where the install of install group `group` ([`EnvSettings::group_name`]) under `home` logs
/// the installer's output.
pub fn install_log(home: &Utf8Path, group: &str) -> Utf8PathBuf {
    BaseLayout::new(home, &DirOverrides::default())
        .logs
        .join(format!("install/{group}.log"))
}

/// The interpreter of install group `group`'s environment under `home`.
fn group_python(home: &Utf8Path, group: &str) -> Utf8PathBuf {
    python_of(
        &BaseLayout::new(home, &DirOverrides::default())
            .venv
            .join(group),
    )
}

/// The interpreter of `venv`.
fn python_of(venv: &Utf8Path) -> Utf8PathBuf {
    venv.join("bin/python")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_installs_the_requirements_of_benchmarks_benchit() {
        let root = Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let project = ProjectTree::locate(&root).unwrap();
        let group = install_group(&project, "cpu", false, None);
        assert_eq!(group.name, "benchit");
        assert_eq!(
            group.requirements.len(),
            1,
            "no TensorFlow for PyTorch scripts"
        );
        assert!(group.requirements[0].path.is_file());
        let text = fs_err::read_to_string(&group.requirements[0].path).unwrap();
        for package in ["torch", "onnx", "onnxruntime", "onnxconverter-common"] {
            assert!(
                text.lines().any(|l| l.trim() == package),
                "{package} missing"
            );
        }
        assert!(group.constraints.is_some(), "constraints/cpu.txt applies");
    }

    #[test]
    fn the_keras_group_adds_tensorflow_in_a_venv_of_its_own() {
        let root = Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let project = ProjectTree::locate(&root).unwrap();
        let plain = install_group(&project, "cpu", false, None);
        let group = install_group(&project, "cpu", true, None);
        assert_eq!(group.name, "benchit-keras");
        assert_eq!(
            group.requirements[0], plain.requirements[0],
            "the same packages first"
        );
        let text = fs_err::read_to_string(&group.requirements[1].path).unwrap();
        for package in ["tensorflow-cpu", "tf2onnx"] {
            assert!(
                text.lines().any(|l| l.trim() == package),
                "{package} missing"
            );
        }
        let home = Utf8Path::new("/h");
        assert_eq!(
            managed_keras_python(home),
            "/h/venv/benchit-keras/bin/python"
        );
        assert_eq!(managed_python(home), "/h/venv/benchit/bin/python");
        assert_eq!(
            install_log(home, KERAS_GROUP),
            "/h/logs/install/benchit-keras.log"
        );
    }

    #[test]
    fn a_named_worker_skips_the_managed_environment() {
        let settings = EnvSettings {
            home: "/nonexistent".into(),
            python: None,
            worker: Some(WorkerCommand::parse("python3 fake.py").unwrap()),
            arch: "cpu".into(),
            start: "/nonexistent".into(),
            keras: true,
            with: Vec::new(),
        };
        let cmd = prepare_worker(&settings, &mut |_| {}).unwrap();
        assert_eq!(cmd.display(), "python3 fake.py");
        let with = EnvSettings {
            with: vec!["torchvision".into()],
            ..settings
        };
        let err = prepare_worker(&with, &mut |_| {}).unwrap_err().to_string();
        assert!(
            err.contains("install torchvision into that interpreter"),
            "{err}"
        );
    }

    /// The root of this checkout.
    fn checkout() -> Utf8PathBuf {
        Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// Settings of a managed environment under `/h` with `with` added.
    fn settings(keras: bool, with: &[&str]) -> EnvSettings {
        EnvSettings {
            home: "/h".into(),
            python: None,
            worker: None,
            arch: "cpu".into(),
            start: checkout(),
            keras,
            with: with.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn each_exact_requirement_set_gets_an_environment_of_its_own() {
        // Issue 38, item 3: these three shared one environment, rebuilt under a running script.
        let names: Vec<String> = ["timm>=1.0", "timm<=1.0", "timm==1.0", "timm"]
            .iter()
            .map(|spec| settings(false, &[spec]).group_name())
            .collect();
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len(), "{names:?}");
        let long = |last: &str| settings(false, &[&("x".repeat(300) + last)]).group_name();
        assert_ne!(long("a"), long("b"));
    }

    #[test]
    fn packages_added_with_with_get_an_environment_of_their_own() {
        let project = ProjectTree::locate(&checkout()).unwrap();
        assert_eq!(settings(false, &[]).group_name(), "benchit");
        let name = settings(false, &["torchvision", "timm>=1.0", "torchvision"]).group_name();
        assert!(
            name.starts_with("benchit-with-timm--1.0+torchvision-"),
            "{name}"
        );
        assert_eq!(
            name,
            settings(false, &[" Timm >= 1.0", "torchvision"]).group_name(),
            "one set, however it is spelled"
        );
        assert!(
            settings(true, &["Transformers"])
                .group_name()
                .starts_with("benchit-keras-with-transformers-")
        );
        assert!(settings(false, &[&"x".repeat(300)]).group_name().len() <= 100);
        let file = Utf8Path::new("/h/requirements/benchit-with-timm.in");
        let group = install_group(&project, "cpu", false, Some(("benchit-with-timm", file)));
        assert_eq!(group.name, "benchit-with-timm");
        assert_eq!(
            group.requirements.len(),
            2,
            "benchit's packages, then the added ones"
        );
        assert_eq!(group.requirements[1].path, file);
        for bad in ["-r other.txt", "--index-url x", "torch\n-e .", ""] {
            let err = prepare_worker(&settings(false, &[bad]), &mut |_| {})
                .unwrap_err()
                .to_string();
            assert!(err.contains("is not a package requirement"), "{bad}: {err}");
        }
    }
}
