//! Runs selected benchmarks of a suite as another tool would embed milabench: a
//! [`milabench::Session`] with an observer of its own, which prints every event as one JSON
//! line on stdout (no install or prepare: the environments must exist).
//!
//! ```sh
//! cargo run -p milabench --example run_with_observer -- SUITE.yaml BASE_FOLDER [BENCH...]
//! ```

use std::time::Duration;

use milabench::config::settings::{EnvVars, Settings, SettingsFlags};
use milabench::exec::{ExecObserver, Interrupt, ProcessOutcome, ProcessSpec};
use milabench::metrics::{Event, Record};
use milabench::run::{RunEvent, RunObserver, RunOptions};
use milabench::validate::LayerName;
use milabench::{Selection, Session, SessionRequest};
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
    let folder = session.claim_run_folder(false)?;
    let options = RunOptions {
        repeat: 1,
        order: milabench::RepeatOrder::InARow,
        resume: false,
        grace: Duration::from_secs(5),
        interrupt: Interrupt::new(),
        path: std::env::var("PATH").unwrap_or_default(),
        watchdog: None,
        precision: None,
        failed_setup: Vec::new(),
    };
    let result = session.run(&folder, &options, &LayerName::DEFAULT, &mut JsonEvents)?;
    JsonEvents.emit(json!({
        "kind": "done",
        "run_dir": result.summary.run_dir,
        "success": result.success(),
        "validation_passed": result.validation.passed(),
    }));
    Ok(())
}
