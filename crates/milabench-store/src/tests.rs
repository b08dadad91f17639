//! The store's test suite, run once on SQLite and once on PostgreSQL (`postgres::*`, skipped
//! with its reason when no server is given, see [`crate::harness`]).

use std::path::{Path, PathBuf};

use milabench_report::{ReportOptions, report_runs};

use crate::harness::{GeneratedBench, GeneratedSystem, TestDatabase, pg_required, write_run};
use crate::*;

/// A database for one test: a SQLite file in a scratch folder, or a PostgreSQL database.
enum Target {
    Sqlite(tempfile::TempDir),
    Postgres(TestDatabase),
}

impl Target {
    fn location(&self) -> StoreLocation {
        match self {
            Target::Sqlite(dir) => StoreLocation::Sqlite(dir.path().join(DEFAULT_FILE)),
            Target::Postgres(db) => StoreLocation::Postgres(db.url.clone()),
        }
    }

    fn open(&self) -> Store {
        Store::open(&self.location()).unwrap()
    }
}

fn sqlite_target() -> Option<Target> {
    Some(Target::Sqlite(tempfile::tempdir().unwrap()))
}

#[allow(clippy::print_stderr)]
fn postgres_target() -> Option<Target> {
    match TestDatabase::create() {
        Ok(db) => Some(Target::Postgres(db)),
        Err(why) => {
            assert!(!pg_required(), "PostgreSQL tests are required: {why}");
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// Each test, once per backend.
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $test() { if let Some(t) = super::sqlite_target() { super::$test(&t) } })*
        }
        mod postgres {
            $(#[test] fn $test() { if let Some(t) = super::postgres_target() { super::$test(&t) } })*
        }
    };
}

on_both_backends!(
    import_gives_the_reports_statistics,
    importing_twice_changes_nothing,
    two_imports_of_one_run_at_once_both_succeed,
    a_folder_that_grew_is_replaced_not_doubled,
    a_newer_schema_is_refused_and_left_untouched,
    the_recorder_records_a_run_as_it_goes,
    a_killed_run_stays_visible_as_incomplete,
    history_compares_with_the_previous_comparable_run,
    history_judges_each_change_against_its_interval,
    export_gives_every_row_of_a_run,
    a_sweeps_runs_stay_grouped_and_history_follows_a_point,
    the_recorder_records_the_sweep_of_a_live_run,
    a_store_of_the_first_schema_is_migrated_and_reads_as_before,
);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/milabench/runs/tests-runs")
        .join(name)
}

const SEDUMOJE: &str = "sedumoje.2023-03-24_13:57:35.089747";
const RIJUBIGO: &str = "rijubigo.2023-03-24_13:45:27.512446";

/// Copies a fixture run folder to a scratch folder (tests that change it).
fn copy_fixture(name: &str, into: &Path) -> PathBuf {
    let dest = into.join(name);
    std::fs::create_dir_all(&dest).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dest.join(entry.file_name())).unwrap();
    }
    dest
}

fn count(store: &mut Store, sql: &str) -> i64 {
    store.conn.query(sql, &[]).unwrap()[0].int(0).unwrap()
}

fn same(a: Option<f64>, b: f64) -> bool {
    match a {
        Some(a) => a == b,
        None => !b.is_finite(),
    }
}

fn import_gives_the_reports_statistics(t: &Target) {
    let mut store = t.open();
    for name in [SEDUMOJE, RIJUBIGO] {
        let folder = fixture(name);
        let outcome = store
            .import_folder(&folder, &ImportOptions::default())
            .unwrap();
        assert!(
            matches!(outcome, ImportOutcome::Added { .. }),
            "{outcome:?}"
        );
        let (report, _) = report_runs(
            &[folder.display().to_string()],
            None,
            &ReportOptions::default(),
        )
        .unwrap();
        let exported = store.export_run(name).unwrap();
        let stats: Vec<_> = exported.iter().filter(|r| r["kind"] == "stats").collect();
        assert_eq!(stats.len(), report.rows.len());
        for (row, stored) in report.rows.iter().zip(stats) {
            assert_eq!(stored["bench"], row.name.as_str());
            for (key, expected) in [
                ("perf", row.perf),
                ("sem_pct", row.sem_pct),
                ("std_pct", row.std_pct),
                ("score", row.score),
                ("n", row.n),
                ("fail", row.fail),
            ] {
                assert!(
                    same(stored[key].as_f64(), expected),
                    "{name} {key}: stored {} vs report {expected}",
                    stored[key]
                );
            }
        }
        let exec = &exported[0];
        assert_eq!(exec["kind"], "exec");
        assert!(same(exec["score"].as_f64(), report.score));
        assert_eq!(
            exec["status"],
            if report.passes() { "done" } else { "failed" }
        );
    }
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
}

fn importing_twice_changes_nothing(t: &Target) {
    let mut store = t.open();
    let folder = fixture(SEDUMOJE);
    store
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    let before = store.export_run(SEDUMOJE).unwrap();
    let ids = count(&mut store, "SELECT MAX(id) FROM metrics");
    let again = store
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    assert_eq!(
        again,
        ImportOutcome::Unchanged {
            name: SEDUMOJE.into()
        }
    );
    assert_eq!(store.export_run(SEDUMOJE).unwrap(), before);
    assert_eq!(count(&mut store, "SELECT MAX(id) FROM metrics"), ids);
    assert_eq!(count(&mut store, "SELECT COUNT(*) FROM execs"), 1);
}

/// Issue 38, item 14: two `db import` of one run at once: both looked, found no run, and the
/// second to write failed on the UNIQUE constraint. Both succeed now, one run stored.
fn two_imports_of_one_run_at_once_both_succeed(t: &Target) {
    let folder = fixture(SEDUMOJE);
    for round in 0..5 {
        // A namespace per round: the run is new to each.
        let options = ImportOptions {
            namespace: format!("round{round}"),
            ..ImportOptions::default()
        };
        let start = std::sync::Barrier::new(2);
        let outcomes: Vec<_> = std::thread::scope(|scope| {
            let importers: Vec<_> = (0..2)
                .map(|_| {
                    let mut store = t.open();
                    let (start, folder, options) = (&start, &folder, &options);
                    scope.spawn(move || {
                        start.wait();
                        store.import_folder(folder, options)
                    })
                })
                .collect();
            importers.into_iter().map(|i| i.join().unwrap()).collect()
        });
        for outcome in outcomes {
            let outcome = outcome.unwrap();
            assert!(
                matches!(
                    outcome,
                    ImportOutcome::Added { .. } | ImportOutcome::Unchanged { .. }
                ),
                "{outcome:?}"
            );
        }
        let sql = format!("SELECT COUNT(*) FROM execs WHERE namespace = 'round{round}'");
        assert_eq!(count(&mut t.open(), &sql), 1);
    }
}

fn a_folder_that_grew_is_replaced_not_doubled(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let folder = copy_fixture(SEDUMOJE, scratch.path());
    let mut store = t.open();
    store
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    let metrics = count(&mut store, "SELECT COUNT(*) FROM metrics");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(folder.join("benchio.0.data"))
        .unwrap();
    std::io::Write::write_all(
        &mut file,
        b"{\"event\": \"data\", \"data\": {\"task\": \"train\", \"loss\": 0.5}, \"pipe\": \"data\"}\n",
    )
    .unwrap();
    let outcome = store
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    assert!(
        matches!(outcome, ImportOutcome::Replaced { packs: 2, .. }),
        "{outcome:?}"
    );
    assert_eq!(
        count(&mut store, "SELECT COUNT(*) FROM metrics"),
        metrics + 1
    );
    assert_eq!(count(&mut store, "SELECT COUNT(*) FROM packs"), 2);
}

fn a_newer_schema_is_refused_and_left_untouched(t: &Target) {
    let mut store = t.open();
    store
        .import_folder(&fixture(SEDUMOJE), &ImportOptions::default())
        .unwrap();
    crate::schema::set_version(&mut store.conn, schema::SCHEMA_VERSION + 1).unwrap();
    drop(store);
    let err = Store::open(&t.location()).unwrap_err();
    assert!(
        matches!(err, StoreError::NewerSchema { found, .. } if found == schema::SCHEMA_VERSION + 1)
    );
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert!(err.is_unavailable());
    // Still the newer version, still the run.
    let mut conn = match t.location() {
        StoreLocation::Sqlite(path) => crate::backend::Conn::open_sqlite(&path).unwrap(),
        StoreLocation::Postgres(url) => {
            crate::backend::Conn::connect_postgres(&url, "test").unwrap()
        }
    };
    assert_eq!(
        crate::schema::current_version(&mut conn).unwrap(),
        schema::SCHEMA_VERSION + 1
    );
    assert_eq!(
        conn.query("SELECT COUNT(*) FROM execs", &[]).unwrap()[0].int(0),
        Some(1)
    );
}

fn run_start(folder: &Path) -> RunStart {
    RunStart {
        name: folder.file_name().unwrap().to_string_lossy().into_owned(),
        namespace: String::new(),
        folder: folder.to_owned(),
        meta: None,
        started: 1_679_680_655.0,
        sweep: None,
    }
}

fn the_recorder_records_a_run_as_it_goes(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let folder = copy_fixture(SEDUMOJE, scratch.path());
    let mut recorder = t.open().begin_run(&run_start(&folder)).unwrap();
    // Visible from another connection at once, as a run that has not finished.
    let runs = t.open().runs().unwrap();
    assert_eq!(runs[0].status, "running");
    assert_eq!(runs[0].shown_status(), "incomplete");
    recorder
        .bench_finished(&BenchEnd {
            name: "benchio".into(),
            status: PackStatus::Done,
            exit_code: Some(0),
        })
        .unwrap();
    recorder
        .bench_finished(&BenchEnd {
            name: "needs-gpus".into(),
            status: PackStatus::Skipped,
            exit_code: None,
        })
        .unwrap();
    let mut store = recorder.finish(&RunEnd::default()).unwrap();
    let recorded = store.export_run(SEDUMOJE).unwrap();
    let packs: Vec<_> = recorded
        .iter()
        .filter(|r| r["kind"] == "pack")
        .map(|r| (r["tag"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        packs,
        [
            ("benchio.0", "done"),
            ("benchio.1", "done"),
            ("needs-gpus", "skipped")
        ]
    );
    assert_eq!(recorded[0]["status"], "done");
    // The same statistics as an import of the folder.
    let other = Target::Sqlite(tempfile::tempdir().unwrap());
    let mut imported = other.open();
    imported
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    let stats = |rows: &[serde_json::Value]| -> Vec<serde_json::Value> {
        rows.iter()
            .filter(|r| r["kind"] == "stats")
            .cloned()
            .collect()
    };
    assert_eq!(
        stats(&recorded),
        stats(&imported.export_run(SEDUMOJE).unwrap())
    );
    let metrics =
        |rows: &[serde_json::Value]| rows.iter().filter(|r| r["kind"] == "metric").count();
    assert_eq!(
        metrics(&recorded),
        metrics(&imported.export_run(SEDUMOJE).unwrap())
    );
    // One date rule (issue 53, K7): the earliest start of the run's processes, not the time the
    // recorder began (`run_start`'s), live as imported.
    let date = imported.export_run(SEDUMOJE).unwrap()[0]["created_time"].clone();
    assert_eq!(recorded[0]["created_time"], date);
    assert_ne!(
        date,
        serde_json::json!(crate::write::rfc3339(run_start(&folder).started))
    );
}

fn a_killed_run_stays_visible_as_incomplete(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let folder = scratch.path().join("killed.run");
    write_run(
        &folder,
        &system(Some("H100"), 1, 1000.0),
        &[bench("a", 100.0)],
    )
    .unwrap();
    let mut recorder = t.open().begin_run(&run_start(&folder)).unwrap();
    recorder
        .bench_finished(&BenchEnd {
            name: "a".into(),
            status: PackStatus::Done,
            exit_code: Some(0),
        })
        .unwrap();
    // Killed here: finish is never called.
    drop(recorder);
    let runs = t.open().runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].shown_status(), "incomplete");
    assert_eq!(
        runs[0].gpu_model.as_deref(),
        Some("H100"),
        "facts from the data"
    );
    assert_eq!(runs[0].score, None);
}

fn system(gpu: Option<&str>, count: usize, date: f64) -> GeneratedSystem {
    GeneratedSystem {
        gpu_model: gpu.map(str::to_owned),
        gpu_count: count,
        date,
    }
}

fn bench(name: &str, rate: f64) -> GeneratedBench {
    GeneratedBench {
        name: name.to_owned(),
        processes: vec![vec![rate; 6]],
    }
}

fn history_compares_with_the_previous_comparable_run(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let mut store = t.open();
    let day = 86_400.0;
    for (name, gpu, count, date, rate) in [
        ("r1", "NVIDIA H100 80GB", 8, 1.0 * day, 100.0),
        ("r2", "NVIDIA A100", 8, 2.0 * day, 50.0),
        ("r3", "NVIDIA H100 80GB", 4, 3.0 * day, 60.0),
        ("r4", "NVIDIA H100 80GB", 8, 4.0 * day, 110.0),
    ] {
        let folder = scratch.path().join(name);
        write_run(
            &folder,
            &system(Some(gpu), count, date),
            &[bench("resnet", rate)],
        )
        .unwrap();
        store
            .import_folder(&folder, &ImportOptions::default())
            .unwrap();
    }
    let all = store.history(&HistoryQuery::default()).unwrap();
    let runs: Vec<_> = all.iter().map(|r| r.run.as_str()).collect();
    assert_eq!(runs, ["r1", "r2", "r3", "r4"]);
    let r4 = &all[3];
    assert_eq!(
        r4.previous_run.as_deref(),
        Some("r1"),
        "same model and count"
    );
    assert!((r4.change_pct.unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(
        all[2].previous_run, None,
        "4 GPUs: nothing comparable before"
    );
    let h100 = store
        .history(&HistoryQuery {
            gpu: Some("h100".into()),
            since: Some(3.5 * day),
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(h100.len(), 1);
    assert_eq!(
        h100[0].previous_run.as_deref(),
        Some("r1"),
        "found before --since"
    );
    let none = store
        .history(&HistoryQuery {
            bench: Some("bert".into()),
            ..HistoryQuery::default()
        })
        .unwrap();
    assert!(none.is_empty());
    // LIKE's wildcards in the filter are taken literally.
    let literal = store
        .history(&HistoryQuery {
            gpu: Some("%".into()),
            ..HistoryQuery::default()
        })
        .unwrap();
    assert!(literal.is_empty());
}

/// 30 rates around `level` (±5%), shuffled by `seed`.
fn noisy(level: f64, seed: u64) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..30).map(|_| level * (0.95 + 0.1 * rng.f64())).collect()
}

fn history_judges_each_change_against_its_interval(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let mut store = t.open();
    let day = 86_400.0;
    // The same machine twice (an A/A pair), then 40% faster.
    for (name, date, level, seed) in [
        ("h1", 1.0, 100.0, 1),
        ("h2", 2.0, 100.0, 2),
        ("h3", 3.0, 140.0, 3),
    ] {
        let folder = scratch.path().join(name);
        let processes = vec![noisy(level, seed), noisy(level, seed + 10)];
        let bench = GeneratedBench {
            name: "resnet".to_owned(),
            processes,
        };
        write_run(&folder, &system(Some("H100"), 2, date * day), &[bench]).unwrap();
        store
            .import_folder(&folder, &ImportOptions::default())
            .unwrap();
    }
    let verdicts = |store: &mut Store, threshold_pct: Option<f64>| {
        store
            .history(&HistoryQuery {
                threshold_pct,
                ..HistoryQuery::default()
            })
            .unwrap()
            .into_iter()
            .map(|r| (r.verdict, r.change_ci95.is_some()))
            .collect::<Vec<_>>()
    };
    use milabench_report::Verdict;
    assert_eq!(
        verdicts(&mut store, Some(2.0)),
        [
            (None, false),
            (Some(Verdict::CannotTell), true),
            (Some(Verdict::Better), true)
        ]
    );
    // A 40% gain is within a 50% threshold.
    assert_eq!(
        verdicts(&mut store, Some(50.0))[2],
        (Some(Verdict::CannotTell), true)
    );
    // Without one, the default noise floor judges, and each verdict says which threshold.
    assert_eq!(verdicts(&mut store, None), verdicts(&mut store, Some(2.0)));
    let rows = store.history(&HistoryQuery::default()).unwrap();
    let thresholds: Vec<_> = rows.iter().map(|r| r.threshold_pct).collect();
    assert_eq!(
        thresholds,
        [
            None,
            Some(milabench_report::DEFAULT_NOISE_FLOOR_PCT),
            Some(milabench_report::DEFAULT_NOISE_FLOOR_PCT)
        ]
    );
    let ci = rows[1].change_ci95.unwrap();
    assert!(
        ci.low < 0.0 && ci.high > 0.0 && ci.high - ci.low > 0.5,
        "an A/A change interval holds 0 and has the noise's width: {ci:?}"
    );
}

fn export_gives_every_row_of_a_run(t: &Target) {
    let mut store = t.open();
    store
        .import_folder(&fixture(RIJUBIGO), &ImportOptions::default())
        .unwrap();
    let rows = store.export_run(RIJUBIGO).unwrap();
    let kinds = |k: &str| rows.iter().filter(|r| r["kind"] == k).count() as i64;
    assert_eq!(kinds("exec"), 1);
    assert_eq!(kinds("pack"), 4);
    assert_eq!(
        kinds("metric"),
        count(&mut store, "SELECT COUNT(*) FROM metrics")
    );
    assert_eq!(kinds("weight"), 1);
    let pack = rows.iter().find(|r| r["kind"] == "pack").unwrap();
    assert_eq!(pack["config"]["name"], "benchio", "JSON comes back as JSON");
    assert!(matches!(
        store.export_run("nope"),
        Err(StoreError::UnknownRun { .. })
    ));
}

/// A run of sweep `sweep` at batch size `bs`, as the sweep engine names and describes it.
fn sweep_run(sweep: &str, bs: i64, day: i64) -> milabench_config::sweep::SweepRun {
    let values = vec![("a.argv.--batch-size".to_owned(), serde_json::json!(bs))];
    milabench_config::sweep::SweepRun {
        name: format!("{sweep}-batch-size{bs}.{day}"),
        key: format!("{sweep}-batch-size{bs}.{{time}}"),
        sweep: sweep.to_owned(),
        options: Vec::new(),
        overrides: vec![format!("a.argv.--batch-size={bs}")],
        values,
    }
}

/// Writes the run folder of `run` under `root` with one benchmark `a` at `rate`, its
/// `sweep.json` beside its `.data` files.
fn write_sweep_run(
    root: &Path,
    run: &milabench_config::sweep::SweepRun,
    date: f64,
    rate: f64,
) -> PathBuf {
    let folder = root.join(&run.name);
    write_run(&folder, &system(Some("H100"), 1, date), &[bench("a", rate)]).unwrap();
    std::fs::write(
        folder.join(milabench_config::sweep::SWEEP_FILE),
        serde_json::to_string(run).unwrap(),
    )
    .unwrap();
    folder
}

fn a_sweeps_runs_stay_grouped_and_history_follows_a_point(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let mut store = t.open();
    let day = 86_400.0;
    // The sweep on two days, a run outside it in between.
    for (d, bs, rate) in [
        (1, 32, 100.0),
        (1, 64, 180.0),
        (3, 32, 110.0),
        (3, 64, 200.0),
    ] {
        let folder = write_sweep_run(
            scratch.path(),
            &sweep_run("bs", bs, d),
            d as f64 * day + bs as f64,
            rate,
        );
        store
            .import_folder(&folder, &ImportOptions::default())
            .unwrap();
    }
    let alone = scratch.path().join("alone");
    write_run(
        &alone,
        &system(Some("H100"), 1, 2.0 * day),
        &[bench("a", 150.0)],
    )
    .unwrap();
    store
        .import_folder(&alone, &ImportOptions::default())
        .unwrap();

    assert_eq!(store.sweeps().unwrap(), ["bs"]);
    let runs = store.sweep_runs("bs").unwrap();
    let listed: Vec<_> = runs
        .iter()
        .map(|r| (r.name.as_str(), r.sweep.as_ref().unwrap().shown()))
        .collect();
    assert_eq!(
        listed,
        [
            ("bs-batch-size32.1", "a.argv.--batch-size=32".to_owned()),
            ("bs-batch-size64.1", "a.argv.--batch-size=64".to_owned()),
            ("bs-batch-size32.3", "a.argv.--batch-size=32".to_owned()),
            ("bs-batch-size64.3", "a.argv.--batch-size=64".to_owned()),
        ]
    );
    assert!(store.sweep_runs("nope").unwrap().is_empty());
    let all = store.runs().unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[2].name, "alone");
    assert_eq!(all[2].sweep, None);

    // One point followed across the days: compared with itself, never with another point.
    let followed = store
        .history(&HistoryQuery {
            sweep: Some("bs".into()),
            point: vec!["a.argv.--batch-size=64".into()],
            ..HistoryQuery::default()
        })
        .unwrap();
    let rows: Vec<_> = followed
        .iter()
        .map(|r| (r.run.as_str(), r.previous_run.as_deref()))
        .collect();
    assert_eq!(
        rows,
        [
            ("bs-batch-size64.1", None),
            ("bs-batch-size64.3", Some("bs-batch-size64.1"))
        ]
    );
    assert!((followed[1].change_pct.unwrap() - 100.0 * (200.0 / 180.0 - 1.0)).abs() < 1e-9);
    // Every run: each sweep point and the run outside the sweep are compared with their own.
    let previous: Vec<_> = store
        .history(&HistoryQuery::default())
        .unwrap()
        .into_iter()
        .map(|r| (r.run, r.previous_run))
        .collect();
    assert_eq!(
        previous,
        [
            ("bs-batch-size32.1".to_owned(), None),
            ("bs-batch-size64.1".to_owned(), None),
            ("alone".to_owned(), None),
            (
                "bs-batch-size32.3".to_owned(),
                Some("bs-batch-size32.1".to_owned())
            ),
            (
                "bs-batch-size64.3".to_owned(),
                Some("bs-batch-size64.1".to_owned())
            ),
        ]
    );
    // A point no run has, another sweep: nothing.
    for query in [
        HistoryQuery {
            point: vec!["a.argv.--batch-size=16".into()],
            ..HistoryQuery::default()
        },
        HistoryQuery {
            sweep: Some("other".into()),
            ..HistoryQuery::default()
        },
    ] {
        assert!(store.history(&query).unwrap().is_empty(), "{query:?}");
    }
    // The export says it too.
    let exported = store.export_run("bs-batch-size32.3").unwrap();
    assert_eq!(exported[0]["sweep"], "bs");
    assert_eq!(
        exported[0]["sweep_point"],
        serde_json::json!(["a.argv.--batch-size=32"])
    );
}

fn the_recorder_records_the_sweep_of_a_live_run(t: &Target) {
    let scratch = tempfile::tempdir().unwrap();
    let run = sweep_run("nightly", 8, 1);
    let folder = scratch.path().join(&run.name);
    write_run(&folder, &system(None, 0, 1000.0), &[bench("a", 10.0)]).unwrap();
    let start = RunStart {
        sweep: Some(SweepPoint::of(&run)),
        ..run_start(&folder)
    };
    let recorder = t.open().begin_run(&start).unwrap();
    let runs = t.open().sweep_runs("nightly").unwrap();
    assert_eq!(runs.len(), 1, "grouped from the start");
    let mut store = recorder.finish(&RunEnd::default()).unwrap();
    let point = store.sweep_runs("nightly").unwrap()[0]
        .sweep
        .clone()
        .unwrap();
    assert_eq!(point.point, ["a.argv.--batch-size=8"]);
    // The folder imported into another store (it has no sweep.json: the live run knew).
    let other = Target::Sqlite(tempfile::tempdir().unwrap());
    let mut imported = other.open();
    imported
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    assert!(imported.sweeps().unwrap().is_empty());
    // Its sweep.json written later: importing the unchanged folder again groups it.
    std::fs::write(
        folder.join(milabench_config::sweep::SWEEP_FILE),
        serde_json::to_string(&run).unwrap(),
    )
    .unwrap();
    let again = imported
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    assert!(
        matches!(again, ImportOutcome::Unchanged { .. }),
        "{again:?}"
    );
    assert_eq!(imported.sweep_runs("nightly").unwrap().len(), 1);
}

/// A database written by the first schema (before sweeps) opens, is brought up to date, and
/// shows its runs as before: outside any sweep.
fn a_store_of_the_first_schema_is_migrated_and_reads_as_before(t: &Target) {
    let location = t.location();
    let mut conn = match &location {
        StoreLocation::Sqlite(path) => crate::backend::Conn::open_sqlite(path).unwrap(),
        StoreLocation::Postgres(url) => {
            crate::backend::Conn::connect_postgres(url, "test").unwrap()
        }
    };
    let first = &schema::MIGRATIONS[0];
    conn.batch(&first.text(conn.dialect())).unwrap();
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES ('schema_version', '1')",
        &[],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO execs (name, created_ts, status, gpu_count) VALUES ('old', 1.0, 'done', 0)",
        &[],
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&location).unwrap();
    assert_eq!(
        crate::schema::current_version(&mut store.conn).unwrap(),
        schema::SCHEMA_VERSION
    );
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].name.as_str(), runs[0].sweep.as_ref()),
        ("old", None)
    );
    let scratch = tempfile::tempdir().unwrap();
    let folder = write_sweep_run(scratch.path(), &sweep_run("bs", 32, 1), 2.0, 100.0);
    store
        .import_folder(&folder, &ImportOptions::default())
        .unwrap();
    assert_eq!(store.sweep_runs("bs").unwrap().len(), 1);
}

#[test]
fn a_server_that_is_down_is_a_clear_error() {
    // Port 1 on the loopback: nothing listens there.
    let location = StoreLocation::parse("postgres://me:secret@127.0.0.1:1/results").unwrap();
    let err = Store::open(&location).unwrap_err();
    assert!(err.is_unavailable());
    let text = err.to_string();
    assert!(text.contains("could not be reached"), "{text}");
    assert!(text.contains("me:***@127.0.0.1:1"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

#[test]
fn two_writers_take_turns_on_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Sqlite(dir.path().join(DEFAULT_FILE));
    let mut first = Store::open(&location).unwrap();
    let mut second = Store::open(&location).unwrap();
    // The first holds the write lock for a while; the second waits for it instead of failing.
    first.conn.begin_write().unwrap();
    let folder = fixture(SEDUMOJE);
    let waiter = std::thread::spawn(move || {
        second
            .import_folder(&folder, &ImportOptions::default())
            .map(|_| ())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !waiter.is_finished(),
        "the second writer waits for the lock"
    );
    first.conn.batch("COMMIT").unwrap();
    waiter.join().unwrap().unwrap();
    assert_eq!(first.runs().unwrap().len(), 1);
}

/// Issue 38, item 18: a file that is not a SQLite database was blamed on its folder ("check
/// that its folder exists and is writable"), and a refused statement was said without its cause.
#[test]
fn a_corrupt_file_and_a_refused_statement_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DEFAULT_FILE);
    let garbage = "not a database at all ".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open(&StoreLocation::Sqlite(path.clone())).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "the results database {} is not a SQLite database, or is damaged",
            path.display()
        )),
        "{message}"
    );
    assert!(message.contains("move it aside"), "{message}");
    assert!(err.is_unavailable());
    assert!(
        err.is_bad_input(),
        "--db names a file that is not a database"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        garbage,
        "untouched"
    );
    let mut store = Store::open(&StoreLocation::Sqlite(dir.path().join("good.db"))).unwrap();
    let err = store
        .conn
        .query("SELECT no_such_column FROM execs", &[])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the results database (SQLite) refused a statement"
    );
    let cause = std::error::Error::source(&err).expect("SQLite's words are the cause");
    assert!(
        cause.to_string().contains("no such column: no_such_column"),
        "{cause}"
    );
    assert!(
        !err.is_bad_input(),
        "a refused statement is not the user's input"
    );
}
