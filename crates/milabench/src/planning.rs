//! Planning a whole suite: which benchmarks run (capabilities checked, with the reason when one
//! is skipped) and the processes of each.

use milabench_config::ResolvedBench;
use milabench_config::placeholders::unmet_capabilities;
use milabench_config::scaling::ScalingFile;
use milabench_config::settings::options::{CpuOptions, OptionSource, SizerOptions};
use milabench_plan::{
    BenchPlan, HostPhase, HostPlan, HostRequest, PlanContext, host_request, plan_bench,
    plan_from_host,
};
use milabench_vocab::shell_quote;

use crate::error::Error;
use crate::pack_host::{PackHost, defined_in_python, folder_of};
use crate::resolve::Resolved;

/// What happens to one selected benchmark.
#[derive(Debug, Clone)]
pub enum PlannedBench {
    /// It runs with this plan.
    Run(BenchPlan),
    /// Its `requires_capabilities` are not met on this system.
    Skipped {
        /// The benchmark.
        bench: String,
        /// The expressions that are false.
        unmet: Vec<String>,
    },
    /// Its `benchfile.py` gives no plan (it raises, exits, runs past the pack host's time
    /// limit, or returns no command): a run records it as failed and runs the others.
    BrokenBenchfile {
        /// The benchmark.
        bench: String,
        /// What is wrong, with the fix.
        reason: String,
    },
}

/// How many planning contexts this process made (see [`plan_contexts_made`]).
static PLAN_CONTEXTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many planning contexts this process made: one per repeat of a resolution at most.
pub fn plan_contexts_made() -> usize {
    PLAN_CONTEXTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The planning context of a resolved suite on this machine, for repeat `repeat` (`(index,
/// total)` when `--repeat` is above 1): made once per resolution and repeat.
pub fn plan_context(
    resolved: &Resolved,
    repeat: Option<(usize, usize)>,
) -> Result<PlanContext, Error> {
    resolved
        .cache
        .plan_context(repeat, || make_plan_context(resolved, repeat))
}

/// Makes the planning context of [`plan_context`].
fn make_plan_context(
    resolved: &Resolved,
    repeat: Option<(usize, usize)>,
) -> Result<PlanContext, Error> {
    PLAN_CONTEXTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let host = &resolved.host;
    let system = &resolved.suite.system;
    let options = system.options_json();
    let source = OptionSource::new(&host.env, options.as_ref());
    let cpu = CpuOptions::read(&source)?;
    let sizer = SizerOptions::read(&source)?;
    let scaling = match &sizer.config {
        Some(path) => Some(serde_json::Value::Object(
            ScalingFile::load(std::path::Path::new(path))?.entries,
        )),
        None => None,
    };
    Ok(PlanContext {
        system: system.clone(),
        arch: resolved.arch.clone(),
        gpus: resolved.plan_gpus(),
        host_cpu_count: host.cpu_count,
        cpu,
        sizer,
        scaling,
        repeat,
        path: host.path.clone(),
        milabench_program: host.milabench_program.clone(),
    })
}

/// Plans one benchmark, or says why it is skipped.
pub fn plan_one(bench: &ResolvedBench, ctx: &PlanContext) -> Result<PlannedBench, Error> {
    let system_json = ctx.system.tree.to_json();
    let unmet =
        unmet_capabilities(&bench.requires_capabilities, &system_json).map_err(|source| {
            Error::Capability {
                bench: bench.name.clone(),
                source,
            }
        })?;
    if !unmet.is_empty() {
        return Ok(PlannedBench::Skipped {
            bench: bench.name.clone(),
            unmet: unmet.into_iter().map(str::to_string).collect(),
        });
    }
    if defined_in_python(&folder_of(bench)) {
        let planned = ask_pack_host(bench, ctx)
            .and_then(|(_, _, plan)| Ok(plan_from_host(bench, &plan, HostPhase::Run, ctx)?));
        return match planned {
            Ok(plan) => Ok(PlannedBench::Run(trail(plan))),
            Err(error) => match benchfile_failure(bench, &error) {
                Some(reason) => Ok(PlannedBench::BrokenBenchfile {
                    bench: bench.name.clone(),
                    reason,
                }),
                None => Err(error),
            },
        };
    }
    Ok(PlannedBench::Run(trail(plan_bench(bench, ctx)?)))
}

/// `plan`, its processes told to the debug trail (`-v`) first.
fn trail(plan: BenchPlan) -> BenchPlan {
    for process in &plan.processes {
        let argv: Vec<String> = process.argv.iter().map(|w| shell_quote(w)).collect();
        tracing::debug!(
            "planned {} ({}): {}",
            process.tag_name(),
            process.node.as_deref().unwrap_or("this machine"),
            argv.join(" ")
        );
    }
    plan
}

/// What is wrong with `bench`'s `benchfile.py` when `error`, met while planning it, is that
/// benchmark's own failure: the pack host gave no plan of it, or one that cannot be mapped onto
/// processes. `None` for other errors (and benchmarks not defined by a `benchfile.py`), which
/// stop the whole run.
pub fn benchfile_failure(bench: &ResolvedBench, error: &Error) -> Option<String> {
    if !defined_in_python(&folder_of(bench)) {
        return None;
    }
    match error {
        Error::PackHost { message, fix, .. } => Some(format!("{message}\n  fix: {fix}")),
        Error::Plan(error) => Some(error.to_string()),
        _ => None,
    }
}

/// The pack host of a benchmark defined by a `benchfile.py`, its request, and its answer.
fn ask_pack_host(
    bench: &ResolvedBench,
    ctx: &PlanContext,
) -> Result<(PackHost, HostRequest, HostPlan), Error> {
    let host = PackHost::locate(&folder_of(bench), &ctx.path)?;
    let request = host_request(bench, ctx)?;
    let plan = host.plan(bench, &request)?;
    Ok((host, request, plan))
}

/// Asks the pack host once for every benchmark of `benches` defined by a `benchfile.py`, in
/// each of `contexts`, so that planning them one by one starts Python once.
pub fn prefetch_pack_host(benches: &[&ResolvedBench], contexts: &[PlanContext]) {
    let python_defined: Vec<&ResolvedBench> = benches
        .iter()
        .copied()
        .filter(|bench| defined_in_python(&folder_of(bench)))
        .collect();
    let Some(first) = python_defined.first() else {
        return;
    };
    let Some(path) = contexts.first().map(|ctx| ctx.path.as_str()) else {
        return;
    };
    let Ok(host) = PackHost::locate(&folder_of(first), path) else {
        return;
    };
    let requests: Vec<HostRequest> = contexts
        .iter()
        .flat_map(|ctx| {
            python_defined
                .iter()
                .filter_map(move |bench| host_request(bench, ctx).ok())
        })
        .collect();
    host.prefetch(&requests);
}

/// The folder of the records of benchfile `install` methods that ran to success in an
/// environment: a file per benchmark. A rebuilt environment has none, so they run again.
const INSTALLED_RECORDS: &str = ".milabench-benchfile-install";

/// The record of `bench`'s benchfile `install` in its environment.
fn installed_record(bench: &ResolvedBench) -> std::path::PathBuf {
    bench
        .folders
        .venv
        .join(INSTALLED_RECORDS)
        .into_std_path_buf()
        .join(&bench.name)
}

/// The benchfile's own `install` method of `bench`, when its class defines one that has not
/// run to success in the benchmark's environment yet: run by the pack host at the start of the
/// benchmark's prepare step, after milabench installed the group's requirements.
pub fn install_override_plan(
    bench: &ResolvedBench,
    ctx: &PlanContext,
) -> Result<Option<BenchPlan>, Error> {
    if !defined_in_python(&folder_of(bench)) || installed_record(bench).is_file() {
        return Ok(None);
    }
    let (host, request, plan) = ask_pack_host(bench, ctx)?;
    if !plan.overrides("install") {
        return Ok(None);
    }
    Ok(Some(host.method_plan(bench, &request, "install", ctx)?))
}

/// Records that `bench`'s benchfile `install` ran to success (see [`install_override_plan`]).
pub fn record_install_override(bench: &ResolvedBench) -> Result<(), Error> {
    let path = installed_record(bench);
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, b"installed\n"))
        .map_err(|source| Error::Write { path, source })
}

/// The prepare step of a benchmark: `None` when it has nothing to prepare. A `benchfile.py`
/// whose class defines `prepare` itself has it run by the pack host; otherwise its
/// `build_prepare_plan` runs here. Other folders run their `benchfile.yaml`'s `prepare`, else
/// `prepare.py` when there is one.
pub fn prepare_plan(bench: &ResolvedBench, ctx: &PlanContext) -> Result<Option<BenchPlan>, Error> {
    let folder = folder_of(bench);
    if defined_in_python(&folder) {
        let (host, request, plan) = ask_pack_host(bench, ctx)?;
        if plan.overrides("prepare") {
            return Ok(Some(host.method_plan(bench, &request, "prepare", ctx)?));
        }
        if plan.prepare.is_empty() {
            return Ok(None);
        }
        return Ok(Some(plan_from_host(bench, &plan, HostPhase::Prepare, ctx)?));
    }
    let has_script = folder.join("prepare.py").is_file();
    Ok(milabench_plan::plan_prepare(bench, ctx, has_script)?)
}

/// The planning context of each repeat of a suite run `repeat` times (tags `R<i>` when
/// `repeat` is above 1), indexed as [`RepeatOrder::schedule`](crate::RepeatOrder::schedule) numbers the repeats.
pub fn repeat_contexts(resolved: &Resolved, repeat: usize) -> Result<Vec<PlanContext>, Error> {
    (0..repeat)
        .map(|index| plan_context(resolved, (repeat > 1).then_some((index, repeat))))
        .collect()
}

/// Plans every runnable benchmark of the suite, in suite order.
pub fn plan_suite(resolved: &Resolved) -> Result<Vec<PlannedBench>, Error> {
    let ctx = plan_context(resolved, None)?;
    let benches: Vec<&ResolvedBench> = resolved.suite.runnable().collect();
    prefetch_pack_host(&benches, std::slice::from_ref(&ctx));
    benches.iter().map(|bench| plan_one(bench, &ctx)).collect()
}
