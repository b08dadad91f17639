//! `milabench report`, `summary`, `compare` and `replay` on the Python tool's run folders and
//! replays, and on bad input.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{fixtures, milabench, redact, run};

fn root() -> PathBuf {
    fixtures().join("milabench")
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(root().join("expected").join(name)).unwrap()
}

const RIJUBIGO: &str = "runs/tests-runs/rijubigo.2023-03-24_13:45:27.512446";
const SEDUMOJE: &str = "runs/tests-runs/sedumoje.2023-03-24_13:57:35.089747";

#[test]
fn text_report_is_byte_for_byte_the_python_one() {
    for (runs, golden) in [
        (RIJUBIGO, "report-rijubigo.txt"),
        (SEDUMOJE, "report-sedumoje.txt"),
        ("runs/tests-runs", "report-tests-runs.txt"),
    ] {
        let out = run(milabench(&root()).args([
            "report",
            "--runs",
            runs,
            "--config",
            "config/benchio.yaml",
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        // Every line of the Python tool's report is there, unchanged and first; the intervals
        // follow in a section of their own.
        let want = expected(golden);
        let (python, ours) = out.stdout.split_at(want.len().min(out.stdout.len()));
        assert_eq!(python, want, "{runs}");
        insta::assert_snapshot!(format!("intervals_{golden}"), ours);
    }
}

#[test]
fn report_without_config_takes_weights_from_the_data() {
    let out = run(milabench(&root()).args(["report", "--runs", RIJUBIGO, "--price", "1000"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn formats_carry_the_text_numbers() {
    let json = run(milabench(&root()).args([
        "report",
        "--runs",
        "runs/tests-runs",
        "--config",
        "config/benchio.yaml",
        "--format",
        "json",
    ]));
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        format!("{:.2}", v["benchmarks"][0]["perf"].as_f64().unwrap()),
        "7878.45"
    );
    assert_eq!(format!("{:.2}", v["score"].as_f64().unwrap()), "7879.45");
    insta::assert_snapshot!("report_json", json.stdout);
    for format in ["csv", "md"] {
        let out = run(milabench(&root()).args([
            "report",
            "--runs",
            "runs/tests-runs",
            "--config",
            "config/benchio.yaml",
            "--format",
            format,
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        insta::assert_snapshot!(format!("report_{format}"), out.stdout);
    }
}

#[test]
fn summary_json_has_the_python_fields() {
    let out = run(milabench(&root()).args(["summary", "--runs", SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours: Value = serde_json::from_str(&out.stdout).unwrap();
    let want: Value =
        serde_json::from_str(&expected("summary-sedumoje.json").replace("NaN", "null")).unwrap();
    let keys = |v: &Value| {
        v["benchio"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&ours), keys(&want));
    assert_eq!(ours["benchio"]["gpu_load"], want["benchio"]["gpu_load"]);
    assert!(!out.stdout.contains("NaN"));
}

#[test]
fn replay_prints_the_validation_report() {
    let out = run(milabench(&root()).args(["replay", SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, expected("validation/replay-sedumoje.txt"));
    let out = run(milabench(&root()).args(["replay", "replays/loss.txt", "--validations", "loss"]));
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("* 1 x benchio.0 Loss was NaN (R0)"),
        "{}",
        out.stdout
    );
}

#[test]
fn compare_judges_changes_against_noise() {
    let out = run(milabench(&root()).args(["compare", RIJUBIGO, SEDUMOJE]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stdout);
    let out = run(milabench(&root()).args([
        "compare",
        RIJUBIGO,
        SEDUMOJE,
        "--format",
        "json",
        "--fail-above",
        "0",
    ]));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let worse = v["rows"][0]["verdict"] == "worse";
    assert_eq!(out.code, if worse { 1 } else { 0 });
}

fn bad(args: &[&str], cwd: &std::path::Path) -> (i32, String) {
    let out = run(milabench(cwd).args(args));
    (
        out.code,
        redact(&out.stderr).replace(&cwd.display().to_string(), "[TMP]"),
    )
}

#[test]
fn bad_input_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    std::fs::create_dir_all(tmp.join("empty-run")).unwrap();
    std::fs::create_dir_all(tmp.join("junk-run")).unwrap();
    std::fs::write(tmp.join("junk-run/a.data"), "not json\n\u{0}\n").unwrap();
    std::fs::write(tmp.join("junk-run/b.data"), "").unwrap();
    // Issue 38, item 18: an empty `config` event was reported as no `config` event.
    std::fs::write(
        tmp.join("junk-run/c.data"),
        "{\"event\": \"config\", \"data\": {}}\n",
    )
    .unwrap();
    // A good run with damage: a bad line, non-UTF-8 bytes, a truncated last line.
    std::fs::create_dir_all(tmp.join("damaged")).unwrap();
    let good = std::fs::read(root().join(RIJUBIGO).join("benchio.0.R0.data")).unwrap();
    let mut damaged = b"garbage line\n".to_vec();
    damaged.extend(&good);
    damaged.extend(
        b"{\"event\": \"line\", \"data\": \"\xff\\n\", \"pipe\": \"stderr\"}\n{\"event\": \"da",
    );
    std::fs::write(tmp.join("damaged/benchio.0.R0.data"), damaged).unwrap();

    let (code, err) = bad(&["report", "--runs", "missing-folder"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("missing_folder", err);
    let (code, err) = bad(&["report", "--runs", "empty-run"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("no_data_files", err);
    let (code, err) = bad(&["summary", "--runs", "junk-run"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("no_runs", err);
    let out = run(milabench(tmp).args(["report", "--runs", "damaged"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("benchio |    0 |   1 |"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!(
        "damaged_warnings",
        out.stderr.replace(&tmp.display().to_string(), "[TMP]")
    );
    let (code, err) = bad(&["replay", "nope.data"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_missing", err);
    let (code, err) = bad(&["replay", "junk-run/b.data"], tmp);
    assert_eq!(code, 2);
    insta::assert_snapshot!("replay_no_config", err);
}

/// A copy of the rijubigo run at `dst`, each file's text passed through `edit(file name, text)`.
fn copy_run(dst: &std::path::Path, edit: impl Fn(&str, String) -> String) {
    std::fs::create_dir_all(dst).unwrap();
    let src = root().join(RIJUBIGO);
    let mut names: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let text = std::fs::read_to_string(src.join(&name)).unwrap();
        std::fs::write(dst.join(&name), edit(&name, text)).unwrap();
    }
}

/// `milabench report` from `cwd`, its stderr with `cwd` written `[TMP]`.
fn report_in(cwd: &std::path::Path, args: &[&str]) -> crate::common::Output {
    let mut out = run(milabench(cwd).arg("report").args(args));
    out.stderr = redact(&out.stderr).replace(&cwd.display().to_string(), "[TMP]");
    out
}

/// The breakdown row of `bench` in a text report.
fn row<'a>(stdout: &'a str, bench: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{bench} ")))
        .unwrap_or_else(|| panic!("no row {bench} in\n{stdout}"))
}

#[test]
fn missing_and_unfinished_benchmarks_count_as_failures() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    // The suite expects a second benchmark that the run lacks.
    let suite = std::fs::read_to_string(root().join("config/benchio.yaml")).unwrap();
    let suite = suite.replace("../benchio", &root().join("benchio").display().to_string());
    let second = suite.replacen("benchio:", "other:", 1);
    std::fs::write(tmp.join("suite.yaml"), format!("{suite}{second}")).unwrap();
    copy_run(&tmp.join("run"), |_, text| text);
    let out = report_in(tmp, &["--runs", "run", "--config", "suite.yaml"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        row(&out.stdout, "other").starts_with("other   |    1 |   0 |"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!("missing_benchmark", out.stdout);

    // A process whose file has no `end`: one failed process of four, and a warning.
    let cut = tmp.join("cut");
    copy_run(&cut, |name, text| {
        if name == "benchio.0.R1.data" {
            text.lines()
                .filter(|l| !l.starts_with(r#"{"event": "end""#))
                .map(|l| format!("{l}\n"))
                .collect()
        } else {
            text
        }
    });
    let out = report_in(tmp, &["--runs", "cut"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        row(&out.stdout, "benchio").starts_with("benchio |    1 |   4 |"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Failure rate:      25.00% (FAIL)"));
    insta::assert_snapshot!("unfinished_warning", out.stderr);
}

#[test]
fn rates_that_are_not_measurements_fail_their_process() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    for bad in ["NaN", "Infinity", "1e308", "-5.0"] {
        let folder = tmp.join(format!("run{bad}"));
        copy_run(&folder, |name, text| {
            if name == "benchio.0.R0.data" {
                text.replacen(
                    "\"rate\": 8034.064433196754",
                    &format!("\"rate\": {bad}"),
                    1,
                )
            } else {
                text
            }
        });
        let out = report_in(tmp, &["--runs", &format!("run{bad}")]);
        assert_eq!(out.code, 1, "{bad}: {}", out.stderr);
        let line = row(&out.stdout, "benchio");
        assert!(line.starts_with("benchio |    1 |   4 |"), "{bad}: {line}");
        // perf is the mean of the measured rates; score and perf are finite.
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let perf: f64 = cells[4].parse().unwrap();
        assert!(perf > 7000.0 && perf < 9000.0, "{bad}: {line}");
        assert!(!out.stdout.contains("inf"), "{bad}: {}", out.stdout);
        assert!(
            out.stderr.contains("1 training rate is not a measurement"),
            "{bad}: {}",
            out.stderr
        );
        if bad == "NaN" {
            insta::assert_snapshot!("nan_rate_warning", out.stderr);
            // The rate layer of replay says why it fails.
            let out = run(milabench(tmp).args(["replay", "runNaN"]));
            assert_eq!(out.code, 1);
            assert!(
                out.stdout
                    .contains("* 1 x rates that are not measurements (R0: 1, first NaN)"),
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn links_and_repeated_folders_count_each_file_once() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    copy_run(&tmp.join("runs/r1"), |_, text| text);
    symlink("r1", tmp.join("runs/latest")).unwrap();
    // Two links to `.`: followed, they would multiply the files without end.
    symlink(".", tmp.join("runs/r1/here")).unwrap();
    symlink(".", tmp.join("runs/r1/again")).unwrap();
    let golden = run(milabench(&root()).args(["report", "--runs", RIJUBIGO])).stdout;
    let breakdown = |text: &str| row(text, "benchio").to_owned();
    let out = report_in(tmp, &["--runs", "runs"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(breakdown(&out.stdout), breakdown(&golden));
    insta::assert_snapshot!("links_skipped", out.stderr);
    let out = report_in(tmp, &["--runs", "runs/r1", "runs/r1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(breakdown(&out.stdout), breakdown(&golden));
    assert!(
        out.stderr.contains(
            "runs/r1/benchio.0.R0.data: the same file as runs/r1/benchio.0.R0.data, counted once"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn one_bad_entry_does_not_stop_the_report_or_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    let run_dir = tmp.join("run");
    copy_run(&run_dir, |_, text| text);
    std::os::unix::fs::symlink("gone.data", run_dir.join("dangling.data")).unwrap();
    // A FIFO: opening it for reading would wait for a writer that never comes.
    let status = std::process::Command::new("mkfifo")
        .arg(run_dir.join("pipe.data"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = report_in(tmp, &["--runs", "run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let golden = run(milabench(&root()).args(["report", "--runs", RIJUBIGO])).stdout;
    assert_eq!(row(&out.stdout, "benchio"), row(&golden, "benchio"));
    insta::assert_snapshot!("bad_entries_skipped", out.stderr);

    // replay reads a folder whose file ends in a cut line, as report does, with a warning.
    let cut = tmp.join("cut");
    copy_run(&cut, |name, text| {
        if name == "benchio.1.R1.data" {
            format!("{text}{{\"event\": \"da")
        } else {
            text
        }
    });
    let whole = run(milabench(tmp).args(["replay", "run"]));
    let out = run(milabench(tmp).args(["replay", "cut"]));
    assert_eq!(out.code, whole.code, "{}", out.stderr);
    assert_eq!(out.stdout.replacen("cut", "run", 1), whole.stdout);
    assert!(
        out.stderr
            .contains("benchio.1.R1.data: 1 line is cut short"),
        "{}",
        out.stderr
    );
    let (code, err) = bad(&["replay", "run/pipe.data"], tmp);
    assert_eq!(code, 2);
    assert!(err.contains("is not a regular file"), "{err}");
}

/// `text` with every training rate multiplied by `factor`.
fn scale_rates(text: &str, factor: f64) -> String {
    text.lines()
        .map(|l| match l.find("\"rate\": ") {
            Some(at) => {
                let start = at + 8;
                let end = start + l[start..].find(',').unwrap();
                let rate: f64 = l[start..end].parse().unwrap();
                format!("{}{}{}\n", &l[..start], rate * factor, &l[end..])
            }
            None => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn compare_verdicts_follow_the_intervals_and_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    copy_run(&tmp.join("base"), |_, text| text);
    copy_run(&tmp.join("slow"), |_, text| scale_rates(&text, 0.8));
    let compare = |args: &[&str]| {
        let out = run(milabench(tmp).arg("compare").args(args));
        let v: Value = serde_json::from_str(
            &run(milabench(tmp)
                .arg("compare")
                .args(args)
                .args(["--format", "json"]))
            .stdout,
        )
        .unwrap();
        (out, v["rows"][0]["verdict"].as_str().unwrap().to_owned())
    };
    // A/A: two runs of the same machine, and a run with itself.
    let rijubigo = root().join(RIJUBIGO).display().to_string();
    let sedumoje = root().join(SEDUMOJE).display().to_string();
    let (out, verdict) = compare(&[&rijubigo, &sedumoje, "--threshold", "2%"]);
    assert_eq!(
        (out.code, verdict.as_str()),
        (0, "cannot_tell"),
        "{}",
        out.stdout
    );
    let (out, verdict) = compare(&["base", "base", "--threshold", "2%"]);
    assert_eq!((out.code, verdict.as_str()), (0, "cannot_tell"));
    // 20% slower: worse, and the threshold gates the exit status.
    let (out, verdict) = compare(&["base", "slow", "--threshold", "2%"]);
    assert_eq!((out.code, verdict.as_str()), (1, "worse"), "{}", out.stderr);
    insta::assert_snapshot!("compare_worse", format!("{}{}", out.stdout, out.stderr));
    // ... but not beyond a 30% threshold; the other way round it is better.
    let (out, verdict) = compare(&["base", "slow", "--threshold", "30"]);
    assert_eq!((out.code, verdict.as_str()), (0, "cannot_tell"));
    let (out, verdict) = compare(&["slow", "base", "--threshold", "2%"]);
    assert_eq!((out.code, verdict.as_str()), (0, "better"));
    // Without --threshold nor --fail-above the status does not gate.
    let (out, _) = compare(&["base", "slow"]);
    assert_eq!(out.code, 0);
    let (code, err) = bad(&["compare", "base", "slow", "--threshold", "two%"], tmp);
    assert_eq!(code, 2);
    assert!(
        err.contains("is not a percentage of 0 or more; give e.g. 2%"),
        "{err}"
    );
}

#[test]
fn compare_fails_on_missing_failed_and_rateless_benchmarks() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    copy_run(&tmp.join("base"), |_, text| text);
    // The new run: every process failed.
    copy_run(&tmp.join("failed"), |_, text| {
        text.replace("\"return_code\": 0", "\"return_code\": 1")
    });
    // The new run: every rate NaN (so every process failed too).
    copy_run(&tmp.join("nan-rates"), |_, text| {
        text.lines()
            .map(|l| {
                if l.contains("\"rate\": ") {
                    let start = l.find("\"rate\": ").unwrap() + 8;
                    let end = start + l[start..].find(',').unwrap();
                    format!("{}NaN{}\n", &l[..start], &l[end..])
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    });
    // The new run: another benchmark only.
    copy_run(&tmp.join("other"), |_, text| {
        text.replace("\"name\": \"benchio\"", "\"name\": \"other\"")
    });
    let mut verdicts = Vec::new();
    for new in ["base", "failed", "nan-rates", "other"] {
        let out = run(milabench(tmp).args(["compare", "base", new, "--fail-above", "5"]));
        assert_eq!(
            out.code,
            if new == "base" { 0 } else { 1 },
            "{new}: {}",
            out.stderr
        );
        verdicts.push(format!("{new}: {}", out.stderr.trim()));
        let out = run(milabench(tmp).args(["compare", "base", new]));
        assert_eq!(out.code, 0, "{new}: without --fail-above: {}", out.stderr);
    }
    insta::assert_snapshot!("compare_regressions", verdicts.join("\n"));
    for (flag, value) in [
        ("--fail-above", "NaN"),
        ("--fail-above", "-1"),
        ("--fail-above", "inf"),
    ] {
        let (code, err) = bad(
            &["compare", "base", "base", &format!("{flag}={value}")],
            tmp,
        );
        assert_eq!(code, 2, "{flag}={value}");
        assert!(err.contains("is not a percentage of 0 or more"), "{err}");
    }
    let (code, err) = bad(&["report", "--runs", "base", "--price=-1000"], tmp);
    assert_eq!(code, 2);
    assert!(
        err.contains("`-1000` is not a number of 0 or more"),
        "{err}"
    );
}

/// Issue 38, item 7: a run whose benchmark failed in every process was a regression against
/// itself; `--fail-above 1%` was refused where `--threshold 5` was taken.
#[test]
fn a_benchmark_failed_in_both_runs_is_no_regression() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    for name in ["failed", "failed-again"] {
        copy_run(&tmp.join(name), |_, text| {
            text.replace("\"return_code\": 0", "\"return_code\": 1")
        });
    }
    copy_run(&tmp.join("ok"), |_, text| text);
    for gate in [
        &["--threshold", "2%"][..],
        &["--fail-above", "1%"],
        &["--fail-above", "1"],
    ] {
        let out = run(milabench(tmp)
            .args(["compare", "failed", "failed-again"])
            .args(gate));
        assert_eq!(out.code, 0, "{gate:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("failed in both"), "{}", out.stdout);
        // Failed in the compared run only: still a regression.
        let out = run(milabench(tmp).args(["compare", "ok", "failed"]).args(gate));
        assert_eq!(out.code, 1, "{gate:?}: {}{}", out.stdout, out.stderr);
    }
}

#[test]
fn the_system_block_shows_host_memory_and_formats_keep_it_apart_from_gpu_memory() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    let meta = r#"{"event": "meta", "data": {"cpu": {"count": 8, "brand": "Test CPU"}, "accelerators": {"arch": "cpu", "gpus": {}, "system": {}}, "memory": {"total": 25232932864}}, "pipe": null}"#;
    let process = r#"{"event": "data", "data": {"task": "main", "time": 1679679928.0, "process": {"pid": 7, "load": 50.0, "memory": [536870912, 25232932864]}}, "pipe": "data"}"#;
    copy_run(&tmp.join("run"), |_, text| {
        let (first, rest) = text.split_once('\n').unwrap();
        format!("{first}\n{meta}\n{process}\n{rest}")
    });
    let out = report_in(tmp, &["--runs", "run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("memory:   23.5 GiB (host)"),
        "{}",
        out.stdout
    );
    // The text column keeps the Python tool's value: no GPU sample, no number.
    assert!(
        row(&out.stdout, "benchio").contains("|         nan |"),
        "{}",
        out.stdout
    );
    let json = report_in(tmp, &["--runs", "run", "--format", "json"]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["benchmarks"][0]["peak_memory"], Value::Null);
    assert_eq!(v["benchmarks"][0]["host_peak_memory"], 512.0);
    let csv = report_in(tmp, &["--runs", "run", "--format", "csv"]);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    let column = lines[0]
        .split(',')
        .position(|c| c == "host_peak_memory")
        .unwrap();
    assert_eq!(lines[1].split(',').nth(column), Some("512"));
    let md = report_in(tmp, &["--runs", "run", "--format", "md"]);
    assert!(
        md.stdout.contains("| peak_memory | host_peak_memory |"),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("| nan | 512 |"), "{}", md.stdout);
}

/// The last rate of `text` (a `.data` file's lines) multiplied by `factor`.
fn scale_last_rate(text: &str, factor: f64) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("\"rate\": "))
        .unwrap();
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == last {
                scale_rates(l, factor)
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

#[test]
fn an_outlier_the_mean_trims_leaves_the_interval_alone() {
    // A last rate 100 times the others (a short final batch: the `dlrm` of a real 8-GPU run of
    // the Python tool had one) is trimmed from `perf`; it must not widen `perf`'s interval.
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    // Without the repeat tags: the spread of two repeats' means (one degree of freedom) would
    // set both intervals.
    let untagged = |text: String| text.replace(", \"R0\"]", "]").replace(", \"R1\"]", "]");
    copy_run(&tmp.join("plain"), |_, text| untagged(text));
    copy_run(&tmp.join("outlier"), |name, text| {
        if name == "benchio.0.R0.data" {
            scale_last_rate(&untagged(text), 100.0)
        } else {
            untagged(text)
        }
    });
    let bench = |run: &str| -> Value {
        let out = report_in(tmp, &["--runs", run, "--format", "json"]);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["benchmarks"][0].clone()
    };
    let half = |b: &Value, key: &str| {
        (b[key]["high"].as_f64().unwrap() - b[key]["low"].as_f64().unwrap()) / 2.0
    };
    let (plain, outlier) = (bench("plain"), bench("outlier"));
    let perf = outlier["perf"].as_f64().unwrap();
    assert!((perf / plain["perf"].as_f64().unwrap() - 1.0).abs() < 0.01);
    for key in ["perf_ci95", "score_ci95"] {
        let (h0, h1) = (half(&plain, key), half(&outlier, key));
        assert!(
            h1 < 1.5 * h0,
            "{key}: ±{h1} with the outlier, ±{h0} without"
        );
        assert!(h1 < 0.1 * perf, "{key}: ±{h1} around {perf}");
    }
    assert_eq!(outlier["warm_up"]["skip_too_short"], false, "{outlier}");
}

/// A per-GPU run folder at `dir`: one process per entry of `rates`, on device `D<i>`, with
/// those training rates; a process without rates exits with code 1 before measuring.
fn write_per_gpu_run(dir: &std::path::Path, rates: &[&[f64]]) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, series) in rates.iter().enumerate() {
        let mut lines = vec![
            serde_json::json!({"event": "config", "pipe": null, "data": {
                "name": "pergpu", "tag": ["pergpu", format!("D{i}")], "device": i,
                "devices": [i], "plan": {"method": "per_gpu"}, "weight": 1, "enabled": true}}),
            serde_json::json!({"event": "start", "pipe": null, "data": {"time": 1000.0}}),
        ];
        for rate in *series {
            lines.push(serde_json::json!({"event": "data", "pipe": "data",
                "data": {"task": "train", "rate": rate, "units": "items/s"}}));
        }
        let code = if series.is_empty() { 1 } else { 0 };
        lines.push(serde_json::json!({"event": "end", "pipe": null,
            "data": {"return_code": code, "time": 1010.0}}));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(format!("pergpu.D{i}.data")), text).unwrap();
    }
}

#[test]
fn a_gpu_that_failed_before_its_first_rate_leaves_the_others_in_the_score() {
    // The score of a per-GPU benchmark is the sum of each GPU's rate times the share of
    // processes that succeeded: with one of four GPUs failing at start, 3 × 100 × 3/4.
    let dir = tempfile::tempdir().unwrap();
    let steady: &[f64] = &[99.0, 100.0, 101.0, 100.0, 99.0, 101.0, 100.0, 100.0, 100.0];
    write_per_gpu_run(&dir.path().join("run"), &[steady, steady, &[], steady]);
    let out = report_in(dir.path(), &["--runs", "run", "--format", "json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let bench = &v["benchmarks"][0];
    assert_eq!(
        (bench["n"].as_f64(), bench["fail"].as_f64()),
        (Some(4.0), Some(1.0))
    );
    let score = bench["score"].as_f64().unwrap();
    assert!((score - 225.0).abs() < 1e-9, "score {score}");
    let (low, high) = (
        bench["score_ci95"]["low"].as_f64().unwrap(),
        bench["score_ci95"]["high"].as_f64().unwrap(),
    );
    assert!(low < score && score < high && high - low < 10.0, "{bench}");
    let summary = run(milabench(dir.path()).args(["summary", "--runs", "run"]));
    let v: Value = serde_json::from_str(&summary.stdout).unwrap();
    let devices: Vec<&String> = v["pergpu"]["per_gpu"].as_object().unwrap().keys().collect();
    assert_eq!(devices, ["0", "1", "3"]);
}

#[test]
fn skips_the_python_tool_recorded_are_not_failures() {
    // The Python tool writes `<bench>.data` with one message per unmet capability (twice in its
    // L40S run: once per attempt); its report, like ours, leaves such benchmarks `nan`.
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    copy_run(&tmp.join("run"), |_, text| text);
    let skip = "{\"event\": \"message\", \"data\": {\"message\": \"Skip benchio-nodes because \
                the following capability is not satisfied: len(nodes) >= 2\"}, \"pipe\": null}\n";
    std::fs::write(tmp.join("run/benchio-nodes.data"), skip.repeat(2)).unwrap();
    std::fs::write(
        tmp.join("suite.yaml"),
        "benchio:\n  definition: .\n  enabled: true\n  weight: 2\n\
         benchio-nodes:\n  definition: .\n  enabled: true\n  weight: 1\n",
    )
    .unwrap();
    let out = report_in(tmp, &["--runs", "run", "--config", "suite.yaml"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        row(&out.stdout, "benchio-nodes").starts_with("benchio-nodes |  nan | nan |"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Failure rate:       0.00% (PASS)"),
        "{}",
        out.stdout
    );
    assert!(!out.stderr.contains("benchio-nodes"), "{}", out.stderr);
}

#[test]
fn gpu_samples_without_a_load_still_give_memory_and_power() {
    // NVML reports no utilisation for MIG instances: their samples have memory and power only.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let steady: &[f64] = &[99.0, 100.0, 101.0, 100.0, 99.0, 101.0, 100.0, 100.0, 100.0];
    write_per_gpu_run(&run, &[steady]);
    let path = run.join("pergpu.D0.data");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let end = text.rfind("{\"event\":\"end\"").unwrap();
    let samples: String = [(1001.0, 5000.0, 250.0), (1002.0, 6000.0, 300.0)]
        .iter()
        .map(|(time, used, power)| {
            format!(
                "{}\n",
                serde_json::json!({"event": "data", "pipe": "data", "data": {"task": "main",
                    "time": time, "gpudata": {"0": {"memory": [used, 81559.0],
                    "temperature": 40.0, "power": power}}}})
            )
        })
        .collect();
    text.insert_str(end, &samples);
    std::fs::write(&path, text).unwrap();
    let out = report_in(dir.path(), &["--runs", "run", "--format", "json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let bench = &v["benchmarks"][0];
    assert_eq!(bench["peak_memory"].as_f64(), Some(6000.0), "{bench}");
    assert_eq!(bench["median_watt"].as_f64(), Some(275.0), "{bench}");
}

#[test]
fn outputs_never_land_on_the_runs_they_are_made_from() {
    // Issue 38, item 1: `report -o R/bench.0.data` wrote the page over the run's own events.
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    copy_run(&tmp.join("a"), |_, text| text);
    copy_run(&tmp.join("b"), |_, text| text);
    std::os::unix::fs::symlink("a/benchio.0.R0.data", tmp.join("link.html")).unwrap();
    std::fs::hard_link(tmp.join("a/benchio.1.R0.data"), tmp.join("hard.html")).unwrap();
    let events = std::fs::read(tmp.join("a/benchio.0.R0.data")).unwrap();
    let mut errors = Vec::new();
    for args in [
        &[
            "report",
            "--runs",
            "a",
            "--format",
            "html",
            "-o",
            "a/benchio.0.R0.data",
        ][..],
        &["report", "--runs", "a", "-o", "link.html"],
        &["report", "--runs", "a", "-o", "hard.html"],
        &["report", "--runs", "a", "-o", "b/notes.txt"],
        &["summary", "--runs", "a", "-o", "a/summary.json"],
        &["compare", "a", "b", "-o", "b/benchio.0.R1.data"],
    ] {
        let (code, err) = bad(args, tmp);
        assert_eq!(code, 2, "{args:?}: {err}");
        errors.push(err);
    }
    assert_eq!(
        std::fs::read(tmp.join("a/benchio.0.R0.data")).unwrap(),
        events
    );
    assert!(!tmp.join("b/notes.txt").exists());
    insta::assert_snapshot!("outputs_refused", errors.concat());
    // Elsewhere, or the reports a run keeps in its folder, are written.
    for output in ["report.txt", "a/report.html"] {
        let out = run(milabench(tmp).args(["report", "--runs", "a", "-o", output]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(tmp.join(output).exists());
    }
}

/// Issue 39: a run of serving benchmarks (made with the load generator's mock server) gets the
/// serving table after the Python layout: scenario, requests, latency percentiles, throughputs,
/// goodput and the SLO verdict; JSON carries the same cells and every step of the sweep.
#[test]
fn serving_benchmarks_get_their_table() {
    let serving = fixtures().join("serving");
    let report = |format: &str| {
        let out =
            run(milabench(&serving).args(["report", "--runs", "mock-run", "--format", format]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    insta::assert_snapshot!(report("text"));
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let sweep = &json["serving"][1];
    assert_eq!(sweep["scenario"], "sweep: highest held 20 req/s");
    let steps: Vec<(f64, &Value)> = sweep["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["rate"].as_f64().unwrap(), &s["slo"]))
        .collect();
    assert_eq!(
        steps,
        [
            (10.0, &json!("held")),
            (20.0, &json!("held")),
            (40.0, &json!("not held"))
        ]
    );
    assert!(report("md").contains("\n## Serving\n"));
}

/// Issue 39: the serving table of a folder `milabench load` wrote holds the numbers `load`
/// printed: the report reads the load generator's events as it wrote them.
#[test]
fn serving_rows_carry_the_numbers_load_measured() {
    use milabench_load::mock::{MockConfig, MockServer};
    let server = MockServer::start(MockConfig {
        ttft: std::time::Duration::from_millis(5),
        gap: std::time::Duration::from_millis(1),
        output_tokens: 4,
        ..MockConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("run");
    let runs = runs.to_str().unwrap();
    let load = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "sweep",
        "--rate",
        "20",
        "--sweep-steps",
        "2",
        "--duration",
        "1s",
        "--slo",
        "ttft=5s",
        "--format",
        "json",
        "--run-dir",
        runs,
        "--name",
        "llm",
    ]));
    assert_eq!(load.code, 0, "{}", load.stderr);
    let load: Value = serde_json::from_str(&load.stdout).unwrap();
    let report = run(milabench(dir.path()).args(["report", "--runs", runs, "--format", "json"]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let report: Value = serde_json::from_str(&report.stdout).unwrap();
    let row = &report["serving"][0];
    assert_eq!(row["scenario"], "sweep: highest held 30 req/s");
    // Both rates held: the last stands for the run.
    let summary = &load["steps"][1]["summary"];
    let ms = |pointer: &str| json!(summary.pointer(pointer).unwrap().as_f64().unwrap() * 1e3);
    for (key, want) in [
        ("ok", json!(summary["succeeded"].as_f64().unwrap())),
        ("failed", json!(0.0)),
        // TTFT and e2e from the scheduled send time, the serving table's definition.
        ("ttft_p50_ms", ms("/ttft_from_schedule/p50/value")),
        ("ttft_p99_ms", ms("/ttft_from_schedule/p99/value")),
        ("tpot_p50_ms", ms("/tpot/p50/value")),
        ("tpot_p99_ms", ms("/tpot/p99/value")),
        ("e2e_p99_ms", ms("/e2e_from_schedule/p99/value")),
        (
            "request_throughput",
            summary["request_throughput"]["value"].clone(),
        ),
        (
            "output_throughput",
            summary["output_throughput"]["value"].clone(),
        ),
        ("goodput", summary["goodput"]["value"].clone()),
        ("slo_attainment", summary["slo_attainment"].clone()),
        ("slo", json!("held")),
    ] {
        assert_eq!(row[key], want, "{key}");
    }
    let rates: Vec<&Value> = row["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["rate"])
        .collect();
    assert_eq!(rates, [&json!(20.0), &json!(30.0)]);
}

/// Issue 47: the GPUs' own energy counters (`gpu_energy` records) give the JSON, CSV and
/// Markdown reports two columns, the counted energy and perf per watt from it; the text report
/// keeps the Python tool's layout.
#[test]
fn energy_counters_add_their_columns_beside_the_polled_energy() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs/counted");
    fs_err::create_dir_all(&runs).unwrap();
    let mut lines = vec![
        r#"{"event": "config", "data": {"name": "bench", "tag": ["bench", "D0"], "device": "0", "weight": 1.0, "enabled": true}, "pipe": null}"#.to_owned(),
        r#"{"event": "start", "data": {"command": ["x"], "time": 100.0}, "pipe": null}"#.to_owned(),
    ];
    for i in 0..20 {
        lines.push(format!(
            r#"{{"event": "data", "data": {{"task": "train", "rate": 300.0, "units": "items/s", "time": {}}}, "pipe": "data"}}"#,
            101 + i
        ));
    }
    lines.push(r#"{"event": "data", "data": {"task": "main", "time": 121.0, "gpu_energy": {"0": {"joules": 6000.0, "seconds": 20.0}}}, "pipe": "data"}"#.to_owned());
    lines.push(
        r#"{"event": "end", "data": {"return_code": 0, "time": 121.5}, "pipe": null}"#.to_owned(),
    );
    fs_err::write(runs.join("bench.D0.data"), lines.join("\n") + "\n").unwrap();
    let runs = runs.to_str().unwrap();
    let json = run(milabench(dir.path()).args(["report", "--runs", runs, "--format", "json"]));
    assert_eq!(json.code, 0, "{}", json.stderr);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let row = json["benchmarks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "bench"))
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(row["counter_energy_kj"], json!(6.0));
    // 300 items/s at 300 W.
    assert_eq!(row["counter_perf_per_watt"], json!(1.0));
    let csv = run(milabench(dir.path()).args(["report", "--runs", runs, "--format", "csv"]));
    assert!(
        csv.stdout
            .lines()
            .next()
            .unwrap()
            .ends_with(",counter_energy_kj,counter_perf_per_watt"),
        "{}",
        csv.stdout
    );
    let md = run(milabench(dir.path()).args(["report", "--runs", runs, "--format", "md"]));
    assert!(md.stdout.contains("counter_perf_per_watt"), "{}", md.stdout);
    let text = run(milabench(dir.path()).args(["report", "--runs", runs]));
    assert!(!text.stdout.contains("counter"), "{}", text.stdout);
}
