//! Typed options of the system file (`system.options`, reference §1.20) with their
//! `MILABENCH_<A_B_C>` environment overrides.
//!
//! Precedence is environment variable > `system.options.a.b.c` > default, and every value is
//! parsed for its type. Unlike the Python tool (which keeps the first *truthy* value, so
//! `MILABENCH_CPU_ENABLED=0` could never disable anything), a set value always wins, falsy or not.

use serde_json::Value as Json;

use super::{BOOL_EXPECTED, EnvVars, env_vars::option_env_var, parse_bool};

/// A bad option value, naming its source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    /// The environment variable does not parse as the option's type.
    #[error(
        "environment variable {var}={value:?} is invalid: expected {expected}; fix or unset {var}"
    )]
    Env {
        /// Variable name.
        var: String,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// The system file value does not fit the option's type.
    #[error(
        "system file option system.options.{option} = {value} is invalid: expected {expected}; fix it in the system file or override it with {var}"
    )]
    System {
        /// Dotted option name.
        option: String,
        /// The value, as JSON.
        value: String,
        /// What is accepted.
        expected: &'static str,
        /// The overriding variable.
        var: String,
    },
}

/// Reads options from the environment and the system file's option tree.
#[derive(Debug, Clone, Copy)]
pub struct OptionSource<'a> {
    env: &'a EnvVars,
    system_options: Option<&'a Json>,
}

const INT_EXPECTED: &str = "a non-negative integer";
const SIGNED_EXPECTED: &str = "an integer";
const FLOAT_EXPECTED: &str = "a number";
const STRING_EXPECTED: &str = "a string";
const MEMORY_EXPECTED: &str = "a memory size above 0 with its unit, such as `80 GiB`, or `All`";

impl<'a> OptionSource<'a> {
    /// `system_options` is the `system.options` mapping of the system file, if any.
    pub fn new(env: &'a EnvVars, system_options: Option<&'a Json>) -> Self {
        OptionSource {
            env,
            system_options,
        }
    }

    fn system_value(&self, option: &str) -> Option<&'a Json> {
        let mut node = self.system_options?;
        for part in option.split('.') {
            node = node.as_object()?.get(part)?;
        }
        (!node.is_null()).then_some(node)
    }

    fn read<T>(
        &self,
        option: &str,
        expected: &'static str,
        from_text: impl Fn(&str) -> Option<T>,
        from_json: impl Fn(&Json) -> Option<T>,
    ) -> Result<Option<T>, OptionError> {
        let var = option_env_var(option);
        if let Some(text) = self.env.get(&var) {
            return from_text(text.trim()).map(Some).ok_or(OptionError::Env {
                var,
                value: text.to_string(),
                expected,
            });
        }
        let Some(value) = self.system_value(option) else {
            return Ok(None);
        };
        let parsed = match value {
            Json::String(s) => from_text(s.trim()),
            v => from_json(v),
        };
        parsed.map(Some).ok_or_else(|| OptionError::System {
            option: option.to_string(),
            value: value.to_string(),
            expected,
            var: option_env_var(option),
        })
    }

    /// Boolean option (strict: see [`parse_bool`]; in the file also `true`/`false`, `0`/`1`).
    pub fn bool(&self, option: &str) -> Result<Option<bool>, OptionError> {
        self.read(option, BOOL_EXPECTED, parse_bool, |v| match v {
            Json::Bool(b) => Some(*b),
            Json::Number(n) => match n.as_u64() {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            },
            _ => None,
        })
    }

    /// Non-negative integer option.
    pub fn count(&self, option: &str) -> Result<Option<u64>, OptionError> {
        self.read(option, INT_EXPECTED, |s| s.parse().ok(), Json::as_u64)
    }

    /// Signed integer option.
    pub fn int(&self, option: &str) -> Result<Option<i64>, OptionError> {
        self.read(option, SIGNED_EXPECTED, |s| s.parse().ok(), Json::as_i64)
    }

    /// Floating-point option (finite).
    pub fn float(&self, option: &str) -> Result<Option<f64>, OptionError> {
        self.read(
            option,
            FLOAT_EXPECTED,
            |s| s.parse::<f64>().ok().filter(|f| f.is_finite()),
            Json::as_f64,
        )
    }

    /// String option (numbers in the file are accepted and rendered).
    pub fn string(&self, option: &str) -> Result<Option<String>, OptionError> {
        self.read(
            option,
            STRING_EXPECTED,
            |s| Some(s.to_string()),
            |v| match v {
                Json::Number(n) => Some(n.to_string()),
                _ => None,
            },
        )
    }

    /// Memory-size option: `All`, or a size above 0 with its unit (`80 GiB`, `64Go`).
    pub fn memory_size(&self, option: &str) -> Result<Option<String>, OptionError> {
        self.read(
            option,
            MEMORY_EXPECTED,
            |s| (s == "All" || is_memory_size(s)).then(|| s.to_string()),
            |_| None,
        )
    }
}

/// The `cpu.*` options [`CpuOptions::read`] reads, without their group.
pub const CPU_OPTIONS: &[&str] = &[
    "enabled",
    "total_count",
    "max",
    "min",
    "reserved_cores",
    "n_workers",
];

/// The `sizer.*` options [`SizerOptions::read`] reads, without their group.
pub const SIZER_OPTIONS: &[&str] = &[
    "auto",
    "batch_size",
    "add",
    "mult",
    "multiple",
    "power",
    "optimized",
    "capacity",
    "save",
    "config",
];

/// The options of `group` (`cpu`, `sizer`), or `None` for a group milabench does not read.
pub fn known_options(group: &str) -> Option<&'static [&'static str]> {
    match group {
        "cpu" => Some(CPU_OPTIONS),
        "sizer" => Some(SIZER_OPTIONS),
        _ => None,
    }
}

/// Whether `text` is a memory size above 0 with a unit the sizer knows (`80 GiB`, `64Go`).
pub fn is_memory_size(text: &str) -> bool {
    crate::placeholders::sizer::to_bytes(text).is_some_and(|bytes| bytes > 0.0)
}

fn usize_of(v: Option<u64>) -> Option<usize> {
    v.map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

/// CPU options (`cpu.*`), used by `auto(v, d)` and the `cpu_count`/`n_worker` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuOptions {
    /// `cpu.enabled` (default false): `auto(v, d)` gives `v` instead of `d`.
    pub enabled: bool,
    /// `cpu.total_count`: CPU count to use instead of the detected one.
    pub total_count: Option<usize>,
    /// `cpu.max` (default 16): upper bound of `n_worker`.
    pub max: usize,
    /// `cpu.min` (default 2): lower bound of `n_worker`.
    pub min: usize,
    /// `cpu.reserved_cores` (default 0): cores kept out of `cpu_count`.
    pub reserved_cores: usize,
    /// `cpu.n_workers`: fixed `n_worker`.
    pub n_workers: Option<usize>,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            enabled: false,
            total_count: None,
            max: 16,
            min: 2,
            reserved_cores: 0,
            n_workers: None,
        }
    }
}

impl CpuOptions {
    /// Read every `cpu.*` option (env > system file > default).
    pub fn read(src: &OptionSource<'_>) -> Result<Self, OptionError> {
        let d = CpuOptions::default();
        Ok(CpuOptions {
            enabled: src.bool("cpu.enabled")?.unwrap_or(d.enabled),
            total_count: usize_of(src.count("cpu.total_count")?),
            max: usize_of(src.count("cpu.max")?).unwrap_or(d.max),
            min: usize_of(src.count("cpu.min")?).unwrap_or(d.min),
            reserved_cores: usize_of(src.count("cpu.reserved_cores")?).unwrap_or(d.reserved_cores),
            n_workers: usize_of(src.count("cpu.n_workers")?),
        })
    }
}

/// Batch-size sizer options (`sizer.*`), used by `auto_batch(n)`.
#[derive(Debug, Clone, PartialEq)]
pub struct SizerOptions {
    /// `sizer.auto` (default false): `auto_batch(n)` may change `n`.
    pub auto: bool,
    /// `sizer.batch_size`: fixed batch size.
    pub batch_size: Option<u64>,
    /// `sizer.add`: added after `mult`.
    pub add: Option<i64>,
    /// `sizer.mult`: multiplies the batch size.
    pub mult: Option<f64>,
    /// `sizer.multiple` (default 8): suggested sizes are floored to a multiple of it.
    pub multiple: Option<u64>,
    /// `sizer.power`: suggested sizes become `power^floor(log2(size))`.
    pub power: Option<u64>,
    /// `sizer.optimized`: pick the best-performing observation that fits.
    pub optimized: bool,
    /// `sizer.capacity`: target GPU memory (`"80 GiB"`; `"All"` = detected).
    pub capacity: Option<String>,
    /// `sizer.save`: scaling file to append observations to.
    pub save: Option<String>,
    /// `sizer.config`: scaling file to read.
    pub config: Option<String>,
}

impl Default for SizerOptions {
    fn default() -> Self {
        SizerOptions {
            auto: false,
            batch_size: None,
            add: None,
            mult: None,
            multiple: Some(8),
            power: None,
            optimized: false,
            capacity: None,
            save: None,
            config: None,
        }
    }
}

impl SizerOptions {
    /// Read every `sizer.*` option (env > system file > default).
    pub fn read(src: &OptionSource<'_>) -> Result<Self, OptionError> {
        let d = SizerOptions::default();
        Ok(SizerOptions {
            auto: src.bool("sizer.auto")?.unwrap_or(d.auto),
            batch_size: src.count("sizer.batch_size")?,
            add: src.int("sizer.add")?,
            mult: src.float("sizer.mult")?,
            multiple: src.count("sizer.multiple")?.or(d.multiple),
            power: src.count("sizer.power")?,
            optimized: src.bool("sizer.optimized")?.unwrap_or(d.optimized),
            capacity: src.memory_size("sizer.capacity")?,
            save: src.string("sizer.save")?,
            config: src.string("sizer.config")?,
        })
    }

    /// The settings given that do nothing because `sizer.auto` is off (the Python tool's
    /// semantics: `auto_batch(n)` then gives `n` whatever they say), as `name=value`; empty
    /// when the sizer is on.
    pub fn without_effect(&self) -> Vec<String> {
        if self.auto {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut note = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                out.push(format!("sizer.{name}={value}"));
            }
        };
        note("batch_size", self.batch_size.map(|v| v.to_string()));
        note("add", self.add.map(|v| v.to_string()));
        note("mult", self.mult.map(|v| v.to_string()));
        note("power", self.power.map(|v| v.to_string()));
        note("optimized", self.optimized.then(|| "true".to_owned()));
        note("capacity", self.capacity.clone());
        note("config", self.config.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizer_settings_without_auto_are_named() {
        let mut sizer = SizerOptions {
            batch_size: Some(64),
            mult: Some(2.0),
            ..SizerOptions::default()
        };
        assert_eq!(
            sizer.without_effect(),
            ["sizer.batch_size=64", "sizer.mult=2"]
        );
        sizer.auto = true;
        assert!(sizer.without_effect().is_empty());
        assert!(SizerOptions::default().without_effect().is_empty());
    }

    #[test]
    fn defaults_without_sources() {
        let env = EnvVars::default();
        let src = OptionSource::new(&env, None);
        assert_eq!(CpuOptions::read(&src).unwrap(), CpuOptions::default());
        assert_eq!(SizerOptions::read(&src).unwrap(), SizerOptions::default());
    }

    #[test]
    fn env_beats_system_even_when_falsy() {
        let env = EnvVars::from_pairs([
            ("MILABENCH_CPU_ENABLED", "0"),
            ("MILABENCH_SIZER_AUTO", "off"),
        ]);
        let opts =
            json!({"cpu": {"enabled": true, "max": 4}, "sizer": {"auto": 1, "multiple": 16}});
        let src = OptionSource::new(&env, Some(&opts));
        let cpu = CpuOptions::read(&src).unwrap();
        assert!(!cpu.enabled);
        assert_eq!(cpu.max, 4);
        let sizer = SizerOptions::read(&src).unwrap();
        assert!(!sizer.auto);
        assert_eq!(sizer.multiple, Some(16));
    }

    #[test]
    fn system_values_typed() {
        let env = EnvVars::default();
        let opts = json!({"cpu": {"enabled": "yes", "n_workers": 3},
                          "sizer": {"mult": 0.5, "add": -2, "capacity": "40 GiB"}});
        let src = OptionSource::new(&env, Some(&opts));
        let cpu = CpuOptions::read(&src).unwrap();
        assert!(cpu.enabled);
        assert_eq!(cpu.n_workers, Some(3));
        let sizer = SizerOptions::read(&src).unwrap();
        assert_eq!(sizer.mult, Some(0.5));
        assert_eq!(sizer.add, Some(-2));
        assert_eq!(sizer.capacity.as_deref(), Some("40 GiB"));
    }

    #[test]
    fn bad_env_value_names_variable() {
        let env = EnvVars::from_pairs([("MILABENCH_CPU_ENABLED", "maybe")]);
        let err = CpuOptions::read(&OptionSource::new(&env, None)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("MILABENCH_CPU_ENABLED"), "{msg}");
        assert!(msg.contains("1, true, yes, on"), "{msg}");

        let env = EnvVars::from_pairs([("MILABENCH_CPU_MAX", "-3")]);
        let err = CpuOptions::read(&OptionSource::new(&env, None)).unwrap_err();
        assert!(err.to_string().contains("non-negative integer"));
    }

    #[test]
    fn bad_system_value_names_option() {
        let env = EnvVars::default();
        let opts = json!({"sizer": {"auto": [1]}});
        let err = SizerOptions::read(&OptionSource::new(&env, Some(&opts))).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("system.options.sizer.auto"), "{msg}");
        assert!(msg.contains("MILABENCH_SIZER_AUTO"), "{msg}");
    }

    #[test]
    fn every_known_option_is_read() {
        let env = EnvVars::default();
        for (group, names) in [("cpu", CPU_OPTIONS), ("sizer", SIZER_OPTIONS)] {
            for name in names {
                // A list fits no option's type: reading it fails exactly when it is read.
                let opts = json!({group: {*name: [1]}});
                let src = OptionSource::new(&env, Some(&opts));
                let read = match group {
                    "cpu" => CpuOptions::read(&src).err(),
                    _ => SizerOptions::read(&src).err(),
                };
                assert!(read.is_some(), "{group}.{name} is listed but not read");
            }
        }
        assert_eq!(known_options("gpu"), None);
    }

    #[test]
    fn a_capacity_is_a_memory_size_or_all() {
        let env = EnvVars::from_pairs([("MILABENCH_SIZER_CAPACITY", "lots")]);
        let err = SizerOptions::read(&OptionSource::new(&env, None)).unwrap_err();
        assert!(
            err.to_string().starts_with("environment variable MILABENCH_SIZER_CAPACITY=\"lots\" is invalid: expected a memory size"),
            "{err}"
        );
        let env = EnvVars::default();
        for bad in [
            json!("-5 GiB"),
            json!("0"),
            json!("lots"),
            json!(0),
            json!("5 parsecs"),
        ] {
            let opts = json!({"sizer": {"capacity": bad}});
            let err = SizerOptions::read(&OptionSource::new(&env, Some(&opts))).unwrap_err();
            assert!(
                err.to_string().contains("system.options.sizer.capacity"),
                "{err}"
            );
        }
        for good in ["All", "80 GiB", "64Go", "40000 MiB"] {
            let opts = json!({"sizer": {"capacity": good}});
            let sizer = SizerOptions::read(&OptionSource::new(&env, Some(&opts))).unwrap();
            assert_eq!(sizer.capacity.as_deref(), Some(good));
        }
    }

    #[test]
    fn null_in_file_is_unset() {
        let env = EnvVars::default();
        let opts = json!({"cpu": {"max": null}});
        let cpu = CpuOptions::read(&OptionSource::new(&env, Some(&opts))).unwrap();
        assert_eq!(cpu.max, 16);
    }
}
