//! `report --publish` and `run --publish`: run folders pushed to a milabench dashboard.
//!
//! Most tests talk to a stand-in of the dashboard's push route (`/api/push/zip/stream` of the
//! public project milabench/dashboard, `dashboard/server/push.py`), written here after its code:
//! the key checked first (403 `Invalid push key` as JSON), then the zip read, its `.data`
//! entries grouped by run folder and benchmark as the server groups them, and the answer
//! streamed as the same server-sent events. `the_real_dashboard_shows_a_published_run` pushes
//! to the real server that `cargo xtask dashboard up` starts (ignored by default; `cargo xtask
//! ci` runs it).

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::common::{fixtures, milabench, run};

/// The key the stand-in accepts.
const GOOD_KEY: &str = "0123456789abcdef-good-push-key-fedcba9876543210";

/// What one push brought the stand-in.
#[derive(Debug, Clone)]
struct Received {
    key: String,
    /// Each `.data` entry: its name and contents.
    entries: Vec<(String, Vec<u8>)>,
}

/// The stand-in dashboard: a thread answering pushes on a loopback port.
struct StandIn {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl StandIn {
    fn start() -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &shared);
            }
        });
        StandIn { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

/// Reads one request and answers it as the dashboard's push route does.
fn answer(stream: TcpStream, received: &Mutex<Vec<Received>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0;
    let mut boundary = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if let Some((_, b)) = line.split_once("boundary=") {
            boundary = b.to_owned();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut out = stream;
    let key = form_field(&body, &boundary, "name=\"key\"")
        .map(|k| String::from_utf8_lossy(&k).into_owned())
        .unwrap_or_default();
    if key != GOOD_KEY {
        let json = r#"{"message":"Invalid push key","status":"ERR"}"#;
        return write!(
            out,
            "HTTP/1.1 403 FORBIDDEN\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
            json.len()
        );
    }
    let zip = form_field(&body, &boundary, "name=\"file\"").unwrap_or_default();
    let entries = stored_entries(&zip);
    received.lock().expect("lock").push(Received {
        key,
        entries: entries.clone(),
    });
    // The server's grouping: frags[-2] is the run, frags[-1] up to its first dot the benchmark.
    let mut runs: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (name, contents) in &entries {
        let frags: Vec<&str> = name.split('/').collect();
        let run = frags[frags.len() - 2].to_owned();
        let bench = frags[frags.len() - 1]
            .split('.')
            .next()
            .unwrap_or("")
            .to_owned();
        *runs.entry(run).or_default().entry(bench).or_default() += contents
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
    }
    let mut events = String::from(": heartbeat\n\n");
    let mut event = |name: &str, data: serde_json::Value| {
        events.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "info",
        serde_json::json!({"message": format!("Found {} run(s)", runs.len()), "contributor": "tester"}),
    );
    for (run, benches) in &runs {
        event(
            "run",
            serde_json::json!({"name": run, "benchmarks": benches.len()}),
        );
        for (bench, count) in benches {
            event("bench", serde_json::json!({"run": run, "name": bench}));
            event(
                "bench_done",
                serde_json::json!({"name": bench, "events": count}),
            );
        }
    }
    event(
        "done",
        serde_json::json!({"status": "OK", "message": "results.zip pushed by tester"}),
    );
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nConnection: close\r\n\r\n{events}"
    )
}

/// The value of the multipart part whose headers contain `marker`.
fn form_field(body: &[u8], boundary: &str, marker: &str) -> Option<Vec<u8>> {
    let separator = format!("--{boundary}");
    let mut parts = split(body, separator.as_bytes());
    parts.find_map(|part| {
        let end = find(part, b"\r\n\r\n")?;
        let headers = String::from_utf8_lossy(&part[..end]);
        headers.contains(marker).then(|| {
            let value = &part[end + 4..];
            value.strip_suffix(b"\r\n").unwrap_or(value).to_vec()
        })
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut body: &'a [u8], separator: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
    std::iter::from_fn(move || {
        let start = find(body, separator)? + separator.len();
        body = &body[start..];
        let end = find(body, separator).unwrap_or(body.len());
        Some(&body[..end])
    })
}

/// The entries of a zip of stored entries, read from its local headers (the server refuses any
/// compressed entry; so does this).
fn stored_entries(zip: &[u8]) -> Vec<(String, Vec<u8>)> {
    let u16_at = |i: usize| u16::from_le_bytes([zip[i], zip[i + 1]]) as usize;
    let u32_at =
        |i: usize| u32::from_le_bytes([zip[i], zip[i + 1], zip[i + 2], zip[i + 3]]) as usize;
    let mut entries = Vec::new();
    let mut at = 0;
    while zip.len() >= at + 30 && zip[at..at + 4] == [0x50, 0x4b, 0x03, 0x04] {
        assert_eq!(u16_at(at + 8), 0, "a compressed entry");
        let size = u32_at(at + 18);
        let name_len = u16_at(at + 26);
        let extra = u16_at(at + 28);
        let name = String::from_utf8_lossy(&zip[at + 30..at + 30 + name_len]).into_owned();
        let data = at + 30 + name_len + extra;
        entries.push((name, zip[data..data + size].to_vec()));
        at = data + size;
    }
    entries
}

/// A copy of the fixture run `sedumoje` (two `.data` files of `benchio`) in a scratch folder.
fn sedumoje(scratch: &Path) -> PathBuf {
    let source = fixtures().join("milabench/runs/tests-runs/sedumoje.2023-03-24_13:57:35.089747");
    let folder = scratch.join("sedumoje.2023-03-24_13:57:35.089747");
    fs_err::create_dir_all(&folder).expect("mkdir");
    for entry in fs_err::read_dir(&source).expect("fixture") {
        let entry = entry.expect("entry");
        fs_err::copy(entry.path(), folder.join(entry.file_name())).expect("copy");
    }
    folder
}

/// `milabench report --runs FOLDER -o REPORT --publish KEY --dashboard-url URL` in `scratch`.
fn report_publish(scratch: &Path, folder: &Path, key: &str, url: &str) -> crate::common::Output {
    run(milabench(scratch)
        .arg("report")
        .arg("--runs")
        .arg(folder)
        .arg("-o")
        .arg(scratch.join("report.txt"))
        .args(["--publish", key, "--dashboard-url", url]))
}

/// Replaces the stand-in's port with `PORT`.
fn without_port(text: &str, url: &str) -> String {
    text.replace(url, "http://127.0.0.1:PORT")
}

/// Every file name under `dir`, recursively.
fn names_under(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in fs_err::read_dir(dir).expect("read_dir").flatten() {
        names.push(entry.file_name().to_string_lossy().into_owned());
        if entry.path().is_dir() {
            names.extend(names_under(&entry.path()));
        }
    }
    names
}

#[test]
fn report_publish_pushes_the_data_files_and_prints_the_dashboards_progress() {
    let dashboard = StandIn::start();
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    fs_err::write(folder.join("notes.txt"), "not published").expect("write");
    let out = report_publish(scratch.path(), &folder, GOOD_KEY, &dashboard.url);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!(without_port(&out.stderr, &dashboard.url));
    let received = dashboard.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].key, GOOD_KEY);
    let names: Vec<&str> = received[0]
        .entries
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "sedumoje.2023-03-24_13:57:35.089747/benchio.0.data",
            "sedumoje.2023-03-24_13:57:35.089747/benchio.1.data"
        ]
    );
    let original = fs_err::read(folder.join("benchio.0.data")).expect("read");
    assert_eq!(
        received[0].entries[0].1, original,
        "the file as it is on disk"
    );
    // The report itself is written as without --publish.
    let report = fs_err::read_to_string(scratch.path().join("report.txt")).expect("report");
    assert!(report.contains("benchio"), "{report}");
}

#[test]
fn the_key_can_come_from_the_environment_and_is_never_shown() {
    let dashboard = StandIn::start();
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    let out = run(milabench(scratch.path())
        .arg("report")
        .arg("--runs")
        .arg(&folder)
        .env("MILABENCH_PUBLISH_KEY", GOOD_KEY)
        .env("MILABENCH_DASHBOARD_URL", &dashboard.url));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(dashboard.received().len(), 1);
    let help = run(milabench(scratch.path())
        .args(["report", "--help"])
        .env("MILABENCH_PUBLISH_KEY", GOOD_KEY));
    assert!(help.stdout.contains("--publish <KEY>"), "{}", help.stdout);
    for text in [&out.stdout, &out.stderr, &help.stdout, &help.stderr] {
        assert!(!text.contains(GOOD_KEY), "the key shows in:\n{text}");
        assert!(
            !text.contains(&GOOD_KEY[..8]),
            "a part of the key shows in:\n{text}"
        );
    }
    assert!(
        names_under(scratch.path())
            .iter()
            .all(|n| !n.contains(&GOOD_KEY[..8])),
        "a file is named after the key"
    );
}

#[test]
fn a_wrong_key_is_the_servers_refusal_named_and_the_report_is_kept() {
    let dashboard = StandIn::start();
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    let wrong = "wrong-key-7c1f2e9d3b4a";
    let out = report_publish(scratch.path(), &folder, wrong, &dashboard.url);
    assert_eq!(out.code, 2, "{}", out.stderr);
    insta::assert_snapshot!(without_port(&out.stderr, &dashboard.url));
    assert!(!out.stderr.contains(wrong) && !out.stdout.contains(wrong));
    assert!(
        scratch.path().join("report.txt").is_file(),
        "the report was written first"
    );
    assert_eq!(
        fs_err::read_dir(&folder).expect("folder").count(),
        2,
        "the run folder is as it was"
    );
}

#[test]
fn an_unreachable_dashboard_is_a_clear_error_and_the_report_is_kept() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    let out = report_publish(scratch.path(), &folder, GOOD_KEY, &url);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        without_port(&out.stderr, &url)
            .contains("could not reach the dashboard at http://127.0.0.1:PORT"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("nothing is lost"), "{}", out.stderr);
    assert!(!out.stderr.contains(GOOD_KEY));
    assert!(scratch.path().join("report.txt").is_file());
}

#[test]
fn an_oversized_run_is_refused_with_its_figure_before_anything_is_sent() {
    let dashboard = StandIn::start();
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    // A sparse file: 101 MiB on paper, nothing on disk, and never read.
    let big = fs_err::File::create(folder.join("huge.0.data")).expect("create");
    big.set_len(101 * 1024 * 1024).expect("set_len");
    let out = report_publish(scratch.path(), &folder, GOOD_KEY, &dashboard.url);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("huge.0.data is 101.0 MiB, over the dashboard's limit of 100.0 MiB a file; nothing was sent"),
        "{}",
        out.stderr
    );
    assert!(dashboard.received().is_empty());
    assert!(scratch.path().join("report.txt").is_file());
}

#[test]
fn a_bad_dashboard_url_is_refused_before_the_work() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());
    let out = report_publish(scratch.path(), &folder, GOOD_KEY, "ftp://dash.example");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--dashboard-url / MILABENCH_DASHBOARD_URL"),
        "{}",
        out.stderr
    );
    assert!(
        !scratch.path().join("report.txt").exists(),
        "refused before the report"
    );
}

/// `METHOD PATH` of the server at `url` (HTTP/1.0, so the answer ends with the connection),
/// with a JSON body when given; the answer's body as JSON.
fn call(
    url: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> serde_json::Value {
    let authority = url.strip_prefix("http://").expect("an http:// URL");
    let mut stream = TcpStream::connect(authority).expect("the dashboard answers");
    let body = body.map(ToString::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, json) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{method} {path}: {head}\n{json}"
    );
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{method} {path}: {e}: {json}"))
}

/// The training rates of a `.data` file, in order.
fn rates(file: &Path) -> Vec<f64> {
    fs_err::read_to_string(file)
        .expect("read")
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| v["data"]["rate"].as_f64())
        .collect()
}

/// Acceptance of issue 49, item 3: a run published by `report --publish` shows in the real
/// dashboard server's API with its benchmarks and numbers.
#[test]
#[ignore = "needs the real dashboard server: `cargo xtask dashboard up`, then MILABENCH_TEST_DASHBOARD_URL (cargo xtask ci does both)"]
fn the_real_dashboard_shows_a_published_run() {
    let url = std::env::var(milabench_store::harness::TEST_DASHBOARD_URL)
        .expect("MILABENCH_TEST_DASHBOARD_URL: start the server with `cargo xtask dashboard up`");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let contributor = format!("milabench-rs-test-{}-{nanos}", std::process::id());
    let issued = call(
        &url,
        "POST",
        "/api/push/key/request",
        Some(&serde_json::json!({"name": contributor})),
    );
    let key = issued["key"].as_str().expect("a push key").to_owned();
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = sedumoje(scratch.path());

    let wrong = report_publish(scratch.path(), &folder, "not-a-key-of-this-dashboard", &url);
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
    assert!(
        wrong
            .stderr
            .contains("refused the push key (HTTP 403: Invalid push key)"),
        "{}",
        wrong.stderr
    );

    let out = report_publish(scratch.path(), &folder, &key, &url);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("(contributor: {contributor})")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("stored benchio"), "{}", out.stderr);
    for text in [&out.stdout, &out.stderr, &wrong.stderr] {
        assert!(!text.contains(&key[..8]), "the key shows in:\n{text}");
    }

    let run_name = "sedumoje.2023-03-24_13:57:35.089747";
    let execs = call(&url, "GET", "/api/exec/list/1000", None);
    let exec = execs
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["name"] == run_name && e["meta"]["contributor"] == contributor.as_str())
        .unwrap_or_else(|| panic!("the run is not in /api/exec/list: {execs}"));
    let exec_id = exec["_id"].as_i64().expect("an id");
    let packs = call(&url, "GET", &format!("/api/exec/{exec_id}/packs"), None);
    let mut tags: Vec<(String, i64)> = packs
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| {
            assert_eq!(p["name"], "benchio");
            (
                p["tag"].as_str().unwrap_or("").to_owned(),
                p["_id"].as_i64().expect("an id"),
            )
        })
        .collect();
    tags.sort();
    let names: Vec<&str> = tags.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(names, ["benchio.0", "benchio.1"], "{packs}");
    for (job, (_, pack_id)) in tags.iter().enumerate() {
        let metrics = call(
            &url,
            "GET",
            &format!("/api/exec/{exec_id}/packs/{pack_id}/metrics"),
            None,
        );
        let mut stored: Vec<(i64, f64)> = metrics
            .as_array()
            .expect("a list")
            .iter()
            .filter(|m| m["name"] == "rate")
            .map(|m| {
                (
                    m["_id"].as_i64().unwrap_or(0),
                    m["value"].as_f64().unwrap_or(f64::NAN),
                )
            })
            .collect();
        stored.sort_by_key(|(id, _)| *id);
        let stored: Vec<f64> = stored.into_iter().map(|(_, v)| v).collect();
        let expected = rates(&folder.join(format!("benchio.{job}.data")));
        assert!(!expected.is_empty());
        assert_eq!(stored, expected, "the rates of benchio.{job}");
    }
}

const ONE_BENCH_SUITE: &str = "\
good:
  inherits: _defaults
  install_group: tiny
  tags: [monogpu]
  weight: 1
  max_duration: 30
  definition: benchmarks/good
";

#[test]
fn run_publish_pushes_the_run_once_it_is_complete() {
    let dashboard = StandIn::start();
    let project = crate::run::Project::new(ONE_BENCH_SUITE);
    project.bench("good", &crate::run::reporting(4, 0));
    let out = run(project
        .run_command(&[
            "--run-name",
            "pub1",
            "--no-check",
            "--dashboard-url",
            &dashboard.url,
        ])
        .env("MILABENCH_PUBLISH_KEY", GOOD_KEY));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("[publish] published 1 run(s), 1 benchmark(s)"),
        "{}",
        out.stderr
    );
    let received = dashboard.received();
    assert_eq!(received.len(), 1, "{}", out.stderr);
    let names: Vec<&str> = received[0]
        .entries
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["pub1/good.D0.data"], "{}", out.stderr);
    assert_eq!(
        received[0].entries[0].1,
        project.data_file("pub1", "good.D0").into_bytes()
    );
}

#[test]
fn a_run_whose_push_fails_keeps_its_folder_and_exits_non_zero() {
    let dashboard = StandIn::start();
    let project = crate::run::Project::new(ONE_BENCH_SUITE);
    project.bench("good", &crate::run::reporting(4, 0));
    let out = run(&mut project.run_command(&[
        "--run-name",
        "pub2",
        "--no-check",
        "--publish",
        "a-key-the-dashboard-never-issued",
        "--dashboard-url",
        &dashboard.url,
    ]));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("refused the push key"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("never-issued") && !out.stdout.contains("never-issued"));
    assert!(
        !project.data_file("pub2", "good.D0").is_empty(),
        "the run's data is kept"
    );
}
