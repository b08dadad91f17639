//! GPUs: the backend trait, what a device is and what one reading of it says, backend
//! discovery, and device visibility (`CUDA_VISIBLE_DEVICES`-style selections).

#[cfg(any(test, feature = "fake"))]
pub mod fake;
mod nvml;
mod smi;

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

pub use nvml::NvmlBackend;
pub use smi::{NvidiaSmiBackend, RocmSmiBackend, parse_nvidia_smi_csv, parse_rocm_smi_json};

/// Which kind of backend measured a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// NVIDIA Management Library, loaded at run time.
    Nvml,
    /// The `nvidia-smi` command, when NVML cannot be used from this process.
    NvidiaSmi,
    /// The `rocm-smi` command (AMD).
    RocmSmi,
    /// The scripted backend of tests.
    Fake,
}

impl BackendKind {
    /// Its name in messages and in `sysinfo` output.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Nvml => "nvml",
            BackendKind::NvidiaSmi => "nvidia-smi",
            BackendKind::RocmSmi => "rocm-smi",
            BackendKind::Fake => "fake",
        }
    }
}

/// One measurement of one device. Every field is optional: a field the device or driver would not
/// give is `None` and named in [`GpuReading::missing`] with the reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuReading {
    /// Memory in use, MiB.
    pub memory_used_mib: Option<f64>,
    /// Memory installed, MiB.
    pub memory_total_mib: Option<f64>,
    /// Compute utilisation, 0 to 1.
    pub load: Option<f64>,
    /// Memory-controller utilisation, percent (as the Python tool's `utilization.memory`).
    pub memory_load_pct: Option<f64>,
    /// Degrees Celsius.
    pub temperature: Option<f64>,
    /// Power draw, watts.
    pub power_w: Option<f64>,
    /// Streaming-multiprocessor (shader) clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<f64>,
    /// Fields the backend could not read, with why.
    pub missing: Vec<MissingField>,
}

/// A field a backend could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingField {
    /// The field (`power`, `temperature`, `memory`, `load`, `clocks`).
    pub field: &'static str,
    /// What the backend said.
    pub reason: String,
}

impl GpuReading {
    /// Records that `field` could not be read.
    pub fn miss(&mut self, field: &'static str, reason: impl Into<String>) {
        self.missing.push(MissingField {
            field,
            reason: reason.into(),
        });
    }

    /// The device entry of a `gpudata` sample, in voir's shape: `memory: [used, total]` (MiB),
    /// `load` (0 to 1), `temperature`, `power`; plus `missing: [fields]` when some could not be
    /// read.
    pub fn to_gpu_sample(&self) -> milabench_metrics::GpuSample {
        let mut sample = milabench_metrics::GpuSample {
            memory: match (self.memory_used_mib, self.memory_total_mib) {
                (Some(used), Some(total)) => Some([used, total]),
                _ => None,
            },
            load: self.load,
            temperature: self.temperature,
            power: self.power_w,
            extra: Map::new(),
        };
        if !self.missing.is_empty() {
            let fields = self.missing.iter().map(|m| Value::from(m.field)).collect();
            sample.extra.insert("missing".into(), Value::Array(fields));
        }
        sample
    }
}

/// A device as discovered: identity and one reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuInfo {
    /// Physical index (the key of `gpudata` and of `meta.accelerators.gpus`).
    pub index: u32,
    /// Product name.
    pub name: Option<String>,
    /// Vendor UUID (`GPU-...`).
    pub uuid: Option<String>,
    /// Minor number of the device file (`/dev/nvidia<N>`).
    pub minor_number: Option<u32>,
    /// UUIDs of its MIG instances, when MIG is enabled.
    pub mig_uuids: Vec<String>,
    /// One reading taken at discovery.
    pub reading: GpuReading,
}

impl GpuInfo {
    /// The entry of `meta.accelerators.gpus`, in the Python tool's shape.
    pub fn meta_value(&self, selection_variable: &str) -> Value {
        let r = &self.reading;
        let mut m = Map::new();
        m.insert(
            "minor_number".into(),
            self.minor_number
                .map_or(Value::from("N/A"), |n| Value::from(n.to_string())),
        );
        m.insert("device".into(), Value::from(self.index));
        m.insert(
            "product".into(),
            self.name.clone().map_or(Value::from("N/A"), Value::from),
        );
        m.insert(
            "memory".into(),
            serde_json::json!({"used": r.memory_used_mib, "total": r.memory_total_mib}),
        );
        m.insert(
            "utilization".into(),
            serde_json::json!({"compute": r.load, "memory": r.memory_load_pct}),
        );
        m.insert(
            "temperature".into(),
            Value::from(r.temperature.unwrap_or(-1.0)),
        );
        m.insert("power".into(), r.power_w.map_or(Value::Null, Value::from));
        m.insert("selection_variable".into(), Value::from(selection_variable));
        if let Some(uuid) = &self.uuid {
            m.insert("uuid".into(), Value::from(uuid.clone()));
        }
        if !self.mig_uuids.is_empty() {
            m.insert("mig".into(), Value::from(self.mig_uuids.clone()));
        }
        Value::Object(m)
    }
}

/// Why a device or a whole backend could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// The device stopped answering (fell off the bus, was reset, or is no longer listed).
    #[error("GPU {index} is lost: {detail}")]
    Lost {
        /// Physical index.
        index: u32,
        /// What the backend said.
        detail: String,
    },
    /// The backend refuses this user.
    #[error("no permission to query GPUs through {backend}: {detail}")]
    NoPermission {
        /// Backend name.
        backend: &'static str,
        /// What the backend said.
        detail: String,
    },
    /// The backend answered something this crate cannot read.
    #[error("{backend} printed something unexpected ({detail}): {excerpt:?}")]
    Unreadable {
        /// Backend name.
        backend: &'static str,
        /// What was wrong with it.
        detail: String,
        /// The start of the output.
        excerpt: String,
    },
    /// Any other backend failure.
    #[error("{backend} failed: {detail}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// What it said.
        detail: String,
    },
}

/// A source of GPU facts and readings.
///
/// Implementations are shared between the sampler thread and the caller (`Send + Sync`) and
/// never panic on a device error: each device's reading is a `Result`, and each field of a
/// reading is optional.
pub trait GpuBackend: Send + Sync + fmt::Debug {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// The accelerator family (`cuda`, `rocm`), as `meta.accelerators.arch`.
    fn arch(&self) -> &'static str;

    /// The environment variable that selects visible devices for this family.
    fn selection_variable(&self) -> &'static str {
        match self.arch() {
            "rocm" => "HIP_VISIBLE_DEVICES",
            _ => "CUDA_VISIBLE_DEVICES",
        }
    }

    /// Every device, with one reading each.
    fn devices(&self) -> Result<Vec<GpuInfo>, GpuError>;

    /// One reading of each of `indices` (physical indices), in the same order.
    fn sample(&self, indices: &[u32]) -> Vec<(u32, Result<GpuReading, GpuError>)>;

    /// Driver and library versions (`meta.accelerators.system`).
    fn system_info(&self) -> Map<String, Value> {
        Map::new()
    }

    /// The device's energy counter, millijoules since the driver loaded (NVML's total energy
    /// consumption, Volta and later); `None` where the device or backend has none.
    fn energy_mj(&self, index: u32) -> Option<u64> {
        let _ = index;
        None
    }
}

/// The outcome of looking for GPUs: the backend to use, if any, and why none or a lesser one was
/// chosen.
#[derive(Debug, Clone, Default)]
pub struct GpuDiscovery {
    /// The backend, or `None` on a machine without usable GPUs.
    pub backend: Option<Arc<dyn GpuBackend>>,
    /// Problems met on the way, one sentence each (NVML without permission, a tool printing
    /// garbage). Empty on a machine that simply has no GPU.
    pub problems: Vec<String>,
}

impl GpuDiscovery {
    /// A discovery that found `backend` (used by tests and embedders with their own backend).
    pub fn with_backend(backend: Arc<dyn GpuBackend>) -> GpuDiscovery {
        GpuDiscovery {
            backend: Some(backend),
            problems: Vec::new(),
        }
    }

    /// A machine without GPUs.
    pub fn none() -> GpuDiscovery {
        GpuDiscovery::default()
    }

    /// `cuda`, `rocm`, or `cpu` when there is no backend.
    pub fn arch(&self) -> &'static str {
        self.backend.as_ref().map_or("cpu", |b| b.arch())
    }

    /// Every device (empty without a backend); a backend failure is added to `problems`.
    pub fn devices(&self) -> (Vec<GpuInfo>, Option<GpuError>) {
        match &self.backend {
            None => (Vec::new(), None),
            Some(b) => match b.devices() {
                Ok(d) => (d, None),
                Err(e) => (Vec::new(), Some(e)),
            },
        }
    }
}

/// How many times this process looked for a GPU backend (see [`discoveries`]).
static DISCOVERIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times this process looked for a GPU backend: a command looks once.
pub fn discoveries() -> usize {
    DISCOVERIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Looks for a GPU backend.
///
/// `arch` is the forced family (`MILABENCH_GPU_ARCH`): `cpu` means none; `cuda` tries NVML then
/// `nvidia-smi`; `rocm` tries `rocm-smi`; `None` tries them all and keeps the first that lists a
/// device. A machine without the NVIDIA library or tools is the normal quiet case: no backend
/// and no problem. A library that loads but refuses (no permission, driver not loaded) or a tool
/// that prints something unexpected is a problem, and the next backend is tried.
pub fn discover(arch: Option<&str>) -> GpuDiscovery {
    DISCOVERIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut problems = Vec::new();
    let want = |family: &str| arch.is_none() || arch == Some(family);
    if want("cuda") {
        match NvmlBackend::init() {
            Ok(Some(b)) => return found(b, problems),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
        match NvidiaSmiBackend::probe() {
            Ok(Some(b)) => return found(b, problems),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    if want("rocm") {
        match RocmSmiBackend::probe() {
            Ok(Some(b)) => return found(b, problems),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    if let Some(other @ ("xpu" | "hpu")) = arch {
        problems.push(format!(
            "no telemetry backend for `{other}` devices yet: GPU samples are left out"
        ));
    }
    GpuDiscovery {
        backend: None,
        problems,
    }
}

fn found<B: GpuBackend + 'static>(backend: B, problems: Vec<String>) -> GpuDiscovery {
    GpuDiscovery {
        backend: Some(Arc::new(backend)),
        problems,
    }
}

/// The physical indices a `CUDA_VISIBLE_DEVICES`-style `selection` leaves visible.
///
/// `None` (variable unset) means every device. Entries are indices, device UUIDs (`GPU-...`,
/// a unique prefix is enough) or MIG instance UUIDs (`MIG-...`, mapped to their parent device).
/// As with CUDA, the list stops at the first entry that names no device, and an empty value
/// hides every device.
pub fn visible_devices(devices: &[GpuInfo], selection: Option<&str>) -> Vec<u32> {
    let Some(selection) = selection else {
        return devices.iter().map(|d| d.index).collect();
    };
    let mut out = Vec::new();
    for entry in selection.split(',').map(str::trim) {
        let found = if let Ok(i) = entry.parse::<u32>() {
            devices.iter().find(|d| d.index == i)
        } else if entry.starts_with("MIG-") {
            devices
                .iter()
                .find(|d| d.mig_uuids.iter().any(|u| u == entry))
        } else if entry.is_empty() {
            None
        } else {
            let matching: Vec<&GpuInfo> = devices
                .iter()
                .filter(|d| d.uuid.as_deref().is_some_and(|u| u.starts_with(entry)))
                .collect();
            match matching.as_slice() {
                [one] => Some(*one),
                _ => None,
            }
        };
        match found {
            Some(d) if !out.contains(&d.index) => out.push(d.index),
            Some(_) => {}
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(index: u32, uuid: &str, mig: &[&str]) -> GpuInfo {
        GpuInfo {
            index,
            name: None,
            uuid: Some(uuid.into()),
            minor_number: None,
            mig_uuids: mig.iter().map(|s| (*s).to_owned()).collect(),
            reading: GpuReading::default(),
        }
    }

    #[test]
    fn visibility_follows_cuda_rules() {
        let d = [
            dev(0, "GPU-aaaa", &[]),
            dev(1, "GPU-bbbb", &["MIG-x1", "MIG-x2"]),
            dev(2, "GPU-abcd", &[]),
        ];
        assert_eq!(visible_devices(&d, None), vec![0, 1, 2]);
        assert_eq!(visible_devices(&d, Some("")), Vec::<u32>::new());
        assert_eq!(visible_devices(&d, Some("2,0")), vec![2, 0]);
        assert_eq!(visible_devices(&d, Some("GPU-b,MIG-x2")), vec![1]);
        // `GPU-a` is ambiguous: the list stops there.
        assert_eq!(visible_devices(&d, Some("1,GPU-a,0")), vec![1]);
        assert_eq!(visible_devices(&d, Some("0,7,1")), vec![0]);
    }

    #[test]
    fn readings_become_voir_samples() {
        let mut r = GpuReading {
            memory_used_mib: Some(100.0),
            memory_total_mib: Some(1000.0),
            load: Some(0.5),
            temperature: Some(40.0),
            ..GpuReading::default()
        };
        r.miss("power", "not supported");
        let v = milabench_metrics::Event::Data(Box::new(milabench_metrics::DataPayload {
            gpudata: Some(vec![("0".into(), r.to_gpu_sample())]),
            ..Default::default()
        }))
        .data_value();
        assert_eq!(
            v,
            serde_json::json!({"gpudata": {"0": {"memory": [100.0, 1000.0], "load": 0.5, "temperature": 40.0, "missing": ["power"]}}})
        );
    }
}
