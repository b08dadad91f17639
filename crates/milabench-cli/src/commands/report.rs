//! `milabench report`: the results table and the suite score of run folders.

use milabench::ExitCode;
use milabench_config::settings::EnvVars;
use milabench_report::{
    Format, ReportOptions, SuiteEntry, SweepInput, render, render_html, render_sweep_csv,
    render_sweep_html, render_sweep_json, render_sweep_markdown, render_sweep_text, report_runs,
    report_sweep,
};

use crate::args::{GlobalArgs, ReportArgs, ReportFormat};
use std::path::PathBuf;

use crate::output::{warn, write_report_output};
use crate::publish::{PublishRequest, publish_after};
use crate::settings::load_settings;

/// Builds and prints the report.
pub fn run(global: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings = load_settings(global, Some(&args.suite), &env)?;
    let publication = PublishRequest::of(&args.publish)?;
    // Without a suite, the runs alone: every benchmark they hold, none expected.
    let suite: Option<Vec<SuiteEntry>> = match settings.config {
        Some(_) => {
            // The suite's own warnings are `run`'s and `resolve`'s to say, not a report's.
            let request = milabench::SessionRequest {
                selection: args.suite.selection(),
                ..milabench::SessionRequest::default()
            };
            let session = milabench::Session::new(settings, env, request)?;
            Some(session.resolved().report_entries())
        }
        None => None,
    };
    if !args.sweep.is_empty() {
        let code = sweep(global, args, suite.as_deref())?;
        return Ok(publish_after(
            code,
            publication.as_ref(),
            &folders(&args.sweep),
        ));
    }
    let format = match args.format {
        ReportFormat::Text => Some(Format::Text),
        ReportFormat::Md => Some(Format::Markdown),
        ReportFormat::Csv => Some(Format::Csv),
        ReportFormat::Json => Some(Format::Json),
        ReportFormat::Html => None,
    };
    let options = ReportOptions {
        price: args.price,
        ..ReportOptions::default()
    };
    let runs = crate::database::resolve_runs(global, &args.runs)?;
    let (report, set) = report_runs(&runs, suite.as_deref(), &options)?;
    for warning in set.warnings().into_iter().chain(report.score_problem()) {
        warn(&warning);
    }
    let text = match format {
        Some(format) => render(&report, format),
        None => render_html(&report, &set)?,
    };
    write_report_output(args.output.as_deref(), &text, &runs)?;
    let code = if report.passes() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    };
    Ok(publish_after(code, publication.as_ref(), &folders(&runs)))
}

/// `report --sweep`: the runs as the points of a sweep.
fn sweep(
    global: &GlobalArgs,
    args: &ReportArgs,
    suite: Option<&[SuiteEntry]>,
) -> anyhow::Result<ExitCode> {
    let runs = crate::database::resolve_runs(global, &args.sweep)?;
    let inputs: Vec<SweepInput> = runs
        .iter()
        .map(|run| SweepInput {
            run: run.clone(),
            values: milabench::sweep::read_sweep_file(std::path::Path::new(run))
                .map(|r| r.values)
                .unwrap_or_default(),
        })
        .collect();
    let sweep = report_sweep(&inputs, suite)?;
    let text = match args.format {
        ReportFormat::Text => render_sweep_text(&sweep),
        ReportFormat::Json => render_sweep_json(&sweep),
        ReportFormat::Html => render_sweep_html(&sweep),
        ReportFormat::Md => render_sweep_markdown(&sweep),
        ReportFormat::Csv => render_sweep_csv(&sweep),
    };
    write_report_output(args.output.as_deref(), &text, &runs)?;
    Ok(ExitCode::Success)
}

/// The paths of `runs`, as `--publish` takes them (only folders are published).
fn folders(runs: &[String]) -> Vec<PathBuf> {
    runs.iter().map(PathBuf::from).collect()
}
