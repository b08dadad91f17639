//! Turning flags into resolved settings: built-in defaults, settings file, `MILABENCH_*`
//! variables, then these flags (figment does the layering in `milabench-config`).

use camino::{Utf8Path, Utf8PathBuf};
use milabench::settings::{Arch, EnvVars, Installer, Settings, SettingsFlags};
use milabench::{Session, SessionRequest, SweepRun};

use crate::args::{ArchArg, EnvArgs, GlobalArgs, InstallerArg, SuiteArgs};

/// Loads the settings of this invocation, with paths made absolute.
pub fn load_settings(
    global: &GlobalArgs,
    suite: Option<&SuiteArgs>,
    env: &EnvVars,
) -> crate::errors::Result<Settings> {
    load_settings_with(global, suite, SettingsFlags::default(), env)
}

/// Like [`load_settings`], with more flags a command sets (e.g. `--run-name`).
pub fn load_settings_with(
    global: &GlobalArgs,
    suite: Option<&SuiteArgs>,
    more: SettingsFlags,
    env: &EnvVars,
) -> crate::errors::Result<Settings> {
    let current_env = match suite {
        Some(suite) if suite.use_current_env => Some(current_env_python()?),
        _ => None,
    };
    let flags = SettingsFlags {
        settings: global.settings.clone(),
        base: global.base.clone(),
        config: suite.and_then(|s| s.config.clone()),
        system: suite.and_then(|s| s.system.clone()),
        db: global.db.clone(),
        python: more.python.clone().or(current_env),
        ..more
    };
    let settings = Settings::load(&flags, env)?;
    let cwd = Utf8PathBuf::try_from(std::env::current_dir()?)
        .map_err(|e| crate::errors::usage!("the current folder is not valid UTF-8: {e}"))?;
    Ok(settings.absolutize(&cwd))
}

/// The interpreter of the activated environment (`$CONDA_PREFIX`, else `$VIRTUAL_ENV`), for
/// `--use-current-env`.
fn current_env_python() -> crate::errors::Result<Utf8PathBuf> {
    let prefix = ["CONDA_PREFIX", "VIRTUAL_ENV"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .ok_or_else(|| {
            crate::errors::usage!(
                "--use-current-env: no Python environment is activated (neither CONDA_PREFIX \
                 nor VIRTUAL_ENV is set)\n  fix: activate the environment first, or name its \
                 interpreter with --python"
            )
        })?;
    Ok(Utf8PathBuf::from(prefix).join("bin").join("python"))
}

/// Like [`load_settings_with`], for the commands that work on a suite (`resolve`, `install`,
/// `pin`, `prepare`, `run`): when nothing names a suite, the default one for this machine.
pub fn load_suite_settings(
    global: &GlobalArgs,
    suite: &SuiteArgs,
    more: SettingsFlags,
    env: &EnvVars,
) -> crate::errors::Result<Settings> {
    let mut settings = load_settings_with(global, Some(suite), more, env)?;
    if settings.config.is_none() {
        let cwd = Utf8PathBuf::try_from(std::env::current_dir()?)
            .map_err(|e| crate::errors::usage!("the current folder is not valid UTF-8: {e}"))?;
        settings.config = default_suite(&settings, &cwd)?;
    }
    Ok(settings)
}

/// The suite used when no `--config`, `MILABENCH_CONFIG` or settings file names one:
/// `config/cpu.yaml` without accelerators, `config/standard.yaml` with them, looked up in the
/// current folder and then above the executable (a binary under `<repo>/target/` finds the
/// repository's). Says which on stderr. `None` (the command then says a suite is needed) when
/// neither place has it.
fn default_suite(
    settings: &Settings,
    cwd: &Utf8Path,
) -> crate::errors::Result<Option<Utf8PathBuf>> {
    let arch = milabench::arch_of(settings)?;
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| Utf8PathBuf::try_from(e).ok());
    let Some(found) = milabench::default_suite(&arch, cwd, exe.as_deref()) else {
        return Ok(None);
    };
    crate::output::note(&format!(
        "no --config given: using {} ({})",
        found.path, found.reason
    ));
    Ok(Some(found.path))
}

/// The session of a suite command: settings as [`load_suite_settings`] loads them, the suite
/// resolved once (with the fidelity preset `fidelity`), its warnings said once on stderr.
pub fn suite_session(
    global: &GlobalArgs,
    suite: &SuiteArgs,
    more: SettingsFlags,
    fidelity: Option<String>,
    env: EnvVars,
) -> crate::errors::Result<Session> {
    let settings = load_suite_settings(global, suite, more, &env)?;
    session(settings, suite, fidelity, env, None)
}

/// The session of loaded `settings` (for the run `sweep` of a sweep, when given), its warnings
/// said once on stderr.
pub fn session(
    settings: Settings,
    suite: &SuiteArgs,
    fidelity: Option<String>,
    env: EnvVars,
    sweep: Option<SweepRun>,
) -> crate::errors::Result<Session> {
    let request = SessionRequest {
        selection: suite.selection(),
        fidelity,
        sweep,
    };
    let session = Session::new(settings, env, request)?;
    for warning in session.warnings() {
        crate::output::warn(warning);
    }
    Ok(session)
}

/// The session of `install`, `pin` and `bundle`: the suite with the interpreter, arch and installer
/// flags in its settings.
pub fn install_session(
    global: &GlobalArgs,
    suite: &SuiteArgs,
    env_args: &EnvArgs,
    installer: Option<Installer>,
) -> crate::errors::Result<Session> {
    let more = SettingsFlags {
        python: env_args.python.clone(),
        arch: env_args.arch.map(arch),
        installer,
        ..SettingsFlags::default()
    };
    suite_session(global, suite, more, None, EnvVars::from_process())
}

fn arch(arg: ArchArg) -> Arch {
    match arg {
        ArchArg::Cuda => Arch::Cuda,
        ArchArg::Rocm => Arch::Rocm,
        ArchArg::Xpu => Arch::Xpu,
        ArchArg::Hpu => Arch::Hpu,
        ArchArg::Cpu => Arch::Cpu,
    }
}

/// The installer `--installer` names, if it does.
pub fn installer(arg: Option<InstallerArg>) -> Option<Installer> {
    arg.map(|i| match i {
        InstallerArg::Uv => Installer::Uv,
        InstallerArg::Pip => Installer::Pip,
    })
}
