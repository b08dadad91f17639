//! The store: opening a database, importing run folders, and the recorder of a live run.

use std::path::{Path, PathBuf};

use milabench_report::{Report, SuiteEntry};
use serde_json::Value;

use crate::backend::{Conn, Dialect, Param};
use crate::error::StoreError;
use crate::folder::{Growth, PackStatus, fingerprint, growth};
use crate::location::StoreLocation;
use crate::schema;
use crate::sweep::SweepPoint;
use crate::write::{self, NewExec, RunStatus, StoredExec};

/// An open results database, at the current schema version.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Conn,
    location: StoreLocation,
}

/// What [`Store::import_folder`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportOutcome {
    /// The run was not in the store: added.
    Added {
        /// Run name.
        name: String,
        /// Processes recorded.
        packs: usize,
    },
    /// The run was in the store with other contents (it went on since): replaced.
    Replaced {
        /// Run name.
        name: String,
        /// Processes recorded.
        packs: usize,
    },
    /// The run was in the store with the same contents: nothing changed.
    Unchanged {
        /// Run name.
        name: String,
    },
}

/// Options of [`Store::import_folder`].
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Namespace of the run (runs are unique by namespace and name); empty by default.
    pub namespace: String,
    /// The suite's benchmarks and weights; `None` takes them from the data, as `report` does.
    pub suite: Option<Vec<SuiteEntry>>,
    /// Name of the weight profile; `None` names it by its content.
    pub profile: Option<String>,
}

impl Store {
    /// Opens the database at `location` (a SQLite file is created when missing), bringing its
    /// schema up to date. A database from a newer milabench is refused, untouched.
    pub fn open(location: &StoreLocation) -> Result<Store, StoreError> {
        let mut conn = match location {
            StoreLocation::Sqlite(path) => Conn::open_sqlite(path)?,
            StoreLocation::Postgres(url) => Conn::connect_postgres(url, &location.shown())?,
        };
        schema::migrate(&mut conn, &location.shown())?;
        Ok(Store {
            conn,
            location: location.clone(),
        })
    }

    /// Where the database is.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The database this store talks to.
    pub fn dialect(&self) -> Dialect {
        self.conn.dialect()
    }

    /// Imports the run folder `folder`: its system facts, every process with its metrics, the
    /// statistics `milabench report` computes on it, and the sweep it belongs to (its
    /// `sweep.json`), in one transaction. A run already imported with the same `.data` files is
    /// left as it is (but for its sweep, taken when the store lacks it); one whose files grew
    /// is replaced.
    /// A run whose files did not all grow or stay (one cut short or gone) is refused
    /// ([`StoreError::Shrank`]), and so is a run of the same name from another folder that
    /// still exists ([`StoreError::OtherFolder`]): the stored run is kept in both cases. Two
    /// imports of one run at once both succeed: the one that finds the run written by the
    /// other since it looked (a UNIQUE constraint) looks again.
    pub fn import_folder(
        &mut self,
        folder: &Path,
        options: &ImportOptions,
    ) -> Result<ImportOutcome, StoreError> {
        match self.import_once(folder, options) {
            Err(e) if e.is_unique_violation() => self.import_once(folder, options),
            outcome => outcome,
        }
    }

    /// [`Store::import_folder`] without the second look.
    fn import_once(
        &mut self,
        folder: &Path,
        options: &ImportOptions,
    ) -> Result<ImportOutcome, StoreError> {
        let found = milabench_metrics::discover_data_files(&[folder])?;
        let digest = fingerprint(folder, &found.files)?;
        let packs = found
            .files
            .iter()
            .map(crate::folder::read_pack)
            .collect::<Result<Vec<_>, _>>()?;
        let name = run_name(folder, &packs);
        let sweep = SweepPoint::of_folder(folder);
        let existing = write::find_exec(&mut self.conn, &options.namespace, &name)?;
        if let Some(stored) = &existing {
            if let Some(other) = stored.folder.as_deref().map(Path::new)
                && other.exists()
                && !same_folder(other, folder)
            {
                return Err(StoreError::OtherFolder {
                    name,
                    stored: other.to_owned(),
                    folder: folder.to_owned(),
                });
            }
            match stored
                .fingerprint
                .as_deref()
                .map(|was| growth(was, &digest))
            {
                Some(Growth::Same) => {
                    if let Some(sweep) = sweep.as_ref().filter(|s| stored.sweep.as_ref() != Some(s))
                    {
                        write::set_sweep(&mut self.conn, stored.id, sweep)?;
                    }
                    return Ok(ImportOutcome::Unchanged { name });
                }
                Some(Growth::Shrank { file, was, now }) => {
                    return Err(StoreError::Shrank {
                        name,
                        file: folder.join(file),
                        was,
                        now,
                    });
                }
                Some(Growth::Grew | Growth::Unknown) | None => {}
            }
        }
        let (report, weights) = write::folder_report(folder, options.suite.as_deref(), &[])?;
        let profile = write::profile_name(options.profile.as_deref(), &weights);
        let meta = packs.iter().find_map(|p| p.meta.as_ref());
        // The earliest start of its processes, as a live run is dated once they ran
        // (`write::date_by_first_start`).
        let created_ts = packs.iter().filter_map(|p| p.start_ts).reduce(f64::min);
        self.conn.in_transaction(|conn| {
            if let Some(stored) = &existing {
                write::delete_exec(conn, stored.id)?;
            }
            let id = write::insert_exec(
                conn,
                &NewExec {
                    name: &name,
                    namespace: &options.namespace,
                    folder,
                    created_ts,
                    meta,
                    fingerprint: Some(&digest),
                    sweep: sweep.as_ref(),
                },
            )?;
            for pack in &packs {
                write::insert_pack(conn, id, pack)?;
            }
            let status = if report.passes() {
                RunStatus::Done
            } else {
                RunStatus::Failed
            };
            write::write_statistics(conn, id, &report, &weights, &profile, status)
        })?;
        Ok(match existing {
            Some(_) => ImportOutcome::Replaced {
                name,
                packs: packs.len(),
            },
            None => ImportOutcome::Added {
                name,
                packs: packs.len(),
            },
        })
    }

    /// Starts recording a live run: its row is written now with status `running`, so a run
    /// killed later stays visible as incomplete. A run of the same name (a resumed run) keeps
    /// what was recorded of it.
    pub fn begin_run(mut self, start: &RunStart) -> Result<RunRecorder, StoreError> {
        let exec = self.conn.in_transaction(|conn| {
            let id = match write::find_exec(conn, &start.namespace, &start.name)? {
                Some(StoredExec { id, .. }) => {
                    conn.execute(
                        "UPDATE execs SET status = $1, folder = $2, fingerprint = NULL
                         WHERE id = $3",
                        &[
                            Param::from(RunStatus::Running.as_str()),
                            Param::from(start.folder.display().to_string()),
                            Param::from(id),
                        ],
                    )?;
                    if let Some(meta) = &start.meta {
                        write::set_facts(conn, id, meta)?;
                    }
                    if let Some(sweep) = &start.sweep {
                        write::set_sweep(conn, id, sweep)?;
                    }
                    id
                }
                None => write::insert_exec(
                    conn,
                    &NewExec {
                        name: &start.name,
                        namespace: &start.namespace,
                        folder: &start.folder,
                        created_ts: Some(start.started),
                        meta: start.meta.as_ref(),
                        fingerprint: None,
                        sweep: start.sweep.as_ref(),
                    },
                )?,
            };
            Ok(id)
        })?;
        Ok(RunRecorder {
            store: self,
            exec,
            folder: start.folder.clone(),
        })
    }

    /// The folder the store recorded for run `name` (`None` when it holds no such run).
    pub fn run_folder(&mut self, name: &str) -> Result<Option<PathBuf>, StoreError> {
        let rows = self.conn.query(
            "SELECT folder FROM execs WHERE name = $1 ORDER BY namespace LIMIT 1",
            &[Param::from(name)],
        )?;
        Ok(rows.first().and_then(|r| r.text(0)).map(PathBuf::from))
    }
}

/// The run name of a folder: `config.run_name` of its processes, else the folder's name.
/// Whether `a` and `b` name the same folder (links and relative paths resolved).
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn run_name(folder: &Path, packs: &[crate::folder::PackRecord]) -> String {
    packs
        .iter()
        .find_map(|p| {
            p.config
                .as_ref()
                .and_then(|c| c.get("run_name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| {
            folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| folder.display().to_string())
        })
}

/// What a live run says when it starts.
#[derive(Debug, Clone)]
pub struct RunStart {
    /// Run name (the run folder's name).
    pub name: String,
    /// Namespace (empty by default).
    pub namespace: String,
    /// The run folder, where its `.data` files are written.
    pub folder: PathBuf,
    /// The `meta` event of the machine (system facts), when known at the start.
    pub meta: Option<Value>,
    /// Start time, seconds since the epoch: the run's date until one of its processes has
    /// started (then dated as an import dates it, by its earliest process start).
    pub started: f64,
    /// The sweep the run is a point of, when it is one.
    pub sweep: Option<SweepPoint>,
}

/// How one benchmark of a live run ended, as the run loop saw it. The benchmark's `.data` files
/// are the source of truth for its processes; this fills in what they cannot say (a benchmark
/// skipped or never started has no file).
#[derive(Debug, Clone, PartialEq)]
pub struct BenchEnd {
    /// Benchmark name.
    pub name: String,
    /// Its outcome.
    pub status: PackStatus,
    /// The exit status the run loop saw, when there was one.
    pub exit_code: Option<i64>,
}

/// What a live run says when it ends.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    /// The suite's benchmarks and weights (as given to the report); `None`: from the data.
    pub suite: Option<Vec<SuiteEntry>>,
    /// Name of the weight profile (the suite's name, say); `None` names it by content.
    pub profile: Option<String>,
    /// Benchmarks skipped for a reason (the report's `excused`).
    pub excused: Vec<String>,
    /// Whether the user stopped the run.
    pub interrupted: bool,
}

/// Records a live run into the store as it goes (see [`Store::begin_run`]).
#[derive(Debug)]
pub struct RunRecorder {
    store: Store,
    exec: i64,
    folder: PathBuf,
}

impl RunRecorder {
    /// Records one finished benchmark: every `.data` file of the run folder whose process
    /// belongs to it (by `config.name`), with its metrics; a benchmark without files gets one
    /// row with `end`'s status. Recording it again replaces it.
    pub fn bench_finished(&mut self, end: &BenchEnd) -> Result<(), StoreError> {
        let found = milabench_metrics::discover_data_files(&[&self.folder])?;
        let prefix = format!("{}.", end.name);
        let mut packs = Vec::new();
        for file in &found.files {
            let tag = file.tag.as_str();
            if tag != end.name && !tag.starts_with(&prefix) {
                continue;
            }
            let mut pack = crate::folder::read_pack(file)?;
            if pack.name != end.name {
                continue;
            }
            if pack.status == PackStatus::Incomplete && end.status != PackStatus::Done {
                pack.status = end.status;
                pack.exit_code = pack.exit_code.or(end.exit_code);
            }
            packs.push(pack);
        }
        if packs.is_empty() {
            packs.push(write::empty_pack(&end.name, end.status, end.exit_code));
        }
        let exec = self.exec;
        self.store.conn.in_transaction(|conn| {
            if !write::has_facts(conn, exec)?
                && let Some(meta) = packs.iter().find_map(|p| p.meta.as_ref())
            {
                write::set_facts(conn, exec, meta)?;
            }
            for pack in &packs {
                write::insert_pack(conn, exec, pack)?;
            }
            write::date_by_first_start(conn, exec)
        })
    }

    /// Ends the recording: the report's statistics of the whole folder, the weight profile,
    /// and the final status. Gives the store back.
    pub fn finish(self, end: &RunEnd) -> Result<Store, StoreError> {
        match write::folder_report(&self.folder, end.suite.as_deref(), &end.excused) {
            Ok((report, weights)) => self.conclude(end, Some((&report, &weights))),
            // A run that measured nothing has no statistics, only its status.
            Err(StoreError::Report(
                milabench_report::ReportError::NoDataFiles { .. }
                | milabench_report::ReportError::NoRuns { .. },
            )) => self.conclude(end, None),
            Err(e) => Err(e),
        }
    }

    /// Ends the recording as [`RunRecorder::finish`] does, with the report of the whole folder
    /// for `end` given by the caller, who computed it anyway (`None`: the run measured nothing),
    /// so that the folder's `.data` files are read once. The weights are `end.suite`'s; without
    /// them the report is computed here after all.
    pub fn finish_with_report(
        self,
        end: &RunEnd,
        report: Option<&Report>,
    ) -> Result<Store, StoreError> {
        match &end.suite {
            Some(weights) => self.conclude(end, report.map(|r| (r, weights.as_slice()))),
            None => self.finish(end),
        }
    }

    /// Records the statistics of `reported` (the report and its weights; `None` when nothing
    /// was measured) and the run's final status.
    fn conclude(
        mut self,
        end: &RunEnd,
        reported: Option<(&Report, &[SuiteEntry])>,
    ) -> Result<Store, StoreError> {
        let exec = self.exec;
        match reported {
            Some((report, weights)) => {
                let profile = write::profile_name(end.profile.as_deref(), weights);
                let status = if end.interrupted {
                    RunStatus::Interrupted
                } else if report.passes() {
                    RunStatus::Done
                } else {
                    RunStatus::Failed
                };
                self.store.conn.in_transaction(|conn| {
                    write::write_statistics(conn, exec, report, weights, &profile, status)
                })?;
            }
            None => {
                let status = if end.interrupted {
                    RunStatus::Interrupted
                } else {
                    RunStatus::Failed
                };
                write::set_status(&mut self.store.conn, exec, status)?;
            }
        }
        Ok(self.store)
    }
}
