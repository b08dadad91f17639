//! Test and benchmark support shared by every suite that exercises the store: a throwaway
//! PostgreSQL database on the server `cargo xtask pg up` starts, and generated run folders.
//!
//! PostgreSQL tests read the server's URL from [`TEST_PG_URL`]; without it they are skipped
//! with the reason [`TestDatabase::create`] gives, unless [`TEST_PG_REQUIRED`] is set (as
//! `cargo xtask ci` sets it), which makes a missing server a failure.

use std::path::Path;

use milabench_metrics::{Event, MetricsError, Record, RunFolderWriter, Tag};
use serde_json::json;

/// The URL of a PostgreSQL server tests may create databases on (`cargo xtask pg up` prints it).
pub const TEST_PG_URL: &str = "MILABENCH_TEST_PG_URL";
/// The URL of the real milabench dashboard server `cargo xtask dashboard up` starts, for the
/// tests of `--publish` (ignored by default; `cargo xtask ci` runs them with it).
pub const TEST_DASHBOARD_URL: &str = "MILABENCH_TEST_DASHBOARD_URL";
/// When set to `1`, PostgreSQL tests fail instead of being skipped without a server.
pub const TEST_PG_REQUIRED: &str = "MILABENCH_TEST_PG_REQUIRED";

/// Whether PostgreSQL tests must run (see [`TEST_PG_REQUIRED`]).
pub fn pg_required() -> bool {
    std::env::var(TEST_PG_REQUIRED).is_ok_and(|v| v == "1")
}

/// A database of its own for one test, dropped with it.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    /// The URL of the test's database.
    pub url: String,
}

impl TestDatabase {
    /// Creates an empty database on the server of [`TEST_PG_URL`]; `Err` holds why there is
    /// none (the caller skips, or fails when [`pg_required`]).
    pub fn create() -> Result<TestDatabase, String> {
        let admin_url = std::env::var(TEST_PG_URL).map_err(|_| {
            format!("{TEST_PG_URL} is not set; start a server with `cargo xtask pg up` and export the URL it prints")
        })?;
        let name = format!(
            "milabench_test_{}_{}",
            std::process::id(),
            fastrand::u64(..)
        );
        let mut client = postgres::Client::connect(&admin_url, postgres::NoTls)
            .map_err(|e| format!("cannot reach the PostgreSQL server of {TEST_PG_URL}: {e}"))?;
        // An identifier cannot be a bound parameter; this one is made above of [a-z0-9_] only.
        debug_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(|e| format!("cannot create a test database: {e}"))?;
        let url = match admin_url.rsplit_once('/') {
            Some((server, _)) if server.contains("//") && !server.ends_with('/') => {
                format!("{server}/{name}")
            }
            _ => format!("{}/{name}", admin_url.trim_end_matches('/')),
        };
        Ok(TestDatabase {
            admin_url,
            name,
            url,
        })
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// One benchmark of a generated run: its name and the training rates each of its processes
/// reports.
#[derive(Debug, Clone)]
pub struct GeneratedBench {
    /// Benchmark name.
    pub name: String,
    /// Rates of each process (one `.data` file per process).
    pub processes: Vec<Vec<f64>>,
}

/// The machine of a generated run.
#[derive(Debug, Clone)]
pub struct GeneratedSystem {
    /// GPU model (`None`: a CPU-only machine).
    pub gpu_model: Option<String>,
    /// Number of GPUs.
    pub gpu_count: usize,
    /// Start time, seconds since the epoch.
    pub date: f64,
}

/// Writes a run folder as a run of the Python tool would: per process `config`, `meta`,
/// `start`, training `data` records with GPU samples, `end` with status 0.
pub fn write_run(
    folder: &Path,
    system: &GeneratedSystem,
    benches: &[GeneratedBench],
) -> Result<(), MetricsError> {
    let run_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let gpus: serde_json::Map<String, serde_json::Value> = (0..system.gpu_count)
        .map(|i| {
            (
                i.to_string(),
                json!({"device": i, "product": system.gpu_model,
                       "memory": {"used": 1, "total": 81920}}),
            )
        })
        .collect();
    let meta = json!({
        "cpu": {"count": 16, "brand": "Generated CPU"},
        "os": {"nodename": "gen-host", "sysname": "Linux"},
        "accelerators": {"arch": if system.gpu_count > 0 { "cuda" } else { "cpu" },
                         "gpus": gpus, "system": {"DRIVER_VERSION": "550.0"}},
        "pytorch": {"torch": "2.5.0"},
        "date": system.date,
    });
    let mut writer = RunFolderWriter::create(folder)?;
    let mut record = |tag: &Tag, name: &str, data: serde_json::Value| {
        writer.append(tag, &Record::new(Event::from_parts(name, data), None))
    };
    for bench in benches {
        for (job, rates) in bench.processes.iter().enumerate() {
            let tag = Tag::new(format!("{}.{job}", bench.name));
            let t0 = system.date + job as f64;
            record(
                &tag,
                "config",
                json!({"name": bench.name, "group": bench.name, "weight": 1.0, "enabled": true,
                       "tag": [bench.name, job.to_string()], "run_name": run_name,
                       "job-number": job, "devices": [job]}),
            )?;
            record(&tag, "meta", meta.clone())?;
            record(
                &tag,
                "start",
                json!({"command": ["python", "main.py"], "time": t0}),
            )?;
            for (i, rate) in rates.iter().enumerate() {
                let t = t0 + 1.0 + i as f64;
                record(
                    &tag,
                    "data",
                    json!({"task": "main", "time": t, "gpudata": {job.to_string():
                        {"memory": [4000.0, 81920.0], "load": 0.9, "temperature": 60, "power": 300.0}}}),
                )?;
                record(
                    &tag,
                    "data",
                    json!({"task": "train", "rate": rate, "units": "items/s", "time": t}),
                )?;
            }
            record(
                &tag,
                "end",
                json!({"command": ["python", "main.py"], "time": t0 + 2.0 + rates.len() as f64,
                       "return_code": 0}),
            )?;
        }
    }
    Ok(())
}
