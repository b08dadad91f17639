//! `milabench new`: a new benchmark folder from the template in `benchmarks/_template`, which
//! is compiled into the binary so the command works wherever it runs.

use std::path::{Path, PathBuf};

use milabench_exec::ExitCode;

/// The template's files: name, content, executable.
const TEMPLATE: &[(&str, &str, bool)] = &[
    (
        "main.py",
        include_str!("../../../benchmarks/_template/main.py"),
        true,
    ),
    (
        "prepare.py",
        include_str!("../../../benchmarks/_template/prepare.py"),
        true,
    ),
    (
        "requirements.in",
        include_str!("../../../benchmarks/_template/requirements.in"),
        false,
    ),
    (
        "benchfile.yaml",
        include_str!("../../../benchmarks/_template/benchfile.yaml"),
        false,
    ),
    (
        "README.md",
        include_str!("../../../benchmarks/_template/README.md"),
        false,
    ),
];

/// Why a benchmark folder cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    /// The name cannot be a folder and suite key.
    #[error(
        "`{0}` is not a usable benchmark name\n  fix: use letters, digits, `-` and `_`, not starting with `_` or `-`"
    )]
    BadName(String),
    /// The folder exists already.
    #[error("{0} already exists\n  fix: choose another name or remove that folder")]
    Exists(PathBuf),
    /// Writing failed.
    #[error(
        "cannot write {path}\n  fix: check that the folder is writable and the disk is not full"
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl ScaffoldError {
    /// The exit code a `milabench new` that ends on this error deserves: a name that cannot be
    /// used or is taken is bad input, a file that cannot be written an environment failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ScaffoldError::BadName(_) | ScaffoldError::Exists(_) => ExitCode::BadInput,
            ScaffoldError::Write { .. } => ExitCode::Internal,
        }
    }
}

/// Creates `<parent>/<name>` from the template; returns the files written.
pub fn new_benchmark(parent: &Path, name: &str) -> Result<Vec<PathBuf>, ScaffoldError> {
    let usable = !name.is_empty()
        && !name.starts_with(['_', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !usable {
        return Err(ScaffoldError::BadName(name.to_string()));
    }
    let folder = parent.join(name);
    if folder.exists() {
        return Err(ScaffoldError::Exists(folder));
    }
    let write_error = |path: &Path, source: std::io::Error| ScaffoldError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(&folder).map_err(|e| write_error(&folder, e))?;
    let mut written = Vec::new();
    for (file, content, executable) in TEMPLATE {
        let path = folder.join(file);
        let content = content.replace("NAME", name);
        std::fs::write(&path, content).map_err(|e| write_error(&path, e))?;
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| write_error(&path, e))?;
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_folder_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = new_benchmark(dir.path(), "my-bench").expect("made");
        assert_eq!(files.len(), TEMPLATE.len());
        let readme =
            std::fs::read_to_string(dir.path().join("my-bench/README.md")).expect("readme");
        assert!(readme.contains("definition: ../benchmarks/my-bench"));
        assert!(matches!(
            new_benchmark(dir.path(), "my-bench"),
            Err(ScaffoldError::Exists(_))
        ));
        assert!(matches!(
            new_benchmark(dir.path(), "_x"),
            Err(ScaffoldError::BadName(_))
        ));
    }
}
