//! Streaming reader of `.data` files: one record per line, bad lines reported, never fatal.

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::event::{Event, Pipe, Record};
use crate::format::RecordKey;
use crate::json::quote_non_finite;

/// What was wrong with one line of a `.data` file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineProblemKind {
    /// The line held bytes that are not UTF-8 (they were replaced; the record was kept if the
    /// rest parsed).
    NotUtf8,
    /// The line is not JSON.
    NotJson,
    /// The last line has no newline and is not JSON: the writer was killed mid-line.
    Truncated,
    /// The line is JSON but not an object with a string `event`.
    NotARecord,
    /// The file could not be read further.
    Io,
}

impl LineProblemKind {
    /// A phrase describing the problem for `one` line or several, used in warnings.
    pub fn describe_count(&self, one: bool) -> &'static str {
        match (self, one) {
            (LineProblemKind::NotUtf8, true) => "contains bytes that are not UTF-8",
            (LineProblemKind::NotUtf8, false) => "contain bytes that are not UTF-8",
            (LineProblemKind::NotJson, true) => "is not JSON",
            (LineProblemKind::NotJson, false) => "are not JSON",
            (LineProblemKind::Truncated, true) => "is cut short (the writer stopped mid-line)",
            (LineProblemKind::Truncated, false) => "are cut short (the writer stopped mid-line)",
            (LineProblemKind::NotARecord, true) => "is JSON but not an {\"event\": ...} record",
            (LineProblemKind::NotARecord, false) => "are JSON but not {\"event\": ...} records",
            (LineProblemKind::Io, _) => "could not be read",
        }
    }
}

/// A line that did not give a record, or gave one only after repair.
#[derive(Debug, Clone, PartialEq)]
pub struct LineProblem {
    /// Line number, from 1.
    pub line: usize,
    /// What was wrong.
    pub kind: LineProblemKind,
    /// The parser's message, or the start of the line.
    pub detail: String,
}

/// One item of a [`RecordReader`]: a decoded record (a [`Record`], or what the reader's
/// [`LineDecoder`] makes of a line) or a bad line.
// Records are the common case: boxing them would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ReadItem<T = Record> {
    /// A decoded record.
    Record(T),
    /// A line that was skipped or repaired.
    Problem(LineProblem),
}

/// What a [`LineDecoder`] made of one line.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome<T> {
    /// The decoded record.
    Item(T),
    /// A valid record the decoder leaves out.
    Skipped,
    /// Not an `{"event": ...}` record (the reader then finds out whether it is JSON at all).
    NotARecord,
}

/// Turns the text of one line of a `.data` file into an item. The text is valid UTF-8 (bad bytes
/// replaced) and Python's bare `NaN`/`Infinity` tokens are already quoted (see [`crate::lenient`]).
pub trait LineDecoder {
    /// What a record becomes.
    type Item;
    /// Decodes one line (a decoder may keep what it learns from one line for the next ones).
    fn decode(&mut self, text: &str) -> LineOutcome<Self::Item>;

    /// An optional fast path over the raw bytes of a line, tried before the UTF-8 check and the
    /// quoting of non-finite tokens. It may answer (`Some`) only for a line that is valid UTF-8,
    /// holds no bare `NaN`/`Infinity` token, and for which [`LineDecoder::decode`] would give the
    /// same answer; `None` (the default) sends the line down the usual path.
    fn decode_bytes(&mut self, bytes: &[u8]) -> Option<LineOutcome<Self::Item>> {
        let _ = bytes;
        None
    }
}

/// The full decoder: every line becomes a typed [`Record`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordDecoder;

impl LineDecoder for RecordDecoder {
    type Item = Record;

    fn decode(&mut self, text: &str) -> LineOutcome<Record> {
        if let Some(record) = crate::record_de::decode_record(text) {
            return LineOutcome::Item(record);
        }
        // The slow path: a JSON tree first (the event name after the payload, odd shapes).
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
            return LineOutcome::NotARecord;
        };
        record_from_map(map).map_or(LineOutcome::NotARecord, LineOutcome::Item)
    }
}

/// Streams the records of a JSON-lines event file, reusing one line buffer; `D` decides what a
/// record becomes (typed [`Record`]s by default).
#[derive(Debug)]
pub struct RecordReader<R, D: LineDecoder = RecordDecoder> {
    input: R,
    decoder: D,
    buf: Vec<u8>,
    line: usize,
    pending: Option<D::Item>,
    done: bool,
}

impl<R: BufRead> RecordReader<R> {
    /// A reader of typed records over `input`.
    pub fn new(input: R) -> RecordReader<R> {
        RecordReader::with_decoder(input, RecordDecoder)
    }
}

impl<R: BufRead, D: LineDecoder> RecordReader<R, D> {
    /// A reader over `input` whose records are decoded by `decoder`.
    pub fn with_decoder(input: R, decoder: D) -> RecordReader<R, D> {
        RecordReader {
            input,
            decoder,
            buf: Vec::with_capacity(4096),
            line: 0,
            pending: None,
            done: false,
        }
    }

    /// Number of lines read so far.
    pub fn lines_read(&self) -> usize {
        self.line
    }

    /// The decoder, with what it kept from the lines read so far.
    pub fn decoder(&self) -> &D {
        &self.decoder
    }
}

impl<R: BufRead, D: LineDecoder> Iterator for RecordReader<R, D> {
    type Item = ReadItem<D::Item>;

    fn next(&mut self) -> Option<ReadItem<D::Item>> {
        if let Some(record) = self.pending.take() {
            return Some(ReadItem::Record(record));
        }
        loop {
            if self.done {
                return None;
            }
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    self.done = true;
                    return Some(ReadItem::Problem(LineProblem {
                        line: self.line + 1,
                        kind: LineProblemKind::Io,
                        detail: err.to_string(),
                    }));
                }
            };
            let newline = memchr::memchr(b'\n', available);
            let outcome = match (newline, self.buf.is_empty()) {
                // A whole line in the input's buffer: decoded where it lies, without a copy.
                (Some(end), true) => {
                    self.line += 1;
                    let outcome = line_item(&mut self.decoder, &available[..end], true, self.line);
                    self.input.consume(end + 1);
                    outcome
                }
                // The end of a line whose start is in `buf`.
                (Some(end), false) => {
                    self.buf.extend_from_slice(&available[..end]);
                    self.input.consume(end + 1);
                    self.line += 1;
                    let outcome = line_item(&mut self.decoder, &self.buf, true, self.line);
                    self.buf.clear();
                    outcome
                }
                // The end of the input: the last line has no newline.
                (None, _) if available.is_empty() => {
                    self.done = true;
                    if self.buf.is_empty() {
                        return None;
                    }
                    self.line += 1;
                    line_item(
                        &mut self.decoder,
                        &std::mem::take(&mut self.buf),
                        false,
                        self.line,
                    )
                }
                // A line that goes on past the buffer: kept until its end arrives.
                (None, _) => {
                    self.buf.extend_from_slice(available);
                    let read = available.len();
                    self.input.consume(read);
                    continue;
                }
            };
            match outcome {
                LineItem::Nothing => continue,
                LineItem::One(item) => return Some(item),
                LineItem::ProblemThenRecord(problem, record) => {
                    self.pending = Some(record);
                    return Some(problem);
                }
            }
        }
    }
}

/// What one line gives the reader.
enum LineItem<T> {
    /// Nothing (a blank line, or a skipped record).
    Nothing,
    /// A record or a problem.
    One(ReadItem<T>),
    /// A repaired line: its problem, then its record.
    ProblemThenRecord(ReadItem<T>, T),
}

/// Decodes the line `bytes` (without its newline; `complete` when one followed it), number
/// `line`.
fn line_item<D: LineDecoder>(
    decoder: &mut D,
    bytes: &[u8],
    complete: bool,
    line: usize,
) -> LineItem<D::Item> {
    let bytes = trim_newline(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return LineItem::Nothing;
    }
    match decoder.decode_bytes(bytes) {
        Some(LineOutcome::Item(record)) => return LineItem::One(ReadItem::Record(record)),
        Some(LineOutcome::Skipped) => return LineItem::Nothing,
        // Only the usual path tells a bad line's kind.
        Some(LineOutcome::NotARecord) | None => {}
    }
    let (text, utf8_ok) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), true),
        Err(_) => (String::from_utf8_lossy(bytes), false),
    };
    match (decode_line(decoder, &text), utf8_ok) {
        (Ok(None), true) => LineItem::Nothing,
        (Ok(Some(record)), true) => LineItem::One(ReadItem::Record(record)),
        (Ok(None), false) => LineItem::One(problem(line, LineProblemKind::NotUtf8, &text)),
        (Ok(Some(record)), false) => {
            LineItem::ProblemThenRecord(problem(line, LineProblemKind::NotUtf8, &text), record)
        }
        (Err(_), false) => LineItem::One(problem(line, LineProblemKind::NotUtf8, &text)),
        (Err(kind), true) => {
            let kind = if !complete && kind == LineProblemKind::NotJson {
                LineProblemKind::Truncated
            } else {
                kind
            };
            LineItem::One(problem(line, kind, &text))
        }
    }
}

/// The problem of `line`, with its first 80 characters as the detail: control characters
/// escaped (`\u{1b}`), so that a garbage file's warning never drives the terminal.
fn problem<T>(line: usize, kind: LineProblemKind, text: &str) -> ReadItem<T> {
    let mut detail = String::new();
    for c in text.chars().take(80) {
        if c.is_control() {
            detail.extend(c.escape_default());
        } else {
            detail.push(c);
        }
    }
    if text.chars().nth(80).is_some() {
        detail.push_str("...");
    }
    ReadItem::Problem(LineProblem { line, kind, detail })
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    &bytes[..end]
}

/// Decodes one line of a `.data` file with `decoder`, after quoting Python's non-finite tokens;
/// `Ok(None)` for a record the decoder skips.
fn decode_line<D: LineDecoder>(
    decoder: &mut D,
    text: &str,
) -> Result<Option<D::Item>, LineProblemKind> {
    let text = quote_non_finite(text);
    match decoder.decode(&text) {
        LineOutcome::Item(item) => Ok(Some(item)),
        LineOutcome::Skipped => Ok(None),
        LineOutcome::NotARecord => match serde_json::from_str::<IgnoredAny>(&text) {
            Ok(_) => Err(LineProblemKind::NotARecord),
            Err(_) => Err(LineProblemKind::NotJson),
        },
    }
}

/// Decodes one line of a `.data` file (`{"event", "data", "pipe"}`) into a typed record.
#[cfg(test)]
pub(crate) fn parse_record_line(text: &str) -> Result<Option<Record>, LineProblemKind> {
    decode_line(&mut RecordDecoder, text)
}

pub(crate) fn record_from_map(map: Map<String, Value>) -> Option<Record> {
    let mut name = None;
    let mut data = Value::Null;
    let mut pipe = None;
    let mut extra = Map::new();
    for (key, value) in map {
        match RecordKey::parse(key.as_bytes()) {
            Some(RecordKey::Event) => match value {
                Value::String(s) => name = Some(s),
                _ => return None,
            },
            Some(RecordKey::Data) => data = value,
            Some(RecordKey::Pipe) => match value {
                Value::String(s) => pipe = Some(Pipe::from_name(&s)),
                Value::Null => {}
                other => {
                    extra.insert(key, other);
                }
            },
            None => {
                extra.insert(key, value);
            }
        }
    }
    let name = name?;
    Some(Record {
        event: Event::from_parts(&name, data),
        pipe,
        extra,
    })
}

/// Counts line problems per file and kind, so a warning names the file and the first line
/// instead of repeating itself once per bad line.
#[derive(Debug, Clone, Default)]
pub struct ProblemTally {
    entries: Vec<TallyEntry>,
}

#[derive(Debug, Clone)]
struct TallyEntry {
    path: PathBuf,
    kind: LineProblemKind,
    count: usize,
    first: LineProblem,
}

impl ProblemTally {
    /// Records `problem`, found in `path`.
    pub fn add(&mut self, path: &Path, problem: LineProblem) {
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.kind == problem.kind && e.path == path)
        {
            e.count += 1;
            return;
        }
        self.entries.push(TallyEntry {
            path: path.to_owned(),
            kind: problem.kind.clone(),
            count: 1,
            first: problem,
        });
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Total number of bad lines.
    pub fn total(&self) -> usize {
        self.entries.iter().map(|e| e.count).sum()
    }

    /// Adds the counts of `other` (a tally of later files) after this one's.
    pub fn merge(&mut self, other: ProblemTally) {
        for entry in other.entries {
            match self
                .entries
                .iter_mut()
                .find(|e| e.kind == entry.kind && e.path == entry.path)
            {
                Some(e) => e.count += entry.count,
                None => self.entries.push(entry),
            }
        }
    }

    /// One warning sentence per file and kind of problem.
    pub fn warnings(&self) -> Vec<String> {
        self.entries.iter().map(ToString::to_string).collect()
    }
}

impl fmt::Display for TallyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = self.count == 1;
        let lines = if one { "line" } else { "lines" };
        let verb = self.kind.describe_count(one);
        write!(
            f,
            "{}: {} {lines} {verb}, first at line {} ({}); {}",
            self.path.display(),
            self.count,
            self.first.line,
            self.first.detail,
            match (&self.kind, one) {
                (LineProblemKind::NotUtf8, _) => "the bytes were replaced and the records kept",
                (_, true) => "it was skipped",
                (_, false) => "they were skipped",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Vec<ReadItem> {
        RecordReader::new(text).collect()
    }

    #[test]
    fn reads_records_and_reports_bad_lines() {
        let items = read(
            b"{\"event\": \"stop\", \"data\": null, \"pipe\": \"data\"}\n\
              not json\n\
              [1, 2]\n\
              \n\
              {\"event\": \"data\", \"data\": {\"loss\": NaN}, \"pipe\": \"data\"}\n\
              {\"event\": \"data\", \"da",
        );
        assert_eq!(items.len(), 5);
        assert!(matches!(&items[0], ReadItem::Record(r) if r.event == Event::Stop));
        assert!(
            matches!(&items[1], ReadItem::Problem(p) if p.kind == LineProblemKind::NotJson && p.line == 2)
        );
        assert!(matches!(&items[2], ReadItem::Problem(p) if p.kind == LineProblemKind::NotARecord));
        let ReadItem::Record(r) = &items[3] else {
            panic!("{:?}", items[3])
        };
        let Event::Data(d) = &r.event else { panic!() };
        assert!(d.loss.unwrap().is_nan());
        assert!(
            matches!(&items[4], ReadItem::Problem(p) if p.kind == LineProblemKind::Truncated && p.line == 6)
        );
    }

    /// Issue 38, item 18: a garbage `.data` file's warning quoted its bytes raw, control
    /// characters included, to the terminal.
    #[test]
    fn a_bad_line_is_quoted_without_control_characters() {
        let items = read(b"\x1b[2J\x07\xff\x00 x\n");
        let ReadItem::Problem(p) = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(p.detail, "\\u{1b}[2J\\u{7}\u{fffd}\\u{0} x");
    }

    #[test]
    fn lines_across_buffer_fills_read_the_same() {
        let text = b"{\"event\": \"stop\", \"data\": null}\r\n\n  \nnot json\n\
            {\"event\": \"line\", \"data\": \"caf\xe9\\n\"}\n{\"event\": \"data\", \"da";
        let whole: Vec<ReadItem> = read(text);
        for capacity in [1, 2, 7, 16, 64] {
            let small = std::io::BufReader::with_capacity(capacity, &text[..]);
            let items: Vec<ReadItem> = RecordReader::new(small).collect();
            assert_eq!(items, whole, "buffer of {capacity} bytes");
        }
        assert_eq!(whole.len(), 5, "{whole:?}");
    }

    #[test]
    fn skipped_events_are_checked_but_not_yielded() {
        /// Typed records, leaving out `line` events.
        struct WithoutLines;
        impl LineDecoder for WithoutLines {
            type Item = Record;
            fn decode(&mut self, text: &str) -> LineOutcome<Record> {
                match RecordDecoder.decode(text) {
                    LineOutcome::Item(r) if r.event.name() == "line" => LineOutcome::Skipped,
                    other => other,
                }
            }
        }
        let items: Vec<ReadItem> = RecordReader::with_decoder(
            &b"{\"event\": \"line\", \"data\": \"step 1\\n\", \"pipe\": \"stderr\"}\n\
               {\"data\": \"late name\\n\", \"event\": \"line\"}\n\
               {\"event\": \"line\", \"data\": \"cut\n\
               {\"event\": \"stop\", \"data\": null, \"pipe\": \"data\"}\n"[..],
            WithoutLines,
        )
        .collect();
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(
            matches!(&items[0], ReadItem::Problem(p) if p.kind == LineProblemKind::NotJson && p.line == 3)
        );
        assert!(matches!(&items[1], ReadItem::Record(r) if r.event == Event::Stop));
    }

    #[test]
    fn non_utf8_lines_are_repaired_and_reported() {
        let items =
            read(b"{\"event\": \"line\", \"data\": \"caf\xe9\\n\", \"pipe\": \"stdout\"}\n");
        assert!(matches!(&items[0], ReadItem::Problem(p) if p.kind == LineProblemKind::NotUtf8));
        assert!(
            matches!(&items[1], ReadItem::Record(r) if r.event == Event::Line("caf\u{fffd}\n".into()))
        );
    }

    #[test]
    fn tally_counts_per_file_and_kind() {
        let mut tally = ProblemTally::default();
        for line in [3, 7, 9] {
            tally.add(
                Path::new("a.data"),
                LineProblem {
                    line,
                    kind: LineProblemKind::NotJson,
                    detail: "x".into(),
                },
            );
        }
        assert_eq!(tally.total(), 3);
        assert_eq!(
            tally.warnings(),
            ["a.data: 3 lines are not JSON, first at line 3 (x); they were skipped"]
        );
    }

    /// One line of a hostile `.data` file: real records, truncated and garbled JSON, deep
    /// nesting, huge and non-finite numbers, bytes that are not UTF-8, long lines.
    fn hostile_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(br#"{"event": "data", "data": {"task": "train", "rate": 12.5, "units": "items/s"}, "pipe": "data"}"#.to_vec()),
            Just(br#"{"event": "end", "data": {"command": ["python"], "time": 1.0, "return_code": 0}, "pipe": null}"#.to_vec()),
            Just(br#"{"event": "data", "data": {"rate": NaN, "loss": Infinity}, "pipe": "data"}"#.to_vec()),
            Just(br#"{"event": "data", "data": {"rate": 1e999999}}"#.to_vec()),
            Just(br#"{"event": 3}"#.to_vec()),
            (0usize..2000).prop_map(|d| format!("{{\"event\": \"x\", \"data\": {}{}}}", "[".repeat(d), "]".repeat(d)).into_bytes()),
            (0usize..4000).prop_map(|n| format!("{{\"event\": \"line\", \"data\": \"{}\"}}", "a".repeat(n)).into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..200),
            "[ -~]{0,60}".prop_map(String::into_bytes),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// The fuzz target of the `.data` decoder: any mix of hostile lines, read through a
        /// small buffer so that lines span reads, gives at most one record and one problem per
        /// line, never a panic.
        #[test]
        fn data_reader_survives_hostile_lines(
            lines in proptest::collection::vec(hostile_line(), 0..30),
            newline_at_end in proptest::bool::ANY,
            capacity in 1usize..64,
        ) {
            let mut bytes = lines.join(&b'\n');
            if newline_at_end {
                bytes.push(b'\n');
            }
            let input = std::io::BufReader::with_capacity(capacity, &bytes[..]);
            let items: Vec<_> = RecordReader::new(input).collect();
            let physical_lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
            proptest::prop_assert!(items.len() <= 2 * physical_lines);
        }
    }
}
