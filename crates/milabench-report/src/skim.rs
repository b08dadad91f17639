//! The fast path of [`crate::facts::FactDecoder`]: one pass over the bytes of a line for the
//! shapes that make up nearly every line of a run (`data` samples whose fields are plain numbers,
//! strings, number arrays and objects of them, and events the report skips, such as `line`).
//!
//! It reads the raw bytes of the line, before the reader's UTF-8 check and quoting of non-finite
//! tokens, and answers only when it is sure: every value of the line must follow a strict subset
//! of JSON (no escapes in the strings it reads, no bare `NaN`, nesting of at most [`MAX_DEPTH`]),
//! the text of every string must be UTF-8 (all else is ASCII by construction) and every
//! field the report reads must have its usual shape; the whole line is checked to the end. For
//! anything else (an escape in a key or a value it reads, a field of an odd shape, the payload before the event name, the rare
//! `config`/`meta`/`start`/`end`/`stop` events, a line that is not JSON) it declines and the serde
//! decoder, which is the reference, decides. Numbers are rounded correctly on both paths, so they
//! give the same bits. Tests check that whenever this path answers, the
//! serde decoder gives the same answer.

use milabench_metrics::LineOutcome;
use milabench_metrics::format::{DataKey, EventName, RecordKey, SampleKey, TRAIN_TASK, non_finite};
use milabench_metrics::lenient::{Numbers, NumbersReader};

use crate::facts::{DataFacts, Fact, GpuReading};

/// Nesting deeper than this is left to serde (whose own limit is 128).
const MAX_DEPTH: usize = 32;

/// The fast path gave up on the line: the serde decoder reads it.
struct Declined;

type Skim<T> = Result<T, Declined>;

/// The fact of the line `bytes`, or `None` when the serde decoder must read it. `devices` is the
/// file's table of GPU device ids; it is left as it was when the line is declined.
pub(crate) fn decode(bytes: &[u8], devices: &mut Vec<String>) -> Option<LineOutcome<Fact>> {
    let known = devices.len();
    let mut cursor = Cursor { bytes, pos: 0 };
    match cursor.line(devices) {
        Ok(outcome) => Some(outcome),
        Err(Declined) => {
            devices.truncate(known);
            None
        }
    }
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

    /// The whole line: one object, nothing after it.
    fn line(&mut self, devices: &mut Vec<String>) -> Skim<LineOutcome<Fact>> {
        let mut event: Option<&'a [u8]> = None;
        let mut outcome = None;
        self.object(|c, key| {
            match RecordKey::parse(key) {
                Some(RecordKey::Event) if event.is_none() => event = Some(c.string()?),
                Some(RecordKey::Data) if outcome.is_none() => {
                    // A payload before its event name is read from a tree by the serde path.
                    let name = event.ok_or(Declined)?;
                    outcome = Some(c.payload(name, devices)?);
                }
                Some(RecordKey::Event | RecordKey::Data) => return Err(Declined),
                Some(RecordKey::Pipe) | None => c.skip_value(1)?,
            }
            Ok(())
        })?;
        if self.next_token().is_some() {
            return Err(Declined);
        }
        match (event, outcome) {
            (Some(_), Some(outcome)) => Ok(outcome),
            _ => Err(Declined),
        }
    }

    /// The payload of event `name`.
    fn payload(&mut self, name: &[u8], devices: &mut Vec<String>) -> Skim<LineOutcome<Fact>> {
        match EventName::parse(name) {
            Some(EventName::Data) => Ok(LineOutcome::Item(Fact::Data(self.data_payload(devices)?))),
            Some(
                EventName::Config
                | EventName::Meta
                | EventName::Start
                | EventName::End
                | EventName::Stop
                | EventName::Message,
            ) => Err(Declined),
            _ => {
                self.skip_value(1)?;
                Ok(LineOutcome::Skipped)
            }
        }
    }

    /// A `data` payload: an object; the fields the report reads must have their usual shapes.
    fn data_payload(&mut self, devices: &mut Vec<String>) -> Skim<DataFacts> {
        let mut d = DataFacts::default();
        self.object(|c, key| {
            match DataKey::parse(key) {
                Some(DataKey::Task) => d.train = c.string()? == TRAIN_TASK.as_bytes(),
                Some(DataKey::Rate) => d.rate = c.number()?,
                Some(DataKey::Loss) => d.loss = c.number()?,
                Some(DataKey::Time) => d.time = c.number()?,
                Some(DataKey::Cpudata) => {
                    d.cpu_memory_used = c.memory_sample()?.pair.map(|[used, _]| used);
                }
                Some(DataKey::Process) => d.process_memory = c.memory_sample()?.first,
                Some(DataKey::Gpudata) => d.gpudata = Some(c.gpu_samples(devices)?),
                Some(DataKey::Units | DataKey::Progress) | None => c.skip_value(2)?,
            }
            Ok(())
        })?;
        Ok(d)
    }

    /// A `cpudata` or `process` object: the numbers of its `memory`.
    fn memory_sample(&mut self) -> Skim<Numbers> {
        let mut memory = Numbers::default();
        self.object(|c, key| {
            if SampleKey::parse(key) == Some(SampleKey::Memory) {
                memory = c.numbers()?;
            } else {
                c.skip_value(3)?;
            }
            Ok(())
        })?;
        Ok(memory)
    }

    /// `gpudata`: an object of readings by device id.
    fn gpu_samples(&mut self, devices: &mut Vec<String>) -> Skim<Vec<GpuReading>> {
        let mut readings = Vec::new();
        self.object(|c, id| {
            let device = match devices.iter().position(|known| known.as_bytes() == id) {
                Some(index) => index,
                None => {
                    devices.push(text(id)?.to_owned());
                    devices.len() - 1
                }
            };
            let mut reading = GpuReading {
                device,
                ..GpuReading::default()
            };
            c.object(|c, key| {
                match SampleKey::parse(key) {
                    Some(SampleKey::Memory) => {
                        reading.memory_used = c.numbers()?.pair.map(|[used, _]| used);
                    }
                    Some(SampleKey::Load) => reading.load = c.number()?,
                    Some(SampleKey::Power) => reading.power = c.number()?,
                    Some(SampleKey::Temperature) | None => c.skip_value(4)?,
                }
                Ok(())
            })?;
            readings.push(reading);
            Ok(())
        })?;
        Ok(readings)
    }

    /// An array of numbers (or strings, which count as numbers only when they name a
    /// non-finite value), with the serde path's rule for [`Numbers`].
    fn numbers(&mut self) -> Skim<Numbers> {
        let mut numbers = NumbersReader::default();
        self.array(|c| {
            numbers.push(c.number()?);
            Ok(())
        })?;
        Ok(numbers.finish())
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

    /// Checks a value of any kind and steps over it.
    fn skip_value(&mut self, depth: usize) -> Skim<()> {
        let literal = |c: &mut Self, word: &[u8]| {
            if c.bytes[c.pos..].starts_with(word) {
                c.pos += word.len();
                Ok(())
            } else {
                Err(Declined)
            }
        };
        match self.next_token().ok_or(Declined)? {
            b'"' => self.skip_string(),
            b'-' | b'0'..=b'9' => self.number_token().map(drop),
            _ if depth > MAX_DEPTH => Err(Declined),
            b'{' => self.object(|c, _| c.skip_value(depth + 1)),
            b'[' => self.array(|c| c.skip_value(depth + 1)),
            b't' => literal(self, b"true"),
            b'f' => literal(self, b"false"),
            b'n' => literal(self, b"null"),
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
