//! Streaming reader of `.data` files, the one decoder of their lines: one record per line with
//! the fields asked for, bad lines reported, never fatal.

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::event::{Event, Pipe, Record};
use crate::fields::Fields;
use crate::format::RecordKey;
use crate::json::quote_non_finite;
use crate::record_de::Visited;
use crate::skim::Spare;

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

/// One item of a [`RecordReader`]: a decoded record (owned, or lent by
/// [`RecordReader::next_lent`]) or a bad line.
// Records are the common case: boxing them would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ReadItem<T = Record> {
    /// A decoded record.
    Record(T),
    /// A line that was skipped or repaired.
    Problem(LineProblem),
}

/// The `.data` decoder: lines become typed [`Record`]s holding the [`Fields`] asked for. A fast
/// path (`skim`) reads the usual lines from their bytes; the serde path (`record_de`, then a JSON
/// tree for odd key orders) reads the others and is the reference.
#[derive(Debug)]
pub(crate) struct Decoder {
    fields: Fields,
    spare: Spare,
}

/// What the decoder made of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// The record is in the slot.
    Record,
    /// A valid record of an event not asked for.
    Skipped,
    /// Not an `{"event": ...}` record (the reader then finds out whether it is JSON at all).
    NotARecord,
}

impl Decoder {
    pub(crate) fn new(fields: Fields) -> Decoder {
        Decoder {
            fields,
            spare: Spare::default(),
        }
    }

    /// The fast path over the raw bytes of a line, before the UTF-8 check and the quoting of
    /// non-finite tokens: `None` sends the line down the serde path.
    pub(crate) fn decode_bytes(&mut self, bytes: &[u8], slot: &mut Record) -> Option<Decoded> {
        crate::skim::decode(bytes, self.fields, slot, &mut self.spare)
    }

    /// The serde path, over the text of a line (valid UTF-8, non-finite tokens quoted).
    pub(crate) fn decode_text(&mut self, text: &str, slot: &mut Record) -> Decoded {
        let visited = match crate::record_de::decode_record(text, self.fields) {
            Visited::NotARecord => match serde_json::from_str::<Value>(text) {
                // The slow path: a JSON tree first (repeated keys, odd shapes).
                Ok(Value::Object(map)) => match record_from_map(map) {
                    Some(record) => self
                        .fields
                        .project(record)
                        .map_or(Visited::Skipped, Visited::Record),
                    None => Visited::NotARecord,
                },
                _ => Visited::NotARecord,
            },
            visited => visited,
        };
        match visited {
            Visited::Record(record) => {
                self.spare.reclaim(slot);
                *slot = record;
                Decoded::Record
            }
            Visited::Skipped => Decoded::Skipped,
            Visited::NotARecord => Decoded::NotARecord,
        }
    }
}

/// A record without allocations, the reader's slot when empty.
pub(crate) fn empty_record() -> Record {
    Record::new(Event::Stop, None)
}

/// Streams the records of a JSON-lines event file, reusing one line buffer: every record
/// ([`RecordReader::new`]), or only the [`Fields`] asked for ([`RecordReader::with_fields`]).
/// Records are owned when iterated, lent by [`RecordReader::next_lent`]: a reader that keeps
/// nothing of a record after looking at it reads most lines without allocating.
#[derive(Debug)]
pub struct RecordReader<R> {
    input: R,
    decoder: Decoder,
    buf: Vec<u8>,
    line: usize,
    /// The last record decoded.
    slot: Record,
    /// The slot holds a record not given yet (the line's problem went first).
    pending: bool,
    done: bool,
}

impl<R: BufRead> RecordReader<R> {
    /// A reader of whole records over `input`.
    pub fn new(input: R) -> RecordReader<R> {
        RecordReader::with_fields(input, Fields::ALL)
    }

    /// A reader over `input` whose records hold `fields` only: the records of other events are
    /// left out and the rest of each line is skipped unread.
    pub fn with_fields(input: R, fields: Fields) -> RecordReader<R> {
        RecordReader {
            input,
            decoder: Decoder::new(fields),
            buf: Vec::with_capacity(4096),
            line: 0,
            slot: empty_record(),
            pending: false,
            done: false,
        }
    }

    /// Number of lines read so far.
    pub fn lines_read(&self) -> usize {
        self.line
    }

    /// The next item, its record lent until the next call (see [`RecordReader`]).
    pub fn next_lent(&mut self) -> Option<ReadItem<&Record>> {
        Some(match self.advance()? {
            Step::Record => ReadItem::Record(&self.slot),
            Step::Problem(problem) => ReadItem::Problem(problem),
        })
    }

    /// The next item, its record lent until the next call and open to change: a reader that
    /// keeps a part of a record (a `config` payload) takes it out (`std::mem::take`) instead of
    /// copying it. The next call replaces the whole record, whatever was taken.
    pub fn next_lent_mut(&mut self) -> Option<ReadItem<&mut Record>> {
        Some(match self.advance()? {
            Step::Record => ReadItem::Record(&mut self.slot),
            Step::Problem(problem) => ReadItem::Problem(problem),
        })
    }

    /// Reads on to the next record (left in the slot) or problem.
    fn advance(&mut self) -> Option<Step> {
        if self.pending {
            self.pending = false;
            return Some(Step::Record);
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
                    return Some(Step::Problem(LineProblem {
                        line: self.line + 1,
                        kind: LineProblemKind::Io,
                        detail: err.to_string(),
                    }));
                }
            };
            let newline = memchr::memchr(b'\n', available);
            let (decoder, slot) = (&mut self.decoder, &mut self.slot);
            let outcome = match (newline, self.buf.is_empty()) {
                // A whole line in the input's buffer: decoded where it lies, without a copy.
                (Some(end), true) => {
                    self.line += 1;
                    let outcome = line_item(decoder, &available[..end], true, self.line, slot);
                    self.input.consume(end + 1);
                    outcome
                }
                // The end of a line whose start is in `buf`.
                (Some(end), false) => {
                    self.buf.extend_from_slice(&available[..end]);
                    self.input.consume(end + 1);
                    self.line += 1;
                    let outcome = line_item(decoder, &self.buf, true, self.line, slot);
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
                    let last = std::mem::take(&mut self.buf);
                    line_item(decoder, &last, false, self.line, slot)
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
                LineItem::Record => return Some(Step::Record),
                LineItem::Problem(problem) => return Some(Step::Problem(problem)),
                LineItem::ProblemThenRecord(problem) => {
                    self.pending = true;
                    return Some(Step::Problem(problem));
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for RecordReader<R> {
    type Item = ReadItem;

    fn next(&mut self) -> Option<ReadItem> {
        Some(match self.advance()? {
            Step::Record => ReadItem::Record(std::mem::replace(&mut self.slot, empty_record())),
            Step::Problem(problem) => ReadItem::Problem(problem),
        })
    }
}

/// What the reader found next.
enum Step {
    /// A record, in the slot.
    Record,
    /// A bad line.
    Problem(LineProblem),
}

/// What one line gives the reader.
enum LineItem {
    /// Nothing (a blank line, or a skipped record).
    Nothing,
    /// A record, in the slot.
    Record,
    /// A bad line.
    Problem(LineProblem),
    /// A repaired line: its problem, then its record (in the slot).
    ProblemThenRecord(LineProblem),
}

/// Decodes the line `bytes` (without its newline; `complete` when one followed it), number
/// `line`, into `slot`.
fn line_item(
    decoder: &mut Decoder,
    bytes: &[u8],
    complete: bool,
    line: usize,
    slot: &mut Record,
) -> LineItem {
    let bytes = trim_newline(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return LineItem::Nothing;
    }
    match decoder.decode_bytes(bytes, slot) {
        Some(Decoded::Record) => return LineItem::Record,
        Some(Decoded::Skipped) => return LineItem::Nothing,
        // Only the serde path tells a bad line's kind.
        Some(Decoded::NotARecord) | None => {}
    }
    let (text, utf8_ok) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), true),
        Err(_) => (String::from_utf8_lossy(bytes), false),
    };
    match (decode_line(decoder, &text, slot), utf8_ok) {
        (Ok(Decoded::Record), true) => LineItem::Record,
        (Ok(Decoded::Record), false) => {
            LineItem::ProblemThenRecord(problem(line, LineProblemKind::NotUtf8, &text))
        }
        (Ok(_), true) => LineItem::Nothing,
        (Ok(_) | Err(_), false) => {
            LineItem::Problem(problem(line, LineProblemKind::NotUtf8, &text))
        }
        (Err(kind), true) => {
            let kind = if !complete && kind == LineProblemKind::NotJson {
                LineProblemKind::Truncated
            } else {
                kind
            };
            LineItem::Problem(problem(line, kind, &text))
        }
    }
}

/// The problem of `line`, with its first 80 characters as the detail: control characters
/// escaped (`\u{1b}`), so that a garbage file's warning never drives the terminal.
fn problem(line: usize, kind: LineProblemKind, text: &str) -> LineProblem {
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
    LineProblem { line, kind, detail }
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    &bytes[..end]
}

/// Decodes one line of a `.data` file into `slot` by the serde path, after quoting Python's
/// non-finite tokens; a line that is not a record is classified.
fn decode_line(
    decoder: &mut Decoder,
    text: &str,
    slot: &mut Record,
) -> Result<Decoded, LineProblemKind> {
    let text = quote_non_finite(text);
    match decoder.decode_text(&text, slot) {
        Decoded::NotARecord => match serde_json::from_str::<IgnoredAny>(&text) {
            Ok(_) => Err(LineProblemKind::NotARecord),
            Err(_) => Err(LineProblemKind::NotJson),
        },
        decoded => Ok(decoded),
    }
}

/// Decodes one line of a `.data` file (`{"event", "data", "pipe"}`) into a typed record.
#[cfg(test)]
pub(crate) fn parse_record_line(text: &str) -> Result<Option<Record>, LineProblemKind> {
    let mut slot = empty_record();
    match decode_line(&mut Decoder::new(Fields::ALL), text, &mut slot)? {
        Decoded::Record => Ok(Some(slot)),
        Decoded::Skipped | Decoded::NotARecord => Ok(None),
    }
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
    use crate::format::{DataKey, EventName};

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
        // Every event but `line`, whole.
        let without_lines = EventName::ALL
            .iter()
            .filter(|&&name| name != EventName::Line)
            .fold(Fields::NONE, |fields, &name| fields | Fields::event(name));
        let without_lines = Fields::EXTRA
            | Fields::UNKNOWN_EVENTS
            | DataKey::ALL
                .iter()
                .fold(without_lines, |f, &k| f | Fields::data(k));
        let items: Vec<ReadItem> = RecordReader::with_fields(
            &b"{\"event\": \"line\", \"data\": \"step 1\\n\", \"pipe\": \"stderr\"}\n\
               {\"data\": \"late name\\n\", \"event\": \"line\"}\n\
               {\"event\": \"line\", \"data\": \"cut\n\
               {\"event\": \"stop\", \"data\": null, \"pipe\": \"data\"}\n"[..],
            without_lines,
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
