//! Measurement truth of the load generator (for `cargo xtask bench --only load`): the mock
//! server with known timing driven by the `server` scenario at 10, 200 and 1,000 requests/s;
//! prints one JSON line per rate with each median's distance from the truth, the p99 lateness
//! of the sends against the schedule, the Kolmogorov–Smirnov p-value of the inter-arrival
//! times and the client's CPU per request. Argument: seconds per rate (default 10).

use std::time::Duration;

use milabench_load::mock::{MockConfig, MockServer};
use milabench_load::{
    Api, Endpoint, LengthDist, LoadSpec, RequestOptions, Scenario, Stop, Workload, run,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10);
    let config = MockConfig::default();
    for rate in [10.0, 200.0, 1000.0] {
        let server = MockServer::start(config)?;
        let spec = LoadSpec {
            endpoint: Endpoint::parse(&server.url())?,
            options: RequestOptions {
                api: Api::Completions,
                model: "mock".into(),
                ignore_eos: true,
                timeout: Duration::from_secs(10),
            },
            workload: Workload::Synthetic {
                input: LengthDist::Fixed(32),
                output: LengthDist::Fixed(config.output_tokens),
            },
            scenario: Scenario::Server { rate },
            duration: Duration::from_secs(seconds),
            max_requests: usize::MAX,
            seed: 1,
            default_max_tokens: 16,
            max_connections: 4096,
            slo: None,
            ca_cert: None,
        };
        let result = run(&spec, &Stop::new())?;
        let s = &result.steps[0].summary;
        let off = |measured: f64, truth: Duration| (measured - truth.as_secs_f64()) * 1e3;
        let line = serde_json::json!({
            "rate": rate,
            "requests": s.requests,
            "failed": s.failed,
            "achieved": s.request_throughput.value,
            "ttft_median_off_ms": off(s.ttft.p50.value, config.ttft),
            "tpot_median_off_ms": off(s.tpot.p50.value, config.gap),
            "itl_median_off_ms": off(s.itl.p50.value, config.gap),
            "e2e_median_off_ms": off(s.e2e.p50.value, config.e2e()),
            "lateness_p99_ms": s.lateness.p99 * 1e3,
            "ks_p_value": s.arrivals.map(|k| k.p_value),
            "cpu_per_request_us": s.cpu_per_request * 1e6,
        });
        #[allow(clippy::print_stdout)]
        {
            println!("{line}");
        }
    }
    Ok(())
}
