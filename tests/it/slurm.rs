//! Slurm against a real one-node Slurm (`cargo xtask slurm`: munged, slurmctld and slurmd on
//! loopback): the node-list parser against `scontrol show hostnames`, `milabench run` inside an
//! allocation, and `milabench slurm submit` with tiny protocol-speaking benchmarks (no torch).
//!
//! These tests need root (they start Slurm's daemons): they are `#[ignore]`d with that reason,
//! and `cargo xtask ci` runs them (`--run-ignored only`) against one shared harness, or says why
//! it skips them.

use std::path::{Path, PathBuf};
use std::process::Command;

use milabench_cluster::slurm::expand_nodelist;
use xtask::cluster::PYTHON_SEND;
use xtask::slurm::TestSlurm;

use std::time::Duration;

use crate::common::{milabench, run, wait_for, wait_for_within};

/// Our expansion of many node lists is Slurm's own (`scontrol show hostnames`), and the lists
/// Slurm refuses we refuse.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn node_lists_expand_as_scontrol_expands_them() {
    let slurm = TestSlurm::get();
    let forms = [
        "cn01",
        "cn[01-04,07]",
        "a[1-2],b3",
        "rack[1-2]-n[01-02]",
        "x[1-2]y[3-4]z[5-6]",
        "a[1-2]b[01-02]c[7,9]d[1-3]",
        "cn[08-11]",
        "cn[9-11]",
        "cn[009-11]",
        "cn[1-010]",
        "cn0[1-2]",
        "a-b[1-2],c",
        "cn[1-2],,cn3",
        "gpu[001-003,010-012],cpu[1-2]",
        "n[0-0]",
        "cn[5-3]",
        "cn[]",
        "cn[a]",
        "cn[1-3]-ib",
    ];
    for form in forms {
        let out = slurm
            .command("scontrol")
            .args(["show", "hostnames", form])
            .output()
            .expect("scontrol runs");
        // scontrol refuses a list with a message and no names (its exit status stays 0).
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        let refused = theirs.is_empty() || theirs.iter().any(|l| l.contains("Invalid hostlist"));
        let theirs = (!refused).then_some(theirs);
        let ours = expand_nodelist(form).ok();
        assert_eq!(
            ours,
            theirs,
            "{form}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A scratch project of benchmarks that speak the data protocol, run with the system
/// interpreter (no install): `good` and `second` report rates; `gate` waits for a file.
struct Project {
    dir: tempfile::TempDir,
}

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 60
good:
  inherits: _base
  definition: benchmarks/good
gate:
  inherits: _base
  definition: benchmarks/gate
";

/// Reports six rates on DATA_FD and exits 0.
const REPORTING: &str = "import json, os\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
for i in range(6):\n    out.write(json.dumps({'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'}) + '\\n')\n";

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let venv_bin = dir.path().join("base/venv/tiny/bin");
        fs_err::create_dir_all(&venv_bin).expect("venv folder");
        std::os::unix::fs::symlink("/usr/bin/python3", venv_bin.join("python")).expect("python");
        fs_err::write(dir.path().join("suite.yaml"), SUITE).expect("suite");
        let project = Project { dir };
        project.bench("good", REPORTING);
        // Says it started, waits (up to 60 s) for `open`, then reports.
        project.bench(
            "gate",
            &format!(
                "import os, time\nhere = os.path.dirname(os.path.abspath(__file__))\n\
                 open(os.path.join(here, 'started'), 'w').close()\n\
                 for _ in range(600):\n    if os.path.exists(os.path.join(here, 'open')):\n        break\n    time.sleep(0.1)\n{REPORTING}"
            ),
        );
        project
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn bench(&self, name: &str, main: &str) {
        let folder = self.path().join("benchmarks").join(name);
        fs_err::create_dir_all(&folder).expect("bench folder");
        fs_err::write(folder.join("main.py"), main).expect("main.py");
        fs_err::write(folder.join("benchfile.yaml"), "launcher: python\n").expect("benchfile");
    }

    /// `milabench slurm submit --config suite.yaml --no-setup --no-check ARGS` for `slurm`.
    fn submit(&self, slurm: &TestSlurm, args: &[&str]) -> Command {
        let mut cmd = milabench(self.path());
        cmd.env("MILABENCH_BASE", self.path().join("base"))
            .env("SLURM_CONF", slurm.conf())
            .args([
                "slurm",
                "submit",
                "--config",
                "suite.yaml",
                "--no-setup",
                "--no-check",
            ])
            .args(args);
        cmd
    }

    fn run_dir(&self) -> PathBuf {
        self.path().join("base/runs/golden")
    }
}

/// The job id `submit` printed.
fn job_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("submitted job "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a job id")
        .to_string()
}

/// `submit --wait` writes a re-submittable script into the run folder, follows the job, prints
/// the run's report as it lands and exits with the suite's status.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn slurm_submit_wait_ends_in_a_report() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let out = run(&mut project.submit(&slurm, &["--wait", "--", "--time=5"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let job = job_id(&out.stdout);
    assert!(out.stdout.contains("run folder: "), "{}", out.stdout);
    for needle in ["good", "gate", "Score"] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
    let script = fs_err::read_to_string(project.run_dir().join("slurm-job.sh")).expect("script");
    for needle in [
        "#SBATCH --time=5",
        "--run-name golden",
        "--resume",
        "suite.yaml",
    ] {
        assert!(script.contains(needle), "{needle}: {script}");
    }
    assert!(project.run_dir().join(format!("slurm-{job}.out")).is_file());
    let report = run(milabench(project.path())
        .args(["report", "--runs"])
        .arg(project.run_dir()));
    assert_eq!(report.code, 0, "{}", report.stderr);
}

/// A job cancelled mid-run leaves a readable run folder (the benchmark done before stays
/// measured); `submit --resume` continues it in a new job and finishes it.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_cancelled_job_is_resumed_in_a_new_job() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    let out = run(&mut project.submit(&slurm, &[]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let job = job_id(&out.stdout);
    let started = project.path().join("benchmarks/gate/started");
    wait_for("the gated benchmark starts in the job", || {
        started.is_file()
    });
    let cancel = slurm
        .command("scancel")
        .arg(&job)
        .status()
        .expect("scancel");
    assert!(cancel.success());
    wait_for("Slurm ends the job", || {
        let out = slurm
            .command("scontrol")
            .args(["show", "job", "-o", &job])
            .output();
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("JobState=CANCELLED"))
    });
    let good = fs_err::read_to_string(project.run_dir().join("good.D0.data")).expect("good");
    assert!(good.contains("\"rate\""), "{good}");
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let again = run(&mut project.submit(&slurm, &["--run-name", "golden", "--resume", "--wait"]));
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert_ne!(job_id(&again.stdout), job);
    assert!(again.stderr.contains("good") || again.stdout.contains("good"));
    let report = run(milabench(project.path())
        .args(["report", "--config", "suite.yaml", "--runs"])
        .arg(project.run_dir()));
    assert_eq!(report.code, 0, "{}\n{}", report.stdout, report.stderr);
}

/// The flags of a `run` writing into the shared run folder `golden` of `project`.
fn shared_run(project: &Project, bench: &str) -> Command {
    let mut cmd = milabench(project.path());
    cmd.env("MILABENCH_BASE", project.path().join("base"))
        .args([
            "run",
            "--config",
            "suite.yaml",
            "--no-setup",
            "--no-check",
            "--run-name",
            "golden",
            "--resume",
            "--share-run-folder",
            "--select",
            bench,
        ]);
    cmd
}

/// Two `run --share-run-folder` of other benchmarks write one run folder at once (what the
/// tasks of a `--per-bench` job array do); a plain `run` of the folder, and a second run of
/// the same benchmark, are refused while they run. Two real processes, no Slurm.
#[test]
fn a_shared_run_folder_takes_two_runs_of_other_benchmarks_at_once() {
    let project = Project::new();
    fs_err::create_dir_all(project.run_dir()).expect("run folder");
    let mut gate = shared_run(&project, "gate")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("milabench starts");
    let started = project.path().join("benchmarks/gate/started");
    wait_for("the gated benchmark starts", || started.is_file());
    let good = run(&mut shared_run(&project, "good"));
    assert_eq!(good.code, 0, "{}\n{}", good.stdout, good.stderr);
    assert!(
        gate.try_wait().expect("gate's state").is_none(),
        "both ran at once"
    );
    let again = run(&mut shared_run(&project, "gate"));
    assert_eq!(again.code, 2, "{}\n{}", again.stdout, again.stderr);
    assert!(
        again.stderr.contains("benchmark `gate` of") && again.stderr.contains("fix: give each"),
        "{}",
        again.stderr
    );
    let plain = run(milabench(project.path())
        .env("MILABENCH_BASE", project.path().join("base"))
        .args([
            "run",
            "--config",
            "suite.yaml",
            "--no-setup",
            "--no-check",
            "--run-name",
            "golden",
            "--resume",
        ]));
    assert_eq!(plain.code, 2, "{}", plain.stderr);
    assert!(plain.stderr.contains("is in use by"), "{}", plain.stderr);
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let gate = gate.wait_with_output().expect("gate ends");
    assert!(
        gate.status.success(),
        "{}",
        String::from_utf8_lossy(&gate.stderr)
    );
    assert!(
        !project.run_dir().join("report.html").exists(),
        "the page is left to who reports the whole folder"
    );
    let report = run(milabench(project.path())
        .args(["report", "--config", "suite.yaml", "--runs"])
        .arg(project.run_dir()));
    assert_eq!(report.code, 0, "{}\n{}", report.stdout, report.stderr);
    assert!(
        report.stdout.contains("good") && report.stdout.contains("gate"),
        "{}",
        report.stdout
    );
}

/// The benchmark names of the first table (`Breakdown`) of a text report, sorted.
fn report_rows(report: &str) -> Vec<String> {
    let mut rows: Vec<String> = report
        .lines()
        .skip_while(|l| !l.starts_with("index |"))
        .skip(1)
        .take_while(|l| l.contains('|'))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    rows.sort();
    rows
}

/// `submit --per-bench --wait`: a job array of one task per benchmark writes one folder, then
/// one report of both is printed and written there; the exit status is the tasks'.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn per_bench_submit_wait_ends_in_one_report_of_both() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let out = run(&mut project.submit(
        &slurm,
        &[
            "--per-bench",
            "--max-parallel",
            "2",
            "--wait",
            "--",
            "--time=5",
        ],
    ));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let job = job_id(&out.stdout);
    assert!(
        out.stdout.contains("a job array: 2 tasks"),
        "{}",
        out.stdout
    );
    assert_eq!(report_rows(&out.stdout), ["gate", "good"], "{}", out.stdout);
    let script = fs_err::read_to_string(project.run_dir().join("slurm-job.sh")).expect("script");
    for needle in [
        "#SBATCH --array=0-1%2",
        "--share-run-folder",
        "0) set -- --select good",
    ] {
        assert!(script.contains(needle), "{needle}: {script}");
    }
    for task in 0..2 {
        assert!(
            project
                .run_dir()
                .join(format!("slurm-{job}_{task}.out"))
                .is_file()
        );
    }
    let text = fs_err::read_to_string(project.run_dir().join("report.txt")).expect("report.txt");
    assert_eq!(report_rows(&text), ["gate", "good"], "{text}");
    assert!(project.run_dir().join("report.html").is_file());
}

/// `submit --per-bench` without `--wait`: a last job, after every task, writes the report of
/// both benchmarks into the folder.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn per_bench_submit_reports_in_a_last_job() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let out = run(&mut project.submit(&slurm, &["--per-bench", "--", "--time=5"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("submitted report job "),
        "{}",
        out.stdout
    );
    let text = project.run_dir().join("report.txt");
    wait_for_within(
        "the report job writes report.txt",
        Duration::from_secs(90),
        || fs_err::read_to_string(&text).is_ok_and(|t| report_rows(&t).len() == 2),
    );
    let page = project.run_dir().join("report.html");
    assert!(page.is_file());
    let script = fs_err::read_to_string(project.run_dir().join("slurm-report.sh")).expect("script");
    assert!(
        script.contains(&format!("--dependency=afterany:{}", job_id(&out.stdout))),
        "{script}"
    );
}

/// Runs `submit` in the background: the child, to wait for.
fn spawn_submit(project: &Project, slurm: &TestSlurm, args: &[&str]) -> std::process::Child {
    project
        .submit(slurm, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("milabench starts")
}

/// The job id a background `submit` printed first (its stdout's first line), read without
/// waiting for the rest.
fn first_job_id(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let stdout = child.stdout.as_mut().expect("piped");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("stdout");
    job_id(&line)
}

/// The ends of a background `submit --wait`: exit status, stdout (after the first line),
/// stderr.
fn finish(child: std::process::Child) -> (i32, String, String) {
    let out = child.wait_with_output().expect("submit ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// After a fault that ended the job while `gate` ran: `good` stays measured, and `submit
/// --resume --wait` finishes the run in a new job.
fn resumes_after_a_fault(project: &Project, slurm: &TestSlurm, job: &str) {
    let good = fs_err::read_to_string(project.run_dir().join("good.D0.data")).expect("good");
    assert!(good.contains("\"rate\""), "{good}");
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let again = run(&mut project.submit(
        slurm,
        &[
            "--run-name",
            "golden",
            "--resume",
            "--wait",
            "--",
            "--time=5",
        ],
    ));
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert_ne!(job_id(&again.stdout), job);
    assert_eq!(
        report_rows(&again.stdout),
        ["gate", "good"],
        "{}",
        again.stdout
    );
}

/// A job over its time limit: `--wait` says Slurm stopped it and to ask for more time, the
/// folder keeps what was measured and `--resume` finishes it. (Slurm's smallest limit is a
/// minute; the running job's limit is set to zero, which Slurm enforces at its next check of
/// time limits, within about 30 s.)
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_job_over_its_time_limit_is_said_and_resumed() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    let mut submit = spawn_submit(&project, &slurm, &["--wait", "--", "--time=5"]);
    let job = first_job_id(&mut submit);
    let started = project.path().join("benchmarks/gate/started");
    wait_for_within(
        "the gated benchmark starts",
        Duration::from_secs(90),
        || started.is_file(),
    );
    let update = slurm
        .command("scontrol")
        .args(["update", &format!("jobid={job}"), "timelimit=0"])
        .status()
        .expect("scontrol");
    assert!(update.success());
    let (code, _, stderr) = finish(submit);
    assert_eq!(code, 1, "{stderr}");
    for needle in [
        "ran past its time limit and Slurm stopped it (TIMEOUT)",
        "fix: ask for more time",
        "--run-name golden --resume",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    resumes_after_a_fault(&project, &slurm, &job);
}

/// A node that fails mid-job (set down with `scontrol`, on a cluster of the test's own: it
/// would end the shared cluster's other jobs): `--wait` says what Slurm said and what to
/// change, the folder keeps what was measured, `--resume` finishes it in a new job. The job
/// asks not to be requeued (by default Slurm requeues it, and its `run --resume` goes on).
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_failed_node_is_said_and_the_run_resumed() {
    let slurm = TestSlurm::own();
    let node = slurm.node();
    let project = Project::new();
    let mut submit = spawn_submit(
        &project,
        &slurm,
        &["--wait", "--", "--time=5", "--no-requeue"],
    );
    let job = first_job_id(&mut submit);
    let started = project.path().join("benchmarks/gate/started");
    wait_for_within(
        "the gated benchmark starts",
        Duration::from_secs(60),
        || started.is_file(),
    );
    let down = slurm
        .command("scontrol")
        .args([
            "update",
            &format!("nodename={node}"),
            "state=down",
            "reason=test",
        ])
        .status()
        .expect("scontrol");
    assert!(down.success());
    let (code, _, stderr) = finish(submit);
    assert_eq!(code, 1, "{stderr}");
    for needle in [
        format!("lost {node}: Slurm ended it NODE_FAIL (NodeDown)"),
        format!("--exclude={node}"),
        "--run-name golden --resume".to_string(),
    ] {
        assert!(stderr.contains(&needle), "{needle}: {stderr}");
    }
    // The harness's node comes back by itself (`ReturnToService=2`, slurmd still answers).
    wait_for_within("the node is back", Duration::from_secs(60), || {
        let out = slurm
            .command("sinfo")
            .args(["-h", "-N", "-o", "%t"])
            .output();
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
    });
    resumes_after_a_fault(&project, &slurm, &job);
}

/// Rank 0 reports rates and rank 1 one rate, both through stdout as multi-node ranks do
/// ([`PYTHON_SEND`]); each notes the network namespace it runs in (`local.netns`,
/// `remote.netns` beside the script).
const PAIR: &str = r#"
import json, os, sys, time
remote = "nolog" in json.loads(os.environ["MILABENCH_CONFIG"])["tag"]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "remote.netns" if remote else "local.netns"), "w") as f:
    f.write(os.readlink("/proc/self/ns/net"))
for i in range(1 if remote else 6):
    send({"task": "train", "rate": 10.0 + i, "units": "items/s"})
"#;

/// A benchmark of two ranks in a two-node allocation (the harness's second node lives in a
/// network namespace of its own): `run` inside the job reads the allocation and starts the
/// rank on the other node through `srun`, which runs it behind the link; the run reports.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_remote_rank_starts_through_srun_on_the_other_node() {
    let slurm = TestSlurm::own_two_nodes();
    let project = Project::new();
    project.bench("pair", &format!("{PYTHON_SEND}{PAIR}"));
    fs_err::write(
        project.path().join("suite.yaml"),
        format!("{SUITE}pair:\n  inherits: _base\n  definition: benchmarks/pair\n  num_machines: 2\n  plan: {{method: njobs, n: 1}}\n"),
    )
    .expect("suite");
    let out = run(&mut project.submit(
        &slurm,
        &["--select", "pair", "--wait", "--", "--nodes=2", "--time=5"],
    ));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(report_rows(&out.stdout), ["pair"], "{}", out.stdout);
    let netns = |rank: &str| {
        fs_err::read_to_string(project.path().join(format!("benchmarks/pair/{rank}.netns")))
            .unwrap_or_else(|e| panic!("rank {rank} ran: {e}"))
    };
    let here = std::fs::read_link("/proc/self/ns/net").expect("this netns");
    let (local, remote) = (netns("local"), netns("remote"));
    assert_ne!(local, remote, "the two ranks ran on two nodes");
    assert!(
        [&local, &remote].contains(&&here.display().to_string()),
        "one rank ran on this host's node: {local} {remote} {}",
        here.display()
    );
    let remote_data = fs_err::read_dir(project.run_dir())
        .expect("run folder")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".nolog.data"))
        .expect("the remote rank's events");
    let remote_data = fs_err::read_to_string(remote_data).expect("events");
    assert!(
        remote_data.contains("\"rate\":10.0") && remote_data.contains("\"return_code\":0"),
        "{remote_data}"
    );
    let script = fs_err::read_to_string(project.run_dir().join("slurm-job.sh")).expect("script");
    assert!(script.contains("#SBATCH --nodes=2"), "{script}");
}

/// sbatch refusing the request: the message quotes Slurm and says what to change.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_refused_submission_quotes_slurm() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    let out = run(&mut project.submit(&slurm, &["--", "--partition=nowhere"]));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    for needle in [
        "Slurm refused the job",
        "nowhere",
        "fix: change the sbatch options",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    assert!(project.run_dir().join("slurm-job.sh").is_file());
}

/// Without sbatch on PATH, submit says so and how to go on (no Slurm needed); the script it
/// kept holds the settings profile's sbatch options, then the command line's, which win.
#[test]
fn submit_without_sbatch_says_so_and_keeps_the_script() {
    let project = Project::new();
    let empty = tempfile::tempdir().expect("tempdir");
    fs_err::write(
        project.path().join("settings.yaml"),
        "slurm:\n  default: here\n  profiles:\n    here: {partition: long, time: \"1:00:00\", gres: \"gpu:2\", options: [--exclusive]}\n",
    )
    .expect("settings");
    let submit = |args: &[&str]| {
        run(milabench(project.path())
            .env("MILABENCH_BASE", project.path().join("base"))
            .env("PATH", empty.path())
            .args([
                "--settings",
                "settings.yaml",
                "slurm",
                "submit",
                "--config",
                "suite.yaml",
            ])
            .args(args))
    };
    let out = submit(&["--", "--time=0:10:00"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    for needle in [
        "could not run `sbatch`",
        "fix: run this on a Slurm login node",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    let script = fs_err::read_to_string(project.run_dir().join("slurm-job.sh")).expect("script");
    let options: Vec<&str> = script
        .lines()
        .filter_map(|l| l.strip_prefix("#SBATCH "))
        .skip(4)
        .collect();
    assert_eq!(
        options,
        [
            "--partition=long",
            "--time=1:00:00",
            "--gres=gpu:2",
            "--exclusive",
            "--time=0:10:00"
        ]
    );
    let out = submit(&["--profile", "elsewhere"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no sbatch profile `elsewhere`")
            && out.stderr.contains("use one of: here"),
        "{}",
        out.stderr
    );
}

/// Issue 41: a job waiting behind others says, from the real `scontrol` and `squeue`, why it
/// waits and its place in the queue of its partition, then runs when they are gone. (A
/// cluster of its own: the blockers fill its node.)
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn a_waiting_job_says_its_place_in_the_queue() {
    let slurm = TestSlurm::own();
    let project = Project::new();
    fs_err::write(project.path().join("benchmarks/gate/open"), "").expect("open");
    let blocker = || {
        let out = slurm
            .command("sbatch")
            .args(["--parsable", "--exclusive", "--wrap", "sleep 300"])
            .current_dir(project.path())
            .output()
            .expect("sbatch");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let running = blocker();
    wait_for("the first blocker runs", || {
        let out = slurm
            .command("scontrol")
            .args(["show", "job", "-o", &running])
            .output()
            .expect("scontrol");
        String::from_utf8_lossy(&out.stdout).contains("JobState=RUNNING")
    });
    let waiting = blocker();
    let log = project.path().join("submit.log");
    let submit = project
        .submit(&slurm, &["--wait", "--", "--time=5"])
        .stdout(std::process::Stdio::piped())
        .stderr(fs_err::File::create(&log).expect("log").into_parts().0)
        .spawn()
        .expect("milabench starts");
    let partition = xtask::slurm::PARTITION;
    let place = format!("queue position 2 of 2 in partition {partition}");
    wait_for_within(
        "the place in the queue is said",
        Duration::from_secs(60),
        || fs_err::read_to_string(&log).is_ok_and(|l| l.contains(&place)),
    );
    let cancel = slurm
        .command("scancel")
        .args([&running, &waiting])
        .status()
        .expect("scancel");
    assert!(cancel.success());
    let out = submit.wait_with_output().expect("submit ends");
    let stderr = fs_err::read_to_string(&log).expect("log");
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("job ")).collect();
    assert!(
        said.iter()
            .any(|l| l.contains(": PENDING (") && l.ends_with(&place)),
        "{stderr}"
    );
    // That it ran is the success above: its RUNNING state can come and go between two looks
    // at the queue, the job being short.
}

/// A folder of stand-ins for Slurm's clients, on `PATH` in front: `sbatch` gives job 42;
/// `scontrol` says, call after call, the job pending for its priority (`calls` times), then
/// for resources (`calls` times), running, completed; `squeue`, asked the pending jobs of
/// partition `gpu` in priority order, lists two ahead of it until its reason changes, then
/// none.
fn stand_in_slurm(calls: usize) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let job = "JobId=42 JobName=milabench-golden UserId=me(1000) Partition=gpu";
    let count = "calls=\"$(dirname \"$0\")/calls\"\nn=$(cat \"$calls\" 2>/dev/null || echo 0)\n";
    let scripts = [
        ("sbatch", "echo 42\n".to_owned()),
        (
            "scontrol",
            format!(
                "{count}n=$((n + 1))\necho $n > \"$calls\"\n\
                 if [ $n -le {calls} ]; then echo '{job} JobState=PENDING Reason=Priority NodeList=(null) ExitCode=0:0'\n\
                 elif [ $n -le {twice} ]; then echo '{job} JobState=PENDING Reason=Resources NodeList=(null) ExitCode=0:0'\n\
                 elif [ $n -le {running} ]; then echo '{job} JobState=RUNNING Reason=None NodeList=cn1 ExitCode=0:0'\n\
                 else echo '{job} JobState=COMPLETED Reason=None NodeList=cn1 ExitCode=0:0'; fi\n",
                twice = 2 * calls,
                running = 2 * calls + 1,
            ),
        ),
        (
            "squeue",
            format!(
                "case \"$*\" in\n\
                 '--noheader --states=PENDING --partition gpu --sort=-p,i --format=%i') ;;\n\
                 *) echo \"squeue: unexpected arguments: $*\" >&2; exit 1 ;;\n\
                 esac\n{count}\
                 if [ $n -le {calls} ]; then printf '40\\n41\\n42\\n43\\n'; else printf '42\\n43\\n'; fi\n"
            ),
        ),
    ];
    for (name, body) in scripts {
        let path = dir.path().join(name);
        fs_err::write(&path, format!("#!/bin/sh\n{body}")).expect("stand-in");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir
}

/// Issue 41: `submit --wait` says the job's state and, while it waits, its reason and its place
/// in the queue of its partition, one line per change when stderr is not a terminal.
#[test]
fn submit_wait_says_the_state_and_the_place_in_the_queue() {
    let project = Project::new();
    let slurm = stand_in_slurm(2);
    let out = run(milabench(project.path())
        .env("MILABENCH_BASE", project.path().join("base"))
        .env("PATH", crate::common::with_path(slurm.path()))
        .args([
            "slurm",
            "submit",
            "--config",
            "suite.yaml",
            "--no-setup",
            "--no-check",
            "--wait",
        ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.starts_with("submitted job 42\n"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!(out.stderr, @r"
    job 42: PENDING (Priority), queue position 3 of 4 in partition gpu
    job 42: PENDING (Resources), queue position 1 of 2 in partition gpu
    job 42: RUNNING
    ");
}

/// Issue 41: on a terminal, the line of the waiting job is updated in place as its reason and
/// place change, and stays with the time it waited when the job starts.
#[test]
fn on_a_terminal_the_waiting_jobs_line_is_updated_in_place() {
    use crate::dash::{Tmux, quoted};
    let project = Project::new();
    let slurm = stand_in_slurm(4);
    let tmux = Tmux::new("slurm-wait");
    let path = crate::common::with_path(slurm.path());
    let command = format!(
        "cd {} && env PATH={} MILABENCH_BASE={} {} slurm submit --config suite.yaml --no-setup --no-check --wait; echo $? > code.txt; sleep 600",
        quoted(&project.path().display().to_string()),
        quoted(&path),
        quoted(&project.path().join("base").display().to_string()),
        quoted(env!("CARGO_BIN_EXE_milabench")),
    );
    tmux.start(120, 20, &command);
    let code = project.path().join("code.txt");
    wait_for("the submission to end", || code.is_file());
    let screen = tmux.screen();
    assert_eq!(
        fs_err::read_to_string(&code).expect("code").trim(),
        "0",
        "{screen}"
    );
    let waiting: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("job 42: PENDING"))
        .collect();
    assert_eq!(waiting.len(), 1, "one line, updated in place:\n{screen}");
    assert!(
        waiting[0].starts_with(
            "job 42: PENDING (Resources), queue position 1 of 2 in partition gpu (waited "
        ),
        "{screen}"
    );
    assert!(screen.contains("\njob 42: RUNNING"), "{screen}");
}

/// Inside an allocation (its variables set here, no Slurm needed), `slurm system` prints the
/// system it makes and `run` plans remote ranks with `srun` on the other node.
#[test]
fn inside_an_allocation_the_system_comes_from_slurm() {
    let project = Project::new();
    let hostname = Command::new("hostname").output().expect("hostname runs");
    let here = String::from_utf8_lossy(&hostname.stdout).trim().to_string();
    let slurm_env = |cmd: &mut Command| {
        cmd.env("MILABENCH_BASE", project.path().join("base"))
            .env("SLURM_JOB_ID", "77")
            .env("SLURM_JOB_NODELIST", format!("{here},zz-other[1-2]"))
            .env("SLURM_JOB_NUM_NODES", "3")
            .env("SLURMD_NODENAME", &here)
            .env("SLURM_CPUS_PER_TASK", "4");
    };
    let mut system = milabench(project.path());
    slurm_env(&mut system);
    let out = run(system.args(["slurm", "system"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let yaml = out.stdout.replace(&here, "[HOST]");
    insta::assert_snapshot!(yaml);
    fs_err::write(
        project.path().join("suite.yaml"),
        format!("{SUITE}pair:\n  inherits: _base\n  definition: benchmarks/good\n  num_machines: 2\n  plan: {{method: njobs, n: 1}}\n"),
    )
    .expect("suite");
    let mut dry = milabench(project.path());
    slurm_env(&mut dry);
    let out = run(dry.args([
        "run",
        "--config",
        "suite.yaml",
        "--select",
        "pair",
        "--dry-run",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("srun --nodes=1 --ntasks=1 --nodelist=zz-other1 --overlap"),
        "{}",
        out.stdout
    );
    let outside = run(milabench(project.path()).args(["slurm", "system"]));
    assert_eq!(outside.code, 2);
    assert!(
        outside.stderr.contains("not inside a Slurm allocation"),
        "{}",
        outside.stderr
    );
}

/// The Python tool's Slurm script's lines that need the allocation, as the script writes them
/// (`tests/fixtures/upstream/scripts/scripts/slurm/run_cuda.sh`), run by `srun` in a job of the
/// real Slurm: `slurm system` writes the allocation's system file, `run --system` runs the suite
/// on it (its `MILABENCH_ARGS` hook skips the set-up: the environment is this interpreter) and
/// `report` reports the folder.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn the_python_tools_slurm_script_runs_in_a_job() {
    let slurm = TestSlurm::get();
    let project = Project::new();
    let lines: Vec<String> = crate::compat::milabench_lines("scripts/slurm/run_cuda.sh")
        .into_iter()
        .filter(|l| {
            ["slurm system", "milabench run", "milabench report"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let wordir = project.path().join("wordir");
    fs_err::create_dir_all(wordir.join("results")).expect("wordir");
    std::os::unix::fs::symlink(
        project.path().join("base/venv"),
        wordir.join("results/venv"),
    )
    .expect("venv link");
    let bin = project.path().join("bin");
    fs_err::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_milabench"), bin.join("milabench"))
        .expect("link");
    let suite = project.path().join("good.yaml");
    fs_err::write(&suite, SUITE.split("gate:").next().expect("the suite")).expect("suite");
    let mut srun = slurm.command("srun");
    crate::common::hermetic(&mut srun, project.path());
    srun.env("PATH", crate::common::with_path(&bin))
        .env("MILABENCH_WORDIR", &wordir)
        .env("MILABENCH_BASE", wordir.join("results"))
        .env("MILABENCH_CONFIG", &suite)
        .env("MILABENCH_ARGS", "--no-setup")
        .env("MILABENCH_RUN_NAME", "job.{time}")
        .args(["--time=5", "bash", "-ec", &lines.join("\n")]);
    let out = run(&mut srun);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let system = fs_err::read_to_string(wordir.join("system.yaml")).expect("system file");
    assert!(system.contains(&slurm.node()), "{system}");
    assert_eq!(report_rows(&out.stdout), ["good"], "{}", out.stdout);
}
