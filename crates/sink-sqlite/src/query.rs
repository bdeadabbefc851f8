//! The read side of the SQLite target: [`SqliteQueryTarget`] opens one connection per
//! worker from the sink's [`SqliteConfig`], and [`SqliteQueryConn`] runs a request's
//! statements (in a transaction when asked), reading every result row.
//!
//! Statements with parameters go through sqlx's per-connection statement cache (prepared
//! once, bound and stepped again), as sysbench's prepared-statement mode does. Statements
//! without parameters, such as TSBS queries whose text differs from one request to the
//! next, run on sqlx's raw path: caching them would only churn the LRU cache (each new
//! text evicting and finalizing another statement) for texts that never come back.

use std::sync::Mutex;

use futures_util::TryStreamExt as _;
use sqlx::sqlite::{SqliteArguments, SqliteConnectOptions, SqliteConnection};
use sqlx::{Arguments as _, ConnectOptions as _, Connection as _, Either, Executor as _};
use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};

use crate::error::{describe, sink_error};
use crate::{SqliteConfig, connect_options};

/// The SQLite read target.
#[derive(Debug)]
pub struct SqliteQueryTarget {
    url: String,
    options: SqliteConnectOptions,
    /// The first connection's twin, kept open as long as the target lives: an in-memory
    /// database disappears when its last connection closes (between the setup requests'
    /// connection and the workers', say).
    keep_alive: Mutex<Option<SqliteConnection>>,
}

impl SqliteQueryTarget {
    /// Parses the URL and the connection settings of `cfg` (`drop_existing` does not
    /// apply to reads). A bad URL is an [`ErrorKind::Connection`] error naming it.
    ///
    /// `sqlite::memory:` gives this target its own in-memory database, apart from any
    /// sink's, shared by its connections.
    pub fn new(cfg: &SqliteConfig) -> Result<Self, SinkError> {
        Ok(SqliteQueryTarget {
            url: cfg.url.clone(),
            options: connect_options(cfg)?,
            keep_alive: Mutex::new(None),
        })
    }

    async fn open(&self) -> Result<SqliteConnection, SinkError> {
        self.options.connect().await.map_err(|e| {
            SinkError::new(
                ErrorKind::Connection,
                format!("cannot open SQLite database {}: {}", self.url, describe(&e)),
            )
        })
    }
}

impl QueryTarget for SqliteQueryTarget {
    type Conn = SqliteQueryConn;

    async fn connect(&self, _worker: usize) -> Result<SqliteQueryConn, SinkError> {
        let kept = self.keep_alive.lock().is_ok_and(|keep| keep.is_some());
        if !kept {
            let conn = self.open().await?;
            if let Ok(mut keep) = self.keep_alive.lock() {
                keep.get_or_insert(conn);
            }
        }
        Ok(SqliteQueryConn {
            conn: self.open().await?,
        })
    }
}

/// One worker's SQLite connection for reads.
#[derive(Debug)]
pub struct SqliteQueryConn {
    conn: SqliteConnection,
}

impl QueryConn for SqliteQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        let conn = &mut self.conn;
        let mut ack = QueryAck::default();
        if !request.transaction {
            for (i, statement) in request.statements.iter().enumerate() {
                ack.rows += run(conn, statement)
                    .await
                    .map_err(|e| e.into_sink(statement, i))?;
                ack.statements += 1;
            }
            return Ok(ack);
        }
        // A transaction that writes takes the write lock up front (waiting up to
        // busy_timeout): two deferred transactions that both read and then write deadlock
        // with SQLITE_BUSY, which no timeout resolves. Read-only ones stay deferred, so
        // they run side by side. If this future is dropped, sqlx rolls back on drop.
        let writes = request.statements.iter().any(|s| !is_read_only(&s.text));
        let begin = if writes { "BEGIN IMMEDIATE" } else { "BEGIN" };
        let mut tx = conn
            .begin_with(begin)
            .await
            .map_err(|e| sink_error("starting the transaction", &e))?;
        for (i, statement) in request.statements.iter().enumerate() {
            match run(&mut tx, statement).await {
                Ok(rows) => ack.rows += rows,
                Err(e) => {
                    // If the rollback fails too, the connection is broken and the next
                    // request says so.
                    let _ = tx.rollback().await;
                    return Err(e.into_sink(statement, i));
                }
            }
            ack.statements += 1;
        }
        tx.commit()
            .await
            .map_err(|e| sink_error("committing the transaction", &e))?;
        Ok(ack)
    }
}

/// Why a statement failed: binding its parameters, or in the database.
enum Failure {
    Bind(String),
    Db(sqlx::Error),
}

impl Failure {
    /// The error, naming statement `index` of the request.
    fn into_sink(self, statement: &Statement, index: usize) -> SinkError {
        let label = statement.label(index);
        match self {
            Failure::Bind(reason) => {
                SinkError::new(ErrorKind::Rejected, format!("{label}: {reason}"))
            }
            Failure::Db(e) => sink_error(&label, &e),
        }
    }
}

/// Runs one statement and reads its rows to the end; returns the rows read or, for a
/// data-changing statement that returned none, the rows it changed.
async fn run(conn: &mut SqliteConnection, statement: &Statement) -> Result<u64, Failure> {
    let changes_count = changes_rows(&statement.text);
    let mut stream = if statement.params.is_empty() {
        conn.fetch_many(sqlx::raw_sql(&statement.text))
    } else {
        let args = bind(&statement.params).map_err(Failure::Bind)?;
        conn.fetch_many(sqlx::query_with(&statement.text, args))
    };
    let mut total = 0;
    let mut rows = 0;
    while let Some(step) = stream.try_next().await.map_err(Failure::Db)? {
        match step {
            Either::Right(_row) => rows += 1,
            Either::Left(done) => {
                // SQLite's change count is that of the last INSERT, UPDATE or DELETE on the
                // connection, stale for anything else: only those statements use it.
                total += if rows == 0 && changes_count {
                    done.rows_affected()
                } else {
                    rows
                };
                rows = 0;
            }
        }
    }
    Ok(total + rows)
}

/// The parameters as SQLite arguments, in order (`?` placeholders).
fn bind(params: &[Param]) -> Result<SqliteArguments<'_>, String> {
    let mut args = SqliteArguments::default();
    args.reserve(params.len(), 0);
    for (i, param) in params.iter().enumerate() {
        let added = match param {
            Param::Int(v) => args.add(*v),
            Param::Float(v) => args.add(*v),
            Param::Text(v) => args.add(v.as_str()),
        };
        added.map_err(|e| format!("binding parameter {} ({param:?}): {e}", i + 1))?;
    }
    Ok(args)
}

/// The first keyword of `text`, past whitespace, `--` comments and `/* */` comments and
/// opening parentheses.
fn first_keyword(text: &str) -> &str {
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, next)| next);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, next)| next);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Whether the rows a statement changed stand for its result when it returns no rows:
/// INSERT, UPDATE, DELETE and REPLACE. (A DML statement behind `WITH` counts as 0 rows.)
fn changes_rows(text: &str) -> bool {
    let keyword = first_keyword(text);
    ["INSERT", "UPDATE", "DELETE", "REPLACE"]
        .iter()
        .any(|k| keyword.eq_ignore_ascii_case(k))
}

/// Whether a statement only reads (SELECT, VALUES, EXPLAIN); `WITH` may write.
fn is_read_only(text: &str) -> bool {
    let keyword = first_keyword(text);
    ["SELECT", "VALUES", "EXPLAIN"]
        .iter()
        .any(|k| keyword.eq_ignore_ascii_case(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_keywords() {
        assert_eq!(first_keyword("  select 1"), "select");
        assert_eq!(first_keyword("-- note\n /* c */ (SELECT 1)"), "SELECT");
        assert_eq!(first_keyword("UPDATE t SET x=1"), "UPDATE");
        assert_eq!(first_keyword("/* unterminated"), "");
        assert_eq!(first_keyword(""), "");
        assert!(changes_rows("delete from t"));
        assert!(changes_rows("REPLACE INTO t VALUES (1)"));
        assert!(!changes_rows("SELECT 1"));
        assert!(!changes_rows("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert!(is_read_only(" select 1"));
        assert!(!is_read_only("WITH x AS (SELECT 1) DELETE FROM t"));
        assert!(!is_read_only("INSERT INTO t VALUES (1)"));
    }

    #[test]
    fn binds_every_parameter_kind() {
        let params = [Param::Int(1), Param::Float(0.5), Param::Text("a".into())];
        let args = bind(&params).unwrap();
        assert_eq!(args.len(), 3);
    }
}
