//! PARAM-style operator microbenchmarks: JSON configs describing operator calls are checked and
//! expanded here, in Rust, into runs with PARAM's ids; a Python worker times each run; the
//! results are written as JSON lines in PARAM's record shape.
//!
//! - [`config`]: the schema, read with errors that name the JSON path ([`OpsConfig::load`]).
//! - [`expand()`]: the ordered runs with their ids, built one at a time, and [`select`] for
//!   `--resume-id` (inclusive) and `--stop-id` (exclusive), whose ids include the operator name
//!   (`torch.add|0|0|0_3`).
//! - [`spec`]: the typed spec of one run; a bad value fails that id only.
//! - [`run()`]: times the runs with the worker (`docs/benchit-protocol.md`, "Mode ops") and writes
//!   the output file, whose closing `finish_time` line is written whatever happens.
//! - [`stats`]: median and p90 per id.
//! - [`nsight`]: the measured runs profiled in batches under Nsight Compute or Nsight Systems
//!   (`--ncu`, `--nsys`).
//!
//! ```
//! use benchit::ops::{OpsConfig, expand};
//! let config = OpsConfig::parse(r#"{"torch.add": {
//!     "input_data_generator": "PyTorch:DefaultDataGenerator",
//!     "input_iterator": "RangeConfigIterator",
//!     "config": [{"input": [{"args": [
//!         {"type": "tensor", "dtype": "float", "shape": [[2, 4, 2], 8], "__range__": ["shape"]},
//!         {"type": "tensor", "dtype": "float", "shape": [1, 8]}]}]}]}}"#, "add.json").unwrap();
//! let ids: Vec<String> = expand(&config).map(|r| r.full_id()).collect();
//! assert_eq!(ids, ["torch.add|0|0|0_0", "torch.add|0|0|0_1"]);
//! ```

pub mod config;
mod expand;
pub mod nsight;
pub mod path;
mod runner;
pub mod spec;
pub mod stats;

pub use config::{ConfigError, OpsConfig};
pub use expand::{ExpandedRun, RunId, SelectError, expand, select};
pub use runner::{
    ExecMode, Metric, Outcome, PassTimes, RunError, RunOptions, RunRecord, RunSummary, run,
};
