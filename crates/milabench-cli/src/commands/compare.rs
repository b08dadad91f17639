//! `milabench compare`: perf changes between runs, judged against the noise.

use milabench::ExitCode;
use milabench::results::{Verdict, compare_runs, render_comparison, render_comparison_html};

use crate::args::{CompareArgs, CompareFormat, GlobalArgs};
use crate::output::{warn, write_report_output};

/// Compares the runs (folders, or run names of the results database) and prints the table.
pub fn run(global: &GlobalArgs, args: &CompareArgs) -> crate::errors::Result<ExitCode> {
    let runs = crate::database::resolve_runs(global, &args.runs)?;
    let comparison = compare_runs(&runs, args.threshold)?;
    let text = match args.format {
        CompareFormat::Text => render_comparison(&comparison),
        CompareFormat::Json => serde_json::to_string_pretty(&comparison)? + "\n",
        CompareFormat::Html => render_comparison_html(&comparison),
    };
    write_report_output(args.output.as_deref(), &text, &runs)?;
    // `--threshold` gates on every worse benchmark (its verdict already needs the threshold).
    let Some(limit) = args.fail_above.or(args.threshold.map(|_| 0.0)) else {
        return Ok(ExitCode::Success);
    };
    let regressions = comparison.regressions(limit);
    for row in &regressions {
        let why = match row.verdict {
            Verdict::Worse => format!(
                "{:.1}% slower, beyond the noise and the {}% threshold",
                -row.change_pct, row.threshold_pct
            ),
            Verdict::Missing => "absent from this run".to_owned(),
            Verdict::Failed => "every process failed".to_owned(),
            _ => "no rate measured".to_owned(),
        };
        warn(&format!("regression: {} in {}: {why}", row.bench, row.run));
    }
    Ok(if regressions.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}
