//! The results database as the commands see it: opened from `--db` / `MILABENCH_DB` /
//! `<base>/results.db`, and run names resolved to their folders for `report` and `compare`.

use std::path::Path;

use crate::errors::Context as _;
use milabench::settings::EnvVars;
use milabench::store::{RunSummary, Store, StoreLocation};

use crate::args::GlobalArgs;
use crate::settings::load_settings;
use crate::table::{number, short_time, system};

/// Where the results database of this invocation is.
pub fn location(global: &GlobalArgs) -> crate::errors::Result<StoreLocation> {
    let env = EnvVars::from_process();
    let settings = load_settings(global, None, &env)?;
    Ok(StoreLocation::resolve(
        settings.db.as_deref(),
        settings.base.as_std_path(),
    )?)
}

/// Opens the results database of this invocation (its folder is made for a new SQLite file).
pub fn open(global: &GlobalArgs) -> crate::errors::Result<Store> {
    let location = location(global)?;
    if let StoreLocation::Sqlite(path) = &location
        && let Some(parent) = path.parent()
    {
        std::fs::create_dir_all(parent).with_context(|| {
            format!(
                "could not make {} for the results database; give another place with --db",
                parent.display()
            )
        })?;
    }
    Ok(Store::open(&location)?)
}

/// Opens the results database of this invocation for reading: a SQLite file that does not
/// exist is an error (nothing is created).
pub fn open_existing(global: &GlobalArgs) -> crate::errors::Result<Store> {
    let location = location(global)?;
    if let StoreLocation::Sqlite(path) = &location
        && !path.is_file()
    {
        crate::errors::bail!(
            "no database at {}: no run was imported or recorded there\n  fix: import run folders with `milabench db import FOLDER...`, or name the database with --db (or MILABENCH_DB)",
            path.display()
        );
    }
    Ok(Store::open(&location)?)
}

/// The run folders `report` and `compare` read: each argument that is not an existing path and
/// names a run of the results database becomes that run's folder. Others are left as given
/// (the report then says what is missing). A database that does not exist is not created.
pub fn resolve_runs(global: &GlobalArgs, runs: &[String]) -> crate::errors::Result<Vec<String>> {
    if runs.iter().all(|r| Path::new(r).exists()) {
        return Ok(runs.to_vec());
    }
    let location = location(global)?;
    if let StoreLocation::Sqlite(path) = &location
        && !path.exists()
    {
        return Ok(runs.to_vec());
    }
    let mut store = Store::open(&location)?;
    let mut out = Vec::with_capacity(runs.len());
    for run in runs {
        if Path::new(run).exists() {
            out.push(run.clone());
            continue;
        }
        match store.run_folder(run)? {
            Some(folder) if folder.exists() => out.push(folder.display().to_string()),
            Some(folder) => crate::errors::bail!(
                "run `{run}` is in the results database {location}, but its folder {} is gone; its statistics are still there (`milabench history`, `milabench db export {run}`); give the folder's new place instead to report on its files",
                folder.display()
            ),
            None => out.push(run.clone()),
        }
    }
    Ok(out)
}

/// The columns of a list of stored runs (`db list`, `history --sweep`).
pub(crate) const RUN_COLUMNS: [&str; 6] =
    ["run", "date", "system", "benchmarks", "score", "status"];

/// A stored run's cells under [`RUN_COLUMNS`].
pub(crate) fn run_cells(r: &RunSummary) -> Vec<String> {
    vec![
        r.name.clone(),
        short_time(r.date.as_deref()),
        system(r.gpu_model.as_deref(), r.gpu_count, r.cpu.as_deref()),
        r.benchmarks.to_string(),
        number(r.score, 2),
        r.shown_status().to_owned(),
    ]
}
