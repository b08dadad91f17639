//! `milabench load`: flags -> a load spec, the run, then a table or JSON, and the run folder's
//! events when asked.

use anyhow::Context as _;
use milabench::ExitCode;
use milabench_load::workload::Workload;
use milabench_load::{
    Api, Endpoint, LatencySummary, LoadResult, LoadSpec, RequestOptions, Scenario, Slo, Step,
};
use milabench_metrics::{DataFileWriter, Record};
use serde_json::{Map, Value, json};

use crate::args::{LoadApi, LoadArgs, LoadFormat, LoadScenario};
use crate::output::{note, write_output};

/// Runs the load and prints what it measured.
pub fn run(args: &LoadArgs) -> anyhow::Result<ExitCode> {
    let spec = spec(args)?;
    let result = milabench_load::run(&spec)?;
    if let Some(dir) = &args.run_dir {
        let path = dir.join(format!("{}.data", args.name));
        std::fs::create_dir_all(dir).with_context(|| format!("could not create {dir}"))?;
        let command: Vec<String> = std::env::args().collect();
        let records = milabench_load::events::records(&result, &args.name, &command, config(args));
        write_records(&path, &records)?;
        note(&format!("results written to {path}"));
    }
    let text = match args.format {
        LoadFormat::Text => text(&spec, &result),
        LoadFormat::Json => {
            let steps: Vec<Value> = result
                .steps
                .iter()
                .map(|s| json!({"scenario": s.scenario, "held": s.held, "summary": s.summary}))
                .collect();
            let out = json!({
                "endpoint": spec.endpoint.url,
                "model": spec.options.model,
                "steps": steps,
                "highest_held_rate": result.highest_held_rate,
                "failure": result.failure(),
            });
            serde_json::to_string_pretty(&out)? + "\n"
        }
    };
    write_output(None, &text)?;
    Ok(if result.failure().is_some() {
        ExitCode::BenchmarkFailures
    } else {
        ExitCode::Success
    })
}

fn write_records(path: &camino::Utf8Path, records: &[Record]) -> anyhow::Result<()> {
    let mut writer = DataFileWriter::open(path.as_std_path())?;
    writer.append_all(records)?;
    Ok(())
}

fn config(args: &LoadArgs) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("endpoint".into(), json!(args.endpoint));
    m.insert("model".into(), json!(args.model));
    m.insert(
        "scenario".into(),
        json!(format!("{:?}", args.scenario).to_lowercase()),
    );
    m.insert("slo".into(), json!(args.slo));
    m
}

fn spec(args: &LoadArgs) -> anyhow::Result<LoadSpec> {
    let bad = |flag: &str, e: String| anyhow::anyhow!("invalid {flag}: {e}");
    let workload = match &args.prompts {
        Some(path) => Workload::from_file(path.as_std_path())?,
        None => Workload::Synthetic {
            input: args
                .input_tokens
                .parse()
                .map_err(|e| bad("--input-tokens", e))?,
            output: args
                .output_tokens
                .parse()
                .map_err(|e| bad("--output-tokens", e))?,
        },
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
    };
    let max_requests = match (args.requests, args.scenario) {
        (Some(n), _) => n,
        (None, LoadScenario::Offline) => 100,
        (None, _) => usize::MAX,
    };
    Ok(LoadSpec {
        endpoint: Endpoint::parse(&args.endpoint)?,
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
    })
}

fn ms(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}", x * 1e3)
    } else {
        "-".into()
    }
}

fn with_interval(value: f64, low: f64, high: f64, digits: usize) -> String {
    if low.is_finite() && high.is_finite() {
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
    out += &format!(
        "{:<10} {:>24} {:>9} {:>9} {:>9} {:>9} {:>24}\n",
        "ms", "mean [95% interval]", "p50", "p90", "p95", "p99", "p99 [95% interval]"
    );
    let row = |name: &str, l: &LatencySummary| {
        let scaled = |i: &milabench_load::Interval| {
            with_interval(i.value * 1e3, i.low * 1e3, i.high * 1e3, 2)
        };
        format!(
            "{name:<10} {:>24} {:>9} {:>9} {:>9} {:>9} {:>24}\n",
            scaled(&l.mean),
            ms(l.p50.value),
            ms(l.p90.value),
            ms(l.p95.value),
            ms(l.p99.value),
            scaled(&l.p99),
        )
    };
    out += &row("ttft", &s.ttft);
    out += &row("tpot", &s.tpot);
    out += &row("itl", &s.itl);
    out += &row("e2e", &s.e2e);
    let t = &s.request_throughput;
    let o = &s.output_throughput;
    out += &format!(
        "\nthroughput: {} requests/s, {} output tokens/s\n",
        with_interval(t.value, t.low, t.high, 2),
        with_interval(o.value, o.low, o.high, 1)
    );
    if let (Some(g), Some(share)) = (&s.goodput, s.slo_attainment) {
        out += &format!(
            "goodput: {} requests/s within the SLO ({:.1}% of requests); {}\n",
            with_interval(g.value, g.low, g.high, 2),
            share * 100.0,
            if step.held { "held" } else { "NOT held" }
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

fn text(spec: &LoadSpec, result: &LoadResult) -> String {
    let mut out = String::new();
    if result.sweep {
        out += &format!(
            "{:>12} {:>12} {:>10} {:>10} {:>8} {:>6}\n",
            "rate", "achieved", "ttft p99", "tpot p99", "in SLO", "held"
        );
        for step in &result.steps {
            let s = &step.summary;
            let Scenario::Server { rate } = step.scenario else {
                continue;
            };
            out += &format!(
                "{:>12.2} {:>12.2} {:>10} {:>10} {:>8} {:>6}\n",
                rate,
                s.request_throughput.value,
                ms(s.ttft.p99.value),
                ms(s.tpot.p99.value),
                s.slo_attainment
                    .map_or("-".into(), |a| format!("{:.1}%", a * 100.0)),
                if step.held { "yes" } else { "no" }
            );
        }
        out += &match result.highest_held_rate {
            Some(rate) => format!("highest rate that held: {rate:.2} requests/s\n\n"),
            None => "no rate held\n\n".into(),
        };
    }
    if let Some(step) = result.headline() {
        out += &step_text(spec, step);
    }
    if let Some(failure) = result.failure() {
        out += &format!("FAILED: {failure}\n");
    }
    out
}
