//! Suite configuration for milabench: turns suite YAML files, a system file and settings into an
//! ordered list of fully resolved benchmarks, with errors that point at file:line:column.
//!
//! This crate describes; it never creates environments or runs anything. The pieces, in the
//! order a suite goes through them:
//! - [`yaml`]: PyYAML-compatible loading that keeps key order and locations;
//! - [`merge`]: milabench's merge rules;
//! - [`suite`]: includes, overrides, matrices, inheritance, `*`, selection;
//! - [`interpolate`]: `${...}` references over the resolved tree;
//! - [`argv`]: rendering `argv` mappings into arguments;
//! - [`benchfile`]: the optional `benchfile.yaml` of a benchmark folder;
//! - [`launch_check`]: early checks of launch-time placeholders and expressions;
//! - [`limits`]: bounds on input size, alias expansion, includes and matrices;
//! - [`system`]: the system file (nodes, arch, GPU facts);
//! - [`settings`]: built-in defaults, settings file, `MILABENCH_*` variables and flags;
//! - [`placeholders`]: launch-time `{name}` placeholders and the safe expression evaluator.
//! - [`sweep`]: the runs of a sweep (the system file's `multirun`, `--sweep` axes);
//! - [`scaling`]: the sizer's scaling files (observations, their memory model).

pub mod argv;
pub mod benchfile;
pub mod container;
pub mod error;
pub mod interpolate;
pub mod launch_check;
pub mod limits;
pub mod merge;
pub mod placeholders;
pub mod run_name;
pub mod scaling;
pub mod settings;
pub mod suite;
pub mod sweep;
pub mod system;
pub mod value;
pub mod yaml;

pub use container::{ContainerMount, ContainerRuntime, ContainerSpec, GpuPassing};
pub use error::ConfigError;
pub use suite::{PlanMethod, ResolvedBench, Suite, SuiteRequest, resolve_suite};
pub use system::{
    DetectedGpus, LaunchMode, NodeSpec, ResolvedSystem, SystemConfig, SystemDirs, SystemInputs,
    load_system, load_system_str,
};
pub use value::{Location, Map, Node, Value};
