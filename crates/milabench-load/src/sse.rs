//! Server-sent events read incrementally: bytes go in as they arrive, each complete event
//! comes out (the `data` of `message` events for the OpenAI streaming protocol, or every event
//! with its name for readers that need them, such as the dashboard's push answer). As the WHATWG specification of `text/event-stream` says: a byte
//! order mark before the first line is dropped, lines end with CR LF, LF or a lone CR, and an
//! event whose `event:` type is not `message` is not for the client (a `ping`, say) and is
//! skipped. One line or event longer than [`MAX_EVENT_BYTES`] stops the stream.

/// The longest line or event read (16 MiB): a streamed chunk is a few hundred bytes, and a
/// line that never ends would otherwise be kept in memory until it runs out.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// A line or an event longer than [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLong;

impl std::fmt::Display for EventTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an event is longer than {} MiB, the most one event may hold: the body is not a \
             stream of server-sent events, or its line never ends",
            MAX_EVENT_BYTES >> 20
        )
    }
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental reader of a `text/event-stream` body. Only `data` and `event` fields matter
/// ([`SseReader::feed`]: the data of `message` events, as the OpenAI streaming protocol reads
/// them; [`SseReader::feed_events`]: every event, named); other fields and comments are
/// skipped.
#[derive(Debug, Default)]
pub struct SseReader {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// `data` lines of the event being read, joined by newlines.
    data: Option<String>,
    /// The `event:` type of the event being read, when it names one.
    name: Option<String>,
    /// The last bytes fed ended on a CR, so a LF first in the next ones ends no second line.
    after_cr: bool,
    /// A line was read: a byte order mark is no longer dropped.
    started: bool,
}

/// One complete server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Its `event` field (`None`: the default `message` type).
    pub name: Option<String>,
    /// Its `data` lines, joined by newlines.
    pub data: String,
}

impl SseEvent {
    /// Whether it is of the default type, `message` (a client of the OpenAI protocol reads
    /// those only).
    pub fn is_message(&self) -> bool {
        is_message_type(self.name.as_deref())
    }
}

/// Whether an event of this `event:` type is of the default type, `message`.
fn is_message_type(name: Option<&str>) -> bool {
    name.is_none_or(|n| n.is_empty() || n == "message")
}

impl SseReader {
    /// Feeds `bytes` and calls `on_event` with the data of every `message` event they
    /// complete. Invalid UTF-8 in a data line is replaced (the JSON decoder then reports it).
    pub fn feed(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(String),
    ) -> Result<(), EventTooLong> {
        self.feed_events(bytes, |event| {
            if event.is_message() {
                on_event(event.data);
            }
        })
    }

    /// Feeds `bytes` and calls `on_event` with every event they complete, named.
    pub fn feed_events(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEvent),
    ) -> Result<(), EventTooLong> {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if tail[0] == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.partial.is_empty() {
                self.line(line, &mut on_event)?;
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event)?;
            }
        }
        if self.partial.len() + rest.len() > MAX_EVENT_BYTES {
            return Err(EventTooLong);
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// The data of an event left unfinished when the stream ended, if any.
    pub fn finish(mut self) -> Option<String> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut |_| {}).ok()?;
        }
        let message = is_message_type(self.name.as_deref());
        self.data.filter(|_| message)
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent),
    ) -> Result<(), EventTooLong> {
        if line.len() > MAX_EVENT_BYTES {
            return Err(EventTooLong);
        }
        let line = if self.started {
            line
        } else {
            self.started = true;
            line.strip_prefix(BOM).unwrap_or(line)
        };
        if line.is_empty() {
            let name = self.name.take();
            if let Some(data) = self.data.take() {
                on_event(SseEvent { name, data });
            }
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return Ok(()), // a comment
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = String::from_utf8_lossy(value);
                match &mut self.data {
                    Some(data) => {
                        if data.len() + 1 + value.len() > MAX_EVENT_BYTES {
                            return Err(EventTooLong);
                        }
                        data.push('\n');
                        data.push_str(&value);
                    }
                    None => self.data = Some(value.into_owned()),
                }
            }
            b"event" => self.name = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_events_keep_their_names_and_a_name_ends_with_its_event() {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        reader
            .feed_events(
                b"event: run\ndata: {}\n\n: heartbeat\n\ndata: plain\n\n",
                |e| out.push(e),
            )
            .unwrap();
        assert_eq!(
            out,
            [
                SseEvent {
                    name: Some("run".into()),
                    data: "{}".into()
                },
                SseEvent {
                    name: None,
                    data: "plain".into()
                },
            ]
        );
    }

    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        for chunk in chunks {
            reader.feed(chunk, |e| out.push(e)).unwrap();
        }
        out
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let body = b"data: {\"a\":1}\n\n: keep-alive\n\nevent: message\r\ndata: two\r\ndata: lines\r\n\r\ndata:[DONE]\n\n";
        let whole = events(&[body]);
        assert_eq!(whole, ["{\"a\":1}", "two\nlines", "[DONE]"]);
        for cut in 1..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&bytes), whole);
    }

    #[test]
    fn an_unfinished_event_is_left_for_finish() {
        let mut reader = SseReader::default();
        reader
            .feed(b"data: {\"a\"", |_| panic!("not complete"))
            .unwrap();
        assert_eq!(reader.finish().as_deref(), Some("{\"a\""));
    }

    #[test]
    fn a_byte_order_mark_before_the_first_line_is_dropped() {
        let body = b"\xEF\xBB\xBFdata: one\n\ndata: two\n\n";
        for cut in 1..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b]), ["one", "two"], "cut at {cut}");
        }
        // Only before the first line: later it is part of a field's name.
        assert_eq!(
            events(&[b"data: one\n\n\xEF\xBB\xBFdata: two\n\n"]),
            ["one"]
        );
    }

    #[test]
    fn lines_may_end_with_a_lone_carriage_return() {
        let body = b"data: one\r\rdata: two\r\ndata: lines\r\n\r\ndata: three\r\r";
        let expected = ["one", "two\nlines", "three"];
        for cut in 1..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b]), expected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&bytes), expected);
    }

    #[test]
    fn events_of_another_type_than_message_are_skipped() {
        let body = b"event: ping\ndata: {\"type\":\"ping\"}\n\ndata: one\n\nevent: message\ndata: two\n\nevent: ping\ndata: late\n\ndata: three\n\n";
        assert_eq!(events(&[body]), ["one", "two", "three"]);
        let mut reader = SseReader::default();
        reader.feed(b"event: ping\ndata: x", |_| {}).unwrap();
        assert_eq!(reader.finish(), None);
    }

    #[test]
    fn a_line_past_the_cap_is_refused_without_keeping_it() {
        let mut reader = SseReader::default();
        let block = vec![b'x'; 1 << 20];
        reader.feed(b"data: ", |_| {}).unwrap();
        let mut fed = 6;
        let refused = loop {
            match reader.feed(&block, |_| panic!("no event")) {
                Ok(()) => fed += block.len(),
                Err(e) => break e,
            }
            assert!(fed <= MAX_EVENT_BYTES, "{fed} bytes kept");
        };
        assert!(refused.to_string().contains("16 MiB"), "{refused}");
        // Many data lines making one event past the cap are refused too.
        let mut reader = SseReader::default();
        let mut line = b"data: ".to_vec();
        line.extend_from_slice(&block);
        line.push(b'\n');
        let refused = (0..20).find_map(|_| reader.feed(&line, |_| panic!("no event")).err());
        assert_eq!(refused, Some(EventTooLong));
    }
}
