//! The results database: run folders indexed so that results stay in view after their folders
//! move, and so that one benchmark can be followed across machines, drivers and versions.
//!
//! One schema ([`schema`]), kept by numbered migrations, on two databases behind one API:
//! SQLite embedded in a file (`<base>/results.db` by default) and PostgreSQL by URL for teams.
//! The `.data` files of run folders stay the source of truth: everything here can be rebuilt by
//! importing the folders again ([`Store::import_folder`], idempotent). Statistics are those of
//! `milabench-report`, computed by it, never here. A live run records itself as it goes through
//! a [`RunRecorder`] ([`Store::begin_run`]). A run of a sweep is stored with its sweep and its
//! point ([`SweepPoint`]), so the runs of a sweep stay grouped ([`Store::sweep_runs`]) and one
//! point can be followed across the days it ran ([`HistoryQuery::point`]).
//!
//! SQLite runs in write-ahead-log mode with a busy timeout, and every writer takes the write
//! lock when its transaction starts, so two runs can record into one file at once. A database
//! whose schema is newer than this build is refused before anything is written. Values only
//! ever travel as bound parameters.

mod backend;
mod error;
mod folder;
#[cfg(any(test, feature = "test-harness"))]
pub mod harness;
mod location;
pub mod publish;
mod query;
pub mod schema;
mod store;
mod sweep;
mod write;

#[cfg(test)]
mod tests;

pub use backend::{BUSY_TIMEOUT, CONNECT_TIMEOUT, Dialect};
pub use error::StoreError;
pub use folder::{MetricRow, PackRecord, PackStatus, SystemFacts, read_pack, run_folders};
pub use location::{DEFAULT_FILE, StoreLocation};
pub use query::{HistoryQuery, HistoryRow, RunSummary};
pub use store::{BenchEnd, ImportOptions, ImportOutcome, RunEnd, RunRecorder, RunStart, Store};
pub use sweep::SweepPoint;
pub use write::RunStatus;
