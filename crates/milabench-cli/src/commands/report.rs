//! `milabench report`: the results table and the suite score of run folders.

use milabench::ExitCode;
use milabench::results::{
    Format, ReportOptions, RunSelection, SuiteEntry, SweepInput, load_runs, render, render_html,
    render_sweep_csv, render_sweep_html, render_sweep_json, render_sweep_markdown,
    render_sweep_text, report_loaded, report_sweep,
};
use milabench::settings::{EnvVars, Settings};
use milabench_vocab::env_vars::MILABENCH_REPORT_LEAN;

use crate::args::{GlobalArgs, ReportArgs, ReportFormat};
use std::path::PathBuf;

use crate::output::{note, warn, write_report_output};
use crate::publish::{PublishRequest, publish_after};
use crate::settings::load_settings;

/// Builds and prints the report.
pub fn run(global: &GlobalArgs, args: &ReportArgs) -> crate::errors::Result<ExitCode> {
    refuse_python_only(args)?;
    let env = EnvVars::from_process();
    let lean = env.bool(MILABENCH_REPORT_LEAN)?.unwrap_or(false);
    let settings = load_settings(global, Some(&args.suite), &env)?;
    let publication = PublishRequest::of(&args.publish)?;
    // The suite resolves on a thread of its own while the run folders are read (both take
    // milliseconds, and reading only reads); its problems still come first.
    let (suite, loaded) = std::thread::scope(|scope| {
        let resolving = (settings.config.is_some())
            .then(|| scope.spawn(|| suite_entries(&settings, args, &env)));
        let loaded = (args.sweep.is_empty() && !args.consolidate).then(|| {
            let runs = crate::database::resolve_runs(global, &args.runs)?;
            let set = load_runs(&runs);
            Ok::<_, crate::errors::CliError>((runs, set))
        });
        // Without a suite, the runs alone: every benchmark they hold, none expected.
        let suite = resolving.map_or(Ok(None), |thread| {
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .map(Some)
        });
        (suite, loaded)
    });
    let suite = suite?;
    if !args.sweep.is_empty() {
        let code = sweep(global, args, suite.as_deref())?;
        return Ok(publish_after(
            code,
            publication.as_ref(),
            &folders(&args.sweep),
        ));
    }
    let format = match args.format {
        ReportFormat::Text if lean => Some(Format::LeanText),
        ReportFormat::Text => Some(Format::Text),
        ReportFormat::Md => Some(Format::Markdown),
        ReportFormat::Csv => Some(Format::Csv),
        ReportFormat::Json => Some(Format::Json),
        ReportFormat::Html => None,
    };
    let options = ReportOptions {
        price: args.price,
        selection: RunSelection {
            latest: args.latest,
            filter_failures: args.filter_failures,
        },
        ..ReportOptions::default()
    };
    let (runs, set) = match loaded {
        Some(loaded) => loaded?,
        None => {
            let runs = crate::database::resolve_runs(global, &args.runs)?;
            let runs = consolidate(&runs, args.run_name.as_deref())?;
            let set = load_runs(&runs);
            (runs, set)
        }
    };
    let (report, set) = report_loaded(set?, suite.as_deref(), &options)?;
    for warning in set.warnings().into_iter().chain(report.score_problem()) {
        warn(&warning);
    }
    let text = match format {
        Some(format) => render(&report, format),
        None => render_html(&report, &set)?,
    };
    write_report_output(args.output.as_deref(), &text, &runs)?;
    if let Some(page) = &args.html {
        write_report_output(Some(page), &render_html(&report, &set)?, &runs)?;
        note(&format!("HTML report: {page}"));
    }
    let code = if report.passes() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    };
    // The process ends after this command: freeing every record one by one is work the
    // system does at once when it exits.
    std::mem::forget((report, set));
    Ok(publish_after(code, publication.as_ref(), &folders(&runs)))
}

/// The benchmarks the suite of `--config` expects, with their weights.
fn suite_entries(
    settings: &Settings,
    args: &ReportArgs,
    env: &EnvVars,
) -> crate::errors::Result<Vec<SuiteEntry>> {
    // The suite's own warnings are `run`'s and `resolve`'s to say, not a report's.
    Ok(milabench::report_entries(
        settings,
        &args.suite.selection(),
        env,
    )?)
}

/// `report --sweep`: the runs as the points of a sweep.
fn sweep(
    global: &GlobalArgs,
    args: &ReportArgs,
    suite: Option<&[SuiteEntry]>,
) -> crate::errors::Result<ExitCode> {
    let runs = crate::database::resolve_runs(global, &args.sweep)?;
    let mut sweeps: Vec<String> = Vec::new();
    let inputs: Vec<SweepInput> = runs
        .iter()
        .map(|run| {
            let values = match milabench::load_sweep_file(std::path::Path::new(run)) {
                Ok(Some(point)) => {
                    if !sweeps.contains(&point.sweep) {
                        sweeps.push(point.sweep);
                    }
                    point.values
                }
                Ok(None) => Vec::new(),
                Err(problem) => {
                    warn(&format!(
                        "{problem}; the run is reported as a point without settings\n  fix: restore the file from the run, or leave the folder out"
                    ));
                    Vec::new()
                }
            };
            SweepInput {
                run: run.clone(),
                values,
            }
        })
        .collect();
    if sweeps.len() > 1 {
        warn(&format!(
            "the runs are points of {} different sweeps ({}): their points are compared as one sweep's\n  fix: report the folders of one sweep at a time (`milabench history --sweep NAME` lists a sweep's runs)",
            sweeps.len(),
            sweeps.join(", ")
        ));
    }
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

/// The Python tool's report flags that have no meaning here: each refused in one line.
fn refuse_python_only(args: &ReportArgs) -> crate::errors::Result<()> {
    if args.compare.is_some() {
        crate::errors::bail!(
            "report --compare: comparing with a summary file is the Python tool's; here `milabench compare BASELINE RUN...` compares run folders, each change with its interval and verdict"
        );
    }
    if args.compare_gpus {
        crate::errors::bail!(
            "report --compare-gpus: the Python tool's GPU comparison table is not built here; `milabench compare` compares runs made on different GPUs"
        );
    }
    Ok(())
}

/// `--consolidate`: each folder of run folders gathered into one run folder, said on stderr;
/// the gathered folders are what is reported.
fn consolidate(runs: &[String], run_name: Option<&str>) -> crate::errors::Result<Vec<String>> {
    let mut gathered = Vec::with_capacity(runs.len());
    for parent in runs {
        let made = milabench::results::consolidate_runs(std::path::Path::new(parent), run_name)?;
        note(&format!(
            "consolidated {} run folders ({} files) into {}",
            made.sources.len(),
            made.files,
            made.folder.display()
        ));
        for shadowed in &made.shadowed {
            warn(&format!(
                "{}: left out, a newer run has a file of the same name",
                shadowed.display()
            ));
        }
        gathered.push(made.folder.display().to_string());
    }
    Ok(gathered)
}

/// The paths of `runs`, as `--publish` takes them (only folders are published).
fn folders(runs: &[String]) -> Vec<PathBuf> {
    runs.iter().map(PathBuf::from).collect()
}
