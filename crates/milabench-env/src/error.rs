//! Everything that can go wrong while finding Python, preparing the installer or building an
//! environment. Each message names the thing at fault and what to do about it.

use camino::Utf8PathBuf;
use milabench_exec::ExitCode;

/// An environment could not be found, built or pinned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// No usable Python interpreter.
    #[error(
        "no Python interpreter: `{tried}` {reason}; install Python 3 or name one with --python / MILABENCH_PYTHON"
    )]
    PythonNotFound {
        /// What was looked for.
        tried: String,
        /// Why it did not do.
        reason: String,
    },
    /// The interpreter is older than the suite needs.
    #[error(
        "install group `{group}` needs Python {needed} or newer, but {python} is Python {found}; name a newer interpreter with --python / MILABENCH_PYTHON"
    )]
    PythonTooOld {
        /// The install group that needs more.
        group: String,
        /// The interpreter.
        python: Utf8PathBuf,
        /// Its version.
        found: String,
        /// The least version the group accepts.
        needed: String,
    },
    /// uv is not on `PATH` and could not be installed into the tools folder.
    #[error(
        "could not install uv into {tools} with `{python} -m pip`: {reason}; see {log}, put uv on PATH, or use --installer pip"
    )]
    UvBootstrap {
        /// The tools folder.
        tools: Utf8PathBuf,
        /// The interpreter whose pip was used.
        python: Utf8PathBuf,
        /// What went wrong.
        reason: String,
        /// The log of the attempt.
        log: Utf8PathBuf,
    },
    /// A benchmark's requirements could not be found.
    #[error("benchmark `{bench}` (install group `{group}`): {problem}; {hint}")]
    Requirements {
        /// The benchmark.
        bench: String,
        /// Its install group.
        group: String,
        /// What is missing or wrong.
        problem: String,
        /// What to do.
        hint: String,
    },
    /// The project tree (with `benchmarks/_benchmate` and `constraints/`) was not found.
    #[error(
        "cannot find the milabench project tree (a folder with benchmarks/_benchmate/pyproject.toml) above {start}; keep the suite file inside a milabench checkout"
    )]
    NoProjectTree {
        /// Where the search started.
        start: Utf8PathBuf,
    },
    /// A step of an install (venv creation, package install, compile) failed.
    #[error("install group `{group}`: {step} failed{status}{details}\n  full log: {log}")]
    StepFailed {
        /// The install group.
        group: String,
        /// What was being done (`creating the environment`, `installing packages`, ...).
        step: String,
        /// The exit status, as text (` (exit status 1)`), or empty.
        status: String,
        /// The lines of the installer's output that say what went wrong (with a leading `: `),
        /// or empty.
        details: String,
        /// The full log.
        log: Utf8PathBuf,
    },
    /// The install was interrupted (Ctrl-C); nothing was marked as installed.
    #[error(
        "install group `{group}` was interrupted; the environment is not marked as installed and the next install starts it again (log: {log})"
    )]
    Interrupted {
        /// The install group.
        group: String,
        /// The log of the interrupted step.
        log: Utf8PathBuf,
    },
    /// A group sets `pip.overrides` but would be installed with pip, which has no overrides.
    #[error(
        "install group `{group}` sets `pip.overrides` ({overrides}), which only uv applies: pip cannot replace a version a package itself pins; {fix}"
    )]
    OverridesNeedUv {
        /// The install group.
        group: String,
        /// Its override lines, joined.
        overrides: String,
        /// What to do (which setting chose pip).
        fix: String,
    },
    /// `pin` needs uv.
    #[error(
        "`milabench pin` compiles requirements with uv; drop --installer pip (uv is bootstrapped when missing)"
    )]
    PinNeedsUv,
    /// The `unpinned` variant has nothing to pin.
    #[error(
        "the `unpinned` variant uses requirements.in as it is and cannot be pinned; name an arch with --variant (cpu, cuda, rocm, xpu, hpu)"
    )]
    PinUnpinned,
    /// The environment of a benchmark is not installed (or is out of date).
    #[error(
        "the environment of `{bench}` (install group `{group}`, {venv}) is {state}; run `milabench install --select {bench}` first"
    )]
    NotInstalled {
        /// The benchmark.
        bench: String,
        /// Its install group.
        group: String,
        /// The venv folder.
        venv: Utf8PathBuf,
        /// `not installed` or `out of date`.
        state: String,
    },
    /// `tools patch --venv` named a folder that is not a virtual environment.
    #[error(
        "{path} is not a Python virtual environment (no lib/python*/site-packages in it)\n  fix: give the folder of a venv, e.g. <base>/venv/<install group>"
    )]
    NotAVenv {
        /// The folder.
        path: Utf8PathBuf,
    },
    /// `tools patch` would overwrite a `sitecustomize.py` it did not write.
    #[error(
        "{path} exists and was not written by milabench\n  fix: remove it (or merge it by hand) and patch again"
    )]
    ForeignSitecustomize {
        /// The file.
        path: Utf8PathBuf,
    },
    /// A file or folder could not be read, written or created.
    #[error("{action} {path}; check the folder exists, is writable and the disk is not full")]
    Io {
        /// What was being done (`could not create`, ...).
        action: &'static str,
        /// The path at fault.
        path: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The lock of an install group could not be taken.
    #[error("could not take the lock of install group `{group}`")]
    Lock {
        /// The install group.
        group: String,
        /// The cause.
        source: milabench_metrics::LockError,
    },
    /// A helper program (an installer, an interpreter) could not be run.
    #[error(transparent)]
    Helper(#[from] milabench_exec::HelperError),
}

impl EnvError {
    /// An I/O error about `path`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<Utf8PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> EnvError {
        let path = path.into();
        move |source| EnvError::Io {
            action,
            path,
            source,
        }
    }

    /// Whether this error is the user's interruption rather than a failure.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, EnvError::Interrupted { .. })
    }

    /// The exit code a command that ends on this error deserves: what the suite or the flags
    /// ask for is bad input (no such Python, missing requirements, an environment not
    /// installed, another install holding the group); an installer that fails is a failure of
    /// what was asked, like a benchmark's; a file or program the machine would not give is an
    /// internal or environment failure; Ctrl-C is an interruption.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            EnvError::PythonNotFound { .. }
            | EnvError::PythonTooOld { .. }
            | EnvError::Requirements { .. }
            | EnvError::NoProjectTree { .. }
            | EnvError::PinNeedsUv
            | EnvError::OverridesNeedUv { .. }
            | EnvError::PinUnpinned
            | EnvError::NotInstalled { .. }
            | EnvError::NotAVenv { .. }
            | EnvError::ForeignSitecustomize { .. } => ExitCode::BadInput,
            EnvError::UvBootstrap { .. } | EnvError::StepFailed { .. } => {
                ExitCode::BenchmarkFailures
            }
            EnvError::Lock { source, .. } => ExitCode::bad_input_or_internal(source.is_bad_input()),
            EnvError::Io { .. } | EnvError::Helper(_) => ExitCode::Internal,
            EnvError::Interrupted { .. } => ExitCode::Interrupted,
        }
    }
}
