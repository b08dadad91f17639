//! `tools patch --venv V`: quiet progress bars in every program of an environment. A
//! `sitecustomize.py` in the venv's site-packages (Python runs it at start-up) swaps tqdm's bar
//! for benchmate's throttled one (redrawn at most every 30 s, hidden by
//! `MILABENCH_NO_PROGRESS`), so a bar redrawn ten times a second does not flood a run's
//! `.data` files. The Python tool's command of the same name does this with its own copy of
//! the module; this one imports benchmate's, and does nothing where benchmate or tqdm is absent.

use camino::{Utf8Path, Utf8PathBuf};

use crate::error::EnvError;

/// The first line of the file this module writes: it marks the file as ours.
const MARKER: &str = "# Written by `milabench tools patch`";

/// The file's text.
const SITECUSTOMIZE: &str = r#"# Written by `milabench tools patch`: progress bars redrawn at most every 30 s.
def _milabench_quiet_progress_bars():
    try:
        import tqdm
        import tqdm.auto
        from benchmate.progress import tqdm as throttled
    except Exception:
        return
    tqdm.tqdm = throttled
    tqdm.auto.tqdm = throttled


_milabench_quiet_progress_bars()
"#;

/// Writes the `sitecustomize.py` of `venv` (replacing one this function wrote before) and
/// returns its path.
pub fn patch_progress_bars(venv: &Utf8Path) -> Result<Utf8PathBuf, EnvError> {
    let site_packages = site_packages(venv)?;
    let file = site_packages.join("sitecustomize.py");
    if let Ok(existing) = std::fs::read_to_string(&file)
        && !existing.starts_with(MARKER)
    {
        return Err(EnvError::ForeignSitecustomize { path: file });
    }
    std::fs::write(&file, SITECUSTOMIZE).map_err(EnvError::io("could not write", &file))?;
    Ok(file)
}

/// The `lib/python3.X/site-packages` folder of `venv`.
fn site_packages(venv: &Utf8Path) -> Result<Utf8PathBuf, EnvError> {
    let not_a_venv = || EnvError::NotAVenv {
        path: venv.to_owned(),
    };
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|_| not_a_venv())?;
    let mut found: Vec<Utf8PathBuf> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Utf8PathBuf::from_path_buf(e.path()).ok())
        .filter(|p| p.file_name().is_some_and(|n| n.starts_with("python")))
        .map(|p| p.join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found.pop().ok_or_else(not_a_venv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_rewrites_its_own_file_only() {
        let tmp = tempfile::tempdir().unwrap();
        let venv = Utf8Path::from_path(tmp.path()).unwrap().join("venv");
        let site = venv.join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let file = patch_progress_bars(&venv).unwrap();
        assert_eq!(file, site.join("sitecustomize.py"));
        assert!(std::fs::read_to_string(&file).unwrap().starts_with(MARKER));
        patch_progress_bars(&venv).unwrap();
        std::fs::write(&file, "import os\n").unwrap();
        let err = patch_progress_bars(&venv).unwrap_err();
        assert!(
            matches!(err, EnvError::ForeignSitecustomize { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_folder_without_site_packages_is_not_a_venv() {
        let tmp = tempfile::tempdir().unwrap();
        let err = patch_progress_bars(Utf8Path::from_path(tmp.path()).unwrap()).unwrap_err();
        assert!(
            err.to_string().contains("not a Python virtual environment"),
            "{err}"
        );
    }
}
