//! `milabench run` with a container block, through a fake `podman` and `docker` on PATH that
//! record their argv and run the wrapped command on the host (in a clean environment holding
//! only the `--env` variables), so a real run through them must produce the files and report
//! of a run on the host; a timeout and Ctrl-C must remove the container by name.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{run, wait_for_within, with_path};
use crate::run::Project;

/// The fake runtime: `run` parses the options our command lines use, then runs the command
/// in `--workdir` with only the `--env` variables, its pid recorded under its `--name`; `rm
/// --force NAME` kills that process; `image inspect`, `pull`, `load` and `--version` answer,
/// `container inspect` finds nothing.
/// Every call is appended to `$FAKE_RUNTIME_LOG`, one line of words joined by `|`.
const FAKE_RUNTIME: &str = r#"#!/usr/bin/env python3
import os, signal, sys
args = sys.argv[1:]
log = os.environ["FAKE_RUNTIME_LOG"]
with open(log, "a") as f:
    f.write("|".join([os.path.basename(sys.argv[0])] + args) + "\n")
while args and args[0].startswith("--") and args[0] != "--version":
    # global options: `--runtime runc`, `--cgroup-manager=cgroupfs`
    args = args[2:] if "=" not in args[0] else args[1:]
if not args or args[0] == "--version":
    print("fake version 1.0")
    sys.exit(0)
command, rest = args[0], args[1:]
state = os.path.dirname(log)
if command == "rm":
    name = rest[-1]
    try:
        pid = int(open(os.path.join(state, name + ".pid")).read())
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass
    sys.exit(0)
if command == "container":
    sys.exit(1)  # `container inspect`: no container is known after `rm`
if command != "run":
    sys.exit(0)
env, cwd, name, i = {}, "/", None, 0
takes_value = {"--name", "--volume", "--env", "--device", "--ulimit", "--network"}
while i < len(rest) and rest[i].startswith("-"):
    flag = rest[i]
    if flag in takes_value:
        value = rest[i + 1]
        i += 2
        if flag == "--name":
            name = value
        elif flag == "--env":
            k, _, v = value.partition("=")
            env[k] = v
    else:
        i += 1
        if flag.startswith("--workdir="):
            cwd = flag.split("=", 1)[1]
image, argv = rest[i], rest[i + 1:]
if name:
    with open(os.path.join(state, name + ".pid"), "w") as f:
        f.write(str(os.getpid()))
os.chdir(cwd)
os.execvpe(argv[0], argv, env)
"#;

const SUITE: &str = "\
_base:
  inherits: _defaults
  install_group: tiny
  weight: 1
  max_duration: 30
good:
  inherits: _base
  definition: benchmarks/good
slow:
  inherits: _base
  definition: benchmarks/slow
  max_duration: 2
";

/// Reports 6 rates on the data channel: smuggled in stdout when it is stdout (as in a
/// container), else on its pipe.
const GOOD: &str = r#"import json, os, sys
fd = int(os.environ['DATA_FD'])
def send(obj):
    text = json.dumps(obj) + '\n'
    if fd == 1:
        h = text.encode().hex().translate(str.maketrans('abcdef', ':;<=>?'))
        sys.stdout.write('\x1b[' + h + 'z')
        sys.stdout.flush()
    else:
        os.write(fd, text.encode())
for i in range(6):
    send({'task': 'train', 'rate': 100.0 + i, 'units': 'items/s'})
print('bye')
"#;

struct Containers {
    project: Project,
    bin: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Containers {
    fn new() -> Containers {
        let project = Project::new(SUITE);
        project.bench("good", GOOD);
        project.bench(
            "slow",
            "import os, time\nopen('started', 'w').close()\ntime.sleep(60)\n",
        );
        let bin = tempfile::tempdir().expect("tempdir");
        for name in ["podman", "docker"] {
            let path = bin.path().join(name);
            fs_err::write(&path, FAKE_RUNTIME).expect("fake runtime");
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        Containers {
            project,
            bin,
            state: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn system(&self, text: &str) -> String {
        let path = self.project.path().join("system.yaml");
        fs_err::write(&path, text).expect("system file");
        path.display().to_string()
    }

    fn command(&self, system: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = self.project.run_command(args);
        // The preflight's disk check depends on the machine; `check` is tested on its own.
        cmd.args(["--system", system, "--no-check"])
            .env("PATH", with_path(self.bin.path()))
            .env("FAKE_RUNTIME_LOG", self.log_path());
        cmd
    }

    fn log_path(&self) -> std::path::PathBuf {
        self.state.path().join("calls.log")
    }

    /// The runtime's calls, each a list of words.
    fn calls(&self) -> Vec<Vec<String>> {
        fs_err::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect()
    }

    /// The `.data` rate lines of `good` in run `run`, without their times.
    fn rates(&self, run: &str) -> Vec<String> {
        self.project
            .data_file(run, "good.D0")
            .lines()
            .filter(|l| l.contains("\"rate\""))
            .map(|l| {
                let value: serde_json::Value = serde_json::from_str(l).expect("JSON line");
                value["data"]["rate"].to_string()
            })
            .collect()
    }
}

/// The report's row of `good`, in the text report on stdout.
fn good_row(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("good "))
        .unwrap_or_else(|| panic!("no row of good in\n{stdout}"))
        .to_string()
}

#[test]
fn podman_runs_each_process_in_the_image_with_the_same_files_and_report_as_the_host() {
    let c = Containers::new();
    let host = run(&mut c.command(
        &c.system("system:\n  arch: cpu\n"),
        &["--run-name", "host", "--select", "good"],
    ));
    assert_eq!(host.code, 0, "{}", host.stderr);
    let system = c.system(
        "system:\n  arch: cpu\n  container:\n    runtime: podman\n    image: localhost/milabench:cpu\n    \
         global_args: [--runtime, runc, --cgroup-manager=cgroupfs]\n    \
         args: [--ulimit, \"nofile=1024:1024\"]\n",
    );
    let boxed = run(&mut c.command(&system, &["--run-name", "boxed", "--select", "good"]));
    assert_eq!(boxed.code, 0, "{}", boxed.stderr);
    assert_eq!(c.rates("boxed"), c.rates("host"));
    assert_eq!(c.rates("host").len(), 6);
    assert_eq!(c.rates("host")[0], "100.0");
    assert_eq!(good_row(&boxed.stdout), good_row(&host.stdout));
    let calls = c.calls();
    let base = c.project.path().join("base").display().to_string();
    let runs: Vec<&Vec<String>> = calls
        .iter()
        .filter(|w| w.iter().any(|word| word == "--rm"))
        .collect();
    assert_eq!(runs.len(), 1, "one process, one container: {calls:?}");
    let argv = runs[0];
    assert_eq!(
        argv[..8],
        [
            "podman",
            "--runtime",
            "runc",
            "--cgroup-manager=cgroupfs",
            "run",
            "--rm",
            "--name",
            "milabench-boxed-good.D0"
        ]
    );
    for folder in ["data", "cache", "runs", "extra"] {
        let mount = format!("{base}/{folder}:{base}/{folder}");
        assert!(argv.contains(&mount), "{mount} in {argv:?}");
    }
    assert!(argv.contains(&"DATA_FD=1".to_string()), "{argv:?}");
    assert!(
        argv.contains(&"MILABENCH_USE_STDOUT=1".to_string()),
        "{argv:?}"
    );
    assert!(argv.iter().any(|w| w == "localhost/milabench:cpu"));
    // The image was made ready once, before the first benchmark.
    let ready: Vec<&Vec<String>> = calls
        .iter()
        .filter(|w| w.contains(&"inspect".to_string()))
        .collect();
    assert!(!ready.is_empty(), "{calls:?}");
    assert!(
        !calls.iter().any(|w| w.contains(&"rm".to_string())),
        "a clean end removes nothing: {calls:?}"
    );
}

/// The environments come with the image: `run` installs nothing on the host (this project's
/// environment is no real one, an install would fail) and prepares in the image.
#[test]
fn run_with_its_setup_installs_nothing_on_the_host_and_prepares_in_the_image() {
    let c = Containers::new();
    fs_err::write(
        c.project.path().join("benchmarks/good/prepare.py"),
        "open('prepared', 'w').close()\n",
    )
    .expect("prepare.py");
    let system = c.system("system:\n  arch: cpu\n  container: {image: img}\n");
    let out = run(c
        .project
        .milabench()
        .args([
            "run",
            "--config",
            "suite.yaml",
            "--system",
            &system,
            "--no-check",
        ])
        .args(["--run-name", "setup", "--select", "good"])
        .env("PATH", with_path(c.bin.path()))
        .env("FAKE_RUNTIME_LOG", c.log_path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(c.rates("setup").len(), 6);
    assert!(c.project.path().join("benchmarks/good/prepared").exists());
    let containers: Vec<String> = c
        .calls()
        .iter()
        .filter_map(|w| {
            w.iter()
                .position(|x| x == "--name")
                .map(|at| w[at + 1].clone())
        })
        .collect();
    assert_eq!(
        containers,
        ["milabench-setup-good", "milabench-setup-good.D0"],
        "the prepare step, then the run, each in the image: {:?}",
        c.calls()
    );
    let readied = c
        .calls()
        .iter()
        .filter(|w| w.contains(&"inspect".to_string()))
        .count();
    assert_eq!(
        readied,
        1,
        "the node is readied once for both: {:?}",
        c.calls()
    );
}

#[test]
fn the_python_tools_docker_image_runs_with_no_change_and_check_probes_the_runtime() {
    let c = Containers::new();
    let system = c.system(
        "system:\n  arch: cpu\n  docker_image: ghcr.io/mila-iqia/milabench:cpu\n  docker:\n    executable: docker\n    args: [--network, host]\n",
    );
    let out = run(&mut c.command(&system, &["--run-name", "py", "--select", "good"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(c.rates("py").len(), 6);
    let run_call = c
        .calls()
        .into_iter()
        .find(|w| w.get(1).is_some_and(|w| w == "run"))
        .expect("docker run");
    assert_eq!(run_call[0], "docker");
    assert!(
        !run_call.contains(&"--network=host".to_string()),
        "the file's --network wins: {run_call:?}"
    );
    let check = run(c
        .project
        .milabench()
        .args([
            "check",
            "--config",
            "suite.yaml",
            "--system",
            &system,
            "--format",
            "json",
        ])
        .env("PATH", with_path(c.bin.path()))
        .env("FAKE_RUNTIME_LOG", c.log_path()));
    let checks: serde_json::Value = serde_json::from_str(&check.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", check.stdout, check.stderr));
    let runtime = checks
        .as_array()
        .expect("list")
        .iter()
        .find(|c| c["name"] == "container runtime on local")
        .unwrap_or_else(|| panic!("no runtime check in {checks}"));
    assert_eq!(runtime["status"], "ok", "{runtime}");
}

#[test]
fn a_missing_runtime_is_a_check_failure_naming_the_node_and_the_fix() {
    let c = Containers::new();
    let system = c.system("system:\n  arch: cpu\n  container: {runtime: podman, executable: /nonexistent/podman, image: i}\n");
    let check = run(c.project.milabench().args([
        "check",
        "--config",
        "suite.yaml",
        "--system",
        &system,
        "--format",
        "json",
    ]));
    let checks: serde_json::Value = serde_json::from_str(&check.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", check.stdout, check.stderr));
    let runtime = checks
        .as_array()
        .expect("list")
        .iter()
        .find(|c| c["name"] == "container runtime on local")
        .unwrap_or_else(|| panic!("no runtime check in {checks}"));
    assert_eq!(runtime["status"], "fail", "{runtime}");
    assert!(
        runtime["fix"]
            .as_str()
            .is_some_and(|f| f.contains("apt-get install podman")),
        "{runtime}"
    );
    assert_ne!(check.code, 0);
}

#[test]
fn a_bad_container_block_is_refused_with_the_key_and_the_fix() {
    let c = Containers::new();
    let system = c.system("system:\n  container: {runtime: lxc, image: i}\n");
    let out = run(&mut c.command(&system, &["--select", "good"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("`container.runtime: lxc`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("fix: write `runtime: podman`"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_container_flag_runs_in_the_image_and_a_timeout_removes_the_container() {
    let c = Containers::new();
    let system = c.system("system:\n  arch: cpu\n");
    let out = run(&mut c.command(
        &system,
        &["--run-name", "t", "--container", "img", "--select", "slow"],
    ));
    assert_eq!(
        out.code, 1,
        "the timeout fails the benchmark:\n{}",
        out.stderr
    );
    let calls = c.calls();
    assert!(
        calls
            .iter()
            .any(|w| w[..] == ["podman", "rm", "--force", "--time=0", "milabench-t-slow.D0"]),
        "{calls:?}"
    );
}

#[test]
fn docker_removes_a_timed_out_container_and_waits_until_it_is_gone() {
    let c = Containers::new();
    let system =
        c.system("system:\n  arch: cpu\n  docker_image: img\n  docker: {executable: docker}\n");
    let out = run(&mut c.command(&system, &["--run-name", "d", "--select", "slow"]));
    assert_eq!(
        out.code, 1,
        "the timeout fails the benchmark:\n{}",
        out.stderr
    );
    let calls = c.calls();
    let removal = calls
        .iter()
        .position(|w| w[..] == ["docker", "rm", "--force", "milabench-d-slow.D0"])
        .unwrap_or_else(|| panic!("no removal in {calls:?}"));
    assert_eq!(
        calls[removal + 1],
        ["docker", "container", "inspect", "milabench-d-slow.D0"],
        "then it waits until the container is gone"
    );
}

#[test]
fn ctrl_c_removes_the_container() {
    let c = Containers::new();
    let system = c.system("system:\n  arch: cpu\n");
    let mut cmd = c.command(
        &system,
        &[
            "--run-name",
            "int",
            "--container",
            "img",
            "--select",
            "slow",
        ],
    );
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("milabench starts");
    let started = c.project.path().join("benchmarks/slow/started");
    // Generous: a loaded machine starts Python slowly.
    wait_for_within(
        "the benchmark started in its container",
        Duration::from_secs(60),
        || started.exists(),
    );
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let mut waited = Duration::ZERO;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(waited < Duration::from_secs(30), "milabench did not stop");
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    };
    assert_eq!(code, Some(130));
    let calls = c.calls();
    assert!(
        calls.iter().any(|w| w[..]
            == [
                "podman",
                "rm",
                "--force",
                "--time=0",
                "milabench-int-slow.D0"
            ]),
        "{calls:?}"
    );
}
