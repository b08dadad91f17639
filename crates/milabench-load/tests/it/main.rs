//! The crate's integration tests, in one test binary (one link of the crate and its dependencies).

mod mock_server;
mod workloads;
