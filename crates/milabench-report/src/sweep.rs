//! Reports of a sweep: the runs of one suite at several settings, one point per run.
//!
//! Per benchmark: its throughput (the report's `score` column: rates summed over GPUs for
//! per-GPU plans, times the success ratio) and its peak memory at each point, the best point,
//! the speed-up against the first point (`rate / rate₁`) and the scaling efficiency
//! (`rate / (rate₁ × x / x₁)`, for a swept count of GPUs, nodes or workers: the rate over N
//! times the one-GPU rate when the first point is one GPU), each with its 95% interval. The
//! intervals of a ratio combine the relative half-widths of its two rates (independent runs).

use std::fmt::Write as _;

use milabench_html::{Cell, LinePlot, Page, Series, Table, escape, headline, section};
use milabench_stats::Interval;
use milabench_vocab::TextTable;
use serde_json::Value;

use crate::error::ReportError;
use crate::render::{csv_lines, csv_num, markdown_text};
use crate::report::{Report, ReportOptions, SuiteEntry};

/// One run of the sweep, as given: its folder and the settings it ran with (empty when it
/// recorded none).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepInput {
    /// The run folder.
    pub run: String,
    /// `(key, value)` of each setting of the run.
    pub values: Vec<(String, Value)>,
}

/// One benchmark at one point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SweepCell {
    /// The throughput (items/s), NaN when the benchmark has none there.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub rate: f64,
    /// Its 95% interval.
    pub rate_ci: Interval,
    /// Peak GPU memory, MiB (NaN without GPU samples).
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub gpu_memory_mib: f64,
    /// Peak host memory of its processes, MiB.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub host_memory_mib: f64,
    /// `rate / rate at the first point`.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub speedup: f64,
    /// Its 95% interval.
    pub speedup_ci: Interval,
    /// `speedup / (x / x at the first point)` (NaN when the swept value is not a number).
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub efficiency: f64,
    /// Its 95% interval.
    pub efficiency_ci: Interval,
}

/// One benchmark across the sweep.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SweepCurve {
    /// The benchmark.
    pub bench: String,
    /// One cell per point, in the sweep's order.
    pub cells: Vec<SweepCell>,
    /// The point of the highest rate.
    pub best: Option<usize>,
}

/// The report of a sweep.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SweepReport {
    /// The keys whose values differ between the runs (what was swept), `run` when none.
    pub axis: String,
    /// The run folders, in order.
    pub runs: Vec<String>,
    /// Each point's swept values in words (`sizer.mult=0.5`).
    pub labels: Vec<String>,
    /// Each point's swept value as a number, when one numeric key was swept; otherwise its
    /// position (1, 2, ...).
    pub x: Vec<f64>,
    /// Whether `x` holds the swept values (not positions).
    pub numeric: bool,
    /// Per benchmark, in the order of the first report.
    pub curves: Vec<SweepCurve>,
}

/// `a / b` with the interval of a ratio of two independent estimates.
fn ratio(a: f64, a_ci: &Interval, b: f64, b_ci: &Interval) -> (f64, Interval) {
    let value = a / b;
    let rel = |v: f64, ci: &Interval| {
        let h = ci.half_width() / v;
        if h.is_finite() { h } else { 0.0 }
    };
    let half = value * (rel(a, a_ci).powi(2) + rel(b, b_ci).powi(2)).sqrt();
    (value, Interval::around(value, half))
}

/// The keys whose values differ between the runs of `inputs`, in the order first met.
fn varying_keys(inputs: &[SweepInput]) -> Vec<&str> {
    let mut varying: Vec<&str> = Vec::new();
    for input in inputs {
        for (key, value) in &input.values {
            let differs = inputs.iter().any(|other| {
                other.values.iter().find(|(k, _)| k == key).map(|(_, v)| v) != Some(value)
            });
            if differs && !varying.contains(&key.as_str()) {
                varying.push(key);
            }
        }
    }
    varying
}

/// What the points are and in which order, in words: the first line of the text report.
fn description(sweep: &SweepReport) -> String {
    let runs = match sweep.runs.len() {
        1 => "1 run".to_string(),
        n => format!("{n} runs"),
    };
    if sweep.axis == "run" {
        format!(
            "Sweep over {runs}, each point named by its run folder (`run`): no setting the runs recorded differs between them"
        )
    } else if sweep.numeric {
        format!(
            "Sweep of {} over {runs}, in order of {}",
            sweep.axis, sweep.axis
        )
    } else {
        format!(
            "Sweep of {} over {runs}, in the order given (the points are ordered by value only when one numeric key varies)",
            sweep.axis
        )
    }
}

/// Builds the sweep's report from the report of each of its runs (`reports[i]` of
/// `inputs[i]`): the points in order of the swept value when one numeric key varies (a shell
/// glob gives `bs16, bs32, bs8`), else in the order given.
pub fn build_sweep(inputs: &[SweepInput], reports: &[Report]) -> SweepReport {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let varying = varying_keys(inputs);
    let value_of = |input: &SweepInput, key: &str| {
        input
            .values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let numbers: Option<Vec<f64>> = match varying.as_slice() {
        [key] => inputs
            .iter()
            .map(|input| value_of(input, key).and_then(|v| v.as_f64()))
            .collect(),
        _ => None,
    };
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    if let Some(numbers) = &numbers {
        order.sort_by(|&a, &b| numbers[a].total_cmp(&numbers[b]));
    }
    let numeric = numbers.is_some();
    let x: Vec<f64> = match &numbers {
        Some(numbers) => order.iter().map(|&i| numbers[i]).collect(),
        None => (1..=inputs.len()).map(|i| i as f64).collect(),
    };
    let inputs: Vec<&SweepInput> = order.iter().map(|&i| &inputs[i]).collect();
    let reports: Vec<&Report> = order.iter().map(|&i| &reports[i]).collect();
    let labels: Vec<String> = inputs
        .iter()
        .map(|input| {
            if varying.is_empty() {
                return input.run.clone();
            }
            varying
                .iter()
                .map(|k| {
                    format!(
                        "{k}={}",
                        value_of(input, k).as_ref().map_or("-".into(), text)
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut benches: Vec<&str> = Vec::new();
    for report in &reports {
        for row in &report.rows {
            if !benches.contains(&row.name.as_str()) {
                benches.push(&row.name);
            }
        }
    }
    let curves = benches
        .into_iter()
        .map(|bench| {
            let rows: Vec<_> = reports
                .iter()
                .map(|r| r.rows.iter().find(|row| row.name == bench))
                .collect();
            let first = rows[0];
            let (rate0, ci0) = first.map_or((f64::NAN, Interval::NAN), |r| (r.score, r.score_ci));
            let cells: Vec<SweepCell> = rows
                .iter()
                .zip(&x)
                .map(|(row, xi)| {
                    let Some(row) = row else {
                        return SweepCell {
                            rate: f64::NAN,
                            rate_ci: Interval::NAN,
                            gpu_memory_mib: f64::NAN,
                            host_memory_mib: f64::NAN,
                            speedup: f64::NAN,
                            speedup_ci: Interval::NAN,
                            efficiency: f64::NAN,
                            efficiency_ci: Interval::NAN,
                        };
                    };
                    let (speedup, speedup_ci) = ratio(row.score, &row.score_ci, rate0, &ci0);
                    let scale = xi / x[0];
                    let (efficiency, efficiency_ci) = if numeric && scale > 0.0 {
                        (
                            speedup / scale,
                            Interval {
                                low: speedup_ci.low / scale,
                                high: speedup_ci.high / scale,
                            },
                        )
                    } else {
                        (f64::NAN, Interval::NAN)
                    };
                    SweepCell {
                        rate: row.score,
                        rate_ci: row.score_ci,
                        gpu_memory_mib: row.peak_memory,
                        host_memory_mib: row.host_peak_memory,
                        speedup,
                        speedup_ci,
                        efficiency,
                        efficiency_ci,
                    }
                })
                .collect();
            let best = cells
                .iter()
                .enumerate()
                .filter(|(_, c)| c.rate.is_finite())
                .max_by(|a, b| a.1.rate.total_cmp(&b.1.rate))
                .map(|(i, _)| i);
            SweepCurve {
                bench: bench.to_string(),
                cells,
                best,
            }
        })
        .collect();
    SweepReport {
        axis: if varying.is_empty() {
            "run".into()
        } else {
            varying.join(", ")
        },
        runs: inputs.iter().map(|i| i.run.clone()).collect(),
        labels,
        x,
        numeric,
        curves,
    }
}

/// Reports each run of `inputs` (against `suite` when given) and builds the sweep's report.
pub fn report_sweep(
    inputs: &[SweepInput],
    suite: Option<&[SuiteEntry]>,
) -> Result<SweepReport, ReportError> {
    let reports = inputs
        .iter()
        .map(|input| {
            crate::report_runs(&[input.run.as_str()], suite, &ReportOptions::default())
                .map(|(report, _)| report)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(build_sweep(inputs, &reports))
}

fn fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "nan".into()
    }
}

fn with_ci(value: f64, ci: &Interval, decimals: usize) -> String {
    let half = ci.half_width();
    if half.is_finite() && value.is_finite() {
        format!("{} ± {}", fixed(value, decimals), fixed(half, decimals))
    } else {
        fixed(value, decimals)
    }
}

/// The sweep's report as text: a table per benchmark.
pub fn render_sweep_text(sweep: &SweepReport) -> String {
    let mut out = description(sweep) + "\n";
    for curve in &sweep.curves {
        let _ = writeln!(out, "\n{}", curve.bench);
        let mut table = TextTable::new([
            "point",
            "rate (items/s)",
            "GPU MiB",
            "host MiB",
            "speed-up",
            "efficiency",
        ])
        .right_aligned(1..6)
        .indented(2);
        for (i, cell) in curve.cells.iter().enumerate() {
            let best = if curve.best == Some(i) { " *" } else { "" };
            table.row([
                format!("{}{best}", sweep.labels[i]),
                with_ci(cell.rate, &cell.rate_ci, 2),
                fixed(cell.gpu_memory_mib, 0),
                fixed(cell.host_memory_mib, 0),
                with_ci(cell.speedup, &cell.speedup_ci, 2),
                with_ci(cell.efficiency, &cell.efficiency_ci, 2),
            ]);
        }
        out.push_str(&table.render());
    }
    out.push_str("\n* the best point (highest rate); ± is the half-width of the 95% interval; speed-up and efficiency are against the first point\n");
    out
}

/// The sweep's report as CSV: one row per benchmark and point, numbers at full precision,
/// empty cells for missing ones, `best` true on each benchmark's best point.
pub fn render_sweep_csv(sweep: &SweepReport) -> String {
    let header = "bench,point,x,rate,rate_ci95_low,rate_ci95_high,gpu_memory_mib,host_memory_mib,speedup,speedup_ci95_low,speedup_ci95_high,efficiency,efficiency_ci95_low,efficiency_ci95_high,best,run";
    let mut rows = vec![header.split(',').map(str::to_owned).collect::<Vec<_>>()];
    for curve in &sweep.curves {
        for (i, cell) in curve.cells.iter().enumerate() {
            rows.push(vec![
                curve.bench.clone(),
                sweep.labels[i].clone(),
                csv_num(sweep.x[i]),
                csv_num(cell.rate),
                csv_num(cell.rate_ci.low),
                csv_num(cell.rate_ci.high),
                csv_num(cell.gpu_memory_mib),
                csv_num(cell.host_memory_mib),
                csv_num(cell.speedup),
                csv_num(cell.speedup_ci.low),
                csv_num(cell.speedup_ci.high),
                csv_num(cell.efficiency),
                csv_num(cell.efficiency_ci.low),
                csv_num(cell.efficiency_ci.high),
                (curve.best == Some(i)).to_string(),
                sweep.runs[i].clone(),
            ]);
        }
    }
    csv_lines(rows)
}

/// The sweep's report as Markdown: a table per benchmark, the best point in bold.
pub fn render_sweep_markdown(sweep: &SweepReport) -> String {
    let mut out = format!(
        "# Sweep results\n\n{}; {} benchmarks; ± is the half-width of the 95% interval; speed-up and efficiency are against the first point.\n",
        markdown_text(&description(sweep)),
        sweep.curves.len()
    );
    for curve in &sweep.curves {
        let _ = writeln!(
            out,
            "\n## {}\n\n| point | rate (items/s) | GPU MiB | host MiB | speed-up | efficiency |\n|---|---:|---:|---:|---:|---:|",
            markdown_text(&curve.bench)
        );
        for (i, cell) in curve.cells.iter().enumerate() {
            let point = markdown_text(&sweep.labels[i]);
            let point = if curve.best == Some(i) {
                format!("**{point}**")
            } else {
                point
            };
            let _ = writeln!(
                out,
                "| {point} | {} | {} | {} | {} | {} |",
                with_ci(cell.rate, &cell.rate_ci, 2),
                fixed(cell.gpu_memory_mib, 0),
                fixed(cell.host_memory_mib, 0),
                with_ci(cell.speedup, &cell.speedup_ci, 2),
                with_ci(cell.efficiency, &cell.efficiency_ci, 2),
            );
        }
    }
    out
}

/// The sweep's report as JSON.
pub fn render_sweep_json(sweep: &SweepReport) -> String {
    serde_json::to_string_pretty(sweep).unwrap_or_default() + "\n"
}

/// The sweep's report as one self-contained HTML page: a table and, per benchmark, the rate
/// and the memory against the swept value.
pub fn render_sweep_html(sweep: &SweepReport) -> String {
    let mut page = Page::new("Sweep results");
    page.push(&headline(
        "Sweep results",
        &format!("{}; {} benchmarks", description(sweep), sweep.curves.len()),
        &sweep
            .labels
            .iter()
            .zip(&sweep.runs)
            .map(|(label, run)| (label.clone(), run.clone()))
            .collect::<Vec<_>>(),
    ));
    let mut table = Table::new(
        "sweep",
        &[
            ("bench", "bench"),
            ("point", "point"),
            ("rate", "rate (items/s) ± 95%"),
            ("gpu_mib", "GPU MiB"),
            ("host_mib", "host MiB"),
            ("speedup", "speed-up ± 95%"),
            ("efficiency", "efficiency ± 95%"),
        ],
    );
    for curve in &sweep.curves {
        for (i, cell) in curve.cells.iter().enumerate() {
            let mut label = sweep.labels[i].clone();
            if curve.best == Some(i) {
                label.push_str(" (best)");
            }
            table.row(
                &format!("{}-{i}", curve.bench),
                vec![
                    Cell::Text(curve.bench.clone()),
                    Cell::Text(label),
                    Cell::interval(cell.rate, cell.rate_ci.half_width(), 2),
                    Cell::number(cell.gpu_memory_mib, 0),
                    Cell::number(cell.host_memory_mib, 0),
                    Cell::interval(cell.speedup, cell.speedup_ci.half_width(), 2),
                    Cell::interval(cell.efficiency, cell.efficiency_ci.half_width(), 2),
                ],
                Vec::new(),
            );
        }
    }
    page.push(&section("points", "Points", &table.render()));
    let x_label = if sweep.numeric {
        sweep.axis.clone()
    } else {
        format!("point ({})", sweep.axis)
    };
    for curve in &sweep.curves {
        let points = |f: &dyn Fn(&crate::sweep::SweepCell) -> f64| -> Vec<(f64, f64)> {
            curve
                .cells
                .iter()
                .zip(&sweep.x)
                .map(|(c, x)| (*x, f(c)))
                .filter(|(_, y)| y.is_finite())
                .collect()
        };
        let rate = LinePlot {
            title: format!("{}: rate against {}", curve.bench, sweep.axis),
            x_label: x_label.clone(),
            y_label: "items/s".into(),
            series: vec![
                Series {
                    label: "rate".into(),
                    points: points(&|c| c.rate),
                },
                Series {
                    label: "95% low".into(),
                    points: points(&|c| c.rate_ci.low),
                },
                Series {
                    label: "95% high".into(),
                    points: points(&|c| c.rate_ci.high),
                },
            ],
            marks: Vec::new(),
        };
        let gpu = points(&|c| c.gpu_memory_mib);
        let (memory, kind) = if gpu.is_empty() {
            (points(&|c| c.host_memory_mib), "host")
        } else {
            (gpu, "GPU")
        };
        let memory = LinePlot {
            title: format!("{}: peak {kind} memory against {}", curve.bench, sweep.axis),
            x_label: x_label.clone(),
            y_label: "MiB".into(),
            series: vec![Series {
                label: format!("{kind} memory"),
                points: memory,
            }],
            marks: Vec::new(),
        };
        page.push(&section(
            &format!("bench-{}", curve.bench),
            &curve.bench,
            &format!("{}{}", rate.figure(), memory.figure()),
        ));
    }
    page.push(&section(
        "about",
        "About this page",
        &format!(
            "<p class=\"note\">{}</p>\n",
            escape("rate is the throughput that counts in the score (rates summed over GPUs for per-GPU plans, times the success ratio); speed-up is the rate over the first point's, efficiency the speed-up over the ratio of the swept values (for GPU, node or worker counts: the rate over N times the rate of one); ± is the half-width of the 95% interval.")
        ),
    ));
    page.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Enabled, ReportRow};
    use serde_json::json;

    fn report(rows: &[(&str, f64, f64)]) -> Report {
        Report {
            sources: Vec::new(),
            system: Vec::new(),
            rows: rows
                .iter()
                .map(|(name, rate, half)| ReportRow {
                    name: (*name).into(),
                    fail: 0.0,
                    n: 1.0,
                    ngpu: 1.0,
                    perf: *rate,
                    sem_pct: 0.0,
                    std_pct: 0.0,
                    peak_memory: rate * 10.0,
                    host_peak_memory: f64::NAN,
                    score: *rate,
                    weight: 1.0,
                    energy_kj: f64::NAN,
                    perf_watt: f64::NAN,
                    counter_energy_kj: f64::NAN,
                    counter_perf_per_watt: f64::NAN,
                    median_watt: None,
                    enabled: Enabled::Bool(true),
                    perf_ci: Interval::around(*rate, *half),
                    score_ci: Interval::around(*rate, *half),
                    warm_up: None,
                })
                .collect(),
            has_median_watt: false,
            has_counter_energy: false,
            failure_rate: 0.0,
            score: 0.0,
            score_ci: Interval::NAN,
            price: None,
            failed_files: 0,
            serving: Vec::new(),
        }
    }

    fn input(run: &str, gpus: u64) -> SweepInput {
        SweepInput {
            run: run.into(),
            values: vec![
                ("sizer.auto".into(), json!(1)),
                ("resnet50.num_gpus".into(), json!(gpus)),
            ],
        }
    }

    #[test]
    fn efficiency_of_a_gpu_count_sweep_with_known_rates() {
        // One GPU does 100 items/s; two do 180 (90% efficient), four 320 (80%).
        let inputs = [input("g1", 1), input("g2", 2), input("g4", 4)];
        let reports = [
            report(&[("resnet50", 100.0, 2.0)]),
            report(&[("resnet50", 180.0, 0.0)]),
            report(&[("resnet50", 320.0, 0.0)]),
        ];
        let sweep = build_sweep(&inputs, &reports);
        assert_eq!(sweep.axis, "resnet50.num_gpus");
        assert!(sweep.numeric);
        assert_eq!(sweep.x, [1.0, 2.0, 4.0]);
        assert_eq!(sweep.labels[1], "resnet50.num_gpus=2");
        let curve = &sweep.curves[0];
        assert_eq!(curve.best, Some(2));
        let eff: Vec<f64> = curve.cells.iter().map(|c| c.efficiency).collect();
        assert!((eff[0] - 1.0).abs() < 1e-12 && (eff[1] - 0.9).abs() < 1e-12);
        assert!((eff[2] - 0.8).abs() < 1e-12, "{eff:?}");
        assert!((curve.cells[2].speedup - 3.2).abs() < 1e-12);
        // The first point's ±2% carries into every ratio: 3.2 × 2% = 0.064.
        assert!((curve.cells[2].speedup_ci.half_width() - 0.064).abs() < 1e-9);
        assert!((curve.cells[2].efficiency_ci.half_width() - 0.016).abs() < 1e-9);
        let text = render_sweep_text(&sweep);
        assert!(text.contains("resnet50.num_gpus=4 *"), "{text}");
        assert!(text.contains("0.80 ± 0.02"), "{text}");
        let html = render_sweep_html(&sweep);
        assert_eq!(html.matches("<svg").count(), 2, "a rate and a memory plot");
        let csv = render_sweep_csv(&sweep);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "a header and a row per point: {csv}");
        assert!(
            lines[3].starts_with("resnet50,resnet50.num_gpus=4,4,320,")
                && lines[3].ends_with(",0.8,0.784,0.8160000000000001,true,g4"),
            "{}",
            lines[3]
        );
        let markdown = render_sweep_markdown(&sweep);
        assert!(
            markdown.contains("| **resnet50.num_gpus=4** | 320.00 ± 0.00 | 3200 |"),
            "{markdown}"
        );
    }

    #[test]
    fn points_given_out_of_order_are_ordered_by_the_swept_value() {
        // A shell glob's order: rs-batch-size16, rs-batch-size32, rs-batch-size8.
        let inputs = [input("g2", 2), input("g4", 4), input("g1", 1)];
        let reports = [
            report(&[("resnet50", 180.0, 0.0)]),
            report(&[("resnet50", 320.0, 0.0)]),
            report(&[("resnet50", 100.0, 0.0)]),
        ];
        let sweep = build_sweep(&inputs, &reports);
        assert_eq!(sweep.runs, ["g1", "g2", "g4"]);
        assert_eq!(sweep.x, [1.0, 2.0, 4.0]);
        let rates: Vec<f64> = sweep.curves[0].cells.iter().map(|c| c.rate).collect();
        assert_eq!(rates, [100.0, 180.0, 320.0]);
        assert!((sweep.curves[0].cells[2].efficiency - 0.8).abs() < 1e-12);
        assert!(render_sweep_text(&sweep).starts_with(
            "Sweep of resnet50.num_gpus over 3 runs, in order of resnet50.num_gpus\n"
        ));
    }

    #[test]
    fn one_run_without_settings_is_one_point_named_by_its_folder() {
        let inputs = [SweepInput {
            run: "base/runs/plain".into(),
            values: Vec::new(),
        }];
        let sweep = build_sweep(&inputs, &[report(&[("x", 10.0, 1.0)])]);
        assert_eq!(sweep.axis, "run");
        let text = render_sweep_text(&sweep);
        assert!(
            text.starts_with("Sweep over 1 run, each point named by its run folder (`run`): no setting the runs recorded differs between them\n"),
            "{text}"
        );
        assert!(text.contains("base/runs/plain *"), "{text}");
    }

    #[test]
    fn a_missing_benchmark_and_a_non_numeric_axis() {
        let inputs = [
            SweepInput {
                run: "a".into(),
                values: vec![("sizer.capacity".into(), json!("64Go"))],
            },
            SweepInput {
                run: "b".into(),
                values: vec![("sizer.capacity".into(), json!("All"))],
            },
        ];
        let reports = [
            report(&[("x", 10.0, 1.0), ("y", 5.0, 0.5)]),
            report(&[("x", 20.0, 1.0)]),
        ];
        let sweep = build_sweep(&inputs, &reports);
        assert!(!sweep.numeric);
        assert_eq!(sweep.x, [1.0, 2.0]);
        assert!(sweep.curves[0].cells[1].efficiency.is_nan());
        assert!((sweep.curves[0].cells[1].speedup - 2.0).abs() < 1e-12);
        assert!(sweep.curves[1].cells[1].rate.is_nan());
        assert_eq!(sweep.curves[1].best, Some(0));
        let json = render_sweep_json(&sweep);
        assert!(json.contains("\"rate\": null"), "{json}");
        assert!(
            render_sweep_text(&sweep).starts_with(
                "Sweep of sizer.capacity over 2 runs, in the order given (the points are ordered by value only when one numeric key varies)\n"
            )
        );
    }
}
