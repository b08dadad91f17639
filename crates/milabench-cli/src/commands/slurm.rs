//! `milabench slurm system|submit`: the system of the allocation this runs in, and a suite run
//! submitted as a batch job (followed to its end with `--wait`).

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use milabench::ExitCode;
use milabench::cluster::slurm::{
    BatchScript, JobStatus, SlurmCommandError, job_status, job_statuses, submit,
};
use milabench::config::settings::{EnvVars, SettingsFlags};
use milabench::report::{Format, REPORT_PAGE, REPORT_TEXT, ReportOptions, render, render_html};

use crate::args::{GlobalArgs, SlurmCommand, SlurmSubmitArgs};
use crate::output::{note, warn, write_output};
use crate::settings::suite_session;

/// The batch script's name in the run folder.
pub const SCRIPT_FILE: &str = "slurm-job.sh";

/// Runs the command.
pub fn run(global: &GlobalArgs, command: &SlurmCommand) -> anyhow::Result<ExitCode> {
    match command {
        SlurmCommand::System => system(),
        SlurmCommand::Submit(args) => submit_run(global, args),
    }
}

/// Prints the system file of the allocation this process runs in.
fn system() -> anyhow::Result<ExitCode> {
    let env = EnvVars::from_process();
    let Some(allocation) = milabench::resolve::slurm_allocation(&env)? else {
        anyhow::bail!(
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
fn submit_run(global: &GlobalArgs, args: &SlurmSubmitArgs) -> anyhow::Result<ExitCode> {
    let more = SettingsFlags {
        run_name: args.run_name.clone(),
        ..SettingsFlags::default()
    };
    let env = EnvVars::from_process();
    let session = suite_session(global, &args.suite, more, args.fidelity.clone(), env)?;
    let settings = session.settings();
    let profile = match args.profile.as_ref().or(settings.slurm.default.as_ref()) {
        None => None,
        Some(name) => Some(settings.slurm.profiles.get(name).with_context(|| {
            let known: Vec<&str> = settings.slurm.profiles.keys().map(String::as_str).collect();
            format!(
                "no sbatch profile `{name}` in the settings file\n  fix: use one of: {} (the settings file's `slurm.profiles`), or leave out --profile",
                if known.is_empty() { "(none defined)".to_string() } else { known.join(", ") }
            )
        })?),
    };
    // The folder is claimed for a moment: a run of the same name that exists (without
    // --resume) or runs now is refused before anything is submitted.
    let folder = session.claim_run_folder(args.resume)?;
    let run_dir = folder.path().to_path_buf();
    let run_name = session.resolved().run_name.clone();
    // The options of the cluster (profile, then the command line's), for every job submitted.
    let mut cluster_options = profile.map(|p| p.sbatch_options()).unwrap_or_default();
    cluster_options.extend(args.sbatch.iter().cloned());
    let benches: Vec<String> = match args.per_bench {
        true => session
            .resolved()
            .suite
            .runnable()
            .map(|b| b.name.clone())
            .collect(),
        false => Vec::new(),
    };
    let mut options = vec![format!("--job-name=milabench-{run_name}")];
    if args.per_bench {
        options.extend([
            format!("--output={}/slurm-%A_%a.out", run_dir.display()),
            format!("--array=0-{}%{}", benches.len() - 1, args.max_parallel),
        ]);
    } else {
        options.push(format!("--output={}/slurm-%j.out", run_dir.display()));
    }
    // A job Slurm requeues (after a node failure) adds to its output instead of replacing it.
    options.extend([
        "--ntasks-per-node=1".to_string(),
        "--open-mode=append".to_string(),
    ]);
    options.extend(cluster_options.iter().cloned());
    let cwd = std::env::current_dir().context("the current folder cannot be read")?;
    let program = program_words(global, &session)?;
    let mut command = program.clone();
    command.push("run".into());
    command.extend(suite_words(&session, args, !args.per_bench));
    command.extend(["--run-name".into(), run_name.clone(), "--resume".into()]);
    if args.per_bench {
        command.push("--share-run-folder".into());
    }
    if let Some(fidelity) = &args.fidelity {
        command.extend(["--fidelity".into(), fidelity.clone()]);
    }
    for (flag, on) in [("--no-check", args.no_check), ("--no-setup", args.no_setup)] {
        if on {
            command.push(flag.into());
        }
    }
    let script = BatchScript {
        comments: vec![
            format!(
                "milabench run `{run_name}`, written by `milabench slurm submit` ({}).",
                jiff::Zoned::now().strftime("%Y-%m-%d %H:%M:%S")
            ),
            "Submit it again with `sbatch THIS_FILE`: `run --resume` leaves out the benchmarks already complete.".into(),
        ],
        options,
        cwd: cwd.display().to_string(),
        per_task: benches
            .iter()
            .map(|b| vec!["--select".to_string(), b.clone()])
            .collect(),
        commands: vec![command],
    };
    let path = run_dir.join(SCRIPT_FILE);
    std::fs::write(&path, script.render())
        .with_context(|| format!("could not write the batch script {}", path.display()))?;
    drop(folder);
    let job = submit(&path, &cwd).map_err(|e| refused(&e, &path))?;
    if !args.per_bench {
        write_output(
            None,
            &format!("submitted job {job}\nrun folder: {}\n", run_dir.display()),
        )?;
        if !args.wait {
            return Ok(ExitCode::Success);
        }
        let output = run_dir.join(format!("slurm-{job}.out"));
        let status = follow(&job, &output)?;
        let (code, problem) = verdict(&format!("job {job}"), status.as_ref());
        if let Some(problem) = problem {
            warn(&format!(
                "{problem}; {}",
                resume_hint(&run_dir, &run_name, false)
            ));
        }
        return Ok(code);
    }
    write_output(
        None,
        &format!(
            "submitted job {job} (a job array: {} tasks, one per benchmark, at most {} at once)\nrun folder: {}\n",
            benches.len(),
            args.max_parallel,
            run_dir.display()
        ),
    )?;
    if !args.wait {
        let report_job = submit_report(&program, &session, args, &job, cluster_options, &cwd)?;
        write_output(
            None,
            &format!(
                "submitted report job {report_job}: once every task has ended, it writes {REPORT_TEXT} and {REPORT_PAGE} into the run folder\n"
            ),
        )?;
        return Ok(ExitCode::Success);
    }
    let mut code = follow_array(&job, &benches, &run_dir, &run_name)?;
    let (report, set) = session.report(&run_dir, &ReportOptions::default())?;
    for warning in set.warnings().into_iter().chain(report.score_problem()) {
        warn(&warning);
    }
    let text = render(&report, Format::Text);
    write_output(None, &text)?;
    for (name, contents) in [
        (REPORT_TEXT, text),
        (REPORT_PAGE, render_html(&report, &set)?),
    ] {
        let file = run_dir.join(name);
        std::fs::write(&file, contents)
            .with_context(|| format!("could not write the report {}", file.display()))?;
    }
    if !report.passes() {
        code = code.worst(ExitCode::BenchmarkFailures);
    }
    Ok(code)
}

/// The report job's script's name in the run folder (`--per-bench` without `--wait`).
pub const REPORT_SCRIPT_FILE: &str = "slurm-report.sh";

/// Writes and submits the job that reports the folder once every task of array `array` has
/// ended (`--dependency=afterany`): `report.html`, then `report.txt`. Its id.
fn submit_report(
    program: &[String],
    session: &milabench::Session,
    args: &SlurmSubmitArgs,
    array: &str,
    cluster_options: Vec<String>,
    cwd: &Path,
) -> anyhow::Result<String> {
    let run_dir = session.run_dir();
    let run_name = &session.resolved().run_name;
    let report = |format: &str, file: &str| {
        let mut words = program.to_vec();
        words.push("report".into());
        words.extend(suite_words(session, args, true));
        words.extend([
            "--runs".into(),
            run_dir.display().to_string(),
            "--format".into(),
            format.into(),
            "-o".into(),
            run_dir.join(file).display().to_string(),
        ]);
        words
    };
    let mut options = vec![
        format!("--job-name=milabench-{run_name}-report"),
        format!("--output={}/slurm-%j.out", run_dir.display()),
        "--ntasks=1".to_string(),
        format!("--dependency=afterany:{array}"),
    ];
    options.extend(cluster_options);
    let script = BatchScript {
        comments: vec![format!(
            "The report of milabench run `{run_name}` once every task of job array {array} has ended, written by `milabench slurm submit --per-bench`."
        )],
        options,
        cwd: cwd.display().to_string(),
        per_task: Vec::new(),
        commands: vec![report("html", REPORT_PAGE), report("text", REPORT_TEXT)],
    };
    let path = run_dir.join(REPORT_SCRIPT_FILE);
    std::fs::write(&path, script.render())
        .with_context(|| format!("could not write the batch script {}", path.display()))?;
    submit(&path, cwd).map_err(|e| {
        refused(&e, &path).context(format!(
            "job array {array} was submitted and runs; only its report job was not: report the folder yourself afterwards with `milabench report --runs {}`",
            run_dir.display()
        ))
    })
}

/// This program and its global options, as the jobs run it.
fn program_words(global: &GlobalArgs, session: &milabench::Session) -> anyhow::Result<Vec<String>> {
    let settings = session.settings();
    let exe = std::env::current_exe().context("cannot find the milabench program")?;
    let mut words = vec![
        exe.display().to_string(),
        "--base".into(),
        settings.base.to_string(),
    ];
    if let Some(file) = &global.settings {
        words.extend(["--settings".into(), absolute(file.as_std_path())?]);
    }
    if let Some(db) = &global.db {
        words.extend(["--db".into(), db.clone()]);
    }
    Ok(words)
}

/// The suite options of a job's command: the suite and system files, the selection (with
/// `selection`) and the overrides.
fn suite_words(
    session: &milabench::Session,
    args: &SlurmSubmitArgs,
    selection: bool,
) -> Vec<String> {
    let settings = session.settings();
    let mut words = Vec::new();
    if let Some(config) = &settings.config {
        words.extend(["--config".into(), config.to_string()]);
    }
    if let Some(system) = &settings.system {
        words.extend(["--system".into(), system.to_string()]);
    }
    if selection {
        for name in &args.suite.select {
            words.extend(["--select".into(), name.clone()]);
        }
        for name in &args.suite.exclude {
            words.extend(["--exclude".into(), name.clone()]);
        }
    }
    for value in &args.suite.overrides {
        words.extend(["--override".into(), value.clone()]);
    }
    words
}

fn absolute(path: &Path) -> anyhow::Result<String> {
    Ok(std::path::absolute(path)?.display().to_string())
}

/// sbatch missing or refusing the job, said with what Slurm said and what to change.
fn refused(error: &SlurmCommandError, script: &Path) -> anyhow::Error {
    if error.is_missing() {
        return anyhow::anyhow!(
            "{error}\n  fix: run this on a Slurm login node (sbatch on PATH), or run `milabench run` directly; the script is kept at {}",
            script.display()
        );
    }
    anyhow::anyhow!(
        "Slurm refused the job: {error}\n  fix: change the sbatch options Slurm objects to (the settings file's profile, or those after `--`: partition, account, time, gres, constraint), then submit again; the script is at {}",
        script.display()
    )
}

/// Follows job `job` until it ends, copying what lands in its output file to stdout; its last
/// known state (`None` when Slurm forgot it first).
fn follow(job: &str, output: &Path) -> anyhow::Result<Option<JobStatus>> {
    let mut shown = 0u64;
    let mut last: Option<JobStatus> = None;
    loop {
        let status = job_status(job)?;
        shown = copy_new(output, shown)?;
        match status {
            Some(status) if !status.ended() => {
                if last.as_ref().is_none_or(|l| l.state != status.state) {
                    note(&format!("job {job}: {}", describe(&status)));
                }
                last = Some(status);
            }
            ended => {
                // The output file may still be receiving its last lines.
                std::thread::sleep(Duration::from_millis(300));
                copy_new(output, shown)?;
                return Ok(ended.or(last));
            }
        }
        std::thread::sleep(POLL);
    }
}

/// How often a followed job's state is asked.
const POLL: Duration = Duration::from_millis(500);

/// Follows every task of job array `job` (task `i` runs `benches[i]`) until all have ended,
/// saying each change of state; the exit status the tasks make together.
fn follow_array(
    job: &str,
    benches: &[String],
    run_dir: &Path,
    run_name: &str,
) -> anyhow::Result<ExitCode> {
    let mut last: Vec<Option<JobStatus>> = vec![None; benches.len()];
    loop {
        let statuses = job_statuses(job)?;
        for status in &statuses {
            let Some(task) = status.task_index().filter(|&t| t < benches.len()) else {
                continue;
            };
            if last[task].as_ref().is_none_or(|l| l.state != status.state) {
                note(&format!(
                    "job {job}_{task} ({}): {}",
                    benches[task],
                    describe(status)
                ));
            }
            last[task] = Some(status.clone());
        }
        if statuses.iter().all(JobStatus::ended) {
            break;
        }
        std::thread::sleep(POLL);
    }
    let mut code = ExitCode::Success;
    let mut problems = 0;
    for (task, status) in last.iter().enumerate() {
        let label = format!("job {job}_{task} ({})", benches[task]);
        let (task_code, problem) = verdict(&label, status.as_ref());
        if let Some(problem) = problem {
            warn(&format!(
                "{problem} (its output: {}/slurm-{job}_{task}.out)",
                run_dir.display()
            ));
            problems += 1;
        }
        code = code.worst(task_code);
    }
    if problems > 0 {
        warn(&resume_hint(run_dir, run_name, true));
    }
    Ok(code)
}

/// Copies the bytes of `path` after `from` to stdout; the new length.
fn copy_new(path: &Path, from: u64) -> anyhow::Result<u64> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(from);
    };
    file.seek(std::io::SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(from + bytes.len() as u64)
}

fn describe(status: &JobStatus) -> String {
    match &status.reason {
        Some(reason) => format!("{} ({reason})", status.state),
        None => status.state.clone(),
    }
}

/// How to continue a run Slurm ended early.
fn resume_hint(run_dir: &Path, run_name: &str, per_bench: bool) -> String {
    let dir = run_dir.display();
    let per_bench = if per_bench { " --per-bench" } else { "" };
    format!(
        "the run folder {dir} keeps what was measured; continue it in a new job with `milabench slurm submit{per_bench} --run-name {run_name} --resume` and the same suite options (or `sbatch {dir}/{SCRIPT_FILE}`)"
    )
}

/// The exit status of a followed job (`label` names it): the suite's when the batch script
/// ran to its end; else what Slurm said and what to change.
fn verdict(label: &str, status: Option<&JobStatus>) -> (ExitCode, Option<String>) {
    let Some(status) = status else {
        return (
            ExitCode::BenchmarkFailures,
            Some(format!(
                "Slurm no longer knows {label}: its end was not seen"
            )),
        );
    };
    let nodes = status.nodes.as_deref().unwrap_or("its node");
    let problem = match status.state.as_str() {
        "COMPLETED" | "FAILED" if status.signal == 0 => {
            let code = status
                .exit_code
                .map_or(ExitCode::BenchmarkFailures, ExitCode::from_code);
            return (code, None);
        }
        "TIMEOUT" => format!(
            "{label} ran past its time limit and Slurm stopped it (TIMEOUT)\n  fix: ask for more time (`-- --time=HH:MM:SS`, or the profile's `time`)"
        ),
        "CANCELLED" => {
            let why = status
                .reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            return (
                ExitCode::Interrupted,
                Some(format!(
                    "{label} was cancelled{why}: `scancel`, an administrator, or a preemption"
                )),
            );
        }
        "NODE_FAIL" => format!(
            "{label} lost {nodes}: Slurm ended it {}\n  fix: see what became of the node (`scontrol show node {nodes}`, `sinfo -R`); leave it out with `-- --exclude={nodes}` until it is back",
            describe(status)
        ),
        "OUT_OF_MEMORY" => format!(
            "{label} ran out of memory: Slurm ended it {}\n  fix: ask for more memory (`-- --mem=...`), or lower the batch size with --override",
            describe(status)
        ),
        "PREEMPTED" => format!(
            "{label} was preempted: Slurm ended it {}\n  fix: submit it to a partition or QOS that is not preempted, or resume it as below",
            describe(status)
        ),
        _ => format!("{label} ended {}", describe(status)),
    };
    (ExitCode::BenchmarkFailures, Some(problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_ends_are_said_with_what_to_change() {
        let status = |line: &str| JobStatus::parse(line).expect("parses");
        let timeout =
            status("JobId=4 JobState=TIMEOUT Reason=TimeLimit NodeList=cn1 ExitCode=0:15");
        let (code, problem) = verdict("job 4", Some(&timeout));
        assert_eq!(code, ExitCode::BenchmarkFailures);
        assert!(problem.expect("said").contains("--time="));
        let failed = status("JobId=5 JobState=NODE_FAIL Reason=NodeDown NodeList=cn7 ExitCode=0:0");
        let (_, problem) = verdict("job 5", Some(&failed));
        let problem = problem.expect("said");
        for needle in ["lost cn7", "NODE_FAIL (NodeDown)", "--exclude=cn7"] {
            assert!(problem.contains(needle), "{needle}: {problem}");
        }
        let done = status("JobId=6 JobState=COMPLETED Reason=None ExitCode=1:0");
        assert_eq!(
            verdict("job 6", Some(&done)),
            (ExitCode::BenchmarkFailures, None)
        );
        let cancelled = status("JobId=7 JobState=CANCELLED Reason=None ExitCode=0:15");
        assert_eq!(verdict("job 7", Some(&cancelled)).0, ExitCode::Interrupted);
    }
}
