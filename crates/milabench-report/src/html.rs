//! The HTML renderings: one self-contained page for a report (headline, the table with the
//! report's own numbers, the serving table, plots per benchmark (for serving benchmarks their
//! latency distributions and, for a sweep of rates, throughput against the offered rate),
//! failures, validation) and one for a comparison.
//! The page pieces come from `milabench-html`; the numbers from [`Report`] and
//! [`Comparison`], never recomputed here.

pub use milabench_vocab::run_files::{REPORT_PAGE, REPORT_TEXT, VALIDATION_FILE};
use std::fmt::Write as _;
use std::path::Path;

use milabench_html::{Cell, LinePlot, MAX_POINTS, Page, Series, Table, VerticalMark, details};
use milabench_html::{cdf, escape, headline, section};
use serde_json::Value;

use crate::compare::{Comparison, Verdict, threshold_line};
use crate::error::ReportError;
use crate::ingest::{RunFile, RunSet};
use crate::pyfmt::percent;
use crate::render::warm_up_notes;
use crate::report::{Report, ReportRow, python_str};
use crate::serving::{
    SERVING_COLUMNS, SERVING_NOTE, ServingRow, SloVerdict, StepLatencies, StepSummary, read_serving,
};
use crate::timeline::{GpuSeries, STDERR_TAIL, Timeline, read_timeline};

/// How the page says its plots were thinned.
fn downsampling_note() -> String {
    format!(
        "Plots: a series longer than {MAX_POINTS} points is cut into {} runs of consecutive points of equal count, and each run keeps its lowest and its highest point, so dips and peaks stay visible. The table's numbers use every measurement.",
        MAX_POINTS / 2
    )
}

/// The report as one self-contained HTML page. Reads each process's `.data` file of `runs`
/// once more for the time lines of the plots (the numbers are `report`'s), those of serving
/// benchmarks once more again for their requests' latencies, and each run folder's
/// `validation.txt`.
pub fn render_html(report: &Report, runs: &RunSet) -> Result<String, ReportError> {
    let timelines: Vec<Timeline> = runs
        .runs
        .iter()
        .map(read_timeline)
        .collect::<Result<_, _>>()?;
    let latencies: Vec<Vec<StepLatencies>> = report
        .serving
        .iter()
        .map(|row| Ok(read_serving(&row.path)?.map_or_else(Vec::new, |(_, l)| l)))
        .collect::<Result<_, ReportError>>()?;
    let mut page = Page::new("Benchmark results");
    page.push(&report_headline(report, runs));
    if let Some(problem) = report.score_problem() {
        page.push(&format!("<p class=\"fail\">{}</p>", escape(&problem)));
    }
    page.push(&section(
        "benchmarks",
        "Benchmarks",
        &benchmark_table(report),
    ));
    if !report.serving.is_empty() {
        page.push(&section("serving", "Serving", &serving_table(report)));
    }
    for row in &report.rows {
        let own: Vec<(&RunFile, &Timeline)> = runs
            .runs
            .iter()
            .zip(&timelines)
            .filter(|(_, t)| t.bench == row.name)
            .collect();
        let serving: Vec<ServingPart> = report
            .serving
            .iter()
            .zip(&latencies)
            .filter(|(serving, _)| serving.bench == row.name)
            .map(|(row, latencies)| ServingPart { row, latencies })
            .collect();
        page.push(&section(
            &format!("bench-{}", row.name),
            &row.name,
            &benchmark_block(row, &own, &serving),
        ));
    }
    let validation = validation_block(&report.sources);
    if !validation.is_empty() {
        page.push(&section("validation", "Validation", &validation));
    }
    let warnings: Vec<String> = runs.warnings();
    if !warnings.is_empty() {
        page.push(&section(
            "warnings",
            "Warnings",
            &details(
                "What the report left out or counted as failed",
                &warnings.join("\n"),
            ),
        ));
    }
    page.push(&section(
        "about",
        "About this page",
        &format!(
            "<p class=\"note\">{}</p>\n<p class=\"note\">{}</p>\n",
            escape(&downsampling_note()),
            escape("Numbers are those of `milabench report` (text and JSON): perf is the mean training rate, score the throughput that counts (per-GPU sums for per-GPU plans, times the success ratio); ± is the half-width of the 95% interval (batch means). A benchmark's share is its weight × ln(1 + score) over the sum of all enabled rows: its part of the suite score's logarithm.")
        ),
    ));
    Ok(page.finish())
}

/// Whether `v` holds nothing: null, an empty string, list or object.
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The first non-empty `meta` of the runs.
fn first_meta(runs: &RunSet) -> Option<&Value> {
    runs.runs
        .iter()
        .filter_map(|r| r.meta.as_ref())
        .find(|m| m.as_object().is_some_and(|o| !o.is_empty()))
}

fn report_headline(report: &Report, runs: &RunSet) -> String {
    let verdict = if report.passes() { "PASS" } else { "FAIL" };
    let half = report.score_ci.half_width();
    let detail = if half.is_nan() {
        "(no interval)".to_owned()
    } else {
        format!("± {half:.2} (95%)")
    };
    let system = |key: &str| {
        report
            .system
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| python_str(v))
    };
    let meta = first_meta(runs);
    let text = |v: Option<&Value>| v.filter(|v| !v.is_null()).map(python_str);
    let not_recorded = || "not recorded".to_owned();
    let gpus = match (system("product"), system("n_gpu")) {
        (Some(product), Some(n)) if n != "0" => format!("{product} × {n}"),
        (_, Some(_)) => "none".to_owned(),
        _ => not_recorded(),
    };
    let driver = meta
        .and_then(|m| m.pointer("/accelerators/system"))
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .map(|m| {
            // Empty entries (a real L40S run's `HIC_VERSION: []`) say nothing.
            m.iter()
                .filter(|(_, v)| !is_empty_value(v))
                .map(|(k, v)| format!("{k} {}", python_str(v)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|text| !text.is_empty());
    let cpu = match (system("cpu"), system("n_cpu")) {
        (Some(cpu), Some(n)) => format!("{cpu} × {n}"),
        _ => not_recorded(),
    };
    let date = meta
        .and_then(|m| m.get("date"))
        .and_then(Value::as_f64)
        .and_then(|secs| jiff::Timestamp::from_second(secs as i64).ok())
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string());
    let facts = vec![
        (
            "Failure rate".to_owned(),
            format!("{} ({verdict})", percent(report.failure_rate, 0, 2)),
        ),
        (
            "Failed processes".to_owned(),
            report.failed_files.to_string(),
        ),
        ("GPUs".to_owned(), gpus),
        ("Driver".to_owned(), driver.unwrap_or_else(not_recorded)),
        (
            "torch".to_owned(),
            text(meta.and_then(|m| m.pointer("/pytorch/torch"))).unwrap_or_else(not_recorded),
        ),
        ("CPU".to_owned(), cpu),
        ("Date".to_owned(), date.unwrap_or_else(not_recorded)),
        ("Runs".to_owned(), report.sources.join(", ")),
    ];
    let mut out = headline(&format!("Score {:.2}", report.score), &detail, &facts);
    let _ = writeln!(
        out,
        "<p class=\"{}\" id=\"verdict\">{verdict}: failure rate {} (the gate is 1%)</p>",
        verdict.to_ascii_lowercase(),
        percent(report.failure_rate, 0, 2)
    );
    out
}

/// Each row's part of the score's logarithm: `w·ln(1 + score)` over the sum (NaN scores count
/// as 0, disabled rows as nothing).
fn shares(report: &Report) -> Vec<f64> {
    let parts: Vec<f64> = report
        .rows
        .iter()
        .map(|r| {
            let s = if r.score.is_nan() { 0.0 } else { r.score };
            if r.enabled.is_on() {
                r.weight * (1.0 + s).ln()
            } else {
                0.0
            }
        })
        .collect();
    let total: f64 = parts.iter().sum();
    parts
        .into_iter()
        .map(|p| if total > 0.0 { p / total } else { f64::NAN })
        .collect()
}

fn benchmark_table(report: &Report) -> String {
    let mut columns = vec![
        ("name", "bench"),
        ("fail", "fail"),
        ("n", "n"),
        ("ngpu", "ngpu"),
        ("perf", "perf ± 95%"),
        ("std%", "std%"),
        ("score", "score ± 95%"),
        ("share", "share of score"),
        ("weight", "weight"),
        ("peak_memory", "peak GPU MiB"),
        ("host_peak_memory", "peak host MiB"),
        ("energy_kj", "energy kJ"),
        ("perf_watt", "perf/kJ"),
    ];
    if report.has_median_watt {
        columns.push(("median_watt", "median W"));
    }
    if report.has_counter_energy {
        columns.push(("counter_energy_kj", "counter kJ"));
        columns.push(("counter_perf_per_watt", "perf/W (counter)"));
    }
    columns.push(("enabled", "enabled"));
    let mut table = Table::new("results", &columns);
    for (row, share) in report.rows.iter().zip(shares(report)) {
        let mut cells = vec![
            Cell::Text(row.name.clone()),
            Cell::number(row.fail, 0),
            Cell::number(row.n, 0),
            Cell::number(row.ngpu, 0),
            Cell::interval(row.perf, row.perf_ci.half_width(), 2),
            Cell::Number {
                value: row.std_pct,
                shown: percent(row.std_pct, 0, 1),
            },
            Cell::interval(row.score, row.score_ci.half_width(), 2),
            Cell::Bar(share),
            Cell::number(row.weight, 2),
            Cell::number(row.peak_memory, 0),
            Cell::number(row.host_peak_memory, 0),
            Cell::number(row.energy_kj, 3),
            Cell::number(row.perf_watt, 3),
        ];
        if report.has_median_watt {
            cells.push(Cell::number(row.median_watt.unwrap_or(f64::NAN), 3));
        }
        if report.has_counter_energy {
            cells.push(Cell::number(row.counter_energy_kj, 3));
            cells.push(Cell::number(row.counter_perf_per_watt, 3));
        }
        cells.push(Cell::Text(row.enabled.python_str()));
        let classes = if row.fail > 0.0 {
            vec!["failed"]
        } else {
            vec![]
        };
        table.row(&row.name, cells, classes);
    }
    let mut out = table.render();
    for note in warm_up_notes(report) {
        let _ = writeln!(out, "<p class=\"note\">Warm-up: {}</p>", escape(&note));
    }
    out
}

/// A benchmark's plots (with those of its serving processes), the steps of its sweeps of
/// rates, and its failure notes.
fn benchmark_block(
    row: &ReportRow,
    own: &[(&RunFile, &Timeline)],
    serving: &[ServingPart],
) -> String {
    if own.is_empty() {
        return "<p class=\"note\">No data: the benchmark did not run.</p>\n".to_owned();
    }
    let mut plots = vec![rate_plot(row, own)];
    let mut gpus: indexmap::IndexMap<&str, &GpuSeries> = indexmap::IndexMap::new();
    for (_, t) in own {
        for (id, series) in &t.gpus {
            gpus.entry(id.as_str()).or_insert(series);
        }
    }
    let marks = early_stops(own);
    if !gpus.is_empty() {
        let by_gpu = |pick: fn(&GpuSeries) -> &Vec<(f64, f64)>, title: &str, unit: &str| LinePlot {
            title: format!("{}: {title}", row.name),
            x_label: "seconds since the start".into(),
            y_label: unit.into(),
            series: gpus
                .iter()
                .map(|(id, s)| Series {
                    label: format!("gpu {id}"),
                    points: pick(s).clone(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
            marks: marks.clone(),
        };
        plots.push(by_gpu(|s| &s.load, "GPU load", "%"));
        plots.push(by_gpu(|s| &s.memory, "GPU memory", "MiB"));
        plots.push(by_gpu(|s| &s.power, "GPU power", "W"));
        plots.retain(|p| !p.series.is_empty() || p.title.ends_with("rate"));
    } else {
        // The process tree's samples and the machine's are taken at the same instants but are
        // two quantities: a series each, never one line through both.
        type Pick = fn(&Timeline) -> &Vec<(f64, f64)>;
        let by_process = |process: Pick, machine: Pick, title: &str, unit: &str| LinePlot {
            title: format!("{}: {title} (no timed GPU readings)", row.name),
            x_label: "seconds since the start".into(),
            y_label: unit.into(),
            series: own
                .iter()
                .flat_map(|(_, t)| {
                    [
                        Series {
                            label: format!("{}: process tree", t.tag),
                            points: process(t).clone(),
                        },
                        Series {
                            label: format!("{}: machine", t.tag),
                            points: machine(t).clone(),
                        },
                    ]
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
            marks: marks.clone(),
        };
        for plot in [
            by_process(|t| &t.process_load, |t| &t.machine_load, "CPU load", "%"),
            by_process(
                |t| &t.process_memory,
                |t| &t.machine_memory,
                "memory",
                "MiB",
            ),
        ] {
            if !plot.series.is_empty() {
                plots.push(plot);
            }
        }
    }
    plots.extend(serving.iter().flat_map(serving_plots));
    let mut out = String::from("<div class=\"plots\">\n");
    for plot in &plots {
        out.push_str(&plot.figure());
    }
    out.push_str("</div>\n");
    for part in serving.iter().filter(|p| p.row.run.sweep) {
        out.push_str(&sweep_steps_table(part));
    }
    if own.iter().any(|(_, t)| t.stopped_early) {
        out.push_str("<p class=\"note\">Stopped early on purpose (the dashed line): the run counts as a success.</p>\n");
    }
    for (run, t) in own.iter().filter(|(run, _)| !run.success) {
        out.push_str(&failure_note(run, t));
    }
    out
}

/// The rate of each process over time (over observations where the rates carry no time).
fn rate_plot(row: &ReportRow, own: &[(&RunFile, &Timeline)]) -> LinePlot {
    let timed = own
        .iter()
        .all(|(_, t)| t.rates.iter().all(|(at, _)| at.is_some()));
    let series = own
        .iter()
        .map(|(_, t)| Series {
            label: t.tag.clone(),
            points: t
                .rates
                .iter()
                .enumerate()
                .map(|(i, (at, rate))| (if timed { at.unwrap_or(0.0) } else { i as f64 }, *rate))
                .collect(),
        })
        .collect();
    LinePlot {
        title: format!("{}: rate", row.name),
        x_label: if timed {
            "seconds since the start".into()
        } else {
            "observation".into()
        },
        y_label: "items/s".into(),
        series,
        marks: if timed { early_stops(own) } else { Vec::new() },
    }
}

/// The serving table: the numbers of the text and JSON reports' `serving` rows.
fn serving_table(report: &Report) -> String {
    let mut table = serving_columns_table("serving", "bench");
    for row in &report.serving {
        let verdict = row.run.verdict();
        let failed = row.step.failed > 0 || verdict == SloVerdict::NotHeld;
        table.row(
            &row.name,
            serving_cells(row.name.clone(), row.run.scenario(), &row.step, verdict),
            if failed { vec!["failed"] } else { Vec::new() },
        );
    }
    format!(
        "{}<p class=\"note\">{}</p>\n",
        table.render(),
        escape(&SERVING_NOTE.join(" "))
    )
}

/// A table with the serving table's columns, its first one headed `first`.
fn serving_columns_table(id: &str, first: &str) -> Table {
    let mut columns = vec![("name", first), ("scenario", "scenario")];
    columns.extend(SERVING_COLUMNS.iter().map(|c| (c.header, c.label)));
    columns.push(("slo", "SLO"));
    Table::new(id, &columns)
}

/// The cells of a row of the serving table: its name, its scenario, `step`'s numbers (exact
/// values, shown as in the text report) and the verdict.
fn serving_cells(
    name: String,
    scenario: String,
    step: &StepSummary,
    verdict: SloVerdict,
) -> Vec<Cell> {
    let mut cells = vec![Cell::Text(name), Cell::Text(scenario)];
    cells.extend(SERVING_COLUMNS.iter().map(|c| Cell::Number {
        value: (c.value)(step),
        shown: c.text(step),
    }));
    cells.push(Cell::Text(verdict.as_str().to_owned()));
    cells
}

/// A process of a serving benchmark, for its plots: its row of the serving table and its
/// steps' latencies.
struct ServingPart<'r> {
    row: &'r ServingRow,
    latencies: &'r [StepLatencies],
}

/// The plots of a serving process: the distributions of its TTFT and TPOT (one line per step),
/// and for a sweep its throughput against the offered rate, the rate where it broke marked.
fn serving_plots(part: &ServingPart) -> Vec<LinePlot> {
    let name = &part.row.name;
    let run = &part.row.run;
    let distribution = |pick: fn(&StepLatencies) -> &Vec<f64>, what: &str| LinePlot {
        title: format!("{name}: {what} distribution"),
        x_label: "ms".into(),
        y_label: "share of requests at or below".into(),
        series: run
            .steps
            .iter()
            .zip(part.latencies)
            .map(|(step, latencies)| Series {
                label: step.scenario.label(),
                points: cdf(pick(latencies))
                    .into_iter()
                    .map(|(seconds, share)| (seconds * 1e3, share))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect(),
        marks: Vec::new(),
    };
    let mut plots = vec![
        distribution(|l| &l.ttft, "time to first token from the scheduled send"),
        distribution(|l| &l.tpot, "time per output token"),
    ];
    plots.retain(|p| !p.series.is_empty());
    if !run.sweep {
        return plots;
    }
    let has_slo = run.steps.iter().any(StepSummary::has_slo);
    let marks: Vec<VerticalMark> = run
        .break_rate()
        .map(|x| VerticalMark {
            x,
            label: if has_slo {
                "SLO broken"
            } else {
                "did not hold"
            }
            .into(),
        })
        .into_iter()
        .collect();
    let against_rate = |label: &str, pick: &dyn Fn(&StepSummary) -> Option<f64>| Series {
        label: label.into(),
        points: run
            .steps
            .iter()
            .filter_map(|s| Some((s.scenario.rate()?, pick(s)?)))
            .filter(|(_, y)| y.is_finite())
            .collect(),
    };
    let mut requests = vec![
        against_rate("achieved", &|s| Some(s.request_throughput)),
        against_rate("offered", &|s| s.scenario.rate()),
    ];
    if has_slo {
        requests.push(against_rate("goodput", &|s| s.goodput));
    }
    plots.push(LinePlot {
        title: format!("{name}: requests/s against the offered rate"),
        x_label: "offered requests/s".into(),
        y_label: "requests/s".into(),
        series: requests,
        marks: marks.clone(),
    });
    plots.push(LinePlot {
        title: format!("{name}: output tokens/s against the offered rate"),
        x_label: "offered requests/s".into(),
        y_label: "tokens/s".into(),
        series: vec![against_rate("output tokens/s", &|s| {
            Some(s.output_throughput)
        })],
        marks,
    });
    plots
}

/// Each step of a sweep of rates with the serving table's numbers.
fn sweep_steps_table(part: &ServingPart) -> String {
    let name = &part.row.name;
    let mut table = serving_columns_table(&format!("steps-{name}"), "step");
    for (i, step) in part.row.run.steps.iter().enumerate() {
        let verdict = step.verdict();
        let failed = step.failed > 0 || verdict == SloVerdict::NotHeld;
        let number = (i + 1).to_string();
        table.row(
            &number,
            serving_cells(number.clone(), step.scenario.label(), step, verdict),
            if failed { vec!["failed"] } else { Vec::new() },
        );
    }
    format!(
        "<h3>{}: the steps of the sweep</h3>\n{}",
        escape(name),
        table.render()
    )
}

fn early_stops(own: &[(&RunFile, &Timeline)]) -> Vec<VerticalMark> {
    own.iter()
        .filter_map(|(_, t)| t.early_stop)
        .map(|x| VerticalMark {
            x,
            label: "early stop".into(),
        })
        .collect()
}

fn failure_note(run: &RunFile, t: &Timeline) -> String {
    let mut text = format!(
        "exit code: {}\n",
        t.return_code
            .as_deref()
            .unwrap_or("none (the process did not finish)")
    );
    for line in run.faults.iter().chain(&t.errors) {
        let _ = writeln!(text, "{line}");
    }
    if !t.stderr_tail.is_empty() {
        let _ = writeln!(text, "\nlast {STDERR_TAIL} lines of stderr at most:");
        for line in &t.stderr_tail {
            let _ = writeln!(text, "{line}");
        }
    }
    format!(
        "<div class=\"failure\" data-tag=\"{}\">\n{}</div>\n",
        escape(&t.tag),
        details(&format!("{} failed", t.tag), &text)
    )
}

/// The `validation.txt` of each run folder that has one.
fn validation_block(sources: &[String]) -> String {
    let mut out = String::new();
    for source in sources {
        let path = Path::new(source).join(VALIDATION_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let text = if text.trim().is_empty() {
            "every validation layer passed".to_owned()
        } else {
            text
        };
        out.push_str(&details(source, &text));
    }
    out
}

/// The comparison as one self-contained HTML page: the runs side by side, then per compared
/// run the change of each benchmark with its interval and [`Comparison`]'s verdict.
pub fn render_comparison_html(c: &Comparison) -> String {
    let mut page = Page::new("Run comparison");
    let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
    let facts = vec![
        ("Baseline".to_owned(), c.baseline.clone()),
        ("Compared".to_owned(), c.runs.join(", ")),
        ("Threshold".to_owned(), threshold_line(c)),
        ("Worse".to_owned(), count(Verdict::Worse).to_string()),
        (
            "Cannot tell".to_owned(),
            count(Verdict::CannotTell).to_string(),
        ),
        (
            "Missing, failed or no rate".to_owned(),
            (count(Verdict::Missing) + count(Verdict::Failed) + count(Verdict::NoRate)).to_string(),
        ),
        (
            "Failed in both".to_owned(),
            count(Verdict::FailedInBoth).to_string(),
        ),
        (
            "Not in the baseline".to_owned(),
            count(Verdict::NoBaseline).to_string(),
        ),
    ];
    let judged = c.rows.len() - count(Verdict::NoBaseline);
    page.push(&headline(
        &format!(
            "{} better, {} worse",
            count(Verdict::Better),
            count(Verdict::Worse)
        ),
        &format!("of {judged} benchmark runs with a baseline"),
        &facts,
    ));
    // Side by side: each benchmark's perf in every run.
    let mut benches: Vec<&str> = c.rows.iter().map(|r| r.bench.as_str()).collect();
    benches.sort_unstable();
    benches.dedup();
    let keys: Vec<String> = (0..c.runs.len()).map(|i| format!("run{}", i + 1)).collect();
    let mut columns = vec![("bench", "bench"), ("baseline", c.baseline.as_str())];
    columns.extend(
        keys.iter()
            .map(String::as_str)
            .zip(c.runs.iter().map(String::as_str)),
    );
    let mut side = Table::new("side-by-side", &columns);
    for bench in &benches {
        let rows: Vec<_> = c.rows.iter().filter(|r| r.bench == *bench).collect();
        let baseline = rows.first().map_or(f64::NAN, |r| r.baseline);
        let mut cells = vec![Cell::Text((*bench).to_owned()), Cell::number(baseline, 2)];
        for run in &c.runs {
            let perf = rows
                .iter()
                .find(|r| &r.run == run)
                .map_or(f64::NAN, |r| r.perf);
            cells.push(Cell::number(perf, 2));
        }
        side.row(bench, cells, Vec::new());
    }
    page.push(&section(
        "side-by-side",
        "perf side by side (items/s)",
        &side.render(),
    ));
    for (i, run) in c.runs.iter().enumerate() {
        let mut table = Table::new(
            &format!("changes-{}", i + 1),
            &[
                ("bench", "bench"),
                ("baseline", "baseline"),
                ("perf", "perf"),
                ("change_pct", "change % ± 95%"),
                ("change_ci95", "95% interval of the change"),
                ("verdict", "verdict"),
            ],
        );
        for r in c.rows.iter().filter(|r| &r.run == run) {
            let interval = if r.change_ci95.low.is_nan() {
                String::new()
            } else {
                format!("[{:+.1}%, {:+.1}%]", r.change_ci95.low, r.change_ci95.high)
            };
            let bad = matches!(
                r.verdict,
                Verdict::Worse | Verdict::Missing | Verdict::Failed | Verdict::NoRate
            );
            table.row(
                &r.bench,
                vec![
                    Cell::Text(r.bench.clone()),
                    Cell::number(r.baseline, 2),
                    Cell::number(r.perf, 2),
                    Cell::interval(r.change_pct, r.change_ci95.half_width(), 1),
                    Cell::Text(interval),
                    Cell::Text(r.verdict_text()),
                ],
                if bad { vec!["failed"] } else { Vec::new() },
            );
        }
        page.push(&section(
            &format!("run-{}", i + 1),
            &format!("{run} against the baseline"),
            &table.render(),
        ));
    }
    page.push(&section(
        "about",
        "About this page",
        &format!(
            "<p class=\"note\">{}</p>\n",
            escape(&format!("A change is better or worse only when its 95% interval (batch means of each run's rates) leaves out 0 and it is larger than the threshold, here {}; else the page says cannot tell. The interval sees the noise inside each run, the threshold how far another run of the same machine may land. Marked rows are worse, missing, failed or without a rate.", threshold_line(c)))
        ),
    ));
    page.finish()
}
