//! Python environments for benchmarks: one virtual environment per install group, built with uv
//! (or plain pip), kept in step with its requirements by a fingerprint.
//!
//! The pieces, in the order an install uses them:
//!
//! - [`Python`]: the interpreter (`--python`, `MILABENCH_PYTHON`, else `python3` on `PATH`),
//!   probed once for its version and real path.
//! - [`Tool`]: uv from `PATH`, else uv installed once into `<base>/tools/uv` with that
//!   interpreter's pip (the `uv` package on the index carries the binary), or pip.
//! - [`install_groups`]: benchmarks grouped by `install_group`; each group gets its benchmarks'
//!   `requirements.<variant>.txt` (or `requirements.in` when no pin exists or the variant is
//!   `unpinned`), `constraints/<variant>.txt` of the [`ProjectTree`], the suite's `pip.args`,
//!   `pip.constraints` and `pip.overrides` (uv's `--overrides`: a version that replaces a
//!   package's own pin; refused where pip installs), `voir`, and `benchmarks/_benchmate`
//!   (editable).
//! - [`Environments::install`]: takes the group's lock (one process at a time per group; the
//!   next one waits, then finds the work done), compares the group's [`Fingerprint`] (file
//!   contents, Python, installer version, arch, variant) with the one recorded in the venv and
//!   checks the venv is whole; otherwise it removes the venv, builds a fresh one in place,
//!   installs, and records the fingerprint last. A failed or interrupted install therefore never
//!   looks finished, and the next one starts clean.
//! - [`Environments::pin`]: `uv pip compile` of each group into pinned files.
//! - Existing environments: a group whose interpreter is named (its `python:` key in the suite,
//!   `--python`, `MILABENCH_PYTHON`) gets an overlay venv made with `--system-site-packages`
//!   over it: what the interpreter has (a site's torch module) is used as it is, and only what
//!   the group needs and lacks goes into the overlay ([`InstallGroup::for_overlay`]: the
//!   unpinned requirements, installed with pip, which unlike uv sees the interpreter's
//!   packages). The fingerprint then covers the
//!   interpreter and its torch version. [`Environments::survey`] says what is present and what
//!   an install would add, changing nothing.
//! - Offline installs: [`Environments::bundle`] downloads what a group installs into a
//!   wheelhouse (for a target Python and platform); [`Sources`] with `offline` installs from it
//!   alone (`--no-index`, and uv's `--offline`).
//!
//! All uv commands share one cache, the user's `~/.cache/milabench-rs/uv` (or `UV_CACHE_DIR`; see
//! [`Environments::uv_cache`]), so a second environment, even in another base folder, links the
//! same wheels instead of downloading them. Installer output goes line by line to
//! `<base>/logs/install/<group>.log` and to the caller as [`Event`]s; this crate prints nothing.
//!
//! Why a fresh venv rather than an upgrade in place: an environment must be exactly what its
//! inputs say, and uv's cache makes a rebuild cost little more than an incremental update.

mod bundle;
mod error;
mod fingerprint;
mod group;
mod install;
mod pin;
mod process;
mod progress_patch;
mod project;
mod python;
mod survey;
mod tool;

pub use bundle::{BundleTarget, Bundled};
pub use error::EnvError;
pub use fingerprint::{FINGERPRINT_FILE, Fingerprint, read as read_fingerprint};
pub use group::{InstallGroup, RequirementFile, UNPINNED, install_groups};
pub use install::{
    BaseInterpreter, EnvOptions, Environments, Event, Outcome, Sources, Stage, VOIR, is_finished,
};
pub use pin::Pinned;
pub use progress_patch::patch_progress_bars;
pub use project::ProjectTree;
pub use python::{MIN_PYTHON, Python, PythonVersion, find_on_path};
pub use survey::{RequirementState, Survey, Verdict};
pub use tool::Tool;
