//! Plans of benchmark folders defined by a `benchfile.py` (the Python milabench's extension
//! API): the request the pack host reads, the plan it answers, and how that plan becomes our
//! processes.
//!
//! The pack host (`benchmarks/_packhost`, Python) loads the benchfile with a stand-in of the
//! Python milabench's `milabench.pack` and `milabench.commands`, builds the benchmark's command
//! tree for the configuration resolved here and flattens it: one entry per process, with its
//! argv, tag, working folder, devices, options and the variables the benchfile adds. Two
//! markers stand in the argv where our own launch takes over: voir (we write its
//! configuration file and start `<venv>/bin/voir --config FILE`) and ssh (a rank on another
//! node goes through [`Launch`](crate::Launch), and one on this machine runs here). Every other
//! argument is kept as the benchfile built it, with its placeholders resolved here as the
//! Python tool resolves a command's final arguments.

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use milabench_config::ResolvedBench;
use milabench_config::placeholders::ArgResolver;
use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::planner::{
    FinishedProcess, Job, PlanContext, arg_resolver, base_tag, finish_process, visibility_value,
    visibility_variable, voir_config_file,
};
use crate::spec::{BenchPlan, PlannedFile, ProcessSpec};

/// What the pack host is asked about one benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct HostRequest {
    /// The benchmark's resolved configuration, as the Python tool's `pack.config`: the suite's
    /// entry with `system`, `dirs` and `tag` (the benchmark's name, and `R<i>` in a repeat).
    pub config: serde_json::Value,
    /// The GPUs a `per_gpu` plan spreads over (none on the CPU).
    pub gpus: Vec<HostGpu>,
    /// Each argument value of the configuration, resolved (for `resolve_placeholder`).
    pub placeholders: IndexMap<String, String>,
    /// The placeholder variables (`{milabench_data}`, `{cpu_per_gpu}`...) and their values.
    pub variables: serde_json::Map<String, serde_json::Value>,
}

/// A GPU as the Python tool's `per_gpu` plan sees it.
#[derive(Debug, Clone, Serialize)]
pub struct HostGpu {
    /// Its index: the `D<i>` of the tag and the process's device.
    pub device: String,
    /// The variable that restricts a process to it.
    pub selection_variable: String,
    /// The value of that variable for this GPU alone.
    pub selector: String,
}

/// The pack host's answer about one benchmark.
#[derive(Debug, Clone, Deserialize)]
pub struct HostAnswer {
    /// Whether the benchfile could be used.
    pub ok: bool,
    /// What went wrong when it could not.
    #[serde(default)]
    pub error: Option<String>,
    /// The plan, when it could.
    #[serde(flatten)]
    pub plan: Option<HostPlan>,
}

/// The plans the pack host built from a benchfile.
#[derive(Debug, Clone, Deserialize)]
pub struct HostPlan {
    /// The class the benchfile names in `__pack__`.
    pub class: String,
    /// Which of `install` and `prepare` the class defines itself (the host runs those).
    pub overrides: Vec<String>,
    /// The processes of a run.
    pub run: Vec<HostProcess>,
    /// The processes of the prepare step (`build_prepare_plan`; empty when it does nothing).
    pub prepare: Vec<HostProcess>,
}

impl HostPlan {
    /// Whether the benchfile's class defines `method` (`install` or `prepare`) itself.
    pub fn overrides(&self, method: &str) -> bool {
        self.overrides.iter().any(|m| m == method)
    }
}

/// One process of a pack host plan.
#[derive(Debug, Clone, Deserialize)]
pub struct HostProcess {
    /// Its tag, in parts.
    pub tag: Vec<String>,
    /// Its arguments, with the voir and ssh markers.
    pub argv: Vec<HostArg>,
    /// Where it starts.
    pub cwd: Utf8PathBuf,
    /// The `env` of its configuration (the GPU visibility of a `per_gpu` copy, the suite's).
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Variables the benchfile adds or changes (its `make_env`, a command's `env`).
    #[serde(default)]
    pub extra_env: IndexMap<String, String>,
    /// The data channel goes through its standard output.
    #[serde(default)]
    pub use_stdout: bool,
    /// Its GPUs.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Its number among `njobs` copies.
    #[serde(default)]
    pub job_number: Option<usize>,
}

/// One argument of a pack host process.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum HostArg {
    /// A plain argument.
    Text(String),
    /// Where voir starts.
    Voir {
        /// voir's options.
        voir: VoirMarker,
    },
    /// Where the command goes to another node.
    Ssh {
        /// The node.
        ssh: SshMarker,
    },
}

/// The voir marker of a pack host argv.
#[derive(Debug, Clone, Deserialize)]
pub struct VoirMarker {
    /// voir's own extra arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// voir is named by name (`voir`), not by the environment's path.
    #[serde(default)]
    pub module: bool,
}

/// The ssh marker of a pack host argv.
#[derive(Debug, Clone, Deserialize)]
pub struct SshMarker {
    /// The address ssh reaches.
    pub host: String,
    /// The node's name in the system, when the address is one of its nodes.
    #[serde(default)]
    pub node: Option<String>,
}

/// Which plan of a benchfile to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPhase {
    /// `build_run_plan`, spread per GPU or over jobs.
    Run,
    /// `build_prepare_plan`.
    Prepare,
}

/// The argument resolver of a benchmark, as the planner uses it.
fn resolver(bench: &ResolvedBench, ctx: &PlanContext) -> Result<ArgResolver, PlanError> {
    if bench.definition.is_none() {
        return Err(PlanError::NoDefinition {
            bench: bench.name.clone(),
        });
    }
    Ok(arg_resolver(bench, ctx))
}

/// The request that asks the pack host for `bench`'s plans.
pub fn host_request(bench: &ResolvedBench, ctx: &PlanContext) -> Result<HostRequest, PlanError> {
    let resolver = resolver(bench, ctx)?;
    let dirs = &bench.folders;
    let mut config = bench.config.to_json();
    if let Some(map) = config.as_object_mut() {
        map.insert("system".into(), ctx.system.tree.to_json());
        map.insert("tag".into(), serde_json::json!(base_tag(bench, ctx)));
        map.insert(
            "dirs".into(),
            serde_json::json!({
                "base": ctx.system.base, "venv": dirs.venv, "data": dirs.data, "runs": dirs.runs,
                "extra": dirs.extra, "cache": dirs.cache,
            }),
        );
    }
    let mut placeholders = IndexMap::new();
    for arg in &bench.argv {
        if let Ok(value) = resolver.resolve(arg) {
            placeholders.insert(arg.clone(), value);
        }
    }
    let selection_variable = visibility_variable(&ctx.arch).to_string();
    Ok(HostRequest {
        config,
        gpus: ctx
            .gpus
            .iter()
            .map(|gpu| HostGpu {
                device: gpu.id.clone(),
                selection_variable: selection_variable.clone(),
                selector: visibility_value(&ctx.arch, &gpu.selector),
            })
            .collect(),
        placeholders,
        variables: resolver.variables().clone(),
    })
}

/// Our processes for one of a benchfile's plans.
pub fn plan_from_host(
    bench: &ResolvedBench,
    plan: &HostPlan,
    phase: HostPhase,
    ctx: &PlanContext,
) -> Result<BenchPlan, PlanError> {
    let resolver = resolver(bench, ctx)?;
    let resolve = |arg: &str| {
        resolver.resolve(arg).map_err(|e| PlanError::Placeholder {
            bench: bench.name.clone(),
            message: e.to_string(),
        })
    };
    let processes = match phase {
        HostPhase::Run => &plan.run,
        HostPhase::Prepare => &plan.prepare,
    };
    let mut specs = Vec::new();
    let mut files = Vec::new();
    for process in processes {
        let (spec, file) = host_process(bench, process, ctx, &resolve)?;
        specs.push(spec);
        files.extend(file);
    }
    let max_duration = match phase {
        HostPhase::Run => bench.max_duration.clone()?,
        HostPhase::Prepare => None,
    };
    Ok(BenchPlan {
        bench: bench.name.clone(),
        processes: specs,
        files,
        max_duration,
    })
}

/// One of our processes from one of the pack host's.
fn host_process(
    bench: &ResolvedBench,
    process: &HostProcess,
    ctx: &PlanContext,
    resolve: &dyn Fn(&str) -> Result<String, PlanError>,
) -> Result<(ProcessSpec, Option<PlannedFile>), PlanError> {
    let tag_name = process.tag.join(".");
    let mut argv = Vec::new();
    let mut voir_file = None;
    let mut remote = None;
    for (position, arg) in process.argv.iter().enumerate() {
        match arg {
            HostArg::Text(text) => argv.push(resolve(text)?),
            HostArg::Voir { voir } => {
                argv.push(if voir.module {
                    "voir".to_string()
                } else {
                    bench.folders.venv.join("bin").join("voir").to_string()
                });
                if let Some(file) = voir_config_file(bench, &tag_name) {
                    argv.push("--config".into());
                    argv.push(file.path.to_string());
                    voir_file = Some(file);
                }
                argv.extend(voir.args.iter().cloned());
            }
            HostArg::Ssh { ssh } if position == 0 => remote = Some(ssh),
            HostArg::Ssh { .. } => {
                return Err(PlanError::Invalid {
                    bench: bench.name.clone(),
                    message: "its benchfile puts ssh inside another command; only a whole \
                              command can go to another node"
                        .into(),
                });
            }
        }
    }
    if argv.is_empty() {
        return Err(PlanError::Invalid {
            bench: bench.name.clone(),
            message: format!("its benchfile's process `{tag_name}` has no command"),
        });
    }
    let node = match remote {
        Some(ssh) => Some(
            ctx.system
                .nodes
                .iter()
                .find(|node| ssh.node.as_deref() == Some(node.name.as_str()))
                .or_else(|| ctx.system.nodes.iter().find(|node| node.ip == ssh.host))
                .ok_or_else(|| PlanError::Invalid {
                    bench: bench.name.clone(),
                    message: format!(
                        "its benchfile sends `{tag_name}` over ssh to {}, which is no node of \
                         the system",
                        ssh.host
                    ),
                })?,
        ),
        None => None,
    };
    let job = Job {
        tag: process.tag.clone(),
        devices: process.devices.clone(),
        visibility: None,
        job_number: process.job_number,
    };
    let mut extra_env = process.env.clone();
    extra_env.extend(process.extra_env.clone());
    // A rank's job is its tag without the node's name and `nolog`.
    let job_name = node.map(|node| {
        process
            .tag
            .iter()
            .filter(|t| *t != &node.name && *t != "nolog")
            .cloned()
            .collect::<Vec<_>>()
            .join(".")
    });
    let spec = finish_process(
        FinishedProcess {
            bench,
            ctx,
            job: &job,
            tag: process.tag.clone(),
            argv,
            cwd: process.cwd.clone(),
            use_stdout: process.use_stdout || node.is_some_and(|n| !n.local),
            extra_env: &extra_env,
            node,
            resolve,
        },
        job_name,
    )?;
    Ok((spec, voir_file))
}
