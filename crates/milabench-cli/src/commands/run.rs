//! `milabench run`: plan the suite and run it (or, with `--dry-run`, print the plan).

use std::io::Write;

use milabench::ExitCode;
use milabench::config::settings::{EnvVars, SettingsFlags};
use milabench::{PlanOptions, PlannedBench};

use crate::args::{GlobalArgs, RunArgs};
use crate::output::warn;
use crate::settings::load_settings_with;

/// Runs the command.
pub fn run(global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<ExitCode> {
    if args.repeat == 0 {
        anyhow::bail!("--repeat 0 runs nothing\n  fix: give --repeat 1 or more");
    }
    let env = EnvVars::from_process();
    let more = SettingsFlags {
        run_name: args.run_name.clone(),
        ..SettingsFlags::default()
    };
    let settings = load_settings_with(global, Some(&args.suite), more, &env)?;
    let resolved = milabench::resolve(&settings, &args.suite.selection(), &env)?;
    for warning in &resolved.suite.warnings {
        warn(warning);
    }
    if args.dry_run {
        let mut plans = Vec::new();
        for index in 0..args.repeat {
            let options = PlanOptions {
                repeat: (args.repeat > 1).then_some((index, args.repeat)),
                path: std::env::var("PATH").unwrap_or_default(),
            };
            for planned in milabench::plan_suite(&resolved, &env, &options)? {
                match planned {
                    PlannedBench::Run(plan) => plans.push(plan),
                    PlannedBench::Skipped { bench, unmet } => warn(&format!(
                        "skipping `{bench}`: this system does not meet {}",
                        unmet.join(", ")
                    )),
                }
            }
        }
        let script = milabench::plan::render_script(&plans);
        std::io::stdout().lock().write_all(script.as_bytes())?;
        return Ok(ExitCode::Success);
    }
    anyhow::bail!(
        "running benchmarks needs the execution layer, which is not in this build yet\n  fix: use --dry-run to see the commands"
    )
}
