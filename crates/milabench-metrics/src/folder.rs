//! Finding the `.data` files of run folders.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::error::MetricsError;
use crate::reader::{LineDecoder, RecordDecoder, RecordReader};
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
        self.records_with(RecordDecoder)
    }

    /// Streams the file's records as `decoder` decodes them.
    pub fn records_with<D: LineDecoder>(
        &self,
        decoder: D,
    ) -> Result<RecordReader<BufReader<File>, D>, MetricsError> {
        let file = File::open(&self.path).map_err(|error| MetricsError::Read {
            path: self.path.clone(),
            error,
        })?;
        let input = BufReader::with_capacity(64 * 1024, file);
        Ok(RecordReader::with_decoder(input, decoder))
    }
}

/// Every `.data` file under the given run folders (or files), recursively.
///
/// Sub-folders whose name starts with `install` or `prepare` hold the logs of those commands
/// and are skipped, as the Python tool does. Within a folder, entries are visited in name order
/// (the Python tool uses the file system's order, which is not reproducible). A path that does
/// not exist is an error; a folder without `.data` files simply contributes nothing.
pub fn discover_data_files<P: AsRef<Path>>(roots: &[P]) -> Result<Vec<DataFile>, MetricsError> {
    let mut found = Vec::new();
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
        if meta.is_file() {
            found.push(DataFile::new(root.to_owned()));
        } else {
            walk(root, &mut found)?;
        }
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<DataFile>) -> Result<(), MetricsError> {
    let read_err = |error| MetricsError::Read {
        path: dir.to_owned(),
        error,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let is_dir = entry.file_type().map_err(read_err)?.is_dir() || (entry.path().is_dir());
        entries.push((entry.file_name(), entry.path(), is_dir));
    }
    entries.sort();
    let (dirs, files): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.2);
    for (name, path, _) in files {
        if name.to_string_lossy().ends_with(".data") {
            found.push(DataFile::new(path));
        }
    }
    for (name, path, _) in dirs {
        let name = name.to_string_lossy();
        if name.starts_with("install") || name.starts_with("prepare") {
            continue;
        }
        walk(&path, found)?;
    }
    Ok(())
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
        let files = discover_data_files(&[root.join("run1")]).unwrap();
        let tags: Vec<&str> = files.iter().map(|f| f.tag.as_str()).collect();
        assert_eq!(tags, ["a.D0", "b.D1", "c.0.R1"]);
    }

    #[test]
    fn missing_folder_is_an_error() {
        let err = discover_data_files(&["/definitely/not/here"]).unwrap_err();
        assert!(matches!(err, MetricsError::MissingFolder { .. }));
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
