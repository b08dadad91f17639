//! The fingerprint of an environment: a hash of everything that decides what gets installed.
//! It is written into the venv only after an install succeeds (atomically, last), so its
//! presence means "finished" and its value means "for these inputs".

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::EnvError;

/// Name of the fingerprint file inside a venv.
pub const FINGERPRINT_FILE: &str = ".milabench-install.json";

/// What an environment was built from, and its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// SHA-256 of the inputs, hex.
    pub hash: String,
    /// The inputs, one short description each (files by path; their contents are in the hash).
    pub inputs: Vec<String>,
}

/// Collects the inputs of a fingerprint.
#[derive(Debug, Default)]
pub(crate) struct FingerprintBuilder {
    hasher: Sha256,
    inputs: Vec<String>,
}

impl FingerprintBuilder {
    /// Adds a named value.
    pub fn value(&mut self, key: &str, value: &str) -> &mut Self {
        self.feed(key.as_bytes());
        self.feed(value.as_bytes());
        self.inputs.push(format!("{key}: {value}"));
        self
    }

    /// Adds a file: its path and its contents.
    pub fn file(&mut self, key: &str, path: &Utf8Path) -> Result<&mut Self, EnvError> {
        let contents = fs_err::read(path).map_err(EnvError::io("could not read", path))?;
        self.feed(key.as_bytes());
        self.feed(path.as_str().as_bytes());
        self.feed(&contents);
        self.inputs.push(format!("{key}: {path}"));
        Ok(self)
    }

    /// Length-prefixed, so that no two input lists hash alike.
    fn feed(&mut self, bytes: &[u8]) {
        self.hasher.update((bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
    }

    /// The fingerprint.
    pub fn finish(self) -> Fingerprint {
        let digest = self.hasher.finalize();
        let hash = digest.iter().map(|b| format!("{b:02x}")).collect();
        Fingerprint {
            hash,
            inputs: self.inputs,
        }
    }
}

/// The fingerprint file of the venv at `venv`.
pub fn path(venv: &Utf8Path) -> Utf8PathBuf {
    venv.join(FINGERPRINT_FILE)
}

/// The fingerprint recorded in `venv`, if there is a readable one.
pub fn read(venv: &Utf8Path) -> Option<Fingerprint> {
    let text = fs_err::read_to_string(path(venv)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Records `fingerprint` in `venv`: written to a temporary file, synced, then renamed.
pub(crate) fn write(venv: &Utf8Path, fingerprint: &Fingerprint) -> Result<(), EnvError> {
    use std::io::Write as _;
    let target = path(venv);
    let partial = venv.join(format!("{FINGERPRINT_FILE}.partial"));
    let text = serde_json::to_string_pretty(fingerprint).expect("a fingerprint serialises");
    let mut file =
        fs_err::File::create(&partial).map_err(EnvError::io("could not write", &partial))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(EnvError::io("could not write", &partial))?;
    fs_err::rename(&partial, &target).map_err(EnvError::io("could not write", &target))
}

/// Removes the fingerprint of `venv` (before an install starts).
pub(crate) fn remove(venv: &Utf8Path) -> Result<(), EnvError> {
    let target = path(venv);
    match fs_err::remove_file(&target) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(EnvError::io("could not remove", target)(e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_every_input_and_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let venv = Utf8Path::from_path(dir.path()).expect("utf8");
        let req = venv.join("requirements.in");
        fs_err::write(&req, "torch\n").expect("write");
        let make = |python: &str| {
            let mut b = FingerprintBuilder::default();
            b.value("python", python);
            b.file("requirements", &req).expect("file");
            b.finish()
        };
        let a = make("3.11.7");
        assert_eq!(a, make("3.11.7"));
        assert_ne!(a.hash, make("3.12.0").hash);
        fs_err::write(&req, "torch\nvoir\n").expect("write");
        assert_ne!(a.hash, make("3.11.7").hash);
        assert!(read(venv).is_none());
        write(venv, &a).expect("write");
        assert_eq!(read(venv), Some(a));
        remove(venv).expect("remove");
        remove(venv).expect("removing twice is fine");
        assert!(read(venv).is_none());
    }
}
