//! The fixture run folders give exactly the Python tool's report text (followed by our
//! intervals) and summary.

use std::path::PathBuf;

use milabench_report::{
    Format, ReportOptions, SuiteEntry, load_runs, render, report_runs, summarize, summary_json,
};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/milabench")
}

const CASES: [(&str, &str); 3] = [
    (
        "runs/tests-runs/rijubigo.2023-03-24_13:45:27.512446",
        "rijubigo",
    ),
    (
        "runs/tests-runs/sedumoje.2023-03-24_13:57:35.089747",
        "sedumoje",
    ),
    ("runs/tests-runs", "tests-runs"),
];

fn benchio_suite() -> Vec<SuiteEntry> {
    vec![SuiteEntry {
        name: "benchio".into(),
        weight: Some(2.0),
        enabled: Some(true),
        group: Some("benchio".into()),
    }]
}

#[test]
fn text_reports_match_the_python_tool() {
    for (source, name) in CASES {
        let path = fixtures().join(source).to_string_lossy().into_owned();
        let (mut report, _) =
            report_runs(&[path], Some(&benchio_suite()), &ReportOptions::default()).unwrap();
        report.sources = vec![source.to_owned()];
        let want = std::fs::read_to_string(fixtures().join(format!("expected/report-{name}.txt")))
            .unwrap();
        let text = render(&report, Format::Text);
        // The Python tool's report, byte for byte, then our section.
        let (python, ours) = text.split_at(want.len().min(text.len()));
        assert_eq!(python, want, "{name}");
        assert!(
            ours.starts_with("\n95% intervals (batch means)"),
            "{name}: {ours}"
        );
    }
}

/// Equal as JSON, where the Python tool's NaN is our `null`.
fn same(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<_> = x.keys().collect();
            let ky: Vec<_> = y.keys().collect();
            assert_eq!(kx, ky, "keys at {path}");
            for (k, v) in x {
                same(v, &y[k], &format!("{path}.{k}"));
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * y.abs().max(1.0),
                "{path}: {x} != {y}"
            );
        }
        (Value::Null, Value::String(s)) if s == "NaN" => {}
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn summaries_match_the_python_tool() {
    for (source, name) in CASES {
        let set = load_runs(&[fixtures().join(source).to_string_lossy().into_owned()]).unwrap();
        let ours: Value = serde_json::from_str(&summary_json(&summarize(&set).unwrap())).unwrap();
        let text =
            std::fs::read_to_string(fixtures().join(format!("expected/summary-{name}.json")))
                .unwrap()
                .replace("NaN", "\"NaN\"");
        let mut want: Value = serde_json::from_str(&text).unwrap();
        if name == "tests-runs" {
            // `meta` is the last file's; the Python tool visited the folders in file-system
            // order (a rijubigo file without meta came last), we visit them in name order
            // (a sedumoje file, with an empty meta, comes last).
            assert_eq!(want["benchio"]["meta"], Value::Null);
            want["benchio"]["meta"] = serde_json::json!({});
        }
        same(&ours, &want, name);
    }
}

#[test]
fn formats_carry_the_same_numbers() {
    let path = fixtures().join(CASES[2].0).to_string_lossy().into_owned();
    let (report, _) =
        report_runs(&[path], Some(&benchio_suite()), &ReportOptions::default()).unwrap();
    let json: Value = serde_json::from_str(&render(&report, Format::Json)).unwrap();
    let bench = &json["benchmarks"][0];
    assert_eq!(bench["perf"].as_f64().unwrap(), report.rows[0].perf);
    assert_eq!(json["score"].as_f64().unwrap(), report.score);
    let low = bench["perf_ci95"]["low"].as_f64().unwrap();
    let high = bench["perf_ci95"]["high"].as_f64().unwrap();
    assert!(low < report.rows[0].perf && report.rows[0].perf < high);
    let csv = render(&report, Format::Csv);
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row[4].parse::<f64>().unwrap(), report.rows[0].perf);
    assert_eq!(row[5].parse::<f64>().unwrap(), low);
    let md = render(&report, Format::Markdown);
    assert!(md.contains("| benchio | 0 | 6 | 0 | 7878.45 |"), "{md}");
    // Batch means: the same data gives the same interval.
    let path = fixtures().join(CASES[2].0).to_string_lossy().into_owned();
    let (again, _) =
        report_runs(&[path], Some(&benchio_suite()), &ReportOptions::default()).unwrap();
    assert_eq!(again.rows[0].perf_ci, report.rows[0].perf_ci);
    assert_eq!(again.score_ci, report.score_ci);
}
