//! The host: CPU model and cores, memory, operating system (through sysinfo, and `/proc` for the
//! `uname` fields on Linux).

use std::time::Duration;

use serde::Serialize;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

use crate::error::SystemError;

/// The CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuFacts {
    /// Model name (`brand_raw` in the Python tool).
    pub brand: String,
    /// Vendor (`GenuineIntel`, `AuthenticAMD`, ...).
    pub vendor: String,
    /// Logical CPUs (`os.cpu_count()` in the Python tool).
    pub count: usize,
    /// Physical cores, when known.
    pub physical_cores: Option<usize>,
    /// Current frequency of the first CPU, MHz (0 when unknown).
    pub frequency_mhz: u64,
    /// Load of each logical CPU over a short window, percent (empty when not measured).
    pub load_per_core: Vec<f32>,
}

/// Main memory, bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFacts {
    /// Installed.
    pub total: u64,
    /// In use.
    pub used: u64,
    /// Available to new processes.
    pub available: u64,
}

/// The operating system, as `uname` says it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OsFacts {
    /// Kernel name (`Linux`).
    pub sysname: String,
    /// Host name.
    pub nodename: String,
    /// Kernel release.
    pub release: String,
    /// Kernel build version.
    pub version: String,
    /// Machine architecture (`x86_64`, `aarch64`).
    pub machine: String,
    /// Distribution name and version, when known.
    pub distribution: Option<String>,
}

/// What the machine is, apart from its accelerators.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostFacts {
    /// The CPU.
    pub cpu: CpuFacts,
    /// Main memory.
    pub memory: MemoryFacts,
    /// The operating system.
    pub os: OsFacts,
}

/// Collects the host facts. With `measure_load`, waits sysinfo's minimum CPU update interval
/// (about 200 ms) to report the load of each core.
pub fn host_facts(measure_load: bool) -> Result<HostFacts, SystemError> {
    let kind = RefreshKind::nothing()
        .with_cpu(CpuRefreshKind::nothing().with_frequency().with_usage())
        .with_memory(MemoryRefreshKind::nothing().with_ram());
    let mut sys = System::new_with_specifics(kind).map_err(SystemError::sysinfo)?;
    let mut load_per_core = Vec::new();
    if measure_load {
        std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL.max(Duration::from_millis(200)));
        sys.refresh_cpu_usage();
        load_per_core = sys
            .cpus()
            .iter()
            .map(|c| (c.usage() * 10.0).round() / 10.0)
            .collect();
    }
    let first = sys.cpus().first();
    let cpu = CpuFacts {
        brand: first
            .map(|c| c.brand().trim().to_owned())
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "<unknown>".into()),
        vendor: first.map(|c| c.vendor_id().to_owned()).unwrap_or_default(),
        count: sys.cpus().len(),
        physical_cores: System::physical_core_count().ok(),
        frequency_mhz: first.map_or(0, |c| c.frequency()),
        load_per_core,
    };
    let memory = MemoryFacts {
        total: sys.total_memory(),
        used: sys.used_memory(),
        available: sys.available_memory(),
    };
    Ok(HostFacts {
        cpu,
        memory,
        os: os_facts(),
    })
}

fn proc_kernel(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn os_facts() -> OsFacts {
    OsFacts {
        sysname: proc_kernel("ostype")
            .or_else(|| System::name().ok())
            .unwrap_or_else(|| std::env::consts::OS.to_owned()),
        nodename: proc_kernel("hostname")
            .or_else(|| System::host_name().ok())
            .unwrap_or_default(),
        release: proc_kernel("osrelease")
            .or_else(|| System::kernel_version().ok())
            .unwrap_or_default(),
        version: proc_kernel("version")
            .or_else(|| System::kernel_long_version().ok())
            .unwrap_or_default(),
        machine: std::env::consts::ARCH.to_owned(),
        distribution: System::long_os_version().ok(),
    }
}
