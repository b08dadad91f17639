//! The Python milabench's command lines as its own scripts write them (copies of its Slurm
//! script and CI workflows at commit faf39234 in `tests/fixtures/upstream/scripts`): every
//! `milabench` line is read from those files and run, unchanged but for the workflow's
//! `${{ ... }}` expressions and its container mount point, with this binary as `milabench`, in a
//! scratch project whose one benchmark installs from a local wheel folder (no package index).

use std::path::Path;
use std::process::Command;

use crate::common::{fixtures, milabench, run};

/// A scratch site: a project whose suite is at `config/standard.yaml` (the path the Python
/// tool's workflows name) with one benchmark `tiny` that installs `tinydep` from `wheels/`,
/// prepares (writes into the data folder) and reports rates; a folder `bin/` where `milabench`
/// is this binary.
struct Site {
    dir: tempfile::TempDir,
}

const SUITE: &str = "\
tiny:
  inherits: _defaults
  enabled: true
  tags: [monogpu]
  weight: 1
  definition: ../benchmarks/tiny
  install_group: tinygroup
  max_duration: 60
  pip:
    args: [--no-index, --find-links, WHEELS]
multi:
  inherits: _defaults
  enabled: false
  tags: [multinode]
  definition: ../benchmarks/tiny
  install_group: tinygroup
  num_machines: 2
";

const MAIN: &str = "import json, os\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
for i in range(8):\n    out.write(json.dumps({'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'}) + '\\n')\n\
    out.write(json.dumps({'task': 'train', 'loss': 2.0 - i / 10}) + '\\n')\n";

const PREPARE: &str = "import os\nos.makedirs(os.environ['MILABENCH_DIR_DATA'], exist_ok=True)\n\
open(os.path.join(os.environ['MILABENCH_DIR_DATA'], 'tiny.prepared'), 'w').close()\n";

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let wheels = root.join("wheels");
        for (name, version) in [("voir", "0.2.99"), ("tinydep", "1.0")] {
            crate::install::make_wheel(&wheels, name, version);
        }
        let bench = root.join("benchmarks/tiny");
        fs_err::create_dir_all(&bench).expect("bench folder");
        fs_err::write(bench.join("requirements.in"), "tinydep\n").expect("requirements");
        fs_err::write(bench.join("main.py"), MAIN).expect("main.py");
        fs_err::write(bench.join("prepare.py"), PREPARE).expect("prepare.py");
        fs_err::write(bench.join("benchfile.yaml"), "launcher: python\n").expect("benchfile");
        fs_err::create_dir_all(root.join("config")).expect("config folder");
        fs_err::write(
            root.join("config/standard.yaml"),
            SUITE.replace("WHEELS", &wheels.display().to_string()),
        )
        .expect("suite");
        fs_err::create_dir_all(root.join("constraints")).expect("constraints folder");
        fs_err::write(root.join("constraints/cuda.txt"), "").expect("constraints");
        fs_err::create_dir_all(root.join("bin")).expect("bin folder");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_milabench"), root.join("bin/milabench"))
            .expect("link");
        Site { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Runs one line with bash in the project, `milabench` being this binary and `vars` set;
    /// returns its output.
    fn line(&self, line: &str, vars: &[(&str, String)]) -> crate::common::Output {
        let mut cmd = Command::new("bash");
        crate::common::hermetic(&mut cmd, self.root());
        cmd.args(["-c", line])
            .env("PATH", crate::common::with_path(&self.root().join("bin")))
            .env("MILABENCH_INSTALLER", "pip")
            .env("MILABENCH_RUN_NAME", "site.{time}")
            .env_remove("MILABENCH_BASE");
        for (name, value) in vars {
            cmd.env(name, value);
        }
        run(&mut cmd)
    }
}

/// The `milabench` command lines of a script: each logical line (backslash continuations
/// joined) that is not a comment, from the word `milabench` (at the start, or after a space or
/// `$(`) on; a command substitution's closing `)` and an `|| :` are left out.
pub(crate) fn milabench_lines(file: &str) -> Vec<String> {
    let text = fs_err::read_to_string(fixtures().join("upstream/scripts").join(file))
        .expect("script copy");
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head.trim_end());
                current.push(' ');
            }
            None => {
                current.push_str(line);
                logical.push(std::mem::take(&mut current));
            }
        }
    }
    const COMMANDS: [&str; 8] = [
        "tools", "install", "prepare", "run", "report", "slurm", "data", "analysis",
    ];
    logical
        .into_iter()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let at = line
                .match_indices("milabench ")
                .map(|(i, _)| i)
                .find(|&i| {
                    let before_ok = i == 0 || line[..i].ends_with(' ') || line[..i].ends_with("$(");
                    let command = line[i + "milabench ".len()..].split_whitespace().next();
                    before_ok && command.is_some_and(|c| COMMANDS.contains(&c))
                })?;
            let mut command = line[at..].trim().to_string();
            if line[..at].contains("$(") {
                command = command.trim_end_matches(')').trim_end().to_string();
            }
            if let Some(head) = command.strip_suffix("|| :") {
                command = head.trim_end().to_string();
            }
            Some(command)
        })
        .collect()
}

/// A workflow line with its GitHub expressions replaced (an expression not in the table fails
/// the test, so a new one is seen) and the container's mount point `/milabench/results` put at
/// `results`.
fn expand_workflow(line: &str, results: &Path) -> String {
    const EXPRESSIONS: [(&str, &str); 3] = [
        ("${{ matrix.group.select }}", "tiny"),
        ("${{ steps.arch.outputs.extra_args }}", ""),
        ("${{ github.sha }}", "0123abcd"),
    ];
    let mut line = line.to_string();
    for (expression, value) in EXPRESSIONS {
        line = line.replace(expression, value);
    }
    assert!(
        !line.contains("${{"),
        "an expression to add to the table: {line}"
    );
    line.replace("/milabench/results", &results.display().to_string())
}

#[test]
fn the_lines_of_its_slurm_script_run_in_an_allocation() {
    let site = Site::new();
    let lines = milabench_lines("scripts/slurm/run_cuda.sh");
    let expected = [
        "milabench slurm system > $MILABENCH_WORDIR/system.yaml",
        "milabench install --variant cuda --system $MILABENCH_WORDIR/system.yaml $MILABENCH_ARGS",
        "milabench data sharedsetup --network $MILABENCH_SHARED --local $MILABENCH_BASE",
        "milabench prepare --system $MILABENCH_WORDIR/system.yaml $MILABENCH_ARGS",
        "milabench run --system $MILABENCH_WORDIR/system.yaml $MILABENCH_ARGS",
        "milabench report --runs $MILABENCH_WORDIR/results/runs",
    ];
    assert_eq!(lines, expected);
    let hostname = Command::new("hostname").output().expect("hostname runs");
    let here = String::from_utf8_lossy(&hostname.stdout).trim().to_string();
    let wordir = site.root().join("wordir");
    let shared = site.root().join("shared");
    fs_err::create_dir_all(shared.join("data/imagenet")).expect("shared data");
    fs_err::write(shared.join("data/imagenet/part0"), "pixels").expect("shared file");
    fs_err::create_dir_all(&wordir).expect("wordir");
    // What the script exports, and what Slurm sets in the job.
    let vars = [
        ("MILABENCH_WORDIR", wordir.display().to_string()),
        (
            "MILABENCH_BASE",
            wordir.join("results").display().to_string(),
        ),
        ("MILABENCH_CONFIG", "config/standard.yaml".to_string()),
        ("MILABENCH_SHARED", shared.display().to_string()),
        ("MILABENCH_ARGS", String::new()),
        (
            "MILABENCH_SIZER_SAVE",
            wordir.join("scaling.yaml").display().to_string(),
        ),
        ("SLURM_JOB_ID", "4242".to_string()),
        ("SLURM_JOB_NODELIST", here.clone()),
        ("SLURM_JOB_NUM_NODES", "1".to_string()),
        ("SLURMD_NODENAME", here.clone()),
        ("SLURM_CPUS_PER_TASK", "2".to_string()),
    ];
    for line in &lines {
        let out = site.line(line, &vars);
        assert_eq!(out.code, 0, "{line}\n{}\n{}", out.stdout, out.stderr);
        if line.contains("report") {
            assert!(out.stdout.contains("\ntiny "), "{}", out.stdout);
            assert!(out.stdout.contains("(PASS)"), "{}", out.stdout);
        }
    }
    let system = fs_err::read_to_string(wordir.join("system.yaml")).expect("system file");
    assert!(system.contains(&here), "{system}");
    let results = wordir.join("results");
    assert_eq!(
        fs_err::read_to_string(results.join("data/imagenet/part0")).expect("shared data copied"),
        "pixels"
    );
    assert!(results.join("data/tiny.prepared").is_file(), "prepare ran");
    assert!(
        results.join("venv/tinygroup/bin/python").exists(),
        "install ran"
    );
}

#[test]
fn the_lines_of_its_ci_workflows_run() {
    let site = Site::new();
    let results = site.root().join("results");
    for folder in ["data", "cache", "runs"] {
        fs_err::create_dir_all(results.join(folder)).expect("mount point");
    }
    // The workflow makes its system file from a template with envsubst; this is one in the
    // Python tool's shape for this machine.
    fs_err::write(
        results.join("data/system.yaml"),
        "system:\n  arch: cpu\n  nodes:\n    - name: local\n      ip: 127.0.0.1\n      main: true\n      user: tester\n",
    )
    .expect("system file");
    let base = site.root().join("base");
    let vars = [
        ("MILABENCH_CONFIG", "config/standard.yaml".to_string()),
        (
            "MILABENCH_CONFIG_DOCKER",
            "config/standard.yaml".to_string(),
        ),
        ("EXCLUDE_TAGS", "multinode".to_string()),
        ("MILABENCH_BASE", base.display().to_string()),
        ("MILABENCH_EXCLUDE", "multi".to_string()),
    ];

    // ci.yml: the matrix, then each group's prepare, run and report, in a container whose
    // `/milabench/results` is mounted (here: the folder `results`).
    let ci: Vec<String> = milabench_lines(".github/workflows/ci.yml")
        .iter()
        .map(|line| expand_workflow(line, &results))
        .filter(|line| !line.contains("--publish"))
        .collect();
    assert_eq!(ci.len(), 4, "{ci:#?}");
    let mut container = vars.to_vec();
    container[3].1 = results.display().to_string();
    // The image each group runs in was built with its benchmarks installed (its Dockerfile
    // runs `milabench install`).
    let image = site.line(
        "milabench install --config config/standard.yaml --select tiny",
        &container,
    );
    assert_eq!(image.code, 0, "{}\n{}", image.stdout, image.stderr);
    let matrix = site.line(&ci[0], &container);
    assert_eq!(matrix.code, 0, "{}", matrix.stderr);
    assert_eq!(
        matrix.stdout.trim(),
        r#"[{"name":"tiny","select":"tiny","multinode":false}]"#
    );
    for line in &ci[1..] {
        let out = site.line(line, &container);
        assert_eq!(out.code, 0, "{line}\n{}\n{}", out.stdout, out.stderr);
    }
    assert!(results.join("data/tiny.prepared").is_file(), "prepare ran");

    // tests_run.yml: install, prepare, run with every validation layer, then the summary.
    let lines = milabench_lines(".github/workflows/tests_run.yml");
    assert_eq!(lines.len(), 7, "{lines:#?}");
    let (pins, rest) = lines.split_at(3);
    for line in pins {
        assert!(
            line.starts_with("milabench tools pin -c constraints/"),
            "{line}"
        );
    }
    for line in rest {
        let out = site.line(line, &vars);
        assert_eq!(out.code, 0, "{line}\n{}\n{}", out.stdout, out.stderr);
        if line.contains("summary") {
            let summary: serde_json::Value =
                serde_json::from_str(&out.stdout).expect("the summary is JSON");
            assert!(summary.get("tiny").is_some(), "{}", out.stdout);
        }
    }

    // tests_unit.yml: two benchmarks from the template.
    for line in milabench_lines(".github/workflows/tests_unit.yml") {
        let out = site.line(&line, &vars);
        assert_eq!(out.code, 0, "{line}\n{}\n{}", out.stdout, out.stderr);
    }
    for name in ["simplebench", "voirbench"] {
        assert!(
            site.root()
                .join("benchmarks")
                .join(name)
                .join("main.py")
                .is_file()
        );
    }
}

/// ci.yml's last line: the run folders the benchmark groups wrote into the commit's folder
/// (`runs/<sha>`, mounted as each group's `runs`), gathered into one run named after the commit
/// and reported (publishing has a test of its own).
#[test]
fn its_report_consolidates_the_run_folders_of_every_group() {
    let site = Site::new();
    let runs = site.root().join("runs/0123abcd");
    for (group, run) in [("torchvision", "aa.one"), ("llm", "bb.two")] {
        let folder = runs.join(run);
        fs_err::create_dir_all(&folder).expect("run folder");
        let fixture =
            fixtures().join("milabench/runs/tests-runs/rijubigo.2023-03-24_13:45:27.512446");
        {
            for data in fs_err::read_dir(&fixture).expect("run").flatten() {
                let name = format!("{group}-{}", data.file_name().to_string_lossy());
                fs_err::copy(data.path(), folder.join(name)).expect("copy");
            }
        }
    }
    let line = milabench_lines(".github/workflows/ci.yml")
        .into_iter()
        .find(|l| l.contains("--consolidate"))
        .expect("the report line");
    let line = expand_workflow(&line, &site.root().join("results"))
        .replace(" --publish \"$MILABENCH_PUBLISH_KEY\"", "");
    let out = site.line(
        &line,
        &[("MILABENCH_BASE", site.root().display().to_string())],
    );
    assert_eq!(out.code, 0, "{line}\n{}\n{}", out.stdout, out.stderr);
    let gathered = runs.join("0123abcd");
    assert!(
        out.stdout
            .contains(&format!("Source: {}", gathered.display())),
        "{}",
        out.stdout
    );
    assert!(
        runs.join("aa.one").is_dir() && runs.join("bb.two").is_dir(),
        "sources stay"
    );
    let files = fs_err::read_dir(&gathered).expect("gathered").count();
    assert!(files >= 2, "{files}");
}

/// Each Python-only command says in one line why it has no meaning here, exit 2.
#[test]
fn python_only_commands_say_why_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    for command in [
        &["tools", "tunnel", "--hostname", "db"][..],
        &["tools", "sqlsetup"],
        &["tools", "container", "--node", "10.0.0.1", "--dry"],
        &["analysis", "pr", "--remote", "a/b"],
        &["data", "gated"],
        &["slurm", "schedule", "--sync", "--profile", "x"],
        &["report", "--runs", "x", "--compare_gpus"],
        &["run", "--plugin", "sql"],
        &["install", "--github_issues"],
    ] {
        let out = run(milabench(dir.path()).args(command));
        assert_eq!(out.code, 2, "{command:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{command:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.starts_with("error: "),
            "{command:?}: {}",
            out.stderr
        );
    }
}

/// Every flag is also spelled with underscores, hidden from `--help`; `tools pin -c` names a
/// constraint file.
#[test]
fn underscore_spellings_are_accepted_and_help_shows_ours() {
    let dir = tempfile::tempdir().expect("tempdir");
    let help = run(milabench(dir.path()).args(["run", "--help"]));
    assert!(help.stdout.contains("--run-name"), "{}", help.stdout);
    assert!(!help.stdout.contains("--run_name"), "{}", help.stdout);
    let suite = fixtures().join("suites/basic.yaml");
    let dry = |flags: &[&str]| {
        let out = run(milabench(dir.path())
            .args(["run", "--config"])
            .arg(&suite)
            .args(flags)
            .arg("--dry-run"));
        (out.code, out.stdout)
    };
    let ours = dry(&["--run-name", "x", "--no-check"]);
    assert_eq!(ours.0, 0);
    assert_eq!(dry(&["--run_name", "x", "--no_check"]), ours);
    let pin = run(milabench(dir.path()).args([
        "tools",
        "pin",
        "-c",
        "constraints/nonsense.txt",
        "--config",
        "x.yaml",
    ]));
    assert_eq!(pin.code, 2, "{}", pin.stderr);
    assert!(
        pin.stderr.contains("constraints/<variant>.txt"),
        "{}",
        pin.stderr
    );
}

/// `tools patch --venv V` writes a sitecustomize.py that makes tqdm's bars quiet when
/// benchmate is there.
#[test]
fn tools_patch_quiets_the_progress_bars_of_an_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let venv = dir.path().join("venv");
    let site_packages = venv.join("lib/python3.11/site-packages");
    fs_err::create_dir_all(&site_packages).expect("venv");
    let out = run(milabench(dir.path())
        .args(["tools", "patch", "--venv"])
        .arg(&venv));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = site_packages.join("sitecustomize.py");
    let text = fs_err::read_to_string(&written).expect("written");
    assert!(
        text.contains("from benchmate.progress import tqdm"),
        "{text}"
    );
    let missing = run(milabench(dir.path())
        .args(["tools", "patch", "--venv"])
        .arg(dir.path().join("nope")));
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("not a Python virtual environment"));
}

/// A sizer setting that the sizer being off makes moot (the Python tool's trap: its own
/// `config/sizing.yaml` sweeps `sizer.batch_size` without `sizer.auto`) is said once, with the
/// option that would give it an effect; with `sizer.auto` on, nothing is said.
#[test]
fn sizer_settings_without_effect_are_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dry = |vars: &[(&str, &str)]| {
        let mut cmd = milabench(dir.path());
        cmd.args(["run", "--config"])
            .arg(fixtures().join("suites/basic.yaml"))
            .args(["--dry-run"]);
        for (name, value) in vars {
            cmd.env(name, value);
        }
        run(&mut cmd)
    };
    let off = dry(&[
        ("MILABENCH_SIZER_BATCH_SIZE", "64"),
        ("MILABENCH_SIZER_MULT", "2"),
    ]);
    assert_eq!(off.code, 0, "{}", off.stderr);
    let said: Vec<&str> = off
        .stderr
        .lines()
        .filter(|l| l.contains("no effect"))
        .collect();
    assert_eq!(said.len(), 1, "{}", off.stderr);
    assert!(
        said[0].contains("sizer.batch_size=64, sizer.mult=2 have no effect")
            && said[0].contains("MILABENCH_SIZER_AUTO=1"),
        "{}",
        said[0]
    );
    let on = dry(&[
        ("MILABENCH_SIZER_BATCH_SIZE", "64"),
        ("MILABENCH_SIZER_AUTO", "1"),
    ]);
    assert!(!on.stderr.contains("no effect"), "{}", on.stderr);
}
