//! `milabench resolve`: print the resolved suite as an ordered mapping from benchmark name to
//! its settings.

use std::io::Write;

use milabench::ExitCode;
use milabench::settings::EnvVars;
use milabench::suite::ResolvedBench;
use serde_json::{Map, Value};

use crate::args::{GlobalArgs, ResolveArgs, StructuredFormat};
use crate::settings::load_suite_settings;

/// Keys shown first, in this order; the others follow in suite order.
const LEADING_KEYS: [&str; 16] = [
    "name",
    "enabled",
    "weight",
    "tags",
    "group",
    "install_group",
    "install_variant",
    "definition",
    "plan",
    "argv",
    "max_duration",
    "num_machines",
    "requires_capabilities",
    "voir",
    "validation",
    "env",
];

/// Resolves the suite and prints it.
pub fn run(global: &GlobalArgs, args: &ResolveArgs) -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings = load_suite_settings(global, &args.suite, Default::default(), &env)?;
    let resolved = milabench::resolve(&settings, &args.suite.selection(), &env)?;
    resolved.check_settings()?;
    for warning in &resolved.suite.warnings {
        crate::output::warn(warning);
    }
    let mut out = Map::new();
    for bench in &resolved.suite.benches {
        if !args.enabled_only || bench.is_runnable() {
            let system = args
                .with_system
                .then(|| resolved.suite.system.tree.to_json());
            out.insert(bench.name.clone(), bench_json(bench, system)?);
        }
    }
    let out = Value::Object(out);
    let text = match args.format {
        StructuredFormat::Json => serde_json::to_string_pretty(&out)? + "\n",
        StructuredFormat::Yaml => {
            if out.as_object().is_some_and(Map::is_empty) {
                "{}\n".to_string()
            } else {
                serde_saphyr::to_string(&out)?
            }
        }
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::Success)
}

/// One benchmark's settings, leading keys first, plus the rendered argv.
fn bench_json(bench: &ResolvedBench, system: Option<Value>) -> crate::errors::Result<Value> {
    let Value::Object(mut all) = bench.config.to_json() else {
        crate::errors::bail!("benchmark `{}` is not a mapping", bench.name);
    };
    if let Some(system) = system {
        all.insert("system".into(), system);
    }
    let mut ordered = Map::new();
    for key in LEADING_KEYS {
        if let Some(value) = all.shift_remove(key) {
            ordered.insert(key.to_string(), value);
        }
        if key == "argv" {
            ordered.insert(
                "argv_rendered".into(),
                Value::Array(bench.argv.iter().cloned().map(Value::String).collect()),
            );
        }
    }
    ordered.extend(all);
    Ok(Value::Object(ordered))
}
