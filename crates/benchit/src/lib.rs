//! `benchit`: benchmark the models a Python script uses on several runtimes, and run
//! PARAM-style operator microbenchmarks. The model and operator pipelines arrive with their
//! issues; today the crate holds the command-line surface so the binary is in place.

pub mod cli;
