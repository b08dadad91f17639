//! Renderers of a [`Report`]: the Python tool's text layout, JSON, CSV and Markdown.
//!
//! The 95% intervals and the warm-up are added, never swapped in: JSON and CSV get fields and
//! columns, Markdown gets `value ± half-width` columns, and the text layout, the Python tool's
//! byte for byte, is followed by a section of its own (a column added to the Python table would
//! change every one of its lines for the tools that read them). The serving table, when the run
//! has serving benchmarks, follows the Python layout in the text, the breakdown in Markdown, and
//! is the `serving` list in JSON; CSV, one row per benchmark, leaves it out.

use std::fmt::Write as _;

use milabench_stats::Interval;
use serde_json::{Value, json};

use crate::pyfmt::{fixed, percent};
use crate::report::{Report, ReportRow, python_str};
use crate::serving::{SERVING_COLUMNS, SERVING_DEFINITIONS, SERVING_NOTE, ServingRow, SloVerdict};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Python tool's layout, byte for byte, then the intervals.
    Text,
    /// The Python tool's layout alone (`MILABENCH_REPORT_LEAN=1`): no serving table, intervals
    /// or warm-up section after it.
    LeanText,
    /// Markdown tables.
    Markdown,
    /// CSV, one row per benchmark and a last `(suite)` row.
    Csv,
    /// JSON for machines (`null` for missing numbers).
    Json,
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Text => render_text(report),
        Format::LeanText => text(report, true),
        Format::Markdown => render_markdown(report),
        Format::Csv => render_csv(report),
        Format::Json => render_json(report),
    }
}

type Cell = fn(&ReportRow) -> String;

/// Columns of the breakdown: header and Python formatter (`None`: printed unpadded).
fn columns(report: &Report) -> Vec<(&'static str, Option<Cell>)> {
    let mut cols: Vec<(&'static str, Option<Cell>)> = vec![
        ("fail", Some(|r| fixed(r.fail, 4, 0))),
        ("n", Some(|r| fixed(r.n, 3, 0))),
        ("ngpu", Some(|r| fixed(r.ngpu, 4, 0))),
        ("perf", Some(|r| fixed(r.perf, 10, 2))),
        ("sem%", Some(|r| percent(r.sem_pct, 6, 1))),
        ("std%", Some(|r| percent(r.std_pct, 6, 1))),
        ("peak_memory", Some(|r| fixed(r.peak_memory, 11, 0))),
        ("score", Some(|r| fixed(r.score, 10, 2))),
        ("weight", Some(|r| fixed(r.weight, 6, 2))),
        ("energy (Kj)", Some(|r| fixed(r.energy_kj, 3, 3))),
        ("perf_watt", Some(|r| fixed(r.perf_watt, 3, 3))),
    ];
    if report.has_median_watt {
        cols.push((
            "median_watt",
            Some(|r| fixed(r.median_watt.unwrap_or(f64::NAN), 3, 3)),
        ));
    }
    cols.push(("enabled", None));
    cols
}

/// Value and half-width of a 95% interval, `value ± half-width`.
fn plus_minus(value: f64, interval: &Interval, precision: usize) -> String {
    format!(
        "{} ± {}",
        fixed(value, 0, precision),
        fixed(interval.half_width(), 0, precision)
    )
}

/// Columns of the text report's interval table.
fn interval_columns() -> Vec<(&'static str, Option<Cell>)> {
    vec![
        ("perf", Some(|r| fixed(r.perf, 10, 2))),
        ("± perf", Some(|r| fixed(r.perf_ci.half_width(), 8, 2))),
        ("score", Some(|r| fixed(r.score, 10, 2))),
        ("± score", Some(|r| fixed(r.score_ci.half_width(), 8, 2))),
        (
            "warm-up",
            Some(|r| {
                r.warm_up
                    .map_or_else(|| "nan".to_owned(), |w| w.observations.to_string())
            }),
        ),
    ]
}

/// The warm-up notes: one sentence per benchmark whose fixed `skip` cut too little.
pub(crate) fn warm_up_notes(report: &Report) -> Vec<String> {
    report
        .rows
        .iter()
        .filter(|r| r.skip_too_short())
        .filter_map(|r| {
            let w = r.warm_up?;
            Some(format!(
                "{}: rates still rising {} observations after the fixed skip (the rate without them is {:.1}% higher, beyond its interval); raise `voir.options.skip` for it",
                r.name, w.observations, w.gain_pct
            ))
        })
        .collect()
}

/// A table of `report`'s rows in the Python tool's style: the benchmark name, then `cols`.
fn table(report: &Report, cols: &[(&'static str, Option<Cell>)]) -> String {
    let rows: Vec<(&str, Vec<String>)> = report
        .rows
        .iter()
        .map(|r| {
            let cells = cols
                .iter()
                .map(|(_, f)| f.map_or_else(|| r.enabled.python_str(), |f| f(r)))
                .collect();
            (r.name.as_str(), cells)
        })
        .collect();
    let headers: Vec<(&str, bool)> = cols.iter().map(|(n, f)| (*n, f.is_some())).collect();
    grid("index", &headers, &rows)
}

/// Lines of a table in the Python tool's style: the first column (headed `index_header`, the
/// rows' names) left-aligned and at least 5 wide, then one column per header, right-aligned to
/// its widest cell or written as is when it is not `padded`, joined by ` | `.
fn grid(index_header: &str, headers: &[(&str, bool)], rows: &[(&str, Vec<String>)]) -> String {
    let index_width = rows
        .iter()
        .map(|(name, _)| name.chars().count().max(5))
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, (name, padded))| {
            if !padded {
                return 0;
            }
            rows.iter()
                .map(|(_, c)| c[i].chars().count().max(name.len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut lines = Vec::new();
    let mut header = vec![format!("{index_header:<index_width$}")];
    header.extend(
        headers
            .iter()
            .zip(&widths)
            .map(|((n, _), w)| format!("{n:>w$}")),
    );
    lines.push(header.join(" | "));
    for (name, cells) in rows {
        let mut line = vec![format!("{name:<index_width$}")];
        line.extend(cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")));
        lines.push(line.join(" | "));
    }
    lines.join("\n")
}

/// The cells of a serving row after its name: the scenario, the numbers, the SLO verdict.
fn serving_cells(row: &ServingRow) -> Vec<String> {
    let mut cells = vec![row.run.scenario()];
    cells.extend(SERVING_COLUMNS.iter().map(|c| c.text(&row.step)));
    cells.push(row.run.verdict().as_str().to_owned());
    cells
}

/// The headers of the serving table after `bench`.
fn serving_headers() -> Vec<&'static str> {
    let mut headers = vec!["scenario"];
    headers.extend(SERVING_COLUMNS.iter().map(|c| c.header));
    headers.push("slo");
    headers
}

/// The serving table in the text report's style.
fn serving_table(report: &Report) -> String {
    let rows: Vec<(&str, Vec<String>)> = report
        .serving
        .iter()
        .map(|r| (r.name.as_str(), serving_cells(r)))
        .collect();
    let headers: Vec<(&str, bool)> = serving_headers().into_iter().map(|h| (h, true)).collect();
    grid("bench", &headers, &rows)
}

/// `key:` padded to the longest key + 2, a space, the value (floats as `{:10.2f}`).
fn key_table(entries: &[(String, String)]) -> String {
    let width = entries.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 2;
    entries
        .iter()
        .map(|(k, v)| format!("{:<width$} {v}", format!("{k}:")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn score_entries(report: &Report) -> Vec<(String, String)> {
    let verdict = if report.passes() { "PASS" } else { "FAIL" };
    let mut scores = vec![
        (
            "Failure rate".to_owned(),
            format!("{} ({verdict})", percent(report.failure_rate, 10, 2)),
        ),
        ("Score".to_owned(), fixed(report.score, 10, 2)),
    ];
    if let Some(price) = report.price {
        scores.push(("Price ($)".to_owned(), fixed(price, 10, 2)));
        scores.push((
            "RPP (Price / Score)".to_owned(),
            fixed(price / report.score, 10, 2),
        ));
    }
    scores
}

fn system_entries(report: &Report) -> Vec<(String, String)> {
    report
        .system
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::Number(n) if n.is_f64() => fixed(n.as_f64().unwrap_or(f64::NAN), 10, 2),
                other => python_str(other),
            };
            (k.clone(), text)
        })
        .collect()
}

/// The Python tool's text report.
pub fn render_text(report: &Report) -> String {
    text(report, false)
}

/// The text report; `lean`, the Python tool's layout alone.
fn text(report: &Report, lean: bool) -> String {
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push('\n');
    };
    for source in &report.sources {
        line(&format!("Source: {source}"));
    }
    let title = "Benchmark results";
    let rule = "=".repeat(title.len());
    line(&rule);
    line(title);
    line(&rule);
    let section = |out: &mut dyn FnMut(&str), title: &str| {
        out("");
        out(title);
        out(&"-".repeat(title.len()));
    };
    if !report.system.is_empty() {
        section(&mut line, "System");
        line(&key_table(&system_entries(report)));
    }
    section(&mut line, "Breakdown");
    line(&table(report, &columns(report)));
    section(&mut line, "Scores");
    line(&key_table(&score_entries(report)));
    if report.failed_files > 0 {
        section(&mut line, "Errors");
        line(&format!(
            "{} errors, details in HTML report.",
            report.failed_files
        ));
    }
    // Not in the Python tool's report: everything above is its layout, unchanged.
    if lean {
        return out;
    }
    if !report.serving.is_empty() {
        section(&mut line, "Serving");
        line(&serving_table(report));
        line("");
        for note in SERVING_NOTE {
            line(note);
        }
    }
    section(
        &mut line,
        "95% intervals (batch means) and warm-up after skip",
    );
    line(&table(report, &interval_columns()));
    line("");
    line(&key_table(&[(
        "Score".to_owned(),
        plus_minus(report.score, &report.score_ci, 2),
    )]));
    for note in warm_up_notes(report) {
        line(&format!("Warm-up: {note}"));
    }
    out
}

fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The report as JSON.
pub fn render_json(report: &Report) -> String {
    let rows: Vec<Value> = report
        .rows
        .iter()
        .map(|r| {
            let mut row = json!({
                "name": r.name,
                "fail": num(r.fail),
                "n": num(r.n),
                "ngpu": num(r.ngpu),
                "perf": num(r.perf),
                "perf_ci95": {"low": num(r.perf_ci.low), "high": num(r.perf_ci.high)},
                "score_ci95": {"low": num(r.score_ci.low), "high": num(r.score_ci.high)},
                "warm_up": r.warm_up.map_or(Value::Null, |w| json!({
                    "observations": w.observations,
                    "gain_pct": num(w.gain_pct),
                    "steady_half_width_pct": num(w.steady_half_width_pct),
                    "skip_too_short": r.skip_too_short(),
                })),
                "sem%": num(r.sem_pct),
                "std%": num(r.std_pct),
                "peak_memory": num(r.peak_memory),
                "host_peak_memory": num(r.host_peak_memory),
                "score": num(r.score),
                "weight": num(r.weight),
                "energy_kj": num(r.energy_kj),
                "perf_watt": num(r.perf_watt),
                "median_watt": r.median_watt.map_or(Value::Null, num),
                "enabled": r.enabled.is_on(),
            });
            if report.has_counter_energy {
                row["counter_energy_kj"] = num(r.counter_energy_kj);
                row["counter_perf_per_watt"] = num(r.counter_perf_per_watt);
            }
            row
        })
        .collect();
    let system: serde_json::Map<String, Value> = report.system.iter().cloned().collect();
    let mut value = json!({
        "sources": report.sources,
        "system": system,
        "benchmarks": rows,
        "failure_rate": num(report.failure_rate),
        "pass": report.passes(),
        "score": num(report.score),
        "score_ci95": {"low": num(report.score_ci.low), "high": num(report.score_ci.high)},
        "price": report.price.map_or(Value::Null, num),
        "rpp": report.price.map_or(Value::Null, |p| num(p / report.score)),
        "failed_processes": report.failed_files,
    });
    if let Value::Object(map) = &mut value
        && !report.serving.is_empty()
    {
        map.insert(
            "serving".to_owned(),
            report.serving.iter().map(serving_json).collect(),
        );
        map.insert(
            "serving_definitions".to_owned(),
            Value::Object(
                SERVING_DEFINITIONS
                    .iter()
                    .map(|(key, meaning)| ((*key).to_owned(), json!(meaning)))
                    .collect(),
            ),
        );
    }
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// A serving row as JSON: the table's cells as numbers (`null` for none), the SLO attainment,
/// and every step of the run.
fn serving_json(row: &ServingRow) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("name".into(), json!(row.name));
    map.insert("bench".into(), json!(row.bench));
    map.insert("scenario".into(), json!(row.run.scenario()));
    for column in &SERVING_COLUMNS {
        map.insert(column.key.into(), num((column.value)(&row.step)));
    }
    map.insert(
        "slo_attainment".into(),
        row.step.slo_attainment.map_or(Value::Null, num),
    );
    let verdict = |v: SloVerdict| match v {
        SloVerdict::Held => json!("held"),
        SloVerdict::NotHeld => json!("not held"),
        SloVerdict::NoSlo => Value::Null,
        SloVerdict::Interrupted => json!("interrupted"),
    };
    map.insert("slo".into(), verdict(row.run.verdict()));
    let steps = row
        .run
        .steps
        .iter()
        .map(|s| {
            json!({
                "scenario": s.scenario.label(),
                "rate": s.scenario.rate().map_or(Value::Null, num),
                "held": s.held,
                "request_throughput": num(s.request_throughput),
                "output_throughput": num(s.output_throughput),
                "goodput": s.goodput.map_or(Value::Null, num),
                "slo": verdict(s.verdict()),
            })
        })
        .collect();
    map.insert("steps".into(), Value::Array(steps));
    Value::Object(map)
}

/// A number as a CSV cell: at full precision, empty when there is none (NaN).
pub(crate) fn csv_num(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!("{x}")
    }
}

/// `rows` as CSV lines, written by the `csv` crate: a cell holding a comma, a quote or a line
/// break (`\n` or `\r`) is quoted. Rows may differ in length (the report's `(suite)` row leaves
/// out its optional columns).
pub fn csv_lines<Row>(rows: impl IntoIterator<Item = Row>) -> String
where
    Row: IntoIterator,
    Row::Item: AsRef<[u8]>,
{
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    for row in rows {
        // Written into memory: this cannot fail.
        let _ = writer.write_record(row);
    }
    writer
        .into_inner()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// The report as CSV: numbers at full precision, empty cells for missing ones.
pub fn render_csv(report: &Report) -> String {
    let mut header: Vec<&str> = "name,fail,n,ngpu,perf,perf_ci95_low,perf_ci95_high,sem%,std%,peak_memory,host_peak_memory,score,score_ci95_low,score_ci95_high,weight,energy_kj,perf_watt,median_watt,enabled,warm_up,warm_up_gain%,skip_too_short"
        .split(',')
        .collect();
    if report.has_counter_energy {
        header.extend(["counter_energy_kj", "counter_perf_per_watt"]);
    }
    let mut rows = vec![header.into_iter().map(str::to_owned).collect::<Vec<_>>()];
    for r in &report.rows {
        let mut cells = vec![
            r.name.clone(),
            csv_num(r.fail),
            csv_num(r.n),
            csv_num(r.ngpu),
            csv_num(r.perf),
            csv_num(r.perf_ci.low),
            csv_num(r.perf_ci.high),
            csv_num(r.sem_pct),
            csv_num(r.std_pct),
            csv_num(r.peak_memory),
            csv_num(r.host_peak_memory),
            csv_num(r.score),
            csv_num(r.score_ci.low),
            csv_num(r.score_ci.high),
            csv_num(r.weight),
            csv_num(r.energy_kj),
            csv_num(r.perf_watt),
            r.median_watt.map_or_else(String::new, csv_num),
            r.enabled.is_on().to_string(),
            r.warm_up
                .map_or_else(String::new, |w| w.observations.to_string()),
            csv_num(r.warm_up.map_or(f64::NAN, |w| w.gain_pct)),
            r.skip_too_short().to_string(),
        ];
        if report.has_counter_energy {
            cells.extend([
                csv_num(r.counter_energy_kj),
                csv_num(r.counter_perf_per_watt),
            ]);
        }
        rows.push(cells);
    }
    let fail: f64 = report
        .rows
        .iter()
        .map(|r| r.fail)
        .filter(|x| !x.is_nan())
        .sum();
    let n: f64 = report
        .rows
        .iter()
        .map(|r| r.n)
        .filter(|x| !x.is_nan())
        .sum();
    // The suite's row: its totals, score and verdict under the benchmarks' columns.
    let mut suite = vec![String::new(); 22];
    suite[0] = "(suite)".to_owned();
    suite[1] = csv_num(fail);
    suite[2] = csv_num(n);
    suite[11] = csv_num(report.score);
    suite[12] = csv_num(report.score_ci.low);
    suite[13] = csv_num(report.score_ci.high);
    suite[18] = report.passes().to_string();
    rows.push(suite);
    csv_lines(rows)
}

/// `text` as the content of a Markdown table cell or list item, shown as written: `|` would
/// end the cell, a line break the row, and `<`, `>`, `&` would be read as HTML.
pub fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The report as Markdown.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::from("# Benchmark results\n\n");
    for source in &report.sources {
        let _ = writeln!(out, "Source: `{source}`  ");
    }
    if !report.system.is_empty() {
        out.push_str("\n## System\n\n| key | value |\n|---|---|\n");
        for (k, v) in system_entries(report) {
            let _ = writeln!(
                out,
                "| {} | {} |",
                markdown_text(&k),
                markdown_text(v.trim())
            );
        }
    }
    out.push_str("\n## Breakdown\n\n");
    let cols = columns(report);
    let mut header = vec!["bench".to_owned()];
    header.extend(cols.iter().map(|(n, _)| n.to_string()));
    header.insert(5, "perf ± 95%".to_owned());
    // After `score`, which moved one place right.
    let score_at = header.iter().position(|h| h == "score").map(|i| i + 1);
    if let Some(i) = score_at {
        header.insert(i, "score ± 95%".to_owned());
    }
    // The host figure sits beside the GPU one (the text layout, the Python tool's, has no room).
    let host_at = header
        .iter()
        .position(|h| h == "peak_memory")
        .map(|i| i + 1);
    if let Some(i) = host_at {
        header.insert(i, "host_peak_memory".to_owned());
    }
    // The energy counters' figures, where the GPUs have them, last.
    if report.has_counter_energy {
        header.push("counter_energy (Kj)".to_owned());
        header.push("counter_perf_per_watt".to_owned());
    }
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|---|{}",
        header[1..].iter().map(|_| "---:|").collect::<String>()
    );
    for r in &report.rows {
        let mut cells = vec![markdown_text(&r.name)];
        cells
            .extend(cols.iter().map(|(_, f)| {
                f.map_or_else(|| r.enabled.python_str(), |f| f(r).trim().to_owned())
            }));
        cells.insert(5, plus_minus(r.perf, &r.perf_ci, 2));
        if let Some(i) = score_at {
            cells.insert(i, plus_minus(r.score, &r.score_ci, 2));
        }
        if let Some(i) = host_at {
            cells.insert(i, fixed(r.host_peak_memory, 0, 0));
        }
        if report.has_counter_energy {
            cells.push(fixed(r.counter_energy_kj, 0, 3));
            cells.push(fixed(r.counter_perf_per_watt, 0, 3));
        }
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    if !report.serving.is_empty() {
        out.push_str("\n## Serving\n\n");
        let headers = serving_headers();
        let _ = writeln!(out, "| bench | {} |", headers.join(" | "));
        // The scenario and the verdict are text; the numbers between them right-aligned.
        let _ = writeln!(
            out,
            "|---|---|{}---|",
            "---:|".repeat(SERVING_COLUMNS.len())
        );
        for r in &report.serving {
            let mut cells = vec![markdown_text(&r.name)];
            cells.extend(serving_cells(r).iter().map(|c| markdown_text(c)));
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(out, "\n{}", SERVING_NOTE.join(" "));
    }
    out.push_str("\n## Scores\n\n");
    for (k, v) in score_entries(report) {
        let _ = writeln!(out, "- **{k}**: {}", v.trim());
    }
    let _ = writeln!(
        out,
        "- **Score ± 95%**: {}",
        plus_minus(report.score, &report.score_ci, 2)
    );
    for note in warm_up_notes(report) {
        let _ = writeln!(out, "- **Warm-up**: {}", markdown_text(&note));
    }
    if report.failed_files > 0 {
        let _ = writeln!(out, "\n{} processes failed.", report.failed_files);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 48: the hand-written quoters differed on `\r` (a bare carriage return split a row
    /// for some readers); the `csv` crate quotes it as it quotes `\n`, a comma and a quote.
    #[test]
    fn csv_cells_with_separators_or_line_breaks_are_quoted() {
        let text = csv_lines([["a,b", "say \"hi\"", "one\rtwo", "three\nfour", "plain", ""]]);
        assert_eq!(
            text,
            "\"a,b\",\"say \"\"hi\"\"\",\"one\rtwo\",\"three\nfour\",plain,\n"
        );
    }

    /// Issue 38, item 17: a `|` in a benchmark name shifted the Markdown columns, and HTML in
    /// names passed through.
    #[test]
    fn markdown_cells_hold_names_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let name = "a|b <img src=x>";
        let mut text = format!(
            r#"{{"event": "config", "data": {{"name": "{name}", "weight": 1, "enabled": true}}, "pipe": null}}"#
        );
        text.push('\n');
        for rate in [10, 11, 12, 11, 10, 12, 11, 10] {
            text.push_str(&format!(
                r#"{{"event": "data", "data": {{"task": "train", "rate": {rate}, "units": "items/s"}}, "pipe": "data"}}"#
            ));
            text.push('\n');
        }
        text.push_str(r#"{"event": "end", "data": {"return_code": 0}, "pipe": null}"#);
        std::fs::write(dir.path().join("odd.0.data"), text).unwrap();
        let path = dir.path().to_string_lossy().into_owned();
        let (report, _) =
            crate::report_runs(&[path], None, &crate::ReportOptions::default()).unwrap();
        let md = render_markdown(&report);
        let header = md.lines().find(|l| l.starts_with("| bench |")).unwrap();
        let row = md
            .lines()
            .find(|l| l.starts_with("| a"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(row.starts_with(r"| a\|b &lt;img src=x&gt; |"), "{row}");
        let columns = |line: &str| line.replace(r"\|", "").matches('|').count();
        assert_eq!(columns(row), columns(header), "{md}");
        assert_eq!(markdown_text("x\ny & z"), "x y &amp; z");
    }
}
