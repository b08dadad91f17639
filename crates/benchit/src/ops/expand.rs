//! From a checked config to the ordered list of runs, with PARAM's ids, and the `--resume-id` /
//! `--stop-id` selection.
//!
//! Order: operators in file order; for each, its `config` entries (`config_id` 0, 1, ...); for
//! each, its build variants (or the single id `0` when there is no build), and for each build,
//! its input variants. Ids are `<config_id>|<build_id>|<input_id>`, where a build or input id is
//! the index of the spec in its list (`DefaultConfigIterator`) or `<variant>_<combination>`
//! (`RangeConfigIterator`). The combinations of one spec are the Cartesian product of its
//! positional arguments then its keyword arguments, the last varying fastest.
//!
//! One deliberate difference from PARAM: PARAM appends each build id to the previous one
//! (`0|0_0|…`, then `0|0_0|0_1|…`), a bug; here every build variant gets its own
//! `<config_id>|<build_id>` prefix (`0|0_0|…`, `0|0_1|…`).

use std::fmt;
use std::ops::Range;

use serde_json::{Map, Value};

use super::config::{ArgTemplate, CallTemplate, ConfigEntry, IteratorKind, OpEntry, OpsConfig};
use super::path::JsonPath;
use super::spec::{CallSpec, DEFAULT_GENERATOR, RunSpec};

/// A run's id without the operator name: `<config_id>|<build_id>|<input_id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunId {
    /// Index in the operator's `config` list.
    pub config: usize,
    /// The build id (`0` when the operator has no build).
    pub build: String,
    /// The input id.
    pub input: String,
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}|{}|{}", self.config, self.build, self.input)
    }
}

/// One expanded run: an operator, an id and the macro-free spec.
#[derive(Debug, Clone)]
pub struct ExpandedRun {
    /// The operator name.
    pub op_name: String,
    /// Its id.
    pub id: RunId,
    /// The expanded spec as PARAM writes it in records: `{"build": ..., "input": ...}`.
    pub config: Value,
    /// The checked spec, or why this id cannot run (one line, naming the JSON path).
    pub spec: Result<RunSpec, String>,
}

impl ExpandedRun {
    /// The id used by `--resume-id` and `--stop-id`: `<op>|<config>|<build>|<input>`.
    pub fn full_id(&self) -> String {
        format!("{}|{}", self.op_name, self.id)
    }
}

/// Every run of `config`, in order, built one at a time as the iterator is read: listing or
/// scanning the ids holds one run in memory, however many the config expands to.
pub fn expand(config: &OpsConfig) -> impl Iterator<Item = ExpandedRun> + '_ {
    config.ops.iter().flat_map(|op| {
        let generator_problem = check_generators(op).err();
        op.configs
            .iter()
            .enumerate()
            .flat_map(move |(config_id, entry)| {
                expand_entry(op, config_id, entry, generator_problem.clone())
            })
    })
}

/// Why no run of `op` can work because of its data generators, if so.
fn check_generators(op: &OpEntry) -> Result<(), String> {
    let check = |key: &str, value: &Option<String>, needed: bool| match value {
        None if needed => Err(format!(
            "{}: no \"{key}\"; add \"{key}\": \"{DEFAULT_GENERATOR}\"",
            op.path
        )),
        Some(name) if name != DEFAULT_GENERATOR => Err(format!(
            "{}: unknown data generator \"{name}\"; use \"{DEFAULT_GENERATOR}\"",
            op.path.key(key)
        )),
        _ => Ok(()),
    };
    let has_build = op.configs.iter().any(|c| !c.build.is_empty());
    check("input_data_generator", &op.input_data_generator, true)?;
    check("build_data_generator", &op.build_data_generator, has_build)
}

fn expand_entry<'a>(
    op: &'a OpEntry,
    config_id: usize,
    entry: &'a ConfigEntry,
    generator_problem: Option<String>,
) -> impl Iterator<Item = ExpandedRun> + 'a {
    let builds: Box<dyn Iterator<Item = (String, Option<Variant<'a>>)> + 'a> =
        if entry.build.is_empty() {
            Box::new(std::iter::once(("0".to_string(), None)))
        } else {
            Box::new(
                variants(&entry.build, op.build_iterator)
                    .map(|variant| (variant.id.clone(), Some(variant))),
            )
        };
    builds.flat_map(move |(build_id, build)| {
        let build_spec = build.as_ref().map(Variant::check).transpose();
        let build_value = build.map_or(Value::Null, |b| b.value);
        let generator_problem = generator_problem.clone();
        variants(&entry.input, op.input_iterator).map(move |input| {
            let spec = match (&generator_problem, &build_spec) {
                (Some(problem), _) | (None, Err(problem)) => Err(problem.clone()),
                (None, Ok(build)) => input.check().map(|input| RunSpec {
                    build: build.clone(),
                    input,
                }),
            };
            ExpandedRun {
                op_name: op.name.clone(),
                id: RunId {
                    config: config_id,
                    build: build_id.clone(),
                    input: input.id,
                },
                config: object([("build", build_value.clone()), ("input", input.value)]),
                spec,
            }
        })
    })
}

/// One expanded build or input spec.
struct Variant<'a> {
    id: String,
    value: Value,
    path: &'a JsonPath,
    /// A `__copy__` rule that could not apply.
    copy_problem: Option<String>,
}

impl Variant<'_> {
    fn check(&self) -> Result<CallSpec, String> {
        match &self.copy_problem {
            Some(problem) => Err(problem.clone()),
            None => CallSpec::check(&self.value, self.path),
        }
    }
}

/// Each variant of a build or input list, in order.
fn variants(specs: &[CallTemplate], iterator: IteratorKind) -> impl Iterator<Item = Variant<'_>> {
    specs
        .iter()
        .enumerate()
        .flat_map(move |(variant, template)| {
            (0..template.combinations()).map(move |combination| {
                let (value, copy_problem) = combination_of(template, combination);
                Variant {
                    id: match iterator {
                        IteratorKind::Default => variant.to_string(),
                        IteratorKind::Range => format!("{variant}_{combination}"),
                    },
                    value,
                    path: &template.path,
                    copy_problem,
                }
            })
        })
}

/// The `index`-th combination of a spec (last argument varying fastest) with its `__copy__`
/// rules applied, and the first rule that could not apply.
fn combination_of(template: &CallTemplate, mut index: u64) -> (Value, Option<String>) {
    let all: Vec<&ArgTemplate> = template
        .args
        .iter()
        .chain(template.kwargs.iter().map(|(_, t)| t))
        .collect();
    let mut chosen = vec![Value::Null; all.len()];
    for (slot, arg) in all.iter().enumerate().rev() {
        let n = arg.alternatives.len() as u64;
        chosen[slot] = arg.alternatives[(index % n) as usize].clone();
        index /= n;
    }
    let mut problem = None;
    for (slot, arg) in all.iter().enumerate() {
        for rule in &arg.copies {
            let source = chosen[rule.from_arg]
                .get("shape")
                .and_then(|s| s.get(rule.from_dim))
                .cloned();
            let target = chosen[slot]
                .get_mut("shape")
                .and_then(|s| s.get_mut(rule.dim));
            match (source, target) {
                (Some(value), Some(target)) => *target = value,
                _ => {
                    problem.get_or_insert_with(|| {
                        format!(
                            "{}: cannot copy argument {}'s shape[{}] into shape[{}]: no such dimension",
                            arg.path.key("__copy__"),
                            rule.from_arg,
                            rule.from_dim,
                            rule.dim
                        )
                    });
                }
            }
        }
    }
    let kwargs: Map<String, Value> = template
        .kwargs
        .iter()
        .map(|(name, _)| name.clone())
        .zip(chosen.split_off(template.args.len()))
        .collect();
    (
        object([
            ("args", Value::Array(chosen)),
            ("kwargs", Value::Object(kwargs)),
        ]),
        problem,
    )
}

/// A JSON object of two members, built by moving the values in (`json!` would copy them
/// through serde).
fn object(members: [(&str, Value); 2]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Why `--resume-id` / `--stop-id` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// No run has that id.
    #[error(
        "no run has the {flag} `{id}`; ids look like `torch.add|0|0|0_3` (`benchit ops --list` prints them)"
    )]
    Unknown {
        /// `--resume-id` or `--stop-id`.
        flag: &'static str,
        /// The id given.
        id: String,
    },
    /// The stop id comes before the resume id.
    #[error("the --stop-id `{stop}` comes before the --resume-id `{resume}`: nothing would run")]
    Reversed {
        /// The resume id.
        resume: String,
        /// The stop id.
        stop: String,
    },
}

/// The positions, in [`expand`]'s order, of the runs from `resume` (inclusive) up to `stop`
/// (exclusive); ids include the operator name. Without either, no run is built; with one, the
/// runs are scanned once, one at a time.
pub fn select(
    config: &OpsConfig,
    resume: Option<&str>,
    stop: Option<&str>,
) -> Result<Range<usize>, SelectError> {
    let total = usize::try_from(config.run_count()).unwrap_or(usize::MAX);
    if resume.is_none() && stop.is_none() {
        return Ok(0..total);
    }
    let (mut start, mut end) = (None, None);
    for (position, run) in expand(config).enumerate() {
        let id = run.full_id();
        if start.is_none() && resume == Some(id.as_str()) {
            start = Some(position);
        }
        if end.is_none() && stop == Some(id.as_str()) {
            end = Some(position);
        }
        if (resume.is_none() || start.is_some()) && (stop.is_none() || end.is_some()) {
            break;
        }
    }
    let unknown = |flag: &'static str, id: &str| SelectError::Unknown {
        flag,
        id: id.to_string(),
    };
    let start = match resume {
        Some(id) => start.ok_or_else(|| unknown("--resume-id", id))?,
        None => 0,
    };
    let end = match stop {
        Some(id) => end.ok_or_else(|| unknown("--stop-id", id))?,
        None => total,
    };
    if end < start {
        return Err(SelectError::Reversed {
            resume: resume.unwrap_or_default().to_string(),
            stop: stop.unwrap_or_default().to_string(),
        });
    }
    Ok(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<ExpandedRun> {
        expand(&OpsConfig::parse(text, "test.json").unwrap()).collect()
    }

    fn ids(runs: &[ExpandedRun]) -> Vec<String> {
        runs.iter().map(ExpandedRun::full_id).collect()
    }

    fn shapes(runs: &[ExpandedRun]) -> Vec<String> {
        runs.iter()
            .map(|r| {
                r.config["input"]["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| format!("{}:{}", a["dtype"], a["shape"]).replace('"', ""))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    const ADD_RANGE: &str = r#"{"torch.add": {
        "input_data_generator": "PyTorch:DefaultDataGenerator",
        "input_iterator": "RangeConfigIterator",
        "config": [{"input": [
            {"args": [
                {"type": "tensor", "dtype": "float", "shape": [[128, 256, 128], 8], "__range__": ["shape"]},
                {"type": "tensor", "dtype": "float", "shape": [1, 8]}]},
            {"args": [
                {"type": "tensor", "dtype": ["float", "double"], "shape": [[1, 2], 4], "__range__": ["dtype", "shape"]},
                {"type": "int", "value": [1, 5, 2], "__range__": ["value"]}]}
        ]}]}}"#;

    #[test]
    fn range_ids_count_variants_and_combinations_the_last_argument_fastest() {
        let runs = runs(ADD_RANGE);
        assert_eq!(
            ids(&runs),
            [
                "torch.add|0|0|0_0",
                "torch.add|0|0|0_1",
                "torch.add|0|0|1_0",
                "torch.add|0|0|1_1",
                "torch.add|0|0|1_2",
                "torch.add|0|0|1_3",
                "torch.add|0|0|1_4",
                "torch.add|0|0|1_5",
                "torch.add|0|0|1_6",
                "torch.add|0|0|1_7",
                "torch.add|0|0|1_8",
                "torch.add|0|0|1_9",
                "torch.add|0|0|1_10",
                "torch.add|0|0|1_11",
            ]
        );
        assert_eq!(
            shapes(&runs[..2]),
            ["float:[128,8] float:[1,8]", "float:[256,8] float:[1,8]"]
        );
        let second: Vec<String> = runs[2..]
            .iter()
            .map(|r| {
                let args = &r.config["input"]["args"];
                format!(
                    "{}{} {}",
                    args[0]["dtype"], args[0]["shape"], args[1]["value"]
                )
                .replace('"', "")
            })
            .collect();
        assert_eq!(
            second,
            [
                "float[1,4] 1",
                "float[1,4] 3",
                "float[1,4] 5",
                "float[2,4] 1",
                "float[2,4] 3",
                "float[2,4] 5",
                "double[1,4] 1",
                "double[1,4] 3",
                "double[1,4] 5",
                "double[2,4] 1",
                "double[2,4] 3",
                "double[2,4] 5",
            ]
        );
        // Macros are gone from what is recorded and sent.
        assert!(!runs[0].config.to_string().contains("__range__"));
        assert!(runs.iter().all(|r| r.spec.is_ok()));
    }

    #[test]
    fn copies_keep_matmul_dimensions_consistent() {
        let runs = runs(
            r#"{"torch.mm": {
            "input_data_generator": "PyTorch:DefaultDataGenerator",
            "input_iterator": "RangeConfigIterator",
            "config": [{"input": [{"args": [
                {"type": "tensor", "dtype": "float", "shape": [[2, 4, 2], [8, 16, 8]], "__range__": ["shape"]},
                {"type": "tensor", "dtype": "float", "shape": [-1, [3, 5, 2]], "__range__": ["shape"],
                 "__copy__": [{"shape": [0, [0, 1]]}]}]}]}]}}"#,
        );
        assert_eq!(
            shapes(&runs),
            [
                "float:[2,8] float:[8,3]",
                "float:[2,8] float:[8,5]",
                "float:[2,16] float:[16,3]",
                "float:[2,16] float:[16,5]",
                "float:[4,8] float:[8,3]",
                "float:[4,8] float:[8,5]",
                "float:[4,16] float:[16,3]",
                "float:[4,16] float:[16,5]",
            ]
        );
        assert_eq!(runs[7].full_id(), "torch.mm|0|0|0_7");
    }

    #[test]
    fn every_build_variant_gets_its_own_id_unlike_param() {
        let runs = runs(
            r#"{"torch.nn.Linear": {
            "build_data_generator": "PyTorch:DefaultDataGenerator",
            "input_data_generator": "PyTorch:DefaultDataGenerator",
            "build_iterator": "RangeConfigIterator",
            "config": [
              {"build": [{"args": [{"type": "int", "value": 8}, {"type": "int", "value": [1, 3], "__range__": ["value"]}]}],
               "input": [{"args": [{"type": "tensor", "dtype": "float", "shape": [2, 8]}]},
                         {"args": [{"type": "tensor", "dtype": "float", "shape": [4, 8]}]}]},
              {"input": [{"args": [{"type": "tensor", "dtype": "float", "shape": [1, 8]}]}]}
            ]}}"#,
        );
        assert_eq!(
            ids(&runs),
            [
                "torch.nn.Linear|0|0_0|0",
                "torch.nn.Linear|0|0_0|1",
                "torch.nn.Linear|0|0_1|0",
                "torch.nn.Linear|0|0_1|1",
                "torch.nn.Linear|0|0_2|0",
                "torch.nn.Linear|0|0_2|1",
                "torch.nn.Linear|1|0|0",
            ]
        );
        assert_eq!(runs[2].config["build"]["args"][1]["value"], 2);
        assert_eq!(runs[6].config["build"], Value::Null);
    }

    #[test]
    fn a_bad_value_fails_its_id_only() {
        let runs = runs(
            r#"{"torch.add": {
            "input_data_generator": "PyTorch:DefaultDataGenerator",
            "input_iterator": "RangeConfigIterator",
            "config": [{"input": [{"args": [
                {"type": "tensor", "dtype": ["float", "half", "double"], "shape": [2], "__range__": ["dtype"]}]}]}]},
            "torch.mul": {"config": [{"input": [{"args": []}]}]}}"#,
        );
        let problems: Vec<Option<&String>> = runs.iter().map(|r| r.spec.as_ref().err()).collect();
        assert!(problems[0].is_none() && problems[2].is_none());
        assert!(problems[1].unwrap().contains("unknown dtype \"half\""));
        assert_eq!(
            problems[3].unwrap(),
            ".\"torch.mul\": no \"input_data_generator\"; add \"input_data_generator\": \"PyTorch:DefaultDataGenerator\""
        );
    }

    #[test]
    fn resume_is_inclusive_and_stop_exclusive() {
        let config = OpsConfig::parse(ADD_RANGE, "test.json").unwrap();
        let all = runs(ADD_RANGE);
        let picked = select(
            &config,
            Some("torch.add|0|0|0_1"),
            Some("torch.add|0|0|1_2"),
        )
        .unwrap();
        assert_eq!(
            ids(&all[picked]),
            [
                "torch.add|0|0|0_1",
                "torch.add|0|0|1_0",
                "torch.add|0|0|1_1"
            ]
        );
        assert_eq!(
            select(&config, Some("torch.add|0|0|1_11"), None)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            select(&config, None, Some("torch.add|0|0|0_0"))
                .unwrap()
                .len(),
            0
        );
        assert_eq!(select(&config, None, None).unwrap(), 0..all.len());
        assert_eq!(
            select(&config, Some("0|0|0_1"), None)
                .unwrap_err()
                .to_string(),
            "no run has the --resume-id `0|0|0_1`; ids look like `torch.add|0|0|0_3` (`benchit ops --list` prints them)"
        );
        assert!(matches!(
            select(
                &config,
                Some("torch.add|0|0|1_2"),
                Some("torch.add|0|0|0_1")
            ),
            Err(SelectError::Reversed { .. })
        ));
    }

    #[test]
    fn the_default_iterator_numbers_specs() {
        let runs = runs(
            r#"{"torch.relu": {"input_data_generator": "PyTorch:DefaultDataGenerator",
            "config": [{"input": [{"args": [{"type": "tensor", "dtype": "float", "shape": [3]}]},
                                  {"args": [{"type": "tensor", "dtype": "float", "shape": [5]}]}]}]}}"#,
        );
        assert_eq!(ids(&runs), ["torch.relu|0|0|0", "torch.relu|0|0|1"]);
    }
}
