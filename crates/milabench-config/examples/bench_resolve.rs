//! Measurement program for `cargo xtask bench`: resolves a generated 500-benchmark suite (five
//! files of inheriting benchmarks plus a matrix, all under one `include`) and, as the baseline
//! measured in the same run, only parses the same YAML files. Prints one JSON line.

#![allow(clippy::print_stdout, missing_docs)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use milabench_config::suite::{SuiteRequest, resolve_suite};
use milabench_config::system::{SystemInputs, load_system};
use milabench_config::yaml;

const PARTS: usize = 5;
const PER_PART: usize = 90;
const MATRIX: [usize; 2] = [10, 5];

fn write_suite(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut defaults = String::from(
        "_defaults:\n  enabled: false\n  max_duration: 600\n  voir:\n    options: {stop: 60, interval: 1s}\n",
    );
    for f in 0..20 {
        let _ = write!(
            defaults,
            "_family{f}:\n  inherits: _defaults\n  definition: ../benchmarks/family{f}\n  group: family{f}\n  install_group: torch\n  tags: [f{f}]\n  plan: {{method: per_gpu}}\n  argv:\n    --precision: tf32-fp16\n    --lr: 0.01\n    --num-workers: \"auto({{n_worker}}, 8)\"\n    --data: \"{{milabench_data}}/f{f}\"\n"
        );
    }
    let path = dir.join("_defaults.yaml");
    std::fs::write(&path, defaults).expect("write defaults");
    files.push(path);
    let mut suite = String::from("include:\n  - _defaults.yaml\n");
    for p in 0..PARTS {
        let mut text = String::new();
        for b in 0..PER_PART {
            let parent = if b % 3 == 0 {
                format!("_family{}", b % 20)
            } else {
                format!("p{p}-b{}", b - 1)
            };
            let _ = write!(
                text,
                "p{p}-b{b}:\n  inherits: {parent}\n  enabled: true\n  weight: {w}\n  tags: [monogpu, t{b}]\n  argv:\n    --model: m{b}\n    --batch-size: \"auto_batch({bs})\"\n    --flag: true\n    --gone: null\n",
                w = b % 2,
                bs = 8 * (b % 7 + 1),
            );
        }
        let path = dir.join(format!("part{p}.yaml"));
        std::fs::write(&path, text).expect("write part");
        let _ = writeln!(suite, "  - part{p}.yaml");
        files.push(path);
    }
    let _ = write!(
        suite,
        "sweep:\n  matrix:\n    bs: [{}]\n    opt: [{}]\n  job:\n    name: \"sweep-bs{{bs}}-{{opt}}\"\n    inherits: _family0\n    enabled: true\n    weight: 1\n    tags: [monogpu]\n    argv:\n      --batch-size: \"{{bs}}\"\n      --optimizer: \"{{opt}}\"\n",
        (0..MATRIX[0])
            .map(|i| (i * 8 + 8).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        (0..MATRIX[1])
            .map(|i| format!("o{i}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let path = dir.join("suite.yaml");
    std::fs::write(&path, suite).expect("write suite");
    files.push(path);
    files
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write_suite(dir.path());
    let suite_path = files.last().expect("suite file").clone();
    let inputs = SystemInputs::local("cpu", "/tmp/base", "bench");
    let system = load_system(None, &inputs).expect("system");
    let env = |_: &str| None;
    let resolve = || {
        resolve_suite(&SuiteRequest::whole(&suite_path, &system, &env))
            .expect("the generated suite resolves")
    };
    let count = resolve().benches.len();
    assert_eq!(count, PARTS * PER_PART + MATRIX[0] * MATRIX[1]);
    let rounds = 30;
    let resolve_times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(resolve());
            start.elapsed()
        })
        .collect();
    let parse_times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for f in &files {
                std::hint::black_box(yaml::load_file(f, "suite file").expect("parses"));
            }
            start.elapsed()
        })
        .collect();
    let resolve_ms = median(resolve_times).as_secs_f64() * 1e3;
    let parse_ms = median(parse_times).as_secs_f64() * 1e3;
    println!(
        "{{\"name\":\"resolve {count}-benchmark suite\",\"value_ms\":{resolve_ms:.3},\"baseline\":\"YAML parse of the same files\",\"baseline_ms\":{parse_ms:.3},\"target_ms\":10.0}}"
    );
}
