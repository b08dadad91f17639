//! Scenarios and the run: a current-thread runtime on the calling thread drives every request;
//! a second thread draws the requests of a schedule (arrival and prompt, one at a time, so a
//! long run holds none of those to come) and hands them over shortly before their times, sleeping
//! with the operating system's timer (a runtime's timer ticks in whole milliseconds, too coarse
//! for sub-millisecond arrival accuracy). The runtime's thread, already awake, watches the clock
//! for the last stretch while it serves the streams, so a request starts at its time rather
//! than after a wake-up whose delay varies: the gaps between sends stay those of the schedule.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use milabench_stats::{Estimate, Interval};
use serde::Serialize;
use tokio::task::JoinSet;

use crate::client::{Endpoint, Pool, RequestOptions, RequestRecord};
use crate::error::LoadError;
use crate::schedule::{ArrivalShape, PoissonArrivals, gaps, ks_exponential};
use crate::stop::{IN_FLIGHT_GRACE, Stop};
use crate::summary::{Slo, Summary};
use crate::workload::{Prompt, PromptStream, Workload};

/// How requests are released.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scenario {
    /// Every request queued at once (MLPerf's Offline): throughput.
    Offline,
    /// Poisson arrivals at `rate` requests per second, the same seeded schedule whatever the
    /// server does, drawn as the run goes (MLPerf's Server).
    Server {
        /// Requests per second.
        rate: f64,
    },
    /// `n` requests in flight, the next sent as one ends.
    Concurrency {
        /// Requests in flight.
        n: usize,
    },
    /// Server runs at `start`, `start × factor`, ... (at most `steps`) until one breaks the SLO.
    Sweep {
        /// First rate, requests per second.
        start: f64,
        /// Ratio of successive rates (above 1).
        factor: f64,
        /// Most rates tried.
        steps: usize,
    },
    /// A trace's requests (the [`Workload::Trace`] workload), each sent at its time from the
    /// start, within the duration and the request limit.
    Replay,
    /// The highest rate whose p99 bounds of the SLO hold, searched `repeats` times (each with
    /// its own seed): a server run at `low`, then `steps` bisections between the highest rate
    /// that held and the lowest that did not, starting from `high`.
    SloSearch {
        /// Lowest rate, requests per second (the first tried).
        low: f64,
        /// Highest rate, requests per second (taken to break when the bisection starts).
        high: f64,
        /// Bisections after the first run.
        steps: usize,
        /// Independent searches; their spread gives the interval of the result.
        repeats: usize,
    },
}

/// Everything a load run needs.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// The server.
    pub endpoint: Endpoint,
    /// Route, model, timeout.
    pub options: RequestOptions,
    /// The prompts.
    pub workload: Workload,
    /// How requests are released.
    pub scenario: Scenario,
    /// How long requests are released (server and concurrency runs, each sweep step).
    pub duration: Duration,
    /// Most requests per run (per sweep step).
    pub max_requests: usize,
    /// Seed of the prompts and of the arrival schedule.
    pub seed: u64,
    /// `max_tokens` of file prompts without one.
    pub default_max_tokens: u32,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Latency bounds for goodput and for a sweep's (or an SLO search's) verdict.
    pub slo: Option<Slo>,
    /// Gaps and ramp-up of server runs' arrivals.
    pub arrivals: ArrivalShape,
    /// More certificate authorities to trust for an https endpoint (PEM), beside the system's.
    pub ca_cert: Option<std::path::PathBuf>,
}

/// One run at one setting: every request and their aggregates.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The scenario of this step (a sweep's steps are server runs).
    pub scenario: Scenario,
    /// When the run started.
    #[serde(serialize_with = "epoch_seconds")]
    pub started: SystemTime,
    /// Every request, in sending order.
    pub records: Vec<RequestRecord>,
    /// The aggregates.
    pub summary: Summary,
    /// Whether the step held: no failed request and, with an SLO, 99% of requests within it;
    /// never when it was interrupted.
    pub held: bool,
    /// Whether the run was stopped (Ctrl-C, the server gone) before this step's scenario
    /// ended: its figures cover only part of it.
    pub interrupted: bool,
}

impl milabench_metrics::serving::ServingStep for Step {
    fn rate(&self) -> Option<f64> {
        match self.scenario {
            Scenario::Server { rate } => Some(rate),
            _ => None,
        }
    }

    fn held(&self) -> bool {
        self.held
    }
}

/// What a load run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadResult {
    /// Whether the scenario was a sweep or an SLO search: server runs at several rates, each
    /// judged against the SLO.
    pub sweep: bool,
    /// One step, or a sweep's steps in order.
    pub steps: Vec<Step>,
    /// A sweep's (an SLO search's) highest rate that held; `None` otherwise or when none held.
    pub highest_held_rate: Option<f64>,
    /// An SLO search's result; `None` for other scenarios.
    pub slo_search: Option<SloSearch>,
    /// Why the run ended before its scenario did (interrupted, the server gone), if it did.
    pub stopped: Option<String>,
}

/// What an SLO search found: the highest rate that held in each repeat, and their mean with a
/// 95% interval (Student's t over the repeats).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloSearch {
    /// Each repeat's highest rate that held (0 when not even the lowest did), in order.
    pub rates: Vec<f64>,
    /// Their mean, requests per second.
    pub rate: f64,
    /// The 95% interval of the mean; `None` with fewer than two repeats. Written `[low, high]`.
    #[serde(serialize_with = "low_high_pair")]
    pub interval: Option<Interval>,
}

impl SloSearch {
    /// The mean of `rates` and its 95% interval.
    pub fn of(rates: Vec<f64>) -> SloSearch {
        let estimate = Estimate::of_independent(&rates);
        SloSearch {
            rate: if rates.is_empty() { 0.0 } else { estimate.mean },
            interval: (rates.len() >= 2).then(|| Interval::of(&estimate)),
            rates,
        }
    }
}

/// An interval as the pair `[low, high]` (the `slo_search` field's form), `null` for none.
fn low_high_pair<S: serde::Serializer>(
    interval: &Option<Interval>,
    s: S,
) -> Result<S::Ok, S::Error> {
    interval.map(|i| (i.low, i.high)).serialize(s)
}

fn epoch_seconds<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    )
}

/// Share of requests within the SLO for a step to hold.
pub const HELD_ATTAINMENT: f64 = 0.99;

/// Time between fixing the schedule and its first instant: the runtime, the dispatching thread
/// and the first connection are set up meanwhile.
const LEAD: Duration = Duration::from_millis(20);

/// How long before its time the dispatching thread hands a request to the runtime's thread,
/// which then waits out the rest on the clock while it goes on serving the streams.
const HAND_OVER: Duration = Duration::from_micros(200);

/// CPU time (user and system) of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 * 1e-6;
        t(u.user_time()) + t(u.system_time())
    })
}

/// Runs `spec`: checks the server answers (an error naming the endpoint if not), then the
/// scenario, until it ends or `stop` is triggered (then with what was measured so far). Failed
/// requests are in the result, not an error.
pub fn run(spec: &LoadSpec, stop: &Stop) -> Result<LoadResult, LoadError> {
    spec.check()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)?;
    let addrs = runtime.block_on(spec.endpoint.resolve())?;
    let pool = Arc::new(Pool::new(
        spec.endpoint.clone(),
        addrs,
        spec.max_connections,
        spec.ca_cert.as_deref(),
    )?);
    runtime.block_on(pool.probe())?;
    let mut steps = Vec::new();
    let mut slo_search = None;
    match spec.scenario {
        Scenario::SloSearch {
            low,
            high,
            steps: bisections,
            repeats,
        } => {
            let mut rates = Vec::new();
            for repeat in 0..repeats {
                let seed = spec.seed.wrapping_add(repeat as u64);
                let held = bisect(low, high, bisections, stop, |rate| {
                    let scenario = Scenario::Server { rate };
                    let step = one_step(spec, scenario, seed, &runtime, &pool, stop)?;
                    let held = step.held;
                    steps.push(step);
                    Ok(held)
                })?;
                if stop.is_set() {
                    break;
                }
                rates.push(held);
            }
            slo_search = Some(SloSearch::of(rates));
        }
        Scenario::Sweep {
            start,
            factor,
            steps: most,
        } => {
            let mut rate = start;
            for _ in 0..most {
                let step = one_step(
                    spec,
                    Scenario::Server { rate },
                    spec.seed,
                    &runtime,
                    &pool,
                    stop,
                )?;
                let held = step.held;
                steps.push(step);
                if !held || stop.is_set() {
                    break;
                }
                rate *= factor;
            }
        }
        scenario => steps.push(one_step(spec, scenario, spec.seed, &runtime, &pool, stop)?),
    }
    let sweep = matches!(
        spec.scenario,
        Scenario::Sweep { .. } | Scenario::SloSearch { .. }
    );
    Ok(LoadResult {
        sweep,
        highest_held_rate: sweep
            .then(|| milabench_metrics::serving::highest_held_rate(&steps))
            .flatten(),
        steps,
        slo_search,
        stopped: stop.reason(),
    })
}

/// The highest rate that held in one SLO search: `holds(low)`, then `bisections` times
/// `holds` halfway between the highest rate that held and the lowest that did not (`high` at
/// first), until `stop` is set; 0 when `low` did not hold.
fn bisect(
    low: f64,
    high: f64,
    bisections: usize,
    stop: &Stop,
    mut holds: impl FnMut(f64) -> Result<bool, LoadError>,
) -> Result<f64, LoadError> {
    if !holds(low)? {
        return Ok(0.0);
    }
    let (mut held, mut broke) = (low, high);
    for _ in 0..bisections {
        if stop.is_set() {
            break;
        }
        let mid = (held + broke) / 2.0;
        if holds(mid)? {
            held = mid;
        } else {
            broke = mid;
        }
    }
    Ok(held)
}

impl LoadSpec {
    /// Checks the settings can work (a rate above 0, a request at least, ...); [`run`] does
    /// too, this finds out before a server is started for the run.
    pub fn check(&self) -> Result<(), LoadError> {
        check(self)
    }
}

fn check(spec: &LoadSpec) -> Result<(), LoadError> {
    let bad = |m: &str| Err(LoadError::Settings(m.to_owned()));
    let rate_ok = |r: f64| r.is_finite() && r > 0.0;
    match spec.scenario {
        Scenario::Server { rate } if !rate_ok(rate) => return bad("the rate must be above 0"),
        Scenario::Concurrency { n: 0 } => return bad("the concurrency must be at least 1"),
        Scenario::Sweep {
            start,
            factor,
            steps,
        } if !rate_ok(start)
            || factor.is_nan()
            || factor <= 1.0
            || factor.is_infinite()
            || steps == 0 =>
        {
            return bad(
                "a sweep needs a start rate above 0, a factor above 1 and at least one step",
            );
        }
        Scenario::SloSearch {
            low, high, repeats, ..
        } if !rate_ok(low) || !rate_ok(high) || low >= high || repeats == 0 => {
            return bad(
                "an SLO search needs a low rate above 0 below its high rate, and at least one repeat",
            );
        }
        Scenario::SloSearch { .. } if spec.slo.is_none() => {
            return bad("an SLO search needs the bounds to hold: give --slo ttft=...,tpot=...");
        }
        Scenario::Replay if !matches!(spec.workload, Workload::Trace(_)) => {
            return bad("the replay scenario sends a trace's requests: give --trace FILE");
        }
        _ if !spec.arrivals.is_valid() => {
            return bad("the burstiness must be above 0 (1 is Poisson)");
        }
        _ => {}
    }
    if spec.max_requests == 0 {
        return bad("at least one request is needed");
    }
    match spec.workload {
        Workload::SharedPrefix { prefixes: 0, .. } => {
            return bad("shared prefixes need at least one prefix");
        }
        Workload::Sessions { turns: 0, .. } => return bad("a session has at least one turn"),
        _ => {}
    }
    if spec.duration.is_zero() && !matches!(spec.scenario, Scenario::Offline) {
        return bad("the duration must be above 0");
    }
    Ok(())
}

/// What the tasks of a run share.
struct Shared {
    pool: Arc<Pool>,
    options: RequestOptions,
    start: Instant,
    stop: Stop,
}

impl Shared {
    /// Sends request `index` with `prompt`, due at `scheduled` seconds into the run and taken
    /// up at `taken`.
    async fn send(
        &self,
        index: usize,
        prompt: Prompt,
        scheduled: f64,
        taken: Instant,
    ) -> RequestRecord {
        self.pool
            .send(&self.options, &prompt, index, scheduled, self.start, taken)
            .await
    }
}

/// One run of `scenario`, its prompts and arrivals drawn with `seed`.
fn one_step(
    spec: &LoadSpec,
    scenario: Scenario,
    seed: u64,
    runtime: &tokio::runtime::Runtime,
    pool: &Arc<Pool>,
    stop: &Stop,
) -> Result<Step, LoadError> {
    let shared = Arc::new(Shared {
        pool: pool.clone(),
        options: spec.options.clone(),
        start: Instant::now() + LEAD,
        stop: stop.clone(),
    });
    // Prompts (and arrivals) are drawn as they are sent: a long run holds none of those to come.
    let prompts = spec.workload.stream(seed, spec.default_max_tokens);
    let started = SystemTime::now() + LEAD;
    let cpu_before = thread_cpu();
    let (mut records, dispatcher_cpu) = match scenario {
        Scenario::Server { rate } => {
            let arrivals = PoissonArrivals::new(rate, spec.duration, spec.max_requests, seed)
                .shaped(spec.arrivals);
            runtime.block_on(scheduled(&shared, arrivals, prompts))?
        }
        Scenario::Replay => {
            let end = spec.duration;
            let times = spec.workload.trace_times(spec.max_requests);
            let arrivals = times.into_iter().take_while(move |&at| at < end);
            runtime.block_on(scheduled(&shared, arrivals, prompts))?
        }
        Scenario::Concurrency { n } => (
            runtime.block_on(closed_loop(&shared, n, spec, prompts)),
            0.0,
        ),
        _ => {
            // Every prompt is needed at once: drawn before the start.
            let prompts: Vec<Prompt> = prompts.take(spec.max_requests).collect();
            (runtime.block_on(offline(&shared, prompts)), 0.0)
        }
    };
    let interrupted = stop.is_set();
    let cpu = thread_cpu() - cpu_before + dispatcher_cpu;
    records.sort_by_key(|r| r.index);
    let mut summary = Summary::of(&records, spec.slo.as_ref(), cpu);
    if let (Scenario::Server { rate }, true) = (scenario, spec.arrivals.is_poisson()) {
        let sends: Vec<f64> = records.iter().map(|r| r.sent).collect();
        summary.arrivals = Some(ks_exponential(&gaps(&sends), rate));
    }
    let held = !interrupted
        && summary.failed == 0
        && summary.requests > 0
        && summary.slo_attainment.is_none_or(|a| a >= HELD_ATTAINMENT);
    Ok(Step {
        scenario,
        started,
        records,
        summary,
        held,
        interrupted,
    })
}

/// Releases each arrival of `arrivals`, with the next prompt of `prompts`, at its time: a
/// thread of its own draws both and hands them over shortly before. Returns the records and
/// that thread's CPU time.
async fn scheduled(
    shared: &Arc<Shared>,
    arrivals: impl Iterator<Item = Duration> + Send + 'static,
    prompts: PromptStream,
) -> Result<(Vec<RequestRecord>, f64), LoadError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let start = shared.start;
    let stop = shared.stop.clone();
    let dispatcher = std::thread::Builder::new()
        .name("load-dispatch".into())
        .spawn(move || {
            let before = thread_cpu();
            for (i, (at, prompt)) in arrivals.zip(prompts).enumerate() {
                let early = (start + at).checked_sub(HAND_OVER).unwrap_or(start);
                if !stop.sleep_until(early) || tx.send((i, at, prompt)).is_err() {
                    break;
                }
            }
            thread_cpu() - before
        })
        .map_err(LoadError::Runtime)?;
    let mut tasks = JoinSet::new();
    while let Some((i, at, prompt)) = rx.recv().await {
        let due = start + at;
        while Instant::now() < due {
            tokio::task::yield_now().await;
        }
        let taken = Instant::now();
        let shared = shared.clone();
        tasks.spawn(async move { shared.send(i, prompt, at.as_secs_f64(), taken).await });
    }
    let records = collect(tasks, &shared.stop).await;
    let cpu = dispatcher.join().unwrap_or(0.0);
    Ok((records, cpu))
}

/// Every request at once, request `i` with `prompts[i]`.
async fn offline(shared: &Arc<Shared>, prompts: Vec<Prompt>) -> Vec<RequestRecord> {
    tokio::time::sleep_until(tokio::time::Instant::from_std(shared.start)).await;
    let mut tasks = JoinSet::new();
    for (i, prompt) in prompts.into_iter().enumerate() {
        let shared = shared.clone();
        tasks.spawn(async move { shared.send(i, prompt, 0.0, Instant::now()).await });
    }
    collect(tasks, &shared.stop).await
}

/// `n` workers, each sending its next request when the last ends, until the duration is over,
/// the requests run out or the run is stopped; request `i` gets the `i`-th prompt of `prompts`.
async fn closed_loop(
    shared: &Arc<Shared>,
    n: usize,
    spec: &LoadSpec,
    prompts: PromptStream,
) -> Vec<RequestRecord> {
    tokio::time::sleep_until(tokio::time::Instant::from_std(shared.start)).await;
    // The index and its prompt are taken together, so prompt `i` goes with request `i`.
    let next = Arc::new(std::sync::Mutex::new((0usize, prompts)));
    // A duration past what the clock can count has no end.
    let end = shared.start.checked_add(spec.duration);
    let most = spec.max_requests;
    // Each record is handed over as it completes, so a worker dropped after a stop loses only
    // the request it had in flight.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let shared = shared.clone();
        let next = next.clone();
        let tx = tx.clone();
        tasks.spawn(async move {
            loop {
                let over = end.is_some_and(|end| Instant::now() >= end);
                if over || shared.stop.is_set() {
                    break;
                }
                let (i, prompt) = {
                    let mut next = next
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let i = next.0;
                    if i >= most {
                        break;
                    }
                    next.0 += 1;
                    (i, next.1.next())
                };
                let Some(prompt) = prompt else { break };
                let now = Instant::now();
                let due = now.saturating_duration_since(shared.start).as_secs_f64();
                if tx.send(shared.send(i, prompt, due, now).await).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    join_all(&mut tasks, &shared.stop, |()| {}).await;
    let mut records = Vec::new();
    while let Ok(record) = rx.try_recv() {
        records.push(record);
    }
    records
}

/// Waits for every task; once the run is stopped, those still running after
/// [`IN_FLIGHT_GRACE`] are dropped. Calls `done` with each finished task's output.
async fn join_all<T: 'static>(tasks: &mut JoinSet<T>, stop: &Stop, mut done: impl FnMut(T)) {
    let stopped = stop.stopped();
    tokio::pin!(stopped);
    let mut grace_end: Option<tokio::time::Instant> = None;
    loop {
        let grace = async {
            match grace_end {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => return,
                // A task that panicked or was dropped has nothing to record.
                Some(Ok(output)) => done(output),
                Some(Err(_)) => {}
            },
            () = &mut stopped, if grace_end.is_none() => {
                grace_end = Some(tokio::time::Instant::now() + IN_FLIGHT_GRACE);
            }
            () = grace => tasks.abort_all(),
        }
    }
}

async fn collect(mut tasks: JoinSet<RequestRecord>, stop: &Stop) -> Vec<RequestRecord> {
    let mut records = Vec::with_capacity(tasks.len());
    join_all(&mut tasks, stop, |record| records.push(record)).await;
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockConfig, MockServer, load_spec};
    use crate::schedule::poisson;

    #[test]
    fn bisection_closes_in_on_the_highest_rate_that_holds() {
        let stop = Stop::new();
        let mut tried = Vec::new();
        let mut holds_below_37 = |rate: f64| {
            tried.push(rate);
            Ok(rate < 37.0)
        };
        let found = bisect(10.0, 100.0, 6, &stop, &mut holds_below_37).unwrap();
        // 10 held, then 55 (no), 32.5 (yes), 43.75 (no), 38.125 (no), 35.3125, 36.71875.
        assert_eq!(tried, [10.0, 55.0, 32.5, 43.75, 38.125, 35.3125, 36.71875]);
        assert_eq!(found, 36.71875);
        assert_eq!(bisect(10.0, 100.0, 6, &stop, |_| Ok(false)).unwrap(), 0.0);
        stop.trigger("interrupted");
        assert_eq!(bisect(10.0, 100.0, 6, &stop, |_| Ok(true)).unwrap(), 10.0);
    }

    #[test]
    fn an_slo_search_interval_is_students_over_the_repeats() {
        let search = SloSearch::of(vec![40.0, 44.0, 42.0]);
        assert_eq!(search.rate, 42.0);
        // s = 2, t(2 dof) = 4.3027: 42 ± 4.3027 × 2 / √3.
        let interval = search.interval.unwrap();
        let half = 4.302_652_729_911_275 * 2.0 / 3f64.sqrt();
        assert!((interval.low - (42.0 - half)).abs() < 1e-9, "{interval:?}");
        assert!((interval.high - (42.0 + half)).abs() < 1e-9, "{interval:?}");
        // Written as the pair `[low, high]`, as before the interval had a type of its own.
        let json = serde_json::to_value(&search).unwrap();
        assert_eq!(
            json["interval"],
            serde_json::json!([interval.low, interval.high])
        );
        assert_eq!(SloSearch::of(vec![40.0]).interval, None);
        assert_eq!(SloSearch::of(vec![]).rate, 0.0);
    }

    /// Runs `spec` with a stop triggered after `after`.
    fn run_stopped_after(spec: &LoadSpec, after: Duration) -> LoadResult {
        let stop = Stop::new();
        let trigger = stop.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(after);
            trigger.trigger("interrupted");
        });
        let result = run(spec, &stop).expect("run");
        stopper.join().expect("stopper");
        result
    }

    #[test]
    fn a_day_long_schedule_starts_at_once_and_holds_nothing_to_come() {
        // 86 million arrivals: drawn all before the start, with their prompts, they took tens
        // of gigabytes and minutes; drawn as they are sent, the run starts at once.
        let server = MockServer::start(MockConfig::default()).expect("mock");
        let spec = load_spec(
            &server.url(),
            Scenario::Server { rate: 1000.0 },
            Duration::from_secs(24 * 3600),
        )
        .expect("spec");
        let begin = Instant::now();
        let result = run_stopped_after(&spec, Duration::from_millis(300));
        assert!(
            begin.elapsed() < Duration::from_secs(5),
            "{:?}",
            begin.elapsed()
        );
        let step = &result.steps[0];
        assert!(step.summary.requests > 50, "{}", step.summary.requests);
        assert!(step.interrupted && !step.held);
    }

    #[test]
    fn an_interrupted_sweep_step_is_marked_so_and_does_not_hold() {
        let server = MockServer::start(MockConfig::default()).expect("mock");
        let mut spec = load_spec(
            &server.url(),
            Scenario::Sweep {
                start: 20.0,
                factor: 2.0,
                steps: 5,
            },
            Duration::from_millis(500),
        )
        .expect("spec");
        spec.slo = Some(Slo::parse("ttft=1s").expect("slo"));
        // The first step (0.5 s from 20 ms after the start) ends; the second is cut short.
        let result = run_stopped_after(&spec, Duration::from_millis(800));
        assert_eq!(result.steps.len(), 2);
        let (first, second) = (&result.steps[0], &result.steps[1]);
        assert!(first.held && !first.interrupted);
        assert!(second.interrupted && !second.held, "{second:?}");
        assert_eq!(result.highest_held_rate, Some(20.0));
    }

    #[test]
    fn a_schedule_without_arrival_in_the_window_is_a_failure_saying_so() {
        let server = MockServer::start(MockConfig::default()).expect("mock");
        let spec = load_spec(
            &server.url(),
            Scenario::Server { rate: 0.1 },
            Duration::from_secs(1),
        )
        .expect("spec");
        assert!(poisson(0.1, spec.duration, usize::MAX, spec.seed).is_empty());
        let result = run(&spec, &Stop::new()).expect("run");
        assert_eq!(result.steps[0].summary.requests, 0);
        assert!(!result.steps[0].held);
        let failure = result.failure().expect("a run that sent nothing fails");
        assert!(
            failure.contains("the schedule had no arrival in the window"),
            "{failure}"
        );
    }
}
