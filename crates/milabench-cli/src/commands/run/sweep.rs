//! `milabench run` of a sweep (the system file's `multirun` block, or `--sweep` axes): each run
//! in order as a `run` of its own, the finished ones recorded so that the sweep started again
//! goes on where it stopped; with `--dry-run`, the runs and their settings.

use std::io::Write;

use milabench::{ExitCode, Sweep, SweepRecord, SweepRun};
use milabench_config::settings::{EnvVars, Settings};
use milabench_validate::LayerName;

use crate::args::RunArgs;
use crate::output::{note, warn};
use crate::publish::PublishRequest;

/// Runs every run of `sweep` not yet recorded as finished; the exit status is the worst of
/// theirs. A run that fails does not stop the sweep; an interrupted one does (and is not
/// recorded, so it runs again next time).
pub fn run(
    args: &RunArgs,
    settings: Settings,
    env: EnvVars,
    sweep: Sweep,
    validations: &[LayerName],
    publication: Option<&PublishRequest>,
) -> anyhow::Result<ExitCode> {
    if args.resume {
        anyhow::bail!(
            "--resume does not apply to a sweep: a sweep started again skips its finished runs by itself (recorded in {})\n  fix: run the same command without --resume",
            sweep.record.display()
        );
    }
    milabench::sweep::check_runs(&settings, &env, &args.suite.selection(), &sweep.runs)?;
    let mut record = SweepRecord::open(&sweep.record)?;
    if args.dry_run.is_some() {
        return dry_run(&sweep, &record);
    }
    let total = sweep.runs.len();
    let mut worst = ExitCode::Success;
    for (index, run) in sweep.runs.iter().enumerate() {
        if record.is_done(run) {
            note(&format!(
                "sweep run {}/{total} `{}` skipped: it already ran (recorded in {}; delete that file to run the whole sweep again)",
                index + 1,
                run.key,
                record.path().display()
            ));
            continue;
        }
        note(&format!(
            "sweep run {}/{total} `{}`: {}",
            index + 1,
            run.name,
            settings_line(run)
        ));
        // A run that could not start (a bad setting) is not recorded: it runs again next time.
        let (code, ran) = match one_run(args, &settings, &env, run, validations) {
            Ok(code) => (code, true),
            Err(err) => (crate::errors::report(&err), false),
        };
        if code == ExitCode::Interrupted {
            warn(&format!(
                "the sweep was interrupted during `{}`: run the same command again to go on from it",
                run.name
            ));
            return Ok(code);
        }
        if ran {
            record.mark_done(run)?;
        }
        worst = worst.worst(code);
    }
    // Every folder of the sweep, those of runs finished by earlier invocations too.
    let folders = milabench::sweep::run_folders(settings.layout().runs.as_std_path(), &sweep.runs);
    if !folders.is_empty() {
        note(&format!(
            "sweep done; its curves: milabench report --sweep {}",
            folders
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(crate::publish::publish_after(worst, publication, &folders))
}

/// One run of the sweep: its session, then `run` as for a single run.
fn one_run(
    args: &RunArgs,
    settings: &Settings,
    env: &EnvVars,
    run: &SweepRun,
    validations: &[LayerName],
) -> anyhow::Result<ExitCode> {
    let session = crate::settings::session(
        settings.clone(),
        &args.suite,
        args.fidelity.clone(),
        env.clone(),
        Some(run.clone()),
    )?;
    // A run stopped before its end (its folder there, the run not recorded) goes on.
    let resume = session.run_dir().is_dir();
    let request = super::request(args, validations.to_vec(), resume)?;
    crate::render::pipeline::execute(&session, request, super::dash(args, settings.noterm))
}

/// `key=value` of every setting of a run, space-separated.
fn settings_line(run: &SweepRun) -> String {
    run.point().join(" ")
}

/// Lists the runs of the sweep, their settings, and those already done.
fn dry_run(sweep: &Sweep, record: &SweepRecord) -> anyhow::Result<ExitCode> {
    let mut out = format!(
        "# a sweep of {} runs, in this order (finished runs recorded in {})\n",
        sweep.runs.len(),
        record.path().display()
    );
    for run in &sweep.runs {
        let done = if record.is_done(run) {
            "  # already ran: skipped"
        } else {
            ""
        };
        out.push_str(&format!("{}  {}{done}\n", run.name, settings_line(run)));
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::Success)
}
