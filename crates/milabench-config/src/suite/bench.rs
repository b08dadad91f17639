//! [`ResolvedBench`]: a benchmark's settings read once into typed fields when the selection
//! keeps it (stage 6), a malformed field reported with its location rather than where it is
//! used; and stage 7, the `benchfile.yaml` of each benchmark that runs, read once per folder.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use camino::Utf8PathBuf;

use crate::argv;
use crate::benchfile::BenchFile;
use crate::error::{At, ConfigError};
use crate::placeholders::PackDirs;
use crate::value::{Node, Value};

use super::inheritance::tag_list;

/// One resolved benchmark: its settings as typed values, and the tree they came from.
#[derive(Debug, Clone)]
pub struct ResolvedBench {
    /// Its name (the suite key).
    pub name: String,
    /// Its group (`group`, else its name).
    pub group: String,
    /// The benchmarks sharing one Python environment (`install_group`, else the group).
    pub install_group: String,
    /// `enabled`, as Python's truthiness.
    pub enabled: bool,
    /// Score weight (0 when absent).
    pub weight: f64,
    /// Free-form selection tags.
    pub tags: Vec<String>,
    /// The definition folder (absolute), if any.
    pub definition: Option<Utf8PathBuf>,
    /// Its folders (`dirs.*`, and `code`, the definition folder): empty where unset.
    pub folders: PackDirs,
    /// Its folder's `benchfile.yaml` (the defaults where there is none); `None` for a
    /// benchmark that does not run, whose folder is not read.
    pub benchfile: Option<Arc<BenchFile>>,
    /// `argv` rendered into arguments; launch-time placeholders are left for the planner.
    pub argv: Vec<String>,
    /// `client.argv` of a serving benchmark, rendered (empty when absent).
    pub client_argv: Vec<String>,
    /// `server.argv` of a serving benchmark, rendered (empty when absent).
    pub server_argv: Vec<String>,
    /// How it is spread over devices (`plan`).
    pub plan: PlanMethod,
    /// Its time limit (`max_duration`), `None` when unset; or why the value cannot be one,
    /// which planning reports: the Python tool's resolution keeps any value here (a matrix
    /// may leave `"{bs}"`), and so does `milabench resolve`.
    pub max_duration: Result<Option<Duration>, FieldError>,
    /// The machines a run spans (`num_machines`, 1 when unset).
    pub num_machines: usize,
    /// The expressions the system must satisfy for it to run (`requires_capabilities`).
    pub requires_capabilities: Vec<String>,
    /// Every resolved setting, as written (with `group` and `install_group` filled in): what
    /// the typed fields do not cover, and what a process gets as `MILABENCH_CONFIG`.
    pub config: Node,
}

/// A setting of a benchmark that resolves but cannot be used, reported where it would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}{message}\n  fix: {fix}")]
pub struct FieldError {
    /// Where the value is.
    pub at: At,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// The way a benchmark is spread over devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanMethod {
    /// One process per visible GPU (one on the CPU when there is none).
    PerGpu,
    /// `n` identical processes, each seeing every device.
    Njobs {
        /// Number of processes.
        n: u32,
    },
}

impl ResolvedBench {
    /// Reads the settings `config` of benchmark `name` into typed fields (without its
    /// benchfile), first filling in `group` (the name) and `install_group` (the group) where
    /// `config` has none.
    pub fn new(name: String, mut config: Node) -> Result<ResolvedBench, ConfigError> {
        fill_groups(&name, &mut config);
        let group = string(&config, "group").unwrap_or_else(|| name.clone());
        let install_group = string(&config, "install_group").unwrap_or_else(|| group.clone());
        let definition = definition(&name, &config)?;
        let folder = |key: &str| {
            Utf8PathBuf::from(
                config
                    .get("dirs")
                    .and_then(|d| d.get(key))
                    .map(Node::python_str)
                    .unwrap_or_default(),
            )
        };
        let folders = PackDirs {
            venv: folder("venv"),
            code: definition.clone().unwrap_or_default(),
            extra: folder("extra"),
            data: folder("data"),
            runs: folder("runs"),
            cache: folder("cache"),
        };
        let rendered = |node: Option<&Node>| match node {
            Some(node) => argv::render(&name, node),
            None => Ok(Vec::new()),
        };
        Ok(ResolvedBench {
            enabled: enabled(&name, &config)?,
            weight: weight(&name, &config)?,
            tags: tag_list(&config, &name)?,
            argv: rendered(config.get("argv"))?,
            client_argv: rendered(config.get("client").and_then(|p| p.get("argv")))?,
            server_argv: rendered(config.get("server").and_then(|p| p.get("argv")))?,
            plan: plan(&name, &config)?,
            max_duration: max_duration(&name, &config),
            num_machines: num_machines(&name, &config)?,
            requires_capabilities: requires_capabilities(&name, &config)?,
            name,
            group,
            install_group,
            definition,
            folders,
            benchfile: None,
            config,
        })
    }

    /// Enabled, and has a definition.
    pub fn is_runnable(&self) -> bool {
        self.enabled && self.definition.is_some()
    }

    /// A setting of the raw tree as a string, if present.
    pub fn str_setting(&self, key: &str) -> Option<String> {
        self.config.get(key).map(Node::python_str)
    }
}

/// Fills in `group` (the name) and `install_group` (the group) where the settings `config` of
/// benchmark `name` have none: the one fallback rule of selection, install and check.
pub(super) fn fill_groups(name: &str, config: &mut Node) {
    if let Some(map) = config.as_map_mut() {
        let group = map
            .entry("group".into())
            .or_insert_with(|| Node::str(name))
            .clone();
        map.entry("install_group".into()).or_insert(group);
    }
}

/// Reads the `benchfile.yaml` of every benchmark of `benches` that runs, once per folder.
pub(super) fn read_benchfiles(benches: &mut [ResolvedBench]) -> Result<(), ConfigError> {
    let mut read: HashMap<Utf8PathBuf, Arc<BenchFile>> = HashMap::new();
    for bench in benches.iter_mut().filter(|b| b.is_runnable()) {
        let folder = &bench.folders.code;
        let file = match read.get(folder) {
            Some(file) => Arc::clone(file),
            None => {
                let file = Arc::new(BenchFile::load(Path::new(folder.as_str()))?);
                read.insert(folder.clone(), Arc::clone(&file));
                file
            }
        };
        bench.benchfile = Some(file);
    }
    Ok(())
}

/// A string setting, if present.
fn string(config: &Node, key: &str) -> Option<String> {
    config.get(key).map(Node::python_str)
}

/// `definition`: a folder, or none (absent or `null`).
fn definition(name: &str, config: &Node) -> Result<Option<Utf8PathBuf>, ConfigError> {
    match config.get("definition") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => Ok(None),
        Some(Node {
            value: Value::Str(path),
            ..
        }) => Ok(Some(Utf8PathBuf::from(path))),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!(
                "`definition` of `{name}` is {} (`{}`), not a folder",
                other.kind(),
                other.python_str()
            ),
            "write the benchmark's folder, such as `definition: ../benchmarks/torchvision`",
        )),
    }
}

/// `weight`: a finite number at least 0, 0 when absent. Refused otherwise: the report would
/// count a word as 0 without a word, and a negative or NaN weight would turn the score around
/// or make it NaN.
fn weight(name: &str, config: &Node) -> Result<f64, ConfigError> {
    let Some(node) = config
        .get("weight")
        .filter(|node| !matches!(node.value, Value::Null))
    else {
        return Ok(0.0);
    };
    match node.value {
        Value::Int(i) if i >= 0 => Ok(i as f64),
        Value::Float(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(ConfigError::shape(
            node.location.clone(),
            format!(
                "`weight` of `{name}` is {} (`{}`), not a number at least 0",
                node.kind(),
                node.python_str()
            ),
            "write a number, such as `weight: 1` (`weight: 0` leaves the benchmark out of the score)",
        )),
    }
}

/// `enabled`: `true` or `false`, false when absent or `null`. Refused otherwise: Python's
/// truthiness would enable `enabled: 'false'` and `enabled: maybe`.
fn enabled(name: &str, config: &Node) -> Result<bool, ConfigError> {
    match config.get("enabled") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => Ok(false),
        Some(Node {
            value: Value::Bool(enabled),
            ..
        }) => Ok(*enabled),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!(
                "`enabled` of `{name}` is {} (`{}`), not true or false",
                other.kind(),
                other.python_str()
            ),
            "write `enabled: true` or `enabled: false`, without quotes",
        )),
    }
}

/// `plan`: a mapping, `per_gpu` when absent or `null`.
fn plan(name: &str, config: &Node) -> Result<PlanMethod, ConfigError> {
    let plan = match config.get("plan") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => return Ok(PlanMethod::PerGpu),
        Some(
            plan @ Node {
                value: Value::Map(_),
                ..
            },
        ) => plan,
        Some(other) => {
            return Err(ConfigError::shape(
                other.location.clone(),
                format!(
                    "`plan` of `{name}` is {} (`{}`), not a mapping",
                    other.kind(),
                    other.python_str()
                ),
                "write `plan: {method: per_gpu}` or `plan: {method: njobs, n: 2}`",
            ));
        }
    };
    let method = plan
        .get("method")
        .map(Node::python_str)
        .unwrap_or_else(|| "per_gpu".into())
        .replace('-', "_");
    match method.as_str() {
        "per_gpu" => Ok(PlanMethod::PerGpu),
        "njobs" => match plan.get("n").map(|n| &n.value) {
            Some(Value::Int(n)) if *n >= 1 && *n <= u32::MAX as i64 => {
                Ok(PlanMethod::Njobs { n: *n as u32 })
            }
            None => Ok(PlanMethod::Njobs { n: 1 }),
            _ => Err(ConfigError::shape(
                plan.get("n").and_then(|n| n.location.clone()),
                format!("`plan.n` of `{name}` is not a positive integer"),
                "write `plan: {method: njobs, n: 2}`",
            )),
        },
        other => Err(ConfigError::shape(
            plan.location.clone(),
            format!("`{name}` has unknown plan method `{other}`"),
            "use `per_gpu` or `njobs`",
        )),
    }
}

/// `max_duration`: a positive number of seconds, `None` when absent or `null`.
fn max_duration(name: &str, config: &Node) -> Result<Option<Duration>, FieldError> {
    let Some(node) = config.get("max_duration") else {
        return Ok(None);
    };
    let seconds = match &node.value {
        Value::Null => return Ok(None),
        Value::Int(s) if *s > 0 => Some(Duration::from_secs(*s as u64)),
        Value::Float(s) if *s > 0.0 => Duration::try_from_secs_f64(*s).ok(),
        _ => None,
    };
    seconds.map(Some).ok_or_else(|| FieldError {
        at: At(node.location.clone()),
        message: format!(
            "`max_duration` of `{name}` is {} (`{}`), not a positive number of seconds",
            node.kind(),
            node.python_str()
        ),
        fix: "write a number of seconds, such as `max_duration: 600`".into(),
    })
}

/// `num_machines`: a positive integer, 1 when absent or `null`.
fn num_machines(name: &str, config: &Node) -> Result<usize, ConfigError> {
    match config.get("num_machines") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => Ok(1),
        Some(Node {
            value: Value::Int(n),
            ..
        }) if *n >= 1 => Ok(usize::try_from(*n).unwrap_or(usize::MAX)),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!(
                "`num_machines` of `{name}` is {} (`{}`), not a positive integer",
                other.kind(),
                other.python_str()
            ),
            "write the number of nodes a run spans, such as `num_machines: 2`",
        )),
    }
}

/// `requires_capabilities`: a list of expressions, empty when absent or `null`.
fn requires_capabilities(name: &str, config: &Node) -> Result<Vec<String>, ConfigError> {
    match config.get("requires_capabilities") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => Ok(Vec::new()),
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => Ok(items.iter().map(Node::python_str).collect()),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!(
                "`requires_capabilities` of `{name}` is {}, not a list",
                other.kind()
            ),
            "write a list of expressions, such as `requires_capabilities: [\"len(nodes) >= 2\"]`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;

    fn bench(text: &str) -> Result<ResolvedBench, ConfigError> {
        ResolvedBench::new("b".into(), parse_str(text, "suite.yaml").expect("yaml"))
    }

    #[test]
    fn fields_are_typed_once_with_the_one_group_fallback() {
        let b = bench(
            "{enabled: true, weight: 2, definition: /bench/b, dirs: {venv: /v, data: /d},\n\
             argv: {--x: 1}, server: {argv: [--port, 8000]}, plan: {method: njobs, n: 3},\n\
             max_duration: 1.5, num_machines: 2, requires_capabilities: ['len(nodes) >= 2']}",
        )
        .expect("typed");
        assert_eq!((b.group.as_str(), b.install_group.as_str()), ("b", "b"));
        assert_eq!(
            b.config.get("install_group").map(Node::python_str),
            Some("b".into())
        );
        assert_eq!(b.weight, 2.0);
        assert_eq!(b.folders.venv, "/v");
        assert_eq!(b.folders.code, "/bench/b");
        assert_eq!(b.folders.cache, "");
        assert_eq!(b.argv, ["--x", "1"]);
        assert!(b.client_argv.is_empty());
        assert_eq!(b.server_argv, ["--port", "8000"]);
        assert_eq!(b.plan, PlanMethod::Njobs { n: 3 });
        assert_eq!(b.max_duration, Ok(Some(Duration::from_millis(1500))));
        assert_eq!(b.num_machines, 2);
        assert_eq!(b.requires_capabilities, ["len(nodes) >= 2"]);
        assert!(b.is_runnable());
        let grouped = bench("{group: g}").expect("typed");
        assert_eq!(grouped.install_group, "g");
        assert!(!grouped.is_runnable());
    }

    #[test]
    fn a_malformed_field_is_reported_with_its_location() {
        for (text, expected) in [
            ("{weight: heavy}", "suite.yaml:1:10: `weight` of `b` is"),
            (
                "{plan: njobs}",
                "suite.yaml:1:8: `plan` of `b` is a string (`njobs`), not a mapping",
            ),
            (
                "{enabled: maybe}",
                "suite.yaml:1:11: `enabled` of `b` is a string (`maybe`), not true or false",
            ),
            (
                "{enabled: 'false'}",
                "suite.yaml:1:11: `enabled` of `b` is a string (`false`), not true or false",
            ),
            (
                "{weight: -1}",
                "suite.yaml:1:10: `weight` of `b` is an integer (`-1`), not a number at least 0",
            ),
            (
                "{weight: .nan}",
                "suite.yaml:1:10: `weight` of `b` is a float",
            ),
            (
                "{weight: -.inf}",
                "suite.yaml:1:10: `weight` of `b` is a float",
            ),
            (
                "{plan: {method: spread}}",
                "suite.yaml:1:8: `b` has unknown plan method `spread`",
            ),
            (
                "{plan: {method: njobs, n: 0}}",
                "suite.yaml:1:27: `plan.n` of `b` is not a positive integer",
            ),
            (
                "{num_machines: two}",
                "suite.yaml:1:16: `num_machines` of `b`",
            ),
            (
                "{requires_capabilities: 'len(nodes) > 1'}",
                "suite.yaml:1:25: `requires_capabilities` of `b` is",
            ),
            ("{definition: 3}", "suite.yaml:1:14: `definition` of `b`"),
            ("{argv: {--x: false}}", "suite.yaml:1:14: argv of `b`"),
        ] {
            let err = bench(text).expect_err(text).to_string();
            assert!(err.starts_with(expected), "{text}: {err}");
        }
    }

    #[test]
    fn a_time_limit_that_is_no_number_resolves_and_is_refused_where_it_is_used() {
        let b = bench("{max_duration: '{bs}'}").expect("resolves, as the Python tool does");
        let err = b.max_duration.expect_err("no time limit").to_string();
        assert!(
            err.starts_with("suite.yaml:1:16: `max_duration` of `b` is a string (`{bs}`)"),
            "{err}"
        );
        assert_eq!(
            bench("{max_duration: null}").expect("typed").max_duration,
            Ok(None)
        );
    }
}
