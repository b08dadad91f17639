//! Where the results database is: a SQLite file (the default, `<base>/results.db`) or a
//! PostgreSQL server named by URL.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::StoreError;

/// The file name of the default database under the base folder.
pub const DEFAULT_FILE: &str = "results.db";

/// Where the results database is.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server: `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl StoreLocation {
    /// The location a `--db` / `MILABENCH_DB` value names: a `postgres://` or `postgresql://`
    /// URL is a server, `sqlite://PATH` or a plain path a SQLite file. Any other
    /// `scheme://...` is refused ([`StoreError::UnknownScheme`], naming the scheme only: the
    /// rest may hold a password), rather than taken for a path.
    pub fn parse(value: &str) -> Result<StoreLocation, StoreError> {
        let value = value.trim();
        match url_scheme(value) {
            Some("postgres" | "postgresql") => Ok(StoreLocation::Postgres(value.to_owned())),
            Some("sqlite") => Ok(StoreLocation::Sqlite(PathBuf::from(
                &value["sqlite://".len()..],
            ))),
            Some(scheme) => Err(StoreError::UnknownScheme {
                scheme: scheme.to_owned(),
            }),
            None => Ok(StoreLocation::Sqlite(PathBuf::from(value))),
        }
    }

    /// The location given by `value` when there is one, else `<base>/results.db`.
    pub fn resolve(value: Option<&str>, base: &Path) -> Result<StoreLocation, StoreError> {
        match value.filter(|v| !v.trim().is_empty()) {
            Some(v) => StoreLocation::parse(v),
            None => Ok(StoreLocation::Sqlite(base.join(DEFAULT_FILE))),
        }
    }

    /// The location as a person should see it: a file path, or the URL with its password
    /// replaced by `***`.
    pub fn shown(&self) -> String {
        match self {
            StoreLocation::Sqlite(path) => path.display().to_string(),
            StoreLocation::Postgres(url) => hide_password(url),
        }
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

// The URL may hold a password: Debug shows what Display shows.
impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreLocation({})", self.shown())
    }
}

/// The scheme of `value` when it is written as a URL (`scheme://...`, the scheme a letter then
/// letters, digits, `+`, `-` or `.`, as RFC 3986 has it).
fn url_scheme(value: &str) -> Option<&str> {
    let (scheme, _) = value.split_once("://")?;
    let mut chars = scheme.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    well_formed.then_some(scheme)
}

/// `scheme://user:secret@host/db` -> `scheme://user:***@host/db`.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_servers_and_paths_a_file() {
        assert_eq!(
            StoreLocation::parse("postgresql://u@h/db").unwrap(),
            StoreLocation::Postgres("postgresql://u@h/db".into())
        );
        assert_eq!(
            StoreLocation::parse("sqlite:///tmp/r.db").unwrap(),
            StoreLocation::Sqlite("/tmp/r.db".into())
        );
        assert_eq!(
            StoreLocation::parse("runs/my://odd.db").unwrap(),
            StoreLocation::Sqlite("runs/my://odd.db".into())
        );
        assert_eq!(
            StoreLocation::resolve(Some(" "), Path::new("/w")).unwrap(),
            StoreLocation::Sqlite("/w/results.db".into())
        );
    }

    #[test]
    fn unknown_schemes_are_refused_without_their_password() {
        // Issue 38, item 2: these became folders named after the URL, password included.
        for url in [
            "postgress://me:pw@host/db",
            "mysql://me:pw@host/db",
            "garbage://x",
            "Postgres://me:pw@host/db",
        ] {
            let err = StoreLocation::parse(url).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, StoreError::UnknownScheme { .. }), "{url}");
            assert!(!text.contains("pw"), "{text}");
            assert!(text.contains("postgres://"), "{text}");
        }
    }

    #[test]
    fn passwords_are_never_shown() {
        let loc =
            StoreLocation::parse("postgres://bob:s3cret@db.example:5432/milabench?x=1").unwrap();
        assert_eq!(
            loc.shown(),
            "postgres://bob:***@db.example:5432/milabench?x=1"
        );
        assert!(!format!("{loc:?}").contains("s3cret"));
        assert_eq!(
            StoreLocation::parse("postgres://bob@h/db").unwrap().shown(),
            "postgres://bob@h/db"
        );
    }
}
