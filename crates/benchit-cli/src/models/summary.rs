//! What `benchit benchmark` prints once it is done: the runtimes' table and the inputs' table
//! (or one JSON document) on stdout, and a closing line on stderr.

use std::fmt::Write as _;
use std::io::Write;

use benchit::models::{Action, BenchmarkReport, InputStatus};

use crate::Format;

/// Prints the summary table or the JSON document on stdout, and a closing line on stderr.
#[allow(clippy::print_stderr)]
pub(super) fn print_results(
    report: &BenchmarkReport,
    format: Format,
    action: Action,
) -> crate::errors::Result<()> {
    let text = match format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Text if action == Action::Benchmark => {
            let inputs = inputs_table(report);
            let runtimes = summary_table(report);
            if inputs.is_empty() || runtimes.is_empty() {
                runtimes + &inputs
            } else {
                format!("{runtimes}\n{inputs}")
            }
        }
        Format::Text => inputs_table(report),
    };
    // A closed stdout (`| head`) is not an error worth more than the results already shown.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    let models: usize = report.inputs.iter().map(|i| i.models.len()).sum();
    let failed = report.inputs.iter().filter(|i| !i.success()).count();
    let mut line = format!(
        "{} input{}, {models} model{} discovered",
        report.inputs.len(),
        plural(report.inputs.len()),
        plural(models)
    );
    if failed > 0 {
        let _ = write!(line, ", {failed} input{} with failures", plural(failed));
    }
    if !report.not_run.is_empty() {
        let n = report.not_run.len();
        let _ = write!(line, ", {n} input{} not run", plural(n));
    }
    if report.interrupted {
        line.push_str("; interrupted");
    }
    eprintln!("{line}");
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One line per measured (model, invocation, runtime).
fn summary_table(report: &BenchmarkReport) -> String {
    let mut rows = vec![[
        "input".to_string(),
        "model".into(),
        "invocation".into(),
        "runtime".into(),
        "mean ms".into(),
        "p90 ms".into(),
        "±95% ms".into(),
        "throughput/s".into(),
        "status".into(),
    ]];
    for input in &report.inputs {
        for model in &input.models {
            for inv in &model.invocations {
                let Some(build) = &inv.build else { continue };
                if build.runtimes.is_empty()
                    && let Some(failure) = &build.failure
                {
                    rows.push([
                        input.input.clone(),
                        model.model.class.clone(),
                        inv.invocation_hash.clone(),
                        "-".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        format!("FAILED: {}", failure.message),
                    ]);
                }
                for rt in &build.runtimes {
                    let s = rt.statistics.as_ref();
                    let num = |f: fn(&benchit::models::Statistics) -> f64, digits: usize| {
                        s.map(|s| format!("{:.digits$}", f(s))).unwrap_or_default()
                    };
                    rows.push([
                        input.input.clone(),
                        model.model.class.clone(),
                        inv.invocation_hash.clone(),
                        rt.runtime.clone(),
                        num(|s| s.mean_ms, 4),
                        num(|s| s.p90_ms, 4),
                        num(|s| (s.ci95_high_ms - s.ci95_low_ms) / 2.0, 4),
                        num(|s| s.throughput, 1),
                        if rt.ok {
                            "ok".into()
                        } else {
                            format!("FAILED: {}", rt.message.as_deref().unwrap_or("failed"))
                        },
                    ]);
                }
            }
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    aligned(&rows, 4..8)
}

/// Rows as aligned columns: those in `numeric` right-aligned, the last one as it is.
fn aligned<const N: usize>(rows: &[[String; N]], numeric: std::ops::Range<usize>) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let width = widths[c];
            if c == N - 1 {
                line.push_str(cell);
            } else if numeric.contains(&c) {
                let _ = write!(line, "{cell:>width$}  ");
            } else {
                let _ = write!(line, "{cell:<width$}  ");
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// One line per input when there are several (`--all`, a list of scripts): how each went, how
/// many models and invocations it had, and why it failed or was skipped.
fn inputs_table(report: &BenchmarkReport) -> String {
    if report.inputs.len() + report.not_run.len() < 2 {
        return String::new();
    }
    let mut rows = vec![[
        "input".to_string(),
        "status".into(),
        "models".into(),
        "invocations".into(),
        "note".into(),
    ]];
    for input in &report.inputs {
        let invocations: usize = input.models.iter().map(|m| m.invocations.len()).sum();
        let failed_builds = input
            .models
            .iter()
            .flat_map(|m| &m.invocations)
            .filter_map(|i| i.build.as_ref())
            .filter(|b| !b.success())
            .count();
        let (status, note) = match (&input.status, &input.failure) {
            (_, Some(failure)) => ("FAILED", failure.message.clone()),
            (InputStatus::Skipped, None) => ("skipped", input.skipped.clone().unwrap_or_default()),
            (InputStatus::Interrupted, None) => ("interrupted", String::new()),
            _ if !input.success() => (
                "FAILED",
                format!("{failed_builds} invocation{} failed", plural(failed_builds)),
            ),
            _ if input.models.is_empty() => ("done", "no model was called".to_string()),
            _ => ("done", String::new()),
        };
        rows.push([
            input.input.clone(),
            status.into(),
            input.models.len().to_string(),
            invocations.to_string(),
            note,
        ]);
    }
    for input in &report.not_run {
        rows.push([
            input.clone(),
            "not run".into(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    aligned(&rows, 2..4)
}
