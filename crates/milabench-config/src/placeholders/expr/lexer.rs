//! Tokens of the expression language.

use std::fmt;

use super::python_float;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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
pub(super) type Span = (usize, usize);

pub(super) const OPS: &[&str] = &[
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", ",",
];

pub(super) fn tokenize(src: &str) -> Result<Vec<(Tok, Span)>, (String, usize)> {
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
