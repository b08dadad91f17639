//! Replaying recorded event streams through the layers, as `milabench replay` does.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use milabench_metrics::{Event, ProblemTally, ReadItem, Record, RecordReader, Tag};
use serde_json::Value;

/// One replayed entry: the record and the process it belongs to.
#[derive(Debug, Clone)]
pub struct ReplayEntry {
    /// Tag from the process's `config` event.
    pub tag: Tag,
    /// The process configuration.
    pub config: Arc<Value>,
    /// The record.
    pub record: Record,
}

/// Why a replay could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file or folder does not exist or cannot be read.
    #[error("cannot read {}; give an event file (.data) or a folder of them", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The system error.
        #[source]
        error: std::io::Error,
    },
    /// The path is neither a folder nor a regular file (a FIFO, a socket, a device): reading it
    /// could block forever.
    #[error("{} is not a regular file; give an event file (.data) written by `milabench run` or a folder of them", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// No file held a `config` event, so no entry could be attributed to a process.
    #[error("{}: no `config` event found, so no entry can be attributed to a benchmark; replay needs the .data files written by `milabench run`", path.display())]
    NoConfig {
        /// The path.
        path: PathBuf,
    },
}

/// What a replay read: the entries, and the lines that were not records.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// The entries, in replay order.
    pub entries: Vec<ReplayEntry>,
    /// Lines that could not be read, per file (skipped, as `milabench report` skips them).
    pub problems: ProblemTally,
}

/// The entries of an event file, or of every file in a folder (files in name order, their
/// entries interleaved one by one to mimic processes running side by side).
///
/// As in the Python tool, entries before a file's first `config` event are dropped, the `config`
/// event itself is not replayed, and it gives the tag and configuration of what follows. Lines
/// that are not records (garbage, a line cut short) are skipped and counted in
/// [`Replay::problems`].
pub fn replay_entries(path: &Path) -> Result<Replay, ReplayError> {
    let read_err = |error| ReplayError::Read {
        path: path.to_owned(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    let files: Vec<PathBuf> = if meta.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_err)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        // A run folder holds .stderr/.stdout logs too: only event files count there.
        if files
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "data"))
        {
            files.retain(|p| p.extension().is_some_and(|e| e == "data"));
        }
        files
    } else if meta.is_file() {
        vec![path.to_owned()]
    } else {
        return Err(ReplayError::NotRegular {
            path: path.to_owned(),
        });
    };
    let mut streams = Vec::new();
    let mut any_config = false;
    let mut problems = ProblemTally::default();
    for file in &files {
        let (entries, saw_config) = read_stream(file, &mut problems)?;
        any_config |= saw_config;
        streams.push(entries);
    }
    if !any_config {
        return Err(ReplayError::NoConfig {
            path: path.to_owned(),
        });
    }
    let mut out = Vec::new();
    let mut iters: Vec<_> = streams.into_iter().map(Vec::into_iter).collect();
    while !iters.is_empty() {
        iters.retain_mut(|it| match it.next() {
            Some(entry) => {
                out.push(entry);
                true
            }
            None => false,
        });
    }
    Ok(Replay {
        entries: out,
        problems,
    })
}

fn read_stream(
    path: &Path,
    problems: &mut ProblemTally,
) -> Result<(Vec<ReplayEntry>, bool), ReplayError> {
    let file = File::open(path).map_err(|error| ReplayError::Read {
        path: path.to_owned(),
        error,
    })?;
    let mut current: Option<(Tag, Arc<Value>)> = None;
    let mut out = Vec::new();
    for item in RecordReader::new(BufReader::new(file)) {
        let record = match item {
            ReadItem::Record(r) => r,
            ReadItem::Problem(problem) => {
                problems.add(path, problem);
                continue;
            }
        };
        if let Event::Config(config) = &record.event {
            let tag = config_tag(config);
            current = Some((tag, Arc::new(config.clone())));
            continue;
        }
        if let Some((tag, config)) = &current {
            out.push(ReplayEntry {
                tag: tag.clone(),
                config: config.clone(),
                record,
            });
        }
    }
    let saw_config = current.is_some();
    Ok((out, saw_config))
}

/// The tag of a process from its configuration (`tag` list, else `name`).
pub(crate) fn config_tag(config: &Value) -> Tag {
    match config.get("tag") {
        Some(Value::Array(parts)) => {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                .collect();
            Tag::from_parts(&parts)
        }
        _ => Tag::new(config.get("name").and_then(Value::as_str).unwrap_or("")),
    }
}
