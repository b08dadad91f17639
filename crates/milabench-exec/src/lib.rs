//! Process supervision: runs the processes of one benchmark plan ([`BenchPlan`]) together and
//! records exactly what they report into the run folder, without disturbing them.
//!
//! [`run_plan`] is the whole job: each process starts in its own process group with stdout,
//! stderr and a data pipe (`DATA_FD`, or data smuggled in stdout with `use_stdout`); every event
//! is appended and flushed to `<run>/<tag>.data` as it arrives (through `milabench-metrics`, so a
//! killed orchestrator leaves a readable file); processes are stopped on early stop, on the
//! plan's `max_duration` and on [`Interrupt`]; nothing they started survives the plan.
//! [`SupervisedChild`] gives one process started on its own (a tool's worker) the same process
//! group, tree signalling, Ctrl-C and watchdog. [`HelperCommand`] runs a helper program to its
//! end for its answer (a GPU query tool, an interpreter, ssh, Slurm's clients, an installer):
//! its output captured or streamed, a time limit and an interrupt that stop everything it
//! started.
//!
//! Design notes:
//!
//! - **Threads, not async.** One thread per plan reads every pipe (`epoll`, a round at most
//!   every 500 ms, sooner for a pipe filling up or one whose process ended, so a record's
//!   wake-ups are shared by every line written meanwhile) and one waiter thread per process
//!   sleeps in `wait` (the caller's sampler, if any, is its own business: `milabench` samples
//!   every process of a run on one thread); they need no runtime and keep the orchestrator
//!   near 0% CPU (the Python tool busy-polls a core). The reading thread decodes and sends a
//!   round's records through a bounded channel to the caller's thread, the only writer of the
//!   files and the only owner of process state (so the observer needs not be `Send`). The
//!   channel is bounded so a flooding benchmark is slowed by full pipes instead of filling
//!   memory; lines are capped ([`ExecOptions::max_line_bytes`]).
//! - **Timers** (grace periods, `max_duration`) are the timeout of the writer's `recv`, so
//!   nothing wakes up unless something happened or is due.
//! - **Process trees** are found through the process group, a token in the environment that
//!   descendants inherit (grandchildren that call `setsid` keep it), and parent pids, by reading
//!   `/proc` only when something must be stopped (see the `tree` module for why
//!   `PR_SET_CHILD_SUBREAPER` is not used).
//! - **A killed orchestrator** cannot stop anything itself: a watchdog process
//!   ([`ExecOptions::watchdog`]) sees it gone and kills the plan's trees (see the `watchdog`
//!   module for why not `PR_SET_PDEATHSIG`).
//! - **No `unsafe`**: the data pipe is passed by clearing close-on-exec on its write end for the
//!   duration of the spawn, under a lock (see the `spawn` module).
//! - **Success** is [`milabench_metrics::ProcessVerdict`], judged on each process's records as
//!   they are written: the one rule that `--resume`, the results store and the report apply to
//!   the written files.
//!
//! ```no_run
//! use milabench_exec::{ExecOptions, install_ctrl_c, run_plan};
//! # fn plan() -> milabench_plan::BenchPlan { unimplemented!() }
//! let options = ExecOptions::default();
//! let _ctrl_c = install_ctrl_c(options.interrupt.clone()).expect("signal handler");
//! let outcome = run_plan(&plan(), "runs/my-run".as_ref(), &options, &mut ())?;
//! if outcome.interrupted {
//!     std::process::exit(130);
//! }
//! for failed in outcome.failures() {
//!     eprintln!("{} failed: {:?}", failed.tag, failed.errors);
//! }
//! # Ok::<(), milabench_exec::ExecError>(())
//! ```

mod error;

mod helper;
mod interrupt;
mod limits;
mod options;
mod outcome;
mod poller;
mod reader;
mod run;
mod spawn;
mod supervised;
mod tree;
mod watchdog;

pub use error::ExecError;
pub use helper::{HelperCommand, HelperError, HelperOutput};
pub use interrupt::{CtrlC, Interrupt, TriggerHook, WatchedGroup, install_ctrl_c};
pub use limits::raise_open_file_limit;
pub use milabench_plan::{BenchPlan, ContainerProcess, Launch, PlannedFile, ProcessSpec};
pub use milabench_vocab::ExitCode;
pub use milabench_vocab::{error_line, error_report, is_broken_pipe};
pub use options::{
    ExecObserver, ExecOptions, PrecisionStop, RecordSink, RunningSampler, SampledProcess,
    SamplerFactory,
};
pub use outcome::{BenchOutcome, ProcessOutcome};
pub use run::run_plan;
pub use supervised::SupervisedChild;
pub use tree::TOKEN_VAR;
pub use watchdog::{WatchdogCommand, serve_watchdog};
