//! The GPU path without a GPU: a fake `nvidia-smi` on PATH stands for the driver (NVML is absent
//! on the test machines, so the `cuda` family falls back to the tool). It checks what a GPU
//! machine gets from resolution to report: `per_gpu` plans on every visible GPU,
//! `CUDA_VISIBLE_DEVICES` honoured, capabilities counted, telemetry recorded, power and energy
//! reported.

use std::path::Path;

use serde_json::Value;

use crate::common::{fake_smi, run, with_path};
use crate::run::Project;

/// Four H100s at work: 40 GB used, 97% load, 312.5 W.
const FOUR_H100: &str = "\
0, GPU-aaaa0000, NVIDIA H100 80GB HBM3, 40000, 81559, 97, 60, 61, 312.5, 1980, 2619
1, GPU-bbbb1111, NVIDIA H100 80GB HBM3, 40000, 81559, 97, 60, 61, 312.5, 1980, 2619
2, GPU-cccc2222, NVIDIA H100 80GB HBM3, 40000, 81559, 97, 60, 61, 312.5, 1980, 2619
3, GPU-dddd3333, NVIDIA H100 80GB HBM3, 40000, 81559, 97, 60, 61, 312.5, 1980, 2619";

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  weight: 1
  max_duration: 60
  voir:
    options:
      gpu_poll: 0.2
mono:
  inherits: _base
  tags: [monogpu]
  definition: benchmarks/steady
  argv: {--batch: '{gpu_count}'}
multi:
  inherits: _base
  tags: [multigpu]
  definition: benchmarks/steady
  plan: {method: njobs, n: 1}
  requires_capabilities: [\"gpu['count'] > 1\"]
";

/// Reports a rate every 0.1 s for about 1.5 s, so that the sampler polls the GPUs a few times.
const STEADY: &str = "\
import json, os, time
out = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)
for i in range(15):
    time.sleep(0.1)
    out.write(json.dumps({'task': 'train', 'rate': 1000.0 + i, 'units': 'items/s'}) + '\\n')
";

/// A real NVIDIA driver answers through NVML before the fake tool is asked: these tests only
/// mean something without one. Where there is one, says that the test is skipped and why
/// (the NVML path is tested by `milabench-system`'s `gpu::nvml` tests on such a machine).
#[allow(clippy::print_stderr)]
fn skipped_for_a_real_nvidia_driver() -> bool {
    let real = Path::new("/proc/driver/nvidia/version").exists();
    if real {
        eprintln!(
            "SKIPPED: this machine has an NVIDIA driver, which answers through NVML before the fake nvidia-smi these tests plant"
        );
    }
    real
}

fn project() -> Project {
    let project = Project::new(SUITE);
    project.bench("steady", STEADY);
    project
}

/// `milabench run --dry-run=json` on the fake machine, with `CUDA_VISIBLE_DEVICES` if given.
fn plans(project: &Project, smi: &Path, visible: Option<&str>) -> (Vec<Value>, String) {
    let mut cmd = project.run_command(&["--dry-run=json"]);
    cmd.env("MILABENCH_GPU_ARCH", "cuda")
        .env("PATH", with_path(smi));
    if let Some(v) = visible {
        cmd.env("CUDA_VISIBLE_DEVICES", v);
    }
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plans: Vec<Value> = serde_json::from_str(&out.stdout).expect("JSON plans");
    (plans, out.stderr)
}

fn processes<'a>(plans: &'a [Value], bench: &str) -> &'a [Value] {
    plans
        .iter()
        .find(|p| p["bench"] == bench)
        .and_then(|p| p["processes"].as_array())
        .map_or(&[], Vec::as_slice)
}

fn visible_of(processes: &[Value]) -> Vec<&str> {
    processes
        .iter()
        .map(|p| p["env"]["CUDA_VISIBLE_DEVICES"].as_str().unwrap_or("unset"))
        .collect()
}

#[test]
fn per_gpu_plans_one_process_on_each_gpu_the_machine_shows() {
    if skipped_for_a_real_nvidia_driver() {
        return;
    }
    let project = project();
    let smi = fake_smi(FOUR_H100, 0);

    // Every GPU: one process each, `{gpu_count}` is 4, and the multi-GPU benchmark runs on all.
    let (all, stderr) = plans(&project, smi.path(), None);
    let mono = processes(&all, "mono");
    assert_eq!(visible_of(mono), ["0", "1", "2", "3"], "{stderr}");
    assert_eq!(mono[2]["tag"], serde_json::json!(["mono", "D2"]));
    assert!(
        mono[0]["argv"]
            .as_array()
            .is_some_and(|a| a.windows(2).any(|w| w[0] == "--batch" && w[1] == "4")),
        "{}",
        mono[0]["argv"]
    );
    let multi = processes(&all, "multi");
    assert_eq!(multi.len(), 1, "multi is not skipped: {stderr}");
    assert_eq!(multi[0]["devices"], serde_json::json!(["0", "1", "2", "3"]));
    assert_eq!(visible_of(multi), ["unset"], "njobs sees every GPU");

    // The GPUs the caller's CUDA_VISIBLE_DEVICES leaves, in its order, by index or UUID; a
    // process gets the entry that named its GPU.
    let (some, stderr) = plans(&project, smi.path(), Some("3,GPU-bbbb"));
    let mono = processes(&some, "mono");
    assert_eq!(visible_of(mono), ["3", "GPU-bbbb"], "{stderr}");
    assert_eq!(mono[1]["tag"], serde_json::json!(["mono", "D1"]));
    assert_eq!(
        processes(&some, "multi")[0]["devices"],
        serde_json::json!(["3", "1"])
    );

    // An unknown entry ends the list, as CUDA reads it; one that hides every GPU is said, and
    // the GPU benchmarks cannot run.
    let (cut, stderr) = plans(&project, smi.path(), Some("1,7,0"));
    assert_eq!(visible_of(processes(&cut, "mono")), ["1"], "{stderr}");
    assert!(
        stderr.contains("CUDA_VISIBLE_DEVICES=1,7,0 names `7`, which is no device"),
        "{stderr}"
    );
    let (none, stderr) = plans(&project, smi.path(), Some("7"));
    assert!(
        stderr.contains("accelerator family `cuda` but CUDA_VISIBLE_DEVICES=7 hides every GPU"),
        "{stderr}"
    );
    assert!(processes(&none, "multi").is_empty(), "{stderr}");
}

#[test]
fn a_gpu_run_records_telemetry_and_reports_power_and_energy() {
    if skipped_for_a_real_nvidia_driver() {
        return;
    }
    let project = project();
    let smi = fake_smi(FOUR_H100, 0);
    let out = run(project
        .run_command(&["--run-name", "gpu", "--select", "mono"])
        .env("MILABENCH_GPU_ARCH", "cuda")
        .env("CUDA_VISIBLE_DEVICES", "2,0")
        .env("PATH", with_path(smi.path())));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);

    // Each process's samples are of its own GPU, keyed by its physical index.
    let d2 = project.data_file("gpu", "mono.D2");
    let sample = d2
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["data"]["gpudata"].is_object())
        .unwrap_or_else(|| panic!("mono.D2.data has GPU samples:\n{d2}"));
    let gpudata = &sample["data"]["gpudata"];
    assert_eq!(gpudata["2"]["power"], 312.5, "{gpudata}");
    assert_eq!(gpudata["2"]["load"], 0.97, "{gpudata}");
    assert!(gpudata.get("0").is_none(), "only its own GPU: {gpudata}");
    assert!(d2.contains("NVIDIA H100 80GB HBM3"), "meta names the GPU");

    // The report: two processes of one GPU each (`ngpu` is per process, as in the Python
    // tool), the peak memory read, energy and rate per watt from the power.
    let report = run(project
        .milabench()
        .args(["report", "--format", "json", "--runs"])
        .arg(project.path().join("base/runs/gpu")));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let v: Value = serde_json::from_str(&report.stdout).expect("report JSON");
    let row = v["benchmarks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "mono"))
        .unwrap_or_else(|| panic!("a mono row: {v}"));
    assert_eq!(row["n"], 2.0, "{row}");
    assert_eq!(row["ngpu"], 1.0, "{row}");
    assert_eq!(row["fail"], 0.0, "{row}");
    assert_eq!(row["peak_memory"], 40000.0, "{row}");
    let energy = row["energy_kj"].as_f64().unwrap_or(0.0);
    assert!(
        (0.2..1.0).contains(&energy),
        "a process's GPU at 312.5 W for about 1.5 s: {row}"
    );
    assert!(
        row["median_watt"]
            .as_f64()
            .is_some_and(|w| (w - 312.5).abs() < 1e-6),
        "{row}"
    );
    assert!(row["perf_watt"].as_f64().is_some_and(|x| x > 0.0), "{row}");
}

#[test]
fn the_system_files_arch_comes_before_the_driver_files() {
    if skipped_for_a_real_nvidia_driver() {
        return;
    }
    let project = project();
    let smi = fake_smi(FOUR_H100, 0);
    fs_err::write(
        project.path().join("system.yaml"),
        "system:\n  arch: cuda\n  nodes:\n    - {name: local, ip: 127.0.0.1, user: me, main: true}\n",
    )
    .expect("system file");
    let out = run(project
        .run_command(&["--dry-run=json", "--system", "system.yaml"])
        .env_remove("MILABENCH_GPU_ARCH")
        .env("PATH", with_path(smi.path())));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plans: Vec<Value> = serde_json::from_str(&out.stdout).expect("JSON plans");
    assert_eq!(
        visible_of(processes(&plans, "mono")),
        ["0", "1", "2", "3"],
        "{}",
        out.stderr
    );
}

/// The standard suite's vLLM serving benchmarks, switched on, on the fake four-GPU machine: one
/// `milabench load` around its own vLLM server per GPU, and one over every GPU with tensor
/// parallelism across them; each serves the model from the data folder.
#[test]
fn the_standard_suites_serving_benchmarks_plan_a_vllm_server_per_gpu_and_one_over_all() {
    if skipped_for_a_real_nvidia_driver() {
        return;
    }
    let project = project();
    let smi = fake_smi(FOUR_H100, 0);
    let standard = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/standard.yaml");
    let out = run(project
        .milabench()
        .args(["run", "--no-setup", "--dry-run=json", "--config"])
        .arg(&standard)
        .args([
            "--select",
            "vllm-dense-single",
            "--select",
            "vllm-dense-all",
        ])
        .args(["--override", "vllm-dense-single.enabled=true"])
        .args(["--override", "vllm-dense-all.enabled=true"])
        .env("MILABENCH_GPU_ARCH", "cuda")
        .env("PATH", with_path(smi.path())));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plans: Vec<Value> = serde_json::from_str(&out.stdout).expect("JSON plans");
    let argv = |p: &Value| -> Vec<String> {
        p["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .map(|a| a.as_str().expect("a word").to_owned())
            .collect()
    };
    let base = project.path().join("base");
    let server = |tail: &[&str]| {
        let mut words = vec![
            base.join("venv/vllm/bin/vllm").display().to_string(),
            "serve".into(),
            "meta-llama/Llama-3.1-8B-Instruct".into(),
            "--download-dir".into(),
            base.join("data/vllm").display().to_string(),
        ];
        words.extend(tail.iter().map(|w| (*w).to_owned()));
        words
    };
    let single = processes(&plans, "vllm-dense-single");
    assert_eq!(visible_of(single), ["0", "1", "2", "3"], "{}", out.stderr);
    for process in single {
        let words = argv(process);
        assert_eq!(words[1..3], ["load", "--emit-events"], "{words:?}");
        assert!(
            words.windows(2).any(|w| w == ["--scenario", "sweep"]),
            "{words:?}"
        );
        let after = words
            .iter()
            .position(|w| w == "--")
            .expect("a server command");
        assert_eq!(words[after + 1..], server(&[]), "{words:?}");
    }
    let all = processes(&plans, "vllm-dense-all");
    assert_eq!(all.len(), 1, "{}", out.stderr);
    assert_eq!(visible_of(all), ["unset"], "the server sees every GPU");
    let words = argv(&all[0]);
    let after = words
        .iter()
        .position(|w| w == "--")
        .expect("a server command");
    assert_eq!(
        words[after + 1..],
        server(&["--tensor-parallel-size", "4"]),
        "{words:?}"
    );
}
