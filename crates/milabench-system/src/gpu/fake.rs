//! A scripted GPU backend for tests (feature `fake`): devices with chosen loads, memory and
//! power (their energy counter runs at the first scripted power), and faults injected on cue (a device lost after some readings, fields the driver
//! will not give, a backend that refuses).

use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value};

use super::{BackendKind, GpuBackend, GpuError, GpuInfo, GpuReading};

/// One scripted device.
#[derive(Debug, Clone)]
pub struct FakeDevice {
    /// Product name.
    pub name: String,
    /// Installed memory, MiB.
    pub memory_total_mib: f64,
    /// Successive readings `(load 0..1, memory used MiB, power W)`, cycled.
    pub script: Vec<(f64, f64, f64)>,
    /// After this many readings of this device, it is lost.
    pub lost_after: Option<u64>,
    /// Fields this device never reports (`power`, `temperature`, ...), with the reason given.
    pub missing: Vec<(&'static str, String)>,
}

impl FakeDevice {
    /// A device with a constant load, memory use and power.
    pub fn new(name: &str, memory_total_mib: f64, load: f64, used_mib: f64, power: f64) -> Self {
        FakeDevice {
            name: name.into(),
            memory_total_mib,
            script: vec![(load, used_mib, power)],
            lost_after: None,
            missing: Vec::new(),
        }
    }

    /// Readings that follow `script`, cycled.
    pub fn with_script(mut self, script: Vec<(f64, f64, f64)>) -> Self {
        self.script = script;
        self
    }

    /// The device is lost after `n` readings.
    pub fn lost_after(mut self, n: u64) -> Self {
        self.lost_after = Some(n);
        self
    }

    /// The device never reports `field`.
    pub fn without(mut self, field: &'static str, reason: &str) -> Self {
        self.missing.push((field, reason.into()));
        self
    }
}

/// The scripted backend.
#[derive(Debug)]
pub struct FakeBackend {
    devices: Vec<FakeDevice>,
    refuse: Option<GpuError>,
    reads: Mutex<Vec<u64>>,
    created: Instant,
}

impl FakeBackend {
    /// A backend with these devices, indexed from 0.
    pub fn new(devices: Vec<FakeDevice>) -> FakeBackend {
        let n = devices.len();
        FakeBackend {
            devices,
            refuse: None,
            reads: Mutex::new(vec![0; n]),
            created: Instant::now(),
        }
    }

    /// Every call fails with `error` (NVML present but no permission, for instance).
    pub fn refusing(mut self, error: GpuError) -> FakeBackend {
        self.refuse = Some(error);
        self
    }

    fn read(&self, index: u32) -> Result<GpuReading, GpuError> {
        if let Some(e) = &self.refuse {
            return Err(e.clone());
        }
        let lost = || GpuError::Lost {
            index,
            detail: "fake device fell off the bus".into(),
        };
        let device = self.devices.get(index as usize).ok_or_else(lost)?;
        let n = {
            let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            let n = reads[index as usize];
            reads[index as usize] += 1;
            n
        };
        if device.lost_after.is_some_and(|limit| n >= limit) {
            return Err(lost());
        }
        let (load, used, power) = if device.script.is_empty() {
            (0.0, 0.0, 0.0)
        } else {
            device.script[(n as usize) % device.script.len()]
        };
        let mut r = GpuReading {
            memory_used_mib: Some(used),
            memory_total_mib: Some(device.memory_total_mib),
            load: Some(load),
            memory_load_pct: Some(load * 50.0),
            temperature: Some(30.0 + 40.0 * load),
            power_w: Some(power),
            sm_clock_mhz: Some(1410.0),
            mem_clock_mhz: Some(1593.0),
            missing: Vec::new(),
        };
        for (field, reason) in &device.missing {
            match *field {
                "power" => r.power_w = None,
                "temperature" => r.temperature = None,
                "load" => r.load = None,
                "memory" => {
                    r.memory_used_mib = None;
                    r.memory_total_mib = None;
                }
                _ => {}
            }
            r.miss(field, reason.clone());
        }
        Ok(r)
    }
}

impl GpuBackend for FakeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Fake
    }

    fn arch(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> Result<Vec<GpuInfo>, GpuError> {
        if let Some(e) = &self.refuse {
            return Err(e.clone());
        }
        Ok(self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| GpuInfo {
                index: i as u32,
                name: Some(d.name.clone()),
                uuid: Some(format!("GPU-fake-{i}")),
                minor_number: Some(i as u32),
                mig_uuids: Vec::new(),
                reading: GpuReading {
                    memory_used_mib: Some(0.0),
                    memory_total_mib: Some(d.memory_total_mib),
                    load: Some(0.0),
                    ..GpuReading::default()
                },
            })
            .collect())
    }

    fn sample(&self, indices: &[u32]) -> Vec<(u32, Result<GpuReading, GpuError>)> {
        indices.iter().map(|&i| (i, self.read(i))).collect()
    }

    fn system_info(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("DRIVER_VERSION".into(), Value::from("fake"));
        m
    }

    /// The first scripted power, drawn since the backend was made.
    fn energy_mj(&self, index: u32) -> Option<u64> {
        let device = self.devices.get(index as usize)?;
        let watts = device.script.first().map_or(0.0, |step| step.2);
        Some((watts * self.created.elapsed().as_secs_f64() * 1000.0) as u64)
    }
}
