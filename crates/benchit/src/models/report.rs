//! `benchit cache report`: one row per build and runtime (a build without measurements gets one
//! row), with the error message of whatever failed, as CSV and JSON.

use serde::Serialize;

use super::cache::BuildEntry;
use super::state::BuildStats;

/// One row of the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReportRow {
    /// The build name.
    pub build_name: String,
    /// The script or ONNX file.
    pub script: String,
    /// Label `name`.
    pub model_name: String,
    /// Label `author`.
    pub author: String,
    /// Label `task`.
    pub task: String,
    /// The model class.
    pub model_class: String,
    /// The 8-hex model hash.
    pub model_hash: String,
    /// The invocation hash.
    pub invocation_hash: String,
    /// Parameter count.
    pub parameters: Option<u64>,
    /// `x86` or `nvidia`.
    pub device: String,
    /// The runtime (empty for a build without measurements).
    pub runtime: String,
    /// The runtime's version.
    pub runtime_version: String,
    /// `ok`, `error` or `not measured`.
    pub status: String,
    /// Mean latency, ms.
    pub mean_ms: Option<f64>,
    /// Median latency, ms.
    pub median_ms: Option<f64>,
    /// 90th percentile, ms.
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Standard deviation, ms.
    pub std_ms: Option<f64>,
    /// Fastest call, ms.
    pub min_ms: Option<f64>,
    /// Slowest call, ms.
    pub max_ms: Option<f64>,
    /// 95% confidence interval of the mean, low, ms.
    pub ci95_low_ms: Option<f64>,
    /// 95% confidence interval of the mean, high, ms.
    pub ci95_high_ms: Option<f64>,
    /// Samples per second.
    pub throughput: Option<f64>,
    /// torch.compile time, seconds.
    pub compile_seconds: Option<f64>,
    /// The build status of `state.yaml`.
    pub build_status: String,
    /// The export (or received file) exists.
    pub onnx_exported: bool,
    /// The optimised model exists.
    pub onnx_optimized: bool,
    /// The fp16 model exists.
    pub onnx_converted: bool,
    /// What failed, with its message.
    pub error: String,
}

/// The report rows of `builds`.
pub fn rows(builds: &[BuildEntry]) -> Vec<ReportRow> {
    let mut rows = Vec::new();
    for build in builds {
        let stats = build.stats.as_ref().ok().and_then(Option::as_ref);
        let label = |key: &str| {
            stats
                .and_then(|s| s.labels.get(key))
                .and_then(|v| v.first())
                .cloned()
                .unwrap_or_default()
        };
        let mut base = ReportRow {
            build_name: build.name.clone(),
            model_name: label("name"),
            author: label("author"),
            task: label("task"),
            ..ReportRow::default()
        };
        if let Some(stats) = stats {
            fill_model(&mut base, stats);
        }
        let mut problems = build.problems();
        if let Ok(Some(state)) = &build.state {
            base.build_status = state.build_status.as_str().to_string();
            base.onnx_exported = state.info.base_onnx_exported;
            base.onnx_optimized = state.info.opt_onnx_exported;
            base.onnx_converted = state.info.converted_onnx_exported;
            if let Some(failure) = &state.info.failure {
                problems.push(format!("build failed: {failure}"));
            }
        }
        let runtimes = stats.map(|s| &s.runtimes).filter(|r| !r.is_empty());
        match runtimes {
            None => rows.push(ReportRow {
                status: if problems.is_empty() {
                    "not measured"
                } else {
                    "error"
                }
                .to_string(),
                error: problems.join("; "),
                ..base
            }),
            Some(runtimes) => {
                for (runtime, record) in runtimes {
                    let s = record.statistics.as_ref();
                    let mut errors = problems.clone();
                    errors.extend(record.message.clone());
                    rows.push(ReportRow {
                        runtime: runtime.clone(),
                        runtime_version: record.runtime_version.clone().unwrap_or_default(),
                        status: record.status.clone(),
                        mean_ms: s.map(|s| s.mean_ms),
                        median_ms: s.map(|s| s.median_ms),
                        p90_ms: s.map(|s| s.p90_ms),
                        p99_ms: s.map(|s| s.p99_ms),
                        std_ms: s.map(|s| s.std_ms),
                        min_ms: s.map(|s| s.min_ms),
                        max_ms: s.map(|s| s.max_ms),
                        ci95_low_ms: s.map(|s| s.ci95_low_ms),
                        ci95_high_ms: s.map(|s| s.ci95_high_ms),
                        throughput: s.map(|s| s.throughput),
                        compile_seconds: record.compile_seconds,
                        error: errors.join("; "),
                        ..base.clone()
                    });
                }
            }
        }
    }
    rows
}

fn fill_model(row: &mut ReportRow, stats: &BuildStats) {
    row.script = stats.script.clone();
    row.model_class = stats.model.class.clone();
    row.model_hash = stats.model.hash.clone();
    row.invocation_hash = stats.model.invocation_hash.clone();
    row.parameters = Some(stats.model.parameters);
    row.device = stats.device.clone();
}

/// The rows as CSV (a header line, then one line per row; fields quoted when needed).
pub fn to_csv(rows: &[ReportRow]) -> String {
    let header = [
        "build_name",
        "script",
        "model_name",
        "author",
        "task",
        "model_class",
        "model_hash",
        "invocation_hash",
        "parameters",
        "device",
        "runtime",
        "runtime_version",
        "status",
        "mean_ms",
        "median_ms",
        "p90_ms",
        "p99_ms",
        "std_ms",
        "min_ms",
        "max_ms",
        "ci95_low_ms",
        "ci95_high_ms",
        "throughput",
        "compile_seconds",
        "build_status",
        "onnx_exported",
        "onnx_optimized",
        "onnx_converted",
        "error",
    ];
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    // Written into memory: no write can fail.
    let _ = writer.write_record(header);
    let num = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    for r in rows {
        let fields = [
            r.build_name.clone(),
            r.script.clone(),
            r.model_name.clone(),
            r.author.clone(),
            r.task.clone(),
            r.model_class.clone(),
            r.model_hash.clone(),
            r.invocation_hash.clone(),
            r.parameters.map(|p| p.to_string()).unwrap_or_default(),
            r.device.clone(),
            r.runtime.clone(),
            r.runtime_version.clone(),
            r.status.clone(),
            num(r.mean_ms),
            num(r.median_ms),
            num(r.p90_ms),
            num(r.p99_ms),
            num(r.std_ms),
            num(r.min_ms),
            num(r.max_ms),
            num(r.ci95_low_ms),
            num(r.ci95_high_ms),
            num(r.throughput),
            num(r.compile_seconds),
            r.build_status.clone(),
            r.onnx_exported.to_string(),
            r.onnx_optimized.to_string(),
            r.onnx_converted.to_string(),
            r.error.clone(),
        ];
        let _ = writer.write_record(&fields);
    }
    writer
        .into_inner()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::state::{ModelInfo, RuntimeRecord};
    use crate::models::stats::Statistics;

    fn entry(name: &str, stats: Option<BuildStats>) -> BuildEntry {
        BuildEntry {
            name: name.into(),
            dir: format!("/c/{name}").into(),
            state: Ok(None),
            stats: Ok(stats),
            damage: None,
        }
    }

    #[test]
    fn one_row_per_build_and_runtime_with_errors() {
        let mut stats = BuildStats {
            build_name: "mlp_24adc42f".into(),
            script: "/s/mlp.py".into(),
            model: ModelInfo {
                hash: "2a1e15ca".into(),
                class: "MLP".into(),
                parameters: 60,
                ..ModelInfo::default()
            },
            device: "x86".into(),
            ..BuildStats::default()
        };
        stats.labels.insert("author".into(), vec!["me".into()]);
        stats.runtimes.insert(
            "ort".into(),
            RuntimeRecord {
                status: "ok".into(),
                runtime_version: Some("1.31.1".into()),
                provider: None,
                compile_seconds: None,
                warmup: Some(10),
                statistics: Statistics::of(&[1_000_000, 3_000_000], 1),
                message: None,
                times_ns: vec![1_000_000, 3_000_000],
            },
        );
        stats.runtimes.insert(
            "torch-compiled".into(),
            RuntimeRecord {
                status: "error".into(),
                runtime_version: None,
                provider: None,
                compile_seconds: None,
                warmup: None,
                statistics: None,
                message: Some("InductorError: no C compiler, \"gcc\"".into()),
                times_ns: Vec::new(),
            },
        );
        let mut damaged = entry("mlp_deadbeef", None);
        damaged.state = Err("state.yaml is damaged (bad)".into());
        let rows = rows(&[entry("mlp_24adc42f", Some(stats)), damaged]);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].runtime, "ort");
        assert_eq!(rows[0].mean_ms, Some(2.0));
        assert_eq!(rows[0].author, "me");
        assert_eq!(rows[1].status, "error");
        assert!(rows[1].error.contains("no C compiler"));
        assert_eq!(rows[2].status, "error");
        assert!(rows[2].error.contains("state.yaml is damaged"));
        let csv = to_csv(&rows);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("build_name,script,"));
        assert!(lines[1].contains(",ort,1.31.1,ok,2.000000,"));
        // No state file in this test: that problem comes first.
        assert!(
            lines[2].ends_with(",\"no state.yaml; InductorError: no C compiler, \"\"gcc\"\"\"")
        );
    }
}
