//! Pure planning: one resolved benchmark, the system and the run options become the processes
//! to launch ([`ProcessSpec`]). Nothing here starts a process or touches the disk, so every
//! plan can be printed (`milabench run --dry-run`) and snapshot-tested.

mod spec;

pub use spec::{BenchPlan, PlannedFile, ProcessSpec};
