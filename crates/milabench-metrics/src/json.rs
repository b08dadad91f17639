//! JSON details shared by the reader and the writer: Python's bare `NaN`/`Infinity` tokens, and
//! lenient number access.

use std::borrow::Cow;

use serde_json::Value;

use crate::format::{NON_FINITE, non_finite, non_finite_spelling};

/// Marks a non-finite float while a record is serialised; replaced by a bare token afterwards.
const SENTINEL: char = '\u{0}';

/// Upper-case letters rare in these lines, one of which every non-finite spelling holds (a test
/// checks it): a vectorised search for them rules most lines out before the exact search.
const NON_FINITE_LETTERS: [u8; 2] = [b'N', b'I'];

/// Rewrites the bare non-finite tokens that Python's `json.dumps` writes (outside strings, see
/// [`NON_FINITE`]) as strings, so that a strict JSON parser accepts the line. Lines without such
/// tokens are returned unchanged, without copying.
pub(crate) fn quote_non_finite(line: &str) -> Cow<'_, str> {
    let bytes = line.as_bytes();
    let [first, second] = NON_FINITE_LETTERS;
    if memchr::memchr2(first, second, bytes).is_none() {
        return Cow::Borrowed(line);
    }
    if !NON_FINITE.iter().any(|(token, _)| line.contains(token)) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let rest = &line[i..];
        let token = NON_FINITE
            .iter()
            .map(|&(token, _)| token)
            .find(|t| rest.starts_with(t));
        if let Some(token) = token {
            out.push_str(&line[copied..i]);
            out.push('"');
            out.push_str(token);
            out.push('"');
            i += token.len();
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&line[copied..]);
    Cow::Owned(out)
}

/// A number of a JSON value, accepting the quoted non-finite tokens produced by
/// [`quote_non_finite`]. Anything else is `None`.
pub(crate) fn as_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => non_finite(s),
        _ => None,
    }
}

/// A float as a JSON value for writing; non-finite values carry a sentinel that
/// [`restore_non_finite`] turns into Python's bare tokens.
pub(crate) fn float_value(x: f64) -> Value {
    match non_finite_spelling(x) {
        None => serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
        Some(token) => Value::String(format!("{SENTINEL}{token}")),
    }
}

/// Replaces the sentinel strings of [`float_value`] by Python's bare non-finite tokens.
pub(crate) fn restore_non_finite(mut line: String) -> String {
    if !line.contains("\\u0000") {
        return line;
    }
    for (token, _) in NON_FINITE {
        line = line.replace(&format!("\"\\u0000{token}\""), token);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_tokens_are_quoted_outside_strings_only() {
        let line = r#"{"loss": NaN, "x": -Infinity, "s": "NaN is \"Infinity\"", "y": Infinity}"#;
        let fixed = quote_non_finite(line);
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert!(as_f64(&v["loss"]).unwrap().is_nan());
        assert_eq!(as_f64(&v["x"]), Some(f64::NEG_INFINITY));
        assert_eq!(as_f64(&v["y"]), Some(f64::INFINITY));
        assert_eq!(v["s"], "NaN is \"Infinity\"");
    }

    #[test]
    fn every_non_finite_token_holds_a_letter_of_the_prefilter() {
        for (token, _) in NON_FINITE {
            assert!(
                token.bytes().any(|b| NON_FINITE_LETTERS.contains(&b)),
                "{token}: add one of its letters to NON_FINITE_LETTERS"
            );
        }
    }

    #[test]
    fn lines_without_tokens_are_borrowed() {
        assert!(matches!(quote_non_finite(r#"{"a": 1}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn sentinels_become_bare_tokens() {
        let v = serde_json::json!({"a": float_value(f64::NAN), "b": float_value(1.5), "c": float_value(f64::NEG_INFINITY)});
        let line = restore_non_finite(serde_json::to_string(&v).unwrap());
        assert_eq!(line, r#"{"a":NaN,"b":1.5,"c":-Infinity}"#);
    }
}
