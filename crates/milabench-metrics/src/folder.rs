//! Finding the `.data` files of run folders.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::error::MetricsError;
use crate::fields::Fields;
use crate::reader::RecordReader;
use crate::tag::Tag;

/// One `<tag>.data` file of a run folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Where it is.
    pub path: PathBuf,
    /// The process tag, from the file name.
    pub tag: Tag,
}

impl DataFile {
    /// A data file at `path`; the tag is the file name without `.data`.
    pub fn new(path: PathBuf) -> DataFile {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tag = Tag::new(name.strip_suffix(".data").unwrap_or(&name));
        DataFile { path, tag }
    }

    /// Streams the file's records.
    pub fn records(&self) -> Result<RecordReader<BufReader<File>>, MetricsError> {
        self.records_with(Fields::ALL)
    }

    /// Streams the file's records, holding `fields` only (see [`RecordReader::with_fields`]).
    pub fn records_with(
        &self,
        fields: Fields,
    ) -> Result<RecordReader<BufReader<File>>, MetricsError> {
        let file = File::open(&self.path).map_err(|error| MetricsError::Read {
            path: self.path.clone(),
            error,
        })?;
        let input = BufReader::with_capacity(64 * 1024, file);
        Ok(RecordReader::with_fields(input, fields))
    }
}

/// Why a path under a run folder was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A link to a folder inside a run folder: not followed (as the Python tool's walk), so a
    /// `latest` link or a link to `.` counts nothing twice and cannot loop.
    FolderLink,
    /// A `.data` link whose target does not exist.
    DanglingLink,
    /// A `.data` entry that is not a regular file (a FIFO, a socket, a device): reading it
    /// could block forever.
    NotRegular,
    /// The same file (same device and inode) was already found under another path.
    Duplicate {
        /// The path it was first found under.
        first: PathBuf,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::FolderLink => f.write_str(
                "a link to a folder, not followed (give its target with --runs to read it)",
            ),
            SkipReason::DanglingLink => {
                f.write_str("a link to nothing, skipped; remove it or restore its target")
            }
            SkipReason::NotRegular => f.write_str(
                "not a regular file (a FIFO, socket or device), skipped; only event files written by a run are read",
            ),
            SkipReason::Duplicate { first } => write!(
                f,
                "the same file as {}, counted once",
                first.display()
            ),
        }
    }
}

/// A path that was found but not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPath {
    /// The path as found.
    pub path: PathBuf,
    /// Why it was not read.
    pub reason: SkipReason,
}

/// What [`discover_data_files`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The `.data` files to read, each file once, in walk order.
    pub files: Vec<DataFile>,
    /// What was left out, in walk order.
    pub skipped: Vec<SkippedPath>,
}

/// Every `.data` file under the given run folders (or files), recursively.
///
/// Sub-folders whose name starts with `install` or `prepare` hold the logs of those commands
/// and are skipped, as the Python tool does. Within a folder, entries are visited in name order
/// (the Python tool uses the file system's order, which is not reproducible). Links to folders
/// inside a run folder are not followed (as the Python tool's walk); links to files are. Each
/// file is read once, however many paths lead to it. Dangling links and `.data` entries that are
/// not regular files are left out and listed in [`Discovery::skipped`]. A path given in `roots`
/// that does not exist is an error; a folder without `.data` files simply contributes nothing.
pub fn discover_data_files<P: AsRef<Path>>(roots: &[P]) -> Result<Discovery, MetricsError> {
    let mut walk = Walk::default();
    for root in roots {
        let root = root.as_ref();
        let meta = std::fs::metadata(root).map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                MetricsError::MissingFolder {
                    path: root.to_owned(),
                }
            } else {
                MetricsError::Read {
                    path: root.to_owned(),
                    error,
                }
            }
        })?;
        if meta.is_dir() {
            walk.folder(root)?;
        } else {
            walk.file(root.to_owned(), &meta);
        }
    }
    Ok(walk.found)
}

/// The state of one discovery: what was found, and the identity of every file kept.
#[derive(Default)]
struct Walk {
    found: Discovery,
    seen: HashMap<(u64, u64), PathBuf>,
}

impl Walk {
    /// Keeps `path` (whose target's metadata is `meta`) unless it is not a regular file or was
    /// already kept under another path.
    fn file(&mut self, path: PathBuf, meta: &std::fs::Metadata) {
        use std::os::unix::fs::MetadataExt as _;
        let reason = if !meta.is_file() {
            Some(SkipReason::NotRegular)
        } else {
            match self.seen.entry((meta.dev(), meta.ino())) {
                Entry::Occupied(first) => Some(SkipReason::Duplicate {
                    first: first.get().clone(),
                }),
                Entry::Vacant(slot) => {
                    slot.insert(path.clone());
                    None
                }
            }
        };
        match reason {
            Some(reason) => self.found.skipped.push(SkippedPath { path, reason }),
            None => self.found.files.push(DataFile::new(path)),
        }
    }

    fn folder(&mut self, dir: &Path) -> Result<(), MetricsError> {
        let read_err = |error| MetricsError::Read {
            path: dir.to_owned(),
            error,
        };
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            let kind = entry.file_type().map_err(read_err)?;
            entries.push((entry.file_name(), entry.path(), kind));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut folders = Vec::new();
        for (name, path, kind) in entries {
            let name = name.to_string_lossy();
            let logs = name.starts_with("install") || name.starts_with("prepare");
            if kind.is_dir() {
                if !logs {
                    folders.push(path);
                }
                continue;
            }
            // The target of a link (or the entry itself); `None` for a dangling link.
            let target = if kind.is_symlink() {
                std::fs::metadata(&path).ok()
            } else {
                Some(std::fs::symlink_metadata(&path).map_err(read_err)?)
            };
            match target {
                Some(meta) if meta.is_dir() => {
                    if !logs {
                        self.found.skipped.push(SkippedPath {
                            path,
                            reason: SkipReason::FolderLink,
                        });
                    }
                }
                _ if !name.ends_with(".data") => {}
                Some(meta) => self.file(path, &meta),
                None => self.found.skipped.push(SkippedPath {
                    path,
                    reason: SkipReason::DanglingLink,
                }),
            }
        }
        for folder in folders {
            self.folder(&folder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_nested_folders_and_skips_install_and_prepare() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for p in [
            "run1/b.D1.data",
            "run1/a.D0.data",
            "run1/notes.txt",
            "run1/install.x/i.data",
            "run1/prepare.y/p.data",
            "run1/nested/c.0.R1.data",
        ] {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let found = discover_data_files(&[root.join("run1")]).unwrap();
        let tags: Vec<&str> = found.files.iter().map(|f| f.tag.as_str()).collect();
        assert_eq!(tags, ["a.D0", "b.D1", "c.0.R1"]);
        assert!(found.skipped.is_empty());
    }

    fn skipped(found: &Discovery, root: &Path) -> Vec<(String, SkipReason)> {
        found
            .skipped
            .iter()
            .map(|s| {
                let path = s.path.strip_prefix(root).unwrap().display().to_string();
                let reason = match &s.reason {
                    SkipReason::Duplicate { first } => SkipReason::Duplicate {
                        first: first.strip_prefix(root).unwrap().to_owned(),
                    },
                    other => other.clone(),
                };
                (path, reason)
            })
            .collect()
    }

    #[test]
    fn links_to_folders_are_not_followed_and_every_file_is_read_once() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("runs/r1")).unwrap();
        std::fs::write(root.join("runs/r1/a.D0.data"), "").unwrap();
        // A `latest` link beside the run, a loop inside it, a second name for a file, and a
        // link to nothing.
        symlink("r1", root.join("runs/latest")).unwrap();
        symlink(".", root.join("runs/r1/self")).unwrap();
        symlink("..", root.join("runs/r1/up")).unwrap();
        symlink("a.D0.data", root.join("runs/r1/b.D1.data")).unwrap();
        symlink("gone.data", root.join("runs/r1/c.D2.data")).unwrap();
        let found = discover_data_files(&[root.join("runs"), root.join("runs/r1")]).unwrap();
        let paths: Vec<_> = found
            .files
            .iter()
            .map(|f| f.path.strip_prefix(root).unwrap().to_owned())
            .collect();
        assert_eq!(paths, [Path::new("runs/r1/a.D0.data")]);
        assert_eq!(
            skipped(&found, root),
            [
                ("runs/latest".to_owned(), SkipReason::FolderLink),
                (
                    "runs/r1/b.D1.data".to_owned(),
                    SkipReason::Duplicate {
                        first: "runs/r1/a.D0.data".into()
                    }
                ),
                ("runs/r1/c.D2.data".to_owned(), SkipReason::DanglingLink),
                ("runs/r1/self".to_owned(), SkipReason::FolderLink),
                ("runs/r1/up".to_owned(), SkipReason::FolderLink),
                (
                    "runs/r1/a.D0.data".to_owned(),
                    SkipReason::Duplicate {
                        first: "runs/r1/a.D0.data".into()
                    }
                ),
                (
                    "runs/r1/b.D1.data".to_owned(),
                    SkipReason::Duplicate {
                        first: "runs/r1/a.D0.data".into()
                    }
                ),
                ("runs/r1/c.D2.data".to_owned(), SkipReason::DanglingLink),
                ("runs/r1/self".to_owned(), SkipReason::FolderLink),
                ("runs/r1/up".to_owned(), SkipReason::FolderLink),
            ]
        );
    }

    #[test]
    fn a_data_entry_that_is_not_a_regular_file_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("a.D0.data"), "").unwrap();
        // Reading a socket (or a FIFO) would block: it must not even be opened.
        let _socket = std::os::unix::net::UnixListener::bind(run.join("b.D1.data")).unwrap();
        let found = discover_data_files(&[&run]).unwrap();
        assert_eq!(found.files.len(), 1);
        assert_eq!(
            skipped(&found, &run),
            [("b.D1.data".to_owned(), SkipReason::NotRegular)]
        );
        let given = discover_data_files(&[run.join("b.D1.data")]).unwrap();
        assert!(given.files.is_empty());
        assert_eq!(given.skipped[0].reason, SkipReason::NotRegular);
    }

    #[test]
    fn missing_folder_is_an_error() {
        let err = discover_data_files(&["/definitely/not/here"]).unwrap_err();
        assert!(matches!(err, MetricsError::MissingFolder { .. }));
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
