//! The nodes of a run with a container block (see `milabench-plan`'s `container` module):
//! each made ready once per run before its first benchmark (its folders, then its image
//! pulled, loaded or converted), and what `check` says of its runtime and image.

use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use milabench_cluster::{Check, Status};
use milabench_config::{ContainerRuntime, ContainerSpec, ResolvedSystem};
use milabench_exec::{HelperCommand, Interrupt};
use milabench_plan::{
    Launch, cache_folder, container_folders, launch_to, node_setup_command, runnable_image,
};

use crate::error::Error;
use crate::resolve::Resolved;

/// How long a probe of a node's runtime or image may take.
const PROBE_LIMIT: Duration = Duration::from_secs(30);

/// The nodes of `system` and how each is reached (its main node here).
fn node_launches(system: &ResolvedSystem) -> Vec<(String, Launch)> {
    if system.nodes.is_empty() {
        return vec![("local".into(), Launch::Local)];
    }
    system
        .nodes
        .iter()
        .map(|node| (node.name.clone(), launch_to(Some(node), system)))
        .collect()
}

/// The folders a node must have before a container mounts them: the base's, and each
/// selected benchmark's own `extra`.
fn node_folders(resolved: &Resolved) -> Vec<Utf8PathBuf> {
    let extras: Vec<&Utf8Path> = resolved
        .suite
        .runnable()
        .map(|bench| bench.folders.extra.as_path())
        .filter(|extra| !extra.as_str().is_empty())
        .collect();
    let mut folders = container_folders(&resolved.suite.system, &extras);
    folders.dedup();
    folders
}

/// Readies every node of the run for its containers, once per resolution (the prepare steps
/// and the run share it): the folders made, the image pulled, loaded or converted. Nothing
/// without a container block.
pub(crate) fn ready_nodes(resolved: &Resolved, interrupt: &Interrupt) -> Result<(), Error> {
    let system = &resolved.suite.system;
    let Some(spec) = &system.container else {
        return Ok(());
    };
    resolved.cache.once_nodes_ready(|| {
        let cache = cache_folder(system);
        let folders = node_folders(resolved);
        for (node, launch) in node_launches(system) {
            let words = launch.reach(&system.base, node_setup_command(spec, &cache, &folders));
            let Some((program, args)) = words.split_first() else {
                continue;
            };
            let mut command = HelperCommand::unlimited(program, args);
            command.interrupt = Some(interrupt.clone());
            let output = command.run().map_err(|error| Error::ContainerImage {
                node: node.clone(),
                image: spec.image.clone(),
                said: error.to_string(),
            })?;
            if !output.success() {
                return Err(Error::ContainerImage {
                    node,
                    image: spec.image.clone(),
                    said: format!("`{}`: {}", command.display(), output.said()),
                });
            }
        }
        Ok(())
    })
}

/// What `check` says of each node's container runtime and image, when the system has a
/// container block: a missing runtime or image file fails; an image that the run will pull
/// or convert is a warning.
pub(crate) fn container_checks(resolved: &Resolved) -> Vec<Check> {
    let system = &resolved.suite.system;
    let Some(spec) = &system.container else {
        return Vec::new();
    };
    let cache = cache_folder(system);
    node_launches(system)
        .into_iter()
        .flat_map(|(node, launch)| {
            let runtime = runtime_check(spec, &node, &launch, &system.base);
            let image = (runtime.status == Status::Ok)
                .then(|| image_check(spec, &cache, &node, &launch, &system.base));
            std::iter::once(runtime).chain(image)
        })
        .collect()
}

/// Runs `words` on the node `launch` reaches; its output when it succeeded.
fn probe(launch: &Launch, cwd: &Utf8Path, words: Vec<String>) -> Result<String, String> {
    let words = launch.reach(cwd, words);
    let Some((program, args)) = words.split_first() else {
        return Err("nothing to run".into());
    };
    match HelperCommand::new(program, args, PROBE_LIMIT).run() {
        Ok(output) if output.success() => Ok(output.stdout),
        Ok(output) => Err(output.said().to_string()),
        Err(error) => Err(error.to_string()),
    }
}

fn runtime_check(spec: &ContainerSpec, node: &str, launch: &Launch, cwd: &Utf8Path) -> Check {
    let name = format!("container runtime on {node}");
    let asks: Vec<String> = match spec.runtime {
        // pyxis adds `--container-image` to srun's options.
        ContainerRuntime::Pyxis => vec![spec.executable.clone(), "--help".into()],
        _ => vec![spec.executable.clone(), "--version".into()],
    };
    let install = match spec.runtime {
        ContainerRuntime::Podman => "install podman (Debian: apt-get install podman)",
        ContainerRuntime::Docker => "install docker (Debian: apt-get install docker.io)",
        ContainerRuntime::Apptainer => "install apptainer (https://apptainer.org/docs/admin/)",
        ContainerRuntime::Pyxis => {
            "run inside a Slurm allocation on a cluster with the pyxis plugin and enroot"
        }
    };
    match probe(launch, cwd, asks) {
        Ok(said)
            if spec.runtime == ContainerRuntime::Pyxis && !said.contains("--container-image") =>
        {
            Check::problem(
                Status::Fail,
                name,
                "srun has no --container-image: the pyxis plugin is not loaded",
                install,
            )
        }
        Ok(said) => Check::ok(
            name,
            said.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or(spec.runtime.as_str())
                .trim()
                .to_string(),
        ),
        Err(said) => Check::problem(
            Status::Fail,
            name,
            format!("`{}` does not run on {node}: {said}", spec.executable),
            format!("{install} on {node}, or name its program with `container.executable`"),
        ),
    }
}

fn image_check(
    spec: &ContainerSpec,
    cache: &Utf8Path,
    node: &str,
    launch: &Launch,
    cwd: &Utf8Path,
) -> Check {
    let name = format!("container image on {node}");
    let file_exists =
        |path: &str| probe(launch, cwd, vec!["test".into(), "-r".into(), path.into()]).is_ok();
    match spec.runtime {
        ContainerRuntime::Podman | ContainerRuntime::Docker => {
            if let Some(archive) = &spec.archive {
                return if file_exists(archive.as_str()) {
                    Check::ok(name, format!("{archive} (loaded at the start of the run)"))
                } else {
                    Check::problem(
                        Status::Fail,
                        name,
                        format!("the archive {archive} is not on {node}"),
                        format!(
                            "copy it there (`{} save -o FILE IMAGE` makes one), or fix `container.archive`",
                            spec.runtime.as_str()
                        ),
                    )
                };
            }
            let mut asks = vec![spec.executable.clone()];
            asks.extend(spec.global_args.iter().cloned());
            asks.extend(["image".into(), "inspect".into(), spec.image.clone()]);
            match probe(launch, cwd, asks) {
                Ok(_) => Check::ok(name, spec.image.clone()),
                Err(_) => Check::problem(
                    Status::Warn,
                    name,
                    format!("{} is not on {node} yet", spec.image),
                    format!(
                        "the run pulls it from its registry; without one, load it first (`{} load -i FILE`) or set `container.archive`",
                        spec.runtime.as_str()
                    ),
                ),
            }
        }
        ContainerRuntime::Apptainer | ContainerRuntime::Pyxis => {
            let target = runnable_image(spec, cache);
            let given = target == spec.image;
            match (file_exists(&target), given) {
                (true, _) => Check::ok(name, target),
                (false, true) => Check::problem(
                    Status::Fail,
                    name,
                    format!("{target} is not on {node}"),
                    "copy the image file there, or name a registry image in `container.image` (converted once per run)",
                ),
                (false, false) => Check::problem(
                    Status::Warn,
                    name,
                    format!("{} is not converted on {node} yet", spec.image),
                    format!("the run converts it into {target} before its first benchmark"),
                ),
            }
        }
    }
}
