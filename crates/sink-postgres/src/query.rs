//! The read side of the PostgreSQL target: [`PostgresQueryTarget`] opens one connection
//! per worker from the sink's [`PostgresConfig`] (same URL check, connect timeout and
//! `synchronous_commit`), and [`PostgresQueryConn`] runs a request's statements (between
//! BEGIN and COMMIT when asked), reading every result row. A connection lost with an
//! error is opened again by the next request. The connection is tsload's own
//! ([`crate::lean`]: rows counted in the read buffer, not made into sqlx rows) wherever it
//! can speak for sqlx's, sqlx's otherwise.
//!
//! Statements with parameters (`$1`, `$2`, ...) are prepared once per connection and kept
//! in sqlx's statement cache, then only bound and executed (extended protocol, one round
//! trip), as sysbench's prepared-statement mode does. Statements without parameters,
//! such as TSBS queries whose text differs from one request to the next, go as a simple
//! Query message: one round trip, where an unnamed prepare would cost two (Parse/Describe,
//! then Bind/Execute), and caching them would only churn the LRU cache (each new text
//! evicting and closing another statement on the server) for texts that never come back.

use std::sync::Arc;

use futures_util::TryStreamExt as _;
use sqlx::postgres::{PgArguments, PgConnection};
use sqlx::{Arguments as _, Connection as _, Either, Executor as _};
use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_sql::socket::Waiting;

use crate::error::{breaks_connection, describe, kind_of};
use crate::lean::{Lean, LeanConn, LeanFailure, LeanOptions};
use crate::{Connector, PostgresConfig, PostgresSink};

/// The PostgreSQL read target.
#[derive(Debug)]
pub struct PostgresQueryTarget {
    connector: Arc<Connector>,
    /// Where tsload's own connection connects, when the URL allows it.
    lean: Option<Arc<LeanOptions>>,
}

impl PostgresQueryTarget {
    /// Checks `cfg` as [`PostgresSink::new`] does (the write settings are not used), without
    /// connecting: a bad value is an error naming it, never showing the password.
    pub fn new(cfg: &PostgresConfig) -> Result<Self, SinkError> {
        let sink = PostgresSink::new(cfg.clone())?;
        let session = cfg
            .synchronous_commit
            .map(|v| crate::sql::set_synchronous_commit(v.as_str()));
        let lean =
            LeanOptions::from_url(cfg.url.expose(), sink.connector.target(), session).map(Arc::new);
        Ok(PostgresQueryTarget {
            connector: sink.connector,
            lean,
        })
    }
}

impl PostgresQueryTarget {
    async fn open(&self, waiting: Waiting) -> Result<PostgresQueryConn, SinkError> {
        Ok(PostgresQueryConn {
            conn: Some(open(&self.connector, self.lean.as_deref(), waiting).await?),
            connector: self.connector.clone(),
            lean: self.lean.clone(),
            waiting,
        })
    }
}

impl QueryTarget for PostgresQueryTarget {
    type Conn = PostgresQueryConn;

    async fn connect(&self, _worker: usize) -> Result<PostgresQueryConn, SinkError> {
        self.open(Waiting::Reactor).await
    }

    /// tsload's own connection blocks the worker's thread while it waits for an answer
    /// ([`Waiting::Blocking`]).
    async fn connect_on_own_thread(&self, _worker: usize) -> Result<PostgresQueryConn, SinkError> {
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
    Sqlx(PgConnection),
}

/// Opens the lean connection (waiting as `waiting` says) when `lean` is given and the
/// server takes it, sqlx's otherwise.
async fn open(
    connector: &Connector,
    lean: Option<&LeanOptions>,
    waiting: Waiting,
) -> Result<Conn, SinkError> {
    if let Some(options) = lean {
        match LeanConn::connect(options, connector.timeout(), waiting).await {
            Ok(conn) => return Ok(Conn::Lean(Box::new(conn))),
            Err(Lean::Failed(error)) => return Err(error),
            Err(Lean::Unsupported) => {}
        }
    }
    Ok(Conn::Sqlx(connector.open().await?))
}

/// One worker's PostgreSQL connection for reads.
#[derive(Debug)]
pub struct PostgresQueryConn {
    /// `None` after a failure that lost the connection; the next request reconnects.
    conn: Option<Conn>,
    connector: Arc<Connector>,
    lean: Option<Arc<LeanOptions>>,
    /// How the lean connection waits, reopened too.
    waiting: Waiting,
}

impl PostgresQueryConn {
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

/// A failed statement (or BEGIN / COMMIT): the error, and whether it lost the connection.
struct Failure {
    error: SinkError,
    broken: bool,
}

impl Failure {
    fn db(context: &str, e: &sqlx::Error) -> Self {
        let kind = kind_of(e);
        Failure {
            error: SinkError::new(kind, format!("{context}: {}", describe(e))),
            broken: breaks_connection(kind, Some(e)),
        }
    }
}

impl QueryConn for PostgresQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self
                .conn
                .insert(open(&self.connector, self.lean.as_deref(), self.waiting).await?),
        };
        let result = match (conn, request.transaction) {
            (Conn::Sqlx(conn), true) => run_transaction(conn, request).await,
            (Conn::Sqlx(conn), false) => run_all(conn, request).await,
            (Conn::Lean(conn), true) => lean_transaction(conn, request).await,
            (Conn::Lean(conn), false) => lean_all(conn, request).await,
        };
        result.map_err(|Failure { error, broken }| {
            if broken {
                // Reopened by the next request; dropping closes the socket.
                self.conn = None;
            }
            error
        })
    }
}

async fn run_all(conn: &mut PgConnection, request: &QueryRequest) -> Result<QueryAck, Failure> {
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
    conn: &mut PgConnection,
    request: &QueryRequest,
) -> Result<QueryAck, Failure> {
    let mut tx = conn
        .begin()
        .await
        .map_err(|e| Failure::db("starting the transaction", &e))?;
    match run_all(&mut tx, request).await {
        Ok(ack) => {
            tx.commit()
                .await
                .map_err(|e| Failure::db("committing the transaction", &e))?;
            Ok(ack)
        }
        Err(mut failure) => {
            if !failure.broken && tx.rollback().await.is_err() {
                failure.broken = true;
            }
            Err(failure)
        }
    }
}

impl Failure {
    fn lean(context: &str, f: LeanFailure) -> Self {
        Failure {
            error: SinkError::new(f.error.kind, format!("{context}: {}", f.error.message)),
            broken: f.broken || breaks_connection(f.error.kind, None),
        }
    }
}

async fn lean_all(conn: &mut LeanConn, request: &QueryRequest) -> Result<QueryAck, Failure> {
    let mut ack = QueryAck::default();
    for (i, statement) in request.statements.iter().enumerate() {
        ack.rows += conn
            .run(statement)
            .await
            .map_err(|f| Failure::lean(&statement.label(i), f))?;
        ack.statements += 1;
    }
    Ok(ack)
}

/// BEGIN, every statement, COMMIT on the lean connection, as [`run_transaction`] does on
/// sqlx's: ROLLBACK when a statement fails and the connection is still usable.
async fn lean_transaction(
    conn: &mut LeanConn,
    request: &QueryRequest,
) -> Result<QueryAck, Failure> {
    conn.query("BEGIN")
        .await
        .map_err(|f| Failure::lean("starting the transaction", f))?;
    match lean_all(conn, request).await {
        Ok(ack) => {
            conn.query("COMMIT")
                .await
                .map_err(|f| Failure::lean("committing the transaction", f))?;
            Ok(ack)
        }
        Err(mut failure) => {
            if !failure.broken && conn.query("ROLLBACK").await.is_err() {
                failure.broken = true;
            }
            Err(failure)
        }
    }
}

/// Runs statement `index` and reads its rows to the end; returns the rows read or, for a
/// statement that returned none, the rows it affected.
async fn run(conn: &mut PgConnection, statement: &Statement, index: usize) -> Result<u64, Failure> {
    let mut stream = if statement.params.is_empty() {
        conn.fetch_many(sqlx::raw_sql(&statement.text))
    } else {
        let args = bind(&statement.params).map_err(|reason| Failure {
            error: SinkError::new(
                ErrorKind::Rejected,
                format!("{}: {reason}", statement.label(index)),
            ),
            broken: false,
        })?;
        conn.fetch_many(sqlx::query_with(&statement.text, args))
    };
    let mut total: u64 = 0;
    let mut rows = 0;
    loop {
        match stream.try_next().await {
            Ok(Some(Either::Right(_row))) => rows += 1,
            Ok(Some(Either::Left(done))) => {
                // A SELECT's command tag counts its rows too: count them once.
                // Saturating: rows_affected is the server's number.
                total = total.saturating_add(if rows > 0 { rows } else { done.rows_affected() });
                rows = 0;
            }
            Ok(None) => return Ok(total.saturating_add(rows)),
            Err(e) => return Err(Failure::db(&statement.label(index), &e)),
        }
    }
}

/// The parameters as PostgreSQL arguments, in order: `bigint`, `double precision`,
/// `text`.
fn bind(params: &[Param]) -> Result<PgArguments, String> {
    let mut args = PgArguments::default();
    args.reserve(params.len(), 0);
    for (i, param) in params.iter().enumerate() {
        let added = match param {
            Param::Int(v) => args.add(*v),
            Param::Float(v) => args.add(*v),
            Param::Text(v) => args.add(v.as_str()),
        };
        added.map_err(|e| format!("binding parameter ${} ({param:?}): {e}", i + 1))?;
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
    fn target_checks_the_url_without_showing_the_password() {
        let err =
            PostgresQueryTarget::new(&PostgresConfig::new("mysql://u:hunter2@h/db")).unwrap_err();
        assert!(err.message.contains("invalid PostgreSQL URL"), "{err}");
        assert!(!err.message.contains("hunter2"), "{err}");
        let target =
            PostgresQueryTarget::new(&PostgresConfig::new("postgres://u:hunter2@h/db")).unwrap();
        assert!(!format!("{target:?}").contains("hunter2"));
    }
}
