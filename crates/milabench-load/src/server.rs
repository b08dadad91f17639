//! A server started for one load run (`milabench load --serve`, and so the serving benchmarks
//! of a suite): started in its own process group on the address its command names, else a free
//! loopback port, waited for until its health endpoint answers with success (within a deadline,
//! failing early if it exits), watched during the run (its exit stops the run, keeping what was
//! measured), and stopped afterwards with every process it started: SIGTERM, then SIGKILL after
//! a grace period.
//!
//! The processes it started are found two ways, so that one that left the process group (a
//! worker in a session of its own) or was orphaned (a daemon's double fork) is stopped too: the
//! descendants of the server's process, and every process whose environment carries the mark
//! ([`SERVER_MARK_VAR`]) the server was started with, which children inherit.
//!
//! Its output goes where the caller says ([`ServerOutput`]): a log file, this process's stderr
//! (when stdout is kept for results), or this process's own stdout and stderr (under the
//! orchestrator those are kept with the run).

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::client::{Endpoint, Pool};
use crate::error::LoadError;
use crate::stop::Stop;

/// How often the health endpoint is asked while the server starts, and the server's process
/// looked at while it runs.
const POLL: Duration = Duration::from_millis(250);

/// How long the server has between SIGTERM and SIGKILL when it is stopped.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// How long after SIGTERM a server still running is said to be slow to stop.
const SLOW_STOP: Duration = Duration::from_secs(1);

/// The environment variable a started server (and so every process it starts) carries, with a
/// value of its own, so that the processes it left behind can be found when it is stopped.
pub const SERVER_MARK_VAR: &str = "MILABENCH_LOAD_SERVER";

/// A free TCP port on the loopback interface (the system's choice; free when asked, so a
/// server started soon after can take it).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// The value of `--NAME VALUE` or `--NAME=VALUE` in `argv` (the last one given).
fn flag_value<'a>(argv: &'a [String], name: &str) -> Option<&'a str> {
    let long = format!("--{name}");
    let mut found = None;
    for (i, arg) in argv.iter().enumerate() {
        if *arg == long {
            found = argv.get(i + 1).map(String::as_str);
        } else if let Some(value) = arg.strip_prefix(&long).and_then(|r| r.strip_prefix('=')) {
            found = Some(value);
        }
    }
    found
}

/// The server command to start and the base URL it will answer on. A command that names its
/// port (`--port N` or `--port=N`) is started as it is, and asked on that port and the host it
/// names (`--host`; the loopback address for `0.0.0.0`, `::` or none). Otherwise `--port N` on
/// a free loopback port is added, with `--host 127.0.0.1` unless it names its host.
pub fn command_and_url(argv: &[String]) -> Result<(Vec<String>, String), LoadError> {
    let host = flag_value(argv, "host");
    let url_host = match host {
        None | Some("" | "0.0.0.0") => "127.0.0.1".to_owned(),
        Some("::" | "[::]") => "[::1]".to_owned(),
        Some(h) if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        Some(h) => h.to_owned(),
    };
    if let Some(port) = flag_value(argv, "port") {
        let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or_else(|| {
            LoadError::Settings(format!(
                "the server command's --port `{port}` is not a port number (1 to 65535); give one, or leave --port out to have a free port chosen"
            ))
        })?;
        return Ok((argv.to_vec(), format!("http://{url_host}:{port}")));
    }
    let port = free_port().map_err(|source| {
        LoadError::Settings(format!(
            "no free port on the loopback interface ({source}); name one with --port in the server command"
        ))
    })?;
    let mut out = argv.to_vec();
    if host.is_none() {
        out.extend(["--host".into(), "127.0.0.1".into()]);
    }
    out.extend(["--port".into(), port.to_string()]);
    Ok((out, format!("http://{url_host}:{port}")))
}

/// Where a started server's output goes.
#[derive(Debug)]
pub enum ServerOutput {
    /// This process's own stdout and stderr.
    Inherit,
    /// This process's stderr, both streams (stdout is kept for results).
    Stderr,
    /// This file, both streams (opened for appending by the caller).
    File(File),
}

/// How stopping a server went.
#[derive(Debug)]
pub struct Stopped {
    /// The server's exit status, if it could be known.
    pub status: Option<ExitStatus>,
    /// Processes the server started that still ran after SIGKILL (none, normally).
    pub left_running: Vec<i32>,
}

/// A running server and the thread that watches it.
#[derive(Debug)]
pub struct ManagedServer {
    child: Arc<Mutex<Child>>,
    exited: Arc<Mutex<Option<ExitStatus>>>,
    mark: String,
    started: Instant,
    stopping: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An exit status in words: `status 1`, `signal 9`.
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown status".into(),
    }
}

/// A value of [`SERVER_MARK_VAR`] no other server of this machine has: this process's id and
/// a count of the servers it started.
fn new_mark() -> String {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}.{}",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    )
}

/// One live process as `/proc/<pid>/stat` gives it.
struct ProcEntry {
    pid: i32,
    parent: i32,
}

/// The processes of the machine that are not zombies.
fn live_processes() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // After the command's closing parenthesis: state, ppid, ...
            let (_, rest) = stat.rsplit_once(") ")?;
            let mut fields = rest.split(' ');
            let state = fields.next()?;
            let parent = fields.next()?.parse().ok()?;
            (state != "Z" && state != "X").then_some(ProcEntry { pid, parent })
        })
        .collect()
}

/// Whether process `pid` runs (exists and is not a zombie).
fn is_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

/// The live processes started by `root` (its descendants) or carrying `mark` in their
/// environment, `root` left out.
fn started_by(root: i32, mark: &str) -> Vec<i32> {
    let processes = live_processes();
    let entry = format!("{SERVER_MARK_VAR}={mark}");
    let mut found: Vec<i32> = processes
        .iter()
        .filter(|p| p.pid != root)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/environ", p.pid)).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == entry.as_bytes())
            })
        })
        .map(|p| p.pid)
        .collect();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for p in processes.iter().filter(|p| p.parent == parent) {
            if !found.contains(&p.pid) {
                found.push(p.pid);
            }
            frontier.push(p.pid);
        }
    }
    found
}

impl ManagedServer {
    /// Starts `argv` in its own process group, its output where `output` says. Should it exit
    /// before [`ManagedServer::stop`], `stop` is triggered with the reason, so a run in progress
    /// ends with what it measured.
    pub fn start(argv: &[String], output: ServerOutput, stop: &Stop) -> Result<Self, LoadError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(LoadError::Settings("the server command is empty".into()));
        };
        let start_error = |source| LoadError::ServerStart {
            program: program.clone(),
            source,
        };
        let mark = new_mark();
        let mut command = Command::new(program);
        command
            .args(args)
            .env(SERVER_MARK_VAR, &mark)
            .stdin(Stdio::null())
            .process_group(0);
        match output {
            ServerOutput::Inherit => {}
            ServerOutput::Stderr => {
                command.stdout(std::io::stderr());
            }
            ServerOutput::File(file) => {
                command.stdout(file.try_clone().map_err(start_error)?);
                command.stderr(file);
            }
        }
        let child = Arc::new(Mutex::new(command.spawn().map_err(start_error)?));
        let exited = Arc::new(Mutex::new(None));
        let stopping = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (child, exited, stopping, stop) = (
                child.clone(),
                exited.clone(),
                stopping.clone(),
                stop.clone(),
            );
            std::thread::Builder::new()
                .name("load-server-watch".into())
                .spawn(move || {
                    while !stopping.load(Ordering::SeqCst) {
                        if let Ok(Some(status)) = lock(&child).try_wait() {
                            *lock(&exited) = Some(status);
                            stop.trigger(format!("the server exited ({})", describe(status)));
                            return;
                        }
                        std::thread::sleep(POLL);
                    }
                })
                .map_err(LoadError::Runtime)?
        };
        Ok(ManagedServer {
            child,
            exited,
            mark,
            started: Instant::now(),
            stopping,
            watcher: Some(watcher),
        })
    }

    /// Waits until `GET health_path` on `endpoint` answers with a 2xx status; fails when the
    /// server exits first, `timeout` passes (saying the last status it answered, if any), or
    /// `stop` is triggered. Returns how long it took.
    pub fn wait_ready(
        &self,
        endpoint: &Endpoint,
        health_path: &str,
        timeout: Duration,
        stop: &Stop,
    ) -> Result<Duration, LoadError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(LoadError::Runtime)?;
        let addrs = runtime.block_on(endpoint.resolve())?;
        let pool = Pool::new(endpoint.clone(), addrs, 1, None)?;
        let mut last_status = None;
        loop {
            if let Some(status) = *lock(&self.exited) {
                return Err(LoadError::ServerExited {
                    status: describe(status),
                    waited: self.started.elapsed().as_secs_f64(),
                });
            }
            if stop.is_set() {
                return Err(LoadError::StoppedWaiting(stop.reason().unwrap_or_default()));
            }
            let asked = runtime.block_on(async {
                tokio::time::timeout(POLL * 4, pool.get_status(health_path)).await
            });
            if let Ok(Ok(code)) = asked {
                if (200..300).contains(&code) {
                    return Ok(self.started.elapsed());
                }
                last_status = Some(code);
            }
            if self.started.elapsed() >= timeout {
                return Err(LoadError::ServerNotReady {
                    url: format!("{}{health_path}", endpoint.url.trim_end_matches('/')),
                    timeout,
                    last_status,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// The server's process group (its leader's process id).
    pub fn process_group(&self) -> i32 {
        lock(&self.child).id() as i32
    }

    /// Stops the server with every process it started: SIGTERM, then SIGKILL after `grace`.
    /// `slow` is called, with the time left before SIGKILL, when they still run a second
    /// after SIGTERM (a server that ignores it).
    pub fn stop(mut self, grace: Duration, slow: impl FnOnce(Duration)) -> Stopped {
        self.shut_down(grace, slow)
    }

    fn shut_down(&mut self, grace: Duration, slow: impl FnOnce(Duration)) -> Stopped {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
        let mut child = lock(&self.child);
        let leader = child.id() as i32;
        let group = Pid::from_raw(leader);
        // Found before the leader goes: its children are then orphaned, out of its tree.
        let others = started_by(leader, &self.mark);
        let signal_all = |signal: Signal| {
            // The group may outlive its leader (workers the server started): signal it either way.
            let _ = killpg(group, signal);
            for &pid in &others {
                let _ = kill(Pid::from_raw(pid), signal);
            }
        };
        signal_all(Signal::SIGTERM);
        let begin = Instant::now();
        let deadline = begin + grace;
        let mut slow = Some(slow);
        let mut status = *lock(&self.exited);
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            let ended = status.is_some() && !others.iter().any(|&pid| is_running(pid));
            let now = Instant::now();
            if ended || now >= deadline {
                break;
            }
            if now >= begin + SLOW_STOP
                && let Some(slow) = slow.take()
            {
                slow(deadline - now);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_all(Signal::SIGKILL);
        if status.is_none() {
            status = child.wait().ok();
        }
        // SIGKILL takes effect at once, but a process is gone only once the kernel tore it down.
        let settle = Instant::now() + Duration::from_secs(1);
        let mut left_running: Vec<i32> = others.clone();
        while !left_running.is_empty() && Instant::now() < settle {
            left_running.retain(|&pid| is_running(pid));
            std::thread::sleep(Duration::from_millis(20));
        }
        Stopped {
            status,
            left_running,
        }
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        if self.watcher.is_some() {
            self.shut_down(STOP_GRACE, |_| {});
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::mock::{MockConfig, MockServer};

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    /// The processes of group `group` that are not zombies, from `/proc/<pid>/stat`.
    fn live_members(group: u32) -> Vec<String> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // After the command's closing parenthesis: state, ppid, pgrp.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let fields: Vec<&str> = rest.split(' ').collect();
            if fields.get(2) == Some(&group.to_string().as_str()) && fields[0] != "Z" {
                out.push(stat);
            }
        }
        out
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_free_port_is_added_unless_the_command_names_one() {
        let (argv, url) = command_and_url(&strings(&["serve", "model"])).expect("free port");
        let port = url.strip_prefix("http://127.0.0.1:").expect("loopback");
        assert_eq!(
            argv,
            strings(&["serve", "model", "--host", "127.0.0.1", "--port", port])
        );
        // Its own host is kept, and asked.
        let (argv, url) = command_and_url(&strings(&["serve", "--host", "localhost"])).unwrap();
        assert_eq!(argv[..3], strings(&["serve", "--host", "localhost"]));
        assert!(url.starts_with("http://localhost:"), "{url}");
        // A named port is used as it is, on the host named (loopback for every interface).
        for (named, expected) in [
            (&["serve", "--port=9000"][..], "http://127.0.0.1:9000"),
            (&["serve", "--port", "18130"], "http://127.0.0.1:18130"),
            (
                &["serve", "--host", "0.0.0.0", "--port", "80"],
                "http://127.0.0.1:80",
            ),
            (&["serve", "--host=::", "--port=81"], "http://[::1]:81"),
            (
                &["serve", "--host", "10.0.0.2", "--port", "82"],
                "http://10.0.0.2:82",
            ),
        ] {
            let (argv, url) = command_and_url(&strings(named)).unwrap();
            assert_eq!(argv, strings(named));
            assert_eq!(url, expected);
        }
        let err = command_and_url(&strings(&["serve", "--port", "http"])).unwrap_err();
        assert!(err.is_bad_input());
        assert!(
            err.to_string().contains("`http` is not a port number"),
            "{err}"
        );
    }

    #[test]
    fn a_server_that_answers_is_ready_and_is_stopped_with_its_group() {
        let mock = MockServer::start(MockConfig::default()).expect("mock");
        let stop = Stop::new();
        // A stand-in process group: the "server" and a child it started.
        let server =
            ManagedServer::start(&sh("sleep 300 & sleep 300"), ServerOutput::Inherit, &stop)
                .expect("start");
        let endpoint = Endpoint::parse(&mock.url()).expect("url");
        let took = server
            .wait_ready(&endpoint, "/v1/models", Duration::from_secs(10), &stop)
            .expect("ready");
        assert!(took < Duration::from_secs(10));
        let group = server.process_group() as u32;
        let stopped = server.stop(Duration::from_secs(5), |_| panic!("not slow"));
        let status = stopped.status.expect("status");
        assert_eq!(stopped.left_running, Vec::<i32>::new());
        assert!(!status.success());
        // Nothing of the group is left running (a zombie waits for its new parent to reap it).
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(live_members(group), Vec::<String>::new());
        assert!(
            !stop.is_set(),
            "a server stopped on purpose does not stop the run"
        );
    }

    #[test]
    fn a_server_that_exits_while_starting_is_said_and_stops_the_run() {
        let stop = Stop::new();
        let server =
            ManagedServer::start(&sh("exit 3"), ServerOutput::Inherit, &stop).expect("start");
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{}", free_port().expect("port")))
            .expect("url");
        let err = server
            .wait_ready(&endpoint, "/health", Duration::from_secs(20), &stop)
            .expect_err("exits");
        assert!(err.to_string().contains("status 3"), "{err}");
        assert!(stop.is_set());
        assert_eq!(
            stop.reason().as_deref(),
            Some("the server exited (status 3)")
        );
    }

    #[test]
    fn a_server_that_never_answers_times_out() {
        let stop = Stop::new();
        let server =
            ManagedServer::start(&sh("sleep 300"), ServerOutput::Inherit, &stop).expect("start");
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{}", free_port().expect("port")))
            .expect("url");
        let err = server
            .wait_ready(&endpoint, "/health", Duration::from_millis(600), &stop)
            .expect_err("times out");
        assert!(matches!(err, LoadError::ServerNotReady { .. }), "{err}");
        assert!(err.to_string().contains("--ready-timeout"), "{err}");
    }

    #[test]
    fn a_missing_program_is_bad_input() {
        let err = ManagedServer::start(
            &["/no/such/server".into()],
            ServerOutput::Inherit,
            &Stop::new(),
        )
        .expect_err("missing");
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("/no/such/server"), "{err}");
    }

    /// A loopback listener answering every request with `status`, for as long as the test runs.
    fn answering(status: u16) -> Endpoint {
        use std::io::{Read as _, Write as _};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Service Unavailable\r\ncontent-length: 0\r\n\r\n"
                );
            }
        });
        Endpoint::parse(&url).expect("url")
    }

    #[test]
    fn a_server_up_but_not_ready_is_said_with_its_last_status() {
        let stop = Stop::new();
        let server =
            ManagedServer::start(&sh("sleep 300"), ServerOutput::Inherit, &stop).expect("start");
        let err = server
            .wait_ready(
                &answering(503),
                "/health",
                Duration::from_millis(600),
                &stop,
            )
            .expect_err("not ready");
        let text = err.to_string();
        assert!(
            text.contains("the server is up but not ready")
                && text.contains("/health still answered HTTP 503"),
            "{text}"
        );
    }

    /// The process id written in `file` once it is there.
    fn pid_in(file: &Path) -> i32 {
        for _ in 0..200 {
            if let Ok(text) = std::fs::read_to_string(file)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no pid in {}", file.display());
    }

    #[test]
    fn processes_the_server_detached_are_stopped_with_it() {
        let dir = tempfile::tempdir().expect("dir");
        let (child, orphan) = (dir.path().join("child"), dir.path().join("orphan"));
        // A child in a session of its own, and an orphan in another (the subshell that started
        // it exits at once): neither is in the server's process group.
        let script = format!(
            "setsid sh -c 'echo $$ > {child}; exec sleep 300' & \
             (setsid sh -c 'echo $$ > {orphan}; exec sleep 300' &); sleep 300",
            child = child.display(),
            orphan = orphan.display()
        );
        let stop = Stop::new();
        let server =
            ManagedServer::start(&sh(&script), ServerOutput::Inherit, &stop).expect("start");
        let (child, orphan) = (pid_in(&child), pid_in(&orphan));
        assert!(is_running(child) && is_running(orphan));
        let stopped = server.stop(Duration::from_secs(5), |_| {});
        assert_eq!(stopped.left_running, Vec::<i32>::new());
        assert!(
            !is_running(child),
            "the detached child {child} was left running"
        );
        assert!(!is_running(orphan), "the orphan {orphan} was left running");
    }

    #[test]
    fn a_server_that_ignores_sigterm_is_said_to_be_slow_then_killed() {
        let stop = Stop::new();
        let server =
            ManagedServer::start(&sh("trap '' TERM; sleep 300"), ServerOutput::Inherit, &stop)
                .expect("start");
        // Give the shell a moment to set its trap.
        std::thread::sleep(Duration::from_millis(200));
        let group = server.process_group() as u32;
        let mut said = None;
        let stopped = server.stop(Duration::from_millis(1500), |left| said = Some(left));
        let left = said.expect("said to be slow");
        assert!(left <= Duration::from_millis(500), "{left:?}");
        assert!(stopped.status.is_some());
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(live_members(group), Vec::<String>::new());
    }
}
