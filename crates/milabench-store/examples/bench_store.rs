//! Measurement program for `cargo xtask bench`: import and history speed of the results store
//! (SQLite), each against a baseline measured on the same folders in the same run: the report of
//! the folder alone (`milabench-report` reading and summarising its `.data` files, which an
//! import also does). Arguments: the largest fixture run folder, the number of generated runs.
//! Prints three lines of text.

#![allow(clippy::print_stdout, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use milabench_report::{ReportOptions, report_runs};
use milabench_store::harness::{GeneratedBench, GeneratedSystem, write_run};
use milabench_store::{HistoryQuery, ImportOptions, Store, StoreLocation};

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn report_folder(folder: &Path) -> anyhow::Result<()> {
    report_runs(
        &[folder.display().to_string()],
        None,
        &ReportOptions::default(),
    )?;
    Ok(())
}

/// A fresh SQLite store in `dir`.
fn fresh_store(dir: &Path, name: &str) -> anyhow::Result<Store> {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(Store::open(&StoreLocation::Sqlite(path))?)
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let fixture = PathBuf::from(args.next().context("give the fixture run folder")?);
    let runs: usize = args.next().map_or(Ok(1000), |n| n.parse())?;
    let scratch = tempfile::tempdir()?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;

    // 1. The largest fixture folder: import into a fresh database, 9 times.
    let mut import = Vec::new();
    let mut report = Vec::new();
    for i in 0..9 {
        let mut store = fresh_store(scratch.path(), &format!("fixture{i}.db"))?;
        let t = Instant::now();
        store.import_folder(&fixture, &ImportOptions::default())?;
        import.push(t.elapsed());
        let t = Instant::now();
        report_folder(&fixture)?;
        report.push(t.elapsed());
    }
    let (import, report) = (median(import), median(report));
    println!(
        "store import, largest fixture run folder ({}): {:.1} ms per run (median of 9); baseline (its report alone) {:.1} ms; ratio {:.2}",
        fixture.file_name().unwrap_or_default().to_string_lossy(),
        ms(import),
        ms(report),
        import.as_secs_f64() / report.as_secs_f64()
    );

    // 2. A generated history: `runs` folders on four machines, three benchmarks each.
    let models = [
        "NVIDIA H100 80GB HBM3",
        "NVIDIA A100-SXM4-80GB",
        "AMD MI300X",
        "NVIDIA L40S",
    ];
    let folders: Vec<PathBuf> = (0..runs)
        .map(|i| {
            let folder = scratch.path().join(format!("run{i:04}"));
            let benches: Vec<GeneratedBench> = ["resnet50", "bert-fp16", "llama"]
                .iter()
                .map(|b| GeneratedBench {
                    name: (*b).to_owned(),
                    processes: vec![vec![100.0 + (i % 17) as f64; 12]; 2],
                })
                .collect();
            write_run(
                &folder,
                &GeneratedSystem {
                    gpu_model: Some(models[i % models.len()].to_owned()),
                    gpu_count: 8,
                    date: 1_700_000_000.0 + 3600.0 * i as f64,
                },
                &benches,
            )?;
            Ok(folder)
        })
        .collect::<anyhow::Result<_>>()?;
    let mut store = fresh_store(scratch.path(), "history.db")?;
    let t = Instant::now();
    for folder in &folders {
        store.import_folder(folder, &ImportOptions::default())?;
    }
    let import = t.elapsed();
    let t = Instant::now();
    for folder in &folders {
        report_folder(folder)?;
    }
    let report = t.elapsed();
    println!(
        "store import, generated history of {runs} runs (3 benchmarks x 2 processes each): {:.2} ms per run ({:.1} s); baseline (each run's report alone) {:.2} ms per run; ratio {:.2}",
        ms(import) / runs as f64,
        import.as_secs_f64(),
        ms(report) / runs as f64,
        import.as_secs_f64() / report.as_secs_f64()
    );

    // 3. `milabench history` over them: every benchmark, and one benchmark on one GPU model.
    let all = median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                store.history(&HistoryQuery::default()).map(|_| t.elapsed())
            })
            .collect::<Result<_, _>>()?,
    );
    let one = median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                store
                    .history(&HistoryQuery {
                        bench: Some("resnet50".into()),
                        gpu: Some("h100".into()),
                        ..HistoryQuery::default()
                    })
                    .map(|_| t.elapsed())
            })
            .collect::<Result<_, _>>()?,
    );
    let rows = store.history(&HistoryQuery::default())?.len();
    println!(
        "store history over {runs} runs (SQLite): {:.1} ms for all {rows} rows, {:.1} ms for --bench resnet50 --gpu h100 (median of 9); target < 50 ms: {}",
        ms(all),
        ms(one),
        if all < Duration::from_millis(50) {
            "met"
        } else {
            "MISSED"
        }
    );
    Ok(())
}
