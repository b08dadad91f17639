//! Measurement program for `cargo xtask bench`: report speed and ingestion rate of
//! `milabench-report` / `milabench-metrics`, each against a baseline measured on the same files in
//! the same run: reading the lines and parsing each as untyped JSON (`serde_json::Value`), the
//! least any reader of these files must do. Argument: the size of the ingestion folder, MiB.
//! Prints two lines of text.

#![allow(clippy::print_stdout, missing_docs)]

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use milabench_metrics::{ReadItem, discover_data_files};
use milabench_report::{Format, ReportOptions, load_runs, render, report_runs, summarize};

/// Files in the report-sized run folder (a full suite run writes about 150).
const REPORT_FILES: usize = 150;
/// Target size of that folder.
const REPORT_BYTES: usize = 20 << 20;

/// Writes one realistic `.data` file of about `bytes` bytes; returns the number of events.
fn write_data_file(path: &Path, bench: &str, device: usize, bytes: usize) -> anyhow::Result<u64> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let tag = format!("[\"{bench}\", \"D{device}\"]");
    let mut count = (0usize, 0u64);
    let mut line = |out: &mut BufWriter<std::fs::File>, text: String| -> anyhow::Result<usize> {
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        count.0 += text.len() + 1;
        count.1 += 1;
        Ok(count.0)
    };
    let mut written = 0;
    line(
        &mut out,
        format!(
            "{{\"event\": \"config\", \"data\": {{\"name\": \"{bench}\", \"group\": \"{bench}\", \"tag\": {tag}, \"weight\": 1.0, \"enabled\": true, \"plan\": {{\"method\": \"per_gpu\"}}, \"device\": {device}, \"devices\": [{device}], \"argv\": {{\"--batch-size\": 64, \"--epochs\": 10}}, \"dirs\": {{\"base\": \"/tmp/base\", \"venv\": \"/tmp/base/venv/torch\"}}}}, \"pipe\": null}}"
        ),
    )?;
    line(&mut out, "{\"event\": \"meta\", \"data\": {\"cpu\": {\"count\": 64, \"brand\": \"Bench CPU\"}, \"milabench\": {\"tag\": \"v1.0\"}}, \"pipe\": null}".into())?;
    line(&mut out, "{\"event\": \"start\", \"data\": {\"command\": [\"voir\", \"main.py\"], \"time\": 1700000000.0}, \"pipe\": null}".into())?;
    let mut i = 0u64;
    let mut t = 1_700_000_000.0f64;
    while written < bytes {
        let rate = 1000.0 + (i % 97) as f64 * 3.25;
        t += 0.5;
        match i % 6 {
            0 => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"data\", \"data\": {{\"rate\": {rate}, \"units\": \"items/s\", \"task\": \"train\"}}, \"pipe\": \"data\"}}"
                    ),
                )?
            }
            1 => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"data\", \"data\": {{\"loss\": {}, \"task\": \"train\"}}, \"pipe\": \"data\"}}",
                        10.0 / (i + 1) as f64
                    ),
                )?
            }
            2 => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"data\", \"data\": {{\"progress\": [{}, 70], \"task\": \"early_stop\"}}, \"pipe\": \"data\"}}",
                        i / 6
                    ),
                )?
            }
            3 => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"data\", \"data\": {{\"task\": \"main\", \"time\": {t}, \"gpudata\": {{\"{device}\": {{\"memory\": [{}, 81920.0], \"load\": 0.97, \"temperature\": 61.0, \"power\": 312.5}}}}}}, \"pipe\": \"data\"}}",
                        40000 + i % 1000
                    ),
                )?
            }
            4 => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"data\", \"data\": {{\"task\": \"main\", \"time\": {t}, \"cpudata\": {{\"memory\": [27789398016, 1076052807680], \"load\": 12.5}}}}, \"pipe\": \"data\"}}"
                    ),
                )?
            }
            _ => {
                written = line(
                    &mut out,
                    format!(
                        "{{\"event\": \"line\", \"data\": \"step {i}: training goes on\\n\", \"pipe\": \"stderr\"}}"
                    ),
                )?
            }
        }
        i += 1;
    }
    line(
        &mut out,
        "{\"event\": \"stop\", \"data\": null, \"pipe\": \"data\"}".into(),
    )?;
    line(
        &mut out,
        format!(
            "{{\"event\": \"end\", \"data\": {{\"command\": [\"voir\", \"main.py\"], \"time\": {t}, \"return_code\": -15}}, \"pipe\": null}}"
        ),
    )?;
    // On disk before anything is timed: writeback of fresh pages would slow the first figure.
    out.into_inner()?.sync_all()?;
    Ok(count.1)
}

/// Writes a run folder of `files` files totalling about `bytes`; returns the event count.
fn write_run(dir: &Path, files: usize, bytes: usize) -> anyhow::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut events = 0;
    for f in 0..files {
        let bench = format!("bench{:02}", f / 8);
        events += write_data_file(
            &dir.join(format!("{bench}.D{}.data", f % 8)),
            &bench,
            f % 8,
            bytes / files,
        )?;
    }
    Ok(events)
}

/// The baseline: every line read and parsed into an untyped JSON value.
fn parse_all_lines(dir: &Path) -> anyhow::Result<u64> {
    let mut lines = 0;
    for file in discover_data_files(&[dir])?.files {
        let mut reader = std::io::BufReader::new(std::fs::File::open(&file.path)?);
        let mut buf = String::new();
        while reader.read_line(&mut buf)? > 0 {
            let v: serde_json::Value = serde_json::from_str(&buf).context("generated line")?;
            std::hint::black_box(v);
            lines += 1;
            buf.clear();
        }
    }
    Ok(lines)
}

/// Typed decoding of every record with the `milabench-metrics` reader.
fn read_all_records(dir: &Path) -> anyhow::Result<u64> {
    let mut records = 0;
    for file in discover_data_files(&[dir])?.files {
        for item in file.records()? {
            if let ReadItem::Record(r) = item {
                std::hint::black_box(r);
                records += 1;
            }
        }
    }
    Ok(records)
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// The median wall time of `repeat` calls of `f`, after one untimed call (files in the page
/// cache, allocator and threads warm: every figure and its baseline start alike).
fn time<T>(repeat: usize, mut f: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<Duration> {
    std::hint::black_box(f()?);
    let mut runs = Vec::new();
    for _ in 0..repeat {
        let start = Instant::now();
        std::hint::black_box(f()?);
        runs.push(start.elapsed());
    }
    Ok(median(runs))
}

/// Peak resident memory of this process, from `/proc/self/status` (`VmHWM`), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let ingest_mb: usize = match std::env::args().nth(1) {
        Some(mb) => mb
            .parse()
            .context("the argument is the ingestion folder size in MiB")?,
        None => 1024,
    };
    let tmp = tempfile::tempdir()?;
    let report_dir = tmp.path().join("report-run");
    let events = write_run(&report_dir, REPORT_FILES, REPORT_BYTES)?;
    let source = report_dir.to_string_lossy().into_owned();
    // What `milabench report` does: read, summarise, render the text table.
    let report_as = |format: Format| {
        time(9, || {
            let (report, _) = report_runs(
                std::slice::from_ref(&source),
                None,
                &ReportOptions::default(),
            )?;
            Ok(render(&report, format))
        })
    };
    let reading = time(9, || Ok(load_runs(std::slice::from_ref(&source))?))?;
    let text = report_as(Format::Text)?;
    let json = report_as(Format::Json)?;
    let set = load_runs(std::slice::from_ref(&source))?;
    let summarizing = time(9, || Ok(summarize(&set)?))?;
    let baseline = time(9, || parse_all_lines(&report_dir))?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "report: {REPORT_FILES} files, {} MiB, {events} events: text {:.1} ms (median of 9; reading the files {:.1} ms, statistics {:.1} ms), json with bootstrap intervals {:.1} ms; baseline (read + parse lines as JSON values, one thread) {:.1} ms; ratio text/baseline {:.2}",
        REPORT_BYTES >> 20,
        ms(text),
        ms(reading),
        ms(summarizing),
        ms(json),
        ms(baseline),
        text.as_secs_f64() / baseline.as_secs_f64()
    );

    let ingest_dir = tmp.path().join("ingest-run");
    let events = write_run(&ingest_dir, 64, ingest_mb << 20)?;
    let rss_before = peak_rss_mib().unwrap_or(f64::NAN);
    let typed = time(1, || read_all_records(&ingest_dir))?;
    let rss_after = peak_rss_mib().unwrap_or(f64::NAN);
    let untyped = time(1, || parse_all_lines(&ingest_dir))?;
    println!(
        "ingestion: {ingest_mb} MiB, {events} events on one core: {:.0} events/s typed ({:.1} s); baseline untyped JSON {:.0} events/s ({:.1} s); ratio {:.2}; peak RSS {:.0} MiB before, {:.0} MiB after reading",
        events as f64 / typed.as_secs_f64(),
        typed.as_secs_f64(),
        events as f64 / untyped.as_secs_f64(),
        untyped.as_secs_f64(),
        typed.as_secs_f64() / untyped.as_secs_f64(),
        rss_before,
        rss_after,
    );
    Ok(())
}
