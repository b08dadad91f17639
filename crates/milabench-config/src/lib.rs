//! Suite configuration for milabench: turns suite YAML files, a system file and settings into an
//! ordered list of fully resolved benchmarks, with errors that point at file:line:column.
//!
//! This crate describes; it never creates environments or runs anything.

pub mod placeholders;
pub mod settings;
