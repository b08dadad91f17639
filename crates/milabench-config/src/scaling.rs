//! Scaling files: what the batch-size sizer knows of each benchmark's memory.
//!
//! The Python tool's format, version 2: per benchmark a list of `observations`, each the batch
//! size a run used, the largest GPU memory it took (`"11177 MiB"`), its rate (`perf`), the CPU
//! workers and the time. Version 1 files (`model: {"<batch size>": "<memory>"}`) are read too
//! and become observations when the file is written again.
//!
//! ```
//! use milabench_config::scaling::{NewObservation, ScalingFile};
//!
//! let mut file = ScalingFile::default();
//! for (batch_size, memory_mib) in [(32, 10_000), (64, 18_000)] {
//!     file.add("resnet50", &NewObservation { batch_size, memory_mib, perf: 100.0, cpu: 8, time: 0 });
//! }
//! let model = file.memory_model("resnet50").unwrap();
//! assert_eq!(model.mib_per_item, 250.0);
//! assert_eq!(model.batch_size_for(26_000.0), 96.0);
//! assert!(file.render().contains("- {batch_size: 64, cpu: 8, memory: 18000 MiB, perf: 100.0, time: 0}"));
//! ```

use std::path::{Path, PathBuf};

use serde_json::{Map, Value as Json};

use crate::error::ConfigError;
use crate::placeholders::sizer::to_bytes;

const MIB: f64 = 1024.0 * 1024.0;

/// A scaling file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ScalingError {
    /// The file is not YAML, or not a mapping of benchmarks.
    #[error(
        "scaling file {path}: {problem}\n  fix: give a file of the form `resnet50: {{observations: [{{batch_size: 32, memory: 9000 MiB, perf: 500}}]}}`"
    )]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The YAML could not be loaded.
    #[error(transparent)]
    Load(#[from] ConfigError),
    /// The file could not be written.
    #[error(
        "could not write the scaling file {path}; check that its folder is writable and the disk is not full"
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl ScalingError {
    /// Whether the error is the user's input (a file that cannot be read as scaling
    /// observations) rather than the machine failing to write one.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ScalingError::Shape { .. } | ScalingError::Load(_) => true,
            ScalingError::Write { .. } => false,
        }
    }
}

/// One observation of a benchmark: the batch size it ran at, and what that took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Batch size.
    pub batch_size: f64,
    /// Largest GPU memory, bytes.
    pub memory: f64,
    /// Rate (0 when the file has none).
    pub perf: f64,
}

/// An observation to add to a file (what a run measured).
#[derive(Debug, Clone, PartialEq)]
pub struct NewObservation {
    /// Batch size.
    pub batch_size: u64,
    /// Largest GPU memory, MiB.
    pub memory_mib: u64,
    /// Mean rate.
    pub perf: f64,
    /// CPU workers (`n_worker`).
    pub cpu: u64,
    /// Unix time of the run.
    pub time: i64,
}

/// The observations of one benchmark's entry (v1 or v2), sorted by batch size.
pub fn observations(entry: &Json) -> Vec<Observation> {
    let mut out: Vec<Observation> =
        if let Some(model) = entry.get("model").and_then(Json::as_object) {
            model
                .iter()
                .filter_map(|(bs, mem)| {
                    Some(Observation {
                        batch_size: bs.trim().parse().ok()?,
                        memory: to_bytes(mem.as_str()?)?,
                        perf: 0.0,
                    })
                })
                .collect()
        } else {
            entry
                .get("observations")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(|o| {
                    Some(Observation {
                        batch_size: o.get("batch_size")?.as_f64()?,
                        memory: to_bytes(o.get("memory")?.as_str()?)?,
                        perf: o.get("perf").and_then(Json::as_f64).unwrap_or(0.0),
                    })
                })
                .collect()
        };
    out.sort_by(|a, b| a.batch_size.total_cmp(&b.batch_size));
    out
}

/// A straight line `y = slope * x + intercept`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Slope.
    pub slope: f64,
    /// Value at 0.
    pub intercept: f64,
}

impl Line {
    /// The least-squares line through `points` (`(x, y)`); `None` with fewer than two distinct
    /// `x`.
    pub fn fit(points: &[(f64, f64)]) -> Option<Line> {
        if points.len() < 2 {
            return None;
        }
        let n = points.len() as f64;
        let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if sxx == 0.0 || !sxx.is_finite() {
            return None;
        }
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let slope = sxy / sxx;
        Some(Line {
            slope,
            intercept: my - slope * mx,
        })
    }

    /// The line at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.slope * x + self.intercept
    }
}

/// A benchmark's memory as a line of its batch size, fitted to its observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    /// Observations fitted.
    pub observations: usize,
    /// MiB each item of a batch adds.
    pub mib_per_item: f64,
    /// MiB at batch size 0 (the model, the framework).
    pub base_mib: f64,
    /// Root mean square of the differences between the observations and the line, MiB.
    pub rms_error_mib: f64,
    /// The largest of those differences, MiB.
    pub max_error_mib: f64,
}

impl MemoryModel {
    /// Fits the observations of an entry; `None` with fewer than two batch sizes.
    pub fn fit(entry: &Json) -> Option<MemoryModel> {
        let points: Vec<(f64, f64)> = observations(entry)
            .iter()
            .map(|o| (o.batch_size, o.memory / MIB))
            .collect();
        let line = Line::fit(&points)?;
        let errors: Vec<f64> = points.iter().map(|p| (p.1 - line.at(p.0)).abs()).collect();
        Some(MemoryModel {
            observations: points.len(),
            mib_per_item: line.slope,
            base_mib: line.intercept,
            rms_error_mib: (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt(),
            max_error_mib: errors.iter().copied().fold(0.0, f64::max),
        })
    }

    /// The batch size whose memory the line puts at `capacity_mib` (not rounded).
    pub fn batch_size_for(&self, capacity_mib: f64) -> f64 {
        (capacity_mib - self.base_mib) / self.mib_per_item
    }
}

/// A whole scaling file: benchmarks by name (and `version`), in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScalingFile {
    /// The top-level mapping.
    pub entries: Map<String, Json>,
}

impl ScalingFile {
    /// Reads `path`; a file that does not exist is an empty one.
    pub fn load(path: &Path) -> Result<ScalingFile, ScalingError> {
        if !path.exists() {
            return Ok(ScalingFile::default());
        }
        match crate::yaml::load_file(path, "scaling file")?.to_json() {
            Json::Object(entries) => Ok(ScalingFile { entries }),
            Json::Null => Ok(ScalingFile::default()),
            other => Err(ScalingError::Shape {
                path: path.to_path_buf(),
                problem: format!("holds {other}, not a mapping of benchmarks"),
            }),
        }
    }

    /// The entry of `bench`.
    pub fn entry(&self, bench: &str) -> Option<&Json> {
        self.entries.get(bench)
    }

    /// The benchmarks of the file, in its order.
    pub fn benches(&self) -> impl Iterator<Item = (&str, &Json)> {
        self.entries
            .iter()
            .filter(|(k, v)| k.as_str() != "version" && v.is_object())
            .map(|(k, v)| (k.as_str(), v))
    }

    /// The memory model of `bench`.
    pub fn memory_model(&self, bench: &str) -> Option<MemoryModel> {
        MemoryModel::fit(self.entry(bench)?)
    }

    /// Adds an observation of `bench` (its observations stay sorted by batch size; those
    /// already there are kept).
    pub fn add(&mut self, bench: &str, obs: &NewObservation) {
        self.upgrade();
        let entry = self
            .entries
            .entry(bench.to_string())
            .or_insert_with(|| Json::Object(Map::new()));
        if !entry.is_object() {
            *entry = Json::Object(Map::new());
        }
        let map = entry.as_object_mut().expect("an object");
        let list = map
            .entry("observations")
            .or_insert_with(|| Json::Array(Vec::new()));
        if !list.is_array() {
            *list = Json::Array(Vec::new());
        }
        let items = list.as_array_mut().expect("an array");
        items.push(serde_json::json!({
            "batch_size": obs.batch_size,
            "cpu": obs.cpu,
            "memory": format!("{} MiB", obs.memory_mib),
            "perf": (obs.perf * 100.0).round() / 100.0,
            "time": obs.time,
        }));
        items.sort_by(|a, b| {
            let bs = |o: &Json| o.get("batch_size").and_then(Json::as_f64).unwrap_or(0.0);
            bs(a).total_cmp(&bs(b))
        });
    }

    /// Version 2: v1 `model` mappings become observations.
    fn upgrade(&mut self) {
        for (name, entry) in self.entries.iter_mut() {
            if name == "version" {
                continue;
            }
            if let Some(Json::Object(model)) =
                entry.as_object_mut().and_then(|m| m.shift_remove("model"))
            {
                let obs: Vec<Json> = model
                    .into_iter()
                    .map(|(bs, mem)| {
                        let bs = bs.parse::<u64>().map_or(Json::String(bs), Json::from);
                        serde_json::json!({"batch_size": bs, "memory": mem})
                    })
                    .collect();
                if let Some(map) = entry.as_object_mut() {
                    map.insert("observations".into(), Json::Array(obs));
                }
            }
        }
        self.entries.insert("version".into(), Json::from(2.0));
    }

    /// The file's text: YAML with one observation per line, as the Python tool writes it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.entries {
            match value {
                Json::Object(map) => {
                    out.push_str(&format!("{}:\n", scalar(&Json::String(name.clone()))));
                    for (key, inner) in map {
                        match (key.as_str(), inner) {
                            ("observations", Json::Array(items)) => {
                                out.push_str("  observations:\n");
                                for item in items {
                                    out.push_str(&format!("  - {}\n", flow(item)));
                                }
                            }
                            _ => out.push_str(&format!(
                                "  {}: {}\n",
                                scalar(&Json::String(key.clone())),
                                flow(inner)
                            )),
                        }
                    }
                }
                other => out.push_str(&format!(
                    "{}: {}\n",
                    scalar(&Json::String(name.clone())),
                    flow(other)
                )),
            }
        }
        out
    }

    /// Writes the file to `path` (through a temporary file beside it, renamed into place).
    pub fn save(&self, path: &Path) -> Result<(), ScalingError> {
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            let tmp = path.with_extension("yaml.tmp");
            std::fs::write(&tmp, self.render())?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|source| ScalingError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// A value in YAML flow style: mappings `{k: v}`, plain strings where YAML reads them back as
/// the same string, JSON quoting elsewhere.
fn flow(value: &Json) -> String {
    match value {
        Json::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(&Json::String(k.clone())), flow(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Json::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(flow).collect::<Vec<_>>().join(", ")
            )
        }
        Json::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                n.to_string()
            }
        }
        other => scalar(other),
    }
}

/// A scalar: a string plain when it is safe (letters, digits, spaces, `_-./`, not starting with
/// a digit-like or special character, and not a YAML keyword), quoted otherwise.
fn scalar(value: &Json) -> String {
    let Json::String(s) = value else {
        return value.to_string();
    };
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _-./".contains(c))
        && !s.starts_with([' ', '-', '.'])
        && !s.ends_with(' ')
        && crate::yaml::parse_str(s, "scalar")
            .map(|n| n.to_json() == *value)
            .unwrap_or(false);
    if plain { s.clone() } else { value.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(batch_size: u64, memory_mib: u64, perf: f64) -> NewObservation {
        NewObservation {
            batch_size,
            memory_mib,
            perf,
            cpu: 4,
            time: 1_700_000_000,
        }
    }

    #[test]
    fn merging_keeps_what_was_there_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scaling.yaml");
        std::fs::write(
            &path,
            "bert:\n  model: {\"16\": 11177 MiB, \"32\": 17170 MiB}\n  optimized: 16\nother-bench:\n  observations:\n  - {batch_size: 8, cpu: 1, memory: 5000 MiB, perf: 9.5, time: 1}\n",
        )
        .unwrap();
        let mut file = ScalingFile::load(&path).unwrap();
        file.add("other-bench", &obs(4, 3000, 5.123));
        file.add("new", &obs(64, 20000, 300.0));
        file.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "bert:\n  optimized: 16\n  observations:\n  - {batch_size: 16, memory: 11177 MiB}\n  - {batch_size: 32, memory: 17170 MiB}\n\
             other-bench:\n  observations:\n  - {batch_size: 4, cpu: 4, memory: 3000 MiB, perf: 5.12, time: 1700000000}\n  - {batch_size: 8, cpu: 1, memory: 5000 MiB, perf: 9.5, time: 1}\n\
             version: 2.0\nnew:\n  observations:\n  - {batch_size: 64, cpu: 4, memory: 20000 MiB, perf: 300.0, time: 1700000000}\n"
        );
        let again = ScalingFile::load(&path).unwrap();
        assert_eq!(again, file);
        assert_eq!(observations(again.entry("bert").unwrap()).len(), 2);
    }

    #[test]
    fn the_model_fits_recorded_figures_with_its_error() {
        // Recorded on an H100 (the Python tool's config/scaling/H100.yaml, bert-fp32, cpu 8).
        let mut file = ScalingFile::default();
        for (bs, mib) in [
            (16, 12343),
            (24, 16231),
            (48, 30679),
            (64, 40341),
            (80, 50003),
        ] {
            file.add("bert-fp32", &obs(bs, mib, 100.0));
        }
        let model = file.memory_model("bert-fp32").unwrap();
        assert!((model.mib_per_item - 593.0).abs() < 10.0, "{model:?}");
        assert!(model.rms_error_mib < 400.0, "{model:?}");
        assert!(model.max_error_mib >= model.rms_error_mib);
        let fits = model.batch_size_for(80.0 * 1024.0);
        assert!((125.0..135.0).contains(&fits), "{fits}");
        assert!(file.memory_model("absent").is_none());
    }

    #[test]
    fn scalars_are_quoted_when_yaml_would_change_them() {
        assert_eq!(scalar(&Json::from("resnet50")), "resnet50");
        assert_eq!(scalar(&Json::from("123")), "\"123\"");
        assert_eq!(scalar(&Json::from("yes")), "\"yes\"");
        assert_eq!(scalar(&Json::from("a: b")), "\"a: b\"");
        assert_eq!(flow(&Json::from(2.0)), "2.0");
    }
}
