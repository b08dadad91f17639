//! `milabench resolve`: goldens produced by the Python milabench, snapshots of every feature and
//! of every bad-input error.

use std::path::Path;

use serde_json::Value;

use crate::common::{fixtures, milabench, redact, run};

/// One golden comparison.
struct Case {
    /// Golden file under `suites/expected/`.
    golden: &'static str,
    /// Arguments after `resolve --format json`.
    args: &'static [&'static str],
    /// `(bench, key)` pairs where we deliberately differ from the Python tool.
    deviations: &'static [(&'static str, &'static str)],
    /// Benchmarks only we produce, and benchmarks only Python produces.
    only_ours: &'static [&'static str],
    only_python: &'static [&'static str],
}

const CASES: &[Case] = &[
    case("basic", &["--config", "basic.yaml"]),
    case(
        "basic.select-monogpu",
        &[
            "--config",
            "basic.yaml",
            "--select",
            "monogpu",
            "--enabled-only",
        ],
    ),
    case(
        "basic.override-dotlist",
        &[
            "--config",
            "basic.yaml",
            "--override",
            "_alpha.max_duration=42",
            "--override",
            "beta.weight=0.5",
        ],
    ),
    case(
        "basic.override-mapping",
        &[
            "--config",
            "basic.yaml",
            "--override",
            "{alpha-large: {argv: {--batch-size: 64, --lr: null}}, _alpha: {argv: {--new: 1}}}",
        ],
    ),
    case(
        "basic.override-star",
        &[
            "--config",
            "basic.yaml",
            "--override",
            r#"{"*": {enabled: true, weight: 9}}"#,
        ],
    ),
    case("inherit", &["--config", "inherit.yaml"]),
    Case {
        deviations: &[("layered-two", "definition")],
        ..case("layers", &["--config", "layers.yaml"])
    },
    Case {
        only_ours: &["sweep-bs8-ab-s7", "sweep-bs16-ab-s7"],
        only_python: &[
            "sweep-bs8-a-s7",
            "sweep-bs16-a-s7",
            "sweep-bs8-b-s7",
            "sweep-bs16-b-s7",
        ],
        ..case("matrix", &["--config", "matrix.yaml"])
    },
    Case {
        deviations: &[
            ("starred-a", "definition"),
            ("starred-a", "config_file"),
            ("starred-b", "definition"),
            ("starred-b", "config_file"),
        ],
        ..case("star", &["--config", "star.yaml"])
    },
    Case {
        only_python: &["with-off"],
        ..case("argv", &["--config", "argv.yaml", "--exclude", "with-off"])
    },
    case(
        "interp.system",
        &["--config", "interp.yaml", "--system", "system.yaml"],
    ),
    case("selection", &["--config", "selection.yaml"]),
    case(
        "selection.select-grp-1",
        &[
            "--config",
            "selection.yaml",
            "--select",
            "grp-1",
            "--enabled-only",
        ],
    ),
    case(
        "selection.select-inst-2",
        &[
            "--config",
            "selection.yaml",
            "--select",
            "inst-2",
            "--enabled-only",
        ],
    ),
    case(
        "selection.select-folder-x",
        &[
            "--config",
            "selection.yaml",
            "--select",
            "folder-x",
            "--enabled-only",
        ],
    ),
    case(
        "selection.select-red-exclude-inst-1",
        &[
            "--config",
            "selection.yaml",
            "--select",
            "red,blue",
            "--exclude",
            "inst-1",
            "--enabled-only",
        ],
    ),
    case(
        "selection.select-disabled",
        &[
            "--config",
            "selection.yaml",
            "--select",
            "sel-disabled,sel-nodef",
            "--enabled-only",
        ],
    ),
    case(
        "selection.exclude-star",
        &[
            "--config",
            "selection.yaml",
            "--exclude",
            "*",
            "--enabled-only",
        ],
    ),
    Case {
        deviations: &[
            ("alpha-small", "definition"),
            ("alpha-off", "definition"),
            ("extra-here", "definition"),
        ],
        ..case("overlay.more", &["--config", "overlay/more.yaml"])
    },
];

const fn case(golden: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        golden,
        args,
        deviations: &[],
        only_ours: &[],
        only_python: &[],
    }
}

/// Golden values use `{"__float__": "inf"}` for non-finite floats; we print them as strings.
fn normalize_golden(value: &Value) -> Value {
    match value {
        Value::Object(o) if o.len() == 1 && o.contains_key("__float__") => o["__float__"].clone(),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), normalize_golden(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize_golden).collect()),
        other => other.clone(),
    }
}

fn compare(case: &Case) -> Vec<String> {
    let suites = fixtures().join("suites");
    let golden_path = suites
        .join("expected")
        .join(format!("{}.json", case.golden));
    let golden: Value =
        serde_json::from_str(&fs_err::read_to_string(&golden_path).expect("golden exists"))
            .expect("golden is JSON");
    let golden = normalize_golden(&golden);
    let out = run(milabench(&suites)
        .args(["resolve", "--format", "json"])
        .args(case.args));
    assert_eq!(out.code, 0, "{}: {}", case.golden, out.stderr);
    let ours: Value = serde_json::from_str(&out.stdout).expect("resolve prints JSON");
    let (ours, golden) = (
        ours.as_object().expect("object"),
        golden.as_object().expect("object"),
    );
    let enabled_only = case.args.contains(&"--enabled-only");
    let config_dir = {
        let config = case.args[case
            .args
            .iter()
            .position(|a| *a == "--config")
            .expect("--config")
            + 1];
        suites.join(Path::new(config).parent().unwrap_or(Path::new("")))
    };
    let mut problems = Vec::new();
    let expected_names: Vec<&String> = golden
        .iter()
        .filter(|(_, b)| !enabled_only || b["selected"] == Value::Bool(true))
        .map(|(name, _)| name)
        .filter(|name| !case.only_python.contains(&name.as_str()))
        .collect();
    let our_names: Vec<&String> = ours
        .keys()
        .filter(|n| !case.only_ours.contains(&n.as_str()))
        .collect();
    if expected_names != our_names {
        problems.push(format!(
            "benchmarks differ:\n  ours   {our_names:?}\n  python {expected_names:?}"
        ));
    }
    for only in case.only_ours {
        if !ours.contains_key(*only) {
            problems.push(format!("expected our own benchmark `{only}`"));
        }
    }
    for (name, theirs) in golden {
        let Some(mine) = ours.get(name) else { continue };
        for (key, value) in theirs.as_object().expect("bench object") {
            if matches!(key.as_str(), "selected" | "matrix")
                || case.deviations.contains(&(name.as_str(), key.as_str()))
            {
                continue;
            }
            let value = match (key.as_str(), value) {
                ("definition" | "config_file", Value::String(rel)) => {
                    let joined = config_dir.join(rel);
                    Value::String(normalize_path(&joined))
                }
                _ => value.clone(),
            };
            let mine = mine
                .get(key)
                .cloned()
                .unwrap_or(Value::String("<absent>".into()));
            if mine != value {
                problems.push(format!("{name}.{key}: ours {mine} python {value}"));
            }
        }
        for key in case
            .deviations
            .iter()
            .filter(|(b, _)| b == name)
            .map(|(_, k)| k)
        {
            let mine = &mine[*key];
            let theirs = &theirs[*key];
            if mine.is_string()
                && theirs.is_string()
                && normalize_path(&config_dir.join(theirs.as_str().unwrap_or_default()))
                    == mine.as_str().unwrap_or_default()
            {
                problems.push(format!(
                    "{name}.{key} is listed as a deviation but matches Python"
                ));
            }
        }
    }
    problems
}

fn normalize_path(path: &Path) -> String {
    let mut out = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.display().to_string()
}

#[test]
fn matches_python_goldens() {
    let mut failures = Vec::new();
    for case in CASES {
        for problem in compare(case) {
            failures.push(format!("[{}] {problem}", case.golden));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn matrix_fills_matrix_keys_and_keeps_launch_placeholders() {
    let suites = fixtures().join("suites");
    let out =
        run(milabench(&suites).args(["resolve", "--format", "json", "--config", "matrix.yaml"]));
    let json: Value = serde_json::from_str(&out.stdout).expect("json");
    let bench = &json["sweep-bs16-ab-s7"];
    assert_eq!(
        bench["matrix"],
        serde_json::json!({"bs": 16, "opt": "ab", "seed": 7})
    );
    assert_eq!(bench["argv"]["--mixed"], "16-{n_worker}");
    assert_eq!(bench["argv"]["--gpus"], "{gpu_count}");
    assert_eq!(bench["argv"]["--json"], r#"{"image": 10}"#);
    assert_eq!(bench["url"], "{bs}");
    assert_eq!(bench["max_duration"], 300);
}

fn snapshot_resolve(name: &str, cwd: &Path, args: &[&str]) {
    let out = run(milabench(cwd).arg("resolve").args(args));
    let text = format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        out.code,
        redact(&out.stdout),
        redact(&out.stderr)
    );
    insta::assert_snapshot!(name, text);
}

#[test]
fn yaml_output_of_a_suite() {
    snapshot_resolve(
        "resolve_basic_yaml",
        &fixtures().join("suites"),
        &["--config", "basic.yaml", "--enabled-only"],
    );
}

#[test]
fn with_system_and_system_file() {
    snapshot_resolve(
        "resolve_interp_with_system",
        &fixtures().join("suites"),
        &[
            "--config",
            "interp.yaml",
            "--system",
            "system.yaml",
            "--with-system",
            "--select",
            "interp-one",
        ],
    );
}

#[test]
fn every_bad_input_is_explained() {
    let suites = fixtures().join("suites");
    let cases: &[(&str, &[&str])] = &[
        ("syntax", &["--config", "errors/syntax.yaml"]),
        (
            "missing_include",
            &["--config", "errors/missing_include.yaml"],
        ),
        ("include_cycle", &["--config", "errors/include_cycle.yaml"]),
        (
            "unknown_parent",
            &["--config", "errors/unknown_parent.yaml"],
        ),
        (
            "cyclic_inherits",
            &["--config", "errors/cyclic_inherits.yaml"],
        ),
        (
            "matrix_without_job",
            &["--config", "errors/matrix_without_job.yaml"],
        ),
        (
            "matrix_unknown_name",
            &["--config", "errors/matrix_unknown_name.yaml"],
        ),
        (
            "duplicate_matrix_name",
            &["--config", "errors/duplicate_matrix_name.yaml"],
        ),
        ("argv_false", &["--config", "errors/argv_false.yaml"]),
        ("argv_scalar", &["--config", "errors/argv_scalar.yaml"]),
        (
            "dict_then_list",
            &["--config", "errors/dict_then_list.yaml"],
        ),
        (
            "list_then_dict",
            &["--config", "errors/list_then_dict.yaml"],
        ),
        ("null_mapping", &["--config", "errors/null_mapping.yaml"]),
        (
            "scalar_toplevel",
            &["--config", "errors/scalar_toplevel.yaml"],
        ),
        (
            "missing_interpolation",
            &["--config", "errors/missing_interpolation.yaml"],
        ),
        (
            "dollar_literal",
            &["--config", "errors/dollar_literal.yaml"],
        ),
        (
            "unknown_placeholder",
            &["--config", "errors/unknown_placeholder.yaml"],
        ),
        (
            "bad_capability",
            &["--config", "errors/bad_capability.yaml"],
        ),
        ("missing_config_file", &["--config", "nowhere.yaml"]),
        (
            "bad_override",
            &["--config", "basic.yaml", "--override", "[1, 2]"],
        ),
        (
            "bad_override_yaml",
            &[
                "--config",
                "basic.yaml",
                "--override",
                "alpha.argv={--x: [}",
            ],
        ),
        (
            "missing_system_file",
            &["--config", "basic.yaml", "--system", "nowhere.yaml"],
        ),
        ("heavy_weight", &["--config", "errors/heavy_weight.yaml"]),
        (
            "negative_weight",
            &["--config", "errors/negative_weight.yaml"],
        ),
        ("nan_weight", &["--config", "errors/nan_weight.yaml"]),
        (
            "word_max_duration",
            &["--config", "errors/word_max_duration.yaml"],
        ),
        ("string_plan", &["--config", "errors/string_plan.yaml"]),
        ("maybe_enabled", &["--config", "errors/maybe_enabled.yaml"]),
        (
            "quoted_false_enabled",
            &["--config", "errors/quoted_false_enabled.yaml"],
        ),
        (
            "gpu_capacity_lots",
            &[
                "--config",
                "basic.yaml",
                "--system",
                "errors/capacity_lots_system.yaml",
            ],
        ),
        (
            "sizer_capacity_negative",
            &[
                "--config",
                "basic.yaml",
                "--system",
                "errors/sizer_capacity_system.yaml",
            ],
        ),
        (
            "select_unknown",
            &["--config", "basic.yaml", "--select", "alpha-smal"],
        ),
        (
            "select_one_unknown_among_several",
            &["--config", "basic.yaml", "--select", "alpha-small,nosuch"],
        ),
        ("select_empty", &["--config", "basic.yaml", "--select", ""]),
        (
            "exclude_unknown",
            &["--config", "basic.yaml", "--exclude", "gama-untagged"],
        ),
        (
            "override_unknown_bench",
            &["--config", "basic.yaml", "--override", "nosuch.x=1"],
        ),
        ("alias_bomb", &["--config", "errors/alias_bomb.yaml"]),
        ("huge_matrix", &["--config", "errors/huge_matrix.yaml"]),
        ("endless_file", &["--config", "/dev/zero"]),
    ];
    let mut report = String::new();
    for (name, args) in cases {
        let out = run(milabench(&suites).arg("resolve").args(*args));
        assert_eq!(
            out.code, 2,
            "{name}: expected exit code 2, got {} ({})",
            out.code, out.stderr
        );
        assert!(out.stdout.is_empty(), "{name}: printed on stdout");
        assert!(!out.stderr.contains("panicked"), "{name}: panicked");
        report.push_str(&format!("## {name}\n{}\n", redact(&out.stderr)));
    }
    insta::assert_snapshot!("resolve_errors", report);
}

#[test]
fn typos_that_resolve_are_warned_about() {
    snapshot_resolve(
        "resolve_typos",
        &fixtures().join("suites"),
        &["--config", "typos.yaml", "--format", "json"],
    );
}

#[test]
fn a_multirun_block_resolves_the_suite_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("system.yaml");
    std::fs::write(
        &system,
        "system:\n  arch: cpu\n  nodes:\n    - name: local\n      ip: 127.0.0.1\n      user: me\n      main: true\n\
         multirun:\n  runs:\n    - name: \"bs{sizer.mult}.{time}\"\n      matrix:\n        sizer.mult: [0.5, 2]\n",
    )
    .unwrap();
    let out = run(milabench(&fixtures().join("suites")).args([
        "resolve",
        "--config",
        "basic.yaml",
        "--system",
        system.to_str().unwrap(),
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("multirun"), "{}", out.stderr);
}

#[test]
fn a_sizer_capacity_from_the_environment_is_checked_naming_the_variable() {
    let out = run(milabench(&fixtures().join("suites"))
        .args(["resolve", "--config", "basic.yaml"])
        .env("MILABENCH_SIZER_CAPACITY", "lots"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("environment variable MILABENCH_SIZER_CAPACITY=\"lots\" is invalid: expected a memory size"),
        "{}",
        out.stderr
    );
}

/// A suite of `count` benchmarks, written to `dir/big.yaml`: its resolution is far over 64 KiB.
fn big_suite(dir: &Path, count: usize) {
    let mut text = String::new();
    for i in 0..count {
        text.push_str(&format!(
            "b{i}:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  definition: {}\n  argv: {{--batch-size: {}}}\n",
            dir.display(),
            i + 1
        ));
    }
    fs_err::write(dir.join("big.yaml"), text).expect("suite");
}

/// Output piped into `head -1` (issue 53, U12): a closed pipe ends the command quietly with exit
/// code 0, for `resolve` and for `run --dry-run` in both forms.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    big_suite(dir.path(), 1500);
    for args in [
        &["resolve", "--config", "big.yaml"][..],
        &["run", "--dry-run", "--config", "big.yaml"],
        &["run", "--dry-run=json", "--config", "big.yaml"],
    ] {
        let (first, out) = crate::common::first_line_then_close(milabench(dir.path()).args(args));
        assert!(!first.is_empty(), "{args:?}");
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("error"), "{args:?}: {}", out.stderr);
    }
}

/// Output into a pipe already closed (`| head` done before the command writes, issue 48): the
/// broken pipe ends `new` and `slurm system`, whose output is short, quietly with exit code 0.
#[test]
fn short_output_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut new = milabench(dir.path());
    new.args(["new", "piped"]);
    let mut system = milabench(dir.path());
    system
        .args(["slurm", "system"])
        .env("SLURM_JOB_ID", "77")
        .env("SLURM_JOB_NODELIST", "localhost")
        .env("SLURM_JOB_NUM_NODES", "1")
        .env("SLURMD_NODENAME", "localhost");
    for cmd in [&mut new, &mut system] {
        let out = crate::common::into_closed_pipe(cmd);
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("error"), "{args:?}: {}", out.stderr);
    }
}
