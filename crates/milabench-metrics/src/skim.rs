//! The fast path of the `.data` decoder: one pass over the bytes of a line for the shapes that
//! make up nearly every line of a run (`data` samples whose fields are plain numbers, strings,
//! number arrays and objects of them, and events the reader did not ask for, such as `line`).
//!
//! It reads the raw bytes of the line, before the reader's UTF-8 check and quoting of non-finite
//! tokens, and answers only when it is sure: every value of the line must follow a strict subset
//! of JSON (no escapes in the strings it reads, no bare `NaN`, nesting of at most [`MAX_DEPTH`]),
//! the text of every string must be UTF-8 (all else is ASCII by construction) and every field
//! asked for must have its usual shape (a value that would go to an `extra` map declines when
//! those are asked for); the whole line is checked to the end. For anything else (an escape in a
//! key or a value it reads, a field of an odd shape, the payload before the event name, events
//! asked for other than `data`, a line that is not JSON) it declines and the serde decoder, which
//! is the reference, decides. Numbers are rounded correctly on both paths, so they give the same
//! bits. Tests check that whenever this path answers, the serde decoder gives the same record.
//!
//! It writes into the reader's record and draws strings and vectors from [`Spare`], what earlier
//! records of the same reader left: a reader whose records are lent rather than kept allocates
//! nothing for most lines.

use serde_json::{Map, Value};

use crate::event::{CpuSample, DataPayload, Event, GpuSample, Pipe, Record};
use crate::fields::Fields;
use crate::format::{DataKey, EventName, PipeName, RecordKey, SampleKey, non_finite};
use crate::lenient::NumbersReader;
use crate::reader::Decoded;

/// Nesting deeper than this is left to serde (whose own limit is 128).
const MAX_DEPTH: usize = 32;

/// Strings kept for reuse, at most.
const SPARE_STRINGS: usize = 32;

/// The fast path gave up on the line: the serde decoder reads it.
struct Declined;

type Skim<T> = Result<T, Declined>;

/// The allocations of the records a reader is done with, kept for the next ones: a payload box
/// (its fields stale until a line fills them, see [`Cursor::data_payload`]), strings, and a GPU
/// list.
#[derive(Debug, Default)]
pub(crate) struct Spare {
    payload: Option<Box<DataPayload>>,
    strings: Vec<String>,
    gpus: Option<Vec<(String, GpuSample)>>,
}

impl Spare {
    /// Takes back what the record in `slot` holds that the next record can use, before the slot
    /// is given another record; the slot is left holding a record without allocations.
    pub(crate) fn reclaim(&mut self, slot: &mut Record) {
        if let Event::Data(payload) = std::mem::replace(&mut slot.event, Event::Stop) {
            self.payload = Some(payload);
        }
    }

    /// A payload whose fields are stale.
    fn payload(&mut self) -> Box<DataPayload> {
        self.payload.take().unwrap_or_default()
    }

    fn keep_string(&mut self, text: String) {
        if self.strings.len() < SPARE_STRINGS {
            self.strings.push(text);
        }
    }

    /// Makes `held` the text `value` (checked to be UTF-8 only when no kept string already holds
    /// it: fields such as `task` take a few values in turn), keeping what it held.
    fn replace(&mut self, held: &mut String, value: &[u8]) -> Skim<()> {
        let mut next = match self
            .strings
            .iter()
            .position(|kept| kept.as_bytes() == value)
        {
            Some(at) => self.strings.swap_remove(at),
            None => text(value)?.to_owned(),
        };
        std::mem::swap(held, &mut next);
        self.keep_string(next);
        Ok(())
    }

    /// `text` as a string.
    fn string(&mut self, text: &str) -> String {
        let mut out = self.strings.pop().unwrap_or_default();
        out.clear();
        out.push_str(text);
        out
    }
}

/// Decodes the line `bytes` into `slot`, keeping `fields`: a record or a skipped event, never
/// [`Decoded::NotARecord`]; `None` when the serde decoder must read it (the slot may then hold
/// anything). A `data` payload is filled where it lies: in the slot's record when that is a
/// `data` one (the record a reader lent last), else in a box from `spare`.
pub(crate) fn decode(
    bytes: &[u8],
    fields: Fields,
    slot: &mut Record,
    spare: &mut Spare,
) -> Option<Decoded> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let line = match &mut slot.event {
        Event::Data(payload) => cursor.line(fields, payload, spare),
        _ => {
            let mut payload = spare.payload();
            let line = cursor.line(fields, &mut payload, spare);
            if let Ok(Line::Data(_)) = line {
                slot.event = Event::Data(payload);
            } else {
                spare.payload = Some(payload);
            }
            line
        }
    };
    match line {
        Ok(Line::Data(pipe)) => {
            slot.pipe = pipe;
            clear(&mut slot.extra);
            Some(Decoded::Record)
        }
        Ok(Line::Skipped) => Some(Decoded::Skipped),
        Err(Declined) => None,
    }
}

/// A line the fast path answered.
enum Line {
    /// A `data` record, with its pipe; its payload is filled.
    Data(Option<Pipe>),
    /// An event not asked for.
    Skipped,
}

/// A position in the line.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skips JSON whitespace, then returns the next byte.
    fn next_token(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
        self.peek()
    }

    fn expect(&mut self, byte: u8) -> Skim<()> {
        if self.next_token() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Declined)
        }
    }

    /// The whole line: one object, nothing after it. A `data` payload is filed into `d`.
    fn line(&mut self, fields: Fields, d: &mut DataPayload, spare: &mut Spare) -> Skim<Line> {
        let mut event: Option<&'a [u8]> = None;
        let mut payload = None;
        let mut pipe = None;
        self.object(|c, key| {
            match RecordKey::parse(key) {
                Some(RecordKey::Event) if event.is_none() => event = Some(c.string()?),
                Some(RecordKey::Data) if payload.is_none() => {
                    // A payload before its event name is read from a tree by the serde path.
                    let name = EventName::parse(event.ok_or(Declined)?);
                    if !fields.wants_event(name) {
                        c.skip_value(1)?;
                        payload = Some(false);
                    } else if name == Some(EventName::Data) {
                        c.data_payload(fields, d, spare)?;
                        payload = Some(true);
                    } else {
                        return Err(Declined);
                    }
                }
                Some(RecordKey::Pipe) if pipe.is_none() => pipe = Some(c.pipe(fields)?),
                Some(_) => return Err(Declined),
                None if fields.wants_extra() => return Err(Declined),
                None => c.skip_value(1)?,
            }
            Ok(())
        })?;
        if self.next_token().is_some() {
            return Err(Declined);
        }
        match payload {
            Some(true) => Ok(Line::Data(pipe.flatten())),
            Some(false) => Ok(Line::Skipped),
            None => Err(Declined),
        }
    }

    /// The `pipe` field: a name, or `null`; another value is an extra key.
    fn pipe(&mut self, fields: Fields) -> Skim<Option<Pipe>> {
        if !fields.wants_pipe() {
            return self.skip_value(1).map(|()| None);
        }
        match self.next_token() {
            Some(b'"') => {
                let name = self.string()?;
                Ok(Some(match PipeName::parse(name) {
                    Some(known) => Pipe::from(known),
                    None => Pipe::Other(text(name)?.to_owned()),
                }))
            }
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ if fields.wants_extra() => Err(Declined),
            _ => self.skip_value(1).map(|()| None),
        }
    }

    /// A `data` payload: an object whose fields asked for have their usual shapes, filed into `d`
    /// as the typed events file them. `d` is reused as it is: each field the line fills replaces
    /// what it held, and the others are emptied at the end (their strings and GPU list kept in
    /// `spare`), so that a reader whose records are lent allocates nothing for the usual lines.
    fn data_payload(&mut self, fields: Fields, d: &mut DataPayload, spare: &mut Spare) -> Skim<()> {
        let extra = fields.wants_extra();
        let mut filled = 0u32;
        self.object(|c, key| match DataKey::parse(key) {
            Some(key) if !fields.wants_data(key) => c.skip_value(2),
            None if extra => Err(Declined),
            None => c.skip_value(2),
            Some(key) => {
                if c.data_field(key, d, extra, spare)? {
                    filled |= 1 << key as u32;
                }
                Ok(())
            }
        })?;
        let unfilled = |key: DataKey| filled & (1 << key as u32) == 0;
        for (key, text) in [(DataKey::Task, &mut d.task), (DataKey::Units, &mut d.units)] {
            if unfilled(key)
                && let Some(text) = text.take()
            {
                spare.keep_string(text);
            }
        }
        for (key, number) in [
            (DataKey::Time, &mut d.time),
            (DataKey::Rate, &mut d.rate),
            (DataKey::Loss, &mut d.loss),
        ] {
            if unfilled(key) {
                *number = None;
            }
        }
        if unfilled(DataKey::Progress) {
            d.progress = None;
        }
        if unfilled(DataKey::Gpudata) && d.gpudata.is_some() {
            spare.gpus = d.gpudata.take();
        }
        if unfilled(DataKey::Cpudata) {
            d.cpudata = None;
        }
        clear(&mut d.extra);
        // The extra keys of a payload of a task whose extras are asked for: the serde path.
        if !extra && fields.wants_payload_extra(d.task.as_deref()) {
            return Err(Declined);
        }
        Ok(())
    }

    /// The value of field `key` of a `data` payload, filed into `d`; whether it filled the field
    /// (a value of another shape leaves it as it was, and is an extra key).
    fn data_field(
        &mut self,
        key: DataKey,
        d: &mut DataPayload,
        extra: bool,
        spare: &mut Spare,
    ) -> Skim<bool> {
        match key {
            DataKey::Task => self.text_into(&mut d.task, spare),
            DataKey::Units => self.text_into(&mut d.units, spare),
            DataKey::Time => self.number_into(&mut d.time, extra),
            DataKey::Rate => self.number_into(&mut d.rate, extra),
            DataKey::Loss => self.number_into(&mut d.loss, extra),
            DataKey::Progress => self.pair_into(&mut d.progress, extra),
            DataKey::Gpudata => {
                let gpus = d
                    .gpudata
                    .get_or_insert_with(|| spare.gpus.take().unwrap_or_default());
                self.gpu_samples(gpus, extra, spare).map(|()| true)
            }
            DataKey::Cpudata => {
                let sample = d.cpudata.get_or_insert_with(CpuSample::default);
                self.cpu_sample(sample, extra).map(|()| true)
            }
            // Kept as read, a JSON tree: the serde path builds it.
            DataKey::Process | DataKey::GpuEnergy => Err(Declined),
        }
    }

    /// `gpudata`: an object of samples by device id, replacing those of `samples` (whose
    /// strings are reused).
    fn gpu_samples(
        &mut self,
        samples: &mut Vec<(String, GpuSample)>,
        extra: bool,
        spare: &mut Spare,
    ) -> Skim<()> {
        let mut count = 0;
        self.object(|c, id| {
            if count == samples.len() {
                samples.push((spare.string(text(id)?), GpuSample::default()));
            }
            let (held, sample) = &mut samples[count];
            if held.as_bytes() != id {
                held.clear();
                held.push_str(text(id)?);
            }
            (sample.memory, sample.load, sample.temperature, sample.power) =
                (None, None, None, None);
            clear(&mut sample.extra);
            c.object(|c, key| {
                match SampleKey::parse(key) {
                    Some(SampleKey::Memory) => c.pair_into(&mut sample.memory, extra)?,
                    Some(SampleKey::Load) => c.number_into(&mut sample.load, extra)?,
                    Some(SampleKey::Temperature) => {
                        c.number_into(&mut sample.temperature, extra)?
                    }
                    Some(SampleKey::Power) => c.number_into(&mut sample.power, extra)?,
                    None if extra => return Err(Declined),
                    None => {
                        c.skip_value(4)?;
                        false
                    }
                };
                Ok(())
            })?;
            count += 1;
            Ok(())
        })?;
        samples.truncate(count);
        Ok(())
    }

    /// `cpudata`: the machine's sample, replacing what `sample` held.
    fn cpu_sample(&mut self, sample: &mut CpuSample, extra: bool) -> Skim<()> {
        (sample.memory, sample.load) = (None, None);
        clear(&mut sample.extra);
        self.object(|c, key| {
            match SampleKey::parse(key) {
                Some(SampleKey::Memory) => c.pair_into(&mut sample.memory, extra)?,
                Some(SampleKey::Load) => c.number_into(&mut sample.load, extra)?,
                Some(SampleKey::Temperature | SampleKey::Power) | None if extra => {
                    return Err(Declined);
                }
                Some(SampleKey::Temperature | SampleKey::Power) | None => {
                    c.skip_value(3)?;
                    false
                }
            };
            Ok(())
        })
    }

    /// A string field: its text replaces what `slot` held; always fills it.
    fn text_into(&mut self, slot: &mut Option<String>, spare: &mut Spare) -> Skim<bool> {
        let value = self.string()?;
        match slot {
            Some(held) if held.as_bytes() == value => {}
            Some(held) => spare.replace(held, value)?,
            None => *slot = Some(spare.string(text(value)?)),
        }
        Ok(true)
    }

    /// A number field: a number replaces what `slot` held; another value leaves it, and is an
    /// extra key. Whether it filled the slot.
    fn number_into(&mut self, slot: &mut Option<f64>, extra: bool) -> Skim<bool> {
        match self.number()? {
            Some(x) => *slot = Some(x),
            None if extra => return Err(Declined),
            None => return Ok(false),
        }
        Ok(true)
    }

    /// A pair field (`[used, total]`, `[current, total]`), by the rule of [`NumbersReader`].
    /// Whether it filled the slot.
    fn pair_into(&mut self, slot: &mut Option<[f64; 2]>, extra: bool) -> Skim<bool> {
        match self.pair()? {
            Some(pair) => *slot = Some(pair),
            None if extra => return Err(Declined),
            None => return Ok(false),
        }
        Ok(true)
    }

    /// The pair of an array of numbers (or strings, which count as numbers only when they name a
    /// non-finite value), by the rule of [`NumbersReader`].
    fn pair(&mut self) -> Skim<Option<[f64; 2]>> {
        let mut numbers = NumbersReader::default();
        self.array(|c| {
            numbers.push(c.number()?);
            Ok(())
        })?;
        Ok(numbers.pair())
    }

    /// A number, or a string (a number only when it names a non-finite value).
    fn number(&mut self) -> Skim<Option<f64>> {
        match self.next_token() {
            Some(b'"') => Ok(non_finite(text(self.string()?)?)),
            Some(b'-' | b'0'..=b'9') => {
                // milabench-metrics builds serde_json with `float_roundtrip` (correct rounding, as
                // here); it
                // refuses numbers out of range, which are left to it.
                let token = self.number_token()?;
                let x = match short_decimal(token) {
                    Some(x) => x,
                    None => text(token)?.parse().map_err(|_| Declined)?,
                };
                if x.is_finite() {
                    Ok(Some(x))
                } else {
                    Err(Declined)
                }
            }
            _ => Err(Declined),
        }
    }

    /// The text of a string without escapes or control characters (UTF-8, checked).
    fn string(&mut self) -> Skim<&'a [u8]> {
        if self.next_token() != Some(b'"') {
            return Err(Declined);
        }
        let body = self.string_body(false)?;
        Ok(&self.bytes[body])
    }

    /// Steps over a string whose text is not needed: escapes are checked the way serde_json
    /// checks the strings it ignores (a `\\u` needs four hex digits, nothing more).
    fn skip_string(&mut self) -> Skim<()> {
        self.string_body(true).map(drop)
    }

    /// Steps over a string, the cursor on its opening quote, and returns where its body lies.
    /// Escapes are taken only when `escapes` is set; text that is not ASCII must be UTF-8.
    fn string_body(&mut self, escapes: bool) -> Skim<std::ops::Range<usize>> {
        let start = self.pos + 1;
        self.pos = start;
        let mut ascii = true;
        loop {
            self.pos += plain_run(&self.bytes[self.pos..]);
            match self.peek().ok_or(Declined)? {
                b'"' => break,
                b'\\' if escapes => self.pos += self.escape_len()?,
                0x80.. => {
                    ascii = false;
                    self.pos += 1;
                }
                _ => return Err(Declined),
            }
        }
        let body = start..self.pos;
        self.pos += 1;
        if !ascii && std::str::from_utf8(&self.bytes[body.clone()]).is_err() {
            return Err(Declined);
        }
        Ok(body)
    }

    /// The length of the escape sequence at the cursor, checked as serde_json checks escapes
    /// in the strings it ignores.
    fn escape_len(&self) -> Skim<usize> {
        let escape = &self.bytes[self.pos + 1..];
        match escape.first().ok_or(Declined)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(2),
            b'u' if escape
                .get(1..5)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) =>
            {
                Ok(6)
            }
            _ => Err(Declined),
        }
    }

    /// A number as JSON writes it; the cursor after it.
    fn number_token(&mut self) -> Skim<&'a [u8]> {
        let start = self.pos;
        let digits = |pos: &mut usize, bytes: &[u8]| {
            let from = *pos;
            while bytes.get(*pos).is_some_and(u8::is_ascii_digit) {
                *pos += 1;
            }
            if *pos > from { Ok(()) } else { Err(Declined) }
        };
        let (bytes, mut pos) = (self.bytes, start);
        if bytes.get(pos) == Some(&b'-') {
            pos += 1;
        }
        if bytes.get(pos) == Some(&b'0') {
            pos += 1;
        } else {
            digits(&mut pos, bytes)?;
        }
        if bytes.get(pos) == Some(&b'.') {
            pos += 1;
            digits(&mut pos, bytes)?;
        }
        if let Some(b'e' | b'E') = bytes.get(pos) {
            pos += 1;
            if let Some(b'+' | b'-') = bytes.get(pos) {
                pos += 1;
            }
            digits(&mut pos, bytes)?;
        }
        self.pos = pos;
        Ok(&self.bytes[start..pos])
    }

    /// The literal `word` at the cursor.
    fn literal(&mut self, word: &[u8]) -> Skim<()> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Declined)
        }
    }

    /// Checks a value of any kind and steps over it.
    fn skip_value(&mut self, depth: usize) -> Skim<()> {
        match self.next_token().ok_or(Declined)? {
            b'"' => self.skip_string(),
            b'-' | b'0'..=b'9' => {
                // serde refuses a whole line for one number out of range, even one skipped.
                let token = self.number_token()?;
                let finite = short_decimal(token).is_some()
                    || text(token)?.parse::<f64>().is_ok_and(f64::is_finite);
                if finite { Ok(()) } else { Err(Declined) }
            }
            _ if depth > MAX_DEPTH => Err(Declined),
            b'{' => self.object(|c, _| c.skip_value(depth + 1)),
            b'[' => self.array(|c| c.skip_value(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => Err(Declined),
        }
    }

    /// An object: `member` reads the value of each key, in order.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Skim<()>) -> Skim<()> {
        self.expect(b'{')?;
        if self.next_token() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            member(self, key)?;
            match self.next_token() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }

    /// An array: `element` reads each element, in order.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Skim<()>) -> Skim<()> {
        self.expect(b'[')?;
        if self.next_token() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            match self.next_token() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }
}

/// Empties `map`, which is empty already for nearly every record (clearing an empty map is not
/// free).
fn clear(map: &mut Map<String, Value>) {
    if !map.is_empty() {
        map.clear();
    }
}

/// `bytes` as text; the scanner has checked it, so this never declines in practice.
fn text(bytes: &[u8]) -> Skim<&str> {
    std::str::from_utf8(bytes).map_err(|_| Declined)
}

/// The value of a number token of at most 15 digits without an exponent, the usual case: its
/// digits as an integer are exact in an `f64`, and so is the power of ten it is divided by, so
/// one division gives the correctly rounded value. `None` for other tokens.
fn short_decimal(token: &[u8]) -> Option<f64> {
    const POWERS_OF_TEN: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (negative, digits) = match token.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    if digits.len() > 16 {
        return None;
    }
    let (mut mantissa, mut count, mut fraction) = (0u64, 0, 0);
    for (at, &byte) in digits.iter().enumerate() {
        match byte {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(byte - b'0');
                count += 1;
            }
            b'.' => fraction = digits.len() - at - 1,
            _ => return None,
        }
    }
    if count > 15 {
        return None;
    }
    let x = mantissa as f64 / POWERS_OF_TEN[fraction];
    Some(if negative { -x } else { x })
}

/// The length of the run of string bytes that need no attention: up to a quote, a backslash, a
/// control character, a byte that is not ASCII, or the end. Eight bytes at a time: in each mask
/// the lowest flagged byte is exact (borrows only flag bytes above a true match), so the lowest of
/// the four is the answer.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero_bytes = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut done = 0;
    for chunk in chunks.by_ref() {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let stops = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
            | (word & HIGHS);
        if stops != 0 {
            return done + (stops.trailing_zeros() / 8) as usize;
        }
        done += 8;
    }
    done + chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
        .unwrap_or(chunks.remainder().len())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{plain_run, short_decimal};

    proptest! {
        #[test]
        fn plain_runs_stop_at_the_first_quote_backslash_control_or_non_ascii(
            bytes in prop::collection::vec(prop_oneof![
                8 => 0x20u8..=0xff,
                1 => Just(b'"'),
                1 => Just(b'\\'),
                1 => 0u8..0x20,
            ], 0..40)
        ) {
            let want = bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
                .unwrap_or(bytes.len());
            prop_assert_eq!(plain_run(&bytes), want);
        }

        #[test]
        fn short_decimals_round_as_the_standard_parser_does(
            digits in "-?[0-9]{1,8}(\\.[0-9]{1,7})?",
        ) {
            let want: f64 = digits.parse().unwrap();
            let got = short_decimal(digits.as_bytes()).unwrap();
            prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", digits);
        }
    }

    #[test]
    fn long_or_exponent_numbers_are_left_to_the_standard_parser() {
        for token in ["1234567890123456", "1e5", "0.12345678901234567", "1E400"] {
            assert_eq!(short_decimal(token.as_bytes()), None, "{token}");
        }
        assert_eq!(
            short_decimal(b"-0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
    }
}

/// The fast path against the serde path, the reference: whenever the fast path answers, the
/// serde path gives the same record; and either path with fields asked for gives the whole
/// record less what was not asked for.
#[cfg(test)]
mod parity {
    use std::path::{Path, PathBuf};

    use serde_json::{Map, Value, json};

    use super::*;
    use crate::format::{
        EndKey, ErrorKey, FormatErrorKey, MessageKey, NON_FINITE, PhaseKey, PipeName, StartKey,
        TRAIN_TASK,
    };
    use crate::json::quote_non_finite;
    use crate::reader::{Decoder, ReadItem, RecordReader, empty_record};
    use crate::verdict::ProcessJudge;

    /// What the report reads.
    const REPORT: Fields = Fields::event(EventName::Config)
        .with(Fields::event(EventName::Meta))
        .with(Fields::event(EventName::Start))
        .with(Fields::event(EventName::End))
        .with(Fields::event(EventName::Stop))
        .with(Fields::event(EventName::Message))
        .with(Fields::event(EventName::Error))
        .with(Fields::data(DataKey::Task))
        .with(Fields::data(DataKey::Rate))
        .with(Fields::data(DataKey::Loss))
        .with(Fields::data(DataKey::Time))
        .with(Fields::data(DataKey::Cpudata))
        .with(Fields::data(DataKey::Gpudata));

    /// Field sets the tests go through: whole records, the report's, the judge's, samples with
    /// their extra keys, and a few fields of one event.
    fn field_sets() -> Vec<Fields> {
        vec![
            Fields::ALL,
            REPORT,
            REPORT | Fields::data(DataKey::Process) | Fields::PIPE,
            ProcessJudge::FIELDS,
            Fields::data(DataKey::Gpudata) | Fields::data(DataKey::Cpudata) | Fields::EXTRA,
            REPORT
                | Fields::data(DataKey::Process)
                | Fields::data(DataKey::GpuEnergy)
                | Fields::SERVING_EXTRA,
            Fields::data(DataKey::Progress) | Fields::data(DataKey::Units) | Fields::PIPE,
            Fields::event(EventName::Line) | Fields::UNKNOWN_EVENTS | Fields::PIPE,
            Fields::NONE,
        ]
    }

    /// The fast path and the serde path over the lines of `text`, each with its own decoder and
    /// slot kept from line to line as a reader keeps them.
    #[derive(Debug, Default)]
    struct Seen {
        lines: usize,
        answered: usize,
        mismatches: Vec<String>,
    }

    fn fast_and_serde(fields: Fields, text: &[u8]) -> Seen {
        let mut seen = Seen::default();
        let (mut fast, mut serde) = (Decoder::new(fields), Decoder::new(fields));
        let (mut fast_slot, mut serde_slot) = (empty_record(), empty_record());
        for line in text.split(|&b| b == b'\n') {
            seen.lines += 1;
            let answer = fast.decode_bytes(line, &mut fast_slot);
            let text = String::from_utf8_lossy(line);
            let reference = serde.decode_text(&quote_non_finite(&text), &mut serde_slot);
            let Some(answer) = answer else { continue };
            seen.answered += 1;
            let describe = |decoded: Decoded, slot: &Record| match decoded {
                Decoded::Record => format!("{slot:?}"),
                other => format!("{other:?}"),
            };
            let (fast, reference) = (
                describe(answer, &fast_slot),
                describe(reference, &serde_slot),
            );
            if std::str::from_utf8(line).is_err() {
                seen.mismatches.push(format!(
                    "{text}\n  the fast path answered a line that is not UTF-8"
                ));
            } else if fast != reference {
                seen.mismatches.push(format!(
                    "{fields:?}: {text}\n  fast:  {fast}\n  serde: {reference}"
                ));
            }
        }
        seen
    }

    /// The records of `text` read with `fields`, as text (NaN compares equal).
    fn read(fields: Fields, text: &[u8]) -> Vec<String> {
        RecordReader::with_fields(text, fields)
            .map(|item| format!("{item:?}"))
            .collect()
    }

    /// The whole records of `text`, reduced to `fields`, as text.
    fn read_then_project(fields: Fields, text: &[u8]) -> Vec<String> {
        RecordReader::new(text)
            .filter_map(|item| match item {
                ReadItem::Record(record) => fields
                    .project(record)
                    .map(|r| format!("{:?}", ReadItem::Record(r))),
                problem => Some(format!("{problem:?}")),
            })
            .collect()
    }

    fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("data" | "txt")
            ) {
                out.push(path);
            }
        }
    }

    /// Every `.data` file of the fixtures' run folders and replays.
    fn fixture_files() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/milabench");
        let mut files = Vec::new();
        files_under(&root.join("runs"), &mut files);
        files_under(&root.join("replays"), &mut files);
        assert!(files.len() > 10, "{files:?}");
        files
    }

    /// Lines of unusual shapes.
    const ODD_LINES: &[&str] = &[
        r#"{"event": "data", "data": {"rate": 12.5, "units": "items/s", "task": "train"}, "pipe": "data"}"#,
        r#"{"event": "data", "data": {"rate": NaN, "loss": -Infinity, "task": "train"}}"#,
        r#"{"event": "data", "data": {"rate": "NaN", "loss": "x", "task": 3, "time": [1]}}"#,
        r#"{"event": "data", "data": {"rate": 1, "rate": "x", "task": "a", "task": "b"}}"#,
        // A line whose fields have other shapes than those of the line before: nothing of the
        // record before shows in its record.
        r#"{"event": "data", "data": {"rate": 5, "loss": 1, "task": "train", "units": "u", "progress": [1, 2], "gpudata": {"0": {"load": 1, "memory": [1, 2]}, "1": {"power": 3}}, "cpudata": {"load": 3}}}"#,
        r#"{"event": "data", "data": {"rate": "x", "loss": "y", "progress": [1], "gpudata": {"1": {"load": "z"}}, "cpudata": {"memory": "m"}}}"#,
        r#"{"event": "data", "data": {"task": "main"}}"#,
        r#"{"data": {"rate": 1.0, "task": "train"}, "event": "data", "pipe": "data"}"#,
        r#"{"event": "data", "data": {"task": "main", "time": 17.5, "gpudata": {"0": {"memory": [1, 2.5], "load": 0.9, "power": 300.5, "odd": [1]}, "1": 3, "2": {"memory": [1]}}}}"#,
        r#"{"event": "data", "data": {"gpudata": [1, 2], "cpudata": {"memory": [1, 2], "load": 5}, "process": {"memory": [3]}}}"#,
        r#"{"event": "data", "data": {"cpudata": {"memory": ["NaN", 2], "power": 3}, "process": {"memory": ["NaN", 1]}}}"#,
        r#"{"event": "data", "data": {"cpudata": 7, "process": [1], "gpudata": {"0": null}}}"#,
        r#"{"event": "data", "data": {"gpudata": {"0": {"memory": [1, 2]}}, "gpudata": {"1": {"load": 1}}}}"#,
        r#"{"event": "data", "data": {"progress": [3, 70], "units": "items/s", "zzz": {"a": [1]}}, "pipe": "data", "host": "a"}"#,
        r#"{"event": "data", "data": {"progress": [3], "time": "Infinity"}, "pipe": {"odd": 1}}"#,
        r#"{"event": "data", "data": [1, 2], "pipe": "data"}"#,
        r#"{"event": "data", "data": null}"#,
        r#"{"event": "data"}"#,
        r#"{"event": "data", "pipe": "data", "pipe": null, "data": {"rate": 2}}"#,
        // The load generator's steps and requests, and monitor samples beside them.
        r#"{"event": "data", "data": {"task": "load", "step": 0, "scenario": "server", "rate": {"value": 2}, "ttft": {"p50": {"value": 0.1}}}, "pipe": "data"}"#,
        r#"{"event": "data", "data": {"step": 1, "ttft": 0.2, "tpot": null, "task": "request"}, "pipe": "data"}"#,
        r#"{"event": "data", "data": {"task": "request", "step": 1, "error": "timeout"}}"#,
        r#"{"event": "data", "data": {"task": "main", "time": 17.5, "iodata": {"read_count": 0, "write_bytes": 28}}, "pipe": "data"}"#,
        r#"{"event": "data", "data": {"task": "main", "gpu_energy": {"0": {"joules": 12.5, "seconds": 2.0}}}, "pipe": "data"}"#,
        r#"{"event": "config", "data": {"name": "x", "tag": ["x", "D0"]}, "pipe": null}"#,
        r#"{"event": "config"}"#,
        r#"{"event": "meta", "data": [1]}"#,
        r#"{"event": "stop", "data": null, "pipe": "data"}"#,
        r#"{"event": "stop"}"#,
        r#"{"event": "stop", "data": {"why": 1}}"#,
        r#"{"event": "start", "data": {"command": ["voir", "main.py"], "time": 1.5, "x": 1}}"#,
        r#"{"event": "start", "data": {"command": "voir main.py", "time": 1.5}}"#,
        r#"{"event": "end", "data": {"return_code": 0, "time": 3.5}, "pipe": 7}"#,
        r#"{"event": "end", "data": {"return_code": "ERROR", "time": 2}}"#,
        r#"{"event": "error", "data": {"type": "ValueError", "message": "bad", "x": 2}}"#,
        r#"{"event": "line", "data": "step 1\n", "pipe": "stderr"}"#,
        r#"{"event": "line", "data": "plain", "pipe": "stdout"}"#,
        r#"{"event": "phase", "data": {"name": "init"}, "pipe": null}"#,
        r#"{"event": "custom", "data": {"a": 1}, "pipe": "other"}"#,
        r#"{"event": "d\u0061ta", "data": {"r\u0061te": 2, "task": "tr\u0061in"}}"#,
        r#"{"pipe": "data"}"#,
        r#"{"event": 3, "data": {}}"#,
        r#"[1, 2]"#,
        r#"not json"#,
        r#"{"event": "data", "data": {"rate": 1}} {}"#,
        r#"{"event": "data", "data": {"rate": 1"#,
    ];

    #[test]
    fn the_fast_path_answers_as_serde_does_on_fixtures_and_odd_lines() {
        for fields in field_sets() {
            let (mut lines, mut answered) = (0, 0);
            for file in fixture_files() {
                let seen = fast_and_serde(fields, &std::fs::read(&file).unwrap());
                assert!(
                    seen.mismatches.is_empty(),
                    "{}: {:#?}",
                    file.display(),
                    seen.mismatches
                );
                lines += seen.lines;
                answered += seen.answered;
            }
            let odd = fast_and_serde(fields, ODD_LINES.join("\n").as_bytes());
            assert!(odd.mismatches.is_empty(), "{:#?}", odd.mismatches);
            // The fast path is there for the common lines: most fixture lines take it when the
            // reader leaves out what is not a `data` sample.
            if fields != Fields::ALL {
                assert!(
                    answered * 10 > lines * 7,
                    "{fields:?}: {answered} of {lines}"
                );
                assert!(
                    odd.answered >= 5,
                    "{fields:?}: {} odd lines answered",
                    odd.answered
                );
            }
        }
    }

    #[test]
    fn fields_asked_for_are_the_whole_record_less_the_rest() {
        let mut texts: Vec<Vec<u8>> = fixture_files()
            .iter()
            .map(|file| std::fs::read(file).unwrap())
            .collect();
        texts.push(ODD_LINES.join("\n").into_bytes());
        for fields in field_sets() {
            for text in &texts {
                assert_eq!(
                    read(fields, text),
                    read_then_project(fields, text),
                    "{fields:?}"
                );
            }
        }
    }

    /// Lent records are the records: the allocations a lent record leaves for the next line
    /// never show in it.
    #[test]
    fn lent_records_are_the_owned_ones() {
        let mut text = Vec::new();
        for file in fixture_files() {
            text.extend(std::fs::read(file).unwrap());
        }
        text.extend(ODD_LINES.join("\n").into_bytes());
        for fields in field_sets() {
            let mut reader = RecordReader::with_fields(&text[..], fields);
            let mut lent = Vec::new();
            while let Some(item) = reader.next_lent() {
                lent.push(format!("{item:?}"));
            }
            assert_eq!(lent, read(fields, &text), "{fields:?}");
        }
    }

    #[test]
    fn the_fast_path_declines_lines_that_are_not_utf8() {
        for bad in [&b"\xe2\x96"[..], b"\xff", b"\xed\xa0\x80", b"\xc3"] {
            for head in [
                &br#"{"event": "line", "data": "step "#[..],
                br#"{"event": "data", "data": {"task": "tr"#,
            ] {
                let mut line = head.to_vec();
                line.extend_from_slice(bad);
                line.extend_from_slice(br#"", "pipe": "stderr"}"#);
                let mut slot = empty_record();
                assert_eq!(
                    decode(&line, REPORT, &mut slot, &mut Spare::default()),
                    None,
                    "{line:?}"
                );
            }
        }
    }

    #[test]
    fn the_fast_path_answers_the_usual_samples() {
        let lines = [
            r#"{"event": "data", "data": {"rate": 1000.25, "units": "items/s", "task": "train"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"loss": 0.5, "task": "train"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"progress": [3, 70], "task": "early_stop"}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 1700000000.5, "gpudata": {"0": {"memory": [40000, 81920.0], "load": 0.97, "temperature": 61.0, "power": 312.5}}}, "pipe": "data"}"#,
            r#"{"event": "data", "data": {"task": "main", "time": 17.5, "cpudata": {"memory": [27789398016, 1076052807680], "load": 12.5}}, "pipe": "data"}"#,
            r#"{"event": "line", "data": "step 3: training goes on\n", "pipe": "stderr"}"#,
            r#"{"event":"phase","data":{"name":"init"},"pipe":null}"#,
            "{\"event\": \"line\", \"data\": \" 50%|\u{2588}\u{2588}\u{2588}\u{258c}  | 5/10\\r\", \"pipe\": \"stderr\"}",
        ];
        let seen = fast_and_serde(REPORT, lines.join("\n").as_bytes());
        assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
        assert_eq!(seen.answered, lines.len());
        // Whole records too, but for the lines of other events.
        let seen = fast_and_serde(Fields::ALL, lines.join("\n").as_bytes());
        assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
        assert_eq!(seen.answered, 5);
    }

    /// With the extra keys asked for only for the load generator's tasks, a monitor sample with
    /// keys outside the format's tables (`iodata`, `netdata`: a quarter of a GPU run's samples)
    /// stays on the fast path; a step or request of the load generator goes to serde, which keeps
    /// its keys.
    #[test]
    fn only_the_load_generators_lines_keep_their_extra_keys() {
        let fields = REPORT | Fields::SERVING_EXTRA;
        let monitor = r#"{"event": "data", "data": {"task": "main", "time": 17.5, "netdata": {"bytes_sent": 679538123102, "dropin": 3}}, "pipe": "data"}"#;
        let step = r#"{"event": "data", "data": {"task": "load", "step": 2, "throughput": {"value": 3.5}}, "pipe": "data"}"#;
        let mut slot = empty_record();
        let mut spare = Spare::default();
        assert_eq!(
            decode(monitor.as_bytes(), fields, &mut slot, &mut spare),
            Some(Decoded::Record)
        );
        assert_eq!(decode(step.as_bytes(), fields, &mut slot, &mut spare), None);
        let records: Vec<Record> =
            RecordReader::with_fields(format!("{monitor}\n{step}\n").as_bytes(), fields)
                .map(|item| match item {
                    ReadItem::Record(record) => record,
                    ReadItem::Problem(problem) => panic!("{problem:?}"),
                })
                .collect();
        let extra_keys = |record: &Record| match &record.event {
            Event::Data(d) => d.extra.keys().cloned().collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert!(extra_keys(&records[0]).is_empty());
        assert_eq!(extra_keys(&records[1]), ["step", "throughput"]);
    }

    /// A value of the shape `key` has in a monitor sample.
    fn sample_value(key: SampleKey) -> Value {
        match key {
            SampleKey::Memory => json!([40000, 81920.5]),
            SampleKey::Load => json!(0.97),
            SampleKey::Temperature => json!(61),
            SampleKey::Power => json!(312.5),
        }
    }

    /// A monitor sample of the fields `keys`, spelled by the format.
    fn sample(keys: &[SampleKey]) -> Value {
        let fields = keys
            .iter()
            .map(|&k| (k.as_str().to_owned(), sample_value(k)));
        Value::Object(fields.collect())
    }

    /// A value of the shape `key` has in a `data` payload (samples with every field).
    fn data_value(key: DataKey) -> Value {
        match key {
            DataKey::Task => json!(TRAIN_TASK),
            DataKey::Time => json!(1700000000.5),
            DataKey::Rate => json!(1000.25),
            DataKey::Units => json!("items/s"),
            DataKey::Loss => json!(0.5),
            DataKey::Progress => json!([3, 70]),
            DataKey::Gpudata => json!({"0": sample(SampleKey::ALL)}),
            DataKey::Cpudata | DataKey::Process => sample(SampleKey::ALL),
            DataKey::GpuEnergy => json!({"0": {"joules": 12.5, "seconds": 2.0}}),
        }
    }

    /// A record line of event `name` with `payload`, keys spelled by the format.
    fn record_line(name: EventName, payload: Value) -> String {
        let mut line = Map::new();
        line.insert(RecordKey::Event.as_str().into(), json!(name.as_str()));
        line.insert(RecordKey::Data.as_str().into(), payload);
        line.insert(
            RecordKey::Pipe.as_str().into(),
            json!(PipeName::Data.as_str()),
        );
        Value::Object(line).to_string()
    }

    /// A line of every event of the format with the payload it carries, every field spelled from
    /// the format's tables: a `data` line per field and per sample field, one with all of them,
    /// and one per number field with each of Python's non-finite spellings, quoted.
    fn lines_from_the_format() -> Vec<String> {
        let mut lines = Vec::new();
        let data = |fields: &mut dyn Iterator<Item = (DataKey, Value)>| {
            let payload = fields.map(|(k, v)| (k.as_str().to_owned(), v)).collect();
            record_line(EventName::Data, Value::Object(payload))
        };
        for &key in DataKey::ALL {
            lines.push(data(&mut std::iter::once((key, data_value(key)))));
            for &(spelling, _) in &NON_FINITE {
                lines.push(data(&mut std::iter::once((key, json!(spelling)))));
            }
        }
        for &field in SampleKey::ALL {
            let one = sample(&[field]);
            lines.push(data(
                &mut [(DataKey::Gpudata, json!({"0": one.clone()}))].into_iter(),
            ));
            lines.push(data(&mut [(DataKey::Cpudata, one.clone())].into_iter()));
            lines.push(data(&mut [(DataKey::Process, one)].into_iter()));
        }
        lines.push(data(&mut DataKey::ALL.iter().map(|&k| (k, data_value(k)))));
        for &name in EventName::ALL {
            let keyed = |pairs: &[(&str, Value)]| {
                Value::Object(
                    pairs
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), v.clone()))
                        .collect(),
                )
            };
            let payload = match name {
                EventName::Config => json!({"name": "bench", "tag": ["bench", "D0"]}),
                EventName::Meta => json!({"cpu": {"count": 8}}),
                EventName::Start => keyed(&[
                    (StartKey::Command.as_str(), json!(["voir", "main.py"])),
                    (StartKey::Time.as_str(), json!(1.5)),
                ]),
                EventName::End => keyed(&[
                    (EndKey::Command.as_str(), json!(["voir", "main.py"])),
                    (EndKey::Time.as_str(), json!(3.5)),
                    (EndKey::ReturnCode.as_str(), json!(0)),
                ]),
                EventName::Phase => keyed(&[(PhaseKey::Name.as_str(), json!("init"))]),
                EventName::Message => keyed(&[(MessageKey::Message.as_str(), json!("skip"))]),
                EventName::Error | EventName::OverseerError => keyed(&[
                    (ErrorKey::Type.as_str(), json!("ValueError")),
                    (ErrorKey::Message.as_str(), json!("bad")),
                    (ErrorKey::Trace.as_str(), json!("...")),
                ]),
                EventName::FormatError => keyed(&[
                    (FormatErrorKey::Line.as_str(), json!("{\n")),
                    (FormatErrorKey::Type.as_str(), json!("JSONDecodeError")),
                    (FormatErrorKey::Message.as_str(), json!("bad")),
                ]),
                EventName::Line => json!("step 1\n"),
                EventName::Stop => Value::Null,
                EventName::Data => continue,
            };
            lines.push(record_line(name, payload));
        }
        lines
    }

    /// The format's tables are the one definition of the line both paths read: a line spelled
    /// from them gives the same record on both paths, whatever is asked for, and the fast path
    /// reads the usual shapes itself.
    #[test]
    fn every_field_of_the_format_is_read_alike_by_both_paths() {
        let lines = lines_from_the_format();
        let text = lines.join("\n");
        for fields in field_sets() {
            let seen = fast_and_serde(fields, text.as_bytes());
            assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
            assert_eq!(
                read(fields, text.as_bytes()),
                read_then_project(fields, text.as_bytes())
            );
        }
        let seen = fast_and_serde(REPORT, text.as_bytes());
        assert!(
            seen.answered * 2 > lines.len(),
            "{} of {}",
            seen.answered,
            lines.len()
        );
    }

    mod generated {
        use proptest::prelude::*;

        use super::{fast_and_serde, field_sets};

        const KEYS: &[&str] = &[
            "event",
            "data",
            "pipe",
            "task",
            "rate",
            "loss",
            "time",
            "units",
            "progress",
            "cpudata",
            "process",
            "gpudata",
            "memory",
            "load",
            "power",
            "temperature",
            "0",
            "1",
            "r\\u0061te",
        ];

        fn scalar() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(vec![
                    "0",
                    "-0",
                    "12",
                    "1000.25",
                    "-3.5e-3",
                    "1E400",
                    "18446744073709551616",
                    "01",
                    "1.",
                    "-",
                    ".5",
                    "NaN",
                    "-Infinity",
                    "Infinity",
                    "\"train\"",
                    "\"data\"",
                    "\"stderr\"",
                    "\"NaN\"",
                    "\"x\"",
                    "\"tr\\u0061in\"",
                    "\"a\\\"b\"",
                    "\"a\\nb\\\\\"",
                    "\"\\ud800\"",
                    "\"\\x\"",
                    "\"\\u12\"",
                    "\"\\u00E9\\/\"",
                    "\"\u{e9}t\u{e9}\"",
                    "\"\u{2588}\u{2588}\u{258c}  50%\"",
                    "\"a~BAD~b\"",
                    "\"~BAD~\"",
                    "true",
                    "false",
                    "null",
                    "nul",
                    "[1, 2]",
                    "[\"NaN\", 2]",
                    "{}",
                    "[]",
                ])
                .prop_map(str::to_owned),
                any::<f64>().prop_map(|x| x.to_string()),
                any::<i64>().prop_map(|x| x.to_string()),
                // Decimal and exponent forms of any digits, rounding cases and overflow included.
                (any::<u64>(), 0usize..20, prop::option::of(-400i32..400)).prop_map(
                    |(digits, point, exponent)| {
                        let digits = digits.to_string();
                        let at = point.min(digits.len());
                        let (int, frac) = digits.split_at(digits.len() - at);
                        let mut text = if frac.is_empty() {
                            int.to_owned()
                        } else {
                            format!("{}.{frac}", if int.is_empty() { "0" } else { int })
                        };
                        if let Some(e) = exponent {
                            text.push_str(&format!("e{e}"));
                        }
                        text
                    }
                ),
            ]
        }

        fn value() -> impl Strategy<Value = String> {
            scalar().prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4)
                        .prop_map(|items| format!("[{}]", items.join(", "))),
                    prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(
                        |members| {
                            let members: Vec<String> = members
                                .iter()
                                .map(|(key, value)| format!("\"{key}\": {value}"))
                                .collect();
                            format!("{{{}}}", members.join(", "))
                        }
                    ),
                ]
            })
        }

        fn line() -> impl Strategy<Value = String> {
            let event = prop::sample::select(vec![
                "\"data\"",
                "\"line\"",
                "\"config\"",
                "\"stop\"",
                "\"phase\"",
                "\"custom\"",
                "\"d\\u0061ta\"",
                "3",
            ]);
            let member = prop_oneof![
                2 => event.prop_map(|e| format!("\"event\": {e}")),
                2 => value().prop_map(|v| format!("\"data\": {v}")),
                1 => value().prop_map(|v| format!("\"pipe\": {v}")),
                1 => value().prop_map(|v| format!("\"extra\": {v}")),
            ];
            (
                prop::collection::vec(member, 0..4),
                any::<bool>(),
                prop::option::of(0usize..200),
            )
                .prop_map(|(members, compact, cut)| {
                    let line = if compact {
                        format!("{{{}}}", members.join(",")).replace(": ", ":")
                    } else {
                        format!(" {{ {} }} ", members.join(" , "))
                    };
                    match cut {
                        Some(at) if at < line.len() && line.is_char_boundary(at) => {
                            line[..at].to_owned()
                        }
                        _ => line,
                    }
                })
        }

        /// `text` with each `~BAD~` replaced by a byte sequence that is not UTF-8 (a cut
        /// character, a stray byte, an encoded surrogate, in turn).
        fn with_bad_utf8(text: &str) -> Vec<u8> {
            const BAD: [&[u8]; 3] = [b"\xe2\x96", b"\xff", b"\xed\xa0\x80"];
            let mut out = Vec::new();
            for (i, piece) in text.split("~BAD~").enumerate() {
                if i > 0 {
                    out.extend_from_slice(BAD[i % BAD.len()]);
                }
                out.extend_from_slice(piece.as_bytes());
            }
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn the_fast_path_never_disagrees_with_serde(
                lines in prop::collection::vec(line(), 1..6),
                which in 0usize..8,
            ) {
                let fields = field_sets()[which % field_sets().len()];
                let seen = fast_and_serde(fields, &with_bad_utf8(&lines.join("\n")));
                prop_assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
            }
        }
    }
}
