//! A streaming OpenAI-compatible server with known timing, on loopback, for tests and
//! benchmarks of the client: the first token a fixed time after the request is read, then one
//! token per fixed gap, a fixed number of tokens; faults on demand. `GET /health` and
//! `GET /v1/models` (model `mock`) answer at once, as other clients (GuideLLM) ask them first.
//!
//! One thread per connection, each timing its stream by absolute deadlines with the operating
//! system's sleep, so its own error is the sleep's overshoot (tens of microseconds on an idle
//! machine), not a runtime's timer tick.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::{Api, Endpoint, RequestOptions};
use crate::error::LoadError;
use crate::run::{LoadSpec, Scenario};
use crate::schedule::ArrivalShape;
use crate::workload::{LengthDist, Workload};

/// What goes wrong, and for which requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Answer every `every`-th request (counting from the first) with this HTTP status.
    Status {
        /// The status code (429, 500, ...).
        code: u16,
        /// Which requests: those whose number is a multiple of `every`.
        every: usize,
    },
    /// Stop writing after this many tokens, leaving the connection open, on every `every`-th.
    Stall {
        /// Tokens written before the stall.
        after_tokens: u32,
        /// Which requests.
        every: usize,
    },
    /// Write an event that is not JSON after this many tokens, on every `every`-th request.
    Malformed {
        /// Tokens written before the bad event.
        after_tokens: u32,
        /// Which requests.
        every: usize,
    },
    /// Answer every `every`-th request with one JSON completion, not a stream, as a server that
    /// ignores `stream: true` does.
    Unstreamed {
        /// Which requests.
        every: usize,
    },
    /// After this many requests have begun, stop listening and drop every connection,
    /// mid-stream included: the server died.
    DieAfter {
        /// Requests begun before the end.
        requests: usize,
    },
    /// Answer in HTTP/1.0 (no length: the body ends when the connection closes) and close it
    /// after this many tokens, without usage or `[DONE]`, on every request.
    CloseAfter {
        /// Tokens written before the close.
        tokens: u32,
    },
    /// Answer every request with these bytes of event stream instead of tokens, each item
    /// written as one chunk at the time its token would have been (the first at `ttft`, then
    /// one per `gap`); nothing is added (no usage, no `[DONE]`).
    Events(&'static [&'static str]),
    /// Answer every request with a `data:` line that never ends, until the client goes away.
    EndlessLine,
}

/// The timing and answers of the mock server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MockConfig {
    /// From the end of the request to the first token.
    pub ttft: Duration,
    /// Between successive tokens.
    pub gap: Duration,
    /// Tokens per answer.
    pub output_tokens: u32,
    /// `prompt_tokens` reported in `usage`.
    pub prompt_tokens: u32,
    /// Whether a final `usage` event is sent.
    pub usage: bool,
    /// What goes wrong, if anything.
    pub fault: Option<Fault>,
    /// Most answers streamed at once; further requests wait their turn (their wait adds to
    /// their time to first token), as on a saturated server. `None`: no limit.
    pub capacity: Option<usize>,
    /// Keep the body of every `POST` for [`MockServer::bodies`] (tests of what a workload
    /// sends); off, nothing is kept.
    pub keep_bodies: bool,
}

impl Default for MockConfig {
    fn default() -> MockConfig {
        MockConfig {
            ttft: Duration::from_millis(20),
            gap: Duration::from_millis(5),
            output_tokens: 16,
            prompt_tokens: 32,
            usage: true,
            fault: None,
            capacity: None,
            keep_bodies: false,
        }
    }
}

impl MockConfig {
    /// The end-to-end latency the server means: `ttft + (tokens - 1) × gap`.
    pub fn e2e(&self) -> Duration {
        self.ttft + self.gap * self.output_tokens.saturating_sub(1)
    }
}

struct Shared {
    config: MockConfig,
    begun: AtomicUsize,
    stop: AtomicBool,
    /// Answers streaming now, against `config.capacity`.
    busy: Mutex<usize>,
    freed: Condvar,
    /// The bodies of the `POST`s, in arrival order, with `config.keep_bodies`.
    bodies: Mutex<Vec<String>>,
}

impl Shared {
    /// Waits for a free place among the answers streaming (at once without a capacity).
    fn enter(&self) {
        let Some(capacity) = self.config.capacity else {
            return;
        };
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy >= capacity {
            busy = self.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy += 1;
    }

    fn leave(&self) {
        if self.config.capacity.is_some() {
            *self.busy.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
            self.freed.notify_one();
        }
    }
}

/// A running mock server; stopped when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    listener: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server on a free loopback port.
    pub fn start(config: MockConfig) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            config,
            begun: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            busy: Mutex::new(0),
            freed: Condvar::new(),
            bodies: Mutex::new(Vec::new()),
        });
        let accepting = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mock-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if accepting.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let shared = accepting.clone();
                    // A thread that cannot start leaves its connection to be closed.
                    let _ = std::thread::Builder::new()
                        .name("mock-conn".into())
                        .spawn(move || serve(stream, &shared));
                }
            })?;
        Ok(MockServer {
            addr,
            shared,
            listener: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests begun so far.
    pub fn requests(&self) -> usize {
        self.shared.begun.load(Ordering::SeqCst)
    }

    /// The bodies of the `POST`s received so far, in arrival order (empty unless
    /// [`MockConfig::keep_bodies`]).
    pub fn bodies(&self) -> Vec<String> {
        self.shared
            .bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A run against the mock server at `url` in `scenario` for `duration`: its model, prompts of
/// 32 tokens asking for the default answer length with `ignore_eos`, a 10 s timeout, seed 1,
/// up to 4,096 connections, no request limit and no SLO (change the fields for others).
pub fn load_spec(url: &str, scenario: Scenario, duration: Duration) -> Result<LoadSpec, LoadError> {
    Ok(LoadSpec {
        endpoint: Endpoint::parse(url)?,
        options: RequestOptions {
            api: Api::Completions,
            model: "mock".into(),
            ignore_eos: true,
            timeout: Duration::from_secs(10),
        },
        workload: Workload::Synthetic {
            input: LengthDist::Fixed(32),
            output: LengthDist::Fixed(MockConfig::default().output_tokens),
        },
        scenario,
        duration,
        max_requests: usize::MAX,
        seed: 1,
        default_max_tokens: 16,
        max_connections: 4096,
        slo: None,
        arrivals: ArrivalShape::default(),
        ca_cert: None,
    })
}

impl Drop for MockServer {
    fn drop(&mut self) {
        shut_down(&self.shared, self.addr);
        if let Some(thread) = self.listener.take() {
            let _ = thread.join();
        }
    }
}

/// Sets the stop flag and wakes the accepting thread so that it lets go of the port.
fn shut_down(shared: &Shared, addr: SocketAddr) {
    if !shared.stop.swap(true, Ordering::SeqCst) {
        let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    }
}

/// Serves the requests of one keep-alive connection until it closes or the server stops.
fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    // Idle connections look at the stop flag this often.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while !shared.stop.load(Ordering::SeqCst) {
        let (method, path) = match read_request(&mut reader, shared) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) if is_timeout(&e) => continue,
            Err(_) => return,
        };
        if method == "GET" {
            if describe(&mut writer, &path).is_err() {
                return;
            }
            continue;
        }
        shared.enter();
        let read_at = Instant::now();
        let number = shared.begun.fetch_add(1, Ordering::SeqCst);
        if let Some(Fault::DieAfter { requests }) = shared.config.fault
            && number + 1 >= requests
        {
            if let Ok(addr) = writer.local_addr() {
                shut_down(shared, addr);
            }
            if number + 1 > requests {
                shared.leave();
                return;
            }
        }
        let answered = answer(&mut writer, shared, number, &path, read_at);
        shared.leave();
        if answered.is_err() {
            return;
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Reads one request (headers and `Content-Length` body); its method and path, or `None` at
/// the end of the connection. A read timeout before the first byte is returned as the error.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    shared: &Shared,
) -> std::io::Result<Option<(String, String)>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut words = line.split(' ');
    let method = words.next().unwrap_or("").to_owned();
    let path = words.next().unwrap_or("/").to_owned();
    let mut length = 0;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            // Mid-request: wait for the rest unless the server stops.
            Err(e) if is_timeout(&e) && !shared.stop.load(Ordering::SeqCst) => continue,
            Err(e) => return Err(e),
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    if shared.config.keep_bodies && method == "POST" {
        let text = String::from_utf8_lossy(&body).into_owned();
        shared
            .bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(text);
    }
    Ok(Some((method, path)))
}

/// Answers a `GET`: the model list at `/v1/models`, an empty object elsewhere (`/health`).
fn describe(out: &mut TcpStream, path: &str) -> std::io::Result<()> {
    let body = if path.ends_with("/models") {
        r#"{"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "milabench"}]}"#
    } else {
        "{}"
    };
    json_answer(out, "200 OK", body)
}

/// Writes a whole JSON answer with `status` (`200 OK`, `429 Mock`, ...).
fn json_answer(out: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    out.write_all(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

/// The `object` an OpenAI-style server names each streamed event with on the route `path`:
/// some clients (AIPerf) read an event's content only when it is named.
fn event_object(path: &str) -> &'static str {
    if path.contains("/chat/") {
        "chat.completion.chunk"
    } else {
        "text_completion"
    }
}

/// The event of token number `token` for the route `path` (chat or completions).
fn token_event(path: &str, token: u32) -> String {
    let object = event_object(path);
    if path.contains("/chat/") {
        format!(
            "data: {{\"object\": \"{object}\", \"choices\": [{{\"index\": 0, \"delta\": {{\"content\": \" tok{token}\"}}}}]}}\n\n"
        )
    } else {
        format!(
            "data: {{\"object\": \"{object}\", \"choices\": [{{\"index\": 0, \"text\": \" tok{token}\"}}]}}\n\n"
        )
    }
}

fn chunk(out: &mut TcpStream, payload: &str) -> std::io::Result<()> {
    out.write_all(chunked(payload).as_bytes())
}

/// `payload` as one chunk of a chunked body.
fn chunked(payload: &str) -> String {
    format!("{:x}\r\n{payload}\r\n", payload.len())
}

/// Writes the answer to request `number`, timed from `read_at`.
fn answer(
    out: &mut TcpStream,
    shared: &Shared,
    number: usize,
    path: &str,
    read_at: Instant,
) -> std::io::Result<()> {
    let config = &shared.config;
    let chosen = |every: usize| every > 0 && number.is_multiple_of(every);
    match config.fault {
        Some(Fault::Status { code, every }) if chosen(every) => {
            // Indented over lines, as many servers write their errors.
            let body =
                format!("{{\n  \"error\": {{\n    \"message\": \"mock fault {code}\"\n  }}\n}}\n");
            return json_answer(out, &format!("{code} Mock"), &body);
        }
        Some(Fault::Unstreamed { every }) if chosen(every) => {
            let body =
                r#"{"choices": [{"text": "whole answer"}], "usage": {"completion_tokens": 2}}"#;
            return json_answer(out, "200 OK", body);
        }
        _ => {}
    }
    if let Some(Fault::CloseAfter { tokens }) = config.fault {
        out.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")?;
        for token in 0..tokens {
            sleep_until(read_at + config.ttft + config.gap * token);
            out.write_all(token_event(path, token).as_bytes())?;
        }
        out.shutdown(std::net::Shutdown::Both)?;
        return Err(std::io::Error::other("closed as HTTP/1.0 does"));
    }
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    match config.fault {
        Some(Fault::Events(events)) => {
            for (i, event) in (0..).zip(events) {
                sleep_until(read_at + config.ttft + config.gap * i);
                chunk(out, event)?;
            }
            return out.write_all(b"0\r\n\r\n");
        }
        Some(Fault::EndlessLine) => {
            chunk(out, "data: ")?;
            let block = "x".repeat(1 << 16);
            while !shared.stop.load(Ordering::SeqCst) {
                chunk(out, &block)?;
            }
            return Err(std::io::Error::other("stopped"));
        }
        _ => {}
    }
    for token in 0..config.output_tokens {
        match config.fault {
            Some(Fault::Stall {
                after_tokens,
                every,
            }) if chosen(every) && token == after_tokens => {
                while !shared.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return Ok(());
            }
            Some(Fault::Malformed {
                after_tokens,
                every,
            }) if chosen(every) && token == after_tokens => {
                chunk(out, "data: {\"choices\": [oops\n\n")?;
            }
            _ => {}
        }
        sleep_until(read_at + config.ttft + config.gap * token);
        if shared.stop.load(Ordering::SeqCst) {
            // Died mid-stream: the connection is dropped without the end of the body.
            let _ = out.shutdown(std::net::Shutdown::Both);
            return Err(std::io::Error::other("stopped"));
        }
        if token + 1 < config.output_tokens {
            chunk(out, &token_event(path, token))?;
        }
    }
    // The last token and the end of the stream are due together: one write, as a server
    // flushing its output once a step writes them.
    let mut end = String::new();
    if config.output_tokens > 0 {
        end += &chunked(&token_event(path, config.output_tokens - 1));
    }
    if config.usage {
        end += &chunked(&format!(
            "data: {{\"object\": \"{}\", \"choices\": [], \"usage\": {{\"prompt_tokens\": {}, \"completion_tokens\": {}}}}}\n\n",
            event_object(path),
            config.prompt_tokens,
            config.output_tokens
        ));
    }
    end += &chunked("data: [DONE]\n\n");
    end += "0\r\n\r\n";
    out.write_all(end.as_bytes())
}

/// Sleeps until `deadline` with the operating system's timer.
fn sleep_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep(deadline - now);
    }
}
