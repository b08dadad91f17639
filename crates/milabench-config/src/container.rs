//! The container block of a system file: the image every benchmark process runs in.
//!
//! Two shapes are read. The Python milabench's, as its system files write it:
//!
//! ```yaml
//! system:
//!   docker_image: ghcr.io/mila-iqia/milabench:cuda-nightly
//!   docker: {executable: podman, image: IMAGE, base: /milabench/base, args: [--ipc=host]}
//! ```
//!
//! and ours, which says more:
//!
//! ```yaml
//! system:
//!   container:
//!     runtime: podman            # podman (default), docker, apptainer or pyxis
//!     image: localhost/milabench:cpu
//!     archive: /images/milabench.tar   # podman/docker: loaded once per node instead of pulled
//!     base: /milabench/base      # the base inside the image (default: the host's base path)
//!     mounts: [/models, "/scratch:/scratch:ro"]
//!     env: {HF_HUB_OFFLINE: "1"}
//!     global_args: [--runtime, runc]   # before `run` (podman's global options)
//!     args: [--ulimit, "nofile=1024:1024"]   # after `run`
//!     gpus: all                  # all (default), process (each process its own) or none
//! ```
//!
//! While the system is built, the Python shape is written into `container` (by `normalize`), so
//! that the rest reads one block; `run --container IMAGE` sets `container.image`. A block
//! without an image runs nothing in a container (the Python tool's `docker:` without an image);
//! ours with one missing is refused.

use camino::Utf8PathBuf;
use indexmap::IndexMap;

use crate::error::ConfigError;
use crate::value::{Map, Node, Value};

/// The program that runs the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerRuntime {
    /// `podman run`.
    Podman,
    /// `docker run`.
    Docker,
    /// `apptainer exec` on a `.sif` file.
    Apptainer,
    /// Slurm's pyxis plugin: `srun --container-image=...`.
    Pyxis,
}

impl ContainerRuntime {
    /// The runtimes by their names in the system file.
    pub const ALL: [ContainerRuntime; 4] = [
        ContainerRuntime::Podman,
        ContainerRuntime::Docker,
        ContainerRuntime::Apptainer,
        ContainerRuntime::Pyxis,
    ];

    /// Its name in the system file.
    pub fn as_str(self) -> &'static str {
        match self {
            ContainerRuntime::Podman => "podman",
            ContainerRuntime::Docker => "docker",
            ContainerRuntime::Apptainer => "apptainer",
            ContainerRuntime::Pyxis => "pyxis",
        }
    }

    /// The program it runs when the file names none (`srun` for pyxis).
    pub fn default_executable(self) -> &'static str {
        match self {
            ContainerRuntime::Pyxis => "srun",
            other => other.as_str(),
        }
    }

    /// The runtime of the Python tool's `docker.executable`, by its file name: `docker`,
    /// `apptainer`/`singularity`, else podman.
    fn of_executable(executable: &str) -> ContainerRuntime {
        let name = executable.rsplit('/').next().unwrap_or(executable);
        if name.contains("docker") {
            ContainerRuntime::Docker
        } else if name.contains("apptainer") || name.contains("singularity") {
            ContainerRuntime::Apptainer
        } else {
            ContainerRuntime::Podman
        }
    }
}

/// Which GPUs a container sees (`gpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuPassing {
    /// Every GPU of the node; the processes keep their visibility variables (the default).
    #[default]
    All,
    /// Each process only the GPUs it uses (one CDI device each, numbered from 0 inside).
    Process,
    /// None (a CPU image, or GPUs passed through `args`).
    None,
}

/// A folder of the host mounted into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerMount {
    /// The folder on the node.
    pub host: Utf8PathBuf,
    /// Where the container sees it; `None`: at the host path (mapped under the image's base
    /// when it lies under the host's base).
    pub container: Option<Utf8PathBuf>,
    /// Mount options (`ro`), if any.
    pub options: Option<String>,
}

impl ContainerMount {
    /// Reads `HOST`, `HOST:CONTAINER` or `HOST:CONTAINER:OPTIONS`.
    fn parse(text: &str) -> Option<ContainerMount> {
        let mut parts = text.splitn(3, ':');
        let host = parts.next().filter(|h| h.starts_with('/'))?;
        let container = parts.next().map(|c| c.to_string());
        if container.as_deref().is_some_and(|c| !c.starts_with('/')) {
            return None;
        }
        Some(ContainerMount {
            host: host.into(),
            container: container.map(Utf8PathBuf::from),
            options: parts.next().map(str::to_string),
        })
    }
}

/// The container every benchmark process of the system runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// The runtime.
    pub runtime: ContainerRuntime,
    /// The program to run (`podman`, `/usr/bin/docker`, `apptainer`, `srun`).
    pub executable: String,
    /// The image: a registry reference, or for apptainer a `.sif` file, for pyxis a `.sqsh`
    /// file.
    pub image: String,
    /// An archive (`podman save`/`docker save`) loaded on each node instead of pulling the
    /// image.
    pub archive: Option<Utf8PathBuf>,
    /// The base folder inside the image; `None`: the host's base path.
    pub base: Option<Utf8PathBuf>,
    /// Folders mounted beside the base's `data`, `cache`, `runs` and `extra`.
    pub mounts: Vec<ContainerMount>,
    /// Variables set inside the container beside the benchmark's own.
    pub env: IndexMap<String, String>,
    /// Options before the runtime's command (podman's `--runtime`, `--cgroup-manager`).
    pub global_args: Vec<String>,
    /// Options of `run`/`exec`/`srun`, after the tool's own.
    pub args: Vec<String>,
    /// Which GPUs a container sees.
    pub gpus: GpuPassing,
}

/// The keys of our `container` block.
const CONTAINER_KEYS: [&str; 10] = [
    "runtime",
    "executable",
    "image",
    "archive",
    "base",
    "mounts",
    "env",
    "global_args",
    "args",
    "gpus",
];

/// The keys of the Python tool's `docker` block.
const DOCKER_KEYS: [&str; 4] = ["executable", "image", "base", "args"];

/// Writes the Python tool's `docker_image` and `docker` into the system's `container` block,
/// then `image` (from `run --container`) into it. Refuses a file that gives both shapes.
pub(crate) fn normalize(system: &mut Map, image: Option<&str>) -> Result<(), ConfigError> {
    let docker = system.get("docker").filter(|d| !is_null(d)).cloned();
    let docker_image = system.get("docker_image").filter(|d| !is_null(d)).cloned();
    if let Some(ours) = system.get("container").filter(|c| !is_null(c)) {
        if let Some(python) = docker.as_ref().or(docker_image.as_ref()) {
            let key = if docker.is_some() {
                "docker"
            } else {
                "docker_image"
            };
            return Err(ConfigError::shape(
                python.location.clone().or(ours.location.clone()),
                format!("the system file gives both `container` and the Python tool's `{key}`"),
                "keep one: `container: {runtime, image, ...}` says everything `docker` does",
            ));
        }
    } else if docker.is_some() || docker_image.is_some() {
        let mut block = Map::default();
        if let Some(docker) = &docker {
            let Some(map) = docker.as_map() else {
                return Err(ConfigError::shape(
                    docker.location.clone(),
                    format!("`docker` is {}, not a mapping", docker.kind()),
                    "write `docker: {executable: podman, image: IMAGE, args: [...]}`",
                ));
            };
            for (key, value) in map {
                if !DOCKER_KEYS.contains(&key.as_str()) {
                    return Err(ConfigError::shape(
                        value.location.clone(),
                        format!("`docker.{key}` is not a key of the container block"),
                        format!("use {}", DOCKER_KEYS.map(|k| format!("`{k}`")).join(", ")),
                    ));
                }
                block.insert(key.clone(), value.clone());
            }
            let executable = block
                .get("executable")
                .map(Node::python_str)
                .unwrap_or_else(|| "podman".into());
            block.insert(
                "runtime".into(),
                Node::str(ContainerRuntime::of_executable(&executable).as_str()),
            );
        }
        if !block.contains_key("image")
            && let Some(image) = docker_image
        {
            block.insert("image".into(), image);
        }
        if block.contains_key("image") {
            system.insert("container".into(), Node::new(Value::Map(block)));
        }
    }
    if let Some(image) = image {
        let block = system
            .entry("container".into())
            .or_insert_with(Node::empty_map);
        if block.as_map().is_none() {
            *block = Node::empty_map();
        }
        if let Some(map) = block.as_map_mut() {
            map.insert("image".into(), Node::str(image));
        }
    }
    Ok(())
}

fn is_null(node: &Node) -> bool {
    matches!(node.value, Value::Null)
}

/// Reads the system's `container` block (after [`normalize`] and interpolation); `None` when
/// there is none.
pub(crate) fn container_spec(system: &Node) -> Result<Option<ContainerSpec>, ConfigError> {
    let Some(block) = system.get("container").filter(|c| !is_null(c)) else {
        return Ok(None);
    };
    let Some(map) = block.as_map() else {
        return Err(ConfigError::shape(
            block.location.clone(),
            format!("`container` is {}, not a mapping", block.kind()),
            "write `container: {runtime: podman, image: IMAGE}`",
        ));
    };
    for (key, value) in map {
        if !CONTAINER_KEYS.contains(&key.as_str()) {
            return Err(ConfigError::shape(
                value.location.clone(),
                format!("`container.{key}` is not a key of the container block"),
                format!(
                    "use {}",
                    CONTAINER_KEYS.map(|k| format!("`{k}`")).join(", ")
                ),
            ));
        }
    }
    let text = |key: &str| -> Result<Option<String>, ConfigError> {
        match map.get(key) {
            None => Ok(None),
            Some(node) => match &node.value {
                Value::Null => Ok(None),
                Value::Str(s) if !s.is_empty() => Ok(Some(s.clone())),
                Value::Int(_) | Value::Float(_) => Ok(Some(node.python_str())),
                _ => Err(ConfigError::shape(
                    node.location.clone(),
                    format!("`container.{key}` is {}, not a string", node.kind()),
                    format!("write `{key}` as one string, or leave it out"),
                )),
            },
        }
    };
    let runtime = match text("runtime")? {
        None => ContainerRuntime::Podman,
        Some(name) => ContainerRuntime::ALL
            .into_iter()
            .find(|r| r.as_str() == name.to_ascii_lowercase())
            .ok_or_else(|| {
                ConfigError::shape(
                    map.get("runtime").and_then(|n| n.location.clone()),
                    format!(
                        "`container.runtime: {name}` is not a container runtime milabench runs"
                    ),
                    "write `runtime: podman`, `docker`, `apptainer` or `pyxis`",
                )
            })?,
    };
    let Some(image) = text("image")? else {
        return Err(ConfigError::shape(
            block.location.clone(),
            "the `container` block has no `image`",
            "add `image: IMAGE` to it, or pass `milabench run --container IMAGE`",
        ));
    };
    let absolute = |key: &str| -> Result<Option<Utf8PathBuf>, ConfigError> {
        match text(key)? {
            Some(path) if !path.starts_with('/') => Err(ConfigError::shape(
                map.get(key).and_then(|n| n.location.clone()),
                format!("`container.{key}: {path}` is not an absolute path"),
                format!("write `{key}` as a path from `/`"),
            )),
            other => Ok(other.map(Utf8PathBuf::from)),
        }
    };
    let archive = absolute("archive")?;
    if archive.is_some() && !matches!(runtime, ContainerRuntime::Podman | ContainerRuntime::Docker)
    {
        return Err(ConfigError::shape(
            map.get("archive").and_then(|n| n.location.clone()),
            format!(
                "`container.archive` is loaded by podman or docker, not {}",
                runtime.as_str()
            ),
            "for apptainer give the archive as `image: FILE.tar` (converted to a .sif), for pyxis an enroot `.sqsh` file as `image`",
        ));
    }
    let words = |key: &str| -> Result<Vec<String>, ConfigError> {
        match map.get(key) {
            None => Ok(Vec::new()),
            Some(node) => match &node.value {
                Value::Null => Ok(Vec::new()),
                Value::Seq(items)
                    if items
                        .iter()
                        .all(|i| !matches!(i.value, Value::Seq(_) | Value::Map(_))) =>
                {
                    Ok(items.iter().map(Node::python_str).collect())
                }
                _ => Err(ConfigError::shape(
                    node.location.clone(),
                    format!("`container.{key}` is {}, not a list of words", node.kind()),
                    format!("write `{key}: [--flag, value, ...]`, one word per item"),
                )),
            },
        }
    };
    let mounts = words("mounts")?
        .iter()
        .map(|text| {
            ContainerMount::parse(text).ok_or_else(|| {
                ConfigError::shape(
                    map.get("mounts").and_then(|n| n.location.clone()),
                    format!("`container.mounts` entry `{text}` is not a mount"),
                    "write each mount as `/host/path`, `/host/path:/container/path` or `/host:/container:ro`",
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let env = match map.get("env") {
        None => IndexMap::new(),
        Some(node) => match &node.value {
            Value::Null => IndexMap::new(),
            Value::Map(vars) => vars
                .iter()
                .map(|(k, v)| (k.clone(), v.python_str()))
                .collect(),
            _ => {
                return Err(ConfigError::shape(
                    node.location.clone(),
                    format!("`container.env` is {}, not a mapping", node.kind()),
                    "write `env: {NAME: value}`",
                ));
            }
        },
    };
    let gpus = match text("gpus")?.as_deref() {
        None | Some("all") => GpuPassing::All,
        Some("process") => GpuPassing::Process,
        Some("none") => GpuPassing::None,
        Some(other) => {
            return Err(ConfigError::shape(
                map.get("gpus").and_then(|n| n.location.clone()),
                format!("`container.gpus: {other}` is not a way to pass GPUs"),
                "write `gpus: all` (every GPU of the node), `process` (each process its own) or `none`",
            ));
        }
    };
    Ok(Some(ContainerSpec {
        runtime,
        executable: text("executable")?.unwrap_or_else(|| runtime.default_executable().to_string()),
        image,
        archive,
        base: absolute("base")?,
        mounts,
        env,
        global_args: words("global_args")?,
        args: words("args")?,
        gpus,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn system(text: &str, image: Option<&str>) -> Result<Option<ContainerSpec>, ConfigError> {
        let doc = yaml::parse_str(text, "system.yaml").expect("yaml");
        let mut map = doc.as_map().expect("map").clone();
        normalize(&mut map, image)?;
        container_spec(&Node::new(Value::Map(map)))
    }

    #[test]
    fn no_block_no_container() {
        assert_eq!(system("arch: cpu\n", None).expect("reads"), None);
        assert_eq!(
            system("docker: {executable: podman}\n", None).expect("reads"),
            None,
            "the Python tool runs nothing in a container without an image"
        );
    }

    #[test]
    fn the_python_shape_is_read_as_it_is() {
        let spec = system(
            "docker_image: ghcr.io/mila-iqia/milabench:cuda-nightly\ndocker:\n  executable: /usr/bin/docker\n  base: /milabench/base\n  args: [--rm, --ipc=host]\n",
            None,
        )
        .expect("reads")
        .expect("a container");
        assert_eq!(spec.runtime, ContainerRuntime::Docker);
        assert_eq!(spec.executable, "/usr/bin/docker");
        assert_eq!(spec.image, "ghcr.io/mila-iqia/milabench:cuda-nightly");
        assert_eq!(
            spec.base.as_deref().map(|b| b.as_str()),
            Some("/milabench/base")
        );
        assert_eq!(spec.args, ["--rm", "--ipc=host"]);
        let only_image = system("docker_image: img\n", None)
            .expect("reads")
            .expect("a container");
        assert_eq!(only_image.runtime, ContainerRuntime::Podman);
        assert_eq!(only_image.executable, "podman");
    }

    #[test]
    fn ours_is_typed_and_the_flag_sets_the_image() {
        let spec = system(
            "container:\n  runtime: apptainer\n  image: docker://x/y:1\n  mounts: [/models, \"/s:/scratch:ro\"]\n  env: {A: 1}\n  global_args: [--debug]\n  args: [--cleanenv]\n  gpus: process\n",
            Some("other.sif"),
        )
        .expect("reads")
        .expect("a container");
        assert_eq!(spec.runtime, ContainerRuntime::Apptainer);
        assert_eq!(spec.executable, "apptainer");
        assert_eq!(spec.image, "other.sif", "--container wins");
        assert_eq!(spec.mounts[0].container, None);
        assert_eq!(spec.mounts[1].options.as_deref(), Some("ro"));
        assert_eq!(spec.env["A"], "1");
        assert_eq!(spec.global_args, ["--debug"]);
        assert_eq!(spec.gpus, GpuPassing::Process);
        let flag_only = system("arch: cpu\n", Some("img"))
            .expect("reads")
            .expect("on");
        assert_eq!(flag_only.runtime, ContainerRuntime::Podman);
        let pyxis = system("container: {runtime: pyxis, image: nvcr.io/x}\n", None)
            .expect("reads")
            .expect("on");
        assert_eq!(pyxis.executable, "srun");
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        for (text, expected) in [
            (
                "container: {runtime: lxc, image: i}\n",
                "`container.runtime: lxc` is not",
            ),
            ("container: {runtime: podman}\n", "has no `image`"),
            (
                "container: {image: i, mount: [/a]}\n",
                "`container.mount` is not a key",
            ),
            (
                "container: {image: i, mounts: [data]}\n",
                "entry `data` is not a mount",
            ),
            (
                "container: {image: i, args: --rm}\n",
                "`container.args` is a string",
            ),
            (
                "container: {image: i, gpus: some}\n",
                "`container.gpus: some`",
            ),
            (
                "container: {image: i, base: rel}\n",
                "`container.base: rel` is not an absolute",
            ),
            (
                "container: {image: i, runtime: pyxis, archive: /a.tar}\n",
                "loaded by podman or docker",
            ),
            (
                "container: {image: i}\ndocker_image: j\n",
                "both `container` and the Python tool's `docker_image`",
            ),
            (
                "docker: {image: i, extra: 1}\n",
                "`docker.extra` is not a key",
            ),
        ] {
            let err = system(text, None).expect_err(text).to_string();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("\n  fix: "), "{err}");
        }
    }
}
