//! The parts of the developer flows that tests use too: the two-node cluster harness
//! ([`cluster`]) and the one-node Slurm ([`slurm`]), so that every test starts and stops them
//! the way `cargo xtask cluster` and `cargo xtask slurm` do, and the browser harness of the HTML
//! report ([`browser`]), and the container runtimes with the image of `Containerfile`
//! ([`containers`]).

// A developer tool: printing progress is part of its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod browser;
pub mod cluster;
pub mod containers;
pub mod host;
pub mod slurm;
