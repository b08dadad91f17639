//! Issue 53: verdicts that do not cry wolf. Two runs of one benchmark whose true rate is
//! fixed (an A/A pair) say "cannot tell" by default, a 10% change still says better or worse,
//! the threshold used is stated in text and JSON, and repeats that spread raise it.
//!
//! The benchmark is a tiny protocol-speaking Python script whose rates are a level read from
//! `levels.txt` (one per process started, in turn) with a ±0.05% jitter: the drift between two
//! runs is then chosen by the test rather than by the machine's load, so the verdicts are
//! deterministic.

use serde_json::Value;

use crate::common::run;
use crate::run::Project;

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 30
steady:
  inherits: _base
  definition: benchmarks/steady
";

/// 40 rates around the level of this process: the next of `levels.txt`, in turn.
const STEADY: &str = "\
import json, os, pathlib, random
here = pathlib.Path(__file__).parent
levels = [float(x) for x in (here / 'levels.txt').read_text().split()]
counter = here / 'started.txt'
started = len(counter.read_text().split()) if counter.exists() else 0
with counter.open('a') as f:
    f.write('x\\n')
level = levels[started % len(levels)]
rng = random.Random(started)
out = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)
for i in range(40):
    rate = level * (1 + 0.0005 * rng.uniform(-1, 1))
    out.write(json.dumps({'task': 'train', 'rate': rate, 'units': 'items/s'}) + '\\n')
";

/// Runs the suite as run `name` (with `args`), its processes at `levels` in turn.
fn run_at(project: &Project, name: &str, levels: &str, args: &[&str]) {
    let folder = project.path().join("benchmarks/steady");
    fs_err::write(folder.join("levels.txt"), levels).unwrap();
    let _ = fs_err::remove_file(folder.join("started.txt"));
    let out = run(&mut project.run_command(&[&["--run-name", name][..], args].concat()));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// `compare` of runs `a` and `b` (with `args`) as JSON, and its text.
fn compare(project: &Project, a: &str, b: &str, args: &[&str]) -> (Value, String) {
    let runs = project.path().join("base/runs");
    let compare = |format: &str| {
        let out = run(project
            .milabench()
            .arg("compare")
            .args([runs.join(a), runs.join(b)])
            .args(args)
            .args(["--format", format]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    (
        serde_json::from_str(&compare("json")).unwrap(),
        compare("text"),
    )
}

#[test]
fn an_a_a_pair_cannot_tell_and_a_real_change_still_can() {
    let project = Project::new(SUITE);
    project.bench("steady", STEADY);
    run_at(&project, "a", "1000", &[]);
    run_at(&project, "b", "1002", &[]);
    run_at(&project, "slow", "900", &[]);
    // The pair of the issue: +0.2% with an interval of a few hundredths of a percent, "better"
    // at a threshold of 0, which sees the noise within each run only.
    let (json, _) = compare(&project, "a", "b", &["--threshold", "0"]);
    let row = &json["rows"][0];
    assert_eq!(row["verdict"], "better", "{json:#}");
    assert!(
        (row["change_pct"].as_f64().unwrap() - 0.2).abs() < 0.05,
        "{json:#}"
    );
    assert_eq!(
        (&json["threshold_pct"], &json["threshold_from"]),
        (&Value::from(0.0), &Value::from("option"))
    );
    // By default the noise floor says "cannot tell", and both outputs say which threshold.
    let (json, text) = compare(&project, "a", "b", &[]);
    assert_eq!(json["rows"][0]["verdict"], "cannot_tell", "{json:#}");
    assert_eq!(json["threshold_from"], "default");
    assert_eq!(json["threshold_pct"], 5.0);
    assert_eq!(json["rows"][0]["threshold_pct"], 5.0);
    assert!(
        text.contains("Threshold: 5% (the default noise floor;"),
        "{text}"
    );
    // A 10% change is beyond it, both ways.
    let (json, _) = compare(&project, "a", "slow", &[]);
    assert_eq!(json["rows"][0]["verdict"], "worse", "{json:#}");
    let (json, _) = compare(&project, "slow", "a", &[]);
    assert_eq!(json["rows"][0]["verdict"], "better", "{json:#}");
}

#[test]
fn repeats_that_spread_raise_the_threshold_and_say_so() {
    let project = Project::new(SUITE);
    project.bench("steady", STEADY);
    // Three repeats each, 6% apart: a machine that drifts that much between runs.
    run_at(&project, "x", "1000 1060 940", &["--repeat", "3"]);
    run_at(&project, "y", "1060 940 1000", &["--repeat", "3"]);
    let (json, text) = compare(&project, "x", "y", &[]);
    let row = &json["rows"][0];
    assert_eq!(row["verdict"], "cannot_tell", "{json:#}");
    assert_eq!(row["threshold_from"], "repeats", "{json:#}");
    // t(0.975, 4 degrees of freedom) x 6% x sqrt(1/3 + 1/3), in percent.
    let floor = row["threshold_pct"].as_f64().unwrap();
    assert!(
        (floor - 2.776 * 6.0 * (2.0_f64 / 3.0).sqrt()).abs() < 0.1,
        "{floor}"
    );
    let line = text.lines().find(|l| l.starts_with("steady")).unwrap();
    assert!(
        line.ends_with(&format!(
            "cannot tell (threshold {floor:.1}%, measured from the repeats)"
        )),
        "{text}"
    );
    // Given, --threshold is the threshold, repeats or not.
    let (json, _) = compare(&project, "x", "y", &["--threshold", "1%"]);
    assert_eq!(json["rows"][0]["threshold_from"], "option");
    // Repeats that agree do not lower the default.
    run_at(&project, "p", "1000", &["--repeat", "2"]);
    run_at(&project, "q", "1002", &["--repeat", "2"]);
    let (json, _) = compare(&project, "p", "q", &[]);
    let row = &json["rows"][0];
    assert_eq!(
        (
            &row["verdict"],
            &row["threshold_from"],
            &row["threshold_pct"]
        ),
        (
            &Value::from("cannot_tell"),
            &Value::from("default"),
            &Value::from(5.0)
        ),
        "{json:#}"
    );
}
