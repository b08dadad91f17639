//! `host_peak_memory` comes from the telemetry's host memory samples; `peak_memory` stays the
//! GPU figure (NaN without GPU samples, as the Python tool prints it).

use milabench_report::{ReportOptions, report_runs};

const MIB: f64 = 1024.0 * 1024.0;

fn run_folder(lines: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::new();
    text.push_str(r#"{"event": "config", "data": {"name": "cpubench", "group": "g", "tag": ["cpubench", "0"], "weight": 1, "enabled": true}, "pipe": null}"#);
    text.push('\n');
    text.push_str(
        r#"{"event": "start", "data": {"command": ["voir"], "time": 100.0}, "pipe": null}"#,
    );
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    for rate in [10.0, 11.0, 12.0] {
        text.push_str(&format!(r#"{{"event": "data", "data": {{"task": "train", "rate": {rate}, "units": "items/s"}}, "pipe": "data"}}"#));
        text.push('\n');
    }
    text.push_str(r#"{"event": "end", "data": {"command": ["voir"], "time": 110.0, "return_code": 0}, "pipe": null}"#);
    text.push('\n');
    std::fs::write(dir.path().join("cpubench.0.data"), text).expect("write");
    dir
}

/// `(peak_memory, host_peak_memory)` of the one row.
fn peaks(lines: &[String]) -> (f64, f64) {
    let dir = run_folder(lines);
    let path = dir.path().to_string_lossy().into_owned();
    let (report, _) = report_runs(&[path], None, &ReportOptions::default()).expect("report");
    (report.rows[0].peak_memory, report.rows[0].host_peak_memory)
}

fn host_peak(lines: &[String]) -> f64 {
    let (gpu, host) = peaks(lines);
    assert!(gpu.is_nan(), "no GPU sample, yet peak_memory {gpu}");
    host
}

fn process(rss_mib: f64) -> String {
    format!(
        r#"{{"event": "data", "data": {{"task": "main", "time": 101.0, "process": {{"pid": 7, "load": 50.0, "memory": [{}, 8589934592]}}}}, "pipe": "data"}}"#,
        rss_mib * MIB
    )
}

fn cpudata(used_mib: f64) -> String {
    format!(
        r#"{{"event": "data", "data": {{"task": "main", "time": 101.0, "cpudata": {{"memory": [{}, 8589934592], "load": 12.5}}}}, "pipe": "data"}}"#,
        used_mib * MIB
    )
}

#[test]
fn process_samples_fill_host_peak_memory_only() {
    assert!(host_peak(&[]).is_nan());
    assert_eq!(
        host_peak(&[process(300.0), process(512.0), process(400.0)]),
        512.0
    );
    // The process tree is preferred to the machine-wide figure.
    assert_eq!(host_peak(&[cpudata(4000.0), process(512.0)]), 512.0);
    assert_eq!(host_peak(&[cpudata(4000.0), cpudata(3000.0)]), 4000.0);
}

#[test]
fn gpu_and_host_figures_are_kept_apart() {
    let gpu = r#"{"event": "data", "data": {"task": "main", "time": 101.0, "gpudata": {"0": {"memory": [2048.0, 81920.0], "load": 0.9, "temperature": 50.0, "power": 300.0}}}, "pipe": "data"}"#;
    assert_eq!(peaks(&[gpu.to_owned(), process(512.0)]), (2048.0, 512.0));
}
