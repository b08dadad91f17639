//! Helpers shared by the CLI tests: a hermetic `milabench` command and snapshot filters.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The repository's `tests/fixtures` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A `milabench` command with no `MILABENCH_*` or device visibility variable from the caller,
/// a fixed arch, run name and base, run from `cwd`.
pub fn milabench(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_milabench"));
    hermetic(&mut cmd, cwd);
    cmd
}

/// Gives `cmd` (which runs `milabench`, maybe through a wrapper) the settings of
/// [`milabench`].
pub fn hermetic(cmd: &mut Command, cwd: &Path) {
    for (key, _) in std::env::vars() {
        if key.starts_with("MILABENCH_") || key.ends_with("_VISIBLE_DEVICES") {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(cwd)
        .env("MILABENCH_GPU_ARCH", "cpu")
        .env("MILABENCH_RUN_NAME", "golden")
        .env("MILABENCH_BASE", "/tmp/base")
        .env("USER", "tester");
}

/// Output of a finished command: exit code, stdout, stderr.
pub struct Output {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `cmd` and captures its output.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the milabench binary starts");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` as `cmd | head -1` does: reads its first line of stdout, then closes the pipe
/// while the command still writes (its output must be well over a pipe's 64 KiB); returns that
/// line and how the command ended.
pub fn first_line_then_close(cmd: &mut Command) -> (String, Output) {
    use std::io::BufRead as _;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a first line");
    // The reader is dropped here: the pipe is closed, as `head` closes it.
    let out = child.wait_with_output().expect("the binary ends");
    let output = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (line, output)
}

/// Runs `cmd` with its stdout a pipe whose reader is already gone (a `| head` that has ended
/// before the command writes): every write gets a broken pipe, however short the output.
pub fn into_closed_pipe(cmd: &mut Command) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = cmd
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the binary runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Replaces machine-specific paths with stable markers for snapshots.
pub fn redact(text: &str) -> String {
    let fixtures = fixtures();
    text.replace(&fixtures.display().to_string(), "[FIXTURES]")
}

/// Waits up to 20 s for `condition`, panicking with `what` when it never holds.
pub fn wait_for(what: &str, condition: impl FnMut() -> bool) {
    wait_for_within(what, Duration::from_secs(20), condition);
}

/// Waits up to `limit` for `condition` (for what a scheduler paces), panicking with `what`
/// when it never holds.
pub fn wait_for_within(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process whose stdout and stderr go to files (a pipe nobody reads could fill and
/// stall it), so that a test can wait on it and still show everything it printed. Dropped
/// while it runs (a test failed), it is killed.
pub struct LoggedChild {
    /// The process.
    pub child: std::process::Child,
    logs: tempfile::TempDir,
}

impl LoggedChild {
    /// Starts `cmd` with its stdout and stderr in files.
    pub fn spawn(cmd: &mut Command) -> LoggedChild {
        let logs = tempfile::tempdir().expect("tempdir");
        let file = |name: &str| fs_err::File::create(logs.path().join(name)).expect("log file");
        let child = cmd
            .stdout(file("stdout").into_parts().0)
            .stderr(file("stderr").into_parts().0)
            .spawn()
            .expect("the child starts");
        LoggedChild { child, logs }
    }

    /// What the child printed on stdout and stderr so far.
    pub fn printed(&self) -> (String, String) {
        let read =
            |name: &str| std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default();
        (read("stdout"), read("stderr"))
    }

    /// Waits up to `limit` for `condition` while the child runs. When the child ends first, or
    /// the time passes, stops it and panics with `what` and everything it printed, so that a
    /// failure says why the child never got there.
    pub fn wait_for(&mut self, what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + limit;
        while !condition() {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                self.fail(what, &format!("the child ended first ({status})"));
            }
            if Instant::now() >= deadline {
                self.fail(what, &format!("{} s passed", limit.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the child (when it still runs) and panics with `what`, `why` and its output.
    fn fail(&mut self, what: &str, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (stdout, stderr) = self.printed();
        panic!("timed out waiting: {what}: {why}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    }

    /// Sends `signal` (`-INT`, `-TERM`, `-HUP`) to the child.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill starts");
        assert!(sent.success(), "kill {signal} failed");
    }

    /// Waits up to `limit` for the child to end and gives its exit code (-1 when a signal ended
    /// it) and what it printed; kills it and panics with its output when it does not end.
    pub fn end_within(&mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                break status;
            }
            if Instant::now() >= deadline {
                self.fail("the child to end", &format!("{} s passed", limit.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (stdout, stderr) = self.printed();
        Output {
            code: status.code().unwrap_or(-1),
            stdout,
            stderr,
        }
    }
}

impl Drop for LoggedChild {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A folder holding an executable `nvidia-smi` that prints `output` and exits with `code`.
pub fn fake_smi(output: &str, code: i32) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nvidia-smi");
    let script = format!("#!/bin/sh\ncat <<'EOF'\n{output}\nEOF\nexit {code}\n");
    fs_err::write(&path, script).expect("write");
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// `PATH` with `dir` in front.
pub fn with_path(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}
