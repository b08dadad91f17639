//! `milabench run`: plan the suite and run it (or, with `--dry-run`, print the plan).

use std::io::Write;

use milabench::ExitCode;
use milabench::config::settings::{EnvVars, SettingsFlags};
use std::time::Duration;

use milabench::report::{Format, ReportOptions, SuiteEntry, render, report_runs};
use milabench::run::RunOptions;
use milabench::{PlanOptions, PlannedBench};

use crate::live::LiveDisplay;
use crate::output::write_output;

use anyhow::Context as _;
use camino::Utf8Path;
use milabench::config::settings::Settings;

use crate::args::{
    DryRunFormat, EnvArgs, GlobalArgs, InstallArgs, PrepareArgs, RunArgs, SuiteArgs,
};
use crate::output::warn;
use crate::settings::load_suite_settings;

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
    let settings = load_suite_settings(global, &args.suite, more, &env)?;
    let mut selection = args.suite.selection();
    if let Some(name) = &args.fidelity {
        selection
            .overrides
            .push(fidelity_override(&settings, name)?);
    }
    let resolved = milabench::resolve(&settings, &selection, &env)?;
    for warning in &resolved.suite.warnings {
        warn(warning);
    }
    if let Some(format) = args.dry_run {
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
        let text = match format {
            DryRunFormat::Shell => milabench::plan::render_script(&plans),
            DryRunFormat::Json => serde_json::to_string_pretty(&plans)? + "\n",
        };
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(ExitCode::Success);
    }
    resolved.check_runnable()?;
    // Claimed before the set-up: a second `run` of the same name is refused before it installs
    // or prepares anything.
    let folder = milabench::run::RunFolder::claim(&resolved, args.resume)?;
    if !args.no_setup {
        let code = setup(global, args, settings.config.as_deref())?;
        if code != ExitCode::Success {
            return Ok(code);
        }
    }
    let interrupt = milabench::exec::Interrupt::new();
    let ctrl_c = milabench::exec::install_ctrl_c(interrupt.clone())?;
    let options = RunOptions {
        repeat: args.repeat,
        resume: args.resume,
        grace: Duration::from_secs(10),
        interrupt,
        path: std::env::var("PATH").unwrap_or_default(),
        watchdog: Some(super::watchdog()?),
        precision: args.precision.map(|pct| milabench::exec::PrecisionStop {
            share: pct / 100.0,
            min_observations: milabench::exec::PrecisionStop::MIN_OBSERVATIONS,
        }),
    };
    let mut display = LiveDisplay::new();
    let summary = milabench::run::run_suite(&resolved, &env, &options, &folder, &mut display)?;
    drop(folder);
    ctrl_c.uninstall();
    let run_dir = summary.run_dir.display().to_string();
    if summary.outcomes.is_empty() && summary.already_done.is_empty() {
        warn("no benchmark ran (all skipped or none selected)");
        return Ok(if summary.interrupted {
            ExitCode::Interrupted
        } else {
            ExitCode::Success
        });
    }
    let entries: Vec<SuiteEntry> = resolved.report_entries();
    let (report, set) = report_runs(
        std::slice::from_ref(&run_dir),
        Some(&entries),
        &ReportOptions {
            // Skipped for unmet capabilities: absent on purpose, not failed.
            excused: summary.skipped.clone(),
            ..ReportOptions::default()
        },
    )?;
    for warning in set.warnings() {
        warn(&warning);
    }
    write_output(None, &render(&report, Format::Text))?;
    crate::output::note(&format!("run folder: {run_dir}"));
    Ok(if summary.interrupted {
        ExitCode::Interrupted
    } else if summary.success() && report.passes() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}

/// The override layer of a fidelity preset: `fidelity/<name>.yaml` beside the suite file.
fn fidelity_override(settings: &Settings, name: &str) -> anyhow::Result<String> {
    let suite = settings
        .config
        .as_deref()
        .context("--fidelity needs a suite file (--config)")?;
    let folder = suite
        .parent()
        .unwrap_or(Utf8Path::new("."))
        .join("fidelity");
    let path = folder.join(format!("{name}.yaml"));
    if !path.is_file() {
        let mut known: Vec<String> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".yaml").map(str::to_string)
            })
            .collect();
        known.sort();
        anyhow::bail!(
            "unknown fidelity `{name}`: there is no {path}\n  fix: use one of: {}",
            if known.is_empty() {
                "(none: the folder has no presets)".to_string()
            } else {
                known.join(", ")
            }
        );
    }
    std::fs::read_to_string(&path).with_context(|| format!("could not read {path}"))
}

/// What `run` does before running: installs the selected benchmarks' environments (up-to-date
/// ones are left alone), then runs their prepare steps. A failed install or prepare stops here:
/// nothing is run.
fn setup(
    global: &GlobalArgs,
    args: &RunArgs,
    config: Option<&Utf8Path>,
) -> anyhow::Result<ExitCode> {
    let suite = || SuiteArgs {
        config: config.map(Utf8Path::to_path_buf),
        system: args.suite.system.clone(),
        select: args.suite.select.clone(),
        exclude: args.suite.exclude.clone(),
        overrides: args.suite.overrides.clone(),
    };
    let install = InstallArgs {
        suite: suite(),
        env: EnvArgs {
            python: None,
            arch: None,
        },
        force: false,
        variant: None,
        installer: None,
    };
    let code = super::install::run(global, &install)?;
    if code != ExitCode::Success {
        warn("install failed: nothing was run (see above)");
        return Ok(code);
    }
    let code = super::prepare::run(global, &PrepareArgs { suite: suite() })?;
    if code == ExitCode::BenchmarkFailures {
        warn(
            "prepare failed: nothing was run (fix the prepare step above, or pass --no-setup to run anyway)",
        );
    }
    Ok(code)
}
