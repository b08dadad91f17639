//! Every environment variable milabench reads, as a named constant.
//!
//! Nothing else in the workspace should spell a `MILABENCH_*` name by hand: use these constants,
//! or [`option_env_var`] for the option tree of the system file.
//!
//! Values are parsed strictly. Booleans accept `1`, `true`, `yes`, `on` and `0`, `false`, `no`,
//! `off` (case-insensitive); anything else is an error naming the variable. An empty value
//! counts as unset.

/// Prefix shared by every variable milabench reads.
pub const PREFIX: &str = "MILABENCH_";

/// Base directory of the workspace (venvs, data, cache, runs, extra). Default `./workdir`.
pub const MILABENCH_BASE: &str = "MILABENCH_BASE";
/// Suite file (`--config`).
pub const MILABENCH_CONFIG: &str = "MILABENCH_CONFIG";
/// System file (`--system`). The Python tool documents it but never reads it; we do.
pub const MILABENCH_SYSTEM: &str = "MILABENCH_SYSTEM";
/// Forced accelerator backend: `cuda`, `rocm`, `xpu`, `hpu` or `cpu`.
pub const MILABENCH_GPU_ARCH: &str = "MILABENCH_GPU_ARCH";
/// Python interpreter used to create benchmark environments.
pub const MILABENCH_PYTHON: &str = "MILABENCH_PYTHON";
/// Settings file (YAML) layered between the built-in defaults and the environment.
pub const MILABENCH_SETTINGS: &str = "MILABENCH_SETTINGS";
/// Package installer for benchmark environments: `uv` (default) or `pip`.
pub const MILABENCH_INSTALLER: &str = "MILABENCH_INSTALLER";
/// Run name (`--run-name`).
pub const MILABENCH_RUN_NAME: &str = "MILABENCH_RUN_NAME";
/// The image every benchmark process runs in (`run --container`), over the system file's
/// `container.image`.
pub const MILABENCH_CONTAINER: &str = "MILABENCH_CONTAINER";
/// Boolean: plain line output instead of the interactive terminal dashboard.
pub const MILABENCH_NOTERM: &str = "MILABENCH_NOTERM";
/// Results database (`--db`): a SQLite file, or a `postgres://` URL. Default `$BASE/results.db`.
pub const MILABENCH_DB: &str = "MILABENCH_DB";
/// Push key of `run --publish` and `report --publish`: a secret, never shown.
pub const MILABENCH_PUBLISH_KEY: &str = "MILABENCH_PUBLISH_KEY";
/// Dashboard that `--publish` pushes to (`--dashboard-url`). Default `https://www.milabench.com`.
pub const MILABENCH_DASHBOARD_URL: &str = "MILABENCH_DASHBOARD_URL";

/// Overrides `$BASE/venv`, the root of the per-install-group environments.
pub const MILABENCH_DIRS_VENV: &str = "MILABENCH_DIRS_VENV";
/// Overrides `$BASE/data`, the shared datasets.
pub const MILABENCH_DIRS_DATA: &str = "MILABENCH_DIRS_DATA";
/// Overrides `$BASE/runs`, the run folders.
pub const MILABENCH_DIRS_RUNS: &str = "MILABENCH_DIRS_RUNS";
/// Overrides `$BASE/extra`, the per-group scratch space.
pub const MILABENCH_DIRS_EXTRA: &str = "MILABENCH_DIRS_EXTRA";
/// Overrides `$BASE/cache`, the model and framework caches.
pub const MILABENCH_DIRS_CACHE: &str = "MILABENCH_DIRS_CACHE";

/// Option `cpu.enabled` (boolean): let `auto(v, d)` pick `v`.
pub const MILABENCH_CPU_ENABLED: &str = "MILABENCH_CPU_ENABLED";
/// Option `cpu.total_count` (integer): CPU count to use instead of the detected one.
pub const MILABENCH_CPU_TOTAL_COUNT: &str = "MILABENCH_CPU_TOTAL_COUNT";
/// Option `cpu.max` (integer, default 16): upper bound of `n_worker`.
pub const MILABENCH_CPU_MAX: &str = "MILABENCH_CPU_MAX";
/// Option `cpu.min` (integer, default 2): lower bound of `n_worker`.
pub const MILABENCH_CPU_MIN: &str = "MILABENCH_CPU_MIN";
/// Option `cpu.reserved_cores` (integer, default 0): cores kept out of `cpu_count`.
pub const MILABENCH_CPU_RESERVED_CORES: &str = "MILABENCH_CPU_RESERVED_CORES";
/// Option `cpu.n_workers` (integer): fixed `n_worker`, ignoring `cpu.min`/`cpu.max`.
pub const MILABENCH_CPU_N_WORKERS: &str = "MILABENCH_CPU_N_WORKERS";

/// Option `sizer.auto` (boolean): let `auto_batch(n)` change batch sizes.
pub const MILABENCH_SIZER_AUTO: &str = "MILABENCH_SIZER_AUTO";
/// Option `sizer.batch_size` (integer): fixed batch size for every benchmark (with `sizer.auto`).
pub const MILABENCH_SIZER_BATCH_SIZE: &str = "MILABENCH_SIZER_BATCH_SIZE";
/// Option `sizer.add` (integer): added to every batch size (with `sizer.auto`).
pub const MILABENCH_SIZER_ADD: &str = "MILABENCH_SIZER_ADD";
/// Option `sizer.mult` (number): multiplies every batch size (with `sizer.auto`).
pub const MILABENCH_SIZER_MULT: &str = "MILABENCH_SIZER_MULT";
/// Option `sizer.multiple` (integer, default 8): suggested sizes are floored to a multiple of it.
pub const MILABENCH_SIZER_MULTIPLE: &str = "MILABENCH_SIZER_MULTIPLE";
/// Option `sizer.power` (integer): suggested sizes become a power of it.
pub const MILABENCH_SIZER_POWER: &str = "MILABENCH_SIZER_POWER";
/// Option `sizer.optimized` (boolean): use the best-performing observed batch size that fits.
pub const MILABENCH_SIZER_OPTIMIZED: &str = "MILABENCH_SIZER_OPTIMIZED";
/// Option `sizer.capacity` (memory string such as `80 GiB`): target GPU memory.
pub const MILABENCH_SIZER_CAPACITY: &str = "MILABENCH_SIZER_CAPACITY";
/// Option `sizer.save` (path): scaling file that observations are appended to.
pub const MILABENCH_SIZER_SAVE: &str = "MILABENCH_SIZER_SAVE";
/// Option `sizer.config` (path): scaling file read by the sizer.
pub const MILABENCH_SIZER_CONFIG: &str = "MILABENCH_SIZER_CONFIG";

/// uv's own cache variable, honoured by installs: when set, every environment links packages
/// from that cache instead of `$BASE/cache/uv` (tests and `cargo xtask e2e` point it at the
/// user's cache folder so repeated runs do not download again).
pub const UV_CACHE_DIR: &str = "UV_CACHE_DIR";

/// Given to every benchmark process: its data folder.
pub const MILABENCH_DATA_DIR: &str = "MILABENCH_DATA_DIR";
/// Given to every benchmark process: its benchmark's name.
pub const MILABENCH_NAME: &str = "MILABENCH_NAME";
/// Given to benchmark processes whose data channel is their stdout (remote ranks, or
/// `use_stdout`): `1`.
pub const MILABENCH_USE_STDOUT: &str = "MILABENCH_USE_STDOUT";
/// Given to every process `milabench-exec` starts: a token that finds the process's whole tree
/// again, even the parts that left its process group.
pub const MILABENCH_EXEC_TOKEN: &str = "MILABENCH_EXEC_TOKEN";
/// Prefix of the folder variables given to benchmark processes: `MILABENCH_DIR_DATA`,
/// `MILABENCH_DIR_RUNS`, `MILABENCH_DIR_CACHE`, ... Benchmark processes also receive
/// [`MILABENCH_BASE`], and [`MILABENCH_CONFIG`] holding their resolved configuration as JSON
/// (not a file, for them: the Python tool's convention).
pub const MILABENCH_DIR_PREFIX: &str = "MILABENCH_DIR_";

/// `1`: `report` prints the Python tool's text layout alone, without the sections this tool
/// adds after it (the Python tool's CI sets it).
pub const MILABENCH_REPORT_LEAN: &str = "MILABENCH_REPORT_LEAN";

/// Every constant of this module, for listings and documentation.
pub const ALL: &[&str] = &[
    MILABENCH_BASE,
    MILABENCH_CONFIG,
    MILABENCH_SYSTEM,
    MILABENCH_GPU_ARCH,
    MILABENCH_PYTHON,
    MILABENCH_SETTINGS,
    MILABENCH_INSTALLER,
    MILABENCH_RUN_NAME,
    MILABENCH_CONTAINER,
    MILABENCH_NOTERM,
    MILABENCH_DB,
    MILABENCH_PUBLISH_KEY,
    MILABENCH_DASHBOARD_URL,
    MILABENCH_DIRS_VENV,
    MILABENCH_DIRS_DATA,
    MILABENCH_DIRS_RUNS,
    MILABENCH_DIRS_EXTRA,
    MILABENCH_DIRS_CACHE,
    MILABENCH_CPU_ENABLED,
    MILABENCH_CPU_TOTAL_COUNT,
    MILABENCH_CPU_MAX,
    MILABENCH_CPU_MIN,
    MILABENCH_CPU_RESERVED_CORES,
    MILABENCH_CPU_N_WORKERS,
    MILABENCH_SIZER_AUTO,
    MILABENCH_SIZER_BATCH_SIZE,
    MILABENCH_SIZER_ADD,
    MILABENCH_SIZER_MULT,
    MILABENCH_SIZER_MULTIPLE,
    MILABENCH_SIZER_POWER,
    MILABENCH_SIZER_OPTIMIZED,
    MILABENCH_SIZER_CAPACITY,
    MILABENCH_SIZER_SAVE,
    MILABENCH_SIZER_CONFIG,
    MILABENCH_DATA_DIR,
    MILABENCH_NAME,
    MILABENCH_USE_STDOUT,
    MILABENCH_EXEC_TOKEN,
    MILABENCH_REPORT_LEAN,
];

/// Environment variable of a dotted option name: `cpu.n_workers` -> `MILABENCH_CPU_N_WORKERS`.
pub fn option_env_var(option: &str) -> String {
    let mut name = String::with_capacity(PREFIX.len() + option.len());
    name.push_str(PREFIX);
    for c in option.chars() {
        match c {
            '.' | '-' => name.push('_'),
            c => name.push(c.to_ascii_uppercase()),
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_names_map_to_constants() {
        assert_eq!(option_env_var("cpu.n_workers"), MILABENCH_CPU_N_WORKERS);
        assert_eq!(
            option_env_var("sizer.batch_size"),
            MILABENCH_SIZER_BATCH_SIZE
        );
        assert_eq!(option_env_var("dirs.data"), MILABENCH_DIRS_DATA);
    }

    #[test]
    fn constants_are_unique_and_prefixed() {
        let mut seen = std::collections::BTreeSet::new();
        for name in ALL {
            assert!(name.starts_with(PREFIX), "{name}");
            assert!(seen.insert(*name), "duplicate {name}");
        }
    }
}
