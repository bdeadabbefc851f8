//! tsload-sink-postgres: the PostgreSQL / TimescaleDB target, through sqlx.
//!
//! [`PostgresSink::prepare`] creates one table per schema table, in one of two layouts:
//!
//! - [`Layout::Wide`] (default): `("ts" timestamptz NOT NULL, <tags>, <fields>)`, each row
//!   carrying its device's tag values.
//! - [`Layout::TagsTable`], as TSBS loads TimescaleDB: one shared `"tags"` table
//!   `("id" bigint PRIMARY KEY, <one column per tag slot every table has>)` and measurement
//!   tables `("ts" timestamptz NOT NULL, "tags_id" bigint NOT NULL, <own tags>, <fields>)`,
//!   where a table's own tags are those not every table has (devops' `interface` of `net`,
//!   `port` and `server` of `nginx` and of `redis`; TSBS keeps them in a per-row JSON
//!   column `additional_tags`). A device's tags row
//!   has `id` = the device number: deterministic, so every connection agrees on it without
//!   asking the server (no `RETURNING` round trip, no id lookup), and two connections that
//!   meet the same device insert the same row (`ON CONFLICT ("id") DO NOTHING`), so there
//!   is no race. Each connection inserts the tags rows of the devices it sees for the first
//!   time in the transaction of the batch that first uses them (ascending ids, so two
//!   transactions never wait on each other in a cycle), and remembers them once committed.
//!
//! Every [`PostgresConn`] owns one connection and writes a batch as one transaction (a
//! batch that needs a single statement runs it on its own, which is as atomic), with one of
//! three [`InsertMethod`]s: `COPY ... FROM STDIN` (text or binary format, encoded here),
//! multi-row INSERTs chunked under the 65,535 bind-parameter limit, or one
//! `INSERT ... SELECT * FROM UNNEST($1::timestamptz[], ...)` per table (one array per
//! column). A connection lost or closed by the server (a retryable error) is opened again
//! by the next write, so the engine's retries can succeed once the server is back.
//!
//! Types: Bool -> `boolean`, TinyInt/SmallInt -> `smallint`, Int -> `integer`,
//! BigInt/UBigInt -> `bigint`, Float -> `real`, Double -> `double precision`, Varchar(n) ->
//! `varchar(n)`, NChar -> `text`, Timestamp (ms) -> `bigint`. `ts` is `timestamptz`:
//! PostgreSQL keeps microseconds, so the batch's nanoseconds are truncated (floor) to
//! microseconds. Identifiers are double-quoted as given (case-sensitive).
//!
//! With `hypertable = true`, `prepare` creates the TimescaleDB extension and makes each
//! measurement table a hypertable on `ts`; a server without TimescaleDB fails with
//! [`ErrorKind::Schema`] naming the missing extension and how to install it.
//!
//! [`PostgresQueryTarget`] is the read side: it runs query requests (prepared when they
//! have parameters, transactions when asked) on connections opened from the same
//! [`PostgresConfig`].

mod bind;
mod conn;
mod encode;
mod error;
mod kind;
mod lean;
mod query;
mod render;
mod sql;
mod wire;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use tsload_core::stored::{RunScope, ServerTally};
use tsload_core::{Delivery, ErrorKind, LEDGER_TABLE, Schema, Sink, SinkError};
use tsload_redact::SecretUrl;

pub use conn::PostgresConn;
pub use kind::{KIND, PostgresKind};
pub use query::{PostgresQueryConn, PostgresQueryTarget};
pub use render::PostgresSql;
/// How tsload's own read connection waits for answers ([`PostgresQueryConn::waiting`]).
pub use tsload_sql::socket::Waiting;

/// How tags are stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Tag columns in every row of the measurement table.
    #[default]
    Wide,
    /// TSBS-style: one shared `tags` table, rows refer to it by `tags_id`.
    TagsTable,
}

/// How rows are sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum InsertMethod {
    /// `COPY ... FROM STDIN`, one per table and batch.
    #[default]
    Copy,
    /// Prepared multi-row `INSERT ... VALUES`, split under 65,535 bind parameters.
    Insert,
    /// One `INSERT ... SELECT * FROM UNNEST(<one array per column>)` per table and batch.
    Unnest,
}

/// The data format of [`InsertMethod::Copy`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CopyFormat {
    /// Tab-separated text, `\N` for NULL.
    Text,
    /// PostgreSQL's binary COPY format: no parsing on the server.
    #[default]
    Binary,
}

macro_rules! word_enum {
    ($t:ty, $what:literal, $($word:literal => $v:expr),+ $(,)?) => {
        impl $t {
            /// The word a scenario uses for this value.
            pub fn as_str(self) -> &'static str {
                $(if self == $v { return $word; })+
                unreachable!()
            }
        }

        impl FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($word => Ok($v),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " {:?}: expected one of {}"),
                        s,
                        [$($word),+].join(", ")
                    )),
                }
            }
        }

        impl tsload_target::Word for $t {
            const WORDS: &'static [(&'static str, Self)] = &[$(($word, $v)),+];
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum!(Layout, "layout", "wide" => Layout::Wide, "tags" => Layout::TagsTable);
word_enum!(
    InsertMethod,
    "insert method",
    "copy" => InsertMethod::Copy,
    "insert" => InsertMethod::Insert,
    "unnest" => InsertMethod::Unnest,
);
word_enum!(CopyFormat, "copy format", "text" => CopyFormat::Text, "binary" => CopyFormat::Binary);

/// `synchronous_commit`, set on every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SynchronousCommit {
    Off,
    Local,
    RemoteWrite,
    RemoteApply,
    On,
}

word_enum!(
    SynchronousCommit,
    "synchronous_commit",
    "off" => SynchronousCommit::Off,
    "local" => SynchronousCommit::Local,
    "remote_write" => SynchronousCommit::RemoteWrite,
    "remote_apply" => SynchronousCommit::RemoteApply,
    "on" => SynchronousCommit::On,
);

/// A setting the sink cannot work with: its key and why ([`PostgresConfig::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The scenario key (`url`, `chunk_time_interval`, `connect_timeout`).
    pub key: &'static str,
    pub message: String,
}

/// Where and how to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    /// `postgres://user[:password]@host[:port]/database[?sslmode=...]` (or
    /// `postgresql://`), shown with its password as `***`.
    pub url: SecretUrl,
    pub layout: Layout,
    pub method: InsertMethod,
    /// Format of [`InsertMethod::Copy`].
    pub copy_format: CopyFormat,
    /// Make every measurement table a TimescaleDB hypertable on `ts`.
    pub hypertable: bool,
    /// The hypertables' chunk interval (TimescaleDB's default, 7 days, when `None`).
    pub chunk_time_interval: Option<Duration>,
    /// `SET synchronous_commit = <value>` on every connection; the server's setting when
    /// `None`.
    pub synchronous_commit: Option<SynchronousCommit>,
    /// Drop the schema's tables (and the `tags` table) before creating them.
    pub drop_existing: bool,
    /// Create a `(<tags>, ts DESC)` index (`(tags_id, ts DESC)` in the tags layout) on every
    /// measurement table, as TSBS does.
    pub create_index: bool,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// Exactly once: each batch's transaction also records its id in `tsload_ledger`, so
    /// a retry after a lost COMMIT answer stores nothing twice.
    pub delivery: Delivery,
    /// This run's id in the ledger.
    pub run_id: i64,
    /// Connections the run will open (workers x in flight; 0: not known). `prepare`
    /// checks them against the server's `max_connections` and refuses, naming the limit,
    /// a run that would hit it.
    pub connections: u64,
}

impl PostgresConfig {
    /// `url` with the defaults: wide layout, binary COPY, plain tables, the server's
    /// synchronous_commit, keep existing tables, no index, 10 s connect timeout.
    pub fn new(url: impl Into<SecretUrl>) -> Self {
        PostgresConfig {
            url: url.into(),
            layout: Layout::default(),
            method: InsertMethod::default(),
            copy_format: CopyFormat::default(),
            hypertable: false,
            chunk_time_interval: None,
            synchronous_commit: None,
            drop_existing: false,
            create_index: false,
            connect_timeout: kind::DEFAULT_CONNECT_TIMEOUT,
            delivery: Delivery::ExactlyOnce,
            run_id: tsload_core::new_run_id(),
            connections: 0,
        }
    }
}

impl PostgresConfig {
    /// The checks no type makes: the URL parses into the driver's options, the chunk
    /// interval is at least 1 us, the connect timeout positive. Its one definition, called
    /// by the kind's parse (so `tsload validate` says it, by key) and by
    /// [`PostgresSink::new`] (for a configuration built by hand).
    pub fn check(&self) -> Result<PgConnectOptions, Invalid> {
        let shown = self.url.shown();
        let url = |message: String| Invalid {
            key: "url",
            message,
        };
        if !(shown.starts_with("postgres://") || shown.starts_with("postgresql://")) {
            return Err(url(format!(
                "invalid PostgreSQL URL {shown:?}: expected postgres://user[:password]@host[:port]/database"
            )));
        }
        let options = PgConnectOptions::from_str(self.url.expose())
            .map_err(|e| url(format!("invalid PostgreSQL URL {shown:?}: {e}")))?;
        if self.chunk_time_interval.is_some_and(|d| d.as_micros() == 0) {
            return Err(Invalid {
                key: "chunk_time_interval",
                message: "must be at least 1 microsecond".into(),
            });
        }
        if self.connect_timeout.is_zero() {
            return Err(Invalid {
                key: "connect_timeout",
                message: "must be positive".into(),
            });
        }
        Ok(options)
    }
}

/// What every connection of a sink shares: the parsed options and the settings applied
/// after connecting. `Debug` leaves the options (and so the password) out.
pub(crate) struct Connector {
    options: PgConnectOptions,
    /// `host:port/database (user ...)`, for messages (never the password).
    target: String,
    synchronous_commit: Option<SynchronousCommit>,
    timeout: Duration,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("target", &self.target)
            .field("synchronous_commit", &self.synchronous_commit)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// `host:port/database (user ...)`, for messages (never the password).
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Opens one connection and applies the per-connection settings.
    pub(crate) async fn open(&self) -> Result<PgConnection, SinkError> {
        let unreachable = |reason: String| {
            SinkError::new(
                ErrorKind::Connection,
                format!("cannot connect to PostgreSQL at {}: {reason}", self.target),
            )
        };
        // On the timer that needs no time driver: the query engine's per-worker runtimes have
        // none (see tsload_timer::ReactorTimer).
        let mut conn = match tsload_timer::timeout(self.timeout, self.options.connect()).await {
            Err(e) => {
                return Err(unreachable(format!("no timer for connect_timeout: {e}")));
            }
            Ok(None) => {
                return Err(unreachable(format!(
                    "no answer within {:?} (connect_timeout)",
                    self.timeout
                )));
            }
            Ok(Some(Err(e))) => {
                let kind = match error::kind_of(&e) {
                    // A refused or reset socket, or a server starting up, may answer later.
                    ErrorKind::Other | ErrorKind::Rejected => ErrorKind::Connection,
                    kind => kind,
                };
                return Err(SinkError::new(
                    kind,
                    format!(
                        "cannot connect to PostgreSQL at {}: {}",
                        self.target,
                        error::describe(&e)
                    ),
                ));
            }
            Ok(Some(Ok(conn))) => conn,
        };
        if let Some(value) = self.synchronous_commit {
            sqlx::query(&sql::set_synchronous_commit(value.as_str()))
                .persistent(false)
                .execute(&mut conn)
                .await
                .map_err(|e| error::sink_error("setting synchronous_commit", &e))?;
        }
        Ok(conn)
    }
}

/// The PostgreSQL target.
#[derive(Debug)]
pub struct PostgresSink {
    cfg: PostgresConfig,
    connector: Arc<Connector>,
}

impl PostgresSink {
    /// Checks the configuration ([`PostgresConfig::check`]) without connecting: a bad
    /// value is an error naming it, never a panic.
    pub fn new(cfg: PostgresConfig) -> Result<Self, SinkError> {
        let options = cfg
            .check()
            .map_err(|e| SinkError::new(ErrorKind::Other, e.message))?;
        let target = format!(
            "{}:{}/{} (user {})",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("<user's database>"),
            options.get_username()
        );
        let options = options
            .application_name("tsload")
            // Statements carry up to 65,535 parameters: logging them (or timing each one for
            // the slow-statement warning) is pure overhead on the hot path.
            .disable_statement_logging();
        Ok(PostgresSink {
            connector: Arc::new(Connector {
                options,
                target,
                synchronous_commit: cfg.synchronous_commit,
                timeout: cfg.connect_timeout,
            }),
            cfg,
        })
    }

    pub fn config(&self) -> &PostgresConfig {
        &self.cfg
    }

    /// Fails with [`ErrorKind::Schema`] when the schema cannot be laid out as configured;
    /// returns where the tags go and the `tags` table's columns (tags layout).
    fn check(
        &self,
        schema: &Schema,
    ) -> Result<(sql::TagPlacement, Vec<sql::TagSlotColumn>), SinkError> {
        let placement = sql::TagPlacement::of(self.cfg.layout, &schema.tables);
        for table in &schema.tables {
            sql::check_table(table, &placement)?;
        }
        let slots = match &placement {
            sql::TagPlacement::Wide => Vec::new(),
            sql::TagPlacement::TagsTable(shared) => sql::tag_slot_columns(&schema.tables, shared)?,
        };
        Ok((placement, slots))
    }

    /// Creates the TimescaleDB extension, or says precisely why it cannot.
    async fn ensure_timescaledb(&self, conn: &mut PgConnection) -> Result<(), SinkError> {
        let available: bool = sqlx::query_scalar(sql::TIMESCALEDB_AVAILABLE)
            .persistent(false)
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| schema_error("checking for the timescaledb extension", &e))?;
        let major = sqlx::query_scalar::<_, String>(sql::SERVER_VERSION_NUM)
            .persistent(false)
            .fetch_one(&mut *conn)
            .await
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .map_or_else(|| "<major>".to_string(), |v| (v / 10_000).to_string());
        let how = format!(
            "install TimescaleDB on the server (Timescale's package timescaledb-2-postgresql-{major} \
             from their apt/yum repository, or the timescale/timescaledb Docker image; see \
             https://docs.timescale.com/self-hosted/latest/install/), add \
             shared_preload_libraries = 'timescaledb' to postgresql.conf and restart the server, \
             or set hypertable = false"
        );
        if !available {
            return Err(SinkError::new(
                ErrorKind::Schema,
                format!(
                    "hypertable = true needs the PostgreSQL extension timescaledb, which the \
                     server at {} does not have: {how}",
                    self.connector.target
                ),
            ));
        }
        sqlx::query(sql::CREATE_TIMESCALEDB)
            .persistent(false)
            .execute(&mut *conn)
            .await
            .map_err(|e| {
                SinkError::new(
                    ErrorKind::Schema,
                    format!(
                        "hypertable = true: creating the extension timescaledb failed: {}; {how}",
                        error::describe(&e)
                    ),
                )
            })?;
        Ok(())
    }
}

async fn ddl(conn: &mut PgConnection, text: &str, context: &str) -> Result<(), SinkError> {
    sqlx::query(text)
        .persistent(false)
        .execute(conn)
        .await
        .map(|_| ())
        .map_err(|e| schema_error(context, &e))
}

/// Refuses a run that would open more connections than the server has room for: its
/// `max_connections` less the client connections open now (this one included), less
/// the slots kept for superusers (unless we are one), less one for the figures read
/// after the run.
async fn check_connection_limit(conn: &mut PgConnection, wanted: u64) -> Result<(), SinkError> {
    let (max, reserved, open, superuser): (i32, i32, i64, bool) = sqlx::query_as(
        "SELECT current_setting('max_connections')::int, \
                current_setting('superuser_reserved_connections')::int, \
                (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), \
                (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)",
    )
    .persistent(false)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| error::sink_error("reading max_connections", &e))?;
    let kept = if superuser { 0 } else { i64::from(reserved) };
    let room = u64::try_from(i64::from(max) - kept - open - 1).unwrap_or(0);
    if wanted > room {
        let kept_text = if kept > 0 {
            format!(" ({kept} kept for superusers)")
        } else {
            String::new()
        };
        return Err(SinkError::new(
            ErrorKind::Schema,
            format!(
                "the run opens {wanted} connections (load.workers x load.in_flight), but the \
                 server's max_connections is {max}{kept_text} and {open} are open: room for \
                 {room}. Raise it (ALTER SYSTEM SET max_connections = {}; or max_connections \
                 in postgresql.conf, then restart the server) or run fewer workers",
                wanted
                    .saturating_add(u64::try_from(open + kept).unwrap_or(0))
                    .saturating_add(10)
            ),
        ));
    }
    Ok(())
}

impl Sink for PostgresSink {
    type Conn = PostgresConn;

    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        let (placement, slots) = self.check(schema)?;
        let mut conn = self.connector.open().await?;
        if self.cfg.connections > 0 {
            check_connection_limit(&mut conn, self.cfg.connections).await?;
        }
        // Before anything is dropped: a missing extension changes nothing.
        if self.cfg.hypertable {
            self.ensure_timescaledb(&mut conn).await?;
        }
        if self.cfg.layout == Layout::TagsTable {
            let name = sql::quote_ident(sql::TAGS_TABLE);
            if self.cfg.drop_existing {
                let context = format!("dropping table {name}");
                ddl(&mut conn, &sql::drop_table(sql::TAGS_TABLE), &context).await?;
            }
            let context = format!("creating table {name}");
            ddl(&mut conn, &sql::create_tags_table(&slots), &context).await?;
        }
        for table in &schema.tables {
            let name = sql::quote_ident(&table.name);
            if self.cfg.drop_existing {
                let context = format!("dropping table {name}");
                ddl(&mut conn, &sql::drop_table(&table.name), &context).await?;
            }
            let context = format!("creating table {name}");
            ddl(&mut conn, &sql::create_table(table, &placement), &context).await?;
            if self.cfg.hypertable {
                let text = sql::create_hypertable(&table.name, self.cfg.chunk_time_interval);
                let context = format!("making table {name} a hypertable");
                ddl(&mut conn, &text, &context).await?;
            }
            if self.cfg.create_index {
                let context = format!("creating the index of table {name}");
                ddl(&mut conn, &sql::create_index(table, &placement), &context).await?;
            }
        }
        if self.cfg.delivery == Delivery::ExactlyOnce {
            let name = sql::quote_ident(LEDGER_TABLE);
            if self.cfg.drop_existing {
                let context = format!("dropping table {name}");
                ddl(&mut conn, &sql::drop_table(LEDGER_TABLE), &context).await?;
            }
            let context = format!("creating table {name}");
            ddl(&mut conn, sql::CREATE_LEDGER, &context).await?;
        }
        // A clean goodbye, so the server does not log an unexpected EOF.
        let _ = conn.close().await;
        Ok(())
    }

    /// `pg_total_relation_size` (heap, TOAST and indexes) of the schema's tables and the
    /// tags table, or `hypertable_size` for hypertables (their parent holds nothing).
    async fn storage_bytes(&self, schema: &Arc<Schema>) -> Result<Option<u64>, SinkError> {
        let mut names: Vec<String> = schema.tables.iter().map(|t| t.name.clone()).collect();
        if self.cfg.layout == Layout::TagsTable {
            names.push(sql::TAGS_TABLE.to_string());
        }
        let size = if self.cfg.hypertable {
            "hypertable_size(format('%I', c.relname)::regclass)"
        } else {
            "pg_total_relation_size(c.oid)"
        };
        let text = format!(
            "SELECT COALESCE(sum({size}), 0)::bigint FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY($1)"
        );
        let mut conn = self.connector.open().await?;
        let bytes: i64 = sqlx::query_scalar(&text)
            .bind(&names)
            .fetch_one(&mut conn)
            .await
            .map_err(|e| schema_error("reading the tables' size", &e))?;
        let _ = conn.close().await;
        Ok(Some(bytes.max(0) as u64))
    }

    /// The rows of the run's devices in the schema's tables, so another writer's devices
    /// (another shard's) are not in them: in the tags layout those whose `tags_id` (the
    /// device number) is one of the run's, in the wide layout counted per device by the
    /// key column (`GROUP BY`). The rows of whole tables (`count(*)`) where the scope
    /// names no devices.
    async fn tally(
        &self,
        schema: &Arc<Schema>,
        scope: &RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let (placement, _) = self.check(schema)?;
        let devices = scope.devices.clone().filter(|_| placement.has_tags_id());
        let names = scope.device_names(schema).filter(|_| devices.is_none());
        let mut conn = self.connector.open().await?;
        let mut rows = 0u64;
        for table in &schema.tables {
            let failed =
                |e: sqlx::Error| schema_error(&format!("counting the rows of {}", table.name), &e);
            let quoted = sql::quote_ident(&table.name);
            let n = if let Some(devices) = &devices {
                // Device `slot + g * slot_count` of the set's slots and generations.
                let id = sql::quote_ident(sql::TAGS_ID_COLUMN);
                let text = format!(
                    "SELECT count(*) FROM {quoted} WHERE {id} >= 0 AND {id} < $1 \
                     AND {id} % $2 >= $3 AND {id} % $2 < $4"
                );
                let n: i64 = sqlx::query_scalar(&text)
                    .bind(i64::from(devices.generations) * i64::from(devices.slot_count))
                    .bind(i64::from(devices.slot_count.max(1)))
                    .bind(i64::from(devices.slots.start))
                    .bind(i64::from(devices.slots.end))
                    .fetch_one(&mut conn)
                    .await
                    .map_err(failed)?;
                n.max(0) as u64
            } else {
                let text = match &names {
                    Some(names) => {
                        let key = sql::quote_ident(names.column(table));
                        format!("SELECT {key}::text, count(*) FROM {quoted} GROUP BY {key}")
                    }
                    None => format!("SELECT ''::text, count(*) FROM {quoted}"),
                };
                tsload_sql::count_rows::<sqlx::Postgres>(&mut conn, &text, names.as_ref())
                    .await
                    .map_err(failed)?
            };
            rows = rows.saturating_add(n);
        }
        let _ = conn.close().await;
        Ok(Some(if devices.is_some() || names.is_some() {
            ServerTally::of_own_rows(rows)
        } else {
            ServerTally::of_rows(rows)
        }))
    }

    async fn connect(
        &self,
        schema: &Arc<Schema>,
        _worker: usize,
    ) -> Result<PostgresConn, SinkError> {
        let (placement, slots) = self.check(schema)?;
        let conn = self.connector.open().await?;
        Ok(PostgresConn::new(
            conn,
            self.connector.clone(),
            &self.cfg,
            schema.clone(),
            &placement,
            slots,
        ))
    }
}

/// A DDL failure: kind Schema, with the server's reason.
fn schema_error(context: &str, e: &sqlx::Error) -> SinkError {
    SinkError::new(
        ErrorKind::Schema,
        format!("{context}: {}", error::describe(e)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let cfg = PostgresConfig::new("postgres://u@h/db");
        assert_eq!(cfg.layout, Layout::Wide);
        assert_eq!(cfg.method, InsertMethod::Copy);
        assert_eq!(cfg.copy_format, CopyFormat::Binary);
        assert!(!cfg.hypertable && !cfg.drop_existing && !cfg.create_index);
        assert_eq!(cfg.connect_timeout, Duration::from_secs(10));
        assert!(PostgresSink::new(cfg).is_ok());
    }

    #[test]
    fn words_parse_and_print() {
        assert_eq!("tags".parse::<Layout>(), Ok(Layout::TagsTable));
        assert_eq!("unnest".parse::<InsertMethod>(), Ok(InsertMethod::Unnest));
        assert_eq!(CopyFormat::Text.to_string(), "text");
        let e = "csv".parse::<CopyFormat>().unwrap_err();
        assert_eq!(
            e,
            "unknown copy format \"csv\": expected one of text, binary"
        );
    }

    #[test]
    fn bad_settings_are_errors_not_panics() {
        let err = |cfg: PostgresConfig| PostgresSink::new(cfg).unwrap_err();

        let e = err(PostgresConfig::new("mysql://root:hunter2@h/db"));
        assert_eq!(e.kind, ErrorKind::Other);
        assert!(e.message.contains("invalid PostgreSQL URL"), "{e}");
        assert!(!e.message.contains("hunter2"), "{e}");

        let e = err(PostgresConfig::new("postgres://u:hunter2@h:notaport/db"));
        assert!(e.message.contains("invalid PostgreSQL URL"), "{e}");
        assert!(!e.message.contains("hunter2"), "{e}");

        let e = err(PostgresConfig::new("postgres://u@h/db?sslmode=sometimes"));
        assert!(
            e.message.contains("sslmode") || e.message.contains("sometimes"),
            "{e}"
        );

        let mut cfg = PostgresConfig::new("postgres://u@h/db");
        cfg.chunk_time_interval = Some(Duration::from_nanos(10));
        assert!(err(cfg).message.contains("at least 1 microsecond"));
    }

    #[test]
    fn debug_hides_the_password() {
        let cfg = PostgresConfig::new("postgres://u:hunter2@h/db");
        let shown = format!("{cfg:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("u:***@h/db"),
            "{shown}"
        );
        let sink = PostgresSink::new(cfg).unwrap();
        let shown = format!("{sink:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
