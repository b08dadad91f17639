//! How a process reaches the node it runs on: the one place that knows the ways (run it here,
//! over `ssh`, or with Slurm's `srun` inside an allocation). Applied after the planner built
//! the command and its environment, so a new way to reach nodes touches only this file.
//!
//! `srun` needs no supervisor: it starts the rank as a step of the job on the node, forwards
//! the environment it was given (the executor sets the rank's variables on the local `srun`,
//! `--export=ALL`), passes SIGTERM on to the rank and ends the step when it is stopped, and
//! Slurm ends every step when the job ends.
//!
//! A rank started over ssh must not outlive what started it. ssh does not forward signals
//! (without a terminal), and killing the local `ssh` client only closes the connection; the
//! remote command would keep running. So the remote side runs a small POSIX shell supervisor
//! ([`RANK_SUPERVISOR`]) around the command:
//!
//! - the command runs in a new session, with a token in its environment
//!   (`MILABENCH_RANK_TOKEN`) that its descendants inherit, torchrun's workers included (they
//!   start their own sessions, so a process group would miss them);
//! - the supervisor reads its standard input, which the orchestrator keeps open for as long as
//!   it wants the rank alive: end of file (the orchestrator closed it to stop the rank, or it
//!   died, or the connection dropped) stops every process holding the token: SIGTERM, then
//!   SIGKILL after [`REMOTE_GRACE_SECONDS`];
//! - when the command ends on its own, whatever it left behind is stopped the same way, and the
//!   supervisor exits with the command's status, which `ssh` passes back. A process caught
//!   between `fork` and `exec` may hide its environment for an instant: the supervisor looks
//!   twice, 0.2 s apart, before it decides that nothing is left.

use camino::Utf8Path;
use indexmap::IndexMap;
use serde::Serialize;

use milabench_vocab::shell_quote;

/// Seconds a remote rank has between SIGTERM and SIGKILL once it is told to stop.
pub const REMOTE_GRACE_SECONDS: u32 = 5;

/// The environment variable that marks every process of one remote rank.
pub const RANK_TOKEN_VAR: &str = "MILABENCH_RANK_TOKEN";

/// The remote supervisor, run as `sh -c RANK_SUPERVISOR milabench-rank COMMAND...` (see the
/// module notes). `@GRACE@` is replaced by the grace period in seconds.
const RANK_SUPERVISOR: &str = r#"t="milabench-rank-$$-$(date +%s%N)"
exec 3<&0 </dev/null
MILABENCH_RANK_TOKEN="$t" setsid "$@" &
r=$!
members() {
  for f in $(grep -lxzsF "MILABENCH_RANK_TOKEN=$t" /proc/[0-9]*/environ); do
    d=${f%/environ}
    echo "${d#/proc/}"
  done
}
stop() {
  p=$(members)
  if [ -z "$p" ]; then
    sleep 0.2
    p=$(members)
    [ -n "$p" ] || return 0
  fi
  kill -TERM $p 2>/dev/null
  end=$(($(date +%s) + @GRACE@))
  while [ "$(date +%s)" -lt "$end" ]; do
    sleep 0.2
    p=$(members)
    [ -n "$p" ] || return 0
  done
  kill -KILL $p 2>/dev/null
}
{ cat <&3; stop; } >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$r"
c=$?
kill "$w" 2>/dev/null
stop
exit "$c"
"#;

/// Where and how to reach a node over ssh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SshTarget {
    /// The node's name in the system file.
    pub node: String,
    /// Login.
    pub user: String,
    /// Address.
    pub host: String,
    /// ssh port.
    pub port: u16,
    /// Private key (`sshkey` of the system file), if any.
    pub key: Option<String>,
}

impl SshTarget {
    /// `user@host port N`, to name the target in messages.
    pub fn describe(&self) -> String {
        format!("{}@{} port {}", self.user, self.host, self.port)
    }

    /// `ssh` and its options up to the destination (`user@host`), without a remote command:
    /// batch mode (never a password prompt), a connection timeout, keep-alives that notice a
    /// vanished node, and the key.
    pub fn ssh_prefix(&self) -> Vec<String> {
        let mut out: Vec<String> = [
            "ssh",
            "-oBatchMode=yes",
            "-oCheckHostIP=no",
            "-oStrictHostKeyChecking=no",
            "-oLogLevel=ERROR",
            "-oConnectTimeout=10",
            "-oServerAliveInterval=10",
            "-oServerAliveCountMax=3",
            "-p",
        ]
        .map(String::from)
        .into();
        out.push(self.port.to_string());
        if let Some(key) = &self.key {
            out.push(format!("-i{key}"));
        }
        out.push(format!("{}@{}", self.user, self.host));
        out
    }
}

/// A node of the Slurm allocation this process runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SrunTarget {
    /// The node's Slurm name (its name in the system).
    pub node: String,
}

impl SrunTarget {
    /// `srun` and its options up to the command: one task on this one node, sharing the
    /// resources of the job's other steps (`--overlap`: the main rank's own step holds them),
    /// in `cwd`, with the whole environment of the `srun` process.
    pub fn srun_prefix(&self, cwd: &Utf8Path) -> Vec<String> {
        vec![
            "srun".into(),
            "--nodes=1".into(),
            "--ntasks=1".into(),
            format!("--nodelist={}", self.node),
            "--overlap".into(),
            "--kill-on-bad-exit=1".into(),
            "--export=ALL".into(),
            format!("--chdir={cwd}"),
        ]
    }
}

/// How a process reaches its node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Launch {
    /// Started directly on this machine.
    #[default]
    Local,
    /// Started over ssh under the rank supervisor; its standard input must stay open for as
    /// long as it should live (closing it stops the remote rank).
    Ssh(SshTarget),
    /// Started with `srun` on a node of the Slurm allocation this process runs in.
    Srun(SrunTarget),
}

impl Launch {
    /// The command that runs `argv` in `cwd` with `env` on the node. Local: `argv` itself (the
    /// executor applies `cwd` and `env`). ssh: `ssh ... user@host sh -c SUPERVISOR
    /// milabench-rank env -C CWD K=V ... ARGV`, every remote word quoted, since ssh joins them
    /// into one command line for the remote shell; ssh forwards no environment, so all of
    /// `env` travels on that line. srun: `srun ... --nodelist=NODE --chdir=CWD ARGV`, `env`
    /// set on `srun` itself by the executor and exported to the rank.
    pub fn wrap(
        &self,
        cwd: &Utf8Path,
        env: &IndexMap<String, String>,
        argv: Vec<String>,
    ) -> Vec<String> {
        match self {
            Launch::Local => argv,
            Launch::Ssh(target) => {
                let mut out = target.ssh_prefix();
                out.extend(
                    remote_rank_command(cwd, env, argv)
                        .iter()
                        .map(|word| shell_quote(word)),
                );
                out
            }
            Launch::Srun(target) => {
                let mut out = target.srun_prefix(cwd);
                out.extend(argv);
                out
            }
        }
    }

    /// The command that runs `words`, a short command run to its end (no rank of a
    /// benchmark), on the node: `words` themselves here, over ssh without the rank supervisor
    /// (which would stop it as soon as its input closes), or with `srun` in `cwd`.
    pub fn reach(&self, cwd: &Utf8Path, words: Vec<String>) -> Vec<String> {
        match self {
            Launch::Local => words,
            Launch::Ssh(target) => {
                let mut out = target.ssh_prefix();
                out.extend(words.iter().map(|w| shell_quote(w)));
                out
            }
            Launch::Srun(target) => {
                let mut out = target.srun_prefix(cwd);
                out.extend(words);
                out
            }
        }
    }

    /// The node's ssh target, for an ssh launch.
    pub fn ssh_target(&self) -> Option<&SshTarget> {
        match self {
            Launch::Ssh(target) => Some(target),
            Launch::Local | Launch::Srun(_) => None,
        }
    }
}

/// The words the remote shell runs for one rank (before quoting): the supervisor around
/// `env -C CWD K=V ... ARGV`.
pub fn remote_rank_command(
    cwd: &Utf8Path,
    env: &IndexMap<String, String>,
    argv: Vec<String>,
) -> Vec<String> {
    let supervisor = RANK_SUPERVISOR.replace("@GRACE@", &REMOTE_GRACE_SECONDS.to_string());
    let mut words = vec![
        "sh".to_string(),
        "-c".into(),
        supervisor,
        "milabench-rank".into(),
        "env".into(),
        "-C".into(),
        cwd.to_string(),
    ];
    words.extend(env.iter().map(|(key, value)| format!("{key}={value}")));
    words.extend(argv);
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn target() -> SshTarget {
        SshTarget {
            node: "b".into(),
            user: "me".into(),
            host: "10.0.0.2".into(),
            port: 2222,
            key: Some("/keys/id".into()),
        }
    }

    #[test]
    fn local_is_the_command_itself() {
        let argv = vec!["python".to_string(), "main.py".into()];
        assert_eq!(
            Launch::Local.wrap("/code".into(), &IndexMap::new(), argv.clone()),
            argv
        );
    }

    #[test]
    fn ssh_quotes_the_remote_words_and_carries_the_environment() {
        let mut env = IndexMap::new();
        env.insert("A".to_string(), "x y".to_string());
        let argv = Launch::Ssh(target()).wrap("/code".into(), &env, vec!["run".into()]);
        let at = argv.iter().position(|a| a == "me@10.0.0.2").expect("dest");
        assert_eq!(argv[at - 3..at], ["-p", "2222", "-i/keys/id"]);
        assert_eq!(argv[at + 1..at + 3], ["sh", "-c"]);
        assert_eq!(
            argv[at + 4..],
            ["milabench-rank", "env", "-C", "/code", "'A=x y'", "run"]
        );
    }

    #[test]
    fn srun_starts_one_task_on_the_node_in_the_folder() {
        let launch = Launch::Srun(SrunTarget {
            node: "cn07".into(),
        });
        let argv = launch.wrap(
            "/code".into(),
            &IndexMap::new(),
            vec!["run".into(), "a b".into()],
        );
        assert_eq!(argv[0], "srun");
        assert!(argv.contains(&"--nodelist=cn07".to_string()), "{argv:?}");
        assert!(argv.contains(&"--overlap".to_string()), "{argv:?}");
        assert!(argv.contains(&"--chdir=/code".to_string()), "{argv:?}");
        assert_eq!(
            argv[argv.len() - 2..],
            ["run", "a b"],
            "srun takes the words as they are"
        );
        assert_eq!(launch.ssh_target(), None);
    }

    /// Lists the pids whose environment holds `entry`.
    fn holders(entry: &str) -> Vec<u32> {
        std::fs::read_dir("/proc")
            .expect("proc")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == entry.as_bytes()))
            })
            .collect()
    }

    /// The supervisor as the remote shell would run it, here: closing its standard input stops
    /// the command and a grandchild that left the session (as torchrun's workers do).
    #[test]
    fn end_of_input_stops_the_rank_and_what_it_started() {
        let marker = format!("MARK_{}", std::process::id());
        let words = remote_rank_command(
            "/".into(),
            &IndexMap::from([(marker.clone(), "1".to_string())]),
            vec![
                "sh".into(),
                "-c".into(),
                "setsid sleep 300 & trap '' TERM; sleep 300".into(),
            ],
        );
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .stdin(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let entry = format!("{marker}=1");
        let deadline = Instant::now() + Duration::from_secs(10);
        while holders(&entry).len() < 3 {
            assert!(Instant::now() < deadline, "the rank never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"ignored\n").expect("write");
        drop(stdin);
        let status = child.wait().expect("wait");
        assert!(!status.success(), "a stopped rank does not succeed");
        assert!(holders(&entry).is_empty(), "left: {:?}", holders(&entry));
    }

    /// A command that ends on its own: its status comes back and its leftovers are stopped.
    #[test]
    fn the_rank_status_comes_back_and_leftovers_are_stopped() {
        let marker = format!("LEFT_{}", std::process::id());
        let words = remote_rank_command(
            "/".into(),
            &IndexMap::from([(marker.clone(), "1".to_string())]),
            vec!["sh".into(), "-c".into(), "setsid sleep 300 & exit 7".into()],
        );
        // The write end stays open: the rank must end on its own, not because it was told to.
        let (read_end, _write_end) = std::io::pipe().expect("pipe");
        let status = Command::new(&words[0])
            .args(&words[1..])
            .stdin(read_end)
            .status()
            .expect("sh runs");
        assert_eq!(status.code(), Some(7));
        assert!(holders(&format!("{marker}=1")).is_empty());
    }
}
