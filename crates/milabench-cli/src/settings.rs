//! Turning flags into resolved settings: built-in defaults, settings file, `MILABENCH_*`
//! variables, then these flags (figment does the layering in `milabench-config`).

use camino::Utf8PathBuf;
use milabench::config::settings::{EnvVars, Settings, SettingsFlags};

use crate::args::{GlobalArgs, SuiteArgs};

/// Loads the settings of this invocation, with paths made absolute.
pub fn load_settings(
    global: &GlobalArgs,
    suite: Option<&SuiteArgs>,
    env: &EnvVars,
) -> anyhow::Result<Settings> {
    load_settings_with(global, suite, SettingsFlags::default(), env)
}

/// Like [`load_settings`], with more flags a command sets (e.g. `--run-name`).
pub fn load_settings_with(
    global: &GlobalArgs,
    suite: Option<&SuiteArgs>,
    more: SettingsFlags,
    env: &EnvVars,
) -> anyhow::Result<Settings> {
    let flags = SettingsFlags {
        settings: global.settings.clone(),
        base: global.base.clone(),
        config: suite.and_then(|s| s.config.clone()),
        system: suite.and_then(|s| s.system.clone()),
        ..more
    };
    let settings = Settings::load(&flags, env)?;
    let cwd = Utf8PathBuf::try_from(std::env::current_dir()?)
        .map_err(|e| anyhow::anyhow!("the current folder is not valid UTF-8: {e}"))?;
    Ok(settings.absolutize(&cwd))
}
