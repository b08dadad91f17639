//! `benchit ops`: listing, selection, bad input, and runs against a fake worker that speaks the
//! protocol without torch (`tests/fixtures/benchit/fake_ops_worker.py`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Output, fixtures, run};

fn config(name: &str) -> PathBuf {
    fixtures().join("benchit").join(name)
}

/// `benchit ops` run from `cwd` with the fake worker and no `BENCHIT_*` variable of the caller.
fn ops(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchit"));
    for (key, _) in std::env::vars() {
        if key.starts_with("BENCHIT_") {
            cmd.env_remove(key);
        }
    }
    let worker = format!("python3 {}", config("fake_ops_worker.py").display());
    cmd.current_dir(cwd)
        .env("BENCHIT_WORKER", worker)
        .env("BENCHIT_HOME", cwd.join("home"))
        .arg("ops")
        .args(args);
    cmd
}

/// Paths, and the pid and time in output file names, replaced by markers.
fn redact(text: &str, cwd: &Path) -> String {
    let text = crate::common::redact(text).replace(&cwd.display().to_string(), "[CWD]");
    let marker = "benchmark_result_";
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let stamp = rest
            .find(|c: char| !c.is_ascii_digit() && c != '_')
            .unwrap_or(rest.len());
        if stamp > 0 {
            out.push_str("[PID]_[TIME]");
            // Keep the separator before a suffix such as `_worker.log`.
            let keep_underscore = rest[..stamp].ends_with('_');
            rest = &rest[stamp..];
            if keep_underscore {
                out.push('_');
            }
        }
    }
    out.push_str(rest);
    out
}

/// The lines of the only output file in `cwd`.
fn output_lines(cwd: &Path) -> Vec<Value> {
    let files: Vec<PathBuf> = fs_err::read_dir(cwd)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("benchmark_result_")
                && name.ends_with(".json")
                && !name.ends_with("_trace.json")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    fs_err::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every output line is JSON"))
        .collect()
}

fn shown(out: &Output, cwd: &Path) -> String {
    format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        out.code,
        redact(&out.stdout, cwd),
        redact(&out.stderr, cwd)
    )
}

#[test]
fn list_prints_param_ids_without_python() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let mut cmd = ops(dir.path(), &["-c", range.to_str().unwrap(), "--list"]);
    cmd.env("BENCHIT_WORKER", "/nonexistent/python");
    let out = run(&mut cmd);
    insta::assert_snapshot!(shown(&out, dir.path()));
}

#[test]
fn list_honours_resume_inclusive_and_stop_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let out = run(&mut ops(
        dir.path(),
        &[
            "-c",
            range.to_str().unwrap(),
            "--list",
            "-r",
            "torch.mm|0|0|0_1",
            "-s",
            "torch.mm|0|0|1_0",
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "torch.mm|0|0|0_1\ntorch.mm|0|0|0_2\ntorch.mm|0|0|0_3\n"
    );
}

#[test]
fn bad_input_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        fs_err::write(&path, text).unwrap();
        path.display().to_string()
    };
    let not_json = write("not_json.json", "{\"torch.add\": {\"config\": [}\n");
    let schema = write(
        "schema.json",
        r#"{"torch.add": {"input_iterator": "RangeConfigIterator", "config": [{"input": [{"args": [{"type": "int", "value": [4, 1], "__range__": ["value"]}]}]}]}}"#,
    );
    let range = config("range.json");
    let cases: Vec<Vec<&str>> = vec![
        vec!["-c", "missing.json"],
        vec!["-c", &not_json],
        vec!["-c", &schema],
        vec!["-c", range.to_str().unwrap(), "-r", "0|0|0_1"],
        vec!["-c", range.to_str().unwrap(), "--exec-mode", "bursty"],
    ];
    let mut text = String::new();
    for args in cases {
        let out = run(&mut ops(dir.path(), &args));
        let command = redact(&args.join(" "), dir.path());
        text.push_str(&format!(
            "$ benchit ops {command}\n{}\n",
            shown(&out, dir.path())
        ));
    }
    insta::assert_snapshot!(text);
}

#[test]
fn every_expanded_id_gets_one_record_with_the_iterations_asked() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let out = run(&mut ops(
        dir.path(),
        &["-c", range.to_str().unwrap(), "-w", "2", "-i", "3", "-b"],
    ));
    // Two ids have bad specs: the run goes on and exits with 1.
    assert_eq!(out.code, 1, "{}", out.stderr);
    insta::assert_snapshot!(redact(&out.stdout, dir.path()));
    let lines = output_lines(dir.path());
    assert_eq!(lines.len(), 1 + 6 + 1);
    let setup = &lines[0];
    assert_eq!(setup["run_options"]["warmup"], 2);
    assert_eq!(setup["run_options"]["iteration"], 3);
    assert_eq!(setup["run_options"]["pass_type"], "backward");
    assert_eq!(setup["sys_info"]["python_version"], "fake");
    assert!(setup["sys_info"]["hostname"].is_string());
    let ids: Vec<&str> = lines[1..7]
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "0|0|0_0", "0|0|0_1", "0|0|0_2", "0|0|0_3", "0|0|1_0", "0|0|1_1"
        ]
    );
    for line in &lines[1..5] {
        assert_eq!(line["op_name"], "torch.mm");
        for pass in ["forward", "backward"] {
            assert_eq!(
                line["metric"][pass]["warmup.time"]
                    .as_array()
                    .unwrap()
                    .len(),
                2
            );
            assert_eq!(
                line["metric"][pass]["measure.time"]
                    .as_array()
                    .unwrap()
                    .len(),
                3
            );
        }
    }
    // The expanded spec, copies applied, macros gone.
    assert_eq!(
        lines[2]["config"]["input"]["args"][1],
        serde_json::json!({"type": "tensor", "dtype": "float", "shape": [8, 5]})
    );
    assert!(
        lines[5]["error"]
            .as_str()
            .unwrap()
            .contains("shape: negative size -2")
    );
    let last = lines.last().unwrap();
    assert!(last["finish_time"].is_string());
    assert_eq!(last["failed"], 2);
}

#[test]
fn failures_are_isolated_and_a_crashed_worker_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let faults = config("faults.json");
    let out = run(&mut ops(
        dir.path(),
        &["-c", faults.to_str().unwrap(), "-i", "2"],
    ));
    assert_eq!(out.code, 1, "{}", out.stderr);
    insta::assert_snapshot!(shown(&out, dir.path()));
    let lines = output_lines(dir.path());
    let summary: Vec<String> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| {
            let outcome = match l.get("metric") {
                Some(m) => format!("measured {}", m["forward"]["measure.time"]),
                None => "failed".to_string(),
            };
            format!(
                "{}|{} {outcome}",
                l["op_name"].as_str().unwrap(),
                l["id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "fake.raise|0|0|0 failed",
            "fake.crash|0|0|0 failed",
            "torch.add|0|0|0 failed",
            "torch.add|0|0|1 measured [1.0,2.0]",
        ]
    );
    assert_eq!(lines.last().unwrap()["failed"], 3);
}

/// Starts `benchit ops ARGS` in `dir`, waits until `ready` holds for a file of `dir`, sends
/// SIGINT and returns the exit code.
fn interrupt_when(dir: &Path, args: &[&str], ready: impl Fn(&Path, &str) -> bool) -> Option<i32> {
    let mut child = ops(dir, args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = fs_err::read_dir(dir).unwrap().any(|e| {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            ready(&path, &text)
        });
        if seen {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "benchit never got ready to be interrupted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap().code()
}

#[test]
fn ctrl_c_still_closes_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let hang = config("hang.json");
    // Once the first run is recorded, the worker hangs on the second.
    let code = interrupt_when(dir.path(), &["-c", hang.to_str().unwrap()], |path, text| {
        path.extension().is_some_and(|x| x == "json") && text.lines().count() >= 2
    });
    assert_eq!(code, Some(130));
    let lines = output_lines(dir.path());
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[1]["id"], "0|0|0");
    assert_eq!(lines[2]["interrupted"], true);
    assert!(lines[2]["finish_time"].is_string());
}

#[test]
fn ctrl_c_while_the_worker_starts_is_an_interruption_too() {
    let dir = tempfile::tempdir().unwrap();
    let hang = config("hang.json");
    let args = ["-c", hang.to_str().unwrap(), "-d", "fake:slow-start"];
    let code = interrupt_when(dir.path(), &args, |path, text| {
        path.to_string_lossy().ends_with("_worker.log") && text.contains("fake worker: setup")
    });
    assert_eq!(code, Some(130));
    let lines = output_lines(dir.path());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["interrupted"], true);
    assert_eq!(lines[1]["error"], Value::Null);
}

#[test]
fn a_worker_that_cannot_start_ends_the_run_with_a_closing_line() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let mut cmd = ops(dir.path(), &["-c", range.to_str().unwrap()]);
    cmd.env(
        "BENCHIT_WORKER",
        "python3 -c 'import sys; print(\"No module named torch\", file=sys.stderr); sys.exit(1)'",
    );
    let out = run(&mut cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines = output_lines(dir.path());
    assert_eq!(lines.len(), 2);
    let error = lines[1]["error"].as_str().unwrap();
    assert!(
        error.contains(
            "exited with code 1 before it was ready (last log line: No module named torch)"
        ),
        "{error}"
    );
    assert!(out.stderr.contains(error), "{}", out.stderr);
}

#[test]
fn a_dry_run_records_every_id_without_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let mut cmd = ops(
        dir.path(),
        &[
            "-c",
            range.to_str().unwrap(),
            "-w",
            "0",
            "-i",
            "0",
            "--format",
            "json",
        ],
    );
    cmd.env("BENCHIT_WORKER", "/nonexistent/python");
    let out = run(&mut cmd);
    assert_eq!(out.code, 1, "two ids are invalid: {}", out.stderr);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let statuses: Vec<&str> = summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "dry-run", "dry-run", "dry-run", "dry-run", "failed", "failed"
        ]
    );
    let lines = output_lines(dir.path());
    assert_eq!(lines[1]["metric"], serde_json::json!({}));
}

#[test]
fn profiling_names_the_trace_before_the_closing_line() {
    let dir = tempfile::tempdir().unwrap();
    let faults = config("hang.json");
    let out = run(&mut ops(
        dir.path(),
        &[
            "-c",
            faults.to_str().unwrap(),
            "-p",
            "-s",
            "fake.hang|0|0|0",
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = output_lines(dir.path());
    let trace = lines[2]["trace_file"].as_str().unwrap();
    assert!(
        trace.ends_with("_trace.json") && Path::new(trace).is_file(),
        "{trace}"
    );
    assert!(lines[3]["finish_time"].is_string());
}

#[test]
fn the_example_configs_list_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/opbench/configs");
    let mut names: Vec<PathBuf> = fs_err::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut text = String::new();
    for path in names {
        let out = run(&mut ops(
            dir.path(),
            &["-c", path.to_str().unwrap(), "--list"],
        ));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.stdout.contains("will fail"), "{}", out.stdout);
        let name = path.file_name().unwrap().to_string_lossy();
        text.push_str(&format!("== {name}\n{}", out.stdout));
    }
    insta::assert_snapshot!(text);
}

/// `--list` streams the ids (issue 22, item 12): 400,000 ids list under a 512 MiB address-space
/// limit, where holding every run in memory took over a gigabyte; a run of more than
/// `MAX_RUNS_AT_ONCE` ids is refused.
#[test]
fn list_streams_its_ids_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let count = 400_000;
    fs_err::write(
        dir.path().join("big.json"),
        format!(
            r#"{{"torch.add": {{"input_data_generator": "PyTorch:DefaultDataGenerator",
                "input_iterator": "RangeConfigIterator",
                "config": [{{"input": [{{"args": [
                    {{"type": "tensor", "dtype": "float", "shape": [[1, {count}, 1], 8], "__range__": ["shape"]}},
                    {{"type": "tensor", "dtype": "float", "shape": [1, 8]}}]}}]}}]}}}}"#
        ),
    )
    .unwrap();
    let out = run(Command::new("sh")
        .current_dir(dir.path())
        .arg("-c")
        .arg(r#"ulimit -v 524288 && exec "$0" ops -c big.json --list > ids.txt"#)
        .arg(env!("CARGO_BIN_EXE_benchit")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ids = fs_err::read_to_string(dir.path().join("ids.txt")).unwrap();
    assert_eq!(ids.lines().count(), count);
    assert_eq!(ids.lines().last(), Some("torch.add|0|0|0_399999"));
    // Running them at once would hold them all: refused, with the way to run them in parts.
    let whole = run(&mut ops(dir.path(), &["-c", "big.json", "-i", "1"]));
    assert_eq!(whole.code, 2, "{}", whole.stderr);
    assert!(
        whole
            .stderr
            .contains("run it in parts with --resume-id and --stop-id"),
        "{}",
        whole.stderr
    );
}

/// `--list | head -1` (issue 53, U12): the closed pipe ends the listing quietly with exit code 0.
#[test]
fn a_list_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("big.json"),
        r#"{"torch.add": {"input_data_generator": "PyTorch:DefaultDataGenerator",
            "input_iterator": "RangeConfigIterator",
            "config": [{"input": [{"args": [
                {"type": "tensor", "dtype": "float", "shape": [[1, 50000, 1], 8], "__range__": ["shape"]},
                {"type": "tensor", "dtype": "float", "shape": [1, 8]}]}]}]}}"#,
    )
    .unwrap();
    for format in ["text", "json"] {
        let (first, out) = crate::common::first_line_then_close(&mut ops(
            dir.path(),
            &["-c", "big.json", "--list", "--format", format],
        ));
        assert!(!first.is_empty(), "{format}");
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        assert!(out.stderr.is_empty(), "{format}: {}", out.stderr);
    }
}

/// The streamed JSON list is one JSON array holding every id of the text list, in order.
#[test]
fn json_list_is_one_array_of_every_id() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let text = run(&mut ops(
        dir.path(),
        &["-c", range.to_str().unwrap(), "--list"],
    ));
    let json = run(&mut ops(
        dir.path(),
        &["-c", range.to_str().unwrap(), "--list", "--format", "json"],
    ));
    assert_eq!(json.code, 0, "{}", json.stderr);
    let list: Vec<Value> = serde_json::from_str(&json.stdout).expect("one JSON array");
    let ids: Vec<String> = list
        .iter()
        .map(|item| {
            format!(
                "{}|{}",
                item["op_name"].as_str().unwrap(),
                item["id"].as_str().unwrap()
            )
        })
        .collect();
    let text_ids: Vec<&str> = text
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(ids, text_ids);
    assert!(list[0]["config"]["input"].is_object(), "{}", json.stdout);
    let empty = run(&mut ops(
        dir.path(),
        &[
            "-c",
            range.to_str().unwrap(),
            "--list",
            "--format",
            "json",
            "-r",
            "torch.mm|0|0|0_1",
            "-s",
            "torch.mm|0|0|0_1",
        ],
    ));
    assert_eq!(empty.stdout, "[]\n");
}

/// Issue 38, item 24: `--append` could not append: the output file's name held the pid and
/// the start time, new for every run. With `--append` the records go to `PREFIX.json`, and a
/// second run adds to it.
#[test]
fn append_adds_to_one_file_named_by_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let range = config("range.json");
    let args = [
        "-c",
        range.to_str().unwrap(),
        "-w",
        "0",
        "-i",
        "0",
        "--append",
        "-o",
        "results/all",
    ];
    // (range.json holds one id that fails: exit 1, its record written all the same.)
    let first = run(&mut ops(dir.path(), &args));
    assert_eq!(first.code, 1, "{}", first.stderr);
    let file = dir.path().join("results/all.json");
    let once = fs_err::read_to_string(&file).unwrap().lines().count();
    assert!(once > 0);
    let second = run(&mut ops(dir.path(), &args));
    assert_eq!(second.code, 1, "{}", second.stderr);
    assert_eq!(
        fs_err::read_to_string(&file).unwrap().lines().count(),
        2 * once
    );
}

/// An `ncu` stand-in: writes its arguments and `CUDA_VISIBLE_DEVICES` beside the log file it
/// was asked for, as Nsight Compute writes its CSV there.
fn fake_ncu(dir: &Path) -> PathBuf {
    let path = dir.join("ncu");
    fs_err::write(
        &path,
        "#!/bin/sh\nwhile [ \"$1\" != --log-file ]; do shift; done\n\
         { echo \"CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\"; echo \"$@\"; } > \"$2\"\n",
    )
    .unwrap();
    let mut permissions = fs_err::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    fs_err::set_permissions(&path, permissions).unwrap();
    path
}

/// Issue 47: `--ncu` profiles the measured runs in batches of one operator, each batch a
/// config of exactly its runs started under Nsight Compute on the GPU of `--device`, with a
/// record in PARAM's shape after the batch's runs.
#[test]
fn ncu_profiles_the_measured_runs_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = fake_ncu(dir.path());
    let range = config("range.json");
    let out = run(&mut ops(
        dir.path(),
        &[
            "-c",
            range.to_str().unwrap(),
            "--device",
            "cuda:3",
            "--ncu",
            "--ncu-bin",
            ncu.to_str().unwrap(),
            "--run-batch-size",
            "2",
            "--cuda-l2-cache",
        ],
    ));
    // The two bad ids fail as without Nsight.
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines = output_lines(dir.path());
    let batches: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("ncu_file").is_some())
        .collect();
    assert_eq!(batches.len(), 2, "{lines:#?}");
    assert_eq!(batches[0]["start_run_id"], "torch.mm|0|0|0_0");
    assert_eq!(batches[0]["end_run_id"], "torch.mm|0|0|0_1");
    assert_eq!(batches[1]["start_run_id"], "torch.mm|0|0|0_2");
    assert!(
        batches.iter().all(|b| b.get("error").is_none()),
        "{batches:#?}"
    );
    // Each batch's record follows its last run.
    let at = |id: &str| lines.iter().position(|l| l["id"] == id).unwrap();
    let first_batch = lines
        .iter()
        .position(|l| l.get("ncu_file").is_some())
        .unwrap();
    assert_eq!(first_batch, at("0|0|0_1") + 1);
    assert_eq!(lines[0]["run_options"]["cuda_l2_cache"], false);
    let log =
        fs_err::read_to_string(dir.path().join(batches[0]["ncu_file"].as_str().unwrap())).unwrap();
    assert!(log.starts_with("CUDA_VISIBLE_DEVICES=3\n"), "{log}");
    for expected in [
        " ops --config ",
        "-w 5 -i 1 --device cuda",
        "--nvtx",
        "--cuda-l2-cache off",
    ] {
        assert!(log.contains(expected), "{expected} not in {log}");
    }
    let batch: Value = serde_json::from_str(
        &fs_err::read_to_string(dir.path().join(batches[1]["config"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(batch["torch.mm"]["config"].as_array().unwrap().len(), 2);
}

/// Issue 47: Nsight options are refused off CUDA and without the program, saying what to do.
#[test]
fn nsight_needs_a_gpu_and_its_program() {
    let dir = tempfile::tempdir().unwrap();
    let add = config("range.json");
    let cpu = run(&mut ops(
        dir.path(),
        &["-c", add.to_str().unwrap(), "--nsys"],
    ));
    assert_eq!(cpu.code, 2, "{}", cpu.stderr);
    assert!(
        cpu.stderr
            .contains("--nsys profiles CUDA kernels, and the device is `cpu`"),
        "{}",
        cpu.stderr
    );
    assert!(
        cpu.stderr.contains("fix: run on a GPU with --device cuda"),
        "{}",
        cpu.stderr
    );
    let missing = run(&mut ops(
        dir.path(),
        &[
            "-c",
            add.to_str().unwrap(),
            "--device",
            "cuda",
            "--ncu",
            "--ncu-bin",
            "/nonexistent/ncu",
        ],
    ));
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("--ncu-bin PATH"),
        "{}",
        missing.stderr
    );
    let both = run(&mut ops(
        dir.path(),
        &["-c", add.to_str().unwrap(), "--ncu", "--nsys"],
    ));
    assert_eq!(both.code, 2, "{}", both.stderr);
}
