//! `milabench run` of a sweep (the system file's `multirun` block, or `--sweep` axes): each run
//! in order as a `run` of its own, the finished ones recorded so that the sweep started again
//! goes on where it stopped; with `--dry-run`, the runs and their settings.

use std::io::Write;
use std::path::Path;

use milabench::observe::LayerName;
use milabench::settings::{EnvVars, Settings};
use milabench::{ExitCode, Sweep, SweepDriver, SweepRecord, SweepRun};

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
) -> crate::errors::Result<ExitCode> {
    let mut record = sweep.start(&settings, &env, &args.suite.selection(), args.resume)?;
    if args.dry_run.is_some() {
        return dry_run(&sweep, &record);
    }
    let runs_dir = settings.layout().runs;
    let mut driver = Driver {
        args,
        settings: &settings,
        env: &env,
        validations,
    };
    let outcome = sweep.execute(&mut record, runs_dir.as_std_path(), &mut driver)?;
    if let Some(run) = &outcome.interrupted_in {
        warn(&format!(
            "the sweep was interrupted during `{run}`: run the same command again to go on from it"
        ));
        return Ok(outcome.code);
    }
    // Every folder of the sweep, those of runs finished by earlier invocations too.
    let folders = outcome.folders;
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
    Ok(crate::publish::publish_after(
        outcome.code,
        publication,
        &folders,
    ))
}

/// Runs each run of the sweep as `run` runs a suite, saying which it is.
struct Driver<'a> {
    args: &'a RunArgs,
    settings: &'a Settings,
    env: &'a EnvVars,
    validations: &'a [LayerName],
}

impl SweepDriver for Driver<'_> {
    fn skipped(&mut self, index: usize, total: usize, run: &SweepRun, record: &Path) {
        note(&format!(
            "sweep run {index}/{total} `{}` skipped: it already ran (recorded in {}; delete that file to run the whole sweep again)",
            run.key,
            record.display()
        ));
    }

    fn run(&mut self, index: usize, total: usize, run: &SweepRun) -> (ExitCode, bool) {
        note(&format!(
            "sweep run {index}/{total} `{}`: {}",
            run.name,
            settings_line(run)
        ));
        match one_run(self.args, self.settings, self.env, run, self.validations) {
            Ok(code) => (code, true),
            Err(err) => (crate::errors::report(&err), false),
        }
    }
}

/// One run of the sweep: its session, then `run` as for a single run.
fn one_run(
    args: &RunArgs,
    settings: &Settings,
    env: &EnvVars,
    run: &SweepRun,
    validations: &[LayerName],
) -> crate::errors::Result<ExitCode> {
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
fn dry_run(sweep: &Sweep, record: &SweepRecord) -> crate::errors::Result<ExitCode> {
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
