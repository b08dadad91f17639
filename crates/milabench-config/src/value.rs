//! The configuration tree: YAML values that remember where they were written.
//!
//! Mappings keep their key order (argv order and benchmark order matter), scalars keep the type
//! PyYAML would give them, and every node carries the file:line:column it came from so that
//! errors can point at it.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

/// Where a value was written: a file and a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as given to the loader.
    pub file: Arc<str>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// An ordered mapping from key to node. Keys are short and trusted (suite files), so a fast
/// non-cryptographic hasher is used.
pub type Map = IndexMap<String, Node, rustc_hash::FxBuildHasher>;

/// One value of the configuration tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or an empty value.
    Null,
    /// A boolean (YAML 1.1 spellings: `true`, `yes`, `on`, ...).
    Bool(bool),
    /// An integer (decimal, `0x`, `0o`-style `0`-prefixed octal, `0b`, `_` separators).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in written order.
    Map(Map),
    /// The `!delete` marker: removes the key it is merged onto.
    Delete,
}

/// A value and the place it was written, if it was written in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where it was written; `None` for built-in defaults and computed values.
    pub location: Option<Location>,
}

impl Node {
    /// A node without a location (built-in or computed).
    pub fn new(value: Value) -> Self {
        Node {
            value,
            location: None,
        }
    }

    /// A node with a location.
    pub fn at(value: Value, location: Option<Location>) -> Self {
        Node { value, location }
    }

    /// A string node without a location.
    pub fn str(s: impl Into<String>) -> Self {
        Node::new(Value::Str(s.into()))
    }

    /// An empty mapping node without a location.
    pub fn empty_map() -> Self {
        Node::new(Value::Map(Map::default()))
    }

    /// The mapping inside this node, if it is one.
    pub fn as_map(&self) -> Option<&Map> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The mapping inside this node, mutably, if it is one.
    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match &mut self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The string inside this node, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Looks up `key` if this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map().and_then(|m| m.get(key))
    }

    /// Python's truthiness of the value (`enabled: 0` is false, `enabled: "no"` quoted is true).
    pub fn is_truthy(&self) -> bool {
        match &self.value {
            Value::Null | Value::Delete => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(x) => *x != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Seq(s) => !s.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    /// A short name of the value's kind with its article, for error messages.
    pub fn kind(&self) -> &'static str {
        self.value.kind()
    }

    /// How many values the tree holds: this node and every list item and mapping value under it.
    pub fn value_count(&self) -> usize {
        1 + match &self.value {
            Value::Seq(items) => items.iter().map(Node::value_count).sum(),
            Value::Map(m) => m.values().map(Node::value_count).sum(),
            _ => 0,
        }
    }

    /// Converts the tree to JSON, keeping key order.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null | Value::Delete => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(x) => serde_json::Number::from_f64(*x)
                .map(J::Number)
                .unwrap_or_else(|| J::String(python_float(*x))),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    /// Builds a location-less tree from JSON.
    pub fn from_json(json: &serde_json::Value) -> Node {
        use serde_json::Value as J;
        Node::new(match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Value::Str(s.clone()),
            J::Array(a) => Value::Seq(a.iter().map(Node::from_json).collect()),
            J::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v)))
                    .collect(),
            ),
        })
    }

    /// The value as Python's `str()` would print it (`True`, `None`, `0.01`, `1e-05`).
    pub fn python_str(&self) -> String {
        match &self.value {
            Value::Null | Value::Delete => "None".into(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::Int(i) => i.to_string(),
            Value::Float(x) => python_float(*x),
            Value::Str(s) => s.clone(),
            Value::Seq(items) => {
                let inner: Vec<String> = items.iter().map(Node::python_repr).collect();
                format!("[{}]", inner.join(", "))
            }
            Value::Map(m) => {
                let inner: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", python_quote(k), v.python_repr()))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
        }
    }

    /// The value as Python's `repr()` would print it (strings quoted).
    fn python_repr(&self) -> String {
        match &self.value {
            Value::Str(s) => python_quote(s),
            _ => self.python_str(),
        }
    }
}

impl Value {
    /// A short name of the value's kind with its article (`an integer`), for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
            Value::Delete => "a !delete marker",
        }
    }
}

/// Quotes a string the way Python's `repr()` does for simple strings.
fn python_quote(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// Formats a float like Python's `repr()`: shortest round-trip digits, exponent notation below
/// 1e-4 and from 1e16, `inf`, `nan`, and a trailing `.0` on whole numbers.
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits as `d.ddde<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{exp_sign}{:02}", exp.abs());
    }
    let body = if exp < 0 {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            format!("{}{}.0", digits, "0".repeat(int_len - digits.len()))
        } else {
            format!("{}.{}", &digits[..int_len], &digits[int_len..])
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        let cases = [
            (0.01, "0.01"),
            (1.0, "1.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1.5e-7, "1.5e-07"),
            (f64::INFINITY, "inf"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float(x), want, "{x}");
        }
    }

    #[test]
    fn python_str_of_containers() {
        let node = Node::new(Value::Seq(vec![
            Node::new(Value::Int(1)),
            Node::str("a"),
            Node::new(Value::Bool(true)),
        ]));
        assert_eq!(node.python_str(), "[1, 'a', True]");
    }
}
