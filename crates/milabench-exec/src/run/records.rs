//! What the writer loop does with each record of a process: appended to its `.data` file
//! (one write for records read together), judged, told to the observer, and looked at for an
//! early stop and the precision stop; raw output kept in `<tag>.stdout`/`<tag>.stderr`.

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Instant;

use milabench_metrics::format::TRAIN_TASK;
use milabench_metrics::{Event, Record};

use crate::error::ExecError;
use crate::reader::Stream;

use super::{Runner, write_error};

impl<'a> Runner<'a, '_> {
    /// Processes without an `end` event yet.
    pub(super) fn live(&self) -> Vec<usize> {
        (0..self.procs.len())
            .filter(|&i| self.procs[i].outcome.is_none())
            .collect()
    }

    /// Has the loop's timers look at process `idx` (it exited or is being stopped), unless it
    /// has already ended (a process given up on after SIGKILL may still report its exit).
    pub(super) fn watch_timer(&mut self, idx: usize) {
        if self.procs[idx].outcome.is_none() {
            self.timed.insert(idx);
        }
    }

    /// Appends a record to the process's file, updating what the outcome needs.
    pub(super) fn record(&mut self, idx: usize, record: Record) {
        if let Err(e) = self.procs[idx].writer.append(&record) {
            self.fail(ExecError::Write(e));
        }
        self.recorded(idx, &record);
    }

    /// Appends records read together to the process's file with one write, then updates what
    /// the outcome needs from each.
    pub(super) fn record_all(&mut self, idx: usize, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        if let Err(e) = self.procs[idx].writer.append_all(records) {
            self.fail(ExecError::Write(e));
        }
        for record in records {
            self.recorded(idx, record);
        }
    }

    /// What follows a record's append: the outcome's counts, the observer, an early stop and
    /// the precision stop.
    pub(super) fn recorded(&mut self, idx: usize, record: &Record) {
        let p = &mut self.procs[idx];
        p.judge.observe(record);
        let mut new_rate = false;
        if let Event::Data(d) = &record.event
            && d.task.as_deref() == Some(TRAIN_TASK)
            && let Some(rate) = d.rate
        {
            p.rates.push(rate);
            new_rate = true;
        }
        let p = &self.procs[idx];
        self.observer.on_record(&p.tag, record);
        if matches!(record.event, Event::Stop) && p.exit.is_none() {
            self.stop(idx, Instant::now());
        }
        if new_rate {
            self.check_precision();
        }
    }

    /// Stops the plan the way an early stop does once its rate is precise enough.
    pub(super) fn check_precision(&mut self) {
        let Some(target) = self.options.precision else {
            return;
        };
        if self.precise.is_some() || self.timed_out || self.interrupted {
            return;
        }
        let reporting: Vec<&[f64]> = self
            .procs
            .iter()
            .map(|p| p.rates.as_slice())
            .filter(|rates| !rates.is_empty())
            .collect();
        let Some(reached) = target.check(reporting.iter().copied(), &mut self.precise_streak)
        else {
            return;
        };
        self.precise = Some(reached);
        let message = format!(
            "Stopping because the rate is known to ±{:.2}% (95% interval, {} observations), within the --precision target of {}%",
            reached * 100.0,
            reporting.iter().map(|r| r.len()).sum::<usize>(),
            target.share * 100.0
        );
        for i in self.live() {
            if self.procs[i].exit.is_none() {
                self.record(i, Record::new(Event::Message(message.clone()), None));
                self.record(i, Record::new(Event::Stop, None));
            }
        }
    }

    /// A write failed: keep the first error and stop everything.
    pub(super) fn fail(&mut self, error: ExecError) {
        if self.fatal.is_none() {
            self.fatal = Some(error);
            let now = Instant::now();
            for i in self.live() {
                self.stop(i, now);
            }
        }
    }

    pub(super) fn raw_text(&mut self, idx: usize, stream: Stream, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let ext = match stream {
            Stream::Stdout | Stream::SmuggledStdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Data => return,
        };
        let path = self.run_dir.join(format!("{}.{ext}", self.procs[idx].tag));
        let p = &mut self.procs[idx];
        if ext == "stderr"
            && let Some(line) = String::from_utf8_lossy(text)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
        {
            p.last_stderr = Some(line.trim().to_owned());
        }
        let slot = if ext == "stdout" {
            &mut p.stdout
        } else {
            &mut p.stderr
        };
        let result = match slot {
            Some(f) => f.write_all(text),
            None => OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| {
                    f.write_all(text)?;
                    *slot = Some(f);
                    Ok(())
                }),
        };
        if let Err(error) = result {
            self.fail(write_error(path, error));
        }
    }
}
