//! `milabench check`: each planted problem is found and comes with its fix (nodes over ssh are
//! checked against the real two-node harness in `multinode.rs`).

use crate::common::{milabench, run};

#[test]
fn check_finds_a_disk_shortfall_a_missing_environment_and_an_unreachable_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bench = dir.path().join("benchmarks/tiny");
    fs_err::create_dir_all(&bench).expect("bench");
    fs_err::write(bench.join("main.py"), "print('hi')\n").expect("main");
    fs_err::write(
        dir.path().join("suite.yaml"),
        "tiny:\n  inherits: _defaults\n  definition: benchmarks/tiny\n  install_group: tiny\n  tags: [monogpu]\n",
    )
    .expect("suite");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let out = run(milabench(dir.path())
        .env("MILABENCH_BASE", dir.path().join("base"))
        .env("UV_INDEX_URL", format!("http://127.0.0.1:{port}/simple"))
        .args(["check", "--config", "suite.yaml", "--format", "json"])
        .args(["--need-disk", "100000000"]));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let checks: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let find = |name: &str| {
        checks
            .as_array()
            .expect("list")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} check in {checks}"))
            .clone()
    };
    let disk = find("disk");
    assert_eq!(disk["status"], "fail");
    assert!(disk["fix"].as_str().expect("fix").contains("--base"));
    let env = find("environment tiny");
    assert_eq!(env["status"], "warn");
    assert!(
        env["fix"]
            .as_str()
            .expect("fix")
            .contains("milabench install")
    );
    let index = find("package index");
    assert_eq!(index["status"], "fail");
    assert!(index["fix"].as_str().expect("fix").contains("UV_INDEX_URL"));
    assert_eq!(find("python")["status"], "ok");
}

/// Issue 38, item 5: a venv left by an interrupted or offline-failed install (a `bin/python`, no
/// `bin/voir`, no fingerprint) was reported `ok`.
#[test]
fn an_unfinished_environment_is_not_ok() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bench = dir.path().join("benchmarks/tiny");
    fs_err::create_dir_all(&bench).expect("bench");
    fs_err::write(bench.join("main.py"), "print('hi')\n").expect("main");
    fs_err::write(
        dir.path().join("suite.yaml"),
        "tiny:\n  inherits: _defaults\n  definition: benchmarks/tiny\n  install_group: tiny\n",
    )
    .expect("suite");
    let venv_bin = dir.path().join("base/venv/tiny/bin");
    fs_err::create_dir_all(&venv_bin).expect("venv");
    std::os::unix::fs::symlink("/usr/bin/python3", venv_bin.join("python")).expect("python");
    let check = || {
        let out = run(milabench(dir.path())
            .env("MILABENCH_BASE", dir.path().join("base"))
            .args(["check", "--config", "suite.yaml", "--format", "json"]));
        let checks: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
        checks
            .as_array()
            .expect("list")
            .iter()
            .find(|c| c["name"] == "environment tiny")
            .expect("the environment's check")
            .clone()
    };
    let env = check();
    assert_eq!(env["status"], "warn", "{env}");
    assert!(
        env["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("not a finished environment"),
        "{env}"
    );
    // Its entry points and the fingerprint written last: ok.
    fs_err::write(venv_bin.join("voir"), "#!/bin/sh\n").expect("voir");
    fs_err::write(
        dir.path().join("base/venv/tiny/.milabench-install.json"),
        r#"{"hash": "x", "inputs": []}"#,
    )
    .expect("fingerprint");
    assert_eq!(check()["status"], "ok");
}

/// Issue 38, item 18: `check --format json` with a bad system file printed nothing on stdout.
/// It prints the one failed check, the error as its detail, and exits 2 with the error.
#[test]
fn json_output_says_a_bad_system_file_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs_err::write(
        dir.path().join("suite.yaml"),
        "tiny:\n  inherits: _defaults\n  definition: benchmarks/tiny\n",
    )
    .expect("suite");
    fs_err::write(dir.path().join("system.yaml"), "system:\n  nodes: [[[\n").expect("system");
    let out = run(milabench(dir.path()).args([
        "check",
        "--config",
        "suite.yaml",
        "--system",
        "system.yaml",
        "--format",
        "json",
    ]));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let checks: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(checks[0]["status"], "fail", "{checks}");
    assert!(
        checks[0]["detail"]
            .as_str()
            .expect("detail")
            .contains("system.yaml:3:1: invalid YAML"),
        "{checks}"
    );
    assert!(out.stderr.contains("invalid YAML"), "{}", out.stderr);
}
