//! Stopping processes: SIGTERM then SIGKILL to a process tree after the grace period, its
//! peers stopped with it, the plan's deadline and the drain window as timers, an interruption,
//! and the containers of processes that did not end well removed by name.

use std::time::{Duration, Instant};

use milabench_metrics::format::INTERRUPT_ERROR;
use milabench_metrics::{Event, Record};
use milabench_plan::ProcessSpec;
use nix::sys::signal::Signal;

use crate::helper::HelperCommand;
use crate::tree::signal_tree;

use super::{DRAIN_WINDOW, Proc, Runner, Stopping, error_record, seconds};

impl<'a> Runner<'a, '_> {
    /// SIGTERM to the process's tree (for a remote rank: its standard input closed, which
    /// makes the remote side stop the rank); SIGKILL follows after the grace period.
    /// A process in a container gets SIGTERM through its client (podman and docker pass it
    /// on to the container), so it has the grace period to end; the container itself is
    /// removed when the grace period is over ([`Runner::check_timers`]) and again before
    /// [`run_plan`] returns ([`remove_containers`]).
    pub(super) fn stop(&mut self, idx: usize, now: Instant) {
        let p = &mut self.procs[idx];
        if let (Some(pid), Stopping::No) = (p.pid, p.stopping) {
            if p.stdin.take().is_none() {
                signal_tree(Some(pid), &p.token, Signal::SIGTERM);
            }
            p.stopping = Stopping::Term(now);
            self.watch_timer(idx);
        }
    }

    /// Why a process failed, in a few words, when it did (for its peers' messages).
    pub(super) fn failure(&self, idx: usize) -> Option<String> {
        let p = &self.procs[idx];
        let code = p.exit?;
        if p.judge.stop_seen() || (code == 0 && p.judge.errors().is_empty()) {
            return None;
        }
        Some(match p.judge.errors().last() {
            Some(error) => error.clone(),
            None => match &p.last_stderr {
                Some(line) => format!("exited with status {code}: {line}"),
                None => format!("exited with status {code}"),
            },
        })
    }

    /// A rank of a distributed job failed: its peers would wait for it until `max_duration`,
    /// so they are stopped now, with an error that names the failed rank's node and cause.
    pub(super) fn stop_peers(&mut self, idx: usize) {
        let p = &self.procs[idx];
        let (Some(job), false, false) = (&p.spec.job, p.interrupted, p.timed_out) else {
            return;
        };
        let Some(cause) = self.failure(idx) else {
            return;
        };
        let node = p.spec.node.as_deref().unwrap_or("this machine");
        let message = format!(
            "stopped: the rank on node `{node}` ({}) failed: {cause}",
            p.tag
        );
        let now = Instant::now();
        for peer in self.live() {
            if peer != idx
                && self.procs[peer].spec.job.as_ref() == Some(job)
                && self.procs[peer].stopping == Stopping::No
            {
                self.record(peer, error_record("RankFailed", message.clone()));
                self.stop(peer, now);
            }
        }
    }

    /// How long descendants may keep a pipe open after the process exited.
    pub(super) fn drain_window(&self) -> Duration {
        self.options.grace.min(DRAIN_WINDOW)
    }

    pub(super) fn next_timer(&self) -> Option<Instant> {
        let grace = self.options.grace;
        let deadline = self.deadline.filter(|_| !self.timed_out);
        self.timed
            .iter()
            .filter_map(|&i| match self.procs[i].stopping {
                Stopping::No => self.procs[i].exited_at.map(|at| at + self.drain_window()),
                Stopping::Term(at) => Some(at + grace),
                Stopping::Kill(at) => Some(at + grace.max(Duration::from_secs(1))),
            })
            .chain(deadline)
            .min()
    }

    pub(super) fn check_timers(&mut self, now: Instant) {
        if let Some(deadline) = self.deadline
            && !self.timed_out
            && now >= deadline
        {
            self.timed_out = true;
            let message = format!(
                "Terminating process because it ran for longer than {} seconds \
                 (max_duration of {})",
                seconds(self.plan.max_duration.unwrap_or_default()),
                self.plan.bench
            );
            for i in self.live() {
                self.procs[i].timed_out = true;
                self.record(i, error_record("TimeoutError", message.clone()));
                self.record(i, Record::new(Event::Message(message.clone()), None));
                self.stop(i, now);
            }
        }
        let grace = self.options.grace;
        let drain = self.drain_window();
        let timed: Vec<usize> = self.timed.iter().copied().collect();
        for i in timed {
            let p = &mut self.procs[i];
            match p.stopping {
                Stopping::No if p.exited_at.is_some_and(|at| now >= at + drain) => {
                    // The process exited but its descendants still hold a pipe: the benchmark
                    // is over, stop them.
                    self.stop(i, now);
                }
                Stopping::Term(at) if now >= at + grace => {
                    if let Some(pid) = p.pid {
                        signal_tree(Some(pid), &p.token, Signal::SIGKILL);
                    }
                    p.stopping = Stopping::Kill(now);
                    // Killing the client leaves its container running: remove it now, on a
                    // thread of its own (the removal runs again at the end of the plan, where
                    // a failure would show).
                    if let Some(removal) = container_removal(p.spec) {
                        std::thread::spawn(move || {
                            let _ = removal.run();
                        });
                    }
                }
                Stopping::Kill(at) if now >= at + grace.max(Duration::from_secs(1)) => {
                    // Killed and still not done: a pipe is held by something outside the tree,
                    // or the process is stuck in the kernel. Stop waiting for it.
                    if p.exit.is_none() {
                        self.record(
                            i,
                            error_record(
                                "TimeoutError",
                                "the process did not exit after SIGKILL".into(),
                            ),
                        );
                    }
                    self.finish(i);
                }
                _ => {}
            }
        }
    }

    pub(super) fn on_interrupt(&mut self) {
        self.interrupted = true;
        let now = Instant::now();
        for i in self.live() {
            self.procs[i].interrupted = true;
            self.record(
                i,
                error_record(
                    INTERRUPT_ERROR,
                    "milabench was interrupted; the process group was stopped".into(),
                ),
            );
            self.stop(i, now);
        }
    }
}

/// How long removing one container may take (`podman rm --force` waits for its stop timeout).
const CONTAINER_REMOVAL_LIMIT: Duration = Duration::from_secs(60);

/// The command that removes the container of `spec`, when it runs in one that must be
/// removed by name (podman, docker).
fn container_removal(spec: &ProcessSpec) -> Option<HelperCommand> {
    let stop = spec.container.as_ref()?.stop.as_ref()?;
    let (program, args) = stop.split_first()?;
    Some(HelperCommand::new(program, args, CONTAINER_REMOVAL_LIMIT))
}

/// Removes the containers of the processes that were stopped or did not end well, so that
/// none is left behind (a container that ended on its own removed itself: `--rm`). One at a
/// time, each within [`CONTAINER_REMOVAL_LIMIT`]; a container already gone is no error.
pub(super) fn remove_containers(procs: &[Proc<'_>]) {
    for p in procs {
        let ended_well = p.stopping == Stopping::No && p.exit == Some(0);
        if p.pid.is_some()
            && !ended_well
            && let Some(removal) = container_removal(p.spec)
        {
            // The runtime says why it could not; the next run's `check` finds what is left.
            let _ = removal.run();
        }
    }
}
