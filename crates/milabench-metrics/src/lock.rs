//! Advisory locks on folders that one milabench process at a time may write: a run folder
//! (`<run>/.milabench.lock`) and an install group's environment (a lock file beside the venv).
//!
//! The lock is the operating system's advisory lock on a small file (`flock` on Linux, through
//! [`std::fs::File::try_lock`]), so it is released when every process holding the file open has
//! closed it or died: a killed holder never leaves a stale lock behind. The file holds the pid of
//! the process that took the lock, to name it to the next one. Children that inherit the open
//! file keep the lock held (the run folder's lock is passed to benchmark processes on purpose,
//! so that a run whose orchestrator died is still seen as running while any of its processes
//! lives); the holders named are then found among the processes that have the file open.
//!
//! A folder that several processes write at once, each its own part (the tasks of a Slurm job
//! array writing one run folder), is locked shared by each ([`FolderLock::try_acquire_shared`]),
//! which keeps out an exclusive holder; each part then has a lock file of its own.
//!
//! It lives here, beside the run folders it mostly guards, and `milabench-env` reuses it for
//! install groups.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a folder lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error("{} is held by {}", path.display(), describe_holders(holders))]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The live processes known to hold it (the one that took it first), possibly empty
        /// when they cannot be seen (another user's processes).
        holders: Vec<u32>,
    },
    /// The lock file could not be created, read or written.
    #[error(
        "could not lock {}; check that the folder is writable and the disk is not full",
        path.display()
    )]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl LockError {
    /// Whether the error is the user's doing (another process of theirs holds the lock) rather
    /// than the machine failing to create or write the lock file.
    pub fn is_bad_input(&self) -> bool {
        match self {
            LockError::Held { .. } => true,
            LockError::Io { .. } => false,
        }
    }
}

/// `pid 12`, `pids 12, 13`, or a sentence for none.
pub fn describe_holders(holders: &[u32]) -> String {
    match holders {
        [] => "a process that cannot be seen from here (another user's?)".to_string(),
        [pid] => format!("pid {pid}"),
        pids => format!(
            "pids {}",
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct FolderLock {
    file: Arc<File>,
    path: PathBuf,
}

impl FolderLock {
    /// Takes the lock at `path` (creating the file and its folder) without waiting.
    pub fn try_acquire(path: impl Into<PathBuf>) -> Result<FolderLock, LockError> {
        let path = path.into();
        let file = open(&path)?;
        match file.try_lock() {
            Ok(()) => FolderLock::record(file, path),
            Err(error) => Err(refusal(error, path, &file)),
        }
    }

    /// Takes the lock at `path` shared, without waiting: any number of shared holders at once
    /// (processes that each write their own part of the folder, and take a lock of their own
    /// for it), none while an exclusive holder ([`FolderLock::try_acquire`]) has it, and no
    /// exclusive holder while one of them has it. The file keeps the pid of the last
    /// exclusive holder: shared holders are named from the processes that have it open.
    pub fn try_acquire_shared(path: impl Into<PathBuf>) -> Result<FolderLock, LockError> {
        let path = path.into();
        let file = open(&path)?;
        match file.try_lock_shared() {
            Ok(()) => Ok(FolderLock {
                file: Arc::new(file),
                path,
            }),
            Err(error) => Err(refusal(error, path, &file)),
        }
    }

    /// Takes the lock at `path`, waiting as long as it is held: `on_wait` is told the holders
    /// once, before the wait.
    pub fn acquire(
        path: impl Into<PathBuf>,
        on_wait: impl FnOnce(&[u32]),
    ) -> Result<FolderLock, LockError> {
        match FolderLock::try_acquire(path) {
            Err(LockError::Held { path, holders }) => {
                on_wait(&holders);
                let file = open(&path)?;
                file.lock().map_err(|source| LockError::Io {
                    path: path.clone(),
                    source,
                })?;
                FolderLock::record(file, path)
            }
            other => other,
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open lock file, for child processes that should keep the lock held while they live
    /// (the lock lasts until this value and every clone of the file are dropped).
    pub fn shared_file(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// Writes this process's pid into the locked file.
    fn record(mut file: File, path: PathBuf) -> Result<FolderLock, LockError> {
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()));
        match written {
            Ok(()) => Ok(FolderLock {
                file: Arc::new(file),
                path,
            }),
            Err(source) => Err(LockError::Io { path, source }),
        }
    }
}

/// The error of a lock not taken: [`LockError::Held`] with its holders when another has it.
fn refusal(error: TryLockError, path: PathBuf, file: &File) -> LockError {
    match error {
        TryLockError::WouldBlock => {
            let holders = holders(&path, file);
            LockError::Held { path, holders }
        }
        TryLockError::Error(source) => LockError::Io { path, source },
    }
}

fn open(path: &Path) -> Result<File, LockError> {
    let io = |source| LockError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)
}

/// The live processes holding `path` open (this one left out), the recorded pid first; the
/// recorded pid alone when no process can be seen holding it but it is alive.
fn holders(path: &Path, file: &File) -> Vec<u32> {
    let mut text = String::new();
    let recorded = (&*file)
        .read_to_string(&mut text)
        .ok()
        .and_then(|_| text.trim().parse::<u32>().ok());
    let mut found = processes_with_open(path);
    found.sort_unstable_by_key(|&pid| (Some(pid) != recorded, pid));
    if found.is_empty() {
        found.extend(recorded.filter(|pid| alive(*pid)));
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses; `Z`: a zombie.
        stat.rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// The processes (other than this one) with a descriptor open on `path`, from `/proc`.
fn processes_with_open(path: &Path) -> Vec<u32> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Vec::new();
    };
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_named_until_the_first_lets_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("deep/.milabench.lock");
        let first = FolderLock::try_acquire(&path).expect("free");
        assert_eq!(
            std::fs::read_to_string(&path).expect("pid file").trim(),
            std::process::id().to_string()
        );
        // A second open file description of the same process conflicts like another process.
        let err = FolderLock::try_acquire(&path).expect_err("held");
        let LockError::Held { holders, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(holders, &[std::process::id()], "the recorded, live pid");
        assert!(
            err.to_string()
                .contains(&format!("is held by pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        let mut waited = false;
        let again = FolderLock::acquire(&path, |_| waited = true).expect("free again");
        assert!(!waited, "a free lock is taken without waiting");
        assert_eq!(again.path(), path);
    }

    #[test]
    fn shared_holders_coexist_and_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(".milabench.lock");
        let first = FolderLock::try_acquire_shared(&path).expect("free");
        let second = FolderLock::try_acquire_shared(&path).expect("shared with the first");
        let err = FolderLock::try_acquire(&path).expect_err("shared holders keep it");
        assert!(matches!(err, LockError::Held { .. }), "{err}");
        drop(first);
        FolderLock::try_acquire(&path).expect_err("the second still holds it");
        drop(second);
        let exclusive = FolderLock::try_acquire(&path).expect("free again");
        let err = FolderLock::try_acquire_shared(&path).expect_err("held exclusively");
        assert!(
            err.to_string()
                .contains(&format!("is held by pid {}", std::process::id())),
            "{err}"
        );
        drop(exclusive);
    }

    #[test]
    fn holders_are_described() {
        assert_eq!(describe_holders(&[4]), "pid 4");
        assert_eq!(describe_holders(&[4, 5]), "pids 4, 5");
        assert!(describe_holders(&[]).contains("cannot be seen"));
    }
}
