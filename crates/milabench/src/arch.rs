//! Which accelerator family this machine has, from the drivers present: NVIDIA (`cuda`), AMD
//! (`rocm`), Intel GPUs (`xpu`) or Gaudi (`hpu`); `cpu` when there is none.

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Error;

/// The family of this machine, once detected.
static HERE: OnceLock<Result<String, String>> = OnceLock::new();
/// How many times this process looked at its driver files.
static DETECTIONS: AtomicUsize = AtomicUsize::new(0);

/// Detects the accelerator family of this machine, once per process (the drivers do not come
/// and go while a command runs): the default suite and the resolution ask it both.
pub fn detect_here() -> Result<String, Error> {
    HERE.get_or_init(|| {
        DETECTIONS.fetch_add(1, Ordering::Relaxed);
        detect(Path::new("/")).map_err(|e| match e {
            Error::AmbiguousArch { found } => found,
            other => other.to_string(),
        })
    })
    .clone()
    .map_err(|found| Error::AmbiguousArch { found })
}

/// How many times this process looked at its driver files to detect its family: at most once,
/// the first detection's answer serving every later one.
pub fn arch_detections() -> usize {
    DETECTIONS.load(Ordering::Relaxed)
}

/// Driver files that reveal each family, relative to the filesystem root.
const PROBES: [(&str, &str); 4] = [
    ("cuda", "proc/driver/nvidia/version"),
    ("rocm", "dev/kfd"),
    ("hpu", "dev/accel/accel0"),
    ("xpu", "sys/module/i915/parameters/enable_guc"),
];

/// Detects the accelerator family under `root` (`/` on a real machine).
pub fn detect(root: &Path) -> Result<String, Error> {
    let found: Vec<&str> = PROBES
        .iter()
        .filter(|(_, probe)| root.join(probe).exists())
        .map(|(arch, _)| *arch)
        .collect();
    match found.as_slice() {
        [] => Ok("cpu".into()),
        [one] => Ok((*one).into()),
        // An Intel iGPU beside a discrete card is common; the discrete card wins.
        [first, "xpu"] => Ok((*first).into()),
        many => Err(Error::AmbiguousArch {
            found: many.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_from_driver_files() {
        let root = tempfile::tempdir().expect("tempdir");
        assert_eq!(detect(root.path()).expect("ok"), "cpu");
        std::fs::create_dir_all(root.path().join("proc/driver/nvidia")).expect("mkdir");
        std::fs::write(root.path().join("proc/driver/nvidia/version"), "x").expect("write");
        assert_eq!(detect(root.path()).expect("ok"), "cuda");
        std::fs::create_dir_all(root.path().join("dev")).expect("mkdir");
        std::fs::write(root.path().join("dev/kfd"), "").expect("write");
        assert!(detect(root.path()).is_err());
    }
}
