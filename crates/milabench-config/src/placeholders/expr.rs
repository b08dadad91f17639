//! A small, safe expression language (a subset of Python expressions) used for `auto(...)`,
//! `auto_batch(...)`, `expr(...)` and `requires_capabilities`.
//!
//! Grammar, lowest precedence first:
//!
//! ```text
//! or      := and ('or' and)*
//! and     := not ('and' not)*
//! not     := 'not' not | compare
//! compare := sum (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') sum)*   (chained like Python)
//! sum     := term (('+'|'-') term)*
//! term    := unary (('*'|'/'|'//'|'%') unary)*
//! unary   := ('-'|'+') unary | power
//! power   := postfix ('**' unary)?
//! postfix := atom ('[' or ']')*
//! atom    := INT | FLOAT | STRING | True | False | None | NAME | NAME '(' args ')'
//!          | '(' or ')' | '[' items ']'
//! ```
//!
//! There is no attribute access, no assignment, no lambda, no slicing, no comprehension, and
//! only named functions supplied by the caller ([`Scope::call`]) or the built-ins `len`, `min`,
//! `max`, `int`, `float`, `abs` can be called. Integers are 64-bit (overflow is an error, not a
//! big integer). Nesting is limited to [`MAX_DEPTH`] so evaluation cannot exhaust the stack.
//! Results follow Python: `8 * 10` is `80`, `8 / 2` is `4.0`, `-7 // 2` is `-4`, `-7 % 3` is `2`.

use std::fmt;

/// Deepest allowed expression tree.
pub const MAX_DEPTH: u32 = 64;

/// A value of the expression language.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None` (JSON null).
    None,
    /// `True` / `False`.
    Bool(bool),
    /// 64-bit integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// String.
    Str(String),
    /// List.
    List(Vec<Value>),
    /// Mapping with string keys, in order.
    Map(Vec<(String, Value)>),
}

impl Value {
    /// Convert a JSON value (integers beyond `i64` become floats).
    pub fn from_json(v: &serde_json::Value) -> Value {
        use serde_json::Value as J;
        match v {
            J::Null => Value::None,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Value::Str(s.clone()),
            J::Array(a) => Value::List(a.iter().map(Value::from_json).collect()),
            J::Object(m) => Value::Map(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Python type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Map(_) => "dict",
        }
    }

    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    /// Render as Python's `str()` would (strings unquoted, `True`, `None`, `4.0`, `1e+24`).
    pub fn to_python_string(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            other => other.repr(),
        }
    }

    /// Python `repr()`.
    fn repr(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => python_float(*f),
            Value::Str(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Value::List(l) => {
                let items: Vec<String> = l.iter().map(Value::repr).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Map(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("'{}': {}", k, v.repr()))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn as_number(&self) -> Option<Num> {
        match self {
            Value::Bool(b) => Some(Num::I(i64::from(*b))),
            Value::Int(i) => Some(Num::I(*i)),
            Value::Float(f) => Some(Num::F(*f)),
            _ => None,
        }
    }
}

/// Python's float `repr`: shortest round-trip digits, `.0` for integral values, and
/// scientific notation outside `[1e-4, 1e16)`.
pub fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = f.abs();
    if a == 0.0 || (1e-4..1e16).contains(&a) {
        let s = format!("{f}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        format!("{mantissa}e{sign}{digits:0>2}")
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// Whether an error comes from reading the expression or from evaluating it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Outside the grammar.
    Syntax,
    /// Well-formed but failed (unknown name, bad type, division by zero, ...).
    Evaluation,
}

/// An error with the expression and a caret under the offending column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ExprError {
    /// Syntax or evaluation.
    pub kind: ErrorKind,
    /// What went wrong, and how to fix it where that is known.
    pub message: String,
    /// The whole expression.
    pub expression: String,
    /// 1-based column (in characters) of the offending part.
    pub column: usize,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ErrorKind::Syntax => "invalid expression",
            ErrorKind::Evaluation => "expression failed",
        };
        write!(
            f,
            "{what} at column {}: {}\n    {}\n    {}^",
            self.column,
            self.message,
            self.expression,
            " ".repeat(self.column.saturating_sub(1))
        )
    }
}

/// Names and functions an expression can see.
pub trait Scope {
    /// Value of a bare name, `None` when unknown.
    fn lookup(&self, name: &str) -> Option<Value>;
    /// Every name [`Scope::lookup`] knows, for "unknown name" errors.
    fn names(&self) -> Vec<String>;
    /// Call a caller-provided function; `None` when `name` is not one (built-ins are tried next).
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let _ = (name, args);
        None
    }
    /// Names of the caller-provided functions, for "unknown function" errors.
    fn function_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A scope over the top-level keys of a JSON mapping (e.g. the resolved `system` tree).
#[derive(Debug, Clone, Copy)]
pub struct JsonScope<'a>(pub &'a serde_json::Value);

impl Scope for JsonScope<'_> {
    fn lookup(&self, name: &str) -> Option<Value> {
        self.0.get(name).map(Value::from_json)
    }
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }
}

const BUILTINS: &[&str] = &["abs", "float", "int", "len", "max", "min"];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Name(String),
    Op(&'static str),
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Int(i) => write!(f, "number {i}"),
            Tok::Float(x) => write!(f, "number {}", python_float(*x)),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Name(n) => write!(f, "`{n}`"),
            Tok::Op(o) => write!(f, "`{o}`"),
            Tok::End => write!(f, "end of expression"),
        }
    }
}

/// Byte offsets `[start, end)` in the source.
type Span = (usize, usize);

const OPS: &[&str] = &[
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", ",",
];

fn tokenize(src: &str) -> Result<Vec<(Tok, Span)>, (String, usize)> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut is_float = false;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' {
                is_float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
                return Err((format!("invalid number `{}`", &src[start..=i]), start));
            }
            let text: String = src[start..i].chars().filter(|&c| c != '_').collect();
            let tok =
                if is_float {
                    Tok::Float(
                        text.parse()
                            .map_err(|_| (format!("invalid number `{text}`"), start))?,
                    )
                } else {
                    Tok::Int(text.parse().map_err(|_| {
                        (format!("integer `{text}` does not fit in 64 bits"), start)
                    })?)
                };
            out.push((tok, (start, i)));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Name(src[start..i].to_string()), (start, i)));
            continue;
        }
        if c == b'\'' || c == b'"' {
            let mut s = String::new();
            let mut chars = src[i + 1..].char_indices();
            loop {
                match chars.next() {
                    None => {
                        return Err(("unterminated string".into(), start));
                    }
                    Some((k, ch)) if ch as u32 == u32::from(c) => {
                        i = i + 1 + k + 1;
                        break;
                    }
                    Some((k, '\\')) => match chars.next() {
                        Some((_, 'n')) => s.push('\n'),
                        Some((_, 't')) => s.push('\t'),
                        Some((_, e @ ('\\' | '\'' | '"'))) => s.push(e),
                        Some((_, e)) => {
                            return Err((format!("unsupported escape `\\{e}`"), i + 1 + k));
                        }
                        None => return Err(("unterminated string".into(), start)),
                    },
                    Some((_, ch)) => s.push(ch),
                }
            }
            out.push((Tok::Str(s), (start, i)));
            continue;
        }
        if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
            i += op.len();
            out.push((Tok::Op(op), (start, i)));
            continue;
        }
        let ch = src[i..].chars().next().unwrap_or('?');
        let hint = match ch {
            '=' => "; use `==` to compare",
            '.' => "; attribute access is not supported, write gpu['count'] instead of gpu.count",
            ':' => "; slices are not supported",
            '&' | '|' | '!' => "; use `and`, `or`, `not`",
            _ => "",
        };
        return Err((format!("unexpected character `{ch}`{hint}"), start));
    }
    out.push((Tok::End, (src.len(), src.len())));
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Lit(Value),
    Name(String),
    List(Vec<Expr>),
    Call(String, Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Pos(Box<Expr>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Vec<(CmpOp, Span, Expr)>),
}

/// A parsed expression, ready to evaluate any number of times.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    node: Node,
    span: Span,
    depth: u32,
}

/// A parsed expression together with its source text (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    source: String,
    root: Expr,
}

struct Parser {
    toks: Vec<(Tok, Span)>,
    pos: usize,
    level: u32,
}

type PResult<T> = Result<T, (String, usize)>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn span(&self) -> Span {
        self.toks[self.pos].1
    }
    fn next(&mut self) -> (Tok, Span) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }
    fn expect_op(&mut self, op: &str, context: &str) -> PResult<Span> {
        if self.is_op(op) {
            Ok(self.next().1)
        } else {
            Err((
                format!("expected `{op}` {context}, found {}", self.peek()),
                self.span().0,
            ))
        }
    }

    fn make(&self, node: Node, span: Span, child_depth: u32) -> PResult<Expr> {
        let depth = 1 + child_depth;
        if depth > MAX_DEPTH {
            return Err((
                format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
                span.0,
            ));
        }
        Ok(Expr { node, span, depth })
    }

    fn or(&mut self) -> PResult<Expr> {
        let mut left = self.and()?;
        while self.is_kw("or") {
            self.next();
            let right = self.and()?;
            let span = (left.span.0, right.span.1);
            let d = left.depth.max(right.depth);
            left = self.make(Node::Or(Box::new(left), Box::new(right)), span, d)?;
        }
        Ok(left)
    }

    fn and(&mut self) -> PResult<Expr> {
        let mut left = self.not()?;
        while self.is_kw("and") {
            self.next();
            let right = self.not()?;
            let span = (left.span.0, right.span.1);
            let d = left.depth.max(right.depth);
            left = self.make(Node::And(Box::new(left), Box::new(right)), span, d)?;
        }
        Ok(left)
    }

    fn not(&mut self) -> PResult<Expr> {
        if self.is_kw("not") {
            let (_, sp) = self.next();
            let inner = self.nested(sp, Self::not)?;
            let span = (sp.0, inner.span.1);
            let d = inner.depth;
            return self.make(Node::Not(Box::new(inner)), span, d);
        }
        self.compare()
    }

    /// Runs a recursive parse step, bounding the recursion depth (prefix chains such as
    /// `not not ...` or `((((...` recurse before their node exists).
    fn nested(&mut self, sp: Span, f: fn(&mut Self) -> PResult<Expr>) -> PResult<Expr> {
        if self.level >= MAX_DEPTH {
            return Err((
                format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
                sp.0,
            ));
        }
        self.level += 1;
        let r = f(self);
        self.level -= 1;
        r
    }

    fn cmp_op(&mut self) -> Option<(CmpOp, Span)> {
        let op = match self.peek() {
            Tok::Op("==") => CmpOp::Eq,
            Tok::Op("!=") => CmpOp::Ne,
            Tok::Op("<") => CmpOp::Lt,
            Tok::Op("<=") => CmpOp::Le,
            Tok::Op(">") => CmpOp::Gt,
            Tok::Op(">=") => CmpOp::Ge,
            Tok::Name(n) if n == "in" => CmpOp::In,
            Tok::Name(n)
                if n == "not"
                    && matches!(self.toks.get(self.pos + 1), Some((Tok::Name(m), _)) if m == "in") =>
            {
                let (_, a) = self.next();
                let (_, b) = self.next();
                return Some((CmpOp::NotIn, (a.0, b.1)));
            }
            _ => return None,
        };
        Some((op, self.next().1))
    }

    fn compare(&mut self) -> PResult<Expr> {
        let first = self.sum()?;
        let mut rest = Vec::new();
        while let Some((op, sp)) = self.cmp_op() {
            rest.push((op, sp, self.sum()?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let span = (
            first.span.0,
            rest.last().map_or(first.span.1, |r| r.2.span.1),
        );
        let d = rest.iter().map(|r| r.2.depth).fold(first.depth, u32::max);
        self.make(Node::Compare(Box::new(first), rest), span, d)
    }

    fn binary_loop(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> PResult<Expr>,
    ) -> PResult<Expr> {
        let mut left = next(self)?;
        loop {
            let Some(op) = ops.iter().find(|(s, _)| self.is_op(s)).map(|(_, op)| *op) else {
                return Ok(left);
            };
            self.next();
            let right = next(self)?;
            let span = (left.span.0, right.span.1);
            let d = left.depth.max(right.depth);
            left = self.make(Node::Bin(op, Box::new(left), Box::new(right)), span, d)?;
        }
    }

    fn sum(&mut self) -> PResult<Expr> {
        self.binary_loop(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::term)
    }

    fn term(&mut self) -> PResult<Expr> {
        self.binary_loop(
            &[
                ("*", BinOp::Mul),
                ("//", BinOp::FloorDiv),
                ("/", BinOp::Div),
                ("%", BinOp::Mod),
            ],
            Self::unary,
        )
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.is_op("-") || self.is_op("+") {
            let (tok, sp) = self.next();
            let inner = self.nested(sp, Self::unary)?;
            let span = (sp.0, inner.span.1);
            let d = inner.depth;
            let node = if tok == Tok::Op("-") {
                Node::Neg(Box::new(inner))
            } else {
                Node::Pos(Box::new(inner))
            };
            return self.make(node, span, d);
        }
        self.power()
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.postfix()?;
        if self.is_op("**") {
            let (_, sp) = self.next();
            let exp = self.nested(sp, Self::unary)?;
            let span = (base.span.0, exp.span.1);
            let d = base.depth.max(exp.depth);
            return self.make(
                Node::Bin(BinOp::Pow, Box::new(base), Box::new(exp)),
                span,
                d,
            );
        }
        Ok(base)
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        while self.is_op("[") {
            let (_, sp) = self.next();
            let key = self.nested(sp, Self::or)?;
            let end = self.expect_op("]", "to close the subscript")?;
            let span = (e.span.0, end.1);
            let d = e.depth.max(key.depth);
            e = self.make(Node::Index(Box::new(e), Box::new(key)), span, d)?;
        }
        if self.is_op("(") {
            return Err((
                "only named functions can be called, like len(nodes)".into(),
                self.span().0,
            ));
        }
        Ok(e)
    }

    fn items(&mut self, close: &str, what: &str) -> PResult<(Vec<Expr>, Span)> {
        let mut items = Vec::new();
        loop {
            if self.is_op(close) {
                return Ok((items, self.next().1));
            }
            let sp = self.span();
            items.push(self.nested(sp, Self::or)?);
            if !self.is_op(close) {
                self.expect_op(",", &format!("or `{close}` in {what}"))?;
            }
        }
    }

    fn atom(&mut self) -> PResult<Expr> {
        let (tok, sp) = self.next();
        match tok {
            Tok::Int(i) => self.make(Node::Lit(Value::Int(i)), sp, 0),
            Tok::Float(f) => self.make(Node::Lit(Value::Float(f)), sp, 0),
            Tok::Str(s) => self.make(Node::Lit(Value::Str(s)), sp, 0),
            Tok::Name(n) => match n.as_str() {
                "True" => self.make(Node::Lit(Value::Bool(true)), sp, 0),
                "False" => self.make(Node::Lit(Value::Bool(false)), sp, 0),
                "None" => self.make(Node::Lit(Value::None), sp, 0),
                "and" | "or" | "not" | "in" | "if" | "else" | "lambda" | "for" | "is"
                | "import" => Err((format!("unexpected keyword `{n}`"), sp.0)),
                _ if self.is_op("(") => {
                    self.next();
                    let (args, end) = self.items(")", "the argument list")?;
                    let d = args.iter().map(|a| a.depth).max().unwrap_or(0);
                    self.make(Node::Call(n, args), (sp.0, end.1), d)
                }
                _ => self.make(Node::Name(n), sp, 0),
            },
            Tok::Op("(") => {
                let inner = self.nested(sp, Self::or)?;
                let end = self.expect_op(")", "to close the parenthesis")?;
                Ok(Expr {
                    span: (sp.0, end.1),
                    ..inner
                })
            }
            Tok::Op("[") => {
                let (items, end) = self.items("]", "the list")?;
                let d = items.iter().map(|a| a.depth).max().unwrap_or(0);
                self.make(Node::List(items), (sp.0, end.1), d)
            }
            Tok::End => Err(("unexpected end of expression".into(), sp.0)),
            other => Err((format!("unexpected {other}"), sp.0)),
        }
    }
}

fn column(src: &str, byte: usize) -> usize {
    src.get(..byte.min(src.len()))
        .map_or(1, |prefix| prefix.chars().count() + 1)
}

impl Program {
    /// Parse `source`; any token outside the grammar is a syntax error pointing at it.
    pub fn parse(source: &str) -> Result<Program, ExprError> {
        let syntax = |(message, at): (String, usize)| ExprError {
            kind: ErrorKind::Syntax,
            message,
            expression: source.to_string(),
            column: column(source, at),
        };
        let toks = tokenize(source).map_err(syntax)?;
        let mut p = Parser {
            toks,
            pos: 0,
            level: 0,
        };
        let root = p.or().map_err(syntax)?;
        if *p.peek() != Tok::End {
            let extra = p.peek().to_string();
            return Err(syntax((
                format!("unexpected {extra} after a complete expression"),
                p.span().0,
            )));
        }
        Ok(Program {
            source: source.to_string(),
            root,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluate against `scope`.
    pub fn eval(&self, scope: &dyn Scope) -> Result<Value, ExprError> {
        eval(&self.root, scope).map_err(|(message, span)| ExprError {
            kind: ErrorKind::Evaluation,
            message,
            expression: self.source.clone(),
            column: column(&self.source, span.0),
        })
    }
}

/// Parse and evaluate `source` in one step.
pub fn evaluate(source: &str, scope: &dyn Scope) -> Result<Value, ExprError> {
    Program::parse(source)?.eval(scope)
}

type EResult = Result<Value, (String, Span)>;

fn eval(e: &Expr, scope: &dyn Scope) -> EResult {
    match &e.node {
        Node::Lit(v) => Ok(v.clone()),
        Node::Name(n) => scope.lookup(n).ok_or_else(|| {
            let names = scope.names();
            (
                format!(
                    "unknown name `{n}`; known names: {}",
                    if names.is_empty() {
                        "(none)".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
                e.span,
            )
        }),
        Node::List(items) => Ok(Value::List(
            items
                .iter()
                .map(|i| eval(i, scope))
                .collect::<Result<_, _>>()?,
        )),
        Node::Call(name, args) => {
            let args: Vec<Value> = args
                .iter()
                .map(|a| eval(a, scope))
                .collect::<Result<_, _>>()?;
            if let Some(r) = scope.call(name, &args) {
                return r.map_err(|m| (m, e.span));
            }
            builtin(name, &args)
                .unwrap_or_else(|| {
                    let mut known: Vec<String> = scope.function_names();
                    known.extend(BUILTINS.iter().map(|s| s.to_string()));
                    known.sort();
                    Err(format!(
                        "unknown function `{name}`; known functions: {}",
                        known.join(", ")
                    ))
                })
                .map_err(|m| (m, e.span))
        }
        Node::Index(base, key) => {
            let b = eval(base, scope)?;
            let k = eval(key, scope)?;
            index(&b, &k).map_err(|m| (m, key.span))
        }
        Node::Neg(inner) => match eval(inner, scope)?.as_number() {
            Some(Num::I(i)) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| ("integer overflow".to_string(), e.span)),
            Some(Num::F(f)) => Ok(Value::Float(-f)),
            None => Err(("bad operand type for unary `-`".into(), inner.span)),
        },
        Node::Pos(inner) => match eval(inner, scope)?.as_number() {
            Some(Num::I(i)) => Ok(Value::Int(i)),
            Some(Num::F(f)) => Ok(Value::Float(f)),
            None => Err(("bad operand type for unary `+`".into(), inner.span)),
        },
        Node::Not(inner) => Ok(Value::Bool(!eval(inner, scope)?.truthy())),
        Node::And(a, b) => {
            let l = eval(a, scope)?;
            if l.truthy() { eval(b, scope) } else { Ok(l) }
        }
        Node::Or(a, b) => {
            let l = eval(a, scope)?;
            if l.truthy() { Ok(l) } else { eval(b, scope) }
        }
        Node::Bin(op, a, b) => {
            let l = eval(a, scope)?;
            let r = eval(b, scope)?;
            binary(*op, &l, &r).map_err(|m| (m, e.span))
        }
        Node::Compare(first, rest) => {
            let mut left = eval(first, scope)?;
            for (op, sp, right) in rest {
                let r = eval(right, scope)?;
                if !compare(*op, &left, &r).map_err(|m| (m, *sp))? {
                    return Ok(Value::Bool(false));
                }
                left = r;
            }
            Ok(Value::Bool(true))
        }
    }
}

fn index(base: &Value, key: &Value) -> Result<Value, String> {
    match (base, key) {
        (Value::List(items), Value::Int(i)) => {
            let n = items.len() as i64;
            let j = if *i < 0 { i + n } else { *i };
            if (0..n).contains(&j) {
                Ok(items[j as usize].clone())
            } else {
                Err(format!("list index {i} out of range (length {n})"))
            }
        }
        (Value::Str(s), Value::Int(i)) => {
            let n = s.chars().count() as i64;
            let j = if *i < 0 { i + n } else { *i };
            if (0..n).contains(&j) {
                Ok(Value::Str(
                    s.chars()
                        .nth(j as usize)
                        .map(String::from)
                        .unwrap_or_default(),
                ))
            } else {
                Err(format!("string index {i} out of range (length {n})"))
            }
        }
        (Value::Map(entries), Value::Str(k)) => entries
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
                format!("key '{k}' not found; keys: {}", keys.join(", "))
            }),
        (Value::Map(_), other) => Err(format!(
            "mapping keys are strings, not {}; quote the key",
            other.type_name()
        )),
        (b, k) => Err(format!(
            "{} cannot be indexed by {}",
            b.type_name(),
            k.type_name()
        )),
    }
}

fn py_floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

fn py_fmod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value, String> {
    let unsupported = || {
        format!(
            "unsupported operand types for `{}`: {} and {}",
            op.symbol(),
            l.type_name(),
            r.type_name()
        )
    };
    match (op, l, r) {
        (BinOp::Add, Value::Str(a), Value::Str(b)) => return Ok(Value::Str(format!("{a}{b}"))),
        (BinOp::Add, Value::List(a), Value::List(b)) => {
            return Ok(Value::List(a.iter().chain(b).cloned().collect()));
        }
        _ => {}
    }
    let (Some(a), Some(b)) = (l.as_number(), r.as_number()) else {
        return Err(unsupported());
    };
    let overflow = || "integer overflow (integers are 64-bit)".to_string();
    let zero = || "division by zero".to_string();
    Ok(match (a, b) {
        (Num::I(x), Num::I(y)) => match op {
            BinOp::Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
            BinOp::Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
            BinOp::Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
            BinOp::Div => {
                if y == 0 {
                    return Err(zero());
                }
                Value::Float(x as f64 / y as f64)
            }
            BinOp::FloorDiv => {
                if y == 0 {
                    return Err(zero());
                }
                Value::Int(py_floor_div(x, y).ok_or_else(overflow)?)
            }
            BinOp::Mod => {
                if y == 0 {
                    return Err(zero());
                }
                let m = x.checked_rem(y).ok_or_else(overflow)?;
                Value::Int(if m != 0 && ((m < 0) != (y < 0)) {
                    m + y
                } else {
                    m
                })
            }
            BinOp::Pow => {
                if y >= 0 {
                    let e = u32::try_from(y).map_err(|_| overflow())?;
                    Value::Int(x.checked_pow(e).ok_or_else(overflow)?)
                } else if x == 0 {
                    return Err("0 cannot be raised to a negative power".into());
                } else {
                    Value::Float((x as f64).powf(y as f64))
                }
            }
        },
        (a, b) => {
            let (x, y) = (a.f(), b.f());
            match op {
                BinOp::Add => Value::Float(x + y),
                BinOp::Sub => Value::Float(x - y),
                BinOp::Mul => Value::Float(x * y),
                BinOp::Div | BinOp::FloorDiv | BinOp::Mod if y == 0.0 => return Err(zero()),
                BinOp::Div => Value::Float(x / y),
                BinOp::FloorDiv => Value::Float((x / y).floor()),
                BinOp::Mod => Value::Float(py_fmod(x, y)),
                BinOp::Pow => {
                    if x == 0.0 && y < 0.0 {
                        return Err("0 cannot be raised to a negative power".into());
                    }
                    let p = x.powf(y);
                    if p.is_nan() && !x.is_nan() && !y.is_nan() {
                        return Err("negative number raised to a fractional power".into());
                    }
                    Value::Float(p)
                }
            }
        }
    })
}

fn equal(l: &Value, r: &Value) -> bool {
    match (l.as_number(), r.as_number()) {
        (Some(Num::I(a)), Some(Num::I(b))) => a == b,
        (Some(a), Some(b)) => a.f() == b.f(),
        _ => match (l, r) {
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
            }
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && equal(v, v2)))
            }
            _ => l == r,
        },
    }
}

fn compare(op: CmpOp, l: &Value, r: &Value) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ordering = || -> Result<Ordering, String> {
        let o = match (l.as_number(), r.as_number(), l, r) {
            (Some(Num::I(a)), Some(Num::I(b)), _, _) => Some(a.cmp(&b)),
            (Some(a), Some(b), _, _) => a.f().partial_cmp(&b.f()),
            (_, _, Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            _ => {
                return Err(format!(
                    "cannot order {} and {}",
                    l.type_name(),
                    r.type_name()
                ));
            }
        };
        // NaN compares false with everything, as in Python.
        Ok(o.unwrap_or(Ordering::Equal))
    };
    let nan =
        matches!(l, Value::Float(f) if f.is_nan()) || matches!(r, Value::Float(f) if f.is_nan());
    Ok(match op {
        CmpOp::Eq => equal(l, r),
        CmpOp::Ne => !equal(l, r),
        CmpOp::Lt => !nan && ordering()? == Ordering::Less,
        CmpOp::Le => !nan && ordering()? != Ordering::Greater,
        CmpOp::Gt => !nan && ordering()? == Ordering::Greater,
        CmpOp::Ge => !nan && ordering()? != Ordering::Less,
        CmpOp::In | CmpOp::NotIn => {
            let found = match (l, r) {
                (Value::Str(a), Value::Str(b)) => b.contains(a.as_str()),
                (x, Value::List(items)) => items.iter().any(|i| equal(x, i)),
                (Value::Str(k), Value::Map(m)) => m.iter().any(|(name, _)| name == k),
                _ => {
                    return Err(format!(
                        "`in` needs a str, list or dict on the right, found {}",
                        r.type_name()
                    ));
                }
            };
            found == (op == CmpOp::In)
        }
    })
}

fn builtin(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    let one = || match args {
        [a] => Ok(a),
        _ => Err(format!(
            "{name}() takes exactly one argument ({} given)",
            args.len()
        )),
    };
    Some(match name {
        "len" => one().and_then(|a| match a {
            Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
            Value::List(l) => Ok(Value::Int(l.len() as i64)),
            Value::Map(m) => Ok(Value::Int(m.len() as i64)),
            other => Err(format!("len() of a {} is undefined", other.type_name())),
        }),
        "abs" => one().and_then(|a| match a.as_number() {
            Some(Num::I(i)) => i
                .checked_abs()
                .map(Value::Int)
                .ok_or_else(|| "integer overflow".into()),
            Some(Num::F(f)) => Ok(Value::Float(f.abs())),
            None => Err(format!("abs() of a {} is undefined", a.type_name())),
        }),
        "int" => one().and_then(|a| match a {
            Value::Str(s) => s
                .trim()
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| format!("int() cannot parse {s:?}")),
            Value::Float(f) if f.is_finite() && f.abs() < 9.2e18 => {
                Ok(Value::Int(f.trunc() as i64))
            }
            Value::Float(_) => Err("int() of a non-finite or huge float".into()),
            other => match other.as_number() {
                Some(Num::I(i)) => Ok(Value::Int(i)),
                _ => Err(format!("int() of a {} is undefined", other.type_name())),
            },
        }),
        "float" => one().and_then(|a| match a {
            Value::Str(s) => s
                .trim()
                .parse::<f64>()
                .map(Value::Float)
                .map_err(|_| format!("float() cannot parse {s:?}")),
            other => other
                .as_number()
                .map(|n| Value::Float(n.f()))
                .ok_or_else(|| format!("float() of a {} is undefined", other.type_name())),
        }),
        "min" | "max" => {
            let items: &[Value] = match args {
                [Value::List(l)] => l,
                [] => return Some(Err(format!("{name}() needs at least one argument"))),
                _ => args,
            };
            let mut best: Option<&Value> = None;
            for item in items {
                best = Some(match best {
                    None => item,
                    Some(b) => {
                        let better = if name == "min" {
                            compare(CmpOp::Lt, item, b)
                        } else {
                            compare(CmpOp::Gt, item, b)
                        };
                        match better {
                            Ok(true) => item,
                            Ok(false) => b,
                            Err(e) => return Some(Err(e)),
                        }
                    }
                });
            }
            best.cloned()
                .ok_or_else(|| format!("{name}() of an empty list"))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
