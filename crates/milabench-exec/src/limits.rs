//! The open-file limit. Supervising a process holds about four descriptors (the read ends of
//! its stdout, stderr and data pipes, and its `.data` file), so the soft limit of a default
//! login, 1,024, ended a plan of 256 processes with "Too many open files" at its 200-somethingth
//! spawn. [`raise_open_file_limit`] lifts the soft limit to the hard one, which only the
//! administrator sets, as the Go runtime does for its programs at start-up.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises this process's soft limit on open files to its hard limit and returns the limit in
/// force. The processes it starts afterwards inherit the raised limit.
pub fn raise_open_file_limit() -> nix::Result<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard)
}

#[cfg(test)]
mod tests {
    use nix::sys::resource::{Resource, getrlimit};

    #[test]
    fn the_soft_limit_becomes_the_hard_one() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("limit");
        assert_eq!(super::raise_open_file_limit(), Ok(hard));
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE), Ok((hard, hard)));
    }
}
