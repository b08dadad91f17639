//! Suite resolution: suite YAML files -> the ordered list of resolved benchmarks.
//!
//! The order of operations is milabench's:
//! 1. layers: the built-in `_defaults` entry, every file with its `include`s expanded depth
//!    first (an included file comes before the file that includes it), then each `--override`;
//!    folded with [`merge`];
//! 2. matrix entries replaced by one benchmark per combination;
//! 3. `inherits` chains (tags accumulate), then the `*` entry on top of every benchmark;
//! 4. finalisation (`name`, absolute `definition`, `tag`), private `_names` and `*` dropped;
//! 5. `${...}` interpolation over `{system, multirun, packs}`;
//! 6. selection (`enabled`, `definition`, `--select`, `--exclude`).
//!
//! Deliberate differences from the Python tool (its defects): a relative `definition` is
//! resolved against the folder of the file that wrote it; the `*` entry does not carry its
//! file's `config_base`; a string matrix value is one value, not a list of characters; matrix
//! argv values mix matrix and launch-time placeholders; include and inheritance cycles are
//! errors instead of endless loops; keys with dashes work in dotted overrides; a benchmark
//! without `group`/`install_group` gets its name rather than crashing selection. The resolved
//! `system` is kept once in [`Suite::system`] instead of being copied into every benchmark (the
//! Python tool's `system: ${system}` default); the `config` event of a process and
//! `milabench resolve --with-system` put it back in.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::argv;
use crate::error::{At, ConfigError, did_you_mean};
use crate::interpolate;
use crate::limits::{
    MAX_INCLUDE_DEPTH, MAX_INCLUDED_FILES, MAX_MATRIX_BENCHMARKS, MAX_NESTING, MAX_SUITE_VALUES,
};
use crate::merge::merge;
use crate::system::SystemConfig;
use crate::value::{Location, Map, Node, Value};
use crate::yaml;

/// The settings a suite entry may hold: milabench's, `requires_python`, `python` (an existing
/// interpreter for the install group), and those the loader adds itself. Any other key is
/// reported as a warning with the nearest of these.
const KNOWN_KEYS: [&str; 38] = [
    "inherits",
    "definition",
    "enabled",
    "weight",
    "group",
    "install_group",
    "install_variant",
    "requires_python",
    "python",
    "tags",
    "url",
    "plan",
    "argv",
    "env",
    "voir",
    "validation",
    "max_duration",
    "num_machines",
    "requires_capabilities",
    "use_deepspeed",
    "gradient_accumulation_steps",
    "pip",
    "venv",
    "client",
    "server",
    "matrix",
    "job",
    "name",
    "tag",
    "system",
    "run_name",
    "dirs",
    "config_base",
    "config_file",
    "capabilities",
    "device",
    "devices",
    "job-number",
];

/// Tags of which every benchmark should carry exactly one.
const MONITOR_TAGS: [&str; 3] = ["monogpu", "multigpu", "multinode"];

/// What to resolve.
pub struct SuiteRequest<'a> {
    /// The suite file.
    pub config: &'a Path,
    /// The resolved system file.
    pub system: &'a SystemConfig,
    /// `--override` values, in order.
    pub overrides: &'a [String],
    /// `--select` names (empty: everything).
    pub select: &'a [String],
    /// `--exclude` names.
    pub exclude: &'a [String],
    /// Environment lookup for `${oc.env:...}`.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> SuiteRequest<'a> {
    /// A request for the whole suite: no overrides, no selection.
    pub fn whole(
        config: &'a Path,
        system: &'a SystemConfig,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> SuiteRequest<'a> {
        SuiteRequest {
            config,
            system,
            overrides: &[],
            select: &[],
            exclude: &[],
            env,
        }
    }
}

/// A resolved suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Every public benchmark, enabled or not, in suite order.
    pub benches: Vec<Bench>,
    /// The resolved `system` mapping.
    pub system: Node,
    /// Every entry after inheritance, private ones included, before interpolation (report
    /// weights are read from here).
    pub raw: Map,
    /// Non-fatal remarks, e.g. benchmarks without a monitor tag.
    pub warnings: Vec<String>,
}

impl Suite {
    /// The benchmarks that would run: enabled, with a definition, and selected.
    pub fn runnable(&self) -> impl Iterator<Item = &Bench> {
        self.benches.iter().filter(|b| b.is_runnable())
    }
}

/// One resolved benchmark.
#[derive(Debug, Clone)]
pub struct Bench {
    /// Its name (the suite key).
    pub name: String,
    /// Its resolved settings.
    pub config: Node,
    /// Whether `--select`/`--exclude` keep it.
    pub matches_selection: bool,
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

impl Bench {
    /// `enabled`, as Python's truthiness.
    pub fn enabled(&self) -> bool {
        self.config.get("enabled").is_some_and(Node::is_truthy)
    }

    /// Enabled, has a definition, and kept by the selection.
    pub fn is_runnable(&self) -> bool {
        self.enabled() && self.config.get("definition").is_some() && self.matches_selection
    }

    /// Score weight (0 when absent).
    pub fn weight(&self) -> f64 {
        match self.config.get("weight").map(|w| &w.value) {
            Some(Value::Int(i)) => *i as f64,
            Some(Value::Float(x)) => *x,
            _ => 0.0,
        }
    }

    /// Free-form selection tags.
    pub fn tags(&self) -> Vec<String> {
        match self.config.get("tags").map(|t| &t.value) {
            Some(Value::Seq(items)) => items.iter().map(Node::python_str).collect(),
            _ => Vec::new(),
        }
    }

    /// A string setting, if present.
    pub fn str_setting(&self, key: &str) -> Option<String> {
        self.config.get(key).map(Node::python_str)
    }

    /// The group (defaults to the name).
    pub fn group(&self) -> String {
        self.str_setting("group")
            .unwrap_or_else(|| self.name.clone())
    }

    /// The install group: benchmarks sharing one Python environment.
    pub fn install_group(&self) -> String {
        self.str_setting("install_group")
            .unwrap_or_else(|| self.group())
    }

    /// One of the benchmark's folders (`dirs.<key>`: venv, data, runs, extra, cache), if set.
    pub fn dir(&self, key: &str) -> Option<String> {
        self.config
            .get("dirs")
            .and_then(|d| d.get(key))
            .map(Node::python_str)
    }

    /// The definition folder, if any.
    pub fn definition(&self) -> Option<String> {
        self.config
            .get("definition")
            .and_then(Node::as_str)
            .map(str::to_string)
    }

    /// The rendered command-line arguments.
    pub fn argv(&self) -> Result<Vec<String>, ConfigError> {
        match self.config.get("argv") {
            Some(node) => argv::render(&self.name, node),
            None => Ok(Vec::new()),
        }
    }

    /// The plan method.
    pub fn plan(&self) -> Result<PlanMethod, ConfigError> {
        let Some(plan) = self.config.get("plan") else {
            return Ok(PlanMethod::PerGpu);
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
                    format!("`plan.n` of `{}` is not a positive integer", self.name),
                    "write `plan: {method: njobs, n: 2}`",
                )),
            },
            other => Err(ConfigError::shape(
                plan.location.clone(),
                format!("`{}` has unknown plan method `{other}`", self.name),
                "use `per_gpu` or `njobs`",
            )),
        }
    }

    /// The keys that `--select`/`--exclude` match against.
    pub fn selection_keys(&self) -> Vec<String> {
        let mut keys = vec![
            "*".to_string(),
            self.name.clone(),
            self.group(),
            self.install_group(),
        ];
        keys.extend(self.tags());
        if let Some(def) = self.definition()
            && let Some(base) = Path::new(&def).file_name()
        {
            keys.push(base.to_string_lossy().into_owned());
        }
        keys
    }
}

/// Resolves a suite.
pub fn resolve_suite(request: &SuiteRequest<'_>) -> Result<Suite, ConfigError> {
    let mut layers = vec![builtin_defaults()];
    let config = absolute(request.config);
    let mut stack = Vec::new();
    let mut loaded = HashSet::new();
    let mut files_read = 0;
    file_layers(
        &config,
        None,
        &mut stack,
        &mut layers,
        &mut loaded,
        &mut files_read,
    )?;
    let mut warnings = Vec::new();
    for layer in &layers[1..] {
        unknown_key_warnings(layer, &mut warnings);
    }
    let mut entry_names: HashSet<String> = HashSet::new();
    for layer in &layers {
        entry_names.extend(layer.as_map().into_iter().flat_map(|m| m.keys().cloned()));
    }
    for (i, text) in request.overrides.iter().enumerate() {
        let layer = parse_override(i + 1, text)?;
        for entry in layer.as_map().into_iter().flat_map(|m| m.keys()) {
            if entry != "*" && !entry_names.contains(entry) {
                return Err(ConfigError::OverrideUnknownEntry {
                    text: text.clone(),
                    entry: entry.clone(),
                    suggestion: did_you_mean(entry, entry_names.iter().map(String::as_str)),
                });
            }
        }
        unknown_key_warnings(&layer, &mut warnings);
        layers.push(layer);
    }
    let mut merged = Node::empty_map();
    for layer in layers {
        merged = merge(merged, layer, "")?;
    }
    let Value::Map(entries) = merged.value else {
        unreachable!("layers are mappings")
    };
    let entries = expand_matrices(entries)?;
    let entries = resolve_inheritance(entries)?;
    let mut packs = Map::default();
    for (name, node) in &entries {
        if name.starts_with('_') || name == "*" {
            continue;
        }
        packs.insert(
            name.clone(),
            finalize(name, node.clone(), &loaded, &mut warnings)?,
        );
    }
    let mut root = Map::default();
    root.insert("system".into(), request.system.tree.clone());
    if let Some(multirun) = &request.system.multirun {
        // Readable by `${multirun...}` as in the Python tool; its runs are `sweep`'s.
        root.insert("multirun".into(), multirun.clone());
    }
    root.insert("packs".into(), Node::new(Value::Map(packs)));
    let mut root = Node::new(Value::Map(root));
    interpolate::resolve_all(&mut root, request.env)?;
    let Value::Map(mut root) = root.value else {
        unreachable!("root is a mapping")
    };
    let system = root.shift_remove("system").unwrap_or_else(Node::empty_map);
    let Some(Node {
        value: Value::Map(packs),
        ..
    }) = root.shift_remove("packs")
    else {
        unreachable!("packs is a mapping")
    };
    let select: HashSet<&str> = request.select.iter().map(String::as_str).collect();
    let exclude: HashSet<&str> = request.exclude.iter().map(String::as_str).collect();
    let mut benches = Vec::with_capacity(packs.len());
    for (name, mut config) in packs {
        if let Some(map) = config.as_map_mut() {
            if !map.contains_key("group") {
                map.insert("group".into(), Node::str(name.clone()));
            }
            if !map.contains_key("install_group") {
                let group = map
                    .get("group")
                    .cloned()
                    .unwrap_or_else(|| Node::str(name.clone()));
                map.insert("install_group".into(), group);
            }
        }
        let mut bench = Bench {
            name,
            config,
            matches_selection: true,
        };
        check_weight(&bench)?;
        if bench.enabled() && bench.definition().is_none() {
            warnings.push(format!(
                "`{}` is enabled but has no `definition`, so it never runs\n  fix: give it `definition: <benchmark folder>` (or inherit one), or set `enabled: false`",
                bench.name
            ));
        }
        let keys = bench.selection_keys();
        let selected = select.is_empty() || keys.iter().any(|k| select.contains(k.as_str()));
        let excluded = keys.iter().any(|k| exclude.contains(k.as_str()));
        bench.matches_selection = selected && !excluded;
        benches.push(bench);
    }
    check_selection_names("--select", request.select, &benches)?;
    check_selection_names("--exclude", request.exclude, &benches)?;
    Ok(Suite {
        benches,
        system,
        raw: entries,
        warnings,
    })
}

/// Warns about every key of the entries of `layer` (and of their matrix `job`s) that is not one
/// of [`KNOWN_KEYS`], naming the nearest known key: a typo such as `defintion` would otherwise
/// be dropped without a word.
fn unknown_key_warnings(layer: &Node, warnings: &mut Vec<String>) {
    let Some(entries) = layer.as_map() else {
        return;
    };
    for (name, entry) in entries {
        let Some(map) = entry.as_map() else {
            continue;
        };
        let job = map
            .get("job")
            .filter(|_| map.contains_key("matrix"))
            .and_then(Node::as_map);
        for (key, value) in map.iter().chain(job.into_iter().flatten()) {
            if KNOWN_KEYS.contains(&key.as_str()) {
                continue;
            }
            let suggestion = did_you_mean(key, KNOWN_KEYS);
            let fix = if suggestion.is_empty() {
                "remove it, or correct it to a setting milabench knows".to_string()
            } else {
                "correct the spelling".to_string()
            };
            warnings.push(format!(
                "{}`{name}` has the unknown setting `{key}`, which nothing reads{suggestion}\n  fix: {fix}",
                At(value.location.clone())
            ));
        }
    }
}

/// Refuses a `weight` that is not a number: the report would count it as 0 without a word.
fn check_weight(bench: &Bench) -> Result<(), ConfigError> {
    match bench.config.get("weight") {
        Some(Node {
            value: Value::Int(_) | Value::Float(_) | Value::Null,
            ..
        })
        | None => Ok(()),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!(
                "`weight` of `{}` is {} (`{}`), not a number",
                bench.name,
                other.kind(),
                other.python_str()
            ),
            "write a number, such as `weight: 1` (`weight: 0` leaves the benchmark out of the score)",
        )),
    }
}

/// Refuses a `--select`/`--exclude` name that matches no selection key of any benchmark
/// (enabled or not), with the nearest key.
fn check_selection_names(
    flag: &'static str,
    names: &[String],
    benches: &[Bench],
) -> Result<(), ConfigError> {
    if names.is_empty() {
        return Ok(());
    }
    let keys: HashSet<String> = benches.iter().flat_map(Bench::selection_keys).collect();
    for name in names {
        if !keys.contains(name) {
            return Err(ConfigError::UnknownSelection {
                flag,
                name: name.clone(),
                suggestion: did_you_mean(name, keys.iter().map(String::as_str)),
            });
        }
    }
    Ok(())
}

/// The built-in first layer: `_defaults`, which benchmarks reach through `inherits`.
fn builtin_defaults() -> Node {
    let text = "\
_defaults:
  run_name: ${system.run_name}
  group: ${.name}
  install_group: ${.group}
  install_variant: ${system.arch}
  enabled: true
  dirs:
    venv: ${system.dirs.venv}/${..install_group}
    data: ${system.dirs.data}
    runs: ${system.dirs.runs}
    extra: ${system.dirs.extra}/${..group}
    cache: ${system.dirs.cache}
";
    let mut node = yaml::parse_str(text, "built-in defaults").expect("built-in defaults parse");
    strip_locations(&mut node);
    node
}

fn strip_locations(node: &mut Node) {
    node.location = None;
    match &mut node.value {
        Value::Map(m) => m.values_mut().for_each(strip_locations),
        Value::Seq(items) => items.iter_mut().for_each(strip_locations),
        _ => {}
    }
}

/// Makes a path absolute against the current folder, without resolving links.
fn absolute(path: &Path) -> PathBuf {
    let expanded = expand_user(path);
    if expanded.is_absolute() {
        normalize(&expanded)
    } else {
        let cwd = std::env::current_dir().unwrap_or_default();
        normalize(&cwd.join(expanded))
    }
}

/// Expands a leading `~/`.
fn expand_user(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// Removes `.` and resolves `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Appends the layers of `file` (its includes first) to `layers`. `stack` holds the files
/// including it; `files_read` counts every file read so far, against [`MAX_INCLUDED_FILES`].
fn file_layers(
    file: &Path,
    included_at: Option<(&str, Option<Location>)>,
    stack: &mut Vec<PathBuf>,
    layers: &mut Vec<Node>,
    loaded: &mut HashSet<String>,
    files_read: &mut usize,
) -> Result<(), ConfigError> {
    let include_location = || included_at.as_ref().and_then(|(_, at)| at.clone());
    if stack.len() >= MAX_INCLUDE_DEPTH {
        return Err(ConfigError::too_large(
            include_location(),
            format!(
                "includes are nested more than {MAX_INCLUDE_DEPTH} files deep (from {})",
                stack[0].display()
            ),
            "include the files side by side from one file instead of chaining them",
        ));
    }
    *files_read += 1;
    if *files_read > MAX_INCLUDED_FILES {
        return Err(ConfigError::too_large(
            include_location(),
            format!(
                "the suite reads more than {MAX_INCLUDED_FILES} files (a file included from several places counts each time)"
            ),
            "include each file once, from the top-level suite file",
        ));
    }
    if stack.iter().any(|f| f == file) {
        let (include, at) = included_at.unwrap_or(("", None));
        let chain: Vec<String> = stack.iter().map(|p| p.display().to_string()).collect();
        return Err(ConfigError::Include {
            at: At(at),
            include: include.to_string(),
            resolved: file.display().to_string(),
            reason: format!(
                "include cycle: {} -> {}",
                chain.join(" -> "),
                file.display()
            ),
        });
    }
    if let Some((include, at)) = &included_at
        && !file.is_file()
    {
        return Err(ConfigError::Include {
            at: At(at.clone()),
            include: include.to_string(),
            resolved: file.display().to_string(),
            reason: "no such file".into(),
        });
    }
    let doc = yaml::load_file(file, "suite file")?;
    loaded.insert(file.display().to_string());
    let mut entries = match doc.value {
        Value::Map(m) => m,
        Value::Null => Map::default(),
        _ => {
            return Err(ConfigError::shape(
                doc.location.clone(),
                format!(
                    "a suite file must be a mapping of benchmark names, not {}",
                    doc.kind()
                ),
                "write `name:` entries at the top level, each with its settings indented below",
            ));
        }
    };
    let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    stack.push(file.to_path_buf());
    if let Some(includes) = entries.shift_remove("include") {
        let list = match includes.value {
            Value::Str(_) => vec![includes],
            Value::Seq(items) => items,
            Value::Null => Vec::new(),
            _ => {
                return Err(ConfigError::shape(
                    includes.location.clone(),
                    format!("`include` is {}", includes.kind()),
                    "write `include: file.yaml` or a list of files",
                ));
            }
        };
        for item in list {
            let Value::Str(name) = &item.value else {
                return Err(ConfigError::shape(
                    item.location.clone(),
                    format!("an `include` entry is {}, not a file name", item.kind()),
                    "list file names as strings",
                ));
            };
            let target = expand_user(Path::new(name));
            let target = if target.is_absolute() {
                normalize(&target)
            } else {
                normalize(&base.join(target))
            };
            file_layers(
                &target,
                Some((name, item.location.clone())),
                stack,
                layers,
                loaded,
                files_read,
            )?;
        }
    }
    stack.pop();
    for (name, entry) in entries.iter_mut() {
        let location = entry.location.clone();
        let Some(map) = entry.as_map_mut() else {
            return Err(ConfigError::shape(
                location,
                format!(
                    "top-level entry `{name}` is {}, not a mapping",
                    entry.kind()
                ),
                "every top-level key except `include` names a benchmark and holds its settings",
            ));
        };
        if name == "*" {
            continue;
        }
        map.entry("config_base".into())
            .or_insert_with(|| Node::str(base.display().to_string()));
        map.entry("config_file".into())
            .or_insert_with(|| Node::str(file.display().to_string()));
        map.entry("dirs".into()).or_insert_with(Node::empty_map);
    }
    layers.push(Node::at(Value::Map(entries), doc.location));
    Ok(())
}

/// Parses one `--override`.
pub fn parse_override(index: usize, text: &str) -> Result<Node, ConfigError> {
    let source = format!("--override #{index}");
    let error = |message: String| ConfigError::Override {
        text: text.to_string(),
        message,
    };
    let dotted = text.find('=').filter(|&eq| {
        eq > 0
            && text[..eq]
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '*'))
    });
    if let Some(eq) = dotted {
        let path = &text[..eq];
        if path.split('.').any(str::is_empty) {
            return Err(error(format!("the key path `{path}` has an empty part")));
        }
        if path.split('.').count() > MAX_NESTING {
            return Err(error(format!(
                "the key path has more than {MAX_NESTING} parts"
            )));
        }
        let mut node = yaml::parse_str(&text[eq + 1..], &source).map_err(|e| {
            error(format!(
                "the value is not valid YAML ({})",
                syntax_reason(&e)
            ))
        })?;
        for key in path.split('.').rev() {
            let mut map = Map::default();
            map.insert(key.to_string(), node);
            node = Node::new(Value::Map(map));
        }
        return Ok(node);
    }
    let node = yaml::parse_str(text, &source).map_err(|e| {
        error(format!(
            "it is neither `key.path=value` nor valid YAML ({})",
            syntax_reason(&e)
        ))
    })?;
    match node.value {
        Value::Map(_) => Ok(node),
        _ => Err(error(format!(
            "it is {} in YAML, not `key.path=value` or a mapping",
            node.kind()
        ))),
    }
}

/// The parser's reason and column, without the file name and fix of a full error.
fn syntax_reason(err: &ConfigError) -> String {
    match err {
        ConfigError::Syntax { at, message } => match &at.0 {
            Some(loc) => format!("{message} at column {}", loc.column),
            None => message.clone(),
        },
        other => other.to_string(),
    }
}

/// Replaces every entry with a `matrix` by one entry per combination of its values.
fn expand_matrices(entries: Map) -> Result<Map, ConfigError> {
    let mut out = Map::with_capacity_and_hasher(entries.len(), Default::default());
    let mut generated_by: std::collections::HashMap<String, String> = Default::default();
    let mut budget = ValueBudget::default();
    for (name, entry) in entries {
        if entry.get("matrix").is_none() {
            if out.contains_key(&name) {
                return Err(duplicate(&name, generated_by.get(&name), entry.location));
            }
            out.insert(name, entry);
            continue;
        }
        for (new_name, bench) in expand_matrix(&name, &entry, &mut budget)? {
            if out.contains_key(&new_name) {
                return Err(duplicate(&new_name, Some(&name), bench.location));
            }
            generated_by.insert(new_name.clone(), name.clone());
            out.insert(new_name, bench);
        }
    }
    Ok(out)
}

fn duplicate(name: &str, generator: Option<&String>, at: Option<Location>) -> ConfigError {
    ConfigError::Matrix {
        at: At(at),
        bench: generator.cloned().unwrap_or_else(|| name.to_string()),
        message: format!("the benchmark name `{name}` is produced twice"),
        fix: "put every matrix key in `job.name` (e.g. `name: 'bench-bs{batch}'`) so each combination gets its own name".into(),
    }
}

/// Expands one matrix entry; `budget` counts the benchmarks made.
fn expand_matrix(
    name: &str,
    entry: &Node,
    budget: &mut ValueBudget,
) -> Result<Vec<(String, Node)>, ConfigError> {
    let matrix_error = |at: Option<Location>, message: String, fix: &str| ConfigError::Matrix {
        at: At(at),
        bench: name.to_string(),
        message,
        fix: fix.to_string(),
    };
    let matrix = entry.get("matrix").expect("caller checked");
    let Some(axes) = matrix.as_map() else {
        return Err(matrix_error(
            matrix.location.clone(),
            format!("`matrix` is {}, not a mapping", matrix.kind()),
            "write `matrix: {key: [value, ...]}`",
        ));
    };
    let Some(job) = entry.get("job") else {
        return Err(matrix_error(
            entry.location.clone(),
            "it has `matrix` but no `job`".into(),
            "add `job:` with the benchmark template (its `name` may use `{key}` for each matrix key)",
        ));
    };
    let Some(job_map) = job.as_map() else {
        return Err(matrix_error(
            job.location.clone(),
            format!("`job` is {}, not a mapping", job.kind()),
            "write `job:` as a mapping of benchmark settings",
        ));
    };
    let Some(name_template) = job_map.get("name").and_then(Node::as_str) else {
        return Err(matrix_error(
            job.location.clone(),
            "`job` has no `name`".into(),
            "give the job a name template such as `name: 'bench-{key}'`",
        ));
    };
    let mut values: Vec<(String, Vec<Node>)> = Vec::new();
    for (key, value) in axes {
        let items = match &value.value {
            Value::Seq(items) if items.is_empty() => {
                return Err(matrix_error(
                    value.location.clone(),
                    format!("matrix key `{key}` has no values"),
                    "list at least one value",
                ));
            }
            Value::Seq(items) => items.clone(),
            Value::Map(_) => {
                return Err(matrix_error(
                    value.location.clone(),
                    format!("matrix key `{key}` holds a mapping"),
                    "give a list of values or a single scalar",
                ));
            }
            _ => vec![value.clone()],
        };
        values.push((key.clone(), items));
    }
    let combinations = values
        .iter()
        .try_fold(1usize, |n, (_, items)| n.checked_mul(items.len()))
        .filter(|&n| n <= MAX_MATRIX_BENCHMARKS);
    if combinations.is_none() {
        let sizes: Vec<String> = values
            .iter()
            .map(|(_, items)| items.len().to_string())
            .collect();
        return Err(ConfigError::too_large(
            matrix.location.clone(),
            format!(
                "matrix entry `{name}` would make {} benchmarks, more than {MAX_MATRIX_BENCHMARKS}",
                sizes.join(" x ")
            ),
            "use fewer values per matrix key, or split the matrix into several entries",
        ));
    }
    // The first key varies fastest, the last is the outermost loop, as in milabench.
    let mut combos: Vec<Vec<(String, Node)>> = vec![Vec::new()];
    for (key, items) in values.iter().rev() {
        let mut next = Vec::with_capacity(combos.len() * items.len());
        for item in items {
            for combo in &combos {
                let mut c = combo.clone();
                c.push((key.clone(), item.clone()));
                next.push(c);
            }
        }
        combos = next;
    }
    let mut out = Vec::with_capacity(combos.len());
    for mut combo in combos {
        combo.sort_by_key(|(k, _)| values.iter().position(|(vk, _)| vk == k));
        let bench_name = fill_matrix(name_template, &combo, true).map_err(|missing| {
            matrix_error(
                job_map.get("name").and_then(|n| n.location.clone()),
                format!("the job name uses `{{{missing}}}`, which is not a matrix key"),
                "use only matrix keys in `job.name`",
            )
        })?;
        let mut bench = job.clone();
        let map = bench.as_map_mut().expect("job is a mapping");
        map.shift_remove("name");
        map.insert(
            "matrix".into(),
            Node::at(
                Value::Map(combo.iter().cloned().collect()),
                matrix.location.clone(),
            ),
        );
        for path in [&["argv"][..], &["client", "argv"], &["server", "argv"]] {
            fill_argv(map, path, &combo);
        }
        budget.spend(&bench_name, &bench)?;
        out.push((bench_name, bench));
    }
    Ok(out)
}

/// Fills `{key}` placeholders naming matrix keys. With `strict`, an unknown `{name}` is an
/// error (returned as the name); otherwise it is left for launch time.
fn fill_matrix(template: &str, combo: &[(String, Node)], strict: bool) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        if let Some(escaped) = after.strip_prefix('{') {
            out.push_str("{{");
            rest = escaped;
            continue;
        }
        let end = after.find('}');
        let key = end.map(|e| &after[..e]);
        match key.and_then(|k| combo.iter().find(|(ck, _)| ck == k)) {
            Some((_, value)) => {
                out.push_str(&value.python_str());
                rest = &after[end.unwrap_or(0) + 1..];
            }
            None => {
                if strict
                    && let Some(k) = key
                    && !k.is_empty()
                    && k.chars().all(|c| c.is_alphanumeric() || c == '_')
                {
                    return Err(k.to_string());
                }
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out.replace("{{", if strict { "{" } else { "{{" }))
}

fn fill_argv(map: &mut Map, path: &[&str], combo: &[(String, Node)]) {
    let mut node = match map.get_mut(path[0]) {
        Some(n) => n,
        None => return,
    };
    for key in &path[1..] {
        node = match node.as_map_mut().and_then(|m| m.get_mut(*key)) {
            Some(n) => n,
            None => return,
        };
    }
    let fill = |n: &mut Node| {
        if let Value::Str(s) = &mut n.value
            && let Ok(filled) = fill_matrix(s, combo, false)
        {
            *s = filled;
        }
    };
    match &mut node.value {
        Value::Map(m) => m.values_mut().for_each(fill),
        Value::Seq(items) => items.iter_mut().for_each(fill),
        _ => {}
    }
}

/// Applies `inherits` chains, then the `*` entry. Each entry is resolved once, after its
/// parent, and takes its parent already resolved: one merge per entry, so a deep chain costs
/// time in proportion to its length, whatever the order its entries are written in. (milabench
/// walks the unresolved chain of a parent written after its child; layer merges have removed
/// every `!delete` by then, so merging the chain from the top gives the same settings.)
fn resolve_inheritance(entries: Map) -> Result<Map, ConfigError> {
    let mut raw: Vec<(String, Option<Node>)> =
        entries.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let index: rustc_hash::FxHashMap<String, usize> = raw
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), i))
        .collect();
    let mut resolved: Vec<Option<Node>> = vec![None; raw.len()];
    // `walk[i]` is the entry whose chain walk last visited entry `i` (plus one), to find cycles.
    let mut walk = vec![0usize; raw.len()];
    let mut budget = ValueBudget::default();
    for start in 0..raw.len() {
        // The entries of the chain not yet resolved, child first, each with its parent.
        let mut chain: Vec<(usize, Option<usize>)> = Vec::new();
        let mut current = start;
        while resolved[current].is_none() {
            walk[current] = start + 1;
            let (name, node) = &raw[current];
            let node = node.as_ref().expect("an unresolved entry is still raw");
            let parent = match node.get("inherits") {
                None => None,
                Some(inherits) => match &inherits.value {
                    Value::Null => None,
                    Value::Str(parent) => match index.get(parent) {
                        Some(&p) => Some(p),
                        None => {
                            return Err(ConfigError::UnknownParent {
                                at: At(inherits.location.clone()),
                                bench: raw[start].0.clone(),
                                suggestion: did_you_mean(parent, index.keys().map(String::as_str)),
                                parent: parent.clone(),
                            });
                        }
                    },
                    _ => {
                        return Err(ConfigError::shape(
                            inherits.location.clone(),
                            format!("`inherits` of `{name}` is {}, not a name", inherits.kind()),
                            "inherit from one entry: `inherits: _parent`",
                        ));
                    }
                },
            };
            chain.push((current, parent));
            match parent {
                Some(p) if walk[p] == start + 1 && resolved[p].is_none() => {
                    let mut names: Vec<&str> =
                        chain.iter().map(|(i, _)| raw[*i].0.as_str()).collect();
                    names.push(&raw[p].0);
                    let at = raw[current].1.as_ref().and_then(|n| n.get("inherits"));
                    return Err(ConfigError::InheritanceCycle {
                        at: At(at.and_then(|n| n.location.clone())),
                        bench: raw[start].0.clone(),
                        chain: names.join(" -> "),
                    });
                }
                Some(p) => current = p,
                None => break,
            }
        }
        for (i, parent) in chain.into_iter().rev() {
            let mut bench = raw[i].1.take().expect("each entry is resolved once");
            if let Some(map) = bench.as_map_mut() {
                map.shift_remove("inherits");
            }
            if let Some(p) = parent {
                let parent = resolved[p].as_ref().expect("a parent is resolved first");
                bench = inherit(parent, &raw[p].0, bench, &raw[i].0)?;
            }
            budget.spend(&raw[i].0, &bench)?;
            resolved[i] = Some(bench);
        }
    }
    let mut entries: Map = raw
        .into_iter()
        .zip(resolved)
        .map(|((name, _), node)| (name, node.expect("every entry is resolved")))
        .collect();
    if let Some(star) = entries.get("*").cloned() {
        let mut budget = ValueBudget::default();
        for (name, bench) in entries.iter_mut() {
            if name == "*" {
                continue;
            }
            let own = std::mem::replace(bench, Node::new(Value::Null));
            *bench = merge(own, star.clone(), name)?;
            budget.spend(name, bench)?;
        }
    }
    Ok(entries)
}

/// `bench` on top of its resolved `parent`: the parent's settings overridden by the child's,
/// with the tags of both, sorted.
fn inherit(parent: &Node, parent_name: &str, bench: Node, name: &str) -> Result<Node, ConfigError> {
    let mut tags = tag_list(parent, parent_name)?;
    for t in tag_list(&bench, name)? {
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    tags.sort();
    let tags_location = bench
        .get("tags")
        .and_then(|t| t.location.clone())
        .or_else(|| parent.get("tags").and_then(|t| t.location.clone()));
    let mut bench = merge(parent.clone(), bench, name)?;
    if let Some(map) = bench.as_map_mut() {
        map.insert(
            "tags".into(),
            Node::at(
                Value::Seq(tags.into_iter().map(Node::str).collect()),
                tags_location,
            ),
        );
    }
    Ok(bench)
}

/// The values held by the entries built so far in one step of resolution, against
/// [`MAX_SUITE_VALUES`]: matrices and inheritance copy values, and this bounds the copies.
#[derive(Default)]
struct ValueBudget {
    spent: usize,
}

impl ValueBudget {
    /// Counts the values of `node`, just built for entry `name`.
    fn spend(&mut self, name: &str, node: &Node) -> Result<(), ConfigError> {
        self.spent = self.spent.saturating_add(node.value_count());
        if self.spent > MAX_SUITE_VALUES {
            return Err(ConfigError::too_large(
                node.location.clone(),
                format!(
                    "the suite holds more than {MAX_SUITE_VALUES} values once matrices are expanded and entries inherit their parents' settings (crossed at `{name}`)"
                ),
                "make fewer benchmarks inherit from large entries, use smaller matrices, or split the suite",
            ));
        }
        Ok(())
    }
}

fn tag_list(node: &Node, name: &str) -> Result<Vec<String>, ConfigError> {
    match node.get("tags") {
        None => Ok(Vec::new()),
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => Ok(items.iter().map(Node::python_str).collect()),
        Some(Node {
            value: Value::Null, ..
        }) => Ok(Vec::new()),
        Some(other) => Err(ConfigError::shape(
            other.location.clone(),
            format!("`tags` of `{name}` is {}, not a list", other.kind()),
            "write `tags: [a, b]`",
        )),
    }
}

/// Sets `name` and `tag`, makes `definition` absolute, and checks the monitor tag.
fn finalize(
    name: &str,
    mut bench: Node,
    loaded: &HashSet<String>,
    warnings: &mut Vec<String>,
) -> Result<Node, ConfigError> {
    let location = bench.location.clone();
    let Some(map) = bench.as_map_mut() else {
        return Err(ConfigError::shape(
            location,
            format!("`{name}` is not a mapping"),
            "give the benchmark its settings as a mapping",
        ));
    };
    map.insert("name".into(), Node::str(name));
    let definition = map
        .get("definition")
        .and_then(|d| d.as_str().map(|s| (s.to_string(), d.location.clone())));
    if let Some((path, def_location)) = definition {
        // Relative to the file that wrote `definition`, else to the entry's file.
        let written_in = def_location
            .as_ref()
            .filter(|l| loaded.contains(&*l.file))
            .and_then(|l| Path::new(&*l.file).parent().map(Path::to_path_buf));
        let path = expand_user(Path::new(&path));
        let absolute = if path.is_absolute() {
            normalize(&path)
        } else {
            let base = written_in
                .or_else(|| map_get_str(map, "config_base").map(PathBuf::from))
                .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
            normalize(&base.join(&path))
        };
        if let Some(def) = map.get_mut("definition") {
            def.value = Value::Str(absolute.display().to_string());
        }
    }
    let tags: Vec<String> = tag_list(&bench, name)?;
    let monitor: Vec<&String> = tags
        .iter()
        .filter(|t| MONITOR_TAGS.contains(&t.as_str()))
        .collect();
    if monitor.len() != 1 {
        warnings.push(format!(
            "`{name}` should carry exactly one of the tags monogpu, multigpu, multinode (found {})",
            if monitor.is_empty() {
                "none".to_string()
            } else {
                monitor
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    }
    let map = bench.as_map_mut().expect("checked above");
    map.insert("tag".into(), Node::new(Value::Seq(vec![Node::str(name)])));
    Ok(bench)
}

fn map_get_str(map: &Map, key: &str) -> Option<String> {
    map.get(key).and_then(Node::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{SystemInputs, load_system};
    use proptest::prelude::*;

    fn resolve_text(text: &str, overrides: &[String]) -> Result<Suite, ConfigError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("suite.yaml");
        std::fs::write(&path, text).expect("write");
        std::fs::write(dir.path().join("other.yaml"), "_base: {enabled: true}\n").expect("write");
        let system = load_system(None, &SystemInputs::local("cpu", "/b", "r")).expect("system");
        let env = |_: &str| None;
        resolve_suite(&SuiteRequest {
            overrides,
            ..SuiteRequest::whole(&path, &system, &env)
        })
    }

    #[test]
    fn inheritance_accumulates_tags_and_overrides_the_rest() {
        let suite = resolve_text(
            "_p: {inherits: _defaults, tags: [b, a], weight: 1, argv: {--x: 1, --y: 2}}\n\
             c: {inherits: _p, tags: [c], argv: {--y: 3}, definition: d}\n",
            &[],
        )
        .expect("resolves");
        let c = &suite.benches[0];
        assert_eq!(c.tags(), ["a", "b", "c"]);
        assert_eq!(c.argv().expect("argv"), ["--x", "1", "--y", "3"]);
        assert_eq!(c.group(), "c");
        assert!(c.is_runnable());
    }

    #[test]
    fn overrides_with_dashes_and_star() {
        let suite = resolve_text(
            "b-1: {inherits: _defaults, definition: d, argv: {--batch-size: 8}}\n",
            &[
                "b-1.argv.--batch-size=64".to_string(),
                "{'*': {weight: 3}}".to_string(),
            ],
        )
        .expect("resolves");
        let b = &suite.benches[0];
        assert_eq!(b.argv().expect("argv"), ["--batch-size", "64"]);
        assert_eq!(b.weight(), 3.0);
    }

    /// Resolves `files[0]` of `files` (name, text), all written to one folder.
    fn resolve_files(files: &[(String, String)]) -> Result<Suite, ConfigError> {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        let system = load_system(None, &SystemInputs::local("cpu", "/b", "r")).expect("system");
        let env = |_: &str| None;
        resolve_suite(&SuiteRequest::whole(
            &dir.path().join(&files[0].0),
            &system,
            &env,
        ))
    }

    #[test]
    fn a_long_include_chain_is_refused_before_the_stack_runs_out() {
        let files: Vec<(String, String)> = (0..MAX_INCLUDE_DEPTH + 8)
            .map(|i| (format!("f{i}.yaml"), format!("include: f{}.yaml\n", i + 1)))
            .chain(std::iter::once((
                format!("f{}.yaml", MAX_INCLUDE_DEPTH + 8),
                "{}\n".to_string(),
            )))
            .collect();
        let err = resolve_files(&files).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("nested more than"), "{err}");
        // A short chain of the same shape loads.
        let short = [
            ("a.yaml".to_string(), "include: b.yaml\n".to_string()),
            ("b.yaml".to_string(), "x: {enabled: true}\n".to_string()),
        ];
        assert_eq!(resolve_files(&short).expect("loads").benches.len(), 1);
    }

    #[test]
    fn a_file_included_exponentially_often_is_refused() {
        // Each file includes the next one twice: 2^11 reads.
        let files: Vec<(String, String)> = (0..11)
            .map(|i| {
                let next = format!("f{}.yaml", i + 1);
                (format!("f{i}.yaml"), format!("include: [{next}, {next}]\n"))
            })
            .chain(std::iter::once((
                "f11.yaml".to_string(),
                "{}\n".to_string(),
            )))
            .collect();
        let err = resolve_files(&files).expect_err("refused");
        assert!(err.to_string().contains("reads more than"), "{err}");
    }

    #[test]
    fn a_huge_matrix_is_refused_before_it_is_built() {
        let values = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let text = format!(
            "m:\n  matrix: {{a: [{0}], b: [{0}], c: [{0}]}}\n  job: {{name: 'x-{{a}}-{{b}}-{{c}}'}}\n",
            values(200)
        );
        let err = resolve_text(&text, &[]).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("200 x 200 x 200"), "{err}");
        let small = format!(
            "m:\n  matrix: {{a: [{0}], b: [{0}]}}\n  job: {{name: 'x-{{a}}-{{b}}'}}\n",
            values(3)
        );
        assert_eq!(
            resolve_text(&small, &[]).expect("resolves").benches.len(),
            9
        );
    }

    #[test]
    fn a_deep_inheritance_chain_written_child_first_resolves() {
        // Entry i inherits from entry i + 1, written before it; only the root sets `weight`.
        let depth = 5_000;
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(&format!("_p{i}: {{inherits: _p{}}}\n", i + 1));
        }
        text.push_str(&format!("_p{depth}: {{weight: 7, tags: [monogpu]}}\n"));
        text.push_str("leaf: {inherits: _p0, definition: d}\n");
        let suite = resolve_text(&text, &[]).expect("resolves");
        let leaf = &suite.benches[0];
        assert_eq!(leaf.weight(), 7.0);
        assert_eq!(leaf.tags(), ["monogpu"]);
    }

    #[test]
    fn interpolations_that_copy_copies_are_bounded() {
        // Each entry holds two copies of the previous one's list: 2^30 values unbounded.
        let mut text = "b0: {x: [1, 2, 3, 4]}\n".to_string();
        for i in 1..30 {
            let p = i - 1;
            text.push_str(&format!(
                "b{i}: {{x: ['${{packs.b{p}.x}}', '${{packs.b{p}.x}}']}}\n"
            ));
        }
        let err = resolve_text(&text, &[]).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
    }

    fn fragment() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("include"),
            Just("inherits"),
            Just("matrix"),
            Just("job"),
            Just("name"),
            Just("argv"),
            Just("enabled"),
            Just("tags"),
            Just("definition"),
            Just("append"),
            Just("a"),
            Just("_base"),
            Just("*"),
            Just("--x"),
        ];
        let value = prop_oneof![
            Just("other.yaml".to_string()),
            Just("_base".to_string()),
            Just("a".to_string()),
            Just("'${system.arch}'".to_string()),
            Just("'${.name}'".to_string()),
            Just("'${..x}'".to_string()),
            Just("'{x}'".to_string()),
            Just("[1, 2]".to_string()),
            Just("!delete ''".to_string()),
            Just("null".to_string()),
            Just("false".to_string()),
            Just("{x: [a, b]}".to_string()),
            "[a-z0-9{}$.]{0,6}".prop_map(|s| format!("'{s}'")),
        ];
        (key, value, 0usize..3).prop_map(|(k, v, depth)| format!("{}{k}: {v}", "  ".repeat(depth)))
    }

    /// Suites built to exhaust the loader: alias bombs, deep nesting, huge matrices, long
    /// inheritance chains written child first, self-includes, long dotted keys and
    /// interpolations that copy copies, each sized at random around its bound.
    fn attack() -> impl Strategy<Value = String> {
        prop_oneof![
            (1usize..14, 2usize..10).prop_map(|(levels, fan)| {
                let mut text = "l0: &l0 [x]\n".to_string();
                for i in 1..levels {
                    let items = vec![format!("*l{}", i - 1); fan].join(", ");
                    text.push_str(&format!("l{i}: &l{i} [{items}]\n"));
                }
                text
            }),
            (0usize..400).prop_map(|depth| format!(
                "a: {{x: {}{}}}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            )),
            (1usize..4, 1usize..400).prop_map(|(axes, n)| {
                let values = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
                let keys: Vec<String> = (0..axes).map(|a| format!("k{a}")).collect();
                let name: String = keys.iter().map(|k| format!("-{{{k}}}")).collect();
                let matrix: Vec<String> = keys.iter().map(|k| format!("{k}: [{values}]")).collect();
                format!(
                    "m:\n  matrix: {{{}}}\n  job: {{name: 'm{name}', definition: d}}\n",
                    matrix.join(", ")
                )
            }),
            (1usize..3000).prop_map(|depth| {
                let mut text = String::new();
                for i in 0..depth {
                    text.push_str(&format!("_p{i}: {{inherits: _p{}, x{i}: 1}}\n", i + 1));
                }
                text.push_str(&format!(
                    "_p{depth}: {{tags: [monogpu]}}\nleaf: {{inherits: _p0}}\n"
                ));
                text
            }),
            Just("include: suite.yaml\n".to_string()),
            (1usize..300)
                .prop_map(|n| format!("e: !expand-dot {{{}: 1}}\n", vec!["k"; n].join("."))),
            (1usize..40).prop_map(|levels| {
                let mut text = "b0: {x: [1, 2]}\n".to_string();
                for i in 1..levels {
                    let p = i - 1;
                    text.push_str(&format!(
                        "b{i}: {{x: ['${{packs.b{p}.x}}', '${{packs.b{p}.x}}']}}\n"
                    ));
                }
                text
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// The resolver returns a result or an error for any suite, never panics.
        #[test]
        fn resolver_never_panics(lines in prop::collection::vec(fragment(), 0..12)) {
            let text = lines.join("\n");
            let _ = resolve_text(&text, &[]);
        }

        /// The fuzz target of the suite loader: attacks on its bounds (and random fragments
        /// after them) end in a suite or an error, never in a panic, and what resolves stays
        /// within the bounds of `limits`, so memory stays bounded.
        #[test]
        fn suite_loader_survives_alias_and_size_attacks(
            attack in attack(),
            lines in prop::collection::vec(fragment(), 0..4),
        ) {
            let text = format!("{attack}{}", lines.join("\n"));
            if let Ok(suite) = resolve_text(&text, &[]) {
                let values: usize = suite.raw.values().map(Node::value_count).sum();
                prop_assert!(values <= 2 * MAX_SUITE_VALUES, "{values} values");
            }
        }

        /// The YAML loader never panics, whatever the bytes.
        #[test]
        fn yaml_loader_never_panics(text in "\\PC{0,80}") {
            let _ = yaml::parse_str(&text, "fuzz.yaml");
        }
    }
}
