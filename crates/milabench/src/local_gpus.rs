//! The GPUs of this machine that a run may use, found when a suite is resolved: they give the
//! system its `gpu.count` and `gpu.capacity` (unless the system file states them) and `per_gpu`
//! plans their devices.

use milabench_config::settings::EnvVars;
use milabench_plan::{PlanGpu, visibility_variable};
use milabench_system::{GpuDiscovery, GpuInfo, visible_devices};

/// The GPUs of this machine a run may use: those the family's visibility variable
/// (`CUDA_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`...) leaves visible, all of them when it is
/// unset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalGpus {
    /// Each GPU: its physical index (as the telemetry backend numbers it) and the entry of the
    /// visibility variable that named it, in the variable's order. MIG instances of one GPU
    /// count as that GPU, named by the first of them.
    pub gpus: Vec<PlanGpu>,
    /// Memory of the smallest of them, in MiB, when the backend reads it.
    pub capacity_mib: Option<u64>,
    /// Why fewer GPUs than the family promises may have been found, one sentence each (a
    /// backend that refused, an accelerator family with no device).
    pub problems: Vec<String>,
}

impl LocalGpus {
    /// The GPUs of `arch` that `discovery` (the backend found on this machine) lists and the
    /// environment leaves visible; none on `cpu`.
    pub fn detect(arch: &str, discovery: &GpuDiscovery, env: &EnvVars) -> LocalGpus {
        // `cpu`, and the names without a driver (`MILABENCH_GPU_ARCH=mock`): no GPU to find.
        if !matches!(arch, "cuda" | "rocm" | "xpu" | "hpu") {
            return LocalGpus::default();
        }
        let (devices, error) = discovery.devices();
        let variable = visibility_variable(arch);
        let selection = env.get(variable);
        let mut gpus = LocalGpus::visible(&devices, variable, selection);
        gpus.problems
            .splice(0..0, discovery.problems.iter().cloned());
        if let Some(e) = error {
            gpus.problems.push(e.to_string());
        }
        if gpus.gpus.is_empty() {
            let why = match selection {
                Some(value) if !devices.is_empty() => {
                    format!("{variable}={value} hides every GPU")
                }
                _ => "no GPU was found".to_string(),
            };
            gpus.problems.push(format!(
                "accelerator family `{arch}` but {why}: `per_gpu` benchmarks run as one process \
                 and those that require GPUs are skipped; check the driver with `milabench \
                 sysinfo`, or pass `--arch cpu`"
            ));
        }
        gpus
    }

    /// The devices of `devices` that `selection` (the value of `variable`, if set) leaves
    /// visible; a selection that names some devices and then an unknown one is a problem.
    pub fn visible(devices: &[GpuInfo], variable: &str, selection: Option<&str>) -> LocalGpus {
        let mut gpus: Vec<PlanGpu> = Vec::new();
        let mut problems = Vec::new();
        match selection {
            None => gpus.extend(devices.iter().map(|d| PlanGpu::index(d.index.to_string()))),
            Some(value) => {
                for entry in value.split(',').map(str::trim) {
                    // As CUDA reads the list: it ends at the first entry that names no device.
                    let Some(index) = visible_devices(devices, Some(entry)).first().copied() else {
                        if !gpus.is_empty() {
                            problems.push(format!(
                                "{variable}={value} names `{entry}`, which is no device of this \
                                 machine: the run uses the {} GPUs listed before it, as CUDA does",
                                gpus.len()
                            ));
                        }
                        break;
                    };
                    let id = index.to_string();
                    if gpus.iter().all(|g| g.id != id) {
                        gpus.push(PlanGpu {
                            id,
                            selector: entry.to_string(),
                        });
                    }
                }
            }
        }
        let capacity_mib = devices
            .iter()
            .filter(|d| gpus.iter().any(|g| g.id == d.index.to_string()))
            .filter_map(|d| d.reading.memory_total_mib)
            .map(|mib| mib as u64)
            .min();
        LocalGpus {
            gpus,
            capacity_mib,
            problems,
        }
    }
}

#[cfg(test)]
mod tests {
    use milabench_system::GpuReading;

    use super::*;

    fn device(index: u32, total_mib: f64) -> GpuInfo {
        GpuInfo {
            index,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            uuid: Some(format!("GPU-{index}{index}{index}")),
            minor_number: Some(index),
            mig_uuids: vec![format!("MIG-{index}a"), format!("MIG-{index}b")],
            reading: GpuReading {
                memory_total_mib: Some(total_mib),
                ..GpuReading::default()
            },
        }
    }

    #[test]
    fn every_device_unless_the_variable_hides_some() {
        let devices = [device(0, 81559.0), device(1, 40960.0), device(2, 81559.0)];
        let all = LocalGpus::visible(&devices, "CUDA_VISIBLE_DEVICES", None);
        assert_eq!(
            all.gpus,
            [
                PlanGpu::index("0"),
                PlanGpu::index("1"),
                PlanGpu::index("2")
            ]
        );
        assert_eq!(all.capacity_mib, Some(40960));
        assert!(all.problems.is_empty());

        // A process of one GPU gets the entry that named it: a UUID stays a UUID, and a MIG
        // instance stays that instance.
        let some = LocalGpus::visible(&devices, "CUDA_VISIBLE_DEVICES", Some("2, GPU-000,MIG-2b"));
        let named = |id: &str, selector: &str| PlanGpu {
            id: id.into(),
            selector: selector.into(),
        };
        assert_eq!(some.gpus, [named("2", "2"), named("0", "GPU-000")]);
        assert_eq!(some.capacity_mib, Some(81559), "device 1 is hidden");
        assert!(some.problems.is_empty());
        let mig = LocalGpus::visible(&devices, "CUDA_VISIBLE_DEVICES", Some("MIG-1b"));
        assert_eq!(mig.gpus, [named("1", "MIG-1b")]);
        assert_eq!(mig.capacity_mib, Some(40960));
    }

    #[test]
    fn an_unknown_entry_ends_the_list_and_is_said() {
        let devices = [device(0, 81559.0), device(1, 81559.0)];
        let gpus = LocalGpus::visible(&devices, "CUDA_VISIBLE_DEVICES", Some("1,7,0"));
        assert_eq!(gpus.gpus, [PlanGpu::index("1")]);
        assert_eq!(gpus.problems.len(), 1);
        assert!(
            gpus.problems[0].contains("CUDA_VISIBLE_DEVICES=1,7,0 names `7`"),
            "{:?}",
            gpus.problems
        );
        let none = LocalGpus::visible(&devices, "CUDA_VISIBLE_DEVICES", Some("7,0"));
        assert!(none.gpus.is_empty());
        assert!(none.problems.is_empty(), "`detect` says that none is left");
    }

    #[test]
    fn nothing_is_looked_for_on_cpu() {
        assert_eq!(
            LocalGpus::detect("cpu", &GpuDiscovery::none(), &EnvVars::default()),
            LocalGpus::default()
        );
    }
}
