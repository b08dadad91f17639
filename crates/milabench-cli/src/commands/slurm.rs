//! `milabench slurm system|submit`: the system of the allocation this runs in, and a suite run
//! submitted as a batch job (followed to its end with `--wait`).

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use milabench::ExitCode;
use milabench::cluster::slurm::{BatchScript, JobStatus, SlurmCommandError, job_status, submit};
use milabench::config::settings::{EnvVars, SettingsFlags};

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

/// Writes the batch script into the run folder, submits it, and follows it with `--wait`.
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
    let mut options = vec![
        format!("--job-name=milabench-{run_name}"),
        format!("--output={}/slurm-%j.out", run_dir.display()),
        "--ntasks-per-node=1".to_string(),
    ];
    options.extend(profile.map(|p| p.sbatch_options()).unwrap_or_default());
    options.extend(args.sbatch.iter().cloned());
    let cwd = std::env::current_dir().context("the current folder cannot be read")?;
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
        command: run_command(global, args, &session, &run_name)?,
    };
    let path = run_dir.join(SCRIPT_FILE);
    std::fs::write(&path, script.render())
        .with_context(|| format!("could not write the batch script {}", path.display()))?;
    drop(folder);
    let job = submit(&path, &cwd).map_err(|e| refused(&e, &path))?;
    write_output(
        None,
        &format!("submitted job {job}\nrun folder: {}\n", run_dir.display()),
    )?;
    if !args.wait {
        return Ok(ExitCode::Success);
    }
    let output = run_dir.join(format!("slurm-{job}.out"));
    let status = follow(&job, &output)?;
    Ok(verdict(&job, status.as_ref(), &run_dir, &run_name))
}

/// The `run` command the job runs: this program, the same settings and suite options, the
/// run's name, `--resume`.
fn run_command(
    global: &GlobalArgs,
    args: &SlurmSubmitArgs,
    session: &milabench::Session,
    run_name: &str,
) -> anyhow::Result<Vec<String>> {
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
    words.push("run".into());
    if let Some(config) = &settings.config {
        words.extend(["--config".into(), config.to_string()]);
    }
    if let Some(system) = &settings.system {
        words.extend(["--system".into(), system.to_string()]);
    }
    words.extend(["--run-name".into(), run_name.to_string(), "--resume".into()]);
    for name in &args.suite.select {
        words.extend(["--select".into(), name.clone()]);
    }
    for name in &args.suite.exclude {
        words.extend(["--exclude".into(), name.clone()]);
    }
    for value in &args.suite.overrides {
        words.extend(["--override".into(), value.clone()]);
    }
    if let Some(fidelity) = &args.fidelity {
        words.extend(["--fidelity".into(), fidelity.clone()]);
    }
    for (flag, on) in [("--no-check", args.no_check), ("--no-setup", args.no_setup)] {
        if on {
            words.push(flag.into());
        }
    }
    Ok(words)
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
        std::thread::sleep(Duration::from_millis(500));
    }
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

/// The exit status of a followed job: the suite's when the batch script ran to its end; a
/// message with what to do when Slurm ended it.
fn verdict(job: &str, status: Option<&JobStatus>, run_dir: &Path, run_name: &str) -> ExitCode {
    let resume = format!(
        "the run folder {} keeps what was measured; continue it in a new job with `milabench slurm submit --run-name {run_name} --resume` and the same suite options (or `sbatch {}/{SCRIPT_FILE}`)",
        run_dir.display(),
        run_dir.display()
    );
    let Some(status) = status else {
        warn(&format!(
            "Slurm no longer knows job {job}: its end was not seen; {resume}"
        ));
        return ExitCode::BenchmarkFailures;
    };
    match status.state.as_str() {
        "COMPLETED" | "FAILED" if status.signal == 0 => match status.exit_code {
            Some(0) => ExitCode::Success,
            Some(2) => ExitCode::BadInput,
            Some(130) => ExitCode::Interrupted,
            Some(3) => ExitCode::Internal,
            _ => ExitCode::BenchmarkFailures,
        },
        "TIMEOUT" => {
            warn(&format!(
                "job {job} ran past its time limit and Slurm stopped it\n  fix: ask for more time (`-- --time=HH:MM:SS`, or the profile's `time`); {resume}"
            ));
            ExitCode::BenchmarkFailures
        }
        "CANCELLED" => {
            warn(&format!(
                "job {job} was cancelled{}; {resume}",
                status
                    .reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
            ExitCode::Interrupted
        }
        _ => {
            warn(&format!("job {job} ended {}; {resume}", describe(status)));
            ExitCode::BenchmarkFailures
        }
    }
}
