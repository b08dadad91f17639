//! `{name}` substitution in one argv element (a subset of Python's `str.format`).
//!
//! Rules:
//! * `{{` is a literal `{` and `}}` a literal `}`.
//! * A placeholder is `{` immediately followed by a letter or `_`: a name, then any number of
//!   `[key]` (digits index a list, anything else is a mapping key, unquoted as in Python) or
//!   `.key` (mapping key), then `}`. Format specs (`{x:>4}`) and conversions (`{x!r}`) are not
//!   supported and are errors.
//! * An element holding any other `{` (JSON such as `{"image":10}`, `{ x }`, `{0}`, `{}`) is not
//!   a template: it is passed through verbatim, with no substitution and no `{{` processing.
//!   This keeps JSON arguments intact, which is what the Python tool achieves by accident
//!   (its `format` fails on them and it keeps the original).
//! * A lone `}` is kept as is.

use serde_json::Value as Json;

/// What went wrong while substituting; the caller adds the argument text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TemplateError {
    /// `{name}` whose name is not in the context.
    Unknown { name: String },
    /// `{a[b]}` where the path does not exist.
    BadPath {
        placeholder: String,
        message: String,
    },
    /// A `{name` that does not follow the placeholder syntax.
    Malformed { column: usize, message: String },
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// Whether `text` is a template under the rules above.
fn is_template(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            match b.get(i + 1) {
                Some(b'{') => i += 2,
                Some(c) if c.is_ascii_alphabetic() || *c == b'_' => i += 1,
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    true
}

/// Render a context value as Python's `str()` would; lists and mappings render as JSON.
pub(crate) fn render(value: &Json) -> String {
    match value {
        Json::Null => "None".into(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => super::expr::python_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Substitute every placeholder of `text` using `lookup`; `Ok(None)` when `text` is not a
/// template (kept verbatim).
pub(crate) fn substitute(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<Json>,
) -> Result<Option<String>, TemplateError> {
    if !is_template(text) {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let col = |rest: &str| text[..text.len() - rest.len()].chars().count() + 1;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
        } else {
            let start_col = col(tail);
            let Some(end) = tail.find('}') else {
                return Err(TemplateError::Malformed {
                    column: start_col,
                    message: "placeholder is not closed by `}`; write `{{` for a literal brace"
                        .into(),
                });
            };
            let inner = &tail[1..end];
            let (name, segs) =
                parse_path(inner).map_err(|(offset, message)| TemplateError::Malformed {
                    column: start_col + 1 + inner[..offset].chars().count(),
                    message,
                })?;
            let root = lookup(name).ok_or_else(|| TemplateError::Unknown {
                name: name.to_string(),
            })?;
            let value = walk(&root, &segs).map_err(|message| TemplateError::BadPath {
                placeholder: format!("{{{inner}}}"),
                message,
            })?;
            out.push_str(&render(value));
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(Some(out))
}

fn parse_path(inner: &str) -> Result<(&str, Vec<Seg<'_>>), (usize, String)> {
    let ident_end = |s: &str| {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let n = ident_end(inner);
    let name = &inner[..n];
    let mut segs = Vec::new();
    let mut i = n;
    while i < inner.len() {
        let rest = &inner[i..];
        if let Some(after) = rest.strip_prefix('[') {
            let Some(close) = after.find(']') else {
                return Err((i, "`[` is not closed by `]`".into()));
            };
            let key = &after[..close];
            if key.is_empty() {
                return Err((i, "empty `[]` in placeholder".into()));
            }
            segs.push(match key.parse::<usize>() {
                Ok(idx) if key.bytes().all(|b| b.is_ascii_digit()) => Seg::Index(idx),
                _ => Seg::Key(key),
            });
            i += 1 + close + 1;
        } else if let Some(after) = rest.strip_prefix('.') {
            let m = ident_end(after);
            if m == 0 {
                return Err((i, "expected a key name after `.`".into()));
            }
            segs.push(Seg::Key(&after[..m]));
            i += 1 + m;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            let message = match c {
                ':' => "format specs (`{x:...}`) are not supported; write `{{` and `}}` for literal braces".to_string(),
                '!' => "conversions (`{x!r}`) are not supported".to_string(),
                _ => format!(
                    "unexpected `{c}` in placeholder; write `{{{{` and `}}}}` for literal braces"
                ),
            };
            return Err((i, message));
        }
    }
    Ok((name, segs))
}

fn walk<'v>(root: &'v Json, segs: &[Seg<'_>]) -> Result<&'v Json, String> {
    let mut node = root;
    for seg in segs {
        node = match (seg, node) {
            (Seg::Index(i), Json::Array(items)) => items.get(*i).ok_or_else(|| {
                format!("index {i} is out of range (the list has {})", items.len())
            })?,
            (Seg::Index(i), Json::Object(map)) => map
                .get(&i.to_string())
                .ok_or_else(|| format!("no key `{i}`"))?,
            (Seg::Key(k), Json::Object(map)) => map.get(*k).ok_or_else(|| {
                let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                format!("no key `{k}`; keys: {}", keys.join(", "))
            })?,
            (Seg::Key(k), other) => {
                return Err(format!("cannot look up `{k}` in {}", kind(other)));
            }
            (Seg::Index(i), other) => {
                return Err(format!("cannot index {} with [{i}]", kind(other)));
            }
        };
    }
    Ok(node)
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a mapping",
    }
}
