//! The LLM serving load generator: an asynchronous client of OpenAI-compatible servers
//! (`/v1/completions`, `/v1/chat/completions`, streamed as server-sent events) over one pool of
//! HTTP/1.1 connections (TLS for `https`), the scenarios the field measures serving with
//! (MLPerf's Offline and Server, a fixed concurrency, a sweep of rates until the SLO breaks),
//! and per request the time to first token, every inter-token gap, the time per output token
//! and the end-to-end latency, aggregated into percentiles, throughputs and goodput with 95%
//! intervals.
//!
//! [`run`] runs a [`LoadSpec`] until it ends or a [`Stop`] is triggered; [`server`] starts and
//! stops a server for a run; [`events::records`] turns its [`LoadResult`] into the data events
//! of a run folder, which a [`ResultsFile`] holds. `mock` (feature `mock`, for tests and benches) is a server with known timing
//! and faults on demand.
//! Nothing here prints.

pub mod client;
mod error;
pub mod events;
#[cfg(any(test, feature = "mock"))]
pub mod mock;
mod results_file;
mod run;
pub mod schedule;
pub mod server;
pub mod sse;
pub mod stop;
pub mod summary;
pub mod tls;
pub mod workload;

pub use client::{Api, Endpoint, ErrorKind, RequestError, RequestOptions, RequestRecord};
pub use error::LoadError;
pub use milabench_stats::Interval;
pub use results_file::ResultsFile;
pub use run::{HELD_ATTAINMENT, LoadResult, LoadSpec, Scenario, SloSearch, Step, run};
pub use stop::Stop;
pub use summary::{DEFINITIONS, LatencySummary, Measured, Slo, Summary, parse_duration};
pub use workload::{LengthDist, Workload};
