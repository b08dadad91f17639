//! Runs selected benchmarks of a suite as another tool would embed milabench: a
//! [`milabench::Session`] executes what `milabench run` does (preflight, install, prepare,
//! run, report) with an observer of its own, which prints every event as one JSON line on
//! stdout.
//!
//! ```sh
//! cargo run -p milabench --example run_with_observer -- SUITE.yaml BASE_FOLDER [BENCH...]
//! ```

use milabench::observe::{Event, ExecObserver, ProcessOutcome, ProcessSpec, Record};
use milabench::observe::{RunEvent, RunObserver};
use milabench::settings::{EnvVars, Settings, SettingsFlags};
use milabench::{ExitCode, RunRequest, Selection, Session, SessionRequest};
use serde_json::json;

/// Prints each event as a JSON line.
struct JsonEvents;

impl JsonEvents {
    #[allow(clippy::print_stdout)]
    fn emit(&self, value: serde_json::Value) {
        println!("{value}");
    }
}

impl ExecObserver for JsonEvents {
    fn on_start(&mut self, tag: &str, spec: &ProcessSpec) {
        self.emit(json!({"kind": "start", "tag": tag, "argv": spec.argv}));
    }

    fn on_record(&mut self, tag: &str, record: &Record) {
        if let Event::Data(data) = &record.event
            && let Some(rate) = data.rate
        {
            self.emit(json!({"kind": "rate", "tag": tag, "rate": rate}));
        }
    }

    fn on_end(&mut self, outcome: &ProcessOutcome) {
        self.emit(json!({"kind": "end", "tag": outcome.tag, "success": outcome.success()}));
    }
}

impl RunObserver for JsonEvents {
    fn on_run_event(&mut self, event: RunEvent<'_>) {
        match event {
            RunEvent::Phase(phase) => {
                self.emit(json!({"kind": "phase", "phase": format!("{phase:?}")}));
            }
            RunEvent::BenchStart { plan } => {
                self.emit(json!({"kind": "bench_start", "bench": plan.bench}));
            }
            RunEvent::BenchEnd { outcome } => {
                self.emit(json!({"kind": "bench_end", "bench": outcome.bench,
                                 "success": outcome.success()}));
            }
            _ => {}
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(suite), Some(base)) = (args.next(), args.next()) else {
        return Err("usage: run_with_observer SUITE.yaml BASE_FOLDER [BENCH...]".into());
    };
    let env = EnvVars::from_process();
    let flags = SettingsFlags {
        config: Some(suite.into()),
        base: Some(base.into()),
        ..SettingsFlags::default()
    };
    let cwd = camino::Utf8PathBuf::try_from(std::env::current_dir()?)?;
    let settings = Settings::load(&flags, &env)?.absolutize(&cwd);
    let request = SessionRequest {
        selection: Selection {
            select: args.collect(),
            ..Selection::default()
        },
        ..SessionRequest::default()
    };
    let session = Session::new(settings, env, request)?;
    // What `milabench run` does: preflight, install, prepare, run, report.
    let result = session.execute(&RunRequest::default(), &mut JsonEvents)?;
    JsonEvents.emit(json!({
        "kind": "done",
        "run_dir": result.run_dir,
        "exit_code": result.exit_code().code(),
        "success": result.exit_code() == ExitCode::Success,
        "score": result.report.as_ref().map(|r| r.report.score),
    }));
    Ok(())
}
