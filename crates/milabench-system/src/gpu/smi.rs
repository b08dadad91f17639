//! Text backends: `nvidia-smi` (CSV query) where NVML cannot be used from this process, and
//! `rocm-smi` (JSON) for AMD GPUs. Each reading runs the tool once for every device.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{BackendKind, GpuBackend, GpuError, GpuInfo, GpuReading};
use milabench_exec::{HelperCommand, HelperError};

/// Longest wait for one run of a tool.
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// The `nvidia-smi` query: one CSV line per device, these columns in this order.
const NVIDIA_FIELDS: &str = "index,uuid,name,memory.used,memory.total,utilization.gpu,\
utilization.memory,temperature.gpu,power.draw,clocks.sm,clocks.mem";
const NVIDIA_COLUMNS: usize = 11;

/// NVIDIA GPUs through `nvidia-smi --query-gpu ... --format=csv`.
#[derive(Debug, Clone)]
pub struct NvidiaSmiBackend {
    program: PathBuf,
}

/// AMD GPUs through `rocm-smi ... --json`.
#[derive(Debug, Clone)]
pub struct RocmSmiBackend {
    program: PathBuf,
}

fn run(program: &Path, args: &[&str], backend: &'static str) -> Result<Option<String>, GpuError> {
    match HelperCommand::new(program, args, TOOL_TIMEOUT).run() {
        Err(HelperError::NotFound { .. }) => Ok(None),
        Ok(out) if out.success() => Ok(Some(out.stdout)),
        Ok(out) => {
            let detail = excerpt(out.said());
            if detail.to_ascii_lowercase().contains("permission") {
                Err(GpuError::NoPermission { backend, detail })
            } else {
                Err(GpuError::Backend {
                    backend,
                    detail: format!("exited with an error: {detail}"),
                })
            }
        }
        Err(failed) => Err(GpuError::Backend {
            backend,
            detail: failed.to_string(),
        }),
    }
}

/// The first 120 characters of `text`, for error messages.
fn excerpt(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &t[..i]),
        None => t.to_owned(),
    }
}

impl NvidiaSmiBackend {
    /// The backend over `nvidia-smi` found on `PATH`, if it lists at least one device.
    pub fn probe() -> Result<Option<NvidiaSmiBackend>, GpuError> {
        NvidiaSmiBackend::probe_program(Path::new("nvidia-smi"))
    }

    /// The backend over a given `nvidia-smi` program, if it lists at least one device.
    pub fn probe_program(program: &Path) -> Result<Option<NvidiaSmiBackend>, GpuError> {
        let backend = NvidiaSmiBackend {
            program: program.to_owned(),
        };
        match backend.query()? {
            None => Ok(None),
            Some(devices) if devices.is_empty() => Ok(None),
            Some(_) => Ok(Some(backend)),
        }
    }

    fn query(&self) -> Result<Option<Vec<GpuInfo>>, GpuError> {
        let query = format!("--query-gpu={NVIDIA_FIELDS}");
        let args = [query.as_str(), "--format=csv,noheader,nounits"];
        match run(&self.program, &args, "nvidia-smi")? {
            None => Ok(None),
            Some(text) => parse_nvidia_smi_csv(&text).map(Some),
        }
    }
}

/// A value of a text backend: a number, or a reason it is missing (`[N/A]`, `[Not Supported]`).
fn number(text: &str) -> Result<f64, String> {
    let t = text.trim();
    t.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| {
            if t.starts_with('[') || t.eq_ignore_ascii_case("n/a") {
                t.trim_matches(['[', ']']).to_owned()
            } else {
                format!("unreadable value {t:?}")
            }
        })
}

/// Parses `nvidia-smi --query-gpu=<NVIDIA_FIELDS> --format=csv,noheader,nounits`.
///
/// A line with the wrong number of columns or no device index makes the whole output
/// unreadable (the tool changed, or printed an error); a single unreadable value is a missing
/// field of that device.
pub fn parse_nvidia_smi_csv(text: &str) -> Result<Vec<GpuInfo>, GpuError> {
    let unreadable = |detail: String| GpuError::Unreadable {
        backend: "nvidia-smi",
        detail,
        excerpt: excerpt(text),
    };
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() != NVIDIA_COLUMNS {
            return Err(unreadable(format!(
                "expected {NVIDIA_COLUMNS} comma-separated columns, found {}",
                cols.len()
            )));
        }
        let index = cols[0]
            .parse::<u32>()
            .map_err(|_| unreadable(format!("device index {:?} is not a number", cols[0])))?;
        let mut r = GpuReading::default();
        match (number(cols[3]), number(cols[4])) {
            (Ok(used), Ok(total)) => {
                r.memory_used_mib = Some(used);
                r.memory_total_mib = Some(total);
            }
            (Err(why), _) | (_, Err(why)) => r.miss("memory", why),
        }
        match number(cols[5]) {
            Ok(x) => r.load = Some(x / 100.0),
            Err(why) => r.miss("load", why),
        }
        if let Ok(x) = number(cols[6]) {
            r.memory_load_pct = Some(x);
        }
        match number(cols[7]) {
            Ok(x) => r.temperature = Some(x),
            Err(why) => r.miss("temperature", why),
        }
        match number(cols[8]) {
            Ok(x) => r.power_w = Some(x),
            Err(why) => r.miss("power", why),
        }
        match (number(cols[9]), number(cols[10])) {
            (Ok(sm), Ok(mem)) => {
                r.sm_clock_mhz = Some(sm);
                r.mem_clock_mhz = Some(mem);
            }
            (Err(why), _) | (_, Err(why)) => r.miss("clocks", why),
        }
        out.push(GpuInfo {
            index,
            uuid: Some(cols[1].to_owned()).filter(|s| !s.is_empty()),
            name: Some(cols[2].to_owned()).filter(|s| !s.is_empty()),
            minor_number: None,
            mig_uuids: Vec::new(),
            reading: r,
        });
    }
    Ok(out)
}

/// Picks the readings of `indices` out of a full listing; a device that is no longer listed is
/// lost, and a listing that failed fails every device.
fn pick(
    listing: Result<Option<Vec<GpuInfo>>, GpuError>,
    indices: &[u32],
    backend: &'static str,
) -> Vec<(u32, Result<GpuReading, GpuError>)> {
    let listing = listing.and_then(|l| {
        l.ok_or(GpuError::Backend {
            backend,
            detail: "the tool is no longer on PATH".into(),
        })
    });
    indices
        .iter()
        .map(|&index| {
            let reading = match &listing {
                Err(e) => Err(e.clone()),
                Ok(devices) => devices
                    .iter()
                    .find(|d| d.index == index)
                    .map(|d| d.reading.clone())
                    .ok_or_else(|| GpuError::Lost {
                        index,
                        detail: format!("{backend} no longer lists it"),
                    }),
            };
            (index, reading)
        })
        .collect()
}

impl GpuBackend for NvidiaSmiBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::NvidiaSmi
    }

    fn arch(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> Result<Vec<GpuInfo>, GpuError> {
        Ok(self.query()?.unwrap_or_default())
    }

    fn sample(&self, indices: &[u32]) -> Vec<(u32, Result<GpuReading, GpuError>)> {
        pick(self.query(), indices, "nvidia-smi")
    }
}

impl RocmSmiBackend {
    /// The backend over `rocm-smi` found on `PATH`, if it lists at least one device.
    pub fn probe() -> Result<Option<RocmSmiBackend>, GpuError> {
        RocmSmiBackend::probe_program(Path::new("rocm-smi"))
    }

    /// The backend over a given `rocm-smi` program, if it lists at least one device.
    pub fn probe_program(program: &Path) -> Result<Option<RocmSmiBackend>, GpuError> {
        let backend = RocmSmiBackend {
            program: program.to_owned(),
        };
        match backend.query()? {
            Some(devices) if !devices.is_empty() => Ok(Some(backend)),
            _ => Ok(None),
        }
    }

    fn query(&self) -> Result<Option<Vec<GpuInfo>>, GpuError> {
        let args = [
            "--showproductname",
            "--showuniqueid",
            "--showuse",
            "--showmemuse",
            "--showmeminfo",
            "vram",
            "--showtemp",
            "--showpower",
            "--json",
        ];
        match run(&self.program, &args, "rocm-smi")? {
            None => Ok(None),
            Some(text) => parse_rocm_smi_json(&text).map(Some),
        }
    }
}

/// Parses `rocm-smi ... --json`: an object with one `cardN` entry per device. Key names vary
/// between ROCm versions, so values are found by the words of their keys.
pub fn parse_rocm_smi_json(text: &str) -> Result<Vec<GpuInfo>, GpuError> {
    let unreadable = |detail: String| GpuError::Unreadable {
        backend: "rocm-smi",
        detail,
        excerpt: excerpt(text),
    };
    // Some versions print warnings before the JSON document.
    let start = text
        .find('{')
        .ok_or_else(|| unreadable("no JSON object".into()))?;
    let doc: Value =
        serde_json::from_str(&text[start..]).map_err(|e| unreadable(format!("not JSON: {e}")))?;
    let cards = doc
        .as_object()
        .ok_or_else(|| unreadable("not a JSON object".into()))?;
    let mut out = Vec::new();
    for (key, card) in cards {
        let Some(index) = key.strip_prefix("card").and_then(|i| i.parse::<u32>().ok()) else {
            continue;
        };
        let Some(card) = card.as_object() else {
            continue;
        };
        let find = |words: &[&str]| {
            card.iter()
                .find(|(k, _)| words.iter().all(|w| k.contains(w)))
                .map(|(_, v)| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
        };
        let num = |words: &[&str]| -> Result<f64, String> {
            match find(words) {
                Some(v) => number(&v),
                None => Err("not reported".into()),
            }
        };
        let mut r = GpuReading::default();
        const MIB: f64 = 1024.0 * 1024.0;
        match (
            num(&["VRAM Total Used Memory (B)"]),
            num(&["VRAM Total Memory (B)"]),
        ) {
            (Ok(used), Ok(total)) => {
                r.memory_used_mib = Some(used / MIB);
                r.memory_total_mib = Some(total / MIB);
            }
            (Err(why), _) | (_, Err(why)) => r.miss("memory", why),
        }
        match num(&["GPU use (%)"]) {
            Ok(x) => r.load = Some(x / 100.0),
            Err(why) => r.miss("load", why),
        }
        r.memory_load_pct = num(&["Memory Allocated", "%"]).ok();
        match num(&["Temperature", "edge"]).or_else(|_| num(&["Temperature"])) {
            Ok(x) => r.temperature = Some(x),
            Err(why) => r.miss("temperature", why),
        }
        match num(&["Power (W)"]) {
            Ok(x) => r.power_w = Some(x),
            Err(why) => r.miss("power", why),
        }
        out.push(GpuInfo {
            index,
            name: find(&["Card series"]).or_else(|| find(&["Card SKU"])),
            uuid: find(&["Unique ID"]),
            minor_number: None,
            mig_uuids: Vec::new(),
            reading: r,
        });
    }
    if out.is_empty() && !cards.is_empty() && !cards.keys().any(|k| k == "system") {
        return Err(unreadable("no `cardN` entry".into()));
    }
    out.sort_by_key(|d| d.index);
    Ok(out)
}

impl GpuBackend for RocmSmiBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::RocmSmi
    }

    fn arch(&self) -> &'static str {
        "rocm"
    }

    fn devices(&self) -> Result<Vec<GpuInfo>, GpuError> {
        Ok(self.query()?.unwrap_or_default())
    }

    fn sample(&self, indices: &[u32]) -> Vec<(u32, Result<GpuReading, GpuError>)> {
        pick(self.query(), indices, "rocm-smi")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_csv_with_missing_values() {
        let text = "0, GPU-1234, NVIDIA A100-SXM4-80GB, 1277, 81920, 88, 40, 41, 329.21, 1410, 1593\n\
                    1, GPU-5678, NVIDIA A100-SXM4-80GB, 3, 81920, 0, 0, 30, [N/A], [Not Supported], 1593\n";
        let d = parse_nvidia_smi_csv(text).expect("parses");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].reading.load, Some(0.88));
        assert_eq!(d[0].reading.power_w, Some(329.21));
        assert_eq!(d[0].name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
        let missing: Vec<_> = d[1].reading.missing.iter().map(|m| m.field).collect();
        assert_eq!(missing, ["power", "clocks"]);
        assert_eq!(d[1].reading.missing[0].reason, "N/A");
    }

    #[test]
    fn nvidia_garbage_is_unreadable() {
        let err = parse_nvidia_smi_csv("Failed to initialize NVML: Unknown Error\n").unwrap_err();
        assert!(matches!(err, GpuError::Unreadable { .. }), "{err}");
        assert!(err.to_string().contains("Failed to initialize NVML"));
        assert!(parse_nvidia_smi_csv("").expect("empty").is_empty());
    }

    #[test]
    fn rocm_json() {
        let text = r#"WARNING: something
{"card0": {"Card series": "Instinct MI300X", "Unique ID": "0xabc", "GPU use (%)": "97",
 "GPU Memory Allocated (VRAM%)": "12", "VRAM Total Memory (B)": "205822885888",
 "VRAM Total Used Memory (B)": "1073741824", "Temperature (Sensor edge) (C)": "45.0",
 "Current Socket Graphics Package Power (W)": "712.0"},
 "card1": {"Card series": "Instinct MI300X", "GPU use (%)": "N/A"},
 "system": {"Driver version": "6.8"}}"#;
        let d = parse_rocm_smi_json(text).expect("parses");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].reading.memory_used_mib, Some(1024.0));
        assert_eq!(d[0].reading.load, Some(0.97));
        assert_eq!(d[0].reading.power_w, Some(712.0));
        assert!(d[1].reading.missing.iter().any(|m| m.field == "load"));
        assert!(parse_rocm_smi_json("garbage").is_err());
    }
}
