//! Suite resolution speed: a generated 500-benchmark suite (includes, inheritance chains, a
//! matrix), resolved by the release build of `milabench-config`'s `bench_resolve` example;
//! baseline: parsing the same YAML files, in the same process.

use anyhow::Context;

/// Runs the measurement and prints its line of the table.
pub fn run() -> anyhow::Result<()> {
    eprintln!("==> bench: resolve (building the release measurement program)");
    let line = super::release_example_output("milabench-config", "bench_resolve", &[], "resolve")?;
    let figure: serde_json::Value =
        serde_json::from_str(line.trim()).context("measurement output is not JSON")?;
    let value = figure["value_ms"].as_f64().unwrap_or(f64::NAN);
    let baseline = figure["baseline_ms"].as_f64().unwrap_or(f64::NAN);
    let target = figure["target_ms"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<40} {:>9.2} ms  baseline ({}) {:>7.2} ms  ratio {:>5.2}x  target < {} ms: {}",
        figure["name"].as_str().unwrap_or("resolve"),
        value,
        figure["baseline"].as_str().unwrap_or("?"),
        baseline,
        value / baseline,
        target,
        if value < target { "met" } else { "NOT met" }
    );
    Ok(())
}
