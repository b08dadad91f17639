//! Where a milabench base keeps things and what builds it: the accelerator family ([`Arch`]),
//! the package installer ([`Installer`]), and the directories under the base ([`BaseLayout`],
//! with the overrides of [`DirOverrides`]).

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

/// Accelerator backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// NVIDIA CUDA.
    Cuda,
    /// AMD ROCm.
    Rocm,
    /// Intel XPU.
    Xpu,
    /// Habana Gaudi.
    Hpu,
    /// No accelerator.
    Cpu,
    /// A name milabench has no driver for, accepted from `MILABENCH_GPU_ARCH` as the Python
    /// milabench accepts it (its tests use `mock`, `ok` and `bad`): a machine without GPUs
    /// whose install variant is that name (`requirements.<name>.txt`).
    Named(ArchName),
}

/// The name of an [`Arch::Named`]: lowercase letters, digits, `_` and `-`, starting with a
/// letter, at most [`ArchName::MAX`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArchName {
    len: u8,
    bytes: [u8; ArchName::MAX],
}

impl ArchName {
    /// The longest name.
    pub const MAX: usize = 24;

    /// `text` as a name, when it is one.
    pub fn new(text: &str) -> Option<ArchName> {
        let valid = text.len() <= Self::MAX
            && text.starts_with(|c: char| c.is_ascii_lowercase())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        valid.then(|| {
            let mut bytes = [0; Self::MAX];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            ArchName {
                len: text.len() as u8,
                bytes,
            }
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl Arch {
    /// Accepted spellings, for error messages.
    pub const EXPECTED: &'static str = "one of cuda, rocm, xpu, hpu, cpu";

    /// What `MILABENCH_GPU_ARCH` accepts, for its error message.
    pub const EXPECTED_IN_ENV: &'static str = "one of cuda, rocm, xpu, hpu, cpu, or a lowercase name such as `mock` for a machine without GPUs";

    /// Parse a lowercase name (`cuda`, ...), case-insensitively.
    pub fn parse(text: &str) -> Option<Arch> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "cuda" => Arch::Cuda,
            "rocm" => Arch::Rocm,
            "xpu" => Arch::Xpu,
            "hpu" => Arch::Hpu,
            "cpu" => Arch::Cpu,
            _ => return None,
        })
    }

    /// Like [`Arch::parse`], and any other valid name as an [`Arch::Named`] (what
    /// `MILABENCH_GPU_ARCH` accepts).
    pub fn parse_any(text: &str) -> Option<Arch> {
        Arch::parse(text).or_else(|| ArchName::new(text.trim()).map(Arch::Named))
    }

    /// The name as written in files (`cuda`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            Arch::Cuda => "cuda",
            Arch::Rocm => "rocm",
            Arch::Xpu => "xpu",
            Arch::Hpu => "hpu",
            Arch::Cpu => "cpu",
            Arch::Named(name) => name.as_str(),
        }
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Arch, D::Error> {
        let text = String::deserialize(input)?;
        Arch::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is not an accelerator family: write {}",
                Arch::EXPECTED
            ))
        })
    }
}

/// Package installer used for benchmark environments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Installer {
    /// `uv pip install` (default; bootstrapped when missing).
    #[default]
    Uv,
    /// Plain `pip install`.
    Pip,
}

impl Installer {
    /// Accepted spellings, for error messages.
    pub const EXPECTED: &'static str = "uv or pip";

    /// Parse `uv` / `pip`, case-insensitively.
    pub fn parse(text: &str) -> Option<Installer> {
        match text.trim().to_ascii_lowercase().as_str() {
            "uv" => Some(Installer::Uv),
            "pip" => Some(Installer::Pip),
            _ => None,
        }
    }
}

/// Overrides of the directories under the base (`MILABENCH_DIRS_<NAME>`, `dirs:` in the file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DirOverrides {
    /// Root of the virtual environments (default `$BASE/venv`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub venv: Option<Utf8PathBuf>,
    /// Datasets (default `$BASE/data`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Utf8PathBuf>,
    /// Run folders (default `$BASE/runs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Utf8PathBuf>,
    /// Per-group scratch (default `$BASE/extra`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Utf8PathBuf>,
    /// Caches (default `$BASE/cache`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<Utf8PathBuf>,
}

/// Where things live under the base directory (reference §2.1, plus `logs` and `tools`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseLayout {
    /// The base itself.
    pub base: Utf8PathBuf,
    /// `venv/<install_group>/`: one environment per install group.
    pub venv: Utf8PathBuf,
    /// `data/`: shared datasets (`HF_HOME` during prepare and run).
    pub data: Utf8PathBuf,
    /// `cache/`: `XDG_CACHE_HOME` / `TORCH_HOME` during prepare and run.
    pub cache: Utf8PathBuf,
    /// `runs/<run_name>/`: one folder per invocation.
    pub runs: Utf8PathBuf,
    /// `extra/<group>/`: per-group scratch (voir configs, constraints, outputs).
    pub extra: Utf8PathBuf,
    /// `logs/`: milabench's own logs (not the benchmarks' event streams).
    pub logs: Utf8PathBuf,
    /// `tools/`: tools milabench bootstraps for itself (e.g. uv).
    pub tools: Utf8PathBuf,
}

impl BaseLayout {
    /// Layout under `base`; each `dirs` override replaces its default verbatim.
    pub fn new(base: &Utf8Path, dirs: &DirOverrides) -> Self {
        let pick =
            |o: &Option<Utf8PathBuf>, name: &str| o.clone().unwrap_or_else(|| base.join(name));
        BaseLayout {
            base: base.to_path_buf(),
            venv: pick(&dirs.venv, "venv"),
            data: pick(&dirs.data, "data"),
            cache: pick(&dirs.cache, "cache"),
            runs: pick(&dirs.runs, "runs"),
            extra: pick(&dirs.extra, "extra"),
            logs: base.join("logs"),
            tools: base.join("tools"),
        }
    }
}
