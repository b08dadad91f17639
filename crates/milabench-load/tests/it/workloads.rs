//! Each workload and arrival shape against the mock server, which keeps what it was sent: the
//! shape of the requests (prefix reuse, turns carrying the conversation, a file's prompts), of
//! their times (replayed, gamma gaps, a ramp-up), and an SLO search's result.

use std::collections::BTreeMap;
use std::time::Duration;

use milabench_load::mock::{self, MockConfig, MockServer};
use milabench_load::schedule::{ArrivalShape, gaps};
use milabench_load::workload::Workload;
use milabench_load::{LengthDist, LoadResult, LoadSpec, Scenario, Slo, Stop, run};

/// A quick mock server (answers of 4 tokens in about 4 ms) that keeps the bodies it receives.
fn server() -> MockServer {
    MockServer::start(MockConfig {
        ttft: Duration::from_millis(1),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        keep_bodies: true,
        ..MockConfig::default()
    })
    .unwrap()
}

/// The mock server's run of `workload` in `scenario`, at most `max_requests` in 10 s.
fn spec(server: &MockServer, workload: Workload, scenario: Scenario, max: usize) -> LoadSpec {
    LoadSpec {
        workload,
        max_requests: max,
        ..mock::load_spec(&server.url(), scenario, Duration::from_secs(10)).unwrap()
    }
}

/// Runs `spec` and checks every request succeeded.
fn run_ok(spec: &LoadSpec) -> LoadResult {
    let result = run(spec, &Stop::new()).unwrap();
    for step in &result.steps {
        assert_eq!(step.summary.failed, 0, "{:?}", step.summary.errors);
    }
    result
}

/// The `prompt` and `max_tokens` of each body the server received, in arrival order.
fn prompts(server: &MockServer) -> Vec<(String, u64)> {
    server
        .bodies()
        .iter()
        .map(|b| {
            let v: serde_json::Value = serde_json::from_str(b).unwrap();
            (
                v["prompt"].as_str().unwrap().to_owned(),
                v["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn shared_prefixes_are_reused_in_turn() {
    let server = server();
    let workload = Workload::SharedPrefix {
        input: LengthDist::Fixed(5),
        output: LengthDist::Fixed(3),
        prefix_tokens: 20,
        prefixes: 3,
    };
    run_ok(&spec(&server, workload, Scenario::Concurrency { n: 1 }, 12));
    let sent = prompts(&server);
    assert_eq!(sent.len(), 12);
    let mut uses: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (prompt, max_tokens)) in sent.iter().enumerate() {
        let words: Vec<&str> = prompt.split(' ').collect();
        assert_eq!((words.len(), *max_tokens), (25, 3), "{prompt}");
        uses.entry(words[..20].join(" ")).or_default().push(i);
    }
    // Three prefixes, prompt i with prefix i mod 3.
    let mut firsts: Vec<Vec<usize>> = uses.into_values().collect();
    firsts.sort();
    assert_eq!(firsts, [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]);
}

#[test]
fn each_turn_of_a_session_carries_the_conversation_so_far() {
    let server = server();
    let workload = Workload::Sessions {
        input: LengthDist::Fixed(4),
        output: LengthDist::Fixed(6),
        turns: 3,
    };
    run_ok(&spec(&server, workload, Scenario::Concurrency { n: 1 }, 6));
    let sent = prompts(&server);
    let lengths: Vec<usize> = sent.iter().map(|(p, _)| p.split(' ').count()).collect();
    // Each turn: the earlier questions (4 words) and answers (6 words), then 4 new words.
    assert_eq!(lengths, [4, 14, 24, 4, 14, 24]);
    for session in sent.chunks(3) {
        for turn in session.windows(2) {
            assert!(turn[1].0.starts_with(&turn[0].0), "{turn:?}");
        }
    }
    assert!(!sent[3].0.starts_with(&sent[0].0));
}

#[test]
fn a_sharegpt_file_gives_its_first_human_turns_and_answer_lengths() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharegpt.json");
    std::fs::write(
        &path,
        r#"[{"id": "a", "conversations": [{"from": "human", "value": "why is the sky blue"},
                                          {"from": "gpt", "value": "light scatters off air"}]},
            {"id": "b", "conversations": [{"from": "gpt", "value": "hello"}]},
            {"id": "c", "conversations": [{"from": "human", "value": "hi"}]}]"#,
    )
    .unwrap();
    let workload = Workload::from_file(&path).unwrap();
    run_ok(&spec(&server, workload, Scenario::Concurrency { n: 1 }, 3));
    // The conversation without a human turn is left out; one without an answer gets the
    // default length (16).
    assert_eq!(
        prompts(&server),
        [
            ("why is the sky blue".to_owned(), 4),
            ("hi".to_owned(), 16),
            ("why is the sky blue".to_owned(), 4)
        ]
    );
}

#[test]
fn a_trace_is_replayed_at_its_times_with_its_lengths() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(
        &path,
        "{\"timestamp\": 1000, \"input_length\": 7, \"output_length\": 2}\n\
         {\"timestamp\": 1150, \"input_length\": 3, \"output_length\": 5}\n\n\
         {\"timestamp\": 1400, \"input_tokens\": 9, \"output_tokens\": 1}\n",
    )
    .unwrap();
    let workload = Workload::from_trace(&path).unwrap();
    let result = run_ok(&spec(&server, workload, Scenario::Replay, usize::MAX));
    let records = &result.steps[0].records;
    let scheduled: Vec<f64> = records.iter().map(|r| r.scheduled).collect();
    assert_eq!(scheduled.len(), 3);
    for (got, want) in scheduled.iter().zip([0.0, 0.15, 0.4]) {
        assert!((got - want).abs() < 1e-9, "{scheduled:?}");
    }
    for r in records {
        assert!(
            (r.sent - r.scheduled).abs() < 0.02,
            "{} vs {}",
            r.sent,
            r.scheduled
        );
    }
    let mut sent: Vec<(usize, u64)> = prompts(&server)
        .iter()
        .map(|(p, m)| (p.split(' ').count(), *m))
        .collect();
    sent.sort();
    assert_eq!(sent, [(3, 5), (7, 2), (9, 1)]);
    // Out of order, the trace names the fix.
    std::fs::write(
        &path,
        "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n\
         {\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1}\n",
    )
    .unwrap();
    let err = Workload::from_trace(&path).unwrap_err().to_string();
    assert!(err.contains("sort the trace by timestamp"), "{err}");
    // Replay needs a trace.
    let synthetic = mock::load_spec(&server.url(), Scenario::Replay, Duration::from_secs(1));
    let err = run(&synthetic.unwrap(), &Stop::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("--trace"), "{err}");
}

/// Send times of a 2 s server run at 200 requests/s with `shape`.
fn send_times(shape: ArrivalShape) -> Vec<f64> {
    let server = server();
    let mut spec = spec(
        &server,
        mock::load_spec(&server.url(), Scenario::Offline, Duration::ZERO)
            .unwrap()
            .workload,
        Scenario::Server { rate: 200.0 },
        usize::MAX,
    );
    spec.duration = Duration::from_secs(2);
    spec.arrivals = shape;
    let result = run_ok(&spec);
    assert!(result.steps[0].summary.arrivals.is_none() || shape.is_poisson());
    result.steps[0].records.iter().map(|r| r.sent).collect()
}

#[test]
fn bursty_arrivals_spread_more_and_a_ramp_starts_slow() {
    let bursty = send_times(ArrivalShape {
        burstiness: 0.25,
        ramp_up: Duration::ZERO,
    });
    let g = gaps(&bursty);
    let mean = g.iter().sum::<f64>() / g.len() as f64;
    let sd = (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64).sqrt();
    // Gamma of shape 1/4: coefficient of variation 2 (Poisson's is 1).
    assert!(sd / mean > 1.5, "cv {}", sd / mean);
    let ramped = send_times(ArrivalShape {
        burstiness: 1.0,
        ramp_up: Duration::from_secs(1),
    });
    let within = |a: f64, b: f64| ramped.iter().filter(|&&t| a <= t && t < b).count();
    // 25 expected in the first half second, 100 in the last.
    assert!(within(0.0, 0.5) * 2 < within(1.5, 2.0), "{ramped:?}");
}

#[test]
fn an_slo_search_finds_the_rate_with_an_interval() {
    // One answer at a time, 24 ms each: about 40 requests/s at most.
    let server = MockServer::start(MockConfig {
        ttft: Duration::from_millis(10),
        gap: Duration::from_millis(2),
        output_tokens: 8,
        capacity: Some(1),
        ..MockConfig::default()
    })
    .unwrap();
    let mut spec = mock::load_spec(
        &server.url(),
        Scenario::SloSearch {
            low: 2.0,
            high: 200.0,
            steps: 3,
            repeats: 2,
        },
        Duration::from_millis(700),
    )
    .unwrap();
    // Loose enough for the lowest rate to hold on a busy machine.
    spec.slo = Some(Slo::parse("ttft=100ms").unwrap());
    let result = run(&spec, &Stop::new()).unwrap();
    // Two searches of a run at the low rate and three bisections each.
    assert_eq!(result.steps.len(), 8);
    let search = result.slo_search.as_ref().unwrap();
    assert_eq!(search.rates.len(), 2);
    assert!(
        search.rates.iter().all(|r| (5.0..=60.0).contains(r)),
        "{search:?}"
    );
    let milabench_load::Interval { low, high } = search.interval.unwrap();
    assert!(low <= search.rate && search.rate <= high, "{search:?}");
    assert!(result.sweep);
    // Without bounds to hold, the search says what to give.
    spec.slo = None;
    let err = run(&spec, &Stop::new()).unwrap_err().to_string();
    assert!(err.contains("--slo"), "{err}");
}
