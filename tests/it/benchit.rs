//! `benchit benchmark` and `benchit cache` against a fake models worker that speaks the protocol
//! without torch (`tests/fixtures/benchit/fake_models_worker.py`, driven by the `# fake:` line
//! of each fixture script): discovery and measurements, cache reuse and rebuild policies,
//! failures (build, script, crash, kill, timeout, protocol), bad input, the cache commands.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Output, fixtures, run, wait_for};

/// A scratch cache and home; commands run in `tests/fixtures/benchit` with the fake worker.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// `benchit ARGS` in the fixture folder, with the fake worker, the scratch cache and no
    /// `BENCHIT_*` variable of the caller.
    fn benchit(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchit"));
        for (key, _) in std::env::vars() {
            if key.starts_with("BENCHIT_") {
                cmd.env_remove(key);
            }
        }
        let worker = format!(
            "python3 {}",
            folder().join("fake_models_worker.py").display()
        );
        cmd.current_dir(folder())
            .env("BENCHIT_WORKER", worker)
            .env("BENCHIT_HOME", self.dir.path().join("home"))
            .env("BENCHIT_CACHE_DIR", self.cache())
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        run(&mut self.benchit(args))
    }

    /// Paths and durations replaced by markers.
    fn redact(&self, text: &str) -> String {
        let text =
            crate::common::redact(text).replace(&self.dir.path().display().to_string(), "[TMP]");
        let mut out = String::new();
        for line in text.lines() {
            out.push_str(&match line.find("done in ") {
                Some(at) => format!("{}done in [T] s", &line[..at]),
                None => line.to_string(),
            });
            out.push('\n');
        }
        out
    }

    fn shown(&self, out: &Output) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            out.code,
            self.redact(&out.stdout),
            self.redact(&out.stderr)
        )
    }

    fn state(&self, build: &str) -> String {
        fs_err::read_to_string(self.cache().join(build).join("state.yaml")).unwrap_or_default()
    }
}

fn folder() -> PathBuf {
    fixtures().join("benchit")
}

#[test]
fn two_models_are_discovered_built_and_measured() {
    let s = Scratch::new();
    let out = s.run(&[
        "two_models.py",
        "--runtime",
        "ort",
        "torch-eager",
        "--iterations",
        "5",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(s.shown(&out));
    let state = s.state("two_models_tester_24adc42f");
    assert!(state.contains("build_status: successful_build"), "{state}");
    assert!(state.contains("torch_version: 2.15.0-fake"), "{state}");
    let stats =
        fs_err::read_to_string(s.cache().join("two_models_tester_24adc42f/stats.yaml")).unwrap();
    assert!(stats.contains("torch-eager:"), "{stats}");
    assert!(stats.contains("- 2004000"), "raw times are kept: {stats}");
    let log = fs_err::read_to_string(s.cache().join("logs/two_models.log")).unwrap();
    assert!(log.contains("runs with argv []"), "{log}");
}

#[test]
fn a_second_call_reuses_the_cache_and_rebuild_always_does_not() {
    let s = Scratch::new();
    let args = ["two_models.py::24adc42f", "--iterations", "3"];
    assert_eq!(s.run(&args).code, 0);
    let again = s.run(&args);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("reused from the cache"),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains("built ("), "{}", again.stderr);
    let log = fs_err::read_to_string(s.cache().join("logs/two_models.log")).unwrap();
    assert!(log.contains("reply for 24adc42f: stages []"), "{log}");
    // Only the target was built.
    assert!(!s.cache().join("two_models_tester_5b2e7d10").exists());
    let always = s.run(&[&args[..], &["--rebuild", "always"]].concat());
    assert_eq!(always.code, 0);
    assert!(
        always
            .stderr
            .contains("built (export 0.01 s, optimize 0.01 s)"),
        "{}",
        always.stderr
    );
    assert!(
        always.stderr.contains("rebuilt: --rebuild always"),
        "{}",
        always.stderr
    );
    // A new stage asked for (fp16) is built on top of the cached ones.
    let fp16 = s.run(&[&args[..], &["--fp16"]].concat());
    assert!(
        fp16.stderr.contains("built (fp16 0.01 s)"),
        "{}",
        fp16.stderr
    );
    // A torch-only call keeps what the build holds; ort after it reuses the build.
    let torch = s.run(&[&args[..], &["--runtime", "torch-eager"]].concat());
    assert!(
        torch.stderr.contains("no ONNX build needed"),
        "{}",
        torch.stderr
    );
    let state = s.state("two_models_tester_24adc42f");
    assert!(
        state.contains("  sequence:\n  - export\n  - optimize\n  - fp16\n"),
        "{state}"
    );
    assert!(state.contains("converted_onnx_exported: true"), "{state}");
    let ort = s.run(&[&args[..], &["--fp16"]].concat());
    assert!(
        ort.stderr.contains("reused from the cache"),
        "{}",
        ort.stderr
    );
}

#[test]
fn changed_weights_rebuild_if_needed_and_not_with_never() {
    let s = Scratch::new();
    let script = s.dir.path().join("weights.py");
    let text = fs_err::read_to_string(folder().join("script_error.py"))
        .unwrap()
        .replace(
            "\"script_error\": {\"kind\": \"ValueError\", \"message\": \"the script gave up\"}, ",
            "",
        );
    fs_err::write(&script, &text).unwrap();
    let script = script.display().to_string();
    assert_eq!(s.run(&[&script, "--iterations", "2"]).code, 0);
    fs_err::write(
        &*script,
        text.replace(
            "\"dtypes\": {\"x\": \"float32\"}",
            "\"dtypes\": {\"x\": \"float32\"}, \"weights\": \"new\"",
        ),
    )
    .unwrap();
    let never = s.run(&[&script, "--iterations", "2", "--rebuild", "never"]);
    assert_eq!(never.code, 0, "{}", never.stderr);
    assert!(never.stderr.contains("warning: build weights_24adc42f is stale (the model or its weights changed) but --rebuild never keeps it"), "{}", never.stderr);
    assert!(
        never.stderr.contains("reused from the cache"),
        "{}",
        never.stderr
    );
    let needed = s.run(&[&script, "--iterations", "2"]);
    assert!(
        needed
            .stderr
            .contains("warning: rebuilding weights_24adc42f: the model or its weights changed"),
        "{}",
        needed.stderr
    );
    assert!(needed.stderr.contains("built (export"), "{}", needed.stderr);
}

#[test]
fn a_failed_export_fails_onnx_runtimes_only() {
    let s = Scratch::new();
    let out = s.run(&[
        "build_fails.py",
        "--runtime",
        "ort",
        "torch-eager",
        "--iterations",
        "2",
    ]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(s.shown(&out));
    assert!(
        s.state("build_fails_1234abcd")
            .contains("build_status: failed_build")
    );
    // With BENCHIT_TRACEBACK=1 the stage's traceback is shown.
    let traced = run(s
        .benchit(&["build_fails.py", "--iterations", "2"])
        .env("BENCHIT_TRACEBACK", "1"));
    assert!(
        traced.stderr.contains("TorchExportError: export"),
        "{}",
        traced.stderr
    );
}

#[test]
fn a_script_error_keeps_what_was_measured() {
    let s = Scratch::new();
    let out = s.run(&["script_error.py", "--iterations", "2"]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(s.shown(&out));
    let traced = run(s
        .benchit(&["script_error.py", "--iterations", "2"])
        .env("BENCHIT_TRACEBACK", "1"));
    assert!(
        traced.stderr.contains("    ValueError: the script gave up"),
        "{}",
        traced.stderr
    );
}

#[test]
fn a_crash_fails_the_build_in_progress_and_the_next_input_runs() {
    let s = Scratch::new();
    let out = s.run(&[
        "crash.py",
        "killed.py",
        "two_models.py::24adc42f",
        "--iterations",
        "2",
    ]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(s.shown(&out));
    // The cache does not claim the interrupted build.
    let state = s.state("crash_24adc42f");
    assert!(state.contains("build_status: failed_build"), "{state}");
    assert!(state.contains("exited with code 3"), "{state}");
    // The next call rebuilds it (and crashes again, the same way).
    let again = s.run(&["crash.py", "--iterations", "2"]);
    assert!(
        again
            .stderr
            .contains("rebuilt: the previous build did not succeed (failed_build)"),
        "{}",
        again.stderr
    );
}

#[test]
fn a_hanging_worker_times_out() {
    let s = Scratch::new();
    let started = std::time::Instant::now();
    let out = s.run(&[
        "hang.py",
        "model.onnx",
        "--timeout",
        "1",
        "--iterations",
        "2",
    ]);
    assert!(started.elapsed().as_secs() < 20);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "hang.py: FAILED\n  FAILED: timed out after 1 s (--timeout); the worker was stopped; see its log "
        ),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("model.onnx  onnx   "), "{}", out.stdout);
}

#[test]
fn protocol_garbage_is_named() {
    let s = Scratch::new();
    let out = s.run(&["garbage.py"]);
    assert_eq!(out.code, 1);
    let err = s.redact(&out.stderr);
    assert!(err.contains("the benchit worker broke the protocol (expected ident at line 1 column 2) with the line `this is not JSON`; see its log [TMP]/cache/logs/garbage.log"), "{err}");
}

#[test]
fn onnx_files_run_on_ort_only() {
    let s = Scratch::new();
    let out = s.run(&["model.onnx", "--iterations", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("built (receive 0.01 s, optimize 0.01 s)"),
        "{}",
        out.stderr
    );
    let bad = s.run(&["model.onnx", "--runtime", "torch-eager"]);
    assert_eq!(bad.code, 2);
    insta::assert_snapshot!(s.shown(&bad));
    let dynamic = s.run(&["dynamic.onnx"]);
    assert_eq!(dynamic.code, 1);
    assert!(
        dynamic
            .stderr
            .contains("FAILED: input `x` has a dynamic dimension; freeze the model's input shapes"),
        "{}",
        dynamic.stderr
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let s = Scratch::new();
    let cases: [&[&str]; 6] = [
        &["two_models.py", "--runtime", "tvm"],
        &["two_models.py", "--device", "tpu"],
        &["notes.txt"],
        &["missing.py"],
        &["two_models.py::zz"],
        &["two_models.py", "--runtime", "trt"],
    ];
    let mut text = String::new();
    for args in cases {
        let out = s.run(args);
        text.push_str(&format!(
            "$ benchit {}\n{}\n",
            s.redact(&args.join(" ")).trim_end(),
            s.shown(&out)
        ));
    }
    insta::assert_snapshot!(text);
    assert!(!s.cache().exists(), "bad input creates no cache");
}

#[test]
fn nvidia_without_a_gpu_fails_each_model_clearly() {
    let s = Scratch::new();
    let out = s.run(&[
        "two_models.py::24adc42f",
        "--device",
        "nvidia",
        "--iterations",
        "2",
    ]);
    if out.stderr.contains("needs a GPU") {
        assert_eq!(out.code, 1);
        assert!(
            out.stdout.contains("FAILED: needs a GPU: --device nvidia"),
            "{}",
            out.stdout
        );
    } else {
        // A machine with an NVIDIA GPU: the (fake) worker measures the model.
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
}

#[test]
fn analyze_only_lists_models_without_building() {
    let s = Scratch::new();
    let out = s.run(&["two_models.py", "--analyze-only"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(s.shown(&out));
    assert!(fs_err::read_dir(s.cache()).unwrap().all(|e| {
        let name = e.unwrap().file_name();
        name == ".benchit_cache"
            || name == "logs"
            || name.to_string_lossy().starts_with(".cache_database")
    }));
}

#[test]
fn json_results_are_typed() {
    let s = Scratch::new();
    let out = s.run(&[
        "two_models.py::24adc42f",
        "--runtime",
        "ort",
        "torch-compiled",
        "--iterations",
        "4",
        "--batch-size",
        "8",
        "--script-args",
        "--batch 8 --name 'a b'",
        "--format",
        "json",
    ]);
    let log = fs_err::read_to_string(s.cache().join("logs/two_models.log")).unwrap();
    assert!(
        log.contains("runs with argv ['--batch', '8', '--name', 'a b']"),
        "{log}"
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_eq!(doc["interrupted"], false);
    let input = &doc["inputs"][0];
    assert_eq!(input["status"], "done");
    assert_eq!(input["labels"]["author"][0], "tester");
    let mlp = &input["models"][0];
    assert_eq!(mlp["class"], "MLP");
    let build = &mlp["invocations"][0]["build"];
    assert_eq!(build["build_name"], "two_models_tester_24adc42f");
    let ort = &build["runtimes"][0];
    assert_eq!(ort["runtime"], "ort");
    assert_eq!(ort["statistics"]["iterations"], 4);
    assert_eq!(ort["statistics"]["mean_ms"], 1.0015);
    assert_eq!(ort["statistics"]["throughput"], 8000.0 / 1.0015);
    let compiled = &build["runtimes"][1];
    assert_eq!(compiled["compile_seconds"], 1.5);
    // The other model's invocations were analysed, not built.
    assert!(input["models"][1]["invocations"][0]["build"].is_null());
}

#[test]
fn resume_skips_scripts_already_attempted() {
    let s = Scratch::new();
    assert_eq!(s.run(&["crash.py", "--iterations", "2"]).code, 1);
    let out = s.run(&[
        "crash.py",
        "two_models.py::24adc42f",
        "--resume",
        "--iterations",
        "2",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("crash.py: skipped: already attempted (--resume)"),
        "{}",
        out.stderr
    );
}

#[test]
fn all_runs_every_script_of_the_search_folder_and_resume_skips_them() {
    let s = Scratch::new();
    let corpus = s.dir.path().join("corpus");
    fs_err::create_dir(&corpus).unwrap();
    for name in ["two_models.py", "script_error.py", "crash.py"] {
        fs_err::copy(folder().join(name), corpus.join(name)).unwrap();
    }
    fs_err::write(corpus.join("__init__.py"), "").unwrap();
    fs_err::write(corpus.join("notes.txt"), "not a script").unwrap();
    let corpus = corpus.to_str().unwrap();
    let out = s.run(&["--all", "--search-dir", corpus, "--iterations", "2"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    // The per-input table comes last, after the one of measurements.
    let stdout = s.redact(&out.stdout);
    insta::assert_snapshot!(stdout.rsplit("\n\n").next().unwrap());
    let stderr = s.redact(&out.stderr);
    for (at, name) in ["crash.py", "script_error.py", "two_models.py"]
        .iter()
        .enumerate()
    {
        let progress = format!("[{}/3] [TMP]/corpus/{name}", at + 1);
        assert!(stderr.contains(&progress), "{progress}: {stderr}");
    }
    let again = s.run(&[
        "--all",
        "--search-dir",
        corpus,
        "--resume",
        "--iterations",
        "2",
    ]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        again.stdout.matches("already attempted (--resume)").count(),
        3
    );
    let relative = s.run(&["--search-dir", corpus, "two_models.py", "--analyze-only"]);
    assert_eq!(relative.code, 0, "{}", relative.stderr);
    let none = s.run(&["--all", "--search-dir", &format!("{corpus}/missing")]);
    assert_eq!(none.code, 2);
    assert!(
        none.stderr
            .contains("check that --search-dir names a folder"),
        "{}",
        none.stderr
    );
    let both = s.run(&["--all", "two_models.py"]);
    assert_eq!(both.code, 2, "{}", both.stderr);
}

/// `benchit attach ARGS` started by the fake worker playing a Python program that calls
/// benchmate's `benchmark_model` with the model of `script`.
fn attach(s: &Scratch, script: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new("python3");
    cmd.current_dir(folder())
        .arg(folder().join("fake_models_worker.py"))
        .args(["attach", script, env!("CARGO_BIN_EXE_benchit")])
        .args(args)
        .arg("--cache-dir")
        .arg(s.cache());
    run(&mut cmd)
}

#[test]
fn attach_builds_and_times_the_model_of_the_program_that_started_it() {
    let s = Scratch::new();
    let args = [
        "--name",
        "mlp",
        "--runtime",
        "ort",
        "torch-eager",
        "--iterations",
        "3",
    ];
    for reused in [false, true] {
        let out = attach(&s, "one_model.py", &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let result: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON line");
        assert_eq!(result["kind"], "model");
        assert_eq!(result["status"], "done");
        let build = &result["models"][0]["invocations"][0]["build"];
        assert_eq!(build["build_name"], "mlp_6d53512b");
        assert_eq!(build["reused"], reused, "{build:#}");
        // The fake's calls take 1 ms + i us (torch-eager 2 ms + i us): medians of 3 calls.
        let runtimes: Vec<(&str, f64)> = build["runtimes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let median = r["statistics"]["median_ms"].as_f64().unwrap();
                (r["runtime"].as_str().unwrap(), median)
            })
            .collect();
        assert_eq!(runtimes, [("ort", 1.001), ("torch-eager", 2.001)]);
    }
    assert!(
        s.state("mlp_6d53512b")
            .contains("build_status: successful_build")
    );
    let failed = attach(&s, "build_fails.py", &["--name", "broken"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    let bad = attach(&s, "one_model.py", &["--name", "../elsewhere"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("cannot name builds"), "{}", bad.stderr);
}

#[test]
fn corrupt_builds_are_named_and_rebuilt_if_needed() {
    let s = Scratch::new();
    let args = ["two_models.py::24adc42f", "--iterations", "2"];
    assert_eq!(s.run(&args).code, 0);
    let build = s.cache().join("two_models_tester_24adc42f");
    fs_err::write(build.join("state.yaml"), "build_status: [half a file").unwrap();
    let list = s.run(&["cache", "list"]);
    assert_eq!(list.code, 0);
    assert!(
        list.stdout
            .contains("two_models_tester_24adc42f  DAMAGED: "),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout.contains("state.yaml is damaged"),
        "{}",
        list.stdout
    );
    let never = s.run(&[&args[..], &["--rebuild", "never"]].concat());
    assert_eq!(never.code, 1);
    assert!(
        never.stderr.contains("cannot be read (state.yaml: "),
        "{}",
        never.stderr
    );
    assert!(never.stderr.contains("--rebuild never forbids rebuilding it; use --rebuild if_needed, or delete it with `benchit cache delete two_models_tester_24adc42f`"), "{}", never.stderr);
    let needed = s.run(&args);
    assert_eq!(needed.code, 0, "{}", needed.stderr);
    assert!(
        needed
            .stderr
            .contains("warning: the state of build two_models_tester_24adc42f cannot be read"),
        "{}",
        needed.stderr
    );
    assert!(
        s.state("two_models_tester_24adc42f")
            .contains("successful_build")
    );
    // A folder that is not a cache.
    let not_cache = s.run(&["cache", "list", "--cache-dir", "/"]);
    assert_eq!(not_cache.code, 2);
    assert!(
        not_cache
            .stderr
            .contains("/ is not a benchit cache (no .benchit_cache marker)"),
        "{}",
        not_cache.stderr
    );
}

#[test]
fn cache_commands() {
    let s = Scratch::new();
    assert_eq!(
        s.run(&[
            "two_models.py",
            "build_fails.py",
            "--runtime",
            "ort",
            "torch-eager",
            "--iterations",
            "2"
        ])
        .code,
        1
    );
    let mut text = String::new();
    for args in [
        &["cache", "list"][..],
        &["cache", "location"],
        &["cache", "report", "-o", "REPORT"],
        &["cache", "clean", "two_models_tester_24adc42f"],
        &["cache", "delete", "two_models_tester_77aa0f31"],
        &["cache", "delete", "nope"],
        &["cache", "list"],
        &["cache", "delete", "--all"],
        &["cache", "list"],
    ] {
        let report_dir = s.dir.path().join("reports").display().to_string();
        let args: Vec<&str> = args
            .iter()
            .map(|a| {
                if *a == "REPORT" {
                    report_dir.as_str()
                } else {
                    a
                }
            })
            .collect();
        let out = s.run(&args);
        text.push_str(&format!(
            "$ benchit {}\n{}\n",
            s.redact(&args.join(" ")).trim_end(),
            s.shown(&out)
        ));
    }
    let text: String = text
        .lines()
        .map(|l| match l.find("benchit-report-") {
            Some(_) => redact_dates(l),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(text);
}

#[test]
fn cache_report_has_one_row_per_build_and_runtime() {
    let s = Scratch::new();
    s.run(&[
        "two_models.py::24adc42f",
        "build_fails.py",
        "--runtime",
        "ort",
        "torch-eager",
        "--iterations",
        "2",
    ]);
    let out_dir = s.dir.path().join("reports");
    let out = s.run(&["cache", "report", "-o", &out_dir.display().to_string()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let csv = only_file(&out_dir, "csv");
    let csv = s.redact(&fs_err::read_to_string(csv).unwrap());
    insta::assert_snapshot!(csv);
    let json: Value =
        serde_json::from_str(&fs_err::read_to_string(only_file(&out_dir, "json")).unwrap())
            .unwrap();
    assert_eq!(json.as_array().unwrap().len(), 4);
    assert_eq!(
        json[0]["error"],
        "build failed: export: export failed: data-dependent control flow; build failed"
    );
    // The same rows on one HTML page, their latencies exactly the JSON's.
    let out = s.run(&[
        "cache",
        "report",
        "-o",
        &out_dir.display().to_string(),
        "--format",
        "html",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = fs_err::read_to_string(only_file(&out_dir, "html")).unwrap();
    assert_eq!(html.matches("<tr data-row=").count(), 4);
    let numbers = xtask::browser::table_numbers(&html, "builds");
    for row in json.as_array().unwrap() {
        let key = format!(
            "{} {}",
            row["build_name"].as_str().unwrap(),
            row["runtime"].as_str().unwrap()
        );
        let mean = numbers
            .iter()
            .find(|(r, c, _)| *r == key && c == "mean_ms")
            .map(|(_, _, v)| *v);
        assert_eq!(mean, Some(row["mean_ms"].as_f64()), "{key}");
    }
}

fn only_file(dir: &Path, ext: &str) -> PathBuf {
    let files: Vec<PathBuf> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// `benchit-report-2026-11-22` -> `benchit-report-[DATE]`.
fn redact_dates(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("benchit-report-") {
        let end = at + "benchit-report-".len();
        out.push_str(&rest[..end]);
        out.push_str("[DATE]");
        rest = &rest[(end + 10).min(rest.len())..];
    }
    out.push_str(rest);
    out
}

#[test]
fn ctrl_c_stops_cleanly_and_no_build_claims_success() {
    let s = Scratch::new();
    let child = s
        .benchit(&["hang_in_build.py", "two_models.py", "--iterations", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("benchit starts");
    let started = std::time::Instant::now();
    while !s
        .state("hang_in_build_24adc42f")
        .contains("completed_build_stages:\n  - export")
    {
        assert!(started.elapsed().as_secs() < 30, "the build never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        s.state("hang_in_build_24adc42f")
            .contains("build_status: build_running")
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hang_in_build.py: interrupted"), "{stderr}");
    assert!(
        stderr.contains(", 1 input not run; interrupted"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("two_models.py"),
        "the next input does not start: {stderr}"
    );
    let state = s.state("hang_in_build_24adc42f");
    assert!(state.contains("build_status: failed_build"), "{state}");
    assert!(state.contains("failure: interrupted"), "{state}");
    // An interrupted script was not really attempted: --resume runs it again.
    let resumed = s.run(&["hang_in_build.py", "--resume", "--analyze-only"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(!resumed.stderr.contains("skipped"), "{}", resumed.stderr);
}

#[test]
fn an_environment_that_cannot_be_built_is_explained() {
    let s = Scratch::new();
    let out = run(s
        .benchit(&["two_models.py"])
        .env_remove("BENCHIT_WORKER")
        .env("BENCHIT_PYTHON", "/nonexistent/python3"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let err = s.redact(&out.stderr);
    assert!(
        err.starts_with("error: the benchit Python environment is not ready; the install log is [TMP]/home/logs/install/benchit.log\n  caused by: could not set up the benchit Python environment\n  caused by: no Python interpreter: "),
        "{err}"
    );
    assert!(
        err.contains("`/nonexistent/python3` does not exist"),
        "{err}"
    );
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
}

#[test]
fn help_explains_the_cache_and_rebuild_policies() {
    let s = Scratch::new();
    let out = s.run(&["benchmark", "--help"]);
    assert_eq!(out.code, 0);
    for phrase in [
        "--rebuild if_needed (default) reuses a build",
        "BENCHIT_TRACEBACK=1",
        "benchit mlp.py::24adc42f",
        "[default: ~/.cache/benchit]",
        "- torch-compiled: The live torch model under `torch.compile`",
        "--framework <FRAMEWORK>",
        "(PyTorch models only: Keras models are",
    ] {
        assert!(
            out.stdout.contains(phrase),
            "{phrase} missing from:\n{}",
            out.stdout
        );
    }
}

#[test]
fn keras_models_are_asked_for_scripts_that_import_keras_or_with_the_flag() {
    let s = Scratch::new();
    let log = |script: &str| {
        fs_err::read_to_string(s.cache().join(format!("logs/{script}.log"))).unwrap()
    };
    let out = s.run(&["keras_model.py", "two_models.py", "--analyze-only"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("mlp: Sequential at keras_model.py:6, 26,122 parameters (102.0 KiB), Keras"),
        "{}",
        out.stderr
    );
    assert!(log("keras_model").contains("runs with argv [] (keras)"));
    assert!(log("two_models").contains("runs with argv []\n"));

    let out = s.run(&["keras_model.py", "--analyze-only", "--framework", "pytorch"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("no model was called"), "{}", out.stderr);
    assert!(log("keras_model").contains("runs with argv []\n"));

    let out = s.run(&["two_models.py", "--analyze-only", "--framework", "keras"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(log("two_models").contains("runs with argv [] (keras)"));

    let out = s.run(&["two_models.py", "--framework", "tensorflow"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("[possible values: auto, pytorch, keras]"),
        "{}",
        out.stderr
    );
}

#[test]
fn labels_select_scripts() {
    let s = Scratch::new();
    let out = s.run(&[
        "two_models.py::24adc42f",
        "build_fails.py",
        "--labels",
        "author::someone,tester",
        "--iterations",
        "2",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("build_fails.py: skipped: its labels do not match --labels"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("two_models.py::24adc42f  MLP"),
        "{}",
        out.stdout
    );
    let bad = s.run(&["two_models.py", "--labels", "author"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("--labels `author` is not `key::value[,value]`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn bad_options_are_refused_before_the_environment_is_prepared() {
    let s = Scratch::new();
    // No worker named: preparing the environment would fail differently (no Python here).
    let out = run(s
        .benchit(&["two_models.py", "--runtime", "trt"])
        .env_remove("BENCHIT_WORKER")
        .env("BENCHIT_PYTHON", "/nonexistent/python3"));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("runtime trt runs on an NVIDIA GPU; add --device nvidia"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_worker_that_cannot_start_stops_the_run() {
    let s = Scratch::new();
    let out = run(s
        .benchit(&["two_models.py", "model.onnx", "--format", "json"])
        .env("BENCHIT_WORKER", "/nonexistent/python -m benchmate.benchit"));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "FAILED: could not start the benchit worker `/nonexistent/python -m benchmate.benchit models`"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .ends_with("1 input, 0 models discovered, 1 input with failures, 1 input not run\n"),
        "{}",
        out.stderr
    );
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["inputs"][0]["failure"]["kind"], "start");
    assert_eq!(doc["not_run"][0], "model.onnx");
}

#[test]
fn a_model_whose_call_raises_or_whose_build_fails_in_the_worker_is_failed() {
    let s = Scratch::new();
    let out = s.run(&["forward_raises.py", "build_error.py", "--iterations", "2"]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(s.shown(&out));
    for build in ["forward_raises_24adc42f", "build_error_24adc42f"] {
        let state = s.state(build);
        assert!(state.contains("build_status: failed_build"), "{state}");
        assert!(state.contains("current_build_stage: null"), "{state}");
    }
}

#[test]
fn ctrl_c_stops_the_first_build_of_the_environment_even_when_sigint_was_ignored() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let s = Scratch::new();
    // A `uv` that says its version, then hangs in the first step of the build (`uv venv`).
    let bin = s.dir.path().join("bin");
    fs_err::create_dir_all(&bin).expect("mkdir");
    let marker = s.dir.path().join("building");
    fs_err::write(
        bin.join("uv"),
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo 'uv 0.0.1'; exit 0;; esac\ntouch '{}'\nexec sleep 300\n",
            marker.display()
        ),
    )
    .expect("write");
    fs_err::set_permissions(bin.join("uv"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SIGINT ignored, as a shell script's background job inherits it.
    let mut child = Command::new("sh")
        .args(["-c", "trap '' INT; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_benchit"))
        .args(["two_models.py", "--format", "json"])
        .current_dir(folder())
        .env_remove("BENCHIT_WORKER")
        .env("BENCHIT_HOME", s.dir.path().join("home"))
        .env("BENCHIT_CACHE_DIR", s.cache())
        .env("PATH", path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("starts");
    let group = child.id().to_string();
    let kill_group = |signal: &str| {
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{group}")])
            .status();
    };
    wait_for("the build starts", || marker.exists());
    // Ctrl-C at a terminal: SIGINT to the whole foreground process group.
    kill_group("-INT");
    let mut ended = None;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("benchit ends after Ctrl-C", || {
            ended = child.try_wait().expect("waits");
            ended.is_some()
        })
    }));
    if waited.is_err() {
        kill_group("-KILL");
        let _ = child.wait();
        panic!("benchit ignored Ctrl-C during the first build");
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr)
        .expect("stderr");
    assert_eq!(ended.and_then(|s| s.code()), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}

/// The processes whose parent is `parent`, with their command lines.
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// Whether `pid` still runs (a zombie nobody reaps, as without an init process, does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn a_killed_benchit_takes_its_worker_with_it() {
    let s = Scratch::new();
    let mut child = s
        .benchit(&["hang_in_build.py", "--iterations", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("benchit starts");
    wait_for("the build starts", || {
        s.state("hang_in_build_24adc42f")
            .contains("completed_build_stages:\n  - export")
    });
    let workers: Vec<u32> = children_of(child.id())
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains("fake_models_worker.py"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(workers.len(), 1, "one worker runs");
    // SIGKILL: benchit stops nothing itself; its watchdog sees it gone.
    child.kill().expect("kill");
    child.wait().expect("wait");
    let gone = std::panic::catch_unwind(|| {
        wait_for("the worker is killed", || !runs(workers[0]));
    });
    if gone.is_err() {
        let _ = Command::new("kill")
            .args(["-KILL", &workers[0].to_string()])
            .status();
        panic!("the worker outlived a killed benchit");
    }
}

/// Issue 38, item 18: `--timeout 0` timed every input out at once; it is refused (exit 2).
#[test]
fn a_zero_timeout_is_refused() {
    let s = Scratch::new();
    let out = s.run(&["model.onnx", "--timeout", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("invalid value '0' for '--timeout <SECONDS>'"),
        "{}",
        out.stderr
    );
}
