//! tsload-sink-sqlite: the embedded default target, SQLite through sqlx.
//!
//! [`SqliteSink::prepare`] creates one table per schema table,
//! `(ts INTEGER NOT NULL, <tags>, <fields>)` with `ts` in nanoseconds since the epoch;
//! every [`SqliteConn`] owns one SQLite connection and writes a batch as one
//! `BEGIN IMMEDIATE` transaction of multi-row INSERTs. [`SqliteQueryTarget`] is the read
//! side: it runs query requests on connections opened from the same [`SqliteConfig`].

mod conn;
mod error;
mod kind;
mod query;
mod render;
mod sql;

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use tsload_core::stored::{RunScope, ServerTally};
use tsload_core::{Delivery, ErrorKind, LEDGER_TABLE, Schema, Sink, SinkError};

pub use conn::SqliteConn;
pub use kind::{DEFAULT_BUSY_TIMEOUT, DEFAULT_URL, KIND, SqliteKind};
pub use query::{SqliteQueryConn, SqliteQueryTarget};
pub use render::SqliteSql;

/// `PRAGMA synchronous`: how often SQLite waits for the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Synchronous {
    Off,
    #[default]
    Normal,
    Full,
}

/// `PRAGMA journal_mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum JournalMode {
    #[default]
    Wal,
    Delete,
    Memory,
}

/// Where and how to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    /// `sqlite:./file.db`, `sqlite:/abs/file.db` or `sqlite::memory:`; the file is created
    /// when missing.
    pub url: String,
    /// Drop the schema's tables before creating them.
    pub drop_existing: bool,
    pub synchronous: Synchronous,
    pub journal_mode: JournalMode,
    /// How long a statement waits for another connection's lock before failing with a
    /// (retryable) conflict.
    pub busy_timeout: Duration,
    /// Exactly once: each batch's transaction also records its id in `tsload_ledger`.
    pub delivery: Delivery,
    /// This run's id in the ledger.
    pub run_id: i64,
}

impl SqliteConfig {
    /// `url` with the defaults: keep existing tables, synchronous=normal, WAL, 30 s busy
    /// timeout (the scenario's defaults: [`crate::SqliteKind`]).
    pub fn new(url: impl Into<String>) -> Self {
        SqliteConfig {
            url: url.into(),
            drop_existing: false,
            synchronous: Synchronous::default(),
            journal_mode: JournalMode::default(),
            busy_timeout: kind::DEFAULT_BUSY_TIMEOUT,
            delivery: Delivery::ExactlyOnce,
            run_id: tsload_core::new_run_id(),
        }
    }
}

/// The SQLite target.
#[derive(Debug)]
pub struct SqliteSink {
    cfg: SqliteConfig,
    /// Parsed once, so every connection opens the same database (an in-memory database
    /// gets a unique shared-cache name per parse).
    options: Result<SqliteConnectOptions, SinkError>,
    /// The connection `prepare` used, kept open as long as the sink lives: an in-memory
    /// database disappears when its last connection closes.
    keep_alive: Mutex<Option<SqliteConnection>>,
}

impl SqliteSink {
    pub fn new(cfg: SqliteConfig) -> Self {
        let options = connect_options(&cfg);
        SqliteSink {
            cfg,
            options,
            keep_alive: Mutex::new(None),
        }
    }

    pub fn config(&self) -> &SqliteConfig {
        &self.cfg
    }

    /// Opens one connection with the configured options.
    async fn open(&self) -> Result<SqliteConnection, SinkError> {
        let options = self.options.as_ref().map_err(SinkError::clone)?;
        options.connect().await.map_err(|e| {
            SinkError::new(
                ErrorKind::Connection,
                format!(
                    "cannot open SQLite database {}: {}",
                    self.cfg.url,
                    error::describe(&e)
                ),
            )
        })
    }
}

fn connect_options(cfg: &SqliteConfig) -> Result<SqliteConnectOptions, SinkError> {
    let options = SqliteConnectOptions::from_str(&cfg.url).map_err(|e| {
        SinkError::new(
            ErrorKind::Connection,
            format!("invalid SQLite URL {}: {}", cfg.url, error::describe(&e)),
        )
    })?;
    Ok(options
        .create_if_missing(true)
        .journal_mode(match cfg.journal_mode {
            JournalMode::Wal => SqliteJournalMode::Wal,
            JournalMode::Delete => SqliteJournalMode::Delete,
            JournalMode::Memory => SqliteJournalMode::Memory,
        })
        .synchronous(match cfg.synchronous {
            Synchronous::Off => SqliteSynchronous::Off,
            Synchronous::Normal => SqliteSynchronous::Normal,
            Synchronous::Full => SqliteSynchronous::Full,
        })
        .busy_timeout(cfg.busy_timeout)
        // The INSERTs are up to 32766 parameters long: logging them (or timing each one
        // for the slow-statement warning) is pure overhead on the hot path. The
        // per-connection prepared-statement cache stays at its default (enabled).
        .disable_statement_logging())
}

impl Sink for SqliteSink {
    type Conn = SqliteConn;

    /// The rows of the run's devices in the schema's tables, counted per device by their
    /// key column (`GROUP BY`), so another writer's devices (another shard's) are not in
    /// them; the rows of whole tables (`count(*)`) where the scope names no devices.
    async fn tally(
        &self,
        schema: &Arc<Schema>,
        scope: &RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let names = scope.device_names(schema);
        let mut conn = self.open().await?;
        let mut rows = 0u64;
        for table in &schema.tables {
            let failed = |e: sqlx::Error| {
                SinkError::new(
                    ErrorKind::Other,
                    format!("counting the rows of {}: {e}", table.name),
                )
            };
            let quoted = sql::quote_ident(&table.name);
            let text = match &names {
                Some(names) => {
                    let key = sql::quote_ident(names.column(table));
                    format!("SELECT CAST({key} AS TEXT), count(*) FROM {quoted} GROUP BY {key}")
                }
                None => format!("SELECT '', count(*) FROM {quoted}"),
            };
            let n = tsload_sql::count_rows::<sqlx::Sqlite>(&mut conn, &text, names.as_ref())
                .await
                .map_err(failed)?;
            rows = rows.saturating_add(n);
        }
        let _ = sqlx::Connection::close(conn).await;
        Ok(Some(if names.is_some() {
            ServerTally::of_own_rows(rows)
        } else {
            ServerTally::of_rows(rows)
        }))
    }

    /// The database's logical size (`page_count` x `page_size`, the write-ahead log's
    /// pages included): SQLite keeps every table in one file.
    async fn storage_bytes(&self, _schema: &Arc<Schema>) -> Result<Option<u64>, SinkError> {
        let mut conn = self.open().await?;
        let read = |e: sqlx::Error| {
            SinkError::new(
                ErrorKind::Other,
                format!("reading the database's size: {e}"),
            )
        };
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(&mut conn)
            .await
            .map_err(read)?;
        let size: i64 = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(&mut conn)
            .await
            .map_err(read)?;
        let _ = sqlx::Connection::close(conn).await;
        Ok(Some(
            (pages.max(0) as u64).saturating_mul(size.max(0) as u64),
        ))
    }

    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        for table in &schema.tables {
            sql::check_table(table)?;
        }
        let mut conn = self.open().await?;
        for table in &schema.tables {
            let name = sql::quote_ident(&table.name);
            if self.cfg.drop_existing {
                sqlx::query(&sql::drop_table(table))
                    .persistent(false)
                    .execute(&mut conn)
                    .await
                    .map_err(|e| schema_error(&format!("dropping table {name}"), &e))?;
            }
            sqlx::query(&sql::create_table(table))
                .persistent(false)
                .execute(&mut conn)
                .await
                .map_err(|e| schema_error(&format!("creating table {name}"), &e))?;
        }
        if self.cfg.delivery == Delivery::ExactlyOnce {
            if self.cfg.drop_existing {
                sqlx::query(&format!("DROP TABLE IF EXISTS {LEDGER_TABLE}"))
                    .persistent(false)
                    .execute(&mut conn)
                    .await
                    .map_err(|e| schema_error(&format!("dropping table {LEDGER_TABLE}"), &e))?;
            }
            sqlx::query(sql::CREATE_LEDGER)
                .persistent(false)
                .execute(&mut conn)
                .await
                .map_err(|e| schema_error(&format!("creating table {LEDGER_TABLE}"), &e))?;
        }
        if let Ok(mut keep) = self.keep_alive.lock() {
            *keep = Some(conn);
        }
        Ok(())
    }

    async fn connect(&self, schema: &Arc<Schema>, _worker: usize) -> Result<SqliteConn, SinkError> {
        for table in &schema.tables {
            sql::check_table(table)?;
        }
        let conn = self.open().await?;
        let ledger = (self.cfg.delivery == Delivery::ExactlyOnce).then_some(self.cfg.run_id);
        Ok(SqliteConn::new(conn, schema.clone(), ledger))
    }
}

/// A DDL failure: kind Schema, with the driver's reason.
fn schema_error(context: &str, e: &sqlx::Error) -> SinkError {
    SinkError::new(
        ErrorKind::Schema,
        format!("{context}: {}", error::describe(e)),
    )
}
