//! Prepared data shared through a network drive, as the Python tool's clusters do it: one base
//! folder is prepared once (`data`, `cache`, the environments in `venv`) on a shared drive,
//! archived there (`data archive`), and each machine copies it to a fast local base before a run
//! (`data sharedsetup`), linking the shared environments rather than copying them.
//!
//! The copies are made by `tar` (archives) and `cp -a` (folders), each with no time limit: a
//! data set is as large as it is.

use std::path::{Path, PathBuf};

use milabench_exec::{HelperCommand, HelperError};

/// What `data sharedsetup` is asked to do.
#[derive(Debug, Clone)]
pub struct SharedSetup {
    /// The shared base folder: its `data` and `cache` (folders, or `.tar`/`.tar.gz` archives
    /// beside them) and its `venv`.
    pub network: PathBuf,
    /// The local base folder to fill.
    pub local: PathBuf,
    /// Only restore from archives: a missing `data.tar[.gz]` is an error.
    pub archives_only: bool,
    /// Shared data that is not there is not an error: nothing is done.
    pub maybe: bool,
}

/// One thing [`shared_setup`] or [`archive_shared_data`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedStep {
    /// An archive unpacked into a folder.
    Unpacked {
        /// The archive.
        archive: PathBuf,
        /// The folder it went into.
        into: PathBuf,
    },
    /// A folder copied.
    Copied {
        /// The source folder.
        from: PathBuf,
        /// The copy.
        to: PathBuf,
    },
    /// A link to the shared environments.
    Linked {
        /// The link made.
        link: PathBuf,
        /// What it points to.
        target: PathBuf,
    },
    /// A folder archived.
    Archived {
        /// The folder.
        folder: PathBuf,
        /// The archive written.
        archive: PathBuf,
    },
    /// Nothing to do: the shared data is not there (`maybe`).
    NothingShared {
        /// The data folder that was looked for.
        data: PathBuf,
    },
}

/// Why shared data could not be set up or archived.
#[derive(Debug, thiserror::Error)]
pub enum SharedDataError {
    /// Neither the data folder nor an archive of it exists.
    #[error(
        "no shared data at {0} (neither the folder nor {0}.tar or {0}.tar.gz)\n  fix: check --network, archive a prepared base there with `milabench data archive`, or pass --maybe to go on without it",
        .path.display()
    )]
    Missing {
        /// The data folder looked for.
        path: PathBuf,
    },
    /// `--archive` was given and there is no archive.
    #[error(
        "no archive {}.tar or .tar.gz (--archive restores from archives only)\n  fix: make one with `milabench data archive`, or leave out --archive to copy the folder",
        .path.display()
    )]
    NoArchive {
        /// The data folder whose archive was looked for.
        path: PathBuf,
    },
    /// A folder to archive does not exist.
    #[error("{} does not exist\n  fix: give the base folder whose data was prepared (--local)", .path.display())]
    NothingToArchive {
        /// The folder.
        path: PathBuf,
    },
    /// A copy or archive command failed.
    #[error("`{command}` failed: {said}")]
    Command {
        /// The command line.
        command: String,
        /// What it said.
        said: String,
    },
    /// A copy or archive command could not run.
    #[error(transparent)]
    Helper(#[from] HelperError),
    /// A folder or link could not be made.
    #[error("could not write {}", .path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
}

impl SharedDataError {
    /// Whether the error is the user's input (a path with nothing there) rather than the
    /// machine failing.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            SharedDataError::Missing { .. }
                | SharedDataError::NoArchive { .. }
                | SharedDataError::NothingToArchive { .. }
        )
    }
}

/// The folders a base shares: the prepared data (required) and the caches (optional).
const SHARED: [(&str, bool); 2] = [("data", true), ("cache", false)];

/// Copies the shared `data` and `cache` of `setup.network` into `setup.local` (unpacking
/// their archives when there are some, else copying the folders) and links `local/venv` to the
/// shared `venv` when the local base has none. `on_step` hears each step before it starts.
pub fn shared_setup(
    setup: &SharedSetup,
    on_step: &mut dyn FnMut(&SharedStep),
) -> Result<Vec<SharedStep>, SharedDataError> {
    let data = setup.network.join("data");
    if !data.is_dir() && archive_of(&data).is_none() {
        if setup.maybe {
            let step = SharedStep::NothingShared { data };
            on_step(&step);
            return Ok(vec![step]);
        }
        return Err(SharedDataError::Missing { path: data });
    }
    create_dir(&setup.local)?;
    let mut steps = Vec::new();
    for (name, required) in SHARED {
        let shared = setup.network.join(name);
        let step = match archive_of(&shared) {
            Some(archive) => SharedStep::Unpacked {
                archive,
                into: setup.local.clone(),
            },
            None if setup.archives_only && required => {
                return Err(SharedDataError::NoArchive { path: shared });
            }
            None if shared.is_dir() => SharedStep::Copied {
                from: shared,
                to: setup.local.join(name),
            },
            None => continue,
        };
        on_step(&step);
        perform(&step)?;
        steps.push(step);
    }
    let venv = setup.network.join("venv");
    let link = setup.local.join("venv");
    if venv.is_dir() && std::fs::symlink_metadata(&link).is_err() {
        let step = SharedStep::Linked {
            link: link.clone(),
            target: venv.clone(),
        };
        on_step(&step);
        std::os::unix::fs::symlink(&venv, &link)
            .map_err(|source| SharedDataError::Write { path: link, source })?;
        steps.push(step);
    }
    Ok(steps)
}

/// Archives `local/data` (required) and `local/cache` (when there) as `network/data.tar` and
/// `network/cache.tar`, each written beside its final name and renamed when complete.
pub fn archive_shared_data(
    local: &Path,
    network: &Path,
    on_step: &mut dyn FnMut(&SharedStep),
) -> Result<Vec<SharedStep>, SharedDataError> {
    create_dir(network)?;
    let mut steps = Vec::new();
    for (name, required) in SHARED {
        let folder = local.join(name);
        if !folder.is_dir() {
            if required {
                return Err(SharedDataError::NothingToArchive { path: folder });
            }
            continue;
        }
        let step = SharedStep::Archived {
            folder,
            archive: network.join(format!("{name}.tar")),
        };
        on_step(&step);
        perform(&step)?;
        steps.push(step);
    }
    Ok(steps)
}

/// The archive of `folder` beside it (`.tar`, else `.tar.gz`), if there is one.
fn archive_of(folder: &Path) -> Option<PathBuf> {
    ["tar", "tar.gz"]
        .into_iter()
        .map(|ext| PathBuf::from(format!("{}.{ext}", folder.display())))
        .find(|archive| archive.is_file())
}

fn create_dir(path: &Path) -> Result<(), SharedDataError> {
    std::fs::create_dir_all(path).map_err(|source| SharedDataError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Runs the command of a copy, unpacking or archiving step.
fn perform(step: &SharedStep) -> Result<(), SharedDataError> {
    let (command, done) = match step {
        SharedStep::Unpacked { archive, into } => (
            HelperCommand::unlimited(
                "tar",
                [
                    "-xf".as_ref(),
                    archive.as_os_str(),
                    "-C".as_ref(),
                    into.as_os_str(),
                ],
            ),
            None,
        ),
        SharedStep::Copied { from, to } => {
            create_dir(to)?;
            // `from/.` copies the folder's contents into an existing `to`.
            let contents = from.join(".");
            (
                HelperCommand::unlimited(
                    "cp",
                    ["-a".as_ref(), contents.as_os_str(), to.as_os_str()],
                ),
                None,
            )
        }
        SharedStep::Archived { folder, archive } => {
            let partial = archive.with_extension("tar.partial");
            let parent = folder.parent().unwrap_or(Path::new("."));
            let name = folder.file_name().unwrap_or_default();
            (
                HelperCommand::unlimited(
                    "tar",
                    [
                        "-cf".as_ref(),
                        partial.as_os_str(),
                        "-C".as_ref(),
                        parent.as_os_str(),
                        name,
                    ],
                ),
                Some((partial, archive.clone())),
            )
        }
        SharedStep::Linked { .. } | SharedStep::NothingShared { .. } => return Ok(()),
    };
    let output = command.run()?;
    if !output.success() {
        return Err(SharedDataError::Command {
            command: command.display(),
            said: output.said().to_owned(),
        });
    }
    if let Some((partial, archive)) = done {
        std::fs::rename(&partial, &archive).map_err(|source| SharedDataError::Write {
            path: archive,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared_base(root: &Path) -> PathBuf {
        let base = root.join("prepared");
        std::fs::create_dir_all(base.join("data/imagenet")).unwrap();
        std::fs::write(base.join("data/imagenet/train.bin"), b"pixels").unwrap();
        std::fs::create_dir_all(base.join("cache/hf")).unwrap();
        std::fs::write(base.join("cache/hf/model"), b"weights").unwrap();
        std::fs::create_dir_all(base.join("venv/torch/bin")).unwrap();
        base
    }

    fn setup(network: &Path, local: &Path) -> SharedSetup {
        SharedSetup {
            network: network.to_path_buf(),
            local: local.to_path_buf(),
            archives_only: false,
            maybe: false,
        }
    }

    #[test]
    fn folders_are_copied_and_the_environments_linked() {
        let tmp = tempfile::tempdir().unwrap();
        let network = prepared_base(tmp.path());
        let local = tmp.path().join("local");
        let steps = shared_setup(&setup(&network, &local), &mut |_| {}).unwrap();
        assert_eq!(steps.len(), 3, "{steps:?}");
        assert_eq!(
            std::fs::read(local.join("data/imagenet/train.bin")).unwrap(),
            b"pixels"
        );
        assert_eq!(
            std::fs::read(local.join("cache/hf/model")).unwrap(),
            b"weights"
        );
        assert_eq!(
            std::fs::read_link(local.join("venv")).unwrap(),
            network.join("venv")
        );
    }

    #[test]
    fn archives_made_by_archive_are_unpacked() {
        let tmp = tempfile::tempdir().unwrap();
        let prepared = prepared_base(tmp.path());
        let network = tmp.path().join("network");
        let made = archive_shared_data(&prepared, &network, &mut |_| {}).unwrap();
        assert_eq!(made.len(), 2);
        assert!(network.join("data.tar").is_file());
        assert!(!network.join("data.tar.partial").exists());
        let local = tmp.path().join("local");
        let mut only_archives = setup(&network, &local);
        only_archives.archives_only = true;
        let steps = shared_setup(&only_archives, &mut |_| {}).unwrap();
        assert!(matches!(steps[0], SharedStep::Unpacked { .. }), "{steps:?}");
        assert_eq!(
            std::fs::read(local.join("data/imagenet/train.bin")).unwrap(),
            b"pixels"
        );
    }

    #[test]
    fn missing_data_is_an_error_unless_maybe() {
        let tmp = tempfile::tempdir().unwrap();
        let network = tmp.path().join("empty");
        let local = tmp.path().join("local");
        let err = shared_setup(&setup(&network, &local), &mut |_| {}).unwrap_err();
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("--maybe"), "{err}");
        let mut maybe = setup(&network, &local);
        maybe.maybe = true;
        let steps = shared_setup(&maybe, &mut |_| {}).unwrap();
        assert!(matches!(steps[..], [SharedStep::NothingShared { .. }]));
        assert!(!local.exists(), "nothing is made");
    }

    #[test]
    fn archives_only_refuses_a_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let network = prepared_base(tmp.path());
        let mut only_archives = setup(&network, &tmp.path().join("local"));
        only_archives.archives_only = true;
        let err = shared_setup(&only_archives, &mut |_| {}).unwrap_err();
        assert!(matches!(err, SharedDataError::NoArchive { .. }), "{err}");
    }
}
