//! `${...}` interpolation over the whole configuration tree, with OmegaConf's meaning:
//! `${a.b}` is an absolute key path, `${.x}` names a sibling of the key holding the string,
//! each extra leading dot climbs one level, `${a.list[0]}` indexes lists, `${oc.env:VAR,default}`
//! reads the environment, and `\${` is a literal `${`. A string that is exactly one
//! interpolation takes the referenced value with its type (a mapping, a number); otherwise the
//! pieces are joined as text.

use crate::error::{At, ConfigError};
use crate::limits::{MAX_NESTING, MAX_SUITE_VALUES};
use crate::value::{Node, Value};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Step {
    Key(String),
    Index(usize),
}

type Path = Vec<Step>;

/// A piece of a string: literal text or an interpolation.
enum Piece {
    Text(String),
    Ref(String),
}

/// Stands for the `$` of an escaped `\${` until every interpolation is resolved.
const ESCAPED_DOLLAR: char = '\u{F8FF}';

/// Deepest chain of interpolations followed before giving up.
const MAX_DEPTH: usize = 128;

/// Resolves every `${...}` in `root`, in place. `env` looks up environment variables for
/// `oc.env`.
pub fn resolve_all(
    root: &mut Node,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    let mut resolver = Resolver {
        env,
        active: Vec::new(),
        escapes: false,
        looked_up: rustc_hash::FxHashSet::default(),
        copied: 0,
    };
    resolver.resolve_at(root, &mut Vec::new())?;
    if resolver.escapes {
        unescape(root);
    }
    Ok(())
}

struct Resolver<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    /// Strings being resolved, outermost first (to detect cycles).
    active: Vec<Path>,
    /// Whether some string held an escaped `\${`.
    escapes: bool,
    /// Targets of lookups already resolved (e.g. `system`, copied into every benchmark).
    looked_up: rustc_hash::FxHashSet<Path>,
    /// Values copied so far by interpolations that name a list or mapping.
    copied: usize,
}

/// Turns the placeholders of escaped `\${` back into `$`.
fn unescape(node: &mut Node) {
    match &mut node.value {
        Value::Str(s) if s.contains(ESCAPED_DOLLAR) => *s = s.replace(ESCAPED_DOLLAR, "$"),
        Value::Map(m) => m.values_mut().for_each(unescape),
        Value::Seq(items) => items.iter_mut().for_each(unescape),
        _ => {}
    }
}

fn get<'a>(root: &'a Node, path: &[Step]) -> Option<&'a Node> {
    let mut node = root;
    for step in path {
        node = match (step, &node.value) {
            (Step::Key(k), Value::Map(m)) => m.get(k)?,
            (Step::Index(i), Value::Map(m)) => m.get_index(*i)?.1,
            (Step::Index(i), Value::Seq(items)) => items.get(*i)?,
            (Step::Key(k), Value::Seq(items)) => items.get(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

fn get_mut<'a>(root: &'a mut Node, path: &[Step]) -> Option<&'a mut Node> {
    let mut node = root;
    for step in path {
        node = match (step, &mut node.value) {
            (Step::Key(k), Value::Map(m)) => m.get_mut(k)?,
            (Step::Index(i), Value::Map(m)) => m.get_index_mut(*i)?.1,
            (Step::Index(i), Value::Seq(items)) => items.get_mut(*i)?,
            (Step::Key(k), Value::Seq(items)) => items.get_mut(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// The path as `a.b[0]`, with mapping positions turned back into keys.
fn path_text(root: &Node, path: &[Step]) -> String {
    let mut out = String::new();
    let mut node = Some(root);
    for step in path {
        let key = match (step, node.map(|n| &n.value)) {
            (Step::Index(i), Some(Value::Map(m))) => m.get_index(*i).map(|(k, _)| k.clone()),
            (Step::Key(k), _) => Some(k.clone()),
            _ => None,
        };
        match key {
            Some(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&k);
            }
            None => {
                if let Step::Index(i) = step {
                    out.push_str(&format!("[{i}]"));
                }
            }
        }
        node = node.and_then(|n| get(n, std::slice::from_ref(step)));
    }
    out
}

impl Resolver<'_> {
    /// Makes sure the node at `path` and everything under it is resolved. Children are
    /// visited by position, so `path` may mix keys and positions.
    fn resolve_at(&mut self, root: &mut Node, path: &mut Path) -> Result<(), ConfigError> {
        let Some(node) = get(root, path) else {
            return Ok(());
        };
        match &node.value {
            Value::Map(m) => {
                for i in 0..m.len() {
                    path.push(Step::Index(i));
                    let result = self.resolve_at(root, path);
                    path.pop();
                    result?;
                }
            }
            Value::Seq(items) => {
                for i in 0..items.len() {
                    path.push(Step::Index(i));
                    let result = self.resolve_at(root, path);
                    path.pop();
                    result?;
                }
            }
            Value::Str(s) if s.contains("${") => {
                let text = s.clone();
                let location = node.location.clone();
                if self.active.contains(path) || self.active.len() > MAX_DEPTH {
                    let mut chain: Vec<String> =
                        self.active.iter().map(|p| path_text(root, p)).collect();
                    chain.push(path_text(root, path));
                    return Err(ConfigError::Interpolation {
                        at: At(location),
                        expression: text,
                        message: format!(
                            "the interpolation refers back to itself ({})",
                            chain.join(" -> ")
                        ),
                        fix: "break the cycle between these keys".into(),
                    });
                }
                self.active.push(path.clone());
                let resolved = self.resolve_string(root, path, &text, location.clone());
                self.active.pop();
                let value = resolved?;
                let is_container = matches!(value.value, Value::Map(_) | Value::Seq(_));
                if is_container {
                    self.count_copy(&value, path.len(), &text, location.clone())?;
                }
                if let Some(slot) = get_mut(root, path) {
                    *slot = Node::at(value.value, location.or(value.location));
                }
                // A copied container (e.g. `${system}`) was resolved before it was copied, but
                // its relative references must still be checked in their new place.
                if is_container {
                    self.resolve_at(root, path)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Counts the values of a container copied to a key `at_depth` levels down against
    /// [`MAX_SUITE_VALUES`], and its nesting there against [`MAX_NESTING`]: copies of copies
    /// could otherwise grow without bound.
    fn count_copy(
        &mut self,
        value: &Node,
        at_depth: usize,
        text: &str,
        location: Option<crate::value::Location>,
    ) -> Result<(), ConfigError> {
        self.copied = self.copied.saturating_add(value.value_count());
        if self.copied > MAX_SUITE_VALUES || at_depth + depth(value) > MAX_NESTING {
            return Err(ConfigError::TooLarge {
                at: At(location),
                message: format!(
                    "interpolations such as `{text}` copy more than {MAX_SUITE_VALUES} values, or nest copies more than {MAX_NESTING} levels deep"
                ),
                fix: "interpolate scalars, or fewer and smaller mappings".into(),
            });
        }
        Ok(())
    }

    fn resolve_string(
        &mut self,
        root: &mut Node,
        path: &Path,
        text: &str,
        location: Option<crate::value::Location>,
    ) -> Result<Node, ConfigError> {
        let pieces = split(text).map_err(|message| ConfigError::Interpolation {
            at: At(location.clone()),
            expression: text.to_string(),
            message,
            fix: "close every `${` with `}`, or write `\\${` for a literal `${`".into(),
        })?;
        if let [Piece::Ref(expr)] = pieces.as_slice() {
            return self.lookup(root, path, expr, &location);
        }
        let mut out = String::new();
        for piece in &pieces {
            match piece {
                Piece::Text(t) => {
                    self.escapes |= t.contains(ESCAPED_DOLLAR);
                    out.push_str(t);
                }
                Piece::Ref(expr) => {
                    let value = self.lookup(root, path, expr, &location)?;
                    if matches!(value.value, Value::Map(_) | Value::Seq(_)) {
                        return Err(ConfigError::Interpolation {
                            at: At(location.clone()),
                            expression: format!("${{{expr}}}"),
                            message: format!("it names {} inside a longer string", value.kind()),
                            fix: "interpolate a scalar, or make the whole value `${...}`".into(),
                        });
                    }
                    out.push_str(&value.python_str());
                }
            }
        }
        Ok(Node::at(Value::Str(out), location))
    }

    fn lookup(
        &mut self,
        root: &mut Node,
        path: &Path,
        expr: &str,
        location: &Option<crate::value::Location>,
    ) -> Result<Node, ConfigError> {
        let expr = expr.trim();
        let error = |message: String, fix: &str| ConfigError::Interpolation {
            at: At(location.clone()),
            expression: format!("${{{expr}}}"),
            message,
            fix: fix.into(),
        };
        if let Some(args) = expr.strip_prefix("oc.env:") {
            let (name, default) = match args.split_once(',') {
                Some((n, d)) => (n.trim(), Some(d.trim())),
                None => (args.trim(), None),
            };
            return match ((self.env)(name), default) {
                (Some(v), _) => Ok(Node::new(Value::Str(v))),
                (None, Some(d)) => Ok(
                    crate::yaml::parse_str(d, "oc.env default").unwrap_or_else(|_| Node::str(d))
                ),
                (None, None) => Err(error(
                    format!("environment variable `{name}` is not set"),
                    "set it, or give a default: `${oc.env:NAME,default}`",
                )),
            };
        }
        if expr.contains(':') {
            return Err(error(
                "only the `oc.env` resolver is supported".into(),
                "use a key path such as `${system.arch}` or `${oc.env:NAME}`",
            ));
        }
        let target = target_path(path, expr).ok_or_else(|| {
            error(
                "the relative path climbs above the top of the configuration".into(),
                "use fewer leading dots, or an absolute path such as `${system.arch}`",
            )
        })?;
        // A prefix of the path may itself be an interpolation of a container (`${system}`).
        for end in 1..target.len() {
            let prefix = &target[..end];
            if matches!(get(root, prefix), Some(Node { value: Value::Str(s), .. }) if s.contains("${"))
            {
                self.resolve_at(root, &mut prefix.to_vec())?;
            }
        }
        if get(root, &target).is_none() {
            let parent = &target[..target.len().saturating_sub(1)];
            let known: Vec<String> = get(root, parent)
                .and_then(Node::as_map)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let hint = if known.is_empty() {
                String::new()
            } else {
                format!(" (keys there: {})", known.join(", "))
            };
            return Err(error(
                format!("no value at `{}`{hint}", path_text(root, &target)),
                "define that key, or correct the path (`.` = sibling keys, `..` = one level up); write `\\${` for a literal `${`",
            ));
        }
        let mut target = target;
        if !self.looked_up.contains(&target) {
            self.resolve_at(root, &mut target)?;
            self.looked_up.insert(target.clone());
        }
        Ok(get(root, &target)
            .cloned()
            .unwrap_or_else(|| Node::new(Value::Null)))
    }
}

/// How deeply lists and mappings nest in `node` (a scalar is 0).
fn depth(node: &Node) -> usize {
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Map(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Turns `expr` (`a.b`, `.a`, `..a[0].b`) into an absolute path, relative to the container of
/// the key at `path`.
fn target_path(path: &Path, expr: &str) -> Option<Path> {
    let dots = expr.chars().take_while(|c| *c == '.').count();
    let mut base: Path = if dots == 0 {
        Vec::new()
    } else {
        // The container of the key, then one level up per extra dot.
        let keep = path.len().checked_sub(dots)?;
        path[..keep].to_vec()
    };
    let rest = &expr[dots..];
    for part in rest.split('.').filter(|p| !p.is_empty()) {
        let mut part = part;
        let key_end = part.find('[').unwrap_or(part.len());
        if key_end > 0 {
            base.push(Step::Key(part[..key_end].to_string()));
        }
        part = &part[key_end..];
        while let Some(inner) = part.strip_prefix('[') {
            let close = inner.find(']')?;
            let index = &inner[..close];
            match index.parse::<usize>() {
                Ok(i) => base.push(Step::Index(i)),
                Err(_) => base.push(Step::Key(index.trim_matches(['\'', '"']).to_string())),
            }
            part = &inner[close + 1..];
        }
    }
    Some(base)
}

/// Splits a string into text and `${...}` pieces; `\${` is a literal.
fn split(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("\\${") {
            literal.push(ESCAPED_DOLLAR);
            literal.push('{');
            rest = after;
        } else if let Some(after) = rest.strip_prefix("${") {
            let mut depth = 1;
            let mut end = None;
            for (i, c) in after.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let end = end.ok_or_else(|| "an `${` is never closed".to_string())?;
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Ref(after[..end].to_string()));
            rest = &after[end + 1..];
        } else {
            let c = rest.chars().next().unwrap_or_default();
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;

    fn resolved(text: &str) -> Result<serde_json::Value, ConfigError> {
        let mut root = parse_str(text, "t.yaml").expect("yaml");
        resolve_all(&mut root, &|name| {
            (name == "HOME_X").then(|| "/home/x".to_string())
        })?;
        Ok(root.to_json())
    }

    #[test]
    fn absolute_relative_and_typed() {
        let out = resolved(
            "system: {arch: cpu, n: 2, dirs: {base: /b, venv: '${system.dirs.base}/venv'}}\n\
             packs:\n  a:\n    name: a\n    group: '${.name}'\n    install_group: '${.group}'\n    \
             count: '${system.n}'\n    dirs: {venv: '${system.dirs.venv}/${..install_group}'}\n    \
             caps: ['n >= ${..count}']\n    sys: '${system}'\n    home: '${oc.env:HOME_X}'\n    \
             lit: '\\${x}'\n",
        )
        .expect("resolves");
        let a = &out["packs"]["a"];
        assert_eq!(a["group"], "a");
        assert_eq!(a["install_group"], "a");
        assert_eq!(a["count"], 2);
        assert_eq!(a["dirs"]["venv"], "/b/venv/a");
        assert_eq!(a["caps"][0], "n >= 2");
        assert_eq!(a["sys"]["dirs"]["venv"], "/b/venv");
        assert_eq!(a["home"], "/home/x");
        assert_eq!(a["lit"], "${x}");
        let out =
            resolved("a: {s: '${b.sys.arch}'}\nb: {sys: '${c}'}\nc: {arch: cpu}\n").expect("ok");
        assert_eq!(out["a"]["s"], "cpu");
    }

    #[test]
    fn errors_name_the_problem() {
        let err = resolved("a: {b: '${nope.x}'}\n").expect_err("fails");
        assert!(err.to_string().contains("no value at `nope.x`"), "{err}");
        let err = resolved("a: '${b}'\nb: '${a}'\n").expect_err("fails");
        assert!(err.to_string().contains("refers back to itself"), "{err}");
        let err = resolved("a: 'x ${b'\n").expect_err("fails");
        assert!(err.to_string().starts_with("t.yaml:1:4"), "{err}");
        let err = resolved("a: '${oc.env:MISSING_VAR_Q}'\n").expect_err("fails");
        assert!(err.to_string().contains("MISSING_VAR_Q"), "{err}");
    }
}
