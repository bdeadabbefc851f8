//! The read side of the MySQL target: [`MysqlQueryTarget`] opens one connection per worker
//! from the sink's [`MysqlConfig`] (same URL check and connect timeout), and
//! [`MysqlQueryConn`] runs a request's statements (between BEGIN and COMMIT when asked),
//! reading every result row. A connection lost with an error is opened again by the next
//! request. The connection is tsload's own ([`crate::lean`]: rows counted in the read
//! buffer, not made into sqlx rows) wherever it can speak for sqlx's, sqlx's otherwise.
//!
//! Statements with parameters (`?`) are prepared once per connection (COM_STMT_PREPARE)
//! and kept in sqlx's statement cache, then only executed with their values (binary
//! protocol), as sysbench's prepared-statement mode does. Statements without parameters,
//! such as TSBS queries whose text differs from one request to the next, go as plain
//! COM_QUERY text: one round trip, where a throwaway prepared statement costs three
//! (prepare, execute, close), and caching them would only churn the LRU cache (each new
//! text evicting and closing another statement on the server, against
//! `max_prepared_stmt_count`) for texts that never come back.

use std::sync::Arc;

use futures_util::TryStreamExt as _;
use sqlx::mysql::{MySqlArguments, MySqlConnection};
use sqlx::{Arguments as _, Connection as _, Either, Executor as _};
use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_sql::socket::Waiting;

use crate::error::sink_error;
use crate::lean::{Lean, LeanConn, LeanOptions};
use crate::{Inner, MysqlConfig, MysqlSink};

/// The MySQL / MariaDB read target.
#[derive(Debug)]
pub struct MysqlQueryTarget {
    inner: Arc<Inner>,
    /// Where tsload's own connection connects, when the URL allows it.
    lean: Option<Arc<LeanOptions>>,
}

impl MysqlQueryTarget {
    /// Checks `cfg` as [`MysqlSink::new`] does (the URL must parse and name a database; the
    /// write settings are not used), without connecting. Errors never show the password.
    pub fn new(cfg: &MysqlConfig) -> Result<Self, SinkError> {
        let sink = MysqlSink::new(cfg.clone())?;
        let lean = LeanOptions::from_url(cfg.url.expose(), &sink.inner.label).map(Arc::new);
        Ok(MysqlQueryTarget {
            inner: sink.inner,
            lean,
        })
    }
}

impl MysqlQueryTarget {
    async fn open(&self, waiting: Waiting) -> Result<MysqlQueryConn, SinkError> {
        Ok(MysqlQueryConn {
            conn: Some(open(&self.inner, self.lean.as_deref(), waiting).await?),
            inner: self.inner.clone(),
            lean: self.lean.clone(),
            waiting,
        })
    }
}

impl QueryTarget for MysqlQueryTarget {
    type Conn = MysqlQueryConn;

    async fn connect(&self, _worker: usize) -> Result<MysqlQueryConn, SinkError> {
        self.open(Waiting::Reactor).await
    }

    /// tsload's own connection blocks the worker's thread while it waits for an answer
    /// ([`Waiting::Blocking`]).
    async fn connect_on_own_thread(&self, _worker: usize) -> Result<MysqlQueryConn, SinkError> {
        self.open(Waiting::Blocking).await
    }

    /// One socket per worker, shared with no other: each worker waits for its answers on
    /// its own thread, as a sysbench thread does.
    fn thread_per_worker(&self) -> bool {
        true
    }
}

/// A read connection: tsload's own, or sqlx's where the lean one cannot serve the URL or
/// the server.
#[derive(Debug)]
enum Conn {
    Lean(Box<LeanConn>),
    Sqlx(MySqlConnection),
}

/// Opens the lean connection (waiting as `waiting` says) when `lean` is given and the
/// server takes it, sqlx's otherwise.
async fn open(
    inner: &Inner,
    lean: Option<&LeanOptions>,
    waiting: Waiting,
) -> Result<Conn, SinkError> {
    if let Some(options) = lean {
        match LeanConn::connect(options, inner.cfg.connect_timeout, waiting).await {
            Ok(conn) => return Ok(Conn::Lean(Box::new(conn))),
            Err(Lean::Failed(error)) => return Err(error),
            Err(Lean::Unsupported) => {}
        }
    }
    Ok(Conn::Sqlx(inner.open().await?))
}

/// One worker's MySQL connection for reads.
#[derive(Debug)]
pub struct MysqlQueryConn {
    /// `None` after a failure that may have lost the connection; the next request reopens.
    conn: Option<Conn>,
    inner: Arc<Inner>,
    /// Where the lean connection connects, when the URL allows it.
    lean: Option<Arc<LeanOptions>>,
    /// How the lean connection waits, reopened too.
    waiting: Waiting,
}

impl MysqlQueryConn {
    /// Which connection serves this worker: `tsload` (tsload's own, [`crate::lean`]) or
    /// `sqlx`; `none` between a lost connection and the next request.
    pub fn connection_kind(&self) -> &'static str {
        match self.conn {
            Some(Conn::Lean(_)) => "tsload",
            Some(Conn::Sqlx(_)) => "sqlx",
            None => "none",
        }
    }

    /// How tsload's own connection waits for answers: blocking its thread where
    /// [`QueryTarget::connect_on_own_thread`] opened it, on tokio's reactor otherwise;
    /// `None` for sqlx's connection (always on the reactor) or none.
    pub fn waiting(&self) -> Option<Waiting> {
        match &self.conn {
            Some(Conn::Lean(conn)) => Some(conn.waiting()),
            _ => None,
        }
    }
}

impl QueryConn for MysqlQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self
                .conn
                .insert(open(&self.inner, self.lean.as_deref(), self.waiting).await?),
        };
        let result = match (conn, request.transaction) {
            (Conn::Sqlx(conn), true) => run_transaction(conn, request).await,
            (Conn::Sqlx(conn), false) => run_all(conn, request).await,
            (Conn::Lean(conn), true) => lean_transaction(conn, request).await,
            (Conn::Lean(conn), false) => lean_all(conn, request).await,
        };
        result.inspect_err(|e| {
            if breaks_connection(e.kind) {
                // Reopened by the next request; dropping closes the socket.
                self.conn = None;
            }
        })
    }
}

/// Whether a failure of `kind` may have left the connection unusable.
fn breaks_connection(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Unavailable
    )
}

async fn run_all(
    conn: &mut MySqlConnection,
    request: &QueryRequest,
) -> Result<QueryAck, SinkError> {
    let mut ack = QueryAck::default();
    for (i, statement) in request.statements.iter().enumerate() {
        ack.rows += run(conn, statement, i).await?;
        ack.statements += 1;
    }
    Ok(ack)
}

/// BEGIN, every statement, COMMIT; ROLLBACK when one fails. If this future is dropped
/// midway, sqlx's transaction rolls back on drop.
async fn run_transaction(
    conn: &mut MySqlConnection,
    request: &QueryRequest,
) -> Result<QueryAck, SinkError> {
    let mut tx = conn
        .begin()
        .await
        .map_err(|e| sink_error("starting the transaction", &e))?;
    match run_all(&mut tx, request).await {
        Ok(ack) => {
            tx.commit()
                .await
                .map_err(|e| sink_error("committing the transaction", &e))?;
            Ok(ack)
        }
        Err(mut error) => {
            if !breaks_connection(error.kind) && tx.rollback().await.is_err() {
                // The next request reopens the connection.
                error.kind = ErrorKind::Connection;
                error.message.push_str(" (and the rollback failed)");
            }
            Err(error)
        }
    }
}

async fn lean_all(conn: &mut LeanConn, request: &QueryRequest) -> Result<QueryAck, SinkError> {
    let mut ack = QueryAck::default();
    for (i, statement) in request.statements.iter().enumerate() {
        ack.rows += conn.run(statement).await.map_err(|mut e| {
            e.message = format!("{}: {}", statement.label(i), e.message);
            e
        })?;
        ack.statements += 1;
    }
    Ok(ack)
}

/// BEGIN, every statement, COMMIT on the lean connection, as [`run_transaction`] does on
/// sqlx's: ROLLBACK when a statement fails and the connection is still usable.
async fn lean_transaction(
    conn: &mut LeanConn,
    request: &QueryRequest,
) -> Result<QueryAck, SinkError> {
    fn context(what: &'static str) -> impl Fn(SinkError) -> SinkError {
        move |mut e| {
            e.message = format!("{what}: {}", e.message);
            e
        }
    }
    conn.query_text("BEGIN")
        .await
        .map_err(context("starting the transaction"))?;
    match lean_all(conn, request).await {
        Ok(ack) => {
            conn.query_text("COMMIT")
                .await
                .map_err(context("committing the transaction"))?;
            Ok(ack)
        }
        Err(mut error) => {
            if !breaks_connection(error.kind) && conn.query_text("ROLLBACK").await.is_err() {
                // The next request reopens the connection.
                error.kind = ErrorKind::Connection;
                error.message.push_str(" (and the rollback failed)");
            }
            Err(error)
        }
    }
}

/// Runs statement `index` and reads its rows to the end; returns the rows read or, for a
/// statement that returned none, the rows it affected (matched, for UPDATE: sqlx asks for
/// CLIENT_FOUND_ROWS).
async fn run(
    conn: &mut MySqlConnection,
    statement: &Statement,
    index: usize,
) -> Result<u64, SinkError> {
    let mut stream = if statement.params.is_empty() {
        conn.fetch_many(sqlx::raw_sql(&statement.text))
    } else {
        let args = bind(&statement.params).map_err(|reason| {
            SinkError::new(
                ErrorKind::Rejected,
                format!("{}: {reason}", statement.label(index)),
            )
        })?;
        conn.fetch_many(sqlx::query_with(&statement.text, args))
    };
    let mut total: u64 = 0;
    let mut rows = 0;
    loop {
        match stream.try_next().await {
            Ok(Some(Either::Right(_row))) => rows += 1,
            Ok(Some(Either::Left(done))) => {
                // Saturating: rows_affected is the server's number.
                total = total.saturating_add(if rows > 0 { rows } else { done.rows_affected() });
                rows = 0;
            }
            Ok(None) => return Ok(total.saturating_add(rows)),
            Err(e) => return Err(sink_error(&statement.label(index), &e)),
        }
    }
}

/// The parameters as MySQL arguments, in order: `BIGINT`, `DOUBLE`, `VARCHAR`.
fn bind(params: &[Param]) -> Result<MySqlArguments, String> {
    let mut args = MySqlArguments::default();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_every_parameter_kind() {
        let params = [Param::Int(1), Param::Float(0.5), Param::Text("a".into())];
        assert_eq!(bind(&params).unwrap().len(), 3);
    }

    #[test]
    fn lost_connections_are_forgotten() {
        assert!(breaks_connection(ErrorKind::Connection));
        assert!(breaks_connection(ErrorKind::Timeout));
        assert!(breaks_connection(ErrorKind::Unavailable));
        assert!(!breaks_connection(ErrorKind::Rejected));
        assert!(!breaks_connection(ErrorKind::Conflict));
    }

    #[test]
    fn target_checks_the_url_without_showing_the_password() {
        let err = MysqlQueryTarget::new(&MysqlConfig::new("mysql://u:hunter2@h:3306")).unwrap_err();
        assert!(err.message.contains("no database named"), "{err}");
        assert!(!err.message.contains("hunter2"), "{err}");
        let target =
            MysqlQueryTarget::new(&MysqlConfig::new("mysql://u:hunter2@h:3306/db")).unwrap();
        assert!(!format!("{target:?}").contains("hunter2"));
    }
}
