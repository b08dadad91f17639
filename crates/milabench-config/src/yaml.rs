//! YAML loading with PyYAML's meaning: YAML 1.1 scalars (`yes` is true, `1e-4` is a string,
//! `010` is 8), `<<` merge keys, anchors, and milabench's `!delete` and `!expand-dot` tags.
//! Every node keeps its file:line:column. The input size, the values a document holds once its
//! aliases are expanded, and its nesting are bounded by [`crate::limits`].

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

use crate::error::{At, ConfigError};
use crate::limits::{MAX_DOCUMENT_VALUES, MAX_FILE_BYTES, MAX_NESTING};
use crate::merge::merge;
use crate::value::{Location, Map, Node, Value};

/// Parses one YAML document from `text`; `file` names it in locations and errors.
/// An empty document is `null`.
pub fn parse_str(text: &str, file: &str) -> Result<Node, ConfigError> {
    let file: Arc<str> = Arc::from(file);
    let mut builder = Builder {
        file: file.clone(),
        stack: Vec::new(),
        anchors: HashMap::default(),
        root: None,
        documents: 0,
        values: 0,
    };
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| ConfigError::Syntax {
            at: At(Some(Location {
                file: file.clone(),
                line: e.marker().line(),
                column: e.marker().col() + 1,
            })),
            message: e.info().to_string(),
        })?;
        builder.event(event, span)?;
    }
    Ok(builder.root.unwrap_or_else(|| Node::new(Value::Null)))
}

/// Reads and parses a YAML file of at most [`MAX_FILE_BYTES`]; `what` says what the file is
/// for, in errors.
pub fn load_file(path: &std::path::Path, what: &'static str) -> Result<Node, ConfigError> {
    let read_error = |source: std::io::Error| ConfigError::Read {
        what,
        path: path.display().to_string(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigError::too_large(
            None,
            format!(
                "{what} {} holds more than {} MiB",
                path.display(),
                MAX_FILE_BYTES / (1024 * 1024)
            ),
            "name a suite or system YAML file; split a generated one into smaller files",
        ));
    }
    let text = String::from_utf8(bytes).map_err(|source| {
        read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, source))
    })?;
    parse_str(&text, &path.display().to_string())
}

/// A container being built.
enum Frame {
    Seq {
        items: Vec<Node>,
        anchor: usize,
        tag: Option<String>,
        location: Location,
        /// The document's value count before the list.
        values_before: usize,
    },
    Map {
        pairs: Vec<(Node, Node)>,
        pending_key: Option<Node>,
        anchor: usize,
        tag: Option<String>,
        location: Location,
        /// The document's value count before the mapping.
        values_before: usize,
    },
}

/// An anchored value and how many values it holds, itself included.
struct Anchored {
    node: Node,
    values: usize,
}

struct Builder {
    file: Arc<str>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    root: Option<Node>,
    documents: usize,
    /// Values built so far, aliases counted as many times as they are used.
    values: usize,
}

/// The tag as `!name` for local tags or `!!name` for core-schema tags.
fn tag_name(tag: &Tag) -> String {
    if tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!" {
        format!("!!{}", tag.suffix)
    } else if tag.handle == "!" {
        format!("!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

impl Builder {
    fn location(&self, span: &Span) -> Location {
        Location {
            file: self.file.clone(),
            line: span.start.line(),
            column: span.start.col() + 1,
        }
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), ConfigError> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(ConfigError::shape(
                        Some(self.location(&span)),
                        "the file holds more than one YAML document",
                        "keep a single document (remove the extra `---`)",
                    ));
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let location = self.location(&span);
                let tag = tag.as_deref().map(tag_name);
                let node = scalar(text.into_owned(), style, tag.as_deref(), location)?;
                self.count(1, &span)?;
                self.finish(node, anchor, 1);
            }
            Event::Alias(id) => {
                let Some(anchored) = self.anchors.get(&id) else {
                    return Err(ConfigError::shape(
                        Some(self.location(&span)),
                        "alias refers to an unknown anchor",
                        "define the anchor (`&name`) before using it (`*name`)",
                    ));
                };
                let values = anchored.values;
                self.count(values, &span)?;
                let node = self.anchors[&id].node.clone();
                self.finish(node, 0, values);
            }
            Event::SequenceStart(anchor, tag) => {
                let location = self.open(&span)?;
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                    tag: tag.as_deref().map(tag_name),
                    location,
                    values_before: self.values - 1,
                });
            }
            Event::MappingStart(anchor, tag) => {
                let location = self.open(&span)?;
                self.stack.push(Frame::Map {
                    pairs: Vec::new(),
                    pending_key: None,
                    anchor,
                    tag: tag.as_deref().map(tag_name),
                    location,
                    values_before: self.values - 1,
                });
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq {
                    items,
                    anchor,
                    tag,
                    location,
                    values_before,
                }) = self.stack.pop()
                {
                    let node = match tag.as_deref() {
                        None | Some("!!seq") => Node::at(Value::Seq(items), Some(location)),
                        Some("!delete") => Node::at(Value::Delete, Some(location)),
                        Some(other) => return Err(unknown_tag(other, location)),
                    };
                    self.finish(node, anchor, self.values - values_before);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    pairs,
                    anchor,
                    tag,
                    location,
                    values_before,
                    ..
                }) = self.stack.pop()
                {
                    let map = build_mapping(pairs)?;
                    let node = match tag.as_deref() {
                        None | Some("!!map") => Node::at(Value::Map(map), Some(location)),
                        Some("!expand-dot") => expand_dots(map, location)?,
                        Some("!delete") => Node::at(Value::Delete, Some(location)),
                        Some(other) => return Err(unknown_tag(other, location)),
                    };
                    self.finish(node, anchor, self.values - values_before);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Counts `values` more values in the document, refusing to go past
    /// [`MAX_DOCUMENT_VALUES`] (an alias of a large value counts all of it, so an alias bomb
    /// stops here before it is expanded).
    fn count(&mut self, values: usize, span: &Span) -> Result<(), ConfigError> {
        self.values = self.values.saturating_add(values);
        if self.values > MAX_DOCUMENT_VALUES {
            return Err(ConfigError::too_large(
                Some(self.location(span)),
                format!(
                    "the document holds more than {MAX_DOCUMENT_VALUES} values once its aliases (`*name`) are expanded"
                ),
                "use fewer or smaller aliases; an alias copies all of its anchored value each time it is used",
            ));
        }
        Ok(())
    }

    /// Starts a list or mapping at `span`: counts it and checks the nesting.
    fn open(&mut self, span: &Span) -> Result<Location, ConfigError> {
        if self.stack.len() >= MAX_NESTING {
            return Err(ConfigError::too_large(
                Some(self.location(span)),
                format!("lists and mappings are nested more than {MAX_NESTING} levels deep"),
                "flatten the structure",
            ));
        }
        self.count(1, span)?;
        Ok(self.location(span))
    }

    /// Records a finished node holding `values` values under its anchor (when it has one), then
    /// adds it to its container.
    fn finish(&mut self, node: Node, anchor: usize, values: usize) {
        if anchor > 0 {
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    values,
                },
            );
        }
        self.push(node);
    }

    /// Adds a finished node to the container on top of the stack, or makes it the root.
    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                pairs, pending_key, ..
            }) => match pending_key.take() {
                None => *pending_key = Some(node),
                Some(key) => pairs.push((key, node)),
            },
        }
    }
}

fn unknown_tag(tag: &str, location: Location) -> ConfigError {
    ConfigError::shape(
        Some(location),
        format!("unknown YAML tag `{tag}`"),
        "milabench understands `!delete` and `!expand-dot`; remove the tag or quote the value",
    )
}

/// Turns a mapping key into the string milabench sees.
fn key_string(key: Node) -> Result<String, ConfigError> {
    if matches!(key.value, Value::Seq(_) | Value::Map(_) | Value::Delete) {
        return Err(ConfigError::shape(
            key.location.clone(),
            format!("{} cannot be used as a mapping key", key.kind()),
            "use a plain string as the key",
        ));
    }
    match key.value {
        Value::Str(s) => Ok(s),
        _ => Ok(key.python_str()),
    }
}

/// Builds a mapping from key/value pairs, applying `<<` merge keys the way PyYAML does:
/// merged entries come first, the mapping's own entries override them, and for a list of
/// merged mappings the earlier ones win.
fn build_mapping(pairs: Vec<(Node, Node)>) -> Result<Map, ConfigError> {
    let mut merged: Vec<(String, Node)> = Vec::new();
    let mut own: Vec<(String, Node)> = Vec::new();
    for (key, value) in pairs {
        let is_merge_key = matches!(&key.value, Value::Str(s) if s == "<<")
            && key.location.is_some()
            && !matches!(value.value, Value::Str(_));
        if is_merge_key {
            let sources = match value.value {
                Value::Map(m) => vec![m],
                Value::Seq(items) => {
                    let mut maps = Vec::new();
                    for item in items {
                        match item.value {
                            Value::Map(m) => maps.push(m),
                            _ => {
                                return Err(ConfigError::shape(
                                    item.location,
                                    "`<<` merges only mappings",
                                    "list only mappings (or aliases of mappings) after `<<`",
                                ));
                            }
                        }
                    }
                    maps
                }
                _ => {
                    return Err(ConfigError::shape(
                        value.location,
                        "`<<` merges only mappings",
                        "use `<<: *anchor` with an anchored mapping",
                    ));
                }
            };
            for source in sources.into_iter().rev() {
                merged.extend(source);
            }
        } else {
            own.push((key_string(key)?, value));
        }
    }
    let mut map = Map::default();
    for (k, v) in merged.into_iter().chain(own) {
        map.insert(k, v);
    }
    Ok(map)
}

/// `!expand-dot`: `{a.b.c: 1}` becomes `{a: {b: {c: 1}}}`; a `<<<` key splices its mapping in.
fn expand_dots(map: Map, location: Location) -> Result<Node, ConfigError> {
    let mut result = Node::at(Value::Map(Map::default()), Some(location.clone()));
    let mut todo: std::collections::VecDeque<(String, Node)> = map.into_iter().collect();
    while let Some((key, value)) = todo.pop_front() {
        if key == "<<<" {
            let Value::Map(inner) = value.value else {
                return Err(ConfigError::shape(
                    value.location,
                    "`<<<` must hold a mapping",
                    "put a mapping under `<<<`",
                ));
            };
            for entry in inner.into_iter().rev() {
                todo.push_front(entry);
            }
            continue;
        }
        let mut part = value;
        let segments: Vec<&str> = key.split('.').collect();
        if segments.len() > MAX_NESTING {
            return Err(ConfigError::too_large(
                Some(location),
                format!("an `!expand-dot` key has more than {MAX_NESTING} parts"),
                "use shorter dotted keys",
            ));
        }
        for segment in segments.iter().skip(1).rev() {
            let mut m = Map::default();
            m.insert((*segment).to_string(), part);
            part = Node::at(Value::Map(m), Some(location.clone()));
        }
        let mut m = Map::default();
        m.insert(segments[0].to_string(), part);
        result = merge(result, Node::at(Value::Map(m), Some(location.clone())), "")?;
    }
    Ok(result)
}

/// A cursor over the bytes of a scalar, for PyYAML's number patterns.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn done(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Consumes one byte if it satisfies `f`.
    fn eat(&mut self, f: impl Fn(u8) -> bool) -> bool {
        match self.peek() {
            Some(b) if f(b) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// Consumes bytes while they satisfy `f`; returns how many.
    fn eat_while(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.pos;
        while self.eat(&f) {}
        self.pos - start
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.bytes[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn sign(&mut self) {
        self.eat(|b| b == b'-' || b == b'+');
    }

    /// `(:[0-5]?[0-9])+`: at least one base-60 group.
    fn sexagesimal_groups(&mut self) -> bool {
        let mut groups = 0;
        while self.peek() == Some(b':') {
            let save = self.pos;
            self.pos += 1;
            let digits = self.eat_while(|b| b.is_ascii_digit());
            let ok = match digits {
                1 => true,
                2 => self.bytes[self.pos - 2] <= b'5',
                _ => false,
            };
            if !ok {
                self.pos = save;
                break;
            }
            groups += 1;
        }
        groups > 0
    }

    /// `([eE][-+][0-9]+)?`
    fn optional_exponent(&mut self) {
        let save = self.pos;
        if self.eat(|b| b == b'e' || b == b'E')
            && self.eat(|b| b == b'-' || b == b'+')
            && self.eat_while(|b| b.is_ascii_digit()) > 0
        {
            return;
        }
        self.pos = save;
    }
}

fn digit_or_underscore(b: u8) -> bool {
    b.is_ascii_digit() || b == b'_'
}

/// Whether `text` is a float for PyYAML's YAML 1.1 resolver.
fn is_pyyaml_float(text: &str) -> bool {
    let full = |f: &dyn Fn(&mut Cursor) -> bool| {
        let mut c = Cursor::new(text);
        f(&mut c) && c.done()
    };
    // [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?
    full(&|c| {
        c.sign();
        c.eat(|b| b.is_ascii_digit()) && {
            c.eat_while(digit_or_underscore);
            c.eat(|b| b == b'.')
        } && {
            c.eat_while(digit_or_underscore);
            c.optional_exponent();
            true
        }
    })
    // \.[0-9][0-9_]*([eE][-+][0-9]+)?
    || full(&|c| {
        c.eat(|b| b == b'.') && c.eat(|b| b.is_ascii_digit()) && {
            c.eat_while(digit_or_underscore);
            c.optional_exponent();
            true
        }
    })
    // [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
    || full(&|c| {
        c.sign();
        c.eat(|b| b.is_ascii_digit()) && {
            c.eat_while(digit_or_underscore);
            c.sexagesimal_groups()
        } && c.eat(|b| b == b'.') && {
            c.eat_while(digit_or_underscore);
            true
        }
    })
    // [-+]?\.(inf|Inf|INF)
    || full(&|c| {
        c.sign();
        c.eat_str(".inf") || c.eat_str(".Inf") || c.eat_str(".INF")
    })
    // \.(nan|NaN|NAN)
    || full(&|c| c.eat_str(".nan") || c.eat_str(".NaN") || c.eat_str(".NAN"))
}

/// Whether `text` is an integer for PyYAML's YAML 1.1 resolver.
fn is_pyyaml_int(text: &str) -> bool {
    let full = |f: &dyn Fn(&mut Cursor) -> bool| {
        let mut c = Cursor::new(text);
        f(&mut c) && c.done()
    };
    // [-+]?0b[0-1_]+
    full(&|c| {
        c.sign();
        c.eat_str("0b") && c.eat_while(|b| b == b'0' || b == b'1' || b == b'_') > 0
    })
    // [-+]?0[0-7_]+
    || full(&|c| {
        c.sign();
        c.eat(|b| b == b'0') && c.eat_while(|b| (b'0'..=b'7').contains(&b) || b == b'_') > 0
    })
    // [-+]?(0|[1-9][0-9_]*)
    || full(&|c| {
        c.sign();
        c.eat(|b| b == b'0') || (c.eat(|b| (b'1'..=b'9').contains(&b)) && {
            c.eat_while(digit_or_underscore);
            true
        })
    })
    // [-+]?0x[0-9a-fA-F_]+
    || full(&|c| {
        c.sign();
        c.eat_str("0x") && c.eat_while(|b| b.is_ascii_hexdigit() || b == b'_') > 0
    })
    // [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+
    || full(&|c| {
        c.sign();
        c.eat(|b| (b'1'..=b'9').contains(&b)) && {
            c.eat_while(digit_or_underscore);
            c.sexagesimal_groups()
        }
    })
}

/// Builds a scalar node with PyYAML's YAML 1.1 implicit typing for plain scalars.
fn scalar(
    text: String,
    style: ScalarStyle,
    tag: Option<&str>,
    location: Location,
) -> Result<Node, ConfigError> {
    let value = match tag {
        Some("!delete") => Value::Delete,
        Some("!!str") => Value::Str(text),
        Some("!!null") => Value::Null,
        Some("!!bool") => resolve_bool(&text)
            .map(Value::Bool)
            .ok_or_else(|| bad_tagged(&text, "!!bool", &location))?,
        Some("!!int") => resolve_int(&text).ok_or_else(|| bad_tagged(&text, "!!int", &location))?,
        Some("!!float") => {
            resolve_float(&text).ok_or_else(|| bad_tagged(&text, "!!float", &location))?
        }
        Some(other) => return Err(unknown_tag(other, location)),
        None if style != ScalarStyle::Plain => Value::Str(text),
        None => resolve_plain(text),
    };
    Ok(Node::at(value, Some(location)))
}

fn bad_tagged(text: &str, tag: &str, location: &Location) -> ConfigError {
    ConfigError::shape(
        Some(location.clone()),
        format!("`{text}` is not a valid {tag} value"),
        format!("remove the `{tag}` tag or correct the value"),
    )
}

/// Resolves an untagged plain scalar.
fn resolve_plain(owned: String) -> Value {
    let text = owned.as_str();
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        _ => {}
    }
    if let Some(b) = resolve_bool(text) {
        return Value::Bool(b);
    }
    // Like PyYAML, only scalars starting with a sign, a digit or a dot can be numbers.
    if !text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) {
        return Value::Str(owned);
    }
    // Fast path for the most common numbers: plain decimal integers.
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::Int(i);
    }
    if is_pyyaml_float(text)
        && let Some(v) = resolve_float(text)
    {
        return v;
    }
    if is_pyyaml_int(text)
        && let Some(v) = resolve_int(text)
    {
        return v;
    }
    Value::Str(owned)
}

fn resolve_bool(text: &str) -> Option<bool> {
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// Splits a sign off a number.
fn split_sign(text: &str) -> (f64, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (-1.0, &text[1..]),
        Some(b'+') => (1.0, &text[1..]),
        _ => (1.0, text),
    }
}

/// Value of a base-60 number `a:b:c`.
fn sexagesimal(digits: &str) -> Option<f64> {
    let mut total = 0.0;
    for part in digits.split(':') {
        total = total * 60.0 + part.parse::<f64>().ok()?;
    }
    Some(total)
}

fn resolve_float(text: &str) -> Option<Value> {
    let cleaned = text.replace('_', "");
    let (sign, body) = split_sign(&cleaned);
    let lower = body.to_ascii_lowercase();
    let magnitude = if lower == ".inf" {
        f64::INFINITY
    } else if lower == ".nan" {
        f64::NAN
    } else if body.contains(':') {
        sexagesimal(body)?
    } else {
        body.parse::<f64>().ok()?
    };
    Some(Value::Float(sign * magnitude))
}

fn resolve_int(text: &str) -> Option<Value> {
    let cleaned = text.replace('_', "");
    let negative = cleaned.starts_with('-');
    let body = cleaned.trim_start_matches(['-', '+']);
    let magnitude: i128 = if let Some(bin) = body.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()?
    } else if let Some(hex) = body.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if body.contains(':') {
        let mut total: i128 = 0;
        for part in body.split(':') {
            total = total
                .checked_mul(60)?
                .checked_add(part.parse::<i128>().ok()?)?;
        }
        total
    } else if body.len() > 1 && body.starts_with('0') {
        i128::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<i128>().ok()?
    };
    let signed = if negative { -magnitude } else { magnitude };
    match i64::try_from(signed) {
        Ok(i) => Some(Value::Int(i)),
        Err(_) => Some(Value::Float(signed as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of(text: &str) -> Value {
        let doc = parse_str(&format!("a: {text}"), "t.yaml").expect("parses");
        doc.get("a").expect("key a").value.clone()
    }

    #[test]
    fn plain_scalars_follow_pyyaml() {
        use Value::*;
        let cases: Vec<(&str, Value)> = vec![
            ("1e-4", Str("1e-4".into())),
            ("0.010", Float(0.01)),
            ("0x10", Int(16)),
            ("1_000", Int(1000)),
            ("010", Int(8)),
            ("0b11", Int(3)),
            ("1:30", Int(90)),
            ("+1", Int(1)),
            (".5", Float(0.5)),
            ("1.", Float(1.0)),
            ("1.0e-4", Float(0.0001)),
            ("1.0e4", Str("1.0e4".into())),
            ("08", Str("08".into())),
            ("0o10", Str("0o10".into())),
            ("1:30.5", Float(90.5)),
            ("+.5", Str("+.5".into())),
            ("yes", Bool(true)),
            ("Off", Bool(false)),
            ("~", Null),
            ("", Null),
            ("'yes'", Str("yes".into())),
            ("\"1\"", Str("1".into())),
            ("-.inf", Float(f64::NEG_INFINITY)),
            ("2024-01-02", Str("2024-01-02".into())),
        ];
        for (text, want) in cases {
            assert_eq!(value_of(text), want, "{text}");
        }
        assert!(matches!(value_of(".nan"), Float(x) if x.is_nan()));
    }

    proptest::proptest! {
        /// The hand-written matchers agree with PyYAML's regular expressions.
        #[test]
        fn number_matchers_match_pyyaml_patterns(text in "[-+0-9._:eEbxaAfinIFNT]{0,8}") {
            let float = regex_lite::Regex::new(concat!(
                r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
                r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
                r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
                r"|[-+]?\.(?:inf|Inf|INF)",
                r"|\.(?:nan|NaN|NAN))$"
            )).expect("pattern");
            let int = regex_lite::Regex::new(concat!(
                r"^(?:[-+]?0b[0-1_]+",
                r"|[-+]?0[0-7_]+",
                r"|[-+]?(?:0|[1-9][0-9_]*)",
                r"|[-+]?0x[0-9a-fA-F_]+",
                r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"
            )).expect("pattern");
            proptest::prop_assert_eq!(is_pyyaml_float(&text), float.is_match(&text), "float {}", text);
            proptest::prop_assert_eq!(is_pyyaml_int(&text), int.is_match(&text), "int {}", text);
        }
    }

    #[test]
    fn keeps_key_order_and_locations() {
        let doc = parse_str("b: 1\na:\n  z: 2\n  y: 3\n", "f.yaml").expect("parses");
        let keys: Vec<&String> = doc.as_map().expect("map").keys().collect();
        assert_eq!(keys, ["b", "a"]);
        let z = doc.get("a").and_then(|a| a.get("z")).expect("z");
        let loc = z.location.as_ref().expect("location");
        assert_eq!((loc.line, loc.column), (3, 6));
    }

    #[test]
    fn tags_and_merge_keys() {
        let doc = parse_str(
            "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\ngone: !delete ''\nd: !expand-dot {a.b.c: 1, a.d: 2}\n",
            "f.yaml",
        )
        .expect("parses");
        let child = doc.get("child").expect("child").to_json();
        assert_eq!(child, serde_json::json!({"x": 1, "y": 3}));
        assert_eq!(doc.get("gone").expect("gone").value, Value::Delete);
        assert_eq!(
            doc.get("d").expect("d").to_json(),
            serde_json::json!({"a": {"b": {"c": 1}, "d": 2}})
        );
    }

    #[test]
    fn syntax_errors_name_the_position() {
        let err = parse_str("a: [1, 2\nb: 3\n", "bad.yaml").expect_err("fails");
        let text = err.to_string();
        assert!(text.starts_with("bad.yaml:"), "{text}");
        assert!(text.contains("invalid YAML"), "{text}");
    }

    #[test]
    fn unknown_tags_are_errors() {
        let err = parse_str("a: !python/object 1\n", "t.yaml").expect_err("fails");
        assert!(err.to_string().contains("unknown YAML tag"), "{err}");
    }

    /// The billion-laughs shape: each level lists the previous one nine times.
    fn alias_bomb(levels: usize) -> String {
        let mut text = "l0: &l0 [x, x, x, x, x, x, x, x, x]\n".to_string();
        for i in 1..levels {
            let p = i - 1;
            text.push_str(&format!(
                "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        text
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_is_expanded() {
        let err = parse_str(&alias_bomb(10), "bomb.yaml").expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        let text = err.to_string();
        assert!(text.starts_with("bomb.yaml:"), "{text}");
        assert!(text.contains("aliases"), "{text}");
        // A few levels of the same shape stay within the bound and load.
        parse_str(&alias_bomb(4), "small.yaml").expect("within the bound");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let depth = MAX_NESTING + 1;
        let text = format!("a: {}{}", "[".repeat(depth), "]".repeat(depth));
        let err = parse_str(&text, "deep.yaml").expect_err("refused");
        assert!(err.to_string().contains("nested more than"), "{err}");
        let ok = format!("a: {}{}", "[".repeat(8), "]".repeat(8));
        parse_str(&ok, "ok.yaml").expect("shallow nesting loads");
    }

    #[test]
    fn an_endless_file_is_read_only_up_to_the_bound() {
        let err = load_file(std::path::Path::new("/dev/zero"), "suite file").expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(
            err.to_string().contains("/dev/zero holds more than"),
            "{err}"
        );
    }
}
