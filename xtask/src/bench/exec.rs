//! Process supervision costs: harness overhead on a CPU-bound benchmark's rate, orchestrator
//! CPU while it runs, and extra time to the child's first statement; measured by the release
//! build of `milabench-exec`'s `bench_exec` example against bare spawns of the same Python
//! script, alternated in the same run.
//!
//! The overhead is a paired, interleaved comparison: every round runs the script bare, bare
//! again, bare with the data channel piped, and under `run_plan`, in an order that rotates every
//! round; each round's ratios against its own bare run share the machine's state of the moment.
//! Their geometric means and 95% intervals are printed side by side with the A/A ratio (bare
//! again / bare), the noise floor of the same protocol: a harness ratio inside the A/A spread
//! cannot be told from noise.

use anyhow::{Context, bail};
use serde_json::Value;

use super::geometric_mean_interval;

/// The least rate under the harness, as a share of the bare rate.
const TARGET: f64 = 0.995;

/// Runs the measurement with `rounds` overhead rounds and prints its lines of the table; with
/// `dash`, also the same figure with the dashboard of `run --dash` observing.
pub fn run(rounds: usize, dash: bool) -> anyhow::Result<()> {
    let dash_rounds = dash.then_some(rounds);
    eprintln!(
        "==> bench: exec (building the release measurement program; about {} s of runs)",
        rounds * 4 + 20
    );
    let text = super::release_example_output(
        "milabench-exec",
        "bench_exec",
        &[rounds.to_string()],
        "exec",
    )?;
    let mut rounds = Vec::new();
    for line in text.lines() {
        let f: Value = serde_json::from_str(line).context("measurement output is not JSON")?;
        let num = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        match f["figure"].as_str() {
            Some("overhead_round") => rounds.push(f["rates"].clone()),
            Some("cpu") => {
                print_overhead(&rounds);
                println!(
                    "{:<40} {:.3}% of a core ({:.1} ms CPU over {:.1} s; 1 s runs: {:.3}%; Python milabench: 100%)  target < 1%: {}",
                    "exec: orchestrator CPU while running",
                    num("percent_of_core"),
                    num("cpu_ms"),
                    num("wall_ms") / 1e3,
                    num("short_runs_percent"),
                    met(num("percent_of_core") < 1.0)
                );
            }
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
    if let Some(rounds) = dash_rounds {
        run_dash(rounds)?;
    }
    Ok(())
}

/// The harness overhead with the dashboard observing (`dash`) beside the same harness without
/// it (`exec`), both against bare runs, from milabench-cli's `bench_dash` example.
fn run_dash(rounds: usize) -> anyhow::Result<()> {
    eprintln!(
        "==> bench: exec with the dashboard (building the release CLI; about {} s of runs)",
        rounds * 4 + 15
    );
    let text = super::release_example_output(
        "milabench-cli",
        "bench_dash",
        &[rounds.to_string()],
        "dashboard",
    )?;
    let mut rounds = Vec::new();
    for line in text.lines() {
        let f: Value = serde_json::from_str(line).context("measurement output is not JSON")?;
        match f["figure"].as_str() {
            Some("overhead_round") => rounds.push(f["rates"].clone()),
            Some("cpu") => {
                let ratio = |way: &str, over: &str, clock: &str| -> String {
                    let ratios: Vec<f64> = rounds
                        .iter()
                        .filter_map(|r| Some(r[way][clock].as_f64()? / r[over][clock].as_f64()?))
                        .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
                        .collect();
                    if ratios.is_empty() {
                        return "none".to_owned();
                    }
                    let (mean, low, high) = geometric_mean_interval(&ratios);
                    format!("{mean:.3} ({low:.3}..{high:.3})")
                };
                for (clock, label) in [
                    ("wall", "exec: harness overhead with --dash"),
                    ("cpu", "exec: same, child's rate per CPU second"),
                ] {
                    println!(
                        "{label:<40} ratio {}  without it {}  dash / exec {}  A/A floor {}  ({} interleaved rounds, geometric means, 95% intervals)",
                        ratio("dash", "bare", clock),
                        ratio("exec", "bare", clock),
                        ratio("dash", "exec", clock),
                        ratio("again", "bare", clock),
                        rounds.len()
                    );
                }
                println!(
                    "{:<40} {:.3}% of a core with the dashboard, {:.3}% without (6 s runs)",
                    "exec: orchestrator CPU with --dash",
                    f["dash_percent_of_core"].as_f64().unwrap_or(f64::NAN),
                    f["exec_percent_of_core"].as_f64().unwrap_or(f64::NAN),
                );
            }
            _ => bail!("unknown figure in the dashboard measurement: {line}"),
        }
    }
    Ok(())
}

/// The overhead lines: for the rate over wall time and over the child's CPU time, the harness
/// ratio (exec / bare), the piped-channel ratio (piped / bare) and the A/A floor (again / bare),
/// each a geometric mean over the rounds with its 95% interval.
fn print_overhead(rounds: &[Value]) {
    for (clock, label) in [
        ("wall", "exec: harness overhead (rate / bare)"),
        ("cpu", "exec: same, child's rate per CPU second"),
    ] {
        let ratios = |way: &str| -> Vec<f64> {
            rounds
                .iter()
                .filter_map(|r| Some(r[way][clock].as_f64()? / r["bare"][clock].as_f64()?))
                .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
                .collect()
        };
        let shown = |ratios: &[f64]| {
            if ratios.is_empty() {
                return ("none".to_owned(), f64::NAN, f64::NAN);
            }
            let (mean, low, high) = geometric_mean_interval(ratios);
            (format!("{mean:.3} ({low:.3}..{high:.3})"), mean, high)
        };
        let (exec, mean, high) = shown(&ratios("exec"));
        let (piped, _, _) = shown(&ratios("piped"));
        let (floor, _, _) = shown(&ratios("again"));
        let verdict = if mean >= TARGET {
            "met"
        } else if high >= TARGET {
            "cannot tell: the interval reaches it"
        } else {
            "NOT met"
        };
        println!(
            "{label:<40} ratio {exec}  piped channel only {piped}  A/A floor {floor}  ({} interleaved rounds, geometric means, 95% intervals)  target >= {TARGET}: {verdict}",
            rounds.len()
        );
    }
}
