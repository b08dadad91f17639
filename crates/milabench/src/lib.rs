//! The milabench facade: one crate that other Rust tools embed to resolve suites and, as the
//! layers arrive, install, plan, run and report them. It re-exports the layer crates and names
//! the process exit codes every front end shares.

pub use milabench_config as config;

pub mod exit_code;

pub use exit_code::ExitCode;
