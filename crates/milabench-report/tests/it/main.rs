//! The crate's integration tests, in one test binary (one link of the crate and its dependencies).

mod fixtures;
mod host_memory;
mod intervals;
mod serving;
