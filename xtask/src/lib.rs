//! The parts of the developer flows that tests use too: the two-node cluster harness
//! ([`cluster`]), so that every test starts and stops it the way `cargo xtask cluster` does, and
//! the browser harness of the HTML report ([`browser`]).

// A developer tool: printing progress is part of its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod browser;
pub mod cluster;
