//! The benchit part of `cargo xtask e2e`, with real torch, ONNX and ONNX Runtime: in a scratch
//! folder, `benchit` builds its managed Python environment (uv, the user's uv cache), benchmarks
//! an example script on `ort` and `torch-eager` twice (the second call must reuse the build
//! cache) and on `torch-compiled` (timed: `torch.compile` on the CPU), discovers every example of a folder with `--all`, runs benchmate's `benchmark_model`
//! example twice (the Python API; the second call from the cache), benchmarks a script that
//! imports torchvision with `--with torchvision` (an environment of its own), benchmarks the
//! transformers and timm scripts with `--with transformers --with timm` and runs the worker's zoo
//! pytest suite in that environment, runs PARAM's simple-add
//! config through `benchit ops`, and runs the worker's pytest suites (the ones that need torch)
//! in that environment. Then the same for Keras: a Keras example on `ort` (which builds the
//! Keras environment, TensorFlow included) and the Keras pytest suite in that environment.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, ensure};
use serde_json::Value;

use crate::e2e::{json_output, user_uv_cache};

/// The example script benchmarked end to end: two models built in `main()` under a main guard.
const SCRIPT: &str = "benchmarks/benchit/main_guard.py";
/// The model hashes of its two models (sha256 of the module's `repr`, MLAgility's hash).
const MODEL_HASHES: [&str; 2] = ["9e14f3ca", "d99be752"];
/// The folder `--all` runs (analysis only).
const CORPUS: &str = "benchmarks/benchit";
/// The Python API example run end to end.
const API_EXAMPLE: &str = "benchmarks/_benchmate/examples/benchmark_model.py";
/// The operator config run end to end.
const OPS_CONFIG: &str = "benchmarks/opbench/configs/simple_add.json";
/// The runtimes asked for.
const RUNTIMES: [&str; 2] = ["ort", "torch-eager"];
/// A script importing a package benchit's environment lacks, run with `--with` it.
const WITH_SCRIPT: &str = "benchmarks/benchit/extra/resnet18.py";
/// Scripts of real model code (transformers and timm models built from their configurations),
/// with the number of models each calls, run with `--with` the packages they import.
const ZOO_SCRIPTS: [(&str, usize); 2] = [
    ("benchmarks/benchit/extra/transformers_models.py", 3),
    ("benchmarks/benchit/extra/timm_models.py", 2),
];
/// The packages the model zoo scripts import.
const ZOO_PACKAGES: [&str; 2] = ["transformers", "timm"];
/// The Keras example benchmarked end to end: a `Sequential` and a subclassed model.
const KERAS_SCRIPT: &str = "benchmarks/benchit/keras_mlp.py";
/// The model hashes of its two models (sha256 of their `summary()` text, MLAgility's hash).
const KERAS_MODEL_HASHES: [&str; 2] = ["8e9cc1f2", "6e8bfa90"];

/// Builds `benchit` (dev profile) and runs the flow in `scratch`; returns each step's wall time.
pub fn flow(root: &Path, scratch: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--locked", "--bin", "benchit"])
        .current_dir(root)
        .status()
        .context("could not start cargo build")?;
    ensure!(status.success(), "building benchit failed ({status})");
    let bin = root.join("target/debug/benchit");
    let home = scratch.join("home");
    let cache = scratch.join("cache");
    let benchit = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.env("BENCHIT_HOME", &home)
            .env("BENCHIT_CACHE_DIR", &cache)
            .env("UV_CACHE_DIR", user_uv_cache())
            .env_remove("BENCHIT_WORKER")
            .args(args)
            .current_dir(root);
        cmd
    };
    let mut timings = Vec::new();

    let model_args = [
        &[SCRIPT, "--runtime"][..],
        &RUNTIMES,
        &["--warmup", "5", "--iterations", "30", "--format", "json"],
    ]
    .concat();
    for (step, reused) in [("benchit (builds)", false), ("benchit (cached)", true)] {
        let started = Instant::now();
        let report = json_output(&mut benchit(&model_args), step)?;
        timings.push((step, started.elapsed().as_secs_f64()));
        check_models(&report, Some(reused), &RUNTIMES)
            .with_context(|| format!("{step}: {report:#}"))?;
    }

    // torch.compile on the CPU: the first call compiles (a C++ compiler at work), timed apart.
    let started = Instant::now();
    let step = "benchit torch-compiled";
    let report = json_output(
        &mut benchit(&[
            SCRIPT,
            "--runtime",
            "torch-compiled",
            "--warmup",
            "3",
            "--iterations",
            "10",
            "--format",
            "json",
        ]),
        step,
    )?;
    timings.push((step, started.elapsed().as_secs_f64()));
    check_models(&report, None, &["torch-compiled"])
        .with_context(|| format!("{step}: {report:#}"))?;

    let started = Instant::now();
    let corpus = json_output(
        &mut benchit(&[
            "--all",
            "--search-dir",
            CORPUS,
            "--analyze-only",
            "--format",
            "json",
        ]),
        "benchit --all",
    )?;
    timings.push(("benchit --all (analysis)", started.elapsed().as_secs_f64()));
    check_corpus(&corpus).with_context(|| format!("benchit --all: {corpus:#}"))?;

    let started = Instant::now();
    let report = json_output(
        &mut benchit(&[
            WITH_SCRIPT,
            "--with",
            "torchvision",
            "--runtime",
            "ort",
            "--warmup",
            "2",
            "--iterations",
            "10",
            "--format",
            "json",
        ]),
        "benchit --with torchvision",
    )?;
    timings.push((
        "benchit --with torchvision",
        started.elapsed().as_secs_f64(),
    ));
    check_with(&report).with_context(|| format!("benchit --with torchvision: {report:#}"))?;

    timings.extend(zoo_flow(root, &home, &bin, &benchit)?);

    let python = benchit::env::managed_python(
        camino::Utf8Path::from_path(&home).context("the scratch folder is not UTF-8")?,
    );
    for (step, reused) in [
        ("benchmark_model (builds)", false),
        ("benchmark_model (cached)", true),
    ] {
        let started = Instant::now();
        let output = Command::new(&python)
            .arg(API_EXAMPLE)
            .env("BENCHIT_BIN", &bin)
            .env("BENCHIT_CACHE_DIR", &cache)
            .current_dir(root)
            .output()
            .with_context(|| format!("could not start {API_EXAMPLE}"))?;
        timings.push((step, started.elapsed().as_secs_f64()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success(),
            "{step}: {API_EXAMPLE} failed ({}): {stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let summary: Value = stdout
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .with_context(|| format!("{step}: no JSON summary in {stdout}"))?;
        ensure!(
            summary["ok"] == true && summary["reused"] == reused,
            "{step}: expected ok and reused={reused}: {summary}"
        );
    }

    let started = Instant::now();
    let prefix = scratch.join("ops/simple_add");
    let prefix = prefix.to_str().context("the scratch folder is not UTF-8")?;
    let summary = json_output(
        &mut benchit(&[
            "ops", "-c", OPS_CONFIG, "-w", "2", "-i", "5", "-o", prefix, "--format", "json",
        ]),
        "benchit ops",
    )?;
    timings.push(("benchit ops", started.elapsed().as_secs_f64()));
    check_ops(&summary).with_context(|| format!("benchit ops: {summary:#}"))?;

    let started = Instant::now();
    run_pytest(
        root,
        &home,
        &bin,
        python.as_std_path(),
        &[
            "benchmarks/_benchmate/tests/test_benchit_models.py",
            "benchmarks/_benchmate/tests/test_benchit_ops.py",
        ],
    )?;
    timings.push(("benchit worker pytest", started.elapsed().as_secs_f64()));
    timings.extend(keras_flow(root, &home, &benchit)?);
    Ok(timings)
}

/// The model zoo step (issue 53): `benchit` benchmarks the transformers and timm scripts on
/// `ort` and `torch-eager` in an environment `--with` their packages (BERT and RoBERTa are
/// called with keyword arguments), then the zoo's pytest suite runs in that environment.
fn zoo_flow(
    root: &Path,
    home: &Path,
    bin: &Path,
    benchit: &dyn Fn(&[&str]) -> Command,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let mut args: Vec<&str> = ZOO_SCRIPTS.iter().map(|(script, _)| *script).collect();
    for package in ZOO_PACKAGES {
        args.extend(["--with", package]);
    }
    args.push("--runtime");
    args.extend(RUNTIMES);
    args.extend(["--warmup", "2", "--iterations", "10", "--format", "json"]);
    let step = "benchit transformers and timm (--with)";
    let started = Instant::now();
    let report = json_output(&mut benchit(&args), step)?;
    let mut timings = vec![(step, started.elapsed().as_secs_f64())];
    check_zoo(&report).with_context(|| format!("{step}: {report:#}"))?;

    let started = Instant::now();
    let settings = benchit::env::EnvSettings {
        home: camino::Utf8PathBuf::from_path_buf(home.to_path_buf())
            .map_err(|_| anyhow::anyhow!("the scratch folder is not UTF-8"))?,
        python: None,
        worker: None,
        arch: "cpu".to_owned(),
        start: camino::Utf8PathBuf::from_path_buf(root.to_path_buf())
            .map_err(|_| anyhow::anyhow!("the checkout is not UTF-8"))?,
        keras: false,
        with: ZOO_PACKAGES.iter().map(|p| (*p).to_owned()).collect(),
    };
    run_pytest(
        root,
        home,
        bin,
        settings.group_python().as_std_path(),
        &["benchmarks/_benchmate/tests/test_benchit_zoo.py"],
    )?;
    timings.push(("benchit zoo pytest", started.elapsed().as_secs_f64()));
    Ok(timings)
}

/// Every zoo script ran to its end and each of its models was timed on every runtime asked.
fn check_zoo(report: &Value) -> anyhow::Result<()> {
    let inputs = report["inputs"].as_array().context("no inputs")?;
    ensure!(inputs.len() == ZOO_SCRIPTS.len(), "{} inputs", inputs.len());
    for (input, (script, count)) in inputs.iter().zip(ZOO_SCRIPTS) {
        ensure!(input["status"] == "done", "{script} did not finish");
        let models = input["models"].as_array().context("no models")?;
        ensure!(models.len() == count, "{script}: {} models", models.len());
        for model in models {
            let runtimes = model["invocations"][0]["build"]["runtimes"]
                .as_array()
                .with_context(|| format!("{script}: {} has no runtimes", model["class"]))?;
            for wanted in RUNTIMES {
                let ok = runtimes
                    .iter()
                    .any(|r| r["runtime"] == wanted && r["ok"] == true);
                ensure!(ok, "{script}: {} not timed on {wanted}", model["class"]);
            }
        }
    }
    Ok(())
}

/// The Keras step: `benchit` benchmarks the Keras example on `ort` (building the Keras
/// environment first), then the Keras pytest suite runs in that environment.
fn keras_flow(
    root: &Path,
    home: &Path,
    benchit: &dyn Fn(&[&str]) -> Command,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let mut timings = Vec::new();
    let step = "benchit keras (installs TensorFlow)";
    let started = Instant::now();
    let args = [
        KERAS_SCRIPT,
        "--runtime",
        "ort",
        "--warmup",
        "5",
        "--iterations",
        "30",
    ];
    let report = json_output(
        &mut benchit(&[&args[..], &["--format", "json"]].concat()),
        step,
    )?;
    timings.push((step, started.elapsed().as_secs_f64()));
    check_keras_models(&report).with_context(|| format!("{step}: {report:#}"))?;

    let started = Instant::now();
    let utf8_home = camino::Utf8Path::from_path(home).context("the scratch folder is not UTF-8")?;
    run_pytest(
        root,
        home,
        &root.join("target/debug/benchit"),
        benchit::env::managed_keras_python(utf8_home).as_std_path(),
        &["benchmarks/_benchmate/tests/test_benchit_keras.py"],
    )?;
    timings.push(("benchit keras pytest", started.elapsed().as_secs_f64()));
    Ok(timings)
}

/// Installs pytest into the environment of `python` and runs the pytest `files` there.
fn run_pytest(
    root: &Path,
    home: &Path,
    bin: &Path,
    python: &Path,
    files: &[&str],
) -> anyhow::Result<()> {
    run_checked(
        Command::new(uv_program(home))
            .env("UV_CACHE_DIR", user_uv_cache())
            .args(["pip", "install", "--quiet", "--python"])
            .arg(python)
            .arg("pytest"),
        &format!("installing pytest into {}", python.display()),
    )?;
    run_checked(
        Command::new(python)
            .args(["-m", "pytest", "-q"])
            .args(files)
            .env("BENCHIT_BIN", bin)
            .current_dir(root),
        &format!("the benchit worker's pytest suites {files:?}"),
    )
}

/// Both Keras models of the example were found as Keras models with their hashes, and each
/// invocation was built and measured a positive mean latency on `ort`.
fn check_keras_models(report: &Value) -> anyhow::Result<()> {
    let input = &report["inputs"][0];
    ensure!(input["status"] == "done", "the input did not finish");
    let models = models_with_hashes(input, &KERAS_MODEL_HASHES)?;
    for model in models {
        ensure!(model["framework"] == "keras", "not found as a Keras model");
        for invocation in model["invocations"].as_array().context("no invocations")? {
            let ort = &invocation["build"]["runtimes"][0];
            let mean = ort["statistics"]["mean_ms"].as_f64().unwrap_or(0.0);
            ensure!(
                ort["runtime"] == "ort" && ort["ok"] == true && mean > 0.0,
                "ort did not measure a positive latency for {}",
                invocation["invocation_hash"]
            );
        }
    }
    Ok(())
}

/// The models of a report's `input`, which must have the model hashes `expected`, in order.
fn models_with_hashes<'a>(input: &'a Value, expected: &[&str]) -> anyhow::Result<&'a Vec<Value>> {
    let models = input["models"].as_array().context("no models")?;
    let hashes: Vec<&str> = models
        .iter()
        .filter_map(|m| m["model_hash"].as_str())
        .collect();
    ensure!(
        hashes == expected,
        "model hashes {hashes:?}, expected {expected:?}"
    );
    Ok(models)
}

/// uv as benchit found it: bootstrapped into `<home>/tools/uv` when it was not on `PATH`.
fn uv_program(home: &Path) -> std::path::PathBuf {
    let bootstrapped = home.join("tools/uv/bin/uv");
    if bootstrapped.is_file() {
        bootstrapped
    } else {
        "uv".into()
    }
}

fn run_checked(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("could not start {what}"))?;
    ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

/// Both models of the script were found with their hashes and built (or, when `reused` says
/// so, taken from the cache), and every runtime of `wanted` measured a positive mean latency.
fn check_models(report: &Value, reused: Option<bool>, wanted: &[&str]) -> anyhow::Result<()> {
    let inputs = report["inputs"].as_array().context("no inputs")?;
    ensure!(inputs.len() == 1, "one input expected");
    let input = &inputs[0];
    ensure!(input["status"] == "done", "the input did not finish");
    let models = models_with_hashes(input, &MODEL_HASHES)?;
    for model in models {
        for invocation in model["invocations"].as_array().context("no invocations")? {
            let build = &invocation["build"];
            if let Some(reused) = reused {
                ensure!(
                    build["reused"] == reused,
                    "build reused should be {reused} for {}",
                    invocation["invocation_hash"]
                );
            }
            let runtimes = build["runtimes"].as_array().context("no runtimes")?;
            for &wanted in wanted {
                let measured = runtimes
                    .iter()
                    .find(|r| r["runtime"] == wanted)
                    .with_context(|| format!("runtime {wanted} missing"))?;
                let mean = measured["statistics"]["mean_ms"].as_f64().unwrap_or(0.0);
                ensure!(
                    measured["ok"] == true && mean > 0.0,
                    "runtime {wanted} did not measure a positive latency"
                );
            }
        }
    }
    Ok(())
}

/// The torchvision script found its ResNet and timed it on `ort`.
fn check_with(report: &Value) -> anyhow::Result<()> {
    let input = &report["inputs"][0];
    ensure!(input["status"] == "done", "the input did not finish");
    let model = input["models"]
        .as_array()
        .and_then(|models| models.iter().find(|m| m["class"] == "ResNet"))
        .context("no ResNet model found")?;
    let ok = model["invocations"][0]["build"]["runtimes"]
        .as_array()
        .is_some_and(|r| r.iter().any(|r| r["runtime"] == "ort" && r["ok"] == true));
    ensure!(ok, "ort did not time the ResNet");
    Ok(())
}

/// Every script of the folder ran to its end and called at least one model.
fn check_corpus(report: &Value) -> anyhow::Result<()> {
    let inputs = report["inputs"].as_array().context("no inputs")?;
    ensure!(inputs.len() > 1, "--all found {} script(s)", inputs.len());
    for input in inputs {
        let models = input["models"].as_array().map_or(0, Vec::len);
        ensure!(
            input["status"] == "done" && models > 0,
            "{} ended {} with {models} model(s)",
            input["input"],
            input["status"]
        );
    }
    Ok(())
}

/// Every expanded id ran, with the iteration counts asked for, and the output file holds the
/// setup line, one record per id and the closing line.
fn check_ops(summary: &Value) -> anyhow::Result<()> {
    ensure!(summary["error"].is_null(), "the run reported an error");
    let runs = summary["runs"].as_array().context("no runs")?;
    ensure!(!runs.is_empty(), "no operator run");
    let output = summary["output"].as_str().context("no output file")?;
    let text = fs_err::read_to_string(output)?;
    let lines: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("the output file is not JSON lines")?;
    ensure!(
        lines.len() == runs.len() + 2,
        "expected a setup line, {} records and a closing line; found {} lines",
        runs.len(),
        lines.len()
    );
    ensure!(lines[0].get("run_options").is_some(), "no setup line");
    ensure!(
        lines[lines.len() - 1].get("finish_time").is_some(),
        "no closing line"
    );
    for record in &lines[1..lines.len() - 1] {
        let forward = &record["metric"]["forward"];
        let warmup = forward["warmup.time"].as_array().map_or(0, Vec::len);
        let measured = forward["measure.time"].as_array().map_or(0, Vec::len);
        ensure!(
            warmup == 2 && measured == 5,
            "record {} has {warmup} warm-up and {measured} measured times (asked 2 and 5)",
            record["id"]
        );
    }
    Ok(())
}
