//! The machine as a whole (host, accelerators, versions): collected once per host, rendered as
//! the `meta` event, as `milabench sysinfo` output and as the one-paragraph header of a run.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use milabench_exec::HelperCommand;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::SystemError;
use crate::gpu::{BackendKind, GpuDiscovery, GpuInfo};
use crate::host::{HostFacts, host_facts};

/// The milabench build that made a run (`meta.milabench`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MilabenchVersion {
    /// Release tag or version (`<tag>` when unknown: the `version` layer flags that).
    pub tag: String,
    /// Source commit, when known.
    pub commit: Option<String>,
    /// Commit date, when known.
    pub date: Option<String>,
}

impl MilabenchVersion {
    /// A version named `tag` (the caller's crate version, usually).
    pub fn new(tag: impl Into<String>) -> MilabenchVersion {
        MilabenchVersion {
            tag: tag.into(),
            commit: None,
            date: None,
        }
    }
}

/// Python and PyTorch versions of one benchmark environment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PythonVersions {
    /// `sys.version` (first word: `3.12.3`).
    pub python: String,
    /// `sys.executable`.
    pub executable: String,
    /// The `pytorch` object of `meta`: `torch` version and build facts; empty without torch.
    pub torch: Map<String, Value>,
}

/// Prints one JSON object: the interpreter's version and, when torch imports, its version, the
/// CUDA/HIP versions it was built for and the lines of its build configuration.
const VERSIONS_SCRIPT: &str = r#"
import json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable, "torch": {}}
try:
    import torch
    t = {"torch": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
         "hip": getattr(torch.version, "hip", None)}
    try:
        lines = [l.strip().lstrip("- ").strip() for l in torch.__config__.show().splitlines()]
        t["config"] = [l for l in lines if l]
    except Exception:
        pass
    out["torch"] = t
except Exception:
    pass
print(json.dumps(out))
"#;

/// Asks the interpreter at `python` for its Python and torch versions, waiting at most
/// `timeout` (importing torch takes a few seconds). `None` when it cannot be run, fails, or
/// answers something else than the expected JSON.
pub fn python_versions(python: &Path, timeout: Duration) -> Option<PythonVersions> {
    let stdout = HelperCommand::new(python, ["-c", VERSIONS_SCRIPT], timeout)
        .run()
        .ok()
        .filter(|out| out.success())?
        .stdout;
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))?;
    let v: Value = serde_json::from_str(line).ok()?;
    Some(PythonVersions {
        python: v.get("python")?.as_str()?.to_owned(),
        executable: v
            .get("executable")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        torch: v
            .get("torch")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}

/// Everything known about the machine, collected once per host.
#[derive(Debug, Clone, Serialize)]
pub struct SystemFacts {
    /// CPU, memory, operating system.
    pub host: HostFacts,
    /// `cuda`, `rocm` or `cpu`.
    pub arch: String,
    /// The backend the GPUs were read with.
    pub backend: Option<BackendKind>,
    /// Every GPU, with one reading.
    pub gpus: Vec<GpuInfo>,
    /// The variable that selects visible devices (`CUDA_VISIBLE_DEVICES`), empty without GPUs.
    pub selection_variable: String,
    /// Driver and library versions.
    pub driver: Map<String, Value>,
    /// Problems met while looking for GPUs, one sentence each.
    pub problems: Vec<String>,
}

impl SystemFacts {
    /// Reads the host and the GPUs of `gpus`. `measure_load` adds per-core load (200 ms wait).
    pub fn collect(gpus: &GpuDiscovery, measure_load: bool) -> Result<SystemFacts, SystemError> {
        let host = host_facts(measure_load)?;
        let mut problems = gpus.problems.clone();
        let (devices, error) = gpus.devices();
        if let Some(e) = error {
            problems.push(e.to_string());
        }
        let backend = gpus.backend.as_ref();
        Ok(SystemFacts {
            host,
            arch: gpus.arch().to_owned(),
            backend: backend.map(|b| b.kind()),
            gpus: devices,
            selection_variable: backend
                .map(|b| b.selection_variable().to_owned())
                .unwrap_or_default(),
            driver: backend.map(|b| b.system_info()).unwrap_or_default(),
            problems,
        })
    }

    /// The `accelerators` object of `meta`.
    fn accelerators(&self) -> Value {
        let gpus: Map<String, Value> = self
            .gpus
            .iter()
            .map(|g| (g.index.to_string(), g.meta_value(&self.selection_variable)))
            .collect();
        json!({"arch": self.arch, "gpus": gpus, "system": self.driver})
    }

    /// The `meta` event payload, in the Python tool's shape, with `python` added beside
    /// `pytorch` when the environment's versions are known, and `memory` (`total`, bytes: the
    /// host's main memory, which the Python tool does not record).
    pub fn meta(&self, version: &MilabenchVersion, python: Option<&PythonVersions>) -> Value {
        let os = &self.host.os;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut meta = json!({
            "cpu": {"count": self.host.cpu.count, "brand": self.host.cpu.brand},
            "os": {
                "sysname": os.sysname, "nodename": os.nodename, "release": os.release,
                "version": os.version, "machine": os.machine,
            },
            "accelerators": self.accelerators(),
            "memory": {"total": self.host.memory.total},
            "date": now,
            "milabench": version,
            "pytorch": python.map_or_else(Map::new, |p| p.torch.clone()),
        });
        if let (Some(p), Some(m)) = (python, meta.as_object_mut()) {
            m.insert(
                "python".into(),
                json!({"version": p.python, "executable": p.executable}),
            );
        }
        meta
    }

    /// What `milabench sysinfo --format json` prints: the facts with every detail.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.insert("accelerators".into(), self.accelerators());
        }
        v
    }

    /// A human-readable listing (`milabench sysinfo`).
    pub fn text(&self) -> String {
        let h = &self.host;
        let mut t = String::new();
        let cores = match h.cpu.physical_cores {
            Some(p) => format!("{} logical CPUs, {p} physical cores", h.cpu.count),
            None => format!("{} logical CPUs", h.cpu.count),
        };
        let _ = writeln!(t, "cpu:      {} ({cores})", h.cpu.brand);
        if h.cpu.frequency_mhz > 0 {
            let _ = writeln!(t, "freq:     {} MHz", h.cpu.frequency_mhz);
        }
        if !h.cpu.load_per_core.is_empty() {
            let loads: Vec<String> = h
                .cpu
                .load_per_core
                .iter()
                .map(|l| format!("{l:.0}%"))
                .collect();
            let _ = writeln!(t, "load:     {}", loads.join(" "));
        }
        let _ = writeln!(
            t,
            "memory:   {} total, {} used, {} available",
            gib(h.memory.total),
            gib(h.memory.used),
            gib(h.memory.available)
        );
        let _ = writeln!(
            t,
            "os:       {} {} {} ({})",
            h.os.sysname,
            h.os.release,
            h.os.machine,
            h.os.distribution
                .as_deref()
                .unwrap_or("unknown distribution")
        );
        let _ = writeln!(t, "host:     {}", h.os.nodename);
        match self.backend {
            None => {
                let _ = writeln!(t, "arch:     cpu (no accelerator found)");
            }
            Some(b) => {
                let _ = writeln!(t, "arch:     {} (read with {})", self.arch, b.as_str());
                for (k, v) in &self.driver {
                    let _ = writeln!(t, "driver:   {k} = {}", scalar(v));
                }
            }
        }
        for g in &self.gpus {
            let r = &g.reading;
            let _ = writeln!(
                t,
                "gpu {}:    {} | memory {} / {} MiB | load {} | {} C | {} W",
                g.index,
                g.name.as_deref().unwrap_or("N/A"),
                opt(r.memory_used_mib, 0),
                opt(r.memory_total_mib, 0),
                opt(r.load.map(|l| l * 100.0), 0) + "%",
                opt(r.temperature, 0),
                opt(r.power_w, 1),
            );
        }
        for p in &self.problems {
            let _ = writeln!(t, "problem:  {p}");
        }
        t
    }

    /// One paragraph saying what the machine is, for the top of a run.
    pub fn header(&self) -> String {
        let h = &self.host;
        let gpus = if self.gpus.is_empty() {
            "no accelerator (CPU-only run)".to_owned()
        } else {
            let mut names: Vec<&str> = self
                .gpus
                .iter()
                .map(|g| g.name.as_deref().unwrap_or("GPU"))
                .collect();
            names.dedup();
            format!(
                "{} {} GPU(s) ({}, {} MiB each)",
                self.gpus.len(),
                self.arch,
                names.join(", "),
                opt(self.gpus[0].reading.memory_total_mib, 0)
            )
        };
        format!(
            "System: {} on {} {} ({}); {}, {} logical CPUs; {} of memory; {}.",
            h.os.nodename,
            h.os.sysname,
            h.os.release,
            h.os.machine,
            h.cpu.brand,
            h.cpu.count,
            gib(h.memory.total),
            gpus
        )
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "N/A".to_owned(), |x| format!("{x:.decimals$}"))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::gpu::fake::{FakeBackend, FakeDevice};

    #[test]
    fn meta_has_the_python_shape() {
        let gpus = GpuDiscovery::with_backend(Arc::new(FakeBackend::new(vec![FakeDevice::new(
            "Fake A100",
            81920.0,
            0.5,
            100.0,
            300.0,
        )])));
        let facts = SystemFacts::collect(&gpus, false).expect("facts");
        let meta = facts.meta(&MilabenchVersion::new("v1.0"), None);
        assert!(meta["cpu"]["count"].as_u64().unwrap_or(0) > 0);
        assert_eq!(meta["accelerators"]["arch"], "cuda");
        assert_eq!(
            meta["accelerators"]["gpus"]["0"]["product"],
            json!("Fake A100")
        );
        assert_eq!(
            meta["accelerators"]["gpus"]["0"]["memory"]["total"],
            json!(81920.0)
        );
        assert_eq!(meta["milabench"]["tag"], "v1.0");
        assert_eq!(meta["pytorch"], json!({}));
        for key in ["sysname", "nodename", "release", "version", "machine"] {
            assert!(meta["os"][key].is_string(), "{key}");
        }
        assert!(facts.header().contains("1 cuda GPU(s) (Fake A100"));
    }

    #[test]
    fn cpu_only_machine() {
        let facts = SystemFacts::collect(&GpuDiscovery::none(), false).expect("facts");
        let meta = facts.meta(&MilabenchVersion::new("v1.0"), None);
        assert_eq!(
            meta["accelerators"],
            json!({"arch": "cpu", "gpus": {}, "system": {}})
        );
        assert_eq!(meta["memory"]["total"], json!(facts.host.memory.total));
        assert!(facts.host.memory.total > 0);
        assert!(facts.header().contains("CPU-only"));
        assert!(facts.text().contains("arch:     cpu"));
    }

    #[test]
    fn python_versions_none_when_missing_or_broken() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(python_versions(&dir.path().join("nope"), Duration::from_secs(2)).is_none());
        let script = dir.path().join("python");
        std::fs::write(&script, "#!/bin/sh\necho not json\n").expect("write");
        make_executable(&script);
        assert!(python_versions(&script, Duration::from_secs(2)).is_none());
        let slow = dir.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nsleep 5\n").expect("write");
        make_executable(&slow);
        let start = std::time::Instant::now();
        assert!(python_versions(&slow, Duration::from_millis(200)).is_none());
        assert!(start.elapsed() < Duration::from_secs(3));
    }

    #[test]
    #[allow(clippy::print_stderr)]
    fn python_versions_of_a_real_interpreter() {
        let Some(v) = python_versions(Path::new("python3"), Duration::from_secs(20)) else {
            eprintln!("SKIPPED: no python3 on PATH here, or it did not answer within 20 s");
            return;
        };
        assert!(v.python.starts_with('3'), "{v:?}");
    }

    fn make_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}
