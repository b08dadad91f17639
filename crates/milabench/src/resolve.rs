//! Settings -> system -> suite: everything `milabench resolve` (and every later command) needs
//! before touching an environment.

use milabench_cluster::slurm::Allocation;
use milabench_config::settings::env_vars::MILABENCH_SIZER_AUTO;
use milabench_config::settings::options::{CpuOptions, OptionSource, SizerOptions};
use milabench_config::settings::{EnvVars, Settings};
use milabench_config::suite::{Suite, SuiteRequest, resolve_suite};
use milabench_config::system::{
    DetectedGpus, SystemConfig, SystemInputs, load_system, load_system_str,
};

use milabench_plan::PlanGpu;

use crate::arch;
use crate::cache::ResolutionCache;
use crate::error::Error;
use crate::host::Host;

/// The suite used when none is named: `standard.yaml` on a machine with accelerators,
/// `cpu.yaml` otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultSuite {
    /// The suite file found.
    pub path: camino::Utf8PathBuf,
    /// Why this one, in words (`no accelerator found`, `accelerator family cuda`).
    pub reason: String,
}

/// Finds the default suite for `arch`: `config/<file>` in `cwd`, else in the first ancestor of
/// the executable's folder that has one (a binary under `<repo>/target/<profile>/` finds the
/// repository's `config/`). `None` when neither has it.
pub fn default_suite(
    arch: &str,
    cwd: &camino::Utf8Path,
    exe: Option<&camino::Utf8Path>,
) -> Option<DefaultSuite> {
    let (file, reason) = if arch == "cpu" {
        ("cpu.yaml", "no accelerator found".to_string())
    } else {
        ("standard.yaml", format!("accelerator family {arch}"))
    };
    let relative = camino::Utf8Path::new("config").join(file);
    std::iter::once(cwd)
        .chain(exe.into_iter().flat_map(|e| e.ancestors().skip(1)))
        .map(|dir| dir.join(&relative))
        .find(|candidate| candidate.is_file())
        .map(|path| DefaultSuite { path, reason })
}

/// The accelerator family of `settings` (`--arch`/system), else detected from the drivers
/// (the drivers looked at once per process).
pub fn arch_of(settings: &Settings) -> Result<String, Error> {
    match settings.arch {
        Some(arch) => Ok(arch.as_str().to_string()),
        None => arch::detect_here(),
    }
}

/// How the system made from a Slurm allocation is named in messages.
pub const SLURM_SYSTEM_ORIGIN: &str = "the system of the Slurm allocation";

/// The Slurm allocation this process runs in (from the `SLURM_*` variables of `env`), or
/// `None` outside a job. Without `--system`, a run inside a job uses the system it makes
/// ([`Allocation::system_yaml`]): every allocated node, remote ranks started with `srun`.
pub fn slurm_allocation(env: &EnvVars) -> Result<Option<Allocation>, Error> {
    let get = |name: &str| env.get(name).map(str::to_string);
    Ok(Allocation::from_env(&get)?)
}

/// Which benchmarks of the suite, and how to change them.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--override` values, in order.
    pub overrides: Vec<String>,
    /// `--select` names.
    pub select: Vec<String>,
    /// `--exclude` names.
    pub exclude: Vec<String>,
    /// System options set for this run (`sizer.mult`, `cpu.n_workers`: a sweep's run), over
    /// the system file's `options`.
    pub options: Vec<(String, serde_json::Value)>,
}

/// A resolved suite and the system it was resolved for.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The run name used (`${system.run_name}`).
    pub run_name: String,
    /// The accelerator family.
    pub arch: String,
    /// The suite, and the system it was resolved for (`suite.system`).
    pub suite: Suite,
    /// This machine as the resolution found it: environment, `PATH`, GPUs.
    pub host: Host,
    /// The planning contexts of the suite, each made once.
    pub(crate) cache: ResolutionCache,
}

/// Resolves the suite named by `settings` (its `config`), for the system of `settings`.
pub fn resolve(
    settings: &Settings,
    selection: &Selection,
    env: &EnvVars,
) -> Result<Resolved, Error> {
    let config = settings.config.as_ref().ok_or(Error::NoSuite)?;
    let SystemStart {
        arch,
        run_name,
        mut system,
    } = system_start(settings, env)?;
    // The GPUs found fill the system's `gpu` facts the file leaves out.
    let host = Host::capture(&arch, env);
    if !host.gpus.gpus.is_empty() {
        system.fill_detected_gpus(DetectedGpus {
            count: host.gpus.gpus.len(),
            capacity_mib: host.gpus.capacity_mib.unwrap_or(0),
        });
    }
    let mut suite = suite_for(config, system, selection, env)?;
    suite.warnings.extend(host.gpus.problems.iter().cloned());
    suite.warnings.extend(sizer_warning(&suite.system, &host)?);
    tracing::debug!(
        "resolved {config} for arch {arch}, run `{run_name}`: {} node(s), {} GPU(s) ({} found here), {} benchmark(s) to run",
        suite.system.nodes.len(),
        suite.system.gpu_count,
        host.gpus.gpus.len(),
        suite.runnable().count()
    );
    Ok(Resolved {
        run_name,
        arch,
        suite,
        host,
        cache: ResolutionCache::default(),
    })
}

/// The benchmarks a run of the suite named by `settings` would run, as the report's expected
/// entries (see [`Resolved::report_entries`]): resolved for the system of `settings` as
/// written, without looking for this machine's GPUs, which weights, `enabled` and groups do
/// not depend on (`report --config`).
pub fn report_entries(
    settings: &Settings,
    selection: &Selection,
    env: &EnvVars,
) -> Result<Vec<milabench_report::SuiteEntry>, Error> {
    let config = settings.config.as_ref().ok_or(Error::NoSuite)?;
    let start = system_start(settings, env)?;
    let suite = suite_for(config, start.system, selection, env)?;
    Ok(entries_of(&suite))
}

/// The system of a resolution as its file (or Slurm allocation) gives it, before this
/// machine's GPUs are looked for.
struct SystemStart {
    /// The accelerator family.
    arch: String,
    /// The run name.
    run_name: String,
    /// The system built from the file (read once) and the settings.
    system: SystemConfig,
}

/// The system of `settings` and `env`, built from its file (or the Slurm allocation) alone.
fn system_start(settings: &Settings, env: &EnvVars) -> Result<SystemStart, Error> {
    let arch = arch_of(settings)?;
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
        container_image: settings.container.clone(),
    };
    let allocation = slurm_allocation(env)?;
    let system = match (&settings.system, &allocation) {
        (None, Some(allocation)) => load_system_str(
            &allocation.system_yaml(&inputs.user),
            SLURM_SYSTEM_ORIGIN,
            &inputs,
        )?,
        (file, _) => load_system(file.as_deref().map(|p| p.as_std_path()), &inputs)?,
    };
    // Without `--arch`, the system file's `arch` comes before what the driver files suggest.
    let arch = match settings.arch {
        Some(_) => arch,
        None => system.arch().to_string(),
    };
    Ok(SystemStart {
        arch,
        run_name,
        system,
    })
}

/// The suite file `config` resolved for `system` with `selection` (its system options
/// applied first), every benchmark's launch settings checked.
fn suite_for(
    config: &camino::Utf8Path,
    mut system: SystemConfig,
    selection: &Selection,
    env: &EnvVars,
) -> Result<Suite, Error> {
    system.apply_options(&selection.options);
    let lookup = |name: &str| env.get(name).map(str::to_string);
    let suite = resolve_suite(&SuiteRequest {
        config: config.as_std_path(),
        system: &system,
        overrides: &selection.overrides,
        select: &selection.select,
        exclude: &selection.exclude,
        env: &lookup,
    })?;
    for bench in &suite.benches {
        milabench_config::launch_check::check_bench(bench, &suite.system)?;
    }
    Ok(suite)
}

impl Resolved {
    /// The GPUs the plans use: this machine's visible ones when the system's `gpu.count` is
    /// their number, else indices `0..count` (a system file that states another count).
    pub fn plan_gpus(&self) -> Vec<PlanGpu> {
        let count = self.suite.system.gpu_count;
        if count == self.host.gpus.gpus.len() {
            self.host.gpus.gpus.clone()
        } else {
            (0..count).map(|i| PlanGpu::index(i.to_string())).collect()
        }
    }

    /// Checks the settings that planning reads, without planning: the time limit of every
    /// benchmark that runs and the system's `cpu.*` and `sizer.*` options, so that `milabench
    /// resolve` refuses what `milabench run` would.
    pub fn check_settings(&self) -> Result<(), Error> {
        for bench in self.suite.runnable() {
            bench
                .max_duration
                .clone()
                .map_err(milabench_plan::PlanError::from)?;
        }
        let options = self.suite.system.options_json();
        let source = OptionSource::new(&self.host.env, options.as_ref());
        CpuOptions::read(&source)?;
        SizerOptions::read(&source)?;
        Ok(())
    }

    /// Checks, before anything is installed, prepared or run, that the selection keeps at
    /// least one benchmark and that each one kept has its folders (`dirs`, which come from
    /// `_defaults`) and an existing definition folder.
    pub fn check_runnable(&self) -> Result<(), Error> {
        if self.suite.runnable().next().is_none() {
            let kept: Vec<String> = self
                .suite
                .benches
                .iter()
                .map(|b| {
                    let why = if b.enabled {
                        "no definition"
                    } else {
                        "disabled"
                    };
                    format!("`{}` ({why})", b.name)
                })
                .collect();
            return Err(Error::NotRunnable {
                problem: if kept.is_empty() {
                    "the selection keeps no benchmark of the suite".into()
                } else {
                    format!("no selected benchmark can run: {}", kept.join(", "))
                },
                fix: "check --select/--exclude, and give the benchmarks `enabled: true` and a `definition` (`--override 'NAME.enabled=true'` enables one for a run)".into(),
            });
        }
        for bench in self.suite.runnable() {
            if bench.folders.venv.as_str().is_empty() {
                return Err(Error::NotRunnable {
                    problem: format!(
                        "`{}` has no folders (`dirs.venv`, `dirs.data`, ...): it does not inherit `_defaults`",
                        bench.name
                    ),
                    fix: format!(
                        "add `inherits: _defaults` to `{}` (or to the entry it inherits from)",
                        bench.name
                    ),
                });
            }
            let definition = &bench.folders.code;
            if !definition.is_dir() {
                let written = bench
                    .config
                    .get("definition")
                    .and_then(|d| d.location.as_ref())
                    .map(|l| format!(" (written at {l})"))
                    .unwrap_or_default();
                return Err(Error::NotRunnable {
                    problem: format!(
                        "the definition folder of `{}` does not exist: {definition}{written}",
                        bench.name
                    ),
                    fix: "correct `definition:`; a relative path is relative to the folder of the file that writes it".into(),
                });
            }
        }
        Ok(())
    }

    /// The benchmarks that would run, as the report's list of expected entries (weights,
    /// `enabled`, groups).
    pub fn report_entries(&self) -> Vec<milabench_report::SuiteEntry> {
        entries_of(&self.suite)
    }
}

/// The runnable benchmarks of `suite` as the report's list of expected entries.
fn entries_of(suite: &Suite) -> Vec<milabench_report::SuiteEntry> {
    suite
        .runnable()
        .map(|bench| milabench_report::SuiteEntry {
            name: bench.name.clone(),
            weight: Some(bench.weight),
            enabled: Some(bench.enabled),
            group: Some(bench.group.clone()),
        })
        .collect()
}

/// The warning for sizer settings that have no effect because `sizer.auto` is off: the
/// Python tool ignores them silently (its own `config/sizing.yaml` sweeps `sizer.batch_size`
/// so), which makes a sweep of identical runs.
fn sizer_warning(
    system: &milabench_config::ResolvedSystem,
    host: &Host,
) -> Result<Option<String>, Error> {
    let options = system.options_json();
    let source = OptionSource::new(&host.env, options.as_ref());
    let ignored = SizerOptions::read(&source)?.without_effect();
    Ok((!ignored.is_empty()).then(|| {
        let (verb, pronoun) = if ignored.len() == 1 {
            ("has", "it")
        } else {
            ("have", "them")
        };
        format!(
            "{} {verb} no effect: the sizer is off, so `auto_batch(n)` gives n (as in the Python tool); set sizer.auto=1 (in the system's options, {MILABENCH_SIZER_AUTO}=1 or --sweep 'sizer.auto=[1]') to apply {pronoun}",
            ignored.join(", "),
        )
    }))
}

#[cfg(test)]
mod default_suite_tests {
    use super::*;

    #[test]
    fn picks_by_arch_in_cwd_then_next_to_the_executable() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = camino::Utf8Path::from_path(root.path()).expect("utf8");
        std::fs::create_dir_all(root.join("repo/config")).expect("mkdir");
        std::fs::create_dir_all(root.join("repo/target/debug")).expect("mkdir");
        std::fs::create_dir_all(root.join("elsewhere")).expect("mkdir");
        std::fs::write(root.join("repo/config/cpu.yaml"), "{}").expect("write");
        std::fs::write(root.join("repo/config/standard.yaml"), "{}").expect("write");
        let exe = root.join("repo/target/debug/milabench");
        let found = default_suite("cpu", &root.join("elsewhere"), Some(&exe)).expect("found");
        assert_eq!(found.path, root.join("repo/config/cpu.yaml"));
        assert_eq!(found.reason, "no accelerator found");
        let found = default_suite("cuda", &root.join("repo"), None).expect("found");
        assert_eq!(found.path, root.join("repo/config/standard.yaml"));
        assert!(default_suite("cpu", &root.join("elsewhere"), None).is_none());
    }
}
