//! Slurm, the scheduler most GPU clusters already run: what an allocation holds (its node list
//! expanded as Slurm expands it, GPUs and CPUs per task, read from the `SLURM_*` variables of
//! a job), the system that allocation makes, and the calls to `sbatch`, `scontrol` and `squeue`
//! that submit and follow a job (its state, and while it waits its place in the queue). Nothing
//! here prints.

use std::path::Path;
use std::time::Duration;

use milabench_exec::{HelperCommand, HelperError};
use milabench_vocab::shell_quote;

/// Most host names one node list may expand to (Slurm's own lists stay far below).
pub const MAX_HOSTS: usize = 1 << 16;

/// Why a node list cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeListError {
    /// A `[` without its `]`, a `]` without its `[`, or brackets inside brackets.
    #[error(
        "node list `{list}`: unbalanced brackets; write ranges as `cn[01-04,07]`, one level of brackets"
    )]
    Brackets {
        /// The whole list.
        list: String,
    },
    /// Text after the last bracket of a name (`cn[1-2]-ib`), which Slurm refuses too.
    #[error(
        "node list `{list}`: `{name}` has text after its last bracket; Slurm accepts text between bracket groups (`rack[1-2]-n[01-02]`) but not after the last one"
    )]
    Suffix {
        /// The whole list.
        list: String,
        /// The name.
        name: String,
    },
    /// A bracket item that is not `N` or `N-M` with `N <= M`.
    #[error(
        "node list `{list}`: `{item}` is not a range; write a number or `FIRST-LAST` with FIRST <= LAST (digits only)"
    )]
    Range {
        /// The whole list.
        list: String,
        /// The item.
        item: String,
    },
    /// More names than [`MAX_HOSTS`].
    #[error("node list `{list}` expands to more than {MAX_HOSTS} names; is a range mistyped?")]
    TooMany {
        /// The whole list.
        list: String,
    },
}

/// Expands a Slurm node list (`cn[01-04,07]`, `a[1-2],b3`, `rack[1-2]-n[01-02]`) into host
/// names, in Slurm's order: names as listed; within a name, the last bracket group varies
/// fastest and the others slower from left to right (`x[1-2]y[3-4]z[5-6]`: `x1y3z5 x1y3z6
/// x2y3z5 ...`). A range keeps the width of its first number (`[08-11]` gives `08`...`11`,
/// `[9-11]` gives `9`, `10`, `11`). Commas and white space separate names outside brackets.
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, NodeListError> {
    let mut hosts = Vec::new();
    for name in split_names(list)? {
        expand_name(list, name, &mut hosts)?;
    }
    Ok(hosts)
}

/// The names of `list`: split at commas and white space outside brackets, empty ones dropped.
fn split_names(list: &str) -> Result<Vec<&str>, NodeListError> {
    let brackets = || NodeListError::Brackets { list: list.into() };
    let mut names = Vec::new();
    let mut depth = 0u8;
    let mut start = 0;
    for (at, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            ']' if depth == 1 => depth = 0,
            '[' | ']' => return Err(brackets()),
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                names.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(brackets());
    }
    names.push(&list[start..]);
    Ok(names.into_iter().filter(|n| !n.is_empty()).collect())
}

/// Appends the names one bracketed name expands to, in Slurm's order.
fn expand_name(list: &str, name: &str, out: &mut Vec<String>) -> Result<(), NodeListError> {
    let mut texts = Vec::new();
    let mut groups = Vec::new();
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let close = rest.find(']').expect("brackets are balanced");
        texts.push(&rest[..open]);
        groups.push(expand_ranges(list, &rest[open + 1..close])?);
        rest = &rest[close + 1..];
    }
    if groups.is_empty() {
        out.push(name.to_string());
        return Ok(());
    }
    if !rest.is_empty() {
        return Err(NodeListError::Suffix {
            list: list.into(),
            name: name.into(),
        });
    }
    let total = groups
        .iter()
        .try_fold(1usize, |n, g| n.checked_mul(g.len()))
        .filter(|&n| out.len() + n <= MAX_HOSTS)
        .ok_or_else(|| NodeListError::TooMany { list: list.into() })?;
    // Groups from the one that varies slowest to the one that varies fastest.
    let last = groups.len() - 1;
    let order: Vec<usize> = (0..last).rev().chain([last]).collect();
    for index in 0..total {
        let mut picks = vec![0; groups.len()];
        let mut rest = index;
        for &g in order.iter().rev() {
            picks[g] = rest % groups[g].len();
            rest /= groups[g].len();
        }
        let host: String = texts
            .iter()
            .zip(&groups)
            .zip(&picks)
            .map(|((text, numbers), &pick)| format!("{text}{}", numbers[pick]))
            .collect();
        out.push(host);
    }
    Ok(())
}

/// The numbers of one bracket group (`01-04,07`), zero-padded to each range's first number.
fn expand_ranges(list: &str, group: &str) -> Result<Vec<String>, NodeListError> {
    let mut numbers = Vec::new();
    for item in group.split(',') {
        let bad = || NodeListError::Range {
            list: list.into(),
            item: item.into(),
        };
        let (first, last) = item.split_once('-').unwrap_or((item, item));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(first) || !digits(last) {
            return Err(bad());
        }
        let (lo, hi): (u64, u64) = (
            first.parse().map_err(|_| bad())?,
            last.parse().map_err(|_| bad())?,
        );
        if lo > hi {
            return Err(bad());
        }
        if hi - lo >= MAX_HOSTS as u64 || numbers.len() + (hi - lo) as usize >= MAX_HOSTS {
            return Err(NodeListError::TooMany { list: list.into() });
        }
        let width = first.len();
        numbers.extend((lo..=hi).map(|n| format!("{n:0width$}")));
    }
    Ok(numbers)
}

/// Why the facts of an allocation cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocationError {
    /// `SLURM_JOB_NODELIST` is not a node list.
    #[error("SLURM_JOB_NODELIST cannot be expanded into node names")]
    NodeList(#[from] NodeListError),
    /// A variable that should hold a number does not.
    #[error("{var}=`{value}` is not a number; is this a Slurm job's environment?")]
    Number {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// `SLURM_JOB_NUM_NODES` disagrees with the expanded node list.
    #[error(
        "SLURM_JOB_NUM_NODES={count} but SLURM_JOB_NODELIST=`{list}` names {found} nodes; run milabench in the job's own environment (do not mix variables of two jobs)"
    )]
    Count {
        /// `SLURM_JOB_NUM_NODES`.
        count: usize,
        /// The list.
        list: String,
        /// Names in the list.
        found: usize,
    },
}

/// What a Slurm job was given, from the variables Slurm sets in its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// `SLURM_JOB_ID`.
    pub job_id: Option<String>,
    /// The nodes, expanded from `SLURM_JOB_NODELIST`, in Slurm's order.
    pub nodes: Vec<String>,
    /// The node this process runs on (`SLURMD_NODENAME`), if Slurm says.
    pub this_node: Option<String>,
    /// GPUs per node: `SLURM_GPUS_ON_NODE`, else the number of `SLURM_JOB_GPUS`.
    pub gpus_per_node: usize,
    /// The GPU indices of `SLURM_JOB_GPUS` (empty when not given).
    pub gpu_ids: Vec<String>,
    /// `SLURM_CPUS_PER_TASK`, if given.
    pub cpus_per_task: Option<usize>,
}

impl Allocation {
    /// The allocation described by the variables `get` returns, or `None` outside a job
    /// (no `SLURM_JOB_NODELIST`).
    pub fn from_env(
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Allocation>, AllocationError> {
        let Some(list) = get("SLURM_JOB_NODELIST").filter(|l| !l.trim().is_empty()) else {
            return Ok(None);
        };
        let nodes = expand_nodelist(&list)?;
        let number = |var: &'static str| -> Result<Option<usize>, AllocationError> {
            match get(var).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(value) => value
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| AllocationError::Number { var, value }),
            }
        };
        if let Some(count) = number("SLURM_JOB_NUM_NODES")?
            && count != nodes.len()
        {
            return Err(AllocationError::Count {
                count,
                list,
                found: nodes.len(),
            });
        }
        let gpu_ids: Vec<String> = get("SLURM_JOB_GPUS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .collect();
        let gpus_per_node = number("SLURM_GPUS_ON_NODE")?.unwrap_or(gpu_ids.len());
        Ok(Some(Allocation {
            job_id: get("SLURM_JOB_ID").filter(|v| !v.is_empty()),
            nodes,
            this_node: get("SLURMD_NODENAME").filter(|v| !v.is_empty()),
            gpus_per_node,
            gpu_ids,
            cpus_per_task: number("SLURM_CPUS_PER_TASK")?,
        }))
    }

    /// The main node: the one this process runs on when it is part of the allocation (a batch
    /// script runs on the first node), else the first.
    pub fn main_node(&self) -> &str {
        self.this_node
            .as_deref()
            .filter(|n| self.nodes.iter().any(|m| m == n))
            .unwrap_or(&self.nodes[0])
    }

    /// The system file this allocation makes (YAML): one node per allocated node, named and
    /// addressed by its Slurm name, the main node first, other ranks started with `srun`
    /// (`launch: srun`), the GPU count per node and the CPUs per task when Slurm gives them.
    pub fn system_yaml(&self, user: &str) -> String {
        let mut text = String::from("system:\n  launch: srun\n");
        if let Some(job) = &self.job_id {
            text.push_str(&format!("  slurm_job: {}\n", yaml_string(job)));
        }
        if self.gpus_per_node > 0 {
            text.push_str(&format!("  gpu:\n    count: {}\n", self.gpus_per_node));
        }
        if let Some(cpus) = self.cpus_per_task {
            text.push_str(&format!(
                "  options:\n    cpu:\n      total_count: {cpus}\n"
            ));
        }
        text.push_str("  nodes:\n");
        let main = self.main_node();
        let ordered = std::iter::once(main)
            .chain(self.nodes.iter().map(String::as_str).filter(|n| *n != main));
        for node in ordered {
            text.push_str(&format!(
                "    - name: {name}\n      ip: {name}\n      user: {user}\n      main: {main}\n",
                name = yaml_string(node),
                user = yaml_string(user),
                main = node == main,
            ));
        }
        text
    }
}

/// `text` as a YAML scalar that stays a string (double-quoted, JSON escapes are YAML's too).
fn yaml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// How long a Slurm client (`sbatch`, `scontrol`) may take: well past the time it gives the
/// controller to answer (`MessageTimeout`, 10 s by default) and its retries.
const SLURM_TIME_LIMIT: Duration = Duration::from_secs(120);

/// Runs a Slurm client `program` with `args`; its stdout, or what it said on failure.
pub fn slurm_command(program: &str, args: &[&str]) -> Result<String, SlurmCommandError> {
    run(HelperCommand::new(program, args, SLURM_TIME_LIMIT))
}

/// Why a Slurm client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SlurmCommandError {
    /// The program could not run (not installed, not on `PATH`), or gave no answer in time.
    #[error("could not run `{program}`")]
    Start {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: HelperError,
    },
    /// The program ran and failed.
    #[error("`{command}` failed: {said}")]
    Refused {
        /// The command line.
        command: String,
        /// What Slurm said (its stderr, else its stdout).
        said: String,
    },
}

impl SlurmCommandError {
    /// Whether the program is not installed here.
    pub fn is_missing(&self) -> bool {
        matches!(
            self,
            SlurmCommandError::Start {
                source: HelperError::NotFound { .. },
                ..
            }
        )
    }
}

/// A batch script for `sbatch`: its options as `#SBATCH` lines (later lines win, as on
/// `sbatch`'s command line), then the commands it runs, in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchScript {
    /// Comment lines at the top (what wrote it, how to submit it again).
    pub comments: Vec<String>,
    /// sbatch options, each one word (`--partition=gpu`), in order.
    pub options: Vec<String>,
    /// The folder the commands run in.
    pub cwd: String,
    /// For a job array (`--array=0-N`): the words task `i` (`SLURM_ARRAY_TASK_ID`) adds to
    /// the last command, the `i`-th list; empty for a job of one task.
    pub per_task: Vec<Vec<String>>,
    /// The commands (program and arguments, quoted for the shell when written), in order:
    /// each runs whatever the one before did; the last one's exit status is the job's.
    pub commands: Vec<Vec<String>>,
}

impl BatchScript {
    /// The script's text: readable, and submittable again by hand with `sbatch FILE`.
    pub fn render(&self) -> String {
        let mut text = String::from("#!/bin/sh\n");
        for line in &self.comments {
            text.push_str(&format!("# {line}\n"));
        }
        for option in &self.options {
            text.push_str(&format!("#SBATCH {option}\n"));
        }
        text.push_str(&format!("cd {} || exit 2\n", shell_quote(&self.cwd)));
        if !self.per_task.is_empty() {
            text.push_str("case \"${SLURM_ARRAY_TASK_ID:-}\" in\n");
            for (task, words) in self.per_task.iter().enumerate() {
                let words: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
                text.push_str(&format!("  {task}) set -- {} ;;\n", words.join(" ")));
            }
            text.push_str(&format!(
                "  *) echo \"array task '${{SLURM_ARRAY_TASK_ID:-}}': this script has tasks 0-{}; submit it with --array\" >&2; exit 2 ;;\nesac\n",
                self.per_task.len() - 1
            ));
        }
        let last = self.commands.len().saturating_sub(1);
        for (index, command) in self.commands.iter().enumerate() {
            if index == last {
                text.push_str("exec");
            }
            // One option (with its value) per line.
            for (i, word) in command.iter().enumerate() {
                let after_value = i > 0 && !command[i - 1].starts_with('-');
                if i > 0 && (word.starts_with('-') || after_value) {
                    text.push_str(" \\\n   ");
                }
                if i > 0 || index == last {
                    text.push(' ');
                }
                text.push_str(&shell_quote(word));
            }
            if index == last && !self.per_task.is_empty() {
                text.push_str(" \\\n    \"$@\"");
            }
            text.push('\n');
        }
        text
    }
}

/// Submits `script` with `sbatch --parsable` (run from `cwd`); the job id. What Slurm said
/// when it refused comes back in [`SlurmCommandError::Refused`].
pub fn submit(script: &Path, cwd: &Path) -> Result<String, SlurmCommandError> {
    let mut command = HelperCommand::new(
        "sbatch",
        ["--parsable".as_ref(), script.as_os_str()],
        SLURM_TIME_LIMIT,
    );
    command.cwd = Some(cwd.to_path_buf());
    let out = run(command)?;
    // `--parsable` prints `ID` or `ID;CLUSTER`.
    let id = out.trim().split(';').next().unwrap_or_default().to_string();
    if id.is_empty() {
        return Err(SlurmCommandError::Refused {
            command: format!("sbatch --parsable {}", script.display()),
            said: "no job id printed".into(),
        });
    }
    Ok(id)
}

/// A job's state as `scontrol show job` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    /// `JobState` (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`...).
    pub state: String,
    /// `Reason` (why pending, or why it ended), `None` when Slurm says `None`.
    pub reason: Option<String>,
    /// The batch script's exit status (the first number of `ExitCode=N:S`).
    pub exit_code: Option<i32>,
    /// The signal that ended it (the second number), 0 for none.
    pub signal: i32,
    /// For a task of a job array, `ArrayTaskId`: its index (`3`), or the indices of the tasks
    /// not started yet, which Slurm shows as one pending line (`1-3%2`, `4,6`).
    pub array_task: Option<String>,
    /// `NodeList`: the nodes it runs or ran on, `None` before it has any.
    pub nodes: Option<String>,
    /// `Partition`: the partition it runs in, or the comma-separated partitions it may start
    /// in while it waits.
    pub partition: Option<String>,
}

impl JobStatus {
    /// Whether the job has ended (any state but pending, configuring, running, completing,
    /// suspended, requeued or resizing).
    pub fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "CONFIGURING"
                | "RUNNING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "REQUEUE_HOLD"
                | "REQUEUE_FED"
                | "RESIZING"
                | "STAGE_OUT"
                | "SIGNALING"
        )
    }

    /// Reads the one-line form of `scontrol show job -o` (`Key=Value` words).
    pub fn parse(line: &str) -> Option<JobStatus> {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        };
        let state = field("JobState")?.to_string();
        let (code, signal) = field("ExitCode")
            .and_then(|e| e.split_once(':'))
            .map_or((None, 0), |(c, s)| (c.parse().ok(), s.parse().unwrap_or(0)));
        Some(JobStatus {
            state,
            reason: field("Reason").filter(|r| *r != "None").map(str::to_string),
            exit_code: code,
            signal,
            array_task: field("ArrayTaskId")
                .filter(|t| *t != "N/A")
                .map(str::to_string),
            nodes: field("NodeList")
                .filter(|n| !n.is_empty() && *n != "(null)")
                .map(str::to_string),
            partition: field("Partition")
                .filter(|p| !p.is_empty() && *p != "(null)")
                .map(str::to_string),
        })
    }

    /// Whether the job waits in the queue (`PENDING`).
    pub fn pending(&self) -> bool {
        self.state == "PENDING"
    }

    /// The index of the array task this line is about, when it is one task (not the pending
    /// rest of the array).
    pub fn task_index(&self) -> Option<usize> {
        self.array_task.as_deref()?.parse().ok()
    }

    /// The state, with Slurm's reason when it gives one: `PENDING (Resources)`.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{} ({reason})", self.state),
            None => self.state.clone(),
        }
    }
}

/// The state of job `id` (`scontrol show job -o ID`); `None` once Slurm no longer knows it
/// (it forgets ended jobs after `MinJobAge`).
pub fn job_status(id: &str) -> Result<Option<JobStatus>, SlurmCommandError> {
    Ok(job_statuses(id)?.into_iter().next())
}

/// The states of job `id`, one per line Slurm prints: one for a job; for a job array, one per
/// task that started and one for the tasks still pending (see [`JobStatus::array_task`]).
/// Empty once Slurm no longer knows the job.
pub fn job_statuses(id: &str) -> Result<Vec<JobStatus>, SlurmCommandError> {
    match slurm_command("scontrol", &["show", "job", "-o", id]) {
        Ok(out) => Ok(out.lines().filter_map(JobStatus::parse).collect()),
        Err(SlurmCommandError::Refused { said, .. }) if said.contains("Invalid job id") => {
            Ok(Vec::new())
        }
        Err(e) => Err(e),
    }
}

/// Where a pending job stands among the jobs waiting in its partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePlace {
    /// From 1: the jobs ahead of it, plus one.
    pub position: usize,
    /// The jobs waiting in the partition, it included.
    pub pending: usize,
    /// The partition (or the comma-separated partitions it may start in).
    pub partition: String,
}

impl QueuePlace {
    /// The place of job `job` (an id, or an array's id, whose pending tasks Slurm shows as one
    /// line `ID_[2-3%1]`) in `squeue --format=%i` output `listing`, the jobs in the order they
    /// would start; `None` when the job is not in it.
    pub fn find(job: &str, partition: &str, listing: &str) -> Option<QueuePlace> {
        let jobs: Vec<&str> = listing
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let index = jobs.iter().position(|id| {
            *id == job
                || id
                    .strip_prefix(job)
                    .is_some_and(|rest| rest.starts_with('_'))
        })?;
        Some(QueuePlace {
            position: index + 1,
            pending: jobs.len(),
            partition: partition.to_string(),
        })
    }

    /// `queue position 3 of 7 in partition gpu`.
    pub fn describe(&self) -> String {
        format!(
            "queue position {} of {} in partition {}",
            self.position, self.pending, self.partition
        )
    }
}

/// The place of pending job `job` in the queue of `partition`: the pending jobs of the
/// partition in the order Slurm's priorities would start them (`squeue --states=PENDING
/// --sort=-p,i`: highest priority first, then oldest; backfill may start a smaller job
/// sooner). `None` when squeue does not list the job (started meanwhile, or hidden by the
/// cluster's `PrivateData`).
pub fn queue_place(job: &str, partition: &str) -> Result<Option<QueuePlace>, SlurmCommandError> {
    let listing = slurm_command(
        "squeue",
        &[
            "--noheader",
            "--states=PENDING",
            "--partition",
            partition,
            "--sort=-p,i",
            "--format=%i",
        ],
    )?;
    Ok(QueuePlace::find(job, partition, &listing))
}

/// Runs a Slurm client; its stdout, or what it said on failure.
fn run(command: HelperCommand) -> Result<String, SlurmCommandError> {
    let out = command.run().map_err(|source| SlurmCommandError::Start {
        program: command.program.display().to_string(),
        source,
    })?;
    if !out.success() {
        return Err(SlurmCommandError::Refused {
            command: command.display(),
            said: out.said().to_string(),
        });
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn hosts(list: &str) -> Vec<String> {
        expand_nodelist(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    #[test]
    fn ranges_and_lists_expand_in_order_with_their_padding() {
        assert_eq!(
            hosts("cn[01-04,07]"),
            ["cn01", "cn02", "cn03", "cn04", "cn07"]
        );
        assert_eq!(hosts("cn[08-11]"), ["cn08", "cn09", "cn10", "cn11"]);
        assert_eq!(hosts("cn[9-11]"), ["cn9", "cn10", "cn11"]);
        assert_eq!(hosts("cn[009-11]"), ["cn009", "cn010", "cn011"]);
        assert_eq!(hosts("cn[1-010]").len(), 10);
        assert_eq!(hosts("cn0[1-2]"), ["cn01", "cn02"]);
    }

    #[test]
    fn several_groups_and_plain_names() {
        assert_eq!(hosts("a[1-2],b3"), ["a1", "a2", "b3"]);
        assert_eq!(hosts("foo"), ["foo"]);
        assert_eq!(hosts("a-b[1-2],c"), ["a-b1", "a-b2", "c"]);
        assert_eq!(hosts(" cn1 ,, cn2\tcn3"), ["cn1", "cn2", "cn3"]);
        assert!(hosts("").is_empty());
    }

    #[test]
    fn several_brackets_in_one_name_vary_the_first_slowest() {
        assert_eq!(
            hosts("rack[1-2]-n[01-02]"),
            ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]
        );
        assert_eq!(hosts("x[1-2]y[3-4]"), ["x1y3", "x1y4", "x2y3", "x2y4"]);
        assert_eq!(
            hosts("x[1-2]y[3-4]z[5-6]"),
            [
                "x1y3z5", "x1y3z6", "x2y3z5", "x2y3z6", "x1y4z5", "x1y4z6", "x2y4z5", "x2y4z6"
            ]
        );
    }

    #[test]
    fn malformed_lists_say_what_is_wrong() {
        for (list, needle) in [
            ("cn[1-2", "unbalanced"),
            ("cn1-2]", "unbalanced"),
            ("cn[[1]]", "unbalanced"),
            ("cn[5-3]", "`5-3` is not a range"),
            ("cn[]", "`` is not a range"),
            ("cn[a]", "`a` is not a range"),
            ("cn[1-3]-ib", "text after its last bracket"),
            ("cn[0-99999999]", "more than"),
        ] {
            let error = expand_nodelist(list).expect_err(list).to_string();
            assert!(error.contains(needle), "{list}: {error}");
        }
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn an_allocation_is_read_from_the_job_variables() {
        let get = env(&[
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_NODELIST", "cn[01-02,07]"),
            ("SLURM_JOB_NUM_NODES", "3"),
            ("SLURMD_NODENAME", "cn02"),
            ("SLURM_JOB_GPUS", "0,1"),
            ("SLURM_CPUS_PER_TASK", "8"),
        ]);
        let allocation = Allocation::from_env(&get).expect("valid").expect("a job");
        assert_eq!(allocation.nodes, ["cn01", "cn02", "cn07"]);
        assert_eq!(allocation.main_node(), "cn02");
        assert_eq!(allocation.gpus_per_node, 2);
        assert_eq!(allocation.cpus_per_task, Some(8));
        let yaml = allocation.system_yaml("me");
        assert!(yaml.contains("launch: srun"), "{yaml}");
        assert!(
            yaml.contains("count: 2") && yaml.contains("total_count: 8"),
            "{yaml}"
        );
        let first = yaml.find("name: \"cn02\"").expect("cn02");
        assert!(first < yaml.find("name: \"cn01\"").expect("cn01"), "{yaml}");
        let with_count = env(&[("SLURM_JOB_NODELIST", "a1"), ("SLURM_GPUS_ON_NODE", "4")]);
        let allocation = Allocation::from_env(&with_count).expect("ok").expect("job");
        assert_eq!(
            (allocation.gpus_per_node, allocation.main_node()),
            (4, "a1")
        );
    }

    #[test]
    fn a_batch_script_is_readable_and_quoted() {
        let script = BatchScript {
            comments: vec!["written by a test".into()],
            options: vec!["--job-name=mb".into(), "--partition=gpu".into()],
            cwd: "/work dir".into(),
            per_task: Vec::new(),
            commands: vec![vec![
                "/bin/milabench".into(),
                "run".into(),
                "--override".into(),
                "a: 'b'".into(),
            ]],
        };
        let text = script.render();
        assert!(
            text.starts_with("#!/bin/sh\n# written by a test\n#SBATCH --job-name=mb\n"),
            "{text}"
        );
        assert!(text.contains("cd '/work dir' || exit 2\n"), "{text}");
        assert!(
            text.contains("exec /bin/milabench \\\n    run \\\n    --override 'a: "),
            "{text}"
        );
        assert!(text.contains("'a: '\\''b'\\'''"), "{text}");
        let out = Command::new("sh")
            .arg("-n")
            .arg("-c")
            .arg(&text)
            .output()
            .expect("sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `script` with `sh`, `SLURM_ARRAY_TASK_ID` set to `task`, its commands replaced by
    /// `echo`: what it printed, and its exit status.
    fn run_as_task(script: &BatchScript, task: Option<&str>) -> (String, i32) {
        let mut echoed = script.clone();
        echoed.cwd = "/".into();
        for command in &mut echoed.commands {
            command.insert(0, "echo".into());
        }
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(echoed.render())
            .env_remove("SLURM_ARRAY_TASK_ID");
        if let Some(task) = task {
            sh.env("SLURM_ARRAY_TASK_ID", task);
        }
        let out = sh.output().expect("sh");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.code().unwrap_or(-1),
        )
    }

    #[test]
    fn an_array_script_gives_each_task_its_words_and_runs_every_command() {
        let script = BatchScript {
            comments: Vec::new(),
            options: vec!["--array=0-1%1".into()],
            cwd: "/".into(),
            per_task: vec![
                vec!["--select".into(), "a b".into()],
                vec!["--select".into(), "c".into()],
            ],
            commands: vec![vec!["first".into()], vec!["run".into(), "--resume".into()]],
        };
        assert_eq!(
            run_as_task(&script, Some("0")),
            ("first\nrun --resume --select a b\n".into(), 0)
        );
        assert_eq!(
            run_as_task(&script, Some("1")),
            ("first\nrun --resume --select c\n".into(), 0)
        );
        for task in [Some("2"), None] {
            let (out, code) = run_as_task(&script, task);
            assert_eq!((out.as_str(), code), ("", 2), "{task:?}");
        }
    }

    #[test]
    fn job_states_are_read_from_scontrol() {
        let line = "JobId=7 JobName=mb UserId=root(0) JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:15";
        let status = JobStatus::parse(line).expect("parses");
        assert_eq!(status.state, "CANCELLED");
        assert!(status.ended() && status.reason.is_none());
        assert_eq!((status.exit_code, status.signal), (Some(0), 15));
        let running = JobStatus::parse("JobId=8 JobState=PENDING Reason=Resources ExitCode=0:0")
            .expect("parses");
        assert!(!running.ended());
        assert_eq!(running.reason.as_deref(), Some("Resources"));
        assert_eq!(JobStatus::parse("no job here"), None);
        let task = JobStatus::parse(
            "JobId=13 ArrayJobId=12 ArrayTaskId=1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15",
        )
        .expect("parses");
        assert_eq!(
            (task.task_index(), task.state.as_str()),
            (Some(1), "TIMEOUT")
        );
        let rest = JobStatus::parse("JobId=12 ArrayJobId=12 ArrayTaskId=2-3%1 JobState=PENDING Reason=JobArrayTaskLimit ExitCode=0:0")
            .expect("parses");
        assert_eq!(
            (rest.task_index(), rest.array_task.as_deref()),
            (None, Some("2-3%1"))
        );
        assert_eq!(status.array_task, None);
        let waiting = JobStatus::parse(
            "JobId=9 JobName=mb JobState=PENDING Reason=Priority Dependency=(null) Partition=gpu,cpu NodeList=(null) ExitCode=0:0",
        )
        .expect("parses");
        assert!(waiting.pending());
        assert_eq!(
            (waiting.partition.as_deref(), waiting.nodes),
            (Some("gpu,cpu"), None)
        );
    }

    #[test]
    fn a_queue_place_is_found_in_squeues_listing() {
        // `squeue --noheader --states=PENDING --sort=-p,i --format=%i`: one id per line, the
        // pending tasks of an array as one line.
        let listing = "  40\n41\n12_[2-3%1]\n421\n42\n\n";
        let place = |job: &str| QueuePlace::find(job, "gpu", listing);
        assert_eq!(
            place("42"),
            Some(QueuePlace {
                position: 5,
                pending: 5,
                partition: "gpu".into()
            })
        );
        assert_eq!(place("40").map(|p| p.position), Some(1));
        assert_eq!(
            place("12").map(|p| p.position),
            Some(3),
            "an array's pending tasks"
        );
        assert_eq!(place("4"), None, "not a prefix of another id");
        assert_eq!(place("1"), None);
        assert_eq!(
            place("41").expect("listed").describe(),
            "queue position 2 of 5 in partition gpu"
        );
    }

    #[test]
    fn outside_a_job_there_is_no_allocation_and_bad_variables_are_errors() {
        assert_eq!(Allocation::from_env(&env(&[])), Ok(None));
        let mismatch = env(&[
            ("SLURM_JOB_NODELIST", "a[1-2]"),
            ("SLURM_JOB_NUM_NODES", "3"),
        ]);
        let error = Allocation::from_env(&mismatch)
            .expect_err("mismatch")
            .to_string();
        assert!(error.contains("names 2 nodes"), "{error}");
        let not_a_number = env(&[("SLURM_JOB_NODELIST", "a1"), ("SLURM_CPUS_PER_TASK", "x")]);
        let error = Allocation::from_env(&not_a_number)
            .expect_err("nan")
            .to_string();
        assert!(error.contains("SLURM_CPUS_PER_TASK=`x`"), "{error}");
    }
}
