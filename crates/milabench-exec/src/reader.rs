//! Reader threads: one per pipe, blocking reads, decoding done on the reader's thread, records
//! handed to the writer through a bounded channel (a flooding process is slowed down by its
//! full pipe instead of filling the orchestrator's memory).
//!
//! A reader that got less than a full chunk, soon after it asked, waits [`PACE`] before reading
//! again, so that a benchmark writing a line at a time (a progress bar, a log line per step)
//! finds no reader blocked on its pipe most of the time: its writes then wake no thread, and the
//! lines written meanwhile are read, decoded, sent and written to the run folder together. A
//! read that waited longer than the pause for its bytes does not pause: that pipe trickles
//! slower than the pause, which would gather nothing and only add a wake-up per line (hundreds
//! of processes writing a line every 100 ms). The reader still sleeps in `read` while nothing
//! comes (no polling); a full chunk is read again at once.

use std::io::Read;
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use milabench_metrics::{
    ChannelDecoder, Event, FormatErrorInfo, Pipe, Record, SmuggleDecoder, SmuggledLines,
};

use crate::run::Msg;

const CHUNK: usize = 64 * 1024;

/// The pause after a short read that came quickly ([`pause_after`]): at most 200 reads a second
/// of a busy pipe, and a record reaches the run folder at most this much later. A benchmark writing
/// more than a chunk per pause (13 MB/s) is read without pauses.
pub(crate) const PACE: Duration = Duration::from_millis(5);

/// Whether a reader pauses for [`PACE`] after a read of `len` bytes that waited `waited` for
/// them: only after a short read that came sooner than the pause (a pipe busy enough that the
/// pause gathers lines).
fn pause_after(len: usize, waited: Duration) -> bool {
    len < CHUNK && waited < PACE
}

/// Which pipe of a process a reader drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Plain stdout.
    Stdout,
    /// stdout carrying smuggled data (`use_stdout`).
    SmuggledStdout,
    /// stderr.
    Stderr,
    /// The `DATA_FD` pipe.
    Data,
}

/// Splits bytes into lines of at most `max` bytes; the rest of a longer line is dropped and
/// counted.
#[derive(Debug)]
pub(crate) struct BoundedLines {
    partial: Vec<u8>,
    cut: usize,
    max: usize,
}

impl BoundedLines {
    pub(crate) fn new(max: usize) -> BoundedLines {
        BoundedLines {
            partial: Vec::new(),
            cut: 0,
            max: max.max(1),
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.partial.len());
        let kept = bytes.len().min(room);
        self.partial.extend_from_slice(&bytes[..kept]);
        self.cut += bytes.len() - kept;
    }

    /// Feeds bytes; `line(bytes, cut)` gets every completed line (newline included unless it was
    /// cut) and how many bytes were dropped from it.
    pub(crate) fn push(&mut self, mut bytes: &[u8], mut line: impl FnMut(&[u8], usize)) {
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(pos + 1);
            if self.partial.is_empty() && self.cut == 0 && head.len() <= self.max {
                line(head, 0);
            } else {
                self.keep(head);
                line(&self.partial, self.cut);
                self.partial.clear();
                self.cut = 0;
            }
            bytes = rest;
        }
        self.keep(bytes);
    }

    /// The unfinished last line, if any, and how many bytes were dropped from it.
    pub(crate) fn finish(&mut self) -> Option<(Vec<u8>, usize)> {
        let cut = std::mem::take(&mut self.cut);
        (!self.partial.is_empty() || cut > 0).then(|| (std::mem::take(&mut self.partial), cut))
    }
}

fn data_record(line: &[u8], cut: usize) -> Record {
    if cut == 0 {
        return ChannelDecoder::data_line(line);
    }
    let shown = &line[..line.len().min(1024)];
    Record::new(
        Event::FormatError(Box::new(FormatErrorInfo {
            line: String::from_utf8_lossy(shown).into_owned(),
            kind: "LineTooLong".into(),
            message: format!(
                "data-channel line of {} bytes is longer than the limit of {} bytes; it was dropped",
                line.len() + cut,
                line.len()
            ),
        })),
        Some(Pipe::Data),
    )
}

fn output_record(line: &[u8], cut: usize, pipe: Pipe) -> Record {
    if cut == 0 {
        return ChannelDecoder::output_line(line, pipe);
    }
    let mut text = String::from_utf8_lossy(line).into_owned();
    text.push_str(&format!(" [line cut: {cut} more bytes]\n"));
    Record::new(Event::Line(text), Some(pipe))
}

/// Decoding state of one pipe.
enum Decoder {
    Lines(BoundedLines, Pipe),
    Data(BoundedLines),
    Smuggled {
        decoder: SmuggleDecoder,
        max: usize,
        since_text_line: usize,
        since_data_line: usize,
    },
}

/// What one chunk of a pipe turned into.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// Records, in order.
    pub(crate) records: Vec<Record>,
    /// Text for the raw `.stdout`/`.stderr` file.
    pub(crate) text: Vec<u8>,
}

impl Decoder {
    fn new(stream: Stream, max: usize) -> Decoder {
        match stream {
            Stream::Stdout => Decoder::Lines(BoundedLines::new(max), Pipe::Stdout),
            Stream::Stderr => Decoder::Lines(BoundedLines::new(max), Pipe::Stderr),
            Stream::Data => Decoder::Data(BoundedLines::new(max)),
            Stream::SmuggledStdout => Decoder::Smuggled {
                decoder: SmuggleDecoder::new(),
                max,
                since_text_line: 0,
                since_data_line: 0,
            },
        }
    }

    fn smuggled(lines: SmuggledLines, max: usize, out: &mut Decoded) {
        for line in lines.stdout {
            let cut = line.len().saturating_sub(max);
            out.text.extend_from_slice(&line[..line.len() - cut]);
            out.records
                .push(output_record(&line[..line.len() - cut], cut, Pipe::Stdout));
        }
        for line in lines.data {
            let cut = line.len().saturating_sub(max);
            out.records
                .push(data_record(&line[..line.len() - cut], cut));
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Decoded {
        let mut out = Decoded::default();
        match self {
            Decoder::Lines(lines, pipe) => {
                out.text.extend_from_slice(bytes);
                lines.push(bytes, |l, cut| {
                    out.records.push(output_record(l, cut, pipe.clone()))
                });
            }
            Decoder::Data(lines) => {
                lines.push(bytes, |l, cut| out.records.push(data_record(l, cut)));
            }
            Decoder::Smuggled {
                decoder,
                max,
                since_text_line,
                since_data_line,
            } => {
                let lines = decoder.feed(bytes);
                // The decoder's unfinished lines (and an unfinished escape sequence) are at most
                // the bytes fed since it last completed a line of that stream: bound them.
                *since_text_line = if lines.stdout.is_empty() {
                    *since_text_line + bytes.len()
                } else {
                    0
                };
                *since_data_line = if lines.data.is_empty() {
                    *since_data_line + bytes.len()
                } else {
                    0
                };
                Decoder::smuggled(lines, *max, &mut out);
                if *since_text_line > 2 * *max || *since_data_line > 2 * *max {
                    let rest = std::mem::take(decoder).finish();
                    Decoder::smuggled(rest, *max, &mut out);
                    *since_text_line = 0;
                    *since_data_line = 0;
                }
            }
        }
        out
    }

    fn finish(&mut self) -> Decoded {
        let mut out = Decoded::default();
        match self {
            Decoder::Lines(lines, pipe) => {
                if let Some((l, cut)) = lines.finish() {
                    out.records.push(output_record(&l, cut, pipe.clone()));
                }
            }
            Decoder::Data(lines) => {
                if let Some((l, cut)) = lines.finish() {
                    out.records.push(data_record(&l, cut));
                }
            }
            Decoder::Smuggled { decoder, max, .. } => {
                let rest = decoder.finish();
                Decoder::smuggled(rest, *max, &mut out);
            }
        }
        out
    }
}

/// Drains `source` until end of file, sending what it decodes to the run's writer.
pub(crate) fn drain(
    mut source: impl Read,
    proc: usize,
    stream: Stream,
    max_line: usize,
    tx: SyncSender<Msg>,
) {
    let mut decoder = Decoder::new(stream, max_line);
    let mut buf = vec![0u8; CHUNK];
    let mut error = None;
    loop {
        let asked = Instant::now();
        match source.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let waited = asked.elapsed();
                let decoded = decoder.feed(&buf[..n]);
                if tx
                    .send(Msg::Output {
                        proc,
                        stream,
                        decoded,
                    })
                    .is_err()
                {
                    return;
                }
                if pause_after(n, waited) {
                    std::thread::sleep(PACE);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    let decoded = decoder.finish();
    let _ = tx.send(Msg::Output {
        proc,
        stream,
        decoded,
    });
    let _ = tx.send(Msg::Closed {
        proc,
        stream,
        error,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use milabench_metrics::smuggle_encode;

    fn lines(max: usize, chunks: &[&[u8]]) -> Vec<(Vec<u8>, usize)> {
        let mut s = BoundedLines::new(max);
        let mut got = Vec::new();
        for c in chunks {
            s.push(c, |l, cut| got.push((l.to_vec(), cut)));
        }
        got.extend(s.finish());
        got
    }

    #[test]
    fn bounded_lines_split_and_cut() {
        assert_eq!(
            lines(100, &[b"ab\ncd", b"e\n", b"f"]),
            vec![
                (b"ab\n".to_vec(), 0),
                (b"cde\n".to_vec(), 0),
                (b"f".to_vec(), 0)
            ]
        );
        assert_eq!(
            lines(4, &[b"abcdefgh\nxy", b"zzzzzz", b"\nok\n"]),
            vec![
                (b"abcd".to_vec(), 5),
                (b"xyzz".to_vec(), 5),
                (b"ok\n".to_vec(), 0)
            ]
        );
    }

    #[test]
    fn smuggled_flood_without_newline_stays_bounded() {
        let mut d = Decoder::new(Stream::SmuggledStdout, 1000);
        let mut records = 0;
        // An escape sequence that never ends, then a normal record.
        for _ in 0..100 {
            records += d.feed(&[b'\x1b', b'['][..]).records.len();
            records += d.feed(&[b'3'; 999]).records.len();
        }
        if let Decoder::Smuggled {
            since_text_line, ..
        } = &d
        {
            assert!(*since_text_line <= 2000);
        }
        let mut tail = smuggle_encode(b"{\"rate\": 1}\n");
        tail.push(b'\n');
        let out = d.feed(&tail);
        records += out.records.len();
        records += d.finish().records.len();
        assert!(records >= 2, "{records}");
    }

    #[test]
    fn overlong_data_line_is_a_format_error() {
        let mut d = Decoder::new(Stream::Data, 15);
        let out = d.feed(b"{\"rate\": 12345678}\n{\"rate\": 1}\n");
        assert_eq!(out.records.len(), 2);
        assert!(matches!(&out.records[0].event, Event::FormatError(f) if f.kind == "LineTooLong"));
        assert!(matches!(&out.records[1].event, Event::Data(d) if d.rate == Some(1.0)));
    }

    /// A source that gives one short line per read, `lines` times, noting when each read came.
    struct Trickle {
        lines: usize,
        reads: std::sync::Arc<std::sync::Mutex<Vec<std::time::Instant>>>,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads.lock().unwrap().push(std::time::Instant::now());
            if self.lines == 0 {
                return Ok(0);
            }
            self.lines -= 1;
            buf[..2].copy_from_slice(b"x\n");
            Ok(2)
        }
    }

    #[test]
    fn only_a_short_read_that_came_sooner_than_the_pause_pauses() {
        assert!(pause_after(2, Duration::ZERO));
        assert!(pause_after(CHUNK - 1, PACE / 2));
        // A full chunk is read again at once; a pipe slower than the pause is not paced.
        assert!(!pause_after(CHUNK, Duration::ZERO));
        assert!(!pause_after(2, PACE));
        assert!(!pause_after(2, Duration::from_millis(100)));
    }

    #[test]
    fn a_reader_pauses_after_a_short_read_and_decodes_every_line() {
        let reads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let source = Trickle {
            lines: 4,
            reads: reads.clone(),
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        drain(source, 0, Stream::Stdout, 100, tx);
        let reads = reads.lock().unwrap();
        assert_eq!(reads.len(), 5, "four lines, then end of file");
        for pair in reads.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= PACE, "reads {gap:?} apart");
        }
        let lines: usize = rx
            .try_iter()
            .map(|msg| match msg {
                Msg::Output { decoded, .. } => decoded.records.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(lines, 4);
    }
}
