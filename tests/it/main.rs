//! CLI integration tests of the `milabench` and `benchit` binaries (one test binary).

mod benchit;
mod benchit_ops;
mod check;
mod common;
mod compat;
mod container;
mod dash;
mod errors;
mod gpu;
mod html;
mod install;
mod load;
mod multinode;
mod publish;
mod report;
mod resolve;
mod run;
mod slurm;
mod store;
mod sweep;
mod sysinfo;
mod upstream;
mod verdicts;
