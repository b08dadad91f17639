//! The telemetry sampler that runs beside a benchmark: every poll interval, one `data` event per
//! monitor (`gpudata` for the benchmark's devices, `cpudata` for the host, `process` for the
//! benchmark's process tree), in voir's payload shapes, handed to a sink.
//!
//! Faults never stop the benchmark: a device that cannot be read is sampled as
//! `{"error": ...}`, a field that cannot be read is named in the device's `missing` list, and
//! each distinct problem is announced once, as a `message` event.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
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
    /// CPU time the sampler thread used in all (Linux; `None` elsewhere).
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
    /// `min(interval, 1 s)`, the next ones every `interval`.
    pub fn start<F>(
        gpus: GpuDiscovery,
        config: SamplerConfig,
        sink: F,
    ) -> Result<SamplerHandle, SystemError>
    where
        F: FnMut(Event) + Send + 'static,
    {
        let collector = Collector::new(gpus, config)?;
        Sampler::start_collector(collector, sink)
    }

    /// Starts a thread around an existing [`Collector`].
    pub fn start_collector<F>(
        mut collector: Collector,
        mut sink: F,
    ) -> Result<SamplerHandle, SystemError>
    where
        F: FnMut(Event) + Send + 'static,
    {
        let (stop, stopped) = mpsc::channel::<()>();
        let interval = collector.config.interval;
        let thread = std::thread::Builder::new()
            .name("milabench-sampler".into())
            .spawn(move || {
                let mut stats = SamplerStats::default();
                let mut next = Instant::now() + interval.min(FIRST_SAMPLE_AT_MOST);
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                    let began = Instant::now();
                    for event in collector.collect() {
                        sink(event);
                    }
                    stats.samples += 1;
                    stats.busy += began.elapsed();
                    next += interval;
                    // After a long stall, skip the missed polls rather than bursting.
                    let now = Instant::now();
                    if next < now {
                        next = now + interval;
                    }
                }
                if let Some(event) = collector.energy() {
                    sink(event);
                }
                stats.warnings = collector.warnings;
                stats.cpu_time = thread_cpu_time();
                stats
            })
            .map_err(SystemError::Thread)?;
        Ok(SamplerHandle {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// CPU time used so far by the calling thread (from `/proc/thread-self/schedstat`, in ns).
pub fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(ns))
}

/// A running sampler. Dropping it stops it too.
#[derive(Debug)]
pub struct SamplerHandle {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<SamplerStats>>,
}

impl SamplerHandle {
    /// Stops the thread (at once, even mid-wait), waits for it, and says what it did.
    pub fn stop(mut self) -> SamplerStats {
        self.finish()
    }

    /// Asks the thread to stop and returns at once (see [`SamplerHandle::is_finished`]).
    pub fn request_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Whether the thread has ended: its last event (the energy counters) handed to its sink.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    fn finish(&mut self) -> SamplerStats {
        self.request_stop();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for SamplerHandle {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests;
