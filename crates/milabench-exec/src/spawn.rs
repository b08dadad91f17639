//! Starting one benchmark process: its own process group, piped stdout and stderr, and the data
//! channel passed as an inherited file descriptor.
//!
//! Passing the data pipe without `unsafe`: `std::io::pipe()` makes both ends close-on-exec. While
//! holding [`SPAWN_LOCK`], the write end's close-on-exec flag is cleared with `fcntl`, the child is
//! spawned (it inherits the descriptor under the same number, announced as `DATA_FD`), and the
//! parent closes its copy at once, so that the reader sees end of file when the benchmark's last
//! process holding it exits. The lock keeps two plans of this program from leaking their write
//! ends into each other's children; a process spawned at that instant by another library of the
//! same program could still inherit it, which only delays the end of the data stream until that
//! process exits (the writer stops waiting for it after the grace period).
//!
//! The same is done for [`crate::ExecOptions::keep_open`] (the run folder's locks), except that
//! the orchestrator keeps those files: their close-on-exec flag is set again right after the
//! spawn.

use milabench_vocab::env_vars::MILABENCH_USE_STDOUT;
use std::fs::File;
use std::io::{PipeReader, PipeWriter};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use milabench_plan::{Launch, ProcessSpec};
use nix::fcntl::{FcntlArg, FdFlag, fcntl};

use crate::tree::TOKEN_VAR;

static SPAWN_LOCK: Mutex<()> = Mutex::new(());

/// A started process and the read end of its data channel (`None` with `use_stdout`).
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) data: Option<PipeReader>,
}

/// Makes `cmd` start as the leader of a new process group (whose id is its pid) carrying
/// `token` in its environment, so that `tree` finds everything it starts.
pub(crate) fn in_own_tree(cmd: &mut Command, token: &str) {
    cmd.env(TOKEN_VAR, token).process_group(0);
}

fn base_command(spec: &ProcessSpec, token: &str) -> Command {
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .current_dir(spec.cwd.as_std_path())
        .envs(&spec.env)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(match spec.launch {
            // The remote rank lives while its standard input is open (see milabench-plan's
            // `launch` module): the orchestrator holds the write end.
            Launch::Ssh(_) => Stdio::piped(),
            Launch::Local | Launch::Srun(_) => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    in_own_tree(&mut cmd, token);
    cmd
}

/// Starts `spec` in a new process group whose id is the child's pid; it inherits `keep_open`.
pub(crate) fn spawn(
    spec: &ProcessSpec,
    token: &str,
    keep_open: &[Arc<File>],
) -> std::io::Result<Spawned> {
    let mut cmd = base_command(spec, token);
    if spec.use_stdout {
        cmd.env("DATA_FD", "1").env(MILABENCH_USE_STDOUT, "1");
        let child = spawn_inheriting(&mut cmd, None, keep_open)?;
        return Ok(Spawned { child, data: None });
    }
    let (reader, writer) = std::io::pipe()?;
    cmd.env("DATA_FD", writer.as_raw_fd().to_string());
    let child = spawn_inheriting(&mut cmd, Some(writer), keep_open)?;
    Ok(Spawned {
        child,
        data: Some(reader),
    })
}

/// Spawns `cmd` under [`SPAWN_LOCK`], inheriting `data_writer` (closed here once the child has
/// it) and the files of `keep_open` (close-on-exec again after the spawn).
pub(crate) fn spawn_inheriting(
    cmd: &mut Command,
    data_writer: Option<PipeWriter>,
    keep_open: &[Arc<File>],
) -> std::io::Result<Child> {
    let _guard = SPAWN_LOCK.lock();
    if let Some(writer) = &data_writer {
        fcntl(writer, FcntlArg::F_SETFD(FdFlag::empty()))?;
    }
    for file in keep_open {
        fcntl(file.as_fd(), FcntlArg::F_SETFD(FdFlag::empty()))?;
    }
    let child = cmd.spawn();
    drop(data_writer);
    for file in keep_open {
        // Should this fail, later children of other libraries may inherit the file too, which
        // only keeps the lock held while they live; the child started here matters more.
        let _ = fcntl(file.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    }
    child
}
