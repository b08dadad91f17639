//! Starting one process of the plan: its `config`, `meta` and `start` records written first,
//! then the process spawned in its own group, its pipes handed to the plan's reading thread,
//! its waiter and sampler threads started, and the watchdog told about it.

use std::os::fd::OwnedFd;
use std::time::Instant;

use milabench_metrics::{DataFileWriter, Event, ProcessJudge, Record, StartInfo};
use milabench_plan::ProcessSpec;
use nix::sys::signal::Signal;

use crate::error::ExecError;
use crate::options::{RecordSink, SampledProcess};
use crate::reader::Stream;
use crate::spawn::spawn;
use crate::tree::signal_tree;

use super::{Msg, Proc, Runner, Stopping, error_record, now_epoch, spawn_error_kind};

impl<'a> Runner<'a, '_> {
    /// Writes `config`, `meta` and `start`, then starts the process and its threads.
    pub(super) fn launch(
        &mut self,
        idx: usize,
        spec: &'a ProcessSpec,
        token: String,
    ) -> Result<(), ExecError> {
        let tag = spec.tag_name();
        let writer = DataFileWriter::open(self.run_dir.join(format!("{tag}.data")))?;
        self.procs.push(Proc {
            spec,
            tag,
            token,
            writer,
            stdout: None,
            stderr: None,
            pid: None,
            launched: Instant::now(),
            exit: None,
            exited_at: None,
            open_streams: 0,
            stopping: Stopping::No,
            timed_out: false,
            interrupted: false,
            judge: ProcessJudge::default(),
            rates: Vec::new(),
            sampler: None,
            outcome: None,
            stdin: None,
            last_stderr: None,
        });
        self.live_count += 1;
        self.record(idx, Record::new(Event::Config(spec.config.clone()), None));
        if let Some(meta) = self.options.meta_for(spec.node.as_deref()) {
            self.record(idx, Record::new(Event::Meta(meta.clone()), None));
        }
        let start = Record::new(
            Event::Start(Box::new(StartInfo {
                command: spec.argv.clone(),
                time: Some(now_epoch()),
                extra: serde_json::Map::new(),
            })),
            None,
        );
        self.tell_watchdog(&self.procs[idx].token.clone(), None)?;
        let spawned = spawn(spec, &self.procs[idx].token, &self.options.keep_open);
        self.procs[idx].launched = Instant::now();
        self.record(idx, start);
        let mut spawned = match spawned {
            Ok(s) => s,
            Err(e) => {
                let message = format!("could not start {} (in {}): {e}", spec.argv[0], spec.cwd);
                self.record(idx, error_record(spawn_error_kind(&e), message));
                self.finish(idx);
                return Ok(());
            }
        };
        let pid = spawned.child.id() as i32;
        self.procs[idx].stdin = spawned.child.stdin.take();
        self.options.interrupt.add_group(pid);
        if let Err(e) = self.tell_watchdog(&self.procs[idx].token.clone(), Some(pid)) {
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            return Err(e);
        }
        if let Some(removal) = spec.container.as_ref().and_then(|c| c.stop.as_ref())
            && let Some(watchdog) = &mut self.watchdog
            && let Err(error) = watchdog.watch_container(removal)
        {
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            return Err(self.watchdog_error(error));
        }
        self.procs[idx].pid = Some(pid);
        let mut pipes: Vec<(Stream, OwnedFd)> = Vec::new();
        if let Some(out) = spawned.child.stdout.take() {
            let stream = if spec.use_stdout {
                Stream::SmuggledStdout
            } else {
                Stream::Stdout
            };
            pipes.push((stream, out.into()));
        }
        if let Some(err) = spawned.child.stderr.take() {
            pipes.push((Stream::Stderr, err.into()));
        }
        if let Some(data) = spawned.data.take() {
            pipes.push((Stream::Data, data.into()));
        }
        self.procs[idx].open_streams = pipes.len();
        for (stream, fd) in pipes {
            self.pipes.add(idx, stream, fd);
        }
        let tx = self.tx.clone();
        let mut child = spawned.child;
        let waiter = std::thread::Builder::new()
            .name(format!("milabench-wait-{pid}"))
            .spawn(move || {
                let status = child.wait().map_err(|e| e.to_string());
                let _ = tx.send(Msg::Exited { proc: idx, status });
            });
        if let Err(e) = waiter {
            // Without a waiter the exit is never seen: kill it and say so.
            signal_tree(Some(pid), &self.procs[idx].token, Signal::SIGKILL);
            self.record(
                idx,
                error_record("OSError", format!("could not start a waiter thread: {e}")),
            );
            self.procs[idx].exit = Some(-9);
            self.procs[idx].stopping = Stopping::Kill(Instant::now());
            self.watch_timer(idx);
        }
        self.observer.on_start(&self.procs[idx].tag, spec);
        if let Some(factory) = &self.options.sampler {
            let target = SampledProcess {
                tag: &self.procs[idx].tag,
                pid: pid as u32,
                devices: &spec.devices,
                node: spec.node.as_deref(),
            };
            let sink = RecordSink {
                proc: idx,
                tx: self.tx.clone(),
            };
            self.procs[idx].sampler = factory.start(&target, sink);
        }
        Ok(())
    }

    /// Names a process tree to the watchdog, if there is one.
    pub(super) fn tell_watchdog(
        &mut self,
        token: &str,
        pgid: Option<i32>,
    ) -> Result<(), ExecError> {
        let Some(watchdog) = &mut self.watchdog else {
            return Ok(());
        };
        watchdog
            .watch(token, pgid)
            .map_err(|error| self.watchdog_error(error))
    }

    pub(super) fn watchdog_error(&self, error: std::io::Error) -> ExecError {
        ExecError::Watchdog {
            program: self
                .options
                .watchdog
                .as_ref()
                .map(|w| w.program.display().to_string())
                .unwrap_or_default(),
            error,
        }
    }
}
