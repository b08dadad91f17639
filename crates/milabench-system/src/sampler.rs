//! The telemetry sampler that runs beside a benchmark: every poll interval, one `data` event per
//! monitor (`gpudata` for the benchmark's devices, `cpudata` for the host, `process` for the
//! benchmark's process tree), in voir's payload shapes, handed to a sink.
//!
//! Faults never stop the benchmark: a device that cannot be read is sampled as
//! `{"error": ...}`, a field that cannot be read is named in the device's `missing` list, and
//! each distinct problem is announced once, as a `message` event.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use milabench_metrics::format::DataKey;
use milabench_metrics::{CpuSample, DataPayload, Event, GpuSample};
use serde_json::{Map, Value, json};
use sysinfo::{
    MemoryRefreshKind, Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System,
    UpdateKind,
};

use crate::error::SystemError;
use crate::gpu::GpuDiscovery;

/// The poll interval when the benchmark does not set `voir.options.gpu_poll`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(3);

/// How often the process tree is searched again for new children (between searches only the
/// known members are read, which is much cheaper).
const TREE_REFRESH: Duration = Duration::from_secs(2);

/// The first sample comes after at most this long, so short benchmarks get one too.
const FIRST_SAMPLE_AT_MOST: Duration = Duration::from_secs(1);

/// The poll interval of a benchmark: its `voir.options.gpu_poll` (seconds, as a number or a
/// string such as `"0.5"`, `"500ms"`, `"3s"`), else [`DEFAULT_POLL_INTERVAL`]. Values that are
/// not positive are ignored.
pub fn poll_interval(bench_config: &Value) -> Duration {
    let raw = bench_config
        .get("voir")
        .and_then(|v| v.get("options"))
        .and_then(|o| o.get("gpu_poll"));
    let seconds = match raw {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => {
            let s = s.trim();
            if let Some(ms) = s.strip_suffix("ms") {
                ms.trim().parse::<f64>().ok().map(|x| x / 1000.0)
            } else {
                s.strip_suffix('s').unwrap_or(s).trim().parse::<f64>().ok()
            }
        }
        _ => None,
    };
    seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_POLL_INTERVAL, Duration::from_secs_f64)
}

/// What to sample.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Time between samples.
    pub interval: Duration,
    /// Physical indices of the GPUs the benchmark uses (no `gpudata` when empty).
    pub gpus: Vec<u32>,
    /// The benchmark's root process (its process group leader): it and every descendant make
    /// the `process` sample. No `process` sample when `None`.
    pub root_pid: Option<u32>,
    /// Whether to send `cpudata` (host memory and CPU load).
    pub cpu: bool,
}

impl SamplerConfig {
    /// Samples every `interval`, host data only.
    pub fn new(interval: Duration) -> SamplerConfig {
        SamplerConfig {
            interval,
            gpus: Vec::new(),
            root_pid: None,
            cpu: true,
        }
    }

    /// Adds the GPUs to sample.
    pub fn gpus(mut self, gpus: impl IntoIterator<Item = u32>) -> SamplerConfig {
        self.gpus = gpus.into_iter().collect();
        self
    }

    /// Adds the process tree to follow.
    pub fn process(mut self, root_pid: u32) -> SamplerConfig {
        self.root_pid = Some(root_pid);
        self
    }
}

/// One sampling step, without a thread: what the sampler thread calls every interval. Useful on
/// its own to take samples on demand (and to measure their cost).
#[derive(Debug)]
pub struct Collector {
    gpus: GpuDiscovery,
    config: SamplerConfig,
    sys: System,
    tree: Vec<Pid>,
    tree_searched: Option<Instant>,
    cpu_count: f64,
    total_memory: u64,
    announced: HashSet<String>,
    warnings: Vec<String>,
    /// Each sampled GPU's energy counter (mJ) when the collector was made, and that instant.
    energy_start: (Vec<(u32, u64)>, Instant),
}

fn process_kind() -> ProcessRefreshKind {
    // No tasks (threads), environment, command line or executable: those are the expensive
    // parts of a refresh on Linux.
    ProcessRefreshKind::nothing()
        .with_cpu()
        .with_memory()
        .with_disk_usage()
        .with_exe(UpdateKind::Never)
        .without_tasks()
}

impl Collector {
    /// Prepares the readings (and primes the CPU counters so the first sample has loads).
    pub fn new(gpus: GpuDiscovery, config: SamplerConfig) -> Result<Collector, SystemError> {
        let mut sys = System::new().map_err(SystemError::sysinfo)?;
        sys.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
        sys.refresh_cpu_usage();
        let cpu_count = sys.cpus().len().max(1) as f64;
        let total_memory = sys.total_memory();
        let energy_start = (energy_counters(&gpus, &config.gpus), Instant::now());
        let mut c = Collector {
            gpus,
            config,
            sys,
            tree: Vec::new(),
            tree_searched: None,
            cpu_count,
            total_memory,
            announced: HashSet::new(),
            warnings: Vec::new(),
            energy_start,
        };
        c.refresh_tree(Instant::now());
        Ok(c)
    }

    /// Problems announced so far, one sentence each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Takes one sample of everything configured: the `data` events (all with the same `time`),
    /// preceded by a `message` event for each problem seen for the first time.
    pub fn collect(&mut self) -> Vec<Event> {
        let time = epoch_seconds();
        let mut out = Vec::new();
        let mut messages = Vec::new();
        if !self.config.gpus.is_empty() {
            let gpudata = self.gpudata(&mut messages);
            out.push(record(time, |d| d.gpudata = Some(gpudata)));
        }
        if self.config.cpu {
            self.sys.refresh_cpu_usage();
            self.sys
                .refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
            let cpu = CpuSample {
                memory: Some([self.sys.used_memory() as f64, self.total_memory as f64]),
                load: Some(f64::from(self.sys.global_cpu_usage())),
                extra: Map::new(),
            };
            out.push(record(time, |d| d.cpudata = Some(cpu)));
        }
        if self.config.root_pid.is_some()
            && let Some(process) = self.process()
        {
            out.push(record(time, |d| {
                d.extra.insert(DataKey::Process.as_str().into(), process);
            }));
        }
        messages.extend(out);
        messages
    }

    /// The `gpu_energy` event: what each GPU's energy counter counted since the collector was
    /// made, with the seconds it covers; `None` without GPUs or counters.
    pub fn energy(&self) -> Option<Event> {
        let (start, since) = &self.energy_start;
        let seconds = since.elapsed().as_secs_f64();
        let now: Map<String, Value> = energy_counters(&self.gpus, &self.config.gpus)
            .into_iter()
            .filter_map(|(index, mj)| {
                let (_, first) = start.iter().find(|(i, _)| *i == index)?;
                let joules = mj.checked_sub(*first)? as f64 / 1000.0;
                Some((
                    index.to_string(),
                    serde_json::json!({"joules": joules, "seconds": seconds}),
                ))
            })
            .collect();
        if now.is_empty() {
            return None;
        }
        let time = epoch_seconds();
        Some(record(time, |d| {
            d.extra
                .insert(DataKey::GpuEnergy.as_str().into(), Value::Object(now));
        }))
    }

    fn announce(&mut self, key: String, text: String, messages: &mut Vec<Event>) {
        if self.announced.insert(key) {
            self.warnings.push(text.clone());
            messages.push(Event::Message(text));
        }
    }

    fn gpudata(&mut self, messages: &mut Vec<Event>) -> Vec<(String, GpuSample)> {
        let Some(backend) = self.gpus.backend.clone() else {
            let why = if self.gpus.problems.is_empty() {
                "no GPU was found on this machine".to_owned()
            } else {
                self.gpus.problems.join("; ")
            };
            self.announce(
                "no-backend".into(),
                format!("telemetry: GPUs cannot be sampled ({why}); GPU samples say `error`, the benchmark goes on"),
                messages,
            );
            return self
                .config
                .gpus
                .iter()
                .map(|i| (i.to_string(), error_sample(&why)))
                .collect();
        };
        let mut out = Vec::with_capacity(self.config.gpus.len());
        for (index, reading) in backend.sample(&self.config.gpus) {
            let sample = match reading {
                Ok(r) => {
                    if !r.missing.is_empty() {
                        let fields: Vec<String> = r
                            .missing
                            .iter()
                            .map(|m| format!("{} ({})", m.field, m.reason))
                            .collect();
                        self.announce(
                            format!("missing:{index}"),
                            format!(
                                "telemetry: GPU {index} does not report {}; its samples list them under `missing`",
                                fields.join(", ")
                            ),
                            messages,
                        );
                    }
                    r.to_gpu_sample()
                }
                Err(e) => {
                    let text = e.to_string();
                    self.announce(
                        format!("error:{index}"),
                        format!("telemetry: {text}; its samples say `error` from now on, the benchmark goes on"),
                        messages,
                    );
                    error_sample(&text)
                }
            };
            out.push((index.to_string(), sample));
        }
        out
    }

    /// Finds the members of the tree under the root pid: through the kernel's `children` lists
    /// where there are some (cheap: only the tree is read), else from every process's parent.
    fn refresh_tree(&mut self, now: Instant) {
        let Some(root) = self.config.root_pid else {
            return;
        };
        self.tree_searched = Some(now);
        if let Some(tree) = proc_children_tree(root) {
            self.tree = tree.into_iter().map(Pid::from_u32).collect();
            return;
        }
        self.sys
            .refresh_processes_specifics(ProcessesToUpdate::All, true, process_kind());
        let mut children: HashMap<Pid, Vec<Pid>> = HashMap::new();
        for (pid, p) in self.sys.processes() {
            if let Some(parent) = p.parent() {
                children.entry(parent).or_default().push(*pid);
            }
        }
        let root = Pid::from_u32(root);
        let mut tree = Vec::new();
        if self.sys.process(root).is_some() {
            let mut stack = vec![root];
            while let Some(pid) = stack.pop() {
                tree.push(pid);
                if let Some(kids) = children.get(&pid) {
                    stack.extend(kids);
                }
            }
        }
        self.tree = tree;
    }

    fn process(&mut self) -> Option<Value> {
        let root = self.config.root_pid?;
        let now = Instant::now();
        if self
            .tree_searched
            .is_none_or(|t| now.duration_since(t) >= TREE_REFRESH)
        {
            self.refresh_tree(now);
        }
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&self.tree),
            true,
            process_kind(),
        );
        let members: Vec<&sysinfo::Process> = self
            .tree
            .iter()
            .filter_map(|p| self.sys.process(*p))
            .filter(|p| !matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead))
            .collect();
        if members.is_empty() {
            return None;
        }
        let rss: u64 = members.iter().map(|p| p.memory()).sum();
        let cpu: f64 = members.iter().map(|p| f64::from(p.cpu_usage())).sum();
        let read: u64 = members
            .iter()
            .map(|p| p.disk_usage().total_read_bytes)
            .sum();
        let written: u64 = members
            .iter()
            .map(|p| p.disk_usage().total_written_bytes)
            .sum();
        Some(json!({
            "pid": root,
            "load": cpu / self.cpu_count,
            "processes": members.len(),
            "read_bytes": read,
            "write_bytes": written,
            "memory": [rss, self.total_memory],
        }))
    }
}

/// The tree under `root` from `/proc/<pid>/task/<tid>/children` (Linux with
/// `CONFIG_PROC_CHILDREN`); `None` where the kernel does not provide those lists.
fn proc_children_tree(root: u32) -> Option<Vec<u32>> {
    let tasks = |pid: u32| std::fs::read_dir(format!("/proc/{pid}/task"));
    let own = std::process::id();
    if !std::path::Path::new(&format!("/proc/{own}/task/{own}/children")).exists() {
        return None;
    }
    let mut tree = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        // A process gone in the meantime simply leaves the tree.
        let Ok(threads) = tasks(pid) else { continue };
        tree.push(pid);
        for thread in threads.flatten() {
            let Ok(list) = std::fs::read_to_string(thread.path().join("children")) else {
                continue;
            };
            stack.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    Some(tree)
}

/// Now, in seconds since the epoch (the records' `time`).
fn epoch_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The energy counters (mJ) of `indices` that have one.
fn energy_counters(gpus: &GpuDiscovery, indices: &[u32]) -> Vec<(u32, u64)> {
    let Some(backend) = &gpus.backend else {
        return Vec::new();
    };
    indices
        .iter()
        .filter_map(|&index| Some((index, backend.energy_mj(index)?)))
        .collect()
}

fn record(time: f64, fill: impl FnOnce(&mut DataPayload)) -> Event {
    let mut d = DataPayload {
        task: Some("main".into()),
        time: Some(time),
        ..DataPayload::default()
    };
    fill(&mut d);
    Event::Data(Box::new(d))
}

fn error_sample(why: &str) -> GpuSample {
    let mut s = GpuSample::default();
    s.extra.insert("error".into(), Value::from(why));
    s
}

/// What a sampler did, returned when it stops.
#[derive(Debug, Clone, Default)]
pub struct SamplerStats {
    /// Samples taken (polls, each giving one event per monitor).
    pub samples: u64,
    /// Wall time spent taking them.
    pub busy: Duration,
    /// CPU time its thread used in all, shared by every member of a [`SamplerPool`] (Linux;
    /// `None` elsewhere).
    pub cpu_time: Option<Duration>,
    /// Problems announced, one sentence each (each was also sent as a `message` event).
    pub warnings: Vec<String>,
}

/// Starts samplers.
#[derive(Debug)]
pub struct Sampler;

impl Sampler {
    /// Starts a thread that samples per `config` and hands every event to `sink`, until
    /// [`SamplerHandle::stop`] (or the handle is dropped). The first sample comes after
    /// `min(interval, 1 s)`, the next ones every `interval`. (A pool of one: see
    /// [`SamplerPool`] to sample many processes on one thread.)
    pub fn start<F>(
        gpus: GpuDiscovery,
        config: SamplerConfig,
        sink: F,
    ) -> Result<SamplerHandle, SystemError>
    where
        F: FnMut(Event) + Send + 'static,
    {
        let collector = Collector::new(gpus, config)?;
        Ok(SamplerPool::start()?.add(collector, sink))
    }
}

/// A member's sample is taken early, by up to a quarter of its interval or of its first wait
/// (whichever is shorter), to join a wake-up of the pool's thread: members started around the
/// same time come to share their wake-ups.
const JOIN_EARLY: u32 = 4;

/// One thread sampling many collectors (one per benchmark process of a plan): a wake-up of the
/// thread samples every member due, so hundreds of processes cost a few wake-ups per interval
/// and one thread, not one of each per process. The thread ends once the pool and every
/// handle are dropped.
#[derive(Debug, Clone)]
pub struct SamplerPool {
    commands: mpsc::Sender<Command>,
}

/// What a pool's thread is asked to do.
enum Command {
    Add(Box<Member>),
    Stop(u64),
}

/// A collector sampled by a pool's thread.
struct Member {
    id: u64,
    collector: Collector,
    sink: Box<dyn FnMut(Event) + Send>,
    next: Instant,
    stats: SamplerStats,
    done: mpsc::Sender<SamplerStats>,
    finished: Arc<AtomicBool>,
}

impl Member {
    fn sample(&mut self, now: Instant) {
        let began = Instant::now();
        for event in self.collector.collect() {
            (self.sink)(event);
        }
        self.stats.samples += 1;
        self.stats.busy += began.elapsed();
        self.next += self.collector.config.interval;
        // After a long stall, skip the missed polls rather than bursting.
        if self.next < now {
            self.next = now + self.collector.config.interval;
        }
    }

    /// Sends the energy record and the stats: nothing comes from this member afterwards.
    fn finish(mut self) {
        if let Some(event) = self.collector.energy() {
            (self.sink)(event);
        }
        self.stats.warnings = std::mem::take(&mut self.collector.warnings);
        self.stats.cpu_time = thread_cpu_time();
        let _ = self.done.send(self.stats);
        self.finished.store(true, Ordering::Release);
    }
}

impl SamplerPool {
    /// Starts the pool's thread (named `milabench-sampler`), with no member yet.
    pub fn start() -> Result<SamplerPool, SystemError> {
        let (commands, received) = mpsc::channel::<Command>();
        std::thread::Builder::new()
            .name("milabench-sampler".into())
            .spawn(move || pool_thread(&received))
            .map_err(SystemError::Thread)?;
        Ok(SamplerPool { commands })
    }

    /// Samples `collector` on the pool's thread, handing its events to `sink`, until the
    /// returned handle stops it. Its first sample comes after at most `min(interval, 1 s)`.
    pub fn add<F>(&self, collector: Collector, sink: F) -> SamplerHandle
    where
        F: FnMut(Event) + Send + 'static,
    {
        static IDS: AtomicU64 = AtomicU64::new(0);
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        let (done, stats) = mpsc::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let first = collector.config.interval.min(FIRST_SAMPLE_AT_MOST);
        let member = Member {
            id,
            collector,
            sink: Box::new(sink),
            next: Instant::now() + first,
            stats: SamplerStats::default(),
            done,
            finished: Arc::clone(&finished),
        };
        // A send fails only when the thread has gone, which then drops `done`: the handle
        // sees a finished sampler.
        let _ = self.commands.send(Command::Add(Box::new(member)));
        SamplerHandle {
            id,
            commands: Some(self.commands.clone()),
            stats,
            finished,
        }
    }
}

/// The pool's thread: waits for the next member due or a command; samples the members due.
fn pool_thread(received: &mpsc::Receiver<Command>) {
    let mut members: Vec<Member> = Vec::new();
    loop {
        let next = members.iter().map(|m| m.next).min();
        let command = match next {
            Some(at) => received.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => received
                .recv()
                .map_err(|mpsc::RecvError| RecvTimeoutError::Disconnected),
        };
        match command {
            Ok(Command::Add(member)) => members.push(*member),
            Ok(Command::Stop(id)) => {
                if let Some(at) = members.iter().position(|m| m.id == id) {
                    members.swap_remove(at).finish();
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                members.into_iter().for_each(Member::finish);
                return;
            }
        }
        let now = Instant::now();
        for member in &mut members {
            let early = member.collector.config.interval.min(FIRST_SAMPLE_AT_MOST) / JOIN_EARLY;
            if member.next <= now + early {
                member.sample(now);
            }
        }
    }
}

/// CPU time used so far by the calling thread (from `/proc/thread-self/schedstat`, in ns).
pub fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(ns))
}

/// A running sampler (a member of a [`SamplerPool`]). Dropping it stops it too.
#[derive(Debug)]
pub struct SamplerHandle {
    id: u64,
    commands: Option<mpsc::Sender<Command>>,
    stats: mpsc::Receiver<SamplerStats>,
    finished: Arc<AtomicBool>,
}

impl SamplerHandle {
    /// Stops sampling (at once, even mid-wait), waits for its last record, and says what it
    /// did.
    pub fn stop(mut self) -> SamplerStats {
        self.finish()
    }

    /// Asks the pool to stop this sampler and returns at once (see
    /// [`SamplerHandle::is_finished`]).
    pub fn request_stop(&mut self) {
        if let Some(commands) = self.commands.take() {
            let _ = commands.send(Command::Stop(self.id));
        }
    }

    /// Whether the sampler has ended: its last event (the energy counters) handed to its sink.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    fn finish(&mut self) -> SamplerStats {
        self.request_stop();
        // The thread gone (it panicked) drops the sender: no stats then.
        self.stats.recv().unwrap_or_default()
    }
}

impl Drop for SamplerHandle {
    fn drop(&mut self) {
        if self.commands.is_some() {
            self.finish();
        }
    }
}

#[cfg(test)]
mod tests;
