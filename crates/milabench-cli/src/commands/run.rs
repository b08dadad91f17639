//! `milabench run`: the suite's session installs, prepares, runs (validating as it goes) and
//! reports, all in [`milabench::Session::execute`]; with `--dry-run`, it only prints the plan.

use std::io::Write;

use milabench::observe::LayerName;
use milabench::settings::{EnvVars, SettingsFlags};
use milabench::{ExitCode, RepeatOrder, RepeatPlan, RunRequest, Session};

mod sweep;

use crate::args::{DashStyle, DryRunFormat, GlobalArgs, RunArgs};
use crate::output::{note, warn};
use crate::publish::{PublishRequest, publish_after};
use crate::settings::{load_suite_settings, session};

/// Runs the command.
pub fn run(global: &GlobalArgs, args: &RunArgs) -> crate::errors::Result<ExitCode> {
    if !args.plugin.is_empty() {
        crate::errors::bail!(
            "run --plugin: the Python tool's logger plugins are not here; the run folder records every event, `--validations` adds checks and `--dash` the live view"
        );
    }
    crate::commands::refuse_github_issues(args.github_issues)?;
    let validations = LayerName::selection(&args.validations)?;
    let more = SettingsFlags {
        run_name: args.run_name.clone(),
        container: args.container.clone(),
        noterm: args.noterm.then_some(true),
        ..SettingsFlags::default()
    };
    let env = EnvVars::from_process();
    let settings = load_suite_settings(global, &args.suite, more, &env)?;
    let noterm = settings.noterm;
    let publication = PublishRequest::of(&args.publish)?;
    if let Some(sweep) = milabench::sweep_of(&settings, &env, &args.sweep)? {
        return sweep::run(
            args,
            settings,
            env,
            sweep,
            &validations,
            publication.as_ref(),
        );
    }
    let session = session(settings, &args.suite, args.fidelity.clone(), env, None)?;
    let request = request(args, validations, args.resume)?;
    if let Some(format) = args.dry_run {
        return dry_run(&session, &request, format);
    }
    let code = crate::render::pipeline::execute(&session, request, dash(args, noterm))?;
    Ok(publish_after(
        code,
        publication.as_ref(),
        &[session.run_dir()],
    ))
}

/// The request of `args` (`validations` already parsed), resuming or not.
fn request(
    args: &RunArgs,
    validations: Vec<LayerName>,
    resume: bool,
) -> crate::errors::Result<RunRequest> {
    Ok(RunRequest {
        repeat: args.repeat.map(|repeat| RepeatPlan {
            repeat,
            order: if args.interleave {
                RepeatOrder::Interleaved
            } else {
                RepeatOrder::InARow
            },
        }),
        resume,
        shared_folder: args.share_run_folder,
        preflight: !args.no_check,
        setup: !args.no_setup,
        validations,
        precision: args
            .precision
            .map(|pct| milabench::observe::PrecisionStop::new(pct / 100.0)),
        watchdog: Some(crate::commands::watchdog()?),
        ..RunRequest::default()
    })
}

/// `--dash[=STYLE]`, `--no-dash` and `--noterm` (or `MILABENCH_NOTERM`, in `noterm`): `None`
/// when none is given.
fn dash(args: &RunArgs, noterm: bool) -> Option<bool> {
    match args.dash {
        Some(style) => Some(style != DashStyle::No),
        None => (args.no_dash || noterm).then_some(false),
    }
}

/// Prints the plans (`--dry-run`): a shell script, or their JSON; on resume, those a resume
/// would run (the benchmarks already complete in the run folder are left out).
fn dry_run(
    session: &Session,
    request: &RunRequest,
    format: DryRunFormat,
) -> crate::errors::Result<ExitCode> {
    let dry_run = session.dry_run(request)?;
    for (bench, unmet) in &dry_run.skipped {
        warn(&format!(
            "skipping `{bench}`: this system does not meet {}",
            unmet.join(", ")
        ));
    }
    let text = match format {
        DryRunFormat::Shell => dry_run.script(),
        DryRunFormat::Json => serde_json::to_string_pretty(&dry_run.plans)? + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    // Every broken benchfile is named (a run would record each as failed), after the others'
    // plans.
    let broken = dry_run.broken;
    for (bench, reason) in &broken {
        note(&format!(
            "error: benchmark `{bench}`: its benchfile.py gives no plan: {reason}"
        ));
    }
    Ok(if broken.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::BadInput
    })
}
