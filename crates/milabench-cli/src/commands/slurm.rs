//! `milabench slurm system|submit`: the system of the allocation this runs in, and a suite run
//! submitted as a batch job (followed to its end with `--wait`): flags -> a
//! [`SubmissionRequest`] -> [`Submission`] -> what a person sees.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use crate::errors::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use milabench::results::{Format, render};
use milabench::settings::{EnvVars, Settings, SettingsFlags};
use milabench::slurm::{
    JobObserver, JobStatus, PerBench, QueuePlace, ReportOutput, Submission, SubmissionRequest,
    SuiteWords,
};
use milabench::{ExitCode, ReportFiles, Session};
use milabench_vocab::run_files::{REPORT_PAGE, REPORT_TEXT};

use crate::args::{GlobalArgs, SlurmCommand, SlurmSubmitArgs, SuiteArgs};
use crate::output::{note, warn, write_output};
use crate::render::pipeline::warn_unwritten;
use crate::settings::suite_session;

/// Runs the command.
pub fn run(global: &GlobalArgs, command: &SlurmCommand) -> crate::errors::Result<ExitCode> {
    match command {
        SlurmCommand::System => system(),
        SlurmCommand::Submit(args) => submit_run(global, args),
        SlurmCommand::Schedule(_) => super::python::slurm_schedule(),
    }
}

/// Prints the system file of the allocation this process runs in.
fn system() -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let Some(allocation) = milabench::slurm_allocation(&env)? else {
        crate::errors::bail!(
            "not inside a Slurm allocation: SLURM_JOB_NODELIST is not set\n  fix: run it in a job (`salloc`, `srun`, `sbatch`), or write a system file yourself (docs/multinode.md)"
        );
    };
    let user = env
        .get("USER")
        .or_else(|| env.get("LOGNAME"))
        .unwrap_or("root");
    write_output(None, &allocation.system_yaml(user))?;
    Ok(ExitCode::Success)
}

/// Writes the batch script into the run folder, submits it, and follows it with `--wait`; with
/// `--per-bench`, a job array and its report.
fn submit_run(global: &GlobalArgs, args: &SlurmSubmitArgs) -> crate::errors::Result<ExitCode> {
    let more = SettingsFlags {
        run_name: args.run_name.clone(),
        ..SettingsFlags::default()
    };
    let env = EnvVars::from_process();
    let session = suite_session(global, &args.suite, more, args.fidelity.clone(), env)?;
    let sbatch = sbatch_options(session.settings(), args)?;
    // The folder is claimed for a moment: a run of the same name that exists (without
    // --resume) or runs now is refused before anything is submitted.
    let folder = session.claim_run_folder(args.resume)?;
    let request = request(global, args, &session, folder.path(), sbatch)?;
    let submission = Submission::plan(&request);
    submission.write()?;
    // The job's own `run` claims the folder.
    drop(folder);
    let job = submission.submit()?;
    let run_dir = request.run_dir.display();
    let Some(per_bench) = &request.per_bench else {
        write_output(
            None,
            &format!("submitted job {job}\nrun folder: {run_dir}\n"),
        )?;
        if !args.wait {
            return Ok(ExitCode::Success);
        }
        return follow(&submission, &job);
    };
    write_output(
        None,
        &format!(
            "submitted job {job} (a job array: {} tasks, one per benchmark, at most {} at once)\nrun folder: {run_dir}\n",
            per_bench.benches.len(),
            per_bench.max_parallel,
        ),
    )?;
    if !args.wait {
        let report_job = submission.submit_report(&job)?;
        write_output(
            None,
            &format!(
                "submitted report job {report_job}: once every task has ended, it writes {REPORT_TEXT} and {REPORT_PAGE} into the run folder\n"
            ),
        )?;
        return Ok(ExitCode::Success);
    }
    let code = follow(&submission, &job)?;
    Ok(code.worst(report(&session, &request.run_dir)?))
}

/// The sbatch options of every job: the settings profile's (`--profile`, else the settings
/// file's default), then the command line's.
fn sbatch_options(
    settings: &Settings,
    args: &SlurmSubmitArgs,
) -> crate::errors::Result<Vec<String>> {
    let profiles = &settings.slurm.profiles;
    let mut options = match args.profile.as_ref().or(settings.slurm.default.as_ref()) {
        None => Vec::new(),
        Some(name) => profiles
            .get(name)
            .with_context(|| {
                let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
                format!(
                    "no sbatch profile `{name}` in the settings file\n  fix: use one of: {} (the settings file's `slurm.profiles`), or leave out --profile",
                    if known.is_empty() { "(none defined)".to_string() } else { known.join(", ") }
                )
            })?
            .sbatch_options(),
    };
    options.extend(args.sbatch.iter().cloned());
    Ok(options)
}

/// What `args` ask to submit of `session`'s suite into the claimed run folder `run_dir`.
fn request(
    global: &GlobalArgs,
    args: &SlurmSubmitArgs,
    session: &Session,
    run_dir: &Path,
    sbatch: Vec<String>,
) -> crate::errors::Result<SubmissionRequest> {
    let suite = &session.resolved().suite;
    let report = |format: &str, file: &str| ReportOutput {
        format: format.into(),
        file: file.into(),
    };
    Ok(SubmissionRequest {
        run_name: session.resolved().run_name.clone(),
        run_dir: run_dir.to_path_buf(),
        cwd: std::env::current_dir().context("the current folder cannot be read")?,
        program: program_words(global, session.settings())?,
        suite: suite_words(session.settings(), &args.suite),
        per_bench: args.per_bench.then(|| PerBench {
            benches: suite.runnable().map(|b| b.name.clone()).collect(),
            max_parallel: args.max_parallel,
        }),
        sbatch,
        fidelity: args.fidelity.clone(),
        no_check: args.no_check,
        no_setup: args.no_setup,
        reports: vec![report("html", REPORT_PAGE), report("text", REPORT_TEXT)],
        written_at: jiff::Zoned::now().datetime(),
    })
}

/// This program and its global options, as the jobs run it.
fn program_words(global: &GlobalArgs, settings: &Settings) -> crate::errors::Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot find the milabench program")?;
    let mut words = vec![
        exe.display().to_string(),
        "--base".into(),
        settings.base.to_string(),
    ];
    if let Some(file) = &global.settings {
        let file = std::path::absolute(file.as_std_path())?;
        words.extend(["--settings".into(), file.display().to_string()]);
    }
    if let Some(db) = &global.db {
        words.extend(["--db".into(), db.clone()]);
    }
    Ok(words)
}

/// The suite options of the jobs' commands: the suite and system files (as resolved), the
/// selection and the overrides.
fn suite_words(settings: &Settings, suite: &SuiteArgs) -> SuiteWords {
    let pairs = |flag: &str, values: &[String]| -> Vec<String> {
        values
            .iter()
            .flat_map(|value| [flag.to_string(), value.clone()])
            .collect()
    };
    let mut files = Vec::new();
    if let Some(config) = &settings.config {
        files.extend(["--config".into(), config.to_string()]);
    }
    if let Some(system) = &settings.system {
        files.extend(["--system".into(), system.to_string()]);
    }
    SuiteWords {
        files,
        selection: [
            pairs("--select", &suite.select),
            pairs("--exclude", &suite.exclude),
        ]
        .concat(),
        overrides: pairs("--override", &suite.overrides),
    }
}

/// Follows the submitted job `job` (or each task of its array) to its end, printing its
/// states and output as they come, then what to change about those Slurm ended early; the
/// exit status.
fn follow(submission: &Submission, job: &str) -> crate::errors::Result<ExitCode> {
    let outcome = submission.wait(job, &mut Printer::default())?;
    for problem in &outcome.problems {
        warn(problem);
    }
    Ok(outcome.code)
}

/// Prints the report of the run folder `run_dir` and writes it there (`report.txt`,
/// `report.html`); `BenchmarkFailures` when it does not pass.
fn report(session: &Session, run_dir: &Path) -> crate::errors::Result<ExitCode> {
    let files = ReportFiles {
        page: true,
        text: true,
    };
    let report = session.write_report(run_dir, Vec::new(), files, false)?;
    for warning in &report.warnings {
        warn(warning);
    }
    write_output(None, &render(&report.report, Format::Text))?;
    warn_unwritten(&report, &run_dir.display().to_string());
    if report.report.passes() {
        Ok(ExitCode::Success)
    } else {
        Ok(ExitCode::BenchmarkFailures)
    }
}

/// Says a followed job's states on stderr, one line per change, and copies its output to
/// stdout. On a terminal, the line of a job waiting in the queue is updated in place (its
/// reason, its place, how long it has waited) and stays, with the time waited, when it starts.
#[derive(Default)]
struct Printer {
    /// The job waiting on a terminal: its label and its line.
    waiting: Option<(String, ProgressBar)>,
}

impl Printer {
    /// Leaves the waiting job's line as it last was, with the time it waited.
    fn stop_waiting(&mut self) {
        if let Some((_, bar)) = self.waiting.take() {
            bar.set_style(
                ProgressStyle::with_template("{msg} (waited {elapsed})").expect("a valid template"),
            );
            bar.finish();
        }
    }
}

impl JobObserver for Printer {
    fn on_state(&mut self, label: &str, status: &JobStatus, queue: Option<&QueuePlace>) {
        let mut line = format!("{label}: {}", status.describe());
        if let Some(queue) = queue {
            line.push_str(&format!(", {}", queue.describe()));
        }
        if status.pending() && std::io::stderr().is_terminal() {
            match &self.waiting {
                Some((waiting, bar)) if waiting == label => bar.set_message(line),
                _ => {
                    self.stop_waiting();
                    let bar = ProgressBar::new_spinner().with_style(
                        ProgressStyle::with_template("{msg} {spinner} {elapsed}")
                            .expect("a valid template"),
                    );
                    bar.set_message(line);
                    bar.enable_steady_tick(Duration::from_millis(200));
                    self.waiting = Some((label.to_owned(), bar));
                }
            }
            return;
        }
        if self
            .waiting
            .as_ref()
            .is_some_and(|(waiting, _)| waiting == label)
        {
            self.stop_waiting();
        }
        match &self.waiting {
            // Another job (a task of the same array) still waits: its line stays below.
            Some((_, bar)) => bar.suspend(|| note(&line)),
            None => note(&line),
        }
    }

    fn on_output(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        self.stop_waiting();
    }
}
