//! `milabench load` against the load generator's mock server on loopback.

use std::process::Command;
use std::time::Duration;

use milabench_load::mock::{Fault, MockConfig, MockServer};
use serde_json::Value;

use crate::common::{LoggedChild, milabench, run};

fn quick_server(fault: Option<Fault>) -> MockServer {
    MockServer::start(MockConfig {
        ttft: Duration::from_millis(5),
        gap: Duration::from_millis(1),
        output_tokens: 4,
        fault,
        ..MockConfig::default()
    })
    .unwrap()
}

#[test]
fn load_reports_json_and_writes_a_run_folder_that_report_reads() {
    let server = quick_server(None);
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs/one");
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "server",
        "--rate",
        "40",
        "--duration",
        "1s",
        "--slo",
        "ttft=500ms,tpot=50ms",
        "--format",
        "json",
        "--run-dir",
        runs.to_str().unwrap(),
        "--name",
        "llm-mock",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let summary = &json["steps"][0]["summary"];
    assert!(summary["requests"].as_u64().unwrap() > 10);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["slo_attainment"], 1.0);
    let ttft = summary["ttft"]["p50"]["value"].as_f64().unwrap();
    assert!((ttft - 0.005).abs() < 0.003, "{ttft}");
    assert!(json["failure"].is_null());
    // The output says how its numbers were measured (issue 52, item 2), a key of the summary
    // each: TPOT without and with the first token, tokens from usage or the stream, TTFT to
    // which token, latency from which send time.
    for (key, words) in [
        ("tpot", "without the first"),
        ("tpot_with_first", "with the first"),
        ("output_tokens", "usage"),
        ("ttft", "of any kind"),
        ("content_ttft", "answer's text"),
        ("ttft_from_schedule", "scheduled send time"),
    ] {
        let text = json["definitions"][key].as_str().unwrap_or_default();
        assert!(text.contains(words), "{key}: {words} in {text:?}");
        assert!(
            key == "output_tokens" || !summary[key].is_null() || key == "content_ttft",
            "{key} is a key of the summary"
        );
    }
    // The run folder reads as any benchmark's: its perf is the output-token throughput.
    let report = run(milabench(dir.path()).args([
        "report",
        "--runs",
        runs.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let rows: Value = serde_json::from_str(&report.stdout).unwrap();
    let text = rows.to_string();
    assert!(text.contains("llm-mock"), "{text}");
}

#[test]
fn load_counts_http_errors_and_exits_1() {
    let server = quick_server(Some(Fault::Status {
        code: 429,
        every: 2,
    }));
    let dir = tempfile::tempdir().unwrap();
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "offline",
        "--requests",
        "6",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("6 sent, 3 succeeded, 3 failed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("errors: 3 http (first: HTTP 429"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("FAILED: 3 of 6 requests failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn load_names_an_endpoint_that_refuses() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let out = run(milabench(dir.path()).args(["load", "--endpoint", &url, "--model", "m"]));
    // A server that is not there is an environment failure, not bad input: exit 3.
    assert_eq!(out.code, 3);
    insta::assert_snapshot!(out.stderr.replace(&port.to_string(), "[PORT]"), @r"
    error: cannot connect to http://127.0.0.1:[PORT]: is the server running and listening there?
      caused by: Connection refused (os error 111)
    ");
}

#[test]
fn load_rejects_bad_flags_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        run(milabench(dir.path()).args(["load", "--endpoint", "localhost:8000", "--model", "m"]));
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid endpoint `localhost:8000`: write it as http://HOST:PORT");
    let with_server_flags = |flags: &[&str]| {
        run(milabench(dir.path())
            .args(["load", "--endpoint", "http://127.0.0.1:9", "--model", "m"])
            .args(flags))
    };
    let out = with_server_flags(&["--slo", "ttfb=1s"]);
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid --slo: `ttfb` is not a bound of the SLO: use ttft, tpot or e2e");
    for (flag, value) in [
        ("--rate", "0"),
        ("--sweep-factor", "1"),
        ("--concurrency", "0"),
    ] {
        let out = with_server_flags(&[flag, value]);
        assert_eq!(out.code, 2, "{flag}");
        assert!(
            out.stderr
                .contains(&format!("invalid value '{value}' for '{flag} ")),
            "{}",
            out.stderr
        );
    }
}

/// The stand-in streaming server of `tests/fixtures/serving` and `python3 SCRIPT` to start it.
fn fake_server(args: &[&str]) -> Vec<String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/serving/fake_server.py"
    );
    let mut argv = vec!["python3".to_string(), script.to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// Whether process `pid` is still running (a zombie awaiting its reaper is not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| rest.to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

#[test]
fn load_starts_its_server_measures_it_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let log = dir.path().join("server.log");
    let mut cmd = milabench(dir.path());
    cmd.args([
        "load",
        "--model",
        "m",
        "--scenario",
        "server",
        "--rate",
        "20",
        "--duration",
        "1s",
        "--output-tokens",
        "4",
        "--format",
        "json",
        "--server-log",
        log.to_str().unwrap(),
        "--",
    ])
    .args(fake_server(&["--pid-file", pid_file.to_str().unwrap()]));
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let summary = &json["steps"][0]["summary"];
    assert!(summary["succeeded"].as_u64().unwrap() > 5, "{summary}");
    assert_eq!(summary["failed"], 0);
    assert!(
        json["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    let server_said = std::fs::read_to_string(&log).unwrap();
    assert!(
        server_said.contains("fake server: listening on 127.0.0.1"),
        "{server_said}"
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(!running(&pid), "the server {pid} was left running");
}

#[test]
fn load_says_when_its_server_exits_before_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = milabench(dir.path());
    cmd.args(["load", "--model", "m", "--duration", "1s", "--"])
        .args(fake_server(&["--exit-at-start", "3"]));
    let out = run(&mut cmd);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("the server exited (status 3)")
            && out.stderr.contains("before it was ready"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("fake server: failing at start"),
        "{}",
        out.stderr
    );
}

#[test]
fn load_keeps_what_it_measured_when_its_server_dies_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs/one");
    let mut cmd = milabench(dir.path());
    cmd.args([
        "load",
        "--model",
        "m",
        "--rate",
        "40",
        "--duration",
        "20s",
        "--output-tokens",
        "4",
        "--run-dir",
        runs.to_str().unwrap(),
        "--",
    ])
    .args(fake_server(&["--die-after", "10"]));
    let begin = std::time::Instant::now();
    let out = run(&mut cmd);
    assert!(
        begin.elapsed() < Duration::from_secs(15),
        "the run did not end early"
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("the run ended early: the server exited (status 9)"),
        "{}",
        out.stdout
    );
    let data = std::fs::read_to_string(runs.join("load.data")).unwrap();
    let answered = data
        .lines()
        .filter(|l| l.contains("\"task\": \"request\"") || l.contains("\"task\":\"request\""))
        .filter(|l| !l.contains("\"error\""))
        .count();
    assert_eq!(answered, 10, "{data}");
}

#[test]
fn load_needs_an_endpoint_or_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(milabench(dir.path()).args(["load", "--model", "m"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--endpoint"), "{}", out.stderr);
}

/// A suite's serving benchmark (launcher `load`) runs `milabench load` around its server under
/// the orchestrator: its results land in the run folder as any benchmark's, its server's output
/// is kept, and the report shows its output-token rate.
#[test]
fn a_serving_benchmark_runs_in_a_suite_and_reports_a_rate() {
    let project = crate::run::Project::new(
        "\
serve:
  inherits: _defaults
  install_group: tiny
  definition: benchmarks/serve
  tags: [monogpu]
  weight: 1
  max_duration: 60
  argv: {--model: m, --scenario: server, --rate: 20, --duration: 2s, --output-tokens: 4}
  server: {argv: [--tokens, 4]}
",
    );
    let folder = project.path().join("benchmarks/serve");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/serving/fake_server.py"
        ),
        folder.join("fake_server.py"),
    )
    .unwrap();
    std::fs::write(
        folder.join("benchfile.yaml"),
        "launcher: load\nserver: [fake_server.py]\n",
    )
    .unwrap();
    let out = run(&mut project.run_command(&["--run-name", "serving"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("serve"), "{}", out.stdout);
    let data = project.data_file("serving", "serve.D0");
    let requests = data.lines().filter(|l| l.contains("\"request\"")).count();
    assert!(requests > 10, "{data}");
    assert!(
        data.contains("\"load\""),
        "the step summary is recorded: {data}"
    );
    assert!(data.contains("tokens/s"), "{data}");
    assert!(
        data.contains("fake server: listening on 127.0.0.1"),
        "the server's output is kept with the run: {data}"
    );
}

/// An https endpoint: the certificate is verified against the system's authorities and
/// `--ca-cert`'s; one signed by a private authority is refused without `--ca-cert`, with the
/// reason.
#[test]
fn load_measures_an_https_endpoint_and_verifies_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (ca, cert, key) = (path("ca.pem"), path("cert.pem"), path("key.pem"));
    std::fs::write(path("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    // A private authority, and the server's certificate it signed.
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=test-ca",
            "-keyout",
            &path("ca.key"),
            "-out",
            &ca,
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &key,
            "-out",
            &path("req.csr"),
        ],
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            &path("req.csr"),
            "-CA",
            &ca,
            "-CAkey",
            &path("ca.key"),
            "-CAcreateserial",
            "-extfile",
            &path("san.ext"),
            "-out",
            &cert,
        ],
    ];
    for step in steps {
        let made = std::process::Command::new("openssl")
            .args(step)
            .output()
            .expect("the openssl program makes the test certificates (apt-get install openssl)");
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    let port = milabench_load::server::free_port().unwrap().to_string();
    let argv = fake_server(&[
        "--port",
        &port,
        "--start-delay",
        "0",
        "--certfile",
        &cert,
        "--keyfile",
        &key,
    ]);
    let mut server = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let url = format!("https://127.0.0.1:{port}");
    let load = |extra: &[&str]| {
        let mut cmd = milabench(dir.path());
        cmd.args([
            "load",
            "--endpoint",
            &url,
            "--model",
            "m",
            "--scenario",
            "offline",
        ])
        .args([
            "--requests",
            "5",
            "--output-tokens",
            "4",
            "--format",
            "json",
        ])
        .args(extra);
        run(&mut cmd)
    };
    let trusted = load(&["--ca-cert", &ca]);
    let untrusted = load(&[]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let json: Value = serde_json::from_str(&trusted.stdout).unwrap();
    assert_eq!(json["steps"][0]["summary"]["succeeded"], 5, "{json}");
    assert_ne!(untrusted.code, 0, "a private authority must not be trusted");
    assert!(
        untrusted.stderr.contains("TLS with https://127.0.0.1")
            && untrusted.stderr.contains("--ca-cert")
            && untrusted.stderr.contains("UnknownIssuer"),
        "{}",
        untrusted.stderr
    );
}

/// `milabench load --model m` with `flags`, then the fake server with `server_flags` after `--`.
fn load_with_server(dir: &std::path::Path, flags: &[&str], server_flags: &[&str]) -> Command {
    let mut cmd = milabench(dir);
    cmd.args(["load", "--model", "m"])
        .args(flags)
        .arg("--")
        .args(fake_server(server_flags));
    cmd
}

#[test]
fn load_checks_its_run_dir_before_sending_and_never_appends_a_second_run() {
    let server = quick_server(None);
    let dir = tempfile::tempdir().unwrap();
    let offline = |run_dir: &std::path::Path, requests: &str| {
        run(milabench(dir.path()).args([
            "load",
            "--endpoint",
            &server.url(),
            "--model",
            "m",
            "--scenario",
            "offline",
            "--requests",
            requests,
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]))
    };
    // A folder that cannot be made is found before any request, not after the run.
    let regular = dir.path().join("regular");
    std::fs::write(&regular, "").unwrap();
    let out = offline(&regular.join("run"), "5");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot create --run-dir") && out.stderr.contains("run"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests(), 0, "requests were sent into a lost run");
    // A second run into the same folder is refused: the first run's file stays readable.
    let runs = dir.path().join("runs");
    assert_eq!(offline(&runs, "5").code, 0);
    let first = std::fs::read_to_string(runs.join("load.data")).unwrap();
    let sent = server.requests();
    let out = offline(&runs, "10");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("load.data already holds the results of a run")
            && out.stderr.contains("another --run-dir or --name"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests(), sent);
    assert_eq!(
        std::fs::read_to_string(runs.join("load.data")).unwrap(),
        first
    );
    let report = run(milabench(dir.path()).args(["report", "--runs", runs.to_str().unwrap()]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    // A run that fails before measuring leaves no empty results file behind.
    let refused = dir.path().join("refused");
    let port = milabench_load::server::free_port().unwrap();
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--run-dir",
        refused.to_str().unwrap(),
    ]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(!refused.join("load.data").exists());
}

#[test]
fn load_fails_a_schedule_without_arrival_in_its_window() {
    let server = quick_server(None);
    let dir = tempfile::tempdir().unwrap();
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "m",
        "--rate",
        "0.1",
        "--duration",
        "1s",
        "--seed",
        "1",
    ]));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("requests: 0 sent"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("FAILED: no request was sent: the schedule had no arrival in the window"),
        "{}",
        out.stdout
    );
}

#[test]
fn load_refuses_durations_and_slos_it_cannot_use_with_the_flag_named() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // Every flag is checked before the server is started.
    for (flags, says) in [
        (
            &["--slo", "ttft=500ms,ttft=1s"][..],
            "invalid --slo: `ttft` is bounded twice",
        ),
        (
            &["--slo", "ttft=0"],
            "invalid --slo: `ttft=0`: no request can meet a bound of 0",
        ),
        (
            &["--slo", "ttft=fast"],
            "invalid --slo: `fast` is not a duration",
        ),
        (&["--slo", "ttft=-5ms"], "a duration cannot be negative"),
        (
            &["--slo", "e2e=99999999999999999999h"],
            "longer than the longest duration accepted",
        ),
        (
            &["--duration", "99999999999999999999h"],
            "for '--duration <DURATION>': `99999999999999999999h` is longer than",
        ),
        (
            &["--timeout", "10000000000000000000s"],
            "for '--timeout <TIMEOUT>': `10000000000000000000s` is longer than",
        ),
        (
            &["--scenario", "concurrency", "--duration", "1e19s"],
            "for '--duration <DURATION>'",
        ),
        (
            &["--duration", "-1s"],
            "for '--duration <DURATION>': `-1s`: a duration cannot be negative",
        ),
        (
            &["--prompts", "/no/such/prompts.jsonl"],
            "prompts file /no/such/prompts.jsonl",
        ),
        (
            &["--scenario", "slo-search", "--slo", "ttft=1s"],
            "invalid --scenario slo-search: it needs the highest rate to try; give --max-rate RATE",
        ),
        (
            &["--scenario", "slo-search", "--max-rate", "50"],
            "an SLO search needs the bounds to hold: give --slo ttft=...,tpot=...",
        ),
        (
            &[
                "--scenario",
                "slo-search",
                "--max-rate",
                "5",
                "--slo",
                "ttft=1s",
            ],
            "an SLO search needs a low rate above 0 below its high rate",
        ),
        (
            &["--scenario", "replay"],
            "the replay scenario sends a trace's requests: give --trace FILE",
        ),
        (
            &["--trace", "/no/such/trace.jsonl"],
            "trace /no/such/trace.jsonl",
        ),
        (
            &["--burstiness", "0"],
            "invalid value '0' for '--burstiness <BURSTINESS>'",
        ),
        (
            &["--prefix-tokens", "8", "--turns", "2"],
            "cannot be used with",
        ),
        (
            &["--input-tokens", "uniform:10:5"],
            "invalid --input-tokens: `uniform:10:5`: the low end is above the high end",
        ),
        (
            &["--server-log", "/dev/null/log"],
            "cannot open --server-log /dev/null/log: ",
        ),
    ] {
        let out = run(&mut load_with_server(
            dir.path(),
            flags,
            &["--pid-file", pid_file.to_str().unwrap()],
        ));
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{flags:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert!(!pid_file.exists(), "{flags:?}: the server was started");
    }
}

#[test]
fn load_asks_a_server_on_the_port_its_command_names() {
    let dir = tempfile::tempdir().unwrap();
    let port = milabench_load::server::free_port().unwrap().to_string();
    let begin = std::time::Instant::now();
    let out = run(&mut load_with_server(
        dir.path(),
        &[
            "--scenario",
            "offline",
            "--requests",
            "2",
            "--format",
            "json",
        ],
        &["--port", &port],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(begin.elapsed() < Duration::from_secs(20));
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["endpoint"], format!("http://127.0.0.1:{port}"));
    assert_eq!(json["steps"][0]["summary"]["succeeded"], 2, "{json}");
}

#[test]
fn load_keeps_stdout_json_when_its_server_logs_there_and_stops_its_detached_children() {
    let dir = tempfile::tempdir().unwrap();
    let child_file = dir.path().join("child.pid");
    let out = run(&mut load_with_server(
        dir.path(),
        &[
            "--scenario",
            "offline",
            "--requests",
            "3",
            "--output-tokens",
            "4",
            "--format",
            "json",
        ],
        &[
            "--log-stdout",
            "--detached-child",
            child_file.to_str().unwrap(),
        ],
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", out.stdout));
    assert_eq!(json["steps"][0]["summary"]["succeeded"], 3);
    assert!(
        out.stderr.contains("INFO fake server: ready on"),
        "the server's stdout goes to stderr: {}",
        out.stderr
    );
    let child = std::fs::read_to_string(&child_file).unwrap();
    assert!(
        !running(&child),
        "the detached child {child} was left running"
    );
}

#[test]
fn load_says_a_server_up_but_not_ready_with_its_last_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&mut load_with_server(
        dir.path(),
        &["--ready-timeout", "1s"],
        &["--start-delay", "60"],
    ));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("the server is up but not ready")
            && out
                .stderr
                .contains("/health still answered HTTP 503 after 1 s"),
        "{}",
        out.stderr
    );
}

#[test]
fn ctrl_c_while_the_server_starts_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let mut milabench = LoggedChild::spawn(&mut load_with_server(
        dir.path(),
        &[],
        &[
            "--start-delay",
            "60",
            "--pid-file",
            pid_file.to_str().unwrap(),
        ],
    ));
    milabench.wait_for("the server's pid file", Duration::from_secs(20), || {
        pid_file.exists()
    });
    milabench.signal("-INT");
    let out = milabench.end_within(Duration::from_secs(40));
    let stderr = out.stderr;
    assert_eq!(out.code, 130, "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(!running(&pid), "the server {pid} was left running");
}

#[test]
fn load_reads_the_endpoint_as_written_and_says_what_is_wrong_with_it() {
    let server = quick_server(None);
    let dir = tempfile::tempdir().unwrap();
    let load = |endpoint: &str, flags: &[&str]| {
        run(milabench(dir.path())
            .args(["load", "--endpoint", endpoint, "--model", "mock"])
            .args(["--scenario", "offline", "--requests", "2"])
            .args(flags))
    };
    let out = load("http://127.0.0.1:99999", &[]);
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid endpoint `http://127.0.0.1:99999`: the port must be 1 to 65535");
    let out = load("http://127.0.0.1:9", &["--output-tokens", "0"]);
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.stderr, @"error: invalid --output-tokens: `0`: a length is at least 1 token");
    // Schemes are case-insensitive; a CA file has no use without TLS.
    let url = server.url().replacen("http", "HTTP", 1);
    let out = load(&url, &["--ca-cert", "/missing/ca.pem", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(out.stderr, @"warning: --ca-cert is not used: the endpoint is http://, without TLS");
}

#[test]
fn load_warns_once_when_the_usage_contradicts_the_stream() {
    const TOKEN: &str = "data: {\"choices\": [{\"index\": 0, \"text\": \"t\"}]}\n\n";
    let server = quick_server(Some(Fault::Events(&[
        TOKEN,
        TOKEN,
        "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 1000}}\n\n",
        "data: [DONE]\n\n",
    ])));
    let dir = tempfile::tempdir().unwrap();
    let out = run(milabench(dir.path()).args([
        "load",
        "--endpoint",
        &server.url(),
        "--model",
        "mock",
        "--scenario",
        "offline",
        "--requests",
        "3",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warnings: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    insta::assert_snapshot!(warnings.join("\n"), @"warning: 3 requests: the server's usage counted more than 16 completion tokens per token event of the stream (first: 1000 tokens in 2 events): token counts and TPOT rest on that usage; check the server");
}
