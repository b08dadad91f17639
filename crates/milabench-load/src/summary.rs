//! Aggregates of a run's requests: latency percentiles and means, throughputs and goodput
//! under an SLO, each with its 95% interval; how late requests left against their schedule;
//! the errors by kind.

use std::collections::BTreeMap;
use std::time::Duration;

use milabench_stats::{Estimate, Interval};
use serde::Serialize;

use crate::client::{ErrorKind, MAX_TOKENS_PER_EVENT, RequestRecord, UsageMismatch};
use crate::schedule::KsTest;

/// The fewest batch means an interval of a mean is drawn from: two or three batches are too few
/// to tell their spread (two equal ones would give an interval of zero width).
pub const MIN_BATCHES: usize = 4;

/// A measured value with its 95% interval (NaN bounds when too few samples give one);
/// serialised flat, `{"value": .., "low": .., "high": ..}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    /// The estimate.
    pub value: f64,
    /// Its 95% interval.
    #[serde(flatten)]
    pub interval: Interval,
}

impl Measured {
    /// Nothing known.
    pub const NAN: Measured = Measured {
        value: f64::NAN,
        interval: Interval::NAN,
    };

    /// The mean of `series` (in time order) with its batch-means interval, for a quantity that
    /// is never negative (a latency, a rate): the symmetric interval of a short or skewed series
    /// is cut at 0. No interval (NaN bounds) from fewer than [`MIN_BATCHES`] batches, or of zero
    /// width: batches that all agree exactly say too little about the spread.
    fn batch_mean(series: &[f64]) -> Measured {
        let e = Estimate::of_series(series);
        let half = e.half_width();
        if !(e.dof + 1.0 >= MIN_BATCHES as f64 && half > 0.0) {
            return Measured {
                value: e.mean,
                interval: Interval::NAN,
            };
        }
        let interval = Interval::of(&e);
        Measured {
            value: e.mean,
            interval: Interval {
                low: interval.low.max(0.0),
                ..interval
            },
        }
    }
}

/// One latency's distribution over the successful requests, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: usize,
    /// Mean, with a batch-means interval over the samples in completion order.
    pub mean: Measured,
    /// Median, with a distribution-free (order-statistic) interval; so are the others.
    pub p50: Measured,
    /// 90th percentile.
    pub p90: Measured,
    /// 95th percentile.
    pub p95: Measured,
    /// 99th percentile.
    pub p99: Measured,
}

impl LatencySummary {
    /// The summary of `samples`, given in completion order.
    pub fn of(samples: &[f64]) -> LatencySummary {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        LatencySummary {
            count: samples.len(),
            mean: Measured::batch_mean(samples),
            p50: quantile(&sorted, 0.50),
            p90: quantile(&sorted, 0.90),
            p95: quantile(&sorted, 0.95),
            p99: quantile(&sorted, 0.99),
        }
    }
}

/// The `q` quantile of `sorted` (linear interpolation between order statistics), with its
/// distribution-free interval ([`Interval::of_quantile`]).
pub fn quantile(sorted: &[f64], q: f64) -> Measured {
    if sorted.is_empty() {
        return Measured::NAN;
    }
    Measured {
        value: milabench_stats::quantile_sorted(sorted, q),
        interval: Interval::of_quantile(sorted, q),
    }
}

/// Latency bounds a request must meet to count in goodput; a bound left out always holds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Slo {
    /// Largest time to first token.
    pub ttft: Option<Duration>,
    /// Largest time per output token.
    pub tpot: Option<Duration>,
    /// Largest end-to-end latency.
    pub e2e: Option<Duration>,
}

impl Slo {
    /// Parses `ttft=500ms,tpot=50ms[,e2e=10s]`: each bound once, each above 0.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let mut slo = Slo::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not KEY=DURATION (e.g. ttft=500ms)"))?;
            let key = key.trim();
            let bound = match key {
                "ttft" => &mut slo.ttft,
                "tpot" => &mut slo.tpot,
                "e2e" => &mut slo.e2e,
                other => {
                    return Err(format!(
                        "`{other}` is not a bound of the SLO: use ttft, tpot or e2e"
                    ));
                }
            };
            if bound.is_some() {
                return Err(format!("`{key}` is bounded twice: give each bound once"));
            }
            let value = parse_duration(value)?;
            if value.is_zero() {
                return Err(format!(
                    "`{part}`: no request can meet a bound of 0; give a duration above 0 (e.g. {key}=500ms)"
                ));
            }
            *bound = Some(value);
        }
        if slo == Slo::default() {
            return Err(format!("`{text}` sets no bound"));
        }
        Ok(slo)
    }

    /// Whether a request met every bound (a failed request never does).
    pub fn met_by(&self, record: &RequestRecord) -> bool {
        let within = |bound: Option<Duration>, x: Option<f64>| match (bound, x) {
            (None, _) => true,
            (Some(b), Some(x)) => x <= b.as_secs_f64(),
            (Some(_), None) => false,
        };
        record.ok()
            && within(self.ttft, record.ttft)
            && within(self.e2e, Some(record.latency))
            // A one-token answer has no TPOT to miss.
            && (self.tpot.is_none() || record.output_tokens <= 1 || within(self.tpot, record.tpot()))
    }
}

/// The longest duration [`parse_duration`] accepts: a year, longer than any load run, and far
/// from where the clock's arithmetic overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses `500ms`, `2s`, `1.5s`, `1e3ms`, `250us`, `3m`, `1h` (a bare number is seconds), from
/// 0 to [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let not_a_duration = || format!("`{text}` is not a duration (e.g. 500ms, 60s)");
    if number.trim().is_empty() {
        return Err(not_a_duration());
    }
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("`{text}`: the unit must be us, ms, s, m or h")),
    };
    let seconds = number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(not_a_duration)?
        * scale;
    if seconds < 0.0 {
        return Err(format!("`{text}`: a duration cannot be negative"));
    }
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{text}` is longer than the longest duration accepted, 365 days (8760h)"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// How many requests failed one way, with the first one's text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorCount {
    /// Requests that failed this way.
    pub count: usize,
    /// The first one's error text.
    pub example: String,
}

/// How late requests were sent against their schedule, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Lateness {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// What each latency and count of a [`Summary`] means, by its JSON key: `milabench load`'s JSON
/// output carries them as `definitions`, so its numbers say how they were measured (TPOT with
/// or without the first token, tokens from `usage` or from the stream, TTFT to which token,
/// latency from which send time).
pub const DEFINITIONS: [(&str, &str); 11] = [
    (
        "ttft",
        "time to first token: from the request's actual send to its first token event of any kind (reasoning included), not only of the answer's text",
    ),
    (
        "content_ttft",
        "time to the first token of the answer's text, from the actual send (given when some answers began with reasoning)",
    ),
    (
        "ttft_from_schedule",
        "as ttft, from the request's scheduled send time: the client's own send delay included (in concurrency runs a request is due when a slot frees)",
    ),
    (
        "e2e",
        "end-to-end latency, from the actual send to the stream's end",
    ),
    (
        "e2e_from_schedule",
        "as e2e, from the scheduled send time: the client's own send delay included",
    ),
    (
        "lateness",
        "the send delay: actual send minus scheduled send time",
    ),
    (
        "tpot",
        "time per output token without the first: (e2e - ttft) / (output_tokens - 1), as vLLM counts it",
    ),
    (
        "tpot_with_first",
        "time per output token with the first: e2e / output_tokens, as GuideLLM counts it",
    ),
    ("itl", "inter-token latency: every gap between token events"),
    (
        "output_tokens",
        "the server's usage (completion_tokens), else the stream's token events counted; never fewer than the token events",
    ),
    (
        "units",
        "latencies in seconds; throughputs per second; intervals are 95% intervals",
    ),
];

/// The aggregates of one run (one step of a sweep).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Requests sent.
    pub requests: usize,
    /// Requests that succeeded.
    pub succeeded: usize,
    /// Requests that failed.
    pub failed: usize,
    /// Failures by kind.
    pub errors: BTreeMap<ErrorKind, ErrorCount>,
    /// Seconds from the run's start to the last answer.
    pub duration: f64,
    /// Successful requests per second.
    pub request_throughput: Measured,
    /// Output tokens of successful requests per second.
    pub output_throughput: Measured,
    /// Requests per second that met the SLO (when one is given).
    pub goodput: Option<Measured>,
    /// Share of sent requests that met the SLO (when one is given).
    pub slo_attainment: Option<f64>,
    /// Time to the first generated token (reasoning included).
    pub ttft: LatencySummary,
    /// Time to the first token of the answer's text, when some answers began with reasoning
    /// (then later than `ttft`); `None` when every answer began with its text.
    pub content_ttft: Option<LatencySummary>,
    /// Time per output token after the first: `(e2e - ttft) / (tokens - 1)`.
    pub tpot: LatencySummary,
    /// Time per output token counting the first: `e2e / tokens` (other tools' TPOT).
    pub tpot_with_first: LatencySummary,
    /// Inter-token latency: every gap between token events.
    pub itl: LatencySummary,
    /// End-to-end latency.
    pub e2e: LatencySummary,
    /// Time to the first token from the request's scheduled send time rather than its actual
    /// send: it includes the client's own delay in sending (coordinated omission's hidden
    /// queue). In concurrency runs a request is due when a slot frees.
    pub ttft_from_schedule: LatencySummary,
    /// End-to-end latency from the scheduled send time, as `ttft_from_schedule`.
    pub e2e_from_schedule: LatencySummary,
    /// Prompt tokens of successful requests.
    pub input_tokens: u64,
    /// Output tokens of successful requests.
    pub output_tokens: u64,
    /// Send times against the schedule.
    pub lateness: Lateness,
    /// Inter-arrival times of the sends against the exponential (Poisson schedules only).
    pub arrivals: Option<KsTest>,
    /// The client's CPU time (user and system, every thread of the load generator) per request.
    pub cpu_per_request: f64,
    /// What makes numbers of the run doubtful, each said once (a server's usage that the
    /// stream contradicts).
    pub warnings: Vec<String>,
}

impl Summary {
    /// Aggregates `records`; `slo` decides goodput, `cpu_seconds` is the client's CPU time.
    pub fn of(records: &[RequestRecord], slo: Option<&Slo>, cpu_seconds: f64) -> Summary {
        let mut by_end: Vec<&RequestRecord> = records.iter().collect();
        by_end.sort_by(|a, b| (a.sent + a.latency).total_cmp(&(b.sent + b.latency)));
        let ok: Vec<&RequestRecord> = by_end.iter().copied().filter(|r| r.ok()).collect();
        let mut errors: BTreeMap<ErrorKind, ErrorCount> = BTreeMap::new();
        for record in records {
            if let Some(e) = &record.error {
                errors
                    .entry(e.kind)
                    .or_insert_with(|| ErrorCount {
                        count: 0,
                        example: e.text.clone(),
                    })
                    .count += 1;
            }
        }
        let duration = by_end.last().map_or(0.0, |r| r.sent + r.latency);
        let ends: Vec<f64> = ok.iter().map(|r| r.sent + r.latency).collect();
        let throughput = |weights: &[f64]| windowed_rate(&ends, weights, duration);
        let ones = vec![1.0; ends.len()];
        let (token_times, token_weights) = output_arrivals(&ok);
        let (goodput, slo_attainment) = match slo {
            Some(slo) => {
                let met: Vec<f64> = ok
                    .iter()
                    .map(|r| f64::from(u8::from(slo.met_by(r))))
                    .collect();
                let share = met.iter().sum::<f64>() / records.len().max(1) as f64;
                (Some(throughput(&met)), Some(share))
            }
            None => (None, None),
        };
        let mut late: Vec<f64> = records.iter().map(|r| r.sent - r.scheduled).collect();
        late.sort_by(f64::total_cmp);
        let pick = |q: f64| quantile(&late, q).value;
        Summary {
            requests: records.len(),
            succeeded: ok.len(),
            failed: records.len() - ok.len(),
            errors,
            duration,
            request_throughput: throughput(&ones),
            output_throughput: windowed_rate(&token_times, &token_weights, duration),
            goodput,
            slo_attainment,
            ttft: LatencySummary::of(&ok.iter().filter_map(|r| r.ttft).collect::<Vec<_>>()),
            content_ttft: ok.iter().any(|r| r.content_ttft != r.ttft).then(|| {
                LatencySummary::of(&ok.iter().filter_map(|r| r.content_ttft).collect::<Vec<_>>())
            }),
            tpot: LatencySummary::of(&ok.iter().filter_map(|r| r.tpot()).collect::<Vec<_>>()),
            tpot_with_first: LatencySummary::of(
                &ok.iter()
                    .filter_map(|r| r.tpot_with_first())
                    .collect::<Vec<_>>(),
            ),
            itl: LatencySummary::of(
                &ok.iter()
                    .flat_map(|r| r.itl.iter().copied())
                    .collect::<Vec<_>>(),
            ),
            e2e: LatencySummary::of(&ok.iter().map(|r| r.latency).collect::<Vec<_>>()),
            ttft_from_schedule: LatencySummary::of(
                &ok.iter()
                    .filter_map(|r| r.ttft.map(|t| t + r.sent - r.scheduled))
                    .collect::<Vec<_>>(),
            ),
            e2e_from_schedule: LatencySummary::of(
                &ok.iter()
                    .map(|r| r.latency + r.sent - r.scheduled)
                    .collect::<Vec<_>>(),
            ),
            input_tokens: ok
                .iter()
                .filter_map(|r| r.input_tokens)
                .map(u64::from)
                .sum(),
            output_tokens: ok.iter().map(|r| u64::from(r.output_tokens)).sum(),
            lateness: Lateness {
                p50: pick(0.5),
                p99: pick(0.99),
                max: late.last().copied().unwrap_or(f64::NAN),
            },
            arrivals: None,
            cpu_per_request: cpu_seconds / records.len().max(1) as f64,
            warnings: usage_warnings(&ok),
        }
    }
}

/// One warning per way the servers' usage disagreed with the token events of the successful
/// requests `ok`.
fn usage_warnings(ok: &[&RequestRecord]) -> Vec<String> {
    let (below, above): (Vec<UsageMismatch>, Vec<UsageMismatch>) = ok
        .iter()
        .filter_map(|r| r.usage_mismatch)
        .partition(|m| m.usage < m.events);
    let mut warnings = Vec::new();
    if let Some(first) = below.first() {
        warnings.push(format!(
            "{} requests: the server's usage counted fewer completion tokens than the stream \
             had token events (first: {} against {}), which cannot be: the events were counted \
             instead",
            below.len(),
            first.usage,
            first.events
        ));
    }
    if let Some(first) = above.first() {
        warnings.push(format!(
            "{} requests: the server's usage counted more than {MAX_TOKENS_PER_EVENT} completion \
             tokens per token event of the stream (first: {} tokens in {} events): token counts \
             and TPOT rest on that usage; check the server",
            above.len(),
            first.usage,
            first.events
        ));
    }
    warnings
}

/// Events per second over `[0, duration]`, each event at `ends[i]` weighing `weights[i]`: the
/// total over the duration, with a batch-means interval from the rates of the [`windows`].
fn windowed_rate(ends: &[f64], weights: &[f64], duration: f64) -> Measured {
    let Some((_, rates)) = windows(ends, weights, duration) else {
        return Measured::NAN;
    };
    // A sum of no floats is -0.0; adding 0.0 makes "no request" a plain 0.
    let total: f64 = weights.iter().sum::<f64>() + 0.0;
    Measured {
        value: total / duration,
        ..Measured::batch_mean(&rates)
    }
}

/// When the output of successful requests `ok` arrived: each streamed chunk's time since the
/// run's start, and its share of its request's output tokens (a chunk may carry several), so a
/// token rate over time counts tokens as they came rather than when their request ended.
pub(crate) fn output_arrivals(ok: &[&RequestRecord]) -> (Vec<f64>, Vec<f64>) {
    let mut times = Vec::new();
    let mut weights = Vec::new();
    for r in ok {
        let Some(ttft) = r.ttft else { continue };
        let weight = f64::from(r.output_tokens) / (r.itl.len() + 1) as f64;
        let mut at = r.sent + ttft;
        times.push(at);
        weights.push(weight);
        for gap in &r.itl {
            at += gap;
            times.push(at);
            weights.push(weight);
        }
    }
    (times, weights)
}

/// Fewest windows a run is cut into, so that a short run's rate still has [`MIN_BATCHES`]
/// batches of windows for its interval.
const MIN_WINDOWS: f64 = (MIN_BATCHES * MIN_BATCHES) as f64;

/// The width of the windows cutting `[0, duration]` (one second, shorter for runs under
/// [`MIN_WINDOWS`] seconds so there are that many) and the weighted rate of events in each.
pub(crate) fn windows(ends: &[f64], weights: &[f64], duration: f64) -> Option<(f64, Vec<f64>)> {
    if duration <= 0.0 || !duration.is_finite() {
        return None;
    }
    let width = (duration / MIN_WINDOWS).min(1.0);
    let count = (duration / width).floor().max(1.0) as usize;
    let mut sums = vec![0.0; count];
    for (&end, &w) in ends.iter().zip(weights) {
        let i = ((end / width) as usize).min(count - 1);
        sums[i] += w;
    }
    Some((width, sums.iter().map(|s| s / width).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RequestError;

    fn record(i: usize, ttft: f64, latency: f64, tokens: u32) -> RequestRecord {
        RequestRecord {
            index: i,
            scheduled: i as f64 * 0.1,
            sent: i as f64 * 0.1 + 0.001,
            ttft: Some(ttft),
            content_ttft: Some(ttft),
            itl: vec![(latency - ttft) / f64::from(tokens - 1); tokens as usize - 1],
            latency,
            input_tokens: Some(10),
            output_tokens: tokens,
            usage_mismatch: None,
            status: Some(200),
            error: None,
        }
    }

    #[test]
    fn latencies_from_the_schedule_add_the_send_delay() {
        let mut late = record(1, 0.02, 0.1, 5);
        late.sent = late.scheduled + 0.05;
        let records = [record(0, 0.02, 0.1, 5), late];
        let s = Summary::of(&records, None, 0.0);
        // From the actual send: both alike; from the schedule: 1 ms and 50 ms later.
        assert!((s.ttft.p50.value - 0.02).abs() < 1e-12);
        let from_schedule: (f64, f64) = (
            s.ttft_from_schedule.p50.value,
            s.e2e_from_schedule.p50.value,
        );
        assert!(
            (from_schedule.0 - (0.02 + 0.0255)).abs() < 1e-9,
            "{from_schedule:?}"
        );
        assert!(
            (from_schedule.1 - (0.1 + 0.0255)).abs() < 1e-9,
            "{from_schedule:?}"
        );
    }

    /// The interval type moved to `milabench-stats`; the `.data` and `--json` form of a
    /// measured value stays flat.
    #[test]
    fn a_measured_value_serialises_flat_with_null_for_a_missing_bound() {
        let measured = Measured {
            value: 2.0,
            interval: Interval {
                low: 1.5,
                high: f64::NAN,
            },
        };
        assert_eq!(
            serde_json::to_string(&measured).unwrap(),
            r#"{"value":2.0,"low":1.5,"high":null}"#
        );
    }

    #[test]
    fn quantiles_interpolate_and_bracket() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        let q = quantile(&sorted, 0.5);
        assert_eq!(q.value, 50.5);
        assert!(q.interval.low < 50.5 && q.interval.high > 50.5, "{q:?}");
        assert!(quantile(&sorted, 0.99).interval.high.is_nan());
        assert_eq!(quantile(&[3.0], 0.9).value, 3.0);
        assert!(quantile(&[], 0.5).value.is_nan());
    }

    #[test]
    fn durations_and_slos_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 weeks").is_err());
        assert_eq!(parse_duration("1e3ms"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
        for huge in [
            "99999999999999999999h",
            "10000000000000000000s",
            "8761h",
            "1e999s",
        ] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
        let negative = parse_duration("-5ms").unwrap_err();
        assert!(negative.contains("cannot be negative"), "{negative}");
        let slo = Slo::parse("ttft=500ms, tpot=50ms").unwrap();
        assert_eq!(slo.ttft, Some(Duration::from_millis(500)));
        assert_eq!(slo.tpot, Some(Duration::from_millis(50)));
        assert!(Slo::parse("ttfb=1s").is_err());
        assert!(Slo::parse("").is_err());
        let twice = Slo::parse("ttft=500ms,ttft=1s").unwrap_err();
        assert!(twice.contains("`ttft` is bounded twice"), "{twice}");
        let zero = Slo::parse("ttft=0").unwrap_err();
        assert!(zero.contains("a bound of 0"), "{zero}");
        assert!(Slo::parse("e2e=99999999999999999999h").is_err());
    }

    #[test]
    fn summary_counts_errors_apart_from_latencies_and_goodput() {
        let mut records: Vec<RequestRecord> = (0..40).map(|i| record(i, 0.02, 0.1, 9)).collect();
        records[3].ttft = Some(0.9); // misses the SLO
        records[5].error = Some(RequestError {
            kind: ErrorKind::Http,
            text: "HTTP 429: slow down".into(),
        });
        records[5].ttft = None;
        records[5].latency = 0.001;
        let slo = Slo::parse("ttft=500ms,tpot=50ms").unwrap();
        let s = Summary::of(&records, Some(&slo), 0.4);
        assert_eq!((s.requests, s.succeeded, s.failed), (40, 39, 1));
        assert_eq!(s.errors[&ErrorKind::Http].count, 1);
        assert_eq!(s.errors[&ErrorKind::Http].example, "HTTP 429: slow down");
        assert_eq!(s.e2e.count, 39);
        assert!((s.ttft.p50.value - 0.02).abs() < 1e-12);
        assert!((s.tpot.p50.value - 0.01).abs() < 1e-12);
        assert!((s.itl.p50.value - 0.01).abs() < 1e-12);
        assert!((s.slo_attainment.unwrap() - 38.0 / 40.0).abs() < 1e-12);
        assert!((s.lateness.p99 - 0.001).abs() < 1e-9);
        assert!((s.cpu_per_request - 0.01).abs() < 1e-12);
        assert_eq!(s.output_tokens, 39 * 9);
        let d = s.duration;
        assert!((s.request_throughput.value - 39.0 / d).abs() < 1e-9);
        assert!((s.goodput.unwrap().value - 38.0 / d).abs() < 1e-9);
        assert!(s.request_throughput.interval.low <= s.request_throughput.value);
    }

    #[test]
    fn a_run_where_every_request_failed_has_a_throughput_of_plain_zero() {
        let mut records: Vec<RequestRecord> = (0..3).map(|i| record(i, 0.02, 0.1, 9)).collect();
        for r in &mut records {
            r.error = Some(RequestError {
                kind: ErrorKind::Http,
                text: "HTTP 501: no".into(),
            });
        }
        let s = Summary::of(&records, None, 0.0);
        for rate in [&s.request_throughput, &s.output_throughput] {
            assert!(
                rate.value == 0.0 && rate.value.is_sign_positive(),
                "{rate:?}"
            );
        }
    }

    #[test]
    fn output_tokens_count_when_their_chunk_arrived() {
        // 8 tokens in 4 chunks: the first 0.1 s after sending, then every 0.02 s.
        let mut r = record(0, 0.1, 0.16, 4);
        r.output_tokens = 8;
        let (times, weights) = output_arrivals(&[&r]);
        let expected = [0.101, 0.121, 0.141, 0.161];
        assert_eq!(times.len(), 4);
        for (t, e) in times.iter().zip(expected) {
            assert!((t - e).abs() < 1e-9, "{times:?}");
        }
        assert_eq!(weights, [2.0; 4]);
        let mut failed = record(1, 0.1, 0.16, 4);
        failed.ttft = None;
        assert_eq!(output_arrivals(&[&failed]), (vec![], vec![]));
    }

    #[test]
    fn too_few_batches_or_batches_that_all_agree_give_no_interval() {
        // Two batches of four whose means agree: once an interval of zero width.
        let two_batches = [1.0, 2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 1.0];
        let mean = LatencySummary::of(&two_batches).mean;
        assert_eq!(mean.value, 1.5);
        assert!(
            mean.interval.low.is_nan() && mean.interval.high.is_nan(),
            "{mean:?}"
        );
        // Two or three batches that differ are still too few.
        let three_batches = [1.0, 2.0, 3.0, 2.0, 3.0, 4.0, 1.0, 1.0, 5.0];
        assert!(
            LatencySummary::of(&three_batches)
                .mean
                .interval
                .low
                .is_nan()
        );
        // Four batches that agree exactly say nothing of the spread either.
        assert!(LatencySummary::of(&[3.0; 16]).mean.interval.high.is_nan());
        let four: Vec<f64> = (0..16).map(|i| f64::from(i % 5)).collect();
        let mean = LatencySummary::of(&four).mean;
        assert!(
            mean.interval.low < mean.value && mean.value < mean.interval.high,
            "{mean:?}"
        );
    }

    #[test]
    fn a_two_second_run_has_enough_windows_for_an_interval() {
        // One request every 0.1 s for 2 s, alike in every window.
        let ends: Vec<f64> = (1..=20).map(|i| f64::from(i) * 0.1 - 0.05).collect();
        let (width, rates) = windows(&ends, &[1.0; 20], 2.0).unwrap();
        assert_eq!((width, rates.len()), (0.125, 16));
        let rate = windowed_rate(&ends, &[1.0; 20], 2.0);
        assert_eq!(rate.value, 10.0);
        assert!(
            rate.interval.low.is_nan() || rate.interval.low < rate.interval.high,
            "a zero-width interval: {rate:?}"
        );
    }
}
