//! `milabench run`: the suite's session installs, prepares, runs (validating as it goes) and
//! reports; with `--dry-run`, it only prints the plan.

use std::io::Write;
use std::time::Duration;

use milabench::config::settings::{EnvVars, SettingsFlags};
use milabench::exec::Interrupt;
use milabench::report::{Format, REPORT_PAGE, ReportOptions, render, render_html};
use milabench::run::RunOptions;
use milabench::run::SetupFailure;
use milabench::validate::LayerName;
use milabench::{ExitCode, InstallOptions, PlannedBench, RepeatOrder, RepeatPlan, Session};

use crate::args::{DryRunFormat, GlobalArgs, RunArgs};
use crate::output::{note, warn, write_output};
use crate::settings::{load_suite_settings, session};

/// Runs the command.
pub fn run(global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let validations = LayerName::selection(&args.validations)?;
    let more = SettingsFlags {
        run_name: args.run_name.clone(),
        ..SettingsFlags::default()
    };
    let env = EnvVars::from_process();
    let settings = load_suite_settings(global, &args.suite, more, &env)?;
    if let Some(sweep) = milabench::sweep_of(&settings, &env, &args.sweep)? {
        return super::sweep::run(args, settings, env, sweep, &validations);
    }
    let session = session(settings, &args.suite, args.fidelity.clone(), env, None)?;
    run_session(args, &session, &validations, args.resume)
}

/// Runs the suite of `session` as `args` ask (one run; a sweep makes one per point), going on
/// with the run of its name when `resume`.
pub(super) fn run_session(
    args: &RunArgs,
    session: &Session,
    validations: &[LayerName],
    resume: bool,
) -> anyhow::Result<ExitCode> {
    let asked = args.repeat.map(|repeat| RepeatPlan {
        repeat,
        order: repeat_order(args),
    });
    let repeats = milabench::run::repeat_plan(&session.run_dir(), resume, asked)?;
    if let Some(format) = args.dry_run {
        return dry_run(session, repeats, resume, format);
    }
    // Claimed before the set-up: a second `run` of the same name is refused before it installs
    // or prepares anything.
    let folder = if args.share_run_folder {
        session.claim_shared_run_folder()?
    } else {
        session.claim_run_folder(resume)?
    };
    if !args.no_check && !preflight(session)? {
        return Ok(ExitCode::BenchmarkFailures);
    }
    let failed_setup = if args.no_setup {
        Vec::new()
    } else {
        match setup(session)? {
            Ok(failures) => failures,
            Err(code) => return Ok(code),
        }
    };
    let interrupt = Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let mut options = run_options(interrupt, repeats.repeat, resume, args.precision)?;
    options.order = repeats.order;
    options.failed_setup = failed_setup;
    let asked = (args.dash || args.no_dash).then_some(args.dash);
    let mut view = crate::dash::run_observer(asked, || bench_budgets(session, &options));
    let result = session.run(&folder, &options, validations, view.as_mut());
    // Gives the terminal back before anything else is printed.
    drop(view);
    drop(folder);
    ctrl_c.uninstall();
    let result = result?;
    let summary = &result.summary;
    let run_dir = summary.run_dir.display().to_string();
    if summary.outcomes.is_empty()
        && summary.already_done.is_empty()
        && summary.failed_setup.is_empty()
    {
        warn("no benchmark ran (all skipped or none selected)");
        return Ok(if summary.interrupted {
            ExitCode::Interrupted
        } else {
            ExitCode::Success
        });
    }
    let report_options = ReportOptions {
        // Skipped for unmet capabilities: absent on purpose, not failed.
        excused: summary.skipped.clone(),
        ..ReportOptions::default()
    };
    // A shared folder also holds the benchmarks other runs write, perhaps still running.
    let (report, set) = if args.share_run_folder {
        session.report_selected(&summary.run_dir, &report_options)?
    } else {
        session.report(&summary.run_dir, &report_options)?
    };
    for warning in set.warnings().into_iter().chain(report.score_problem()) {
        warn(&warning);
    }
    write_output(None, &render(&report, Format::Text))?;
    if !result.validation.text.is_empty() {
        write_output(None, &format!("\n{}", result.validation.text))?;
    }
    for verdict in result.validation.verdicts.iter().filter(|v| v.code != 0) {
        warn(&format!(
            "validation layer `{}` failed ({} problem{}); see above and {run_dir}/{}",
            verdict.layer,
            verdict.code,
            if verdict.code == 1 { "" } else { "s" },
            milabench::session::VALIDATION_FILE
        ));
    }
    for problem in &result.store_problems {
        warn(problem);
    }
    note(&format!("run folder: {run_dir}"));
    // The page is a view of what is on disk: a failure to write it is said, not fatal. In a
    // shared folder, other runs are still writing: who reports the whole folder writes it.
    if !args.share_run_folder {
        let page = summary.run_dir.join(REPORT_PAGE);
        match render_html(&report, &set)
            .map_err(anyhow::Error::from)
            .and_then(|html| std::fs::write(&page, html).map_err(anyhow::Error::from))
        {
            Ok(()) => note(&format!("HTML report: {}", page.display())),
            Err(e) => warn(&format!(
                "the HTML report was not written to {}: {e:#}; make it later with `milabench report --runs {run_dir} --format html -o report.html`",
                page.display()
            )),
        }
    }
    if let Some((file, benches)) = &result.sizer_saved {
        note(&super::sweep::sizer_saved_line(file, benches));
    }
    if let Some(database) = &result.recorded_in {
        note(&format!(
            "recorded in {database} (`milabench db list`, `milabench history`)"
        ));
    }
    Ok(if summary.interrupted {
        ExitCode::Interrupted
    } else if result.success() && report.passes() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}

/// The budgets of the benchmarks a run with `options` may run, in the order it runs them.
fn bench_budgets(session: &Session, options: &RunOptions) -> Vec<crate::dash::BenchBudget> {
    let benches: Vec<_> = session.resolved().suite.runnable().collect();
    options
        .order
        .schedule(options.repeat, benches.len())
        .into_iter()
        .map(|(_, i)| {
            crate::dash::BenchBudget::from_config(&benches[i].name, &benches[i].config.to_json())
        })
        .collect()
}

/// The order of the repeats `args` ask for.
fn repeat_order(args: &RunArgs) -> RepeatOrder {
    if args.interleave {
        RepeatOrder::Interleaved
    } else {
        RepeatOrder::InARow
    }
}

/// The fast preflight (no package index round trip): says the failed checks, and whether the
/// run may go on (none failed). Warnings are `milabench check`'s to show: `run` installs what
/// is missing anyway.
fn preflight(session: &Session) -> anyhow::Result<bool> {
    use milabench::cluster::Status;
    let checks = session.check(&milabench::check::CheckOptions {
        need_disk_gib: None,
        package_index: false,
        program: std::env::current_exe()?,
    })?;
    let failed: Vec<_> = checks
        .into_iter()
        .filter(|c| c.status == Status::Fail)
        .collect();
    if !failed.is_empty() {
        warn(&format!(
            "the preflight failed, nothing was run:\n{}fix the problems above, or pass --no-check to run anyway",
            super::check::render_text(&failed)
        ));
    }
    Ok(failed.is_empty())
}

/// How `run` and `prepare` start processes: `repeat` times, resuming or not, stopped by
/// `interrupt` (and, with `precision_pct`, once a benchmark's rate is that precise), with this
/// program as the watchdog.
pub(super) fn run_options(
    interrupt: Interrupt,
    repeat: usize,
    resume: bool,
    precision_pct: Option<f64>,
) -> anyhow::Result<RunOptions> {
    Ok(RunOptions {
        repeat,
        order: RepeatOrder::InARow,
        resume,
        grace: Duration::from_secs(10),
        interrupt,
        path: std::env::var("PATH").unwrap_or_default(),
        watchdog: Some(super::watchdog()?),
        precision: precision_pct.map(|pct| milabench::exec::PrecisionStop::new(pct / 100.0)),
        failed_setup: Vec::new(),
    })
}

/// Prints the plans (`--dry-run`): a shell script, or their JSON; with `resume`, those a
/// resume would run (the benchmarks already complete in the run folder are left out).
fn dry_run(
    session: &Session,
    repeats: RepeatPlan,
    resume: bool,
    format: DryRunFormat,
) -> anyhow::Result<ExitCode> {
    let run_dir = session.run_dir();
    let mut plans = Vec::new();
    for planned in session.plan(repeats.repeat, repeats.order)? {
        match planned {
            PlannedBench::Run(plan)
                if resume && milabench::run::already_complete(&plan, &run_dir) => {}
            PlannedBench::Run(plan) => plans.push(plan),
            PlannedBench::Skipped { bench, unmet } => warn(&format!(
                "skipping `{bench}`: this system does not meet {}",
                unmet.join(", ")
            )),
        }
    }
    let text = match format {
        DryRunFormat::Shell => milabench::plan::render_script(&plans),
        DryRunFormat::Json => serde_json::to_string_pretty(&plans)? + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::Success)
}

/// What `run` does before running, with the session it runs: installs the selected
/// benchmarks' environments (up-to-date ones are left alone), then runs their prepare steps
/// with the same arguments. A failed install stops here; a benchmark whose prepare step failed
/// is left out of the run and recorded as failed, with the reason, and the others run.
fn setup(session: &Session) -> anyhow::Result<Result<Vec<SetupFailure>, ExitCode>> {
    let summary = super::install::install_stoppably(session, InstallOptions::default())?;
    let code = super::install::summarize(&summary, &session.resolved().arch);
    if code != ExitCode::Success {
        warn("install failed: nothing was run (see above)");
        return Ok(Err(code));
    }
    let (code, failures) = super::prepare::prepare(session)?;
    if code == ExitCode::Interrupted {
        return Ok(Err(code));
    }
    if !failures.is_empty() {
        warn(&format!(
            "prepare failed for {}: the other benchmarks run (pass --no-setup to run without preparing)",
            failures
                .iter()
                .map(|f| f.bench.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Ok(failures))
}
