//! The typed, macro-free spec of one run, checked value by value. A problem here makes one id
//! fail with a one-line reason naming the JSON path; the other ids still run.

use serde_json::{Map, Value};

use super::path::JsonPath;

/// The data generator PARAM ships (the only one this worker has).
pub const DEFAULT_GENERATOR: &str = "PyTorch:DefaultDataGenerator";

/// Element types of generated tensors, with PARAM's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `float`: torch.float32.
    Float,
    /// `double`: torch.float64.
    Double,
    /// `float16`.
    Float16,
    /// `bfloat16`.
    Bfloat16,
    /// `uint8`.
    Uint8,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int`: torch.int32.
    Int,
    /// `long`: torch.int64.
    Long,
    /// `bool`.
    Bool,
}

impl Dtype {
    /// Every dtype with its PARAM name.
    pub const ALL: [(&'static str, Dtype); 10] = [
        ("float", Dtype::Float),
        ("double", Dtype::Double),
        ("float16", Dtype::Float16),
        ("bfloat16", Dtype::Bfloat16),
        ("uint8", Dtype::Uint8),
        ("int8", Dtype::Int8),
        ("int16", Dtype::Int16),
        ("int", Dtype::Int),
        ("long", Dtype::Long),
        ("bool", Dtype::Bool),
    ];

    /// The dtype PARAM calls `name`.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
    }

    /// Whether tensors of this type can require gradients.
    pub fn is_floating(self) -> bool {
        matches!(
            self,
            Dtype::Float | Dtype::Double | Dtype::Float16 | Dtype::Bfloat16
        )
    }
}

/// A generated tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// Element type.
    pub dtype: Dtype,
    /// Sizes (an empty shape is a 0-d tensor).
    pub shape: Vec<u64>,
    /// Whether the tensor requires gradients (PARAM's default: true).
    pub requires_grad: bool,
    /// `"value_range": [low, high]`, an extension of PARAM's schema: the range values are drawn
    /// from (index tensors need it); `None`: PARAM's defaults.
    pub value_range: Option<(f64, f64)>,
}

/// A number given as is, or drawn from an inclusive range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number<T> {
    /// `"value": v`.
    Value(T),
    /// `"value_range": [low, high]`.
    Range {
        /// Lowest value.
        low: T,
        /// Highest value.
        high: T,
    },
}

/// One argument, as the worker will materialise it.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    /// `tensor`.
    Tensor(TensorSpec),
    /// `int` or `long` (a Python int).
    Int(Number<i64>),
    /// `float` or `double` (a Python float).
    Float(Number<f64>),
    /// `bool`.
    Bool(bool),
    /// `str`.
    Str(String),
    /// `device`.
    Device(String),
    /// `none`.
    None,
    /// `genericlist` (a Python list).
    List(Vec<ArgSpec>),
    /// `tuple`.
    Tuple(Vec<ArgSpec>),
}

/// Positional and keyword arguments of one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallSpec {
    /// Positional arguments.
    pub args: Vec<ArgSpec>,
    /// Keyword arguments, in file order.
    pub kwargs: Vec<(String, ArgSpec)>,
}

/// What one run needs: the constructor's arguments (for buildable operators) and the inputs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunSpec {
    /// Arguments of the operator's constructor; `None` for plain functions.
    pub build: Option<CallSpec>,
    /// Arguments of each call.
    pub input: CallSpec,
}

const TYPES: &str = "tensor, int, long, float, double, bool, str, device, none, genericlist, tuple";

impl CallSpec {
    /// Checks an expanded `{"args": [...], "kwargs": {...}}` spec found at `at`.
    pub fn check(value: &Value, at: &JsonPath) -> Result<CallSpec, String> {
        let empty = Map::new();
        let object = value.as_object().unwrap_or(&empty);
        let args = match object.get("args") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, a)| ArgSpec::check_at(a, &Lazy(&|| at.key("args").index(i))))
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        let kwargs = match object.get("kwargs") {
            Some(Value::Object(items)) => items
                .iter()
                .map(|(k, a)| {
                    let spec = ArgSpec::check_at(a, &Lazy(&|| at.key("kwargs").key(k)))?;
                    Ok((k.clone(), spec))
                })
                .collect::<Result<_, String>>()?,
            _ => Vec::new(),
        };
        Ok(CallSpec { args, kwargs })
    }
}

impl ArgSpec {
    /// Checks one expanded argument spec found at `at`.
    pub fn check(value: &Value, at: &JsonPath) -> Result<ArgSpec, String> {
        Self::check_at(value, &Lazy(&|| at.clone()))
    }

    fn check_at(value: &Value, at: &Lazy<'_>) -> Result<ArgSpec, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("{at}: an argument spec is an object, found {value}"))?;
        let kind = object
            .get("type")
            .ok_or_else(|| format!("{at}: the argument has no \"type\"; use one of {TYPES}"))?;
        let field = |name: &str| object.get(name);
        match kind.as_str().unwrap_or_default() {
            "tensor" => check_tensor(object, at).map(ArgSpec::Tensor),
            // PARAM passes an `int` value as it is written: a fractional one (`2.5` in its own
            // tests' config) reaches the operator as a Python float.
            "int" | "long" => match field("value") {
                Some(v)
                    if v.as_i64().is_none()
                        && v.is_f64()
                        && object.get("value_range").is_none() =>
                {
                    Ok(ArgSpec::Float(Number::Value(
                        v.as_f64().unwrap_or(f64::NAN),
                    )))
                }
                _ => check_number(object, at, Value::as_i64, "integer").map(ArgSpec::Int),
            },
            "float" | "double" => {
                check_number(object, at, Value::as_f64, "number").map(ArgSpec::Float)
            }
            "bool" => match field("value") {
                Some(Value::Bool(b)) => Ok(ArgSpec::Bool(*b)),
                other => Err(format!(
                    "{at}.value: a bool argument needs \"value\": true or false, found {}",
                    shown(other)
                )),
            },
            "str" => match field("value") {
                None | Some(Value::Null) => Ok(ArgSpec::Str(String::new())),
                Some(Value::String(s)) => Ok(ArgSpec::Str(s.clone())),
                Some(other) => Err(format!(
                    "{at}.value: a str argument's value is a string, found {other}"
                )),
            },
            "device" => match field("value") {
                Some(Value::String(s)) => Ok(ArgSpec::Device(s.clone())),
                other => Err(format!(
                    "{at}.value: a device argument needs a \"value\" such as \"cpu\", found {}",
                    shown(other)
                )),
            },
            "none" => Ok(ArgSpec::None),
            kind @ ("genericlist" | "tuple") => {
                let items = match field("value") {
                    Some(Value::Array(items)) => items,
                    other => {
                        return Err(format!(
                            "{at}.value: a {kind} argument's value is a list of argument specs, found {}",
                            shown(other)
                        ));
                    }
                };
                let elements = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        ArgSpec::check_at(item, &Lazy(&|| at.path().key("value").index(i)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(if kind == "tuple" {
                    ArgSpec::Tuple(elements)
                } else {
                    ArgSpec::List(elements)
                })
            }
            _ => Err(format!(
                "{at}.type: unknown argument type {kind}; use one of {TYPES}"
            )),
        }
    }
}

/// A path computed only when displayed: checking the runs of a large sweep builds no path
/// string unless a value is wrong.
struct Lazy<'a>(&'a dyn Fn() -> JsonPath);

impl Lazy<'_> {
    fn path(&self) -> JsonPath {
        (self.0)()
    }
}

impl std::fmt::Display for Lazy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.path().fmt(f)
    }
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_string(), Value::to_string)
}

fn check_tensor(object: &Map<String, Value>, at: &Lazy<'_>) -> Result<TensorSpec, String> {
    let dtype_value = object.get("dtype");
    let dtype = dtype_value
        .and_then(Value::as_str)
        .and_then(Dtype::from_name)
        .ok_or_else(|| {
            let names: Vec<&str> = Dtype::ALL.iter().map(|(n, _)| *n).collect();
            format!(
                "{at}.dtype: unknown dtype {}; use one of {}",
                shown(dtype_value),
                names.join(", ")
            )
        })?;
    let shape_value = object.get("shape");
    let sizes = shape_value
        .and_then(Value::as_array)
        .and_then(|items| {
            items
                .iter()
                .map(Value::as_i64)
                .collect::<Option<Vec<i64>>>()
        })
        .ok_or_else(|| {
            format!(
                "{at}.shape: a shape is a list of integer sizes, found {}",
                shown(shape_value)
            )
        })?;
    if let Some(bad) = sizes.iter().find(|s| **s < 0) {
        let hint = if *bad == -1 {
            " (a -1 placeholder needs a __copy__ rule)"
        } else {
            ""
        };
        return Err(format!(
            "{at}.shape: negative size {bad} in {}{hint}",
            shape_value.map_or_else(String::new, Value::to_string)
        ));
    }
    let requires_grad = match object.get("requires_grad") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "{at}.requires_grad: expected true or false, found {other}"
            ));
        }
    };
    if requires_grad && !dtype.is_floating() {
        let name = dtype_value.map_or_else(String::new, Value::to_string);
        return Err(format!(
            "{at}: a {name} tensor cannot require gradients (PARAM's default); add \"requires_grad\": false"
        ));
    }
    let value_range = match object.get("value_range") {
        None => None,
        Some(_) => match check_number(object, at, Value::as_f64, "number")? {
            Number::Range { low, high } => Some((low, high)),
            Number::Value(_) => None,
        },
    };
    Ok(TensorSpec {
        dtype,
        shape: sizes.into_iter().map(|s| s.unsigned_abs()).collect(),
        requires_grad,
        value_range,
    })
}

fn check_number<T: PartialOrd + Copy>(
    object: &Map<String, Value>,
    at: &Lazy<'_>,
    read: fn(&Value) -> Option<T>,
    what: &str,
) -> Result<Number<T>, String> {
    if let Some(range) = object.get("value_range") {
        let pair = range
            .as_array()
            .and_then(|items| items.iter().map(read).collect::<Option<Vec<T>>>())
            .filter(|items| items.len() == 2)
            .ok_or_else(|| {
                format!("{at}.value_range: expected [low, high] ({what}s), found {range}")
            })?;
        let (low, high) = (pair[0], pair[1]);
        if low > high {
            return Err(format!(
                "{at}.value_range: {range} is reversed; write [low, high] with low <= high"
            ));
        }
        return Ok(Number::Range { low, high });
    }
    match object.get("value") {
        Some(value) => read(value)
            .map(Number::Value)
            .ok_or_else(|| format!("{at}.value: expected an {what}, found {value}")),
        None => Err(format!("{at}: needs \"value\" or \"value_range\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: Value) -> Result<ArgSpec, String> {
        ArgSpec::check(&value, &JsonPath::root().key("op").key("args").index(0))
    }

    #[test]
    fn arguments_of_every_type_are_read() {
        assert_eq!(
            check(json!({"type": "tensor", "dtype": "float", "shape": [2, 3]})),
            Ok(ArgSpec::Tensor(TensorSpec {
                dtype: Dtype::Float,
                shape: vec![2, 3],
                requires_grad: true,
                value_range: None,
            }))
        );
        assert_eq!(
            check(json!({"type": "long", "value_range": [1, 5]})),
            Ok(ArgSpec::Int(Number::Range { low: 1, high: 5 }))
        );
        assert_eq!(
            check(json!({"type": "int", "value": 2.5})),
            Ok(ArgSpec::Float(Number::Value(2.5))),
            "passed as written, as PARAM does"
        );
        assert_eq!(
            check(json!({"type": "double", "value": 0.5})),
            Ok(ArgSpec::Float(Number::Value(0.5)))
        );
        assert_eq!(
            check(json!({"type": "str"})),
            Ok(ArgSpec::Str(String::new()))
        );
        assert_eq!(check(json!({"type": "none"})), Ok(ArgSpec::None));
        assert_eq!(
            check(
                json!({"type": "tuple", "value": [{"type": "int", "value": 1}, {"type": "bool", "value": false}]})
            ),
            Ok(ArgSpec::Tuple(vec![
                ArgSpec::Int(Number::Value(1)),
                ArgSpec::Bool(false)
            ]))
        );
    }

    #[test]
    fn bad_values_name_their_path_and_the_fix() {
        let cases = [
            (
                json!({"type": "tensor", "dtype": "flaot", "shape": [2]}),
                ".op.args[0].dtype: unknown dtype \"flaot\"; use one of float, double, float16, bfloat16, uint8, int8, int16, int, long, bool",
            ),
            (
                json!({"type": "tensor", "dtype": "float", "shape": [4, -3]}),
                ".op.args[0].shape: negative size -3 in [4,-3]",
            ),
            (
                json!({"type": "tensor", "dtype": "float", "shape": [-1, 3]}),
                ".op.args[0].shape: negative size -1 in [-1,3] (a -1 placeholder needs a __copy__ rule)",
            ),
            (
                json!({"type": "tensor", "dtype": "long", "shape": [3], "requires_grad": false, "value_range": [5, 0]}),
                ".op.args[0].value_range: [5,0] is reversed; write [low, high] with low <= high",
            ),
            (
                json!({"type": "int", "value_range": [9, 1]}),
                ".op.args[0].value_range: [9,1] is reversed; write [low, high] with low <= high",
            ),
            (
                json!({"type": "tensor", "dtype": "long", "shape": [3]}),
                ".op.args[0]: a \"long\" tensor cannot require gradients (PARAM's default); add \"requires_grad\": false",
            ),
            (
                json!({"type": "matrix"}),
                ".op.args[0].type: unknown argument type \"matrix\"; use one of tensor, int, long, float, double, bool, str, device, none, genericlist, tuple",
            ),
            (
                json!({"type": "genericlist", "value": [{"type": "int"}]}),
                ".op.args[0].value[0]: needs \"value\" or \"value_range\"",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(check(value).unwrap_err(), expected);
        }
    }
}
