//! `cargo xtask e2e`'s container steps (issue 51): the image of `Containerfile` built with
//! podman and loaded into the harness's docker daemon (`xtask::containers`), then in each
//! runtime a smoke run of two CPU benchmarks through milabench's container block (podman in our
//! shape, docker in the Python tool's `docker_image` shape) whose report must have the host
//! run's rows; a run stopped by its timeout and one stopped by Ctrl-C (SIGINT to milabench),
//! after which no container, container mount or process may be left. Skipped (saying why) where
//! the harness cannot run. Not here: ranks in containers inside the cluster harness's network
//! namespaces, where runc finds no cgroup mount (docs/containers.md).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::bail;
use xtask::containers::{self, Dockerd, IMAGE, IMAGE_BASE, ImageInputs};

use crate::e2e::{SUITE, check_report, json_output, user_uv_cache};

/// The benchmarks the container runs use: the cheapest of the CPU suite.
pub const SELECT: &str = "flops,opbench";

/// The benchmarks whose environments the image holds; what `e2e --only containers` runs on the
/// host first.
pub const HOST_SELECT: &str = SELECT;

/// A benchmark of [`SELECT`] made to run until stopped: early stop after a million steps, each
/// of many matmuls.
fn endless(max_duration: u32) -> String {
    format!(
        "{{flops: {{max_duration: {max_duration}, voir: {{options: {{stop: 1000000}}}}, \
         argv: {{--repeat: 100000}}}}}}"
    )
}

/// The container runtimes the steps run in.
#[derive(Debug, Clone, Copy)]
enum Runtime {
    Podman,
    Docker,
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Runtime::Podman => "podman",
            Runtime::Docker => "docker",
        }
    }

    /// The system file: podman in our `container:` shape with this machine's settings, docker
    /// in the Python tool's shape (`docker_image` and `docker:`).
    fn system_yaml(self, uv_cache: &Path) -> String {
        let mounts = containers::mounts(uv_cache);
        let quoted = |words: &[String]| {
            words
                .iter()
                .map(|w| format!("{w:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let strings = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        match self {
            Runtime::Podman => format!(
                "system:\n  arch: cpu\n  container:\n    runtime: podman\n    image: {IMAGE}\n    \
                 base: {IMAGE_BASE}\n    mounts: [{}]\n    global_args: [{}]\n    args: [{}]\n",
                quoted(&mounts),
                quoted(&strings(&containers::PODMAN_GLOBAL_ARGS)),
                quoted(&strings(&containers::PODMAN_RUN_ARGS)),
            ),
            Runtime::Docker => {
                // The Python shape has no mounts of its own: `-v` among the run's arguments.
                let args: Vec<String> = mounts
                    .iter()
                    .flat_map(|m| ["-v".into(), m.clone()])
                    .collect();
                format!(
                    "system:\n  arch: cpu\n  docker_image: {IMAGE}\n  docker:\n    \
                     executable: {}\n    base: {IMAGE_BASE}\n    args: [{}]\n",
                    containers::docker().get_program().to_string_lossy(),
                    quoted(&args),
                )
            }
        }
    }
}

/// The container steps, in `base` (where [`crate::e2e::flow`] installed and ran on the host
/// as `e2e`); each step's wall time.
pub fn flow(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    if let Some(why) = containers::unavailable() {
        eprintln!("==> e2e: containers SKIPPED, {why}");
        return Ok(Vec::new());
    }
    let mut timings = Vec::new();
    let started = Instant::now();
    containers::ensure_installed()?;
    let uv = crate::e2e::uv_in(&base.join("tools"))?;
    let uv_cache = user_uv_cache();
    containers::build_image(
        root,
        &ImageInputs {
            milabench: bin,
            uv: &uv,
            select: HOST_SELECT,
            uv_cache: &uv_cache,
        },
    )?;
    timings.push((
        "container image (podman build)",
        started.elapsed().as_secs_f64(),
    ));
    let started = Instant::now();
    let dockerd = Dockerd::up()?;
    dockerd.load(IMAGE)?;
    timings.push(("dockerd up, image loaded", started.elapsed().as_secs_f64()));
    let systems = base.join("containers");
    fs_err::create_dir_all(&systems)?;
    let host = host_rows(root, bin, base)?;
    for runtime in [Runtime::Podman, Runtime::Docker] {
        let system = systems.join(format!("{}.yaml", runtime.name()));
        fs_err::write(&system, runtime.system_yaml(&uv_cache))?;
        let run = Run {
            root,
            bin,
            base,
            system: &system,
        };
        let started = Instant::now();
        // Names no other run's name starts with: containers are found by that prefix.
        let name = format!("e2e-{}-smoke", runtime.name());
        let status = run
            .command(&name, &["--select", SELECT, "--fidelity", "smoke"])
            .status()?;
        let seconds = started.elapsed().as_secs_f64();
        if !status.success() {
            bail!(
                "the run in {} failed ({status}); its logs are under {}",
                runtime.name(),
                base.join("runs").join(&name).display()
            );
        }
        let report = json_output(
            Command::new(bin)
                .args(["report", "--format", "json", "--runs"])
                .arg(base.join("runs").join(&name))
                .current_dir(root),
            "milabench report",
        )?;
        check_report(&report)?;
        same_rows(&host, &rows(&report)?, runtime.name())?;
        clean(&name, "the run")?;
        timings.push((step_name(runtime, "smoke run"), seconds));

        let started = Instant::now();
        let name = format!("e2e-{}-timeout", runtime.name());
        let _ = run
            .command(&name, &["--select", "flops", "--override", &endless(5)])
            .stdout(Stdio::null())
            .status()?;
        let seconds = started.elapsed().as_secs_f64();
        if seconds > 60.0 {
            bail!(
                "the run with a 5 s timeout in {} took {seconds:.0} s",
                runtime.name()
            );
        }
        clean(&name, "the timeout")?;
        timings.push((step_name(runtime, "timeout"), seconds));

        let started = Instant::now();
        let name = format!("e2e-{}-sigint", runtime.name());
        let child = run
            .command(&name, &["--select", "flops", "--override", &endless(300)])
            .stdout(Stdio::null())
            .spawn()?;
        interrupt_when_running(child, runtime, &name)?;
        clean(&name, "Ctrl-C")?;
        timings.push((
            step_name(runtime, "Ctrl-C"),
            started.elapsed().as_secs_f64(),
        ));
    }
    drop(dockerd);
    Ok(timings)
}

/// The step's name in the timings.
fn step_name(runtime: Runtime, step: &str) -> &'static str {
    match (runtime, step) {
        (Runtime::Podman, "smoke run") => "podman: smoke run",
        (Runtime::Podman, "timeout") => "podman: timeout, nothing left",
        (Runtime::Podman, _) => "podman: Ctrl-C, nothing left",
        (Runtime::Docker, "smoke run") => "docker (docker_image): smoke run",
        (Runtime::Docker, "timeout") => "docker: timeout, nothing left",
        (Runtime::Docker, _) => "docker: Ctrl-C, nothing left",
    }
}

/// A `milabench run` in containers.
struct Run<'a> {
    root: &'a Path,
    bin: &'a Path,
    base: &'a Path,
    system: &'a Path,
}

impl Run<'_> {
    /// `milabench run` of the CPU suite with the system file, named `name`, with `args`.
    fn command(&self, name: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.bin);
        cmd.env("UV_CACHE_DIR", user_uv_cache())
            .env("DOCKER_HOST", containers::DOCKER_HOST)
            .arg("--base")
            .arg(self.base)
            .args(["run", "--config", SUITE, "--no-setup", "--run-name", name])
            .arg("--system")
            .arg(self.system)
            .args(args)
            .current_dir(self.root)
            .stdin(Stdio::null());
        cmd
    }
}

/// Waits until the run's container is listed, then sends SIGINT to milabench (as Ctrl-C
/// does) and waits for it to end (within 60 s).
fn interrupt_when_running(mut child: Child, runtime: Runtime, name: &str) -> anyhow::Result<()> {
    let prefix = format!("name=milabench-{name}-");
    let listed = || {
        let mut cmd = match runtime {
            Runtime::Podman => containers::podman(),
            Runtime::Docker => containers::docker(),
        };
        cmd.args(["ps", "--quiet", "--filter", &prefix])
            .stderr(Stdio::null())
            .output()
            .is_ok_and(|out| !out.stdout.is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !listed() {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the run to interrupt in {} ended first ({status})",
                runtime.name()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!(
                "no container of the run to interrupt appeared in {} within 120 s",
                runtime.name()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The benchmark's first steps, so Ctrl-C stops a process that is computing.
    std::thread::sleep(Duration::from_secs(3));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                bail!(
                    "milabench ended with status 0 after Ctrl-C in {}",
                    runtime.name()
                );
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!(
                "milabench did not end within 60 s of Ctrl-C in {}",
                runtime.name()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How long a removal milabench started may still be finishing after it exits.
const CLEANUP_LIMIT: Duration = Duration::from_secs(30);

/// Fails when the run named `name` left a container, mount or process (`after` says when)
/// that is still there [`CLEANUP_LIMIT`] after milabench ended; says how long what was left
/// took to go.
fn clean(name: &str, after: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let left = containers::leftovers(name, true);
        if left.is_empty() {
            break;
        }
        if started.elapsed() > CLEANUP_LIMIT {
            bail!(
                "after {after} ({name}), left behind:\n  {}",
                left.join("\n  ")
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let lag = started.elapsed().as_secs_f64();
    if lag > 0.5 {
        eprintln!(
            "==> e2e: after {after} ({name}), the last container went {lag:.1} s after milabench ended"
        );
    }
    Ok(())
}

/// The host run's rows (`e2e`, [`crate::e2e::flow`]) for the benchmarks of [`SELECT`].
fn host_rows(root: &Path, bin: &Path, base: &Path) -> anyhow::Result<Vec<String>> {
    let report = json_output(
        Command::new(bin)
            .args(["report", "--format", "json", "--runs"])
            .arg(base.join("runs/e2e"))
            .current_dir(root),
        "milabench report (host)",
    )?;
    let names: Vec<&str> = SELECT.split(',').collect();
    Ok(rows(&report)?
        .into_iter()
        .filter(|row| names.iter().any(|n| row.starts_with(&format!("{n} "))))
        .collect())
}

/// A report's rows as `name n N fail F`, sorted.
fn rows(report: &serde_json::Value) -> anyhow::Result<Vec<String>> {
    let mut rows = crate::e2e::report_rows(report, "container run's")?;
    rows.sort();
    Ok(rows)
}

/// The container run's rows are the host run's.
fn same_rows(host: &[String], contained: &[String], runtime: &str) -> anyhow::Result<()> {
    let mut host = host.to_vec();
    host.sort();
    if host != contained {
        bail!(
            "the report of the run in {runtime} differs from the host's:\n  host: {}\n  {runtime}: {}",
            host.join("; "),
            contained.join("; ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_files_name_the_image_base_mounts_and_settings() {
        let podman = Runtime::Podman.system_yaml(Path::new("/cache/uv"));
        for needle in [
            "runtime: podman",
            "image: localhost/milabench:cpu-e2e",
            "base: /milabench/envs",
            "mounts: [\"/cache/uv:/uv-cache:ro\"]",
            "global_args: [\"--runtime\", \"runc\", \"--cgroup-manager=cgroupfs\"]",
            "args: [\"--ulimit\", \"nofile=4096:4096\"",
        ] {
            assert!(podman.contains(needle), "{needle}:\n{podman}");
        }
        let docker = Runtime::Docker.system_yaml(Path::new("/cache/uv"));
        for needle in [
            "docker_image: localhost/milabench:cpu-e2e",
            "base: /milabench/envs",
            "args: [\"-v\", \"/cache/uv:/uv-cache:ro\"]",
        ] {
            assert!(docker.contains(needle), "{needle}:\n{docker}");
        }
    }

    #[test]
    fn rows_differing_from_the_host_are_named() {
        let host = vec![
            "opbench n 1 fail 0".to_string(),
            "flops n 1 fail 0".to_string(),
        ];
        let same = vec![
            "flops n 1 fail 0".to_string(),
            "opbench n 1 fail 0".to_string(),
        ];
        same_rows(&host, &same, "podman").expect("same rows");
        let error = same_rows(&host, &same[..1], "podman").expect_err("a row missing");
        assert!(
            error.to_string().contains("podman: flops n 1 fail 0"),
            "{error}"
        );
    }
}
