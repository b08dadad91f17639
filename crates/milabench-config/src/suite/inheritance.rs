//! Stage 3, inheritance: `inherits` chains (tags accumulate), then the `*` entry on top of
//! every benchmark.

use crate::error::{At, ConfigError, did_you_mean};
use crate::merge::merge;
use crate::value::{Map, Node, Value};

use super::ValueBudget;

/// Applies `inherits` chains, then the `*` entry. Each entry is resolved once, after its
/// parent, and takes its parent already resolved: one merge per entry, so a deep chain costs
/// time in proportion to its length, whatever the order its entries are written in. (milabench
/// walks the unresolved chain of a parent written after its child; layer merges have removed
/// every `!delete` by then, so merging the chain from the top gives the same settings.)
pub(super) fn resolve_inheritance(entries: Map) -> Result<Map, ConfigError> {
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

pub(super) fn tag_list(node: &Node, name: &str) -> Result<Vec<String>, ConfigError> {
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
