//! `milabench report`: the results table and the suite score of run folders.

use milabench::ExitCode;
use milabench::config::settings::EnvVars;
use milabench::report::{Format, ReportOptions, SuiteEntry, render, render_html, report_runs};

use crate::args::{GlobalArgs, ReportArgs, ReportFormat};
use crate::output::{warn, write_report_output};
use crate::settings::load_settings;

/// Builds and prints the report.
pub fn run(global: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings = load_settings(global, Some(&args.suite), &env)?;
    let suite: Option<Vec<SuiteEntry>> = match settings.config {
        Some(_) => {
            let resolved = milabench::resolve(&settings, &args.suite.selection(), &env)?;
            Some(resolved.report_entries())
        }
        None => None,
    };
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
    let runs = super::store::resolve_runs(global, &args.runs)?;
    let (report, set) = report_runs(&runs, suite.as_deref(), &options)?;
    for warning in set.warnings().into_iter().chain(report.score_problem()) {
        warn(&warning);
    }
    let text = match format {
        Some(format) => render(&report, format),
        None => render_html(&report, &set)?,
    };
    write_report_output(args.output.as_deref(), &text, &runs)?;
    Ok(if report.passes() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}
