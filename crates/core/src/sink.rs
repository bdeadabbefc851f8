//! The database seam: a [`Sink`] prepares the target once and opens one [`SinkConn`] per
//! worker; a connection encodes a [`Batch`] into its own reused buffer and sends it.
//! Errors say whether the engine may retry the same batch and whether the failed attempt
//! may have been stored all the same (an ambiguous failure); each batch carries a
//! [`BatchId`] so that a target with a ledger can store it exactly once.

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
    /// The batch had already been stored by an earlier attempt whose answer was lost (the
    /// target's ledger says so); nothing was stored again.
    pub duplicate: bool,
    /// Field values the request carried, where a target sends more than the batch's
    /// fields (line protocol writes numeric tags as fields, as TSBS does); `None`: the
    /// batch's own ([`Batch::metrics`]). The run counts what was sent.
    pub metrics: Option<u64>,
}

/// Which batch a write carries: worker `worker`'s `seq`-th request (counted from 0 over
/// all its in-flight slots), attempt `attempt` (0 first, then one per retry). `(worker,
/// seq)` is unique within a run, so a target can record it with the rows in one
/// transaction and recognise a retry of a batch that did land.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BatchId {
    pub worker: u32,
    pub seq: u64,
    pub attempt: u32,
}

/// The table in which exactly-once targets record each batch they store: `run_id`,
/// `worker`, `seq` (the primary key) and `batch_rows`, written in the batch's own transaction.
/// A retry whose ledger row already exists (a unique violation, which also waits for an
/// earlier attempt still committing) stores nothing.
pub const LEDGER_TABLE: &str = "tsload_ledger";

/// A fresh, positive run id for the ledger: different for every run (the clock, the
/// process id and the standard library's per-process random hash keys mixed).
pub fn new_run_id() -> i64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    (h.finish() >> 1) as i64
}

/// How a target guards against storing a retried batch twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Each batch's transaction also records its [`BatchId`] in a ledger table; a retry
    /// after an ambiguous failure stores nothing when the ledger shows the batch landed.
    #[default]
    ExactlyOnce,
    /// A batch is sent again after any retryable failure; rows of an ambiguous failure
    /// (sent, answer lost) may be stored twice and are counted as ambiguous.
    AtLeastOnce,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::ExactlyOnce => "exactly_once",
            Delivery::AtLeastOnce => "at_least_once",
        }
    }
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
    /// The request reached the server and its answer was lost (a connection lost during
    /// or after COMMIT, a timeout after the body was sent): the rows may be stored.
    pub ambiguous: bool,
    /// How long the server asked to wait before a retry (HTTP `Retry-After`); the engine
    /// waits at least this long (and at most [`MAX_RETRY_AFTER`]).
    pub retry_after: Option<std::time::Duration>,
}

/// The longest `Retry-After` the engine honours; a longer one is cut to this.
pub const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

impl SinkError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SinkError {
            kind,
            message: message.into(),
            ambiguous: false,
            retry_after: None,
        }
    }

    /// The same error, with the server's requested wait before a retry.
    pub fn with_retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// The same error, marked as possibly stored (see [`SinkError::ambiguous`]).
    pub fn into_ambiguous(mut self) -> Self {
        self.ambiguous = true;
        self
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

    /// The timestamp unit, in nanoseconds, of the line protocol this sink sends, when it
    /// sends line protocol: a workload's own lines in that unit ([`crate::LineText`]) then
    /// go out as they are ([`crate::Workload::text_source`]). `None` (the default): every
    /// batch is encoded from its columns.
    fn line_text_unit_ns(&self) -> Option<i64> {
        None
    }

    /// Opens the connection of worker `worker`.
    fn connect(
        &self,
        schema: &Arc<Schema>,
        worker: usize,
    ) -> impl Future<Output = Result<Self::Conn, SinkError>> + Send;

    /// What the target's storage holds for the schema's tables, in bytes, asked of the
    /// database itself (so it works for a server on another machine): data and indexes.
    /// `None` where the target cannot tell (the default).
    fn storage_bytes(
        &self,
        _schema: &Arc<Schema>,
    ) -> impl Future<Output = Result<Option<u64>, SinkError>> + Send {
        std::future::ready(Ok(None))
    }

    /// The server's own counts for the schema's tables (rows it holds, samples it took
    /// in, what it refused), read before the clock starts and after the last write, so
    /// the report can say what the server stored beside what it acknowledged. `None`
    /// where the target cannot tell (the default). `settled`: the load is over. A server
    /// that publishes its counters late (VictoriaMetrics, about a second) is waited for
    /// either way: a before-count short of an earlier writer's last second would make
    /// the run's difference grow by more than it sent. `scope`: whose rows are the run's;
    /// a target that can count rows per device counts those alone
    /// ([`crate::stored::ServerTally::own_devices`]).
    fn tally(
        &self,
        _schema: &Arc<Schema>,
        _scope: &crate::stored::RunScope,
        _settled: bool,
    ) -> impl Future<Output = Result<Option<crate::stored::ServerTally>, SinkError>> + Send {
        std::future::ready(Ok(None))
    }
}

/// One worker's connection. It owns its encode buffers, so the hot path shares nothing.
pub trait SinkConn: Send + 'static {
    /// Writes every row of `batch` or fails; a failed write wrote nothing that the
    /// engine counts (a retry sends the same batch again, with the same `id.seq` and the
    /// next `id.attempt`). A failure after which the rows may be stored all the same is
    /// marked [`SinkError::ambiguous`].
    fn write(
        &mut self,
        batch: &Batch,
        id: BatchId,
    ) -> impl Future<Output = Result<WriteAck, SinkError>> + Send;

    /// Whether a later attempt of a batch settles its earlier ambiguous attempts: it
    /// stores the batch only if none of them did (exactly-once delivery through a
    /// ledger). When false, every ambiguous attempt counts as rows that may be stored
    /// twice.
    fn settles_ambiguity(&self) -> bool {
        false
    }
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
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        Ok(WriteAck {
            rows: batch.rows() as u64,
            ..WriteAck::default()
        })
    }
}
