//! The recursive-descent parser: tokens to an expression tree.

use super::lexer::{Span, Tok};
use super::{MAX_DEPTH, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

impl BinOp {
    pub(super) fn symbol(self) -> &'static str {
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
pub(super) enum CmpOp {
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
pub(super) enum Node {
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
    pub(super) node: Node,
    pub(super) span: Span,
    pub(super) depth: u32,
}

/// A parsed expression together with its source text (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub(super) source: String,
    pub(super) root: Expr,
}

pub(super) struct Parser {
    pub(super) toks: Vec<(Tok, Span)>,
    pub(super) pos: usize,
    pub(super) level: u32,
}

pub(super) type PResult<T> = Result<T, (String, usize)>;

impl Parser {
    pub(super) fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    pub(super) fn span(&self) -> Span {
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

    pub(super) fn or(&mut self) -> PResult<Expr> {
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
