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
//! Every daemon is started with `SLURM_CONF` naming the slot's file, and every job inherits it:
//! `down` kills each process whose environment holds that entry (daemons, job steps, what the
//! jobs started), then removes the folder. It needs no record of what was started, so it also
//! cleans up after a test that was killed. Needs root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

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
    torn_down: bool,
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

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
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
    let install = || {
        Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "slurm-wlm",
                "munge",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
    };
    if !install().is_ok_and(|s| s.success()) {
        output(Command::new("apt-get").args(["update", "-q"]))?;
        if !install().is_ok_and(|s| s.success()) {
            bail!("could not install slurm-wlm and munge with apt-get");
        }
    }
    Ok(())
}

impl Slurm {
    /// Makes a cluster in the first free slot and waits until its node is idle. Whatever was
    /// started is stopped again when a step fails.
    pub fn up() -> anyhow::Result<Slurm> {
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
            torn_down: false,
        };
        if let Err(error) = slurm.start() {
            let logs = slurm.logs();
            slurm.teardown();
            return Err(error.context(logs));
        }
        Ok(slurm)
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
        for sub in ["munge", "spool/ctld", "spool/d", "log"] {
            fs_err::create_dir_all(dir.join(sub))?;
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
        fs_err::write(self.conf(), self.slurm_conf(&socket, &hardware)?)?;
        output(&mut self.daemon("slurmctld"))?;
        output(&mut self.daemon("slurmd"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let state =
                output(self.command("sinfo").args(["-h", "-N", "-o", "%t"])).unwrap_or_default();
            if state.trim() == "idle" {
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
        Ok(format!(
            "# A one-node cluster of the milabench test harness (cargo xtask slurm).\n\
             ClusterName=mb{slot}\n\
             SlurmctldHost={node}(127.0.0.1)\n\
             SlurmctldPort={port}\n\
             SlurmdPort={dport}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={dir}/spool/ctld\n\
             SlurmdSpoolDir={dir}/spool/d\n\
             SlurmctldPidFile={dir}/slurmctld.pid\n\
             SlurmdPidFile={dir}/slurmd.pid\n\
             SlurmctldLogFile={dir}/log/slurmctld.log\n\
             SlurmdLogFile={dir}/log/slurmd.log\n\
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
             NodeName={node} NodeAddr=127.0.0.1 {facts} State=UNKNOWN\n\
             PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP\n",
            slot = self.slot,
            socket = socket.display(),
            dport = port + 1,
            facts = facts.join(" "),
        ))
    }

    /// The last lines of the daemons' logs, to explain a failed start.
    fn logs(&self) -> String {
        let mut text = String::from("the harness's logs:");
        for name in ["munged", "slurmctld", "slurmd"] {
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

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
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

    /// The node's name (the one node of a harness cluster: this host's short name).
    pub fn node(&self) -> String {
        let out = self
            .command("sinfo")
            .args(["-h", "-N", "-o", "%N"])
            .output()
            .unwrap_or_else(|e| panic!("sinfo runs: {e}"));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
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
    Up,
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
        Action::Up => {
            let mut slurm = Slurm::up()?;
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
