//! `milabench install`, `pin` and `dev` against a local wheel folder: no package index is
//! reached. The uv tests bootstrap uv from a wheel kept in the user's cache folder (fetched
//! once with pip; skipped with a message when that is impossible).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{LoggedChild, Output, fixtures, milabench, run, wait_for};

/// A throwaway project: a suite with one benchmark `tiny` (install group `tinygroup`) whose
/// requirements come from `wheels/`.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(requirements: &str, extra_bench_settings: &str) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs_err::create_dir_all(root.join("bench/tiny")).expect("mkdir");
        fs_err::write(root.join("bench/tiny/requirements.in"), requirements).expect("write");
        let wheels = root.join("wheels");
        for (name, version) in [("voir", "0.2.99"), ("tinydep", "1.0"), ("tinydep", "2.0")] {
            make_wheel(&wheels, name, version);
        }
        let suite = format!(
            "tiny:\n  inherits: _defaults\n  enabled: true\n  tags: [monogpu]\n  definition: bench/tiny\n  install_group: tinygroup\n  pip:\n    args: [--no-index, --find-links, {}]\n{extra_bench_settings}",
            wheels.display()
        );
        fs_err::write(root.join("suite.yaml"), suite).expect("write");
        Project { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn base(&self) -> PathBuf {
        self.root().join("base")
    }

    fn venv(&self) -> PathBuf {
        self.base().join("venv/tinygroup")
    }

    /// `milabench <command> --config suite.yaml --base base <args>`.
    fn cmd(&self, command: &str, args: &[&str]) -> Command {
        let mut cmd = milabench(self.root());
        cmd.arg(command)
            .args(["--config", "suite.yaml", "--base"])
            .arg(self.base())
            .args(args);
        cmd
    }
}

pub(crate) fn make_wheel(dir: &Path, name: &str, version: &str) {
    let status = Command::new("python3")
        .arg(fixtures().join("install/make_wheel.py"))
        .arg(dir)
        .args([name, version])
        .status()
        .expect("python3 runs");
    assert!(status.success());
}

fn python(venv: &Path, code: &str) -> String {
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", code])
        .output()
        .expect("the venv's python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn pip_install_then_nothing_to_do_then_dev() {
    let project = Project::new("tinydep\n", "");
    let first = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(
        first.stdout.contains("tinygroup: installed in"),
        "{}",
        first.stdout
    );
    assert!(
        first.stderr.contains("no requirements.cpu.txt for `tiny`"),
        "{}",
        first.stderr
    );
    assert_eq!(
        python(
            &project.venv(),
            "import voir, benchmate, tinydep; print(voir.__version__, bool(benchmate.__version__), tinydep.__version__)"
        ),
        "0.2.99 True 2.0"
    );
    assert!(project.venv().join(".milabench-install.json").is_file());
    let log = fs_err::read_to_string(project.base().join("logs/install/tinygroup.log"))
        .expect("the log is kept");
    assert!(log.contains("pip install"), "{log}");

    let second = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second
            .stdout
            .contains("tinygroup: up to date, nothing to do"),
        "{}",
        second.stdout
    );

    // A changed requirement file means a rebuild.
    fs_err::write(
        project.root().join("bench/tiny/requirements.in"),
        "tinydep==1.0\n",
    )
    .expect("write");
    let third = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert!(third.stdout.contains("installed in"), "{}", third.stdout);
    assert_eq!(
        python(
            &project.venv(),
            "import tinydep; print(tinydep.__version__)"
        ),
        "1.0"
    );

    let dev = run(&mut project.cmd(
        "dev",
        &[
            "tiny",
            "--",
            "python",
            "-c",
            "import os, sys; print(sys.prefix == os.environ['VIRTUAL_ENV'], os.environ['MILABENCH_DIR_DATA'], os.getcwd())",
        ],
    ));
    assert_eq!(dev.code, 0, "{}", dev.stderr);
    let words: Vec<&str> = dev.stdout.split_whitespace().collect();
    assert_eq!(words[0], "True", "{}", dev.stdout);
    assert!(words[1].ends_with("base/data"), "{}", dev.stdout);
    assert!(words[2].ends_with("bench/tiny"), "{}", dev.stdout);
}

/// Writes the gate file when dropped, so a failing test never leaves an install blocked.
struct OpenGateOnDrop(PathBuf);

impl Drop for OpenGateOnDrop {
    fn drop(&mut self) {
        let _ = fs_err::write(&self.0, "open");
    }
}

#[test]
fn two_installs_of_a_group_at_once_build_it_once_and_a_damaged_venv_is_rebuilt() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    let project = Project::new("tinydep\n", "");
    // The first install's `python -m venv <the group's venv>` (the installer steps after it do
    // not inherit PYTHONPATH) says so and waits for the gate: the first install holds the
    // group, about to build it. (It stops waiting too when the scratch folder is gone.)
    let hooks = project.root().join("hooks");
    fs_err::create_dir_all(&hooks).expect("mkdir");
    fs_err::write(
        hooks.join("sitecustomize.py"),
        "import os, sys, time\n\
         if sys.orig_argv[-3:] == ['-m', 'venv', os.environ['TEST_BLOCK_VENV']]:\n    \
         open(os.environ['TEST_BLOCKED'], 'w').close()\n    \
         while os.path.exists(os.environ['TEST_BLOCKED']) and not os.path.exists(os.environ['TEST_GATE']):\n        \
         time.sleep(0.05)\n",
    )
    .expect("write");
    let (blocked, gate) = (project.root().join("blocked"), project.root().join("gate"));
    let gate_guard = OpenGateOnDrop(gate.clone());
    let first = project
        .cmd("install", &["--installer", "pip"])
        .env("PYTHONPATH", &hooks)
        .env("TEST_BLOCK_VENV", project.venv())
        .env("TEST_BLOCKED", &blocked)
        .env("TEST_GATE", &gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    wait_for("the first install is inside the venv", || blocked.exists());

    let mut second = project
        .cmd("install", &["--installer", "pip"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stderr = std::io::BufReader::new(second.stderr.take().expect("piped"));
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let waiting = format!(
        "tinygroup: waiting for pid {}, which is installing this group",
        first.id()
    );
    let mut second_stderr = String::new();
    wait_for("the second install waits for the first, naming it", || {
        second_stderr.extend(seen.try_iter().map(|l| l + "\n"));
        second_stderr.contains(&waiting)
    });
    drop(gate_guard);

    let first = first.wait_with_output().expect("first ends");
    let first_stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        first.status.success(),
        "{first_stdout}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        first_stdout.contains("tinygroup: installed in"),
        "{first_stdout}"
    );
    let second = second.wait_with_output().expect("second ends");
    let second_stdout = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "{second_stdout}{second_stderr}");
    assert!(
        second_stdout.contains("tinygroup: up to date, nothing to do"),
        "the waiter uses what the first built: {second_stdout}"
    );
    assert_eq!(
        python(
            &project.venv(),
            "import voir, tinydep; print(tinydep.__version__)"
        ),
        "2.0"
    );

    // A venv damaged behind milabench's back is not up to date, whatever its fingerprint says.
    fs_err::remove_file(project.venv().join("pyvenv.cfg")).expect("remove");
    let repaired = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(repaired.code, 0, "{}", repaired.stderr);
    assert!(
        repaired.stdout.contains("installed in"),
        "{}",
        repaired.stdout
    );
    assert!(project.venv().join("pyvenv.cfg").is_file());
}

#[test]
fn missing_package_fails_without_fingerprint_and_retries_cleanly() {
    let project = Project::new("tinydep\nzzz-no-such-package-milabench\n", "");
    let out = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("tinygroup: FAILED"), "{}", out.stdout);
    for needle in [
        "install group `tinygroup`",
        "zzz-no-such-package-milabench",
        "logs/install/tinygroup.log",
    ] {
        assert!(out.stderr.contains(needle), "{needle} in {}", out.stderr);
    }
    assert!(!project.venv().join(".milabench-install.json").exists());

    let dev = run(&mut project.cmd("dev", &["tiny", "--", "true"]));
    assert_eq!(dev.code, 2, "{}", dev.stderr);
    assert!(
        dev.stderr.contains("milabench install --select tiny"),
        "{}",
        dev.stderr
    );

    fs_err::write(
        project.root().join("bench/tiny/requirements.in"),
        "tinydep\n",
    )
    .expect("write");
    let retry = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(retry.code, 0, "{}", retry.stderr);
    assert!(retry.stdout.contains("installed in"), "{}", retry.stdout);
}

/// A suite's `pip.overrides` reach uv only (`--overrides`): with pip the install is refused
/// before anything is made, naming the setting and the fix (exit status 2).
#[test]
fn pip_overrides_are_refused_with_pip_naming_uv() {
    let project = Project::new("tinydep\n", "    overrides: [tinydep==1.0]\n");
    let out = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "install group `tinygroup` sets `pip.overrides` (tinydep==1.0), which only uv applies"
        ),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--installer uv"), "{}", out.stderr);
    assert!(!project.venv().exists(), "no venv was made");
}

#[test]
fn bad_python_and_bad_base_are_named() {
    let project = Project::new("tinydep\n", "  requires_python: \">=9.1\"\n");
    let too_old = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(too_old.code, 2, "{}", too_old.stderr);
    assert!(
        too_old
            .stderr
            .contains("`tinygroup` needs Python 9.1 or newer"),
        "{}",
        too_old.stderr
    );

    let missing = run(&mut project.cmd(
        "install",
        &["--installer", "pip", "--python", "/no/such/python3"],
    ));
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/no/such/python3` does not exist"),
        "{}",
        missing.stderr
    );

    // A base folder that cannot be created (its parent is a file): the path is named.
    let project = Project::new("tinydep\n", "");
    fs_err::write(project.root().join("blocker"), "").expect("write");
    let mut cmd = milabench(project.root());
    cmd.args([
        "install",
        "--installer",
        "pip",
        "--config",
        "suite.yaml",
        "--base",
    ])
    .arg(project.root().join("blocker/base"));
    let blocked = run(&mut cmd);
    assert_ne!(blocked.code, 0);
    assert!(
        blocked.stderr.contains("blocker/base"),
        "{}",
        blocked.stderr
    );
}

/// A folder holding the `uv` wheel, downloaded once into the user's cache folder; `None` (the
/// uv tests then skip) when it cannot be had.
fn uv_wheels() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("milabench-rs-tests/wheels");
    let has_uv = |dir: &Path| {
        fs_err::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("uv-"))
        })
    };
    if !has_uv(&cache) {
        let _ = Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps", "--dest"])
            .arg(&cache)
            .arg("uv")
            .status();
    }
    has_uv(&cache).then_some(cache)
}

/// Whether a `.pyc` file whose path names `name` (its module or package) lies under `dir`.
fn has_bytecode_of(dir: &Path, name: &str) -> bool {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            has_bytecode_of(&path, name)
        } else {
            path.extension().is_some_and(|e| e == "pyc") && path.to_string_lossy().contains(name)
        }
    })
}

/// `PATH` without any folder holding `uv`.
fn path_without_uv() -> String {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|dir| !Path::new(dir).join("uv").exists())
        .collect::<Vec<_>>()
        .join(":")
}

#[test]
#[allow(clippy::print_stderr)]
fn uv_bootstrap_install_and_pin() {
    let Some(wheels) = uv_wheels() else {
        eprintln!("SKIPPED: no uv wheel in the cache and none could be downloaded");
        return;
    };
    let project = Project::new("tinydep\n", "");
    let with_uv_wheels = |mut cmd: Command| {
        cmd.env("PATH", path_without_uv())
            .env("UV_CACHE_DIR", project.base().join("cache/uv"))
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", &wheels)
            // Only the installer may write bytecode: no import done meanwhile writes any.
            .env("PYTHONDONTWRITEBYTECODE", "1");
        cmd
    };
    let out = run(&mut with_uv_wheels(project.cmd("install", &[])));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(project.base().join("tools/uv/bin/uv").is_file());
    assert!(
        has_bytecode_of(&project.venv(), "tinydep"),
        "uv installs compile bytecode (as pip does), so no benchmark start recompiles"
    );
    assert!(out.stdout.contains("installed in"), "{}", out.stdout);
    assert!(out.stdout.contains("with uv "), "{}", out.stdout);
    assert!(project.base().join("cache/uv").is_dir());

    let pin = run(&mut with_uv_wheels(
        project.cmd("pin", &["--variant", "cpu"]),
    ));
    assert_eq!(pin.code, 0, "{}{}", pin.stdout, pin.stderr);
    let pinned = fs_err::read_to_string(project.root().join("bench/tiny/requirements.cpu.txt"))
        .expect("pinned file written");
    assert!(pinned.contains("milabench pin --variant cpu"), "{pinned}");
    assert!(pinned.contains("tinydep==2.0"), "{pinned}");

    // The pinned file is what the next install uses (a new input: rebuilt, no warning).
    let again = run(&mut with_uv_wheels(project.cmd("install", &[])));
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("installed in"), "{}", again.stdout);
    assert!(
        !again.stderr.contains("no requirements.cpu.txt"),
        "{}",
        again.stderr
    );
    let recorded = fs_err::read_to_string(project.venv().join(".milabench-install.json"))
        .expect("fingerprint");
    assert!(recorded.contains("requirements.cpu.txt"), "{recorded}");
    let last = run(&mut with_uv_wheels(project.cmd("install", &[])));
    assert!(last.stdout.contains("up to date"), "{}", last.stdout);
}

/// A failed prepare step costs its benchmark, not the run: the benchmark is recorded as failed
/// with the reason (its `.data` says which step failed and where the log is), the report counts
/// it, and the exit code says a benchmark failed (issue 36, item 5; before, nothing ran).
#[test]
fn a_failed_prepare_step_fails_its_benchmark_and_the_run_goes_on() {
    let project = Project::new("tinydep\n", "");
    fs_err::write(
        project.root().join("bench/tiny/prepare.py"),
        "raise SystemExit('no dataset here')\n",
    )
    .expect("write");
    let out = run(project
        .cmd("run", &["--run-name", "prepfail"])
        .env("MILABENCH_INSTALLER", "pip"));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("prepare failed for tiny: the other benchmarks run"),
        "{}",
        out.stderr
    );
    let record = fs_err::read_to_string(project.base().join("runs/prepfail/tiny.data"))
        .expect("the failure is recorded in the run folder");
    assert!(
        record.contains("\"event\":\"config\"")
            && record.contains("its prepare step failed")
            && record.contains("\"return_code\":1"),
        "{record}"
    );
    assert!(out.stdout.contains("tiny  |    1 |"), "{}", out.stdout);
}

/// `run` resolves its suite once (a suite warning is said once, not by each of install, prepare
/// and run) and prepares with the arguments it runs with: a `--fidelity` preset reaches the
/// prepare step (issue 23).
#[test]
fn run_resolves_once_and_prepares_with_its_fidelity() {
    let project = Project::new("tinydep\n", "  wieght: 2\n  argv:\n    --size: 1\n");
    let seen = project.root().join("prepare-argv.txt");
    fs_err::write(
        project.root().join("bench/tiny/prepare.py"),
        format!(
            "import sys\nopen({:?}, 'w').write(' '.join(sys.argv[1:]))\n",
            seen.display()
        ),
    )
    .expect("write");
    fs_err::create_dir_all(project.root().join("fidelity")).expect("mkdir");
    fs_err::write(
        project.root().join("fidelity/smoke.yaml"),
        "tiny:\n  argv:\n    --size: 7\n",
    )
    .expect("write");
    let out = run(project
        .cmd("run", &["--run-name", "once", "--fidelity", "smoke"])
        .env("MILABENCH_INSTALLER", "pip"));
    assert_eq!(
        out.stderr.matches("wieght").count(),
        1,
        "the suite warning is said once: {}",
        out.stderr
    );
    let argv = fs_err::read_to_string(&seen).expect("prepare ran");
    assert!(argv.contains("--size 7"), "prepare got {argv}");
}

/// An existing environment `site` (itself a venv, as a site's module or a user's own may be)
/// with `tinydep 1.0`, a stand-in `torch` wheel of `torch_version` and the `extra` packages
/// (name, version) unpacked into it.
fn existing_environment(root: &Path, torch_version: &str, extra: &[(&str, &str)]) -> PathBuf {
    let site = root.join("site");
    if !site.exists() {
        let status = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&site)
            .status()
            .expect("python3 runs");
        assert!(status.success());
    }
    let packages = PathBuf::from(python(
        &site,
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ));
    for entry in fs_err::read_dir(&packages)
        .expect("site-packages")
        .flatten()
    {
        if entry.file_name().to_string_lossy().starts_with("torch") {
            fs_err::remove_dir_all(entry.path()).expect("remove the old torch");
        }
    }
    let wheels = root.join("site-wheels");
    let mut packages_in = vec![("tinydep", "1.0"), ("torch", torch_version)];
    packages_in.extend_from_slice(extra);
    for (name, version) in packages_in {
        make_wheel(&wheels, name, version);
        let wheel = format!("{name}-{version}-py3-none-any.whl");
        let status = Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(wheels.join(wheel))
            .arg(&packages)
            .status()
            .expect("python3 runs");
        assert!(status.success());
    }
    site.join("bin/python")
}

/// Issue 24, item 1: a group naming an existing interpreter gets an overlay venv that uses what
/// the interpreter has and adds what it lacks; `--dry-run` says which is which and changes
/// nothing; the interpreter's torch version is in the fingerprint.
#[test]
fn an_existing_interpreter_gets_an_overlay_that_adds_only_what_it_lacks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site_python = existing_environment(dir.path(), "2.5.1", &[]);
    let project = Project::new(
        "tinydep==1.0\n",
        &format!("  python: {}\n", site_python.display()),
    );
    let dry = run(&mut project.cmd("install", &["--installer", "pip", "--dry-run"]));
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    for expected in [
        "tinygroup: would be built",
        "overlay venv (--system-site-packages) over the existing",
        "torch 2.5.1)",
        "  present  tinydep==1.0 (tinydep 1.0)",
        "  add      voir",
        "  add      benchmate",
        "tinygroup: 1 present, 2 to add, 0 to replace",
        "nothing was changed",
    ] {
        assert!(dry.stdout.contains(expected), "{expected}:\n{}", dry.stdout);
    }
    assert!(!project.venv().exists(), "a dry run builds nothing");

    let install = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    let cfg = fs_err::read_to_string(project.venv().join("pyvenv.cfg")).expect("pyvenv.cfg");
    assert!(cfg.contains("include-system-site-packages = true"), "{cfg}");
    assert_eq!(
        python(
            &project.venv(),
            "import tinydep, torch, voir; print(tinydep.__file__.startswith(__import__('sys').prefix), torch.__version__, voir.__version__)"
        ),
        "False 2.5.1 0.2.99",
        "tinydep and torch come from the existing environment, voir from the overlay"
    );
    let again = run(&mut project.cmd("install", &["--installer", "pip", "--dry-run"]));
    assert!(
        again.stdout.contains("tinygroup: up to date"),
        "{}",
        again.stdout
    );
    assert!(
        again.stdout.contains("3 present, 0 to add"),
        "{}",
        again.stdout
    );

    // The site's torch changes: the overlay is rebuilt over the new one.
    existing_environment(dir.path(), "2.6.0", &[]);
    let rebuilt = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert!(
        rebuilt.stdout.contains("installed in"),
        "{}",
        rebuilt.stdout
    );
    let recorded = fs_err::read_to_string(project.venv().join(".milabench-install.json"))
        .expect("fingerprint");
    assert!(recorded.contains("torch 2.6.0"), "{recorded}");
}

/// Issue 47: on Python < 3.12 `venv` gives an overlay its own old setuptools (65 for 3.11),
/// which hid the interpreter's newer one, so torch's `setuptools>=77` needed the index on an
/// offline node; the overlay now sees the interpreter's.
#[test]
fn an_overlay_sees_the_setuptools_of_the_existing_interpreter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site_python = existing_environment(dir.path(), "2.5.1", &[("setuptools", "99.0")]);
    let project = Project::new(
        "tinydep\n",
        &format!("  python: {}\n", site_python.display()),
    );
    let install = run(&mut project.cmd("install", &["--installer", "pip"]));
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    assert_eq!(
        python(
            &project.venv(),
            "import setuptools; print(setuptools.__version__)"
        ),
        "99.0",
        "the interpreter's setuptools, not one the overlay was seeded with"
    );
}

/// An overlay keeps what the existing interpreter has, in whatever version: it installs each
/// benchmark's `requirements.in` (not the pinned file, whose `torch==` and `tinydep==` differ
/// from the site's), with no arch constraints, and with pip even when uv is the installer
/// (uv would not see the site's packages and would fetch torch again): here `uv` is a stand-in
/// that fails if it is used for anything but its version.
#[test]
fn an_overlay_keeps_the_versions_of_the_existing_interpreter_and_never_uses_uv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site_python = existing_environment(dir.path(), "2.5.1", &[("voir", "0.2.98")]);
    let project = Project::new(
        "tinydep\ntorch\n",
        &format!("  python: {}\n", site_python.display()),
    );
    fs_err::write(
        project.root().join("bench/tiny/requirements.cpu.txt"),
        "tinydep==2.0\ntorch==2.9.0\n",
    )
    .expect("pinned file");
    let fake = project.root().join("fake-bin");
    fs_err::create_dir_all(&fake).expect("mkdir");
    let uv = fake.join("uv");
    fs_err::write(
        &uv,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'uv 0.9.0'; exit 0; }\necho \"uv was used: $*\" >&2\nexit 3\n",
    )
    .expect("fake uv");
    fs_err::set_permissions(&uv, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dry = run(project
        .cmd("install", &["--installer", "uv", "--dry-run"])
        .env("PATH", &path));
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    for expected in [
        "  present  tinydep (tinydep 1.0)",
        "  present  torch (torch 2.5.1)",
        "  present  voir (voir 0.2.98)",
        "tinygroup: 3 present, 1 to add, 0 to replace",
    ] {
        assert!(dry.stdout.contains(expected), "{expected}:\n{}", dry.stdout);
    }
    let install = run(project
        .cmd("install", &["--installer", "uv"])
        .env("PATH", &path));
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    assert_eq!(
        python(
            &project.venv(),
            "import tinydep, torch, voir; print(tinydep.__version__, torch.__version__, voir.__version__)"
        ),
        "1.0 2.5.1 0.2.98",
        "the site's tinydep, torch and voir"
    );
    // The benchmarks' launcher is the overlay's own, running the overlay's Python.
    let launcher = fs_err::read_to_string(project.venv().join("bin/voir")).expect("bin/voir");
    assert!(
        launcher.starts_with(&format!(
            "#!{}",
            project.venv().join("bin/python").display()
        )),
        "{launcher}"
    );
    let again = run(project
        .cmd("install", &["--installer", "uv", "--dry-run"])
        .env("PATH", &path));
    assert!(
        again.stdout.contains("tinygroup: up to date"),
        "{}",
        again.stdout
    );
}

/// `--python` makes every group an overlay, which pip installs: no uv is looked for or
/// bootstrapped (here the interpreter has no pip to bootstrap it with, and `uv` on `PATH` is
/// broken), so an offline machine with a site Python needs no uv at all.
#[test]
fn with_python_named_no_uv_is_bootstrapped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site_python = existing_environment(dir.path(), "2.5.1", &[]);
    let project = Project::new("tinydep\n", "");
    let fake = project.root().join("fake-bin");
    fs_err::create_dir_all(&fake).expect("mkdir");
    fs_err::write(fake.join("uv"), "#!/bin/sh\necho broken >&2\nexit 3\n").expect("fake uv");
    fs_err::set_permissions(
        fake.join("uv"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let site = site_python.to_str().expect("utf8");
    let install = run(project
        .cmd("install", &["--installer", "uv", "--python", site])
        .env("PATH", &path));
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    assert!(install.stdout.contains("with pip"), "{}", install.stdout);
    assert!(
        !project.base().join("tools/uv").exists(),
        "no uv was bootstrapped"
    );
}

/// Whether this machine lets a process take a network namespace of its own (no route out).
fn can_cut_the_network() -> bool {
    Command::new("unshare")
        .args(["-rn", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Issue 24, item 2: `bundle` downloads what a group installs into a wheelhouse; `install
/// --offline --find-links` builds the group from it alone, with the network cut off (a network
/// namespace without a route, where the machine allows one) and the original wheel folder gone.
#[test]
fn a_bundle_installs_offline_with_nothing_fetched() {
    let project = Project::new("tinydep==1.0\n", "");
    // The suite's own `--no-index --find-links wheels` stand for the package index.
    let bundle_dir = project.root().join("wheelhouse");
    let bundle = run(&mut project.cmd(
        "bundle",
        &[
            "--installer",
            "pip",
            "-o",
            bundle_dir.to_str().expect("utf8"),
        ],
    ));
    assert_eq!(bundle.code, 0, "{}{}", bundle.stdout, bundle.stderr);
    assert!(
        bundle.stdout.contains("tinygroup: downloaded into"),
        "{}",
        bundle.stdout
    );
    let mut files: Vec<String> = fs_err::read_dir(&bundle_dir)
        .expect("wheelhouse")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "tinydep-1.0-py3-none-any.whl",
            "voir-0.2.99-py3-none-any.whl"
        ],
        "the pinned version and voir, nothing else"
    );

    fs_err::remove_dir_all(project.root().join("wheels")).expect("the 'index' goes away");
    let mut install = project.cmd(
        "install",
        &[
            "--installer",
            "pip",
            "--offline",
            "--find-links",
            bundle_dir.to_str().expect("utf8"),
        ],
    );
    let cut = can_cut_the_network();
    if cut {
        let program = install.get_program().to_owned();
        let args: Vec<_> = install.get_args().map(|a| a.to_owned()).collect();
        let mut wrapped = Command::new("unshare");
        wrapped.arg("-rn").arg(program).args(args);
        wrapped.current_dir(project.root());
        for (key, value) in install.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        install = wrapped;
    }
    let out = run(&mut install);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("tinygroup: installed in"),
        "{}",
        out.stdout
    );
    assert_eq!(
        python(
            &project.venv(),
            "import tinydep, voir; print(tinydep.__version__, voir.__version__)"
        ),
        "1.0 0.2.99"
    );
    let log = fs_err::read_to_string(project.base().join("logs/install/tinygroup.log"))
        .expect("the log is kept");
    assert!(log.contains("--no-index"), "{log}");
    assert!(log.contains("wheelhouse"), "{log}");
    assert!(!log.contains("Downloading"), "nothing was fetched:\n{log}");

    // Offline without a wheelhouse is refused, saying what to add.
    let refused = run(&mut project.cmd("install", &["--offline"]));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("--find-links"),
        "{}",
        refused.stderr
    );
}

/// Issue 38, item 12: SIGTERM to `install` (sent to its pid alone, as `kill` and service
/// managers do) killed it with 143 and left the installer, reparented to pid 1, writing into the
/// venv. The installer's process group is stopped, and the install ends as interrupted (130).
#[test]
fn sigterm_to_install_stops_the_installer_and_exits_130() {
    use std::process::Stdio;
    let project = Project::new("tinydep\n", "");
    // The installer's `python -m venv <the group's venv>` writes its pid and waits (until the
    // scratch folder is gone, so a failing test leaves nothing behind).
    let hooks = project.root().join("hooks");
    fs_err::create_dir_all(&hooks).expect("mkdir");
    fs_err::write(
        hooks.join("sitecustomize.py"),
        "import os, sys, time\n\
         if sys.orig_argv[-3:] == ['-m', 'venv', os.environ['TEST_BLOCK_VENV']]:\n    \
         open(os.environ['TEST_BLOCKED'] + '.part', 'w').write(str(os.getpid()))\n    \
         os.rename(os.environ['TEST_BLOCKED'] + '.part', os.environ['TEST_BLOCKED'])\n    \
         while os.path.exists(os.environ['TEST_BLOCKED']):\n        \
         time.sleep(0.05)\n",
    )
    .expect("write");
    let blocked = project.root().join("blocked");
    let mut milabench = LoggedChild::spawn(
        project
            .cmd("install", &["--installer", "pip"])
            .env("PYTHONPATH", &hooks)
            .env("TEST_BLOCK_VENV", project.venv())
            .env("TEST_BLOCKED", &blocked),
    );
    milabench.wait_for("the installer is running", Duration::from_secs(20), || {
        blocked.exists()
    });
    let installer: i32 = fs_err::read_to_string(&blocked)
        .expect("pid")
        .parse()
        .expect("a pid");
    milabench.signal("-TERM");
    let Output {
        code,
        stdout,
        stderr,
    } = milabench.end_within(Duration::from_secs(40));
    assert_eq!(code, 130, "{stdout}{stderr}");
    assert!(stdout.contains("tinygroup"), "{stdout}{stderr}");
    wait_for("the installer is stopped too", || {
        !Command::new("kill")
            .args(["-0", &installer.to_string()])
            .stderr(Stdio::null())
            .status()
            .expect("kill starts")
            .success()
    });
}
