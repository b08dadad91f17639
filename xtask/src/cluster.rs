//! `cargo xtask cluster up|down`: two real "nodes" on this machine for multi-node tests.
//!
//! Each node is a Linux network namespace with its own address on a private test range
//! (`10.213.<slot>.1` and `.2`, joined by a veth pair: traffic stays between the two
//! namespaces) and a real OpenSSH server (Debian's `openssh-server`, installed with `apt-get`
//! when missing) listening on that address only, with host keys and a client key pair made for
//! the cluster. Both nodes see the same file system, as the nodes of a cluster with a shared
//! file system do. Node `a` (port 22) is the main node; node `b` listens on port 2222, so that
//! the system file's `port` matters. Inside its namespace each node's link is named [`LINK`].
//!
//! Run the orchestrator inside node `a` (`ip netns exec <netns of a> milabench run ...`): node
//! `a` is then this machine (its address is local) and node `b` is reached over ssh.
//!
//! Every cluster lives in `/run/milabench-cluster/<slot>` (keys, sshd configurations and logs,
//! `system.yaml`); the slot number is taken by creating that folder, so parallel tests get
//! their own clusters. `down` kills every process inside the cluster's namespaces (sshd and
//! anything left by a test), deletes the namespaces (which deletes the veth pair) and the
//! folder. `cargo xtask cluster down` without `--slot` does so for every cluster, including
//! those left by a test that was killed. Needs root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::host::{apt_install, which};

/// Where clusters live.
pub const ROOT: &str = "/run/milabench-cluster";

/// The name of each node's link inside its namespace: the same on both nodes, so that one
/// `GLOO_SOCKET_IFNAME` fits every rank (as on a cluster whose nodes name their NICs alike).
pub const LINK: &str = "mbc0";

/// Python source of `send(obj)`, which writes one data-channel record into stdout the way
/// every rank of a multi-node job does (`DATA_FD=1`: the data channel smuggled through ssh).
/// The caller imports `json` and `sys`.
pub const PYTHON_SEND: &str = r#"
def send(obj):
    h = (json.dumps(obj) + "\n").encode().hex().translate(str.maketrans("abcdef", ":;<=>?"))
    sys.stdout.write("\x1b[" + h + "z")
    sys.stdout.flush()
"#;

/// A suite of one benchmark, `pair` in `benchmarks/pair` (install group `tiny`), whose two
/// ranks run one on each node: what the multi-node tests and the bench's figures run.
pub const PAIR_SUITE: &str = "\
pair:
  inherits: _defaults
  definition: benchmarks/pair
  install_group: tiny
  tags: [multinode]
  weight: 1
  max_duration: 60
  num_machines: 2
  plan: {method: njobs, n: 1}
";

/// Highest slot number (the third byte of the test range).
const MAX_SLOT: u8 = 250;

/// One node of a cluster.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its name in the system file.
    pub name: &'static str,
    /// Its network namespace.
    pub netns: String,
    /// Its address.
    pub ip: String,
    /// Its sshd port.
    pub port: u16,
}

/// A running two-node cluster; dropping it tears it down.
#[derive(Debug)]
pub struct Cluster {
    /// Slot number (`10.213.<slot>.0/24`).
    pub slot: u8,
    /// The cluster's folder (keys, configurations, logs, `system.yaml`).
    pub dir: PathBuf,
    /// Node `a` (main) and node `b`.
    pub nodes: [Node; 2],
    /// Login on both nodes (the user running the harness).
    pub user: String,
    /// Private key authorized on both nodes.
    pub key: PathBuf,
    torn_down: bool,
}

/// Why the harness cannot run here, if it cannot: not root, or no network namespaces.
pub fn unavailable() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("the cluster harness needs root (network namespaces, sshd)".into());
    }
    if which("ip").is_none() {
        return Some("the cluster harness needs `ip` (Debian: apt-get install iproute2)".into());
    }
    None
}

/// Runs `program args`, failing with its output when it fails.
fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not start {program}"))?;
    if !output.status.success() {
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Installs Debian's `openssh-server` and `openssh-client` when `sshd` or `ssh` is missing.
fn ensure_openssh() -> anyhow::Result<()> {
    if Path::new("/usr/sbin/sshd").is_file() && which("ssh").is_some() {
        return Ok(());
    }
    eprintln!("==> cluster: installing openssh-server with apt-get");
    apt_install(&["openssh-server", "openssh-client"])
}

impl Cluster {
    /// Makes a cluster in the first free slot and checks that node `a` reaches node `b` over
    /// ssh. Whatever was made is removed again when a step fails.
    pub fn up() -> anyhow::Result<Cluster> {
        if let Some(why) = unavailable() {
            bail!("{why}");
        }
        ensure_openssh()?;
        fs_err::create_dir_all(ROOT)?;
        let slot = (1..=MAX_SLOT)
            .find(|slot| std::fs::create_dir(Path::new(ROOT).join(slot.to_string())).is_ok())
            .context("every cluster slot is taken\n  fix: cargo xtask cluster down")?;
        let user = run("id", &["-un"])?.trim().to_string();
        let dir = Path::new(ROOT).join(slot.to_string());
        let node = |name: &'static str, host: u8, port: u16| Node {
            name,
            netns: format!("mbc{slot}-{name}"),
            ip: format!("10.213.{slot}.{host}"),
            port,
        };
        let mut cluster = Cluster {
            slot,
            key: dir.join("id_ed25519"),
            dir,
            nodes: [node("a", 1, 22), node("b", 2, 2222)],
            user,
            torn_down: false,
        };
        if let Err(error) = cluster.make() {
            cluster.teardown();
            return Err(error);
        }
        Ok(cluster)
    }

    fn make(&self) -> anyhow::Result<()> {
        let dir = self
            .dir
            .to_str()
            .context("the cluster folder is not UTF-8")?;
        let key = self.key.to_str().context("the key path is not UTF-8")?;
        run("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f", key])?;
        fs_err::copy(format!("{key}.pub"), self.dir.join("authorized_keys"))?;
        // sshd's privilege separation folder.
        fs_err::create_dir_all("/run/sshd")?;
        let (left, right) = (format!("mbc{}a", self.slot), format!("mbc{}b", self.slot));
        run(
            "ip",
            &["link", "add", &left, "type", "veth", "peer", "name", &right],
        )?;
        for (node, link) in self.nodes.iter().zip([&left, &right]) {
            run("ip", &["netns", "add", &node.netns])?;
            run("ip", &["link", "set", link, "netns", &node.netns])?;
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &node.netns, "ip"];
                all.extend_from_slice(args);
                run("ip", &all)
            };
            inside(&["link", "set", "lo", "up"])?;
            inside(&["link", "set", link, "name", LINK])?;
            inside(&["addr", "add", &format!("{}/24", node.ip), "dev", LINK])?;
            inside(&["link", "set", LINK, "up"])?;
            let host_key = format!("{dir}/host_{}", node.name);
            run(
                "ssh-keygen",
                &["-q", "-t", "ed25519", "-N", "", "-f", &host_key],
            )?;
            let config = format!("{dir}/sshd_{}.conf", node.name);
            fs_err::write(
                &config,
                format!(
                    "ListenAddress {ip}:{port}\nHostKey {host_key}\nPidFile {dir}/sshd_{name}.pid\n\
                     AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PermitRootLogin prohibit-password\nMaxStartups 100\nLogLevel ERROR\n",
                    ip = node.ip,
                    port = node.port,
                    name = node.name,
                ),
            )?;
            run(
                "ip",
                &[
                    "netns",
                    "exec",
                    &node.netns,
                    "/usr/sbin/sshd",
                    "-f",
                    &config,
                    "-E",
                    &format!("{dir}/sshd_{}.log", node.name),
                ],
            )?;
        }
        fs_err::write(self.dir.join("system.yaml"), self.system_yaml())?;
        // Both directions over ssh, as a run needs them.
        let deadline = Instant::now() + Duration::from_secs(20);
        for (from, to) in [
            (&self.nodes[0], &self.nodes[1]),
            (&self.nodes[1], &self.nodes[0]),
        ] {
            loop {
                let status = self.ssh(from, to, &["true"]).status()?;
                if status.success() {
                    break;
                }
                if Instant::now() > deadline {
                    bail!(
                        "node {} does not reach node {} over ssh; see {dir}/sshd_{}.log",
                        from.name,
                        to.name,
                        to.name
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    /// The system file of this cluster: node `a` main, both with the cluster's key.
    pub fn system_yaml(&self) -> String {
        let mut text = format!(
            "system:\n  arch: cpu\n  sshkey: {}\n  nodes:\n",
            self.key.display()
        );
        for (i, node) in self.nodes.iter().enumerate() {
            text.push_str(&format!(
                "    - name: {}\n      ip: {}\n      port: {}\n      user: {}\n      main: {}\n",
                node.name,
                node.ip,
                node.port,
                self.user,
                i == 0
            ));
        }
        text
    }

    /// The path of `system.yaml`.
    pub fn system_file(&self) -> PathBuf {
        self.dir.join("system.yaml")
    }

    /// `program args` to run inside `node`'s namespace (as the orchestrator on that node).
    pub fn command_in(&self, node: &Node, program: &Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &node.netns]).arg(program);
        cmd
    }

    /// `ssh` from inside `from` to `to` with the cluster's key, running `args` there.
    pub fn ssh(&self, from: &Node, to: &Node, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &from.netns, "ssh", "-oBatchMode=yes"])
            .args([
                "-oStrictHostKeyChecking=no",
                "-oUserKnownHostsFile=/dev/null",
                "-oLogLevel=ERROR",
                "-oConnectTimeout=5",
            ])
            .arg("-i")
            .arg(&self.key)
            .args(["-p", &to.port.to_string()])
            .arg(format!("{}@{}", self.user, to.ip))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// Pids of the processes inside `node`'s namespace.
    pub fn pids(&self, node: &Node) -> Vec<u32> {
        run("ip", &["netns", "pids", &node.netns])
            .map(|out| {
                out.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The pid of `node`'s sshd (its listener).
    pub fn sshd_pid(&self, node: &Node) -> Option<u32> {
        fs_err::read_to_string(self.dir.join(format!("sshd_{}.pid", node.name)))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Stops `node`'s sshd: the node no longer answers ssh (connections are refused).
    pub fn stop_sshd(&self, node: &Node) -> anyhow::Result<()> {
        let pid = self.sshd_pid(node).context("sshd has no pid file")?;
        run("kill", &[&pid.to_string()])?;
        Ok(())
    }

    /// Removes everything the cluster made.
    pub fn down(mut self) {
        self.teardown();
    }

    fn teardown(&mut self) {
        if !self.torn_down {
            self.torn_down = true;
            remove_slot(self.slot);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Kills every process in the slot's namespaces, deletes the namespaces, the veth pair (if it
/// never left the root namespace) and the folder. Missing pieces are fine.
fn remove_slot(slot: u8) {
    for name in ["a", "b"] {
        let netns = format!("mbc{slot}-{name}");
        if let Ok(pids) = run("ip", &["netns", "pids", &netns]) {
            for pid in pids.split_whitespace() {
                let _ = run("kill", &["-KILL", pid]);
            }
        }
        let _ = run("ip", &["netns", "del", &netns]);
    }
    let _ = run("ip", &["link", "del", &format!("mbc{slot}a")]);
    let _ = std::fs::remove_dir_all(Path::new(ROOT).join(slot.to_string()));
}

/// Options of `cargo xtask cluster`.
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Make a two-node cluster and print its system file's path.
    Up,
    /// Remove a cluster (`--slot`), or every cluster.
    Down {
        /// The cluster's slot (as `up` printed it); every cluster when absent.
        #[arg(long)]
        slot: Option<u8>,
    },
}

/// Runs `cargo xtask cluster`.
pub fn run_cli(args: &ClusterArgs) -> anyhow::Result<()> {
    match args.action {
        Action::Up => {
            let mut cluster = Cluster::up()?;
            // Kept running after this command: `down` removes it.
            cluster.torn_down = true;
            println!("slot: {}", cluster.slot);
            println!("system file: {}", cluster.system_file().display());
            println!(
                "run inside node a: ip netns exec {} milabench run --system {} ...",
                cluster.nodes[0].netns,
                cluster.system_file().display()
            );
            Ok(())
        }
        Action::Down { slot: Some(slot) } => {
            remove_slot(slot);
            Ok(())
        }
        Action::Down { slot: None } => {
            for slot in slots_in_use() {
                remove_slot(slot);
            }
            Ok(())
        }
    }
}

/// Slots with a folder under [`ROOT`] or namespaces still present.
fn slots_in_use() -> Vec<u8> {
    let mut slots: Vec<u8> = std::fs::read_dir(ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    if let Ok(list) = run("ip", &["netns", "list"]) {
        slots.extend(list.lines().filter_map(|line| {
            let name = line.split_whitespace().next()?;
            name.strip_prefix("mbc")?
                .split_once('-')?
                .0
                .parse::<u8>()
                .ok()
        }));
    }
    slots.sort_unstable();
    slots.dedup();
    slots
}
