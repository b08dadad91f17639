//! The HTTP side: an OpenAI-compatible endpoint, one pool of HTTP/1.1 keep-alive connections,
//! and one streamed request measured from the first byte written to the last event read.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
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
        // Schemes are case-insensitive (RFC 3986).
        let (tls, rest) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
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
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(fail("the port is not a number"));
            }
            if !port.parse::<u16>().is_ok_and(|p| p > 0) {
                return Err(fail("the port must be 1 to 65535"));
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
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        if let Some(rustls::Error::InvalidMessage(_)) = tls {
            // What came back was no TLS record: an HTTP answer to the handshake, likely.
            LoadError::NotTls {
                endpoint: self.url.clone(),
            }
        } else if tls.is_some() {
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
    /// The connection ended before the stream's end: the body was cut, or it ended without
    /// `[DONE]`, a finish reason or usage after fewer tokens than asked for.
    Disconnected,
    /// The load generator itself failed on the request (a bug to report).
    Client,
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
            ErrorKind::Client => "client",
        }
    }
}

/// The most tokens one streamed event plausibly carries (several with speculative decoding or
/// a server that batches its output): a `usage` above this many per token event is suspect.
pub const MAX_TOKENS_PER_EVENT: u32 = 16;

/// A `usage` count of completion tokens that the stream's token events contradict: below the
/// events counted (impossible: the events are used), or above [`MAX_TOKENS_PER_EVENT`] per
/// event (implausible: the usage is kept, with a warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UsageMismatch {
    /// `completion_tokens` of the server's usage.
    pub usage: u32,
    /// Token events counted in the stream.
    pub events: u32,
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
    /// Time to the first generated token, from `sent`: answer text or, in chat, reasoning
    /// (`reasoning_content`), which counts as generated tokens.
    pub ttft: Option<f64>,
    /// Time to the first token of the answer's text, from `sent`: later than `ttft` when the
    /// model reasoned first.
    pub content_ttft: Option<f64>,
    /// Gaps between successive token events.
    pub itl: Vec<f64>,
    /// End-to-end latency, from `sent` to the end of the stream.
    pub latency: f64,
    /// Prompt tokens: the server's `usage`, else the synthetic prompt's length.
    pub input_tokens: Option<u32>,
    /// Completion tokens: the server's `usage`, else the token events counted (also when the
    /// usage is below them, which cannot be).
    pub output_tokens: u32,
    /// The server's usage disagreed with the token events counted, if it did.
    pub usage_mismatch: Option<UsageMismatch>,
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

    /// Time per output token counting the first: `latency / output_tokens` (GuideLLM's
    /// definition; [`RequestRecord::tpot`] leaves the first token out, as vLLM's does).
    pub fn tpot_with_first(&self) -> Option<f64> {
        (self.error.is_none() && self.output_tokens > 0)
            .then(|| self.latency / f64::from(self.output_tokens))
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

/// How long the probe of a plain HTTP endpoint waits for each answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The HTTP status of `GET PATH` (under `endpoint`'s prefix) on `sender`, its body read to the
/// end so that the connection can serve another request.
async fn get(endpoint: &Endpoint, sender: &mut Sender, path: &str) -> std::io::Result<u16> {
    let request = hyper::Request::get(format!("{}{path}", endpoint.base_path))
        .header(hyper::header::HOST, &endpoint.authority)
        .body(Full::new(Bytes::new()))
        .map_err(std::io::Error::other)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)?;
    let status = response.status().as_u16();
    response
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?;
    Ok(status)
}

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

    /// Opens one connection, to see the server is there. Over plain HTTP it also asks for the
    /// model list, so that a server that speaks TLS is told apart from one that answers
    /// nothing HTTP can read.
    pub async fn probe(&self) -> Result<(), LoadError> {
        let mut sender = self
            .connect()
            .await
            .map_err(|e| self.endpoint.unreachable(e))?;
        if !self.endpoint.tls {
            let asked = tokio::time::timeout(
                PROBE_TIMEOUT,
                get(&self.endpoint, &mut sender, "/v1/models"),
            );
            match asked.await {
                Ok(Ok(_)) => self.put_back(sender),
                Ok(Err(_)) if self.speaks_tls().await => {
                    return Err(LoadError::SpeaksTls {
                        endpoint: self.endpoint.url.clone(),
                    });
                }
                // An answer HTTP cannot read, or none in time: left to the requests to find
                // out, on connections of their own.
                Ok(Err(_)) | Err(_) => {}
            }
            return Ok(());
        }
        self.put_back(sender);
        Ok(())
    }

    /// Whether the server completes, or at least answers, a TLS handshake.
    async fn speaks_tls(&self) -> bool {
        let Ok(tls) = TlsClient::new(None) else {
            return false;
        };
        let Ok(Ok(stream)) =
            tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(&self.addrs[..])).await
        else {
            return false;
        };
        let handshake =
            tokio::time::timeout(PROBE_TIMEOUT, tls.connect(self.endpoint.host(), stream));
        match handshake.await {
            Ok(Ok(_)) => true,
            // A certificate this machine does not trust, an alert: TLS all the same.
            Ok(Err(e)) => e.get_ref().is_some_and(|inner| {
                inner
                    .downcast_ref::<rustls::Error>()
                    .is_some_and(|e| !matches!(e, rustls::Error::InvalidMessage(_)))
            }),
            Err(_) => false,
        }
    }

    /// The HTTP status of `GET PATH` (under the endpoint's prefix) on a fresh connection: a
    /// readiness check.
    pub async fn get_status(&self, path: &str) -> std::io::Result<u16> {
        let mut sender = self.connect().await?;
        get(&self.endpoint, &mut sender, path).await
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
            content_ttft: None,
            itl: Vec::new(),
            latency: 0.0,
            input_tokens: prompt.input_tokens,
            output_tokens: 0,
            usage_mismatch: None,
            status: None,
            error: None,
        };
        // Latencies count from here: waiting for a pooled connection is part of them.
        let begin = taken;
        let exchange = self.exchange(options, prompt.max_tokens, body, &mut record, begin);
        // A timeout past what the clock can count is no timeout.
        let outcome = match begin.checked_add(options.timeout) {
            Some(deadline) => {
                let deadline = tokio::time::Instant::from_std(deadline);
                CaughtPanic::of(tokio::time::timeout_at(deadline, exchange)).await
            }
            None => CaughtPanic::of(async { Ok(exchange.await) }).await,
        };
        record.latency = begin.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => record.error = Some(error),
            Err(panic) => {
                record.error = Some(RequestError {
                    kind: ErrorKind::Client,
                    text: format!(
                        "the load generator failed on this request ({panic}): a bug, please \
                         report it"
                    ),
                });
            }
            Ok(Err(_)) => {
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
        asked: u32,
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
            asked,
            last: None,
            done: false,
            finished: false,
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
                    if let Ok(data) = frame.into_data()
                        && let Err(e) =
                            reader.feed(&data, |event| stream.event(&event, options.api, record))
                    {
                        return Err(RequestError {
                            kind: ErrorKind::Malformed,
                            text: e.to_string(),
                        });
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
    /// `max_tokens` of the request.
    asked: u32,
    last: Option<Instant>,
    /// `[DONE]` was read.
    done: bool,
    /// A choice carried a `finish_reason`: the answer is complete.
    finished: bool,
    counted: u32,
    usage: Option<(Option<u32>, Option<u32>)>,
    problem: Option<RequestError>,
}

/// A token count of the server's usage; one past `u32::MAX` saturates rather than wraps.
fn usage_count(usage: &Value, key: &str) -> Option<u32> {
    let n = usage.get(key)?.as_u64()?;
    Some(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Whether `value` is a string with text.
fn has_text(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|t| !t.is_empty())
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
            self.usage = Some((
                usage_count(usage, "prompt_tokens"),
                usage_count(usage, "completion_tokens"),
            ));
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
        let Some(choice) = choices.first() else {
            return;
        };
        if choice.get("finish_reason").is_some_and(Value::is_string) {
            self.finished = true;
        }
        // Reasoning (`reasoning_content`, or `reasoning` in some servers) is generated tokens
        // as much as the answer's text is.
        let (content, reasoning) = match api {
            Api::Completions => (has_text(choice.get("text")), false),
            Api::Chat => {
                let delta = choice.get("delta");
                let field = |key: &str| delta.and_then(|d| d.get(key));
                (
                    has_text(field("content")),
                    has_text(field("reasoning_content")) || has_text(field("reasoning")),
                )
            }
        };
        if !(content || reasoning) {
            return;
        }
        let since_begin = (now - self.begin).as_secs_f64();
        match self.last {
            None => record.ttft = Some(since_begin),
            Some(last) => record.itl.push((now - last).as_secs_f64()),
        }
        if content && record.content_ttft.is_none() {
            record.content_ttft = Some(since_begin);
        }
        self.last = Some(now);
        self.counted = self.counted.saturating_add(1);
        // Kept current, so a request that times out says how far it got.
        record.output_tokens = self.counted;
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
            if let Some(usage) = output {
                let mismatch = UsageMismatch {
                    usage,
                    events: self.counted,
                };
                if usage < self.counted {
                    record.usage_mismatch = Some(mismatch);
                } else {
                    record.output_tokens = usage;
                    // Without any token event the request fails, and says why.
                    let per_event = u64::from(MAX_TOKENS_PER_EVENT) * u64::from(self.counted);
                    if self.counted > 0 && u64::from(usage) > per_event {
                        record.usage_mismatch = Some(mismatch);
                    }
                }
            }
        }
        if self.saw_nothing() {
            return Err(self.disconnected(record, &"the body ended without an event"));
        }
        // A body that simply ends (HTTP/1.0, or a connection closed without a length) is only
        // complete with a sign of its end: `[DONE]`, a finish reason, usage, or every token.
        if !self.done && !self.finished && self.usage.is_none() && self.counted < self.asked {
            return Err(self.disconnected(
                record,
                &format_args!(
                    "the body ended without `[DONE]`, a finish reason or usage, {} tokens short \
                     of the {} asked for",
                    self.asked - self.counted,
                    self.asked
                ),
            ));
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

/// A future whose panic is caught and returned as its message, so that a request the client
/// fails on is counted as a failure rather than lost with its task.
struct CaughtPanic<F>(Pin<Box<F>>);

impl<F: Future> CaughtPanic<F> {
    fn of(future: F) -> CaughtPanic<F> {
        CaughtPanic(Box::pin(future))
    }
}

impl<F: Future> Future for CaughtPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned()))),
        }
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
        // Schemes are case-insensitive.
        let e = Endpoint::parse("HTTP://127.0.0.1:8000").unwrap();
        assert!(!e.tls);
        assert!(Endpoint::parse("Https://h").unwrap().tls);
        let reason = |url: &str| Endpoint::parse(url).unwrap_err().to_string();
        for out_of_range in ["http://127.0.0.1:99999", "http://127.0.0.1:0"] {
            assert!(
                reason(out_of_range).ends_with("the port must be 1 to 65535"),
                "{}",
                reason(out_of_range)
            );
        }
        assert!(reason("http://h:80x").ends_with("the port is not a number"));
    }

    #[test]
    fn a_panic_in_a_request_is_caught_with_its_message() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let caught = runtime.block_on(CaughtPanic::of(async {
            tokio::task::yield_now().await;
            panic!("overflow when adding a duration to an instant")
        }));
        assert_eq!(
            caught,
            Err("overflow when adding a duration to an instant".into())
        );
        assert_eq!(runtime.block_on(CaughtPanic::of(async { 7 })), Ok(7));
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
            content_ttft: Some(0.1),
            itl: vec![0.02; 4],
            latency: 0.18,
            input_tokens: Some(3),
            output_tokens: 5,
            usage_mismatch: None,
            status: Some(200),
            error: None,
        };
        assert!((record.tpot().unwrap() - 0.02).abs() < 1e-12);
        // Issue 52: the other tools' TPOT counts the first token: 0.18 s over 5 tokens.
        assert!((record.tpot_with_first().unwrap() - 0.036).abs() < 1e-12);
    }
}
