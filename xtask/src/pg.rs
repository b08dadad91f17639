//! `cargo xtask pg up|down`: a throwaway PostgreSQL server for the store's tests.
//!
//! `up` installs Debian's `postgresql` when its programs are missing (as root), makes a cluster
//! with `initdb` in a fresh temporary folder, starts it on a free loopback port (trust
//! authentication, no other address listened on) and prints the URL tests read from
//! `MILABENCH_TEST_PG_URL`. `down` stops it and removes the folder. As root, the server runs as
//! the `postgres` user (PostgreSQL refuses to run as root). Where the server is, is kept in
//! `target/pg-harness.json` so `down` finds it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

/// Options of `cargo xtask pg`.
#[derive(Debug, Args)]
pub struct PgArgs {
    #[command(subcommand)]
    action: PgAction,
}

#[derive(Debug, Subcommand)]
enum PgAction {
    /// Start a throwaway server and print its URL (as `MILABENCH_TEST_PG_URL=...`).
    Up,
    /// Stop the server `up` started and remove its folder.
    Down,
}

/// Runs `cargo xtask pg up|down`.
pub fn run(args: &PgArgs) -> anyhow::Result<()> {
    match args.action {
        PgAction::Up => {
            let url = up()?;
            println!("{}={url}", milabench_store::harness::TEST_PG_URL);
            Ok(())
        }
        PgAction::Down => down(),
    }
}

/// A running server, as recorded in the state file.
struct Server {
    bin: PathBuf,
    folder: PathBuf,
    url: String,
}

fn state_file() -> PathBuf {
    crate::e2e::repo_root().join("target/pg-harness.json")
}

fn read_state() -> anyhow::Result<Option<Server>> {
    let path = state_file();
    let Ok(text) = fs_err::read_to_string(&path) else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not the harness's state; remove it", path.display()))?;
    let field = |k: &str| value[k].as_str().map(str::to_owned).unwrap_or_default();
    Ok(Some(Server {
        bin: field("bin").into(),
        folder: field("folder").into(),
        url: field("url"),
    }))
}

/// Starts the server (or finds the one already started); its URL.
pub fn up() -> anyhow::Result<String> {
    if let Some(server) = read_state()? {
        if pg_ctl(&server.bin, &server.folder, &["status"]).is_ok() {
            eprintln!("==> pg: already running at {}", server.url);
            return Ok(server.url);
        }
        remove(&server)?;
    }
    let bin = postgres_bin()?;
    let folder = tempfile::Builder::new()
        .prefix("milabench-pg.")
        .tempdir()
        .context("could not make a temporary folder for the PostgreSQL cluster")?
        .keep();
    let server_user = server_user()?;
    if let Some((uid, gid)) = server_user {
        std::os::unix::fs::chown(&folder, Some(uid), Some(gid))
            .with_context(|| format!("could not give {} to the postgres user", folder.display()))?;
    }
    let port = free_port()?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let server = Server {
        bin,
        folder,
        url: url.clone(),
    };
    fs_err::create_dir_all(state_file().parent().unwrap_or(Path::new(".")))?;
    fs_err::write(
        state_file(),
        json!({"bin": server.bin, "folder": server.folder, "url": url}).to_string(),
    )?;
    let data = server.folder.join("data");
    let started = as_server_user(
        Command::new(server.bin.join("initdb")).args([
            "-D",
            &data.display().to_string(),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ]),
        server_user,
        &server.folder,
        "initdb",
    )
    .and_then(|()| {
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            server.folder.display()
        );
        pg_ctl(
            &server.bin,
            &server.folder,
            &[
                "-l",
                &server.folder.join("log").display().to_string(),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        )
    });
    if let Err(e) = started {
        let log = fs_err::read_to_string(server.folder.join("log")).unwrap_or_default();
        let _ = remove(&server);
        bail!("{e:#}\n{log}");
    }
    eprintln!(
        "==> pg: server at {url} (cluster in {})",
        server.folder.display()
    );
    Ok(url)
}

/// Stops the server and removes its folder; nothing to do when none was started.
pub fn down() -> anyhow::Result<()> {
    let Some(server) = read_state()? else {
        eprintln!("==> pg: no server to stop");
        return Ok(());
    };
    if let Err(e) = pg_ctl(&server.bin, &server.folder, &["-m", "fast", "-w", "stop"]) {
        eprintln!("==> pg: {e:#} (removing its folder all the same)");
    }
    remove(&server)?;
    eprintln!("==> pg: stopped, {} removed", server.folder.display());
    Ok(())
}

fn remove(server: &Server) -> anyhow::Result<()> {
    if server.folder.exists() {
        fs_err::remove_dir_all(&server.folder)?;
    }
    let _ = fs_err::remove_file(state_file());
    Ok(())
}

/// `pg_ctl -D <folder>/data ARGS`, as the server's user.
fn pg_ctl(bin: &Path, folder: &Path, args: &[&str]) -> anyhow::Result<()> {
    as_server_user(
        Command::new(bin.join("pg_ctl"))
            .arg("-D")
            .arg(folder.join("data"))
            .args(args),
        server_user()?,
        folder,
        "pg_ctl",
    )
}

/// Runs `command` (in `folder`, as `user` when given) and fails with `what` when it fails.
fn as_server_user(
    command: &mut Command,
    user: Option<(u32, u32)>,
    folder: &Path,
    what: &str,
) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt as _;
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
    let output = command
        .current_dir(folder)
        .output()
        .with_context(|| format!("could not start {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// As root, the `postgres` user's ids (PostgreSQL will not run as root); else `None` (the
/// server runs as the current user).
fn server_user() -> anyhow::Result<Option<(u32, u32)>> {
    if !nix::unistd::Uid::effective().is_root() {
        return Ok(None);
    }
    let user = nix::unistd::User::from_name("postgres")
        .context("could not look up the postgres user")?
        .context("running as root, and there is no `postgres` user to run the server as; install Debian's postgresql package, which makes it")?;
    Ok(Some((user.uid.as_raw(), user.gid.as_raw())))
}

/// The folder of `initdb` and `pg_ctl` (the newest Debian install), installing Debian's
/// `postgresql` when there is none.
fn postgres_bin() -> anyhow::Result<PathBuf> {
    if let Some(bin) = find_bin() {
        return Ok(bin);
    }
    if !nix::unistd::Uid::effective().is_root() {
        bail!(
            "PostgreSQL's programs are not installed (no /usr/lib/postgresql/*/bin/initdb); install them with `sudo apt-get install postgresql`, or run as root to let this harness do it"
        );
    }
    eprintln!("==> pg: installing Debian's postgresql");
    xtask::host::apt_install(&["postgresql"])?;
    find_bin().context("postgresql was installed but no /usr/lib/postgresql/*/bin/initdb was found")
}

fn find_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = fs_err::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// A loopback port nothing listens on now.
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("could not find a free loopback port for PostgreSQL")?;
    Ok(listener.local_addr()?.port())
}
