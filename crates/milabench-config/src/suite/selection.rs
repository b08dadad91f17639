//! Stage 6, selection: every resolved benchmark gets its `group` and `install_group` defaults
//! and is checked, then kept or not by `enabled`, `definition`, `--select` and `--exclude`.

use std::collections::HashSet;

use crate::error::{ConfigError, did_you_mean};
use crate::value::{Map, Node, Value};

use super::{Bench, SuiteRequest};

/// The benchmarks of the resolved `packs`, in suite order, each marked with whether the
/// selection of `request` keeps it.
pub(super) fn select(
    request: &SuiteRequest<'_>,
    packs: Map,
    warnings: &mut Vec<String>,
) -> Result<Vec<Bench>, ConfigError> {
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
    Ok(benches)
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
