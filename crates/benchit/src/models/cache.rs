//! The build cache: a folder marked as benchit's, one sub-folder per build (marked too, holding
//! `state.yaml`, `stats.yaml`, stage logs and `onnx/`), the workers' logs under `logs/`, and a
//! small database of the scripts attempted (for `--resume`) guarded by a file lock.
//!
//! ```text
//! <cache>/
//!   .benchit_cache            marker: this folder is a benchit cache
//!   .cache_database.yaml      scripts attempted and the builds they made
//!   .cache_database.lock
//!   logs/<script>.log         the worker's stderr (and the script's output) per input
//!   <build_name>/
//!     .benchit_build          marker: this folder is a build
//!     state.yaml  stats.yaml  log_<stage>.txt  onnx/<build>-op<N>-{base,opt,opt-f16}.onnx
//! ```

use camino::{Utf8Path, Utf8PathBuf};
use indexmap::IndexMap;
use milabench_exec::{ExitCode, error_line};
use serde::{Deserialize, Serialize};

use super::state::{
    BuildState, BuildStats, STATE_FILE, STATS_FILE, StateError, now, read_yaml,
    read_yaml_or_set_aside, write_yaml,
};

/// The environment variable naming the default cache folder.
pub const CACHE_VAR: &str = "BENCHIT_CACHE_DIR";
/// The marker file of a cache folder.
pub const CACHE_MARKER: &str = ".benchit_cache";
/// The marker file of a build folder.
pub const BUILD_MARKER: &str = ".benchit_build";
/// The database of attempted scripts.
const DATABASE: &str = ".cache_database.yaml";
/// The lock guarding the database.
const DATABASE_LOCK: &str = ".cache_database.lock";
/// File kinds a lean cache keeps.
const KEPT_EXTENSIONS: [&str; 5] = ["txt", "yaml", "json", "log", "out"];

/// Why the cache cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A file operation failed.
    #[error(
        "cannot read or write {path} of the benchit cache; check that the folder is writable and the disk is not full"
    )]
    Io {
        /// The file or folder.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The folder is not a benchit cache.
    #[error(
        "{dir} is not a benchit cache (no {CACHE_MARKER} marker); pass the folder given to --cache-dir (or {CACHE_VAR}) when the builds were made"
    )]
    NotACache {
        /// The folder.
        dir: Utf8PathBuf,
    },
    /// The folder holds other files: benchit will not mix its builds in.
    #[error(
        "{dir} is not empty and is not a benchit cache (no {CACHE_MARKER} marker); choose an empty or new folder for --cache-dir"
    )]
    Foreign {
        /// The folder.
        dir: Utf8PathBuf,
    },
    /// No build of that name.
    #[error("there is no build named `{name}` in {dir}; `benchit cache list` shows the builds")]
    UnknownBuild {
        /// The name asked for.
        name: String,
        /// The cache.
        dir: Utf8PathBuf,
    },
    /// The home folder is unknown.
    #[error("HOME is not set; pass --cache-dir or set {CACHE_VAR}")]
    NoHome,
    /// A file of the cache is damaged.
    #[error(transparent)]
    State(#[from] StateError),
}

impl CacheError {
    /// The exit code a command that ends on this error deserves: a folder or build name the
    /// user gave that is not a cache or not in it is bad input; a file that cannot be read or
    /// written, or is damaged, is an environment failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CacheError::NotACache { .. }
            | CacheError::Foreign { .. }
            | CacheError::UnknownBuild { .. }
            | CacheError::NoHome => ExitCode::BadInput,
            CacheError::Io { .. } | CacheError::State(_) => ExitCode::Internal,
        }
    }
}

fn io(path: &Utf8Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `BENCHIT_CACHE_DIR`, else `~/.cache/benchit`.
pub fn default_cache_dir() -> Result<Utf8PathBuf, CacheError> {
    match std::env::var(CACHE_VAR) {
        Ok(dir) if !dir.is_empty() => Ok(dir.into()),
        _ => std::env::var("HOME")
            .map(|home| Utf8PathBuf::from(home).join(".cache/benchit"))
            .map_err(|_| CacheError::NoHome),
    }
}

/// A build folder as found in the cache.
#[derive(Debug)]
pub struct BuildEntry {
    /// The build name.
    pub name: String,
    /// Its folder.
    pub dir: Utf8PathBuf,
    /// Its state (`Ok(None)`: no state file; `Err`: why it cannot be read).
    pub state: Result<Option<BuildState>, String>,
    /// Its statistics.
    pub stats: Result<Option<BuildStats>, String>,
    /// A problem with the folder itself (a missing marker).
    pub damage: Option<String>,
}

impl BuildEntry {
    fn read(dir: Utf8PathBuf) -> BuildEntry {
        let name = dir.file_name().unwrap_or_default().to_string();
        let damage = (!dir.join(BUILD_MARKER).is_file()).then(|| {
            format!("no {BUILD_MARKER} marker: it was not made by benchit, or only in part")
        });
        BuildEntry {
            name,
            state: read_yaml(&dir.join(STATE_FILE)).map_err(|e| error_line(&e)),
            stats: read_yaml(&dir.join(STATS_FILE)).map_err(|e| error_line(&e)),
            dir,
            damage,
        }
    }

    /// Every problem of this build, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self.damage.iter().cloned().collect();
        match &self.state {
            Err(e) => problems.push(e.clone()),
            Ok(None) => problems.push(format!("no {STATE_FILE}")),
            Ok(Some(_)) => {}
        }
        if let Err(e) = &self.stats {
            problems.push(e.clone());
        }
        problems
    }
}

/// What the database remembers of a script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptRecord {
    /// When it was last attempted (RFC 3339).
    pub attempted: String,
    /// The builds it made.
    pub builds: Vec<String>,
    /// Its last attempt was interrupted: `--resume` runs it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// The database: script path -> record.
type Database = IndexMap<String, ScriptRecord>;

/// An open build cache.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: Utf8PathBuf,
}

impl Cache {
    /// Opens the cache in `dir`, creating it (and its marker) when needed. An existing folder
    /// with other files and no marker is refused.
    pub fn create(dir: &Utf8Path) -> Result<Cache, CacheError> {
        if dir.join(CACHE_MARKER).is_file() {
            return Ok(Cache {
                dir: dir.to_path_buf(),
            });
        }
        if dir.is_dir() && fs_err::read_dir(dir).map_err(io(dir))?.next().is_some() {
            return Err(CacheError::Foreign {
                dir: dir.to_path_buf(),
            });
        }
        fs_err::create_dir_all(dir).map_err(io(dir))?;
        let marker = dir.join(CACHE_MARKER);
        fs_err::write(&marker, "benchit build cache\n").map_err(io(&marker))?;
        Ok(Cache {
            dir: dir.to_path_buf(),
        })
    }

    /// Opens an existing cache.
    pub fn open(dir: &Utf8Path) -> Result<Cache, CacheError> {
        if dir.join(CACHE_MARKER).is_file() {
            Ok(Cache {
                dir: dir.to_path_buf(),
            })
        } else {
            Err(CacheError::NotACache {
                dir: dir.to_path_buf(),
            })
        }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Utf8Path {
        &self.dir
    }

    /// The folder of build `name`.
    pub fn build_dir(&self, name: &str) -> Utf8PathBuf {
        self.dir.join(name)
    }

    /// The worker log of the input with file stem `stem`.
    pub fn log_path(&self, stem: &str) -> Utf8PathBuf {
        self.dir.join("logs").join(format!("{stem}.log"))
    }

    /// Makes the folder of build `name` (emptied first when `fresh`) and its marker.
    pub fn prepare_build(&self, name: &str, fresh: bool) -> Result<Utf8PathBuf, CacheError> {
        let dir = self.build_dir(name);
        if fresh && dir.exists() {
            fs_err::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        fs_err::create_dir_all(&dir).map_err(io(&dir))?;
        let marker = dir.join(BUILD_MARKER);
        if !marker.is_file() {
            fs_err::write(&marker, "benchit build\n").map_err(io(&marker))?;
        }
        Ok(dir)
    }

    /// Every build folder, sorted by name: folders with a build marker or a state file (the
    /// latter without a marker are listed as damaged).
    pub fn builds(&self) -> Result<Vec<BuildEntry>, CacheError> {
        let mut dirs = Vec::new();
        for entry in fs_err::read_dir(&self.dir).map_err(io(&self.dir))? {
            let entry = entry.map_err(io(&self.dir))?;
            let Ok(path) = Utf8PathBuf::from_path_buf(entry.path()) else {
                continue;
            };
            if path.is_dir()
                && (path.join(BUILD_MARKER).is_file() || path.join(STATE_FILE).is_file())
            {
                dirs.push(path);
            }
        }
        dirs.sort();
        Ok(dirs.into_iter().map(BuildEntry::read).collect())
    }

    /// The build `name`.
    pub fn build(&self, name: &str) -> Result<BuildEntry, CacheError> {
        let dir = self.build_dir(name);
        let valid_name = !name.is_empty() && !name.contains('/') && !name.starts_with('.');
        if valid_name && (dir.join(BUILD_MARKER).is_file() || dir.join(STATE_FILE).is_file()) {
            Ok(BuildEntry::read(dir))
        } else {
            Err(CacheError::UnknownBuild {
                name: name.to_string(),
                dir: self.dir.clone(),
            })
        }
    }

    /// Deletes build `name` and forgets it in the database.
    pub fn delete(&self, name: &str) -> Result<(), CacheError> {
        let entry = self.build(name)?;
        fs_err::remove_dir_all(&entry.dir).map_err(io(&entry.dir))?;
        self.update_database(|db| {
            for record in db.values_mut() {
                record.builds.retain(|b| b != name);
            }
            db.retain(|_, record| !record.builds.is_empty());
        })
    }

    /// Deletes every build and the database (the logs and the marker stay).
    pub fn delete_all(&self) -> Result<Vec<String>, CacheError> {
        let mut names = Vec::new();
        for entry in self.builds()? {
            fs_err::remove_dir_all(&entry.dir).map_err(io(&entry.dir))?;
            names.push(entry.name);
        }
        self.update_database(Database::clear)?;
        Ok(names)
    }

    /// Deletes the artifacts of build `name` (ONNX files and the like), keeping text, YAML and
    /// JSON files; returns the number of files removed.
    pub fn clean(&self, name: &str) -> Result<usize, CacheError> {
        let entry = self.build(name)?;
        clean_folder(&entry.dir)
    }

    /// Whether the script at `script` was attempted (`--resume`).
    pub fn attempted(&self, script: &Utf8Path) -> Result<bool, CacheError> {
        let key = script.as_str();
        let mut found = false;
        self.with_database(|db| {
            found = db.get(key).is_some_and(|record| !record.interrupted);
            false
        })?;
        Ok(found)
    }

    /// Forgets that `script` was attempted (it was interrupted: `--resume` must run it again);
    /// the builds it made stay recorded.
    pub fn forget_attempt(&self, script: &Utf8Path) -> Result<(), CacheError> {
        self.update_database(|db| {
            if let Some(record) = db.get_mut(script.as_str()) {
                record.interrupted = true;
            }
        })
    }

    /// Records that `script` is being attempted now (before it runs, so that `--resume` skips
    /// a script that crashed benchit itself).
    pub fn record_attempt(&self, script: &Utf8Path) -> Result<(), CacheError> {
        self.update_database(|db| {
            let record = db.entry(script.to_string()).or_default();
            record.attempted = now();
            record.interrupted = false;
        })
    }

    /// Records that `script` made build `build`.
    pub fn record_build(&self, script: &Utf8Path, build: &str) -> Result<(), CacheError> {
        self.update_database(|db| {
            let record = db.entry(script.to_string()).or_default();
            if !record.builds.iter().any(|b| b == build) {
                record.builds.push(build.to_string());
            }
        })
    }

    fn update_database(&self, change: impl FnOnce(&mut Database)) -> Result<(), CacheError> {
        self.with_database(|db| {
            change(db);
            true
        })
        .map(drop)
    }

    /// Keeps an unreadable database aside (it is `--resume`'s memory: never written over
    /// silently) and says so; the next use starts a new one.
    pub fn set_aside_unreadable_database(&self) -> Result<Option<String>, CacheError> {
        self.with_database(|_| false)
    }

    /// Runs `f` on the database under the lock; writes it back when `f` returns true. An
    /// unreadable database is kept aside first (the warning is returned).
    fn with_database(
        &self,
        f: impl FnOnce(&mut Database) -> bool,
    ) -> Result<Option<String>, CacheError> {
        let lock_path = self.dir.join(DATABASE_LOCK);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        lock.lock().map_err(io(&lock_path))?;
        let path = self.dir.join(DATABASE);
        let (mut db, unreadable): (Database, _) = read_yaml_or_set_aside(&path);
        let result = if f(&mut db) {
            write_yaml(&path, &db).map_err(CacheError::from)
        } else {
            Ok(())
        };
        let _ = lock.unlock();
        result.map(|()| unreadable)
    }
}

/// Removes every file of `dir` (recursively) whose extension is not kept by a lean cache, then
/// empty folders; returns the number of files removed.
pub fn clean_folder(dir: &Utf8Path) -> Result<usize, CacheError> {
    let mut removed = 0;
    for entry in fs_err::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let Ok(path) = Utf8PathBuf::from_path_buf(entry.path()) else {
            continue;
        };
        if path.is_dir() {
            removed += clean_folder(&path)?;
            if fs_err::read_dir(&path).map_err(io(&path))?.next().is_none() {
                fs_err::remove_dir(&path).map_err(io(&path))?;
            }
        } else {
            let name = path.file_name().unwrap_or_default();
            let kept = name.starts_with('.')
                || path
                    .extension()
                    .is_some_and(|ext| KEPT_EXTENSIONS.contains(&ext));
            if !kept {
                fs_err::remove_file(&path).map_err(io(&path))?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> (tempfile::TempDir, Utf8PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join("cache");
        (dir, path)
    }

    #[test]
    fn a_cache_is_marked_and_foreign_folders_refused() {
        let (_keep, dir) = scratch();
        assert!(matches!(
            Cache::open(&dir),
            Err(CacheError::NotACache { .. })
        ));
        let cache = Cache::create(&dir).unwrap();
        assert!(dir.join(CACHE_MARKER).is_file());
        Cache::open(&dir).unwrap();
        assert_eq!(cache.log_path("mlp"), dir.join("logs/mlp.log"));
        let other = dir.parent().unwrap().join("other");
        fs_err::create_dir_all(&other).unwrap();
        fs_err::write(other.join("notes.txt"), "mine").unwrap();
        let err = Cache::create(&other).unwrap_err().to_string();
        assert!(
            err.contains("is not empty and is not a benchit cache"),
            "{err}"
        );
    }

    #[test]
    fn builds_are_listed_deleted_and_cleaned() {
        let (_keep, dir) = scratch();
        let cache = Cache::create(&dir).unwrap();
        let build = cache.prepare_build("mlp_24adc42f", false).unwrap();
        fs_err::create_dir_all(build.join("onnx")).unwrap();
        fs_err::write(build.join("onnx/m-op17-base.onnx"), "x").unwrap();
        fs_err::write(build.join("log_export.txt"), "ok").unwrap();
        fs_err::write(build.join(STATE_FILE), "not: [valid").unwrap();
        // A folder with a state file but no marker is listed as damaged.
        let broken = dir.join("mlp_deadbeef");
        fs_err::create_dir_all(&broken).unwrap();
        fs_err::write(broken.join(STATE_FILE), "{}").unwrap();
        fs_err::create_dir_all(dir.join("logs")).unwrap();
        let builds = cache.builds().unwrap();
        let names: Vec<_> = builds.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["mlp_24adc42f", "mlp_deadbeef"]);
        assert!(builds[0].problems()[0].contains("state.yaml is damaged"));
        assert!(builds[1].problems()[0].contains("no .benchit_build marker"));

        assert_eq!(cache.clean("mlp_24adc42f").unwrap(), 1);
        assert!(!build.join("onnx").exists());
        assert!(build.join("log_export.txt").is_file());
        assert!(build.join(BUILD_MARKER).is_file());

        cache
            .record_build(Utf8Path::new("/s/mlp.py"), "mlp_24adc42f")
            .unwrap();
        assert!(cache.attempted(Utf8Path::new("/s/mlp.py")).unwrap());
        cache.delete("mlp_24adc42f").unwrap();
        assert!(!build.exists());
        assert!(!cache.attempted(Utf8Path::new("/s/mlp.py")).unwrap());
        assert!(matches!(
            cache.delete("mlp_24adc42f"),
            Err(CacheError::UnknownBuild { .. })
        ));
        assert!(matches!(
            cache.build("../x"),
            Err(CacheError::UnknownBuild { .. })
        ));
        assert_eq!(cache.delete_all().unwrap(), ["mlp_deadbeef"]);
        assert!(cache.builds().unwrap().is_empty());
    }

    #[test]
    fn attempts_are_remembered_before_any_build() {
        let (_keep, dir) = scratch();
        let cache = Cache::create(&dir).unwrap();
        let script = Utf8Path::new("/s/crashes.py");
        assert!(!cache.attempted(script).unwrap());
        cache.record_attempt(script).unwrap();
        cache.record_build(script, "crashes_deadbeef").unwrap();
        assert!(Cache::open(&dir).unwrap().attempted(script).unwrap());
        cache.forget_attempt(script).unwrap();
        assert!(!Cache::open(&dir).unwrap().attempted(script).unwrap());
        let mut builds = Vec::new();
        cache
            .with_database(|db| {
                builds = db[script.as_str()].builds.clone();
                false
            })
            .unwrap();
        assert_eq!(builds, ["crashes_deadbeef"]);
    }

    /// Issue 38, item 23: an unreadable cache database (and `stats.yaml`) became an empty
    /// default and was written over, what it recorded lost without a word. It is kept aside
    /// as `<file>.unreadable`, with a warning, and a new one is started.
    #[test]
    fn an_unreadable_file_is_kept_aside_with_a_warning() {
        let (_keep, dir) = scratch();
        let cache = Cache::create(&dir).unwrap();
        let garbage = "{{{ not: yaml: [";
        fs_err::write(dir.join(DATABASE), garbage).unwrap();
        let warning = cache.set_aside_unreadable_database().unwrap();
        let aside = dir.join(format!("{DATABASE}.unreadable"));
        let warning = warning.expect("a warning");
        assert!(
            warning.contains(&format!("kept aside as {aside}, and a new one started")),
            "{warning}"
        );
        assert_eq!(fs_err::read_to_string(&aside).unwrap(), garbage);
        assert_eq!(cache.set_aside_unreadable_database().unwrap(), None);
        cache.record_attempt(Utf8Path::new("/s/a.py")).unwrap();
        assert!(cache.attempted(Utf8Path::new("/s/a.py")).unwrap());
        assert_eq!(fs_err::read_to_string(&aside).unwrap(), garbage, "kept");

        let stats = dir.join(STATS_FILE);
        fs_err::write(&stats, garbage).unwrap();
        let (read, warning): (BuildStats, _) = read_yaml_or_set_aside(&stats);
        assert_eq!(read.build_name, "");
        assert!(warning.expect("a warning").contains("kept aside"));
        assert_eq!(
            fs_err::read_to_string(dir.join(format!("{STATS_FILE}.unreadable"))).unwrap(),
            garbage
        );
    }
}
