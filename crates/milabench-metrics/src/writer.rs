//! Appending events to run folders as they arrive.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::MetricsError;
use crate::event::{Event, Record};
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

/// The data channel of a benchmark process, written from inside the benchmark (`milabench
/// load --emit-events`): the pipe `DATA_FD` names, or smuggled in stdout when it is `1` (or
/// unset). Only data and error events go there: the orchestrator writes the process's own
/// `config`, `start` and `end` events.
#[derive(Debug)]
pub struct DataChannelWriter {
    /// The inherited pipe and its descriptor, or `None` for stdout.
    pipe: Option<(File, String)>,
}

impl DataChannelWriter {
    /// The channel `data_fd` (the value of `DATA_FD`; `None` when unset) names: the inherited
    /// pipe is reopened through `/proc` (no unsafe descriptor adoption).
    pub fn open(data_fd: Option<&str>) -> Result<DataChannelWriter, MetricsError> {
        let fd = data_fd.unwrap_or("1");
        if fd == "1" {
            return Ok(DataChannelWriter { pipe: None });
        }
        let path = format!("/proc/self/fd/{fd}");
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|error| MetricsError::Channel {
                fd: fd.to_owned(),
                error,
            })?;
        Ok(DataChannelWriter {
            pipe: Some((file, fd.to_owned())),
        })
    }

    /// Sends the data and error events of `records`, in order.
    pub fn send(&mut self, records: &[Record]) -> Result<(), MetricsError> {
        let mut lines = records.iter().filter_map(channel_line);
        let written = match &mut self.pipe {
            None => {
                let mut out = std::io::stdout().lock();
                lines
                    .try_for_each(|line| out.write_all(&crate::smuggle_encode(line.as_bytes())))
                    .and_then(|()| out.flush())
            }
            Some((file, _)) => lines.try_for_each(|line| file.write_all(line.as_bytes())),
        };
        written.map_err(|error| MetricsError::Write {
            path: match &self.pipe {
                None => PathBuf::from("stdout"),
                Some((_, fd)) => PathBuf::from(format!("/proc/self/fd/{fd}")),
            },
            error,
        })
    }
}

/// `record` as a line of the data channel, newline included: a data event as its payload, an
/// error event as `{"$event": "error", "$data": ...}`; `None` for the other events.
fn channel_line(record: &Record) -> Option<String> {
    let value = match &record.event {
        Event::Data(_) => record.event.data_value(),
        Event::Error(_) => {
            serde_json::json!({"$event": "error", "$data": record.event.data_value()})
        }
        _ => return None,
    };
    Some(value.to_string() + "\n")
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
    fn the_data_channel_gets_the_data_and_error_events_alone() {
        use std::os::fd::AsRawFd;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("channel");
        let pipe = File::create(&path).unwrap();
        let fd = pipe.as_raw_fd().to_string();
        let records = [
            Record::new(Event::Config(serde_json::json!({"name": "load"})), None),
            Record::new(
                Event::Data(Box::new(DataPayload {
                    task: Some("serve".into()),
                    rate: Some(2.5),
                    ..DataPayload::default()
                })),
                None,
            ),
            Record::new(
                Event::Error(Box::new(crate::event::ErrorInfo {
                    kind: Some("Timeout".into()),
                    message: Some("no answer".into()),
                    trace: None,
                    extra: serde_json::Map::new(),
                })),
                None,
            ),
            Record::new(Event::Stop, None),
        ];
        DataChannelWriter::open(Some(&fd))
            .unwrap()
            .send(&records)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["task"], "serve");
        assert_eq!(lines[1]["$event"], "error");
        assert_eq!(lines[1]["$data"]["message"], "no answer");
        let closed = DataChannelWriter::open(Some("987654")).unwrap_err();
        assert_eq!(
            closed.to_string(),
            "cannot open the data channel DATA_FD=987654"
        );
    }

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
