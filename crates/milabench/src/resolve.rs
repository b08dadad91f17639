//! Settings -> system -> suite: everything `milabench resolve` (and every later command) needs
//! before touching an environment.

use milabench_config::settings::{EnvVars, Settings};
use milabench_config::suite::{Suite, SuiteRequest, resolve_suite};
use milabench_config::system::{SystemConfig, SystemInputs, load_system};

use crate::arch;
use crate::error::Error;

/// Which benchmarks of the suite, and how to change them.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--override` values, in order.
    pub overrides: Vec<String>,
    /// `--select` names.
    pub select: Vec<String>,
    /// `--exclude` names.
    pub exclude: Vec<String>,
}

/// A resolved suite and the system it was resolved for.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The run name used (`${system.run_name}`).
    pub run_name: String,
    /// The accelerator family.
    pub arch: String,
    /// The system file, resolved.
    pub system: SystemConfig,
    /// The suite.
    pub suite: Suite,
}

/// Resolves the suite named by `settings` (its `config`), for the system of `settings`.
pub fn resolve(
    settings: &Settings,
    selection: &Selection,
    env: &EnvVars,
) -> Result<Resolved, Error> {
    let config = settings.config.as_ref().ok_or(Error::NoSuite)?;
    let arch = match settings.arch {
        Some(arch) => arch.as_str().to_string(),
        None => arch::detect(std::path::Path::new("/"))?,
    };
    let now = jiff::Zoned::now().datetime();
    let mut rng = fastrand::Rng::new();
    let run_name =
        milabench_config::run_name::resolve(settings.run_name.as_deref(), &now, &mut rng)?;
    let layout = settings.layout();
    let dirs = [
        ("venv", &settings.dirs.venv),
        ("data", &settings.dirs.data),
        ("runs", &settings.dirs.runs),
        ("extra", &settings.dirs.extra),
        ("cache", &settings.dirs.cache),
    ]
    .into_iter()
    .filter_map(|(name, dir)| dir.as_ref().map(|d| (name.to_string(), d.to_string())))
    .collect();
    let inputs = SystemInputs {
        arch: arch.clone(),
        base: layout.base.to_string(),
        run_name: run_name.clone(),
        user: env
            .get("USER")
            .or_else(|| env.get("LOGNAME"))
            .unwrap_or("root")
            .to_string(),
        dirs,
        detected_gpus: None,
    };
    let system = load_system(settings.system.as_deref().map(|p| p.as_std_path()), &inputs)?;
    let lookup = |name: &str| env.get(name).map(str::to_string);
    let suite = resolve_suite(&SuiteRequest {
        config: config.as_std_path(),
        system: &system,
        overrides: &selection.overrides,
        select: &selection.select,
        exclude: &selection.exclude,
        env: &lookup,
    })?;
    for bench in suite.benches.iter().filter(|b| b.matches_selection) {
        milabench_config::launch_check::check_bench(bench, &suite.system)?;
    }
    Ok(Resolved {
        run_name,
        arch,
        system,
        suite,
    })
}
