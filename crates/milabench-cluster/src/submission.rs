//! A suite run submitted to Slurm (`milabench slurm submit`): planned as a batch script (one
//! job running the whole suite, or a job array of one task per benchmark, whose report a last
//! job writes), submitted with `sbatch`, and followed to its end with the verdict of how Slurm
//! ended it. Nothing here prints: a followed job's states, its place in the queue while it
//! waits, and its output reach a [`JobObserver`].

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use milabench_exec::ExitCode;

use crate::slurm::{
    BatchScript, JobStatus, QueuePlace, SlurmCommandError, job_status, job_statuses, queue_place,
    submit,
};

/// The batch script's name in the run folder.
pub const SCRIPT_FILE: &str = "slurm-job.sh";

/// The report job's script's name in the run folder (a job array followed by no one).
pub const REPORT_SCRIPT_FILE: &str = "slurm-report.sh";

/// How often a followed job's state is asked.
const POLL: Duration = Duration::from_millis(500);

/// How often, at most, the queue is asked where a pending job stands (`squeue` lists every
/// pending job of the partition: heavier than one job's state), unless its state or reason
/// changes.
const QUEUE_POLL: Duration = Duration::from_secs(5);

/// What to submit: a suite run, the words its jobs run and the options Slurm gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionRequest {
    /// The run's name: the jobs' `--run-name`, and in their job names.
    pub run_name: String,
    /// The run folder: the scripts and the jobs' output files go there.
    pub run_dir: PathBuf,
    /// The folder the jobs run in and `sbatch` is run from.
    pub cwd: PathBuf,
    /// This program and its global options, as the jobs run it (`/path/milabench --base B`).
    pub program: Vec<String>,
    /// The suite options of the jobs' commands.
    pub suite: SuiteWords,
    /// One task per benchmark (a job array), or `None`: one job runs the whole suite.
    pub per_bench: Option<PerBench>,
    /// The sbatch options of every job (the settings profile's, then the command line's, which
    /// win), each one word (`--partition=gpu`).
    pub sbatch: Vec<String>,
    /// `run --fidelity` of the jobs.
    pub fidelity: Option<String>,
    /// Whether the jobs' `run` skips its preflight (`--no-check`).
    pub no_check: bool,
    /// Whether the jobs' `run` skips its install and prepare (`--no-setup`).
    pub no_setup: bool,
    /// The files the report job writes into the run folder, in order.
    pub reports: Vec<ReportOutput>,
    /// When the scripts are written (local time, shown in their top comment).
    pub written_at: jiff::civil::DateTime,
}

/// The suite options of a job's command, as words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuiteWords {
    /// `--config FILE`, `--system FILE`.
    pub files: Vec<String>,
    /// `--select NAMES`, `--exclude NAMES`: left out of the tasks of a job array, each of
    /// which selects its one benchmark.
    pub selection: Vec<String>,
    /// `--override VALUE`.
    pub overrides: Vec<String>,
}

impl SuiteWords {
    /// The words, with the selection or without.
    fn words(&self, selection: bool) -> Vec<String> {
        let selection = if selection { &self.selection[..] } else { &[] };
        [&self.files[..], selection, &self.overrides[..]].concat()
    }
}

/// A job array of one task per benchmark, all writing into the one run folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerBench {
    /// The benchmarks (at least one): task `i` runs the `i`-th.
    pub benches: Vec<String>,
    /// How many tasks may run at once (`--array=...%CAP`).
    pub max_parallel: u32,
}

/// A file the report job writes: `milabench report --format FORMAT -o <run folder>/FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOutput {
    /// The report's format (`html`, `text`).
    pub format: String,
    /// The file's name in the run folder.
    pub file: String,
}

/// Why a submission, or following it, failed; each says what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// A batch script could not be written.
    #[error("could not write the batch script {}", path.display())]
    Write {
        /// The script.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `sbatch` is not installed here.
    #[error(
        "the job was not submitted: `sbatch` could not be run\n  fix: run this on a Slurm login node (sbatch on PATH), or run `milabench run` directly; the script is kept at {}",
        script.display()
    )]
    NoSbatch {
        /// The failed start.
        #[source]
        said: SlurmCommandError,
        /// The script not submitted.
        script: PathBuf,
    },
    /// Slurm refused the job.
    #[error(
        "Slurm refused the job: {said}\n  fix: change the sbatch options Slurm objects to (the settings file's profile, or those after `--`: partition, account, time, gres, constraint), then submit again; the script is at {}",
        script.display()
    )]
    Refused {
        /// What Slurm said, in the message.
        said: SlurmCommandError,
        /// The script not submitted.
        script: PathBuf,
    },
    /// The job array was submitted, its report job was not.
    #[error(
        "job array {array} was submitted and runs; only its report job was not: report the folder yourself afterwards with `milabench report --runs {}`",
        run_dir.display()
    )]
    ReportJob {
        /// The job array's id.
        array: String,
        /// The run folder.
        run_dir: PathBuf,
        /// Why the report job was not submitted.
        #[source]
        source: Box<SubmitError>,
    },
    /// Slurm could not be asked how a job is.
    #[error(transparent)]
    Status(#[from] SlurmCommandError),
    /// The followed job's output file could not be read.
    #[error("could not read the job's output {}", path.display())]
    ReadOutput {
        /// The output file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The observer could not take the job's output.
    #[error("could not pass on the job's output")]
    PassOutput(#[source] std::io::Error),
}

impl SubmitError {
    /// Whether the error is the user's input (Slurm refusing the options, no Slurm here, a
    /// job Slurm will not tell about) rather than the machine failing (a script or output file
    /// that cannot be written or read, a Slurm client that cannot be started).
    pub fn is_bad_input(&self) -> bool {
        match self {
            SubmitError::NoSbatch { .. } | SubmitError::Refused { .. } => true,
            SubmitError::ReportJob { source, .. } => source.is_bad_input(),
            SubmitError::Status(SlurmCommandError::Start { source, .. }) => !matches!(
                source,
                milabench_exec::HelperError::Start { .. }
                    | milabench_exec::HelperError::Read { .. }
            ),
            SubmitError::Status(SlurmCommandError::Refused { .. }) => true,
            SubmitError::Write { .. }
            | SubmitError::ReadOutput { .. }
            | SubmitError::PassOutput(_) => false,
        }
    }
}

/// What a followed job does, as it happens.
pub trait JobObserver {
    /// Job `label` (`job 12`, `job 12_3 (resnet50)` for a task of an array, `job 12_[2-3%1]`
    /// for the tasks of an array not started yet) is in a state, with a reason, other than the
    /// last seen, or, while it waits (`PENDING`), has moved in the queue: `queue` is its place
    /// there, when Slurm's `squeue` says it. The end of a single job comes back from
    /// [`follow`] instead; the tasks of an array are said ending too.
    fn on_state(&mut self, label: &str, status: &JobStatus, queue: Option<&QueuePlace>);

    /// `bytes` were added to the followed job's output file (not for a job array, whose tasks
    /// write one file each).
    fn on_output(&mut self, bytes: &[u8]) -> std::io::Result<()>;
}

/// How a followed submission ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status: the suite's, or the worst of the tasks' for a job array.
    pub code: ExitCode,
    /// What to say about the jobs Slurm ended early (what to change, how to resume), in order;
    /// empty when none was.
    pub problems: Vec<String>,
}

/// A suite run planned as batch scripts: [`write`](Submission::write) the script, then
/// [`submit`](Submission::submit) it, and [`wait`](Submission::wait) for it or, for a job array,
/// [`submit_report`](Submission::submit_report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    request: SubmissionRequest,
    /// The batch script of the run: one job, or a job array of one task per benchmark.
    pub script: BatchScript,
    /// Where it is written: [`SCRIPT_FILE`] in the run folder.
    pub script_path: PathBuf,
}

impl Submission {
    /// The batch script that runs `request`'s suite: `run` of this program with the same suite
    /// options, `--run-name` of the folder and `--resume`, so that submitting it again
    /// finishes what an ended job left; for a job array, each task adds `--select` of its
    /// benchmark and runs with `--share-run-folder`.
    pub fn plan(request: &SubmissionRequest) -> Submission {
        let r = request;
        let run_dir = r.run_dir.display();
        let mut options = vec![format!("--job-name=milabench-{}", r.run_name)];
        match &r.per_bench {
            Some(per_bench) => options.extend([
                format!("--output={run_dir}/slurm-%A_%a.out"),
                format!(
                    "--array=0-{}%{}",
                    per_bench.benches.len().saturating_sub(1),
                    per_bench.max_parallel
                ),
            ]),
            None => options.push(format!("--output={run_dir}/slurm-%j.out")),
        }
        // A job Slurm requeues (after a node failure) adds to its output instead of replacing it.
        options.extend([
            "--ntasks-per-node=1".to_string(),
            "--open-mode=append".to_string(),
        ]);
        options.extend(r.sbatch.iter().cloned());
        let mut command = r.program.clone();
        command.push("run".into());
        command.extend(r.suite.words(r.per_bench.is_none()));
        command.extend(["--run-name".into(), r.run_name.clone(), "--resume".into()]);
        if r.per_bench.is_some() {
            command.push("--share-run-folder".into());
        }
        if let Some(fidelity) = &r.fidelity {
            command.extend(["--fidelity".into(), fidelity.clone()]);
        }
        for (flag, on) in [("--no-check", r.no_check), ("--no-setup", r.no_setup)] {
            if on {
                command.push(flag.into());
            }
        }
        let script = BatchScript {
            comments: vec![
                format!(
                    "milabench run `{}`, written by `milabench slurm submit` ({}).",
                    r.run_name,
                    r.written_at.strftime("%Y-%m-%d %H:%M:%S")
                ),
                "Submit it again with `sbatch THIS_FILE`: `run --resume` leaves out the benchmarks already complete.".into(),
            ],
            options,
            cwd: r.cwd.display().to_string(),
            per_task: r
                .per_bench
                .iter()
                .flat_map(|p| &p.benches)
                .map(|b| vec!["--select".to_string(), b.clone()])
                .collect(),
            commands: vec![command],
        };
        Submission {
            request: request.clone(),
            script,
            script_path: r.run_dir.join(SCRIPT_FILE),
        }
    }

    /// What was asked.
    pub fn request(&self) -> &SubmissionRequest {
        &self.request
    }

    /// Writes the batch script to [`script_path`](Submission::script_path).
    pub fn write(&self) -> Result<(), SubmitError> {
        write_script(&self.script_path, &self.script)
    }

    /// Submits the written batch script; the job's id.
    pub fn submit(&self) -> Result<String, SubmitError> {
        sbatch(&self.script_path, &self.request.cwd)
    }

    /// The script of the job that reports the run folder once every task of job array `array`
    /// has ended (`--dependency=afterany`): one `milabench report` per file of
    /// [`SubmissionRequest::reports`].
    pub fn report_script(&self, array: &str) -> BatchScript {
        let r = &self.request;
        let run_dir = r.run_dir.display();
        let report = |output: &ReportOutput| {
            let mut words = r.program.clone();
            words.push("report".into());
            words.extend(r.suite.words(true));
            words.extend([
                "--runs".into(),
                run_dir.to_string(),
                "--format".into(),
                output.format.clone(),
                "-o".into(),
                r.run_dir.join(&output.file).display().to_string(),
            ]);
            words
        };
        let mut options = vec![
            format!("--job-name=milabench-{}-report", r.run_name),
            format!("--output={run_dir}/slurm-%j.out"),
            "--ntasks=1".to_string(),
            format!("--dependency=afterany:{array}"),
        ];
        options.extend(r.sbatch.iter().cloned());
        BatchScript {
            comments: vec![format!(
                "The report of milabench run `{}` once every task of job array {array} has ended, written by `milabench slurm submit --per-bench`.",
                r.run_name
            )],
            options,
            cwd: r.cwd.display().to_string(),
            per_task: Vec::new(),
            commands: r.reports.iter().map(report).collect(),
        }
    }

    /// Writes the [report script](Submission::report_script) of job array `array` to
    /// [`REPORT_SCRIPT_FILE`] in the run folder and submits it; its job's id.
    pub fn submit_report(&self, array: &str) -> Result<String, SubmitError> {
        let path = self.request.run_dir.join(REPORT_SCRIPT_FILE);
        write_script(&path, &self.report_script(array))?;
        sbatch(&path, &self.request.cwd).map_err(|source| SubmitError::ReportJob {
            array: array.into(),
            run_dir: self.request.run_dir.clone(),
            source: Box::new(source),
        })
    }

    /// Follows job `job` (this submission's) until it ends, or every task of its array: the
    /// exit status and what to say about the jobs Slurm ended early.
    pub fn wait(&self, job: &str, observer: &mut dyn JobObserver) -> Result<Outcome, SubmitError> {
        let run_dir = &self.request.run_dir;
        let Some(per_bench) = &self.request.per_bench else {
            let output = run_dir.join(format!("slurm-{job}.out"));
            let status = follow(job, &output, observer)?;
            let (code, problem) = verdict(&format!("job {job}"), status.as_ref());
            let problems = problem
                .map(|problem| format!("{problem}; {}", self.resume_hint()))
                .into_iter()
                .collect();
            return Ok(Outcome { code, problems });
        };
        let last = follow_array(job, &per_bench.benches, observer)?;
        let mut code = ExitCode::Success;
        let mut problems = Vec::new();
        for (task, (bench, status)) in per_bench.benches.iter().zip(&last).enumerate() {
            let (task_code, problem) = verdict(&task_label(job, task, bench), status.as_ref());
            if let Some(problem) = problem {
                problems.push(format!(
                    "{problem} (its output: {}/slurm-{job}_{task}.out)",
                    run_dir.display()
                ));
            }
            code = code.worst(task_code);
        }
        if !problems.is_empty() {
            problems.push(self.resume_hint());
        }
        Ok(Outcome { code, problems })
    }

    /// How to continue a run Slurm ended early.
    fn resume_hint(&self) -> String {
        let r = &self.request;
        let dir = r.run_dir.display();
        let per_bench = if r.per_bench.is_some() {
            " --per-bench"
        } else {
            ""
        };
        format!(
            "the run folder {dir} keeps what was measured; continue it in a new job with `milabench slurm submit{per_bench} --run-name {} --resume` and the same suite options (or `sbatch {dir}/{SCRIPT_FILE}`)",
            r.run_name
        )
    }
}

/// Writes `script` to `path`.
fn write_script(path: &Path, script: &BatchScript) -> Result<(), SubmitError> {
    std::fs::write(path, script.render()).map_err(|source| SubmitError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Submits the script at `script` from `cwd`: its job's id, or sbatch missing or refusing it.
fn sbatch(script: &Path, cwd: &Path) -> Result<String, SubmitError> {
    submit(script, cwd).map_err(|said| {
        let script = script.to_path_buf();
        if said.is_missing() {
            SubmitError::NoSbatch { said, script }
        } else {
            SubmitError::Refused { said, script }
        }
    })
}

/// How task `task` of job array `job`, running `bench`, is named.
fn task_label(job: &str, task: usize, bench: &str) -> String {
    format!("job {job}_{task} ({bench})")
}

/// What was last said of one followed job: its state, reason and place in the queue.
type Said = (String, Option<String>, Option<QueuePlace>);

/// Says `status` of job `label` to `observer` unless it is what was said last (`said`).
fn say(
    observer: &mut dyn JobObserver,
    said: &mut Option<Said>,
    label: &str,
    status: &JobStatus,
    queue: Option<QueuePlace>,
) {
    let now = (status.state.clone(), status.reason.clone(), queue);
    if said.as_ref() != Some(&now) {
        observer.on_state(label, status, now.2.as_ref());
        *said = Some(now);
    }
}

/// Where a pending job stands in the queue: asked of `squeue` when the job's state or reason
/// changes, else at most every [`QUEUE_POLL`].
#[derive(Default)]
struct QueueWatch {
    asked: Option<(Instant, String, Option<String>)>,
    place: Option<QueuePlace>,
}

impl QueueWatch {
    /// The place of job `job` (an id, or an array's id for its pending tasks) in state
    /// `status`: `None` unless it is pending in a known partition. A queue that cannot be asked
    /// (no `squeue`, a refusal) gives no place: the place helps the person waiting, the job is
    /// followed all the same.
    fn place(&mut self, job: &str, status: &JobStatus) -> Option<QueuePlace> {
        let partition = status.partition.as_deref().filter(|_| status.pending());
        let Some(partition) = partition else {
            *self = QueueWatch::default();
            return None;
        };
        let due = self.asked.as_ref().is_none_or(|(at, state, reason)| {
            *state != status.state || *reason != status.reason || at.elapsed() >= QUEUE_POLL
        });
        if due {
            self.place = queue_place(job, partition).ok().flatten();
            self.asked = Some((Instant::now(), status.state.clone(), status.reason.clone()));
        }
        self.place.clone()
    }
}

/// Follows job `job` until it ends, passing what lands in its output file `output` to
/// `observer` as it lands, and each change of its state (with its place in the queue while it
/// waits); its last known state (`None` when Slurm forgot it first).
pub fn follow(
    job: &str,
    output: &Path,
    observer: &mut dyn JobObserver,
) -> Result<Option<JobStatus>, SubmitError> {
    let label = format!("job {job}");
    let mut shown = 0u64;
    let mut last: Option<JobStatus> = None;
    let mut said = None;
    let mut queue = QueueWatch::default();
    loop {
        let status = job_status(job)?;
        shown = pass_on_new(output, shown, observer)?;
        match status {
            Some(status) if !status.ended() => {
                let place = queue.place(job, &status);
                say(observer, &mut said, &label, &status, place);
                last = Some(status);
            }
            ended => {
                // The output file may still be receiving its last lines.
                std::thread::sleep(Duration::from_millis(300));
                pass_on_new(output, shown, observer)?;
                return Ok(ended.or(last));
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Follows every task of job array `job` (task `i` runs `benches[i]`) until all have ended,
/// saying each change of state to `observer`, and where the tasks not started yet stand in the
/// queue; the last known state of each task (`None` for one never seen started).
pub fn follow_array(
    job: &str,
    benches: &[String],
    observer: &mut dyn JobObserver,
) -> Result<Vec<Option<JobStatus>>, SubmitError> {
    let mut last: Vec<Option<JobStatus>> = vec![None; benches.len()];
    let mut said: Vec<Option<Said>> = vec![None; benches.len()];
    let mut queues: Vec<QueueWatch> = benches.iter().map(|_| QueueWatch::default()).collect();
    let mut waiting_said = None;
    let mut waiting_queue = QueueWatch::default();
    loop {
        let statuses = job_statuses(job)?;
        for status in &statuses {
            let Some(task) = status.task_index().filter(|&t| t < benches.len()) else {
                // The tasks not started yet, as one line (`ArrayTaskId=2-3%1`).
                if let Some(tasks) = status.array_task.as_deref().filter(|_| !status.ended()) {
                    let place = waiting_queue.place(job, status);
                    let label = format!("job {job}_[{tasks}]");
                    say(observer, &mut waiting_said, &label, status, place);
                }
                continue;
            };
            let place = queues[task].place(&format!("{job}_{task}"), status);
            say(
                observer,
                &mut said[task],
                &task_label(job, task, &benches[task]),
                status,
                place,
            );
            last[task] = Some(status.clone());
        }
        if statuses.iter().all(JobStatus::ended) {
            return Ok(last);
        }
        std::thread::sleep(POLL);
    }
}

/// Passes the bytes of `path` after `from` to `observer`; the new length (`from` while the file
/// does not exist).
fn pass_on_new(path: &Path, from: u64, observer: &mut dyn JobObserver) -> Result<u64, SubmitError> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(from);
    };
    let mut bytes = Vec::new();
    file.seek(std::io::SeekFrom::Start(from))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|source| SubmitError::ReadOutput {
            path: path.to_path_buf(),
            source,
        })?;
    observer
        .on_output(&bytes)
        .map_err(SubmitError::PassOutput)?;
    Ok(from + bytes.len() as u64)
}

/// The exit status of a followed job (`label` names it): the suite's when the batch script
/// ran to its end; else what Slurm said and what to change.
pub fn verdict(label: &str, status: Option<&JobStatus>) -> (ExitCode, Option<String>) {
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
            status.describe()
        ),
        "OUT_OF_MEMORY" => format!(
            "{label} ran out of memory: Slurm ended it {}\n  fix: ask for more memory (`-- --mem=...`), or lower the batch size with --override",
            status.describe()
        ),
        "PREEMPTED" => format!(
            "{label} was preempted: Slurm ended it {}\n  fix: submit it to a partition or QOS that is not preempted, or resume it as below",
            status.describe()
        ),
        _ => format!("{label} ended {}", status.describe()),
    };
    (ExitCode::BenchmarkFailures, Some(problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request like `milabench --settings s.yaml slurm submit --config suite.yaml
    /// --override good.weight=2 --select good,gate --no-setup -- --time=5`.
    fn request(per_bench: Option<PerBench>) -> SubmissionRequest {
        let words = |w: &[&str]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        SubmissionRequest {
            run_name: "golden".into(),
            run_dir: "/p/base/runs/golden".into(),
            cwd: "/p".into(),
            program: words(&[
                "/bin/milabench",
                "--base",
                "/p/base",
                "--settings",
                "/p/s.yaml",
            ]),
            suite: SuiteWords {
                files: words(&["--config", "/p/suite.yaml"]),
                selection: words(&["--select", "good", "--select", "gate"]),
                overrides: words(&["--override", "good.argv={--x: \"a b\"}"]),
            },
            per_bench,
            sbatch: words(&["--partition=long", "--time=5"]),
            fidelity: Some("smoke".into()),
            no_check: false,
            no_setup: true,
            reports: vec![
                ReportOutput {
                    format: "html".into(),
                    file: "report.html".into(),
                },
                ReportOutput {
                    format: "text".into(),
                    file: "report.txt".into(),
                },
            ],
            written_at: jiff::civil::date(2025, 3, 4).at(5, 6, 7, 0),
        }
    }

    #[test]
    fn one_job_runs_the_whole_selection_and_resumes() {
        let submission = Submission::plan(&request(None));
        assert_eq!(
            submission.script_path,
            Path::new("/p/base/runs/golden/slurm-job.sh")
        );
        assert_eq!(
            submission.script.render(),
            r#"#!/bin/sh
# milabench run `golden`, written by `milabench slurm submit` (2025-03-04 05:06:07).
# Submit it again with `sbatch THIS_FILE`: `run --resume` leaves out the benchmarks already complete.
#SBATCH --job-name=milabench-golden
#SBATCH --output=/p/base/runs/golden/slurm-%j.out
#SBATCH --ntasks-per-node=1
#SBATCH --open-mode=append
#SBATCH --partition=long
#SBATCH --time=5
cd /p || exit 2
exec /bin/milabench \
    --base /p/base \
    --settings /p/s.yaml \
    run \
    --config /p/suite.yaml \
    --select good \
    --select gate \
    --override 'good.argv={--x: "a b"}' \
    --run-name golden \
    --resume \
    --fidelity smoke \
    --no-setup
"#
        );
    }

    #[test]
    fn a_job_array_gives_each_task_its_benchmark_and_a_last_job_reports() {
        let submission = Submission::plan(&request(Some(PerBench {
            benches: vec!["good".into(), "gate".into()],
            max_parallel: 3,
        })));
        assert_eq!(
            submission.script.render(),
            r#"#!/bin/sh
# milabench run `golden`, written by `milabench slurm submit` (2025-03-04 05:06:07).
# Submit it again with `sbatch THIS_FILE`: `run --resume` leaves out the benchmarks already complete.
#SBATCH --job-name=milabench-golden
#SBATCH --output=/p/base/runs/golden/slurm-%A_%a.out
#SBATCH --array=0-1%3
#SBATCH --ntasks-per-node=1
#SBATCH --open-mode=append
#SBATCH --partition=long
#SBATCH --time=5
cd /p || exit 2
case "${SLURM_ARRAY_TASK_ID:-}" in
  0) set -- --select good ;;
  1) set -- --select gate ;;
  *) echo "array task '${SLURM_ARRAY_TASK_ID:-}': this script has tasks 0-1; submit it with --array" >&2; exit 2 ;;
esac
exec /bin/milabench \
    --base /p/base \
    --settings /p/s.yaml \
    run \
    --config /p/suite.yaml \
    --override 'good.argv={--x: "a b"}' \
    --run-name golden \
    --resume \
    --share-run-folder \
    --fidelity smoke \
    --no-setup \
    "$@"
"#
        );
        assert_eq!(
            submission.report_script("41").render(),
            r#"#!/bin/sh
# The report of milabench run `golden` once every task of job array 41 has ended, written by `milabench slurm submit --per-bench`.
#SBATCH --job-name=milabench-golden-report
#SBATCH --output=/p/base/runs/golden/slurm-%j.out
#SBATCH --ntasks=1
#SBATCH --dependency=afterany:41
#SBATCH --partition=long
#SBATCH --time=5
cd /p || exit 2
/bin/milabench \
    --base /p/base \
    --settings /p/s.yaml \
    report \
    --config /p/suite.yaml \
    --select good \
    --select gate \
    --override 'good.argv={--x: "a b"}' \
    --runs /p/base/runs/golden \
    --format html \
    -o /p/base/runs/golden/report.html
exec /bin/milabench \
    --base /p/base \
    --settings /p/s.yaml \
    report \
    --config /p/suite.yaml \
    --select good \
    --select gate \
    --override 'good.argv={--x: "a b"}' \
    --runs /p/base/runs/golden \
    --format text \
    -o /p/base/runs/golden/report.txt
"#
        );
    }

    #[test]
    fn a_missing_sbatch_keeps_the_written_script_and_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut request = request(None);
        request.run_dir = dir.path().to_path_buf();
        let submission = Submission::plan(&request);
        submission.write().expect("written");
        let written = std::fs::read_to_string(&submission.script_path).expect("read");
        assert_eq!(written, submission.script.render());
        // `submit` of a script is `sbatch`'s; its absence is tested where PATH is the test's
        // own (tests/it/slurm.rs). The message it gets:
        let said = SlurmCommandError::Start {
            program: "sbatch".into(),
            source: milabench_exec::HelperError::NotFound {
                program: "sbatch".into(),
            },
        };
        let error = SubmitError::NoSbatch {
            said,
            script: submission.script_path.clone(),
        };
        let text = error.to_string();
        assert!(
            text.starts_with("the job was not submitted: `sbatch` could not be run\n")
                && text.contains("fix: run this on a Slurm login node")
                && text.ends_with("slurm-job.sh"),
            "{text}"
        );
    }

    /// Keeps what it is told.
    #[derive(Default)]
    struct Recorder {
        states: Vec<String>,
        output: Vec<u8>,
    }

    impl JobObserver for Recorder {
        fn on_state(&mut self, label: &str, status: &JobStatus, queue: Option<&QueuePlace>) {
            let place = queue.map(|q| format!(", {}", q.describe()));
            self.states.push(format!(
                "{label}: {}{}",
                status.describe(),
                place.unwrap_or_default()
            ));
        }

        fn on_output(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            self.output.extend_from_slice(bytes);
            Ok(())
        }
    }

    #[test]
    fn only_the_new_bytes_of_an_output_file_are_passed_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("slurm-1.out");
        let mut recorder = Recorder::default();
        assert_eq!(
            pass_on_new(&path, 0, &mut recorder).expect("no file yet"),
            0
        );
        std::fs::write(&path, "one\n").expect("write");
        let shown = pass_on_new(&path, 0, &mut recorder).expect("read");
        std::fs::write(&path, "one\ntwo\n").expect("write");
        let shown = pass_on_new(&path, shown, &mut recorder).expect("read");
        assert_eq!((shown, recorder.output.as_slice()), (8, &b"one\ntwo\n"[..]));
        assert!(recorder.states.is_empty());
    }

    #[test]
    fn a_state_is_said_once_until_its_reason_or_place_changes() {
        let status = |line: &str| JobStatus::parse(line).expect("parses");
        let priority = status("JobId=4 JobState=PENDING Reason=Priority Partition=gpu");
        let resources = status("JobId=4 JobState=PENDING Reason=Resources Partition=gpu");
        let running = status("JobId=4 JobState=RUNNING Reason=None Partition=gpu NodeList=cn1");
        let place = |position| QueuePlace {
            position,
            pending: 3,
            partition: "gpu".into(),
        };
        let mut recorder = Recorder::default();
        let mut said = None;
        for (status, queue) in [
            (&priority, Some(place(3))),
            (&priority, Some(place(3))),
            (&priority, Some(place(2))),
            (&resources, Some(place(2))),
            (&running, None),
            (&running, None),
        ] {
            say(&mut recorder, &mut said, "job 4", status, queue);
        }
        assert_eq!(
            recorder.states,
            [
                "job 4: PENDING (Priority), queue position 3 of 3 in partition gpu",
                "job 4: PENDING (Priority), queue position 2 of 3 in partition gpu",
                "job 4: PENDING (Resources), queue position 2 of 3 in partition gpu",
                "job 4: RUNNING",
            ]
        );
        // Not waiting, the queue is not asked.
        assert_eq!(QueueWatch::default().place("4", &running), None);
    }

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
        let (code, problem) = verdict("job 8", None);
        assert_eq!(code, ExitCode::BenchmarkFailures);
        assert!(problem.expect("said").contains("no longer knows job 8"));
    }
}
