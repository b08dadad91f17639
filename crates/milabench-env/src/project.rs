//! The project tree: the checkout that holds `benchmarks/_benchmate` (installed in every
//! environment) and `constraints/<arch>.txt` (global pins per accelerator family).

use camino::{Utf8Path, Utf8PathBuf};

use crate::error::EnvError;

/// The root of a milabench checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectTree {
    /// The root folder.
    pub root: Utf8PathBuf,
}

/// Where this crate's own checkout is, when it was built from one (development builds).
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

impl ProjectTree {
    /// The nearest folder at or above `start` holding `benchmarks/_benchmate/pyproject.toml`;
    /// when none does (a suite kept outside the checkout), the checkout this program was built
    /// from, if it is still there.
    pub fn locate(start: &Utf8Path) -> Result<ProjectTree, EnvError> {
        let found = start
            .ancestors()
            .find(|dir| Self::is_root(dir))
            .map(Utf8Path::to_path_buf)
            .or_else(|| {
                let built = Utf8Path::new(BUILT_FROM);
                Self::is_root(built)
                    .then(|| built.canonicalize_utf8().ok())
                    .flatten()
            });
        match found {
            Some(root) => Ok(ProjectTree { root }),
            None => Err(EnvError::NoProjectTree {
                start: start.to_path_buf(),
            }),
        }
    }

    fn is_root(dir: &Utf8Path) -> bool {
        dir.join("benchmarks/_benchmate/pyproject.toml").is_file()
    }

    /// The benchmate package folder.
    pub fn benchmate(&self) -> Utf8PathBuf {
        self.root.join("benchmarks/_benchmate")
    }

    /// `constraints/<name>.txt`, when it exists.
    pub fn constraints(&self, name: &str) -> Option<Utf8PathBuf> {
        let path = self.root.join("constraints").join(format!("{name}.txt"));
        path.is_file().then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_checkout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        fs_err::create_dir_all(root.join("benchmarks/_benchmate")).expect("mkdir");
        fs_err::write(root.join("benchmarks/_benchmate/pyproject.toml"), "").expect("write");
        fs_err::create_dir_all(root.join("config/deep")).expect("mkdir");
        fs_err::create_dir_all(root.join("constraints")).expect("mkdir");
        fs_err::write(root.join("constraints/cpu.txt"), "").expect("write");
        let tree = ProjectTree::locate(&root.join("config/deep")).expect("found");
        assert_eq!(tree.root, root);
        assert!(tree.constraints("cpu").is_some());
        assert!(tree.constraints("cuda").is_none());
    }

    #[test]
    fn falls_back_to_the_checkout_built_from() {
        let dir = tempfile::tempdir().expect("tempdir");
        let start = Utf8Path::from_path(dir.path()).expect("utf8");
        let tree = ProjectTree::locate(start).expect("this checkout");
        assert!(tree.benchmate().join("pyproject.toml").is_file());
    }
}
