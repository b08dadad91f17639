//! A load run's results file in a run folder, `<dir>/<name>.data`: created before the run (a
//! folder that cannot be written is found before anything is measured) and removed again when
//! the run ends without results.

use std::path::Path;

use milabench_metrics::{DataFileWriter, Record};

use crate::LoadError;

/// The results file of one load run, written once with the run's events.
pub struct ResultsFile {
    writer: DataFileWriter,
    written: bool,
}

impl ResultsFile {
    /// Creates `dir` and a new `<name>.data` in it; an existing one is refused (the records of
    /// a second run appended to it would make a file `report` rejects).
    pub fn create(dir: &Path, name: &str) -> Result<ResultsFile, LoadError> {
        let path = dir.join(format!("{name}.data"));
        std::fs::create_dir_all(dir).map_err(|error| LoadError::RunDir {
            dir: dir.to_owned(),
            error,
        })?;
        match std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(LoadError::ResultsExist { path });
            }
            Err(error) => return Err(LoadError::ResultsFile { path, error }),
        }
        Ok(ResultsFile {
            writer: DataFileWriter::open(path)?,
            written: false,
        })
    }

    /// Writes `records` and returns the file they went to.
    pub fn write(&mut self, records: &[Record]) -> Result<&Path, LoadError> {
        self.written = true;
        self.writer.append_all(records)?;
        Ok(self.writer.path())
    }
}

impl Drop for ResultsFile {
    fn drop(&mut self) {
        if !self.written {
            // Nothing was measured: no empty file is left for `report` to trip on.
            let _ = std::fs::remove_file(self.writer.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_is_refused_and_a_run_without_results_leaves_no_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("run");
        let first = ResultsFile::create(&folder, "load").expect("created");
        let second = ResultsFile::create(&folder, "load").map(|_| ());
        assert!(
            matches!(second, Err(LoadError::ResultsExist { .. })),
            "{second:?}"
        );
        drop(first);
        assert!(
            !folder.join("load.data").exists(),
            "an unwritten file is removed"
        );
        let mut written = ResultsFile::create(&folder, "load").expect("created again");
        let path = written.write(&[]).expect("written").to_owned();
        drop(written);
        assert_eq!(path, folder.join("load.data"));
        assert!(path.exists(), "a written file stays");
    }
}
