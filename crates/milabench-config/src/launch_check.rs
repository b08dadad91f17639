//! Checks, at resolution time, the values that are only used at launch time: every `{name}`
//! placeholder and `auto`/`auto_batch`/`expr` call in `argv` must resolve, and every
//! `requires_capabilities` entry must be a valid expression. A typo is then reported by
//! `milabench resolve` with its file:line:column, not in the middle of a run.

use crate::error::{At, ConfigError, did_you_mean};
use crate::placeholders::expr::Program;
use crate::placeholders::{ArgResolver, LaunchContext, PlaceholderError};
use crate::suite::ResolvedBench;
use crate::system::ResolvedSystem;
use crate::value::{Node, Value};

/// Checks `bench`'s launch-time values against the resolved `system`.
pub fn check_bench(bench: &ResolvedBench, system: &ResolvedSystem) -> Result<(), ConfigError> {
    let resolver = ArgResolver::new(context(bench, system));
    if let Some(argv) = bench.config.get("argv") {
        let values: Vec<&Node> = match &argv.value {
            Value::Map(m) => m.values().collect(),
            Value::Seq(items) => items.iter().collect(),
            _ => Vec::new(),
        };
        for value in values {
            let texts: Vec<String> = match &value.value {
                Value::Str(s) => vec![s.clone()],
                Value::Seq(items) => items.iter().map(Node::python_str).collect(),
                _ => continue,
            };
            for text in texts {
                resolver
                    .resolve(&text)
                    .map_err(|err| {
                        let fix = match &err {
                            PlaceholderError::Unknown { name, known, .. } => format!(
                                "use one of the known placeholders{}, or double the braces for literal text",
                                did_you_mean(name, known.iter().map(String::as_str))
                            ),
                            _ => "correct the placeholder or expression".into(),
                        };
                        ConfigError::Launch {
                            at: At(value.location.clone()),
                            bench: bench.name.clone(),
                            message: err.to_string(),
                            fix,
                        }
                    })?;
            }
        }
    }
    if let Some(Node {
        value: Value::Seq(items),
        ..
    }) = bench.config.get("requires_capabilities")
    {
        for item in items {
            let text = item.python_str();
            Program::parse(&text).map_err(|err| ConfigError::Launch {
                at: At(item.location.clone()),
                bench: bench.name.clone(),
                message: format!("`requires_capabilities` entry is not a valid expression: {err}"),
                fix: "write comparisons over the system such as `gpu['count'] > 1` or `len(nodes) >= 2`".into(),
            })?;
        }
    }
    Ok(())
}

/// A launch context good enough to check names: this host's CPU count, the system's GPU count
/// and the benchmark's folders.
fn context(bench: &ResolvedBench, system: &ResolvedSystem) -> LaunchContext {
    LaunchContext {
        system: system.tree.to_json(),
        host_cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        gpu_count: system.gpu_count,
        milabench_base: system.base.clone(),
        dirs: bench.folders.clone(),
        bench_name: bench.name.clone(),
        benchmark_folder: bench.folders.code.clone(),
        ..LaunchContext::default()
    }
}
