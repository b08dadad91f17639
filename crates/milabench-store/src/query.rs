//! Reading the store: the list of runs (all, or a sweep's), one benchmark's history across runs,
//! and a run exported row by row.

use serde::Serialize;
use serde_json::{Map, Value};

use milabench_report::{DEFAULT_NOISE_FLOOR_PCT, Estimate, Interval, Verdict, judge};

use crate::backend::{Cell, Param, Row};
use crate::error::StoreError;
use crate::store::Store;
use crate::sweep::SweepPoint;

/// One run, as `milabench db list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Run name.
    pub name: String,
    /// Namespace (empty by default).
    pub namespace: String,
    /// When it started (RFC 3339, UTC).
    pub date: Option<String>,
    /// `running` (or killed: incomplete), `done`, `failed`, `interrupted`.
    pub status: String,
    /// Host name.
    pub host: Option<String>,
    /// CPU model.
    pub cpu: Option<String>,
    /// GPU model.
    pub gpu_model: Option<String>,
    /// Number of GPUs.
    pub gpu_count: i64,
    /// Suite score (`null` until the run finished).
    pub score: Option<f64>,
    /// Failed processes over processes.
    pub failure_rate: Option<f64>,
    /// Benchmarks with statistics.
    pub benchmarks: i64,
    /// The run folder.
    pub folder: Option<String>,
    /// The sweep the run is a point of, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
}

impl RunSummary {
    /// `running` shown as what it most likely is once the run is no longer going on.
    pub fn shown_status(&self) -> &str {
        if self.status == "running" {
            "incomplete"
        } else {
            &self.status
        }
    }
}

/// Which results `milabench history` shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryQuery {
    /// Only this benchmark.
    pub bench: Option<String>,
    /// Only GPUs whose model contains this text (any case).
    pub gpu: Option<String>,
    /// Only runs started at or after this time (seconds since the epoch).
    pub since: Option<f64>,
    /// Only runs of this sweep.
    pub sweep: Option<String>,
    /// Only runs of a sweep whose point has each of these settings (`key=value`, see
    /// [`SweepPoint::has`]).
    pub point: Vec<String>,
    /// The smallest change that counts, percent (see [`HistoryRow::verdict`]); `None`: the
    /// default noise floor, [`DEFAULT_NOISE_FLOOR_PCT`] (the store keeps no repeats to measure
    /// one from).
    pub threshold_pct: Option<f64>,
}

/// One benchmark in one run, with the change against the previous comparable run (same
/// benchmark, same GPU model and count, same sweep and point).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRow {
    /// Benchmark name.
    pub bench: String,
    /// Run name.
    pub run: String,
    /// When the run started (RFC 3339, UTC).
    pub date: Option<String>,
    /// GPU model (`null` for CPU runs).
    pub gpu_model: Option<String>,
    /// Number of GPUs.
    pub gpu_count: i64,
    /// Host name.
    pub host: Option<String>,
    /// CPU model (what names the system of a run without GPUs, as in [`RunSummary`]).
    pub cpu: Option<String>,
    /// The sweep the run is a point of, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// Mean training rate.
    pub perf: Option<f64>,
    /// Standard error over the mean, as a fraction of it.
    pub sem_pct: Option<f64>,
    /// Processes.
    pub n: Option<i64>,
    /// Failed processes.
    pub fail: Option<i64>,
    /// Score of the benchmark.
    pub score: Option<f64>,
    /// The previous comparable run that measured a perf.
    pub previous_run: Option<String>,
    /// Change of perf against it, percent.
    pub change_pct: Option<f64>,
    /// 95% interval of that change, percent (from the two runs' stored intervals).
    pub change_ci95: Option<Interval>,
    /// Better, worse or cannot tell: the change judged against its interval and the query's
    /// threshold as `milabench compare` judges it ([`judge`]).
    pub verdict: Option<Verdict>,
    /// The smallest change that counted for the verdict, percent (with the verdict).
    pub threshold_pct: Option<f64>,
}

impl Store {
    /// Every run, oldest first.
    pub fn runs(&mut self) -> Result<Vec<RunSummary>, StoreError> {
        self.runs_of(None)
    }

    /// The runs of sweep `sweep`, oldest first: each with its point.
    pub fn sweep_runs(&mut self, sweep: &str) -> Result<Vec<RunSummary>, StoreError> {
        self.runs_of(Some(sweep))
    }

    /// The names of the sweeps the store holds runs of, sorted.
    pub fn sweeps(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self.conn.query(
            "SELECT DISTINCT sweep FROM execs WHERE sweep IS NOT NULL ORDER BY sweep",
            &[],
        )?;
        Ok(rows.iter().filter_map(|r| r.text(0)).collect())
    }

    /// Every run (`sweep: None`) or the runs of one sweep, oldest first.
    fn runs_of(&mut self, sweep: Option<&str>) -> Result<Vec<RunSummary>, StoreError> {
        let rows = self.conn.query(
            "SELECT e.name, e.namespace, e.created_time, e.status, e.host, e.cpu, e.gpu_model,
                    e.gpu_count, e.score, e.failure_rate, e.folder,
                    (SELECT COUNT(*) FROM bench_stats s WHERE s.exec_id = e.id),
                    e.sweep, e.sweep_point
             FROM execs e
             WHERE (CAST($1 AS TEXT) IS NULL OR e.sweep = $1)
             ORDER BY e.created_ts, e.id",
            &[Param::from(sweep)],
        )?;
        Ok(rows
            .iter()
            .map(|r| RunSummary {
                name: r.text(0).unwrap_or_default(),
                namespace: r.text(1).unwrap_or_default(),
                date: r.text(2),
                status: r.text(3).unwrap_or_default(),
                host: r.text(4),
                cpu: r.text(5),
                gpu_model: r.text(6),
                gpu_count: r.int(7).unwrap_or(0),
                score: r.real(8),
                failure_rate: r.real(9),
                folder: r.text(10),
                benchmarks: r.int(11).unwrap_or(0),
                sweep: SweepPoint::from_columns(r.text(12), r.text(13)),
            })
            .collect())
    }

    /// The history of each benchmark matching `query`: ordered by benchmark then time, each row
    /// compared with the previous run of the same benchmark on the same GPU model and count,
    /// and of the same sweep at the same point (a run outside sweeps with runs outside sweeps).
    pub fn history(&mut self, query: &HistoryQuery) -> Result<Vec<HistoryRow>, StoreError> {
        let gpu = query
            .gpu
            .as_deref()
            .map(|g| format!("%{}%", escape_like(&g.to_lowercase())));
        let rows = self.conn.query(
            "SELECT s.bench, e.name, e.created_time, e.created_ts, e.gpu_model, e.gpu_count,
                    e.host, s.perf, s.sem_pct, s.n, s.fail, s.score, s.perf_low, s.perf_high,
                    e.sweep, e.sweep_point, e.cpu
             FROM bench_stats s JOIN execs e ON e.id = s.exec_id
             WHERE (CAST($1 AS TEXT) IS NULL OR s.bench = $1)
               AND (CAST($2 AS TEXT) IS NULL OR LOWER(e.gpu_model) LIKE $2 ESCAPE '!')
               AND (CAST($3 AS TEXT) IS NULL OR e.sweep = $3)
             ORDER BY s.bench, e.created_ts, e.id",
            &[
                Param::from(query.bench.as_deref()),
                Param::from(gpu),
                Param::from(query.sweep.as_deref()),
            ],
        )?;
        // The previous run is looked for among all runs, also those before `since`.
        let mut out = Vec::new();
        type Comparable = (String, Option<String>, i64, Option<SweepPoint>);
        let mut last: std::collections::HashMap<Comparable, (String, Estimate)> =
            std::collections::HashMap::new();
        for r in &rows {
            let sweep = SweepPoint::from_columns(r.text(14), r.text(15));
            let at_point = query
                .point
                .iter()
                .all(|setting| sweep.as_ref().is_some_and(|s| s.has(setting)));
            if !at_point {
                continue;
            }
            let mut row = HistoryRow {
                bench: r.text(0).unwrap_or_default(),
                run: r.text(1).unwrap_or_default(),
                date: r.text(2),
                gpu_model: r.text(4),
                gpu_count: r.int(5).unwrap_or(0),
                host: r.text(6),
                cpu: r.text(16),
                sweep,
                perf: r.real(7),
                sem_pct: r.real(8),
                n: r.int(9),
                fail: r.int(10),
                score: r.real(11),
                previous_run: None,
                change_pct: None,
                change_ci95: None,
                verdict: None,
                threshold_pct: None,
            };
            // The stored interval is centred on perf (the report's `perf_ci`).
            let estimate = row.perf.map(|perf| {
                let half_width = match (r.real(12), r.real(13)) {
                    (Some(low), Some(high)) => Interval { low, high }.half_width(),
                    _ => f64::NAN,
                };
                Estimate::from_interval(perf, half_width)
            });
            let key = (
                row.bench.clone(),
                row.gpu_model.clone(),
                row.gpu_count,
                row.sweep.clone(),
            );
            if let Some((run, previous)) = last.get(&key) {
                row.previous_run = Some(run.clone());
                if let Some(this) = estimate.filter(|_| previous.mean != 0.0) {
                    let change = previous.change_to(&this);
                    row.change_pct = Some(change.mean);
                    row.change_ci95 = Some(Interval::of(&change));
                    let threshold = query.threshold_pct.unwrap_or(DEFAULT_NOISE_FLOOR_PCT);
                    row.verdict = Some(judge(&change, threshold).into());
                    row.threshold_pct = Some(threshold);
                }
            }
            if let Some(estimate) = estimate {
                last.insert(key, (row.run.clone(), estimate));
            }
            let started = r.real(3);
            if query
                .since
                .is_none_or(|since| started.is_some_and(|t| t >= since))
            {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// Run `name` as JSON objects, one per row of the store: the run (`kind: exec`), then its
    /// statistics (`stats`), weights (`weight`), processes (`pack`) and metrics (`metric`).
    /// JSON held as text (meta, config, command) comes back as JSON.
    pub fn export_run(&mut self, name: &str) -> Result<Vec<Value>, StoreError> {
        let exec = self.conn.query(
            "SELECT id, weights_profile FROM execs WHERE name = $1 ORDER BY namespace LIMIT 1",
            &[Param::from(name)],
        )?;
        let Some((id, profile)) = exec
            .first()
            .and_then(|r| r.int(0).map(|id| (id, r.text(1))))
        else {
            return Err(StoreError::UnknownRun {
                name: name.to_owned(),
                location: self.location().shown(),
            });
        };
        let id = Param::from(id);
        let mut out = Vec::new();
        let parts: [(&str, &str, &[&str], Param); 5] = [
            (
                "exec",
                "SELECT name, namespace, folder, created_time, status, host, cpu, gpu_arch,
                        gpu_model, gpu_count, driver, torch, milabench, weights_profile, score,
                        failure_rate, meta, sweep, sweep_point
                 FROM execs WHERE id = $1",
                &[
                    "name",
                    "namespace",
                    "folder",
                    "created_time",
                    "status",
                    "host",
                    "cpu",
                    "gpu_arch",
                    "gpu_model",
                    "gpu_count",
                    "driver",
                    "torch",
                    "milabench",
                    "weights_profile",
                    "score",
                    "failure_rate",
                    "meta",
                    "sweep",
                    "sweep_point",
                ],
                id.clone(),
            ),
            (
                "stats",
                "SELECT bench, n, fail, ngpu, perf, sem_pct, std_pct, perf_low, perf_high, score,
                        weight, enabled, peak_memory, energy_kj, perf_watt
                 FROM bench_stats WHERE exec_id = $1 ORDER BY bench",
                &[
                    "bench",
                    "n",
                    "fail",
                    "ngpu",
                    "perf",
                    "sem_pct",
                    "std_pct",
                    "perf_low",
                    "perf_high",
                    "score",
                    "weight",
                    "enabled",
                    "peak_memory",
                    "energy_kj",
                    "perf_watt",
                ],
                id.clone(),
            ),
            (
                "weight",
                "SELECT profile, bench, weight, enabled, bench_group
                 FROM weights WHERE profile = $1 ORDER BY bench",
                &["profile", "bench", "weight", "enabled", "group"],
                Param::from(profile),
            ),
            (
                "pack",
                "SELECT tag, name, status, exit_code, ngpu, start_ts, end_ts, command, config
                 FROM packs WHERE exec_id = $1 ORDER BY tag",
                &[
                    "tag",
                    "name",
                    "status",
                    "exit_code",
                    "ngpu",
                    "start_ts",
                    "end_ts",
                    "command",
                    "config",
                ],
                id.clone(),
            ),
            (
                "metric",
                "SELECT p.tag, m.seq, m.ts, m.name, m.namespace, m.value, m.unit, m.gpu_id,
                        m.job_id
                 FROM metrics m JOIN packs p ON p.id = m.pack_id
                 WHERE m.exec_id = $1 ORDER BY p.tag, m.seq, m.id",
                &[
                    "tag",
                    "seq",
                    "ts",
                    "name",
                    "namespace",
                    "value",
                    "unit",
                    "gpu_id",
                    "job_id",
                ],
                id,
            ),
        ];
        for (kind, sql, columns, param) in parts {
            for row in self.conn.query(sql, &[param])? {
                out.push(row_object(kind, columns, &row));
            }
        }
        Ok(out)
    }
}

/// The columns that hold JSON as text.
const JSON_COLUMNS: &[&str] = &["meta", "config", "command", "sweep_point"];

fn row_object(kind: &str, columns: &[&str], row: &Row) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), Value::from(kind));
    for (column, cell) in columns.iter().zip(&row.0) {
        let value = match cell {
            Cell::Null => Value::Null,
            Cell::Int(v) => Value::from(*v),
            Cell::Real(v) => Value::from(*v),
            Cell::Text(t) if JSON_COLUMNS.contains(column) => {
                serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone()))
            }
            Cell::Text(t) => Value::String(t.clone()),
        };
        map.insert((*column).to_owned(), value);
    }
    Value::Object(map)
}

/// `text` with LIKE's wildcards taken literally (escape character `!`).
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '!') {
            out.push('!');
        }
        out.push(c);
    }
    out
}
