//! Stage 4, finalisation: every public entry gets its `name`, an absolute `definition` and its
//! `tag`, and is checked for its monitor tag; private `_names` and `*` are dropped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::value::{Map, Node, Value};

use super::inheritance::tag_list;
use super::layers::{expand_user, normalize};

/// Tags of which every benchmark should carry exactly one.
const MONITOR_TAGS: [&str; 3] = ["monogpu", "multigpu", "multinode"];

/// The public entries of `entries`, finalised, in suite order. `loaded` holds the files read.
pub(super) fn finalize_all(
    entries: &Map,
    loaded: &HashSet<String>,
    warnings: &mut Vec<String>,
) -> Result<Map, ConfigError> {
    let mut packs = Map::default();
    for (name, node) in entries {
        if name.starts_with('_') || name == "*" {
            continue;
        }
        packs.insert(
            name.clone(),
            finalize(name, node.clone(), loaded, warnings)?,
        );
    }
    Ok(packs)
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
