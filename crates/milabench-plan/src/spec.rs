//! What the planner produces and the executor consumes: processes to start together, and the
//! files they need written first.

use std::time::Duration;

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use serde::Serialize;

use crate::container::ContainerProcess;
use crate::launch::Launch;

/// One process to launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessSpec {
    /// Name fragments joined by `.` to name the run files: `["resnet50", "D0"]` gives
    /// `resnet50.D0.data`.
    pub tag: Vec<String>,
    /// The command; `argv[0]` is the program (a path, or a name looked up on `PATH`).
    pub argv: Vec<String>,
    /// Variables set on top of the orchestrator's own environment (in this order).
    pub env: IndexMap<String, String>,
    /// Working folder.
    pub cwd: Utf8PathBuf,
    /// The node it runs on (its name in the system file); `None` for the local machine without
    /// a system file.
    pub node: Option<String>,
    /// Devices this process may use (GPU indices as strings); empty on CPU.
    pub devices: Vec<String>,
    /// Whether the data channel is smuggled in stdout (`DATA_FD=1`), as across ssh.
    pub use_stdout: bool,
    /// Events of this process are kept out of reports (ranks other than 0 of a multi-node job).
    pub nolog: bool,
    /// How it reaches its node; `argv` is already wrapped accordingly.
    pub launch: Launch,
    /// For a process started on another node: the command as it runs there, before the launch
    /// wraps it (what `argv` runs over ssh or srun).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_command: Option<Vec<String>>,
    /// The container it runs in (the system's `container` block), if any: `argv` already
    /// starts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerProcess>,
    /// The distributed job this process is one rank of (the job's tag, `None` for a process
    /// alone): when one rank fails, the others of its job are stopped instead of waiting for
    /// a peer that will never answer.
    pub job: Option<String>,
    /// Payload of the `config` event recorded before the process starts.
    pub config: serde_json::Value,
}

impl ProcessSpec {
    /// The tag as written in file names (`resnet50.D0`).
    pub fn tag_name(&self) -> String {
        self.tag.join(".")
    }
}

/// A file the processes of a plan read (e.g. the voir configuration), written before launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedFile {
    /// Where to write it.
    pub path: Utf8PathBuf,
    /// Its content.
    pub content: String,
}

/// Everything needed to run one benchmark once: processes started together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchPlan {
    /// The benchmark's name.
    pub bench: String,
    /// Processes to start together.
    pub processes: Vec<ProcessSpec>,
    /// Files to write before starting them.
    pub files: Vec<PlannedFile>,
    /// How long the processes may run before they are stopped and marked failed (serialized
    /// as `max_duration_seconds`).
    #[serde(rename = "max_duration_seconds", serialize_with = "seconds")]
    pub max_duration: Option<Duration>,
}

/// Serializes a duration as a number of seconds (`null` when absent).
fn seconds<S: serde::Serializer>(value: &Option<Duration>, out: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(duration) => out.serialize_f64(duration.as_secs_f64()),
        None => out.serialize_none(),
    }
}
