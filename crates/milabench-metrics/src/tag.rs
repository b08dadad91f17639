//! Process tags: `bench.D0`, `bench.0.R1`, `bench.R0.D3.node1.nolog`.

use std::fmt;

/// The tag of one benchmark process, as joined in its file name: the benchmark name, then the
/// plan suffixes (`D<gpu>` for per-GPU plans, `<job>` for njobs, `R<n>` for repeats, node names,
/// `nolog` for processes whose events the validation ignores).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    full: String,
}

impl Tag {
    /// A tag from its dotted form.
    pub fn new(full: impl Into<String>) -> Tag {
        Tag { full: full.into() }
    }

    /// A tag from the list form found in `config.tag`.
    pub fn from_parts<S: AsRef<str>>(parts: &[S]) -> Tag {
        let parts: Vec<&str> = parts.iter().map(AsRef::as_ref).collect();
        Tag::new(parts.join("."))
    }

    /// The dotted form.
    pub fn as_str(&self) -> &str {
        &self.full
    }

    /// The benchmark name: the first component.
    pub fn bench(&self) -> &str {
        self.full.split('.').next().unwrap_or("")
    }

    /// Everything before the last component, and the last component; the whole tag and `""`
    /// when there is a single component. Validation layers group processes this way.
    pub fn group_and_index(&self) -> (&str, &str) {
        match self.full.rsplit_once('.') {
            Some((group, index)) if !group.is_empty() => (group, index),
            _ => (&self.full, ""),
        }
    }

    /// The components after the benchmark name.
    pub fn suffixes(&self) -> impl Iterator<Item = &str> {
        self.full.split('.').skip(1)
    }

    /// The GPU of a per-GPU process (`D<n>`).
    pub fn device(&self) -> Option<u32> {
        self.suffixes()
            .find_map(|s| s.strip_prefix('D').and_then(|n| n.parse().ok()))
    }

    /// The repeat number (`R<n>`).
    pub fn repeat(&self) -> Option<u32> {
        self.suffixes()
            .find_map(|s| s.strip_prefix('R').and_then(|n| n.parse().ok()))
    }

    /// The job number of an njobs process (a bare number).
    pub fn job(&self) -> Option<u32> {
        self.suffixes().find_map(|s| s.parse().ok())
    }

    /// Whether the tag string contains `nolog` (the Python tool tests a substring).
    pub fn is_nolog(&self) -> bool {
        self.full.contains("nolog")
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components() {
        let t = Tag::new("bench.R1.D3.node2.nolog");
        assert_eq!(t.bench(), "bench");
        assert_eq!(t.device(), Some(3));
        assert_eq!(t.repeat(), Some(1));
        assert_eq!(t.job(), None);
        assert!(t.is_nolog());
        assert_eq!(t.group_and_index(), ("bench.R1.D3.node2", "nolog"));
        let t = Tag::from_parts(&["benchio", "0", "R0"]);
        assert_eq!(t.job(), Some(0));
        assert_eq!(t.as_str(), "benchio.0.R0");
        assert_eq!(Tag::new("solo").group_and_index(), ("solo", ""));
    }
}
