//! A benchmark process inside the system's container image: the one place that writes the
//! command lines of podman, docker, apptainer and pyxis. Applied by the planner after a
//! process's argv and environment are built and before the launch (ssh, srun) wraps them, so
//! the container runs on the process's node and the orchestrator stays on the host.
//!
//! - **Folders**: the base's `data`, `cache`, `runs` and `extra` folders and the benchmark's
//!   own folder are mounted, at the same paths, or under the image's base (`container.base`)
//!   when it differs from the host's: then every argv word and variable that names a path
//!   under the host's base is rewritten to the image's base, the same rule for all.
//! - **Data channel**: always the process's stdout (`DATA_FD=1`, as across ssh), which every
//!   runtime carries back; a pipe descriptor would need podman's `--preserve-fds` and has no
//!   docker, apptainer-over-ssh or pyxis equivalent.
//! - **Environment**: every variable of the process is given inside (`-e` for podman and
//!   docker, `env K=V` before the command for apptainer and pyxis, whose own flags split
//!   values on commas), with the GPU visibility variable.
//! - **GPUs**: a CDI device for podman and docker (`nvidia.com/gpu=all`, or each process's own
//!   with `gpus: process`), `--nv`/`--rocm` for apptainer, Slurm's own for pyxis.
//! - **Name**: podman and docker containers are named after the run and the process's tag, so
//!   that [`ContainerProcess::stop`] removes the container itself when the process is stopped.

use camino::{Utf8Path, Utf8PathBuf};
use indexmap::IndexMap;
use serde::Serialize;

use milabench_config::{ContainerRuntime, ContainerSpec, GpuPassing};
use milabench_vocab::shell_quote;

use crate::launch::Launch;

/// What the executor needs to know of a process that runs in a container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerProcess {
    /// The runtime.
    pub runtime: &'static str,
    /// The container's name (podman, docker), unique within a run.
    pub name: String,
    /// The command that removes the container on its node, already wrapped to reach it
    /// (`podman rm -f NAME`, over ssh or srun for another node); `None` where stopping the
    /// process stops the container (apptainer, pyxis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

/// Rewrites the paths under the host's base to the image's base.
#[derive(Debug, Clone)]
pub struct PathMap {
    host: String,
    image: String,
}

impl PathMap {
    /// The map from `host` (the host's base) to `image` (the base inside the image).
    pub fn new(host: &Utf8Path, image: &Utf8Path) -> PathMap {
        PathMap {
            host: host.as_str().trim_end_matches('/').to_string(),
            image: image.as_str().trim_end_matches('/').to_string(),
        }
    }

    /// `text` with every path under the host's base (the base itself, or `base/...`) moved to
    /// the image's base; anything else unchanged.
    pub fn apply(&self, text: &str) -> String {
        if self.host == self.image || self.host.is_empty() || !text.contains(&self.host) {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&self.host) {
            let after = &rest[at + self.host.len()..];
            let boundary =
                after.is_empty() || after.starts_with(['/', '"', '\'', ':', ',', ' ', '}', ']']);
            out.push_str(&rest[..at]);
            out.push_str(if boundary { &self.image } else { &self.host });
            rest = after;
        }
        out.push_str(rest);
        out
    }
}

/// One process to run in the image, before the container's command line is written.
#[derive(Debug, Clone)]
pub struct ContainerCall<'a> {
    /// The container's name.
    pub name: &'a str,
    /// The working folder (host path).
    pub cwd: &'a Utf8Path,
    /// The process's variables (host paths).
    pub env: &'a IndexMap<String, String>,
    /// The command (host paths).
    pub argv: Vec<String>,
    /// Host folders to mount (mapped like the rest).
    pub folders: &'a [Utf8PathBuf],
    /// The process's GPUs (their indices); all of them for a process that sees all.
    pub devices: &'a [String],
    /// The accelerator family.
    pub arch: &'a str,
    /// The GPU visibility variable and what it holds when the process sees every GPU
    /// (`None` on a machine without GPUs).
    pub visibility: Option<(&'a str, String)>,
    /// The image as this runtime runs it (see [`runnable_image`]).
    pub image: &'a str,
    /// For pyxis: the node to run on (`--nodelist`), if known.
    pub node: Option<&'a str>,
}

/// The image as `spec`'s runtime runs it on a node: the reference for podman and docker, the
/// `.sif` file for apptainer and the enroot `.sqsh` file for pyxis (the image itself when it
/// is one, else its conversion under `<cache>/containers`).
pub fn runnable_image(spec: &ContainerSpec, cache: &Utf8Path) -> String {
    let converted = |extension: &str| {
        if spec.image.ends_with(&format!(".{extension}")) {
            spec.image.clone()
        } else {
            cache
                .join("containers")
                .join(format!("{}.{extension}", file_name_of(&spec.image)))
                .to_string()
        }
    };
    match spec.runtime {
        ContainerRuntime::Podman | ContainerRuntime::Docker => spec.image.clone(),
        ContainerRuntime::Apptainer => converted("sif"),
        ContainerRuntime::Pyxis => converted("sqsh"),
    }
}

/// `text` as a file or container name: letters, digits, `.`, `_` and `-`, the rest `_`.
pub fn file_name_of(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name of the container of the process tagged `tag` in run `run_name`.
pub fn container_name(run_name: &str, tag: &str) -> String {
    file_name_of(&format!("milabench-{run_name}-{tag}"))
}

/// Whether `args` already holds the flag `flag` (alone, or as `flag=...`).
fn has_flag(args: &[String], flag: &str) -> bool {
    args.iter()
        .any(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
}

/// The variables a process gets inside the container: its own, paths mapped, the data channel
/// in stdout, the GPU visibility variable, then the container block's `env`.
fn inner_env(
    spec: &ContainerSpec,
    call: &ContainerCall<'_>,
    map: &PathMap,
) -> Vec<(String, String)> {
    let mut env: IndexMap<String, String> = call
        .env
        .iter()
        .map(|(k, v)| (k.clone(), map.apply(v)))
        .collect();
    env.insert("DATA_FD".into(), "1".into());
    if let Some((variable, all)) = &call.visibility {
        if spec.gpus == GpuPassing::Process
            && matches!(
                spec.runtime,
                ContainerRuntime::Podman | ContainerRuntime::Docker
            )
        {
            // Each process's own devices only, numbered from 0 inside.
            let inside: Vec<String> = (0..call.devices.len()).map(|i| i.to_string()).collect();
            env.insert(variable.to_string(), inside.join(","));
        } else {
            env.entry(variable.to_string())
                .or_insert_with(|| all.clone());
        }
    }
    for (key, value) in &spec.env {
        env.insert(key.clone(), value.clone());
    }
    env.into_iter().collect()
}

/// The mounts of a call as `(host, container, options)`: the folders, then the block's own.
fn mounts(
    spec: &ContainerSpec,
    call: &ContainerCall<'_>,
    map: &PathMap,
) -> Vec<(String, String, Option<String>)> {
    let mut out: Vec<(String, String, Option<String>)> = Vec::new();
    for folder in call.folders {
        let host = folder.to_string();
        if !out.iter().any(|(h, _, _)| *h == host) {
            out.push((host.clone(), map.apply(&host), None));
        }
    }
    for mount in &spec.mounts {
        let host = mount.host.to_string();
        let inside = mount
            .container
            .as_ref()
            .map_or_else(|| map.apply(&host), |c| c.to_string());
        out.push((host, inside, mount.options.clone()));
    }
    out
}

/// The GPU flags of podman and docker.
fn oci_gpu_flags(spec: &ContainerSpec, call: &ContainerCall<'_>) -> Vec<String> {
    if spec.gpus == GpuPassing::None
        || has_flag(&spec.args, "--device")
        || has_flag(&spec.args, "--gpus")
    {
        return Vec::new();
    }
    let devices: Vec<String> = match call.arch {
        "cuda" => match spec.gpus {
            GpuPassing::Process if !call.devices.is_empty() => call
                .devices
                .iter()
                .map(|d| format!("nvidia.com/gpu={d}"))
                .collect(),
            _ => vec!["nvidia.com/gpu=all".into()],
        },
        "rocm" => vec!["/dev/kfd".into(), "/dev/dri".into()],
        "xpu" => vec!["/dev/dri".into()],
        _ => Vec::new(),
    };
    devices
        .into_iter()
        .flat_map(|d| ["--device".to_string(), d])
        .collect()
}

/// The command that runs `call` in `spec`'s image on the node it starts on (before ssh; for
/// pyxis, the `srun` that also reaches the node).
pub fn container_command(
    spec: &ContainerSpec,
    map: &PathMap,
    call: ContainerCall<'_>,
) -> Vec<String> {
    let cwd = map.apply(call.cwd.as_str());
    let argv: Vec<String> = call.argv.iter().map(|a| map.apply(a)).collect();
    let env = inner_env(spec, &call, map);
    let mounts = mounts(spec, &call, map);
    let mut out = vec![spec.executable.clone()];
    out.extend(spec.global_args.iter().cloned());
    match spec.runtime {
        ContainerRuntime::Podman | ContainerRuntime::Docker => {
            out.extend([
                "run".into(),
                "--rm".into(),
                "--name".into(),
                call.name.into(),
            ]);
            for flag in [
                "--network=host",
                "--ipc=host",
                "--security-opt=label=disable",
            ] {
                let name = flag.split('=').next().unwrap_or(flag);
                if !has_flag(&spec.args, name) {
                    out.push(flag.into());
                }
            }
            out.push(format!("--workdir={cwd}"));
            for (host, inside, options) in &mounts {
                out.push("--volume".into());
                out.push(match options {
                    Some(options) => format!("{host}:{inside}:{options}"),
                    None => format!("{host}:{inside}"),
                });
            }
            for (key, value) in &env {
                out.push("--env".into());
                out.push(format!("{key}={value}"));
            }
            out.extend(oci_gpu_flags(spec, &call));
            out.extend(spec.args.iter().cloned());
            out.push(call.image.into());
            out.extend(argv);
        }
        ContainerRuntime::Apptainer => {
            out.push("exec".into());
            if spec.gpus != GpuPassing::None {
                match call.arch {
                    "cuda" => out.push("--nv".into()),
                    "rocm" => out.push("--rocm".into()),
                    _ => {}
                }
            }
            out.push(format!("--pwd={cwd}"));
            for (host, inside, options) in &mounts {
                out.push("--bind".into());
                out.push(match options {
                    Some(options) => format!("{host}:{inside}:{options}"),
                    None => format!("{host}:{inside}"),
                });
            }
            out.extend(spec.args.iter().cloned());
            out.push(call.image.into());
            out.push("env".into());
            out.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
            out.extend(argv);
        }
        ContainerRuntime::Pyxis => {
            out.extend(["--nodes=1".into(), "--ntasks=1".into()]);
            if let Some(node) = call.node {
                out.push(format!("--nodelist={node}"));
            }
            out.extend([
                "--overlap".into(),
                "--kill-on-bad-exit=1".into(),
                "--export=ALL".into(),
                format!("--container-image={}", call.image),
                format!(
                    "--container-mounts={}",
                    mounts
                        .iter()
                        .map(|(host, inside, options)| match options {
                            Some(options) => format!("{host}:{inside}:{options}"),
                            None => format!("{host}:{inside}"),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                format!("--container-workdir={cwd}"),
            ]);
            out.extend(spec.args.iter().cloned());
            out.push("env".into());
            out.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
            out.extend(argv);
        }
    }
    out
}

/// The command that removes container `name` on the node `launch` reaches, killing what still
/// runs in it (`None` for apptainer and pyxis, which stop with their process): run to its end
/// by the executor, so over ssh without the rank supervisor (which would stop it at once).
pub fn stop_command(
    spec: &ContainerSpec,
    name: &str,
    launch: &Launch,
    cwd: &Utf8Path,
) -> Option<Vec<String>> {
    if !matches!(
        spec.runtime,
        ContainerRuntime::Podman | ContainerRuntime::Docker
    ) {
        return None;
    }
    let mut runtime = vec![spec.executable.clone()];
    runtime.extend(spec.global_args.iter().cloned());
    let words = if spec.runtime == ContainerRuntime::Podman {
        // The grace period is over when it runs: no second one (podman's default is 10 s,
        // and an `rm` cut short by the orchestrator's exit leaves the process running).
        let mut words = runtime;
        words.extend([
            "rm".into(),
            "--force".into(),
            "--time=0".into(),
            name.into(),
        ]);
        words
    } else {
        // docker kills at once, but when its own `--rm` is under way the container stays
        // "Removal In Progress" for a moment: wait (at most 10 s) until it is gone.
        let rt = runtime
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ");
        let name = shell_quote(name);
        vec![
            "sh".into(),
            "-c".into(),
            format!(
                "{rt} rm --force {name} >/dev/null 2>&1; i=0; \
                 while [ $i -lt 50 ] && {rt} container inspect {name} >/dev/null 2>&1; \
                 do sleep 0.2; i=$((i+1)); done"
            ),
        ]
    };
    Some(launch.reach(cwd, words))
}

/// The command that readies a node for the run's containers, once per run before its first
/// benchmark (the caller reaches the node with [`Launch::reach`]): the folders to mount made
/// (a runtime refuses to mount a missing one), then [`image_setup_command`].
pub fn node_setup_command(
    spec: &ContainerSpec,
    cache: &Utf8Path,
    folders: &[Utf8PathBuf],
) -> Vec<String> {
    let mut script = String::from("mkdir -p");
    for folder in folders {
        script.push(' ');
        script.push_str(&shell_quote(folder.as_str()));
    }
    match image_setup_command(spec, cache) {
        Some(setup) => {
            script.push_str(" && exec \"$@\"");
            let mut out = vec!["sh".to_string(), "-c".into(), script, "sh".into()];
            out.extend(setup);
            out
        }
        None => vec!["sh".to_string(), "-c".into(), script],
    }
}

/// The command that makes the image ready on a node, once per run before the first benchmark
/// (`None` when there is nothing to do): podman and docker load `archive`, else pull the image
/// unless the node has it; apptainer builds the `.sif` and pyxis imports the enroot `.sqsh`
/// under the cache unless it is there. Runs on the node (the caller wraps it for ssh or srun).
pub fn image_setup_command(spec: &ContainerSpec, cache: &Utf8Path) -> Option<Vec<String>> {
    let runtime: Vec<String> = std::iter::once(spec.executable.clone())
        .chain(spec.global_args.iter().cloned())
        .collect();
    let quoted = |words: &[String]| {
        words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let shell = |script: String| Some(vec!["sh".to_string(), "-c".into(), script]);
    match spec.runtime {
        ContainerRuntime::Podman | ContainerRuntime::Docker => match &spec.archive {
            Some(archive) => {
                let mut words = runtime;
                words.extend(["load".into(), "--input".into(), archive.to_string()]);
                Some(words)
            }
            None => {
                let rt = quoted(&runtime);
                let image = shell_quote(&spec.image);
                shell(format!(
                    "{rt} image inspect {image} >/dev/null 2>&1 || {rt} pull {image}"
                ))
            }
        },
        ContainerRuntime::Apptainer | ContainerRuntime::Pyxis => {
            let target = runnable_image(spec, cache);
            if target == spec.image {
                return None;
            }
            let source = if spec.runtime == ContainerRuntime::Pyxis {
                enroot_source(&spec.image)
            } else if spec.image.ends_with(".tar") {
                format!("docker-archive:{}", spec.image)
            } else if spec.image.contains("://") {
                spec.image.clone()
            } else {
                format!("docker://{}", spec.image)
            };
            let convert: Vec<String> = if spec.runtime == ContainerRuntime::Pyxis {
                vec![
                    "enroot".into(),
                    "import".into(),
                    "--output".into(),
                    target.clone(),
                    source,
                ]
            } else {
                let mut words = runtime;
                words.extend(["build".into(), target.clone(), source]);
                words
            };
            let folder = Utf8Path::new(&target)
                .parent()
                .map(|p| p.to_string())
                .unwrap_or_else(|| ".".into());
            shell(format!(
                "test -e {t} || {{ mkdir -p {f} && {c}; }}",
                t = shell_quote(&target),
                f = shell_quote(&folder),
                c = quoted(&convert)
            ))
        }
    }
}

/// A registry reference as enroot spells it: `docker://REGISTRY#PATH` (a `#` after a
/// registry host), `docker://PATH` for Docker Hub; a reference with a scheme unchanged.
fn enroot_source(image: &str) -> String {
    if image.contains("://") {
        return image.to_string();
    }
    match image.split_once('/') {
        Some((host, rest)) if host.contains('.') || host.contains(':') || host == "localhost" => {
            format!("docker://{host}#{rest}")
        }
        _ => format!("docker://{image}"),
    }
}

#[cfg(test)]
mod tests;
