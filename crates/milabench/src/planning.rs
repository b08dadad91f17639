//! Planning a whole suite: which benchmarks run (capabilities checked, with the reason when one
//! is skipped) and the processes of each.

use camino::Utf8PathBuf;
use milabench_config::Bench;
use milabench_config::benchfile::BenchFile;
use milabench_config::placeholders::unmet_capabilities;
use milabench_config::settings::EnvVars;
use milabench_config::settings::options::{CpuOptions, OptionSource, SizerOptions};
use milabench_plan::{BenchPlan, PlanContext, plan_bench};

use crate::error::Error;
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
}

/// In which order the repeats of a suite (`run --repeat N`) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatOrder {
    /// Each benchmark N times in a row, then the next one (A1 A2 B1 B2).
    #[default]
    InARow,
    /// The whole suite N times over, benchmark by benchmark (A1 B1 A2 B2; the Python tool's
    /// order): a drift of the machine during the run lands on every benchmark alike.
    Interleaved,
}

impl RepeatOrder {
    /// The `(repeat index, benchmark index)` pairs of `benches` benchmarks repeated `repeat`
    /// times, in the order they run.
    pub fn schedule(self, repeat: usize, benches: usize) -> Vec<(usize, usize)> {
        match self {
            RepeatOrder::InARow => (0..benches)
                .flat_map(|bench| (0..repeat).map(move |index| (index, bench)))
                .collect(),
            RepeatOrder::Interleaved => (0..repeat)
                .flat_map(|index| (0..benches).map(move |bench| (index, bench)))
                .collect(),
        }
    }
}

/// How many times a run runs its suite, and in which order: what `run --repeat N
/// [--interleave]` asks, recorded in the run folder ([`REPEAT_FILE`]) for `--resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepeatPlan {
    /// Times each benchmark runs.
    pub repeat: usize,
    /// In which order.
    pub order: RepeatOrder,
}

impl Default for RepeatPlan {
    fn default() -> RepeatPlan {
        RepeatPlan {
            repeat: 1,
            order: RepeatOrder::InARow,
        }
    }
}

impl std::fmt::Display for RepeatPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--repeat {}", self.repeat)?;
        if self.order == RepeatOrder::Interleaved {
            f.write_str(" --interleave")?;
        }
        Ok(())
    }
}

/// The file of a run folder that records its [`RepeatPlan`].
pub const REPEAT_FILE: &str = "repeat.json";

/// Options of a run that change the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `(index, total)` of this repetition when `--repeat` is above 1.
    pub repeat: Option<(usize, usize)>,
    /// `PATH` of the orchestrator (each environment's `bin/` goes in front of it).
    pub path: String,
}

/// The planning context of a resolved suite on this machine.
pub fn plan_context(
    resolved: &Resolved,
    env: &EnvVars,
    options: &PlanOptions,
) -> Result<PlanContext, Error> {
    let system_json = resolved.suite.system.to_json();
    let source = OptionSource::new(env, system_json.get("options"));
    let cpu = CpuOptions::read(&source)?;
    let sizer = SizerOptions::read(&source)?;
    Ok(PlanContext {
        system: resolved.suite.system.clone(),
        arch: resolved.arch.clone(),
        gpus: resolved.plan_gpus(),
        host_cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu,
        sizer,
        repeat: options.repeat,
        path: options.path.clone(),
        base: Utf8PathBuf::from(
            system_json
                .get("base")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
        ),
        nodes: resolved.system.nodes(),
        ssh_key: system_json
            .get("sshkey")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        srun: system_json
            .get("launch")
            .and_then(serde_json::Value::as_str)
            == Some("srun"),
    })
}

/// Plans one benchmark, or says why it is skipped.
pub fn plan_one(bench: &Bench, ctx: &PlanContext) -> Result<PlannedBench, Error> {
    let expressions: Vec<String> = match bench.config.get("requires_capabilities").map(|n| &n.value)
    {
        Some(milabench_config::Value::Seq(items)) => items.iter().map(|n| n.python_str()).collect(),
        _ => Vec::new(),
    };
    let system_json = ctx.system.to_json();
    let unmet =
        unmet_capabilities(&expressions, &system_json).map_err(|source| Error::Capability {
            bench: bench.name.clone(),
            source,
        })?;
    if !unmet.is_empty() {
        return Ok(PlannedBench::Skipped {
            bench: bench.name.clone(),
            unmet: unmet.into_iter().map(str::to_string).collect(),
        });
    }
    let folder = bench
        .definition()
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    let benchfile = BenchFile::load(&folder)?;
    let plan = plan_bench(bench, &benchfile, ctx)?;
    Ok(PlannedBench::Run(plan))
}

/// The planning context of each repeat of a suite run `repeat` times (tags `R<i>` when
/// `repeat` is above 1), indexed as [`RepeatOrder::schedule`] numbers the repeats.
pub fn repeat_contexts(
    resolved: &Resolved,
    env: &EnvVars,
    repeat: usize,
    path: &str,
) -> Result<Vec<PlanContext>, Error> {
    (0..repeat)
        .map(|index| {
            let options = PlanOptions {
                repeat: (repeat > 1).then_some((index, repeat)),
                path: path.to_string(),
            };
            plan_context(resolved, env, &options)
        })
        .collect()
}

/// Plans every runnable benchmark of the suite, in suite order.
pub fn plan_suite(
    resolved: &Resolved,
    env: &EnvVars,
    options: &PlanOptions,
) -> Result<Vec<PlannedBench>, Error> {
    let ctx = plan_context(resolved, env, options)?;
    resolved
        .suite
        .runnable()
        .map(|bench| plan_one(bench, &ctx))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::RepeatOrder;

    #[test]
    fn repeats_run_in_a_row_by_default_and_alternate_when_interleaved() {
        assert_eq!(
            RepeatOrder::default().schedule(2, 3),
            [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
        );
        assert_eq!(
            RepeatOrder::Interleaved.schedule(2, 3),
            [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        );
        assert_eq!(RepeatOrder::Interleaved.schedule(1, 2), [(0, 0), (0, 1)]);
        assert!(RepeatOrder::InARow.schedule(3, 0).is_empty());
    }
}
