//! Settings layering: built-in defaults, then a settings file, then `MILABENCH_*` environment
//! variables, then command-line flags, resolved in one step with figment.
//!
//! The environment is injected ([`EnvVars`]) so that tests never touch the process environment;
//! the CLI calls [`EnvVars::from_process`] once. Every variable name is a constant of
//! [`env_vars`]. Typed options of the system file (`cpu.*`, `sizer.*`) live in [`options`].
//!
//! ```
//! use milabench_config::settings::{EnvVars, Settings, SettingsFlags};
//!
//! let env = EnvVars::from_pairs([("MILABENCH_GPU_ARCH", "cpu"), ("MILABENCH_NOTERM", "no")]);
//! let flags = SettingsFlags { run_name: Some("nightly".into()), ..Default::default() };
//! let settings = Settings::load(&flags, &env).unwrap().absolutize("/home/me".into());
//! assert_eq!(settings.base.as_str(), "/home/me/workdir");
//! assert_eq!(settings.layout().data.as_str(), "/home/me/workdir/data");
//! ```
//!
//! Relative paths (base, suite, system, interpreter, dirs) are made absolute against the
//! current directory by [`Settings::absolutize`], whichever layer they came from.

pub use milabench_vocab::env_vars;
pub use milabench_vocab::layout::{Arch, ArchName, BaseLayout, DirOverrides, Installer};
pub mod options;

use std::collections::BTreeMap;

use camino::{Utf8Path, Utf8PathBuf};
use figment::providers::{Format, Serialized};
use figment::value::{Dict, Map, Value as FigValue};
use figment::{Figment, Metadata, Profile, Provider};
use serde::{Deserialize, Serialize};
use serde_saphyr::figment::Yaml;

/// Errors of settings resolution; each message names where the bad value came from and the fix.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A settings file was asked for but does not exist.
    #[error(
        "settings file {path} (given by {origin}) does not exist; create it or point {origin} at an existing YAML file"
    )]
    MissingFile {
        /// The path that was given.
        path: Utf8PathBuf,
        /// Which flag or variable gave it.
        origin: String,
    },
    /// A settings file was asked for and names a folder.
    #[error(
        "settings file {path} (given by {origin}) is a folder, not a file; point {origin} at a YAML file"
    )]
    FolderGiven {
        /// The path that was given.
        path: Utf8PathBuf,
        /// Which flag or variable gave it.
        origin: String,
    },
    /// An environment variable holds a value outside its accepted set.
    #[error(
        "environment variable {var}={value:?} is invalid: expected {expected}; fix or unset {var}"
    )]
    InvalidEnv {
        /// Variable name.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A layer holds a value of the wrong type, an unknown key, or is not valid YAML.
    #[error("invalid setting{key} in {origin}: {problem}; fix it there{more}")]
    Invalid {
        /// Where it came from: `settings file PATH`, a variable name, or a flag.
        origin: String,
        /// ` `key`` (with a leading space), empty when the whole source is at fault.
        key: String,
        /// What is wrong.
        problem: String,
        /// A note when more errors follow.
        more: String,
    },
}

impl From<figment::Error> for SettingsError {
    fn from(err: figment::Error) -> Self {
        let count = err.count();
        let keys: Vec<&str> = err.path.iter().map(String::as_str).collect();
        let origin = match &err.metadata {
            Some(md) => match &md.source {
                Some(figment::Source::File(path)) => format!("settings file {}", path.display()),
                _ if !keys.is_empty() && md.name != "Serialized" => {
                    format!("{} {}", md.name, md.interpolate(&Profile::Default, &keys))
                }
                _ => md.name.to_string(),
            },
            None => "settings".to_string(),
        };
        SettingsError::Invalid {
            origin,
            key: if keys.is_empty() {
                String::new()
            } else {
                format!(" `{}`", keys.join("."))
            },
            problem: err.kind.to_string(),
            more: if count > 1 {
                format!(" ({} more errors follow once this one is fixed)", count - 1)
            } else {
                String::new()
            },
        }
    }
}

/// A snapshot of the `MILABENCH_*` environment variables (and of the `SLURM*` ones a Slurm job
/// sets, which describe its allocation, and of the variables that choose visible accelerators),
/// injectable for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvVars {
    vars: BTreeMap<String, String>,
}

impl EnvVars {
    /// The `MILABENCH_*`, `SLURM*` and device visibility variables (`CUDA_VISIBLE_DEVICES`
    /// and its kin) of this process (non-UTF-8 values are skipped).
    pub fn from_process() -> Self {
        Self::from_pairs(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| {
                    k.starts_with(env_vars::PREFIX)
                        || k.starts_with("SLURM")
                        || k.ends_with("_VISIBLE_DEVICES")
                        || k == "HABANA_VISIBLE_MODULES"
                        || k == "ONEAPI_DEVICE_SELECTOR"
                }),
        )
    }

    /// Build from explicit `(name, value)` pairs (tests, embedding).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Value of `name`; an empty value counts as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Strict boolean value of `name` (see [`parse_bool`]).
    pub fn bool(&self, name: &'static str) -> Result<Option<bool>, SettingsError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => parse_bool(v)
                .map(Some)
                .ok_or_else(|| SettingsError::InvalidEnv {
                    var: name,
                    value: v.to_string(),
                    expected: BOOL_EXPECTED,
                }),
        }
    }
}

/// What strict boolean parsing accepts, for error messages.
pub const BOOL_EXPECTED: &str = "a boolean: 1, true, yes, on or 0, false, no, off";

/// Strict boolean parsing: `1/true/yes/on` -> true, `0/false/no/off` -> false (case-insensitive,
/// surrounding blanks ignored), anything else -> `None`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Resolved settings of one invocation.
///
/// A settings file uses these field names as top-level keys (unknown keys are errors):
/// `base`, `config`, `system`, `arch`, `python`, `installer`, `run_name`, `container`, `noterm`,
/// `db`, `dirs`, `slurm`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Workspace base directory (default `./workdir`).
    pub base: Utf8PathBuf,
    /// Suite file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Utf8PathBuf>,
    /// System file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Utf8PathBuf>,
    /// Forced accelerator backend (detected when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// Python interpreter for benchmark environments (found on `PATH` when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<Utf8PathBuf>,
    /// Package installer.
    pub installer: Installer,
    /// Run name (generated when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_name: Option<String>,
    /// The image every benchmark process runs in, over the system file's `container.image`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Plain line output instead of the terminal dashboard.
    pub noterm: bool,
    /// Results database: a SQLite file or a `postgres://` URL (`<base>/results.db` when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    /// Directory overrides.
    pub dirs: DirOverrides,
    /// `milabench slurm submit`'s profiles of sbatch options.
    #[serde(skip_serializing_if = "SlurmSettings::is_empty")]
    pub slurm: SlurmSettings,
}

/// The `slurm` key of the settings file: sbatch options per cluster, by profile name.
///
/// ```yaml
/// slurm:
///   default: mila
///   profiles:
///     mila: {partition: long, time: "2:00:00", gres: "gpu:4", options: [--exclusive]}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmSettings {
    /// The profile used when `--profile` names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The profiles, by name.
    pub profiles: std::collections::BTreeMap<String, SlurmProfile>,
}

impl SlurmSettings {
    /// Whether nothing is set (then the key is left out when settings are written).
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.profiles.is_empty()
    }
}

/// One profile of sbatch options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmProfile {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--time` (`2:00:00`, `1-0`).
    pub time: Option<String>,
    /// `--gres` (`gpu:4`).
    pub gres: Option<String>,
    /// `--constraint`.
    pub constraint: Option<String>,
    /// Any other sbatch options, each one word (`--exclusive`, `--mem=0`).
    pub options: Vec<String>,
}

impl SlurmProfile {
    /// The profile as sbatch options, in a fixed order.
    pub fn sbatch_options(&self) -> Vec<String> {
        [
            ("partition", &self.partition),
            ("account", &self.account),
            ("time", &self.time),
            ("gres", &self.gres),
            ("constraint", &self.constraint),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("--{name}={v}")))
        .chain(self.options.iter().cloned())
        .collect()
    }
}

/// Default base directory, relative to the current directory.
pub const DEFAULT_BASE: &str = "./workdir";

impl Default for Settings {
    fn default() -> Self {
        Settings {
            base: Utf8PathBuf::from(DEFAULT_BASE),
            config: None,
            system: None,
            arch: None,
            python: None,
            installer: Installer::Uv,
            run_name: None,
            container: None,
            noterm: false,
            db: None,
            dirs: DirOverrides::default(),
            slurm: SlurmSettings::default(),
        }
    }
}

/// Settings given on the command line; the CLI fills this from its flags (`None` = not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsFlags {
    /// `--settings FILE`: settings file (beats `MILABENCH_SETTINGS`).
    pub settings: Option<Utf8PathBuf>,
    /// `--base DIR`.
    pub base: Option<Utf8PathBuf>,
    /// `--config FILE`.
    pub config: Option<Utf8PathBuf>,
    /// `--system FILE`.
    pub system: Option<Utf8PathBuf>,
    /// `--arch NAME`.
    pub arch: Option<Arch>,
    /// `--python PATH`.
    pub python: Option<Utf8PathBuf>,
    /// `--installer uv|pip`.
    pub installer: Option<Installer>,
    /// `--run-name NAME`.
    pub run_name: Option<String>,
    /// `--container IMAGE`.
    pub container: Option<String>,
    /// `--noterm`.
    pub noterm: Option<bool>,
    /// `--db FILE|URL`.
    pub db: Option<String>,
}

fn path_value(p: &Utf8Path) -> FigValue {
    FigValue::from(p.as_str().to_string())
}

fn one_profile(dict: Dict) -> Map<Profile, Dict> {
    let mut map = Map::new();
    map.insert(Profile::Default, dict);
    map
}

impl Provider for SettingsFlags {
    fn metadata(&self) -> Metadata {
        Metadata::named("command-line flag")
            .interpolater(|_, keys| format!("--{}", keys.join("-").replace('_', "-")))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut d = Dict::new();
        let mut put = |k: &str, v: Option<FigValue>| {
            if let Some(v) = v {
                d.insert(k.to_string(), v);
            }
        };
        put("base", self.base.as_deref().map(path_value));
        put("config", self.config.as_deref().map(path_value));
        put("system", self.system.as_deref().map(path_value));
        put(
            "arch",
            self.arch.map(|a| FigValue::from(a.as_str().to_string())),
        );
        put("python", self.python.as_deref().map(path_value));
        put(
            "installer",
            self.installer.map(|i| {
                FigValue::from(match i {
                    Installer::Uv => "uv".to_string(),
                    Installer::Pip => "pip".to_string(),
                })
            }),
        );
        put("run_name", self.run_name.clone().map(FigValue::from));
        put("container", self.container.clone().map(FigValue::from));
        put("noterm", self.noterm.map(FigValue::from));
        put("db", self.db.clone().map(FigValue::from));
        Ok(one_profile(d))
    }
}

/// The `MILABENCH_*` layer, validated up front so that errors name the variable.
#[derive(Debug, Clone)]
struct EnvLayer {
    data: Dict,
}

impl EnvLayer {
    fn new(env: &EnvVars) -> Result<Self, SettingsError> {
        use env_vars::*;
        let mut d = Dict::new();
        for (var, key) in [
            (MILABENCH_BASE, "base"),
            (MILABENCH_CONFIG, "config"),
            (MILABENCH_SYSTEM, "system"),
            (MILABENCH_PYTHON, "python"),
            (MILABENCH_RUN_NAME, "run_name"),
            (MILABENCH_CONTAINER, "container"),
            (MILABENCH_DB, "db"),
        ] {
            if let Some(v) = env.get(var) {
                d.insert(key.into(), FigValue::from(v.to_string()));
            }
        }
        if let Some(v) = env.get(MILABENCH_GPU_ARCH) {
            let arch = Arch::parse_any(v).ok_or_else(|| SettingsError::InvalidEnv {
                var: MILABENCH_GPU_ARCH,
                value: v.into(),
                expected: Arch::EXPECTED_IN_ENV,
            })?;
            // A name without a driver is applied after extraction (see `Settings::load`).
            if !matches!(arch, Arch::Named(_)) {
                d.insert("arch".into(), FigValue::from(arch.as_str().to_string()));
            }
        }
        if let Some(v) = env.get(MILABENCH_INSTALLER) {
            Installer::parse(v).ok_or_else(|| SettingsError::InvalidEnv {
                var: MILABENCH_INSTALLER,
                value: v.into(),
                expected: Installer::EXPECTED,
            })?;
            d.insert(
                "installer".into(),
                FigValue::from(v.trim().to_ascii_lowercase()),
            );
        }
        if let Some(b) = env.bool(MILABENCH_NOTERM)? {
            d.insert("noterm".into(), FigValue::from(b));
        }
        let mut dirs = Dict::new();
        for (var, key) in [
            (MILABENCH_DIRS_VENV, "venv"),
            (MILABENCH_DIRS_DATA, "data"),
            (MILABENCH_DIRS_RUNS, "runs"),
            (MILABENCH_DIRS_EXTRA, "extra"),
            (MILABENCH_DIRS_CACHE, "cache"),
        ] {
            if let Some(v) = env.get(var) {
                dirs.insert(key.into(), FigValue::from(v.to_string()));
            }
        }
        if !dirs.is_empty() {
            d.insert("dirs".into(), FigValue::from(dirs));
        }
        Ok(EnvLayer { data: d })
    }
}

impl Provider for EnvLayer {
    fn metadata(&self) -> Metadata {
        Metadata::named("environment variable").interpolater(|_, keys| {
            let key = keys.join("_");
            match key.as_str() {
                "arch" => env_vars::MILABENCH_GPU_ARCH.to_string(),
                k => env_vars::option_env_var(k),
            }
        })
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(one_profile(self.data.clone()))
    }
}

impl Settings {
    /// Build the layered figment (defaults < settings file < environment < flags), for callers
    /// that want provenance (`figment.find_metadata("base")`).
    pub fn figment(flags: &SettingsFlags, env: &EnvVars) -> Result<Figment, SettingsError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        let file = match (&flags.settings, env.get(env_vars::MILABENCH_SETTINGS)) {
            (Some(p), _) => Some((p.clone(), "--settings".to_string())),
            (None, Some(p)) => Some((
                Utf8PathBuf::from(p),
                env_vars::MILABENCH_SETTINGS.to_string(),
            )),
            (None, None) => None,
        };
        if let Some((path, origin)) = file {
            // figment treats a missing file as empty: an explicitly given file must exist. What
            // exists and is not a folder is read (`/dev/null`: no settings).
            if !path.exists() {
                return Err(SettingsError::MissingFile { path, origin });
            }
            if path.is_dir() {
                return Err(SettingsError::FolderGiven { path, origin });
            }
            figment = figment.merge(Yaml::file_exact(path.as_std_path()));
        }
        Ok(figment.merge(EnvLayer::new(env)?).merge(flags.clone()))
    }

    /// Resolve the settings from every layer. Paths stay as written; see [`Settings::absolutize`].
    pub fn load(flags: &SettingsFlags, env: &EnvVars) -> Result<Settings, SettingsError> {
        let mut settings: Settings = Self::figment(flags, env)?.extract()?;
        // A name without a driver comes from `MILABENCH_GPU_ARCH` alone (see `Arch::Named`); a
        // settings file keeps to the families, and `--arch` wins over the variable.
        if flags.arch.is_none()
            && let Some(named @ Arch::Named(_)) = env
                .get(env_vars::MILABENCH_GPU_ARCH)
                .and_then(Arch::parse_any)
        {
            settings.arch = Some(named);
        }
        Ok(settings)
    }

    /// Make every relative path absolute against `cwd` (normally the current directory).
    /// `./` and `../` prefixes are folded lexically; symlinks are not resolved.
    pub fn absolutize(mut self, cwd: &Utf8Path) -> Settings {
        let abs = |p: &mut Utf8PathBuf| *p = absolute(cwd, p);
        abs(&mut self.base);
        // A bare interpreter name (`python3`) is looked up on PATH, not made absolute.
        if let Some(p) = &mut self.python
            && p.components().count() > 1
        {
            abs(p);
        }
        for p in [
            &mut self.config,
            &mut self.system,
            &mut self.dirs.venv,
            &mut self.dirs.data,
            &mut self.dirs.runs,
            &mut self.dirs.extra,
            &mut self.dirs.cache,
        ]
        .into_iter()
        .flatten()
        {
            abs(p);
        }
        // A database file (not a URL) is a path like the others.
        if let Some(db) = &mut self.db
            && !db.contains("://")
        {
            *db = absolute(cwd, Utf8Path::new(db.as_str())).into_string();
        }
        self
    }

    /// The directory layout under [`Settings::base`], with the `dirs` overrides applied.
    pub fn layout(&self) -> BaseLayout {
        BaseLayout::new(&self.base, &self.dirs)
    }
}

/// `path` joined to `cwd` when relative, with `.` and `..` components folded lexically.
pub fn absolute(cwd: &Utf8Path, path: &Utf8Path) -> Utf8PathBuf {
    use camino::Utf8Component as C;
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = Utf8PathBuf::new();
    for c in joined.components() {
        match c {
            C::CurDir => {}
            C::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests;
