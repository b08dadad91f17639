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
use xtask::slurm::TestSlurm;

use crate::common::{milabench, run, wait_for};

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
        .expect("a job id")
        .trim()
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
        .skip(3)
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
