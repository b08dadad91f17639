//! The two database connections behind one small interface: statements with bound parameters,
//! rows of plain cells, and transactions.
//!
//! Every statement of this crate is a constant written with PostgreSQL's numbered parameters
//! (`$1`, `$2`, ...); SQLite reads the same text with `?1`, `?2`, ... (its numbered form), so the
//! only rewrite is that one character, and values always travel as bound parameters.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::error::StoreError;

/// How long a SQLite writer waits for another writer's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to a PostgreSQL server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A value bound to a statement parameter. Each kind carries its own null, so PostgreSQL knows
/// the type of a null parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A 64-bit integer (`BIGINT`).
    Int(Option<i64>),
    /// A float (`DOUBLE PRECISION`); NaN and infinities are stored as null.
    Real(Option<f64>),
    /// Text.
    Text(Option<String>),
}

impl Param {
    /// A float parameter: non-finite values (NaN marks "no value" in reports) become null.
    pub fn real(x: f64) -> Param {
        Param::Real(x.is_finite().then_some(x))
    }
}

impl From<i64> for Param {
    fn from(v: i64) -> Param {
        Param::Int(Some(v))
    }
}

impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Param {
        Param::Int(v)
    }
}

impl From<Option<f64>> for Param {
    fn from(v: Option<f64>) -> Param {
        Param::Real(v.filter(|x| x.is_finite()))
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Param {
        Param::Text(Some(v.to_owned()))
    }
}

impl From<String> for Param {
    fn from(v: String) -> Param {
        Param::Text(Some(v))
    }
}

impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Param {
        Param::Text(v)
    }
}

impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Param {
        Param::Text(v.map(str::to_owned))
    }
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match self {
            Param::Int(Some(v)) => ToSqlOutput::Owned(Value::Integer(*v)),
            Param::Real(Some(v)) => ToSqlOutput::Owned(Value::Real(*v)),
            Param::Text(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Param::Int(None) | Param::Real(None) | Param::Text(None) => {
                ToSqlOutput::Owned(Value::Null)
            }
        })
    }
}

/// One cell of a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// SQL null.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Cell>);

impl Row {
    /// Column `i` as an integer (`None` for null or another kind).
    pub fn int(&self, i: usize) -> Option<i64> {
        match self.0.get(i) {
            Some(Cell::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// Column `i` as a float (integers widen; `None` for null or text).
    pub fn real(&self, i: usize) -> Option<f64> {
        match self.0.get(i) {
            Some(Cell::Real(v)) => Some(*v),
            Some(Cell::Int(v)) => Some(*v as f64),
            _ => None,
        }
    }

    /// Column `i` as text (`None` for null or a number).
    pub fn text(&self, i: usize) -> Option<String> {
        match self.0.get(i) {
            Some(Cell::Text(v)) => Some(v.clone()),
            _ => None,
        }
    }
}

/// Which database a connection talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite, embedded.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// An open connection to either database.
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: Box<postgres::Client>,
        statements: HashMap<String, postgres::Statement>,
    },
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::Sqlite(_) => "Conn::Sqlite",
            Conn::Postgres { .. } => "Conn::Postgres",
        })
    }
}

/// SQLite's spelling of a statement written with `$N` parameters.
pub(crate) fn sqlite_text(sql: &str) -> Cow<'_, str> {
    if sql.contains('$') {
        Cow::Owned(sql.replace('$', "?"))
    } else {
        Cow::Borrowed(sql)
    }
}

impl Conn {
    /// Opens (creating it if needed) the SQLite file at `path`: write-ahead log, so readers never
    /// block the writer, and a busy timeout, so two writers take turns instead of failing.
    pub(crate) fn open_sqlite(path: &Path) -> Result<Conn, StoreError> {
        let fail = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
                StoreError::NotSqlite {
                    path: path.to_owned(),
                    source,
                }
            }
            _ => StoreError::Sqlite {
                path: path.to_owned(),
                source,
            },
        };
        let conn = rusqlite::Connection::open(path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // Switching a new file to WAL needs it to itself for a moment, and SQLite answers
        // "busy" there without calling the busy handler: another process opening the same new
        // file at once (two runs, two imports) is waited for here.
        let started = std::time::Instant::now();
        let mode: String = loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other.map_err(fail)?,
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NoWal {
                path: path.to_owned(),
                mode,
            });
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(fail)?;
        Ok(Conn::Sqlite(conn))
    }

    /// Connects to the PostgreSQL server at `url`; `shown` is the URL without its password,
    /// for messages.
    pub(crate) fn connect_postgres(url: &str, shown: &str) -> Result<Conn, StoreError> {
        let mut config: postgres::Config = url.parse().map_err(|source| StoreError::BadUrl {
            url: shown.to_owned(),
            source,
        })?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let client = config
            .connect(postgres::NoTls)
            .map_err(|source| StoreError::Unreachable {
                url: shown.to_owned(),
                source,
            })?;
        Ok(Conn::Postgres {
            client: Box::new(client),
            statements: HashMap::new(),
        })
    }

    /// The database this connection talks to.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// Runs statements without parameters (schema changes, transaction control).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(StoreError::sql),
            Conn::Postgres { client, .. } => client.batch_execute(sql).map_err(StoreError::pg),
        }
    }

    /// Runs one statement with `params`; the number of rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c
                    .prepare_cached(&sqlite_text(sql))
                    .map_err(StoreError::sql)?;
                let n = stmt
                    .execute(rusqlite::params_from_iter(params))
                    .map_err(StoreError::sql)?;
                Ok(n as u64)
            }
            Conn::Postgres { client, statements } => {
                let stmt = pg_statement(client, statements, sql)?;
                let values = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    values.iter().map(|v| v.as_ref() as _).collect();
                client.execute(&stmt, &refs).map_err(StoreError::pg)
            }
        }
    }

    /// Runs one query with `params`; its rows.
    pub(crate) fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c
                    .prepare_cached(&sqlite_text(sql))
                    .map_err(StoreError::sql)?;
                let width = stmt.column_count();
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(params))
                    .map_err(StoreError::sql)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(StoreError::sql)? {
                    let mut cells = Vec::with_capacity(width);
                    for i in 0..width {
                        use rusqlite::types::ValueRef;
                        cells.push(match row.get_ref(i).map_err(StoreError::sql)? {
                            ValueRef::Null => Cell::Null,
                            ValueRef::Integer(v) => Cell::Int(v),
                            ValueRef::Real(v) => Cell::Real(v),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Cell::Text(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(Row(cells));
                }
                Ok(out)
            }
            Conn::Postgres { client, statements } => {
                let stmt = pg_statement(client, statements, sql)?;
                let values = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    values.iter().map(|v| v.as_ref() as _).collect();
                let rows = client.query(&stmt, &refs).map_err(StoreError::pg)?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// Starts a transaction that writes: on SQLite it takes the write lock at once (waiting up
    /// to [`BUSY_TIMEOUT`] for another writer), so two writers never deadlock half-way.
    pub(crate) fn begin_write(&mut self) -> Result<(), StoreError> {
        match self.dialect() {
            Dialect::Sqlite => self.batch("BEGIN IMMEDIATE"),
            Dialect::Postgres => self.batch("BEGIN"),
        }
    }

    /// Runs `work` inside a write transaction: committed when it succeeds, rolled back when it
    /// fails (the database is then as before).
    pub(crate) fn in_transaction<T>(
        &mut self,
        work: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin_write()?;
        match work(self) {
            Ok(value) => {
                self.batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                // The first error is the one worth reporting; a failed rollback leaves the
                // transaction to be dropped with the connection.
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// The prepared statement of `sql`, prepared once per connection.
fn pg_statement(
    client: &mut postgres::Client,
    statements: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement, StoreError> {
    if let Some(stmt) = statements.get(sql) {
        return Ok(stmt.clone());
    }
    let stmt = client.prepare(sql).map_err(StoreError::pg)?;
    statements.insert(sql.to_owned(), stmt.clone());
    Ok(stmt)
}

/// The parameters as values the PostgreSQL client binds (each of its own SQL type).
fn pg_params(params: &[Param]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    params
        .iter()
        .map(|p| -> Box<dyn postgres::types::ToSql + Sync> {
            match p {
                Param::Int(v) => Box::new(*v),
                Param::Real(v) => Box::new(*v),
                Param::Text(v) => Box::new(v.clone()),
            }
        })
        .collect()
}

fn pg_row(row: &postgres::Row) -> Result<Row, StoreError> {
    use postgres::types::Type;
    let mut cells = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let cell = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i).map(|v| v.map(Cell::Int))
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|v| Cell::Int(v.into())))
        } else if *ty == Type::INT2 {
            row.try_get::<_, Option<i16>>(i)
                .map(|v| v.map(|v| Cell::Int(v.into())))
        } else if *ty == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i).map(|v| v.map(Cell::Real))
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)
                .map(|v| v.map(|v| Cell::Int(v.into())))
        } else {
            row.try_get::<_, Option<String>>(i)
                .map(|v| v.map(Cell::Text))
        };
        cells.push(cell.map_err(StoreError::pg)?.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_reads_numbered_parameters() {
        assert_eq!(
            sqlite_text("SELECT $1 WHERE $2 = $1"),
            "SELECT ?1 WHERE ?2 = ?1"
        );
        let mut conn =
            Conn::open_sqlite(&tempfile::tempdir().unwrap().path().join("x.db")).unwrap();
        let rows = conn
            .query("SELECT $2, $1, $1", &[Param::from(7), Param::from("seven")])
            .unwrap();
        assert_eq!(
            rows[0].0,
            [Cell::Text("seven".into()), Cell::Int(7), Cell::Int(7)]
        );
    }

    #[test]
    fn non_finite_floats_are_stored_as_null() {
        assert_eq!(Param::real(f64::NAN), Param::Real(None));
        assert_eq!(Param::from(Some(f64::INFINITY)), Param::Real(None));
        assert_eq!(Param::real(1.5), Param::Real(Some(1.5)));
    }
}
