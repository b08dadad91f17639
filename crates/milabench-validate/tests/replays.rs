//! Every replay of the Python test suite gives the Python tool's text and verdict.

use std::path::PathBuf;

use milabench_validate::{LayerName, Validation, ValidationContext, replay_entries};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/milabench")
}

fn run(layer: LayerName, replay: &str, gpus: usize) -> (String, u64) {
    let replay = replay_entries(&fixtures().join("replays").join(replay)).unwrap();
    assert!(replay.problems.is_empty());
    let mut validation = Validation::new(&[layer], &ValidationContext { gpu_count: gpus });
    validation.observe_replay(&replay.entries);
    let report = validation.finish();
    (report.text.clone(), report.combined_code())
}

fn check(layer: LayerName, replay: &str, gpus: usize, expected: &str, failing: bool) {
    let (text, code) = run(layer, replay, gpus);
    let want =
        std::fs::read_to_string(fixtures().join("expected/validation").join(expected)).unwrap();
    assert_eq!(text, want, "{layer} on {replay}");
    assert_eq!(code != 0, failing, "{layer} on {replay}: code {code}");
}

#[test]
fn error_layer() {
    check(LayerName::Error, "error.txt", 0, "error.txt", true);
    check(
        LayerName::Error,
        "early_stop.txt",
        0,
        "error-early_stop.txt",
        false,
    );
    check(
        LayerName::Error,
        "early_stopping_per_gpu",
        0,
        "error-early_stopping_per_gpu.txt",
        false,
    );
    check(
        LayerName::Error,
        "exception.txt",
        0,
        "error-exception.txt",
        true,
    );
}

#[test]
fn loss_layer() {
    check(LayerName::Loss, "loss.txt", 0, "loss.txt", true);
    check(
        LayerName::Loss,
        "exception.txt",
        0,
        "loss-exception.txt",
        false,
    );
}

#[test]
fn ensure_rate_layer() {
    check(
        LayerName::EnsureRate,
        "ensure_rate.txt",
        0,
        "ensure_rate.txt",
        true,
    );
}

#[test]
fn usage_layer() {
    check(
        LayerName::Usage,
        "no_usage.txt",
        0,
        "usage-no_usage.txt",
        true,
    );
    check(LayerName::Usage, "usage.txt", 0, "usage.txt", false);
}

#[test]
fn planning_layer() {
    check(
        LayerName::Planning,
        "planning_njobs_good",
        0,
        "planning-njobs_good.txt",
        false,
    );
    check(
        LayerName::Planning,
        "planning_njobs_bad",
        0,
        "planning-njobs_bad.txt",
        true,
    );
    check(
        LayerName::Planning,
        "planning_per_gpu_good",
        2,
        "planning-per_gpu_good.txt",
        false,
    );
    check(
        LayerName::Planning,
        "planning_per_gpu_bad",
        2,
        "planning-per_gpu_bad.txt",
        true,
    );
}

#[test]
fn version_layer() {
    check(
        LayerName::Version,
        "usage.txt",
        0,
        "version-usage.txt",
        true,
    );
    check(
        LayerName::Version,
        "exception.txt",
        0,
        "version-exception.txt",
        false,
    );
}

#[test]
fn missing_replay_is_an_error() {
    let err = replay_entries(&fixtures().join("replays/nope.txt")).unwrap_err();
    assert!(err.to_string().contains("nope.txt"), "{err}");
}
