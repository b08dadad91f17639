//! A watchdog process that stops a plan's processes when the orchestrator dies without doing it
//! (SIGKILL, a crash, the out-of-memory killer), so that no benchmark runs on unwatched beside a
//! `--resume` of its run.
//!
//! Why a separate process and not `PR_SET_PDEATHSIG`: setting the parent-death signal in a
//! child needs `pre_exec`, which is `unsafe` (this workspace forbids it); the signal follows
//! the *thread* that spawned the child, not the process; and it reaches the direct child only,
//! never the processes the benchmark started (torchrun's workers, data loaders). The watchdog
//! instead reads, on its standard input, which process trees the orchestrator started; the
//! orchestrator holds the only write end of that pipe, so the watchdog sees end of input exactly
//! when the orchestrator is gone. It then SIGKILLs each tree the way the orchestrator would
//! (its process group, the processes carrying its token, their descendants: see `tree`), and
//! runs the removal command of each container a process ran in (`remove <JSON words>` lines: a
//! podman or docker container is no child of its client and outlives it). A plan that ends
//! normally says `done` first and the watchdog exits without touching anything.
//!
//! The watchdog is a program the caller names ([`WatchdogCommand`]; the `milabench` binary
//! runs itself with a hidden subcommand that calls [`serve_watchdog`]). It runs in its own
//! process group, so a Ctrl-C at the terminal reaches the orchestrator, which stops everything
//! in order, and not the watchdog.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use nix::sys::signal::Signal;

use crate::helper::HelperCommand;
use crate::spawn::spawn_inheriting;
use crate::tree::signal_tree;

/// How to start a watchdog: a program that calls [`serve_watchdog`] on its standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchdogCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The name the watchdog process shows (its `argv[0]`) when not `program`.
    pub shown_as: Option<OsString>,
}

impl WatchdogCommand {
    /// This very program with `args` (a hidden subcommand that calls [`serve_watchdog`]),
    /// started through `/proc/self/exe` where there is one: a child resolves that to its
    /// parent's program until its own `exec`, so the watchdog still starts after the program's
    /// file was replaced or removed (a rebuild or an upgrade during a long run). It shows the
    /// program's path as its name.
    pub fn this_program(args: Vec<OsString>) -> std::io::Result<WatchdogCommand> {
        let exe = std::env::current_exe()?;
        let running = Path::new(RUNNING_PROGRAM);
        Ok(if running.exists() {
            WatchdogCommand {
                program: running.to_owned(),
                args,
                shown_as: Some(exe.into_os_string()),
            }
        } else {
            WatchdogCommand {
                program: exe,
                args,
                shown_as: None,
            }
        })
    }
}

/// The running program, whatever became of its file (Linux).
const RUNNING_PROGRAM: &str = "/proc/self/exe";

/// The line that ends a watch without killing anything.
const DONE: &str = "done";

/// The start of a line naming a container's removal command (a JSON list of words).
const REMOVE: &str = "remove ";

/// How long the watchdog lets one container's removal take.
const REMOVAL_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A running watchdog, fed by the orchestrator.
pub(crate) struct Watchdog {
    child: Child,
    input: ChildStdin,
}

impl Watchdog {
    /// Starts the watchdog; it inherits `keep_open` (the run folder's locks), so they stay
    /// held until it has killed what it must.
    pub(crate) fn start(
        command: &WatchdogCommand,
        keep_open: &[Arc<File>],
    ) -> std::io::Result<Watchdog> {
        let mut cmd = Command::new(&command.program);
        if let Some(name) = &command.shown_as {
            cmd.arg0(name);
        }
        cmd.args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = spawn_inheriting(&mut cmd, None, keep_open)?;
        let input = child.stdin.take().expect("stdin is piped");
        Ok(Watchdog { child, input })
    }

    /// Names a process tree to kill should the orchestrator die: its token (sent before the
    /// process is started, so a death during the spawn is covered), then its group.
    pub(crate) fn watch(&mut self, token: &str, pgid: Option<i32>) -> std::io::Result<()> {
        match pgid {
            Some(pgid) => writeln!(self.input, "{token} {pgid}"),
            None => writeln!(self.input, "{token}"),
        }
    }

    /// Names the command that removes a process's container, run should the orchestrator die.
    pub(crate) fn watch_container(&mut self, removal: &[String]) -> std::io::Result<()> {
        let words = serde_json::to_string(removal).map_err(std::io::Error::other)?;
        writeln!(self.input, "{REMOVE}{words}")
    }

    /// The plan ended: the watchdog exits without killing anything.
    pub(crate) fn finish(self) {
        let Watchdog {
            mut child,
            mut input,
        } = self;
        let _ = writeln!(input, "{DONE}");
        drop(input);
        let _ = child.wait();
    }
}

/// Serves as the watchdog of one plan: reads `<token> [<pgid>]` and `remove <JSON words>`
/// lines from `input` until `done` (the plan ended) or the end of input (the orchestrator
/// died), in which case it SIGKILLs every tree named, then runs every removal command. Returns
/// how many processes were killed.
pub fn serve_watchdog(input: impl BufRead) -> usize {
    let mut trees: Vec<(String, Option<i32>)> = Vec::new();
    let mut removals: Vec<Vec<String>> = Vec::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        if line == DONE {
            return 0;
        }
        if let Some(words) = line.strip_prefix(REMOVE) {
            removals.extend(serde_json::from_str::<Vec<String>>(words).ok());
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(token) = words.next() else { continue };
        let pgid = words.next().and_then(|w| w.parse().ok());
        match trees.iter_mut().find(|(t, _)| t == token) {
            Some(tree) => tree.1 = pgid.or(tree.1),
            None => trees.push((token.to_string(), pgid)),
        }
    }
    let killed = trees
        .iter()
        .map(|(token, pgid)| signal_tree(*pgid, token, Signal::SIGKILL))
        .sum();
    for removal in &removals {
        if let Some((program, args)) = removal.split_first() {
            // Nobody is left to tell of a failure.
            let _ = HelperCommand::new(program, args, REMOVAL_LIMIT).run();
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_program_starts_through_proc_under_its_own_name() {
        let command = WatchdogCommand::this_program(vec!["--list".into()]).unwrap();
        assert_eq!(command.program, Path::new(RUNNING_PROGRAM));
        assert_eq!(
            command.shown_as.as_deref(),
            Some(std::env::current_exe().unwrap().as_os_str())
        );
        // A child started from it runs this test program, which lists this test.
        let out = Command::new(&command.program)
            .args(["--list", "this_program_starts_through_proc"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("this_program_starts_through_proc"),
            "{out:?}"
        );
    }

    #[test]
    fn done_kills_nothing_and_end_of_input_kills_the_trees() {
        let token = format!("watchdog-test-{}", std::process::id());
        let start = || {
            Command::new("sleep")
                .arg("30")
                .env(crate::TOKEN_VAR, &token)
                .process_group(0)
                .spawn()
                .expect("sleep starts")
        };
        let mut child = start();
        let pid = child.id();
        let done = format!("{token} {pid}\n{DONE}\n");
        assert_eq!(serve_watchdog(done.as_bytes()), 0);
        assert!(child.try_wait().expect("wait").is_none(), "left alone");

        // Named by token only (died during the spawn) and then with its group.
        let lines = format!("{token}\n{token} {pid}\n");
        assert_eq!(serve_watchdog(lines.as_bytes()), 1);
        let status = child.wait().expect("wait");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }

    #[test]
    fn end_of_input_runs_the_container_removals_and_done_does_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let removed = dir.path().join("removed");
        let removal = serde_json::to_string(&[
            "sh".to_string(),
            "-c".into(),
            format!("echo gone > '{}'", removed.display()),
        ])
        .expect("json");
        let done = format!("{REMOVE}{removal}\n{DONE}\n");
        serve_watchdog(done.as_bytes());
        assert!(!removed.exists(), "a plan that ended removes nothing here");
        serve_watchdog(format!("{REMOVE}{removal}\n").as_bytes());
        assert_eq!(
            std::fs::read_to_string(&removed).expect("removed"),
            "gone\n"
        );
    }
}
