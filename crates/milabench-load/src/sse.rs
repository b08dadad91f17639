//! Server-sent events read incrementally: bytes go in as they arrive, each complete event
//! comes out (its `data`, and its `event` name for readers that need it).

/// An incremental reader of a `text/event-stream` body. Only `data` fields matter to the
/// OpenAI streaming protocol ([`SseReader::feed`]); the dashboard's push answer names its
/// events too ([`SseReader::feed_events`]). Other fields and comments are skipped.
#[derive(Debug, Default)]
pub struct SseReader {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// `event` name of the event being read, if it has one.
    name: Option<String>,
    /// `data` lines of the event being read, joined by newlines.
    data: Option<String>,
}

/// One complete server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Its `event` field (`None`: the default `message` type).
    pub name: Option<String>,
    /// Its `data` lines, joined by newlines.
    pub data: String,
}

impl SseReader {
    /// Feeds `bytes` and calls `on_event` with the data of every event they complete.
    /// Invalid UTF-8 in a data line is replaced (the JSON decoder then reports it).
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(String)) {
        self.feed_events(bytes, |event| on_event(event.data));
    }

    /// Feeds `bytes` and calls `on_event` with every event they complete, named.
    pub fn feed_events(&mut self, bytes: &[u8], mut on_event: impl FnMut(SseEvent)) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line, &mut on_event);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event);
            }
        }
        self.partial.extend_from_slice(rest);
    }

    /// The data of an event left unfinished when the stream ended, if any.
    pub fn finish(mut self) -> Option<String> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut |_| {});
        }
        self.data
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent)) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            let name = self.name.take();
            if let Some(data) = self.data.take() {
                on_event(SseEvent { name, data });
            }
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"event" {
            self.name = Some(String::from_utf8_lossy(value).into_owned());
        } else if field == b"data" {
            let value = String::from_utf8_lossy(value);
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&value);
                }
                None => self.data = Some(value.into_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        for chunk in chunks {
            reader.feed(chunk, |e| out.push(e));
        }
        out
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let body = b"data: {\"a\":1}\n\n: keep-alive\n\nevent: x\r\ndata: two\r\ndata: lines\r\n\r\ndata:[DONE]\n\n";
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
    fn named_events_keep_their_names_and_a_name_ends_with_its_event() {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        reader.feed_events(
            b"event: run\ndata: {}\n\n: heartbeat\n\ndata: plain\n\n",
            |e| out.push(e),
        );
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

    #[test]
    fn an_unfinished_event_is_left_for_finish() {
        let mut reader = SseReader::default();
        reader.feed(b"data: {\"a\"", |_| panic!("not complete"));
        assert_eq!(reader.finish().as_deref(), Some("{\"a\""));
    }
}
