//! `milabench load`: flags -> a load spec (and the server to start, if any), the run, then a
//! table, JSON, the run folder's events, or data events for the orchestrator.

use milabench::ExitCode;
use milabench::observe::Interrupt;
use milabench::serving::{
    Api, ArrivalShape, DataChannelWriter, Endpoint, Interval, LatencySummary, LengthDist,
    LoadResult, LoadSpec, ManagedServer, Measured, RequestOptions, ResultsFile, STOP_GRACE,
    Scenario, ServerOutput, Slo, SloSearch, Step, Stop, Workload, command_and_url,
};
use milabench_vocab::TextTable;
use serde_json::{Map, Value, json};

use crate::args::{LoadApi, LoadArgs, LoadFormat, LoadScenario};
use crate::output::{note, warn, write_output};

/// Runs the load (starting its server first when one is given) and shows what it measured.
/// Every flag is checked, the server log and the results file opened, before the server is
/// started or a request sent.
pub fn run(args: &LoadArgs) -> crate::errors::Result<ExitCode> {
    let interrupt = Interrupt::new();
    let _ctrl_c = milabench::observe::install_ctrl_c(interrupt.clone())?;
    let stop = Stop::new();
    let _on_ctrl_c = {
        let stop = stop.clone();
        interrupt.on_trigger(move || stop.trigger("interrupted"))
    };
    let launch = if args.serve.is_empty() {
        None
    } else {
        Some(command_and_url(&args.serve)?)
    };
    let url = match (&launch, &args.endpoint) {
        (Some((_, url)), _) | (None, Some(url)) => url.clone(),
        (None, None) => {
            crate::errors::bail!("give the server's --endpoint URL, or its command after --")
        }
    };
    let spec = spec(args, Endpoint::parse(&url)?)?;
    spec.check()?;
    if args.ca_cert.is_some() && !spec.endpoint.tls {
        warn("--ca-cert is not used: the endpoint is http://, without TLS");
    }
    let output = server_output(args)?;
    let mut results = args
        .run_dir
        .as_ref()
        .map(|dir| ResultsFile::create(dir.as_std_path(), &args.name))
        .transpose()?;
    let server = match launch {
        None => None,
        Some((argv, _)) => match start_server(args, &argv, &spec.endpoint, output, &stop) {
            Ok(server) => Some(server),
            Err(err) if interrupt.is_set() => {
                note(&format!("{err:#}"));
                return Ok(ExitCode::Interrupted);
            }
            Err(err) => return Err(err),
        },
    };
    // A second Ctrl-C kills the server at once, with this process.
    let _watched = server
        .as_ref()
        .map(|s| interrupt.watch_group(s.process_group()));
    let result = milabench::serving::run(&spec, &stop);
    // What was measured is written before the server is stopped (which may take a while).
    let shown = match &result {
        Ok(result) => show(args, &spec, result, results.as_mut()),
        Err(_) => Ok(()),
    };
    if let Some(server) = server {
        stop_server(server);
    }
    let result = result?;
    shown?;
    Ok(if interrupt.is_set() {
        ExitCode::Interrupted
    } else if result.failure().is_some() {
        ExitCode::BenchmarkFailures
    } else {
        ExitCode::Success
    })
}

/// Where the started server's output goes: `--server-log`, else stderr when stdout carries
/// JSON (servers such as vLLM log on stdout), else this command's own output.
fn server_output(args: &LoadArgs) -> crate::errors::Result<ServerOutput> {
    if args.serve.is_empty() {
        return Ok(ServerOutput::Inherit);
    }
    if let Some(path) = &args.server_log {
        let file = std::fs::File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| crate::errors::usage!("cannot open --server-log {path}: {e}"))?;
        return Ok(ServerOutput::File(file));
    }
    Ok(if args.format == LoadFormat::Json && !args.emit_events {
        ServerOutput::Stderr
    } else {
        ServerOutput::Inherit
    })
}

/// Starts `argv`, the server command, and waits until it answers at `endpoint`.
fn start_server(
    args: &LoadArgs,
    argv: &[String],
    endpoint: &Endpoint,
    output: ServerOutput,
    stop: &Stop,
) -> crate::errors::Result<ManagedServer> {
    let quiet = args.emit_events || args.format == LoadFormat::Json;
    if !quiet {
        note(&format!("starting the server: {}", argv.join(" ")));
    }
    let server = ManagedServer::start(argv, output, stop)?;
    let took = server.wait_ready(endpoint, &args.health, args.ready_timeout, stop)?;
    if !quiet {
        note(&format!(
            "the server answered {} after {:.1} s",
            args.health,
            took.as_secs_f64()
        ));
    }
    Ok(server)
}

/// Stops the server and what it started, saying when it is slow to go and what outlived it.
fn stop_server(server: ManagedServer) {
    let stopped = server.stop(STOP_GRACE, |left| {
        note(&format!(
            "the server is still running after SIGTERM: waiting up to {:.0} s for the server to stop before killing it",
            left.as_secs_f64().ceil()
        ));
    });
    if !stopped.left_running.is_empty() {
        let pids: Vec<String> = stopped.left_running.iter().map(i32::to_string).collect();
        note(&format!(
            "warning: processes the server started still run after SIGKILL: {}",
            pids.join(", ")
        ));
    }
}

/// Writes the results where the flags say: stdout first, then the results file (so a file that
/// cannot be written loses nothing shown).
fn show(
    args: &LoadArgs,
    spec: &LoadSpec,
    result: &LoadResult,
    results: Option<&mut ResultsFile>,
) -> crate::errors::Result<()> {
    let command: Vec<String> = std::env::args().collect();
    let records = milabench::serving::records(result, &args.name, &command, config(args, spec));
    if args.emit_events {
        let data_fd = std::env::var("DATA_FD").ok();
        DataChannelWriter::open(data_fd.as_deref())?.send(&records)?;
        return Ok(());
    }
    let text = match args.format {
        LoadFormat::Text => text(spec, result),
        LoadFormat::Json => {
            let steps: Vec<Value> = result
                .steps
                .iter()
                .map(|s| {
                    json!({
                        "scenario": s.scenario,
                        "held": s.held,
                        "interrupted": s.interrupted,
                        "summary": s.summary,
                    })
                })
                .collect();
            let out = json!({
                "endpoint": spec.endpoint.url,
                "model": spec.options.model,
                "steps": steps,
                "highest_held_rate": result.highest_held_rate,
                "slo_search": result.slo_search,
                "stopped": result.stopped,
                "failure": result.failure(),
                "definitions": definitions(),
            });
            serde_json::to_string_pretty(&out)? + "\n"
        }
    };
    write_output(None, &text)?;
    if let Some(results) = results {
        let path = results.write(&records)?;
        note(&format!("results written to {}", path.display()));
    }
    Ok(())
}

fn config(args: &LoadArgs, spec: &LoadSpec) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("endpoint".into(), json!(spec.endpoint.url));
    m.insert("model".into(), json!(args.model));
    m.insert(
        "scenario".into(),
        json!(format!("{:?}", args.scenario).to_lowercase()),
    );
    m.insert("slo".into(), json!(args.slo));
    if !args.serve.is_empty() {
        m.insert("server".into(), json!(args.serve));
    }
    m
}

fn spec(args: &LoadArgs, endpoint: Endpoint) -> crate::errors::Result<LoadSpec> {
    let bad = |flag: &str, e: String| crate::errors::usage!("invalid {flag}: {e}");
    let lengths = || -> crate::errors::Result<(LengthDist, LengthDist)> {
        Ok((
            args.input_tokens
                .parse()
                .map_err(|e| bad("--input-tokens", e))?,
            args.output_tokens
                .parse()
                .map_err(|e| bad("--output-tokens", e))?,
        ))
    };
    let workload = match (&args.prompts, &args.trace) {
        (Some(path), _) => Workload::from_file(path.as_std_path())?,
        (None, Some(path)) => Workload::from_trace(path.as_std_path())?,
        (None, None) => {
            let (input, output) = lengths()?;
            match (args.prefix_tokens, args.turns) {
                (Some(prefix_tokens), _) => Workload::SharedPrefix {
                    input,
                    output,
                    prefix_tokens,
                    prefixes: args.prefixes,
                },
                (None, Some(turns)) => Workload::Sessions {
                    input,
                    output,
                    turns,
                },
                (None, None) => Workload::Synthetic { input, output },
            }
        }
    };
    let scenario = match args.scenario {
        LoadScenario::Offline => Scenario::Offline,
        LoadScenario::Server => Scenario::Server { rate: args.rate },
        LoadScenario::Concurrency => Scenario::Concurrency {
            n: args.concurrency,
        },
        LoadScenario::Sweep => Scenario::Sweep {
            start: args.rate,
            factor: args.sweep_factor,
            steps: args.sweep_steps,
        },
        LoadScenario::SloSearch => Scenario::SloSearch {
            low: args.rate,
            high: args.max_rate.ok_or_else(|| {
                crate::errors::usage!(
                    "invalid --scenario slo-search: it needs the highest rate to try; give --max-rate RATE"
                )
            })?,
            steps: args.sweep_steps,
            repeats: args.repeats,
        },
        LoadScenario::Replay => Scenario::Replay,
    };
    let max_requests = match (args.requests, args.scenario) {
        (Some(n), _) => n,
        (None, LoadScenario::Offline) => 100,
        (None, _) => usize::MAX,
    };
    Ok(LoadSpec {
        endpoint,
        options: RequestOptions {
            api: match args.api {
                LoadApi::Completions => Api::Completions,
                LoadApi::Chat => Api::Chat,
            },
            model: args.model.clone(),
            ignore_eos: args.ignore_eos,
            timeout: args.timeout,
        },
        workload,
        scenario,
        duration: args.duration,
        max_requests,
        seed: args.seed,
        default_max_tokens: args.max_tokens,
        max_connections: args.max_connections,
        slo: args
            .slo
            .as_deref()
            .map(Slo::parse)
            .transpose()
            .map_err(|e| bad("--slo", e))?,
        arrivals: ArrivalShape {
            burstiness: args.burstiness,
            ramp_up: args.ramp_up,
        },
        ca_cert: args.ca_cert.as_ref().map(|p| p.clone().into_std_path_buf()),
    })
}

/// [`milabench::serving::DEFINITIONS`] as a JSON object, in their order.
fn definitions() -> Value {
    Value::Object(
        milabench::serving::DEFINITIONS
            .iter()
            .map(|(key, meaning)| ((*key).to_owned(), json!(meaning)))
            .collect(),
    )
}

fn ms(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}", x * 1e3)
    } else {
        "-".into()
    }
}

fn with_interval(value: f64, interval: Interval, digits: usize) -> String {
    if interval.is_known() {
        let Interval { low, high } = interval;
        format!("{value:.digits$} [{low:.digits$}, {high:.digits$}]")
    } else if value.is_finite() {
        format!("{value:.digits$}")
    } else {
        "-".into()
    }
}

fn scenario_line(spec: &LoadSpec, scenario: Scenario) -> String {
    let what = match scenario {
        Scenario::Offline => "offline".to_owned(),
        Scenario::Server { rate } => format!("server at {rate} requests/s"),
        Scenario::Concurrency { n } => format!("concurrency {n}"),
        Scenario::Sweep { .. } => "sweep".to_owned(),
        Scenario::SloSearch { .. } => "SLO search".to_owned(),
        Scenario::Replay => "trace replay".to_owned(),
    };
    format!(
        "{what} against {} (model {})",
        spec.endpoint.url, spec.options.model
    )
}

fn step_text(spec: &LoadSpec, step: &Step) -> String {
    let s = &step.summary;
    let mut out = scenario_line(spec, step.scenario) + "\n";
    out += &format!(
        "requests: {} sent, {} succeeded, {} failed in {:.2} s\n\n",
        s.requests, s.succeeded, s.failed, s.duration
    );
    let mut latencies = TextTable::new([
        "ms",
        "mean [95% interval]",
        "p50",
        "p90",
        "p95",
        "p99",
        "p99 [95% interval]",
    ])
    .right_aligned(1..7);
    let mut row = |name: &str, l: &LatencySummary| {
        let scaled = |m: &Measured| {
            let Interval { low, high } = m.interval;
            let interval = Interval {
                low: low * 1e3,
                high: high * 1e3,
            };
            with_interval(m.value * 1e3, interval, 2)
        };
        latencies.row([
            name.to_owned(),
            scaled(&l.mean),
            ms(l.p50.value),
            ms(l.p90.value),
            ms(l.p95.value),
            ms(l.p99.value),
            scaled(&l.p99),
        ]);
    };
    row("ttft", &s.ttft);
    if let Some(text_ttft) = &s.content_ttft {
        row("ttft text", text_ttft);
    }
    row("tpot", &s.tpot);
    row("tpot all", &s.tpot_with_first);
    row("itl", &s.itl);
    row("e2e", &s.e2e);
    row("ttft sched", &s.ttft_from_schedule);
    row("e2e sched", &s.e2e_from_schedule);
    out += &latencies.render();
    out += "ttft, e2e: from the actual send; sched: from the scheduled send time (the client's \
            send delay included); tpot: after the first token, (e2e - ttft) / (tokens - 1); \
            tpot all: e2e / tokens, the first included; ttft: to the first token of any kind \
            (ttft text: of the answer's text); tokens: the server's usage, else the stream's \
            token events (never fewer than those)\n";
    let t = &s.request_throughput;
    let o = &s.output_throughput;
    out += &format!(
        "\nthroughput: {} requests/s, {} output tokens/s\n",
        with_interval(t.value, t.interval, 2),
        with_interval(o.value, o.interval, 1)
    );
    if let (Some(g), Some(share)) = (&s.goodput, s.slo_attainment) {
        out += &format!(
            "goodput: {} requests/s within the SLO ({:.1}% of requests); {}\n",
            with_interval(g.value, g.interval, 2),
            share * 100.0,
            match (step.interrupted, step.held) {
                (true, _) => "interrupted",
                (false, true) => "held",
                (false, false) => "NOT held",
            }
        );
    }
    out += &format!("tokens: {} in, {} out\n", s.input_tokens, s.output_tokens);
    let late = &s.lateness;
    out += &format!(
        "sent late against the schedule: p50 {} ms, p99 {} ms, max {} ms",
        ms(late.p50),
        ms(late.p99),
        ms(late.max)
    );
    if let Some(ks) = &s.arrivals {
        out += &format!(
            "; inter-arrivals vs exponential: KS D {:.4}, p {:.3}",
            ks.statistic, ks.p_value
        );
    }
    out += &format!(
        "\nclient CPU: {:.1} µs per request\n",
        s.cpu_per_request * 1e6
    );
    for warning in &s.warnings {
        out += &format!("warning: {warning}\n");
    }
    for (kind, e) in &s.errors {
        out += &format!(
            "errors: {} {} (first: {})\n",
            e.count,
            kind.as_str(),
            e.example
        );
    }
    out
}

/// What an SLO search found: `SLO search: 42.50 requests/s [40.10, 44.90] (95% interval of
/// 3 searches: 41.00, 43.00, 43.50)`.
fn search_line(search: &SloSearch) -> String {
    let rates: Vec<String> = search.rates.iter().map(|r| format!("{r:.2}")).collect();
    format!(
        "SLO search: {} requests/s (95% interval of {} searches: {})\n",
        with_interval(search.rate, search.interval.unwrap_or(Interval::NAN), 2),
        rates.len(),
        rates.join(", ")
    )
}

/// A sweep step's `held` column: `yes`, `no`, or `interrupted` for a step the run did not
/// finish (its verdict would judge part of it).
fn held_word(step: &Step) -> &'static str {
    match (step.interrupted, step.held) {
        (true, _) => "interrupted",
        (false, true) => "yes",
        (false, false) => "no",
    }
}

fn text(spec: &LoadSpec, result: &LoadResult) -> String {
    let mut out = String::new();
    if result.sweep {
        let mut steps =
            TextTable::new(["rate", "achieved", "ttft p99", "tpot p99", "in SLO", "held"])
                .right_aligned(0..6);
        for step in &result.steps {
            let s = &step.summary;
            let Scenario::Server { rate } = step.scenario else {
                continue;
            };
            steps.row([
                format!("{rate:.2}"),
                format!("{:.2}", s.request_throughput.value),
                ms(s.ttft.p99.value),
                ms(s.tpot.p99.value),
                s.slo_attainment
                    .map_or("-".into(), |a| format!("{:.1}%", a * 100.0)),
                held_word(step).to_owned(),
            ]);
        }
        out += &steps.render();
        out += &match result.highest_held_rate {
            Some(rate) => format!("highest rate that held: {rate:.2} requests/s\n"),
            None => "no rate held\n".into(),
        };
        if let Some(search) = &result.slo_search {
            out += &search_line(search);
        }
        out += "\n";
    }
    if let Some(step) = result.headline() {
        out += &step_text(spec, step);
    }
    if let Some(failure) = result.failure() {
        out += &format!("FAILED: {failure}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_sweep_step_is_listed_as_such_not_as_held() {
        let step = |held, interrupted| Step {
            scenario: Scenario::Server { rate: 10.0 },
            started: std::time::SystemTime::UNIX_EPOCH,
            records: Vec::new(),
            summary: milabench::serving::Summary::of(&[], None, 0.0),
            held,
            interrupted,
        };
        let spec = spec_for_test();
        let result = LoadResult {
            sweep: true,
            steps: vec![step(true, false), step(false, false), step(false, true)],
            highest_held_rate: Some(10.0),
            slo_search: None,
            stopped: Some("interrupted".into()),
        };
        let table = text(&spec, &result);
        let verdicts: Vec<&str> = table
            .lines()
            .skip(1)
            .take(3)
            .filter_map(|line| line.split_whitespace().last())
            .collect();
        assert_eq!(verdicts, ["yes", "no", "interrupted"], "{table}");
    }

    /// A rate wider than the others widens its column: every line of the sweep's table ends
    /// at the same place (its columns are all right-aligned).
    #[test]
    fn a_wide_rate_widens_the_sweep_tables_column() {
        let step = |rate| Step {
            scenario: Scenario::Server { rate },
            started: std::time::SystemTime::UNIX_EPOCH,
            records: Vec::new(),
            summary: milabench_load::Summary::of(&[], None, 0.0),
            held: true,
            interrupted: false,
        };
        let result = LoadResult {
            sweep: true,
            steps: vec![step(10.0), step(1e12)],
            highest_held_rate: Some(1e12),
            slo_search: None,
            stopped: None,
        };
        let text = text(&spec_for_test(), &result);
        let widths: Vec<usize> = text.lines().take(3).map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{text}");
        assert!(
            text.lines().nth(2).unwrap().contains("1000000000000.00"),
            "{text}"
        );
    }

    fn spec_for_test() -> LoadSpec {
        milabench_load::mock::load_spec(
            "http://127.0.0.1:9",
            Scenario::Server { rate: 10.0 },
            std::time::Duration::from_secs(1),
        )
        .expect("spec")
    }
}
