//! `cargo xtask slurm up|down`: a real one-node Slurm on this machine, for the Slurm tests.
//!
//! `up` installs Debian's `slurm-wlm` and `munge` when their programs are missing (`apt-get
//! update` once, only when the first install attempt fails), then makes a cluster in the first
//! free slot `/run/milabench-slurm/<slot>`: a munge key and `munged` with its socket there, a
//! `slurm.conf` for this machine (one node named after the host, its real CPUs and memory from
//! `slurmd -C`, loopback addresses, ports `17000 + 2 × slot` and the next one), then
//! `slurmctld` and `slurmd`, and waits until `sinfo` says the node is idle.
//!
//! The configuration is the smallest that works as root in a container: processes tracked
//! through their parents (`proctrack/linuxproc`, no cgroups), no task plugin, no accounting
//! daemon (job states come from `scontrol show job`, not `sacct`). Clients find the cluster
//! through `SLURM_CONF`; a job inherits it from `sbatch`, so `srun` inside the job finds it
//! too.
//!
//! With two nodes (`up --two-nodes`, [`Slurm::up_two_nodes`]), a second node `b` lives in a
//! network namespace of its own (`mbs<slot>-b`), joined to this machine by a veth pair
//! (`10.216.<slot>.1` here, `.2` in it): the controller and this host's `slurmd` listen on the
//! host's side, node `b`'s `slurmd` is started inside the namespace with `nsenter --net` (not
//! `ip netns exec`, which remounts `/sys` without the cgroup file system slurmd reads) and in a
//! UTS namespace of its own whose host name is `b`: it shares the file system but not the
//! network nor the name, so a job step `srun` starts on `b` really runs behind the link, and a
//! batch script Slurm runs there knows it is on `b`.
//!
//! Every daemon is started with `SLURM_CONF` naming the slot's file, and every job inherits it:
//! `down` kills each process whose environment holds that entry (daemons, job steps, what the
//! jobs started), then removes the folder (and the namespace and link of a second node). It needs no record of what was started, so it also
//! cleans up after a test that was killed. Needs root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::host::{apt_install, set_mode, which};

/// Where clusters live.
pub const ROOT: &str = "/run/milabench-slurm";

/// The variable that names a running harness's `slurm.conf` to the tests; `cargo xtask ci`
/// sets it, so the tests share one cluster instead of starting one each.
pub const TEST_SLURM_CONF: &str = "MILABENCH_TEST_SLURM_CONF";

/// The one partition of every harness cluster.
pub const PARTITION: &str = "debug";

/// Highest slot number.
const MAX_SLOT: u16 = 200;

/// First port of slot 0 (`slurmctld`; `slurmd` takes the next one).
const BASE_PORT: u16 = 17000;

/// A running one-node Slurm; dropping it tears it down.
#[derive(Debug)]
pub struct Slurm {
    /// Slot number.
    pub slot: u16,
    /// The cluster's folder (configuration, munge key and socket, spool, logs).
    pub dir: PathBuf,
    /// The node's name (this host's short name).
    pub node: String,
    /// Whether a second node `b` runs in a network namespace.
    pub two_nodes: bool,
    torn_down: bool,
}

/// The second node's name.
pub const SECOND_NODE: &str = "b";

/// The network namespace of slot `slot`'s second node.
pub fn second_netns(slot: u16) -> String {
    format!("mbs{slot}-b")
}

/// The addresses of this host (`1`) and of the second node (`2`) in slot `slot`.
fn link_address(slot: u16, end: u8) -> String {
    format!("10.216.{slot}.{end}")
}

/// Why the harness cannot run here, if it cannot: only root can start Slurm's daemons as this
/// harness does.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::Uid::effective().is_root() {
        return Some(
            "the Slurm harness needs root (it installs slurm-wlm and starts munged, slurmctld and slurmd)"
                .into(),
        );
    }
    if which("apt-get").is_none() && which("slurmctld").is_none() {
        return Some(
            "the Slurm harness needs Debian's apt-get to install slurm-wlm and munge".into(),
        );
    }
    None
}

/// Runs `command`, failing with its output when it fails; its stdout.
fn output(command: &mut Command) -> anyhow::Result<String> {
    let shown = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not start {shown}"))?;
    if !out.status.success() {
        bail!(
            "{shown} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Installs `slurm-wlm` and `munge` with apt-get when a daemon or client is missing.
fn ensure_slurm() -> anyhow::Result<()> {
    let needed = [
        "slurmctld",
        "slurmd",
        "munged",
        "sbatch",
        "scontrol",
        "srun",
    ];
    if needed.iter().all(|p| which(p).is_some()) {
        return Ok(());
    }
    eprintln!("==> slurm: installing slurm-wlm and munge with apt-get");
    apt_install(&["slurm-wlm", "munge"])
}

impl Slurm {
    /// Makes a cluster in the first free slot and waits until its node is idle. Whatever was
    /// started is stopped again when a step fails.
    pub fn up() -> anyhow::Result<Slurm> {
        Slurm::make(false)
    }

    /// [`Slurm::up`] with a second node, [`SECOND_NODE`], in a network namespace.
    pub fn up_two_nodes() -> anyhow::Result<Slurm> {
        Slurm::make(true)
    }

    fn make(two_nodes: bool) -> anyhow::Result<Slurm> {
        if let Some(why) = unavailable() {
            bail!("{why}");
        }
        ensure_slurm()?;
        fs_err::create_dir_all(ROOT)?;
        let slot = (0..=MAX_SLOT)
            .find(|slot| std::fs::create_dir(Path::new(ROOT).join(slot.to_string())).is_ok())
            .context("every Slurm harness slot is taken\n  fix: cargo xtask slurm down")?;
        let node = output(Command::new("hostname").arg("-s"))?
            .trim()
            .to_string();
        let mut slurm = Slurm {
            slot,
            dir: Path::new(ROOT).join(slot.to_string()),
            node,
            two_nodes,
            torn_down: false,
        };
        if let Err(error) = slurm.start() {
            let logs = slurm.logs();
            slurm.teardown();
            return Err(error.context(logs));
        }
        Ok(slurm)
    }

    /// The names of the cluster's nodes: this host's, then [`SECOND_NODE`] with two.
    pub fn nodes(&self) -> Vec<String> {
        let mut nodes = vec![self.node.clone()];
        if self.two_nodes {
            nodes.push(SECOND_NODE.to_string());
        }
        nodes
    }

    /// The path of the cluster's `slurm.conf` (what `SLURM_CONF` must name).
    pub fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// A Slurm client command (`sbatch`, `scontrol`...) talking to this cluster.
    pub fn command(&self, program: &str) -> Command {
        client(&self.conf(), program)
    }

    fn start(&self) -> anyhow::Result<()> {
        let dir = &self.dir;
        for sub in ["munge", "spool/ctld", "log"] {
            fs_err::create_dir_all(dir.join(sub))?;
        }
        for node in self.nodes() {
            fs_err::create_dir_all(dir.join(format!("spool/d-{node}")))?;
        }
        let secret = dir.join("secret");
        fs_err::create_dir_all(&secret)?;
        set_mode(dir, 0o755)?;
        set_mode(&secret, 0o700)?;
        set_mode(&dir.join("munge"), 0o755)?;
        let key = secret.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        fs_err::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
        fs_err::write(&key, bytes)?;
        set_mode(&key, 0o400)?;
        let socket = dir.join("munge/munge.socket");
        output(
            self.daemon("munged")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
                .arg(format!("--seed-file={}", secret.join("seed").display()))
                .arg(format!(
                    "--log-file={}",
                    dir.join("log/munged.log").display()
                )),
        )?;
        let hardware = output(Command::new("slurmd").arg("-C"))?;
        if self.two_nodes {
            self.make_link()?;
        }
        fs_err::write(self.conf(), self.slurm_conf(&socket, &hardware)?)?;
        output(&mut self.daemon("slurmctld"))?;
        output(self.daemon("slurmd").args(["-N", &self.node]))?;
        if self.two_nodes {
            // Its own host name too (a UTS namespace), as a real node has: `run` in a job
            // there knows which node it runs on.
            let slurmd = which("slurmd").unwrap_or_else(|| "slurmd".into());
            let mut second = self.daemon("nsenter");
            second
                .arg(format!("--net=/run/netns/{}", second_netns(self.slot)))
                .args(["unshare", "--uts", "sh", "-c"])
                .arg(format!(
                    "hostname {SECOND_NODE} && exec {} -N {SECOND_NODE}",
                    slurmd.display()
                ));
            output(&mut second)?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let state =
                output(self.command("sinfo").args(["-h", "-N", "-o", "%t"])).unwrap_or_default();
            if !state.trim().is_empty() && state.lines().all(|l| l.trim() == "idle") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the Slurm node never became idle (sinfo says `{}`)",
                    state.trim()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The second node's namespace, and the veth pair that joins it to this host.
    fn make_link(&self) -> anyhow::Result<()> {
        let netns = second_netns(self.slot);
        let (here, there) = (format!("mbs{}a", self.slot), format!("mbs{}b", self.slot));
        let ip = |args: &[&str]| output(Command::new("ip").args(args));
        ip(&["netns", "add", &netns])?;
        ip(&["link", "add", &here, "type", "veth", "peer", "name", &there])?;
        ip(&["link", "set", &there, "netns", &netns])?;
        let host = format!("{}/24", link_address(self.slot, 1));
        ip(&["addr", "add", &host, "dev", &here])?;
        ip(&["link", "set", &here, "up"])?;
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &netns, "ip"];
            all.extend(args);
            ip(&all)
        };
        inside(&[
            "addr",
            "add",
            &format!("{}/24", link_address(self.slot, 2)),
            "dev",
            &there,
        ])?;
        inside(&["link", "set", &there, "up"])?;
        inside(&["link", "set", "lo", "up"])?;
        Ok(())
    }

    /// `program` started as a daemon of this cluster (marked by its `SLURM_CONF`).
    fn daemon(&self, program: &str) -> Command {
        let mut command = Command::new(which(program).unwrap_or_else(|| program.into()));
        command.env("SLURM_CONF", self.conf());
        command
    }

    /// The configuration: this host as the one node, with the CPUs and memory `slurmd -C`
    /// found (`hardware`, its first line), and everything the cluster keeps under its folder.
    fn slurm_conf(&self, socket: &Path, hardware: &str) -> anyhow::Result<String> {
        let facts = hardware
            .lines()
            .next()
            .context("`slurmd -C` printed nothing")?;
        let facts: Vec<&str> = facts
            .split_whitespace()
            .filter(|kv| !kv.starts_with("NodeName="))
            .collect();
        let dir = self.dir.display();
        let port = BASE_PORT + 2 * self.slot;
        let node = &self.node;
        let facts = facts.join(" ");
        let (address, nodes, more) = if self.two_nodes {
            let second = format!(
                "NodeName={SECOND_NODE} NodeAddr={} {facts} State=UNKNOWN\n",
                link_address(self.slot, 2)
            );
            (
                link_address(self.slot, 1),
                format!("{node},{SECOND_NODE}"),
                second,
            )
        } else {
            ("127.0.0.1".to_string(), node.clone(), String::new())
        };
        Ok(format!(
            "# A cluster of the milabench test harness (cargo xtask slurm).\n\
             ClusterName=mb{slot}\n\
             SlurmctldHost={node}({address})\n\
             SlurmctldPort={port}\n\
             SlurmdPort={dport}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={dir}/spool/ctld\n\
             SlurmdSpoolDir={dir}/spool/d-%n\n\
             SlurmctldPidFile={dir}/slurmctld.pid\n\
             SlurmdPidFile={dir}/slurmd-%n.pid\n\
             SlurmctldLogFile={dir}/log/slurmctld.log\n\
             SlurmdLogFile={dir}/log/slurmd-%n.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             MpiDefault=none\n\
             SchedulerType=sched/backfill\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             ReturnToService=2\n\
             InactiveLimit=0\n\
             KillWait=2\n\
             OverTimeLimit=0\n\
             MinJobAge=600\n\
             NodeName={node} NodeAddr={address} {facts} State=UNKNOWN\n\
             {more}\
             PartitionName={PARTITION} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP\n",
            slot = self.slot,
            socket = socket.display(),
            dport = port + 1,
        ))
    }

    /// The last lines of the daemons' logs, to explain a failed start.
    fn logs(&self) -> String {
        let mut text = String::from("the harness's logs:");
        let slurmds = self.nodes().into_iter().map(|n| format!("slurmd-{n}"));
        for name in ["munged".to_string(), "slurmctld".to_string()]
            .into_iter()
            .chain(slurmds)
        {
            let log = fs_err::read_to_string(self.dir.join(format!("log/{name}.log")))
                .unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            text.push_str(&format!("\n--- {name}\n"));
            text.push_str(&lines[lines.len().saturating_sub(10)..].join("\n"));
        }
        text
    }

    /// Stops everything the cluster started and removes its folder.
    pub fn down(mut self) {
        self.teardown();
    }

    fn teardown(&mut self) {
        if !self.torn_down {
            self.torn_down = true;
            remove_slot(&self.dir);
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A Slurm client `program` talking to the cluster of `conf`.
pub fn client(conf: &Path, program: &str) -> Command {
    let mut command = Command::new(program);
    command.env("SLURM_CONF", conf).stdin(Stdio::null());
    command
}

/// Kills every process whose environment names the slot's `slurm.conf` (twice, for what a
/// dying job step starts), then removes the folder.
fn remove_slot(dir: &Path) {
    let entry = format!("SLURM_CONF={}", dir.join("slurm.conf").display());
    for _ in 0..2 {
        for pid in holders(&entry) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // A second node's namespace and link, if the slot had one (deleting the namespace deletes
    // the link's end inside it, and so the pair).
    let slot = dir
        .file_name()
        .and_then(|n| n.to_str()?.parse::<u16>().ok());
    if let Some(slot) = slot
        && Path::new("/run/netns").join(second_netns(slot)).exists()
    {
        let _ = output(Command::new("ip").args(["netns", "del", &second_netns(slot)]));
        let _ = output(Command::new("ip").args(["link", "del", &format!("mbs{slot}a")]));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Pids (not this process) whose environment holds `entry`.
fn holders(entry: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == entry.as_bytes()))
        })
        .collect()
}

/// The cluster a test uses: the one `cargo xtask ci` shares through [`TEST_SLURM_CONF`], or
/// one of its own (torn down when the test ends).
#[derive(Debug)]
pub struct TestSlurm {
    conf: PathBuf,
    _own: Option<Slurm>,
}

impl TestSlurm {
    /// The shared cluster, else a new one; panics (failing the test) when none can start.
    pub fn get() -> TestSlurm {
        if let Some(conf) = std::env::var_os(TEST_SLURM_CONF) {
            return TestSlurm {
                conf: conf.into(),
                _own: None,
            };
        }
        TestSlurm::own()
    }

    /// A cluster of the test's own even when `cargo xtask ci` shares one: for a test that
    /// takes its node down, which would end the shared cluster's other jobs. Panics (failing
    /// the test) when none can start.
    pub fn own() -> TestSlurm {
        let own = Slurm::up().unwrap_or_else(|e| panic!("the Slurm harness starts: {e:#}"));
        TestSlurm {
            conf: own.conf(),
            _own: Some(own),
        }
    }

    /// A cluster of the test's own with a second node, [`SECOND_NODE`], in a network
    /// namespace. Panics (failing the test) when none can start.
    pub fn own_two_nodes() -> TestSlurm {
        let own =
            Slurm::up_two_nodes().unwrap_or_else(|e| panic!("the Slurm harness starts: {e:#}"));
        TestSlurm {
            conf: own.conf(),
            _own: Some(own),
        }
    }

    /// The name of this host's node (the first node of a harness cluster).
    pub fn node(&self) -> String {
        let out = self
            .command("sinfo")
            .args(["-h", "-N", "-o", "%N"])
            .output()
            .unwrap_or_else(|e| panic!("sinfo runs: {e}"));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .find(|n| *n != SECOND_NODE)
            .unwrap_or_default()
            .to_string()
    }

    /// The cluster's `slurm.conf`.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// A Slurm client command (`sbatch`, `scontrol`...) talking to this cluster.
    pub fn command(&self, program: &str) -> Command {
        client(&self.conf, program)
    }
}

/// Options of `cargo xtask slurm`.
#[derive(Debug, clap::Args)]
pub struct SlurmArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Start a one-node Slurm and print its `SLURM_CONF`.
    Up {
        /// Add a second node, `b`, in a network namespace of its own.
        #[arg(long)]
        two_nodes: bool,
    },
    /// Stop a cluster (`--slot`), or every cluster, and remove its files.
    Down {
        /// The cluster's slot (as `up` printed it); every cluster when absent.
        #[arg(long)]
        slot: Option<u16>,
    },
}

/// Runs `cargo xtask slurm`.
pub fn run_cli(args: &SlurmArgs) -> anyhow::Result<()> {
    match args.action {
        Action::Up { two_nodes } => {
            let mut slurm = Slurm::make(two_nodes)?;
            // Kept running after this command: `down` removes it.
            slurm.torn_down = true;
            println!("slot: {}", slurm.slot);
            println!("SLURM_CONF={}", slurm.conf().display());
            println!(
                "use it: export SLURM_CONF={} (tests: {TEST_SLURM_CONF}={})",
                slurm.conf().display(),
                slurm.conf().display()
            );
            Ok(())
        }
        Action::Down { slot: Some(slot) } => {
            remove_slot(&Path::new(ROOT).join(slot.to_string()));
            Ok(())
        }
        Action::Down { slot: None } => {
            for entry in std::fs::read_dir(ROOT).into_iter().flatten().flatten() {
                remove_slot(&entry.path());
            }
            Ok(())
        }
    }
}
