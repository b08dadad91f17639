//! Which accelerator family this machine has, from the drivers present: NVIDIA (`cuda`), AMD
//! (`rocm`), Intel GPUs (`xpu`) or Gaudi (`hpu`); `cpu` when there is none.

use std::path::Path;

use crate::error::Error;

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
