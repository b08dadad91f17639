//! Evaluation of a parsed expression against a scope, with Python's semantics.

use super::lexer::Span;
use super::parser::{BinOp, CmpOp, Expr, Node};
use super::value::Num;
use super::{Scope, Value};

pub(super) type EResult = Result<Value, (String, Span)>;

pub(super) fn eval(e: &Expr, scope: &dyn Scope) -> EResult {
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

pub(super) fn index(base: &Value, key: &Value) -> Result<Value, String> {
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

pub(super) fn py_floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

pub(super) fn py_fmod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

pub(super) fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value, String> {
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

pub(super) fn equal(l: &Value, r: &Value) -> bool {
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

pub(super) fn compare(op: CmpOp, l: &Value, r: &Value) -> Result<bool, String> {
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

/// The names of the built-in functions ([`builtin`]), for the message of an unknown one.
const BUILTINS: &[&str] = &["abs", "float", "int", "len", "max", "min"];

pub(super) fn builtin(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
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
