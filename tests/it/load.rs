//! `milabench load` against the load generator's mock server on loopback.

use std::time::Duration;

use milabench_load::mock::{Fault, MockConfig, MockServer};
use serde_json::Value;

use crate::common::{milabench, run};

fn quick_server(fault: Option<Fault>) -> MockServer {
    MockServer::start(MockConfig {
        ttft: Duration::from_millis(5),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        fault,
        ..MockConfig::default()
    })
    .unwrap()
}

#[test]
fn load_reports_json_and_writes_a_run_folder_that_report_reads() {
    let server = quick_server(None);
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs/one");
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "server",
        "--rate",
        "40",
        "--duration",
        "1s",
        "--slo",
        "ttft=500ms,tpot=50ms",
        "--format",
        "json",
        "--run-dir",
        runs.to_str().unwrap(),
        "--name",
        "llm-mock",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let summary = &json["steps"][0]["summary"];
    assert!(summary["requests"].as_u64().unwrap() > 10);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["slo_attainment"], 1.0);
    let ttft = summary["ttft"]["p50"]["value"].as_f64().unwrap();
    assert!((ttft - 0.005).abs() < 0.003, "{ttft}");
    assert!(json["failure"].is_null());
    // The run folder reads as any benchmark's: its perf is the output-token throughput.
    let report = run(milabench(dir.path()).args([
        "report",
        "--runs",
        runs.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let rows: Value = serde_json::from_str(&report.stdout).unwrap();
    let text = rows.to_string();
    assert!(text.contains("llm-mock"), "{text}");
}

#[test]
fn load_counts_http_errors_and_exits_1() {
    let server = quick_server(Some(Fault::Status {
        code: 429,
        every: 2,
    }));
    let dir = tempfile::tempdir().unwrap();
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "offline",
        "--requests",
        "6",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("6 sent, 3 succeeded, 3 failed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("errors: 3 http (first: HTTP 429"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("FAILED: 3 of 6 requests failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn load_names_an_endpoint_that_refuses() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let out = run(milabench(dir.path()).args(["load", "--endpoint", &url, "--model", "m"]));
    // A server that is not there is an environment failure, not bad input: exit 3.
    assert_eq!(out.code, 3);
    insta::assert_snapshot!(out.stderr.replace(&port.to_string(), "[PORT]"), @r"
    error: cannot connect to http://127.0.0.1:[PORT]: is the server running and listening there?
      caused by: Connection refused (os error 111)
    ");
}

#[test]
fn load_rejects_bad_flags_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        run(milabench(dir.path()).args(["load", "--endpoint", "localhost:8000", "--model", "m"]));
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid endpoint `localhost:8000`: write it as http://HOST:PORT");
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--slo",
        "ttfb=1s",
    ]));
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid --slo: `ttfb` is not a bound of the SLO: use ttft, tpot or e2e");
}
