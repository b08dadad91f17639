//! Where the results database is: a SQLite file (the default, `<base>/results.db`) or a
//! PostgreSQL server named by URL.

use std::fmt;
use std::path::{Path, PathBuf};

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
    /// URL is a server, `sqlite://PATH` or any other text a SQLite file.
    pub fn parse(value: &str) -> StoreLocation {
        let value = value.trim();
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            StoreLocation::Postgres(value.to_owned())
        } else {
            let path = value.strip_prefix("sqlite://").unwrap_or(value);
            StoreLocation::Sqlite(PathBuf::from(path))
        }
    }

    /// The location given by `value` when there is one, else `<base>/results.db`.
    pub fn resolve(value: Option<&str>, base: &Path) -> StoreLocation {
        match value.filter(|v| !v.trim().is_empty()) {
            Some(v) => StoreLocation::parse(v),
            None => StoreLocation::Sqlite(base.join(DEFAULT_FILE)),
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
    fn urls_name_servers_and_anything_else_a_file() {
        assert_eq!(
            StoreLocation::parse("postgresql://u@h/db"),
            StoreLocation::Postgres("postgresql://u@h/db".into())
        );
        assert_eq!(
            StoreLocation::parse("sqlite:///tmp/r.db"),
            StoreLocation::Sqlite("/tmp/r.db".into())
        );
        assert_eq!(
            StoreLocation::resolve(Some(" "), Path::new("/w")),
            StoreLocation::Sqlite("/w/results.db".into())
        );
    }

    #[test]
    fn passwords_are_never_shown() {
        let loc = StoreLocation::parse("postgres://bob:s3cret@db.example:5432/milabench?x=1");
        assert_eq!(
            loc.shown(),
            "postgres://bob:***@db.example:5432/milabench?x=1"
        );
        assert!(!format!("{loc:?}").contains("s3cret"));
        assert_eq!(
            StoreLocation::parse("postgres://bob@h/db").shown(),
            "postgres://bob@h/db"
        );
    }
}
