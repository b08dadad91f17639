//! Finding and signalling everything a benchmark process started.
//!
//! Each process is the leader of its own process group, and carries a token in its environment
//! ([`TOKEN_VAR`]) that its descendants inherit. A process tree is: the members of the group,
//! every process whose environment holds the token (grandchildren that called `setsid` or were
//! orphaned, which the group misses), and all their descendants by parent pid. This is found by
//! reading `/proc` only when something must be stopped, never while a benchmark runs.
//!
//! `PR_SET_CHILD_SUBREAPER` is deliberately not used: orphans adopted by the orchestrator would
//! have to be reaped with `waitpid(-1)`, which would steal the exit statuses that `std::process`
//! (and any other child-process library in the same program) waits for.

use std::collections::HashSet;
use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Environment variable set in every benchmark process to find its descendants.
pub const TOKEN_VAR: &str = milabench_vocab::env_vars::MILABENCH_EXEC_TOKEN;

/// A token no other process tree of this program has: this program's pid and a counter.
pub(crate) fn fresh_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

struct ProcEntry {
    pid: i32,
    ppid: i32,
    pgrp: i32,
}

/// Parses `/proc/<pid>/stat`: the fields after the command name, which is in parentheses and
/// may itself contain spaces and parentheses.
fn parse_stat(text: &str) -> Option<ProcEntry> {
    let pid = text.split_once(' ')?.0.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcEntry { pid, ppid, pgrp })
}

fn processes() -> Vec<ProcEntry> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<i32>().is_ok())
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|t| parse_stat(&t))
        .collect()
}

fn has_token(pid: i32, entry: &[u8]) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == entry))
}

/// The live processes of the tree led by `pgid` (see the module notes), leader included; with no
/// `pgid`, the processes carrying `token` and their descendants.
pub(crate) fn members(pgid: Option<i32>, token: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let entry = format!("{TOKEN_VAR}={token}");
    let all = processes();
    let mut found: HashSet<i32> = all
        .iter()
        .filter(|p| p.pid != me && p.pid > 1)
        .filter(|p| Some(p.pgrp) == pgid || has_token(p.pid, entry.as_bytes()))
        .map(|p| p.pid)
        .collect();
    loop {
        let before = found.len();
        for p in &all {
            if p.pid != me && p.pid > 1 && found.contains(&p.ppid) {
                found.insert(p.pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    let mut pids: Vec<i32> = found.into_iter().collect();
    pids.sort_unstable();
    pids
}

/// Sends `signal` to the group `pgid` (when known) and to every other process of its tree;
/// returns how many processes the tree had.
pub(crate) fn signal_tree(pgid: Option<i32>, token: &str, signal: Signal) -> usize {
    let pids = members(pgid, token);
    if let Some(pgid) = pgid {
        // ESRCH: the group is already empty.
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
    for &pid in &pids {
        let _ = kill(Pid::from_raw(pid), signal);
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let e = parse_stat("1234 (a) b (c)) S 17 1234 1234 0 -1").unwrap();
        assert_eq!((e.pid, e.ppid, e.pgrp), (1234, 17, 1234));
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn own_process_is_never_a_member() {
        let me = std::process::id() as i32;
        let pgrp = nix::unistd::getpgrp().as_raw();
        assert!(!members(Some(pgrp), "no-such-token").contains(&me));
    }
}
