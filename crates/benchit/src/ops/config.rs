//! PARAM's config schema, read from JSON with every structural problem reported at its JSON path.
//!
//! A config maps operator names to their iterators, data generators and a `config` list of
//! `{"build": [...], "input": [...]}` entries, each spec holding `args` and `kwargs` argument
//! specs. Reading a file checks the structure (what must be there to compute the ids) and turns
//! each argument spec into an [`ArgTemplate`]: the list of its alternatives with `__range__`
//! already expanded. What only makes one id unusable (an unknown dtype, a negative size, a reversed
//! `value_range`) is left for [`crate::ops::spec`], so it fails that id alone.

use camino::{Utf8Path, Utf8PathBuf};
use serde_json::{Map, Value};

use super::path::JsonPath;

/// The most runs one config may expand to (a guard against a typo such as a step of 1 over
/// a billion values). Listing streams the ids, so this many fit whatever the memory.
pub const MAX_RUNS: u64 = 50_000_000;

/// The most alternatives one argument spec may expand to: each is held in memory as JSON (a
/// few hundred bytes with its fields) while the config is read, before any id is listed.
pub const MAX_ALTERNATIVES: u64 = 1_000_000;

/// The most runs one `benchit ops` run takes at once: each is held in memory with its spec and
/// then its record (a few kilobytes), so a larger selection is run in parts with
/// `--resume-id`/`--stop-id`.
pub const MAX_RUNS_AT_ONCE: usize = 100_000;

/// Why a config cannot be read or expanded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the ops config {file}; check the -c/--config path")]
    Read {
        /// The config file.
        file: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{file}:{line}:{column}: not valid JSON: {message}")]
    Json {
        /// The config file (or `<text>`).
        file: String,
        /// Line of the problem, from 1.
        line: usize,
        /// Column of the problem, from 1.
        column: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// The JSON does not follow the schema.
    #[error("{file}: at {at}: {problem}")]
    Schema {
        /// The config file (or `<text>`).
        file: String,
        /// Where in the document.
        at: JsonPath,
        /// What is wrong, and how to fix it.
        problem: String,
    },
}

/// A problem found at a path, before the file name is known.
#[derive(Debug)]
pub(crate) struct SchemaProblem {
    pub(crate) at: JsonPath,
    pub(crate) problem: String,
}

fn problem(at: &JsonPath, text: impl Into<String>) -> SchemaProblem {
    SchemaProblem {
        at: at.clone(),
        problem: text.into(),
    }
}

type Checked<T> = Result<T, SchemaProblem>;

/// How a `build` or `input` list is turned into ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IteratorKind {
    /// `DefaultConfigIterator`: one id per spec (`0`, `1`, ...), no macros.
    Default,
    /// `RangeConfigIterator`: `__range__`/`__copy__` expanded; ids `<variant>_<combination>`.
    Range,
}

impl IteratorKind {
    /// PARAM's names, in the order they are listed in messages.
    pub const NAMES: [&'static str; 2] = ["DefaultConfigIterator", "RangeConfigIterator"];

    fn parse(value: &Value, at: &JsonPath) -> Checked<IteratorKind> {
        match value.as_str() {
            Some("DefaultConfigIterator") => Ok(IteratorKind::Default),
            Some("RangeConfigIterator") => Ok(IteratorKind::Range),
            _ => Err(problem(
                at,
                format!(
                    "unknown iterator {value}; use one of {}",
                    Self::NAMES.join(", ")
                ),
            )),
        }
    }
}

/// A whole config: the operators in file order.
#[derive(Debug, Clone)]
pub struct OpsConfig {
    /// One entry per operator name, in the order of the file.
    pub ops: Vec<OpEntry>,
}

/// One operator's entry.
#[derive(Debug, Clone)]
pub struct OpEntry {
    /// The operator name (`torch.add`, `torch.nn.Linear`, `aten::mm`, ...).
    pub name: String,
    /// How build specs become ids.
    pub build_iterator: IteratorKind,
    /// How input specs become ids.
    pub input_iterator: IteratorKind,
    /// The data generator of build arguments, as written.
    pub build_data_generator: Option<String>,
    /// The data generator of inputs, as written (PARAM needs one).
    pub input_data_generator: Option<String>,
    /// The `config` list.
    pub configs: Vec<ConfigEntry>,
    /// Where the operator sits in the file.
    pub path: JsonPath,
}

/// One element of an operator's `config` list.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    /// Build specs (empty: the operator is a plain function).
    pub build: Vec<CallTemplate>,
    /// Input specs.
    pub input: Vec<CallTemplate>,
}

/// One `{"args": [...], "kwargs": {...}}` spec with its macros expanded per argument.
#[derive(Debug, Clone)]
pub struct CallTemplate {
    /// Positional argument templates.
    pub args: Vec<ArgTemplate>,
    /// Keyword argument templates, in file order.
    pub kwargs: Vec<(String, ArgTemplate)>,
    /// Where the spec sits in the file.
    pub path: JsonPath,
}

/// One argument spec: every value it takes, macros removed.
#[derive(Debug, Clone)]
pub struct ArgTemplate {
    /// The alternatives, in PARAM's order (attributes in `__range__` order, the last varying
    /// fastest). One when nothing is ranged.
    pub alternatives: Vec<Value>,
    /// `__copy__` rules, applied once the combination is chosen.
    pub copies: Vec<CopyRule>,
    /// Where the spec sits in the file.
    pub path: JsonPath,
}

/// `"__copy__": [{"shape": [dim, [arg, arg_dim]]}]`: this tensor's `shape[dim]` is set to
/// positional argument `arg`'s `shape[arg_dim]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRule {
    /// The dimension of this tensor that is set.
    pub dim: usize,
    /// The positional argument copied from.
    pub from_arg: usize,
    /// Its dimension.
    pub from_dim: usize,
}

impl OpsConfig {
    /// Reads and checks a config file.
    pub fn load(file: &Utf8Path) -> Result<OpsConfig, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        Self::parse(&text, file.as_str())
    }

    /// Checks a config given as JSON text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<OpsConfig, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|err| ConfigError::Json {
            file: file.to_string(),
            line: err.line(),
            column: err.column(),
            message: err.to_string(),
        })?;
        Self::from_value(&value).map_err(|p| ConfigError::Schema {
            file: file.to_string(),
            at: p.at,
            problem: p.problem,
        })
    }

    fn from_value(value: &Value) -> Checked<OpsConfig> {
        let root = JsonPath::root();
        let object = value.as_object().ok_or_else(|| {
            problem(
                &root,
                "a config is an object mapping operator names to their specs, such as {\"torch.add\": {\"input_data_generator\": ..., \"config\": [...]}}",
            )
        })?;
        if object.is_empty() {
            return Err(problem(&root, "the config names no operator"));
        }
        if let (Some(op), true) = (
            object.get("op_name").and_then(Value::as_str),
            object.contains_key("op_info"),
        ) {
            return Err(problem(
                &root,
                format!(
                    "this is a PARAM run_batch file (one operator's queued inputs, written for a profiler), not a benchmark config; to run its operator, write its \"op_info\" as the spec of \"{op}\": {{\"{op}\": {{\"input_data_generator\": ..., \"config\": [...]}}}}"
                ),
            ));
        }
        let ops = object
            .iter()
            .map(|(name, spec)| OpEntry::parse(name, spec, &root.key(name)))
            .collect::<Checked<Vec<_>>>()?;
        let config = OpsConfig { ops };
        let total = config.run_count();
        if total > MAX_RUNS {
            return Err(problem(
                &root,
                format!(
                    "the config expands to {total} runs, more than {MAX_RUNS}; use larger range steps or split the file"
                ),
            ));
        }
        Ok(config)
    }

    /// How many runs the config expands to.
    pub fn run_count(&self) -> u64 {
        self.ops
            .iter()
            .flat_map(|op| &op.configs)
            .map(|config| {
                let builds = if config.build.is_empty() {
                    1
                } else {
                    config.build.iter().map(CallTemplate::combinations).sum()
                };
                let inputs: u64 = config.input.iter().map(CallTemplate::combinations).sum();
                builds.saturating_mul(inputs)
            })
            .fold(0u64, u64::saturating_add)
    }
}

const OP_KEYS: [&str; 5] = [
    "build_iterator",
    "input_iterator",
    "build_data_generator",
    "input_data_generator",
    "config",
];

fn check_keys(object: &Map<String, Value>, known: &[&str], at: &JsonPath) -> Checked<()> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(problem(
            &at.key(key),
            format!(
                "unknown key \"{key}\"; the keys here are {}",
                known.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

fn optional_string(
    object: &Map<String, Value>,
    key: &str,
    at: &JsonPath,
) -> Checked<Option<String>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(problem(
            &at.key(key),
            format!("expected a name (a string), found {other}"),
        )),
    }
}

impl OpEntry {
    fn parse(name: &str, value: &Value, at: &JsonPath) -> Checked<OpEntry> {
        let object = value.as_object().ok_or_else(|| {
            problem(
                at,
                "an operator's spec is an object with \"input_data_generator\" and a \"config\" list",
            )
        })?;
        check_keys(object, &OP_KEYS, at)?;
        let iterator = |key: &str| {
            object.get(key).map_or(Ok(IteratorKind::Default), |v| {
                IteratorKind::parse(v, &at.key(key))
            })
        };
        let build_iterator = iterator("build_iterator")?;
        let input_iterator = iterator("input_iterator")?;
        let config_at = at.key("config");
        let list = object
            .get("config")
            .ok_or_else(|| {
                problem(
                    at,
                    "missing \"config\": a list of {\"build\": [...], \"input\": [...]} entries",
                )
            })?
            .as_array()
            .ok_or_else(|| {
                problem(
                    &config_at,
                    "\"config\" is a list of {\"build\": [...], \"input\": [...]} entries",
                )
            })?;
        let configs = list
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                ConfigEntry::parse(entry, &config_at.index(i), build_iterator, input_iterator)
            })
            .collect::<Checked<Vec<_>>>()?;
        Ok(OpEntry {
            name: name.to_string(),
            build_iterator,
            input_iterator,
            build_data_generator: optional_string(object, "build_data_generator", at)?,
            input_data_generator: optional_string(object, "input_data_generator", at)?,
            configs,
            path: at.clone(),
        })
    }
}

impl ConfigEntry {
    fn parse(
        value: &Value,
        at: &JsonPath,
        build_iterator: IteratorKind,
        input_iterator: IteratorKind,
    ) -> Checked<ConfigEntry> {
        let object = value.as_object().ok_or_else(|| {
            problem(
                at,
                "a config entry is an object {\"build\": [...], \"input\": [...]}",
            )
        })?;
        check_keys(object, &["build", "input"], at)?;
        let specs = |key: &str, iterator: IteratorKind| -> Checked<Vec<CallTemplate>> {
            let key_at = at.key(key);
            match object.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| CallTemplate::parse(item, &key_at.index(i), iterator))
                    .collect(),
                Some(other) => Err(problem(
                    &key_at,
                    format!(
                        "\"{key}\" is a list of {{\"args\": [...], \"kwargs\": {{...}}}} specs, found {other}"
                    ),
                )),
            }
        };
        let input = specs("input", input_iterator)?;
        if input.is_empty() {
            return Err(problem(
                at,
                "missing \"input\": a list of {\"args\": [...], \"kwargs\": {...}} specs (one at least)",
            ));
        }
        Ok(ConfigEntry {
            build: specs("build", build_iterator)?,
            input,
        })
    }
}

impl CallTemplate {
    fn parse(value: &Value, at: &JsonPath, iterator: IteratorKind) -> Checked<CallTemplate> {
        let object = value.as_object().ok_or_else(|| {
            problem(
                at,
                "a spec is an object {\"args\": [...], \"kwargs\": {...}}",
            )
        })?;
        check_keys(object, &["args", "kwargs"], at)?;
        // The arguments multiply: each is refused as soon as those up to it pass the budget.
        let mut budget = Budget::WHOLE;
        let mut parse_arg = |arg: &Value, arg_at: &JsonPath| {
            let template = ArgTemplate::parse(arg, arg_at, iterator, true, budget)?;
            budget = budget.after(template.alternatives.len() as u64);
            Ok(template)
        };
        let args = match object.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, arg)| parse_arg(arg, &at.key("args").index(i)))
                .collect::<Checked<Vec<_>>>()?,
            Some(other) => {
                return Err(problem(
                    &at.key("args"),
                    format!("\"args\" is a list of argument specs, found {other}"),
                ));
            }
        };
        let kwargs = match object.get("kwargs") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(items)) => items
                .iter()
                .map(|(name, arg)| {
                    parse_arg(arg, &at.key("kwargs").key(name)).map(|t| (name.clone(), t))
                })
                .collect::<Checked<Vec<_>>>()?,
            Some(other) => {
                return Err(problem(
                    &at.key("kwargs"),
                    format!("\"kwargs\" is an object of argument specs, found {other}"),
                ));
            }
        };
        let template = CallTemplate {
            args,
            kwargs,
            path: at.clone(),
        };
        template.check_copies()?;
        Ok(template)
    }

    /// The number of argument combinations (1 for a spec without ranges).
    pub fn combinations(&self) -> u64 {
        self.args
            .iter()
            .chain(self.kwargs.iter().map(|(_, t)| t))
            .map(|t| t.alternatives.len() as u64)
            .fold(1u64, u64::saturating_mul)
    }

    fn check_copies(&self) -> Checked<()> {
        let all = self.args.iter().chain(self.kwargs.iter().map(|(_, t)| t));
        for template in all {
            for rule in &template.copies {
                if rule.from_arg >= self.args.len() {
                    return Err(problem(
                        &template.path.key("__copy__"),
                        format!(
                            "copies from positional argument {} but the spec has {} positional argument(s)",
                            rule.from_arg,
                            self.args.len()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

const MACROS: [&str; 2] = ["__range__", "__copy__"];

/// How many alternatives an argument may still expand to: the arguments of one spec multiply,
/// so those before it leave [`MAX_RUNS`] divided by their combinations; and one argument holds
/// at most [`MAX_ALTERNATIVES`]. Checked before each expansion is made, so a config of 10^11
/// combinations is refused at once rather than after gigabytes of alternatives.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// The combinations of the arguments (or list elements) before this one.
    before: u64,
}

impl Budget {
    /// The budget of a spec's first argument.
    const WHOLE: Budget = Budget { before: 1 };

    /// The budget left once `count` more alternatives multiply those before.
    fn after(self, count: u64) -> Budget {
        Budget {
            before: self.before.saturating_mul(count),
        }
    }

    /// Refuses `count` alternatives of `what` (at `at`) when they pass the budget.
    fn check(self, count: u64, what: &str, at: &JsonPath) -> Checked<()> {
        let runs = self.before.saturating_mul(count);
        if runs > MAX_RUNS {
            let with_before = if self.before > 1 {
                format!(", and with the {} combinations before it,", self.before)
            } else {
                ";".to_string()
            };
            return Err(problem(
                at,
                format!(
                    "{what} has {count} values{with_before} the spec expands to at least {runs} runs, more than {MAX_RUNS}; use larger range steps or split the spec"
                ),
            ));
        }
        if count > MAX_ALTERNATIVES {
            return Err(problem(
                at,
                format!(
                    "{what} has {count} values, more than the {MAX_ALTERNATIVES} one argument may hold; use larger range steps or split the spec"
                ),
            ));
        }
        Ok(())
    }
}

impl ArgTemplate {
    fn parse(
        value: &Value,
        at: &JsonPath,
        iterator: IteratorKind,
        top: bool,
        budget: Budget,
    ) -> Checked<ArgTemplate> {
        let object = value.as_object().ok_or_else(|| {
            problem(
                at,
                format!("an argument spec is an object such as {{\"type\": \"tensor\", \"dtype\": \"float\", \"shape\": [8, 8]}}, found {value}"),
            )
        })?;
        let macros: Vec<&str> = MACROS
            .iter()
            .copied()
            .filter(|m| object.contains_key(*m))
            .collect();
        if iterator == IteratorKind::Default
            && let Some(name) = macros.first()
        {
            return Err(problem(
                &at.key(name),
                format!(
                    "{name} is expanded only by \"RangeConfigIterator\"; set the operator's \"input_iterator\" (or \"build_iterator\") to it"
                ),
            ));
        }
        let fields: Map<String, Value> = object
            .iter()
            .filter(|(k, _)| !MACROS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let kind = fields.get("type").and_then(Value::as_str).unwrap_or("");
        let mut slots: Vec<(String, Vec<Value>)> = Vec::new();
        let is_list = matches!(kind, "genericlist" | "tuple");
        // The slots multiply too: each is checked against what those before it left.
        let mut slot_budget = budget;
        if is_list && let Some(Value::Array(items)) = fields.get("value") {
            let mut element_budget = budget;
            let elements = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let element = ArgTemplate::parse(
                        item,
                        &at.key("value").index(i),
                        iterator,
                        false,
                        element_budget,
                    )?;
                    element_budget = element_budget.after(element.alternatives.len() as u64);
                    Ok(element)
                })
                .collect::<Checked<Vec<_>>>()?;
            let alternatives = list_alternatives(&elements, at, budget)?;
            slot_budget = slot_budget.after(alternatives.len() as u64);
            slots.push(("value".into(), alternatives));
        }
        for attr in range_attributes(object, at)? {
            if is_list && attr == "value" {
                continue;
            }
            let attr_at = at.key(&attr);
            let current = fields.get(&attr).ok_or_else(|| {
                problem(
                    &at.key("__range__"),
                    format!("names \"{attr}\" but the argument has no such attribute"),
                )
            })?;
            let alternatives = match (attr.as_str(), kind) {
                ("shape", _) => shape_alternatives(current, &attr_at, slot_budget)?,
                ("value", "int" | "long") => int_range(current, &attr_at, slot_budget)?
                    .into_iter()
                    .map(Value::from)
                    .collect(),
                ("value", "float" | "double") => {
                    return Err(problem(
                        &attr_at,
                        "float and double values cannot be ranged; use \"value_range\" for a random value, or one input spec per value",
                    ));
                }
                _ => match current {
                    Value::Array(items) if !items.is_empty() => items.clone(),
                    _ => {
                        return Err(problem(
                            &attr_at,
                            format!(
                                "\"{attr}\" is in __range__, so it must be a non-empty list of alternatives, found {current}"
                            ),
                        ));
                    }
                },
            };
            slot_budget = slot_budget.after(alternatives.len() as u64);
            slots.push((attr, alternatives));
        }
        let copies = match object.get("__copy__") {
            None => Vec::new(),
            Some(_) if !top => {
                return Err(problem(
                    &at.key("__copy__"),
                    "__copy__ applies to top-level tensor arguments only",
                ));
            }
            Some(value) => parse_copies(value, &at.key("__copy__"))?,
        };
        Ok(ArgTemplate {
            alternatives: product_of_slots(&fields, &slots, at, budget)?,
            copies,
            path: at.clone(),
        })
    }
}

fn range_attributes(object: &Map<String, Value>, at: &JsonPath) -> Checked<Vec<String>> {
    let Some(value) = object.get("__range__") else {
        return Ok(Vec::new());
    };
    let range_at = at.key("__range__");
    let items = value.as_array().ok_or_else(|| {
        problem(
            &range_at,
            "__range__ is a list of attribute names such as [\"shape\"]",
        )
    })?;
    items
        .iter()
        .map(|item| {
            item.as_str().map(str::to_string).ok_or_else(|| {
                problem(
                    &range_at,
                    format!("__range__ lists attribute names (strings), found {item}"),
                )
            })
        })
        .collect()
}

/// Every combination of the element alternatives of a list argument, as JSON arrays.
fn list_alternatives(
    elements: &[ArgTemplate],
    at: &JsonPath,
    budget: Budget,
) -> Checked<Vec<Value>> {
    let lists: Vec<&[Value]> = elements.iter().map(|e| e.alternatives.as_slice()).collect();
    Ok(product(&lists, at, budget)?
        .into_iter()
        .map(Value::Array)
        .collect())
}

/// The Cartesian product of `lists`, the last list varying fastest, within `budget`.
fn product(lists: &[&[Value]], at: &JsonPath, budget: Budget) -> Checked<Vec<Vec<Value>>> {
    let total = lists
        .iter()
        .map(|l| l.len() as u64)
        .fold(1u64, u64::saturating_mul);
    budget.check(total, "the argument", at)?;
    let mut out = Vec::with_capacity(total as usize);
    for mut index in 0..total {
        let mut combination = vec![Value::Null; lists.len()];
        for (slot, list) in lists.iter().enumerate().rev() {
            let n = list.len() as u64;
            combination[slot] = list[(index % n) as usize].clone();
            index /= n;
        }
        out.push(combination);
    }
    Ok(out)
}

fn product_of_slots(
    fields: &Map<String, Value>,
    slots: &[(String, Vec<Value>)],
    at: &JsonPath,
    budget: Budget,
) -> Checked<Vec<Value>> {
    let lists: Vec<&[Value]> = slots.iter().map(|(_, v)| v.as_slice()).collect();
    Ok(product(&lists, at, budget)?
        .into_iter()
        .map(|combination| {
            let mut object = fields.clone();
            for ((attr, _), value) in slots.iter().zip(combination) {
                object.insert(attr.clone(), value);
            }
            Value::Object(object)
        })
        .collect())
}

/// `[min, max]` or `[min, max, step]`, inclusive, within `budget`.
fn int_range(value: &Value, at: &JsonPath, budget: Budget) -> Checked<Vec<i64>> {
    let bad = || {
        problem(
            at,
            format!(
                "a ranged integer is [min, max] or [min, max, step] (inclusive), found {value}"
            ),
        )
    };
    let items = value.as_array().ok_or_else(bad)?;
    let numbers: Vec<i64> = items
        .iter()
        .map(Value::as_i64)
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let (low, high, step) = match numbers.as_slice() {
        [low, high] => (*low, *high, 1),
        [low, high, step] => (*low, *high, *step),
        _ => return Err(bad()),
    };
    if step <= 0 {
        return Err(problem(at, format!("the step of {value} must be positive")));
    }
    if low > high {
        return Err(problem(
            at,
            format!("the range {value} is empty: write [min, max] with min <= max"),
        ));
    }
    let count = (high - low) / step + 1;
    budget.check(count as u64, &format!("the range {value}"), at)?;
    Ok((0..count).map(|i| low + i * step).collect())
}

/// A ranged shape: each element a size or a `[min, max(, step)]` range, within `budget`.
fn shape_alternatives(value: &Value, at: &JsonPath, budget: Budget) -> Checked<Vec<Value>> {
    let items = value.as_array().ok_or_else(|| {
        problem(
            at,
            format!("a ranged shape is a list of sizes or [min, max, step] ranges, found {value}"),
        )
    })?;
    let dims = items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Array(_) => Ok(int_range(item, &at.index(i), budget)?
                .into_iter()
                .map(Value::from)
                .collect()),
            Value::Number(n) if n.is_i64() => Ok(vec![item.clone()]),
            _ => Err(problem(
                &at.index(i),
                format!("a size is an integer or a [min, max, step] range, found {item}"),
            )),
        })
        .collect::<Checked<Vec<Vec<Value>>>>()?;
    let lists: Vec<&[Value]> = dims.iter().map(Vec::as_slice).collect();
    Ok(product(&lists, at, budget)?
        .into_iter()
        .map(Value::Array)
        .collect())
}

fn parse_copies(value: &Value, at: &JsonPath) -> Checked<Vec<CopyRule>> {
    let bad = |at: &JsonPath, found: &Value| {
        problem(
            at,
            format!("a __copy__ rule is {{\"shape\": [dim, [arg, arg_dim]]}}, found {found}"),
        )
    };
    let rules = value.as_array().ok_or_else(|| bad(at, value))?;
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let rule_at = at.index(i);
            let spec = rule
                .as_object()
                .filter(|o| o.len() == 1)
                .and_then(|o| o.get("shape"))
                .ok_or_else(|| bad(&rule_at, rule))?;
            let index = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok());
            match spec.as_array().map(Vec::as_slice) {
                Some([dim, Value::Array(source)]) => match (index(dim), source.as_slice()) {
                    (Some(dim), [arg, arg_dim]) => match (index(arg), index(arg_dim)) {
                        (Some(from_arg), Some(from_dim)) => Ok(CopyRule {
                            dim,
                            from_arg,
                            from_dim,
                        }),
                        _ => Err(bad(&rule_at, rule)),
                    },
                    _ => Err(bad(&rule_at, rule)),
                },
                _ => Err(bad(&rule_at, rule)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        OpsConfig::parse(text, "c.json").unwrap_err().to_string()
    }

    #[test]
    fn structural_problems_name_the_json_path() {
        let cases = [
            (
                "[1]",
                "c.json: at .: a config is an object mapping operator names",
            ),
            (
                r#"{"torch.add": {"config": {"input": []}}}"#,
                r#"c.json: at ."torch.add".config: "config" is a list"#,
            ),
            (
                r#"{"torch.add": {"config": [{"inputs": []}]}}"#,
                r#"c.json: at ."torch.add".config[0].inputs: unknown key "inputs"; the keys here are build, input"#,
            ),
            (
                r#"{"torch.add": {"config": [{"input": [{"args": [{"type": "tensor", "shape": [[1, 4], 2], "__range__": ["shape"]}]}]}]}}"#,
                r#"c.json: at ."torch.add".config[0].input[0].args[0].__range__: __range__ is expanded only by "RangeConfigIterator""#,
            ),
            (
                r#"{"torch.add": {"input_iterator": "RangeConfigIterator", "config": [{"input": [{"args": [{"type": "int", "value": [5, 1], "__range__": ["value"]}]}]}]}}"#,
                r#"c.json: at ."torch.add".config[0].input[0].args[0].value: the range [5,1] is empty"#,
            ),
            (
                r#"{"torch.add": {"input_iterator": "RangeIterator", "config": []}}"#,
                r#"c.json: at ."torch.add".input_iterator: unknown iterator "RangeIterator"; use one of DefaultConfigIterator, RangeConfigIterator"#,
            ),
            (
                r#"{"torch.mm": {"input_iterator": "RangeConfigIterator", "config": [{"input": [{"args": [{"type": "tensor", "dtype": "float", "shape": [-1, 2], "__copy__": [{"shape": [0, [3, 1]]}]}]}]}]}}"#,
                r#"c.json: at ."torch.mm".config[0].input[0].args[0].__copy__: copies from positional argument 3 but the spec has 1 positional argument(s)"#,
            ),
            ("{\"a\": 1,}", "c.json:1:9: not valid JSON"),
            (
                r#"{"op_name": "torch.add", "build_id": "1:2", "op_info": {"config": []}}"#,
                r#"c.json: at .: this is a PARAM run_batch file (one operator's queued inputs, written for a profiler), not a benchmark config; to run its operator, write its "op_info" as the spec of "torch.add""#,
            ),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(
                message.starts_with(expected),
                "{message}\n  expected: {expected}"
            );
        }
    }

    #[test]
    fn a_huge_expansion_is_refused_before_it_is_made() {
        let text = r#"{"torch.add": {"input_iterator": "RangeConfigIterator", "config": [{"input": [{"args": [
            {"type": "int", "value": [1, 100000], "__range__": ["value"]},
            {"type": "int", "value": [1, 100000], "__range__": ["value"]}]}]}]}}"#;
        let message = error(text);
        assert!(
            message.contains(r#"at ."torch.add".config[0].input[0].args[1].value: the range [1,100000] has 100000 values, and with the 100000 combinations before it, the spec expands to at least 10000000000 runs, more than 50000000"#),
            "{message}"
        );
    }

    /// Issue 38, item 11: the cap was per argument, so two ranged shapes of 4,000,000 and
    /// 30,000 values were both expanded (20 s, 3.6 GB) before their product was refused.
    /// Each argument is checked against what those before it leave, before it is expanded.
    #[test]
    fn the_product_of_the_arguments_is_capped_before_they_are_expanded() {
        let spec = |first: u64, second: u64| {
            format!(
                r#"{{"torch.add": {{"input_iterator": "RangeConfigIterator", "config": [{{"input": [{{"args": [
                {{"type": "tensor", "dtype": "float", "shape": [[1, {first}, 1]], "__range__": ["shape"]}},
                {{"type": "tensor", "dtype": "float", "shape": [[1, {second}, 1]], "__range__": ["shape"]}}]}}]}}]}}}}"#
            )
        };
        let message = error(&spec(3, 30_000_000));
        assert!(
            message.contains("args[1].shape[0]: the range [1,30000000,1] has 30000000 values, and with the 3 combinations before it, the spec expands to at least 90000000 runs"),
            "{message}"
        );
        // One argument alone is held in memory: refused past MAX_ALTERNATIVES.
        let message = error(&spec(4_000_000, 30_000));
        assert!(
            message.contains("args[0].shape[0]: the range [1,4000000,1] has 4000000 values, more than the 1000000 one argument may hold"),
            "{message}"
        );
    }
}
