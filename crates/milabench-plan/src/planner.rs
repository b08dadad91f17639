//! From one resolved benchmark to its processes.
//!
//! - `per_gpu`: one process per visible GPU, each seeing only its device through the vendor's
//!   visibility variable, tagged `D<i>`; on a machine without GPUs, one process on the CPU
//!   (tagged `D0`, as the Python tool names it).
//! - `njobs`: `n` copies tagged `<i>`, each seeing every device.
//! - `--repeat N`: tags get `R<i>` after the name.
//! - launchers: voir (default), plain python, torchrun, accelerate, or the script itself.
//! - multi-node (`num_machines > 1` with several nodes in the system file): one rank per node,
//!   rank 0 on the main node; remote ranks through `ssh` (see the `launch` module) with their
//!   environment on the command line, the data channel in stdout, and tags `<node>`
//!   (`<node>.nolog` for ranks other than 0). A rank on this machine runs directly, without ssh.

use milabench_config::settings::env_vars::{
    MILABENCH_BASE, MILABENCH_CONFIG, MILABENCH_DATA_DIR, MILABENCH_DIR_PREFIX, MILABENCH_NAME,
    MILABENCH_USE_STDOUT,
};

use camino::{Utf8Path, Utf8PathBuf};
use indexmap::IndexMap;
use milabench_config::benchfile::{BenchFile, Launcher};
use milabench_config::placeholders::{ArgResolver, LaunchContext};
use milabench_config::settings::options::{CpuOptions, SizerOptions};
use milabench_config::{
    ContainerRuntime, ContainerSpec, LaunchMode, Node, NodeSpec, PlanMethod, ResolvedBench,
    ResolvedSystem,
};

use crate::container::{
    ContainerCall, ContainerProcess, PathMap, container_command, container_name, runnable_image,
    stop_command,
};
use crate::error::PlanError;
use crate::launch::{Launch, SrunTarget, SshTarget};
use crate::spec::{BenchPlan, PlannedFile, ProcessSpec};

/// Port of the torchrun/accelerate rendezvous on the main node.
pub const RENDEZVOUS_PORT: u16 = 29400;

/// A GPU a run may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanGpu {
    /// Its index: the device of its process (which the telemetry reads) and the `D<i>` of the
    /// process's tag.
    pub id: String,
    /// What the visibility variable of a process of this GPU alone holds: its index, or the
    /// entry that named it in the caller's variable (a `GPU-` or `MIG-` UUID).
    pub selector: String,
}

impl PlanGpu {
    /// A GPU named by its index alone.
    pub fn index(id: impl Into<String>) -> PlanGpu {
        let id = id.into();
        PlanGpu {
            selector: id.clone(),
            id,
        }
    }
}

/// Facts about the machine and the run that planning depends on.
#[derive(Debug, Clone)]
pub struct PlanContext {
    /// The resolved system: its base folder, nodes, ssh key, how remote ranks start.
    pub system: ResolvedSystem,
    /// Accelerator family (`cuda`, `rocm`, `xpu`, `hpu`, `cpu`).
    pub arch: String,
    /// The GPUs visible to milabench (empty on a machine without GPUs).
    pub gpus: Vec<PlanGpu>,
    /// CPUs of this host.
    pub host_cpu_count: usize,
    /// CPU options (`auto(v, d)`, `n_worker`).
    pub cpu: CpuOptions,
    /// Sizer options (`auto_batch(n)`).
    pub sizer: SizerOptions,
    /// The scaling file `sizer.config` names, as JSON (benchmarks by name), if any.
    pub scaling: Option<serde_json::Value>,
    /// `(index, total)` when the suite is repeated (`--repeat`), to tag runs `R<i>`.
    pub repeat: Option<(usize, usize)>,
    /// `PATH` of the orchestrator, to which each environment's `bin/` is prepended.
    pub path: String,
    /// The `milabench` program, which serving benchmarks (launcher `load`) run as their load
    /// generator; `None` when it was not found.
    pub milabench_program: Option<Utf8PathBuf>,
}

/// The variable that restricts a process to some GPUs, for an arch.
pub fn visibility_variable(arch: &str) -> &'static str {
    match arch {
        "rocm" => "ROCR_VISIBLE_DEVICES",
        "hpu" => "HABANA_VISIBLE_MODULES",
        "xpu" => "ONEAPI_DEVICE_SELECTOR",
        "cuda" => "CUDA_VISIBLE_DEVICES",
        _ => "CPU_VISIBLE_DEVICE",
    }
}

/// One logical job before it is spread over nodes.
pub(crate) struct Job {
    pub tag: Vec<String>,
    pub devices: Vec<String>,
    pub visibility: Option<String>,
    pub job_number: Option<usize>,
}

/// Plans one benchmark.
pub fn plan_bench(bench: &ResolvedBench, ctx: &PlanContext) -> Result<BenchPlan, PlanError> {
    let benchfile = runnable_benchfile(bench)?;
    let base_tag = base_tag(bench, ctx);
    let jobs = match bench.plan {
        PlanMethod::PerGpu if ctx.gpus.is_empty() => vec![Job {
            tag: [base_tag.clone(), vec!["D0".into()]].concat(),
            devices: Vec::new(),
            visibility: Some("0".into()),
            job_number: None,
        }],
        PlanMethod::PerGpu => ctx
            .gpus
            .iter()
            .map(|gpu| Job {
                tag: [base_tag.clone(), vec![format!("D{}", gpu.id)]].concat(),
                devices: vec![gpu.id.clone()],
                visibility: Some(visibility_value(&ctx.arch, &gpu.selector)),
                job_number: None,
            })
            .collect(),
        PlanMethod::Njobs { n } => (0..n as usize)
            .map(|i| Job {
                tag: [base_tag.clone(), vec![i.to_string()]].concat(),
                devices: ctx.gpus.iter().map(|gpu| gpu.id.clone()).collect(),
                visibility: None,
                job_number: Some(i),
            })
            .collect(),
    };
    let nodes = &ctx.system.nodes;
    let ranks: Vec<NodeSpec> = if bench.num_machines > 1 && nodes.len() > 1 {
        nodes.iter().take(bench.num_machines).cloned().collect()
    } else {
        Vec::new()
    };
    let mut processes = Vec::new();
    let mut files = Vec::new();
    for job in &jobs {
        if ranks.is_empty() {
            let (spec, file) = process(bench, benchfile, ctx, job, None, None)?;
            processes.push(spec);
            files.extend(file);
        } else {
            for (rank, node) in ranks.iter().enumerate() {
                let rank = Some((rank, node, ranks.as_slice()));
                let (spec, file) = process(bench, benchfile, ctx, job, rank, None)?;
                processes.push(spec);
                files.extend(file);
            }
        }
    }
    Ok(BenchPlan {
        bench: bench.name.clone(),
        processes,
        files,
        max_duration: bench.max_duration.clone()?,
    })
}

/// The benchfile of a benchmark that runs: refused for one without a definition, and for one
/// the resolution did not read a benchfile for (disabled or not selected).
pub(crate) fn runnable_benchfile(bench: &ResolvedBench) -> Result<&BenchFile, PlanError> {
    if bench.definition.is_none() {
        return Err(PlanError::NoDefinition {
            bench: bench.name.clone(),
        });
    }
    bench
        .benchfile
        .as_deref()
        .ok_or_else(|| PlanError::NotRunnable {
            bench: bench.name.clone(),
        })
}

/// Plans the prepare step of a benchmark: one process, in its environment, that receives the
/// same arguments as the run (`benchfile.prepare`, else `prepare.py` when `has_prepare_script`).
/// `None` when there is nothing to prepare.
pub fn plan_prepare(
    bench: &ResolvedBench,
    ctx: &PlanContext,
    has_prepare_script: bool,
) -> Result<Option<BenchPlan>, PlanError> {
    let benchfile = runnable_benchfile(bench)?;
    let dirs = &bench.folders;
    let python = dirs.venv.join("bin").join("python").to_string();
    let command: Vec<String> = match &benchfile.prepare {
        Some(command) if command.is_empty() => return Ok(None),
        Some(command) => {
            let mut command = command.clone();
            if command[0].ends_with(".py") {
                command.insert(0, python);
            }
            command
        }
        None if has_prepare_script => vec![python, dirs.code.join("prepare.py").to_string()],
        None => return Ok(None),
    };
    let job = Job {
        tag: vec![bench.name.clone()],
        devices: Vec::new(),
        visibility: None,
        job_number: None,
    };
    let (spec, _) = process(
        bench,
        &BenchFile {
            launcher: Launcher::Direct,
            script: String::new(),
            module: None,
            ..benchfile.clone()
        },
        ctx,
        &job,
        None,
        Some(command),
    )?;
    Ok(Some(BenchPlan {
        bench: bench.name.clone(),
        processes: vec![spec],
        files: Vec::new(),
        max_duration: None,
    }))
}

pub(crate) fn visibility_value(arch: &str, gpu: &str) -> String {
    if arch == "xpu" {
        format!("level_zero:{gpu}")
    } else {
        gpu.to_string()
    }
}

/// Builds one process: the launcher around the script and its resolved arguments; `command`,
/// for the direct launcher, in place of the script (a prepare step's command), before the
/// process is wrapped to reach its node or container.
fn process(
    bench: &ResolvedBench,
    benchfile: &BenchFile,
    ctx: &PlanContext,
    job: &Job,
    rank: Option<(usize, &NodeSpec, &[NodeSpec])>,
    command: Option<Vec<String>>,
) -> Result<(ProcessSpec, Option<PlannedFile>), PlanError> {
    let dirs = &bench.folders;
    let mut tag = job.tag.clone();
    if let Some((r, node, _)) = rank {
        tag.push(node.name.clone());
        if r > 0 {
            tag.push("nolog".into());
        }
    }
    let resolver = arg_resolver(bench, ctx);
    let resolve = |arg: &str| {
        resolver.resolve(arg).map_err(|e| PlanError::Placeholder {
            bench: bench.name.clone(),
            message: e.to_string(),
        })
    };
    let script_args: Vec<String> = bench
        .argv
        .iter()
        .map(|a| resolve(a))
        .collect::<Result<_, _>>()?;
    let venv_bin = dirs.venv.join("bin");
    let target: Vec<String> = match &benchfile.module {
        Some(module) => vec!["-m".into(), module.clone()],
        None => vec![dirs.code.join(&benchfile.script).to_string()],
    };
    let nproc = if job.devices.is_empty() {
        benchfile.nproc_per_node.unwrap_or(1) as usize
    } else {
        job.devices.len()
    };
    let tag_name = tag.join(".");
    let mut voir_file = None;
    let mut use_stdout = benchfile.use_stdout || rank.is_some();
    let mut argv: Vec<String> = Vec::new();
    match benchfile.launcher {
        Launcher::Voir => {
            argv.push(venv_bin.join("voir").to_string());
            if let Some(file) = voir_config_file(bench, &tag_name) {
                argv.push("--config".into());
                argv.push(file.path.to_string());
                voir_file = Some(file);
            }
            argv.extend(target);
        }
        Launcher::Python => {
            argv.push(venv_bin.join("python").to_string());
            argv.extend(target);
        }
        Launcher::Load => {
            let program = ctx
                .milabench_program
                .as_ref()
                .ok_or_else(|| PlanError::Invalid {
                    bench: bench.name.clone(),
                    message: "a serving benchmark (launcher `load`) runs the `milabench` program \
                          as its load generator, and it was not found: put `milabench` on PATH"
                        .into(),
                })?;
            argv.extend([program.to_string(), "load".into(), "--emit-events".into()]);
        }
        Launcher::Direct => {
            if benchfile.module.is_some() {
                return Err(PlanError::Invalid {
                    bench: bench.name.clone(),
                    message: "launcher `direct` runs a script; it cannot run a `module`".into(),
                });
            }
            argv.extend(command.unwrap_or(target));
        }
        Launcher::Torchrun => {
            use_stdout = true;
            argv.push(venv_bin.join("torchrun").to_string());
            match rank {
                Some((r, node, nodes)) => {
                    let main = &nodes[0];
                    argv.extend([
                        format!("--nnodes={}", nodes.len()),
                        format!("--node-rank={r}"),
                        "--rdzv-backend=static".into(),
                        format!("--rdzv-endpoint={}:{RENDEZVOUS_PORT}", main.ip),
                        format!("--master-addr={}", main.ip),
                        format!("--master-port={RENDEZVOUS_PORT}"),
                        format!("--local-addr={}", node.ip),
                    ]);
                }
                None => argv.push("--standalone".into()),
            }
            argv.push(format!("--nproc-per-node={nproc}"));
            argv.push("--local-ranks-filter=0".into());
            argv.extend(target);
        }
        Launcher::Accelerate => {
            use_stdout = true;
            let machines = rank.map_or(1, |(_, _, nodes)| nodes.len());
            let machine_rank = rank.map_or(0, |(r, _, _)| r);
            let main_ip = rank.map_or("127.0.0.1".to_string(), |(_, _, nodes)| nodes[0].ip.clone());
            argv.push(venv_bin.join("accelerate").to_string());
            argv.push("launch".into());
            if nproc * machines > 1 && !job.devices.is_empty() {
                argv.push("--multi_gpu".into());
            }
            argv.extend([
                format!("--num_machines={machines}"),
                format!("--machine_rank={machine_rank}"),
                format!("--num_processes={}", nproc * machines),
                format!("--main_process_ip={main_ip}"),
                format!("--main_process_port={RENDEZVOUS_PORT}"),
            ]);
            argv.extend(target);
        }
    }
    argv.extend(script_args);
    if benchfile.launcher == Launcher::Load {
        argv.extend(serving_parts(bench, benchfile, &resolve)?);
    }
    let node = rank.map(|(_, node, _)| node);
    let spec = finish_process(
        FinishedProcess {
            bench,
            ctx,
            job,
            tag,
            argv,
            cwd: dirs.code.clone(),
            use_stdout,
            extra_env: &benchfile.env,
            node,
            resolve: &resolve,
        },
        rank.map(|_| job.tag.join(".")),
    )?;
    Ok((spec, voir_file))
}

/// What a serving benchmark's `milabench load` gets after the benchmark's own arguments: the
/// `client.argv` flags, then `--` and the server's command with its `server.argv`.
fn serving_parts(
    bench: &ResolvedBench,
    benchfile: &BenchFile,
    resolve: &dyn Fn(&str) -> Result<String, PlanError>,
) -> Result<Vec<String>, PlanError> {
    let dirs = &bench.folders;
    let Some((program, args)) = benchfile
        .server
        .as_deref()
        .and_then(<[String]>::split_first)
    else {
        return Err(PlanError::Invalid {
            bench: bench.name.clone(),
            message: "launcher `load` needs the server to start: add `server: [PROGRAM, ARGS...]` \
                      to the benchmark's benchfile.yaml"
                .into(),
        });
    };
    let venv_bin = dirs.venv.join("bin");
    let mut out: Vec<String> = bench
        .client_argv
        .iter()
        .map(|a| resolve(a))
        .collect::<Result<_, _>>()?;
    out.push("--".into());
    if program.ends_with(".py") {
        out.push(venv_bin.join("python").to_string());
        out.push(dirs.code.join(program).to_string());
    } else if program.contains('/') {
        out.push(program.clone());
    } else {
        out.push(venv_bin.join(program).to_string());
    }
    out.extend(args.iter().cloned());
    for arg in &bench.server_argv {
        out.push(resolve(arg)?);
    }
    Ok(out)
}

/// The tag of a benchmark's processes before a plan spreads them: its name, then `R<i>` in a
/// repeated suite.
pub(crate) fn base_tag(bench: &ResolvedBench, ctx: &PlanContext) -> Vec<String> {
    let mut tag = vec![bench.name.clone()];
    if let Some((index, total)) = ctx.repeat
        && total > 1
    {
        tag.push(format!("R{index}"));
    }
    tag
}

/// The resolver of a benchmark's launch-time placeholders (`{n_worker}`, `auto_batch(...)`).
pub(crate) fn arg_resolver(bench: &ResolvedBench, ctx: &PlanContext) -> ArgResolver {
    ArgResolver::new(LaunchContext {
        system: ctx.system.tree.to_json(),
        host_cpu_count: ctx.host_cpu_count,
        gpu_count: ctx.gpus.len(),
        milabench_base: ctx.system.base.clone(),
        dirs: bench.folders.clone(),
        bench_name: bench.name.clone(),
        benchmark_folder: bench.folders.code.clone(),
        cpu: ctx.cpu.clone(),
        sizer: ctx.sizer.clone(),
        scaling: ctx
            .scaling
            .as_ref()
            .and_then(|file| file.get(&bench.name))
            .cloned(),
        ..LaunchContext::default()
    })
}

/// The voir configuration file of a process tagged `tag_name`, when the benchmark has a
/// `voir` setting: `<extra>/voirconf-<tag>-<hash>.json`.
pub(crate) fn voir_config_file(bench: &ResolvedBench, tag_name: &str) -> Option<PlannedFile> {
    let voir = bench.config.get("voir")?;
    let content = serde_json::to_string(&voir.to_json()).unwrap_or_default();
    let path = bench.folders.extra.join(format!(
        "voirconf-{tag_name}-{:016x}.json",
        fnv1a(content.as_bytes())
    ));
    Some(PlannedFile { path, content })
}

/// What [`finish_process`] needs of a process whose argv is built.
pub(crate) struct FinishedProcess<'a> {
    pub bench: &'a ResolvedBench,
    pub ctx: &'a PlanContext,
    pub job: &'a Job,
    pub tag: Vec<String>,
    pub argv: Vec<String>,
    pub cwd: Utf8PathBuf,
    pub use_stdout: bool,
    /// Variables of the benchmark's definition (its benchfile), before the suite's `env`.
    pub extra_env: &'a IndexMap<String, String>,
    /// The node of a multi-node rank.
    pub node: Option<&'a NodeSpec>,
    pub resolve: &'a dyn Fn(&str) -> Result<String, PlanError>,
}

/// The process of a built argv: its `MILABENCH_CONFIG`, its environment and how it reaches
/// its node. `job` names the job a multi-node rank belongs to.
pub(crate) fn finish_process(
    p: FinishedProcess<'_>,
    job: Option<String>,
) -> Result<ProcessSpec, PlanError> {
    let mut config = p.bench.config.to_json();
    if let Some(map) = config.as_object_mut() {
        map.insert("system".into(), p.ctx.system.tree.to_json());
        map.insert("tag".into(), serde_json::json!(p.tag));
        map.insert(
            "device".into(),
            serde_json::json!(p.job.devices.first().cloned().unwrap_or_else(|| "0".into())),
        );
        map.insert("devices".into(), serde_json::json!(p.job.devices));
        if let Some(n) = p.job.job_number {
            map.insert("job-number".into(), serde_json::json!(n));
        }
    }
    let container = p.ctx.system.container.as_ref();
    // In a container, the data channel is always stdout (see the `container` module).
    let use_stdout = p.use_stdout || container.is_some();
    let env = process_env(
        p.bench,
        p.extra_env,
        p.ctx,
        p.job,
        p.resolve,
        use_stdout,
        &config,
    )?;
    let launch = launch_to(p.node, &p.ctx.system);
    let node_command = (!matches!(launch, Launch::Local)).then(|| p.argv.clone());
    let tag_name = p.tag.join(".");
    let (argv, container) = match container {
        Some(spec) => {
            let (argv, process) = in_container(spec, &p, &env, &launch, &tag_name)?;
            (argv, Some(process))
        }
        None => (launched_argv(&launch, &p.cwd, &env, p.argv), None),
    };
    let nolog = p.tag.iter().any(|t| t == "nolog");
    Ok(ProcessSpec {
        nolog,
        tag: p.tag,
        argv,
        env,
        cwd: p.cwd,
        node: p.node.map(|node| node.name.clone()),
        devices: p.job.devices.clone(),
        use_stdout,
        launch,
        node_command,
        container,
        job,
        config,
    })
}

/// How a process reaches `node` (`None`: this machine).
pub fn launch_to(node: Option<&NodeSpec>, system: &ResolvedSystem) -> Launch {
    match node {
        Some(node) if !node.local && system.launch == LaunchMode::Srun => {
            Launch::Srun(SrunTarget {
                node: node.name.clone(),
            })
        }
        Some(node) if !node.local => Launch::Ssh(SshTarget {
            node: node.name.clone(),
            user: node.user.clone(),
            host: node.ip.clone(),
            port: node.sshport,
            key: system.ssh_key.clone(),
        }),
        _ => Launch::Local,
    }
}

/// The folders a container mounts: the base's `data`, `cache`, `runs` and `extra` (under the
/// base when the system leaves one unset), then `more`.
pub fn container_folders(system: &ResolvedSystem, more: &[&Utf8Path]) -> Vec<Utf8PathBuf> {
    let dirs = &system.dirs;
    [
        (&dirs.data, "data"),
        (&dirs.cache, "cache"),
        (&dirs.runs, "runs"),
        (&dirs.extra, "extra"),
    ]
    .into_iter()
    .map(|(dir, name)| {
        if dir.as_str().is_empty() {
            system.base.join(name)
        } else {
            dir.clone()
        }
    })
    .chain(more.iter().map(|p| p.to_path_buf()))
    .collect()
}

/// The cache folder of a system (where apptainer's and enroot's conversions are kept).
pub fn cache_folder(system: &ResolvedSystem) -> Utf8PathBuf {
    if system.dirs.cache.as_str().is_empty() {
        system.base.join("cache")
    } else {
        system.dirs.cache.clone()
    }
}

/// The argv of a process in `spec`'s image, wrapped to reach its node, and what stops it.
fn in_container(
    spec: &ContainerSpec,
    p: &FinishedProcess<'_>,
    env: &IndexMap<String, String>,
    launch: &Launch,
    tag_name: &str,
) -> Result<(Vec<String>, ContainerProcess), PlanError> {
    let system = &p.ctx.system;
    let run_name = system
        .tree
        .get("run_name")
        .map(Node::python_str)
        .unwrap_or_default();
    let name = container_name(&run_name, tag_name);
    let map = PathMap::new(&system.base, spec.base.as_deref().unwrap_or(&system.base));
    let folders = container_folders(system, &[&p.cwd, &p.bench.folders.extra]);
    let all_devices: Vec<String> = p.ctx.gpus.iter().map(|g| g.id.clone()).collect();
    let devices = if p.job.devices.is_empty() {
        &all_devices
    } else {
        &p.job.devices
    };
    let visibility = (!p.ctx.gpus.is_empty()).then(|| {
        let selectors: Vec<String> = p
            .ctx
            .gpus
            .iter()
            .map(|g| visibility_value(&p.ctx.arch, &g.selector))
            .collect();
        (visibility_variable(&p.ctx.arch), selectors.join(","))
    });
    let image = runnable_image(spec, &cache_folder(system));
    if spec.runtime == ContainerRuntime::Pyxis && matches!(launch, Launch::Ssh(_)) {
        return Err(PlanError::Invalid {
            bench: p.bench.name.clone(),
            message: "a pyxis container starts with srun, in a Slurm allocation, not over ssh: \
                      write `launch: srun` in the system file and run inside the allocation"
                .into(),
        });
    }
    // pyxis's srun runs on the rank's node, or for a process of this machine on its node of
    // the allocation (`self`).
    let srun_node = match launch {
        Launch::Srun(target) => Some(target.node.clone()),
        _ => system
            .tree
            .get("self")
            .and_then(|node| node.get("name"))
            .map(Node::python_str),
    };
    let command = container_command(
        spec,
        &map,
        ContainerCall {
            name: &name,
            cwd: &p.cwd,
            env,
            argv: p.argv.clone(),
            folders: &folders,
            devices,
            arch: &p.ctx.arch,
            visibility,
            image: &image,
            node: srun_node.as_deref(),
        },
    );
    let argv = match (spec.runtime, launch) {
        // pyxis's own srun reaches the node.
        (ContainerRuntime::Pyxis, _) => command,
        // The container gets its variables on its own command line.
        (_, Launch::Ssh(_) | Launch::Srun(_)) => launch.wrap(&p.cwd, &IndexMap::new(), command),
        (_, Launch::Local) => command,
    };
    let stop = stop_command(spec, &name, launch, &p.cwd);
    Ok((
        argv,
        ContainerProcess {
            runtime: spec.runtime.as_str(),
            name,
            stop,
        },
    ))
}

/// `argv` wrapped by `launch` to reach its node, with `env` where the launch needs it.
fn launched_argv(
    launch: &Launch,
    cwd: &Utf8Path,
    env: &IndexMap<String, String>,
    argv: Vec<String>,
) -> Vec<String> {
    match launch {
        Launch::Local => argv,
        Launch::Ssh(_) => {
            // The data channel of a remote rank can only be its stdout (ssh carries nothing
            // else back), and the remote side gets no variable the executor sets locally.
            let mut remote_env = env.clone();
            remote_env.insert("DATA_FD".into(), "1".into());
            launch.wrap(cwd, &remote_env, argv)
        }
        // srun exports the environment the executor gives it (DATA_FD=1 included).
        Launch::Srun(_) => launch.wrap(cwd, env, argv),
    }
}

/// The variables a benchmark process gets on top of the orchestrator's environment.
#[allow(clippy::too_many_arguments)]
pub(crate) fn process_env(
    bench: &ResolvedBench,
    extra_env: &IndexMap<String, String>,
    ctx: &PlanContext,
    job: &Job,
    resolve: &dyn Fn(&str) -> Result<String, PlanError>,
    use_stdout: bool,
    config: &serde_json::Value,
) -> Result<IndexMap<String, String>, PlanError> {
    let dirs = &bench.folders;
    let mut env = IndexMap::new();
    env.insert("VIRTUAL_ENV".to_string(), dirs.venv.to_string());
    env.insert(
        "PATH".to_string(),
        format!("{}:{}", dirs.venv.join("bin"), ctx.path),
    );
    for (key, value) in [
        ("VENV", &dirs.venv),
        ("CODE", &dirs.code),
        ("EXTRA", &dirs.extra),
        ("DATA", &dirs.data),
        ("RUNS", &dirs.runs),
        ("CACHE", &dirs.cache),
    ] {
        env.insert(format!("{MILABENCH_DIR_PREFIX}{key}"), value.to_string());
    }
    env.insert(MILABENCH_DATA_DIR.into(), dirs.data.to_string());
    env.insert(MILABENCH_BASE.into(), ctx.system.base.to_string());
    env.insert(MILABENCH_NAME.into(), bench.name.clone());
    env.insert("OMP_NUM_THREADS".into(), resolve("{cpu_per_gpu}")?);
    env.insert("XDG_CACHE_HOME".into(), dirs.cache.to_string());
    env.insert("TORCH_HOME".into(), dirs.cache.to_string());
    env.insert("HF_HOME".into(), dirs.data.to_string());
    env.insert("PYTHONUNBUFFERED".into(), "1".into());
    if let Some(stop) = bench
        .config
        .get("voir")
        .and_then(|v| v.get("options"))
        .and_then(|o| o.get("stop"))
    {
        env.insert("VOIR_EARLYSTOP_COUNT".into(), stop.python_str());
    }
    if use_stdout {
        env.insert(MILABENCH_USE_STDOUT.into(), "1".into());
    }
    if let Some(value) = &job.visibility {
        env.insert(visibility_variable(&ctx.arch).into(), value.clone());
    }
    env.insert(
        MILABENCH_CONFIG.into(),
        serde_json::to_string(config).unwrap_or_default(),
    );
    for (key, value) in extra_env {
        env.insert(key.clone(), value.clone());
    }
    if let Some(map) = bench.config.get("env").and_then(Node::as_map) {
        for (key, value) in map {
            env.insert(key.clone(), value.python_str());
        }
    }
    Ok(env)
}

/// 64-bit FNV-1a, a stable short fingerprint for file names.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use milabench_config::suite::{Suite, SuiteRequest, resolve_suite};
    use milabench_config::system::{SystemInputs, load_system};
    use std::time::Duration;

    const SUITE: &str = r#"
_defaults:
  enabled: true
  max_duration: 90
  voir: {options: {stop: 30, interval: 1s}}
_base:
  inherits: _defaults
  definition: bench
  install_group: torch
  argv:
    --workers: "auto({n_worker}, 4)"
    --data: "{milabench_data}/set"
    --batch-size: "auto_batch(64)"
    --json: '{"x": 1}'
mono:
  inherits: _base
  plan: {method: per_gpu}
  env: {EXTRA: "1"}
jobs:
  inherits: _base
  plan: {method: njobs, n: 2}
ddp-nodes:
  inherits: _base
  plan: {method: njobs, n: 1}
  num_machines: 2
"#;

    const SYSTEM: &str = "system:\n  arch: cuda\n  sshkey: /keys/id\n  nodes:\n    - {name: n0, ip: 127.0.0.1, user: me, main: true}\n    - {name: n1, ip: 10.254.0.2, user: me, sshport: 2222}\n";

    /// The test suite resolved for `arch`, with an optional system file.
    fn resolved(arch: &str, system_text: Option<&str>) -> (tempfile::TempDir, Suite) {
        resolved_suite(arch, system_text, SUITE)
    }

    /// `suite_text` resolved for `arch`, with an optional system file.
    fn resolved_suite(
        arch: &str,
        system_text: Option<&str>,
        suite_text: &str,
    ) -> (tempfile::TempDir, Suite) {
        let dir = tempfile::tempdir().expect("tempdir");
        let suite_path = dir.path().join("suite.yaml");
        std::fs::write(&suite_path, suite_text).expect("write");
        let system_path = dir.path().join("system.yaml");
        if let Some(text) = system_text {
            std::fs::write(&system_path, text).expect("write");
        }
        let inputs = SystemInputs::local(arch, "/base", "run");
        let system =
            load_system(system_text.map(|_| system_path.as_path()), &inputs).expect("system");
        let env = |_: &str| None;
        let suite = resolve_suite(&SuiteRequest::whole(&suite_path, &system, &env)).expect("suite");
        (dir, suite)
    }

    /// A planning context for the resolved suite.
    fn context(suite: &Suite, arch: &str, gpus: &[&str], cpus: usize) -> PlanContext {
        PlanContext {
            system: suite.system.clone(),
            arch: arch.into(),
            gpus: gpus.iter().map(|g| PlanGpu::index(*g)).collect(),
            host_cpu_count: cpus,
            cpu: CpuOptions::default(),
            sizer: SizerOptions::default(),
            scaling: None,
            repeat: None,
            path: "/usr/bin".into(),
            milabench_program: None,
        }
    }

    /// `bench` as if its folder held `benchfile`.
    fn with_benchfile(bench: &ResolvedBench, benchfile: &BenchFile) -> ResolvedBench {
        ResolvedBench {
            benchfile: Some(std::sync::Arc::new(benchfile.clone())),
            ..bench.clone()
        }
    }

    fn plans(gpus: &[&str], benchfile: &BenchFile, system_text: Option<&str>) -> Vec<BenchPlan> {
        let (dir, suite) = resolved("cuda", system_text);
        let ctx = PlanContext {
            repeat: Some((1, 2)),
            ..context(&suite, "cuda", gpus, 16)
        };
        let root = dir.path().display().to_string();
        suite
            .benches
            .iter()
            .map(|b| {
                let mut plan = plan_bench(&with_benchfile(b, benchfile), &ctx).expect("plans");
                // Make the snapshot independent of the temporary folder.
                for p in &mut plan.processes {
                    for a in &mut p.argv {
                        *a = a.replace(&root, "[SUITE]");
                    }
                    p.cwd = Utf8PathBuf::from(p.cwd.as_str().replace(&root, "[SUITE]"));
                    p.env.shift_remove("MILABENCH_CONFIG");
                    for v in p.env.values_mut() {
                        *v = v.replace(&root, "[SUITE]");
                    }
                    p.config = serde_json::Value::Null;
                }
                plan
            })
            .collect()
    }

    #[test]
    fn per_gpu_njobs_and_nodes_on_two_gpus() {
        let plans = plans(&["0", "1"], &BenchFile::default(), Some(SYSTEM));
        let mono = &plans[0];
        assert_eq!(mono.processes.len(), 2);
        assert_eq!(mono.processes[1].tag, ["mono", "R1", "D1"]);
        assert_eq!(mono.processes[1].env["CUDA_VISIBLE_DEVICES"], "1");
        assert_eq!(mono.processes[0].env["OMP_NUM_THREADS"], "8");
        assert_eq!(mono.processes[0].env["EXTRA"], "1");
        assert_eq!(mono.max_duration, Some(Duration::from_secs(90)));
        let argv = &mono.processes[0].argv;
        assert!(argv[0].ends_with("venv/torch/bin/voir"), "{argv:?}");
        assert_eq!(argv[1], "--config");
        assert_eq!(mono.files.len(), 2);
        assert!(mono.files[0].content.contains("\"stop\":30"));
        assert_eq!(
            argv[3..],
            [
                "[SUITE]/bench/main.py",
                "--workers",
                "4",
                "--data",
                "/base/data/set",
                "--batch-size",
                "64",
                "--json",
                "{\"x\": 1}"
            ]
        );
        let jobs = &plans[1];
        assert_eq!(jobs.processes.len(), 2);
        assert_eq!(jobs.processes[1].tag, ["jobs", "R1", "1"]);
        assert_eq!(jobs.processes[1].devices, ["0", "1"]);
        assert!(!jobs.processes[1].env.contains_key("CUDA_VISIBLE_DEVICES"));
        let nodes = &plans[2];
        assert_eq!(nodes.processes.len(), 2);
        assert_eq!(nodes.processes[0].tag, ["ddp-nodes", "R1", "0", "n0"]);
        assert_eq!(
            nodes.processes[1].tag,
            ["ddp-nodes", "R1", "0", "n1", "nolog"]
        );
        assert!(nodes.processes[1].nolog && nodes.processes[1].use_stdout);
        assert_eq!(
            nodes.processes[0].argv[0], "/base/venv/torch/bin/voir",
            "local rank runs without ssh"
        );
        let remote = &nodes.processes[1];
        assert_eq!(
            remote.launch,
            Launch::Ssh(SshTarget {
                node: "n1".into(),
                user: "me".into(),
                host: "10.254.0.2".into(),
                port: 2222,
                key: Some("/keys/id".into()),
            })
        );
        assert_eq!(nodes.processes[0].launch, Launch::Local);
        assert_eq!(remote.job.as_deref(), Some("ddp-nodes.R1.0"));
        assert_eq!(nodes.processes[0].job, remote.job);
        assert_eq!(remote.argv[0], "ssh");
        assert!(remote.argv.contains(&"me@10.254.0.2".to_string()));
        assert!(
            remote.argv.iter().any(|a| a == "DATA_FD=1"),
            "the remote rank learns its data channel on the command line"
        );
        assert!(!remote.env.contains_key("DATA_FD"));
    }

    /// Inside a Slurm allocation (`srun` in the context), the remote rank starts with `srun`
    /// on its node, its environment (the data channel on stdout included) on `srun` itself.
    #[test]
    fn remote_ranks_start_with_srun_in_an_allocation() {
        let (_dir, mut suite) = resolved("cuda", Some(SYSTEM));
        suite.system.launch = LaunchMode::Srun;
        let ctx = context(&suite, "cuda", &["0", "1"], 16);
        let bench = suite
            .benches
            .iter()
            .find(|b| b.name == "ddp-nodes")
            .expect("ddp-nodes");
        let plan = plan_bench(bench, &ctx).expect("plans");
        let remote = &plan.processes[1];
        assert_eq!(
            remote.launch,
            Launch::Srun(SrunTarget { node: "n1".into() })
        );
        assert_eq!(remote.argv[0], "srun");
        assert!(remote.argv.contains(&"--nodelist=n1".to_string()));
        assert!(remote.use_stdout && remote.nolog);
        assert!(remote.env.contains_key("MILABENCH_CONFIG"));
        assert_eq!(plan.processes[0].launch, Launch::Local);
    }

    fn container(runtime: milabench_config::ContainerRuntime) -> milabench_config::ContainerSpec {
        milabench_config::ContainerSpec {
            runtime,
            executable: runtime.default_executable().into(),
            image: "img".into(),
            archive: None,
            base: None,
            mounts: Vec::new(),
            env: IndexMap::new(),
            global_args: Vec::new(),
            args: Vec::new(),
            gpus: milabench_config::GpuPassing::All,
        }
    }

    /// Each rank runs in the image on its node: podman after ssh, with the environment on
    /// podman's command line and the data channel in stdout; the container is named after the
    /// rank and removed over ssh.
    #[test]
    fn ranks_run_in_the_container_on_their_nodes() {
        let (_dir, mut suite) = resolved("cuda", Some(SYSTEM));
        suite.system.container = Some(container(milabench_config::ContainerRuntime::Podman));
        let ctx = context(&suite, "cuda", &["0", "1"], 16);
        let bench = suite
            .benches
            .iter()
            .find(|b| b.name == "ddp-nodes")
            .expect("ddp-nodes");
        let plan = plan_bench(bench, &ctx).expect("plans");
        let local = &plan.processes[0];
        assert_eq!(local.argv[..2], ["podman", "run"]);
        assert!(local.use_stdout);
        let name = &local.container.as_ref().expect("in a container").name;
        assert!(name.ends_with("ddp-nodes.0.n0"), "{name}");
        let remote = &plan.processes[1];
        assert_eq!(remote.argv[0], "ssh");
        let at = remote
            .argv
            .iter()
            .position(|a| a == "podman")
            .expect("podman over ssh");
        assert_eq!(remote.argv[at + 1], "run");
        assert!(
            remote.argv.iter().any(|a| a == "DATA_FD=1"),
            "{:?}",
            remote.argv
        );
        let stop = remote
            .container
            .as_ref()
            .and_then(|c| c.stop.clone())
            .expect("stop");
        assert_eq!(stop[0], "ssh");
        assert_eq!(
            stop[stop.len() - 4..],
            [
                "rm",
                "--force",
                "--time=0",
                "milabench-run-ddp-nodes.0.n1.nolog"
            ]
        );
    }

    #[test]
    fn pyxis_ranks_are_one_srun_each_and_refused_over_ssh() {
        let (_dir, mut suite) = resolved("cuda", Some(SYSTEM));
        suite.system.container = Some(container(milabench_config::ContainerRuntime::Pyxis));
        let bench_name = "ddp-nodes";
        let over_ssh = {
            let ctx = context(&suite, "cuda", &["0", "1"], 16);
            let bench = suite
                .benches
                .iter()
                .find(|b| b.name == bench_name)
                .expect("bench");
            plan_bench(bench, &ctx)
                .expect_err("pyxis over ssh")
                .to_string()
        };
        assert!(over_ssh.contains("write `launch: srun`"), "{over_ssh}");
        suite.system.launch = LaunchMode::Srun;
        let ctx = context(&suite, "cuda", &["0", "1"], 16);
        let bench = suite
            .benches
            .iter()
            .find(|b| b.name == bench_name)
            .expect("bench");
        let plan = plan_bench(bench, &ctx).expect("plans");
        let remote = &plan.processes[1].argv;
        assert_eq!(
            remote.iter().filter(|a| *a == "srun").count(),
            1,
            "{remote:?}"
        );
        assert!(remote.contains(&"--nodelist=n1".to_string()), "{remote:?}");
        assert!(
            remote.iter().any(|a| a.starts_with("--container-image=")),
            "{remote:?}"
        );
        assert!(
            plan.processes[1]
                .container
                .as_ref()
                .is_some_and(|c| c.stop.is_none())
        );
    }

    /// The prepare step runs in the container too (its command was once swapped in after
    /// the wrapping, so it ran on the host).
    #[test]
    fn a_prepare_step_runs_in_the_container() {
        let (_dir, mut suite) = resolved("cpu", None);
        suite.system.container = Some(container(milabench_config::ContainerRuntime::Podman));
        let ctx = context(&suite, "cpu", &[], 2);
        let plan = plan_prepare(&suite.benches[0], &ctx, true)
            .expect("plans")
            .expect("has a prepare step");
        let argv = &plan.processes[0].argv;
        assert_eq!(argv[..2], ["podman", "run"]);
        let image = argv.iter().position(|a| a == "img").expect("the image");
        assert_eq!(argv[image + 1], "/base/venv/torch/bin/python");
        assert!(argv[image + 2].ends_with("bench/prepare.py"), "{argv:?}");
        assert_eq!(argv[image + 3..image + 5], ["--workers", "4"]);
    }

    #[test]
    fn prepare_runs_the_script_with_the_run_arguments() {
        let (_dir, suite) = resolved("cpu", None);
        let ctx = context(&suite, "cpu", &[], 2);
        let bench = &suite.benches[0];
        let plan = plan_prepare(bench, &ctx, true)
            .expect("plans")
            .expect("has a prepare step");
        let argv = &plan.processes[0].argv;
        assert_eq!(argv[0], "/base/venv/torch/bin/python");
        assert!(argv[1].ends_with("bench/prepare.py"), "{argv:?}");
        assert_eq!(argv[2..4], ["--workers", "4"]);
        assert_eq!(plan.processes[0].tag, ["mono"]);
        assert!(plan.max_duration.is_none());
        assert!(plan_prepare(bench, &ctx, false).expect("ok").is_none());
    }

    #[test]
    fn cpu_machine_gets_one_process() {
        let plans = plans(&[], &BenchFile::default(), None);
        let mono = &plans[0];
        assert_eq!(mono.processes.len(), 1);
        assert_eq!(mono.processes[0].tag, ["mono", "R1", "D0"]);
        assert!(mono.processes[0].devices.is_empty());
        assert_eq!(mono.processes[0].env["OMP_NUM_THREADS"], "16");
        assert_eq!(
            plans[2].processes.len(),
            1,
            "one node: no multi-node fan-out"
        );
    }

    #[test]
    fn torchrun_launcher_and_dry_run_script() {
        let benchfile = BenchFile {
            launcher: Launcher::Torchrun,
            nproc_per_node: Some(2),
            ..BenchFile::default()
        };
        let plans = plans(&[], &benchfile, Some(SYSTEM));
        let jobs = &plans[1].processes[0];
        assert!(jobs.use_stdout);
        assert_eq!(
            jobs.argv[1..4],
            [
                "--standalone",
                "--nproc-per-node=2",
                "--local-ranks-filter=0"
            ]
        );
        let nodes = &plans[2].processes;
        assert!(nodes[1].argv.iter().any(|a| a == "--node-rank=1"));
        assert!(
            nodes[1]
                .argv
                .iter()
                .any(|a| a == "--rdzv-endpoint=127.0.0.1:29400")
        );
        insta::assert_snapshot!("dry_run_torchrun", crate::render_script(&plans));
    }

    #[test]
    fn a_serving_benchmark_runs_milabench_load_around_its_server() {
        let suite_text = r#"
serve:
  enabled: true
  definition: serving
  install_group: serving
  argv: {--model: "{milabench_data}/tiny", --scenario: server, --rate: 2}
  client: {argv: {--slo: "ttft=2s"}}
  server: {argv: {--device: cpu, --model-dir: "{milabench_data}/tiny"}}
"#;
        let (_dir, suite) = resolved_suite("cpu", None, suite_text);
        let benchfile = BenchFile {
            launcher: Launcher::Load,
            server: Some(vec!["transformers".into(), "serve".into()]),
            ..BenchFile::default()
        };
        let bench = &with_benchfile(&suite.benches[0], &benchfile);
        let mut ctx = context(&suite, "cpu", &[], 2);
        let missing = plan_bench(bench, &ctx).expect_err("no milabench program");
        assert!(
            missing.to_string().contains("put `milabench` on PATH"),
            "{missing}"
        );
        ctx.milabench_program = Some("/opt/bin/milabench".into());
        let plan = plan_bench(bench, &ctx).expect("plan");
        let argv = &plan.processes[0].argv;
        let server = bench.folders.venv.join("bin/transformers");
        assert_eq!(
            argv[..],
            [
                "/opt/bin/milabench".to_string(),
                "load".into(),
                "--emit-events".into(),
                "--model".into(),
                "/tiny".into(),
                "--scenario".into(),
                "server".into(),
                "--rate".into(),
                "2".into(),
                "--slo".into(),
                "ttft=2s".into(),
                "--".into(),
                server.to_string(),
                "serve".into(),
                "--device".into(),
                "cpu".into(),
                "--model-dir".into(),
                "/tiny".into(),
            ]
        );
        let no_server = plan_bench(
            &with_benchfile(
                bench,
                &BenchFile {
                    server: None,
                    ..benchfile
                },
            ),
            &ctx,
        )
        .expect_err("no server");
        assert!(
            no_server.to_string().contains("server: [PROGRAM"),
            "{no_server}"
        );
    }
}
