//! `milabench summary`: the per-benchmark summary object as JSON.

use milabench::ExitCode;
use milabench::results::{load_runs, summarize, summary_json};

use crate::args::SummaryArgs;
use crate::output::{warn, write_report_output};

/// Summarises the runs and prints the JSON.
pub fn run(args: &SummaryArgs) -> crate::errors::Result<ExitCode> {
    let runs = if args.runs.is_empty() {
        &args.folders
    } else {
        &args.runs
    };
    let set = load_runs(runs)?;
    for warning in set.warnings() {
        warn(&warning);
    }
    let mut text = summary_json(&summarize(&set)?);
    text.push('\n');
    write_report_output(args.output.as_deref(), &text, runs)?;
    Ok(ExitCode::Success)
}
