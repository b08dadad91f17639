//! What the caller chooses: grace period, metadata, live observer, telemetry hook, interruption.

use std::fmt;
use std::fs::File;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use milabench_metrics::Record;
use milabench_plan::ProcessSpec;
use serde_json::Value;

use crate::interrupt::Interrupt;
use crate::outcome::ProcessOutcome;
use crate::watchdog::WatchdogCommand;

/// How [`crate::run_plan`] runs a plan.
#[derive(Clone)]
pub struct ExecOptions {
    /// Time between SIGTERM and SIGKILL when a process group is stopped (early stop, timeout,
    /// interruption, stragglers left after the main process exited). Default 10 s.
    pub grace: Duration,
    /// Payload of the `meta` event written before each process starts on the local machine
    /// (processes whose `node` is `None`, or a node missing from `node_meta`). `None`: no `meta`
    /// event.
    pub meta: Option<Value>,
    /// `meta` payloads by node name, for multi-node plans.
    pub node_meta: IndexMap<String, Value>,
    /// Set by the caller's Ctrl-C handler (see [`crate::install_ctrl_c`]).
    pub interrupt: Interrupt,
    /// Started beside each process to add telemetry (`gpudata`, `cpudata`) to its `.data` file.
    pub sampler: Option<Arc<dyn SamplerFactory>>,
    /// Longest line kept whole from stdout, stderr or the data channel; longer lines are cut (a
    /// data line becomes a `format_error`), so a process that writes without newlines cannot
    /// exhaust memory. Default 1 MiB.
    pub max_line_bytes: usize,
    /// Files every process (and the watchdog) inherits open: the run folder's lock (and the
    /// benchmark's own lock when the folder is shared), so that they stay held while anything
    /// of the run lives, even after the orchestrator died.
    pub keep_open: Vec<Arc<File>>,
    /// The watchdog started beside each plan, which kills the plan's processes should the
    /// orchestrator die (see the `watchdog` module). `None`: processes outlive a killed
    /// orchestrator.
    pub watchdog: Option<WatchdogCommand>,
    /// Stop the plan once its rate is precise enough (`run --precision`); `None`: the
    /// benchmarks decide when they stop.
    pub precision: Option<PrecisionStop>,
}

/// When a plan has measured its rate precisely enough to be stopped (`milabench-stats`'s rule:
/// the pooled 95% interval within the target over several checks, after enough rates). The plan
/// is then stopped the way an early stop stops it (a `stop` event in every file, so the
/// processes count as successes, then SIGTERM); the most observations stay the benchmark's own
/// early-stop count, and `max_duration` stays in force.
pub type PrecisionStop = milabench_stats::PrecisionRule;

impl Default for ExecOptions {
    fn default() -> ExecOptions {
        ExecOptions {
            grace: Duration::from_secs(10),
            meta: None,
            node_meta: IndexMap::new(),
            interrupt: Interrupt::new(),
            sampler: None,
            max_line_bytes: 1 << 20,
            keep_open: Vec::new(),
            watchdog: None,
            precision: None,
        }
    }
}

impl fmt::Debug for ExecOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecOptions")
            .field("grace", &self.grace)
            .field("meta", &self.meta.is_some())
            .field("node_meta", &self.node_meta.keys().collect::<Vec<_>>())
            .field("interrupt", &self.interrupt)
            .field("sampler", &self.sampler.is_some())
            .field("max_line_bytes", &self.max_line_bytes)
            .field("keep_open", &self.keep_open)
            .field("watchdog", &self.watchdog)
            .field("precision", &self.precision)
            .finish()
    }
}

impl ExecOptions {
    /// The `meta` payload for a process on `node`.
    pub(crate) fn meta_for(&self, node: Option<&str>) -> Option<&Value> {
        node.and_then(|n| self.node_meta.get(n))
            .or(self.meta.as_ref())
    }
}

/// Live view of a running plan, for progress display. Every method has an empty default;
/// they are called on the thread that called [`crate::run_plan`], in event order.
pub trait ExecObserver {
    /// A process was started (not called when it could not be started).
    fn on_start(&mut self, tag: &str, spec: &ProcessSpec) {
        let _ = (tag, spec);
    }

    /// A record was written to the `.data` file of `tag` (every record: data, lines, phases,
    /// errors...). Rates, losses and early-stop progress are `Event::Data` payloads.
    fn on_record(&mut self, tag: &str, record: &Record) {
        let _ = (tag, record);
    }

    /// A process ended and its `end` event was written.
    fn on_end(&mut self, outcome: &ProcessOutcome) {
        let _ = outcome;
    }

    /// Every message that had arrived is handled, and the loop is about to wait for the next:
    /// what came together (a round of the reading thread, a sampler's records) was all
    /// delivered, so a view may show it now, once, rather than after each record.
    fn on_caught_up(&mut self) {}
}

/// An observer that ignores everything.
impl ExecObserver for () {}

/// A process that a sampler watches.
#[derive(Debug, Clone, Copy)]
pub struct SampledProcess<'a> {
    /// Its tag.
    pub tag: &'a str,
    /// Its pid, which is also its process group id.
    pub pid: u32,
    /// The devices it may use (GPU indices as strings).
    pub devices: &'a [String],
    /// The node it runs on.
    pub node: Option<&'a str>,
}

/// Starts telemetry beside each process of a plan (the hook for `milabench-system`'s sampler).
pub trait SamplerFactory: Send + Sync {
    /// Starts sampling `process`; records go to `sink` (its `.data` file) until the returned
    /// handle is stopped, just before the process's `end` event. `None`: nothing to sample.
    fn start(
        &self,
        process: &SampledProcess<'_>,
        sink: RecordSink,
    ) -> Option<Box<dyn RunningSampler>>;
}

/// A sampler started by a [`SamplerFactory`].
pub trait RunningSampler: Send {
    /// Asks the sampler to stop and returns at once: its last records may still be on their
    /// way, and the run's writer keeps taking them until [`RunningSampler::is_finished`].
    fn request_stop(&mut self);
    /// Whether the sampler has stopped and sent its last record.
    fn is_finished(&self) -> bool;
    /// Waits for the sampler to end (at once once it is finished); no record sent after this
    /// returns is written.
    fn stop(self: Box<Self>);
}

/// Where a sampler sends records: the `.data` file of one process, through the run's writer.
#[derive(Clone)]
pub struct RecordSink {
    pub(crate) proc: usize,
    pub(crate) tx: std::sync::mpsc::SyncSender<crate::run::Msg>,
}

impl fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordSink")
            .field("proc", &self.proc)
            .finish()
    }
}

impl RecordSink {
    /// Queues `record` for the process's `.data` file; `false` once the plan has finished.
    pub fn send(&self, record: Record) -> bool {
        self.tx
            .send(crate::run::Msg::Telemetry {
                proc: self.proc,
                record: Box::new(record),
            })
            .is_ok()
    }
}
