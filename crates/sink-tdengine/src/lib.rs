//! tsload-sink-tdengine: TDengine through the `taos` crate over WebSocket to taosAdapter
//! (no native client library).
//!
//! [`TdengineSink::prepare`] creates the database (`DROP DATABASE IF EXISTS` first with
//! `drop_existing`) in the configured precision, one super table per schema table
//! (`ts TIMESTAMP`, the fields, the tags) and, with [`ChildTables::Prepare`], every child
//! table in batches of `batch_create_tbl_num`. Every [`TdengineConn`] opens its own
//! WebSocket session, logged in to the database, and writes a batch in one of three
//! [`InsertMode`]s:
//!
//! - `stmt`: the driver's statement API: one prepared `INSERT INTO ? [USING s TAGS (?..)]
//!   VALUES (?..)` per super table; per child table `set_tbname`, (`set_tags`), `bind` of
//!   the columns, `add_batch`; one `execute` per super table and batch.
//! - `sql`: multi-table `INSERT INTO a VALUES (..)(..) b VALUES ..` text, split so no
//!   statement passes `max_sql_length`.
//! - `schemaless`: InfluxDB line protocol (tsload-lineproto) through the driver's
//!   schemaless API. TDengine then creates the tables itself: `prepare` makes only the
//!   database, child tables are named by a hash of their tags, a `tbname` tag is sent as
//!   `tname` (TDengine reserves `tbname`), floats become DOUBLE and the time column `_ts`.
//!
//! Child tables are named by the `tbname` tag where the schema has one (the `custom`
//! workload), otherwise `{table}_{device}` (TSBS: `cpu_42`), and every other tag is a
//! TDengine tag. A super table left without tags gets a `tname` tag holding the child
//! table's name (TDengine requires one tag).
//!
//! Row timestamps (ns) and `Timestamp` column values (ms) are converted to the database
//! precision. Rows rewritten after a retry overwrite themselves (same table, same
//! timestamp), so a retried batch does not add rows.
//!
//! [`TdengineQueryTarget`] is the read side: it runs SQL query requests on sessions opened
//! from the same [`TdengineConfig`] (TDengine has no transactions).

mod bind;
mod config;
mod conn;
mod dsn;
mod error;
mod kind;
mod layout;
mod query;
mod render;
mod sql;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use taos::{AsyncQueryable, Taos};
use tsload_core::{ErrorKind, Schema, Sink, SinkError, TagValue};

pub use config::{
    CacheModel, ChildTables, DEFAULT_BATCH_CREATE_TBL_NUM, DEFAULT_DATABASE,
    DEFAULT_MAX_SQL_LENGTH, DbOptions, InsertMode, Invalid, MAX_BATCH_CREATE_TBL_NUM, Precision,
    STMT2_UNAVAILABLE, TdengineConfig,
};
pub use conn::TdengineConn;
pub use dsn::redact as redact_dsn;
pub use kind::{KIND, TdengineKind};
pub use query::{TdengineQueryConn, TdengineQueryTarget};
pub use render::TdengineSql;

use conn::Shared;
use dsn::Endpoint;
use layout::{TableLayout, check_child_name};
use sql::CreateBatcher;

/// DDL attempts while the server says "not ready" or "busy" (a database just dropped or
/// created is briefly unavailable).
const DDL_ATTEMPTS: u32 = 20;

/// The TDengine target.
pub struct TdengineSink {
    cfg: TdengineConfig,
    endpoint: Endpoint,
    /// Settings of worker connections (logged in to the database).
    shared: Arc<Shared>,
}

impl fmt::Debug for TdengineSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TdengineSink")
            .field("cfg", &self.cfg)
            .field("address", &self.endpoint.address())
            .finish_non_exhaustive()
    }
}

impl TdengineSink {
    /// Checks `cfg` ([`TdengineConfig::check`]: the DSN, the database name, option ranges,
    /// the insert mode) without connecting. A bad DSN is an [`ErrorKind::Connection`] error
    /// showing the DSN with its password hidden; other settings are [`ErrorKind::Other`]
    /// errors naming the setting. `mode = stmt2` is refused: the `taos` crate 0.12.x has
    /// no STMT2 API.
    pub fn new(cfg: TdengineConfig) -> Result<Self, SinkError> {
        let (endpoint, builder) = cfg.checked()?;
        let shared = Arc::new(Shared {
            mode: cfg.mode,
            child_tables: cfg.child_tables,
            precision: cfg.db_options.precision,
            max_sql_length: cfg.max_sql_length,
            timeout: cfg.request_timeout,
            secrets: endpoint.secrets.clone(),
            shown: endpoint.shown.clone(),
            builder,
        });
        Ok(TdengineSink {
            cfg,
            endpoint,
            shared,
        })
    }

    pub fn config(&self) -> &TdengineConfig {
        &self.cfg
    }

    /// A session without a default database (the database may not exist yet).
    async fn admin(&self) -> Result<Taos, SinkError> {
        let builder = self
            .endpoint
            .builder(None)
            .map_err(|m| SinkError::new(ErrorKind::Connection, m))?;
        let shared = Shared {
            builder,
            ..(*self.shared).clone()
        };
        conn::open(&shared, "connecting").await
    }

    /// Runs one DDL statement, retrying while the server is not ready or busy.
    async fn ddl(&self, taos: &Taos, text: &str, what: &str) -> Result<(), SinkError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = tokio::time::timeout(self.cfg.request_timeout, taos.exec(text)).await;
            let e = match result {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => error::driver_error(what, &e, &self.shared.secrets),
                Err(_) => SinkError::new(
                    ErrorKind::Timeout,
                    format!(
                        "{what}: no answer within {:?} (request_timeout)",
                        self.cfg.request_timeout
                    ),
                ),
            };
            let transient = matches!(e.kind, ErrorKind::Unavailable | ErrorKind::Conflict);
            if !transient || attempt >= DDL_ATTEMPTS {
                return Err(match e.kind {
                    ErrorKind::Rejected | ErrorKind::Other => {
                        SinkError::new(ErrorKind::Schema, e.message)
                    }
                    _ => e,
                });
            }
            let backoff = Duration::from_millis(100 * u64::from(attempt.min(10)));
            tokio::time::sleep(backoff).await;
        }
    }

    /// Fails when an existing database has another precision than the timestamps sent.
    async fn check_precision(&self, taos: &Taos) -> Result<(), SinkError> {
        let db = &self.cfg.database;
        let want = self.cfg.db_options.precision.as_str();
        let got = tokio::time::timeout(
            self.cfg.request_timeout,
            taos.query_one::<_, String>(sql::database_precision_query(db)),
        )
        .await;
        match got {
            Ok(Ok(Some(p))) if p.trim() == want => Ok(()),
            Ok(Ok(Some(p))) => Err(SinkError::new(
                ErrorKind::Schema,
                format!(
                    "database {db} exists with precision '{}' but precision = '{want}' was \
                     asked; drop it (drop_existing = true) or ask for '{}'",
                    p.trim(),
                    p.trim()
                ),
            )),
            Ok(Ok(None)) => Err(SinkError::new(
                ErrorKind::Schema,
                format!("database {db} is missing right after CREATE DATABASE"),
            )),
            Ok(Err(e)) => Err(error::driver_error(
                &format!("reading the precision of database {db}"),
                &e,
                &self.shared.secrets,
            )),
            Err(_) => Err(SinkError::new(
                ErrorKind::Timeout,
                format!("reading the precision of database {db}: no answer"),
            )),
        }
    }

    /// `CREATE TABLE` for every (super table, device) child table.
    async fn create_child_tables(
        &self,
        taos: &Taos,
        schema: &Schema,
        layouts: &[TableLayout],
    ) -> Result<(), SinkError> {
        let db = &self.cfg.database;
        let precision = self.cfg.db_options.precision;
        let mut batchers: Vec<CreateBatcher> = layouts
            .iter()
            .map(|_| CreateBatcher::new(self.cfg.batch_create_tbl_num, self.cfg.max_sql_length))
            .collect();
        let mut tags: Vec<TagValue> = Vec::with_capacity(schema.tag_slots);
        for device in 0..schema.device_count {
            schema.tags.device_tags(device, &mut tags);
            for (layout, batcher) in layouts.iter().zip(&mut batchers) {
                let name = layout.child_name(device, &tags);
                let clause = check_child_name(&name)
                    .and_then(|()| sql::create_child_clause(db, layout, &name, &tags, precision))
                    .map_err(|m| {
                        SinkError::new(
                            ErrorKind::Schema,
                            format!("table {:?}, device {device}: {m}", layout.stable),
                        )
                    })?;
                if let Some(statement) = batcher.push(&clause) {
                    let what = format!("creating child tables of {:?}", layout.stable);
                    self.ddl(taos, &statement, &what).await?;
                }
            }
        }
        for (layout, batcher) in layouts.iter().zip(&mut batchers) {
            if let Some(statement) = batcher.take() {
                let what = format!("creating child tables of {:?}", layout.stable);
                self.ddl(taos, &statement, &what).await?;
            }
        }
        Ok(())
    }
}

/// The layout of every schema table, or the first reason one cannot be a super table.
fn layouts(schema: &Schema) -> Result<Vec<TableLayout>, SinkError> {
    schema.tables.iter().map(TableLayout::new).collect()
}

impl Sink for TdengineSink {
    type Conn = TdengineConn;

    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        let layouts = layouts(schema)?;
        let taos = self.admin().await?;
        let db = &self.cfg.database;
        if self.cfg.drop_existing {
            self.ddl(
                &taos,
                &sql::drop_database(db),
                &format!("dropping database {db}"),
            )
            .await?;
        }
        self.ddl(
            &taos,
            &sql::create_database(db, &self.cfg.db_options),
            &format!("creating database {db}"),
        )
        .await?;
        self.check_precision(&taos).await?;
        if self.cfg.mode == InsertMode::Schemaless {
            // Schemaless writes create their own tables; TDengine warns that tables made
            // beforehand may make them fail.
            return Ok(());
        }
        for layout in &layouts {
            self.ddl(
                &taos,
                &sql::create_stable(db, layout),
                &format!("creating super table {:?}", layout.stable),
            )
            .await?;
        }
        if self.cfg.child_tables == ChildTables::Prepare {
            self.create_child_tables(&taos, schema, &layouts).await?;
        }
        Ok(())
    }

    async fn connect(
        &self,
        schema: &Arc<Schema>,
        worker: usize,
    ) -> Result<TdengineConn, SinkError> {
        let layouts = layouts(schema)?;
        TdengineConn::connect(self.shared.clone(), schema.clone(), layouts, worker).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_validates_without_connecting() {
        let sink =
            TdengineSink::new(TdengineConfig::new("ws://root:pw-123456@127.0.0.1:1")).unwrap();
        assert_eq!(sink.config().database, "tsload");
        let shown = format!("{sink:?}");
        assert!(!shown.contains("pw-123456"), "{shown}");
        assert!(shown.contains("127.0.0.1:1"), "{shown}");
    }

    #[test]
    fn bad_dsn_is_a_clear_connection_error() {
        let e = TdengineSink::new(TdengineConfig::new("http//root:pw-123456@x")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Connection);
        assert!(e.message.contains("invalid TDengine DSN"), "{e}");
        assert!(!e.message.contains("pw-123456"), "{e}");

        let e = TdengineSink::new(TdengineConfig::new("taos://root:pw-123456@h:6030")).unwrap_err();
        assert!(e.message.contains("WebSocket"), "{e}");
        assert!(!e.message.contains("pw-123456"), "{e}");
    }

    #[test]
    fn stmt2_is_refused_with_advice() {
        let mut cfg = TdengineConfig::new("ws://localhost:6041");
        cfg.mode = InsertMode::Stmt2;
        let e = TdengineSink::new(cfg).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Other);
        assert!(
            e.message.contains("stmt2") && e.message.contains("\"stmt\""),
            "{e}"
        );
    }

    #[test]
    fn database_named_twice_must_agree() {
        let mut cfg = TdengineConfig::new("ws://u:pw-123456@localhost:6041/one");
        assert_eq!(cfg.database, "one");
        assert!(TdengineSink::new(cfg.clone()).is_ok());
        cfg.database = "two".into();
        let e = TdengineSink::new(cfg).unwrap_err();
        assert!(
            e.message.contains("\"one\"") && e.message.contains("\"two\""),
            "{e}"
        );
        assert!(!e.message.contains("pw-123456"), "{e}");
    }

    /// Connecting to a port where nothing listens fails as a (retryable) connection
    /// error, quickly, with the password hidden.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unreachable_server_is_a_connection_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut cfg = TdengineConfig::new(format!("ws://root:pw-123456@127.0.0.1:{port}"));
        cfg.request_timeout = Duration::from_secs(10);
        let sink = TdengineSink::new(cfg).unwrap();
        let schema = Arc::new(test_schema());
        let e = sink.connect(&schema, 0).await.unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::Connection | ErrorKind::Timeout),
            "{e:?}"
        );
        assert!(!e.message.contains("pw-123456"), "{e}");
        assert!(e.message.contains(&format!("127.0.0.1:{port}")), "{e}");
        let e = sink.prepare(&schema).await.unwrap_err();
        assert!(
            e.message
                .contains(&format!("ws://root:***@127.0.0.1:{port}")),
            "{e}"
        );
        assert!(e.kind.is_retryable(), "{e:?}");
    }

    /// A server that accepts connections and never answers: every call gives up after
    /// request_timeout with a (retryable) timeout instead of hanging the run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn silent_server_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let mut cfg = TdengineConfig::new(format!("ws://root:pw-123456@127.0.0.1:{port}"));
        cfg.request_timeout = Duration::from_millis(300);
        let sink = TdengineSink::new(cfg).unwrap();
        let schema = Arc::new(test_schema());
        let started = std::time::Instant::now();
        let e = sink.connect(&schema, 3).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(e.message.contains("request_timeout"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let e = sink.prepare(&schema).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        hold.abort();
    }

    #[derive(Debug)]
    struct Tags;
    impl tsload_core::TagSource for Tags {
        fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
            out.clear();
            out.push(TagValue::Str(format!("d{device}").into()));
        }
    }

    fn test_schema() -> Schema {
        use tsload_core::{DataType, FieldDef, TableSchema, TagDef};
        Schema {
            tables: vec![TableSchema {
                name: "meters".into(),
                tags: vec![TagDef {
                    name: "tbname".into(),
                    data_type: DataType::Varchar(12),
                    slot: 0,
                }],
                fields: vec![FieldDef {
                    name: "c0".into(),
                    data_type: DataType::Float,
                }],
            }],
            tag_slots: 1,
            device_count: 2,
            tags: Arc::new(Tags),
        }
    }
}
