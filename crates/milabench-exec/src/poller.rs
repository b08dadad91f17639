//! One thread reads every pipe of a plan: the processes' stdout, stderr and data channels are
//! watched with `epoll`, each ready pipe read once per round, decoded on this thread, and what
//! a round read goes to the writer loop as one message.
//!
//! A round starts at most every [`PACE`]: lines written meanwhile, by one process or by
//! hundreds, wait in their pipes and are read, decoded, sent and written to the run folder
//! together, so the orchestrator's wake-ups do not grow with the number of processes or their
//! lines (a thread per pipe woke once per line, two context switches per event). A record
//! reaches the run folder at most [`PACE`] later for it. A pipe found (nearly) full (a process
//! writing faster than a pipe's worth per pace) is read again at once, so a fast writer is
//! not slowed by the pace, and a pipe whose writers all closed ends the pause at once (a
//! second `epoll` set watches for hang-ups only), so a process's end is not delayed by it.
//! While nothing comes, the thread sleeps in `epoll_wait`.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

use crate::reader::{Decoder, Stream};
use crate::run::Msg;

/// Bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;

/// A read this large means the pipe was full or nearly (a pipe holds at most 64 KiB, less when
/// small writes leave its pages part-filled) and its writer may be blocked: the next round
/// comes without a pause. A smaller read shortens the pause in proportion (`pause_after`).
const BUSY: usize = CHUNK / 2;

/// The least time between two rounds while pipes keep being ready: at most 2 rounds a second
/// however many processes write, and a record reaches the run folder at most this much later
/// (the Python tool's records took 2 s at the median). A pipe filling up shortens the pause
/// (`pause_after`), one whose writers closed ends it. (Measured with `cargo xtask bench --only
/// scale`, orchestrator CPU per event at 8 processes, where the two wake-ups of a round cost
/// more than its few lines: 50 ms 1.9 times as much as 200 ms, 200 ms 1.6 times as much as
/// 500 ms; at 512 the pace matters less, the rounds being full.)
pub(crate) const PACE: Duration = Duration::from_millis(500);

/// Ready pipes taken from `epoll` per call (more wait for the next call, not for a pace).
const EVENTS: usize = 256;

/// The `epoll` key of the pipe that tells the thread about new pipes.
const WAKE_KEY: u64 = u64::MAX;

/// A pipe handed to the reading thread, not yet watched.
struct Pending {
    proc: usize,
    stream: Stream,
    fd: OwnedFd,
}

/// The plan's reading thread: [`Pipes::add`] hands it a pipe; dropping this lets it end.
pub(crate) struct Pipes {
    pending: Arc<Mutex<Vec<Pending>>>,
    /// Writing a byte wakes the thread to take the pending pipes; closing it ends the thread.
    wake: io::PipeWriter,
}

impl Pipes {
    /// Starts the thread, which sends what it reads (lines decoded with lines of at most
    /// `max_line` bytes) to the writer loop through `tx`.
    pub(crate) fn start(tx: SyncSender<Msg>, max_line: usize) -> io::Result<Pipes> {
        let (wake_reader, wake) = io::pipe()?;
        // A wake-up already waiting is enough: a full wake pipe must not block `add`.
        fcntl(&wake, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let hangups = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        epoll.add(
            wake_reader.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, WAKE_KEY),
        )?;
        let pending = Arc::new(Mutex::new(Vec::new()));
        let reading = Reading {
            epoll,
            hangups,
            wake: wake_reader,
            pending: Arc::clone(&pending),
            slots: Vec::new(),
            free: Vec::new(),
            tx,
            max_line,
        };
        std::thread::Builder::new()
            .name("milabench-pipes".into())
            .spawn(move || reading.run())?;
        Ok(Pipes { pending, wake })
    }

    /// Has the thread read `fd`, the pipe `stream` of process `proc`, until its end; its end
    /// (or a failure to read it) comes to the writer loop as [`Msg::Closed`].
    pub(crate) fn add(&self, proc: usize, stream: Stream, fd: impl Into<OwnedFd>) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Pending {
                proc,
                stream,
                fd: fd.into(),
            });
        // A full wake pipe already holds a byte the thread has yet to read.
        let _ = (&self.wake).write(&[1]);
    }
}

/// A watched pipe.
struct Slot {
    proc: usize,
    stream: Stream,
    fd: OwnedFd,
    decoder: Decoder,
}

/// The reading thread's state.
struct Reading {
    epoll: Epoll,
    /// The same pipes watched for nothing: `epoll` reports a hang-up (every writer closed)
    /// whatever is asked, so waiting on this set ends a pause when a process ends.
    hangups: Epoll,
    wake: io::PipeReader,
    pending: Arc<Mutex<Vec<Pending>>>,
    /// Watched pipes by key; `None` once closed.
    slots: Vec<Option<Slot>>,
    /// Keys of closed slots, to reuse.
    free: Vec<usize>,
    tx: SyncSender<Msg>,
    max_line: usize,
}

impl Reading {
    fn run(mut self) {
        let mut events = vec![EpollEvent::empty(); EVENTS];
        let mut buf = vec![0u8; CHUNK];
        let mut previous = Instant::now();
        let mut pause = Duration::ZERO;
        loop {
            self.pause(pause, &mut events);
            let ready = match self.epoll.wait(&mut events, EpollTimeout::NONE) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    self.fail_all(&io::Error::from(e));
                    return;
                }
            };
            let mut batch = Vec::new();
            let mut most = 0;
            for event in &events[..ready] {
                let key = event.data();
                if key == WAKE_KEY {
                    if !self.take_pending(&mut batch) {
                        // The run is over: nobody reads what is left.
                        return;
                    }
                    continue;
                }
                most = most.max(self.read(key as usize, &mut buf, &mut batch));
            }
            let now = Instant::now();
            pause = pause_after(most, now.duration_since(previous));
            previous = now;
            if !batch.is_empty() && self.tx.send(Msg::Batch(batch)).is_err() {
                return;
            }
        }
    }

    /// Waits `wait`, or less if a watched pipe hangs up meanwhile.
    fn pause(&self, wait: Duration, events: &mut [EpollEvent]) {
        if wait.is_zero() {
            return;
        }
        // Under a millisecond rounds up: the round comes no sooner than the pace.
        let millis = u16::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(u16::MAX);
        if self.hangups.wait(events, millis).is_err() {
            // Not able to watch hang-ups: the plain pause.
            std::thread::sleep(wait);
        }
    }

    /// Watches the pipes handed over since the last look; false once the handle is dropped.
    fn take_pending(&mut self, batch: &mut Vec<Msg>) -> bool {
        let mut bytes = [0u8; 64];
        let open = !matches!((&self.wake).read(&mut bytes), Ok(0));
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for Pending { proc, stream, fd } in pending {
            let key = self.free.pop().unwrap_or(self.slots.len());
            let watched = fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
                .and_then(|_| {
                    self.epoll
                        .add(fd.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, key as u64))
                })
                .and_then(|()| {
                    self.hangups
                        .add(fd.as_fd(), EpollEvent::new(EpollFlags::empty(), key as u64))
                });
            if let Err(e) = watched {
                self.free.push(key);
                batch.push(Msg::Closed {
                    proc,
                    stream,
                    error: Some(io::Error::from(e).to_string()),
                });
                continue;
            }
            let slot = Slot {
                proc,
                stream,
                fd,
                decoder: Decoder::new(stream, self.max_line),
            };
            if key == self.slots.len() {
                self.slots.push(Some(slot));
            } else {
                self.slots[key] = Some(slot);
            }
        }
        open
    }

    /// Reads pipe `key` once; how many bytes came.
    fn read(&mut self, key: usize, buf: &mut [u8], batch: &mut Vec<Msg>) -> usize {
        let Some(slot) = self.slots.get_mut(key).and_then(Option::as_mut) else {
            return 0;
        };
        let error = match read_pipe(&slot.fd, buf) {
            Ok(0) => None,
            Ok(n) => {
                batch.push(Msg::Output {
                    proc: slot.proc,
                    stream: slot.stream,
                    decoded: slot.decoder.feed(&buf[..n]),
                });
                return n;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return 0;
            }
            Err(e) => Some(e.to_string()),
        };
        let mut slot = self.slots[key].take().expect("the slot was just read");
        let _ = self.epoll.delete(slot.fd.as_fd());
        let _ = self.hangups.delete(slot.fd.as_fd());
        self.free.push(key);
        batch.push(Msg::Output {
            proc: slot.proc,
            stream: slot.stream,
            decoded: slot.decoder.finish(),
        });
        batch.push(Msg::Closed {
            proc: slot.proc,
            stream: slot.stream,
            error,
        });
        0
    }

    /// `epoll` itself failed: every watched pipe, and every pipe handed over until the
    /// handle is dropped, is reported closed with the error (its process then ends as one
    /// whose output could not be read).
    fn fail_all(mut self, error: &io::Error) {
        let closed = |proc, stream| Msg::Closed {
            proc,
            stream,
            error: Some(format!("could not watch the pipes: {error}")),
        };
        let mut batch: Vec<Msg> = (self.slots.drain(..).flatten())
            .map(|slot| closed(slot.proc, slot.stream))
            .collect();
        loop {
            let pending =
                std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
            batch.extend(pending.into_iter().map(|p| closed(p.proc, p.stream)));
            if !batch.is_empty()
                && self
                    .tx
                    .send(Msg::Batch(std::mem::take(&mut batch)))
                    .is_err()
            {
                return;
            }
            // Blocks until a pipe is handed over or the handle is dropped.
            let mut byte = [0u8; 1];
            if matches!((&self.wake).read(&mut byte), Ok(0) | Err(_)) {
                return;
            }
        }
    }
}

/// The pause before the next round, after one that read at most `most` bytes from a pipe
/// `since` the round before: none when a pipe was nearly full (its writer may be blocked),
/// else [`PACE`], shortened so that a pipe written as fast as it was will be half full at most
/// when next read (a fast writer's pipe read again at once finds a few bytes in microseconds,
/// which is its rate all the same).
fn pause_after(most: usize, since: Duration) -> Duration {
    if most >= BUSY {
        return Duration::ZERO;
    }
    if most == 0 {
        return PACE;
    }
    PACE.min(since.mul_f64(BUSY as f64 / most as f64))
}

/// One `read` of a pipe.
fn read_pipe(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    nix::unistd::read(fd, buf).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::mpsc::{Receiver, sync_channel};

    use milabench_metrics::Event;

    use super::*;

    /// Every message of the run flattened, with how many batches brought pipe output.
    fn collect(rx: &Receiver<Msg>, pipes: usize) -> (Vec<Msg>, usize) {
        let mut all = Vec::new();
        let mut output_batches = 0;
        let mut closed = 0;
        while closed < pipes {
            let msg = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the reading thread sends until every pipe is closed");
            let Msg::Batch(messages) = msg else {
                panic!("the reading thread sends batches only");
            };
            output_batches += usize::from(messages.iter().any(|m| matches!(m, Msg::Output { .. })));
            closed += messages
                .iter()
                .filter(|m| matches!(m, Msg::Closed { .. }))
                .count();
            all.extend(messages);
        }
        (all, output_batches)
    }

    fn line_text(record: &milabench_metrics::Record) -> String {
        match &record.event {
            Event::Line(text) => text.clone(),
            other => panic!("a line, not {other:?}"),
        }
    }

    #[test]
    fn every_line_of_every_pipe_comes_in_order_then_its_end() {
        let (tx, rx) = sync_channel(64);
        let pipes = Pipes::start(tx, 1 << 20).unwrap();
        let mut writers = Vec::new();
        for proc in 0..40 {
            let (reader, mut writer) = io::pipe().unwrap();
            pipes.add(proc, Stream::Stdout, reader);
            writers.push(std::thread::spawn(move || {
                for i in 0..200 {
                    writeln!(writer, "{proc} {i}").unwrap();
                }
                // An unfinished last line comes at the end.
                write!(writer, "{proc} last").unwrap();
            }));
        }
        for w in writers {
            w.join().unwrap();
        }
        let (messages, _) = collect(&rx, 40);
        let mut lines: HashMap<usize, Vec<String>> = HashMap::new();
        let mut ended = Vec::new();
        for msg in messages {
            match msg {
                Msg::Output { proc, decoded, .. } => {
                    assert!(!ended.contains(&proc), "output of {proc} after its end");
                    lines
                        .entry(proc)
                        .or_default()
                        .extend(decoded.records.iter().map(line_text));
                }
                Msg::Closed { proc, error, .. } => {
                    assert_eq!(error, None);
                    ended.push(proc);
                }
                _ => panic!("pipes give output and ends only"),
            }
        }
        for proc in 0..40 {
            let mut expected: Vec<String> = (0..200).map(|i| format!("{proc} {i}\n")).collect();
            expected.push(format!("{proc} last"));
            assert_eq!(lines[&proc], expected, "process {proc}");
        }
    }

    #[test]
    fn lines_waiting_in_many_pipes_are_read_in_a_few_rounds() {
        let (tx, rx) = sync_channel(64);
        let pipes = Pipes::start(tx, 1 << 20).unwrap();
        for proc in 0..50 {
            let (reader, mut writer) = io::pipe().unwrap();
            writeln!(writer, "hello from {proc}").unwrap();
            drop(writer);
            pipes.add(proc, Stream::Stderr, reader);
        }
        let (messages, output_batches) = collect(&rx, 50);
        let lines = messages
            .iter()
            .filter_map(|m| match m {
                Msg::Output { decoded, .. } => Some(decoded.records.len()),
                _ => None,
            })
            .sum::<usize>();
        assert_eq!(lines, 50);
        // A round reads every ready pipe: one message per round, not one per line.
        assert!(output_batches <= 5, "{output_batches} rounds for 50 lines");
    }

    #[test]
    fn a_fast_writer_is_read_whole() {
        let (tx, rx) = sync_channel(64);
        let pipes = Pipes::start(tx, 1 << 20).unwrap();
        let (reader, mut writer) = io::pipe().unwrap();
        pipes.add(0, Stream::Data, reader);
        let line = format!("{{\"rate\": 1.5, \"pad\": \"{}\"}}\n", "x".repeat(200));
        let count = 20_000;
        let writing = std::thread::spawn(move || {
            for _ in 0..count {
                writer.write_all(line.as_bytes()).unwrap();
            }
        });
        let (messages, _) = collect(&rx, 1);
        writing.join().unwrap();
        let rates = messages
            .iter()
            .filter_map(|m| match m {
                Msg::Output { decoded, .. } => Some(
                    decoded
                        .records
                        .iter()
                        .filter(|r| matches!(&r.event, Event::Data(d) if d.rate == Some(1.5)))
                        .count(),
                ),
                _ => None,
            })
            .sum::<usize>();
        assert_eq!(rates, count);
    }

    #[test]
    fn the_pause_is_shorter_for_a_pipe_that_would_fill_in_it() {
        let ms = Duration::from_millis;
        // A nearly full pipe: no pause, its writer may be blocked.
        assert_eq!(pause_after(BUSY, ms(200)), Duration::ZERO);
        // Nothing read, or a few lines in a pace: the whole pace.
        assert_eq!(pause_after(0, ms(1)), PACE);
        assert_eq!(pause_after(2_000, ms(200)), PACE);
        // 4 KiB in the 10 ms since the round before (400 KB/s) would fill half a pipe in 80 ms.
        assert_eq!(pause_after(BUSY / 8, ms(10)), ms(80));
        assert_eq!(pause_after(BUSY / 2, ms(400)), PACE.min(ms(800)));
    }

    #[test]
    fn a_pipe_that_hangs_up_ends_the_pause() {
        let (tx, rx) = sync_channel(64);
        let pipes = Pipes::start(tx, 1024).unwrap();
        let (reader, mut writer) = io::pipe().unwrap();
        pipes.add(0, Stream::Stdout, reader);
        writeln!(writer, "first").unwrap();
        // The first round reads the line; the pause that follows it is not waited out.
        let Msg::Batch(first) = rx.recv_timeout(Duration::from_secs(30)).unwrap() else {
            panic!("the reading thread sends batches only");
        };
        assert!(matches!(first[0], Msg::Output { .. }));
        std::thread::sleep(Duration::from_millis(10));
        let closed_at = Instant::now();
        drop(writer);
        let (messages, _) = collect(&rx, 1);
        let waited = closed_at.elapsed();
        assert!(matches!(
            messages.last(),
            Some(Msg::Closed { error: None, .. })
        ));
        assert!(
            waited < PACE * 3 / 4,
            "the end came {waited:?} after the close (pace {PACE:?})"
        );
    }

    #[test]
    fn the_thread_ends_when_its_handle_is_dropped() {
        let (tx, rx) = sync_channel(64);
        let pipes = Pipes::start(tx, 1024).unwrap();
        // A pipe whose writer never closes: the thread still ends with the run.
        let (reader, _writer) = io::pipe().unwrap();
        pipes.add(0, Stream::Stdout, reader);
        drop(pipes);
        // The thread held the last sender: the channel disconnects when it returns.
        loop {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e, std::sync::mpsc::RecvTimeoutError::Disconnected);
                    break;
                }
            }
        }
    }
}
