//! The database seam: a [`Sink`] prepares the target once and opens one [`SinkConn`] per
//! worker; a connection encodes a [`Batch`] into its own reused buffer and sends it.
//! Errors say whether the engine may retry the same batch.

use std::future::Future;
use std::sync::Arc;

use crate::batch::Batch;
use crate::schema::Schema;

/// What the server acknowledged for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteAck {
    /// Rows the server accepted.
    pub rows: u64,
    /// Bytes of request payload sent (0 where the driver does not expose it).
    pub bytes: u64,
}

/// Kinds of failure a sink reports; the report counts errors by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Could not connect, or the connection was lost.
    Connection,
    /// The request took longer than allowed.
    Timeout,
    /// The server is overloaded or unavailable (HTTP 429/5xx, too many connections).
    Unavailable,
    /// A transient conflict: deadlock, serialization failure, database locked/busy.
    Conflict,
    /// The server rejected the request (syntax, type mismatch, constraint, HTTP 4xx).
    Rejected,
    /// Missing privileges or bad credentials.
    Permission,
    /// Creating the database or tables failed.
    Schema,
    /// A query returned no rows where the run requires rows (`require_rows`).
    Empty,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// Whether sending the same batch again may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Connection
                | ErrorKind::Timeout
                | ErrorKind::Unavailable
                | ErrorKind::Conflict
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connection => "connection",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Rejected => "rejected",
            ErrorKind::Permission => "permission",
            ErrorKind::Schema => "schema",
            ErrorKind::Empty => "empty",
            ErrorKind::Other => "other",
        }
    }
}

/// A sink failure: its kind and the server's or driver's own message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct SinkError {
    pub kind: ErrorKind,
    pub message: String,
}

impl SinkError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SinkError {
            kind,
            message: message.into(),
        }
    }

    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}

/// A write target. `prepare` runs once per run; `connect` once per worker.
pub trait Sink: Send + Sync + 'static {
    type Conn: SinkConn;

    /// Creates databases and tables the schema needs.
    fn prepare(&self, schema: &Arc<Schema>) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// Opens the connection of worker `worker`.
    fn connect(
        &self,
        schema: &Arc<Schema>,
        worker: usize,
    ) -> impl Future<Output = Result<Self::Conn, SinkError>> + Send;
}

/// One worker's connection. It owns its encode buffers, so the hot path shares nothing.
pub trait SinkConn: Send + 'static {
    /// Writes every row of `batch` or fails; a failed write wrote nothing that the
    /// engine counts (a retry sends the same batch again).
    fn write(&mut self, batch: &Batch) -> impl Future<Output = Result<WriteAck, SinkError>> + Send;
}

/// The `null` target: acknowledges every batch without encoding or sending anything, so a
/// run into it measures the engine and the generator alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

/// Connection of [`NullSink`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NullConn;

impl Sink for NullSink {
    type Conn = NullConn;

    async fn prepare(&self, _schema: &Arc<Schema>) -> Result<(), SinkError> {
        Ok(())
    }

    async fn connect(&self, _schema: &Arc<Schema>, _worker: usize) -> Result<NullConn, SinkError> {
        Ok(NullConn)
    }
}

impl SinkConn for NullConn {
    async fn write(&mut self, batch: &Batch) -> Result<WriteAck, SinkError> {
        Ok(WriteAck {
            rows: batch.rows() as u64,
            bytes: 0,
        })
    }
}
