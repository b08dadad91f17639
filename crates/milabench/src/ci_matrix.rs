//! The CI matrix of a suite, as the Python tool's `tools ci` prints it for a GitHub Actions
//! matrix: the runnable benchmarks grouped by their benchmark folder, one CI job per folder.

use milabench_config::ResolvedBench;
use serde::Serialize;

/// One job of the matrix: the benchmarks of one folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CiGroup {
    /// The folder's name (`torchvision`).
    pub name: String,
    /// Its benchmarks, comma-separated and sorted, for `--select`.
    pub select: String,
    /// Whether one of them needs more than one machine.
    pub multinode: bool,
}

/// The runnable benchmarks of `benches` without any of `exclude_tags`, grouped by benchmark
/// folder; groups sorted by name.
pub fn ci_groups(benches: &[ResolvedBench], exclude_tags: &[String]) -> Vec<CiGroup> {
    let mut by_folder: std::collections::BTreeMap<String, (Vec<&str>, bool)> =
        std::collections::BTreeMap::new();
    for bench in benches {
        let Some(definition) = bench.definition.as_ref().filter(|_| bench.enabled) else {
            continue;
        };
        if bench.tags.iter().any(|tag| exclude_tags.contains(tag)) {
            continue;
        }
        let folder = definition.file_name().unwrap_or(definition.as_str());
        let group = by_folder.entry(folder.to_owned()).or_default();
        group.0.push(&bench.name);
        group.1 |= bench.num_machines > 1;
    }
    by_folder
        .into_iter()
        .map(|(name, (mut benches, multinode))| {
            benches.sort_unstable();
            CiGroup {
                name,
                select: benches.join(","),
                multinode,
            }
        })
        .collect()
}
