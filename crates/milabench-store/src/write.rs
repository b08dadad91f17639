//! Writing runs: the statements shared by `import` (a whole folder in one transaction) and the
//! recorder of a live run (one transaction per step).

use std::path::Path;

use milabench_report::{Report, ReportOptions, SuiteEntry, report_runs, weights_from_summary};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::backend::{Conn, Param};
use crate::error::StoreError;
use crate::folder::{PackRecord, PackStatus, SystemFacts};
use crate::sweep::SweepPoint;

/// The status of a run in `execs.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Being recorded, or killed before it finished (shown as incomplete).
    Running,
    /// Finished, failure rate within the report's gate.
    Done,
    /// Finished, failure rate above the gate.
    Failed,
    /// Stopped by the user.
    Interrupted,
}

impl RunStatus {
    /// The word stored.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// The row of a run, before it exists.
#[derive(Debug, Clone)]
pub(crate) struct NewExec<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub folder: &'a Path,
    pub created_ts: Option<f64>,
    pub meta: Option<&'a Value>,
    pub fingerprint: Option<&'a str>,
    pub sweep: Option<&'a SweepPoint>,
}

/// RFC 3339 (UTC) of seconds since the epoch.
pub(crate) fn rfc3339(ts: f64) -> Option<String> {
    jiff::Timestamp::from_microsecond((ts * 1e6).round() as i64)
        .ok()
        .map(|t| t.to_string())
}

/// A stored run, as an import sees it.
pub(crate) struct StoredExec {
    /// Its id.
    pub id: i64,
    /// The listing of its files at its last import ([`crate::folder::fingerprint`]); `None`
    /// when it was recorded live.
    pub fingerprint: Option<String>,
    /// Its run folder, as recorded.
    pub folder: Option<String>,
    /// The sweep it belongs to, as recorded.
    pub sweep: Option<SweepPoint>,
}

/// The run `name` in `namespace`, when there is one.
pub(crate) fn find_exec(
    conn: &mut Conn,
    namespace: &str,
    name: &str,
) -> Result<Option<StoredExec>, StoreError> {
    let rows = conn.query(
        "SELECT id, fingerprint, folder, sweep, sweep_point FROM execs
         WHERE namespace = $1 AND name = $2",
        &[Param::from(namespace), Param::from(name)],
    )?;
    Ok(rows.first().and_then(|r| {
        r.int(0).map(|id| StoredExec {
            id,
            fingerprint: r.text(1),
            folder: r.text(2),
            sweep: SweepPoint::from_columns(r.text(3), r.text(4)),
        })
    }))
}

/// Removes a run and everything recorded under it.
pub(crate) fn delete_exec(conn: &mut Conn, id: i64) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM metrics WHERE exec_id = $1",
        "DELETE FROM packs WHERE exec_id = $1",
        "DELETE FROM bench_stats WHERE exec_id = $1",
        "DELETE FROM execs WHERE id = $1",
    ] {
        conn.execute(sql, &[Param::from(id)])?;
    }
    Ok(())
}

/// Inserts a run row with status `running`; its id.
pub(crate) fn insert_exec(conn: &mut Conn, exec: &NewExec<'_>) -> Result<i64, StoreError> {
    let rows = conn.query(
        "INSERT INTO execs (name, namespace, folder, created_time, created_ts, status, fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        &[
            Param::from(exec.name),
            Param::from(exec.namespace),
            Param::from(exec.folder.display().to_string()),
            Param::from(exec.created_ts.and_then(rfc3339)),
            Param::from(exec.created_ts),
            Param::from(RunStatus::Running.as_str()),
            Param::from(exec.fingerprint),
        ],
    )?;
    let id = rows.first().and_then(|r| r.int(0)).unwrap_or_default();
    if let Some(meta) = exec.meta {
        set_facts(conn, id, meta)?;
    }
    if let Some(sweep) = exec.sweep {
        set_sweep(conn, id, sweep)?;
    }
    Ok(id)
}

/// Records that run `id` is the point `sweep` of its sweep.
pub(crate) fn set_sweep(conn: &mut Conn, id: i64, sweep: &SweepPoint) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE execs SET sweep = $1, sweep_point = $2 WHERE id = $3",
        &[
            Param::from(sweep.sweep.as_str()),
            Param::from(sweep.point_column()),
            Param::from(id),
        ],
    )?;
    Ok(())
}

/// Records the system facts of `meta` on run `id`.
pub(crate) fn set_facts(conn: &mut Conn, id: i64, meta: &Value) -> Result<(), StoreError> {
    let f = SystemFacts::from_meta(meta);
    conn.execute(
        "UPDATE execs SET host = $1, cpu = $2, gpu_arch = $3, gpu_model = $4, gpu_count = $5,
             driver = $6, torch = $7, milabench = $8, meta = $9,
             created_ts = COALESCE(created_ts, $10), created_time = COALESCE(created_time, $11)
         WHERE id = $12",
        &[
            Param::from(f.host),
            Param::from(f.cpu),
            Param::from(f.gpu_arch),
            Param::from(f.gpu_model),
            Param::from(f.gpu_count),
            Param::from(f.driver),
            Param::from(f.torch),
            Param::from(f.milabench),
            Param::from(meta.to_string()),
            Param::from(f.date),
            Param::from(f.date.and_then(rfc3339)),
            Param::from(id),
        ],
    )?;
    Ok(())
}

/// Dates run `id` as every run is dated, live or imported: by the earliest `start` of its
/// processes recorded so far (left as it is while none has one).
pub(crate) fn date_by_first_start(conn: &mut Conn, id: i64) -> Result<(), StoreError> {
    let rows = conn.query(
        "SELECT MIN(start_ts) FROM packs WHERE exec_id = $1",
        &[Param::from(id)],
    )?;
    let Some(first) = rows.first().and_then(|r| r.real(0)) else {
        return Ok(());
    };
    conn.execute(
        "UPDATE execs SET created_ts = $1, created_time = $2 WHERE id = $3",
        &[
            Param::real(first),
            Param::from(rfc3339(first)),
            Param::from(id),
        ],
    )?;
    Ok(())
}

/// Whether run `id` has its system facts yet.
pub(crate) fn has_facts(conn: &mut Conn, id: i64) -> Result<bool, StoreError> {
    let rows = conn.query(
        "SELECT 1 FROM execs WHERE id = $1 AND meta IS NOT NULL",
        &[Param::from(id)],
    )?;
    Ok(!rows.is_empty())
}

/// Inserts one pack and its metrics (replacing a pack of the same tag recorded before).
pub(crate) fn insert_pack(conn: &mut Conn, exec: i64, pack: &PackRecord) -> Result<(), StoreError> {
    let old = conn.query(
        "SELECT id FROM packs WHERE exec_id = $1 AND tag = $2",
        &[Param::from(exec), Param::from(pack.tag.as_str())],
    )?;
    if let Some(old) = old.first().and_then(|r| r.int(0)) {
        conn.execute(
            "DELETE FROM metrics WHERE pack_id = $1",
            &[Param::from(old)],
        )?;
        conn.execute("DELETE FROM packs WHERE id = $1", &[Param::from(old)])?;
    }
    let rows = conn.query(
        "INSERT INTO packs (exec_id, name, tag, config, command, status, exit_code, ngpu,
                            start_ts, end_ts)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        &[
            Param::from(exec),
            Param::from(pack.name.as_str()),
            Param::from(pack.tag.as_str()),
            Param::from(pack.config.as_ref().map(Value::to_string)),
            Param::from(
                pack.command
                    .as_ref()
                    .map(|c| Value::from(c.clone()).to_string()),
            ),
            Param::from(pack.status.as_str()),
            Param::from(pack.exit_code),
            Param::from(pack.ngpu),
            Param::from(pack.start_ts),
            Param::from(pack.end_ts),
        ],
    )?;
    let pack_id = rows.first().and_then(|r| r.int(0)).unwrap_or_default();
    for m in &pack.metrics {
        conn.execute(
            "INSERT INTO metrics (exec_id, pack_id, seq, ts, name, namespace, value, unit,
                                  gpu_id, job_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                Param::from(exec),
                Param::from(pack_id),
                Param::from(m.seq),
                Param::from(m.ts),
                Param::from(m.name),
                Param::from(m.namespace.as_deref()),
                Param::real(m.value),
                Param::from(m.unit.as_deref()),
                Param::from(m.gpu_id.as_deref()),
                Param::from(pack.job_id),
            ],
        )?;
    }
    Ok(())
}

/// A pack row for a benchmark that left no `.data` file (skipped, or never started).
pub(crate) fn empty_pack(name: &str, status: PackStatus, exit_code: Option<i64>) -> PackRecord {
    PackRecord {
        status,
        exit_code,
        ..PackRecord::new(name.to_owned(), name.to_owned())
    }
}

/// The report of a folder, computed by `milabench-report` exactly as `milabench report` does.
pub(crate) fn folder_report(
    folder: &Path,
    suite: Option<&[SuiteEntry]>,
    excused: &[String],
) -> Result<(Report, Vec<SuiteEntry>), StoreError> {
    let source = folder.display().to_string();
    let options = ReportOptions {
        excused: excused.to_vec(),
        ..ReportOptions::default()
    };
    let (report, set) = report_runs(&[source], suite, &options)?;
    let weights = match suite {
        Some(s) => s.to_vec(),
        None => weights_from_summary(&milabench_report::summarize(&set)?),
    };
    Ok((report, weights))
}

/// The name of a weight profile: the one given, else one named by its content (identical
/// weights share a profile).
pub(crate) fn profile_name(given: Option<&str>, weights: &[SuiteEntry]) -> String {
    if let Some(name) = given {
        return name.to_owned();
    }
    let mut entries: Vec<String> = weights
        .iter()
        .map(|w| {
            format!(
                "{}\t{:?}\t{:?}\t{:?}\n",
                w.name, w.weight, w.enabled, w.group
            )
        })
        .collect();
    entries.sort();
    let mut hash = Sha256::new();
    for e in &entries {
        hash.update(e.as_bytes());
    }
    let digest: String = hash.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("data-{digest}")
}

/// Writes the report's statistics, the weight profile and the final status of run `exec`.
pub(crate) fn write_statistics(
    conn: &mut Conn,
    exec: i64,
    report: &Report,
    weights: &[SuiteEntry],
    profile: &str,
    status: RunStatus,
) -> Result<(), StoreError> {
    for w in weights {
        conn.execute(
            "INSERT INTO weights (profile, bench, weight, enabled, bench_group)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (profile, bench) DO UPDATE SET weight = excluded.weight,
                 enabled = excluded.enabled, bench_group = excluded.bench_group",
            &[
                Param::from(profile),
                Param::from(w.name.as_str()),
                Param::Real(Some(w.weight.unwrap_or(0.0))),
                Param::from(i64::from(w.enabled.unwrap_or(true))),
                Param::from(w.group.as_deref()),
            ],
        )?;
    }
    conn.execute(
        "DELETE FROM bench_stats WHERE exec_id = $1",
        &[Param::from(exec)],
    )?;
    let count = |x: f64| Param::Int(x.is_finite().then_some(x as i64));
    for row in &report.rows {
        conn.execute(
            "INSERT INTO bench_stats (exec_id, bench, n, fail, ngpu, perf, sem_pct, std_pct,
                 perf_low, perf_high, score, weight, enabled, peak_memory, energy_kj, perf_watt)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
            &[
                Param::from(exec),
                Param::from(row.name.as_str()),
                count(row.n),
                count(row.fail),
                count(row.ngpu),
                Param::real(row.perf),
                Param::real(row.sem_pct),
                Param::real(row.std_pct),
                Param::real(row.perf_ci.low),
                Param::real(row.perf_ci.high),
                Param::real(row.score),
                Param::real(row.weight),
                Param::from(i64::from(row.enabled.is_on())),
                Param::real(row.peak_memory),
                Param::real(row.energy_kj),
                Param::real(row.perf_watt),
            ],
        )?;
    }
    conn.execute(
        "UPDATE execs SET score = $1, failure_rate = $2, weights_profile = $3, status = $4
         WHERE id = $5",
        &[
            Param::real(report.score),
            Param::real(report.failure_rate),
            Param::from(profile),
            Param::from(status.as_str()),
            Param::from(exec),
        ],
    )?;
    Ok(())
}

/// Sets the status of run `exec`.
pub(crate) fn set_status(conn: &mut Conn, exec: i64, status: RunStatus) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE execs SET status = $1 WHERE id = $2",
        &[Param::from(status.as_str()), Param::from(exec)],
    )?;
    Ok(())
}
