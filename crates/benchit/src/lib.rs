//! `benchit`: benchmark the models a Python script uses on several runtimes, and run
//! PARAM-style operator microbenchmarks.
//!
//! The Rust side owns the build cache, rebuild decisions, timeouts, statistics and reports; a
//! Python worker in `benchmate` (`python -m benchmate.benchit`) runs the user's code.
//! `docs/benchit-protocol.md` describes how they talk. The library never prints: the `benchit`
//! command (the `benchit-cli` crate) does; the `clap` feature derives `clap::ValueEnum` on the
//! option enums for it.
//!
//! - [`env`](mod@env): the managed Python environment the worker runs in, shared by both.
//! - [`models`]: model benchmarking: discovery, the build cache, runtimes, statistics.
//! - [`ops`]: PARAM-style operator microbenchmarks: config expansion, ids, the run.
//! - [`worker`]: one worker process and its JSON-lines streams, shared by both.
//!
//! `models` and `ops` share only the worker and its environment (and `milabench-stats`'
//! quantile); neither uses the other.

pub mod env;
pub mod models;
pub mod ops;
pub mod worker;

pub use models::{benchmark_model, benchmark_script};
