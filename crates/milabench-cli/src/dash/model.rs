//! What the dashboard shows, kept up to date from the run's observer events: the suite's
//! benchmarks and their states, the running benchmark's processes (rates of the last minute,
//! loss, early-stop progress, GPU samples, stderr lines), and the ETA. Pure: no terminal, no
//! clock of its own (every time is passed in).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use milabench::observe::{Event, Pipe, Record};
use milabench::suite::{ResolvedBench, Value};

/// How far back the rate sparkline looks.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(60);

/// Stderr lines kept per process (the scroll-back of the stderr pane).
const STDERR_LINES: usize = 500;

/// What the suite says of one benchmark before it runs: enough to guess how long it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchBudget {
    /// The benchmark's name.
    pub name: String,
    /// Its `max_duration`: it never runs longer.
    pub max_duration: Option<Duration>,
    /// Its early-stop count (`voir.options.stop`): the observations it makes at most.
    pub stop: Option<u64>,
}

impl BenchBudget {
    /// The budget of a resolved benchmark: its `max_duration` (none when unset or malformed: the
    /// plan reports those) and its `voir.options.stop`.
    pub fn of(bench: &ResolvedBench) -> BenchBudget {
        let stop = ["voir", "options", "stop"]
            .iter()
            .try_fold(&bench.config, |node, key| node.get(key))
            .and_then(|node| match node.value {
                Value::Int(n) => u64::try_from(n).ok(),
                Value::Float(x) if x.is_finite() && x >= 1.0 => Some(x as u64),
                _ => None,
            })
            .filter(|&n| n > 0);
        BenchBudget {
            name: bench.name.clone(),
            max_duration: bench.max_duration.clone().ok().flatten(),
            stop,
        }
    }
}

/// Where a benchmark of the suite stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BenchState {
    /// Not started yet.
    Waiting,
    /// Running now.
    Running,
    /// Ended, every process passed.
    Passed,
    /// Ended with a failed process, or its set-up failed.
    Failed,
    /// Not run: the system does not meet its requirements.
    Skipped,
    /// Not run: already complete in the run folder (`--resume`).
    AlreadyDone,
    /// Stopped by an interruption.
    Interrupted,
}

impl BenchState {
    /// Whether it is over (neither waiting nor running).
    pub fn is_over(self) -> bool {
        !matches!(self, BenchState::Waiting | BenchState::Running)
    }
}

/// One benchmark of the suite, as listed.
#[derive(Debug, Clone)]
pub(crate) struct BenchRow {
    /// Its name and budget.
    pub budget: BenchBudget,
    /// Where it stands.
    pub state: BenchState,
    /// How long it ran, once over.
    pub duration: Option<Duration>,
}

/// One GPU's latest sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GpuGauge {
    /// The device id.
    pub device: String,
    /// Compute load, 0 to 1.
    pub load: Option<f64>,
    /// Memory `[used, total]`, MiB.
    pub memory: Option<[f64; 2]>,
    /// Watts.
    pub power: Option<f64>,
}

/// One process of the running benchmark.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    /// Its tag (`bench.D0`).
    pub tag: String,
    /// Its training rates of the last [`RATE_WINDOW`].
    pub rates: VecDeque<(Instant, f64)>,
    /// Its latest rate.
    pub rate: Option<f64>,
    /// The unit of its rates.
    pub units: String,
    /// Its latest loss.
    pub loss: Option<f64>,
    /// Its progress to the early stop, `(done, total)`.
    pub progress: Option<(f64, f64)>,
    /// Its GPUs' latest samples.
    pub gpus: Vec<GpuGauge>,
    /// The most power seen on any of its GPUs, the scale of the power bars.
    pub peak_power: f64,
    /// Its last stderr lines.
    pub stderr: VecDeque<String>,
    /// Once ended: whether it passed.
    pub passed: Option<bool>,
}

impl Proc {
    fn new(tag: &str) -> Proc {
        Proc {
            tag: tag.to_owned(),
            rates: VecDeque::new(),
            rate: None,
            units: String::new(),
            loss: None,
            progress: None,
            gpus: Vec::new(),
            peak_power: 0.0,
            stderr: VecDeque::new(),
            passed: None,
        }
    }

    /// A copy without its rates unless `rates`, and without its stderr lines unless `stderr`.
    fn copy(&self, rates: bool, stderr: bool) -> Proc {
        Proc {
            tag: self.tag.clone(),
            rates: if rates {
                self.rates.clone()
            } else {
                VecDeque::new()
            },
            rate: self.rate,
            units: self.units.clone(),
            loss: self.loss,
            progress: self.progress,
            gpus: self.gpus.clone(),
            peak_power: self.peak_power,
            stderr: if stderr {
                self.stderr.clone()
            } else {
                VecDeque::new()
            },
            passed: self.passed,
        }
    }

    /// Files one record of the process received at `now`.
    fn record(&mut self, record: &Record, now: Instant) {
        match &record.event {
            Event::Line(line) if record.pipe == Some(Pipe::Stderr) => {
                if self.stderr.len() == STDERR_LINES {
                    self.stderr.pop_front();
                }
                self.stderr.push_back(line.trim_end().to_owned());
            }
            Event::Data(data) => {
                if let Some(rate) = data.rate.filter(|r| r.is_finite()) {
                    self.rate = Some(rate);
                    self.rates.push_back((now, rate));
                    if let Some(units) = &data.units {
                        self.units.clone_from(units);
                    }
                }
                while self
                    .rates
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > RATE_WINDOW)
                {
                    self.rates.pop_front();
                }
                if data.loss.is_some() {
                    self.loss = data.loss;
                }
                if let Some([done, total]) = data.progress {
                    self.progress = Some((done, total));
                }
                for (device, sample) in data.gpudata.iter().flatten() {
                    let gauge = match self.gpus.iter_mut().position(|g| &g.device == device) {
                        Some(i) => &mut self.gpus[i],
                        None => {
                            self.gpus.push(GpuGauge {
                                device: device.clone(),
                                ..GpuGauge::default()
                            });
                            self.gpus.last_mut().expect("just pushed")
                        }
                    };
                    gauge.load = sample.load.or(gauge.load);
                    gauge.memory = sample.memory.or(gauge.memory);
                    gauge.power = sample.power.or(gauge.power);
                    self.peak_power = self.peak_power.max(gauge.power.unwrap_or(0.0));
                }
            }
            _ => {}
        }
    }

    /// Its share of the way to the early stop, 0 to 1.
    pub fn progress_share(&self) -> Option<f64> {
        let (done, total) = self.progress?;
        (total > 0.0).then(|| (done / total).clamp(0.0, 1.0))
    }
}

/// The whole state of the view.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    /// When the run started.
    pub started: Instant,
    /// Every benchmark the run may run, in order (a row per repeat).
    pub benches: Vec<BenchRow>,
    /// The row of the running benchmark.
    pub running: Option<usize>,
    /// When it started.
    pub bench_started: Instant,
    /// Its processes, in the order they started.
    pub procs: Vec<Proc>,
    /// The process whose details and stderr are shown.
    pub selected: usize,
    /// How many lines the stderr pane is scrolled up from its end.
    pub scroll: usize,
    /// Seconds and observations of the benchmarks that ended, for the ETA.
    pace: (f64, f64),
    /// Counts every change, so the drawing thread knows when to redraw.
    pub generation: u64,
}

impl Model {
    /// A model of a run of `benches`, started at `now`.
    pub fn new(benches: Vec<BenchBudget>, now: Instant) -> Model {
        Model {
            started: now,
            benches: benches
                .into_iter()
                .map(|budget| BenchRow {
                    budget,
                    state: BenchState::Waiting,
                    duration: None,
                })
                .collect(),
            running: None,
            bench_started: now,
            procs: Vec::new(),
            selected: 0,
            scroll: 0,
            pace: (0.0, 0.0),
            generation: 0,
        }
    }

    /// The row of `bench` that an event about it concerns: the running one, else the first
    /// waiting one; a row is added for a benchmark the suite did not list.
    fn row(&mut self, bench: &str) -> usize {
        if let Some(i) = self
            .running
            .filter(|&i| self.benches[i].budget.name == bench)
        {
            return i;
        }
        if let Some(i) = self
            .benches
            .iter()
            .position(|r| r.state == BenchState::Waiting && r.budget.name == bench)
        {
            return i;
        }
        self.benches.push(BenchRow {
            budget: BenchBudget {
                name: bench.to_owned(),
                max_duration: None,
                stop: None,
            },
            state: BenchState::Waiting,
            duration: None,
        });
        self.benches.len() - 1
    }

    /// `bench` starts at `now`, with `max_duration` from its plan.
    pub fn bench_start(&mut self, bench: &str, max_duration: Option<Duration>, now: Instant) {
        let row = self.row(bench);
        let budget = &mut self.benches[row].budget;
        budget.max_duration = max_duration.or(budget.max_duration);
        self.benches[row].state = BenchState::Running;
        self.running = Some(row);
        self.bench_started = now;
        self.procs.clear();
        self.selected = 0;
        self.scroll = 0;
        self.generation += 1;
    }

    /// `bench` ended in `state` after `duration`, its processes having made `observations`
    /// rates each at most.
    pub fn bench_end(
        &mut self,
        bench: &str,
        state: BenchState,
        duration: Duration,
        observations: usize,
    ) {
        let row = self.row(bench);
        self.benches[row].state = state;
        self.benches[row].duration = Some(duration);
        if self.running == Some(row) {
            self.running = None;
        }
        if state == BenchState::Passed && observations > 0 {
            self.pace.0 += duration.as_secs_f64();
            self.pace.1 += observations as f64;
        }
        self.generation += 1;
    }

    /// `bench` will not run: `state` says why.
    pub fn bench_not_run(&mut self, bench: &str, state: BenchState) {
        let row = self.row(bench);
        self.benches[row].state = state;
        self.generation += 1;
    }

    /// A process of the running benchmark started.
    pub fn proc_start(&mut self, tag: &str) {
        if !self.procs.iter().any(|p| p.tag == tag) {
            self.procs.push(Proc::new(tag));
        }
        self.generation += 1;
    }

    /// A record of process `tag` arrived at `now`.
    pub fn proc_record(&mut self, tag: &str, record: &Record, now: Instant) {
        let i = match self.procs.iter().position(|p| p.tag == tag) {
            Some(i) => i,
            None => {
                self.procs.push(Proc::new(tag));
                self.procs.len() - 1
            }
        };
        self.procs[i].record(record, now);
        self.generation += 1;
    }

    /// Process `tag` ended.
    pub fn proc_end(&mut self, tag: &str, passed: bool) {
        if let Some(p) = self.procs.iter_mut().find(|p| p.tag == tag) {
            p.passed = Some(passed);
        }
        self.generation += 1;
    }

    /// Selects the next (`forward`) or previous process, wrapping around.
    pub fn select(&mut self, forward: bool) {
        let n = self.procs.len().max(1);
        self.selected = if forward {
            (self.selected + 1) % n
        } else {
            (self.selected + n - 1) % n
        };
        self.scroll = 0;
    }

    /// Scrolls the stderr pane `lines` up (negative: down), within what it holds.
    pub fn scroll_by(&mut self, lines: isize) {
        let held = self.selected_proc().map_or(0, |p| p.stderr.len());
        self.scroll = self
            .scroll
            .saturating_add_signed(lines)
            .min(held.saturating_sub(1));
    }

    /// A copy for a frame `rows` high: every process's figures, the rates only of those that
    /// may be in sight (a frame shows fewer than `rows / 2` processes, around the selected one)
    /// and the stderr lines only of the selected one, so that a frame of a run of hundreds of
    /// processes copies a few of their histories, not all.
    pub fn snapshot(&self, rows: u16) -> Model {
        let selected = self.selected.min(self.procs.len().saturating_sub(1));
        let reach = usize::from(rows / 2) + 1;
        let in_sight = selected.saturating_sub(reach)..=selected.max(reach) + reach;
        Model {
            started: self.started,
            benches: self.benches.clone(),
            running: self.running,
            bench_started: self.bench_started,
            procs: (0..)
                .zip(&self.procs)
                .map(|(i, p)| p.copy(in_sight.contains(&i), i == selected))
                .collect(),
            selected: self.selected,
            scroll: self.scroll,
            pace: self.pace,
            generation: self.generation,
        }
    }

    /// The selected process.
    pub fn selected_proc(&self) -> Option<&Proc> {
        self.procs
            .get(self.selected.min(self.procs.len().saturating_sub(1)))
    }

    /// How many benchmarks are over, running and waiting, and how many failed.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for row in &self.benches {
            match row.state {
                BenchState::Waiting => counts.left += 1,
                BenchState::Running => counts.running += 1,
                state => {
                    counts.done += 1;
                    if state == BenchState::Failed {
                        counts.failed += 1;
                    }
                }
            }
        }
        counts
    }

    /// Seconds per observation of the benchmarks that passed so far.
    fn seconds_per_observation(&self) -> Option<f64> {
        (self.pace.1 > 0.0).then(|| self.pace.0 / self.pace.1)
    }

    /// How long a benchmark that has not started will take: its `stop` observations at the
    /// pace seen so far, never more than its `max_duration`.
    fn estimate(&self, budget: &BenchBudget) -> Option<Duration> {
        let by_pace = budget
            .stop
            .zip(self.seconds_per_observation())
            .map(|(stop, pace)| Duration::from_secs_f64(stop as f64 * pace));
        match (by_pace, budget.max_duration) {
            (Some(pace), Some(max)) => Some(pace.min(max)),
            (pace, max) => pace.or(max),
        }
    }

    /// How long the rest of the run will take, from `now`: the running benchmark's remaining
    /// share of the way to its early stop (its slowest process), else its estimate less the
    /// time it ran, never past its `max_duration`; plus the estimate of every benchmark left.
    /// `None` while one of them cannot be estimated.
    pub fn eta(&self, now: Instant) -> Option<Duration> {
        let mut total = Duration::ZERO;
        if let Some(row) = self.running {
            let budget = &self.benches[row].budget;
            let elapsed = now.saturating_duration_since(self.bench_started);
            let slowest = self
                .procs
                .iter()
                .filter_map(Proc::progress_share)
                .min_by(f64::total_cmp)
                .filter(|share| *share > 0.0);
            let left = match slowest {
                Some(share) => Some(elapsed.mul_f64((1.0 - share) / share)),
                None => self.estimate(budget).map(|e| e.saturating_sub(elapsed)),
            };
            let cap = budget.max_duration.map(|m| m.saturating_sub(elapsed));
            total += match (left, cap) {
                (Some(left), Some(cap)) => left.min(cap),
                (left, cap) => left.or(cap)?,
            };
        }
        for row in self
            .benches
            .iter()
            .filter(|r| r.state == BenchState::Waiting)
        {
            total += self.estimate(&row.budget)?;
        }
        Some(total)
    }
}

/// How many benchmarks stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Over (passed, failed, skipped, already done or interrupted).
    pub done: usize,
    /// Running.
    pub running: usize,
    /// Not started.
    pub left: usize,
    /// Failed.
    pub failed: usize,
}

/// The mean of `samples` in each of `n` equal slices of the `span` that ends at `now`, oldest
/// first; `None` for a slice without a sample.
pub(crate) fn buckets(
    samples: &VecDeque<(Instant, f64)>,
    now: Instant,
    span: Duration,
    n: usize,
) -> Vec<Option<f64>> {
    let mut sums = vec![(0.0, 0u32); n];
    if n == 0 {
        return Vec::new();
    }
    let width = span.as_secs_f64() / n as f64;
    for (at, value) in samples {
        let age = now.saturating_duration_since(*at).as_secs_f64();
        if age >= span.as_secs_f64() {
            continue;
        }
        let slot = n - 1 - ((age / width) as usize).min(n - 1);
        sums[slot].0 += value;
        sums[slot].1 += 1;
    }
    sums.into_iter()
        .map(|(sum, count)| (count > 0).then(|| sum / f64::from(count)))
        .collect()
}

/// A gate that opens at most once per `every`.
#[derive(Debug, Clone)]
pub(crate) struct Throttle {
    every: Duration,
    last: Option<Instant>,
}

impl Throttle {
    /// A gate that opens at most once per `every`.
    pub fn new(every: Duration) -> Throttle {
        Throttle { every, last: None }
    }

    /// How long from `now` until the gate may open again (zero: it may now).
    pub fn wait(&self, now: Instant) -> Duration {
        self.last.map_or(Duration::ZERO, |last| {
            (last + self.every).saturating_duration_since(now)
        })
    }

    /// Opens the gate at `now` if it may open; says whether it did.
    pub fn pass(&mut self, now: Instant) -> bool {
        let open = self.wait(now).is_zero();
        if open {
            self.last = Some(now);
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use milabench::observe::DataPayload;

    fn budget(name: &str, max: Option<u64>, stop: Option<u64>) -> BenchBudget {
        BenchBudget {
            name: name.into(),
            max_duration: max.map(Duration::from_secs),
            stop,
        }
    }

    fn data(f: impl FnOnce(&mut DataPayload)) -> Record {
        let mut payload = DataPayload::default();
        f(&mut payload);
        Record::new(Event::Data(Box::new(payload)), Some(Pipe::Data))
    }

    #[test]
    fn budgets_come_from_the_settings() {
        let bench = |name: &str, config| {
            let config = milabench::suite::Node::from_json(&config);
            ResolvedBench::new(name.into(), config).expect("a benchmark")
        };
        let a = bench(
            "a",
            serde_json::json!({"max_duration": 600, "voir": {"options": {"stop": 60}}}),
        );
        assert_eq!(BenchBudget::of(&a), budget("a", Some(600), Some(60)));
        let b = bench(
            "b",
            serde_json::json!({"max_duration": "x", "voir": {"options": {"stop": -1}}}),
        );
        assert_eq!(BenchBudget::of(&b), budget("b", None, None));
    }

    #[test]
    fn the_eta_sums_max_durations_until_a_pace_is_known() {
        let t0 = Instant::now();
        let mut model = Model::new(
            vec![
                budget("a", Some(100), Some(10)),
                budget("b", Some(300), Some(20)),
            ],
            t0,
        );
        assert_eq!(model.eta(t0), Some(Duration::from_secs(400)));
        // a runs 10 s without progress: its max_duration less the time it ran.
        model.bench_start("a", None, t0);
        assert_eq!(
            model.eta(t0 + Duration::from_secs(10)),
            Some(Duration::from_secs(390))
        );
        // A quarter of the way to its early stop after 10 s: 30 s more.
        model.proc_record(
            "a.D0",
            &data(|d| d.progress = Some([5.0, 20.0])),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(
            model.eta(t0 + Duration::from_secs(10)),
            Some(Duration::from_secs(330))
        );
        // a took 20 s for 10 observations: b's 20 at that pace is 40 s, under its 300.
        model.bench_end("a", BenchState::Passed, Duration::from_secs(20), 10);
        assert_eq!(model.eta(t0), Some(Duration::from_secs(40)));
        assert_eq!(
            model.counts(),
            Counts {
                done: 1,
                running: 0,
                left: 1,
                failed: 0
            }
        );
    }

    #[test]
    fn no_eta_while_a_benchmark_has_no_budget() {
        let t0 = Instant::now();
        let model = Model::new(vec![budget("a", None, Some(5))], t0);
        assert_eq!(model.eta(t0), None);
    }

    #[test]
    fn repeats_fill_rows_in_order_and_unknown_benchmarks_get_one() {
        let t0 = Instant::now();
        let mut model = Model::new(vec![budget("a", None, None), budget("a", None, None)], t0);
        model.bench_start("a", Some(Duration::from_secs(5)), t0);
        model.bench_end("a", BenchState::Failed, Duration::from_secs(1), 0);
        model.bench_start("a", None, t0);
        assert_eq!(model.running, Some(1));
        model.bench_not_run("z", BenchState::Skipped);
        assert_eq!(model.benches.len(), 3);
        let counts = model.counts();
        assert_eq!((counts.done, counts.running, counts.failed), (2, 1, 1));
    }

    #[test]
    fn processes_keep_the_last_minute_of_rates_and_their_stderr() {
        let t0 = Instant::now();
        let mut model = Model::new(Vec::new(), t0);
        model.proc_start("a.D0");
        for s in 0..90u32 {
            model.proc_record(
                "a.D0",
                &data(|d| d.rate = Some(f64::from(s))),
                t0 + Duration::from_secs(u64::from(s)),
            );
        }
        let line = Record::new(Event::Line("oops\n".into()), Some(Pipe::Stderr));
        model.proc_record("a.D0", &line, t0);
        let proc = model.selected_proc().expect("a process");
        assert_eq!(proc.rates.len(), 61);
        assert_eq!(proc.rate, Some(89.0));
        assert_eq!(proc.stderr, ["oops"]);
        model.scroll_by(5);
        assert_eq!(model.scroll, 0, "one line cannot scroll");
    }

    #[test]
    fn gpu_samples_update_the_gauges() {
        use milabench::observe::GpuSample;
        let t0 = Instant::now();
        let mut model = Model::new(Vec::new(), t0);
        let sample = |load, power| GpuSample {
            load: Some(load),
            memory: Some([1000.0, 8000.0]),
            power,
            ..GpuSample::default()
        };
        model.proc_record(
            "a.0",
            &data(|d| d.gpudata = Some(vec![("0".into(), sample(0.5, Some(200.0)))])),
            t0,
        );
        model.proc_record(
            "a.0",
            &data(|d| d.gpudata = Some(vec![("0".into(), sample(0.9, None))])),
            t0,
        );
        let proc = &model.procs[0];
        assert_eq!(
            proc.gpus,
            [GpuGauge {
                device: "0".into(),
                load: Some(0.9),
                memory: Some([1000.0, 8000.0]),
                power: Some(200.0),
            }]
        );
        assert_eq!(proc.peak_power, 200.0);
    }

    #[test]
    fn selection_wraps_around() {
        let t0 = Instant::now();
        let mut model = Model::new(Vec::new(), t0);
        for tag in ["a.0", "a.1", "a.2"] {
            model.proc_start(tag);
        }
        model.select(false);
        assert_eq!(model.selected, 2);
        model.select(true);
        assert_eq!(model.selected, 0);
    }

    #[test]
    fn buckets_average_by_age() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(60);
        let samples: VecDeque<_> = [(0, 9.0), (30, 1.0), (31, 3.0), (59, 5.0)]
            .into_iter()
            .map(|(s, v)| (t0 + Duration::from_secs(s), v))
            .collect();
        // The sample 60 s old is out of the window.
        assert_eq!(
            buckets(&samples, now, RATE_WINDOW, 3),
            [None, Some(2.0), Some(5.0)]
        );
        assert!(buckets(&samples, now, RATE_WINDOW, 0).is_empty());
    }

    #[test]
    fn the_throttle_opens_once_per_period() {
        let t0 = Instant::now();
        let mut gate = Throttle::new(Duration::from_millis(250));
        assert!(gate.pass(t0));
        assert!(!gate.pass(t0 + Duration::from_millis(100)));
        assert_eq!(
            gate.wait(t0 + Duration::from_millis(100)),
            Duration::from_millis(150)
        );
        assert!(gate.pass(t0 + Duration::from_millis(250)));
    }
}
