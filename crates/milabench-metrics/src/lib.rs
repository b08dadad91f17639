//! The milabench event stream: typed events, the benchmark data-channel decoders, and run folders
//! (`<run>/<tag>.data` JSON-lines files) written as events arrive and read back as streams.
//!
//! Files written by the Python milabench read back unchanged (including its bare `NaN` tokens),
//! and what this crate writes the Python tool reads. Reading never loads a whole file: records
//! come one line at a time, and lines that cannot be decoded become [`LineProblem`]s that the
//! caller counts and reports instead of aborting. There is one decoder of `.data` lines
//! ([`RecordReader`]): a reader asks for the [`Fields`] it uses, and the rest of each line is
//! skipped unread (a byte scanner answers the usual lines, serde the others).
//!
//! [`ProcessVerdict`] is the one rule for whether a process succeeded, which the executor applies
//! live and the readers of run folders (`--resume`, the results store, the report) apply to its
//! file ([`ProcessJudge`] one record at a time).
//!
//! [`FolderLock`] keeps a second process out of a folder in use (a run folder; `milabench-env`
//! uses it for install groups too).

mod consolidate;
mod decode;
mod error;
mod event;
mod fields;
mod folder;
pub mod format;
mod json;
mod lenient;
mod lock;
mod rate;
mod reader;
mod record_de;
pub mod serving;
mod skim;
mod tag;
mod verdict;
mod writer;

pub use consolidate::{Consolidated, consolidate_runs};
pub use decode::{ChannelDecoder, LineSplitter, SmuggleDecoder, SmuggledLines, smuggle_encode};
pub use error::MetricsError;
pub use event::{
    CpuSample, DataPayload, EndInfo, ErrorInfo, Event, FormatErrorInfo, GpuSample, Pipe, Record,
    ReturnCode, StartInfo,
};
pub use fields::Fields;
pub use folder::{DataFile, Discovery, SkipReason, SkippedPath, discover_data_files};
pub use lock::{FolderLock, LockError, describe_holders};
pub use rate::{MAX_RATE, RateFault};
pub use reader::{LineProblem, LineProblemKind, ProblemTally, ReadItem, RecordReader};
pub use tag::Tag;
pub use verdict::{Failure, ProcessJudge, ProcessVerdict};
pub use writer::{DataChannelWriter, DataFileWriter, RunFolderWriter, record_to_line};
