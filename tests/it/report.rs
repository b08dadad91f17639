//! `milabench report`, `summary`, `compare` and `replay` on the Python tool's run folders and
//! replays, and on bad input.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{fixtures, milabench, redact, run};

fn root() -> PathBuf {
    fixtures().join("milabench")
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(root().join("expected").join(name)).unwrap()
}

const RIJUBIGO: &str = "runs/tests-runs/rijubigo.2023-03-24_13:45:27.512446";
const SEDUMOJE: &str = "runs/tests-runs/sedumoje.2023-03-24_13:57:35.089747";

#[test]
fn text_report_is_byte_for_byte_the_python_one() {
    for (runs, golden) in [
        (RIJUBIGO, "report-rijubigo.txt"),
        (SEDUMOJE, "report-sedumoje.txt"),
        ("runs/tests-runs", "report-tests-runs.txt"),
    ] {
        let out = run(milabench(&root()).args([
            "report",
            "--runs",
            runs,
            "--config",
            "config/benchio.yaml",
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.stdout, expected(golden), "{runs}");
    }
}

#[test]
fn report_without_config_takes_weights_from_the_data() {
    let out = run(milabench(&root()).args(["report", "--runs", RIJUBIGO, "--price", "1000"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn formats_carry_the_text_numbers() {
    let json = run(milabench(&root()).args([
        "report",
        "--runs",
        "runs/tests-runs",
        "--config",
        "config/benchio.yaml",
        "--format",
        "json",
    ]));
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        format!("{:.2}", v["benchmarks"][0]["perf"].as_f64().unwrap()),
        "7878.45"
    );
    assert_eq!(format!("{:.2}", v["score"].as_f64().unwrap()), "7879.45");
    insta::assert_snapshot!("report_json", json.stdout);
    for format in ["csv", "md"] {
        let out = run(milabench(&root()).args([
            "report",
            "--runs",
            "runs/tests-runs",
            "--config",
            "config/benchio.yaml",
            "--format",
            format,
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        insta::assert_snapshot!(format!("report_{format}"), out.stdout);
    }
}

#[test]
fn summary_json_has_the_python_fields() {
    let out = run(milabench(&root()).args(["summary", "--runs", SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours: Value = serde_json::from_str(&out.stdout).unwrap();
    let want: Value =
        serde_json::from_str(&expected("summary-sedumoje.json").replace("NaN", "null")).unwrap();
    let keys = |v: &Value| {
        v["benchio"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&ours), keys(&want));
    assert_eq!(ours["benchio"]["gpu_load"], want["benchio"]["gpu_load"]);
    assert!(!out.stdout.contains("NaN"));
}

#[test]
fn replay_prints_the_validation_report() {
    let out = run(milabench(&root()).args(["replay", SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, expected("validation/replay-sedumoje.txt"));
    let out = run(milabench(&root()).args(["replay", "replays/loss.txt", "--validations", "loss"]));
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("* 1 x benchio.0 Loss was NaN (R0)"),
        "{}",
        out.stdout
    );
}

#[test]
fn compare_judges_changes_against_noise() {
    let out = run(milabench(&root()).args(["compare", RIJUBIGO, SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stdout);
    let out = run(milabench(&root()).args([
        "compare",
        RIJUBIGO,
        SEDUMOJE,
        "--format",
        "json",
        "--fail-above",
        "0",
    ]));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let slower = v["rows"][0]["verdict"] == "slower";
    assert_eq!(out.code, if slower { 1 } else { 0 });
}

fn bad(args: &[&str], cwd: &std::path::Path) -> (i32, String) {
    let out = run(milabench(cwd).args(args));
    (
        out.code,
        redact(&out.stderr).replace(&cwd.display().to_string(), "[TMP]"),
    )
}

#[test]
fn bad_input_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    std::fs::create_dir_all(tmp.join("empty-run")).unwrap();
    std::fs::create_dir_all(tmp.join("junk-run")).unwrap();
    std::fs::write(tmp.join("junk-run/a.data"), "not json\n\u{0}\n").unwrap();
    std::fs::write(tmp.join("junk-run/b.data"), "").unwrap();
    // A good run with damage: a bad line, non-UTF-8 bytes, a truncated last line.
    std::fs::create_dir_all(tmp.join("damaged")).unwrap();
    let good = std::fs::read(root().join(RIJUBIGO).join("benchio.0.R0.data")).unwrap();
    let mut damaged = b"garbage line\n".to_vec();
    damaged.extend(&good);
    damaged.extend(
        b"{\"event\": \"line\", \"data\": \"\xff\\n\", \"pipe\": \"stderr\"}\n{\"event\": \"da",
    );
    std::fs::write(tmp.join("damaged/benchio.0.R0.data"), damaged).unwrap();

    let (code, err) = bad(&["report", "--runs", "missing-folder"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_folder", err);
    let (code, err) = bad(&["report", "--runs", "empty-run"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("no_data_files", err);
    let (code, err) = bad(&["summary", "--runs", "junk-run"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("no_runs", err);
    let out = run(milabench(tmp).args(["report", "--runs", "damaged"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("benchio |    0 |   1 |"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!(
        "damaged_warnings",
        out.stderr.replace(&tmp.display().to_string(), "[TMP]")
    );
    let (code, err) = bad(&["replay", "nope.data"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_missing", err);
    let (code, err) = bad(&["replay", "junk-run/b.data"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_no_config", err);
}
