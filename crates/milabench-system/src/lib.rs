//! Hardware discovery and telemetry: what the machine is (CPU, memory, operating system,
//! accelerators, the Python and torch versions of a benchmark environment) and how busy it is
//! while a benchmark runs.
//!
//! - GPUs sit behind the [`GpuBackend`] trait: NVML (through nvml-wrapper, which opens
//!   `libnvidia-ml` at run time, so nothing NVIDIA is needed to build, and a machine without it
//!   is the normal quiet case), the `nvidia-smi` and `rocm-smi` text tools as fallbacks, and a
//!   scripted backend for tests (feature `fake`). [`discover`] picks one once per process.
//! - CPU, memory and process trees come from sysinfo with only its `system` part compiled.
//! - [`SystemFacts`] is collected once per host and renders the `meta` event, the
//!   `milabench sysinfo` listing and the header of a run.
//! - [`Sampler`] runs beside a benchmark on a thread ([`SamplerPool`]: one thread for the
//!   many processes of a plan, which share its wake-ups) and hands `data` events
//!   (`gpudata`, `cpudata`, `process`, in voir's shapes) to a sink closure: the caller decides
//!   where they go (the run's `.data` file, the validation layers). Faults (a GPU that
//!   disappears, a refusing driver, a tool printing garbage) become `error`/`missing` entries in
//!   the samples and one `message` event each; they never stop the benchmark.
//! - The helper programs these facts come from (`nvidia-smi`, `rocm-smi`, a benchmark
//!   environment's Python) run through `milabench-exec`'s [`milabench_exec::HelperCommand`],
//!   with a time limit.
//!
//! ```no_run
//! use milabench_system::{Sampler, SamplerConfig, SystemFacts, MilabenchVersion, discover};
//! let gpus = discover(None);
//! let facts = SystemFacts::collect(&gpus, false)?;
//! let meta = facts.meta(&MilabenchVersion::new("v0.1.0"), None);
//! let config = SamplerConfig::new(std::time::Duration::from_secs(3)).gpus([0]).process(4242);
//! let handle = Sampler::start(gpus, config, |event| { let _ = event; })?;
//! // ... the benchmark runs ...
//! let stats = handle.stop();
//! # let _ = (meta, stats);
//! # Ok::<(), milabench_system::SystemError>(())
//! ```

mod error;
pub mod gpu;
mod host;
mod meta;
mod sampler;

pub use error::SystemError;
pub use gpu::{
    BackendKind, GpuBackend, GpuDiscovery, GpuError, GpuInfo, GpuReading, MissingField, discover,
    discoveries, visible_devices,
};
pub use host::{CpuFacts, HostFacts, MemoryFacts, OsFacts, host_facts};
pub use meta::{MilabenchVersion, PythonVersions, SystemFacts, python_versions};
pub use sampler::{
    Collector, DEFAULT_POLL_INTERVAL, Sampler, SamplerConfig, SamplerHandle, SamplerPool,
    SamplerStats, poll_interval, thread_cpu_time,
};
