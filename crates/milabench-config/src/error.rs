//! Errors of suite and system resolution. Each names where the problem is (file:line:column when
//! it was written in a file), what is wrong, and how to fix it.

use std::fmt;

use crate::value::Location;

/// An optional location, displayed as `file:line:column: ` or nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct At(pub Option<Location>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(loc) => write!(f, "{loc}: "),
            None => Ok(()),
        }
    }
}

impl From<Option<Location>> for At {
    fn from(location: Option<Location>) -> Self {
        At(location)
    }
}

/// Everything that can go wrong while resolving a suite or a system file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read {what} {path}\n  fix: check that the path is right and readable")]
    Read {
        /// What the file is for (`suite file`, `system file`).
        what: &'static str,
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The YAML itself is malformed.
    #[error("{at}invalid YAML: {message}\n  fix: correct the syntax at that position")]
    Syntax {
        /// Where the parser stopped.
        at: At,
        /// The parser's explanation.
        message: String,
    },
    /// The YAML is well-formed but not shaped like a suite or system file.
    #[error("{at}{message}\n  fix: {fix}")]
    Shape {
        /// Where the offending value is.
        at: At,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// An `include` names a file that does not exist or includes itself.
    #[error(
        "{at}cannot include `{include}` (looked for {resolved}): {reason}\n  fix: include paths are relative to the including file's folder"
    )]
    Include {
        /// Where the include entry is.
        at: At,
        /// The include as written.
        include: String,
        /// The path it resolved to.
        resolved: String,
        /// Why it failed.
        reason: String,
    },
    /// `inherits` names an entry that does not exist.
    #[error(
        "{at}`{bench}` inherits from `{parent}`, which is not defined in the suite{suggestion}\n  fix: define `{parent}` in an included file or correct the name"
    )]
    UnknownParent {
        /// Where the `inherits` value is.
        at: At,
        /// The inheriting benchmark.
        bench: String,
        /// The missing parent.
        parent: String,
        /// ` (did you mean ...?)` or empty.
        suggestion: String,
    },
    /// An `inherits` chain loops back on itself.
    #[error(
        "{at}`inherits` chain of `{bench}` is a cycle: {chain}\n  fix: break the cycle by removing one of these `inherits`"
    )]
    InheritanceCycle {
        /// Where the first `inherits` of the chain is.
        at: At,
        /// The benchmark whose chain loops.
        bench: String,
        /// The chain, `a -> b -> a`.
        chain: String,
    },
    /// The suite crosses one of the bounds of [`crate::limits`].
    #[error("{at}{message}\n  fix: {fix}")]
    TooLarge {
        /// Where the bound was crossed, when that is a place in a file.
        at: At,
        /// Which bound, and by what.
        message: String,
        /// How to stay within it.
        fix: String,
    },
    /// A `--select` or `--exclude` name matches no benchmark.
    #[error(
        "{flag} `{name}` matches no benchmark, group, install group, tag or folder of the suite{suggestion}\n  fix: correct the name; `milabench resolve` lists every benchmark with its group and tags"
    )]
    UnknownSelection {
        /// `--select` or `--exclude`.
        flag: &'static str,
        /// The name given.
        name: String,
        /// ` (did you mean ...?)` or empty.
        suggestion: String,
    },
    /// An `--override` names an entry that the suite does not have, which would create it.
    #[error(
        "--override `{text}` sets `{entry}`, which is not an entry of the suite{suggestion}\n  fix: correct the benchmark name, or use `*` to change every benchmark (`--override '*.key=value'`)"
    )]
    OverrideUnknownEntry {
        /// The override as given.
        text: String,
        /// The top-level key it names.
        entry: String,
        /// ` (did you mean ...?)` or empty.
        suggestion: String,
    },
    /// Two values cannot be merged.
    #[error("{at}cannot merge `{key}`: {message}\n  fix: {fix}")]
    Merge {
        /// Where the newer value is.
        at: At,
        /// Dotted key path.
        key: String,
        /// What clashed.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A matrix entry is malformed.
    #[error("{at}matrix entry `{bench}`: {message}\n  fix: {fix}")]
    Matrix {
        /// Where the entry is.
        at: At,
        /// The matrix entry name.
        bench: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// `argv` cannot be rendered.
    #[error("{at}argv of `{bench}`: {message}\n  fix: {fix}")]
    Argv {
        /// Where the offending value is.
        at: At,
        /// The benchmark.
        bench: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A `${...}` interpolation cannot be resolved.
    #[error("{at}cannot resolve `{expression}`: {message}\n  fix: {fix}")]
    Interpolation {
        /// Where the string holding it is.
        at: At,
        /// The interpolation as written.
        expression: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A launch-time value (placeholder, expression) cannot work.
    #[error("{at}`{bench}`: {message}\n  fix: {fix}")]
    Launch {
        /// Where the value is.
        at: At,
        /// The benchmark.
        bench: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A `--override` cannot be parsed.
    #[error(
        "invalid --override `{text}`: {message}\n  fix: write `bench.key=value` (value in YAML) or a YAML mapping such as `{{bench: {{argv: {{--batch-size: 64}}}}}}`"
    )]
    Override {
        /// The override as given.
        text: String,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// A shape error at `location`.
    pub(crate) fn shape(
        location: Option<Location>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        ConfigError::Shape {
            at: At(location),
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// A [`ConfigError::TooLarge`] at `location`.
    pub(crate) fn too_large(
        location: Option<Location>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        ConfigError::TooLarge {
            at: At(location),
            message: message.into(),
            fix: fix.into(),
        }
    }
}

/// Suggests the closest of `known` to `name`, as ` (did you mean `x`?)`, or nothing.
pub(crate) fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let best = known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min();
    match best {
        Some((_, k)) => format!(" (did you mean `{k}`?)"),
        None => String::new(),
    }
}

/// Levenshtein distance between two strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            row.push((prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("_torchvison", ["_torchvision", "_hf"]),
            " (did you mean `_torchvision`?)"
        );
        assert_eq!(did_you_mean("zzz", ["_torchvision", "_hf"]), "");
    }
}
