//! `cargo xtask dashboard up|down`: the real milabench dashboard server (the public project
//! milabench/dashboard, a Flask app over PostgreSQL) for the tests of `--publish`.
//!
//! `up` starts (or finds) the throwaway PostgreSQL of `cargo xtask pg up`, creates a
//! `dashboard` database on it, makes `target/dashboard-venv` (Python 3 from `PATH`, the pinned
//! packages of `tests/fixtures/dashboard/requirements.txt` from the package index; made once and
//! kept), and starts the server from the sources kept in `tests/fixtures/dashboard/server`
//! (the dashboard, and the two packages it needs that are not on the package index: the Python
//! milabench with its benchmate, and iguane), copied to a scratch folder, with
//! `tests/fixtures/dashboard/serve.py`, on a free loopback port. It prints the URL tests read from `MILABENCH_TEST_DASHBOARD_URL`.
//! `down` stops the server's process group and the PostgreSQL server. Where things are is kept
//! in `target/dashboard-harness.json`; the server's output goes to
//! `target/dashboard-harness.log`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use milabench_store::harness::TEST_DASHBOARD_URL;
use serde_json::json;

/// Options of `cargo xtask dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    #[command(subcommand)]
    action: DashboardAction,
}

#[derive(Debug, Subcommand)]
enum DashboardAction {
    /// Start the server (and its PostgreSQL) and print its URL (as
    /// `MILABENCH_TEST_DASHBOARD_URL=...`).
    Up,
    /// Stop the server `up` started, and its PostgreSQL.
    Down,
}

/// Runs `cargo xtask dashboard up|down`.
pub fn run(args: &DashboardArgs) -> anyhow::Result<()> {
    match args.action {
        DashboardAction::Up => {
            let url = up()?;
            println!("{TEST_DASHBOARD_URL}={url}");
            Ok(())
        }
        DashboardAction::Down => down(),
    }
}

fn target(name: &str) -> PathBuf {
    crate::e2e::repo_root().join("target").join(name)
}

fn fixture(name: &str) -> PathBuf {
    crate::e2e::repo_root()
        .join("tests/fixtures/dashboard")
        .join(name)
}

/// The server's process (its group's leader) and URL, from the state file.
fn read_state() -> Option<(i32, String)> {
    let text = fs_err::read_to_string(target("dashboard-harness.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((
        i32::try_from(value["pid"].as_i64()?).ok()?,
        value["url"].as_str()?.to_owned(),
    ))
}

/// Starts the server (or finds the one already started); its URL.
pub fn up() -> anyhow::Result<String> {
    if let Some((_, url)) = read_state() {
        if ping(&url) {
            eprintln!("==> dashboard: already running at {url}");
            return Ok(url);
        }
        down()?;
    }
    let pg_url = crate::pg::up()?;
    create_database(&pg_url)?;
    let python = venv()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .context("could not find a free loopback port for the dashboard")?
        .port();
    let url = format!("http://127.0.0.1:{port}");
    // The server's driver is psycopg2; trust authentication ignores the password, which the
    // server insists on finding in the URL.
    let database = pg_url
        .replacen(
            "postgres://postgres@",
            "postgresql+psycopg2://postgres:unused@",
            1,
        )
        .rsplit_once('/')
        .map(|(server, _)| format!("{server}/dashboard"))
        .context("the PostgreSQL harness's URL has no database part")?;
    let log_path = target("dashboard-harness.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("could not create {}", log_path.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("milabench-dashboard.")
        .tempdir()
        .context("could not make a folder for the dashboard's sources and uploads")?
        .keep();
    // The server keeps files beside its sources (its Slurm bookkeeping, in `../data`): it runs
    // from a copy, so that the fixtures stay as they are.
    let sources = scratch.join("src");
    fs_err::create_dir_all(&sources)?;
    crate::ci::run_command(
        "copy the dashboard's sources",
        Command::new("cp")
            .arg("-r")
            .arg(fixture("server"))
            .arg(&sources),
    )?;
    let mut command = Command::new(&python);
    command
        .arg(fixture("serve.py"))
        .arg(port.to_string())
        .env("PYTHONPATH", sources.join("server"))
        .env("DATABASE_URI", &database)
        .env("UPLOAD_FOLDER", &scratch)
        .current_dir(&scratch)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command
        .spawn()
        .context("could not start the dashboard server")?;
    let pid = i32::try_from(child.id()).context("a process id out of range")?;
    fs_err::write(
        target("dashboard-harness.json"),
        json!({"pid": pid, "url": url, "scratch": scratch}).to_string(),
    )?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ping(&url) {
        if Instant::now() > deadline {
            let log = fs_err::read_to_string(target("dashboard-harness.log")).unwrap_or_default();
            let _ = down();
            bail!("the dashboard server did not answer /api/ping within 120 s:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!(
        "==> dashboard: server at {url} (database {database}, log target/dashboard-harness.log)"
    );
    Ok(url)
}

/// Stops the server and its PostgreSQL; nothing to do when none was started.
pub fn down() -> anyhow::Result<()> {
    if let Some((pid, url)) = read_state() {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        let group = Pid::from_raw(pid);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while killpg(group, None).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = killpg(group, Signal::SIGKILL);
        eprintln!("==> dashboard: server at {url} stopped");
        let state = fs_err::read_to_string(target("dashboard-harness.json")).unwrap_or_default();
        if let Some(scratch) = serde_json::from_str::<serde_json::Value>(&state)
            .ok()
            .and_then(|v| v["scratch"].as_str().map(PathBuf::from))
        {
            let _ = fs_err::remove_dir_all(scratch);
        }
        let _ = fs_err::remove_file(target("dashboard-harness.json"));
    } else {
        eprintln!("==> dashboard: no server to stop");
    }
    crate::pg::down()
}

/// Creates the `dashboard` database on the harness's PostgreSQL (dropping an older one).
fn create_database(pg_url: &str) -> anyhow::Result<()> {
    let mut client = postgres::Client::connect(pg_url, postgres::NoTls)
        .context("could not reach the PostgreSQL harness")?;
    // Two statements: PostgreSQL runs neither inside the transaction of a batch.
    for statement in [
        "DROP DATABASE IF EXISTS dashboard WITH (FORCE)",
        "CREATE DATABASE dashboard",
    ] {
        client
            .batch_execute(statement)
            .context("could not create the dashboard's database")?;
    }
    Ok(())
}

/// The venv's Python, the venv made (or remade when the pinned requirements changed).
fn venv() -> anyhow::Result<PathBuf> {
    let venv = target("dashboard-venv");
    let python = venv.join("bin/python");
    let requirements = fs_err::read_to_string(fixture("requirements.txt"))?;
    let ready = venv.join(".installed");
    if fs_err::read_to_string(&ready).is_ok_and(|r| r == requirements) {
        return Ok(python);
    }
    eprintln!(
        "==> dashboard: making {} (pinned packages from the package index)",
        venv.display()
    );
    let _ = std::fs::remove_dir_all(&venv);
    crate::ci::run_command(
        "dashboard venv",
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
    )?;
    crate::ci::run_command(
        "dashboard packages",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(fixture("requirements.txt")),
    )?;
    fs_err::write(&ready, requirements)?;
    Ok(python)
}

/// Whether the server at `url` answers `GET /api/ping` with `pong`.
fn ping(url: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let Some(authority) = url.strip_prefix("http://") else {
        return false;
    };
    let Ok(mut stream) = std::net::TcpStream::connect(authority) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /api/ping HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.ends_with("pong")
}
