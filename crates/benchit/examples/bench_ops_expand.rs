//! Measurement program for `cargo xtask bench`: checks and expands a generated `benchit ops`
//! config of 100,000 range ids (`torch.mm` over 100 x 1,000 shapes with a `__copy__`) and, as
//! the baseline measured in the same run, writes the expanded configs as JSON lines (what the
//! output file needs anyway). Medians of 7 rounds. Prints one JSON line.

#![allow(clippy::print_stdout, missing_docs)]

use std::time::{Duration, Instant};

use benchit::ops::{OpsConfig, expand};

const CONFIG: &str = r#"{"torch.mm": {
  "input_data_generator": "PyTorch:DefaultDataGenerator",
  "input_iterator": "RangeConfigIterator",
  "config": [{"input": [{"args": [
    {"type": "tensor", "dtype": "float", "shape": [[1, 100, 1], [8, 8000, 8]], "__range__": ["shape"]},
    {"type": "tensor", "dtype": "float", "shape": [-1, 64], "__copy__": [{"shape": [0, [0, 1]]}]}
  ]}]}]}}"#;

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let rounds = 7;
    let mut ids = 0;
    let mut expanded = Vec::new();
    let mut written = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let config = OpsConfig::parse(CONFIG, "bench.json").expect("the generated config is valid");
        let runs: Vec<_> = expand(&config).collect();
        expanded.push(start.elapsed());
        ids = runs.len();
        assert!(runs.iter().all(|r| r.spec.is_ok()));
        let start = Instant::now();
        let mut text = String::new();
        for run in &runs {
            text.push_str(&run.config.to_string());
            text.push('\n');
        }
        std::hint::black_box(text);
        written.push(start.elapsed());
    }
    assert_eq!(ids, 100_000);
    let value = median(expanded);
    println!(
        "{}",
        serde_json::json!({
            "name": "ops: expand a 100k-id range config",
            "ids": ids,
            "value_ms": value,
            "ids_per_second": ids as f64 / (value / 1e3),
            "baseline": "writing the expanded configs as JSON lines",
            "baseline_ms": median(written),
        })
    );
}
