//! Appending events to run folders as they arrive.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::MetricsError;
use crate::event::Record;
use crate::json::restore_non_finite;
use crate::tag::Tag;

/// One record as a line of a `.data` file, newline included. Non-finite floats are written as
/// Python's bare `NaN`/`Infinity` tokens, which the Python tool (and this crate) read back.
pub fn record_to_line(record: &Record) -> String {
    let text = serde_json::to_string(&record.to_value()).unwrap_or_else(|_| "{}".to_owned());
    let mut line = restore_non_finite(text);
    line.push('\n');
    line
}

/// An open `<tag>.data` file. Each record is written with one `write` call as soon as it is
/// appended, so a killed orchestrator leaves every completed line readable.
#[derive(Debug)]
pub struct DataFileWriter {
    path: PathBuf,
    file: File,
}

impl DataFileWriter {
    /// Opens (or creates) `path` for appending.
    pub fn open(path: impl Into<PathBuf>) -> Result<DataFileWriter, MetricsError> {
        let path = path.into();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| MetricsError::Write {
                path: path.clone(),
                error,
            })?;
        Ok(DataFileWriter { path, file })
    }

    /// Appends one record and hands it to the operating system.
    pub fn append(&mut self, record: &Record) -> Result<(), MetricsError> {
        let line = record_to_line(record);
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|error| MetricsError::Write {
                path: self.path.clone(),
                error,
            })
    }

    /// Appends records read together, in order, with one `write` call (a killed orchestrator
    /// leaves every line of the batch, or none of it past what the system took).
    pub fn append_all(&mut self, records: &[Record]) -> Result<(), MetricsError> {
        let lines: String = records.iter().map(record_to_line).collect();
        self.file
            .write_all(lines.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|error| MetricsError::Write {
                path: self.path.clone(),
                error,
            })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A run folder being written: one `.data` file per process tag, opened at its first record.
#[derive(Debug)]
pub struct RunFolderWriter {
    dir: PathBuf,
    files: HashMap<Tag, DataFileWriter>,
}

impl RunFolderWriter {
    /// Creates the folder (and its parents) if needed.
    pub fn create(dir: impl Into<PathBuf>) -> Result<RunFolderWriter, MetricsError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|error| MetricsError::Write {
            path: dir.clone(),
            error,
        })?;
        Ok(RunFolderWriter {
            dir,
            files: HashMap::new(),
        })
    }

    /// Appends `record` to `<dir>/<tag>.data`.
    pub fn append(&mut self, tag: &Tag, record: &Record) -> Result<(), MetricsError> {
        if !self.files.contains_key(tag) {
            let path = self.dir.join(format!("{tag}.data"));
            self.files.insert(tag.clone(), DataFileWriter::open(path)?);
        }
        let writer = self.files.get_mut(tag).ok_or_else(|| MetricsError::Write {
            path: self.dir.clone(),
            error: std::io::Error::other("writer vanished"),
        })?;
        writer.append(record)
    }

    /// Closes the file of `tag` (after its `end` event).
    pub fn close(&mut self, tag: &Tag) {
        self.files.remove(tag);
    }

    /// The run folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{DataPayload, Event, Pipe};
    use crate::folder::discover_data_files;
    use crate::reader::ReadItem;

    #[test]
    fn written_records_read_back_identically() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunFolderWriter::create(dir.path().join("run")).unwrap();
        let tag = Tag::new("bench.D0");
        let records = vec![
            Record::new(Event::Config(serde_json::json!({"name": "bench"})), None),
            Record::new(
                Event::Data(Box::new(DataPayload {
                    task: Some("train".into()),
                    loss: Some(f64::NAN),
                    ..DataPayload::default()
                })),
                Some(Pipe::Data),
            ),
            Record::new(Event::Line("caf\u{e9}\n".into()), Some(Pipe::Stderr)),
            Record::new(Event::Stop, Some(Pipe::Data)),
        ];
        for r in &records {
            run.append(&tag, r).unwrap();
        }
        run.close(&tag);
        let files = discover_data_files(&[dir.path()]).unwrap().files;
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(&files[0].path).unwrap();
        assert!(text.contains("\"loss\":NaN"), "{text}");
        let back: Vec<Record> = files[0]
            .records()
            .unwrap()
            .map(|item| match item {
                ReadItem::Record(r) => r,
                ReadItem::Problem(p) => panic!("{p:?}"),
            })
            .collect();
        assert_eq!(back.len(), records.len());
        let Event::Data(d) = &back[1].event else {
            panic!()
        };
        assert!(d.loss.unwrap().is_nan());
        assert_eq!(back[2], records[2]);
        assert_eq!(back[3], records[3]);
    }

    #[test]
    fn records_appended_together_are_the_lines_appended_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let records = [
            Record::new(Event::Line("a\n".into()), Some(Pipe::Stdout)),
            Record::new(Event::Stop, Some(Pipe::Data)),
            Record::new(Event::Line("b\n".into()), Some(Pipe::Stdout)),
        ];
        let mut one_by_one = DataFileWriter::open(dir.path().join("one.data")).unwrap();
        for r in &records {
            one_by_one.append(r).unwrap();
        }
        let mut together = DataFileWriter::open(dir.path().join("all.data")).unwrap();
        together.append_all(&records[..1]).unwrap();
        together.append_all(&records[1..]).unwrap();
        together.append_all(&[]).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(read("all.data"), read("one.data"));
        assert_eq!(read("all.data").lines().count(), 3);
    }
}
