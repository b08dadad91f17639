//! Stage 6, selection: every resolved benchmark gets its `group` and `install_group` defaults
//! and is kept or not by `--select` and `--exclude`; those kept are typed (see
//! [`ResolvedBench::new`]), so a malformed setting of a benchmark left out does not stop the
//! others.

use std::collections::HashSet;
use std::path::Path;

use crate::error::{ConfigError, did_you_mean};
use crate::value::{Map, Node};

use super::bench::fill_groups;
use super::inheritance::tag_list;
use super::{ResolvedBench, SuiteRequest};

/// The benchmarks of the resolved `packs` that the selection of `request` keeps, in suite
/// order.
pub(super) fn select(
    request: &SuiteRequest<'_>,
    packs: Map,
    warnings: &mut Vec<String>,
) -> Result<Vec<ResolvedBench>, ConfigError> {
    let select: HashSet<&str> = request.select.iter().map(String::as_str).collect();
    let exclude: HashSet<&str> = request.exclude.iter().map(String::as_str).collect();
    let mut known = HashSet::new();
    let mut benches = Vec::with_capacity(packs.len());
    for (name, mut config) in packs {
        fill_groups(&name, &mut config);
        let definition = config.get("definition").and_then(Node::as_str);
        if config.get("enabled").is_some_and(Node::is_truthy) && definition.is_none() {
            warnings.push(format!(
                "`{name}` is enabled but has no `definition`, so it never runs\n  fix: give it `definition: <benchmark folder>` (or inherit one), or set `enabled: false`"
            ));
        }
        let keys = selection_keys(&name, &config)?;
        let selected = select.is_empty() || keys.iter().any(|k| select.contains(k.as_str()));
        let excluded = keys.iter().any(|k| exclude.contains(k.as_str()));
        known.extend(keys);
        if selected && !excluded {
            benches.push(ResolvedBench::new(name, config)?);
        }
    }
    check_selection_names("--select", request.select, &known)?;
    check_selection_names("--exclude", request.exclude, &known)?;
    Ok(benches)
}

/// The keys that `--select`/`--exclude` match against: `*`, the name, the group, the install
/// group, the tags and the definition folder's name.
fn selection_keys(name: &str, config: &Node) -> Result<Vec<String>, ConfigError> {
    let mut keys = vec!["*".to_string(), name.to_string()];
    keys.extend(["group", "install_group"].map(|k| {
        config
            .get(k)
            .map_or_else(|| name.to_string(), Node::python_str)
    }));
    keys.extend(tag_list(config, name)?);
    if let Some(base) = config
        .get("definition")
        .and_then(Node::as_str)
        .and_then(|d| Path::new(d).file_name())
    {
        keys.push(base.to_string_lossy().into_owned());
    }
    Ok(keys)
}

/// Refuses a `--select`/`--exclude` name that matches no selection key of any benchmark
/// (enabled or not, kept or not), with the nearest key.
fn check_selection_names(
    flag: &'static str,
    names: &[String],
    known: &HashSet<String>,
) -> Result<(), ConfigError> {
    for name in names {
        if !known.contains(name) {
            return Err(ConfigError::UnknownSelection {
                flag,
                name: name.clone(),
                suggestion: did_you_mean(name, known.iter().map(String::as_str)),
            });
        }
    }
    Ok(())
}
