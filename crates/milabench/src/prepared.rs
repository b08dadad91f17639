//! Which benchmarks' data is prepared: a successful prepare step leaves a small record in the
//! benchmark's data folder, `<data>/.milabench-prepared/<bench>.json`, holding the command it
//! ran and when. `milabench check` reads it back: a record whose command equals the one the
//! suite would run now means the data is there; none, or another command (other sizes, another
//! fidelity), means `run` prepares again. The Python milabench keeps no such record; its run
//! folders are unaffected.

use std::path::PathBuf;

use milabench_config::ResolvedBench;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Folder of the records, inside the benchmark's data folder.
const RECORDS: &str = ".milabench-prepared";

/// What a finished prepare step recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PreparedRecord {
    /// The command the prepare process ran.
    pub(crate) argv: Vec<String>,
    /// When it finished (RFC 3339).
    pub(crate) finished: String,
}

/// Where `bench`'s record lives; `None` when it has no data folder.
fn record_path(bench: &ResolvedBench) -> Option<PathBuf> {
    let data = &bench.folders.data;
    (!data.as_str().is_empty()).then(|| {
        data.join(RECORDS)
            .join(format!("{}.json", bench.name))
            .into_std_path_buf()
    })
}

/// Records that `bench`'s prepare step ran `argv` to success just now.
pub(crate) fn record(bench: &ResolvedBench, argv: &[String]) -> Result<(), Error> {
    let Some(path) = record_path(bench) else {
        return Ok(());
    };
    let record = PreparedRecord {
        argv: argv.to_vec(),
        finished: jiff::Timestamp::now().to_string(),
    };
    let write = |path: &PathBuf| -> std::io::Result<()> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    };
    write(&path).map_err(|source| Error::Write { path, source })
}

/// `bench`'s record, when one exists and reads.
pub(crate) fn recorded(bench: &ResolvedBench) -> Option<PreparedRecord> {
    let text = std::fs::read_to_string(record_path(bench)?).ok()?;
    serde_json::from_str(&text).ok()
}
