//! tsload-sink-mysql: the MySQL / MariaDB / GreatSQL target, through sqlx.
//!
//! [`MysqlSink::prepare`] creates one table per schema table (wide rows):
//! `(ts, <tags>, <fields>)`, with `ts` either `DATETIME(6)` (the default: microseconds, the
//! nanoseconds below are dropped, rounding down) or `BIGINT` nanoseconds since the epoch,
//! in the storage engine asked for, with no key, an auto-increment `id` key or a
//! `(tags..., ts)` key. Every [`MysqlConn`] owns one connection and writes a batch as
//! prepared multi-row `INSERT`s, each under 65,535 placeholders and under the server's
//! `max_allowed_packet`, in one transaction per batch or each committing by itself.
//!
//! Each connection runs with sqlx's session settings (`time_zone='+00:00'`, `NAMES
//! utf8mb4`, `NO_ENGINE_SUBSTITUTION`) plus `STRICT_ALL_TABLES`, so that a bad value is an
//! error in any row and any engine rather than silently adjusted; it reads
//! `@@max_allowed_packet` once, and a connection that broke is reopened by its next write.
//! The bytes a write acknowledges are the estimated size of its EXECUTE packets. sqlx is
//! built without TLS here: connections are plain TCP (or a Unix socket, `?socket=`).
//!
//! Types: bool `BOOLEAN`, tinyint `TINYINT`, smallint `SMALLINT`, int `INT`, bigint
//! `BIGINT`, ubigint `BIGINT UNSIGNED`, float `FLOAT`, double `DOUBLE`, varchar(n)
//! `VARCHAR(n)` (the table's default character set), nchar(n) `VARCHAR(n) CHARACTER SET
//! utf8mb4`, timestamp (ms) `BIGINT`.
//!
//! [`MysqlQueryTarget`] is the read side: it runs query requests (prepared when they have
//! parameters, transactions when asked) on connections opened from the same
//! [`MysqlConfig`].

mod conn;
mod error;
mod kind;
mod lean;
mod query;
mod render;
mod sql;
mod url;
mod wire;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{ConnectOptions, Executor};
use tsload_core::stored::{RunScope, ServerTally};
use tsload_core::{Delivery, ErrorKind, LEDGER_TABLE, Schema, Sink, SinkError};
use tsload_redact::SecretUrl;

pub use conn::MysqlConn;
pub use kind::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_ENGINE, DEFAULT_URL, KIND, MysqlKind};
pub use render::MysqlSql;

/// Storage engines without transactions: their rows are not rolled back with the ledger
/// row, so exactly-once delivery cannot be kept on them.
const NON_TRANSACTIONAL_ENGINES: &[&str] = &[
    "myisam",
    "aria",
    "memory",
    "heap",
    "csv",
    "archive",
    "blackhole",
    "mrg_myisam",
    "merge",
];

/// Whether `engine` (any case) is a storage engine known to have no transactions.
pub fn is_non_transactional_engine(engine: &str) -> bool {
    NON_TRANSACTIONAL_ENGINES
        .iter()
        .any(|e| e.eq_ignore_ascii_case(engine))
}
pub use query::{MysqlQueryConn, MysqlQueryTarget};
/// How tsload's own read connection waits for answers ([`MysqlQueryConn::waiting`]).
pub use tsload_sql::socket::Waiting;

/// The column type of `ts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TsType {
    /// `DATETIME(6)`: microseconds, no time zone (the UTC wall clock). The nanoseconds
    /// below the microsecond are dropped (rounded down).
    #[default]
    DateTime6,
    /// `BIGINT`: nanoseconds since the Unix epoch, exact.
    BigIntNs,
}

/// The primary key of each table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PrimaryKey {
    /// No key (InnoDB adds a hidden row id).
    #[default]
    None,
    /// An `id BIGINT UNSIGNED AUTO_INCREMENT` column, filled by the server.
    AutoIncrement,
    /// `PRIMARY KEY (<tags...>, ts)`: rows clustered by series then time. Tag columns are
    /// `NOT NULL` then, and a second row of the same series and timestamp (after the
    /// `DATETIME(6)` truncation) is rejected as a duplicate.
    TagsTs,
}

/// How writes commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TransactionMode {
    /// One transaction per batch: a failed batch wrote nothing (with a transactional
    /// engine such as InnoDB; MyISAM and Aria keep what was inserted before the failure).
    #[default]
    PerBatch,
    /// `autocommit=1`, each INSERT statement commits by itself: a batch that fails midway
    /// keeps its earlier statements' rows, and a retry writes them again.
    Autocommit,
}

impl TsType {
    /// The scenario's spelling (`target.ts_type`).
    pub fn as_str(self) -> &'static str {
        tsload_target::Word::word(self)
    }
}

impl PrimaryKey {
    /// The scenario's spelling (`target.primary_key`).
    pub fn as_str(self) -> &'static str {
        tsload_target::Word::word(self)
    }
}

impl TransactionMode {
    /// The scenario's spelling (`target.transaction`).
    pub fn as_str(self) -> &'static str {
        tsload_target::Word::word(self)
    }
}

/// Where and how to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlConfig {
    /// `mysql://user:password@host:3306/database` (or `mariadb://`); options such as
    /// `?ssl-mode=disabled` or `?socket=/path` as sqlx reads them. The database must be
    /// named. Shown with its password as `***`.
    pub url: SecretUrl,
    /// The storage engine of the tables (`ENGINE=`): one word, e.g. `InnoDB` (default),
    /// `MyISAM`, `Aria`, `RocksDB`. An engine the server lacks is an error (the connection
    /// sets `NO_ENGINE_SUBSTITUTION`).
    pub engine: String,
    pub primary_key: PrimaryKey,
    pub transaction: TransactionMode,
    pub ts_type: TsType,
    /// Drop the schema's tables before creating them.
    pub drop_existing: bool,
    /// Create the URL's database when it does not exist (`prepare` connects without a
    /// database first and runs `CREATE DATABASE IF NOT EXISTS`).
    pub create_database: bool,
    /// How long opening one connection may take; zero waits as long as the OS does.
    pub connect_timeout: Duration,
    /// Exactly once (needs `transaction = per_batch`): each batch's transaction also
    /// records its id in `tsload_ledger` (InnoDB), so a retry after a lost COMMIT answer
    /// stores nothing twice.
    pub delivery: Delivery,
    /// This run's id in the ledger.
    pub run_id: i64,
    /// Connections the run will open (workers x in flight; 0: not known). `prepare`
    /// checks them against the server's `max_connections` and refuses, naming the limit,
    /// a run that would hit it.
    pub connections: u64,
}

impl MysqlConfig {
    /// `url` with the defaults: InnoDB, no primary key, one transaction per batch,
    /// `DATETIME(6)` timestamps, keep existing tables, do not create the database, 10 s
    /// connect timeout.
    pub fn new(url: impl Into<SecretUrl>) -> Self {
        MysqlConfig {
            url: url.into(),
            engine: kind::DEFAULT_ENGINE.to_string(),
            primary_key: PrimaryKey::default(),
            transaction: TransactionMode::default(),
            ts_type: TsType::default(),
            drop_existing: false,
            create_database: false,
            connect_timeout: kind::DEFAULT_CONNECT_TIMEOUT,
            delivery: Delivery::ExactlyOnce,
            run_id: tsload_core::new_run_id(),
            connections: 0,
        }
    }

    /// What keeps each batch out of a transaction of its own: `transaction =
    /// "autocommit"`, or an engine without transactions (whose rows are not rolled back
    /// with the ledger row); `None` when each batch has one.
    pub(crate) fn lacks_batch_transaction(&self) -> Option<String> {
        if self.transaction == TransactionMode::Autocommit {
            Some("transaction = \"autocommit\"".to_string())
        } else if is_non_transactional_engine(&self.engine) {
            Some(format!("engine {:?}", self.engine))
        } else {
            None
        }
    }

    /// Refuses exactly-once delivery where a batch has no transaction of its own to
    /// record it in. The one check: the kind's parse says it under `target.delivery`,
    /// [`MysqlSink::new`] for a configuration built by hand (which would otherwise write
    /// without a ledger, or keep rows a failed batch inserted).
    pub(crate) fn check_delivery(&self) -> Result<(), String> {
        match (self.delivery, self.lacks_batch_transaction()) {
            (Delivery::ExactlyOnce, Some(why)) => Err(format!(
                "exactly_once records each batch in its own transaction, which {why} does \
                 not have; allowed with it: at_least_once"
            )),
            _ => Ok(()),
        }
    }
}

/// The MySQL target.
#[derive(Clone)]
pub struct MysqlSink {
    inner: Arc<Inner>,
}

/// What the sink and each of its connections share (a connection reopens itself with it).
pub(crate) struct Inner {
    pub(crate) cfg: MysqlConfig,
    /// The URL with its password hidden, for messages.
    pub(crate) label: String,
    pub(crate) options: MySqlConnectOptions,
    /// The database the URL names.
    database: String,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for MysqlSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlSink")
            .field("cfg", &self.inner.cfg)
            .finish_non_exhaustive()
    }
}

impl MysqlSink {
    /// Checks the configuration: the URL must parse and name a database, the engine must
    /// be one word, and exactly-once delivery needs a transaction per batch (the check
    /// the kind's parse makes, for a configuration built by hand).
    pub fn new(cfg: MysqlConfig) -> Result<Self, SinkError> {
        let label = cfg.url.shown().to_string();
        let options = parse_url(&cfg.url)?;
        let Some(database) = options.get_database().map(str::to_string) else {
            return Err(SinkError::new(
                ErrorKind::Connection,
                format!(
                    "invalid MySQL URL {label}: no database named (mysql://user@host:port/database)"
                ),
            ));
        };
        if !sql::is_engine_name(&cfg.engine) {
            return Err(SinkError::new(
                ErrorKind::Schema,
                format!(
                    "invalid MySQL storage engine {:?}: expected one word of letters, digits \
                     and '_' such as InnoDB, MyISAM, Aria or RocksDB",
                    cfg.engine
                ),
            ));
        }
        cfg.check_delivery()
            .map_err(|m| SinkError::new(ErrorKind::Schema, m))?;
        Ok(MysqlSink {
            inner: Arc::new(Inner {
                cfg,
                label,
                options,
                database,
            }),
        })
    }

    pub fn config(&self) -> &MysqlConfig {
        &self.inner.cfg
    }
}

fn parse_url(url: &SecretUrl) -> Result<MySqlConnectOptions, SinkError> {
    let label = url.shown();
    let scheme = label.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("mysql" | "mariadb")) {
        return Err(SinkError::new(
            ErrorKind::Connection,
            format!(
                "invalid MySQL URL {label}: expected mysql://user:password@host:port/database \
                 (or mariadb://)"
            ),
        ));
    }
    let options = MySqlConnectOptions::from_str(url.expose()).map_err(|e| {
        // sqlx's message may quote the URL: say it with the password hidden instead.
        let reason = e.to_string().replace(url.expose(), label);
        let reason = url::redact(&reason);
        SinkError::new(
            ErrorKind::Connection,
            format!("invalid MySQL URL {label}: {reason}"),
        )
    })?;
    // The INSERTs carry up to 65,535 parameters: logging them (or timing each one for the
    // slow-statement warning) is pure overhead on the hot path.
    Ok(options.disable_statement_logging())
}

impl Inner {
    /// Opens one connection with `options` (the URL's, or the URL's without database).
    pub(crate) async fn open_with(
        &self,
        options: &MySqlConnectOptions,
    ) -> Result<MySqlConnection, SinkError> {
        let connect = options.connect();
        let result = if self.cfg.connect_timeout.is_zero() {
            connect.await
        } else {
            // On the timer that needs no time driver: the query engine's per-worker
            // runtimes have none (see tsload_timer::ReactorTimer).
            match tsload_timer::timeout(self.cfg.connect_timeout, connect).await {
                Ok(Some(result)) => result,
                Err(e) => {
                    return Err(SinkError::new(
                        ErrorKind::Connection,
                        format!(
                            "cannot connect to {}: no timer for the connect timeout: {e}",
                            self.label
                        ),
                    ));
                }
                Ok(None) => {
                    return Err(SinkError::new(
                        ErrorKind::Connection,
                        format!(
                            "cannot connect to {}: timed out after {:?}",
                            self.label, self.cfg.connect_timeout
                        ),
                    ));
                }
            }
        };
        result.map_err(|e| {
            let kind = match error::kind_of(&e) {
                ErrorKind::Other => ErrorKind::Connection,
                kind => kind,
            };
            let hint = if error::describe(&e).contains("(MySQL error 1049)") {
                " (set create_database to create it)"
            } else {
                ""
            };
            SinkError::new(
                kind,
                format!(
                    "cannot connect to {}: {}{hint}",
                    self.label,
                    error::describe(&e)
                ),
            )
        })
    }

    pub(crate) async fn open(&self) -> Result<MySqlConnection, SinkError> {
        self.open_with(&self.options).await
    }
}

/// Refuses a run that would open more connections than the server has room for: its
/// `max_connections` less those open now (this one included), less one for the figures
/// read after the run.
async fn check_connection_limit(
    conn: &mut sqlx::MySqlConnection,
    wanted: u64,
) -> Result<(), SinkError> {
    let read = |e: sqlx::Error| {
        SinkError::new(
            error::kind_of(&e),
            format!("reading max_connections: {}", error::describe(&e)),
        )
    };
    let max: i64 = sqlx::query_scalar("SELECT CAST(@@max_connections AS SIGNED)")
        .fetch_one(&mut *conn)
        .await
        .map_err(read)?;
    let open: i64 =
        sqlx::query_scalar("SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.PROCESSLIST")
            .fetch_one(&mut *conn)
            .await
            .map_err(read)?;
    let room = u64::try_from(max.saturating_sub(open).saturating_sub(1)).unwrap_or(0);
    if wanted > room {
        return Err(SinkError::new(
            ErrorKind::Schema,
            format!(
                "the run opens {wanted} connections (load.workers x load.in_flight), but the \
                 server's max_connections is {max} and {open} are open: room for {room}. Raise \
                 it (SET GLOBAL max_connections = {}; or max_connections in the server's \
                 config) or run fewer workers",
                wanted
                    .saturating_add(u64::try_from(open).unwrap_or(0))
                    .saturating_add(10)
            ),
        ));
    }
    Ok(())
}

impl Sink for MysqlSink {
    type Conn = MysqlConn;

    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        let inner = &self.inner;
        let cfg = &inner.cfg;
        for table in &schema.tables {
            sql::check_table(table, cfg.primary_key)?;
        }
        if cfg.create_database {
            let options = parse_url(&cfg.url.with_shown(&url::without_database(cfg.url.shown())))?;
            let mut conn = inner.open_with(&options).await?;
            ddl(
                &mut conn,
                &sql::create_database(&inner.database),
                &format!("creating database {}", sql::quote_ident(&inner.database)),
            )
            .await?;
        }
        let mut conn = inner.open().await?;
        if cfg.connections > 0 {
            check_connection_limit(&mut conn, cfg.connections).await?;
        }
        let options = sql::TableOptions {
            engine: &cfg.engine,
            primary_key: cfg.primary_key,
            ts_type: cfg.ts_type,
        };
        for table in &schema.tables {
            let name = sql::quote_ident(&table.name);
            if cfg.drop_existing {
                ddl(
                    &mut conn,
                    &sql::drop_table(table),
                    &format!("dropping table {name}"),
                )
                .await?;
            }
            ddl(
                &mut conn,
                &sql::create_table(table, options),
                &format!("creating table {name}"),
            )
            .await?;
        }
        if cfg.delivery == Delivery::ExactlyOnce {
            if cfg.drop_existing {
                ddl(
                    &mut conn,
                    &format!("DROP TABLE IF EXISTS {LEDGER_TABLE}"),
                    &format!("dropping table {LEDGER_TABLE}"),
                )
                .await?;
            }
            ddl(
                &mut conn,
                sql::CREATE_LEDGER,
                &format!("creating table {LEDGER_TABLE}"),
            )
            .await?;
        }
        Ok(())
    }

    /// The rows of the run's devices in the schema's tables, counted per device by their
    /// key column (`GROUP BY`), so another writer's devices (another shard's) are not in
    /// them; the rows of whole tables (`COUNT(*)`) where the scope names no devices.
    async fn tally(
        &self,
        schema: &Arc<Schema>,
        scope: &RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let names = scope.device_names(schema);
        let mut conn = self.inner.open().await?;
        let mut rows = 0u64;
        for table in &schema.tables {
            let failed = |e: sqlx::Error| {
                SinkError::new(
                    error::kind_of(&e),
                    format!(
                        "counting the rows of {}: {}",
                        table.name,
                        error::describe(&e)
                    ),
                )
            };
            let quoted = sql::quote_ident(&table.name);
            let text = match &names {
                Some(names) => {
                    let key = sql::quote_ident(names.column(table));
                    format!("SELECT CAST({key} AS CHAR), COUNT(*) FROM {quoted} GROUP BY {key}")
                }
                None => format!("SELECT '', COUNT(*) FROM {quoted}"),
            };
            let n = tsload_sql::count_rows::<sqlx::MySql>(&mut conn, &text, names.as_ref())
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

    /// `data_length + index_length` of the schema's tables from `information_schema`, after
    /// `ANALYZE TABLE` (InnoDB's figures are estimates refreshed lazily otherwise).
    async fn storage_bytes(&self, schema: &Arc<Schema>) -> Result<Option<u64>, SinkError> {
        let mut conn = self.inner.open().await?;
        let names: Vec<String> = schema
            .tables
            .iter()
            .map(|t| sql::quote_ident(&t.name))
            .collect();
        ddl(
            &mut conn,
            &format!("ANALYZE TABLE {}", names.join(", ")),
            "analysing the tables",
        )
        .await?;
        let placeholders = vec!["?"; schema.tables.len()].join(", ");
        let text = format!(
            "SELECT CAST(COALESCE(SUM(data_length + index_length), 0) AS SIGNED) \
             FROM information_schema.TABLES WHERE table_schema = DATABASE() \
             AND table_name IN ({placeholders})"
        );
        let mut q = sqlx::query_scalar::<_, i64>(&text);
        for t in &schema.tables {
            q = q.bind(t.name.clone());
        }
        let bytes = q.fetch_one(&mut conn).await.map_err(|e| {
            SinkError::new(
                error::kind_of(&e),
                format!("reading the tables' size: {}", error::describe(&e)),
            )
        })?;
        let _ = sqlx::Connection::close(conn).await;
        Ok(Some(bytes.max(0) as u64))
    }

    async fn connect(&self, schema: &Arc<Schema>, _worker: usize) -> Result<MysqlConn, SinkError> {
        for table in &schema.tables {
            sql::check_table(table, self.inner.cfg.primary_key)?;
        }
        MysqlConn::open(self.inner.clone(), schema.clone()).await
    }
}

/// Runs one DDL statement (text protocol); a failure is a Schema error unless the
/// connection itself broke or rights were missing.
async fn ddl(conn: &mut MySqlConnection, statement: &str, context: &str) -> Result<(), SinkError> {
    conn.execute(sqlx::raw_sql(statement))
        .await
        .map(drop)
        .map_err(|e| {
            let kind = match error::kind_of(&e) {
                kind @ (ErrorKind::Connection | ErrorKind::Permission | ErrorKind::Unavailable) => {
                    kind
                }
                _ => ErrorKind::Schema,
            };
            SinkError::new(kind, format!("{context}: {}", error::describe(&e)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults() {
        let cfg = MysqlConfig::new("mysql://root@127.0.0.1:3306/tsload");
        assert_eq!(cfg.engine, "InnoDB");
        assert_eq!(cfg.primary_key, PrimaryKey::None);
        assert_eq!(cfg.transaction, TransactionMode::PerBatch);
        assert_eq!(cfg.ts_type, TsType::DateTime6);
        assert!(!cfg.drop_existing && !cfg.create_database);
        assert_eq!(cfg.connect_timeout, Duration::from_secs(10));
        assert!(MysqlSink::new(cfg).is_ok());
    }

    #[test]
    fn debug_hides_the_password() {
        let cfg = MysqlConfig::new("mysql://root:hunter2@127.0.0.1:3306/tsload");
        let text = format!("{cfg:?}");
        assert!(
            !text.contains("hunter2") && text.contains("root:***@"),
            "{text}"
        );
        let sink = MysqlSink::new(cfg).unwrap();
        let text = format!("{sink:?}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn bad_urls_are_clear_errors() {
        let err = MysqlSink::new(MysqlConfig::new("postgres://u:hunter2@h/db")).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Connection);
        assert!(err.message.contains("invalid MySQL URL"), "{err}");
        assert!(!err.message.contains("hunter2"), "{err}");

        let err = MysqlSink::new(MysqlConfig::new("mysql://u:hunter2@h:notaport/db")).unwrap_err();
        assert!(err.message.contains("invalid MySQL URL"), "{err}");
        assert!(!err.message.contains("hunter2"), "{err}");

        let err = MysqlSink::new(MysqlConfig::new("mysql://u:hunter2@h:3306")).unwrap_err();
        assert!(err.message.contains("no database named"), "{err}");
        assert!(!err.message.contains("hunter2"), "{err}");
    }

    #[test]
    fn bad_engines_are_refused() {
        let mut cfg = MysqlConfig::new("mysql://root@127.0.0.1:3306/tsload");
        cfg.engine = "InnoDB; DROP TABLE x".to_string();
        let err = MysqlSink::new(cfg).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Schema);
        assert!(err.message.contains("storage engine"), "{err}");
    }
}
