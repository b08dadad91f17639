//! Report speed and ingestion rate of `milabench-report` / `milabench-metrics`: the measurement
//! program `crates/milabench-report/examples/bench_report.rs`, built in release,
//! generates the run folders and times each figure against its baseline in the same run.

/// Measures and prints the report and ingestion figures; `ingest_mb` sizes the ingestion folder.
pub fn run(ingest_mb: usize) -> anyhow::Result<()> {
    let text = super::release_example_output(
        "milabench-report",
        "bench_report",
        &[ingest_mb.to_string()],
        "report",
    )?;
    print!("{text}");
    Ok(())
}
