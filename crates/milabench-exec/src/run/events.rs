//! The writer loop's event loop: each message of the reader, waiter and sampler threads
//! handled in turn, a process finished once it exited and its pipes are drained (its sampler
//! stopped with its last records first), an ssh rank's failure named.

use std::sync::mpsc::RecvTimeoutError;
use std::time::Instant;

use milabench_metrics::{EndInfo, Event, Record, ReturnCode};
use serde_json::Value;

use crate::options::RunningSampler;
use crate::outcome::ProcessOutcome;
use crate::reader::Stream;

use super::{
    CHANNEL_DEPTH, Msg, Runner, SAMPLER_POLL, Stopping, error_record, exit_code, now_epoch,
};

impl<'a> Runner<'a, '_> {
    pub(super) fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Batch(messages) => {
                for msg in messages {
                    self.handle(msg);
                }
            }
            Msg::Output {
                proc,
                stream,
                decoded,
            } => {
                if self.procs[proc].outcome.is_some() {
                    return;
                }
                self.raw_text(proc, stream, &decoded.text);
                self.record_all(proc, &decoded.records);
            }
            Msg::Closed {
                proc,
                stream,
                error,
            } => {
                if self.procs[proc].outcome.is_some() {
                    return;
                }
                self.procs[proc].open_streams -= 1;
                if let Some(e) = error {
                    let name = match stream {
                        Stream::Data => "data channel",
                        Stream::Stderr => "stderr",
                        Stream::Stdout | Stream::SmuggledStdout => "stdout",
                    };
                    self.record(
                        proc,
                        error_record("OSError", format!("could not read the {name}: {e}")),
                    );
                }
                self.maybe_finish(proc);
            }
            Msg::Exited { proc, status } => {
                let code = match status {
                    Ok(status) => exit_code(status),
                    Err(e) => {
                        self.record(
                            proc,
                            error_record("OSError", format!("could not wait for the process: {e}")),
                        );
                        -1
                    }
                };
                self.procs[proc].exit = Some(code);
                self.procs[proc].exited_at = Some(Instant::now());
                self.watch_timer(proc);
                self.procs[proc].stdin = None;
                self.maybe_finish(proc);
            }
            Msg::Telemetry { proc, record } => {
                if self.procs[proc].outcome.is_none() {
                    self.record(proc, *record);
                }
            }
            Msg::Wake => {}
        }
    }

    /// ssh itself failed (status 255, and not because the rank was stopped): say which node
    /// could not be reached and why, in ssh's own words.
    pub(super) fn ssh_failure(&mut self, idx: usize, code: i64) {
        let p = &self.procs[idx];
        let Some(target) = p.spec.launch.ssh_target() else {
            return;
        };
        if code != 255 || p.stopping != Stopping::No {
            return;
        }
        let cause = p
            .last_stderr
            .clone()
            .unwrap_or_else(|| "ssh exited with status 255".into());
        let message = format!(
            "could not run the rank on node `{}` over ssh ({}): {cause}\n  fix: check that \
             `ssh -i <sshkey> -p {} {}@{} true` works from this machine (node up, sshd \
             listening, the system file's `sshkey` authorized there)",
            target.node,
            target.describe(),
            target.port,
            target.user,
            target.host
        );
        self.record(idx, error_record("SSHError", message));
    }

    pub(super) fn maybe_finish(&mut self, idx: usize) {
        let p = &self.procs[idx];
        if p.outcome.is_none() && p.exit.is_some() && p.open_streams == 0 {
            self.finish(idx);
        }
    }

    /// Writes `end` and closes the process's books.
    pub(super) fn finish(&mut self, idx: usize) {
        if let Some(code) = self.procs[idx].exit {
            // After the pipes are drained, so that ssh's last words are known.
            self.ssh_failure(idx, code);
        }
        if let Some(sampler) = self.procs[idx].sampler.take() {
            self.stop_sampler(idx, sampler);
        }
        let p = &self.procs[idx];
        let return_code = match p.exit {
            Some(code) if !p.interrupted => ReturnCode::Code(code),
            _ => ReturnCode::Other(Value::String("ERROR".into())),
        };
        let end = Record::new(
            Event::End(Box::new(EndInfo {
                command: Some(Value::from(p.spec.argv.clone())),
                time: Some(now_epoch()),
                return_code: return_code.clone(),
                extra: serde_json::Map::new(),
            })),
            None,
        );
        self.record(idx, end);
        let p = &mut self.procs[idx];
        if let Some(pid) = p.pid {
            self.options.interrupt.remove_group(pid);
        }
        let outcome = ProcessOutcome {
            tag: p.tag.clone(),
            return_code,
            verdict: p.judge.verdict(),
            errors: p.judge.errors().to_vec(),
            timed_out: p.timed_out,
            interrupted: p.interrupted,
            duration: p.launched.elapsed(),
            rate_count: p.judge.rate_count(),
            nolog: p.spec.nolog,
            data_file: p.writer.path().to_path_buf(),
        };
        self.observer.on_end(&outcome);
        self.procs[idx].outcome = Some(outcome);
        self.live_count -= 1;
        self.timed.remove(&idx);
        self.procs[idx].stdin = None;
        self.stop_peers(idx);
    }

    /// Stops the sampler of process `idx`, writing every record it sent before the process's
    /// `end`. The sampler may be waiting for room in the channel, which only this thread
    /// empties (hundreds of processes fill it): the messages taken meanwhile are set aside for
    /// the event loop, except the sampler's own records, written at once.
    pub(super) fn stop_sampler(&mut self, idx: usize, mut sampler: Box<dyn RunningSampler>) {
        sampler.request_stop();
        while !sampler.is_finished() {
            if let Ok(msg) = self.rx.recv_timeout(SAMPLER_POLL) {
                self.take_aside(idx, msg);
            }
        }
        // What it sent is in the channel now, among the `CHANNEL_DEPTH` oldest messages.
        for _ in 0..CHANNEL_DEPTH {
            match self.rx.try_recv() {
                Ok(msg) => self.take_aside(idx, msg),
                Err(_) => break,
            }
        }
        sampler.stop();
    }

    /// Writes `msg` now if it is a record of the sampler of `idx`, else keeps it for the loop.
    pub(super) fn take_aside(&mut self, idx: usize, msg: Msg) {
        match msg {
            Msg::Telemetry { proc, record } if proc == idx => self.record(idx, *record),
            other => self.deferred.push_back(other),
        }
    }

    pub(super) fn event_loop(&mut self) {
        while self.live_count > 0 {
            if self.options.interrupt.is_set() && !self.interrupted {
                self.on_interrupt();
            }
            let waiting = match self.deferred.pop_front() {
                Some(msg) => Ok(msg),
                None => self.rx.try_recv(),
            };
            let msg = match waiting {
                Ok(msg) => Ok(msg),
                Err(_) => {
                    self.observer.on_caught_up();
                    self.wait(self.next_timer())
                }
            };
            match msg {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                // The runner holds a sender: this cannot happen.
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.check_timers(Instant::now());
        }
    }

    /// The next message, waited for until the timer due `at` (if any).
    fn wait(&self, at: Option<Instant>) -> Result<Msg, RecvTimeoutError> {
        match at {
            Some(at) => self
                .rx
                .recv_timeout(at.saturating_duration_since(Instant::now())),
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        }
    }
}
