//! Which of a benchmark's runs a report keeps: `report --latest` and `--filter-failures`, the
//! Python tool's selections over the runs of one benchmark found in several run folders.
//!
//! A benchmark's run is its processes recorded in one run folder (its repeats included).

use std::path::Path;

use crate::ingest::RunFile;

/// The selections a report can apply before pooling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSelection {
    /// Per benchmark, keep only its most recent run (the latest start among its processes).
    pub latest: bool,
    /// Per benchmark, leave out its runs where a process failed, unless every run of it
    /// failed: a benchmark never disappears from the report (the Python tool drops it).
    pub filter_failures: bool,
}

impl RunSelection {
    /// Whether the selection keeps everything.
    pub fn keeps_all(&self) -> bool {
        !self.latest && !self.filter_failures
    }

    /// The processes of `runs` that the selection keeps, in their order.
    pub fn apply(&self, runs: Vec<RunFile>) -> Vec<RunFile> {
        if self.keeps_all() {
            return runs;
        }
        let key = |run: &RunFile| (run.name().to_owned(), folder_of(&run.path).to_owned());
        // Per benchmark, its runs: (folder, latest start, all succeeded).
        let mut by_bench: indexmap::IndexMap<String, indexmap::IndexMap<String, (f64, bool)>> =
            indexmap::IndexMap::new();
        for run in &runs {
            let (bench, folder) = key(run);
            let entry = by_bench
                .entry(bench)
                .or_default()
                .entry(folder)
                .or_insert((f64::NEG_INFINITY, true));
            entry.0 = entry.0.max(run.start_time.unwrap_or(f64::NEG_INFINITY));
            entry.1 &= run.success;
        }
        let kept: std::collections::HashSet<(String, String)> = by_bench
            .into_iter()
            .flat_map(|(bench, folders)| {
                let mut candidates: Vec<(String, f64, bool)> = folders
                    .into_iter()
                    .map(|(folder, (start, ok))| (folder, start, ok))
                    .collect();
                if self.filter_failures && candidates.iter().any(|c| c.2) {
                    candidates.retain(|c| c.2);
                }
                if self.latest
                    && let Some(newest) = candidates
                        .iter()
                        .max_by(|a, b| a.1.total_cmp(&b.1))
                        .map(|c| c.0.clone())
                {
                    candidates.retain(|c| c.0 == newest);
                }
                candidates
                    .into_iter()
                    .map(move |(folder, _, _)| (bench.clone(), folder))
            })
            .collect();
        runs.into_iter()
            .filter(|run| kept.contains(&key(run)))
            .collect()
    }
}

/// The run folder of a `.data` file: the folder holding it.
fn folder_of(path: &Path) -> &str {
    path.parent().and_then(Path::to_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn process(bench: &str, folder: &str, start: f64, success: bool) -> RunFile {
        RunFile {
            path: Path::new(folder).join(format!("{bench}.D0.data")),
            config: json!({ "name": bench }),
            meta: None,
            start_time: Some(start),
            train_rates: vec![1.0],
            gpu_devices: Vec::new(),
            gpu_readings: Vec::new(),
            host_peak_memory: None,
            energy_kj: 0.0,
            elapsed: 0.0,
            walltime: Some(1.0),
            ngpu: 1,
            device: None,
            success,
            faults: Vec::new(),
            counter_energy: Vec::new(),
            serving: None,
        }
    }

    fn kept(selection: RunSelection, runs: Vec<RunFile>) -> Vec<String> {
        selection
            .apply(runs)
            .iter()
            .map(|r| format!("{}@{}", r.name(), folder_of(&r.path)))
            .collect()
    }

    #[test]
    fn latest_keeps_each_benchmarks_newest_folder() {
        let runs = vec![
            process("a", "runs/one", 10.0, true),
            process("a", "runs/two", 20.0, true),
            process("b", "runs/one", 30.0, true),
            process("b", "runs/two", 5.0, true),
        ];
        let selection = RunSelection {
            latest: true,
            ..RunSelection::default()
        };
        assert_eq!(kept(selection, runs), ["a@runs/two", "b@runs/one"]);
    }

    #[test]
    fn failed_runs_are_left_out_unless_all_failed() {
        let runs = vec![
            process("a", "runs/one", 10.0, true),
            process("a", "runs/two", 20.0, false),
            process("b", "runs/one", 30.0, false),
        ];
        let selection = RunSelection {
            filter_failures: true,
            ..RunSelection::default()
        };
        assert_eq!(kept(selection, runs), ["a@runs/one", "b@runs/one"]);
    }

    #[test]
    fn both_keep_the_newest_successful_run() {
        let runs = vec![
            process("a", "runs/one", 10.0, true),
            process("a", "runs/two", 20.0, false),
        ];
        let selection = RunSelection {
            latest: true,
            filter_failures: true,
        };
        assert_eq!(kept(selection, runs), ["a@runs/one"]);
    }
}
