//! `benchfile.yaml`: the optional file of a benchmark folder that states what differs from the
//! conventions (`main.py` run under voir, `prepare.py` to prepare, `requirements.in`). No Python
//! runs to read it. Every key is optional; unknown keys are errors so typos are caught.
//!
//! ```yaml
//! script: train.py          # or `module: bench` to run `python -m bench`
//! launcher: voir            # voir | python | torchrun | accelerate | direct
//! prepare: [prepare.py, --fast]   # command run by `milabench prepare` (relative to the folder)
//! env: {TOKENIZERS_PARALLELISM: "false"}
//! use_stdout: false         # smuggle the data channel in stdout (always on across ssh)
//! nproc_per_node: 2         # torchrun/accelerate processes per node on a machine without GPUs
//! server: [transformers, serve]   # launcher `load`: the server `milabench load` starts
//! ```

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::error::ConfigError;

/// How the benchmark's script is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// `<venv>/bin/voir [--config voirconf.json] SCRIPT ARGS` (the default).
    #[default]
    Voir,
    /// `<venv>/bin/python SCRIPT ARGS`.
    Python,
    /// `<venv>/bin/torchrun --nproc-per-node N ... SCRIPT ARGS` (data through stdout).
    Torchrun,
    /// `<venv>/bin/accelerate launch ... SCRIPT ARGS` (data through stdout).
    Accelerate,
    /// The script itself is executed (it must be executable).
    Direct,
    /// A serving benchmark: the `milabench` program's own `load` command, the benchmark's
    /// arguments as its flags, starting the benchfile's `server` with the benchmark's
    /// `server.argv`.
    Load,
}

/// The contents of a `benchfile.yaml`, with defaults for what it does not say.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BenchFile {
    /// Script to run, relative to the benchmark folder.
    pub script: String,
    /// Python module to run with `-m` instead of a script.
    pub module: Option<String>,
    /// Launcher.
    pub launcher: Launcher,
    /// Prepare command (relative paths are relative to the benchmark folder); `None` runs
    /// `prepare.py` when it exists.
    pub prepare: Option<Vec<String>>,
    /// Extra environment of every process.
    pub env: IndexMap<String, String>,
    /// Data channel in stdout.
    pub use_stdout: bool,
    /// Processes per node for torchrun/accelerate on a machine without GPUs.
    pub nproc_per_node: Option<u32>,
    /// The server a `load` benchmark starts: a program of the benchmark's environment
    /// (`<venv>/bin/WORD`), a script of its folder (`*.py`, run by the environment's python),
    /// or an absolute path; then its arguments.
    pub server: Option<Vec<String>>,
}

impl Default for BenchFile {
    fn default() -> Self {
        BenchFile {
            script: "main.py".into(),
            module: None,
            launcher: Launcher::Voir,
            prepare: None,
            env: IndexMap::new(),
            use_stdout: false,
            nproc_per_node: None,
            server: None,
        }
    }
}

/// File name of the optional benchmark description.
pub const BENCHFILE_NAME: &str = "benchfile.yaml";

/// How many times this process looked for a `benchfile.yaml` (see [`benchfile_reads`]).
static BENCHFILE_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times this process looked for and read a benchmark folder's `benchfile.yaml`: a
/// resolution keeps each once read.
pub fn benchfile_reads() -> usize {
    BENCHFILE_READS.load(std::sync::atomic::Ordering::Relaxed)
}

impl BenchFile {
    /// Reads `benchfile.yaml` from a benchmark folder; the defaults when there is none.
    pub fn load(folder: &Path) -> Result<BenchFile, ConfigError> {
        BENCHFILE_READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = folder.join(BENCHFILE_NAME);
        if !path.is_file() {
            return Ok(BenchFile::default());
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            what: "benchmark description",
            path: path.display().to_string(),
            source,
        })?;
        BenchFile::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a `benchfile.yaml`; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<BenchFile, ConfigError> {
        if text.trim().is_empty() {
            return Ok(BenchFile::default());
        }
        serde_saphyr::from_str(text).map_err(|e| {
            ConfigError::shape(
                None,
                format!("{file}: {e}"),
                "see docs/benchfile.md for the keys a benchfile.yaml may hold",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(
            BenchFile::parse("", "b.yaml").expect("ok"),
            BenchFile::default()
        );
        let b = BenchFile::parse(
            "module: bench\nlauncher: torchrun\nprepare: [prepare.py, --fast]\nenv: {A: '1'}\nuse_stdout: true\n",
            "b.yaml",
        )
        .expect("ok");
        assert_eq!(b.module.as_deref(), Some("bench"));
        assert_eq!(b.launcher, Launcher::Torchrun);
        assert_eq!(b.prepare.expect("prepare"), ["prepare.py", "--fast"]);
        assert!(b.use_stdout);
    }

    #[test]
    fn typos_are_errors() {
        let err = BenchFile::parse("lanucher: python\n", "b.yaml").expect_err("fails");
        assert!(err.to_string().contains("lanucher"), "{err}");
    }
}
