//! Facts about the machines a suite runs on, found by running commands and reading the system:
//! what `milabench check` asks before hours of work. Every probe returns a value or a typed
//! error; nothing here prints. Probes of several nodes run in parallel, one ssh round trip
//! each. Slurm too: what an allocation holds and the calls to its clients ([`slurm`]), and a
//! suite run submitted as batch jobs and followed to its end ([`submission`]).

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use milabench_exec::{HelperCommand, HelperError};
use milabench_plan::SshTarget;
use milabench_vocab::shell_quote;
use serde::Serialize;

pub mod slurm;
pub mod submission;

/// How long a tool asked for its version may take.
const VERSION_TIME_LIMIT: Duration = Duration::from_secs(60);

/// How long the ssh round trip of [`probe_node`] may take: ssh gives up connecting after 10 s
/// (`ConnectTimeout`) and a silent server after 30 s (`ServerAliveInterval` 10 s, 3 times).
const PROBE_TIME_LIMIT: Duration = Duration::from_secs(60);

/// Why a probe could not give its answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The program of the probe (ssh) could not be run, or gave no answer in time.
    #[error(transparent)]
    Helper(#[from] HelperError),
    /// ssh could not reach the node or run the probe there.
    #[error("ssh to node `{node}` ({target}) failed: {message}")]
    Ssh {
        /// The node.
        node: String,
        /// `user@host port N`.
        target: String,
        /// ssh's own words.
        message: String,
    },
    /// A file system query failed.
    #[error("cannot query the file system of {path}")]
    FileSystem {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: nix::Error,
    },
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine.
    Ok,
    /// Not blocking, but worth knowing (or `run` will take care of it).
    Warn,
    /// A run would fail: fix it first.
    Fail,
}

/// One line of `milabench check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// The verdict.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// How to fix it (empty when ok).
    pub fix: String,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: String::new(),
        }
    }

    /// A check with a problem and its fix.
    pub fn problem(
        status: Status,
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            name: name.into(),
            status,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
}

/// Bytes free for an unprivileged user on the file system of `path` (or of its nearest
/// existing parent, for a base folder not made yet).
pub fn free_bytes(path: &Path) -> Result<u64, ProbeError> {
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let stat = nix::sys::statvfs::statvfs(existing).map_err(|source| ProbeError::FileSystem {
        path: existing.to_path_buf(),
        source,
    })?;
    Ok(stat.blocks_available() * stat.fragment_size())
}

/// Memory available to new processes (`MemAvailable` of `/proc/meminfo`), in bytes.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The first line `program args` prints (stdout, else stderr), if it runs and succeeds.
pub fn tool_version(program: &Path, args: &[&str]) -> Option<String> {
    let out = HelperCommand::new(program, args, VERSION_TIME_LIMIT)
        .run()
        .ok()
        .filter(|out| out.success())?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    text.lines().next().map(|l| l.trim().to_string())
}

/// Whether a TCP connection to `host:port` opens within `timeout` (the package index).
pub fn tcp_reachable(host: &str, port: u16, timeout: Duration) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|addr| TcpStream::connect_timeout(&addr, timeout).is_ok())
}

/// What a node says about itself in one ssh round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    /// The node.
    pub node: String,
    /// `milabench --version` of the program at `program` there, if it runs.
    pub version: Option<String>,
    /// Whether the base folder exists there.
    pub base_exists: bool,
}

/// Asks `target`, over ssh, for the version of the milabench at `program` (same path: a
/// shared file system) and whether `base` exists there. Connection problems (node down,
/// wrong key) are [`ProbeError::Ssh`] in ssh's words.
pub fn probe_node(
    target: &SshTarget,
    program: &Path,
    base: &Path,
) -> Result<NodeFacts, ProbeError> {
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let script = format!(
        "if [ -d {base} ]; then echo base=yes; else echo base=no; fi; {program} --version 2>/dev/null || true",
        base = quote(base),
        program = quote(program),
    );
    let mut argv = target.ssh_prefix();
    argv.push(script);
    let out = HelperCommand::new(&argv[0], &argv[1..], PROBE_TIME_LIMIT).run()?;
    if !out.success() || !out.stdout.contains("base=") {
        return Err(ProbeError::Ssh {
            node: target.node.clone(),
            target: target.describe(),
            message: out
                .stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no answer")
                .trim()
                .to_string(),
        });
    }
    let mut lines = out.stdout.lines();
    let base_exists = lines.next().is_some_and(|l| l.trim() == "base=yes");
    let version = lines
        .next()
        .map(|l| l.trim().to_string())
        .filter(|v| !v.is_empty());
    Ok(NodeFacts {
        node: target.node.clone(),
        version,
        base_exists,
    })
}

/// [`probe_node`] for every target at once (one thread each), in the targets' order.
pub fn probe_nodes(
    targets: &[SshTarget],
    program: &Path,
    base: &Path,
) -> Vec<Result<NodeFacts, ProbeError>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .map(|t| scope.spawn(move || probe_node(t, program, base)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ProbeError::Ssh {
                        node: String::new(),
                        target: String::new(),
                        message: "the probe thread panicked".into(),
                    })
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_of_a_folder_not_made_yet_is_its_parents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let here = free_bytes(dir.path()).expect("statvfs");
        let below = free_bytes(&dir.path().join("not/yet")).expect("statvfs");
        assert!(here > 0);
        // Same file system: the same order of magnitude (other writers may change it a bit).
        assert!(below.abs_diff(here) < here / 2 + 1);
    }

    #[test]
    fn a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(tcp_reachable("127.0.0.1", port, Duration::from_secs(2)));
        drop(listener);
        assert!(!tcp_reachable("127.0.0.1", port, Duration::from_secs(2)));
    }

    #[test]
    fn a_refused_ssh_is_an_error_naming_the_node() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let target = SshTarget {
            node: "gone".into(),
            user: "nobody".into(),
            host: "127.0.0.1".into(),
            port,
            key: None,
        };
        let error = probe_node(&target, Path::new("/bin/true"), Path::new("/"))
            .expect_err("nothing listens");
        let text = error.to_string();
        assert!(text.contains("node `gone`"), "{text}");
        assert!(text.contains("refused"), "{text}");
    }

    #[test]
    fn tool_versions_are_their_first_line() {
        assert!(
            tool_version(Path::new("sh"), &["-c", "echo v1; echo more"]).is_some_and(|v| v == "v1")
        );
        assert!(tool_version(Path::new("sh"), &["-c", "exit 1"]).is_none());
    }
}
