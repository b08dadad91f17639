//! The client against the mock server on loopback: measured timings against the server's
//! known ones, arrivals against their schedule, and every fault counted as it should be.
//! Every run is bounded by its duration, request count and per-request timeout.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use milabench_load::mock::{self, Fault, MockConfig, MockServer};
use milabench_load::{Api, ErrorKind, LoadError, LoadSpec, Scenario, Slo, Stop, run};

/// The mock server's run, with at most `max_requests`.
fn spec(url: &str, scenario: Scenario, duration: Duration, max_requests: usize) -> LoadSpec {
    LoadSpec {
        max_requests,
        ..mock::load_spec(url, scenario, duration).unwrap()
    }
}

fn ms(seconds: f64) -> f64 {
    seconds * 1e3
}

/// Runs a server scenario at `rate` and checks every median against the server's timing:
/// the gaps between tokens within `gap_ms`, TTFT and e2e within `latency_ms`. A latency holds
/// two wake-ups of an idle core (the server's, then the client's) that a gap does not: on a
/// virtual machine at a low rate they cost about a millisecond together, so the gaps are
/// where the client's own accuracy shows.
fn medians_within(rate: f64, seconds: u64, gap_ms: f64, latency_ms: f64) {
    let config = MockConfig::default();
    let server = MockServer::start(config).unwrap();
    let result = run(
        &spec(
            &server.url(),
            Scenario::Server { rate },
            Duration::from_secs(seconds),
            usize::MAX,
        ),
        &Stop::new(),
    )
    .unwrap();
    let s = &result.steps[0].summary;
    assert_eq!(s.failed, 0, "{:?}", s.errors);
    assert!(
        s.requests as f64 > rate * seconds as f64 * 0.7,
        "{}",
        s.requests
    );
    let truth = |d: Duration| d.as_secs_f64() * 1e3;
    for (what, measured, expected, tolerance_ms) in [
        ("ttft", s.ttft.p50.value, truth(config.ttft), latency_ms),
        ("tpot", s.tpot.p50.value, truth(config.gap), gap_ms),
        ("itl", s.itl.p50.value, truth(config.gap), gap_ms),
        ("e2e", s.e2e.p50.value, truth(config.e2e()), latency_ms),
    ] {
        let off = ms(measured) - expected;
        assert!(
            off.abs() < tolerance_ms,
            "{what} median {:.3} ms, truth {expected} ms",
            ms(measured)
        );
    }
    assert_eq!(s.output_tokens, 16 * s.succeeded as u64);
    assert_eq!(s.input_tokens, 32 * s.succeeded as u64);
    assert!(s.cpu_per_request > 0.0);
    // The schedule is seeded: the sends follow the exponential it was drawn from.
    let ks = s.arrivals.unwrap();
    assert!(ks.p_value > 0.001, "{ks:?}");
    assert!(s.lateness.p50 < 0.002, "{:?}", s.lateness);
}

#[test]
fn medians_are_within_a_quarter_millisecond_between_tokens_at_10_requests_per_second() {
    medians_within(10.0, 4, 0.25, 2.0);
}

#[test]
fn medians_are_within_two_milliseconds_at_200_requests_per_second() {
    medians_within(200.0, 2, 2.0, 2.0);
}

#[test]
fn medians_are_within_two_milliseconds_at_1000_requests_per_second() {
    medians_within(1000.0, 3, 2.0, 2.0);
}

#[test]
fn offline_and_concurrency_runs_complete_every_request() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(5),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        usage: false,
        ..MockConfig::default()
    })
    .unwrap();
    let offline = run(
        &spec(&server.url(), Scenario::Offline, Duration::ZERO, 30),
        &Stop::new(),
    )
    .unwrap();
    let s = &offline.steps[0].summary;
    assert_eq!((s.requests, s.succeeded), (30, 30));
    // Without `usage`, output tokens are counted and input tokens are the prompt's.
    assert_eq!(s.output_tokens, 30 * 4);
    assert_eq!(s.input_tokens, 30 * 32);
    let mut chat = spec(
        &server.url(),
        Scenario::Concurrency { n: 3 },
        Duration::from_secs(5),
        20,
    );
    chat.options.api = Api::Chat;
    let closed = run(&chat, &Stop::new()).unwrap();
    let s = &closed.steps[0].summary;
    assert_eq!((s.requests, s.succeeded), (20, 20));
    assert!(closed.failure().is_none());
}

#[test]
fn http_errors_are_counted_with_their_text_and_not_as_latencies() {
    for code in [429, 500] {
        let server = MockServer::start(MockConfig {
            fault: Some(Fault::Status { code, every: 3 }),
            ..MockConfig::default()
        })
        .unwrap();
        let result = run(
            &spec(&server.url(), Scenario::Offline, Duration::ZERO, 12),
            &Stop::new(),
        )
        .unwrap();
        let s = &result.steps[0].summary;
        // The server counts the probe's connection but no request; requests 0, 3, 6, 9 fail.
        assert_eq!((s.succeeded, s.failed), (8, 4), "{:?}", s.errors);
        let http = &s.errors[&ErrorKind::Http];
        assert_eq!(http.count, 4);
        assert!(http.example.contains(&code.to_string()), "{}", http.example);
        // The server's text, on one line.
        assert!(
            http.example.ends_with(&format!(
                ": {{ \"error\": {{ \"message\": \"mock fault {code}\" }} }}"
            )),
            "{}",
            http.example
        );
        assert_eq!(s.e2e.count, 8);
        let failure = result.failure().unwrap();
        assert!(failure.contains("4 of 12 requests failed"), "{failure}");
    }
}

#[test]
fn a_stalled_stream_times_out_and_is_counted() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        output_tokens: 6,
        fault: Some(Fault::Stall {
            after_tokens: 2,
            every: 2,
        }),
        ..MockConfig::default()
    })
    .unwrap();
    let mut spec = spec(
        &server.url(),
        Scenario::Concurrency { n: 2 },
        Duration::from_secs(10),
        6,
    );
    spec.options.timeout = Duration::from_millis(300);
    let result = run(&spec, &Stop::new()).unwrap();
    let s = &result.steps[0].summary;
    assert_eq!((s.succeeded, s.failed), (3, 3), "{:?}", s.errors);
    let timeout = &s.errors[&ErrorKind::Timeout];
    assert!(
        timeout.example.contains("2 tokens received"),
        "{}",
        timeout.example
    );
    let stalled = result.steps[0]
        .records
        .iter()
        .find(|r| r.error.is_some())
        .unwrap();
    assert!(
        stalled.latency >= 0.3 && stalled.latency < 1.0,
        "{}",
        stalled.latency
    );
}

#[test]
fn malformed_events_are_counted() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        fault: Some(Fault::Malformed {
            after_tokens: 1,
            every: 2,
        }),
        ..MockConfig::default()
    })
    .unwrap();
    let result = run(
        &spec(&server.url(), Scenario::Offline, Duration::ZERO, 10),
        &Stop::new(),
    )
    .unwrap();
    let s = &result.steps[0].summary;
    assert_eq!((s.succeeded, s.failed), (5, 5), "{:?}", s.errors);
    assert!(s.errors[&ErrorKind::Malformed].example.contains("not JSON"));
}

#[test]
fn an_answer_that_is_not_a_stream_is_counted_as_malformed_and_says_why() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        fault: Some(Fault::Unstreamed { every: 2 }),
        ..MockConfig::default()
    })
    .unwrap();
    let result = run(
        &spec(&server.url(), Scenario::Offline, Duration::ZERO, 6),
        &Stop::new(),
    )
    .unwrap();
    let s = &result.steps[0].summary;
    assert_eq!((s.succeeded, s.failed), (3, 3), "{:?}", s.errors);
    let malformed = &s.errors[&ErrorKind::Malformed];
    assert!(
        malformed
            .example
            .starts_with("the answer is application/json, not a stream of events"),
        "{}",
        malformed.example
    );
}

#[test]
fn a_server_that_dies_mid_run_keeps_what_was_measured() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(5),
        gap: Duration::from_millis(2),
        output_tokens: 8,
        fault: Some(Fault::DieAfter { requests: 10 }),
        ..MockConfig::default()
    })
    .unwrap();
    let result = run(
        &spec(
            &server.url(),
            Scenario::Server { rate: 40.0 },
            Duration::from_secs(1),
            usize::MAX,
        ),
        &Stop::new(),
    )
    .unwrap();
    let step = &result.steps[0];
    let s = &step.summary;
    assert!(s.requests > 20, "{}", s.requests);
    assert!(s.succeeded >= 5 && s.succeeded < 10, "{}", s.succeeded);
    assert_eq!(s.succeeded + s.failed, s.requests);
    assert!(s.errors.contains_key(&ErrorKind::Connect), "{:?}", s.errors);
    let failure = result.failure().unwrap();
    assert!(failure.contains(&server.url()), "{failure}");
}

#[test]
fn connection_refused_at_the_start_names_the_endpoint() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let err = run(
        &spec(&url, Scenario::Offline, Duration::ZERO, 1),
        &Stop::new(),
    )
    .unwrap_err();
    assert!(matches!(err, LoadError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("refused"), "{cause}");
}

#[test]
fn a_sweep_reports_the_highest_rate_that_held() {
    // One answer at a time, 24 ms each: about 40 requests/s at most.
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(10),
        gap: Duration::from_millis(2),
        output_tokens: 8,
        capacity: Some(1),
        ..MockConfig::default()
    })
    .unwrap();
    let mut spec = spec(
        &server.url(),
        Scenario::Sweep {
            start: 5.0,
            factor: 2.0,
            steps: 6,
        },
        Duration::from_secs(2),
        usize::MAX,
    );
    spec.slo = Some(Slo::parse("ttft=40ms").unwrap());
    let result = run(&spec, &Stop::new()).unwrap();
    let held = result.highest_held_rate.unwrap();
    assert!((5.0..=20.0).contains(&held), "{held}");
    let last = result.steps.last().unwrap();
    assert!(!last.held);
    assert!(result.steps.len() >= 2);
    assert!(result.failure().is_none(), "{:?}", result.failure());
}

/// A run stopped early (Ctrl-C, the orchestrator's SIGTERM, the server gone) returns at once
/// with every request that completed, and says why it ended.
#[test]
fn a_stopped_run_keeps_what_it_measured() {
    let server = MockServer::start(MockConfig::default()).unwrap();
    for scenario in [
        Scenario::Server { rate: 40.0 },
        Scenario::Concurrency { n: 4 },
    ] {
        let stop = Stop::new();
        let trigger = stop.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            trigger.trigger("interrupted");
        });
        let begin = std::time::Instant::now();
        let result = run(
            &spec(&server.url(), scenario, Duration::from_secs(60), 5000),
            &stop,
        )
        .unwrap();
        stopper.join().unwrap();
        assert!(begin.elapsed() < Duration::from_secs(5), "{scenario:?}");
        let s = &result.steps[0].summary;
        assert!(s.succeeded >= 5, "{scenario:?}: {}", s.succeeded);
        assert_eq!(s.failed, 0, "{scenario:?}: {:?}", s.errors);
        assert_eq!(result.stopped.as_deref(), Some("interrupted"));
        let failure = result.failure().expect("a stopped run is not a success");
        assert!(failure.contains("ended early: interrupted"), "{failure}");
    }
}

#[test]
fn health_and_model_list_answer_at_once_and_are_not_counted_as_requests() {
    use std::io::{Read as _, Write as _};
    let server = MockServer::start(MockConfig::default()).unwrap();
    let address = server.url().trim_start_matches("http://").to_owned();
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: mock\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        // The server keeps the connection open: read the headers and the announced body.
        let mut answer = Vec::new();
        let mut byte = [0; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            answer.push(byte[0]);
        }
        let head = String::from_utf8(answer).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut body = vec![0; length];
        stream.read_exact(&mut body).unwrap();
        (head, String::from_utf8(body).unwrap())
    };
    let (head, body) = get("/health");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "{}");
    let (_, models) = get("/v1/models");
    let models: serde_json::Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["data"][0]["id"], "mock");
    assert_eq!(server.requests(), 0);
}

/// A server whose answers are `events`, one per `gap` after `ttft`; the run sends `requests`
/// chat requests at once and asks for the default 16 tokens.
fn scripted_run(events: &'static [&'static str], requests: usize) -> milabench_load::Step {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(2),
        fault: Some(Fault::Events(events)),
        ..MockConfig::default()
    })
    .unwrap();
    let mut spec = spec(&server.url(), Scenario::Offline, Duration::ZERO, requests);
    spec.options.api = Api::Chat;
    let mut result = run(&spec, &Stop::new()).unwrap();
    result.steps.remove(0)
}

/// `requests` offline requests to a mock server of 2 ms TTFT and 1 ms gaps with `fault`.
fn offline_with_fault(fault: Fault, requests: usize) -> milabench_load::LoadResult {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        fault: Some(fault),
        ..MockConfig::default()
    })
    .unwrap();
    run(
        &spec(&server.url(), Scenario::Offline, Duration::ZERO, requests),
        &Stop::new(),
    )
    .unwrap()
}

#[test]
fn a_body_closed_short_of_its_end_counts_as_disconnected() {
    // HTTP/1.0: the body ends with the connection, after 3 of the 16 tokens asked for.
    let result = offline_with_fault(Fault::CloseAfter { tokens: 3 }, 3);
    let s = &result.steps[0].summary;
    assert_eq!((s.succeeded, s.failed), (0, 3), "{:?}", s.errors);
    let cut = &s.errors[&ErrorKind::Disconnected];
    assert!(
        cut.example
            .contains("after 3 tokens: the body ended without `[DONE]`"),
        "{}",
        cut.example
    );
    // Every token asked for came: the answer is whole without its `[DONE]`.
    let result = offline_with_fault(Fault::CloseAfter { tokens: 16 }, 2);
    let s = &result.steps[0].summary;
    assert_eq!((s.succeeded, s.output_tokens), (2, 32), "{:?}", s.errors);
}

const TOKEN: &str = "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"t\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

#[test]
fn a_usage_the_token_events_contradict_is_warned_about_once() {
    const INFLATED: &[&str] = &[
        TOKEN,
        TOKEN,
        TOKEN,
        TOKEN,
        "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 1000}}\n\n",
        DONE,
    ];
    let step = scripted_run(INFLATED, 2);
    let s = &step.summary;
    assert_eq!((s.succeeded, s.output_tokens), (2, 2000), "{:?}", s.errors);
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].starts_with("2 requests: the server's usage counted more than 16")
            && s.warnings[0].contains("(first: 1000 tokens in 4 events)"),
        "{}",
        s.warnings[0]
    );
    // Fewer tokens than events cannot be: the events are counted.
    const SHORT: &[&str] = &[
        TOKEN,
        TOKEN,
        TOKEN,
        "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 1}}\n\n",
        DONE,
    ];
    let s = scripted_run(SHORT, 2).summary;
    assert_eq!(s.output_tokens, 6);
    assert!(
        s.warnings.len() == 1 && s.warnings[0].contains("fewer completion tokens"),
        "{:?}",
        s.warnings
    );
    // A count past 2^32 saturates rather than wraps (to 5, here).
    const HUGE: &[&str] = &[
        TOKEN,
        TOKEN,
        "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 4294967297, \"completion_tokens\": 4294967301}}\n\n",
        DONE,
    ];
    let step = scripted_run(HUGE, 1);
    let r = &step.records[0];
    assert_eq!(
        (r.output_tokens, r.input_tokens),
        (u32::MAX, Some(u32::MAX))
    );
    assert_eq!(step.summary.warnings.len(), 1);
}

#[test]
fn reasoning_deltas_are_generated_tokens_and_the_text_has_its_own_ttft() {
    const REASONING: &str =
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"reasoning_content\": \"hm\"}}]}\n\n";
    const EVENTS: &[&str] = &[
        REASONING,
        REASONING,
        REASONING,
        TOKEN,
        TOKEN,
        "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 5}}\n\n",
        DONE,
    ];
    let step = scripted_run(EVENTS, 1);
    let r = &step.records[0];
    assert!(r.ok(), "{:?}", r.error);
    assert_eq!((r.output_tokens, r.itl.len()), (5, 4));
    assert!(r.usage_mismatch.is_none());
    let (ttft, text) = (r.ttft.unwrap(), r.content_ttft.unwrap());
    // The text's first token is the fourth token event.
    let fourth = ttft + r.itl[..3].iter().sum::<f64>();
    assert!(
        (text - fourth).abs() < 1e-6,
        "ttft {ttft}, text {text}, {:?}",
        r.itl
    );
    assert!(text > ttft);
    let s = &step.summary;
    assert_eq!(s.content_ttft.as_ref().map(|l| l.count), Some(1));
    // TPOT spreads the time after the first generated token over the tokens after it.
    let tpot = r.tpot().unwrap();
    assert!((tpot - (r.latency - ttft) / 4.0).abs() < 1e-12);
}

#[test]
fn a_byte_order_mark_cr_line_ends_and_other_event_types_are_read_as_the_spec_says() {
    const EVENTS: &[&str] = &[
        "\u{feff}data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"t\"}}]}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"t\"}}]}\r\r",
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"t\"}}]}\r",
        "\rdata: [DONE]\r\r",
    ];
    let step = scripted_run(EVENTS, 2);
    let s = &step.summary;
    assert_eq!(s.failed, 0, "{:?}", s.errors);
    for r in &step.records {
        // Three tokens: the first, behind the byte order mark, is not lost.
        assert_eq!((r.output_tokens, r.itl.len()), (3, 2));
    }
    assert!(s.content_ttft.is_none());
}

#[test]
fn a_line_that_never_ends_fails_its_request_at_the_cap() {
    let server = MockServer::start(MockConfig {
        fault: Some(Fault::EndlessLine),
        ..MockConfig::default()
    })
    .unwrap();
    let result = run(
        &spec(&server.url(), Scenario::Offline, Duration::ZERO, 2),
        &Stop::new(),
    )
    .unwrap();
    let s = &result.steps[0].summary;
    assert_eq!(s.failed, 2, "{:?}", s.errors);
    let malformed = &s.errors[&ErrorKind::Malformed];
    assert!(
        malformed.example.contains("longer than 16 MiB"),
        "{}",
        malformed.example
    );
}

#[test]
fn a_timeout_or_duration_past_what_the_clock_counts_has_no_end() {
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(2),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        ..MockConfig::default()
    })
    .unwrap();
    for timeout in [
        Duration::from_secs(10_000_000_000_000_000_000),
        Duration::from_secs(1 << 40),
        Duration::MAX,
    ] {
        let mut spec = spec(&server.url(), Scenario::Offline, Duration::ZERO, 2);
        spec.options.timeout = timeout;
        let result = run(&spec, &Stop::new()).unwrap();
        let s = &result.steps[0].summary;
        assert_eq!(
            (s.requests, s.succeeded),
            (2, 2),
            "{timeout:?}: {:?}",
            s.errors
        );
    }
    // So is a concurrency run's duration: the requests end it.
    let spec = spec(
        &server.url(),
        Scenario::Concurrency { n: 2 },
        Duration::MAX,
        4,
    );
    let result = run(&spec, &Stop::new()).unwrap();
    assert_eq!(result.steps[0].summary.succeeded, 4);
}

/// A server on loopback that answers the first bytes of every connection with `answer` and
/// closes it; its `HOST:PORT`.
fn canned_server(answer: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(answer);
        }
    });
    authority
}

#[test]
fn the_wrong_scheme_is_named_rather_than_certificates() {
    // A plain HTTP server answers the TLS handshake with an HTTP error.
    let plain = canned_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    let spec = spec(
        &format!("https://{plain}"),
        Scenario::Offline,
        Duration::ZERO,
        1,
    );
    let error = run(&spec, &Stop::new()).unwrap_err();
    assert!(matches!(error, LoadError::NotTls { .. }), "{error:?}");
    assert!(error.is_bad_input());
    assert!(
        error
            .to_string()
            .ends_with("the server does not speak TLS: use http://"),
        "{error}"
    );
    // A TLS server answers a plain request, and a handshake, with a TLS alert.
    let tls = canned_server(b"\x15\x03\x03\x00\x02\x02\x28");
    let spec = self::spec(
        &format!("http://{tls}"),
        Scenario::Offline,
        Duration::ZERO,
        1,
    );
    let error = run(&spec, &Stop::new()).unwrap_err();
    assert!(matches!(error, LoadError::SpeaksTls { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .ends_with("the server speaks TLS: use https://"),
        "{error}"
    );
}

/// Every streamed event names its `object` as OpenAI-style servers do (`text_completion` on the
/// completions route, `chat.completion.chunk` on chat): AIPerf, a peer in the load bench,
/// counts an event's content only when it is so named.
#[test]
fn streamed_events_name_their_object_on_each_route() {
    let server = MockServer::start(MockConfig::default()).unwrap();
    let address = server.url().trim_start_matches("http://").to_owned();
    for (path, object) in [
        ("/v1/completions", "text_completion"),
        ("/v1/chat/completions", "chat.completion.chunk"),
    ] {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        let body = r#"{"model": "mock", "prompt": "a", "stream": true}"#;
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // The server keeps the connection open: read until the stream's last event.
        let mut answer = Vec::new();
        let mut byte = [0; 1];
        while !answer.ends_with(b"data: [DONE]\n\n") {
            stream.read_exact(&mut byte).unwrap();
            answer.push(byte[0]);
        }
        let answer = String::from_utf8(answer).unwrap();
        let events: Vec<serde_json::Value> = answer
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|data| *data != "[DONE]")
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(events.len(), 17, "16 tokens and the usage: {answer}");
        for event in &events {
            assert_eq!(event["object"], object, "{path}: {event}");
        }
    }
}
