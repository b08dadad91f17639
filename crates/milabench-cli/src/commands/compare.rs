//! `milabench compare`: perf changes between runs, judged against the noise.

use milabench::ExitCode;
use milabench::report::{compare_runs, render_comparison};

use crate::args::{CompareArgs, CompareFormat};
use crate::output::write_output;

/// Bootstrap resamples used for the intervals.
const RESAMPLES: usize = 2000;

/// Compares the runs and prints the table.
pub fn run(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let comparison = compare_runs(&args.runs, RESAMPLES, args.seed)?;
    let text = match args.format {
        CompareFormat::Text => render_comparison(&comparison),
        CompareFormat::Json => serde_json::to_string_pretty(&comparison)? + "\n",
    };
    write_output(None, &text)?;
    let too_slow = args
        .fail_above
        .is_some_and(|limit| comparison.worst_slowdown_pct() > limit);
    Ok(if too_slow {
        ExitCode::BenchmarkFailures
    } else {
        ExitCode::Success
    })
}
