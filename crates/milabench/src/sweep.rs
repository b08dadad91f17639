//! Sweeps run here: the runs of the system file's `multirun` block or of `--sweep` axes
//! (expanded by [`milabench_config::sweep`]), one [`Session`](crate::Session) each, in order,
//! with a record of the finished runs so that a sweep started again goes on where it stopped.
//!
//! The record is the Python tool's `multirun.cache`: one JSON line per finished run
//! (`{"name": ..., "key": ..., "run": {...}}`). Its file is the option `multirun.cache`
//! (`MILABENCH_MULTIRUN_CACHE`, or `system.options.multirun.cache`), else
//! `<base>/multirun.cache`. A run is finished when it ended, failed or not; an interrupted
//! run is not.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use milabench_config::settings::options::OptionSource;
use milabench_config::settings::{EnvVars, Settings};
use milabench_config::sweep::{Axis, expand_axes, expand_multirun};
pub use milabench_config::sweep::{SWEEP_FILE, SweepRun, load_sweep_file, read_sweep_file};
use serde_json::Value as Json;

use milabench_vocab::ExitCode;

use crate::error::Error;
use crate::resolve::Selection;

/// The record's file when no option names one, under the base.
pub const DEFAULT_RECORD: &str = "multirun.cache";

/// The runs of a sweep and where its record is kept.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The runs, in order.
    pub runs: Vec<SweepRun>,
    /// The record of finished runs.
    pub record: PathBuf,
}

/// The sweep `settings` and `axes` ask for: the `--sweep` axes when there are some (named
/// from `run_name`, else `sweep.{time}`), else the system file's `multirun` block; `None`
/// when neither gives runs.
pub fn sweep_of(
    settings: &Settings,
    env: &EnvVars,
    axes: &[String],
) -> Result<Option<Sweep>, Error> {
    let now = jiff::Timestamp::now().as_second();
    let file = match &settings.system {
        Some(path) => {
            milabench_config::yaml::load_file(path.as_std_path(), "system file")?.to_json()
        }
        None => Json::Null,
    };
    let runs = if axes.is_empty() {
        match (file.get("multirun"), &settings.system) {
            // The sweep of a system file is named by the file.
            (Some(block), Some(path)) => expand_multirun(
                &milabench_config::Node::from_json(block),
                path.file_stem().unwrap_or("multirun"),
                now,
            )?,
            _ => Vec::new(),
        }
    } else {
        let axes = axes
            .iter()
            .map(|text| Axis::parse(text))
            .collect::<Result<Vec<_>, _>>()?;
        let prefix = settings.run_name.as_deref().unwrap_or("sweep.{time}");
        expand_axes(&axes, prefix, now)?
    };
    if runs.is_empty() {
        return Ok(None);
    }
    let options = file.get("system").and_then(|s| s.get("options"));
    let record = OptionSource::new(env, options)
        .string("multirun.cache")?
        .map_or_else(
            || settings.base.join(DEFAULT_RECORD).into_std_path_buf(),
            PathBuf::from,
        );
    Ok(Some(Sweep { runs, record }))
}

/// Checks every run of `runs` before the first one starts (and for `--dry-run`): its name is
/// a run folder's name, and the suite resolves with each of its settings over `selection`,
/// with the typed checks a run applies. Each distinct setting (`key=value`) is resolved once,
/// not each run: a setting's problem does not depend on the others.
fn check_runs(
    settings: &Settings,
    env: &EnvVars,
    selection: &Selection,
    runs: &[SweepRun],
) -> Result<(), Error> {
    let now = jiff::Zoned::now().datetime();
    let mut rng = fastrand::Rng::new();
    let refused = |run: &SweepRun, source: Error| Error::SweepRun {
        run: run.name.clone(),
        source: Box::new(source),
    };
    for run in runs {
        milabench_config::run_name::resolve(Some(&run.name), &now, &mut rng)
            .map_err(|e| refused(run, e.into()))?;
    }
    let mut checked: HashSet<String> = HashSet::new();
    for run in runs {
        let overrides = run.overrides.iter().map(|o| (o.clone(), None));
        let options = run
            .options
            .iter()
            .map(|(key, value)| (format!("{key}={value}"), Some((key, value))));
        for (setting, option) in overrides.chain(options) {
            if !checked.insert(setting.clone()) {
                continue;
            }
            let mut one = selection.clone();
            match option {
                Some((key, value)) => one.options.push((key.clone(), value.clone())),
                None => one.overrides.push(setting),
            }
            crate::resolve::resolve(settings, &one, env)
                .and_then(|resolved| resolved.check_settings())
                .map_err(|e| refused(run, e))?;
        }
    }
    Ok(())
}

/// The finished runs of a sweep, read from its record and added to as runs end.
#[derive(Debug)]
pub struct SweepRecord {
    path: PathBuf,
    keys: HashSet<String>,
    /// Lines the Python tool wrote, without `key`: the part of the name before its first dot.
    python_names: HashSet<String>,
}

impl SweepRecord {
    /// Reads the record at `path` (none yet: empty). Lines that are not JSON are ignored.
    pub fn open(path: &Path) -> Result<SweepRecord, Error> {
        let mut record = SweepRecord {
            path: path.to_path_buf(),
            keys: HashSet::new(),
            python_names: HashSet::new(),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(Error::SweepRecord {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Json>(line) else {
                continue;
            };
            if let Some(key) = entry.get("key").and_then(Json::as_str) {
                record.keys.insert(key.to_string());
            } else if let Some(name) = entry.get("name").and_then(Json::as_str) {
                record.python_names.insert(first_part(name).to_string());
            }
        }
        Ok(record)
    }

    /// The record's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `run` already ran.
    pub fn is_done(&self, run: &SweepRun) -> bool {
        self.keys.contains(&run.key) || self.python_names.contains(first_part(&run.name))
    }

    /// Records that `run` ran (one line appended at once).
    pub fn mark_done(&mut self, run: &SweepRun) -> Result<(), Error> {
        let options: serde_json::Map<String, Json> = run.values.iter().cloned().collect();
        let line = serde_json::json!({"name": run.name, "key": run.key, "run": options});
        let write = || -> std::io::Result<()> {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&self.path)?;
            file.write_all(format!("{line}\n").as_bytes())
        };
        write().map_err(|source| Error::SweepRecord {
            path: self.path.clone(),
            source,
        })?;
        self.keys.insert(run.key.clone());
        Ok(())
    }
}

/// What a front end does for the runs of a sweep that [`Sweep::execute`] goes through.
pub trait SweepDriver {
    /// `run`, the `index`-th of `total` (from 1), is skipped: an earlier invocation finished
    /// it (recorded in `record`).
    fn skipped(&mut self, index: usize, total: usize, run: &SweepRun, record: &Path);

    /// Runs `run`, the `index`-th of `total` (from 1): its exit code, and whether it ran (a run
    /// that could not start, for a bad setting, is not recorded: it runs again next time).
    fn run(&mut self, index: usize, total: usize, run: &SweepRun) -> (ExitCode, bool);
}

/// What [`Sweep::execute`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepOutcome {
    /// The worst exit code of the runs (see [`ExitCode::worst`]).
    pub code: ExitCode,
    /// The run during which the sweep was interrupted (it stopped there, that run not
    /// recorded, so that it runs again next time); `None` when it went to its end.
    pub interrupted_in: Option<String>,
    /// The folder of every run of the sweep, those of earlier invocations too (each found by
    /// its name, else by the sweep file it holds); empty when interrupted.
    pub folders: Vec<PathBuf>,
}

impl Sweep {
    /// What a sweep checks before its first run, or its `--dry-run`, says anything: that it is
    /// not asked to `resume` (a sweep started again skips its finished runs by itself), that
    /// every run can start (see `check_runs`), and its record of finished runs, which it
    /// returns.
    pub fn start(
        &self,
        settings: &Settings,
        env: &EnvVars,
        selection: &Selection,
        resume: bool,
    ) -> Result<SweepRecord, Error> {
        if resume {
            return Err(Error::SweepResume {
                record: self.record.clone(),
            });
        }
        check_runs(settings, env, selection, &self.runs)?;
        SweepRecord::open(&self.record)
    }

    /// Runs, in order, every run of the sweep that `record` does not hold as finished, each
    /// by `driver`, and records those that ran. A run that fails does not stop the sweep; an
    /// interrupted one does. `runs_dir` is where the runs' folders are.
    pub fn execute(
        &self,
        record: &mut SweepRecord,
        runs_dir: &Path,
        driver: &mut dyn SweepDriver,
    ) -> Result<SweepOutcome, Error> {
        let total = self.runs.len();
        let mut worst = ExitCode::Success;
        for (index, run) in self.runs.iter().enumerate() {
            if record.is_done(run) {
                driver.skipped(index + 1, total, run, record.path());
                continue;
            }
            let (code, ran) = driver.run(index + 1, total, run);
            if code == ExitCode::Interrupted {
                return Ok(SweepOutcome {
                    code,
                    interrupted_in: Some(run.name.clone()),
                    folders: Vec::new(),
                });
            }
            if ran {
                record.mark_done(run)?;
            }
            worst = worst.worst(code);
        }
        Ok(SweepOutcome {
            code: worst,
            interrupted_in: None,
            folders: run_folders(runs_dir, &self.runs),
        })
    }
}

/// The part of a run name before its first dot (the Python tool's key of a finished run).
fn first_part(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// The folder of each run of `runs` under `runs_dir`, in the sweep's order, leaving out the
/// runs that have none: the folder of its name, else one whose [`SWEEP_FILE`] says it holds
/// that run of that sweep (a run finished by an earlier invocation, whose name may hold
/// another `{time}`; the latest written when there are several).
pub fn run_folders(runs_dir: &Path, runs: &[SweepRun]) -> Vec<PathBuf> {
    let mut earlier: HashMap<(&str, &str), (std::time::SystemTime, PathBuf)> = HashMap::new();
    let keys: HashMap<(&str, &str), &SweepRun> = runs
        .iter()
        .map(|r| ((r.sweep.as_str(), r.key.as_str()), r))
        .collect();
    for entry in std::fs::read_dir(runs_dir).into_iter().flatten().flatten() {
        let dir = entry.path();
        let Some(found) = read_sweep_file(&dir) else {
            continue;
        };
        let Some(run) = keys.get(&(found.sweep.as_str(), found.key.as_str())) else {
            continue;
        };
        let written = std::fs::metadata(dir.join(SWEEP_FILE))
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        let slot = earlier
            .entry((run.sweep.as_str(), run.key.as_str()))
            .or_insert((written, dir.clone()));
        if written > slot.0 {
            *slot = (written, dir);
        }
    }
    runs.iter()
        .filter_map(|run| {
            let own = runs_dir.join(&run.name);
            if own.is_dir() {
                return Some(own);
            }
            earlier
                .get(&(run.sweep.as_str(), run.key.as_str()))
                .map(|(_, dir)| dir.clone())
        })
        .collect()
}

/// Writes `run` to [`SWEEP_FILE`] in the run folder `dir`.
pub fn write_sweep_file(dir: &Path, run: &SweepRun) -> Result<(), Error> {
    let path = dir.join(SWEEP_FILE);
    let text = serde_json::to_string_pretty(run).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|source| Error::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, key: &str) -> SweepRun {
        SweepRun {
            name: name.into(),
            key: key.into(),
            sweep: "bs".into(),
            options: vec![("sizer.mult".into(), Json::from(2))],
            overrides: Vec::new(),
            values: vec![("sizer.mult".into(), Json::from(2))],
        }
    }

    /// Answers each run with the next code of `codes` (whether it ran: not for bad input),
    /// noting what it was asked.
    struct Scripted {
        codes: Vec<ExitCode>,
        calls: Vec<String>,
    }

    impl SweepDriver for Scripted {
        fn skipped(&mut self, index: usize, total: usize, run: &SweepRun, _record: &Path) {
            self.calls
                .push(format!("skip {index}/{total} {}", run.name));
        }

        fn run(&mut self, index: usize, total: usize, run: &SweepRun) -> (ExitCode, bool) {
            self.calls.push(format!("run {index}/{total} {}", run.name));
            let code = self.codes.remove(0);
            (code, code != ExitCode::BadInput)
        }
    }

    #[test]
    fn a_sweep_skips_recorded_runs_records_those_that_ran_and_stops_when_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = Sweep {
            runs: ["bs1", "bs2", "bs3", "bs4"]
                .map(|name| run(name, name))
                .to_vec(),
            record: dir.path().join("multirun.cache"),
        };
        let mut record = SweepRecord::open(&sweep.record).unwrap();
        record.mark_done(&sweep.runs[0]).unwrap();
        let mut driver = Scripted {
            codes: vec![
                ExitCode::BadInput,
                ExitCode::BenchmarkFailures,
                ExitCode::Interrupted,
            ],
            calls: Vec::new(),
        };
        let outcome = sweep.execute(&mut record, dir.path(), &mut driver).unwrap();
        assert_eq!(
            driver.calls,
            ["skip 1/4 bs1", "run 2/4 bs2", "run 3/4 bs3", "run 4/4 bs4"]
        );
        assert_eq!(outcome.code, ExitCode::Interrupted);
        assert_eq!(outcome.interrupted_in.as_deref(), Some("bs4"));
        // The run that could not start and the interrupted one run again next time.
        let again = SweepRecord::open(&sweep.record).unwrap();
        let done: Vec<bool> = sweep.runs.iter().map(|r| again.is_done(r)).collect();
        assert_eq!(done, [true, false, true, false]);

        let mut driver = Scripted {
            codes: vec![ExitCode::Success, ExitCode::Success],
            calls: Vec::new(),
        };
        let mut record = again;
        let outcome = sweep.execute(&mut record, dir.path(), &mut driver).unwrap();
        assert_eq!(outcome.code, ExitCode::Success);
        assert_eq!(outcome.interrupted_in, None);
        assert_eq!(driver.calls.len(), 4, "{:?}", driver.calls);
    }

    #[test]
    fn the_record_remembers_finished_runs_across_invocations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/multirun.cache");
        let mut record = SweepRecord::open(&path).unwrap();
        let first = run("bs2.100", "bs2.{time}");
        assert!(!record.is_done(&first));
        record.mark_done(&first).unwrap();
        assert!(record.is_done(&first));
        // Another day, the same run has another time.
        let again = SweepRecord::open(&path).unwrap();
        assert!(again.is_done(&run("bs2.200", "bs2.{time}")));
        assert!(!again.is_done(&run("bs4.200", "bs4.{time}")));
        let line = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            line,
            "{\"name\":\"bs2.100\",\"key\":\"bs2.{time}\",\"run\":{\"sizer.mult\":2}}\n"
        );
    }

    #[test]
    fn the_folders_of_a_sweep_include_those_of_earlier_invocations() {
        let dir = tempfile::tempdir().unwrap();
        // Yesterday's runs of `bs` at points 2 and 4, and a run of another sweep.
        let yesterday = [run("bs2.100", "bs2.{time}"), run("bs4.100", "bs4.{time}")];
        for old in &yesterday {
            std::fs::create_dir(dir.path().join(&old.name)).unwrap();
            write_sweep_file(&dir.path().join(&old.name), old).unwrap();
        }
        let mut other = run("bs8.100", "bs8.{time}");
        other.sweep = "other".into();
        std::fs::create_dir(dir.path().join("bs8.100")).unwrap();
        write_sweep_file(&dir.path().join("bs8.100"), &other).unwrap();
        // Today point 4 ran again, point 8 did not run.
        let today = [
            run("bs2.200", "bs2.{time}"),
            run("bs4.200", "bs4.{time}"),
            run("bs8.200", "bs8.{time}"),
        ];
        std::fs::create_dir(dir.path().join("bs4.200")).unwrap();
        assert_eq!(
            run_folders(dir.path(), &today),
            [dir.path().join("bs2.100"), dir.path().join("bs4.200")]
        );
    }

    #[test]
    fn the_python_tools_record_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("multirun.cache");
        std::fs::write(
            &path,
            "{\"name\": \"bs0.5.1700\", \"run\": {\"sizer.mult\": 0.5}}\nnot json\n",
        )
        .unwrap();
        let record = SweepRecord::open(&path).unwrap();
        assert!(record.is_done(&run("bs0.5.1800", "bs0.5.{time}")));
        assert!(!record.is_done(&run("bs2.1800", "bs2.{time}")));
    }
}
