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

mod eval;
mod lexer;
mod parser;
mod value;

use std::fmt;

use eval::eval;
use lexer::{Tok, tokenize};
use parser::Parser;
pub use parser::{Expr, Program};
pub use value::{Value, python_float};

/// Deepest allowed expression tree.
pub const MAX_DEPTH: u32 = 64;

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

#[cfg(test)]
mod tests;
