//! The report's 95% intervals (batch means, pooled over processes, through the score) and the
//! warm-up found after the fixed `skip`, on run folders written here.

use milabench_report::{Format, Report, ReportOptions, render, report_runs};

/// One `.data` file: benchmark `name`, per-GPU `device` if any, these training rates in order.
fn process_file(name: &str, device: Option<u32>, rates: &[f64]) -> String {
    let device = device.map_or(String::new(), |d| format!(r#", "device": "{d}""#));
    let mut text = format!(
        r#"{{"event": "config", "data": {{"name": "{name}", "group": "{name}", "tag": ["{name}"], "weight": 1, "enabled": true{device}}}, "pipe": null}}"#
    );
    text.push('\n');
    text.push_str(
        r#"{"event": "start", "data": {"command": ["voir"], "time": 100.0}, "pipe": null}"#,
    );
    text.push('\n');
    for rate in rates {
        text.push_str(&format!(
            r#"{{"event": "data", "data": {{"task": "train", "rate": {rate}, "units": "items/s"}}, "pipe": "data"}}"#
        ));
        text.push('\n');
    }
    text.push_str(r#"{"event": "end", "data": {"command": ["voir"], "time": 110.0, "return_code": 0}, "pipe": null}"#);
    text.push('\n');
    text
}

/// The report of a folder holding `files` (file name, text).
fn report_of(files: &[(String, String)]) -> Report {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let path = dir.path().to_string_lossy().into_owned();
    report_runs(&[path], None, &ReportOptions::default())
        .expect("report")
        .0
}

fn one(name: &str, rates: &[f64]) -> Report {
    report_of(&[(format!("{name}.0.data"), process_file(name, None, rates))])
}

/// 48 rates around 100 that drift slowly (correlated), and the same values interleaved so
/// that neighbours differ (nearly uncorrelated).
fn drifting() -> (Vec<f64>, Vec<f64>) {
    let drift: Vec<f64> = (0..48)
        .map(|i| 100.0 + 5.0 * (f64::from(i) / 48.0 * std::f64::consts::TAU).sin())
        .collect();
    let mut mixed = Vec::new();
    for i in 0..24 {
        mixed.push(drift[i]);
        mixed.push(drift[i + 24]);
    }
    (drift, mixed)
}

#[test]
fn correlated_rates_get_a_wider_interval_than_the_same_rates_mixed() {
    let (drift, mixed) = drifting();
    let slow = one("bench", &drift);
    let fast = one("bench", &mixed);
    let (a, b) = (&slow.rows[0], &fast.rows[0]);
    // Same values: the Python tool's columns do not move.
    assert_eq!((a.perf, a.sem_pct), (b.perf, b.sem_pct));
    assert!(a.perf_ci.low < a.perf && a.perf < a.perf_ci.high);
    assert!(
        a.perf_ci.half_width() > 3.0 * b.perf_ci.half_width(),
        "drifting ±{}, mixed ±{}",
        a.perf_ci.half_width(),
        b.perf_ci.half_width()
    );
}

#[test]
fn the_score_interval_carries_the_rows_intervals() {
    let (drift, _) = drifting();
    // One benchmark: the score is 1 + its score, so both intervals have the same width.
    let report = one("bench", &drift);
    let row = &report.rows[0];
    assert!((report.score - (row.score + 1.0)).abs() < 1e-9);
    assert!((report.score_ci.half_width() - row.score_ci.half_width()).abs() < 1e-9);
    // Two GPUs of a per-GPU plan: the score is the sum of the devices' rates, and so is its
    // variance (the half-width grows by less than the sum's).
    let two = report_of(&[
        (
            "bench.D0.data".into(),
            process_file("bench", Some(0), &drift),
        ),
        (
            "bench.D1.data".into(),
            process_file("bench", Some(1), &drift),
        ),
    ]);
    let row2 = &two.rows[0];
    assert!((row2.score - 2.0 * row.perf).abs() < 1e-6, "{}", row2.score);
    let ratio = row2.score_ci.half_width() / row.score_ci.half_width();
    assert!(ratio > 1.0 && ratio < 2.0, "{ratio}");
    // A benchmark of three rates has no interval, so neither has the score it counts in.
    let short = report_of(&[
        ("bench.0.data".into(), process_file("bench", None, &drift)),
        (
            "tiny.0.data".into(),
            process_file("tiny", None, &[1.0, 2.0, 3.0]),
        ),
    ]);
    assert!(short.score.is_finite() && short.score_ci.half_width().is_nan());
    assert!(render(&short, Format::Text).contains("nan"));
}

#[test]
fn a_warm_up_left_by_the_skip_is_found_and_noted() {
    // 8 rates still climbing to 100, then 40 steady ones.
    let mut rng = fastrand::Rng::with_seed(1);
    let rates: Vec<f64> = (0..48)
        .map(|i| {
            let climb = if i < 8 {
                50.0 * (1.0 - f64::from(i) / 8.0)
            } else {
                0.0
            };
            100.0 - climb + rng.f64() - 0.5
        })
        .collect();
    let report = one("bench", &rates);
    let row = &report.rows[0];
    let warm = row.warm_up.expect("a warm-up figure");
    assert!(warm.observations.abs_diff(8) <= 2, "{warm:?}");
    assert!(warm.gain_pct > 1.0 && row.skip_too_short(), "{warm:?}");
    let text = render(&report, Format::Text);
    assert!(
        text.contains("Warm-up: bench: rates still rising"),
        "{text}"
    );
    assert!(render(&report, Format::Markdown).contains("- **Warm-up**: bench:"));
    // Steady from the first rate: nothing to say.
    let steady = one("bench", &rates[8..]);
    assert!(!steady.rows[0].skip_too_short());
    assert!(!render(&steady, Format::Text).contains("Warm-up:"));
}

/// Three processes of steady rates at 95, 100 and 105, as repeats (`R0`..`R2` in their tags,
/// as `run --repeat 3` names them) or as three jobs of one run.
fn three_levels(repeats: bool) -> Report {
    let files: Vec<(String, String)> = [95.0, 100.0, 105.0]
        .iter()
        .enumerate()
        .map(|(i, level)| {
            let rates: Vec<f64> = (0..30).map(|j| level + f64::from(j % 3) * 0.1).collect();
            let part = if repeats {
                format!("R{i}")
            } else {
                i.to_string()
            };
            let text = process_file("bench", None, &rates).replace(
                r#""tag": ["bench"]"#,
                &format!(r#""tag": ["bench", "{part}"]"#),
            );
            (format!("bench.{part}.data"), text)
        })
        .collect();
    report_of(&files)
}

#[test]
fn repeats_whose_means_spread_widen_the_interval() {
    let (repeats, jobs) = (three_levels(true), three_levels(false));
    let (r, j) = (&repeats.rows[0], &jobs.rows[0]);
    // The Python tool's columns do not move.
    assert_eq!((r.perf, r.sem_pct, r.n), (j.perf, j.sem_pct, j.n));
    // Jobs are independent processes of one run: each one's steady rates say little noise. A
    // repeat that lands 5% away says the machine moved between repeats.
    assert!(
        j.perf_ci.half_width() < 0.5,
        "jobs ±{}",
        j.perf_ci.half_width()
    );
    assert!(
        r.perf_ci.half_width() > 10.0,
        "repeats ±{}",
        r.perf_ci.half_width()
    );
    assert!(r.score_ci.high - r.score_ci.low > 10.0 * (j.score_ci.high - j.score_ci.low));
}
