//! The HTTP side: an OpenAI-compatible endpoint, one pool of HTTP/1.1 keep-alive connections,
//! and one streamed request measured from the first byte written to the last event read.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::error::LoadError;
use crate::sse::SseReader;
use crate::tls::TlsClient;
use crate::workload::Prompt;

/// Which OpenAI route the requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/completions` with a `prompt`.
    Completions,
    /// `POST /v1/chat/completions` with one user message.
    Chat,
}

impl Api {
    /// The route below the endpoint's base path.
    pub fn route(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
}

/// A server's base URL: `http[s]://HOST:PORT` with an optional path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL as given.
    pub url: String,
    /// `https://`: connections are TLS.
    pub tls: bool,
    /// `HOST:PORT` for the `Host` header and for connecting.
    pub authority: String,
    /// Path prefix before `/v1/...` (empty or starting with `/`, no trailing `/`).
    pub base_path: String,
}

impl Endpoint {
    /// Parses `http[s]://HOST[:PORT][/PREFIX]` (port 80, or 443 for `https`, when absent; a
    /// trailing `/v1` is dropped, since the routes add it).
    pub fn parse(url: &str) -> Result<Endpoint, LoadError> {
        let fail = |reason: &str| LoadError::Endpoint {
            endpoint: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (tls, rest) = match url.split_once("://") {
            Some(("http", rest)) => (false, rest),
            Some(("https", rest)) => (true, rest),
            Some(_) => return Err(fail("the scheme must be http:// or https://")),
            None => return Err(fail("write it as http://HOST:PORT")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(fail("it names no host"));
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.contains(']'))
        {
            let port = authority.rsplit_once(':').map_or("", |(_, p)| p);
            if port.parse::<u16>().is_err() {
                return Err(fail("the port is not a number"));
            }
            authority.to_owned()
        } else {
            format!("{authority}:{}", if tls { 443 } else { 80 })
        };
        let path = path.trim_end_matches('/');
        let base_path = path.strip_suffix("/v1").unwrap_or(path).to_owned();
        Ok(Endpoint {
            url: url.to_owned(),
            tls,
            authority,
            base_path,
        })
    }

    /// The host as written in the URL (a name, an address, or a bracketed IPv6 address).
    pub fn host(&self) -> &str {
        self.authority
            .rsplit_once(':')
            .map_or(self.authority.as_str(), |(host, _)| host)
    }

    /// Resolves the host name to addresses.
    pub async fn resolve(&self) -> Result<Vec<SocketAddr>, LoadError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(&self.authority)
            .await
            .map_err(|source| self.unreachable(source))?
            .collect();
        if addrs.is_empty() {
            return Err(self.unreachable(std::io::Error::other("the host name has no address")));
        }
        Ok(addrs)
    }

    /// The error of a server that cannot be reached, or whose TLS was refused.
    pub fn unreachable(&self, source: std::io::Error) -> LoadError {
        let tls = source
            .get_ref()
            .is_some_and(|inner| inner.is::<rustls::Error>());
        if tls {
            LoadError::Tls {
                endpoint: self.url.clone(),
                source,
            }
        } else {
            LoadError::Unreachable {
                endpoint: self.url.clone(),
                source,
            }
        }
    }
}

/// What a request sends besides its prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestOptions {
    /// The route.
    pub api: Api,
    /// The `model` field.
    pub model: String,
    /// Send `ignore_eos: true` (vLLM and others), so the server writes `max_tokens` tokens.
    pub ignore_eos: bool,
    /// The longest a request may take, connecting and streaming included.
    pub timeout: Duration,
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No connection could be made (refused, reset before the request was sent).
    Connect,
    /// The server answered with a status other than 2xx.
    Http,
    /// The request took longer than its timeout (a stalled stream).
    Timeout,
    /// An event was not the JSON of a completion chunk, or carried an `error`.
    Malformed,
    /// The connection ended before the stream's end (`[DONE]` or the end of the body).
    Disconnected,
}

impl ErrorKind {
    /// The kind's name as written in results.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Http => "http",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Disconnected => "disconnected",
        }
    }
}

/// A failed request's reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestError {
    /// The kind of failure.
    pub kind: ErrorKind,
    /// The server's text (HTTP errors: the body, up to 500 characters) or the client's.
    pub text: String,
}

/// One request as measured. Times are seconds; offsets count from the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// Position in the run's request list.
    pub index: usize,
    /// When the schedule wanted it sent (offline and concurrency runs: when it became due).
    pub scheduled: f64,
    /// When the client took it up (in a schedule: when its time came, found by the runtime's
    /// thread watching the clock; the write follows in that thread's next turn).
    pub sent: f64,
    /// Time to the first token, from `sent`.
    pub ttft: Option<f64>,
    /// Gaps between successive token events.
    pub itl: Vec<f64>,
    /// End-to-end latency, from `sent` to the end of the stream.
    pub latency: f64,
    /// Prompt tokens: the server's `usage`, else the synthetic prompt's length.
    pub input_tokens: Option<u32>,
    /// Completion tokens: the server's `usage`, else the token events counted.
    pub output_tokens: u32,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// Why it failed; `None` for a success.
    pub error: Option<RequestError>,
}

impl RequestRecord {
    /// Time per output token after the first: `(latency - ttft) / (output_tokens - 1)`.
    pub fn tpot(&self) -> Option<f64> {
        let ttft = self.ttft?;
        (self.error.is_none() && self.output_tokens > 1)
            .then(|| (self.latency - ttft) / f64::from(self.output_tokens - 1))
    }

    /// Whether the request succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// The request body: the route's JSON with `stream: true` and usage asked for in the stream.
pub fn request_body(options: &RequestOptions, prompt: &Prompt) -> Value {
    let mut body = json!({
        "model": options.model,
        "max_tokens": prompt.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.0,
    });
    match options.api {
        Api::Completions => body["prompt"] = Value::String(prompt.text.clone()),
        Api::Chat => body["messages"] = json!([{"role": "user", "content": prompt.text}]),
    }
    if options.ignore_eos {
        body["ignore_eos"] = Value::Bool(true);
    }
    body
}

/// The sending half of one HTTP/1.1 connection.
pub type Sender = SendRequest<Full<Bytes>>;

/// An HTTP/1.1 connection over `io` (plain TCP or TLS), its driver spawned on the runtime.
pub async fn http1_over<T>(io: T) -> std::io::Result<Sender>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    Ok(sender)
}

/// A pool of HTTP/1.1 keep-alive connections to one server, at most `max` open at once.
pub struct Pool {
    endpoint: Endpoint,
    addrs: Vec<SocketAddr>,
    tls: Option<TlsClient>,
    idle: Mutex<Vec<Sender>>,
    slots: Arc<Semaphore>,
}

impl Pool {
    /// A pool for `endpoint` (already resolved to `addrs`) of at most `max` connections; those
    /// of an `https` endpoint are TLS, trusting the authorities of `ca_cert` beside the system's.
    pub fn new(
        endpoint: Endpoint,
        addrs: Vec<SocketAddr>,
        max: usize,
        ca_cert: Option<&Path>,
    ) -> Result<Pool, LoadError> {
        let tls = endpoint.tls.then(|| TlsClient::new(ca_cert)).transpose()?;
        Ok(Pool {
            endpoint,
            addrs,
            tls,
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(max.max(1))),
        })
    }

    /// Opens one connection, to see the server is there.
    pub async fn probe(&self) -> Result<(), LoadError> {
        let sender = self
            .connect()
            .await
            .map_err(|e| self.endpoint.unreachable(e))?;
        self.put_back(sender);
        Ok(())
    }

    /// The HTTP status of `GET PATH` (under the endpoint's prefix) on a fresh connection: a
    /// readiness check.
    pub async fn get_status(&self, path: &str) -> std::io::Result<u16> {
        let mut sender = self.connect().await?;
        let request = hyper::Request::get(format!("{}{path}", self.endpoint.base_path))
            .header(hyper::header::HOST, &self.endpoint.authority)
            .body(Full::new(Bytes::new()))
            .map_err(std::io::Error::other)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(std::io::Error::other)?;
        Ok(response.status().as_u16())
    }

    async fn connect(&self) -> std::io::Result<Sender> {
        let stream = TcpStream::connect(&self.addrs[..]).await?;
        stream.set_nodelay(true)?;
        match &self.tls {
            None => http1_over(stream).await,
            Some(tls) => http1_over(tls.connect(self.endpoint.host(), stream).await?).await,
        }
    }

    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(sender) = idle.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    fn put_back(&self, sender: Sender) {
        if !sender.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(sender);
        }
    }

    /// Sends `prompt` and measures it from `taken` (when the client took it up); `scheduled`
    /// and `start` place it in the run. Never fails: a failure is in the record.
    pub async fn send(
        &self,
        options: &RequestOptions,
        prompt: &Prompt,
        index: usize,
        scheduled: f64,
        start: Instant,
        taken: Instant,
    ) -> RequestRecord {
        let body = Bytes::from(request_body(options, prompt).to_string());
        let mut record = RequestRecord {
            index,
            scheduled,
            sent: taken.saturating_duration_since(start).as_secs_f64(),
            ttft: None,
            itl: Vec::new(),
            latency: 0.0,
            input_tokens: prompt.input_tokens,
            output_tokens: 0,
            status: None,
            error: None,
        };
        // Latencies count from here: waiting for a pooled connection is part of them.
        let begin = taken;
        let deadline = tokio::time::Instant::from_std(begin + options.timeout);
        let outcome =
            tokio::time::timeout_at(deadline, self.exchange(options, body, &mut record, begin))
                .await;
        record.latency = begin.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => record.error = Some(error),
            Err(_) => {
                record.error = Some(RequestError {
                    kind: ErrorKind::Timeout,
                    text: format!(
                        "no complete answer within {:?} ({} tokens received)",
                        options.timeout, record.output_tokens
                    ),
                });
            }
        }
        record
    }

    async fn exchange(
        &self,
        options: &RequestOptions,
        body: Bytes,
        record: &mut RequestRecord,
        begin: Instant,
    ) -> Result<(), RequestError> {
        let connect_error = |e: &dyn std::fmt::Display| RequestError {
            kind: ErrorKind::Connect,
            text: format!("{}: {e}", self.endpoint.url),
        };
        let _slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| connect_error(&e))?;
        let request = |body: Bytes| {
            hyper::Request::post(format!(
                "{}{}",
                self.endpoint.base_path,
                options.api.route()
            ))
            .header(hyper::header::HOST, &self.endpoint.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "text/event-stream")
            .body(Full::new(body))
            .map_err(|e| connect_error(&e))
        };
        // A pooled connection the server closed meanwhile fails before any answer: one retry on
        // a fresh connection, after which the failure is the server's.
        let pooled = match self.take_idle() {
            Some(mut sender) => match sender.send_request(request(body.clone())?).await {
                Ok(response) => Some((sender, response)),
                Err(_) => None,
            },
            None => None,
        };
        let (mut sender, response) = match pooled {
            Some(answered) => answered,
            None => {
                let mut sender = self.connect().await.map_err(|e| connect_error(&e))?;
                let response = sender
                    .send_request(request(body)?)
                    .await
                    .map_err(|e| connect_error(&e))?;
                (sender, response)
            }
        };
        let status = response.status();
        record.status = Some(status.as_u16());
        let content_type = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|t| t.to_str().ok())
            .map(str::to_owned);
        let mut body = response.into_body();
        if !status.is_success() {
            let mut text = Vec::new();
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data() {
                    text.extend_from_slice(&data);
                }
                if text.len() > 4096 {
                    break;
                }
            }
            // One line (an HTML error page spans dozens), at most 500 characters.
            let text = String::from_utf8_lossy(&text);
            let words: Vec<&str> = text.split_whitespace().collect();
            let line: String = words.join(" ").chars().take(500).collect();
            return Err(RequestError {
                kind: ErrorKind::Http,
                text: format!("HTTP {status}: {line}"),
            });
        }
        let mut reader = SseReader::default();
        let mut stream = StreamState {
            begin,
            last: None,
            done: false,
            counted: 0,
            usage: None,
            problem: None,
        };
        while !stream.done && stream.problem.is_none() {
            match body.frame().await {
                None => break,
                Some(Err(e)) => {
                    return Err(stream.disconnected(record, &e));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        reader.feed(&data, |event| stream.event(&event, options.api, record));
                    }
                }
            }
        }
        if let Some(problem) = stream.problem {
            return Err(problem);
        }
        if let Some(rest) = reader.finish() {
            stream.event(&rest, options.api, record);
        }
        let streamed = content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if stream.saw_nothing() && !streamed {
            return Err(RequestError {
                kind: ErrorKind::Malformed,
                text: format!(
                    "the answer is {}, not a stream of events (text/event-stream): the server \
                     does not stream this route, or ignored `stream: true`",
                    content_type.as_deref().unwrap_or("without a content type")
                ),
            });
        }
        stream.finish(record)?;
        // The body was read to its end: the connection can serve another request.
        if sender.ready().await.is_ok() {
            self.put_back(sender);
        }
        Ok(())
    }
}

/// What one stream has shown so far.
struct StreamState {
    begin: Instant,
    last: Option<Instant>,
    done: bool,
    counted: u32,
    usage: Option<(Option<u32>, Option<u32>)>,
    problem: Option<RequestError>,
}

impl StreamState {
    fn event(&mut self, data: &str, api: Api, record: &mut RequestRecord) {
        if self.done || self.problem.is_some() {
            return;
        }
        let now = Instant::now();
        if data.trim() == "[DONE]" {
            self.done = true;
            return;
        }
        let chunk: Value = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                self.problem = Some(RequestError {
                    kind: ErrorKind::Malformed,
                    text: format!("event is not JSON ({e}): {}", clip(data)),
                });
                return;
            }
        };
        if let Some(error) = chunk.get("error") {
            self.problem = Some(RequestError {
                kind: ErrorKind::Malformed,
                text: format!("the stream carried an error: {}", clip(&error.to_string())),
            });
            return;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).map(|n| n as u32);
            self.usage = Some((count("prompt_tokens"), count("completion_tokens")));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            if self.usage.is_none() {
                self.problem = Some(RequestError {
                    kind: ErrorKind::Malformed,
                    text: format!("event has neither choices nor usage: {}", clip(data)),
                });
            }
            return;
        };
        let text = choices.first().and_then(|c| match api {
            Api::Completions => c.get("text"),
            Api::Chat => c.get("delta").and_then(|d| d.get("content")),
        });
        if text.and_then(Value::as_str).is_some_and(|t| !t.is_empty()) {
            match self.last {
                None => record.ttft = Some((now - self.begin).as_secs_f64()),
                Some(last) => record.itl.push((now - last).as_secs_f64()),
            }
            self.last = Some(now);
            self.counted += 1;
            // Kept current, so a request that times out says how far it got.
            record.output_tokens = self.counted;
        }
    }

    fn disconnected(&self, record: &mut RequestRecord, e: &dyn std::fmt::Display) -> RequestError {
        record.output_tokens = self.counted;
        RequestError {
            kind: ErrorKind::Disconnected,
            text: format!("the stream ended early after {} tokens: {e}", self.counted),
        }
    }

    /// Whether the stream has shown no token, no usage and no end.
    fn saw_nothing(&self) -> bool {
        !self.done && self.usage.is_none() && self.counted == 0
    }

    fn finish(&self, record: &mut RequestRecord) -> Result<(), RequestError> {
        record.output_tokens = self.counted;
        if let Some((input, output)) = self.usage {
            record.input_tokens = input.or(record.input_tokens);
            record.output_tokens = output.unwrap_or(self.counted);
        }
        if self.saw_nothing() {
            return Err(self.disconnected(record, &"the body ended without an event"));
        }
        if record.ttft.is_none() {
            return Err(RequestError {
                kind: ErrorKind::Malformed,
                text: "the stream had no token".into(),
            });
        }
        Ok(())
    }
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(200).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_with_their_port_and_prefix() {
        let e = Endpoint::parse("http://127.0.0.1:8000").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.base_path.as_str()),
            ("127.0.0.1:8000", "")
        );
        let e = Endpoint::parse("http://localhost/v1/").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.base_path.as_str()),
            ("localhost:80", "")
        );
        let e = Endpoint::parse("http://h:1/proxy/v1").unwrap();
        assert_eq!(e.base_path, "/proxy");
        let e = Endpoint::parse("http://[::1]:9000/").unwrap();
        assert_eq!(e.authority, "[::1]:9000");
        assert_eq!(e.host(), "[::1]");
        assert!(!e.tls);
        let e = Endpoint::parse("https://api.example.org/v1").unwrap();
        assert!(e.tls);
        assert_eq!(
            (e.authority.as_str(), e.host()),
            ("api.example.org:443", "api.example.org")
        );
        for bad in ["localhost:8000", "http://:8000x", "http:///v1", "ftp://x"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bodies_follow_the_route() {
        let mut options = RequestOptions {
            api: Api::Completions,
            model: "m".into(),
            ignore_eos: true,
            timeout: Duration::from_secs(1),
        };
        let prompt = Prompt {
            text: "hi".into(),
            input_tokens: Some(1),
            max_tokens: 4,
        };
        let body = request_body(&options, &prompt);
        assert_eq!(body["prompt"], "hi");
        assert_eq!(body["stream"], true);
        assert_eq!(body["ignore_eos"], true);
        assert_eq!(body["max_tokens"], 4);
        options.api = Api::Chat;
        options.ignore_eos = false;
        let body = request_body(&options, &prompt);
        assert_eq!(body["messages"][0]["content"], "hi");
        assert!(body.get("ignore_eos").is_none());
    }

    #[test]
    fn tpot_spreads_the_time_after_the_first_token() {
        let record = RequestRecord {
            index: 0,
            scheduled: 0.0,
            sent: 0.0,
            ttft: Some(0.1),
            itl: vec![0.02; 4],
            latency: 0.18,
            input_tokens: Some(3),
            output_tokens: 5,
            status: Some(200),
            error: None,
        };
        assert!((record.tpot().unwrap() - 0.02).abs() < 1e-12);
    }
}
