//! The results database from the command line: `db import|list|export`, `history`, run names
//! in `report`, two importers at once, and a server that is down.

use std::path::{Path, PathBuf};
use std::process::Command;

use milabench_store::harness::{GeneratedBench, GeneratedSystem, write_run};

use crate::common::{fixtures, milabench, redact, run};

fn tests_runs() -> PathBuf {
    fixtures().join("milabench/runs/tests-runs")
}

const RIJUBIGO: &str = "rijubigo.2023-03-24_13:45:27.512446";
const SEDUMOJE: &str = "sedumoje.2023-03-24_13:57:35.089747";

/// `milabench` with its base (and so its results database) in `base`.
fn milabench_in(base: &Path) -> Command {
    let mut cmd = milabench(base);
    cmd.env("MILABENCH_BASE", base);
    cmd
}

#[test]
fn python_run_folders_import_once_and_show_in_list_history_and_export() {
    let base = tempfile::tempdir().unwrap();
    let folders = [tests_runs().join(RIJUBIGO), tests_runs().join(SEDUMOJE)];
    let first = run(milabench_in(base.path())
        .args(["db", "import"])
        .args(&folders));
    assert_eq!(first.code, 0, "{}", first.stderr);
    insta::assert_snapshot!("db_import", redact(&first.stdout));
    assert!(base.path().join("results.db").exists());
    let again = run(milabench_in(base.path())
        .args(["db", "import"])
        .args(&folders));
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        again.stdout.matches("unchanged").count(),
        2,
        "{}",
        again.stdout
    );

    let list = run(milabench_in(base.path()).args(["db", "list"]));
    assert_eq!(list.code, 0, "{}", list.stderr);
    insta::assert_snapshot!("db_list", list.stdout);
    let history = run(milabench_in(base.path()).args(["history", "--bench", "benchio"]));
    assert_eq!(history.code, 0, "{}", history.stderr);
    insta::assert_snapshot!("history", history.stdout);
    let csv = run(milabench_in(base.path()).args(["history", "--format", "csv"]));
    assert!(
        csv.stdout
            .starts_with("bench,run,date,system,perf,sem%,n,fail,change,95% CI,verdict,vs\n")
    );
    let json = run(milabench_in(base.path()).args(["db", "list", "--format", "json"]));
    let runs: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2);

    let export = run(milabench_in(base.path()).args(["db", "export", RIJUBIGO]));
    assert_eq!(export.code, 0, "{}", export.stderr);
    let kinds: Vec<String> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(
        kinds[..4],
        ["\"exec\"", "\"stats\"", "\"weight\"", "\"pack\""]
    );
    let unknown = run(milabench_in(base.path()).args(["db", "export", "nope"]));
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no run named `nope`"),
        "{}",
        unknown.stderr
    );
}

/// Issue 38, item 4: a folder cut short, or another folder of the same run name, replaced the
/// stored run.
#[test]
fn an_import_never_replaces_a_run_with_less() {
    let base = tempfile::tempdir().unwrap();
    let tmp = base.path();
    let copy = |dst: &Path| {
        std::fs::create_dir_all(dst).unwrap();
        for entry in std::fs::read_dir(tests_runs().join(RIJUBIGO)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    };
    let (mine, other) = (
        tmp.join("mine").join(RIJUBIGO),
        tmp.join("other").join(RIJUBIGO),
    );
    copy(&mine);
    copy(&other);
    let import = |folder: &Path| {
        let mut out = run(milabench_in(tmp).args(["db", "import"]).arg(folder));
        out.stderr = out.stderr.replace(&tmp.display().to_string(), "[TMP]");
        out
    };
    assert_eq!(import(&mine).code, 0);
    let listed = run(milabench_in(tmp).args(["db", "list", "--format", "json"])).stdout;
    // Cut short: refused, the stored run kept.
    let file = mine.join("benchio.0.R0.data");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let cut = import(&mine);
    assert_eq!(cut.code, 2, "{}", cut.stderr);
    // Another folder of the same name: refused.
    let twin = import(&other);
    assert_eq!(twin.code, 2, "{}", twin.stderr);
    insta::assert_snapshot!(format!("{}{}", cut.stderr, twin.stderr));
    let after = run(milabench_in(tmp).args(["db", "list", "--format", "json"])).stdout;
    assert_eq!(after, listed);
    // Grown back and beyond: replaced, as the help says.
    std::fs::write(&file, format!("{text}\n")).unwrap();
    let grown = import(&mine);
    assert_eq!(grown.code, 0, "{}", grown.stderr);
    assert!(grown.stdout.contains("replaced"), "{}", grown.stdout);
    // Another namespace takes the twin.
    let out = run(milabench_in(tmp)
        .args(["db", "import", "--namespace", "lab2"])
        .arg(&other));
    assert!(out.stdout.contains("added"), "{}", out.stdout);
}

#[test]
fn report_and_compare_take_run_names_from_the_database() {
    let base = tempfile::tempdir().unwrap();
    let folder = tests_runs().join(RIJUBIGO);
    let import = run(milabench_in(base.path())
        .args(["db", "import"])
        .arg(&folder));
    assert_eq!(import.code, 0, "{}", import.stderr);
    let by_name = run(milabench_in(base.path()).args(["report", "--runs", RIJUBIGO]));
    let by_folder = run(milabench_in(base.path())
        .arg("report")
        .arg("--runs")
        .arg(&folder));
    assert_eq!(by_name.code, 0, "{}", by_name.stderr);
    assert_eq!(by_name.stdout, by_folder.stdout);
    let compare = run(milabench_in(base.path())
        .args(["compare", RIJUBIGO])
        .arg(tests_runs().join(SEDUMOJE)));
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    assert!(compare.stdout.contains("benchio"), "{}", compare.stdout);
}

fn generated_runs(root: &Path, prefix: &str, count: usize) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let folder = root.join(format!("{prefix}{i}"));
            write_run(
                &folder,
                &GeneratedSystem {
                    gpu_model: Some("NVIDIA H100".into()),
                    gpu_count: 2,
                    date: 1_700_000_000.0 + i as f64,
                },
                &[GeneratedBench {
                    name: "resnet".into(),
                    processes: vec![vec![100.0 + i as f64; 8]; 2],
                }],
            )
            .unwrap();
            folder
        })
        .collect()
}

#[test]
fn two_processes_import_into_one_sqlite_file_at_once() {
    let base = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let a = generated_runs(scratch.path(), "a", 15);
    let b = generated_runs(scratch.path(), "b", 15);
    let spawn = |folders: &[PathBuf]| {
        milabench_in(base.path())
            .args(["db", "import"])
            .args(folders)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(&a), spawn(&b));
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let list = run(milabench_in(base.path()).args(["db", "list", "--format", "json"]));
    let runs: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 30);
    let history =
        run(milabench_in(base.path()).args(["history", "--gpu", "h100", "--format", "json"]));
    let rows: serde_json::Value = serde_json::from_str(&history.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 30);
    assert_eq!(rows[1]["gpu_count"], 2);
}

#[test]
fn a_server_that_is_down_is_a_clear_error() {
    let base = tempfile::tempdir().unwrap();
    let out = run(milabench_in(base.path())
        .env("MILABENCH_DB", "postgres://me:secret@127.0.0.1:1/results")
        .args(["db", "list"]));
    // The machine's failure, not the user's input: exit 3.
    assert_eq!(out.code, 3);
    insta::assert_snapshot!(out.stderr);
}

/// Issue 38, item 2: a mistyped scheme made a folder named after the URL, password included.
#[test]
fn an_unknown_db_scheme_is_refused_and_its_password_kept_quiet() {
    let base = tempfile::tempdir().unwrap();
    let project =
        crate::run::Project::new("good:\n  install_group: tiny\n  definition: benchmarks/good\n");
    project.bench("good", &crate::run::reporting(1, 0));
    for (cwd, args) in [
        (base.path(), &["db", "list"][..]),
        (base.path(), &["history"]),
        (base.path(), &["db", "import", "."]),
        (
            project.path(),
            &["run", "--config", "suite.yaml", "--dry-run"],
        ),
    ] {
        for db in ["postgress://me:pw@host/db", "mysql://me:pw@host/db"] {
            let out = run(milabench_in(cwd).env("MILABENCH_DB", db).args(args));
            assert_eq!(out.code, 2, "{args:?} {db}: {}", out.stderr);
            assert!(!out.stderr.contains("pw"), "{}", out.stderr);
            assert!(
                out.stderr.contains("is not a database milabench knows"),
                "{}",
                out.stderr
            );
        }
    }
    let left: Vec<_> = std::fs::read_dir(base.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    let out = run(milabench_in(base.path()).args(["--db", "garbage://x", "db", "list"]));
    insta::assert_snapshot!(out.stderr);
}

/// Issue 38, item 15: read-only commands made the folders and an empty database.
#[test]
fn reading_commands_create_no_database() {
    let base = tempfile::tempdir().unwrap();
    let missing = base.path().join("nowhere");
    for args in [&["db", "list"][..], &["history"], &["db", "export", "x"]] {
        let out = run(milabench_in(&missing).current_dir(base.path()).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("no database at"), "{}", out.stderr);
        let out = run(milabench_in(base.path())
            .env("MILABENCH_DB", missing.join("r.db"))
            .args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
    assert!(!missing.exists());
    assert!(!base.path().join("results.db").exists());
}

#[test]
fn a_bad_since_date_names_the_fix() {
    let base = tempfile::tempdir().unwrap();
    let out = run(milabench_in(base.path()).args(["history", "--since", "last week"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("give a day such as 2024-06-01"),
        "{}",
        out.stderr
    );
}

/// `history --threshold` judges each change as `compare` does and exits 1 when the latest run
/// of a benchmark is worse than the one before it beyond the noise (issue 29, item 5).
#[test]
fn history_threshold_judges_changes_and_gates_on_the_latest_regression() {
    let base = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // Rates of two processes around `level`, ±2% in a fixed pattern.
    let write = |name: &str, day: f64, level: f64| {
        let folder = scratch.path().join(name);
        let rates: Vec<f64> = (0..24)
            .map(|i| level * (0.98 + 0.04 * f64::from(i * 7 % 5) / 4.0))
            .collect();
        write_run(
            &folder,
            &GeneratedSystem {
                gpu_model: Some("NVIDIA H100".into()),
                gpu_count: 1,
                date: 1_700_000_000.0 + day * 86_400.0,
            },
            &[GeneratedBench {
                name: "resnet".into(),
                processes: vec![rates.clone(), rates.into_iter().rev().collect()],
            }],
        )
        .unwrap();
        let out = run(milabench_in(base.path())
            .args(["db", "import"])
            .arg(&folder));
        assert_eq!(out.code, 0, "{}", out.stderr);
    };
    write("first", 1.0, 100.0);
    write("same", 2.0, 100.2);
    let history = |threshold: &str| {
        run(milabench_in(base.path()).args(["history", "--threshold", threshold]))
    };
    let out = history("2%");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("cannot tell"), "{}", out.stdout);
    write("slower", 3.0, 80.0);
    let out = history("2%");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("slower") && l.contains("worse")),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains(
            "regression: resnet in slower: 20.2% slower than same, beyond the noise and the 2% threshold"
        ),
        "{}",
        out.stderr
    );
    // Within a 25% threshold, and without one nothing gates.
    assert_eq!(history("25%").code, 0);
    let plain = run(milabench_in(base.path()).args(["history"]));
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let bad = history("two");
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("is not a percentage"), "{}", bad.stderr);
}

/// Issue 38, item 14: a folder that could not be imported (there, a UNIQUE constraint broken by
/// a second `db import` of the same run) ended the command, and the folders after it in its list
/// were never imported. The failure is said, the others are imported, and the exit code is 2.
#[test]
fn a_folder_that_cannot_be_imported_does_not_stop_the_others() {
    let base = tempfile::tempdir().unwrap();
    let missing = base.path().join("no-such-run");
    let out = run(milabench_in(base.path())
        .args(["db", "import"])
        .arg(&missing)
        .arg(tests_runs().join(SEDUMOJE)));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("could not import {}", missing.display())),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains(SEDUMOJE) && out.stdout.contains("added"),
        "{}",
        out.stdout
    );
}

/// Issue 40, item 4: the store keeps a sweep's runs grouped (imported from the `sweep.json` of
/// their folders), `history --sweep NAME` lists them with their points, and `--point` follows
/// one point across the days the sweep ran, each run compared with the same point before.
#[test]
fn history_lists_a_sweeps_runs_and_follows_one_point() {
    let base = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let key = "resnet.argv.--batch-size";
    let mut folders = Vec::new();
    for (day, bs, rate) in [
        (1, 32, 100.0),
        (1, 64, 180.0),
        (3, 32, 104.0),
        (3, 64, 171.0),
    ] {
        let name = format!("bs-batch-size{bs}.{day}");
        let folder = scratch.path().join(&name);
        write_run(
            &folder,
            &GeneratedSystem {
                gpu_model: Some("NVIDIA H100".into()),
                gpu_count: 1,
                date: 1_700_000_000.0 + f64::from(day) * 86_400.0 + f64::from(bs),
            },
            &[GeneratedBench {
                name: "resnet".into(),
                processes: vec![vec![rate; 8]],
            }],
        )
        .unwrap();
        // What the sweep engine writes beside the run's `.data` files.
        let sweep = serde_json::json!({
            "name": name, "key": format!("bs-batch-size{bs}.{{time}}"), "sweep": "bs",
            "options": [], "overrides": [format!("{key}={bs}")], "values": [[key, bs]],
        });
        fs_err::write(folder.join("sweep.json"), sweep.to_string()).unwrap();
        folders.push(folder);
    }
    folders.extend(generated_runs(scratch.path(), "alone", 1));
    let import = run(milabench_in(base.path())
        .args(["db", "import"])
        .args(&folders));
    assert_eq!(import.code, 0, "{}", import.stderr);

    let runs = run(milabench_in(base.path()).args(["history", "--sweep", "bs"]));
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    insta::assert_snapshot!("history_sweep_runs", runs.stdout);
    let point = run(milabench_in(base.path()).args([
        "history",
        "--bench",
        "resnet",
        "--sweep",
        "bs",
        "--point",
        &format!("{key}=64"),
    ]));
    assert_eq!(point.code, 0, "{}", point.stderr);
    insta::assert_snapshot!("history_sweep_point", point.stdout);
    // Every run of the benchmark: the point column, each run against its own point.
    let all = run(milabench_in(base.path()).args(["history", "--bench", "resnet"]));
    assert_eq!(all.code, 0, "{}", all.stderr);
    insta::assert_snapshot!("history_sweep_all", all.stdout);
    let json = run(milabench_in(base.path()).args(["db", "list", "--format", "json"]));
    let listed: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(listed[0].get("sweep").is_none(), "{}", listed[0]);
    assert_eq!(listed[1]["sweep"]["sweep"], "bs");
    assert_eq!(listed[1]["sweep"]["point"][0], format!("{key}=32"));

    let unknown = run(milabench_in(base.path()).args(["history", "--sweep", "nightly"]));
    assert_eq!(unknown.code, 0, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no results of sweep `nightly`")
            && unknown.stderr.contains("its sweeps: bs"),
        "{}",
        unknown.stderr
    );
    let bad = run(milabench_in(base.path()).args(["history", "--point", "64"]));
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("give KEY=VALUE"), "{}", bad.stderr);
}

/// Issue 53, W2: `db import <base>/runs` (a folder of runs, as `report` takes one) imports each
/// run folder under it as its own run, never one run of their pooled numbers.
#[test]
fn a_folder_of_runs_is_imported_run_by_run() {
    let base = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let runs = scratch.path().join("runs");
    generated_runs(&runs, "night", 3);
    let import = run(milabench_in(base.path()).args(["db", "import"]).arg(&runs));
    assert_eq!(import.code, 0, "{}", import.stderr);
    assert!(
        import
            .stderr
            .contains("is a folder of 3 runs: each is imported as its own run"),
        "{}",
        import.stderr
    );
    assert_eq!(
        import.stdout.matches("added").count(),
        3,
        "{}",
        import.stdout
    );
    let json = run(milabench_in(base.path()).args(["db", "list", "--format", "json"]));
    let listed: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["night0", "night1", "night2"]);
}

/// Issue 53, K5: a run without GPUs is named by its CPU in `history` as in `db list` and
/// `history --sweep` (the system column had the CPU in one and nothing in the other).
#[test]
fn history_names_the_system_of_a_cpu_run_as_the_run_list_does() {
    let base = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let folder = scratch.path().join("cpu-run");
    write_run(
        &folder,
        &GeneratedSystem {
            gpu_model: None,
            gpu_count: 0,
            date: 1_700_000_000.0,
        },
        &[GeneratedBench {
            name: "sized".into(),
            processes: vec![vec![80.0; 8]],
        }],
    )
    .unwrap();
    let import = run(milabench_in(base.path())
        .args(["db", "import"])
        .arg(&folder));
    assert_eq!(import.code, 0, "{}", import.stderr);
    let system = |args: &[&str]| {
        let csv = run(milabench_in(base.path())
            .args(args)
            .args(["--format", "csv"]));
        assert_eq!(csv.code, 0, "{}", csv.stderr);
        let header: Vec<&str> = csv.stdout.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv.stdout.lines().nth(1).unwrap().split(',').collect();
        let at = header.iter().position(|c| *c == "system").unwrap();
        row[at].to_owned()
    };
    assert_eq!(system(&["db", "list"]), "Generated CPU");
    assert_eq!(system(&["history", "--bench", "sized"]), "Generated CPU");
}
