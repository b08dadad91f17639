//! Decoders for what a benchmark process writes: the JSON-lines data channel (`DATA_FD`), its
//! stdout/stderr lines, and data smuggled inside stdout as terminal escape sequences when
//! `DATA_FD=1`.

use serde_json::{Map, Value};

use crate::event::{Event, FormatErrorInfo, Pipe, Record};
use crate::format::{ControlKey, EventName};
use crate::json::quote_non_finite;

/// Turns lines of a benchmark's channels into records, the way the Python multiplexer does.
#[derive(Debug, Default)]
pub struct ChannelDecoder {
    data: LineSplitter,
}

impl ChannelDecoder {
    /// A decoder with an empty line buffer.
    pub fn new() -> ChannelDecoder {
        ChannelDecoder::default()
    }

    /// Feeds raw bytes of the data channel; every completed line is decoded into `out`.
    pub fn push_data(&mut self, bytes: &[u8], out: &mut Vec<Record>) {
        self.data
            .push(bytes, |line| out.push(ChannelDecoder::data_line(line)));
    }

    /// Decodes a last line left without a newline when the channel closed.
    pub fn finish(&mut self, out: &mut Vec<Record>) {
        if let Some(line) = self.data.finish() {
            out.push(ChannelDecoder::data_line(&line));
        }
    }

    /// Decodes one line of the data channel.
    ///
    /// An object with a `$event` key is a control record (`$data` is its payload, other keys are
    /// kept as extra keys); any other JSON value is a `data` event; anything else becomes a
    /// `format_error` holding the raw line.
    pub fn data_line(line: &[u8]) -> Record {
        let Ok(text) = std::str::from_utf8(line) else {
            return format_error(
                String::from_utf8_lossy(line).into_owned(),
                "UnicodeDecodeError",
                "the line is not valid UTF-8",
            );
        };
        let value = match serde_json::from_str::<Value>(&quote_non_finite(text)) {
            Ok(v) => v,
            Err(err) => return format_error(text.to_owned(), "JSONDecodeError", &err.to_string()),
        };
        match value {
            Value::Object(map) if map.contains_key(ControlKey::Event.as_str()) => {
                control_record(map)
            }
            value => Record::new(
                Event::from_parts(EventName::Data.as_str(), value),
                Some(Pipe::Data),
            ),
        }
    }

    /// A line of stdout or stderr.
    pub fn output_line(line: &[u8], pipe: Pipe) -> Record {
        let text = String::from_utf8_lossy(line).into_owned();
        Record::new(Event::Line(text), Some(pipe))
    }
}

fn format_error(line: String, kind: &str, message: &str) -> Record {
    Record::new(
        Event::FormatError(Box::new(FormatErrorInfo {
            line,
            kind: kind.to_owned(),
            message: message.to_owned(),
        })),
        Some(Pipe::Data),
    )
}

fn control_record(map: Map<String, Value>) -> Record {
    let mut name = String::new();
    let mut data = Value::Null;
    let mut extra = Map::new();
    for (key, value) in map {
        match ControlKey::parse(key.as_bytes()) {
            Some(ControlKey::Event) => match value {
                Value::String(s) => name = s,
                other => name = other.to_string(),
            },
            Some(ControlKey::Data) => data = value,
            None => {
                extra.insert(key, value);
            }
        }
    }
    Record {
        event: Event::from_parts(&name, data),
        pipe: Some(Pipe::Data),
        extra,
    }
}

/// Splits a byte stream into lines (newline included), keeping the unfinished tail.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Feeds bytes; `line` is called for every completed line.
    pub fn push(&mut self, mut bytes: &[u8], mut line: impl FnMut(&[u8])) {
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(pos + 1);
            if self.partial.is_empty() {
                line(head);
            } else {
                self.partial.extend_from_slice(head);
                line(&self.partial);
                self.partial.clear();
            }
            bytes = rest;
        }
        self.partial.extend_from_slice(bytes);
    }

    /// The unfinished last line, if any.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        (!self.partial.is_empty()).then(|| std::mem::take(&mut self.partial))
    }
}

const ESC: u8 = 0x1b;

/// Maps a nibble to the character voir uses for it: `0-9` then `:;<=>?`.
fn nibble_char(n: u8) -> u8 {
    b'0' + n
}

/// Encodes `data` the way voir's smuggling writer does: `ESC [`, two characters per byte from
/// `0123456789:;<=>?`, then `z`. Terminals ignore the sequence.
pub fn smuggle_encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 2 + 3);
    out.extend_from_slice(&[ESC, b'[']);
    for &b in data {
        out.push(nibble_char(b >> 4));
        out.push(nibble_char(b & 0x0f));
    }
    out.push(b'z');
    out
}

/// Separates the smuggled data channel from the plain text of a stdout stream (`DATA_FD=1`).
///
/// Works on bytes, so multi-byte UTF-8 characters and invalid bytes in the plain text pass
/// through untouched. Escape sequences that are not smuggled data (colours, cursor moves) stay in
/// the plain text verbatim.
#[derive(Debug, Default)]
pub struct SmuggleDecoder {
    code: Option<Vec<u8>>,
    out: LineSplitter,
    data: LineSplitter,
    out_bytes: Vec<u8>,
    data_bytes: Vec<u8>,
}

/// Lines produced by one [`SmuggleDecoder::feed`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SmuggledLines {
    /// Completed lines of plain stdout, newline included.
    pub stdout: Vec<Vec<u8>>,
    /// Completed lines of the data channel, newline included.
    pub data: Vec<Vec<u8>>,
}

impl SmuggleDecoder {
    /// A decoder in its initial state.
    pub fn new() -> SmuggleDecoder {
        SmuggleDecoder::default()
    }

    /// Feeds raw stdout bytes and returns the lines completed in each stream.
    pub fn feed(&mut self, bytes: &[u8]) -> SmuggledLines {
        for &b in bytes {
            self.step(b);
        }
        self.drain()
    }

    /// Ends the stream: an unfinished code goes back to the text, unfinished lines are returned.
    pub fn finish(&mut self) -> SmuggledLines {
        if let Some(code) = self.code.take() {
            self.out_bytes.extend_from_slice(&code);
        }
        let mut lines = self.drain();
        lines.stdout.extend(self.out.finish());
        lines.data.extend(self.data.finish());
        lines
    }

    fn drain(&mut self) -> SmuggledLines {
        let mut lines = SmuggledLines::default();
        self.out
            .push(&self.out_bytes, |l| lines.stdout.push(l.to_vec()));
        self.data
            .push(&self.data_bytes, |l| lines.data.push(l.to_vec()));
        self.out_bytes.clear();
        self.data_bytes.clear();
        lines
    }

    fn step(&mut self, b: u8) {
        let Some(code) = self.code.as_mut() else {
            if b == ESC {
                self.code = Some(vec![ESC]);
            } else {
                self.out_bytes.push(b);
            }
            return;
        };
        if b == ESC {
            // A new escape interrupts the unfinished one, which was not ours.
            let old = std::mem::replace(code, vec![ESC]);
            self.out_bytes.extend_from_slice(&old);
        } else if b < 0x20 {
            let code = self.code.take().unwrap_or_default();
            self.out_bytes.extend_from_slice(&code);
            self.out_bytes.push(b);
        } else if b >= 0x40 && b != b'[' {
            let mut code = self.code.take().unwrap_or_default();
            code.push(b);
            match decode_smuggled(&code) {
                Some(data) => self.data_bytes.extend_from_slice(&data),
                None => self.out_bytes.extend_from_slice(&code),
            }
        } else {
            code.push(b);
        }
    }
}

/// The payload of a complete `ESC [ <digits> z` sequence, or `None` if it is another escape.
fn decode_smuggled(code: &[u8]) -> Option<Vec<u8>> {
    let body = code.strip_prefix(&[ESC, b'['])?.strip_suffix(b"z")?;
    if body.len() % 2 != 0 || !body.iter().all(|c| (b'0'..=b'?').contains(c)) {
        return None;
    }
    Some(
        body.chunks_exact(2)
            .map(|p| ((p[0] - b'0') << 4) | (p[1] - b'0'))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_channel_lines() {
        let r = ChannelDecoder::data_line(
            b"{\"$event\": \"phase\", \"$data\": {\"name\": \"init\"}}\n",
        );
        assert_eq!(r.event, Event::Phase("init".into()));
        let r = ChannelDecoder::data_line(b"{\"$event\": \"stop\"}\n");
        assert_eq!(r.event, Event::Stop);
        let r = ChannelDecoder::data_line(b"{\"task\": \"train\", \"rate\": 1.5}\n");
        assert!(matches!(r.event, Event::Data(ref d) if d.rate == Some(1.5)));
        let r = ChannelDecoder::data_line(b"{\"rate\": 1}{\"rate\": 2}\n");
        assert!(
            matches!(r.event, Event::FormatError(ref f) if f.kind == "JSONDecodeError" && f.line.ends_with('\n'))
        );
        let r = ChannelDecoder::data_line(b"\xff\xfe\n");
        assert!(matches!(r.event, Event::FormatError(ref f) if f.kind == "UnicodeDecodeError"));
    }

    #[test]
    fn channel_decoder_splits_chunks() {
        let mut dec = ChannelDecoder::new();
        let mut out = Vec::new();
        dec.push_data(b"{\"rate\": 1}\n{\"ra", &mut out);
        dec.push_data(b"te\": 2}\n{\"loss\": 3}", &mut out);
        dec.finish(&mut out);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn smuggled_data_is_separated_from_text() {
        let mut dec = SmuggleDecoder::new();
        let mut stream = b"hello \x1b[31mred\x1b[0m caf\xc3\xa9\n".to_vec();
        stream.extend(smuggle_encode(b"{\"rate\": 1}"));
        stream.extend(smuggle_encode(b"\n"));
        stream.extend(b"bye\n");
        let mut lines = dec.feed(&stream);
        let end = dec.finish();
        lines.stdout.extend(end.stdout);
        assert_eq!(
            lines.stdout,
            vec![
                b"hello \x1b[31mred\x1b[0m caf\xc3\xa9\n".to_vec(),
                b"bye\n".to_vec()
            ]
        );
        assert_eq!(lines.data, vec![b"{\"rate\": 1}\n".to_vec()]);
    }

    proptest! {
        #[test]
        fn smuggling_round_trips(
            chunks in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..20),
            split in 1usize..50,
        ) {
            // Plain text without escapes, data of any bytes, interleaved.
            let mut stream = Vec::new();
            let mut want_out = Vec::new();
            let mut want_data = Vec::new();
            for (is_data, bytes) in &chunks {
                if *is_data {
                    stream.extend(smuggle_encode(bytes));
                    want_data.extend_from_slice(bytes);
                } else {
                    let text: Vec<u8> = bytes.iter().copied().filter(|&b| b != ESC).collect();
                    stream.extend_from_slice(&text);
                    want_out.extend(text);
                }
            }
            let mut dec = SmuggleDecoder::new();
            let mut got_out = Vec::new();
            let mut got_data = Vec::new();
            for piece in stream.chunks(split) {
                let lines = dec.feed(piece);
                got_out.extend(lines.stdout.concat());
                got_data.extend(lines.data.concat());
            }
            let lines = dec.finish();
            got_out.extend(lines.stdout.concat());
            got_data.extend(lines.data.concat());
            prop_assert_eq!(got_out, want_out);
            prop_assert_eq!(got_data, want_data);
        }

        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = ChannelDecoder::data_line(&bytes);
            let _ = crate::reader::parse_record_line(&String::from_utf8_lossy(&bytes));
            let mut dec = SmuggleDecoder::new();
            let _ = dec.feed(&bytes);
            let _ = dec.finish();
            let _: Vec<_> = crate::reader::RecordReader::new(&bytes[..]).collect();
        }

        #[test]
        fn json_lines_survive_noise(rate in any::<f64>(), task in "[a-z]{0,8}") {
            let payload = crate::event::DataPayload { task: Some(task), rate: Some(rate), ..Default::default() };
            let record = Record::new(Event::Data(Box::new(payload)), Some(Pipe::Data));
            let line = crate::writer::record_to_line(&record);
            let back = crate::reader::parse_record_line(&line).unwrap().unwrap();
            let (Event::Data(a), Event::Data(b)) = (&record.event, &back.event) else { panic!() };
            prop_assert_eq!(&a.task, &b.task);
            prop_assert!(a.rate.unwrap().to_bits() == b.rate.unwrap().to_bits() || (a.rate.unwrap().is_nan() && b.rate.unwrap().is_nan()));
        }
    }
}
