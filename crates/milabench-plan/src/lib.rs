//! Pure planning: one resolved benchmark, the system and the run options become the processes
//! to launch ([`ProcessSpec`]). Nothing here starts a process or touches the disk, so every
//! plan can be printed (`milabench run --dry-run`) and snapshot-tested.

mod container;
mod error;
mod host;
mod launch;
mod planner;
mod script;
mod spec;

pub use container::{
    ContainerCall, ContainerProcess, PathMap, container_command, container_name,
    image_setup_command, node_setup_command, runnable_image, stop_command,
};
pub use error::PlanError;
pub use host::{
    HostAnswer, HostArg, HostGpu, HostPhase, HostPlan, HostProcess, HostRequest, SshMarker,
    VoirMarker, host_request, plan_from_host,
};
pub use launch::{
    Launch, RANK_TOKEN_VAR, REMOTE_GRACE_SECONDS, SrunTarget, SshTarget, remote_rank_command,
};
pub use milabench_vocab::shell_quote;
pub use planner::{
    PlanContext, PlanGpu, RENDEZVOUS_PORT, cache_folder, container_folders, launch_to, plan_bench,
    plan_prepare, visibility_variable,
};
pub use script::render_script;
pub use spec::{BenchPlan, PlannedFile, ProcessSpec};
