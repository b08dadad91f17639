//! Decoding what a process writes on its pipes: lines bounded in length, data-channel lines
//! into records, smuggled data separated from stdout text. The plan's reading thread
//! ([`crate::poller`]) keeps one [`Decoder`] per pipe.

use milabench_metrics::{
    ChannelDecoder, Event, FormatErrorInfo, Pipe, Record, SmuggleDecoder, SmuggledLines,
};

/// Which pipe of a process is read.
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
pub(crate) enum Decoder {
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
    /// A decoder for `stream`, its lines at most `max` bytes.
    pub(crate) fn new(stream: Stream, max: usize) -> Decoder {
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

    /// Decodes the next bytes of the pipe.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Decoded {
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

    /// What is left at the pipe's end (an unfinished last line).
    pub(crate) fn finish(&mut self) -> Decoded {
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
}
