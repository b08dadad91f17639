//! Reports over milabench run folders: reads every `.data` file, pools each benchmark's
//! measurements across files and folders, computes their statistics with polars, and renders
//! the Python tool's report (same numbers, same text layout), its summary object, JSON, CSV and
//! Markdown, and run-to-run comparisons. Serving benchmarks (files with `load` events, the
//! steps of an LLM load run) get a table of their own: latency percentiles, throughputs,
//! goodput and the SLO verdict (`serving`).
//!
//! Beyond the Python tool: every rate and the score carry a 95% interval that respects the
//! correlation of successive rates (batch means, `milabench-stats`), the warm-up left after the
//! fixed `skip` is found (MSER truncation), and `compare` says better, worse or cannot tell from
//! the intervals and a threshold. The text report keeps the Python layout byte for byte and adds
//! these in a section after it.
//!
//! Differences from the Python tool, on purpose: data recorded without GPU `power` (older voir)
//! is reported (the Python tool's current version prints nothing for it); files are visited in
//! name order (Python: file-system order); without a suite file, weights come from the `config`
//! events of the data (Python: empty output); NaN is written `null` in JSON. Its defects are not
//! copied: an enabled benchmark of the suite absent from the data counts as one failed process,
//! a process without `start` or `end` counts as failed (Python drops its file), training rates
//! that are not measurements (NaN, negative, infinite, above `milabench_metrics::MAX_RATE`) fail
//! their process and stay out of the statistics, links to folders are not followed and each
//! file is read once, and a file that cannot be read (a dangling link, a FIFO) is skipped with a
//! warning instead of ending the report.

mod compare;
mod error;
mod html;
mod ingest;
mod interval;
mod json;
mod pyfmt;
mod render;
mod report;
mod selection;
mod serving;
mod stats;
mod summary;
mod sweep;
mod timeline;

pub use compare::{
    CompareRow, Comparison, ThresholdOrigin, Verdict, compare_runs, render_comparison,
    threshold_line,
};
pub use error::ReportError;
pub use html::{REPORT_PAGE, REPORT_TEXT, VALIDATION_FILE, render_comparison_html, render_html};
pub use ingest::{FileOutcome, RunFile, RunSet, data_file_reads, load_runs, read_run_file};
pub use interval::WarmUp;
pub use milabench_stats::{DEFAULT_NOISE_FLOOR_PCT, Estimate, Interval, Judgement, judge};
pub use render::{
    Format, csv_lines, markdown_text, render, render_csv, render_json, render_markdown, render_text,
};
pub use report::{
    Enabled, FAILURE_RATE_GATE, Report, ReportOptions, ReportRow, SuiteEntry, build_report,
    suite_score, weights_from_summary,
};
pub use selection::RunSelection;
pub use serving::{
    LoadScenario, Percentiles, ServingRow, ServingRun, SloVerdict, StepLatencies, StepSummary,
};
pub use stats::{GroupId, Stats, StatsQuery};
pub use summary::{
    BenchSummary, GpuLoad, RateSeries, Summary, summarize, summarize_runs, summary_json,
};
pub use sweep::{
    SweepCell, SweepCurve, SweepInput, SweepReport, build_sweep, render_sweep_csv,
    render_sweep_html, render_sweep_json, render_sweep_markdown, render_sweep_text, report_sweep,
};
pub use timeline::{GpuSeries, STDERR_TAIL, Timeline, read_timeline};

/// Loads the runs under `sources` and builds their report in one call. `suite` gives the
/// expected benchmarks and weights; `None` takes them from the data. Benchmarks the folders
/// record as skipped for an unmet capability are excused, beside `options.excused`.
pub fn report_runs<S: AsRef<str>>(
    sources: &[S],
    suite: Option<&[SuiteEntry]>,
    options: &ReportOptions,
) -> Result<(Report, RunSet), ReportError> {
    report_loaded(load_runs(sources)?, suite, options)
}

/// The report of runs already loaded with [`load_runs`] (what [`report_runs`] does once they
/// are: a caller can load them while it works out the suite).
pub fn report_loaded(
    mut set: RunSet,
    suite: Option<&[SuiteEntry]>,
    options: &ReportOptions,
) -> Result<(Report, RunSet), ReportError> {
    set.runs = options.selection.apply(std::mem::take(&mut set.runs));
    let summary = summarize(&set)?;
    let weights;
    let suite = match suite {
        Some(s) => s,
        None => {
            weights = weights_from_summary(&summary);
            &weights
        }
    };
    let failed = set.runs.iter().filter(|r| !r.success).count();
    // The skips the folders recorded excuse those benchmarks, as the run that skipped them did.
    let mut options = options.clone();
    for bench in &set.skipped_benches {
        if !options.excused.contains(bench) {
            options.excused.push(bench.clone());
        }
    }
    let mut report = build_report(&set.sources, &summary, suite, failed, &options);
    report.serving = serving::serving_rows(report.rows.iter().map(|r| r.name.as_str()), &set);
    Ok((report, set))
}
