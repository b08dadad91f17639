//! Gathering the run folders under one folder into a single run folder (`report
//! --consolidate`): the Python tool's way of reporting a CI run whose benchmarks ran as separate
//! jobs, each writing its own run folder.
//!
//! Unlike the Python tool, nothing is moved or deleted: the `.data` files are hard-linked into
//! the new folder (copied when the file systems differ), so the runs stay as they were.

use std::path::{Path, PathBuf};

use crate::error::MetricsError;

/// What [`consolidate_runs`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consolidated {
    /// The gathered run folder.
    pub folder: PathBuf,
    /// The run folders gathered, oldest first.
    pub sources: Vec<PathBuf>,
    /// `.data` files linked or copied in.
    pub files: usize,
    /// Files left out because a newer run had one of the same name.
    pub shadowed: Vec<PathBuf>,
}

/// Gathers the `.data` files of every run folder directly under `parent` (`install*` and
/// `prepare*` folders, and the target itself, left out) into `parent/<name>`, `name` defaulting
/// to the newest run folder's name with `.consolidated` added. When two runs have a file of
/// the same name, the newest run's is kept. A target that exists is refused unless it is a
/// folder this function made before (it is then made again).
pub fn consolidate_runs(parent: &Path, name: Option<&str>) -> Result<Consolidated, MetricsError> {
    let read = |error| MetricsError::Read {
        path: parent.to_path_buf(),
        error,
    };
    if !parent.is_dir() {
        return Err(MetricsError::MissingFolder {
            path: parent.to_path_buf(),
        });
    }
    let mut runs: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(parent).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let skip = file_name.starts_with("install")
            || file_name.starts_with("prepare")
            || path.join(MARKER).exists()
            || Some(file_name.as_ref()) == name;
        if skip || !entry.file_type().map_err(read)?.is_dir() {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).map_err(read)?;
        runs.push((modified, path));
    }
    runs.sort();
    let Some((_, newest)) = runs.last() else {
        return Err(MetricsError::NoRunFolders {
            path: parent.to_path_buf(),
        });
    };
    let target_name = match name {
        Some(name) => name.to_owned(),
        None => format!(
            "{}.consolidated",
            newest.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    let target = parent.join(&target_name);
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |error| MetricsError::Write { path, error }
    };
    if target.exists() {
        if !target.join(MARKER).exists() {
            return Err(MetricsError::ConsolidateTarget { path: target });
        }
        std::fs::remove_dir_all(&target).map_err(write(&target))?;
    }
    std::fs::create_dir_all(&target).map_err(write(&target))?;
    std::fs::write(target.join(MARKER), b"").map_err(write(&target))?;
    let mut made = Consolidated {
        folder: target.clone(),
        sources: runs.iter().map(|(_, p)| p.clone()).collect(),
        files: 0,
        shadowed: Vec::new(),
    };
    // Newest first, so the newest run's file of a name wins.
    for (_, run) in runs.iter().rev() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(run)
            .map_err(|error| MetricsError::Read {
                path: run.clone(),
                error,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "data") && p.is_file())
            .collect();
        names.sort();
        for source in names {
            let dest = target.join(source.file_name().unwrap_or_default());
            if dest.exists() {
                made.shadowed.push(source);
                continue;
            }
            if std::fs::hard_link(&source, &dest).is_err() {
                std::fs::copy(&source, &dest).map_err(write(&dest))?;
            }
            made.files += 1;
        }
    }
    Ok(made)
}

/// The file that marks a folder made by [`consolidate_runs`] (so a second call may replace
/// it, and it is never gathered into another).
const MARKER: &str = ".consolidated";

#[cfg(test)]
mod tests {
    use super::*;

    fn run(parent: &Path, name: &str, files: &[(&str, &str)]) {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        // Distinct modification times, in call order.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    #[test]
    fn gathers_every_run_leaving_them_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path();
        run(parent, "install.x", &[("a.data", "install")]);
        run(
            parent,
            "job1",
            &[("a.D0.data", "a-old"), ("b.D0.data", "b")],
        );
        run(parent, "job2", &[("a.D0.data", "a-new"), ("notes.txt", "")]);
        let made = consolidate_runs(parent, Some("sha")).unwrap();
        assert_eq!(made.folder, parent.join("sha"));
        assert_eq!(made.files, 2);
        assert_eq!(made.shadowed, [parent.join("job1/a.D0.data")]);
        let read = |f: &str| std::fs::read_to_string(parent.join("sha").join(f)).unwrap();
        assert_eq!(read("a.D0.data"), "a-new");
        assert_eq!(read("b.D0.data"), "b");
        assert!(parent.join("job1/a.D0.data").exists(), "sources stay");
        // Again: the folder it made is made anew, and not gathered into itself.
        let again = consolidate_runs(parent, Some("sha")).unwrap();
        assert_eq!(again.files, 2);
        assert_eq!(again.sources.len(), 2);
    }

    #[test]
    fn a_folder_it_did_not_make_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        run(tmp.path(), "job1", &[("a.D0.data", "a")]);
        std::fs::create_dir(tmp.path().join("mine")).unwrap();
        let err = consolidate_runs(tmp.path(), Some("mine")).unwrap_err();
        assert!(err.to_string().contains("mine"), "{err}");
    }
}
