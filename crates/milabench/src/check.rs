//! The preflight of a suite (`milabench check`, and the fast part before `run`): tools, disk,
//! memory, accelerators against the suite's requirements, every node of the system over ssh
//! (same milabench, same base folder), the environments, each node's container runtime and
//! image when the system names one, and, when one is due, the package index. The probes are
//! `milabench-cluster`'s; this module decides what they mean.

use std::path::{Path, PathBuf};
use std::time::Duration;

use milabench_cluster::{
    Check, Status, available_memory, free_bytes, probe_nodes, tcp_reachable, tool_version,
};
use milabench_plan::SshTarget;

use crate::error::Error;
use crate::planning::{PlannedBench, plan_context, plan_suite};
use crate::resolve::Resolved;

/// Disk an install group needs, by default (a CUDA torch environment is about 8 GiB).
const GROUP_DISK_GIB: u64 = 8;
/// Memory below which a warning is given.
const LOW_MEMORY_GIB: u64 = 4;
const GIB: u64 = 1 << 30;

/// What a preflight checks and with what.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Disk needed under the base folder, GiB (default: 8 per environment to install, plus 1).
    pub need_disk_gib: Option<u64>,
    /// Also check that the package index answers when an environment must be installed (a
    /// network round trip; `run`'s fast preflight leaves it to the install).
    pub package_index: bool,
    /// The milabench program every node must have at the same path (this process's own).
    pub program: PathBuf,
}

/// Runs the checks of `resolved` on this machine and its nodes, in display order.
pub fn preflight(resolved: &Resolved, options: &CheckOptions) -> Result<Vec<Check>, Error> {
    let base = resolved.suite.system.base.clone().into_std_path_buf();
    let mut checks = vec![tools_check("python", "python3"), uv_check(&base)];
    // Install groups of the selected benchmarks and whether each is made; none on the host
    // when the benchmarks run in a container (the image has them).
    let mut groups: Vec<(String, PathBuf)> = Vec::new();
    let on_host = resolved.suite.system.container.is_none();
    for bench in resolved.suite.runnable().filter(|_| on_host) {
        let venv = &bench.folders.venv;
        if !venv.as_str().is_empty() && !groups.iter().any(|(g, _)| *g == bench.install_group) {
            groups.push((
                bench.install_group.clone(),
                venv.clone().into_std_path_buf(),
            ));
        }
    }
    let unfinished = |venv: &Path| {
        camino::Utf8Path::from_path(venv).is_none_or(|venv| !milabench_env::is_finished(venv))
    };
    let missing: Vec<&str> = groups
        .iter()
        .filter(|(_, venv)| unfinished(venv))
        .map(|(g, _)| g.as_str())
        .collect();
    checks.push(disk_check(&base, options.need_disk_gib, missing.len()));
    checks.push(memory_check());
    checks.extend(accelerator_checks(resolved)?);
    for (group, venv) in &groups {
        checks.push(if missing.contains(&group.as_str()) {
            let what = if venv.exists() {
                "is not a finished environment: its install was interrupted or failed (no fingerprint, written last, or no bin/python or bin/voir)"
            } else {
                "is not installed"
            };
            Check::problem(
                Status::Warn,
                format!("environment {group}"),
                format!("{} {what}", venv.display()),
                "`milabench run` installs it (or run `milabench install` now)",
            )
        } else {
            Check::ok(format!("environment {group}"), venv.display().to_string())
        });
    }
    checks.extend(prepared_check(resolved)?);
    if options.package_index && !missing.is_empty() {
        checks.push(index_check());
    }
    checks.extend(node_checks(resolved, &base, &options.program));
    checks.extend(crate::containers::container_checks(resolved));
    Ok(checks)
}

fn tools_check(name: &str, program: &str) -> Check {
    match tool_version(Path::new(program), &["--version"]) {
        Some(version) => Check::ok(name, version),
        None => Check::problem(
            Status::Fail,
            name,
            format!("`{program}` not found on PATH"),
            "install Python 3 (Debian: apt-get install python3 python3-venv) or pass --python",
        ),
    }
}

fn uv_check(base: &Path) -> Check {
    let bootstrapped = base.join("tools");
    match tool_version(Path::new("uv"), &["--version"]) {
        Some(version) => Check::ok("uv", version),
        None => Check::problem(
            Status::Warn,
            "uv",
            "`uv` not found on PATH",
            format!(
                "nothing to do: install puts one under {} (or install uv yourself)",
                bootstrapped.display()
            ),
        ),
    }
}

fn disk_check(base: &Path, need_gib: Option<u64>, missing_groups: usize) -> Check {
    let need = need_gib.unwrap_or(missing_groups as u64 * GROUP_DISK_GIB + 1) * GIB;
    match free_bytes(base) {
        Ok(free) if free >= need => Check::ok(
            "disk",
            format!(
                "{} GiB free under {} ({} GiB needed)",
                free / GIB,
                base.display(),
                need / GIB
            ),
        ),
        Ok(free) => Check::problem(
            Status::Fail,
            "disk",
            format!(
                "{} GiB free under {}, {} GiB needed ({missing_groups} environment(s) to install)",
                free / GIB,
                base.display(),
                need / GIB
            ),
            "free space there, or choose another base folder (--base or MILABENCH_BASE)",
        ),
        Err(e) => Check::problem(
            Status::Fail,
            "disk",
            milabench_exec::error_line(&e),
            "check that the base folder's parent exists and is readable",
        ),
    }
}

fn memory_check() -> Check {
    match available_memory() {
        Some(bytes) if bytes >= LOW_MEMORY_GIB * GIB => {
            Check::ok("memory", format!("{} GiB available", bytes / GIB))
        }
        Some(bytes) => Check::problem(
            Status::Warn,
            "memory",
            format!("{} GiB available", bytes / GIB),
            "stop other programs; large benchmarks may run out of memory",
        ),
        None => Check::problem(
            Status::Warn,
            "memory",
            "cannot read /proc/meminfo",
            "nothing to do on a system without /proc",
        ),
    }
}

/// The accelerators found against the arch, and the benchmarks the system cannot run.
fn accelerator_checks(resolved: &Resolved) -> Result<Vec<Check>, Error> {
    let count = resolved.suite.system.gpu_count;
    let mut checks = vec![if resolved.arch != "cpu" && count == 0 {
        Check::problem(
            Status::Fail,
            "accelerators",
            format!("arch {} but no device found", resolved.arch),
            "install the GPU driver (nvidia-smi / rocm-smi must list the devices), or set MILABENCH_GPU_ARCH=cpu",
        )
    } else {
        Check::ok(
            "accelerators",
            format!("arch {}, {count} device(s)", resolved.arch),
        )
    }];
    for planned in plan_suite(resolved)? {
        match planned {
            PlannedBench::Skipped { bench, unmet } => checks.push(Check::problem(
                Status::Warn,
                format!("requirements of {bench}"),
                format!("not met here: {}; `run` skips it", unmet.join(", ")),
                "run it on a system that meets them (more GPUs, more nodes in --system)",
            )),
            PlannedBench::BrokenBenchfile { bench, reason } => {
                let (problem, fix) = reason.split_once("\n  fix: ").unwrap_or((&reason, ""));
                checks.push(Check::problem(
                    Status::Warn,
                    format!("benchfile of {bench}"),
                    format!("{problem}; `run` records it as failed and runs the others"),
                    if fix.is_empty() {
                        "fix its benchfile.py"
                    } else {
                        fix
                    },
                ));
            }
            PlannedBench::Run(_) => {}
        }
    }
    Ok(checks)
}

/// Whether the data of the benchmarks that have a prepare step is there, from the records
/// their last successful prepare left (see [`crate::prepared`]): one line for the suite.
fn prepared_check(resolved: &Resolved) -> Result<Option<Check>, Error> {
    let ctx = plan_context(resolved, None)?;
    let (mut prepared, mut missing, mut changed) = (0, Vec::new(), Vec::new());
    let benches: Vec<_> = resolved.suite.runnable().collect();
    crate::planning::prefetch_pack_host(&benches, std::slice::from_ref(&ctx));
    for bench in benches {
        let Ok(Some(plan)) = crate::planning::prepare_plan(bench, &ctx) else {
            continue;
        };
        let argv = plan.processes.first().map(|p| p.argv.as_slice());
        match crate::prepared::recorded(bench) {
            Some(record) if Some(record.argv.as_slice()) == argv => prepared += 1,
            Some(_) => changed.push(bench.name.as_str()),
            None => missing.push(bench.name.as_str()),
        }
    }
    if prepared + missing.len() + changed.len() == 0 {
        return Ok(None);
    }
    if missing.is_empty() && changed.is_empty() {
        return Ok(Some(Check::ok(
            "prepared data",
            format!("{prepared} benchmark(s) prepared"),
        )));
    }
    let mut detail = Vec::new();
    if !missing.is_empty() {
        detail.push(format!("not prepared: {}", missing.join(", ")));
    }
    if !changed.is_empty() {
        detail.push(format!(
            "prepared with other arguments: {}",
            changed.join(", ")
        ));
    }
    Ok(Some(Check::problem(
        Status::Warn,
        "prepared data",
        detail.join("; "),
        "`milabench run` prepares them (or run `milabench prepare` now; `run --no-setup` would not)",
    )))
}

/// The package index `uv`/`pip` would use, reachable on port 443 (or the URL's port).
fn index_check() -> Check {
    let url = ["UV_INDEX_URL", "UV_DEFAULT_INDEX", "PIP_INDEX_URL"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "https://pypi.org/simple".into());
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse().unwrap_or(443)),
        _ => (authority, if url.starts_with("http://") { 80 } else { 443 }),
    };
    if tcp_reachable(host, port, Duration::from_secs(3)) {
        Check::ok("package index", format!("{host}:{port} reachable"))
    } else {
        Check::problem(
            Status::Fail,
            "package index",
            format!("{host}:{port} does not answer, and an environment must be installed"),
            "check the network or proxy, or point UV_INDEX_URL at a reachable mirror",
        )
    }
}

/// Every other node over ssh: reachable, the same milabench at the same path, the base folder.
fn node_checks(resolved: &Resolved, base: &Path, program: &Path) -> Vec<Check> {
    let system = &resolved.suite.system;
    let targets: Vec<SshTarget> = system
        .nodes
        .iter()
        .filter(|n| !n.local)
        .map(|n| SshTarget {
            node: n.name.clone(),
            user: n.user.clone(),
            host: n.ip.clone(),
            port: n.sshport,
            key: system.ssh_key.clone(),
        })
        .collect();
    if targets.is_empty() {
        return Vec::new();
    }
    let ours = format!("milabench {}", env!("CARGO_PKG_VERSION"));
    let results = probe_nodes(&targets, program, base);
    targets
        .iter()
        .zip(results)
        .map(|(target, result)| {
            let name = format!("node {}", target.node);
            let ssh = format!(
                "`ssh -p {} {}{}@{} true` must work from this machine",
                target.port,
                target
                    .key
                    .as_deref()
                    .map(|k| format!("-i {k} "))
                    .unwrap_or_default(),
                target.user,
                target.host
            );
            match result {
                Err(e) => Check::problem(
                    Status::Fail,
                    name,
                    milabench_exec::error_line(&e),
                    format!("{ssh} (node up, sshd listening, the key authorized)"),
                ),
                Ok(facts) if facts.version.as_deref() != Some(ours.as_str()) => Check::problem(
                    Status::Fail,
                    name,
                    format!(
                        "{} at {} there, {ours} here",
                        facts.version.as_deref().unwrap_or("no milabench"),
                        program.display()
                    ),
                    "share the milabench build with every node at the same path",
                ),
                Ok(facts) if !facts.base_exists => Check::problem(
                    Status::Fail,
                    name,
                    format!("no {} there", base.display()),
                    "put the base folder on a file system every node shares, at the same path",
                ),
                Ok(_) => Check::ok(
                    name,
                    format!("{}: {ours}, base folder present", target.describe()),
                ),
            }
        })
        .collect()
}
