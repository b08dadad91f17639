//! Sweeps end to end on tiny protocol-speaking benchmarks: the Python tool's `multirun` shape
//! (named runs, matrices of sizer and CPU options), `run --sweep`, the record that lets an
//! interrupted sweep go on, `sizer.save`/`sizer.config`, `sizer show` and `report --sweep`.

use std::time::{Duration, Instant};

use crate::common::{run, wait_for};
use crate::run::Project;

/// A benchmark that reads its `--batch-size`, reports rates of 10 per item and a GPU memory
/// of 1000 MiB + 100 MiB per item; with a `gate` path, it first waits for that file when its
/// batch size is 16.
fn sized(gate: Option<&std::path::Path>) -> String {
    let wait = gate.map_or_else(String::new, |g| {
        format!(
            "import time\nwhile bs == 16 and not os.path.exists({g:?}):\n    time.sleep(0.05)\n"
        )
    });
    format!(
        "import json, os, sys\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\n\
         bs = int(sys.argv[sys.argv.index('--batch-size') + 1])\n{wait}\
         for i in range(6):\n    out.write(json.dumps({{'task': 'train', 'rate': 10.0 * bs + i, 'units': 'items/s'}}) + '\\n')\n    \
         out.write(json.dumps({{'task': 'main', 'gpudata': {{'0': {{'memory': [1000 + 100 * bs, 80000], 'load': 0.5}}}}}}) + '\\n')\n"
    )
}

const SUITE: &str = "sized:\n  inherits: _defaults\n  install_group: tiny\n  tags: [monogpu]\n  weight: 1\n  definition: benchmarks/sized\n  argv:\n    --batch-size: auto_batch(8)\n    --workers: auto({n_worker}, 1)\n";

/// The run folders under the project's base, sorted.
fn run_folders(project: &Project) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(project.path().join("base/runs"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_python_tools_sizing_shape_runs_with_its_names_and_fills_the_scaling_file() {
    let project = Project::new(SUITE);
    project.bench("sized", &sized(None));
    let scaling = project.path().join("scaling.yaml");
    let scaling = scaling.display();
    // config/sizing.yaml's three named runs with matrices, on the CPU: the sizer's options as
    // they are, the capacities small enough for this benchmark's memory.
    fs_err::write(
        project.path().join("system.yaml"),
        format!(
            "system:\n  arch: cpu\n  nodes:\n    - {{name: local, ip: 127.0.0.1, user: me, main: true}}\n\
             multirun:\n  runs:\n\
             \x20   - name: \"bs{{sizer.mult}}.{{time}}\"\n      matrix:\n        sizer.auto: 1\n        sizer.mult: [0.5, 2]\n        sizer.save: [\"{scaling}\"]\n\
             \x20   - name: \"bs{{sizer.add}}.{{time}}\"\n      matrix:\n        sizer.auto: 1\n        sizer.add: [-4, 8]\n        sizer.save: [\"{scaling}\"]\n\
             \x20   - name: \"c{{sizer.capacity}}_m{{sizer.multiple}}_w{{cpu.n_workers}}.{{time}}\"\n      matrix:\n        cpu.enabled: 1\n        cpu.n_workers: [1, 2]\n        sizer.auto: 1\n        sizer.capacity: [2Go, 4Go]\n        sizer.multiple: 8\n        sizer.config: [\"{scaling}\"]\n"
        ),
    )
    .expect("system file");
    let sweep = || {
        let mut cmd = project.run_command(&["--no-check", "--system", "system.yaml"]);
        cmd.env(
            "MILABENCH_MULTIRUN_CACHE",
            project.path().join("sweep.jsonl"),
        );
        cmd
    };
    let listed = run(sweep().arg("--dry-run"));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let names: Vec<String> = listed
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    let stamp = names[0].rsplit('.').next().expect("a time").to_string();
    assert!(stamp.parse::<u64>().is_ok(), "{names:?}");
    let expected: Vec<String> = [
        "bs0.5",
        "bs2",
        "bs-4",
        "bs8",
        "c2Go_m8_w1",
        "c2Go_m8_w2",
        "c4Go_m8_w1",
        "c4Go_m8_w2",
    ]
    .iter()
    .map(|n| format!("{n}.{stamp}"))
    .collect();
    assert_eq!(names, expected, "{}", listed.stdout);
    assert!(
        listed.stdout.contains(
            "cpu.enabled=1 cpu.n_workers=2 sizer.auto=1 sizer.capacity=2Go sizer.multiple=8"
        ),
        "{}",
        listed.stdout
    );
    assert!(run_folders(&project).is_empty(), "a dry run runs nothing");

    let out = run(&mut sweep());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let folders = run_folders(&project);
    assert_eq!(folders.len(), 8, "{folders:?}");
    for prefix in [
        "bs0.5.",
        "bs2.",
        "bs-4.",
        "bs8.",
        "c2Go_m8_w1.",
        "c4Go_m8_w2.",
    ] {
        assert!(
            folders.iter().any(|f| f.starts_with(prefix)),
            "{prefix} in {folders:?}"
        );
    }
    // sizer.mult and sizer.add changed the batch size; each run added its observation.
    let text = fs_err::read_to_string(project.path().join("scaling.yaml")).expect("scaling file");
    for line in [
        "{batch_size: 4, cpu: 2, memory: 1400 MiB, perf: 42.5",
        "{batch_size: 16, cpu: 2, memory: 2600 MiB, perf: 162.5",
    ] {
        assert_eq!(text.matches(line).count(), 2, "{line} twice in\n{text}");
    }
    // sizer.config: the memory model (1000 MiB + 100 MiB per item) fills 2 GB (1907 MiB) with
    // 9 items, 4 GB (3815 MiB) with 28, floored to multiples of 8.
    let data = |prefix: &str| {
        let folder = folders
            .iter()
            .find(|f| f.starts_with(prefix))
            .expect("folder");
        project.data_file(folder, "sized.D0")
    };
    assert!(
        data("c2Go_m8_w2.").contains("\"--batch-size\",\"8\",\"--workers\",\"2\""),
        "{}",
        data("c2Go_m8_w2.")
    );
    assert!(
        data("c4Go_m8_w1.").contains("\"--batch-size\",\"24\",\"--workers\",\"1\""),
        "{}",
        data("c4Go_m8_w1.")
    );

    // The model, with its error.
    let shown =
        run(project
            .milabench()
            .args(["sizer", "show", "scaling.yaml", "--capacity", "4 GB"]));
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    insta::assert_snapshot!(shown.stdout, @r"
    bench  obs  MiB/item  base MiB  rms err MiB  max err MiB  batch size
    sized    4     100.0      1000            0            0          28
    ");

    // The curves of the first two runs against sizer.mult.
    let runs = project.path().join("base/runs");
    let points: Vec<String> = ["bs0.5.", "bs2."]
        .iter()
        .map(|p| {
            runs.join(folders.iter().find(|f| f.starts_with(p)).expect("folder"))
                .display()
                .to_string()
        })
        .collect();
    let report = run(project
        .milabench()
        .arg("report")
        .arg("--sweep")
        .args(&points));
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        report.stdout.starts_with("Sweep of sizer.mult over 2 runs"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("sizer.mult=2 *"),
        "{}",
        report.stdout
    );
    let html = run(project
        .milabench()
        .args(["report", "--format", "html", "-o", "sweep.html", "--sweep"])
        .args(&points));
    assert_eq!(html.code, 0, "{}", html.stderr);
    let page = fs_err::read_to_string(project.path().join("sweep.html")).expect("page");
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "rate and memory of one benchmark"
    );

    let csv = run(project
        .milabench()
        .args(["report", "--format", "csv", "--sweep"])
        .args(&points));
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    assert!(
        csv.stdout.starts_with("bench,point,x,rate,")
            && csv.stdout.contains("\nsized,sizer.mult=2,2,"),
        "{}",
        csv.stdout
    );

    // Started again, the sweep finds every run done.
    let again = run(&mut sweep());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        again.stderr.matches("skipped: it already ran").count(),
        8,
        "{}",
        again.stderr
    );
    assert_eq!(run_folders(&project).len(), 8);
}

#[test]
fn an_interrupted_sweep_goes_on_where_it_stopped() {
    let project = Project::new(SUITE);
    let gate = project.path().join("gate");
    project.bench("sized", &sized(Some(&gate)));
    let args = [
        "--run-name",
        "swept",
        "--sweep",
        "sized.argv.--batch-size=[8,16,32]",
        "--no-check",
    ];
    let mut child = project
        .run_command(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !project
        .data_file("swept-batch-size16", "sized.D0")
        .contains("\"start\"")
    {
        assert!(Instant::now() < deadline, "the second run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL the orchestrator");
    child.wait().expect("reaped");
    wait_for("the killed run's folder is free", || {
        std::fs::File::open(
            project
                .path()
                .join("base/runs/swept-batch-size16/.milabench.lock"),
        )
        .is_ok_and(|lock| lock.try_lock().is_ok())
    });
    let record = project.path().join("base/multirun.cache");
    let lines = fs_err::read_to_string(&record).expect("record");
    assert_eq!(lines.lines().count(), 1, "{lines}");
    fs_err::write(&gate, "open").expect("gate");
    let out = run(&mut project.run_command(&args));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("sweep run 1/3 `swept-batch-size8` skipped: it already ran"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("sweep run 2/3 `swept-batch-size16`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("sweep run 3/3 `swept-batch-size32`"),
        "{}",
        out.stderr
    );
    assert_eq!(
        run_folders(&project),
        [
            "swept-batch-size16",
            "swept-batch-size32",
            "swept-batch-size8"
        ]
    );
    // The closing hint names every folder of the sweep, the one finished before too.
    let runs = project.path().join("base/runs");
    let hint = format!(
        "sweep done; its curves: milabench report --sweep {} {} {}",
        runs.join("swept-batch-size8").display(),
        runs.join("swept-batch-size16").display(),
        runs.join("swept-batch-size32").display()
    );
    assert!(out.stderr.contains(&hint), "{}", out.stderr);
    // The interrupted run went on in its folder (its first attempt set aside).
    assert!(
        project
            .path()
            .join("base/runs/swept-batch-size16/sized.D0.data.1")
            .is_file()
    );
    let lines = fs_err::read_to_string(&record).expect("record");
    assert_eq!(lines.lines().count(), 3, "{lines}");
    // A failing run does not stop a sweep; the exit status is the worst.
    let failing = run(&mut project.run_command(&[
        "--run-name",
        "bad",
        "--sweep",
        "sized.argv.--batch-size=[x,8]",
        "--no-check",
    ]));
    assert_eq!(failing.code, 1, "{}", failing.stderr);
    assert!(
        failing.stderr.contains("sweep run 2/2 `bad-batch-size8`"),
        "{}",
        failing.stderr
    );
    assert!(failing.stderr.contains("sized: ok"), "{}", failing.stderr);
    // The results store grouped each sweep's runs as they ran, the interrupted one included.
    let listed = run(project
        .milabench()
        .args(["history", "--sweep", "swept", "--format", "json"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let runs: serde_json::Value = serde_json::from_str(&listed.stdout).expect("JSON");
    let points: Vec<(&str, &str)> = runs
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default(),
                r["sweep"]["point"][0].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            ("swept-batch-size8", "sized.argv.--batch-size=8"),
            ("swept-batch-size16", "sized.argv.--batch-size=16"),
            ("swept-batch-size32", "sized.argv.--batch-size=32"),
        ],
        "{}",
        listed.stdout
    );
}

/// Sweeps refused before any run starts, each with exit code 2 and a message naming the problem
/// (issue 53: a key given twice, an unknown option key, a product past the bound, a point whose
/// name or setting is refused, values that are not YAML); the dry run refuses them alike.
#[test]
fn bad_sweeps_are_refused_before_any_run() {
    let project = Project::new(SUITE);
    project.bench("sized", &sized(None));
    let hundred = format!(
        "[{}]",
        (1..=100)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let huge: Vec<String> = ["batch-size", "a", "b", "c"]
        .iter()
        .flat_map(|k| ["--sweep".to_string(), format!("sized.argv.--{k}={hundred}")])
        .collect();
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "a key given twice",
            [
                "--sweep",
                "sized.argv.--batch-size=[8,16]",
                "--sweep",
                "sized.argv.--batch-size=[32]",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "an unknown sizer key",
            ["--sweep", "sizer.mult1=[1,2]"].map(String::from).to_vec(),
        ),
        ("10^8 runs", huge),
        (
            "a run name with a slash",
            [
                "--run-name",
                "a/b",
                "--sweep",
                "sized.argv.--batch-size=[8,16]",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "a value making a path",
            ["--sweep", "sized.argv.--batch-size=[16,../../x]"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "an unknown benchmark",
            ["--sweep", "nosuchbench.argv.--x=[1,2]"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "a bad value of the second run",
            ["--sweep", "sizer.capacity=[All,lots]"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "an unclosed list",
            ["--sweep", "sized.argv.--batch-size=[1,2"]
                .map(String::from)
                .to_vec(),
        ),
    ];
    let mut report = String::new();
    for (what, args) in &cases {
        for dry_run in [true, false] {
            let mut cmd = project.run_command(&["--no-check"]);
            if dry_run {
                cmd.arg("--dry-run");
            }
            if !args.iter().any(|a| a == "--run-name") {
                cmd.args(["--run-name", "rs"]);
            }
            let out = run(cmd.args(args));
            assert_eq!(out.code, 2, "{what}: {}", out.stderr);
            assert!(out.stdout.is_empty(), "{what}: {}", out.stdout);
            assert!(run_folders(&project).is_empty(), "{what}: a run started");
            if dry_run {
                report.push_str(&format!("## {what}\n{}\n", out.stderr));
            }
        }
    }
    insta::assert_snapshot!(report);
}

/// `--resume` is refused for a sweep, which goes on where it stopped by itself: before any
/// run, with `--dry-run` too.
#[test]
fn a_sweep_refuses_resume() {
    let project = Project::new(SUITE);
    project.bench("sized", &sized(None));
    for dry_run in [true, false] {
        let mut cmd = project.run_command(&["--no-check", "--resume", "--run-name", "rs"]);
        if dry_run {
            cmd.arg("--dry-run");
        }
        let out = run(cmd.args(["--sweep", "sized.argv.--batch-size=[8,16]"]));
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("error: --resume does not apply to a sweep")
                && out
                    .stderr
                    .contains("fix: run the same command without --resume"),
            "{}",
            out.stderr
        );
        assert!(run_folders(&project).is_empty(), "a run started");
    }
}

/// `report --sweep` of folders as a shell glob lists them (issue 53, U4 and K1): the points in
/// order of the swept value; a warning for the folders of different sweeps and for a corrupt
/// `sweep.json`; a plain run is one point named by its folder.
#[test]
fn a_sweep_report_orders_its_points_and_warns_about_mixed_folders() {
    let project = Project::new(SUITE);
    project.bench("sized", &sized(None));
    let swept = run(&mut project.run_command(&[
        "--no-check",
        "--run-name",
        "rs",
        "--sweep",
        "sized.argv.--batch-size=[8,16,32]",
    ]));
    assert_eq!(swept.code, 0, "{}", swept.stderr);
    let runs = project.path().join("base/runs");
    // `base/runs/rs-*` in a shell's order.
    let globbed: Vec<String> = run_folders(&project)
        .iter()
        .map(|f| runs.join(f).display().to_string())
        .collect();
    let report = |folders: &[String]| {
        run(project
            .milabench()
            .args(["report", "--sweep"])
            .args(folders))
    };
    let out = report(&globbed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let points: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("sized.argv.--batch-size="))
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(points, ["8", "16", "32"], "{}", out.stdout);
    assert!(
        out.stdout.starts_with(
            "Sweep of sized.argv.--batch-size over 3 runs, in order of sized.argv.--batch-size\n"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    // A point of another sweep among them.
    let other = run(&mut project.run_command(&[
        "--no-check",
        "--run-name",
        "other",
        "--sweep",
        "sized.argv.--batch-size=[4]",
    ]));
    assert_eq!(other.code, 0, "{}", other.stderr);
    let mut mixed = globbed.clone();
    mixed.push(runs.join("other-batch-size4").display().to_string());
    let out = report(&mixed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "warning: the runs are points of 2 different sweeps (rs, other): their points are compared as one sweep's"
        ),
        "{}",
        out.stderr
    );
    // A corrupt sweep.json.
    fs_err::write(runs.join("rs-batch-size16/sweep.json"), "{\"name\": ").expect("corrupt");
    let out = report(&globbed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("rs-batch-size16/sweep.json is not a run of a sweep"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("in the order given"), "{}", out.stdout);
    // A plain run: one point, named by its folder.
    let plain = run(&mut project.run_command(&["--no-check", "--run-name", "plain"]));
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let out = report(&[runs.join("plain").display().to_string()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(
            "Sweep over 1 run, each point named by its run folder (`run`): no setting the runs recorded differs between them\n"
        ),
        "{}",
        out.stdout
    );
}
