//! [`Host`]: the facts of this machine a suite is resolved and run with, captured once when it
//! is resolved (a [`crate::Session`] has one): the injected environment, the `PATH` processes
//! are looked up in, the GPUs, the CPU count. Nothing later reads the process environment or
//! looks for GPUs again.

use milabench_config::settings::EnvVars;
use milabench_system::GpuDiscovery;

use crate::local_gpus::LocalGpus;

/// This machine, as a resolution captured it.
#[derive(Debug, Clone)]
pub struct Host {
    /// The environment variables the session was made with (`MILABENCH_*`, `SLURM*`, device
    /// visibility).
    pub env: EnvVars,
    /// The `PATH` processes and helper programs are looked up in: the injected environment's,
    /// else this process's.
    pub path: String,
    /// The GPU backend found (none on `cpu`), which the run's telemetry samples.
    pub discovery: GpuDiscovery,
    /// The GPUs of this machine the run may use.
    pub gpus: LocalGpus,
    /// The CPUs this process may use.
    pub cpu_count: usize,
}

impl Host {
    /// Captures this machine for accelerator family `arch`: the GPU backend is looked for once
    /// (not at all on `cpu` and families without a driver).
    pub fn capture(arch: &str, env: &EnvVars) -> Host {
        let discovery = if matches!(arch, "cuda" | "rocm" | "xpu" | "hpu") {
            milabench_system::discover(Some(arch))
        } else {
            GpuDiscovery::none()
        };
        let gpus = LocalGpus::detect(arch, &discovery, env);
        Host {
            env: env.clone(),
            path: env
                .get("PATH")
                .map(str::to_string)
                .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default()),
            discovery,
            gpus,
            cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}
