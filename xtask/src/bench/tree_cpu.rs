//! CPU time of a process and of every process under it, sampled from `/proc` while it runs, so
//! that a client's CPU can be read over the window in which it sent its requests, its start-up
//! (GuideLLM imports for tens of seconds) and its report left out.
//!
//! A sample adds, over the tree, each process's user and system time and those of its children
//! already waited for (`cutime`, `cstime`): a worker that ends moves its time into its parent's
//! figure, so the sum does not drop when it goes.

use std::process::{Child, ExitStatus};
use std::time::{Duration, SystemTime};

/// Time between samples.
const PERIOD: Duration = Duration::from_millis(100);

/// The CPU time of a process tree over its life: (Unix seconds, CPU seconds) pairs in time order.
#[derive(Debug, Default)]
pub struct CpuTrace {
    samples: Vec<(f64, f64)>,
}

impl CpuTrace {
    /// CPU seconds the tree spent between Unix times `from` and `to`, interpolated between
    /// samples.
    pub fn between(&self, from: f64, to: f64) -> f64 {
        self.at(to) - self.at(from)
    }

    /// Adds a sample: `cpu` seconds at Unix time `when` (later than the samples before it).
    pub fn record(&mut self, when: f64, cpu: f64) {
        self.samples.push((when, cpu));
    }

    /// The tree's CPU seconds at Unix time `t` (the first or last sample outside them).
    fn at(&self, t: f64) -> f64 {
        let after = self.samples.partition_point(|&(when, _)| when < t);
        match (
            after.checked_sub(1).map(|i| self.samples[i]),
            self.samples.get(after),
        ) {
            (Some((t0, c0)), Some(&(t1, c1))) => c0 + (c1 - c0) * (t - t0) / (t1 - t0),
            (Some((_, c)), None) | (None, Some(&(_, c))) => c,
            (None, None) => 0.0,
        }
    }
}

/// Waits for `child`, sampling the CPU time of its process tree meanwhile.
pub fn wait_traced(child: &mut Child) -> std::io::Result<(ExitStatus, CpuTrace)> {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |t| t as f64);
    let mut trace = CpuTrace::default();
    loop {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        trace.record(now, tree_ticks(child.id()) / ticks);
        if let Some(status) = child.try_wait()? {
            return Ok((status, trace));
        }
        std::thread::sleep(PERIOD);
    }
}

/// Clock ticks of `root` and its descendants (their own and their waited-for children's).
fn tree_ticks(root: u32) -> f64 {
    let processes: Vec<(u32, u32, f64)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, ticks) = parse_stat(&stat)?;
            Some((pid, ppid, ticks))
        })
        .collect();
    let mut tree = vec![root];
    let mut total = 0.0;
    while let Some(parent) = tree.pop() {
        for &(pid, ppid, ticks) in &processes {
            if pid == parent {
                total += ticks;
            }
            if ppid == parent {
                tree.push(pid);
            }
        }
    }
    total
}

/// The parent and the ticks (utime + stime + cutime + cstime) in a `/proc/PID/stat` line; the
/// fields are counted after the command name's closing parenthesis, as the name may hold spaces.
fn parse_stat(stat: &str) -> Option<(u32, f64)> {
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // After the name: state (field 3 of proc(5)), ppid (4), ..., utime (14) to cstime (17).
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<f64>().ok())
        .sum::<Option<f64>>()?;
    Some((ppid, ticks))
}

#[cfg(test)]
mod tests {
    use super::{CpuTrace, parse_stat};

    #[test]
    fn stat_lines_give_the_parent_and_the_four_times() {
        let line = "4242 (tokio worker) S 17 4242 17 0 -1 4194560 100 0 0 0 30 12 5 3 20 0 1 0 9 0";
        assert_eq!(parse_stat(line), Some((17, 50.0)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_trace_interpolates_between_samples_and_holds_at_its_ends() {
        let trace = CpuTrace {
            samples: vec![(10.0, 1.0), (12.0, 3.0), (14.0, 3.0)],
        };
        assert!((trace.between(11.0, 13.0) - 1.0).abs() < 1e-12);
        assert!((trace.between(0.0, 20.0) - 2.0).abs() < 1e-12);
        assert_eq!(CpuTrace::default().between(0.0, 1.0), 0.0);
    }
}
