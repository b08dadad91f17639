//! [`Host`]: the facts of this machine a suite is resolved and run with, captured once when it
//! is resolved (a [`crate::Session`] has one): the injected environment, the `PATH` processes
//! are looked up in, the GPUs, the CPU count. Nothing later reads the process environment or
//! looks for GPUs again.

use camino::Utf8PathBuf;
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
    /// The `milabench` program serving benchmarks run as their load generator: this program
    /// when it is `milabench`, else the first `milabench` on `PATH`.
    pub milabench_program: Option<Utf8PathBuf>,
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
        let path = env
            .get("PATH")
            .map(str::to_string)
            .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default());
        Host {
            env: env.clone(),
            milabench_program: milabench_program(&path),
            path,
            discovery,
            gpus,
            cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// This program when its name is `milabench`, else the first executable `milabench` in
/// `path`'s folders.
fn milabench_program(path: &str) -> Option<Utf8PathBuf> {
    let this = std::env::current_exe()
        .ok()
        .and_then(|p| Utf8PathBuf::try_from(p).ok());
    match this {
        Some(this) if this.file_name() == Some("milabench") => Some(this),
        _ => milabench_env::find_on_path("milabench", Some(path)),
    }
}
