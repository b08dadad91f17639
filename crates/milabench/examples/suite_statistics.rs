//! Resolves a suite and reads a run folder's statistics as another tool would: the benchmarks
//! the suite selects, then each one's performance in the run (the numbers `milabench report`
//! prints), as JSON on stdout.
//!
//! ```sh
//! cargo run -p milabench --example suite_statistics -- SUITE.yaml RUN_FOLDER
//! ```

use milabench::results::ReportOptions;
use milabench::settings::{EnvVars, Settings, SettingsFlags};
use milabench::{Session, SessionRequest};
use serde_json::json;

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(suite), Some(run_dir)) = (args.next(), args.next()) else {
        return Err("usage: suite_statistics SUITE.yaml RUN_FOLDER".into());
    };
    let env = EnvVars::from_process();
    let flags = SettingsFlags {
        config: Some(suite.into()),
        ..SettingsFlags::default()
    };
    let cwd = camino::Utf8PathBuf::try_from(std::env::current_dir()?)?;
    let settings = Settings::load(&flags, &env)?.absolutize(&cwd);
    let session = Session::new(settings, env, SessionRequest::default())?;
    let selected: Vec<&str> = session
        .resolved()
        .suite
        .runnable()
        .map(|bench| bench.name.as_str())
        .collect();
    let (report, _) = session.report(std::path::Path::new(&run_dir), &ReportOptions::default())?;
    let rows: Vec<_> = report
        .rows
        .iter()
        .filter(|row| row.n > 0.0)
        .map(|row| json!({"bench": row.name, "perf": row.perf, "sem_pct": row.sem_pct, "n": row.n}))
        .collect();
    let summary = json!({
        "selected": selected,
        "score": report.score,
        "failure_rate": report.failure_rate,
        "benchmarks": rows,
    });
    println!("{summary:#}");
    Ok(())
}
