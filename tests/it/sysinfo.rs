//! `milabench sysinfo`: the real host facts; GPUs through fake `nvidia-smi` programs on PATH
//! (NVML is absent on the test machines, so `cuda` falls back to the tool).

use serde_json::Value;

use crate::common::{fake_smi, milabench, run, with_path};

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("sysinfo --format json prints JSON")
}

/// Whether `sysinfo`'s answer `v` came from NVML: a machine with a real NVIDIA driver, which
/// answers before the fake `nvidia-smi` a test plants; says that the test is skipped and why.
#[allow(clippy::print_stderr)]
fn skipped_for_nvml(v: &Value) -> bool {
    let nvml = v["backend"] == "nvml";
    if nvml {
        eprintln!(
            "SKIPPED: this machine has an NVIDIA driver, which answers through NVML before the fake nvidia-smi this test plants"
        );
    }
    nvml
}

#[test]
fn sysinfo_json_reports_the_real_host() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = run(milabench(cwd.path()).args(["sysinfo", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = json_of(&out.stdout);
    let cpu = &v["host"]["cpu"];
    assert!(cpu["count"].as_u64().unwrap_or(0) >= 1, "{cpu}");
    assert!(!cpu["brand"].as_str().unwrap_or("").is_empty());
    assert!(v["host"]["memory"]["total"].as_u64().unwrap_or(0) > 0);
    // MILABENCH_GPU_ARCH=cpu (the tests' default): no accelerator, quietly.
    assert_eq!(v["arch"], "cpu");
    assert_eq!(v["gpus"], serde_json::json!([]));
    assert_eq!(v["accelerators"]["gpus"], serde_json::json!({}));
    assert!(out.stderr.is_empty(), "{}", out.stderr);

    let text = run(milabench(cwd.path()).arg("sysinfo"));
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("arch:     cpu (no accelerator found)"));
}

#[test]
fn sysinfo_reads_gpus_through_nvidia_smi() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let smi = fake_smi(
        "0, GPU-1111, NVIDIA A100-SXM4-80GB, 1277, 81920, 88, 40, 41, 329.21, 1410, 1593\n\
         1, GPU-2222, NVIDIA A100-SXM4-80GB, 3, 81920, 0, 0, 30, [N/A], 1410, 1593",
        0,
    );
    let out = run(milabench(cwd.path())
        .env("MILABENCH_GPU_ARCH", "cuda")
        .env("PATH", with_path(smi.path()))
        .args(["sysinfo", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = json_of(&out.stdout);
    if skipped_for_nvml(&v) {
        return;
    }
    assert_eq!(v["backend"], "nvidia-smi");
    let gpus = &v["accelerators"]["gpus"];
    assert_eq!(gpus["0"]["product"], "NVIDIA A100-SXM4-80GB");
    assert_eq!(gpus["0"]["memory"]["total"], 81920.0);
    assert_eq!(gpus["0"]["power"], 329.21);
    assert_eq!(gpus["1"]["power"], Value::Null);
    assert_eq!(gpus["1"]["selection_variable"], "CUDA_VISIBLE_DEVICES");
}

#[test]
fn sysinfo_survives_an_nvidia_smi_printing_garbage() {
    let cwd = tempfile::tempdir().expect("tempdir");
    for (output, code) in [
        ("Failed to initialize NVML: Insufficient Permissions", 0),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            9,
        ),
    ] {
        let smi = fake_smi(output, code);
        let out = run(milabench(cwd.path())
            .env("MILABENCH_GPU_ARCH", "cuda")
            .env("PATH", with_path(smi.path()))
            .args(["sysinfo", "--format", "json"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v = json_of(&out.stdout);
        if skipped_for_nvml(&v) {
            return;
        }
        assert_eq!(v["gpus"], serde_json::json!([]));
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.starts_with("warning: nvidia-smi"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains(&output[..20]), "{}", out.stderr);
    }
}
