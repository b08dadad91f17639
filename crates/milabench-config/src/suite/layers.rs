//! Stage 1, layers: the built-in `_defaults` entry, every file with its `include`s expanded
//! depth first (an included file comes before the file that includes it), then each
//! `--override`; folded with [`merge`]. Unknown settings are warned about here, where each
//! layer still says which file wrote it.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::error::{At, ConfigError, did_you_mean};
use crate::limits::{MAX_INCLUDE_DEPTH, MAX_INCLUDED_FILES, MAX_NESTING};
use crate::merge::merge;
use crate::value::{Location, Map, Node, Value};
use crate::yaml;

use super::SuiteRequest;

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

/// The merged entries of a suite and the files read to build them.
pub(super) struct MergedLayers {
    /// Every entry of every layer, merged, in suite order.
    pub(super) entries: Map,
    /// The files read, as displayed paths (a `definition` is resolved against the one that
    /// wrote it).
    pub(super) loaded: HashSet<String>,
}

/// Reads the suite file of `request` with its includes, adds its `--override`s, warns about
/// unknown settings, and merges the layers in order.
pub(super) fn merged_layers(
    request: &SuiteRequest<'_>,
    warnings: &mut Vec<String>,
) -> Result<MergedLayers, ConfigError> {
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
    for layer in &layers[1..] {
        unknown_key_warnings(layer, warnings);
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
        unknown_key_warnings(&layer, warnings);
        layers.push(layer);
    }
    let mut merged = Node::empty_map();
    for layer in layers {
        merged = merge(merged, layer, "")?;
    }
    let Value::Map(entries) = merged.value else {
        unreachable!("layers are mappings")
    };
    Ok(MergedLayers { entries, loaded })
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
pub(super) fn expand_user(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// Removes `.` and resolves `..` lexically.
pub(super) fn normalize(path: &Path) -> PathBuf {
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
