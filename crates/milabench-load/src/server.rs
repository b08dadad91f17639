//! A server started for one load run (`milabench load --serve`, and so the serving benchmarks
//! of a suite): started in its own process group on a free loopback port, waited for until its
//! health endpoint answers with success (within a deadline, failing early if it exits), watched
//! during the run (its exit stops the run, keeping what was measured), and stopped with its
//! whole process group afterwards: SIGTERM, then SIGKILL after a grace period.
//!
//! Its output goes where the caller says: a log file, or this process's own stdout and stderr
//! (under the orchestrator those are kept with the run).

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::client::{Endpoint, Pool};
use crate::error::LoadError;
use crate::stop::Stop;

/// How often the health endpoint is asked while the server starts, and the server's process
/// looked at while it runs.
const POLL: Duration = Duration::from_millis(250);

/// How long the server has between SIGTERM and SIGKILL when it is stopped.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// A free TCP port on the loopback interface (the system's choice; free when asked, so a
/// server started soon after can take it).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// `argv` with `--host 127.0.0.1 --port PORT` added, unless it names a port already.
pub fn with_port(argv: &[String], port: u16) -> Vec<String> {
    let mut out = argv.to_vec();
    if !argv
        .iter()
        .any(|a| a == "--port" || a.starts_with("--port="))
    {
        out.extend([
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
        ]);
    }
    out
}

/// A running server and the thread that watches it.
#[derive(Debug)]
pub struct ManagedServer {
    child: Arc<Mutex<Child>>,
    exited: Arc<Mutex<Option<ExitStatus>>>,
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

impl ManagedServer {
    /// Starts `argv` in its own process group, its output appended to `log` when given (else
    /// this process's stdout and stderr). Should it exit before [`ManagedServer::stop`], `stop`
    /// is triggered with the reason, so a run in progress ends with what it measured.
    pub fn start(argv: &[String], log: Option<&Path>, stop: &Stop) -> Result<Self, LoadError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(LoadError::Settings("the server command is empty".into()));
        };
        let start_error = |source| LoadError::ServerStart {
            program: program.clone(),
            source,
        };
        let mut command = Command::new(program);
        command.args(args).stdin(Stdio::null()).process_group(0);
        if let Some(log) = log {
            let file = File::options()
                .create(true)
                .append(true)
                .open(log)
                .map_err(start_error)?;
            command.stdout(file.try_clone().map_err(start_error)?);
            command.stderr(file);
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
            started: Instant::now(),
            stopping,
            watcher: Some(watcher),
        })
    }

    /// Waits until `GET health_path` on `endpoint` answers with a 2xx status; fails when the
    /// server exits first, `timeout` passes, or `stop` is triggered. Returns how long it took.
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
            if let Ok(Ok(code)) = asked
                && (200..300).contains(&code)
            {
                return Ok(self.started.elapsed());
            }
            if self.started.elapsed() >= timeout {
                return Err(LoadError::ServerNotReady {
                    url: format!("{}{health_path}", endpoint.url.trim_end_matches('/')),
                    timeout,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// The server's process group (its leader's process id).
    pub fn process_group(&self) -> i32 {
        lock(&self.child).id() as i32
    }

    /// Stops the server's process group: SIGTERM, then SIGKILL after `grace`. Returns its exit
    /// status, if it could be known.
    pub fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        self.shut_down(grace)
    }

    fn shut_down(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
        let mut child = lock(&self.child);
        let group = Pid::from_raw(child.id() as i32);
        // The group may outlive its leader (workers the server started): signal it either way.
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        let mut status = *lock(&self.exited);
        while status.is_none() && Instant::now() < deadline {
            status = child.try_wait().ok().flatten();
            if status.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        if status.is_none() {
            status = child.wait().ok();
        }
        status
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        if self.watcher.is_some() {
            self.shut_down(STOP_GRACE);
        }
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_port_is_added_unless_named() {
        let argv = vec!["serve".to_string(), "model".to_string()];
        assert_eq!(
            with_port(&argv, 8123),
            ["serve", "model", "--host", "127.0.0.1", "--port", "8123"]
        );
        let named = vec!["serve".to_string(), "--port=9000".to_string()];
        assert_eq!(with_port(&named, 8123), named);
    }

    #[test]
    fn a_server_that_answers_is_ready_and_is_stopped_with_its_group() {
        let mock = MockServer::start(MockConfig::default()).expect("mock");
        let stop = Stop::new();
        // A stand-in process group: the "server" and a child it started.
        let server =
            ManagedServer::start(&sh("sleep 300 & sleep 300"), None, &stop).expect("start");
        let endpoint = Endpoint::parse(&mock.url()).expect("url");
        let took = server
            .wait_ready(&endpoint, "/v1/models", Duration::from_secs(10), &stop)
            .expect("ready");
        assert!(took < Duration::from_secs(10));
        let group = server.process_group() as u32;
        let status = server.stop(Duration::from_secs(5)).expect("status");
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
        let server = ManagedServer::start(&sh("exit 3"), None, &stop).expect("start");
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
        let server = ManagedServer::start(&sh("sleep 300"), None, &stop).expect("start");
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
        let err = ManagedServer::start(&["/no/such/server".into()], None, &Stop::new())
            .expect_err("missing");
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("/no/such/server"), "{err}");
    }
}
