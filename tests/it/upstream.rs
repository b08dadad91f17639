//! The Python milabench's own suite, planned from its own checkout (`tests/fixtures/upstream`):
//! every benchmark's `benchfile.py` goes through the pack host, and the commands equal what the
//! Python tool's `milabench dry` printed for the same machine (its outputs are the fixtures in
//! `tests/fixtures/upstream/dry`, made by `make_dry.sh`).
//!
//! The comparison leaves out what `dry` itself changes or cannot show (docs/compatibility.md):
//! `dry` prints `python` where voir starts (and so `--no-python` after torchrun); its text
//! loses empty arguments; the activator script lives in each tool's own tree; and the Python
//! tool reaches every rank of a multi-node benchmark over ssh, the main node's too, where we
//! run a rank on this machine directly.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fake_smi, fixtures, milabench, run, with_path};

/// One machine the Python tool's `dry` planned for.
struct Machine {
    fixture: &'static str,
    gpus: usize,
    capacity_mib: u64,
    nodes: usize,
}

const MACHINES: &[Machine] = &[
    Machine {
        fixture: "standard-8x80000-1node",
        gpus: 8,
        capacity_mib: 80000,
        nodes: 1,
    },
    Machine {
        fixture: "standard-8x80000-2nodes",
        gpus: 8,
        capacity_mib: 80000,
        nodes: 2,
    },
    Machine {
        fixture: "standard-1x24000-1node",
        gpus: 1,
        capacity_mib: 24000,
        nodes: 1,
    },
    Machine {
        fixture: "standard-2x40000-1node",
        gpus: 2,
        capacity_mib: 40000,
        nodes: 1,
    },
    Machine {
        fixture: "standard-4x141000-2nodes",
        gpus: 4,
        capacity_mib: 141000,
        nodes: 2,
    },
];

fn upstream() -> PathBuf {
    fixtures().join("upstream")
}

/// The system file `dry` writes: node 0 at 127.0.0.1 (main), node i at 192.168.0.(10+i).
fn system_file(dir: &Path, nodes: usize) -> PathBuf {
    let mut text = String::from("system:\n  arch: cuda\n  nodes:\n");
    for i in 0..nodes {
        let ip = if i == 0 {
            "127.0.0.1".to_string()
        } else {
            format!("192.168.0.{}", 10 + i)
        };
        text.push_str(&format!(
            "    - {{name: \"{i}\", ip: {ip}, user: username, main: {}, sshport: 22}}\n",
            i == 0
        ));
    }
    let path = dir.join("system.yaml");
    fs_err::write(&path, text).expect("write the system file");
    path
}

/// `nvidia-smi` answering for `gpus` idle GPUs of `capacity` MiB.
fn smi_lines(gpus: usize, capacity: u64) -> String {
    (0..gpus)
        .map(|i| {
            format!("{i}, GPU-0000000{i}, NVIDIA H100, 1, {capacity}, 0, 30, 30, 70.0, 1980, 2619")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A command of either tool, reduced to what both print: the node it goes to (`None` for this
/// machine), its arguments and its variables.
#[derive(Debug, PartialEq)]
struct Command {
    host: Option<String>,
    argv: Vec<String>,
}

/// Arguments with what only one side shows taken out (see the module notes).
fn comparable(argv: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = argv.into_iter().peekable();
    while let Some(word) = words.next() {
        if word.ends_with("/bin/voir") || word == "voir" {
            out.push("python".into());
            if words.peek().map(String::as_str) == Some("--config") {
                words.next();
                words.next();
            }
        } else if word.ends_with("/scripts/activator") {
            out.push("activator".into());
        } else if word != "--no-python" && !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// The Python tool's command, its placeholders replaced.
fn theirs(command: &Value, base: &str, src: &str) -> (Command, Vec<(String, String)>) {
    let mut argv: Vec<String> = command["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| {
            a.as_str()
                .expect("text")
                .replace("$BASE", base)
                .replace("$SRC", src)
        })
        .collect();
    let mut host = None;
    if argv.first().map(String::as_str) == Some("ssh") {
        let at = argv
            .iter()
            .position(|a| a.contains('@'))
            .expect("an ssh target");
        let target = argv[at].split('@').nth(1).unwrap_or_default().to_string();
        argv.drain(..=at);
        host = (target != "127.0.0.1").then_some(target);
    }
    let env = command["env"]
        .as_object()
        .map(|env| {
            env.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    (
        Command {
            host,
            argv: comparable(argv),
        },
        env,
    )
}

/// Our process: the command on its node, and the node when it is reached over ssh.
fn ours(process: &Value) -> Command {
    let argv = process
        .get("node_command")
        .unwrap_or(&process["argv"])
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| a.as_str().expect("text").to_string());
    let host = (process["launch"]["kind"] == "ssh").then(|| {
        process["launch"]["host"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    Command {
        host,
        argv: comparable(argv),
    }
}

#[test]
fn every_benchmark_of_the_python_tools_standard_suite_plans_as_its_dry_run_does() {
    let checkout = upstream().join("milabench");
    let src = upstream().display().to_string();
    for machine in MACHINES {
        let expected: Value = serde_json::from_str(
            &fs_err::read_to_string(upstream().join(format!("dry/{}.json", machine.fixture)))
                .expect("fixture"),
        )
        .expect("fixture JSON");
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("base");
        let system = system_file(dir.path(), machine.nodes);
        let smi = fake_smi(&smi_lines(machine.gpus, machine.capacity_mib), 0);
        let out = run(milabench(dir.path())
            .env("PATH", with_path(smi.path()))
            .env("MILABENCH_GPU_ARCH", "cuda")
            .env("MILABENCH_CPU_TOTAL_COUNT", "4")
            .arg("run")
            .arg("--config")
            .arg(checkout.join("config/standard.yaml"))
            .arg("--system")
            .arg(&system)
            .arg("--base")
            .arg(&base)
            .arg("--dry-run=json"));
        assert_eq!(out.code, 0, "{}: {}", machine.fixture, out.stderr);
        let plans: Value = serde_json::from_str(&out.stdout).expect("dry-run JSON");
        let plans = plans.as_array().expect("plans");
        let base = base.display().to_string();
        let mut compared = 0;
        let mut skipped = 0;
        for bench in expected["benchmarks"].as_array().expect("benchmarks") {
            let name = bench["name"].as_str().expect("name");
            let Some(plan) = plans.iter().find(|p| p["bench"] == name) else {
                // `dry` does not check `requires_capabilities`; a run skips the benchmark.
                assert!(
                    out.stderr
                        .contains(&format!("skipping `{name}`: this system does not meet")),
                    "{}: `{name}` was not planned: {}",
                    machine.fixture,
                    out.stderr
                );
                skipped += 1;
                continue;
            };
            let processes = plan["processes"].as_array().expect("processes");
            let commands = bench["commands"].as_array().expect("commands");
            assert_eq!(
                processes.len(),
                commands.len(),
                "{}: `{name}` has {} process(es), the Python tool {}",
                machine.fixture,
                processes.len(),
                commands.len()
            );
            for (process, command) in processes.iter().zip(commands) {
                let (expected, env) = theirs(command, &base, &src);
                assert_eq!(ours(process), expected, "{}: `{name}`", machine.fixture);
                for (key, value) in env {
                    assert_eq!(
                        process["env"][&key].as_str(),
                        Some(value.as_str()),
                        "{}: `{name}`: {key}",
                        machine.fixture
                    );
                }
                compared += 1;
            }
        }
        let benches = expected["benchmarks"].as_array().map_or(0, Vec::len);
        assert!(
            compared > 0 && skipped < benches / 4,
            "{}: {skipped} of {benches} benchmarks skipped",
            machine.fixture
        );
    }
}

/// The Python tool's tests set `MILABENCH_GPU_ARCH` to names that are no accelerator family
/// (`mock`, `ok`, `bad`) to pick requirement files on a machine without GPUs: such a name is
/// accepted from that variable (the install variant becomes it, no GPU is looked for), while a
/// malformed one is refused with the accepted forms.
#[test]
fn the_mock_arches_of_the_python_tools_tests_are_accepted_from_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = upstream().join("milabench/tests/config/benchio.yaml");
    let plan = |arch: &str| {
        run(milabench(dir.path())
            .env("MILABENCH_GPU_ARCH", arch)
            .arg("run")
            .arg("--config")
            .arg(&suite)
            .arg("--base")
            .arg(dir.path())
            .arg("--dry-run=json"))
    };
    for arch in ["mock", "ok", "bad"] {
        let out = plan(arch);
        assert_eq!(out.code, 0, "{arch}: {}", out.stderr);
        assert!(!out.stderr.contains("no GPU was found"), "{}", out.stderr);
        let plans: Value = serde_json::from_str(&out.stdout).expect("JSON");
        let process = &plans[0]["processes"][0];
        assert_eq!(process["config"]["install_variant"], arch);
        assert_eq!(process["config"]["system"]["arch"], arch);
    }
    let refused = plan("Not An Arch!");
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("MILABENCH_GPU_ARCH"),
        "{}",
        refused.stderr
    );
}
