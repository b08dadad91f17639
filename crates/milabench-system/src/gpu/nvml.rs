//! NVIDIA GPUs through NVML (`libnvidia-ml.so.1`, opened at run time by nvml-wrapper).

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use serde_json::{Map, Value};

use super::{BackendKind, GpuBackend, GpuError, GpuInfo, GpuReading};

const NAME: &str = "NVML";
/// MIG instances per GPU are at most 7 on current hardware; a few more are probed for safety.
const MAX_MIG: u32 = 8;

/// The NVML backend. One library handle, shared by every thread.
#[derive(Debug)]
pub struct NvmlBackend {
    nvml: Nvml,
}

impl NvmlBackend {
    /// Opens NVML. `Ok(None)` when this machine has no NVIDIA library, no driver or no device:
    /// the normal case on CPU machines. An error when the library is there but refuses.
    pub fn init() -> Result<Option<NvmlBackend>, GpuError> {
        let nvml = match Nvml::init() {
            Ok(n) => n,
            Err(NvmlError::LibloadingError(_) | NvmlError::DriverNotLoaded) => return Ok(None),
            Err(e) => return Err(whole(e)),
        };
        match nvml.device_count() {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(NvmlBackend { nvml })),
            Err(e) => Err(whole(e)),
        }
    }

    fn read(&self, device: &Device<'_>, index: u32) -> Result<GpuReading, GpuError> {
        let mut r = GpuReading::default();
        match device.memory_info() {
            Ok(m) => {
                r.memory_used_mib = Some(m.used as f64 / 1024.0 / 1024.0);
                r.memory_total_mib = Some(m.total as f64 / 1024.0 / 1024.0);
            }
            Err(e) => field(&mut r, "memory", e, index)?,
        }
        match device.utilization_rates() {
            Ok(u) => {
                r.load = Some(f64::from(u.gpu) / 100.0);
                r.memory_load_pct = Some(f64::from(u.memory));
            }
            Err(e) => field(&mut r, "load", e, index)?,
        }
        match device.temperature(TemperatureSensor::Gpu) {
            Ok(t) => r.temperature = Some(f64::from(t)),
            Err(e) => field(&mut r, "temperature", e, index)?,
        }
        match device.power_usage() {
            Ok(mw) => r.power_w = Some(f64::from(mw) / 1000.0),
            Err(e) => field(&mut r, "power", e, index)?,
        }
        match (
            device.clock_info(Clock::SM),
            device.clock_info(Clock::Memory),
        ) {
            (Ok(sm), Ok(mem)) => {
                r.sm_clock_mhz = Some(f64::from(sm));
                r.mem_clock_mhz = Some(f64::from(mem));
            }
            (Err(e), _) | (_, Err(e)) => field(&mut r, "clocks", e, index)?,
        }
        Ok(r)
    }
}

/// A field that cannot be read is recorded as missing; a lost device fails the whole reading.
fn field(r: &mut GpuReading, name: &'static str, e: NvmlError, index: u32) -> Result<(), GpuError> {
    match e {
        NvmlError::GpuLost | NvmlError::Uninitialized => Err(GpuError::Lost {
            index,
            detail: e.to_string(),
        }),
        NvmlError::NotSupported => {
            r.miss(name, "not supported by this device");
            Ok(())
        }
        NvmlError::NoPermission => {
            r.miss(name, "no permission");
            Ok(())
        }
        // Old drivers lack newer symbols (`_v2` calls): a missing field, not a failure.
        other => {
            r.miss(name, other.to_string());
            Ok(())
        }
    }
}

fn whole(e: NvmlError) -> GpuError {
    match e {
        NvmlError::NoPermission => GpuError::NoPermission {
            backend: NAME,
            detail: e.to_string(),
        },
        other => GpuError::Backend {
            backend: NAME,
            detail: other.to_string(),
        },
    }
}

impl GpuBackend for NvmlBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Nvml
    }

    fn arch(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> Result<Vec<GpuInfo>, GpuError> {
        let count = self.nvml.device_count().map_err(whole)?;
        let mut out = Vec::new();
        for index in 0..count {
            let device = self
                .nvml
                .device_by_index(index)
                .map_err(|e| GpuError::Lost {
                    index,
                    detail: e.to_string(),
                })?;
            let mig_enabled = device.mig_mode().is_ok_and(|m| m.current == 1);
            let mig_uuids = if mig_enabled {
                (0..MAX_MIG)
                    .map_while(|i| device.mig_device_by_index(i).ok())
                    .filter_map(|d| d.uuid().ok())
                    .collect()
            } else {
                Vec::new()
            };
            let reading = match self.read(&device, index) {
                Ok(r) => r,
                Err(e) => {
                    let mut r = GpuReading::default();
                    r.miss("all", e.to_string());
                    r
                }
            };
            out.push(GpuInfo {
                index,
                name: device.name().ok(),
                uuid: device.uuid().ok(),
                minor_number: device.minor_number().ok(),
                mig_uuids,
                reading,
            });
        }
        Ok(out)
    }

    fn sample(&self, indices: &[u32]) -> Vec<(u32, Result<GpuReading, GpuError>)> {
        indices
            .iter()
            .map(|&index| {
                let reading = self
                    .nvml
                    .device_by_index(index)
                    .map_err(|e| GpuError::Lost {
                        index,
                        detail: e.to_string(),
                    })
                    .and_then(|d| self.read(&d, index));
                (index, reading)
            })
            .collect()
    }

    fn energy_mj(&self, index: u32) -> Option<u64> {
        self.nvml
            .device_by_index(index)
            .ok()?
            .total_energy_consumption()
            .ok()
    }

    fn system_info(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Ok(v) = self.nvml.sys_cuda_driver_version() {
            m.insert("CUDA_DRIVER".into(), Value::from(v));
        }
        if let Ok(v) = self.nvml.sys_driver_version() {
            m.insert("DRIVER_VERSION".into(), Value::from(v));
        }
        if let Ok(v) = self.nvml.sys_nvml_version() {
            m.insert("NVML_VERSION".into(), Value::from(v));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 38, item 22: the NVML path had no test that reads a device. With an NVIDIA
    /// driver, every device has a name, a UUID and a reading with its memory, a sample reads
    /// each, and the machine's facts name the driver; without one, NVML is quiet (`None`, no error) and the test says
    /// that the device part is skipped, and why.
    #[test]
    #[allow(clippy::print_stderr)]
    fn nvml_reads_the_devices_of_a_real_driver_and_is_quiet_without_one() {
        let backend = match NvmlBackend::init() {
            Ok(Some(backend)) => backend,
            Ok(None) => {
                eprintln!(
                    "SKIPPED (devices): NVML found no NVIDIA library, driver or device here; only its quiet absence was checked"
                );
                return;
            }
            Err(e) => panic!("NVML is there but refused: {e}"),
        };
        assert_eq!(backend.kind(), BackendKind::Nvml);
        let devices = backend.devices().expect("devices");
        assert!(!devices.is_empty());
        for (i, device) in devices.iter().enumerate() {
            assert_eq!(device.index as usize, i);
            assert!(
                device.name.as_deref().is_some_and(|n| !n.is_empty()),
                "{device:?}"
            );
            assert!(
                device
                    .uuid
                    .as_deref()
                    .is_some_and(|u| u.starts_with("GPU-")),
                "{device:?}"
            );
            assert!(
                device.reading.memory_total_mib.is_some_and(|m| m > 0.0),
                "{device:?}"
            );
        }
        let indices: Vec<u32> = devices.iter().map(|d| d.index).collect();
        for (index, reading) in backend.sample(&indices) {
            let reading = reading.unwrap_or_else(|e| panic!("GPU {index}: {e}"));
            assert!(reading.memory_used_mib.is_some(), "{reading:?}");
        }
        assert!(
            backend.system_info().contains_key("DRIVER_VERSION"),
            "{:?}",
            backend.system_info()
        );
    }
}
