//! `benchit cache`: list, inspect, delete, clean and report the builds of the cache.

use camino::{Utf8Path, Utf8PathBuf};
use clap::{Args, Subcommand};
use std::io::Write as _;

use benchit::models::cache::{BuildEntry, CACHE_VAR, Cache, default_cache_dir};
use benchit::models::state::{STATE_FILE, STATS_FILE};
use benchit::models::{Interval, report};

use milabench_exec::ExitCode;
use milabench_vocab::TextTable;

/// Arguments of `benchit cache`.
#[derive(Debug, Args)]
#[command(
    about = "Inspect and manage the build cache",
    long_about = "Inspect and manage the build cache: one folder per build (state.yaml, \
        stats.yaml, stage logs, onnx/), made by `benchit benchmark`.",
    after_help = "Examples:\n  \
        benchit cache list\n  \
        benchit cache stats mlp_24adc42f\n  \
        benchit cache report -o reports/\n  \
        benchit cache clean --all        # keep results, drop ONNX files\n  \
        benchit cache delete --all --cache-dir /tmp/bc"
)]
pub(crate) struct CacheArgs {
    /// The build cache [default: ~/.cache/benchit].
    #[arg(long, env = CACHE_VAR, global = true, value_name = "DIR")]
    cache_dir: Option<Utf8PathBuf>,
    #[command(subcommand)]
    command: CacheCommand,
}

/// The `benchit cache` commands.
#[derive(Debug, Subcommand)]
enum CacheCommand {
    /// List the builds: name, status, runtimes measured.
    List,
    /// Print a build's state.yaml and stats.yaml.
    Stats {
        /// The build name (`benchit cache list` shows them).
        build: String,
    },
    /// Delete a build (or every build) and forget it in the cache database.
    Delete {
        /// The build name.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        build: Option<String>,
        /// Every build.
        #[arg(long)]
        all: bool,
    },
    /// Delete build artifacts (ONNX files), keeping text, YAML and JSON files.
    Clean {
        /// The build name.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        build: Option<String>,
        /// Every build.
        #[arg(long)]
        all: bool,
    },
    /// Write a CSV and a JSON report (or one self-contained HTML page): one row per build and
    /// runtime, failures with their message.
    Report {
        /// The folder for benchit-report-<date>.csv and .json (or .html).
        #[arg(short, long, default_value = ".", value_name = "DIR")]
        output_dir: Utf8PathBuf,
        /// What to write.
        #[arg(long, value_enum, default_value_t = ReportFormat::CsvJson)]
        format: ReportFormat,
    },
    /// Print the cache folder.
    Location,
}

/// Formats of `benchit cache report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ReportFormat {
    /// A CSV and a JSON file.
    CsvJson,
    /// One self-contained HTML page (inline style, sortable table, nothing fetched).
    Html,
}

/// Runs a `benchit cache` command; returns the exit status.
pub(crate) fn run(args: CacheArgs) -> crate::errors::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let dir = match args.cache_dir {
        Some(dir) => dir,
        None => default_cache_dir()?,
    };
    let cache = match args.command {
        CacheCommand::Location => {
            writeln!(out, "{dir}")?;
            return Ok(ExitCode::Success);
        }
        _ => Cache::open(&dir)?,
    };
    match args.command {
        CacheCommand::Location => {}
        CacheCommand::List => {
            let builds = cache.builds()?;
            if builds.is_empty() {
                writeln!(out, "no build in {dir}")?;
            }
            let mut table = TextTable::without_header(3);
            for build in &builds {
                list_row(&mut table, build);
            }
            write!(out, "{}", table.render())?;
        }
        CacheCommand::Stats { build } => {
            let entry = cache.build(&build)?;
            for file in [STATE_FILE, STATS_FILE] {
                let path = entry.dir.join(file);
                writeln!(out, "# {path}")?;
                match fs_err::read_to_string(&path) {
                    Ok(text) => write!(out, "{text}")?,
                    Err(e) => writeln!(out, "(cannot be read: {e})")?,
                }
            }
            for problem in entry.problems() {
                writeln!(out, "# problem: {problem}")?;
            }
        }
        CacheCommand::Delete { build, all } => {
            if all {
                let names = cache.delete_all()?;
                writeln!(out, "deleted {} build{}", names.len(), plural(names.len()))?;
            } else if let Some(build) = build {
                cache.delete(&build)?;
                writeln!(out, "deleted {build}")?;
            }
        }
        CacheCommand::Clean { build, all } => {
            let names: Vec<String> = if all {
                cache.builds()?.into_iter().map(|b| b.name).collect()
            } else {
                build.into_iter().collect()
            };
            let mut removed = 0;
            for name in &names {
                removed += cache.clean(name)?;
            }
            writeln!(
                out,
                "removed {removed} file{} from {} build{}",
                plural(removed),
                names.len(),
                plural(names.len())
            )?;
        }
        CacheCommand::Report { output_dir, format } => {
            let rows = report::rows(&cache.builds()?);
            let written = match format {
                ReportFormat::CsvJson => {
                    let (csv, json) = write_report(&output_dir, &rows)?;
                    format!("{csv} and {json}")
                }
                ReportFormat::Html => write_page(&output_dir, &dir, &rows)?.to_string(),
            };
            writeln!(
                out,
                "{} row{} written to {written}",
                rows.len(),
                plural(rows.len())
            )?;
        }
    }
    Ok(ExitCode::Success)
}

/// A build's row of `cache list`: `<name>  <status>  <runtime> <mean> ms, ...`, or its name
/// and the problems of a damaged build.
fn list_row(table: &mut TextTable, build: &BuildEntry) {
    let problems = build.problems();
    if !problems.is_empty() {
        let damaged = format!("DAMAGED: {}", problems.join("; "));
        table.spanning_row([build.name.clone(), damaged]);
        return;
    }
    let status = match &build.state {
        Ok(Some(state)) => state.build_status.as_str(),
        _ => "unknown",
    };
    let runtimes: Vec<String> = match &build.stats {
        Ok(Some(stats)) => stats
            .runtimes
            .iter()
            .map(|(name, record)| match &record.statistics {
                Some(s) if record.status == "ok" => format!("{name} {:.4} ms", s.mean_ms),
                _ => format!("{name} failed"),
            })
            .collect(),
        _ => Vec::new(),
    };
    table.row([build.name.clone(), status.to_owned(), runtimes.join(", ")]);
}

/// Writes `benchit-report-<date>.html` in `dir`: the cache's builds and their latencies on one
/// page made of the HTML report's pieces; returns its path.
fn write_page(
    dir: &Utf8Path,
    cache_dir: &Utf8Path,
    rows: &[report::ReportRow],
) -> crate::errors::Result<Utf8PathBuf> {
    use milabench_html::{Cell, Page, Table, headline, section};
    fs_err::create_dir_all(dir)?;
    let date = jiff::Zoned::now().date();
    let path = dir.join(format!("benchit-report-{date}.html"));
    let mut page = Page::new("benchit cache report");
    let ok = rows.iter().filter(|r| r.status == "ok").count();
    page.push(&headline(
        &format!("{ok} of {} measured", rows.len()),
        "build and runtime pairs",
        &[
            ("Cache".to_owned(), cache_dir.to_string()),
            ("Date".to_owned(), date.to_string()),
        ],
    ));
    let mut table = Table::new(
        "builds",
        &[
            ("build", "build"),
            ("model", "model"),
            ("runtime", "runtime"),
            ("device", "device"),
            ("status", "status"),
            ("mean_ms", "mean ms ± 95%"),
            ("median_ms", "median ms"),
            ("p90_ms", "p90 ms"),
            ("throughput", "samples/s"),
            ("error", "error"),
        ],
    );
    let number = |x: Option<f64>| Cell::number(x.unwrap_or(f64::NAN), 4);
    for r in rows {
        let half = match (r.ci95_low_ms, r.ci95_high_ms) {
            (Some(low), Some(high)) => Interval { low, high }.half_width(),
            _ => f64::NAN,
        };
        let key = format!("{} {}", r.build_name, r.runtime);
        table.row(
            &key,
            vec![
                Cell::Text(r.build_name.clone()),
                Cell::Text(r.model_name.clone()),
                Cell::Text(r.runtime.clone()),
                Cell::Text(r.device.clone()),
                Cell::Text(r.status.clone()),
                Cell::interval(r.mean_ms.unwrap_or(f64::NAN), half, 4),
                number(r.median_ms),
                number(r.p90_ms),
                Cell::number(r.throughput.unwrap_or(f64::NAN), 1),
                Cell::Text(r.error.clone()),
            ],
            if r.status == "error" {
                vec!["failed"]
            } else {
                Vec::new()
            },
        );
    }
    page.push(&section("builds", "Builds and runtimes", &table.render()));
    fs_err::write(&path, page.finish())?;
    Ok(path)
}

/// Writes `benchit-report-<date>.csv` and `.json` in `dir`; returns their paths.
fn write_report(
    dir: &Utf8Path,
    rows: &[report::ReportRow],
) -> crate::errors::Result<(Utf8PathBuf, Utf8PathBuf)> {
    fs_err::create_dir_all(dir)?;
    let date = jiff::Zoned::now().date();
    let csv = dir.join(format!("benchit-report-{date}.csv"));
    let json = dir.join(format!("benchit-report-{date}.json"));
    fs_err::write(&csv, report::to_csv(rows))?;
    fs_err::write(&json, serde_json::to_string_pretty(rows)? + "\n")?;
    Ok((csv, json))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
