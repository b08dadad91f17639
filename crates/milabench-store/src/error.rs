//! What can go wrong with the results store; every message says what to do about it.

use std::path::PathBuf;

/// An error of the results store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The SQLite file could not be opened or set up.
    #[error(
        "could not open the results database {}; check that its folder exists and is writable, or give another one with --db",
        path.display()
    )]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not a SQLite database, or a damaged one.
    #[error(
        "the results database {} is not a SQLite database, or is damaged; nothing was changed: move it aside (or restore it from a backup), or give another one with --db",
        path.display()
    )]
    NotSqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// SQLite would not use its write-ahead log (a file system that cannot share memory maps).
    #[error(
        "the results database {} cannot use SQLite's write-ahead log (journal mode stays `{mode}`); put it on a local disk with --db",
        path.display()
    )]
    NoWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// A `--db` / `MILABENCH_DB` value that is not a usable PostgreSQL URL.
    #[error(
        "`{url}` is not a PostgreSQL URL milabench can use; write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE"
    )]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What the client said.
        #[source]
        source: postgres::Error,
    },
    /// A `--db` / `MILABENCH_DB` URL whose scheme names no database milabench knows.
    #[error(
        "--db / MILABENCH_DB: `{scheme}://` is not a database milabench knows; give a postgres:// or postgresql:// URL for a PostgreSQL server, or sqlite://PATH or a plain PATH for a SQLite file"
    )]
    UnknownScheme {
        /// The scheme as given (the rest of the URL is left out: it may hold a password).
        scheme: String,
    },
    /// The PostgreSQL server could not be reached.
    #[error(
        "the PostgreSQL server at {url} could not be reached; check that it is running and accepts connections from this machine, or use the local SQLite file by leaving out --db and MILABENCH_DB"
    )]
    Unreachable {
        /// The URL, password hidden.
        url: String,
        /// What the client said.
        #[source]
        source: postgres::Error,
    },
    /// The database was written by a newer milabench.
    #[error(
        "the results database {location} has schema version {found}, newer than the {known} this milabench knows; nothing was changed: use a newer milabench, or another database with --db"
    )]
    NewerSchema {
        /// Where the database is.
        location: String,
        /// Its schema version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// `db import` of a folder whose files are not all at least as long as when its run was
    /// imported: the stored run holds more, and is kept.
    #[error(
        "run `{name}` is in the results database with more than its folder holds now: {} is {}, but was {was} bytes when it was imported; the stored run is kept (event files only grow, so this folder was cut short or is another run of the same name): import it in a namespace of its own with --namespace NAME",
        file.display(),
        now.map_or("gone".to_string(), |n| format!("{n} bytes"))
    )]
    Shrank {
        /// The run.
        name: String,
        /// The file that shrank or went.
        file: PathBuf,
        /// Its size at the import.
        was: u64,
        /// Its size now (`None`: gone).
        now: Option<u64>,
    },
    /// `db import` of a folder whose run name is already stored from another folder that still
    /// exists.
    #[error(
        "run `{name}` is already in the results database from another folder, {}; {} was not imported: import it in a namespace of its own with --namespace NAME, or rename one of the runs",
        stored.display(),
        folder.display()
    )]
    OtherFolder {
        /// The run name.
        name: String,
        /// The folder stored with it.
        stored: PathBuf,
        /// The folder being imported.
        folder: PathBuf,
    },
    /// A statement failed on SQLite.
    #[error("the results database (SQLite) refused a statement")]
    SqliteStatement(#[source] rusqlite::Error),
    /// A statement failed on PostgreSQL.
    #[error("the results database (PostgreSQL) refused a statement")]
    PostgresStatement(#[source] postgres::Error),
    /// Reading a run folder failed.
    #[error(transparent)]
    Report(#[from] milabench_report::ReportError),
    /// Reading a `.data` file failed.
    #[error(transparent)]
    Metrics(#[from] milabench_metrics::MetricsError),
    /// A run name that the store does not hold.
    #[error(
        "no run named `{name}` in the results database {location}; `milabench db list` shows the runs it holds, `milabench db import FOLDER` adds one"
    )]
    UnknownRun {
        /// The name asked for.
        name: String,
        /// Where the database is.
        location: String,
    },
    /// A file of a run folder could not be read.
    #[error("could not read {}; check that it exists and is readable", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn sql(e: rusqlite::Error) -> StoreError {
        StoreError::SqliteStatement(e)
    }

    pub(crate) fn pg(e: postgres::Error) -> StoreError {
        StoreError::PostgresStatement(e)
    }

    /// Whether the database could not be reached or opened at all (as opposed to a problem with
    /// one statement or one run folder): a run then goes on without the store.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Sqlite { .. }
                | StoreError::NotSqlite { .. }
                | StoreError::NoWal { .. }
                | StoreError::BadUrl { .. }
                | StoreError::Unreachable { .. }
                | StoreError::NewerSchema { .. }
        )
    }

    /// Whether the error is the user's input (a `--db` that names no usable database, a run
    /// name or folder the store refuses) rather than the machine or the database server failing
    /// (a folder that cannot be written, a server that cannot be reached, a statement refused).
    pub fn is_bad_input(&self) -> bool {
        match self {
            StoreError::NotSqlite { .. }
            | StoreError::BadUrl { .. }
            | StoreError::UnknownScheme { .. }
            | StoreError::NewerSchema { .. }
            | StoreError::Shrank { .. }
            | StoreError::OtherFolder { .. }
            | StoreError::UnknownRun { .. } => true,
            StoreError::Sqlite { .. }
            | StoreError::NoWal { .. }
            | StoreError::Unreachable { .. }
            | StoreError::SqliteStatement(_)
            | StoreError::PostgresStatement(_)
            | StoreError::Io { .. } => false,
            StoreError::Report(e) => e.is_bad_input(),
            StoreError::Metrics(e) => e.is_bad_input(),
        }
    }

    /// Whether a statement broke a UNIQUE constraint: another connection wrote the same row
    /// between this one's look and its write.
    pub(crate) fn is_unique_violation(&self) -> bool {
        match self {
            StoreError::SqliteStatement(rusqlite::Error::SqliteFailure(e, _)) => {
                e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            }
            StoreError::PostgresStatement(e) => {
                e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION)
            }
            _ => false,
        }
    }
}
