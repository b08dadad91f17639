//! Benchmarks the models of a Python script through the library API and prints one line per
//! model and runtime.
//!
//! ```text
//! cargo run -p benchit --example benchmark_script -- benchmarks/benchit/mlp.py
//! ```
//!
//! The worker is `BENCHIT_WORKER` when set, else the managed benchit environment (built on first
//! use). The cache is a scratch folder under the system's temporary folder.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use benchit::env::{EnvSettings, prepare_worker};
use benchit::models::{BenchmarkOptions, InputResult, Observer, Runtime};

/// Prints a line when a model is discovered.
struct Progress {
    seen: usize,
}

impl Observer for Progress {
    fn on_progress(&mut self, result: &InputResult) {
        for model in &result.models[self.seen..] {
            eprintln!(
                "discovered {} ({} parameters)",
                model.model.class, model.model.parameters
            );
        }
        self.seen = result.models.len();
    }

    fn on_warning(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let script = std::env::args()
        .nth(1)
        .ok_or("usage: benchmark_script SCRIPT.py")?;
    let worker = prepare_worker(&EnvSettings::from_env("cpu")?, &mut |_| {})?;
    let cache = std::env::temp_dir().join("benchit-example-cache");
    let mut options = BenchmarkOptions::new(cache.to_str().ok_or("temporary folder is not UTF-8")?);
    options.runtimes = vec![Runtime::Ort, Runtime::TorchEager];
    options.iterations = 50;
    let result = benchit::benchmark_script(&script, &options, &worker, &mut Progress { seen: 0 })?;
    for model in &result.models {
        for invocation in &model.invocations {
            let Some(build) = &invocation.build else {
                continue;
            };
            for runtime in &build.runtimes {
                match &runtime.statistics {
                    Some(s) => println!(
                        "{} {} {:<12} mean {:.4} ms, 95% CI [{:.4}, {:.4}] ms, {:.1}/s",
                        model.model.class,
                        invocation.invocation_hash,
                        runtime.runtime,
                        s.mean_ms,
                        s.ci95_low_ms,
                        s.ci95_high_ms,
                        s.throughput
                    ),
                    None => println!(
                        "{} {} {:<12} failed: {}",
                        model.model.class,
                        invocation.invocation_hash,
                        runtime.runtime,
                        runtime.message.as_deref().unwrap_or("?")
                    ),
                }
            }
        }
    }
    if let Some(failure) = &result.failure {
        eprintln!("the script failed: {}", failure.message);
    }
    Ok(())
}
