//! The browser harness of the HTML report: Debian's `chromium`, headless (installed with apt
//! when missing), loads a page with `--dump-dom` and takes a `--screenshot`; the checks say
//! whether the page logged anything on the console, whether its table holds the JSON report's
//! numbers, and whether every benchmark that ran has its plot (serving benchmarks: their table
//! and latency plots too). `cargo xtask browser` runs them on the fixture run folders (a run of
//! serving benchmarks among them) and on a generated 150-file run; `cargo xtask ci` runs that, and
//! `cargo xtask e2e` checks the e2e run's `report.html` with [`check_page`].
//!
//! Also here, for the tests: [`table_numbers`] (the numbers of a page's tables) and
//! [`write_synthetic_run`] (a run folder as large as a real multi-GPU run).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::host::{apt_install, which};
use serde_json::Value;

/// The browser's program name (Debian's package of the same name).
pub const CHROMIUM: &str = "chromium";

/// Where screenshots are kept (under the workspace's `target/`).
pub const SCREENSHOT_DIR: &str = "target/browser";

/// The browser, installed with `apt-get` (after one `apt-get update`) when missing.
pub fn ensure_chromium() -> anyhow::Result<PathBuf> {
    if let Some(path) = which(CHROMIUM) {
        return Ok(path);
    }
    eprintln!("==> browser: installing chromium (apt-get)");
    apt_install(&[CHROMIUM])?;
    which(CHROMIUM).context("apt-get installed chromium but it is not on PATH")
}

/// Headless chromium with the flags every run shares: no sandbox (root in CI), no GPU, console
/// messages logged on stderr.
fn chromium(browser: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    cmd
}

/// What loading a page gave.
#[derive(Debug)]
pub struct PageLoad {
    /// The DOM after the page's scripts ran.
    pub dom: String,
    /// Console messages (each one a fault: the report logs nothing).
    pub console: Vec<String>,
    /// Wall time of the browser's run, seconds (start-up included).
    pub seconds: f64,
}

/// Loads `page` in headless chromium and returns its DOM and console messages.
pub fn load(browser: &Path, page: &Path) -> anyhow::Result<PageLoad> {
    let started = Instant::now();
    let output = chromium(browser)
        .arg("--dump-dom")
        .arg(file_url(page)?)
        .output()
        .context("could not start chromium")?;
    let seconds = started.elapsed().as_secs_f64();
    if !output.status.success() {
        bail!(
            "chromium failed on {} ({}):\n{}",
            page.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let console = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    Ok(PageLoad {
        dom: String::from_utf8_lossy(&output.stdout).into_owned(),
        console,
        seconds,
    })
}

fn file_url(page: &Path) -> anyhow::Result<String> {
    let absolute = fs_err::canonicalize(page)?;
    Ok(format!("file://{}", absolute.display()))
}

/// Takes a 1280-pixel-wide screenshot of `page` into `png`.
pub fn screenshot(browser: &Path, page: &Path, png: &Path) -> anyhow::Result<()> {
    if let Some(dir) = png.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let output = chromium(browser)
        .arg("--window-size=1280,2400")
        .arg(format!("--screenshot={}", png.display()))
        .arg(file_url(page)?)
        .output()
        .context("could not start chromium")?;
    if !output.status.success() || !png.is_file() {
        bail!(
            "chromium took no screenshot of {} ({}):\n{}",
            page.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// One number of a page's table: the row's key, the column's key and the exact value (`None`
/// for an empty `data-v`, JSON's `null`).
pub type TableNumber = (String, String, Option<f64>);

/// The value of attribute `name` in the tag text `tag` (double-quoted, as the pages write it).
fn attribute<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// Undoes the page's escaping of a row key.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every number cell (`data-v`) of the table with id `table_id` in `html`.
pub fn table_numbers(html: &str, table_id: &str) -> Vec<TableNumber> {
    table_tds(html, table_id)
        .into_iter()
        .filter_map(|(row, tag, _)| {
            let col = attribute(tag, "data-col")?;
            let value = attribute(tag, "data-v")?;
            Some((row, col.to_owned(), value.parse().ok()))
        })
        .collect()
}

/// Every cell of the table with id `table_id` in `html`: its row's key (`data-row`, unescaped),
/// its tag's text and the text that follows the tag.
fn table_tds<'h>(html: &'h str, table_id: &str) -> Vec<(String, &'h str, &'h str)> {
    let Some(start) = html.find(&format!("id=\"{table_id}\"")) else {
        return Vec::new();
    };
    let end = html[start..]
        .find("</table>")
        .map_or(html.len(), |e| e + start);
    let mut out = Vec::new();
    let mut row = String::new();
    for piece in html[start..end].split('<').skip(1) {
        let (tag, text) = piece.split_once('>').unwrap_or((piece, ""));
        if tag.starts_with("tr ") {
            row = attribute(tag, "data-row").map(unescape).unwrap_or_default();
        } else if tag.starts_with("td ") {
            out.push((row.clone(), tag, text));
        }
    }
    out
}

/// The columns of the report's table and the JSON report's keys they show.
const NUMBER_COLUMNS: [&str; 12] = [
    "fail",
    "n",
    "ngpu",
    "perf",
    "std%",
    "score",
    "weight",
    "peak_memory",
    "host_peak_memory",
    "energy_kj",
    "perf_watt",
    "median_watt",
];

/// Problems of a report page against the JSON report of the same runs: a benchmark without
/// its row, a number that differs (exactly, as `f64`), a benchmark that ran without a plot in
/// its section. Empty when the page is right.
pub fn report_problems(html: &str, json: &Value) -> Vec<String> {
    let numbers = table_numbers(html, "results");
    let mut problems = Vec::new();
    let benches = json["benchmarks"].as_array().cloned().unwrap_or_default();
    if benches.is_empty() {
        problems.push("the JSON report lists no benchmark".to_owned());
    }
    for bench in &benches {
        let name = bench["name"].as_str().unwrap_or_default();
        let row: Vec<&TableNumber> = numbers.iter().filter(|(r, _, _)| r == name).collect();
        if row.is_empty() {
            problems.push(format!("{name}: no row in the page's table"));
            continue;
        }
        for column in NUMBER_COLUMNS {
            let Some(want) = bench.get(column) else {
                continue;
            };
            let Some((_, _, shown)) = row.iter().find(|(_, c, _)| c == column) else {
                if !want.is_null() {
                    problems.push(format!("{name}: no `{column}` cell"));
                }
                continue;
            };
            if *shown != want.as_f64() {
                problems.push(format!(
                    "{name}: `{column}` is {shown:?} in the page, {want} in the JSON report"
                ));
            }
        }
        let ran = bench["n"].as_f64().unwrap_or(0.0) > 0.0;
        if ran && !section_has_plot(html, name) {
            problems.push(format!("{name}: no plot in its section"));
        }
    }
    problems
}

/// Every cell of the table with id `table_id` in `html`: its row's key, its column's key and the
/// text it shows (entities undone, trimmed).
pub fn table_cells(html: &str, table_id: &str) -> Vec<(String, String, String)> {
    table_tds(html, table_id)
        .into_iter()
        .filter_map(|(row, tag, text)| {
            let col = attribute(tag, "data-col")?;
            Some((row, col.to_owned(), unescape(text).trim().to_owned()))
        })
        .collect()
}

/// The cells of the text report's `Breakdown` table: row (benchmark), column (the header as the
/// page's `data-col` names it) and text.
pub fn text_report_cells(text: &str) -> Vec<(String, String, String)> {
    text_table_cells(text, "Breakdown")
}

/// The cells of the table of the text report's section `title` (the table follows the title's
/// underline): row, column (the header as the page's `data-col` names it) and text.
fn text_table_cells(text: &str, title: &str) -> Vec<(String, String, String)> {
    let mut lines = text
        .lines()
        .skip_while(|l| *l != title)
        .skip(2)
        .take_while(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let columns: Vec<String> = header
        .split('|')
        .map(|c| match c.trim() {
            "energy (Kj)" => "energy_kj".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    let mut out = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(row) = cells.first() else {
            continue;
        };
        for (column, cell) in columns.iter().zip(&cells).skip(1) {
            out.push(((*row).to_owned(), column.clone(), (*cell).to_owned()));
        }
    }
    out
}

/// Problems of the cells a page shows against the text report of the same runs: a cell of a
/// column both have whose text differs (the page and the text report round alike).
pub fn visible_cell_problems(html: &str, text: &str) -> Vec<String> {
    let expected = text_report_cells(text);
    if expected.is_empty() {
        return vec!["the text report has no Breakdown table".to_owned()];
    }
    cells_against(&table_cells(html, "results"), &expected)
}

/// Each cell of `expected` (row, column, text) that `shown` has with another text.
fn cells_against(
    shown: &[(String, String, String)],
    expected: &[(String, String, String)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut compared = 0;
    for (row, column, want) in expected {
        if let Some((_, _, seen)) = shown.iter().find(|(r, c, _)| r == row && c == column) {
            compared += 1;
            if seen != want {
                problems.push(format!(
                    "{row}: `{column}` shows `{seen}` in the page, `{want}` in the text report"
                ));
            }
        }
    }
    if compared == 0 {
        problems.push("no cell of the page's table is in the text report".to_owned());
    }
    problems
}

/// The number columns of the serving table (the text report's headers, the page's `data-col`)
/// and the JSON report's keys they show.
const SERVING_COLUMNS: [(&str, &str); 11] = [
    ("ok", "ok"),
    ("failed", "failed"),
    ("ttft_p50", "ttft_p50_ms"),
    ("ttft_p99", "ttft_p99_ms"),
    ("tpot_p50", "tpot_p50_ms"),
    ("tpot_p99", "tpot_p99_ms"),
    ("tpot_all_p50", "tpot_with_first_p50_ms"),
    ("e2e_p99", "e2e_p99_ms"),
    ("req/s", "request_throughput"),
    ("tokens/s", "output_throughput"),
    ("goodput", "goodput"),
];

/// Problems of a page's serving panel against the JSON and text reports of the same runs: a
/// serving row of the JSON report without its row in the page's `serving` table, a number that
/// differs (exactly), a cell that reads otherwise than in the text report's `Serving` table, a
/// serving benchmark whose section lacks its latency distribution plots. Empty for runs
/// without serving benchmarks.
pub fn serving_problems(html: &str, json: &Value, text: &str) -> Vec<String> {
    let Some(rows) = json["serving"].as_array() else {
        return Vec::new();
    };
    let numbers = table_numbers(html, "serving");
    let mut problems = Vec::new();
    for row in rows {
        let name = row["name"].as_str().unwrap_or_default();
        let shown: Vec<&TableNumber> = numbers.iter().filter(|(r, _, _)| r == name).collect();
        if shown.is_empty() {
            problems.push(format!("{name}: no row in the page's serving table"));
            continue;
        }
        for (column, key) in SERVING_COLUMNS {
            match shown.iter().find(|(_, c, _)| c == column) {
                None => problems.push(format!("{name}: no `{column}` cell in the serving table")),
                Some((_, _, value)) if *value != row[key].as_f64() => problems.push(format!(
                    "{name}: serving `{column}` is {value:?} in the page, {} in the JSON report",
                    row[key]
                )),
                Some(_) => {}
            }
        }
        let bench = row["bench"].as_str().unwrap_or_default();
        if section_plots(html, bench) < 3 {
            problems.push(format!(
                "{bench}: no latency distribution plots in its section"
            ));
        }
    }
    let expected = text_table_cells(text, "Serving");
    if expected.is_empty() {
        problems.push("the text report has no Serving table".to_owned());
    } else {
        problems.extend(cells_against(&table_cells(html, "serving"), &expected));
    }
    problems
}

/// Whether the section of benchmark `name` holds an `<svg>`.
fn section_has_plot(html: &str, name: &str) -> bool {
    section_plots(html, name) > 0
}

/// How many `<svg>` plots the section of benchmark `name` holds.
fn section_plots(html: &str, name: &str) -> usize {
    let id = milabench_html::anchor(&format!("bench-{name}"));
    let Some(start) = html.find(&format!("<section id=\"{id}\">")) else {
        return 0;
    };
    let end = html[start..]
        .find("</section>")
        .map_or(html.len(), |e| e + start);
    html[start..end].matches("<svg").count()
}

/// What [`check_page`] measured.
#[derive(Debug)]
pub struct PageCheck {
    /// The page's size, bytes.
    pub bytes: u64,
    /// The browser's wall time for the page (the better of two loads) minus `blank_seconds`.
    pub load_seconds: f64,
}

/// The browser's wall time for an empty page (the best of three): its start-up and shut-down,
/// which [`check_page`] takes off a page's time.
pub fn blank_seconds(browser: &Path) -> anyhow::Result<f64> {
    let blank = tempfile::Builder::new().suffix(".html").tempfile()?;
    fs_err::write(blank.path(), "<!DOCTYPE html><title>blank</title>")?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(load(browser, blank.path())?.seconds);
    }
    Ok(best)
}

/// The reports of the same runs a page is checked against: `report --format json` and
/// `--format text`.
#[derive(Debug)]
pub struct Reports {
    /// The JSON report.
    pub json: Value,
    /// The text report.
    pub text: String,
}

/// Loads `page` (a report of the runs whose reports are `reports`) in headless chromium: no
/// console message, the DOM's table holds the JSON report's numbers and shows the text
/// report's cells as they read there, every benchmark that ran has a plot, and so for the
/// serving table and plots ([`serving_problems`]); a screenshot is kept in `png`. `blank` is
/// [`blank_seconds`].
pub fn check_page(
    browser: &Path,
    page: &Path,
    reports: &Reports,
    png: &Path,
    blank: f64,
) -> anyhow::Result<PageCheck> {
    let loaded = load(browser, page)?;
    let mut problems: Vec<String> = loaded
        .console
        .iter()
        .map(|line| format!("console: {line}"))
        .collect();
    problems.extend(report_problems(&loaded.dom, &reports.json));
    problems.extend(visible_cell_problems(&loaded.dom, &reports.text));
    problems.extend(serving_problems(&loaded.dom, &reports.json, &reports.text));
    if !problems.is_empty() {
        bail!(
            "{} in chromium:\n  {}",
            page.display(),
            problems.join("\n  ")
        );
    }
    screenshot(browser, page, png)?;
    let again = load(browser, page)?.seconds;
    Ok(PageCheck {
        bytes: fs_err::metadata(page)?.len(),
        load_seconds: (loaded.seconds.min(again) - blank).max(0.0),
    })
}

/// What is wrong with the page of a sweep's report (`json`, its `report --sweep --format
/// json`) once loaded in headless chromium: console messages, and a benchmark, a point or a
/// rate of the report that the DOM does not show.
pub fn sweep_page_problems(
    browser: &Path,
    page: &Path,
    json: &Value,
) -> anyhow::Result<Vec<String>> {
    let loaded = load(browser, page)?;
    let mut problems: Vec<String> = loaded
        .console
        .iter()
        .map(|line| format!("console: {line}"))
        .collect();
    let text = visible_text(&loaded.dom);
    let labels = json["labels"].as_array().cloned().unwrap_or_default();
    for label in labels.iter().filter_map(Value::as_str) {
        if !text.contains(label) {
            problems.push(format!("the point `{label}` is not on the page"));
        }
    }
    for curve in json["curves"].as_array().into_iter().flatten() {
        let bench = curve["bench"].as_str().unwrap_or_default();
        if !text.contains(bench) {
            problems.push(format!("the benchmark `{bench}` is not on the page"));
        }
        for rate in curve["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["rate"].as_f64())
        {
            let shown = format!("{rate:.2}");
            if !text.contains(&shown) {
                problems.push(format!("the rate {shown} of `{bench}` is not on the page"));
            }
        }
    }
    if loaded.dom.matches("<svg").count() < 2 {
        problems.push("no rate and memory plots".into());
    }
    Ok(problems)
}

/// The text of a DOM, tags left out, entities of numbers and names kept as written.
fn visible_text(dom: &str) -> String {
    let mut text = String::with_capacity(dom.len());
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// Writes a run folder like a long multi-GPU run: `benches` benchmarks × `devices` per-GPU
/// processes, each with a `meta`, `seconds` timed rates and as many GPU and process samples,
/// the last benchmark's first process failing (exit code 1, a traceback on stderr) and every
/// other process stopping early.
pub fn write_synthetic_run(
    dir: &Path,
    benches: usize,
    devices: usize,
    seconds: usize,
) -> anyhow::Result<()> {
    fs_err::create_dir_all(dir)?;
    let start = 1_700_000_000.0;
    let meta = serde_json::json!({
        "cpu": {"count": 64, "brand": "AMD EPYC 7742 64-Core Processor"},
        "accelerators": {
            "arch": "cuda",
            "gpus": (0..devices).map(|d| (d.to_string(), serde_json::json!({
                "device": d, "product": "NVIDIA A100-SXM4-80GB",
                "memory": {"used": 0, "total": 81920},
            }))).collect::<serde_json::Map<_, _>>(),
            "system": {"DRIVER_VERSION": "535.104.05", "CUDA_VERSION": "12.2"},
        },
        "memory": {"total": 540_000_000_000u64},
        "date": start,
        "pytorch": {"torch": "2.3.1+cu121"},
    });
    for b in 0..benches {
        let name = format!("bench{b:02}");
        for d in 0..devices {
            let failed = b + 1 == benches && d == 0;
            let mut text = String::new();
            let mut line = |event: &str, data: Value, pipe: Option<&str>| {
                let _ = writeln!(
                    text,
                    "{}",
                    serde_json::json!({"event": event, "data": data, "pipe": pipe})
                );
            };
            line(
                "config",
                serde_json::json!({"name": name, "group": name, "weight": 1 + b % 3,
                    "enabled": true, "device": d.to_string(), "tag": [name, format!("D{d}")],
                    "plan": {"method": "per_gpu"}}),
                None,
            );
            line("meta", meta.clone(), Some("data"));
            line(
                "start",
                serde_json::json!({"command": ["voir", "main.py"], "time": start}),
                None,
            );
            for s in 0..seconds {
                let t = start + s as f64 + 0.5;
                let rate = 100.0 * (b + 1) as f64 * (1.0 - (-(s as f64) / 10.0).exp())
                    + ((s * 7 + d * 3) % 11) as f64;
                line(
                    "data",
                    serde_json::json!({"task": "train", "rate": rate, "units": "items/s", "time": t}),
                    Some("data"),
                );
                line(
                    "data",
                    serde_json::json!({"task": "main", "time": t, "gpudata": {d.to_string(): {
                        "memory": [30000.0 + (s % 50) as f64 * 10.0, 81920.0],
                        "load": 0.9 + ((s + d) % 10) as f64 / 100.0,
                        "temperature": 60, "power": 300.0 + ((s * 13 + d) % 40) as f64}}}),
                    Some("data"),
                );
                line(
                    "data",
                    serde_json::json!({"task": "main", "time": t, "process": {"pid": 1000 + d,
                        "load": 1.5, "memory": [4e9 + (s % 20) as f64 * 1e6, 5.4e11]}}),
                    Some("data"),
                );
            }
            let end = start + seconds as f64 + 1.0;
            if failed {
                for l in [
                    "Traceback (most recent call last):",
                    "  File \"main.py\", line 3",
                    "RuntimeError: CUDA out of memory",
                ] {
                    line("line", Value::from(format!("{l}\n")), Some("stderr"));
                }
                line(
                    "end",
                    serde_json::json!({"return_code": 1, "time": end}),
                    None,
                );
            } else {
                line("stop", Value::Null, Some("data"));
                line(
                    "end",
                    serde_json::json!({"return_code": -15, "time": end}),
                    None,
                );
            }
            fs_err::write(dir.join(format!("{name}.D{d}.data")), text)?;
        }
    }
    Ok(())
}

/// `milabench report --format json`, `text` and `html` of `runs` with `bin`; returns the
/// first two and writes the page to `page`.
pub fn report_page(bin: &Path, runs: &Path, page: &Path) -> anyhow::Result<Reports> {
    let json = report_json(
        Command::new(bin)
            .args(["report", "--format", "json", "--runs"])
            .arg(runs),
    )?;
    let text = report_text(Command::new(bin).args(["report", "--runs"]).arg(runs))?;
    let status = Command::new(bin)
        .args(["report", "--format", "html", "--runs"])
        .arg(runs)
        .arg("-o")
        .arg(page)
        .output()
        .context("could not start milabench report")?;
    // A failed benchmark makes `report` exit 1 with the page written all the same.
    if !page.is_file() {
        bail!(
            "milabench report --format html wrote no page for {} ({}):\n{}",
            runs.display(),
            status.status,
            String::from_utf8_lossy(&status.stderr)
        );
    }
    Ok(Reports { json, text })
}

/// Runs `cmd` (a text `report`, which exits 1 for a failed run) and returns what it printed.
pub fn report_text(cmd: &mut Command) -> anyhow::Result<String> {
    let output = cmd.output().context("could not start milabench report")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if text.is_empty() {
        bail!(
            "milabench report printed nothing ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(text)
}

/// Runs `cmd` (a `report --format json`, which exits 1 for a failed run) and reads its JSON.
fn report_json(cmd: &mut Command) -> anyhow::Result<Value> {
    let output = cmd.output().context("could not start milabench report")?;
    serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "milabench report printed no JSON ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The run folder of serving benchmarks made with the load generator's mock server (a server
/// run and a sweep of rates), relative to the workspace.
pub const SERVING_FIXTURE: &str = "tests/fixtures/serving/mock-run";

/// The fixture run folders (the Python tool's, and [`SERVING_FIXTURE`]) and a generated
/// 150-file run, each reported in HTML and checked in chromium; pages and screenshots kept under
/// `target/browser/`. Prints each page's size and load time.
pub fn check_fixture_pages(root: &Path, bin: &Path) -> anyhow::Result<()> {
    let browser = ensure_chromium()?;
    let scratch = tempfile::tempdir().context("could not make a scratch folder")?;
    let fixtures = root.join("tests/fixtures/milabench/runs/tests-runs");
    let mut runs: Vec<(String, PathBuf)> = fs_err::read_dir(&fixtures)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p.file_name().map_or_else(String::new, |n| {
                n.to_string_lossy()
                    .split('.')
                    .next()
                    .unwrap_or("run")
                    .to_owned()
            });
            (name, p)
        })
        .collect();
    runs.sort();
    runs.push(("tests-runs".to_owned(), fixtures));
    runs.push(("serving".to_owned(), root.join(SERVING_FIXTURE)));
    let large = scratch.path().join("large-run");
    write_synthetic_run(&large, 25, 6, 600)?;
    runs.push(("large-150-files".to_owned(), large));
    let blank = blank_seconds(&browser)?;
    let mut first = None;
    for (name, folder) in runs {
        let page = root.join(SCREENSHOT_DIR).join(format!("{name}.html"));
        fs_err::create_dir_all(root.join(SCREENSHOT_DIR))?;
        let reports = report_page(bin, &folder, &page)?;
        let png = root.join(SCREENSHOT_DIR).join(format!("{name}.png"));
        let check = check_page(&browser, &page, &reports, &png, blank)?;
        first.get_or_insert((page.clone(), reports));
        eprintln!(
            "==> browser: {name}: {:.0} kB, loads in {:.2} s beyond an empty page, screenshot {}",
            check.bytes as f64 / 1024.0,
            check.load_seconds,
            png.display()
        );
    }
    let (page, reports) = first.context("no fixture run")?;
    check_planted_error(&browser, &page, &reports, scratch.path(), blank)
}

/// The check must fail a page that logs an error: `page` with a script that writes one to the
/// console.
fn check_planted_error(
    browser: &Path,
    page: &Path,
    reports: &Reports,
    scratch: &Path,
    blank: f64,
) -> anyhow::Result<()> {
    let planted = scratch.join("planted-console-error.html");
    let html = fs_err::read_to_string(page)?.replacen(
        "</body>",
        "<script>console.error('planted by cargo xtask browser');</script></body>",
        1,
    );
    fs_err::write(&planted, html)?;
    let png = scratch.join("planted.png");
    match check_page(browser, &planted, reports, &png, blank) {
        Err(e) if e.to_string().contains("planted by cargo xtask browser") => {
            eprintln!("==> browser: a page that logs an error fails the check, as it must");
            Ok(())
        }
        Err(e) => bail!("the page with a planted console error failed for another reason: {e:#}"),
        Ok(_) => bail!("the check passed a page that logs an error to the console"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_numbers_are_read_per_row_and_column() {
        let html = r#"<table class="sortable" id="results"><tr data-row="a&amp;b"><td data-col="name">a&amp;b</td><td data-col="perf" data-v="12.5">12.50</td><td data-col="x" data-v="">nan</td></tr></table>"#;
        assert_eq!(
            table_numbers(html, "results"),
            [
                ("a&b".to_owned(), "perf".to_owned(), Some(12.5)),
                ("a&b".to_owned(), "x".to_owned(), None)
            ]
        );
        assert!(table_numbers(html, "other").is_empty());
    }

    #[test]
    fn visible_cells_are_compared_with_the_text_report() {
        let html = r#"<table id="results"><tr data-row="b&amp;c"><td data-col="name">b&amp;c</td><td data-col="perf" data-v="10.004">10.00</td><td data-col="energy_kj" data-v="1">1.000</td></tr></table>"#;
        let text = "Breakdown\n---------\nindex | fail |  perf | energy (Kj)\nb&c   |    0 | 10.00 |       1.000\n\nScores\n";
        assert_eq!(visible_cell_problems(html, text), Vec::<String>::new());
        let rounded_otherwise = text.replace("10.00", "10.004");
        assert_eq!(
            visible_cell_problems(html, &rounded_otherwise),
            ["b&c: `perf` shows `10.00` in the page, `10.004` in the text report"]
        );
        assert_eq!(
            visible_cell_problems(html, "no table"),
            ["the text report has no Breakdown table"]
        );
    }

    #[test]
    fn a_serving_panel_that_differs_from_the_reports_is_caught() {
        let cells: String = SERVING_COLUMNS
            .iter()
            .map(|(column, _)| format!(r#"<td data-col="{column}" data-v="1">1</td>"#))
            .collect();
        let plots = "<svg></svg>".repeat(3);
        let html = format!(
            r#"<table id="serving"><tr data-row="llm"><td data-col="name">llm</td>{cells}<td data-col="slo">held</td></tr></table><section id="bench-llm">{plots}</section>"#
        );
        let mut row = serde_json::json!({"name": "llm", "bench": "llm"});
        for (_, key) in SERVING_COLUMNS {
            row[key] = serde_json::json!(1.0);
        }
        let json = serde_json::json!({ "serving": [row] });
        let text = "Serving\n-------\nbench | ok | slo\nllm   |  1 | held\n\n";
        assert_eq!(serving_problems(&html, &json, text), Vec::<String>::new());
        let mut wrong = json.clone();
        wrong["serving"][0]["goodput"] = serde_json::json!(2.0);
        assert_eq!(
            serving_problems(&html, &wrong, text),
            ["llm: serving `goodput` is Some(1.0) in the page, 2.0 in the JSON report"]
        );
        assert_eq!(
            serving_problems(&html, &json, &text.replace("held", "NOT held")),
            ["llm: `slo` shows `held` in the page, `NOT held` in the text report"]
        );
        assert_eq!(
            serving_problems(&html.replace(&plots, ""), &json, text),
            ["llm: no latency distribution plots in its section"]
        );
        assert_eq!(
            serving_problems(&html, &json, "no table"),
            ["the text report has no Serving table"]
        );
        // A run without serving benchmarks has nothing to check.
        assert!(serving_problems("", &serde_json::json!({}), "").is_empty());
    }

    #[test]
    fn a_page_that_differs_from_the_json_report_is_caught() {
        let html = r#"<table id="results"><tr data-row="b"><td data-col="n" data-v="1">1</td><td data-col="perf" data-v="10">10</td></tr></table><section id="bench-b"><svg></svg></section>"#;
        let json = serde_json::json!({"benchmarks": [{"name": "b", "n": 1, "perf": 10.0}]});
        assert_eq!(report_problems(html, &json), Vec::<String>::new());
        let wrong = serde_json::json!({"benchmarks": [{"name": "b", "n": 1, "perf": 10.5}]});
        assert_eq!(report_problems(html, &wrong).len(), 1);
        let no_plot = html.replace("<svg></svg>", "");
        assert_eq!(
            report_problems(&no_plot, &json),
            ["b: no plot in its section"]
        );
    }
}
