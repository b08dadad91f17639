//! `report --format html` and `compare --format html`: the page's structure (snapshots, plots
//! and inline style reduced), its table against `report --format json`, and the size of the
//! page for a large run.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fixtures, milabench, run};

fn root() -> PathBuf {
    fixtures().join("milabench")
}

const RIJUBIGO: &str = "runs/tests-runs/rijubigo.2023-03-24_13:45:27.512446";
const SEDUMOJE: &str = "runs/tests-runs/sedumoje.2023-03-24_13:57:35.089747";

/// The page with the volatile and bulky parts reduced: each plot's drawing becomes `<svg/>`,
/// the inline style and script `[css]` and `[js]`.
fn structure(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    for (open, close, mark) in [
        ("<style>", "</style>", "<style>[css]</style>"),
        ("<script>", "</script>", "<script>[js]</script>"),
    ] {
        if let (Some(a), Some(b)) = (rest.find(open), rest.find(close)) {
            out.push_str(&rest[..a]);
            out.push_str(mark);
            rest = &rest[b + close.len()..];
        }
    }
    out.push_str(rest);
    let mut reduced = String::new();
    let mut rest = out.as_str();
    while let Some(a) = rest.find("<svg") {
        reduced.push_str(&rest[..a]);
        reduced.push_str("<svg/>");
        let b = rest[a..].find("</svg>").map_or(rest.len(), |b| a + b + 6);
        rest = &rest[b..];
    }
    reduced.push_str(rest);
    reduced
}

/// `report` in `format` of `runs` (relative to the fixtures, or absolute), its stdout.
fn report(runs: &str, format: &str, extra: &[&str]) -> String {
    let out = run(milabench(&root())
        .args(["report", "--runs", runs, "--format", format])
        .args(extra));
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    out.stdout
}

#[test]
fn html_report_structure_of_the_fixture_runs() {
    for (name, runs) in [
        ("rijubigo", RIJUBIGO),
        ("sedumoje", SEDUMOJE),
        ("tests-runs", "runs/tests-runs"),
    ] {
        let html = report(runs, "html", &["--config", "config/benchio.yaml"]);
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
        for external in [" src=", "href=\"http", "@import", "url("] {
            assert!(!html.contains(external), "{name}: {external}");
        }
        insta::assert_snapshot!(format!("html_{name}"), structure(&html));
    }
}

#[test]
fn html_table_holds_the_json_report_numbers() {
    for runs in [RIJUBIGO, SEDUMOJE, "runs/tests-runs"] {
        let config = ["--config", "config/benchio.yaml"];
        let json: Value = serde_json::from_str(&report(runs, "json", &config)).unwrap();
        let html = report(runs, "html", &config);
        assert_eq!(
            xtask::browser::report_problems(&html, &json),
            Vec::<String>::new(),
            "{runs}"
        );
        // Not vacuous: every benchmark's perf is among the page's numbers.
        let numbers = xtask::browser::table_numbers(&html, "results");
        assert!(
            numbers
                .iter()
                .any(|(_, col, v)| col == "perf" && *v == json["benchmarks"][0]["perf"].as_f64())
        );
    }
}

fn write_large_run(dir: &Path) -> PathBuf {
    let folder = dir.join("large");
    // 25 benchmarks × 6 GPUs, 10 minutes each: 150 files of 600 rates and 1200 samples.
    xtask::browser::write_synthetic_run(&folder, 25, 6, 600).unwrap();
    folder
}

#[test]
fn a_150_file_run_gives_a_page_under_2_mb_with_every_plot() {
    let dir = tempfile::tempdir().unwrap();
    let folder = write_large_run(dir.path());
    let runs = folder.to_str().unwrap();
    assert_eq!(fs_err::read_dir(&folder).unwrap().count(), 150);
    let json: Value = serde_json::from_str(&report(runs, "json", &[])).unwrap();
    let html = report(runs, "html", &[]);
    assert!(html.len() < 2 * 1024 * 1024, "{} bytes", html.len());
    assert_eq!(
        xtask::browser::report_problems(&html, &json),
        Vec::<String>::new()
    );
    // Rate, GPU load, memory and power for each of the 25 benchmarks.
    assert_eq!(html.matches("<svg").count(), 25 * 4);
    for fact in [
        "NVIDIA A100-SXM4-80GB × 6",
        "DRIVER_VERSION 535.104.05",
        "2.3.1+cu121",
        "AMD EPYC 7742 64-Core Processor × 64",
        "2023-11-14 22:13:20 UTC",
        "bench24.D0 failed",
        "exit code: 1",
        "RuntimeError: CUDA out of memory",
        "Stopped early on purpose",
        "is cut into 60 runs of consecutive points",
    ] {
        assert!(html.contains(fact), "{fact}");
    }
    assert!(html.contains("<tr data-row=\"bench24\" class=\"failed\">"));
}

#[test]
fn compare_html_shows_the_verdicts_of_compare() {
    let compare = |format: &str| {
        let out = run(milabench(&root()).args(["compare", RIJUBIGO, SEDUMOJE, "--format", format]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let json: Value = serde_json::from_str(&compare("json")).unwrap();
    let html = compare("html");
    for row in json["rows"].as_array().unwrap() {
        let mut verdict = row["verdict"].as_str().unwrap().replace('_', " ");
        // Both runs have two repeats: the threshold they measure is said beside the verdict.
        assert_eq!(row["threshold_from"], "repeats");
        let threshold = row["threshold_pct"].as_f64().unwrap();
        verdict.push_str(&format!(
            " (threshold {threshold:.1}%, measured from the repeats)"
        ));
        let cell = format!("<td data-col=\"verdict\">{verdict}</td>");
        assert!(html.contains(&cell), "{cell}");
        let change = xtask::browser::table_numbers(&html, "changes-1");
        assert!(
            change
                .iter()
                .any(|(_, col, v)| col == "change_pct" && *v == row["change_pct"].as_f64())
        );
    }
    insta::assert_snapshot!("html_compare", structure(&html));
}

#[test]
fn the_headline_names_the_driver_without_empty_entries() {
    // The `meta` of a real L40S run of the Python tool: its `HIC_VERSION` is an empty list.
    let dir = tempfile::tempdir().unwrap();
    let src = root().join(RIJUBIGO).join("benchio.0.R0.data");
    let meta = serde_json::json!({"event": "meta", "pipe": null, "data": {
        "accelerators": {"system": {"CUDA_DRIVER": 12060, "DRIVER_VERSION": "560.35.03",
                                    "HIC_VERSION": []}}}});
    let text: String = std::fs::read_to_string(src)
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("{\"event\": \"meta\"") {
                format!("{meta}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(dir.path().join("benchio.0.R0.data"), text).unwrap();
    let page = report(&dir.path().display().to_string(), "html", &[]);
    assert!(
        page.contains("CUDA_DRIVER 12060, DRIVER_VERSION 560.35.03<"),
        "{}",
        &page[page.find("Driver").unwrap_or(0)..][..200.min(page.len())]
    );
    assert!(!page.contains("HIC_VERSION"));
}

/// Issue 39: the page of a run of serving benchmarks has the serving table with the JSON and
/// text reports' numbers, each benchmark's TTFT and TPOT distributions, and for the sweep its
/// throughput against the offered rate with the break marked and a table of its steps.
#[test]
fn html_serving_panel_holds_the_reports_numbers_and_plots() {
    let runs = fixtures().join("serving/mock-run");
    let runs = runs.to_str().unwrap();
    let json: Value = serde_json::from_str(&report(runs, "json", &[])).unwrap();
    let text = report(runs, "text", &[]);
    let html = report(runs, "html", &[]);
    assert_eq!(
        xtask::browser::report_problems(&html, &json),
        Vec::<String>::new()
    );
    assert_eq!(
        xtask::browser::serving_problems(&html, &json, &text),
        Vec::<String>::new()
    );
    for caption in [
        "llm-server: time to first token from the scheduled send distribution",
        "llm-server: time per output token distribution",
        "llm-sweep: requests/s against the offered rate",
        "llm-sweep: output tokens/s against the offered rate",
        "llm-sweep: the steps of the sweep",
    ] {
        assert!(html.contains(caption), "{caption}");
    }
    // The server run's rate, two distributions; the sweep's rate, two distributions (a line per
    // step) and two plots against the offered rate, where the SLO broke marked.
    assert_eq!(html.matches("<svg").count(), 3 + 5);
    assert!(html.contains("SLO broken"));
    insta::assert_snapshot!("html_serving", structure(&html).replace(runs, "[RUNS]"));
}

/// Issue 53, K8: on the page of a CPU run, the process tree's samples and the machine's (taken
/// at the same instants) are two named series of the CPU load and memory plots.
#[test]
fn a_cpu_runs_load_and_memory_plots_name_the_process_tree_and_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![
        r#"{"event": "config", "data": {"name": "sized", "tag": ["sized", "D0"]}, "pipe": null}"#
            .to_owned(),
        r#"{"event": "start", "data": {"command": ["x"], "time": 100.0}, "pipe": null}"#.to_owned(),
    ];
    for (i, at) in [101.0, 104.0, 107.0].into_iter().enumerate() {
        lines.push(format!(
            r#"{{"event": "data", "data": {{"task": "train", "rate": {}, "time": {at}}}, "pipe": "data"}}"#,
            100 + i
        ));
        lines.push(format!(
            r#"{{"event": "data", "data": {{"task": "main", "time": {at}, "cpudata": {{"memory": [2097152000, 4194304000], "load": 90.0}}}}, "pipe": null}}"#
        ));
        lines.push(format!(
            r#"{{"event": "data", "data": {{"task": "main", "time": {at}, "process": {{"load": 5.0, "memory": [10485760, 4194304000]}}}}, "pipe": null}}"#
        ));
    }
    lines.push(
        r#"{"event": "end", "data": {"return_code": 0, "time": 108.0}, "pipe": null}"#.to_owned(),
    );
    fs_err::write(dir.path().join("sized.D0.data"), lines.join("\n") + "\n").unwrap();
    let html = report(dir.path().to_str().unwrap(), "html", &[]);
    for plot in ["CPU load", "memory"] {
        let caption = format!("<figcaption>sized: {plot} (no timed GPU readings)");
        let caption_at = html
            .find(&caption)
            .unwrap_or_else(|| panic!("{plot}: {html}"));
        let at = html[..caption_at].rfind("<figure").unwrap();
        let figure = &html[at..caption_at];
        for series in ["sized.D0: process tree", "sized.D0: machine"] {
            assert!(
                figure.contains(series),
                "{plot}: no series {series}: {figure}"
            );
        }
    }
}
