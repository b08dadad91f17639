//! Sweeps: one suite run several times with different settings, each run named.
//!
//! Two sources give the same [`SweepRun`]s:
//! - the system file's `multirun` block (the Python tool's format: under `runs`, each entry has
//!   a name template and a `matrix` of options, every combination of whose lists is one run);
//! - `milabench run --sweep KEY=[V1,V2]` axes, whose product is the runs.
//!
//! A key naming a system option (`sizer.*`, `cpu.*`) sets `system.options.<key>` for the run,
//! as the Python tool's `apply_system` does; any other key of a `--sweep` axis is a suite
//! override (`resnet50.argv.--batch-size`). Every key of a `multirun` matrix is an option.
//!
//! Order: the first key of a matrix varies fastest, the Python tool's order. A name template
//! fills `{a.b}` with the run's value of `a.b` and `{time}` with the Unix time; the run's
//! [`SweepRun::key`] is the same name with `{time}` left unfilled, so that a record of the
//! finished runs recognises a run on a later day.
//!
//! Every run also carries the name of its sweep ([`SweepRun::sweep`]), the same on every day
//! it runs, and its point ([`SweepRun::point`]): what the results store groups runs by.
//!
//! ```
//! use milabench_config::sweep::{Axis, expand_axes};
//!
//! let axes = [Axis::parse("resnet50.argv.--batch-size=[32,64]").unwrap(),
//!             Axis::parse("cpu.n_workers=[4,8]").unwrap()];
//! let runs = expand_axes(&axes, "sweep", 0).unwrap();
//! let names: Vec<&str> = runs.iter().map(|r| r.key.as_str()).collect();
//! assert_eq!(names, ["sweep-batch-size32-n_workers4", "sweep-batch-size64-n_workers4",
//!                    "sweep-batch-size32-n_workers8", "sweep-batch-size64-n_workers8"]);
//! assert_eq!(runs[0].overrides, ["resnet50.argv.--batch-size=32"]);
//! assert_eq!(runs[0].options[0].0, "cpu.n_workers");
//! assert_eq!(runs[0].sweep, "sweep");
//! assert_eq!(runs[0].point(), ["resnet50.argv.--batch-size=32", "cpu.n_workers=4"]);
//! ```

pub use milabench_vocab::run_files::SWEEP_FILE;
use std::path::Path;

use serde_json::Value as Json;

use crate::error::{At, ConfigError, did_you_mean};
use crate::limits::MAX_SWEEP_RUNS;
use crate::settings::options::known_options;
use crate::value::Node;

/// The first key segments that name a system option rather than a benchmark.
pub const OPTION_GROUPS: &[&str] = &["cpu", "sizer"];

/// The name of a sweep whose `--run-name` gives none (and of a [`SWEEP_FILE`] written before
/// sweeps had names).
pub const DEFAULT_SWEEP_NAME: &str = "sweep";

/// A sweep that cannot be expanded; each message says what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// The `multirun` block does not have the expected shape.
    #[error(
        "the system file's `multirun` block {problem}\n  fix: write `multirun: {{runs: [{{name: \"bs{{sizer.mult}}.{{time}}\", matrix: {{sizer.mult: [0.5, 2]}}}}]}}`"
    )]
    Shape {
        /// What is wrong.
        problem: String,
    },
    /// A name template uses a key the run does not set.
    #[error(
        "the run name template `{template}` uses `{{{name}}}`, which its matrix does not set\n  fix: use `{{time}}` or a key of the matrix ({known})"
    )]
    UnknownName {
        /// The template.
        template: String,
        /// The unknown placeholder.
        name: String,
        /// The keys of the matrix.
        known: String,
    },
    /// A `--sweep` axis is not `KEY=VALUES`.
    #[error(
        "`--sweep {text}`: {problem}\n  fix: write KEY=[V1,V2,...], e.g. 'resnet50.argv.--batch-size=[32,64]' or 'cpu.n_workers=[4,8]'"
    )]
    Axis {
        /// The axis as given.
        text: String,
        /// What is wrong.
        problem: String,
    },
    /// A `--sweep` key is given twice: the runs would be named by one value and run another.
    #[error(
        "`--sweep {key}=...` is given twice\n  fix: give each key once, with every value in its one list: '{key}=[V1,V2,...]'"
    )]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A `sizer.`/`cpu.` key names no option milabench reads: its runs would all be the same.
    #[error(
        "the sweep key `{key}` is not an option milabench reads{suggestion}, so its runs would not differ\n  fix: use one of {known}"
    )]
    UnknownOption {
        /// The key.
        key: String,
        /// ` (did you mean ...?)`, or empty.
        suggestion: String,
        /// The options of its group.
        known: String,
    },
    /// The sweep has more runs than [`MAX_SWEEP_RUNS`].
    #[error(
        "the sweep has {count} runs, more than the {MAX_SWEEP_RUNS} one sweep may have\n  fix: sweep fewer values per key, or split the sweep into several sweeps"
    )]
    TooLarge {
        /// The number of runs, in words when it does not fit a number.
        count: String,
    },
    /// Two runs of the sweep would have the same name.
    #[error(
        "two runs of the sweep are both named `{name}`\n  fix: put every key that varies into the name template"
    )]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// One run of a sweep: its name and what it changes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRun {
    /// The run name (its folder under `runs/`).
    pub name: String,
    /// The name without its time: what the record of finished runs keeps.
    pub key: String,
    /// The name of the sweep, the same every time it runs: the `--run-name` of `--sweep` axes
    /// without its `{time}` ([`DEFAULT_SWEEP_NAME`] without one), the system file's name
    /// without its extension for a `multirun` block.
    #[serde(default = "default_sweep_name")]
    pub sweep: String,
    /// The system options it sets (`sizer.mult`, `cpu.n_workers`), in matrix order.
    pub options: Vec<(String, Json)>,
    /// Suite overrides it adds (`resnet50.argv.--batch-size=64`).
    pub overrides: Vec<String>,
    /// Every key with its value, options and overrides alike: what a sweep report plots.
    pub values: Vec<(String, Json)>,
}

fn default_sweep_name() -> String {
    DEFAULT_SWEEP_NAME.to_string()
}

impl SweepRun {
    /// The run's point in its sweep: `key=value` of every setting, in matrix order, the value as
    /// the Python tool writes it (`sizer.mult=0.5`, `resnet50.argv.--batch-size=64`).
    pub fn point(&self) -> Vec<String> {
        self.values
            .iter()
            .map(|(key, value)| format!("{key}={}", python_str(value)))
            .collect()
    }
}

/// Reads the [`SWEEP_FILE`] of the run folder `dir`; `None` when it has none (or not one this
/// build can read).
pub fn read_sweep_file(dir: &Path) -> Option<SweepRun> {
    load_sweep_file(dir).ok().flatten()
}

/// Reads the [`SWEEP_FILE`] of the run folder `dir`: `Ok(None)` when it has none, an error
/// saying why when it has one that cannot be read or is not a run of a sweep.
pub fn load_sweep_file(dir: &Path) -> Result<Option<SweepRun>, String> {
    let path = dir.join(SWEEP_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{} is not a run of a sweep: {e}", path.display()))
}

/// One `--sweep` axis: a key and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// `sizer.mult`, `resnet50.argv.--batch-size`.
    pub key: String,
    /// The values, in order.
    pub values: Vec<Json>,
}

impl Axis {
    /// Parses `KEY=[V1,V2]` (values in YAML flow syntax; one value without brackets).
    pub fn parse(text: &str) -> Result<Axis, SweepError> {
        let bad = |problem: &str| SweepError::Axis {
            text: text.to_string(),
            problem: problem.to_string(),
        };
        let (key, values) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(bad("the key is empty or has an empty segment"));
        }
        let node = crate::yaml::parse_str(values, "--sweep").map_err(|e| match e {
            ConfigError::Syntax {
                at: At(Some(at)),
                message,
            } => {
                let place = if at.line <= 1 {
                    format!("at column {} of the values", at.column)
                } else if !values.contains('\n') {
                    "at the end of the values".to_string()
                } else {
                    format!("at line {}, column {} of the values", at.line, at.column)
                };
                bad(&format!(
                    "the values `{values}` are not valid YAML {place}: {message}"
                ))
            }
            other => bad(&other.to_string()),
        })?;
        let values = match node.to_json() {
            Json::Array(items) => items,
            Json::Null => return Err(bad("no value after `=`")),
            one => vec![one],
        };
        if values.is_empty() {
            return Err(bad("the list of values is empty"));
        }
        Ok(Axis {
            key: key.to_string(),
            values,
        })
    }

    /// Whether the key names a system option (see [`OPTION_GROUPS`]).
    pub fn is_option(&self) -> bool {
        is_option(&self.key)
    }
}

fn is_option(key: &str) -> bool {
    key.split_once('.')
        .is_some_and(|(group, _)| OPTION_GROUPS.contains(&group))
}

/// A value as the Python tool writes it in a name (`str(value)`): `0.5`, `2`, `64Go`, `True`.
pub fn python_str(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::Null => "None".into(),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Refuses a key of a known option group (`sizer.mult1`) that names none of its options.
fn check_option_key(key: &str) -> Result<(), SweepError> {
    let Some((group, name)) = key.split_once('.') else {
        return Ok(());
    };
    let Some(known) = known_options(group) else {
        return Ok(());
    };
    if known.contains(&name) {
        return Ok(());
    }
    let known: Vec<String> = known.iter().map(|k| format!("{group}.{k}")).collect();
    Err(SweepError::UnknownOption {
        key: key.to_string(),
        suggestion: did_you_mean(key, known.iter().map(String::as_str)),
        known: known.join(", "),
    })
}

/// The number of combinations of axes of `lengths` values; `None` past `usize`.
fn product(lengths: impl IntoIterator<Item = usize>) -> Option<usize> {
    lengths.into_iter().try_fold(1usize, usize::checked_mul)
}

/// Refuses `count` runs (`None`: too many to count) above [`MAX_SWEEP_RUNS`], before any run
/// is built.
fn check_run_count(count: Option<usize>) -> Result<(), SweepError> {
    match count {
        Some(count) if count <= MAX_SWEEP_RUNS => Ok(()),
        Some(count) => Err(SweepError::TooLarge {
            count: count.to_string(),
        }),
        None => Err(SweepError::TooLarge {
            count: format!("more than {}", usize::MAX),
        }),
    }
}

/// Every combination of `axes`, the first axis varying fastest.
fn combinations(axes: &[(String, Vec<Json>)]) -> Vec<Vec<(String, Json)>> {
    let mut out: Vec<Vec<(String, Json)>> = vec![Vec::new()];
    for (key, values) in axes {
        out = values
            .iter()
            .flat_map(|value| {
                out.iter().map(move |combo| {
                    let mut combo = combo.clone();
                    combo.push((key.clone(), value.clone()));
                    combo
                })
            })
            .collect();
    }
    out
}

/// Fills `{a.b}` and `{time}` of `template`; `time: None` leaves `{time}` as written.
fn fill(
    template: &str,
    values: &[(String, Json)],
    time: Option<i64>,
) -> Result<String, SweepError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &rest[start + 1..start + len];
        match (name, time) {
            ("time", Some(t)) => out.push_str(&t.to_string()),
            ("time", None) => out.push_str("{time}"),
            _ => {
                let value = values.iter().find(|(k, _)| k == name).ok_or_else(|| {
                    SweepError::UnknownName {
                        template: template.to_string(),
                        name: name.to_string(),
                        known: values
                            .iter()
                            .map(|(k, _)| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                })?;
                out.push_str(&python_str(&value.1));
            }
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn named(
    sweep: &str,
    template: &str,
    values: Vec<(String, Json)>,
    now: i64,
) -> Result<SweepRun, SweepError> {
    let name = fill(template, &values, Some(now))?;
    let key = fill(template, &values, None)?;
    let (options, overrides): (Vec<_>, Vec<_>) =
        values.iter().cloned().partition(|(k, _)| is_option(k));
    Ok(SweepRun {
        name,
        key,
        sweep: sweep.to_string(),
        overrides: overrides
            .into_iter()
            .map(|(k, v)| format!("{k}={}", python_str(&v)))
            .collect(),
        options,
        values,
    })
}

fn check_unique(runs: &[SweepRun]) -> Result<(), SweepError> {
    let mut seen = std::collections::HashSet::new();
    for run in runs {
        if !seen.insert(run.key.as_str()) {
            return Err(SweepError::Duplicate {
                name: run.key.clone(),
            });
        }
    }
    Ok(())
}

/// The runs of a system file's `multirun` block, in order, as runs of the sweep named `sweep`;
/// `now` fills `{time}`. Every matrix key is a system option (the Python tool's
/// `apply_system`), a list gives one value per run and any other value is the same in every
/// run.
pub fn expand_multirun(
    multirun: &Node,
    sweep: &str,
    now: i64,
) -> Result<Vec<SweepRun>, SweepError> {
    let shape = |problem: String| SweepError::Shape { problem };
    let json = multirun.to_json();
    let Some(runs) = json.get("runs") else {
        return Ok(Vec::new());
    };
    let runs = runs
        .as_array()
        .ok_or_else(|| shape(format!("has `runs: {runs}`, not a list")))?;
    let mut entries = Vec::with_capacity(runs.len());
    for (index, entry) in runs.iter().enumerate() {
        let name = entry
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| shape(format!("has no `name` template in run {}", index + 1)))?;
        let matrix = match entry.get("matrix") {
            None | Some(Json::Null) => serde_json::Map::new(),
            Some(Json::Object(m)) => m.clone(),
            Some(other) => {
                return Err(shape(format!(
                    "has `matrix: {other}` in run `{name}`, not a mapping"
                )));
            }
        };
        let axes: Vec<(String, Vec<Json>)> = matrix
            .into_iter()
            .map(|(k, v)| match v {
                Json::Array(items) => (k, items),
                one => (k, vec![one]),
            })
            .collect();
        for (key, _) in &axes {
            check_option_key(key)?;
        }
        entries.push((name, axes));
    }
    check_run_count(entries.iter().try_fold(0usize, |total, (_, axes)| {
        total.checked_add(product(axes.iter().map(|(_, values)| values.len()))?)
    }))?;
    let mut out = Vec::new();
    for (name, axes) in entries {
        for combo in combinations(&axes) {
            out.push(named(sweep, name, combo, now)?);
        }
    }
    check_unique(&out)?;
    Ok(out)
}

/// The runs of `--sweep` axes: their product, the first axis varying fastest, each named
/// `<prefix>-<name><value>...` (the last segment of each key without its leading dashes).
/// `now` fills a `{time}` in `prefix`; the sweep is named by `prefix` without it.
pub fn expand_axes(axes: &[Axis], prefix: &str, now: i64) -> Result<Vec<SweepRun>, SweepError> {
    let sweep = sweep_name(prefix);
    for (index, axis) in axes.iter().enumerate() {
        if axes[..index].iter().any(|earlier| earlier.key == axis.key) {
            return Err(SweepError::DuplicateKey {
                key: axis.key.clone(),
            });
        }
        check_option_key(&axis.key)?;
    }
    check_run_count(product(axes.iter().map(|axis| axis.values.len())))?;
    // The values in the name: a `{key}` placeholder per axis, before the `.{time}` if any.
    let mut suffix = String::new();
    for axis in axes {
        let short = axis.key.rsplit('.').next().unwrap_or(&axis.key);
        suffix.push_str(&format!(
            "-{}{{{}}}",
            short.trim_start_matches('-'),
            axis.key
        ));
    }
    let template = match prefix.find("{time}") {
        Some(at) => {
            let cut = if prefix[..at].ends_with('.') {
                at - 1
            } else {
                at
            };
            format!("{}{suffix}{}", &prefix[..cut], &prefix[cut..])
        }
        None => format!("{prefix}{suffix}"),
    };
    let pairs: Vec<(String, Vec<Json>)> = axes
        .iter()
        .map(|a| (a.key.clone(), a.values.clone()))
        .collect();
    let runs = combinations(&pairs)
        .into_iter()
        .map(|combo| named(&sweep, &template, combo, now))
        .collect::<Result<Vec<_>, _>>()?;
    check_unique(&runs)?;
    Ok(runs)
}

/// The name of the sweep of a run-name prefix: the prefix without `{time}` and the separators
/// around it (`nightly.{time}` is `nightly`); [`DEFAULT_SWEEP_NAME`] when nothing is left.
fn sweep_name(prefix: &str) -> String {
    let name = prefix
        .replace("{time}", "")
        .trim_matches(|c: char| matches!(c, '.' | '-' | '_') || c.is_whitespace())
        .to_string();
    if name.is_empty() {
        DEFAULT_SWEEP_NAME.to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn multirun(yaml: &str) -> Node {
        crate::yaml::parse_str(yaml, "test").unwrap()
    }

    #[test]
    fn the_python_tools_example_expands_in_its_order() {
        let block = multirun(
            r#"
runs:
  - name: "bs{sizer.mult}.{time}"
    matrix:
      sizer.auto: 1
      sizer.mult: [0.5, 2]
  - name: "c{sizer.capacity}_w{cpu.n_workers}.{time}"
    matrix:
      cpu.n_workers: [8, 16]
      sizer.capacity: [64Go, 128Go, All]
  - name: "auto.{time}"
    matrix:
      sizer.auto: 1
"#,
        );
        let runs = expand_multirun(&block, "sizing", 1700).unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "bs0.5.1700",
                "bs2.1700",
                "c64Go_w8.1700",
                "c64Go_w16.1700",
                "c128Go_w8.1700",
                "c128Go_w16.1700",
                "cAll_w8.1700",
                "cAll_w16.1700",
                "auto.1700",
            ]
        );
        assert_eq!(runs[0].key, "bs0.5.{time}");
        assert!(runs.iter().all(|r| r.sweep == "sizing"));
        assert_eq!(runs[2].point(), ["cpu.n_workers=8", "sizer.capacity=64Go"]);
        assert_eq!(
            runs[1].options,
            [
                ("sizer.auto".to_string(), json!(1)),
                ("sizer.mult".to_string(), json!(2))
            ]
        );
        assert!(runs.iter().all(|r| r.overrides.is_empty()));
    }

    #[test]
    fn bad_blocks_say_what_to_fix() {
        let err = expand_multirun(&multirun("runs: 3"), "s", 0).unwrap_err();
        assert!(err.to_string().contains("not a list"), "{err}");
        let err = expand_multirun(&multirun("runs: [{matrix: {a.b: 1}}]"), "s", 0).unwrap_err();
        assert!(err.to_string().contains("no `name`"), "{err}");
        let err = expand_multirun(
            &multirun("runs: [{name: 'x{sizer.add}', matrix: {sizer.mult: [1, 2]}}]"),
            "s",
            0,
        )
        .unwrap_err();
        assert!(err.to_string().contains("{sizer.add}"), "{err}");
        let err = expand_multirun(
            &multirun("runs: [{name: 'same', matrix: {sizer.mult: [1, 2]}}]"),
            "s",
            0,
        )
        .unwrap_err();
        assert!(matches!(err, SweepError::Duplicate { .. }), "{err}");
        assert!(expand_multirun(&multirun("{}"), "s", 0).unwrap().is_empty());
    }

    #[test]
    fn axes_parse_and_name_their_runs() {
        assert!(Axis::parse("novalue").is_err());
        assert!(Axis::parse("a=[]").is_err());
        let unclosed = Axis::parse("b.argv.--bs=[1,2").unwrap_err().to_string();
        assert_eq!(
            unclosed,
            "`--sweep b.argv.--bs=[1,2`: the values `[1,2` are not valid YAML at the end of the values: \
             while parsing a flow sequence, expected ',' or ']'\n  \
             fix: write KEY=[V1,V2,...], e.g. 'resnet50.argv.--batch-size=[32,64]' or 'cpu.n_workers=[4,8]'"
        );
        let stray = Axis::parse("b.argv.--bs=[1,]2]").unwrap_err().to_string();
        assert!(stray.contains("at column "), "{stray}");
        assert_eq!(stray.matches("fix:").count(), 1, "{stray}");
        assert_eq!(Axis::parse("cpu.n_workers=4").unwrap().values, [json!(4)]);
        let axes = [Axis::parse("sizer.mult=[0.5, 2]").unwrap()];
        let runs = expand_axes(&axes, "nightly.{time}", 99).unwrap();
        assert_eq!(runs[0].name, "nightly-mult0.5.99");
        assert_eq!(runs[1].key, "nightly-mult2.{time}");
        assert_eq!(runs[1].sweep, "nightly", "the same name every day");
        assert_eq!(runs[1].point(), ["sizer.mult=2"]);
        assert_eq!(
            expand_axes(&axes, "sweep.{time}", 99).unwrap()[0].sweep,
            "sweep"
        );
        assert_eq!(expand_axes(&axes, "{time}", 99).unwrap()[0].sweep, "sweep");
        assert!(axes[0].is_option());
        assert!(!Axis::parse("resnet50.argv.--bs=[1]").unwrap().is_option());
    }

    #[test]
    fn a_key_given_twice_is_refused_by_name() {
        let axes = [
            Axis::parse("b.argv.--batch-size=[8,16]").unwrap(),
            Axis::parse("b.argv.--batch-size=[32]").unwrap(),
        ];
        let err = expand_axes(&axes, "dup", 0).unwrap_err();
        assert_eq!(
            err,
            SweepError::DuplicateKey {
                key: "b.argv.--batch-size".into()
            }
        );
        assert!(
            err.to_string()
                .contains("'b.argv.--batch-size=[V1,V2,...]'")
        );
    }

    #[test]
    fn an_unknown_option_key_lists_the_known_ones() {
        let axes = [Axis::parse("sizer.mult1=[1,2]").unwrap()];
        let err = expand_axes(&axes, "sn", 0).unwrap_err().to_string();
        assert!(
            err.contains(
                "`sizer.mult1` is not an option milabench reads (did you mean `sizer.mult`?)"
            ),
            "{err}"
        );
        assert!(err.contains("sizer.auto, sizer.batch_size"), "{err}");
        let block = multirun("runs: [{name: 'w{cpu.workers}', matrix: {cpu.workers: [1, 2]}}]");
        let err = expand_multirun(&block, "s", 0).unwrap_err().to_string();
        assert!(err.contains("`cpu.workers`"), "{err}");
        assert!(err.contains("cpu.n_workers"), "{err}");
        // Other groups are set as written (the Python tool's `apply_system`).
        let block = multirun("runs: [{name: 'x{other.key}', matrix: {other.key: [1, 2]}}]");
        assert_eq!(expand_multirun(&block, "s", 0).unwrap().len(), 2);
    }

    #[test]
    fn a_sweep_past_the_bound_is_refused_before_its_runs_are_built() {
        let values = format!(
            "[{}]",
            (1..=100)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let axes: Vec<Axis> = ["a", "b", "c", "d"]
            .iter()
            .map(|k| Axis::parse(&format!("x.argv.--{k}={values}")).unwrap())
            .collect();
        let err = expand_axes(&axes, "huge", 0).unwrap_err();
        assert_eq!(
            err,
            SweepError::TooLarge {
                count: "100000000".into()
            }
        );
        assert!(
            err.to_string()
                .contains("more than the 10000 one sweep may have"),
            "{err}"
        );
        assert_eq!(expand_axes(&axes[..2], "ok", 0).unwrap().len(), 10_000);
        // 64 axes of 2 values: more runs than a number holds.
        let axes: Vec<Axis> = (0..64)
            .map(|k| Axis::parse(&format!("x.argv.--k{k}=[1,2]")).unwrap())
            .collect();
        assert!(matches!(
            expand_axes(&axes, "huge", 0),
            Err(SweepError::TooLarge { .. })
        ));
        let block = multirun(&format!(
            "runs: [{{name: 'a{{sizer.add}}{{sizer.mult}}', matrix: {{sizer.add: {values}, sizer.mult: {values}}}}}, \
             {{name: 'b{{sizer.add}}', matrix: {{sizer.add: [1]}}}}]"
        ));
        assert_eq!(
            expand_multirun(&block, "s", 0).unwrap_err(),
            SweepError::TooLarge {
                count: "10001".into()
            }
        );
    }

    #[test]
    fn a_sweep_file_without_a_sweep_name_is_read_as_the_default_sweep() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_sweep_file(dir.path()), None);
        std::fs::write(
            dir.path().join(SWEEP_FILE),
            r#"{"name": "bs2.9", "key": "bs2.{time}", "options": [], "overrides": [],
                "values": [["sizer.mult", 2]]}"#,
        )
        .unwrap();
        let run = read_sweep_file(dir.path()).unwrap();
        std::fs::write(dir.path().join(SWEEP_FILE), "{\"name\": ").unwrap();
        assert_eq!(read_sweep_file(dir.path()), None);
        let err = load_sweep_file(dir.path()).unwrap_err();
        assert!(err.contains("sweep.json is not a run of a sweep"), "{err}");
        assert_eq!(run.sweep, DEFAULT_SWEEP_NAME);
        assert_eq!(run.point(), ["sizer.mult=2"]);
    }

    #[test]
    fn python_strings() {
        assert_eq!(python_str(&json!(2.0)), "2.0");
        assert_eq!(python_str(&json!(true)), "True");
        assert_eq!(python_str(&json!("All")), "All");
    }
}
