//! Process supervision costs: harness overhead on a CPU-bound benchmark's rate, orchestrator
//! CPU while it runs, and extra time to the child's first statement; measured by the release
//! build of `milabench-exec`'s `bench_exec` example against bare spawns of the same Python
//! script, alternated in the same run.

use anyhow::{Context, bail};
use serde_json::Value;

/// Runs the measurement and prints its lines of the table.
pub fn run() -> anyhow::Result<()> {
    eprintln!("==> bench: exec (building the release measurement program; about 40 s of runs)");
    let text = super::release_example_output("milabench-exec", "bench_exec", &[], "exec")?;
    for line in text.lines() {
        let f: Value = serde_json::from_str(line).context("measurement output is not JSON")?;
        let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        match f["figure"].as_str() {
            Some("overhead") => println!(
                "{:<40} ratio {:.4} (best of {} runs each; median of paired ratios {:.4}); rate {:.3e} vs bare {:.3e} items/s  target >= 0.995: {}",
                "exec: harness overhead (rate / bare)",
                num("ratio_best"),
                f["runs"],
                num("ratio_median"),
                num("exec_rate"),
                num("bare_rate"),
                met(num("ratio_best") >= 0.995)
            ),
            Some("cpu") => println!(
                "{:<40} {:.3}% of a core ({:.1} ms CPU over {:.1} s; 1 s runs: {:.3}%; Python milabench: 100%)  target < 1%: {}",
                "exec: orchestrator CPU while running",
                num("percent_of_core"),
                num("cpu_ms"),
                num("wall_ms") / 1e3,
                num("short_runs_percent"),
                met(num("percent_of_core") < 1.0)
            ),
            Some("startup") => println!(
                "{:<40} {:+.2} ms over bare spawn ({:.2} ms vs {:.2} ms, medians)  target < 50 ms: {}",
                "exec: time to child's first statement",
                num("extra_ms"),
                num("exec_ms"),
                num("bare_ms"),
                met(num("extra_ms") < 50.0)
            ),
            _ => bail!("unknown figure in the exec measurement: {line}"),
        }
    }
    Ok(())
}
