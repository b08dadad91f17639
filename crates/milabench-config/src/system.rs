//! The system file (`--system system.yaml`): the machines of a run and how to reach them.
//!
//! Built-in defaults describe one local node; the file's `system:` mapping is merged on top
//! (its `nodes` list replaces the default node). Nodes need `name`, `ip` and `user`; `sshport`
//! defaults to 22 (`port` is accepted as a synonym), `main` marks the node that drives the run
//! and is listed first. GPU facts the file gives are kept; missing ones are filled from what was
//! detected. `self` is the node this process runs on, if any. `launch` says how ranks on other
//! nodes start: `ssh` (the default) or `srun` (inside a Slurm allocation).

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use camino::Utf8PathBuf;

use crate::container::{ContainerSpec, container_spec, normalize};
use crate::error::ConfigError;
use crate::merge::merge;
use crate::settings::options::is_memory_size;
use crate::value::{Map, Node, Value};
use crate::yaml;

/// What the caller knows before reading the system file.
#[derive(Debug, Clone)]
pub struct SystemInputs {
    /// Accelerator family: `cuda`, `rocm`, `xpu`, `hpu` or `cpu`.
    pub arch: String,
    /// Absolute base folder.
    pub base: String,
    /// Name of the run.
    pub run_name: String,
    /// Login used for the default local node.
    pub user: String,
    /// Per-folder overrides of `dirs` (venv, data, runs, extra, cache), e.g. from
    /// `MILABENCH_DIRS_*`.
    pub dirs: Vec<(String, String)>,
    /// GPUs detected on this machine, used where the file gives no `gpu` facts.
    pub detected_gpus: Option<DetectedGpus>,
    /// The image every benchmark process runs in (`run --container`, `MILABENCH_CONTAINER`),
    /// over the file's `container.image`.
    pub container_image: Option<String>,
}

impl SystemInputs {
    /// Inputs for a machine without GPUs and without folder overrides (tests, examples,
    /// embedders that only resolve).
    pub fn local(arch: &str, base: &str, run_name: &str) -> SystemInputs {
        SystemInputs {
            arch: arch.into(),
            base: base.into(),
            run_name: run_name.into(),
            user: "milabench".into(),
            dirs: Vec::new(),
            detected_gpus: None,
            container_image: None,
        }
    }
}

/// GPU facts detected on the local machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectedGpus {
    /// Number of visible GPUs.
    pub count: usize,
    /// Memory of the smallest GPU, in MiB.
    pub capacity_mib: u64,
}

/// One machine of the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Short name, used in run tags.
    pub name: String,
    /// Address (IP or host name).
    pub ip: String,
    /// Login.
    pub user: String,
    /// ssh port.
    pub sshport: u16,
    /// Whether this node drives the run (rank 0).
    pub main: bool,
    /// Whether this node is the machine this process runs on.
    pub local: bool,
}

/// The resolved system file.
#[derive(Debug, Clone)]
pub struct SystemConfig {
    /// The `system` mapping, as benchmarks see it under `system`.
    pub tree: Node,
    /// The optional `multirun` mapping of the file.
    pub multirun: Option<Node>,
}

impl SystemConfig {
    /// The node this process runs on, if it is part of the system.
    pub fn self_node(&self) -> Option<NodeSpec> {
        self.tree.get("self").and_then(node_spec)
    }

    /// Sets `options.<key>` of the system for each `(key, value)` (dotted keys: `sizer.mult`),
    /// as a run of a sweep applies its options.
    pub fn apply_options(&mut self, options: &[(String, serde_json::Value)]) {
        for (key, value) in options {
            let mut node = &mut self.tree;
            for part in std::iter::once("options").chain(key.split('.')) {
                if node.as_map().is_none() {
                    *node = Node::empty_map();
                }
                let map = node.as_map_mut().expect("a mapping");
                node = map.entry(part.to_string()).or_insert_with(Node::empty_map);
            }
            *node = Node::from_json(value);
        }
    }

    /// Fills the `gpu` facts the file leaves out (`count`, `capacity`) from the GPUs found on
    /// this machine, as a build with [`SystemInputs::detected_gpus`] does; what the file says
    /// is kept.
    pub fn fill_detected_gpus(&mut self, gpus: DetectedGpus) {
        if let Some(map) = self.tree.as_map_mut() {
            fill_gpu_facts(map, gpus);
        }
    }

    /// The accelerator family.
    pub fn arch(&self) -> &str {
        self.tree
            .get("arch")
            .and_then(Node::as_str)
            .unwrap_or("cpu")
    }
}

/// How ranks on other nodes start (`launch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaunchMode {
    /// Over ssh (the default).
    #[default]
    Ssh,
    /// With `srun`, inside a Slurm allocation.
    Srun,
}

/// The folders of a system (`dirs`), each benchmark's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemDirs {
    /// Environments.
    pub venv: Utf8PathBuf,
    /// Datasets.
    pub data: Utf8PathBuf,
    /// Run folders.
    pub runs: Utf8PathBuf,
    /// Scratch files.
    pub extra: Utf8PathBuf,
    /// Caches.
    pub cache: Utf8PathBuf,
}

/// The system a suite was resolved for: its `system` mapping, interpolated, read once into
/// typed fields.
#[derive(Debug, Clone)]
pub struct ResolvedSystem {
    /// The accelerator family the file states (`arch`; `cpu` when absent).
    pub arch: String,
    /// The base folder.
    pub base: Utf8PathBuf,
    /// Its folders: empty where unset.
    pub dirs: SystemDirs,
    /// The nodes, main node first.
    pub nodes: Vec<NodeSpec>,
    /// The ssh key to reach the other nodes with (`sshkey`), if any.
    pub ssh_key: Option<String>,
    /// How ranks on other nodes start.
    pub launch: LaunchMode,
    /// The GPUs of a node (`gpu.count`: what the file states, else what was detected; 0
    /// when neither says).
    pub gpu_count: usize,
    /// The container every benchmark process runs in (`container`, or the Python tool's
    /// `docker_image`/`docker`), if any.
    pub container: Option<ContainerSpec>,
    /// The whole mapping: what the typed fields do not cover (`options`, `gpu.capacity`,
    /// `self`, ...), as placeholders, capabilities and `MILABENCH_CONFIG` see it.
    pub tree: Node,
}

impl ResolvedSystem {
    /// Its `options` mapping as JSON (the `cpu.*` and `sizer.*` options a run reads beside
    /// their `MILABENCH_*` variables), if it has one.
    pub fn options_json(&self) -> Option<serde_json::Value> {
        self.tree.get("options").map(Node::to_json)
    }

    /// Reads the resolved `system` mapping `tree` into typed fields.
    pub fn new(tree: Node) -> Result<ResolvedSystem, ConfigError> {
        let text = |key: &str| tree.get(key).and_then(Node::as_str).map(str::to_string);
        let folder = |key: &str| {
            Utf8PathBuf::from(
                tree.get("dirs")
                    .and_then(|d| d.get(key))
                    .map(Node::python_str)
                    .unwrap_or_default(),
            )
        };
        let gpu_count = match tree.get("gpu").and_then(|g| g.get("count")) {
            None
            | Some(Node {
                value: Value::Null, ..
            }) => 0,
            Some(Node {
                value: Value::Int(n),
                ..
            }) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
            Some(other) => {
                return Err(ConfigError::shape(
                    other.location.clone(),
                    format!(
                        "`gpu.count` of the system is {} (`{}`), not a number of GPUs",
                        other.kind(),
                        other.python_str()
                    ),
                    "write the GPUs of a node as an integer, such as `gpu: {count: 8}`, or leave it out to use those detected",
                ));
            }
        };
        if let Some(capacity) = tree
            .get("gpu")
            .and_then(|g| g.get("capacity"))
            .filter(|c| !matches!(c.value, Value::Null))
        {
            let valid = matches!(&capacity.value, Value::Str(text) if is_memory_size(text));
            if !valid {
                return Err(ConfigError::shape(
                    capacity.location.clone(),
                    format!(
                        "`gpu.capacity` of the system is {} (`{}`), not a memory size above 0",
                        capacity.kind(),
                        capacity.python_str()
                    ),
                    "write the memory of one GPU with its unit, such as `gpu: {capacity: 81920 MiB}`, or leave it out to use what is detected",
                ));
            }
        }
        let nodes = match tree.get("nodes").map(|n| &n.value) {
            Some(Value::Seq(items)) => items.iter().filter_map(node_spec).collect(),
            _ => Vec::new(),
        };
        Ok(ResolvedSystem {
            arch: text("arch").unwrap_or_else(|| "cpu".into()),
            base: Utf8PathBuf::from(tree.get("base").map(Node::python_str).unwrap_or_default()),
            dirs: SystemDirs {
                venv: folder("venv"),
                data: folder("data"),
                runs: folder("runs"),
                extra: folder("extra"),
                cache: folder("cache"),
            },
            nodes,
            ssh_key: text("sshkey"),
            launch: if text("launch").as_deref() == Some("srun") {
                LaunchMode::Srun
            } else {
                LaunchMode::Ssh
            },
            gpu_count,
            container: container_spec(&tree)?,
            tree,
        })
    }
}

fn node_spec(node: &Node) -> Option<NodeSpec> {
    let field = |k: &str| node.get(k).map(Node::python_str);
    Some(NodeSpec {
        name: field("name")?,
        ip: field("ip")?,
        user: field("user")?,
        sshport: match node.get("sshport").map(|n| &n.value) {
            Some(Value::Int(p)) => u16::try_from(*p).ok()?,
            _ => 22,
        },
        main: node.get("main").is_some_and(Node::is_truthy),
        local: node.get("local").is_some_and(Node::is_truthy),
    })
}

/// The built-in system defaults: one local node and folders under the base.
fn defaults(inputs: &SystemInputs) -> Node {
    let mut node = Map::default();
    node.insert("name".into(), Node::str("local"));
    node.insert("ip".into(), Node::str("127.0.0.1"));
    node.insert("sshport".into(), Node::new(Value::Int(22)));
    node.insert("user".into(), Node::str(inputs.user.clone()));
    node.insert("main".into(), Node::new(Value::Bool(true)));
    let mut dirs = Map::default();
    for name in ["venv", "data", "runs", "extra", "cache"] {
        let value = inputs
            .dirs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| format!("${{system.base}}/{name}"));
        dirs.insert(name.into(), Node::str(value));
    }
    let mut gpu = Map::default();
    gpu.insert("count".into(), Node::new(Value::Int(0)));
    let mut system = Map::default();
    system.insert("arch".into(), Node::str(inputs.arch.clone()));
    system.insert("sshkey".into(), Node::new(Value::Null));
    system.insert(
        "nodes".into(),
        Node::new(Value::Seq(vec![Node::new(Value::Map(node))])),
    );
    system.insert("gpu".into(), Node::new(Value::Map(gpu)));
    system.insert("run_name".into(), Node::str(inputs.run_name.clone()));
    system.insert("base".into(), Node::str(inputs.base.clone()));
    system.insert("dirs".into(), Node::new(Value::Map(dirs)));
    Node::new(Value::Map(system))
}

/// Builds the system configuration from the defaults and an optional file.
pub fn load_system(
    file: Option<&Path>,
    inputs: &SystemInputs,
) -> Result<SystemConfig, ConfigError> {
    SystemSource::file(file)?.build(inputs)
}

/// Builds the system configuration from the defaults and a system file's text (one that
/// milabench made, e.g. from a Slurm allocation); `origin` names it in errors.
pub fn load_system_str(
    text: &str,
    origin: &str,
    inputs: &SystemInputs,
) -> Result<SystemConfig, ConfigError> {
    SystemSource::text(text, origin)?.build(inputs)
}

/// How many times this process read a system file (see [`system_file_reads`]).
static SYSTEM_FILE_READS: AtomicUsize = AtomicUsize::new(0);

/// How many system files this process read: a resolution reads its file once, however many
/// times it builds the configuration.
pub fn system_file_reads() -> usize {
    SYSTEM_FILE_READS.load(Ordering::Relaxed)
}

/// A system file read and parsed, before it is built into a [`SystemConfig`].
#[derive(Debug, Clone)]
struct SystemSource {
    doc: Option<(Node, String)>,
}

impl SystemSource {
    /// The file at `file`, or the defaults alone when there is none.
    fn file(file: Option<&Path>) -> Result<SystemSource, ConfigError> {
        if file.is_some() {
            SYSTEM_FILE_READS.fetch_add(1, Ordering::Relaxed);
        }
        let doc = match file {
            None => None,
            Some(path) => Some((
                yaml::load_file(path, "system file")?,
                path.display().to_string(),
            )),
        };
        Ok(SystemSource { doc })
    }

    /// A system file's text; `origin` names it in errors.
    fn text(text: &str, origin: &str) -> Result<SystemSource, ConfigError> {
        let doc = yaml::parse_str(text, origin)?;
        Ok(SystemSource {
            doc: Some((doc, origin.to_string())),
        })
    }

    /// The system configuration of the defaults for `inputs` with the file merged on top.
    fn build(self, inputs: &SystemInputs) -> Result<SystemConfig, ConfigError> {
        build_system(self.doc, inputs)
    }
}

/// The defaults with the parsed system file `doc` (and its name) merged on top.
fn build_system(
    doc: Option<(Node, String)>,
    inputs: &SystemInputs,
) -> Result<SystemConfig, ConfigError> {
    let (file_system, multirun) = match doc {
        None => (None, None),
        Some((doc, name)) => {
            let Value::Map(mut top) = doc.value else {
                return Err(ConfigError::shape(
                    doc.location.clone(),
                    format!("the system file holds {}, not a mapping", doc.kind()),
                    "write `system:` with `arch`, `nodes`, ... under it",
                ));
            };
            let system = top.shift_remove("system").ok_or_else(|| {
                ConfigError::shape(
                    None,
                    format!("{name} has no top-level `system:` mapping"),
                    "put the node list and options under a top-level `system:` key",
                )
            })?;
            if system.as_map().is_none() {
                return Err(ConfigError::shape(
                    system.location.clone(),
                    format!("`system` is {}, not a mapping", system.kind()),
                    "write `system:` followed by indented keys (`arch`, `nodes`, ...)",
                ));
            }
            (Some(system), top.shift_remove("multirun"))
        }
    };
    let mut tree = defaults(inputs);
    if let Some(system) = file_system {
        tree = merge(tree, system, "system")?;
    }
    finish(&mut tree, inputs)?;
    Ok(SystemConfig { tree, multirun })
}

/// Validates nodes, orders them, fills GPU facts and computes `self`.
fn finish(tree: &mut Node, inputs: &SystemInputs) -> Result<(), ConfigError> {
    let map = tree.as_map_mut().expect("system is a mapping");
    // The family is checked as `--arch` checks it, and written the way the rest expects it.
    if let Some(arch) = map.get_mut("arch") {
        let text = arch.python_str();
        // A name only `MILABENCH_GPU_ARCH` may give (see `Arch::Named`) is kept as it is.
        let known = crate::settings::Arch::parse(&text).or_else(|| {
            (text == inputs.arch)
                .then(|| crate::settings::Arch::parse_any(&text))
                .flatten()
        });
        let Some(known) = known else {
            return Err(ConfigError::shape(
                arch.location.clone(),
                format!("`arch: {text}` is not an accelerator family milabench knows"),
                format!(
                    "write {} (as --arch and MILABENCH_GPU_ARCH accept)",
                    crate::settings::Arch::EXPECTED
                ),
            ));
        };
        arch.value = Value::Str(known.as_str().into());
    }
    if let Some(gpus) = inputs.detected_gpus {
        fill_gpu_facts(map, gpus);
    }
    normalize(map, inputs.container_image.as_deref())?;
    if let Some(launch) = map.get("launch") {
        let text = launch.python_str();
        if text != "ssh" && text != "srun" {
            return Err(ConfigError::shape(
                launch.location.clone(),
                format!("`launch: {text}` is not a way to reach nodes"),
                "write `launch: ssh` (the default) or `launch: srun` (inside a Slurm allocation)",
            ));
        }
    }
    if let Some(Node {
        value: Value::Str(key),
        ..
    }) = map.get_mut("sshkey")
        && let Some(rest) = key.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        *key = Path::new(&home).join(rest).display().to_string();
    }
    let nodes_node = map.get_mut("nodes").expect("defaults always have nodes");
    let location = nodes_node.location.clone();
    let Value::Seq(nodes) = &mut nodes_node.value else {
        return Err(ConfigError::shape(
            location,
            format!("`nodes` is {}, not a list", nodes_node.kind()),
            "write `nodes:` as a list of `{name, ip, user}` mappings",
        ));
    };
    if nodes.is_empty() {
        return Err(ConfigError::shape(
            location,
            "`nodes` is empty",
            "list at least one node with `name`, `ip` and `user`",
        ));
    }
    let local_names = local_identities();
    for node in nodes.iter_mut() {
        check_node(node)?;
        let m = node.as_map_mut().expect("checked");
        let ip = m.get("ip").map(Node::python_str).unwrap_or_default();
        let is_local = local_names.matches(&ip);
        m.insert("local".into(), Node::new(Value::Bool(is_local)));
    }
    let mains = nodes
        .iter()
        .filter(|n| n.get("main").is_some_and(Node::is_truthy))
        .count();
    if mains > 1 {
        return Err(ConfigError::shape(
            location,
            format!("{mains} nodes are marked `main: true`"),
            "mark exactly one node as main (the one that drives the run)",
        ));
    }
    if mains == 0
        && let Some(first) = nodes.first_mut().and_then(Node::as_map_mut)
    {
        first.insert("main".into(), Node::new(Value::Bool(true)));
    }
    nodes.sort_by_key(|n| !n.get("main").is_some_and(Node::is_truthy));
    let self_node = nodes
        .iter()
        .rev()
        .find(|n| n.get("local").is_some_and(Node::is_truthy))
        .cloned()
        .unwrap_or_else(|| Node::new(Value::Null));
    map.insert("self".into(), self_node);
    Ok(())
}

/// The `gpu` facts of the `system` mapping `map`: what the file says is kept, the rest is
/// filled from `gpus`.
fn fill_gpu_facts(map: &mut Map, gpus: DetectedGpus) {
    let gpu = map.entry("gpu".into()).or_insert_with(Node::empty_map);
    if let Some(g) = gpu.as_map_mut() {
        if g.get("count").is_none_or(|c| c.location.is_none()) {
            g.insert("count".into(), Node::new(Value::Int(gpus.count as i64)));
        }
        if gpus.capacity_mib > 0 {
            g.entry("capacity".into())
                .or_insert_with(|| Node::str(format!("{} MiB", gpus.capacity_mib)));
        }
    }
}

fn check_node(node: &mut Node) -> Result<(), ConfigError> {
    let location = node.location.clone();
    let Value::Map(m) = &mut node.value else {
        return Err(ConfigError::shape(
            location,
            format!("a node is {}, not a mapping", node.kind()),
            "describe each node as `{name: n0, ip: 10.0.0.1, user: me}`",
        ));
    };
    for field in ["name", "ip", "user"] {
        match m.get(field).map(|v| &v.value) {
            Some(Value::Str(_) | Value::Int(_)) => {}
            _ => {
                return Err(ConfigError::shape(
                    location.clone(),
                    format!("a node lacks `{field}`"),
                    "every node needs `name`, `ip` and `user`",
                ));
            }
        }
    }
    if !m.contains_key("sshport") {
        let port = m
            .get("port")
            .cloned()
            .unwrap_or_else(|| Node::new(Value::Int(22)));
        m.insert("sshport".into(), port);
    }
    match m.get("sshport").map(|p| &p.value) {
        Some(Value::Int(p)) if u16::try_from(*p).is_ok() => {}
        _ => {
            let at = m.get("sshport").and_then(|p| p.location.clone());
            return Err(ConfigError::shape(
                at,
                "`sshport` is not a port number",
                "write an integer between 1 and 65535",
            ));
        }
    }
    m.entry("main".into())
        .or_insert_with(|| Node::new(Value::Bool(false)));
    Ok(())
}

/// The names and addresses this machine answers to.
struct LocalIdentities {
    hostname: Option<String>,
    addresses: Vec<IpAddr>,
}

impl LocalIdentities {
    fn matches(&self, ip: &str) -> bool {
        // A Slurm node name is often the short form of a host name with a domain.
        let short = self.hostname.as_deref().and_then(|h| h.split('.').next());
        if ip == "localhost" || self.hostname.as_deref() == Some(ip) || short == Some(ip) {
            return true;
        }
        match ip.parse::<IpAddr>() {
            Ok(addr) => addr.is_loopback() || self.addresses.contains(&addr),
            Err(_) => false,
        }
    }
}

fn local_identities() -> LocalIdentities {
    let hostname = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok());
    let addresses = nix::ifaddrs::getifaddrs()
        .map(|addrs| {
            addrs
                .filter_map(|a| a.address)
                .filter_map(|s| {
                    if let Some(v4) = s.as_sockaddr_in() {
                        Some(IpAddr::V4(v4.ip()))
                    } else {
                        s.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    LocalIdentities {
        hostname,
        addresses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> SystemInputs {
        SystemInputs {
            arch: "cpu".into(),
            base: "/b".into(),
            run_name: "r".into(),
            user: "me".into(),
            dirs: vec![],
            detected_gpus: Some(DetectedGpus {
                count: 2,
                capacity_mib: 81920,
            }),
            container_image: None,
        }
    }

    fn load(text: &str) -> Result<SystemConfig, ConfigError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("system.yaml");
        std::fs::write(&path, text).expect("write");
        load_system(Some(&path), &inputs())
    }

    #[test]
    fn defaults_have_one_local_main_node() {
        let system = load_system(None, &inputs()).expect("loads");
        let nodes = ResolvedSystem::new(system.tree.clone())
            .expect("typed")
            .nodes;
        assert_eq!(nodes.len(), 1);
        assert!(nodes[0].main && nodes[0].local);
        assert_eq!(system.self_node().expect("self").name, "local");
        assert_eq!(
            system.tree.get("gpu").expect("gpu").to_json(),
            serde_json::json!({"count": 2, "capacity": "81920 MiB"})
        );
    }

    #[test]
    fn gpus_found_after_the_build_fill_what_a_build_with_them_fills() {
        let text = "system:\n  arch: cuda\n  gpu: {count: 1}\n  nodes:\n    - {name: m, ip: 127.0.0.1, user: u}\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("system.yaml");
        std::fs::write(&path, text).expect("write");
        let with_gpus = load_system(Some(&path), &inputs()).expect("loads");
        let mut later = load_system(
            Some(&path),
            &SystemInputs {
                detected_gpus: None,
                ..inputs()
            },
        )
        .expect("loads");
        later.fill_detected_gpus(inputs().detected_gpus.expect("gpus"));
        assert_eq!(later.tree.to_json(), with_gpus.tree.to_json());
        // The file's count is kept; its missing capacity is filled.
        assert_eq!(
            later.tree.get("gpu").expect("gpu").to_json(),
            serde_json::json!({"count": 1, "capacity": "81920 MiB"})
        );
    }

    #[test]
    fn main_node_first_and_file_gpu_kept() {
        let system = load(
            "system:\n  arch: cuda\n  gpu: {capacity: 40000 MiB}\n  nodes:\n    - {name: w1, ip: 10.255.0.2, user: u}\n    - {name: m, ip: 127.0.0.1, user: u, main: true, port: 2222}\n",
        )
        .expect("loads");
        let nodes = ResolvedSystem::new(system.tree.clone())
            .expect("typed")
            .nodes;
        assert_eq!(nodes[0].name, "m");
        assert_eq!(nodes[0].sshport, 2222);
        assert_eq!(nodes[1].sshport, 22);
        assert!(!nodes[1].main);
        assert_eq!(system.arch(), "cuda");
        assert_eq!(system.self_node().expect("self").name, "m");
        assert_eq!(
            system.tree.get("gpu").expect("gpu").to_json()["capacity"],
            "40000 MiB"
        );
    }

    #[test]
    fn the_resolved_system_is_typed_and_a_bad_gpu_count_located() {
        let system = load(
            "system:\n  sshkey: /keys/id\n  launch: srun\n  gpu: {count: 4}\n  nodes:\n    - {name: m, ip: 127.0.0.1, user: u}\n",
        )
        .expect("loads");
        let typed = ResolvedSystem::new(system.tree).expect("typed");
        assert_eq!(typed.arch, "cpu");
        assert_eq!(typed.base, "/b");
        assert_eq!(
            typed.dirs.runs, "${system.base}/runs",
            "not interpolated here"
        );
        assert_eq!(typed.ssh_key.as_deref(), Some("/keys/id"));
        assert_eq!(typed.launch, LaunchMode::Srun);
        assert_eq!(typed.gpu_count, 4);
        assert_eq!(typed.nodes[0].name, "m");
        let bad = load("system:\n  gpu: {count: many}\n").expect("loads");
        let err = ResolvedSystem::new(bad.tree)
            .expect_err("refused")
            .to_string();
        assert!(err.contains(":2:16: `gpu.count` of the system is"), "{err}");
    }

    #[test]
    fn a_gpu_capacity_is_a_memory_size_located_when_it_is_not() {
        for (capacity, kind) in [
            ("lots", "a string (`lots`)"),
            ("\"-5 GiB\"", "a string (`-5 GiB`)"),
            ("0", "an integer (`0`)"),
        ] {
            let bad = load(&format!("system:\n  gpu: {{capacity: {capacity}}}\n")).expect("loads");
            let err = ResolvedSystem::new(bad.tree)
                .expect_err("refused")
                .to_string();
            assert!(
                err.contains(&format!(
                    ":2:19: `gpu.capacity` of the system is {kind}, not a memory size"
                )),
                "{err}"
            );
        }
        let good = load("system:\n  gpu: {capacity: 40000 MiB}\n").expect("loads");
        assert!(ResolvedSystem::new(good.tree).is_ok());
    }

    #[test]
    fn arch_is_one_that_arch_accepts() {
        let err = load("system:\n  arch: tpu\n").expect_err("fails");
        let text = err.to_string();
        assert!(
            text.contains("`arch: tpu` is not an accelerator family"),
            "{text}"
        );
        assert!(text.contains("one of cuda, rocm, xpu, hpu, cpu"), "{text}");
        assert_eq!(
            load("system:\n  arch: ROCm\n").expect("loads").arch(),
            "rocm"
        );
    }

    #[test]
    fn bad_nodes_are_explained() {
        let err = load("system:\n  nodes:\n    - {name: a, ip: 1.2.3.4}\n").expect_err("fails");
        assert!(err.to_string().contains("lacks `user`"), "{err}");
        let err = load("system:\n  nodes:\n    - {name: a, ip: x, user: u, main: true}\n    - {name: b, ip: y, user: u, main: true}\n").expect_err("fails");
        assert!(err.to_string().contains("2 nodes are marked"), "{err}");
        let err = load("nodes: []\n").expect_err("fails");
        assert!(err.to_string().contains("no top-level `system:`"), "{err}");
    }
}
