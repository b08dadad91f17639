//! The serving table: made-up `load` events with known percentiles give known cells in every
//! format. (That the events `milabench load` writes read back with its own numbers is a CLI
//! test: `tests/it/report.rs`.)

use milabench_report::{Format, ReportOptions, render, report_runs};
use serde_json::{Value, json};

/// A latency summary whose every statistic is `p50` but the tail ones, `p99`.
fn latency(p50: f64, p99: f64) -> Value {
    let at = |v: f64| json!({"value": v, "low": v * 0.9, "high": v * 1.1});
    json!({"count": 100, "mean": at(p50), "p50": at(p50), "p90": at(p99), "p95": at(p99), "p99": at(p99)})
}

/// The `load` event of a step at `rate` (a sweep's step when `sweep`).
fn load_event(step: usize, rate: f64, held: bool, slo: bool, sweep: bool) -> Value {
    let at = |v: f64| json!({"value": v, "low": v * 0.9, "high": v * 1.1});
    json!({"event": "data", "pipe": "data", "data": {
        "task": "load", "time": 1000.0 + step as f64, "step": step,
        "scenario": {"kind": "server", "rate": rate}, "sweep": sweep, "held": held,
        "requests": 200, "succeeded": 199, "failed": 1, "errors": {},
        "duration": 10.0,
        "request_throughput": at(rate * 0.995), "output_throughput": at(rate * 0.995 * 16.0),
        "goodput": if slo { at(rate * 0.9) } else { Value::Null },
        "slo_attainment": if slo { json!(0.9) } else { Value::Null },
        "ttft": latency(0.0201 * (step + 1) as f64, 0.04567),
        "tpot": latency(0.005, 0.00751),
        "tpot_with_first": latency(0.00625, 0.0093),
        "itl": latency(0.005, 0.008),
        "e2e": latency(0.1, 0.23456),
        "input_tokens": 6400, "output_tokens": 3184,
    }})
}

/// A request event of `step`: its ttft and tpot, or a failure.
fn request_event(step: usize, ttft: Option<f64>) -> Value {
    let mut data = json!({"task": "request", "step": step, "index": 0, "ttft": ttft,
        "tpot": ttft.map(|t| t / 4.0), "latency": 0.1, "output_tokens": 16, "status": 200});
    if ttft.is_none() {
        data["error"] = json!({"kind": "http", "text": "HTTP 500"});
        data["status"] = json!(500);
    }
    json!({"event": "data", "pipe": "data", "data": data})
}

/// A run folder holding `bench.data`: config, start, three train rates, `events`, end.
fn run_folder(bench: &str, events: &[Value]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lines = vec![
        json!({"event": "config", "data": {"name": bench, "tag": [bench], "weight": 1, "enabled": true}, "pipe": null}),
        json!({"event": "start", "data": {"command": ["milabench", "load"], "time": 990.0}, "pipe": null}),
    ];
    for rate in [310.0, 320.0, 330.0] {
        lines.push(json!({"event": "data", "data": {"task": "train", "rate": rate, "units": "tokens/s"}, "pipe": "data"}));
    }
    lines.extend(events.iter().cloned());
    lines.push(json!({"event": "end", "data": {"return_code": 0, "time": 1010.0}, "pipe": null}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join(format!("{bench}.data")), text).expect("write");
    dir
}

fn report(dir: &tempfile::TempDir, format: Format) -> String {
    let path = dir.path().to_string_lossy().into_owned();
    let (report, _) = report_runs(&[path], None, &ReportOptions::default()).expect("report");
    render(&report, format)
}

/// The lines of the text report's section `title`, its underline left out, to its end.
fn section(text: &str, title: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_server_run_gives_its_percentiles_in_every_format() {
    let dir = run_folder(
        "llm",
        &[
            request_event(0, Some(0.02)),
            request_event(0, None),
            load_event(0, 20.0, true, true, false),
        ],
    );
    let text = report(&dir, Format::Text);
    // After the Python tool's layout, before the intervals.
    let serving = text.find("\nServing\n").expect("a serving section");
    assert!(serving > text.find("\nScores\n").unwrap());
    assert!(serving < text.find("95% intervals").unwrap());
    assert_eq!(
        section(&text, "Serving"),
        [
            "bench |        scenario |  ok | failed | ttft_p50 | ttft_p99 | tpot_p50 | tpot_p99 | tpot_all_p50 | e2e_p99 | req/s | tokens/s | goodput |  slo",
            "llm   | server 20 req/s | 199 |      1 |    20.10 |    45.67 |     5.00 |     7.51 |         6.25 |  234.56 | 19.90 |   318.40 |   18.00 | held",
        ]
    );
    let json: Value = serde_json::from_str(&report(&dir, Format::Json)).unwrap();
    assert_eq!(
        json["serving"],
        json!([{
            "name": "llm", "bench": "llm", "scenario": "server 20 req/s",
            "ok": 199.0, "failed": 1.0,
            "ttft_p50_ms": 0.0201 * 1e3, "ttft_p99_ms": 0.04567 * 1e3,
            "tpot_p50_ms": 0.005 * 1e3, "tpot_p99_ms": 0.00751 * 1e3,
            "tpot_with_first_p50_ms": 0.00625 * 1e3,
            "e2e_p99_ms": 0.23456 * 1e3,
            "request_throughput": 20.0 * 0.995, "output_throughput": 20.0 * 0.995 * 16.0,
            "goodput": 20.0 * 0.9, "slo_attainment": 0.9, "slo": "held",
            "steps": [{"scenario": "server 20 req/s", "rate": 20.0, "held": true,
                "request_throughput": 20.0 * 0.995, "output_throughput": 20.0 * 0.995 * 16.0,
                "goodput": 20.0 * 0.9, "slo": "held"}],
        }])
    );
    // The JSON says what its serving numbers mean (issue 52, item 2).
    let definitions = &json["serving_definitions"];
    for (key, words) in [
        ("ttft_p50_ms", "of any kind"),
        ("ttft_p50_ms", "scheduled send time"),
        ("tpot_p50_ms", "without the first"),
        ("tpot_with_first_p50_ms", "with the first"),
        ("output_tokens", "usage"),
    ] {
        let text = definitions[key].as_str().unwrap_or_default();
        assert!(text.contains(words), "{key}: {words} in {text:?}");
    }
    let md = report(&dir, Format::Markdown);
    assert!(md.contains(
        "\n## Serving\n\n| bench | scenario | ok | failed | ttft_p50 | ttft_p99 | tpot_p50 | tpot_p99 | tpot_all_p50 | e2e_p99 | req/s | tokens/s | goodput | slo |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n| llm | server 20 req/s | 199 | 1 | 20.10 | 45.67 | 5.00 | 7.51 | 6.25 | 234.56 | 19.90 | 318.40 | 18.00 | held |\n"
    ), "{md}");
    // The main table keeps its row: the perf of a serving benchmark is its output tokens/s.
    assert!(md.contains("| llm | 0 | 1 |"), "{md}");
}

#[test]
fn a_sweep_shows_its_highest_rate_that_held_and_a_run_without_slo_no_verdict() {
    let sweep = run_folder(
        "llm-sweep",
        &[
            load_event(0, 10.0, true, true, true),
            load_event(1, 20.0, true, true, true),
            load_event(2, 40.0, false, true, true),
        ],
    );
    let rows = section(&report(&sweep, Format::Text), "Serving");
    assert!(
        rows[1].starts_with("llm-sweep | sweep: highest held 20 req/s | 199 |      1 |    40.20 |"),
        "{rows:?}"
    );
    assert!(rows[1].ends_with("|   18.00 | held"), "{rows:?}");
    let json: Value = serde_json::from_str(&report(&sweep, Format::Json)).unwrap();
    let steps: Vec<(f64, bool)> = json["serving"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["rate"].as_f64().unwrap(), s["held"].as_bool().unwrap()))
        .collect();
    assert_eq!(steps, [(10.0, true), (20.0, true), (40.0, false)]);
    let broken = run_folder("llm", &[load_event(0, 10.0, false, true, true)]);
    let rows = section(&report(&broken, Format::Text), "Serving");
    assert!(
        rows[1].contains("| sweep: none held from 10 req/s |"),
        "{rows:?}"
    );
    assert!(rows[1].ends_with("| NOT held"), "{rows:?}");
    let no_slo = run_folder("llm", &[load_event(0, 10.0, true, false, false)]);
    let rows = section(&report(&no_slo, Format::Text), "Serving");
    assert!(rows[1].ends_with("|       - |   -"), "{rows:?}");
    let json: Value = serde_json::from_str(&report(&no_slo, Format::Json)).unwrap();
    assert_eq!(json["serving"][0]["goodput"], Value::Null);
    assert_eq!(json["serving"][0]["slo"], Value::Null);
}

#[test]
fn a_run_without_serving_benchmarks_has_no_serving_table() {
    let dir = run_folder("train", &[]);
    assert!(!report(&dir, Format::Text).contains("Serving"));
    assert!(!report(&dir, Format::Markdown).contains("Serving"));
    let json: Value = serde_json::from_str(&report(&dir, Format::Json)).unwrap();
    assert!(json.get("serving").is_none());
}
