//! The container harness: Debian's podman and docker.io on this machine, and the image of this
//! repository's `Containerfile` in both, for the container tests (`cargo xtask e2e`'s container
//! steps, `cargo xtask containers up|down`).
//!
//! - [`ensure_installed`] installs `podman`, `docker.io`, `debootstrap` and `runc` with apt-get
//!   when one of their programs is missing.
//! - [`base_image`] is the image every build starts from. No registry is reachable here, so it
//!   is a Debian root file system made by `debootstrap` (the host's release, so its python3 is
//!   the host's) and imported with `podman import`. Its tag and its archive
//!   (`target/containers/<tag>.tar.gz`) are keyed by the release and the recipe: a second run
//!   finds the image in podman's storage, or imports the archive again (seconds, not the minute
//!   and a half of `debootstrap`).
//! - [`build_image`] builds `Containerfile` with podman: the `milabench` and `uv` programs given,
//!   the suite's environments installed for a selection of the CPU suite, uv's cache lent from
//!   the host. The environments are made with `UV_LINK_MODE=symlink` into the host's cache,
//!   mounted at [`IMAGE_UV_CACHE`] while building and while running (see [`mounts`]): PyPI's
//!   torch brings 5 GB of CUDA libraries even for the CPU, which would otherwise be in the
//!   image twice (podman's and docker's storage) and take twice that while podman commits it.
//! - [`Dockerd`] starts a docker daemon of its own (its socket, pid file and state in
//!   [`DOCKER_RUN_DIR`]; overlay2, no iptables, no bridge: containers use the host's network)
//!   and loads an image into it from `podman save`; dropping it stops the daemon.
//!
//! The settings this machine needs are constants here, not milabench defaults: podman runs a
//! container only with runc, cgroupfs and rlimits at or under the host's ([`PODMAN_GLOBAL_ARGS`],
//! [`PODMAN_RUN_ARGS`]); docker needs none. Needs root.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::host::{apt_install, which};

/// The repository of the base image (its tag is the release and the recipe's hash).
pub const BASE_REPOSITORY: &str = "localhost/milabench-base";

/// The image the e2e builds from `Containerfile`.
pub const IMAGE: &str = "localhost/milabench:cpu-e2e";

/// The base folder inside the image (`MILABENCH_BASE` of `Containerfile`), the system file's
/// `container.base`.
pub const IMAGE_BASE: &str = "/milabench/envs";

/// Where the host's uv cache is mounted in the image, while building and while running.
pub const IMAGE_UV_CACHE: &str = "/uv-cache";

/// podman's options before `run` on this machine: runc (crun refuses cgroups mounted in hybrid
/// mode) and cgroupfs (no systemd).
pub const PODMAN_GLOBAL_ARGS: [&str; 3] = ["--runtime", "runc", "--cgroup-manager=cgroupfs"];

/// podman's options of `run` on this machine: rlimits it may set (its defaults are above the
/// host's hard limits, and the machine withholds `CAP_SYS_RESOURCE`).
pub const PODMAN_RUN_ARGS: [&str; 4] = [
    "--ulimit",
    "nofile=4096:4096",
    "--ulimit",
    "nproc=4096:4096",
];

/// The docker daemon's folder: its socket, pid file, log and execution state.
pub const DOCKER_RUN_DIR: &str = "/run/milabench-docker";

/// The docker daemon's address, as `DOCKER_HOST` takes it.
pub const DOCKER_HOST: &str = "unix:///run/milabench-docker/docker.sock";

/// Debian's packages the harness needs.
const PACKAGES: [&str; 4] = ["podman", "docker.io", "debootstrap", "runc"];

/// The packages `debootstrap` adds to Debian's minimal base: what the image's environments need.
const BASE_PACKAGES: &str = "python3,ca-certificates";

/// Where Debian's packages come from.
const DEBIAN_MIRROR: &str = "http://deb.debian.org/debian";

/// Why the harness cannot run here, if it cannot: not root, or neither the programs nor apt-get.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::Uid::effective().is_root() {
        return Some("the container harness needs root (podman, dockerd, debootstrap)".into());
    }
    let installed = PACKAGES.iter().all(|p| program_of(p).is_some());
    if !installed && which("apt-get").is_none() {
        return Some(format!(
            "the container harness needs Debian's {} (or apt-get to install them)",
            PACKAGES.join(", ")
        ));
    }
    None
}

/// The program a package brings.
fn program_of(package: &str) -> Option<PathBuf> {
    match package {
        "docker.io" => which("dockerd"),
        other => which(other),
    }
}

/// Installs the packages the container steps need (podman, docker.io, debootstrap, runc) with
/// apt-get when one of their programs is missing.
pub fn ensure_installed() -> anyhow::Result<()> {
    if PACKAGES.iter().all(|p| program_of(p).is_some()) {
        return Ok(());
    }
    eprintln!(
        "==> containers: installing {} with apt-get",
        PACKAGES.join(", ")
    );
    apt_install(&PACKAGES)
}

/// Runs `cmd`, which must succeed; its standard output. `what` names it in errors.
fn output(cmd: &mut Command, what: &str) -> anyhow::Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not start {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `podman` with this machine's global options.
pub fn podman() -> Command {
    let mut cmd = Command::new("podman");
    cmd.args(PODMAN_GLOBAL_ARGS);
    cmd
}

/// `docker` talking to the harness's daemon: Debian's client (`/usr/bin/docker`) when there,
/// whatever `PATH` puts first.
pub fn docker() -> Command {
    let program = Path::new("/usr/bin/docker");
    let mut cmd = Command::new(if program.is_file() {
        program
    } else {
        Path::new("docker")
    });
    cmd.env("DOCKER_HOST", DOCKER_HOST);
    cmd
}

/// The id of `image` in the storage `cmd` talks to (`podman` or `docker`), if it is there.
fn image_id(mut cmd: Command, image: &str) -> Option<String> {
    let out = cmd
        .args(["image", "inspect", "--format", "{{.Id}}", image])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !id.is_empty()).then_some(id)
}

/// The host's Debian release (`VERSION_CODENAME` of `/etc/os-release`).
fn debian_release() -> anyhow::Result<String> {
    let text = fs_err::read_to_string("/etc/os-release")?;
    text.lines()
        .find_map(|line| line.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .context("/etc/os-release names no VERSION_CODENAME: the harness needs a Debian host")
}

/// FNV-1a of `text`: a key that stays the same from one build of xtask to the next.
fn stable_hash(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// The base image's tag: the release and a hash of how it is made.
fn base_tag(release: &str) -> String {
    let recipe = format!("debootstrap --variant=minbase --include={BASE_PACKAGES} {release}");
    format!("{BASE_REPOSITORY}:{release}-{:08x}", stable_hash(&recipe))
}

/// The base image (see the module's documentation), made when podman does not have it: imported
/// from its archive under `target/containers/`, made first with `debootstrap` when that is
/// missing too. Its name.
pub fn base_image(root: &Path) -> anyhow::Result<String> {
    let release = debian_release()?;
    let tag = base_tag(&release);
    if image_id(podman(), &tag).is_some() {
        return Ok(tag);
    }
    let cache = root.join("target/containers");
    fs_err::create_dir_all(&cache)?;
    let file_name = tag.rsplit(':').next().unwrap_or(&release).to_string();
    let archive = cache.join(format!("{file_name}.tar.gz"));
    if !archive.is_file() {
        make_root_archive(&cache, &release, &archive)?;
    }
    eprintln!("==> containers: importing {}", archive.display());
    output(
        podman().arg("import").arg(&archive).arg(&tag),
        "podman import",
    )?;
    Ok(tag)
}

/// `debootstrap` of `release` into a scratch folder beside `archive`, packed into `archive`.
fn make_root_archive(cache: &Path, release: &str, archive: &Path) -> anyhow::Result<()> {
    eprintln!("==> containers: debootstrap {release} (a minute and a half, once)");
    let scratch = tempfile::Builder::new()
        .prefix("rootfs.")
        .tempdir_in(cache)
        .context("could not make the debootstrap folder")?;
    let rootfs = scratch.path().join("root");
    let log = cache.join("debootstrap.log");
    let status_ok = Command::new("debootstrap")
        .args(["--variant=minbase", &format!("--include={BASE_PACKAGES}")])
        .arg(release)
        .arg(&rootfs)
        .arg(DEBIAN_MIRROR)
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&log)?.into_parts().0)
        .stderr(Stdio::null())
        .status()
        .context("could not start debootstrap")?
        .success();
    if !status_ok {
        bail!("debootstrap of {release} failed; see {}", log.display());
    }
    // The downloaded packages and lists are not needed in an image.
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        for entry in fs_err::read_dir(rootfs.join(dir))? {
            let path = entry?.path();
            if path.is_file() {
                fs_err::remove_file(path)?;
            }
        }
    }
    let partial = archive.with_extension("partial");
    output(
        Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .arg("-czf")
            .arg(&partial)
            .arg("."),
        "tar of the root file system",
    )?;
    fs_err::rename(&partial, archive)?;
    Ok(())
}

/// What [`build_image`] puts in the image.
#[derive(Debug)]
pub struct ImageInputs<'a> {
    /// The `milabench` program (a build of this repository).
    pub milabench: &'a Path,
    /// The `uv` program.
    pub uv: &'a Path,
    /// The benchmarks of `config/cpu.yaml` whose environments are installed.
    pub select: &'a str,
    /// uv's cache on the host, lent to the build (and to every container of the image).
    pub uv_cache: &'a Path,
}

/// Builds [`IMAGE`] from `Containerfile` with podman over the [`base_image`], the image it
/// replaces removed (no intermediate image is kept).
pub fn build_image(root: &Path, inputs: &ImageInputs) -> anyhow::Result<()> {
    let base = base_image(root)?;
    let staged = root.join("target/containers/bin");
    fs_err::create_dir_all(&staged)?;
    for (program, name) in [(inputs.milabench, "milabench"), (inputs.uv, "uv")] {
        fs_err::copy(program, staged.join(name))?;
    }
    let before = image_id(podman(), IMAGE);
    let mut build = podman();
    build
        .args(["build", "--layers=false", "--network=host", "--file"])
        .arg(root.join("Containerfile"))
        .args(["--tag", IMAGE])
        .args(PODMAN_RUN_ARGS)
        .arg("--volume")
        .arg(format!("{}:{IMAGE_UV_CACHE}", inputs.uv_cache.display()))
        .args(["--build-arg", &format!("BASE={base}")])
        .args(["--build-arg", &format!("SELECT={}", inputs.select)])
        .args(["--build-arg", "UV_LINK_MODE=symlink"])
        .args(["--build-arg", &format!("UV_CACHE_DIR={IMAGE_UV_CACHE}")]);
    // A proxy's certificates, as the host's own downloads trust them.
    if let Some(bundle) = std::env::var_os("SSL_CERT_FILE").filter(|f| Path::new(f).is_file()) {
        build
            .arg("--volume")
            .arg(format!(
                "{}:/etc/host-ca.crt:ro",
                Path::new(&bundle).display()
            ))
            .args(["--build-arg", "CA_BUNDLE=/etc/host-ca.crt"]);
    }
    build.arg(root);
    let log = root.join("target/containers/build.log");
    let built = build
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&log)?.into_parts().0)
        .stderr(Stdio::null())
        .status()
        .context("could not start podman build")?;
    if !built.success() {
        bail!(
            "podman build of {IMAGE} failed ({built}); see {}",
            log.display()
        );
    }
    if let Some(old) = before.filter(|old| Some(old) != image_id(podman(), IMAGE).as_ref()) {
        let _ = podman()
            .args(["rmi", &old])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    Ok(())
}

/// The mounts every container of [`IMAGE`] needs besides milabench's: the host's uv cache, into
/// which its environments link.
pub fn mounts(uv_cache: &Path) -> Vec<String> {
    vec![format!("{}:{IMAGE_UV_CACHE}:ro", uv_cache.display())]
}

/// The harness's docker daemon; dropping it stops the daemon.
#[derive(Debug)]
pub struct Dockerd {
    child: Option<Child>,
}

impl Dockerd {
    /// Starts the daemon (see the module's documentation) and waits until it answers.
    pub fn up() -> anyhow::Result<Dockerd> {
        stop_recorded_daemon();
        fs_err::create_dir_all(DOCKER_RUN_DIR)?;
        let dir = Path::new(DOCKER_RUN_DIR);
        let log = fs_err::File::create(dir.join("dockerd.log"))?
            .into_parts()
            .0;
        let child = Command::new(which("dockerd").context("dockerd is not installed")?)
            .args(["--storage-driver=overlay2", "--iptables=false"])
            .args(["--ip6tables=false", "--bridge=none"])
            .args(["--host", DOCKER_HOST])
            .arg("--pidfile")
            .arg(dir.join("dockerd.pid"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("could not start dockerd")?;
        let mut daemon = Dockerd { child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answers = docker()
                .arg("info")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if answers {
                return Ok(daemon);
            }
            if let Some(child) = daemon.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!("dockerd ended ({status}); see {DOCKER_RUN_DIR}/dockerd.log");
            }
            if Instant::now() > deadline {
                daemon.stop();
                bail!("dockerd did not answer within 60 s; see {DOCKER_RUN_DIR}/dockerd.log");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Loads `image` from podman's storage (`podman save | docker load`), replacing the image
    /// of that name docker had.
    pub fn load(&self, image: &str) -> anyhow::Result<()> {
        let before = image_id(docker(), image);
        let mut save = podman()
            .args(["save", image])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("could not start podman save")?;
        let archive = save.stdout.take().context("podman save has no output")?;
        let loaded = docker()
            .arg("load")
            .stdin(archive)
            .stdout(Stdio::null())
            .status()
            .context("could not start docker load");
        let saved = save.wait()?;
        if !saved.success() {
            bail!("podman save {image} failed ({saved})");
        }
        let loaded = loaded?;
        if !loaded.success() {
            bail!("docker load of {image} failed ({loaded})");
        }
        if let Some(old) = before.filter(|old| Some(old) != image_id(docker(), image).as_ref()) {
            let _ = docker()
                .args(["rmi", &old])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        Ok(())
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after 20 s).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_child(&mut child);
        }
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SIGTERM to `child`, SIGKILL when it has not ended 20 s later; reaped.
fn stop_child(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Stops a daemon an earlier harness left running (its pid file in [`DOCKER_RUN_DIR`], the
/// process still a `dockerd`).
fn stop_recorded_daemon() {
    let pid_file = Path::new(DOCKER_RUN_DIR).join("dockerd.pid");
    let Some(pid) = fs_err::read_to_string(&pid_file)
        .ok()
        .and_then(|text| text.trim().parse::<i32>().ok())
    else {
        return;
    };
    let is_dockerd = fs_err::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim() == "dockerd");
    if !is_dockerd {
        return;
    }
    let pid = nix::unistd::Pid::from_raw(pid);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && Path::new(&format!("/proc/{pid}")).exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What a run named `run_name` left behind: its containers (any state) in podman's and
/// docker's storage (`milabench-<run name>-...`, as milabench names them), processes whose
/// command line names them, and any container file system still mounted (the tests run no
/// other container). Empty when clean.
pub fn leftovers(run_name: &str, docker_up: bool) -> Vec<String> {
    let prefix = format!("milabench-{run_name}-");
    let mut found = Vec::new();
    let mut runtimes = vec![("podman", podman())];
    if docker_up {
        runtimes.push(("docker", docker()));
    }
    for (name, mut cmd) in runtimes {
        let listed = cmd
            .args(["ps", "--all", "--format", "{{.Names}}"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        match listed {
            Ok(out) if out.status.success() => found.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|line| line.starts_with(&prefix))
                    .map(|line| format!("{name} container {line}")),
            ),
            _ => found.push(format!("`{name} ps --all` failed")),
        }
    }
    // An image's file system left mounted.
    if let Ok(mounts) = fs_err::read_to_string("/proc/mounts") {
        found.extend(
            mounts
                .lines()
                .filter_map(|line| line.split_whitespace().nth(1))
                .filter(|point| {
                    point.starts_with("/var/lib/containers/storage/overlay/")
                        || point.starts_with("/var/lib/docker/overlay2/")
                })
                .map(|point| format!("mount {point}")),
        );
    }
    let own = std::process::id().to_string();
    if let Ok(entries) = fs_err::read_dir("/proc") {
        for entry in entries.flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if pid == own || !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let words: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            if words.iter().any(|w| w.contains(&prefix)) {
                found.push(format!("process {pid}: {}", words.join(" ").trim()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_tag_is_keyed_by_release_and_recipe() {
        let tag = base_tag("bookworm");
        assert!(
            tag.starts_with("localhost/milabench-base:bookworm-"),
            "{tag}"
        );
        assert_eq!(tag, base_tag("bookworm"));
        assert_ne!(tag, base_tag("trixie"));
    }

    #[test]
    fn the_stable_hash_is_fnv1a() {
        // The published FNV-1a 32-bit values.
        assert_eq!(stable_hash(""), 0x811c_9dc5);
        assert_eq!(stable_hash("a"), 0xe40c_292c);
    }
}
