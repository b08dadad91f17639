//! Stage 2, matrices: every entry with a `matrix` replaced by one benchmark per combination of
//! its values, named by its `job.name` template.

use crate::error::{At, ConfigError};
use crate::limits::MAX_MATRIX_BENCHMARKS;
use crate::value::{Location, Map, Node, Value};

use super::ValueBudget;

/// Replaces every entry with a `matrix` by one entry per combination of its values.
pub(super) fn expand_matrices(entries: Map) -> Result<Map, ConfigError> {
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
