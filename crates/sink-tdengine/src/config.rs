//! What the TDengine target is told: where the server is, the database and its options,
//! how child tables come to exist, and how rows are sent.

use std::time::Duration;

use taos::TaosBuilder;
use tsload_core::{ErrorKind, SinkError};
use tsload_redact::SecretUrl;

use crate::dsn::{self, Endpoint};

/// Database the target writes to when neither the configuration nor the DSN names one.
pub const DEFAULT_DATABASE: &str = "tsload";

/// TDengine's default `maxSQLLength` (1 MiB): the longest SQL text a client may send.
pub const DEFAULT_MAX_SQL_LENGTH: usize = 1_048_576;

/// Child tables per `CREATE TABLE` statement during prepare, by default.
pub const DEFAULT_BATCH_CREATE_TBL_NUM: usize = 1000;

/// `target.timeout` when unset: one request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// TDengine's advice: "do not create more than 3000 tables per statement"
/// (<https://docs.tdengine.com/tdengine-reference/sql-manual/manage-tables/>).
pub const MAX_BATCH_CREATE_TBL_NUM: usize = 3000;

/// Timestamp precision of the database, and so of every timestamp sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Milliseconds (TDengine's default).
    #[default]
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

impl Precision {
    /// The name `CREATE DATABASE ... PRECISION '<name>'` takes: `ms`, `us` or `ns`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Ms => "ms",
            Precision::Us => "us",
            Precision::Ns => "ns",
        }
    }

    /// Nanoseconds per unit.
    pub(crate) fn ns_per_unit(self) -> i64 {
        match self {
            Precision::Ms => 1_000_000,
            Precision::Us => 1_000,
            Precision::Ns => 1,
        }
    }

    /// A row timestamp (ns since the epoch) in this unit, floored so that times before
    /// 1970 keep their order.
    pub(crate) fn units_of_ns(self, ns: i64) -> i64 {
        ns.div_euclid(self.ns_per_unit())
    }

    /// A `Timestamp` column value (ms since the epoch) in this unit.
    pub(crate) fn units_of_ms(self, ms: i64) -> i64 {
        match self {
            Precision::Ms => ms,
            Precision::Us => ms.saturating_mul(1_000),
            Precision::Ns => ms.saturating_mul(1_000_000),
        }
    }

    pub(crate) fn lineproto(self) -> tsload_lineproto::Precision {
        match self {
            Precision::Ms => tsload_lineproto::Precision::Ms,
            Precision::Us => tsload_lineproto::Precision::Us,
            Precision::Ns => tsload_lineproto::Precision::Ns,
        }
    }
}

/// `CACHEMODEL`: which last values a vnode keeps in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheModel {
    None,
    LastRow,
    LastValue,
    Both,
}

impl CacheModel {
    /// The value `CACHEMODEL '<name>'` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheModel::None => "none",
            CacheModel::LastRow => "last_row",
            CacheModel::LastValue => "last_value",
            CacheModel::Both => "both",
        }
    }
}

/// Options of `CREATE DATABASE`. `None` leaves the server's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DbOptions {
    /// `VGROUPS`: virtual node groups (1..=1024).
    pub vgroups: Option<u32>,
    /// `CACHEMODEL`.
    pub cachemodel: Option<CacheModel>,
    /// `BUFFER`: write buffer per vnode, MB (3..=16384).
    pub buffer: Option<u32>,
    /// `WAL_LEVEL`: 1 (write, no fsync) or 2 (write and fsync), as TDengine 3.3 documents
    /// it (`WAL_LEVEL {1 | 2}`; its parser says "only 1-2 allowed").
    pub wal_level: Option<u8>,
    /// `PRECISION`, always written: the timestamps sent are converted to it.
    pub precision: Precision,
}

/// How child tables come to exist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ChildTables {
    /// `prepare` creates every (super table, device) child table, in batches of
    /// `batch_create_tbl_num`; inserts name existing tables.
    #[default]
    Prepare,
    /// Inserts create tables as they go (`INSERT INTO a USING s TAGS (...) VALUES ...`).
    Auto,
}

impl ChildTables {
    /// The scenario's spelling (`target.child_tables`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChildTables::Prepare => "prepare",
            ChildTables::Auto => "auto",
        }
    }
}

/// Why `mode = "stmt2"` is refused (after the mode's name), and what to use instead.
pub const STMT2_UNAVAILABLE: &str = "is not available: the taos crate 0.12.x (crates.io) \
     offers only the STMT (v1) statement API over WebSocket; use mode = \"stmt\" for \
     parameter binding";

/// How rows are sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum InsertMode {
    /// Parameter binding through the driver's statement API: one prepared `INSERT` per
    /// super table, columnar values bound per child table.
    #[default]
    Stmt,
    /// TDengine's STMT2 API. Not offered by the `taos` crate 0.12.x: a configuration
    /// naming it is refused by [`crate::TdengineSink::new`] with a pointer to `Stmt`.
    Stmt2,
    /// Multi-table `INSERT` text, split under `max_sql_length`.
    Sql,
    /// InfluxDB line protocol through the driver's schemaless API.
    Schemaless,
}

impl InsertMode {
    pub fn as_str(self) -> &'static str {
        match self {
            InsertMode::Stmt => "stmt",
            InsertMode::Stmt2 => "stmt2",
            InsertMode::Sql => "sql",
            InsertMode::Schemaless => "schemaless",
        }
    }
}

/// A setting the TDengine target cannot work with ([`TdengineConfig::check`]): the
/// scenario key it is read from, how the sink reports it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The `[target]` key (`url`, `database`, `mode`, `vgroups`, `timeout`, ...).
    pub key: &'static str,
    /// [`ErrorKind::Connection`] for the DSN, [`ErrorKind::Other`] for the rest.
    pub kind: ErrorKind,
    /// The message, as [`crate::TdengineSink::new`] says it (the DSN shown redacted).
    pub message: String,
}

impl From<Invalid> for SinkError {
    fn from(e: Invalid) -> SinkError {
        SinkError::new(e.kind, e.message)
    }
}

/// Where and how to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TdengineConfig {
    /// taosAdapter's WebSocket endpoint: `ws://user:pass@host:6041` (`wss://` for TLS;
    /// `?token=...` for cloud tokens). A path (`/db`) names the database. Shown with its
    /// password and token as `***`.
    pub dsn: SecretUrl,
    /// The database to create and write to.
    pub database: String,
    pub db_options: DbOptions,
    pub child_tables: ChildTables,
    /// Child tables per `CREATE TABLE` statement in `prepare` (1..=3000).
    pub batch_create_tbl_num: usize,
    pub mode: InsertMode,
    /// Longest SQL text sent, bytes: TDengine's `maxSQLLength` (1 MiB by default).
    pub max_sql_length: usize,
    /// `DROP DATABASE IF EXISTS` before creating it.
    pub drop_existing: bool,
    /// How long one request (or one statement-API exchange) may take before it fails with
    /// a (retryable) timeout and its connection is replaced.
    pub request_timeout: Duration,
}

impl TdengineConfig {
    /// `dsn` with the defaults: the database the DSN's path names, else `tsload`;
    /// server-default database options in ms precision; child tables created in prepare,
    /// 1000 per statement; `stmt` inserts; 1 MiB SQL; keep existing data; 60 s requests.
    pub fn new(dsn: impl Into<SecretUrl>) -> Self {
        let dsn = dsn.into();
        let database =
            dsn::database_of(dsn.shown()).unwrap_or_else(|| DEFAULT_DATABASE.to_string());
        TdengineConfig {
            dsn,
            database,
            db_options: DbOptions::default(),
            child_tables: ChildTables::default(),
            batch_create_tbl_num: DEFAULT_BATCH_CREATE_TBL_NUM,
            mode: InsertMode::default(),
            max_sql_length: DEFAULT_MAX_SQL_LENGTH,
            drop_existing: false,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// Checks everything a sink needs without connecting: the DSN (a WebSocket one, which
    /// the driver accepts), the database's name and the DSN's database against it, the
    /// option ranges, the insert mode (`stmt2` is refused: the `taos` crate 0.12.x has no
    /// STMT2 API). The one check: the kind's parse calls it (so `tsload validate` says
    /// it, by key) and [`crate::TdengineSink::new`] does (for a configuration built by
    /// hand).
    pub fn check(&self) -> Result<(), Invalid> {
        self.checked().map(drop)
    }

    /// [`Self::check`], keeping what it made: the parsed endpoint and the driver's builder
    /// logged in to the database.
    pub(crate) fn checked(&self) -> Result<(Endpoint, TaosBuilder), Invalid> {
        let url = |message: String| Invalid {
            key: "url",
            kind: ErrorKind::Connection,
            message,
        };
        let endpoint = Endpoint::parse(self.dsn.expose()).map_err(url)?;
        self.check_settings().map_err(|(key, m)| Invalid {
            key,
            kind: ErrorKind::Other,
            message: format!("TDengine target: {m}"),
        })?;
        if let Some(db) = dsn::database_of(self.dsn.shown())
            && db != self.database
        {
            return Err(Invalid {
                key: "database",
                kind: ErrorKind::Other,
                message: format!(
                    "TDengine target: the DSN {} names database {db:?} but database is {:?}; \
                     name it in one place",
                    endpoint.shown, self.database
                ),
            });
        }
        let builder = endpoint.builder(Some(&self.database)).map_err(url)?;
        Ok((endpoint, builder))
    }

    /// Checks everything but the DSN; returns the key of what is wrong and why, naming the
    /// setting.
    fn check_settings(&self) -> Result<(), (&'static str, String)> {
        if self.mode == InsertMode::Stmt2 {
            return Err(("mode", format!("mode \"stmt2\" {STMT2_UNAVAILABLE}")));
        }
        check_database_name(&self.database).map_err(|m| ("database", m))?;
        let o = &self.db_options;
        if let Some(v) = o.vgroups
            && !(1..=1024).contains(&v)
        {
            return Err(("vgroups", format!("vgroups = {v}: allowed 1 to 1024")));
        }
        if let Some(v) = o.buffer
            && !(3..=16384).contains(&v)
        {
            return Err(("buffer", format!("buffer = {v}: allowed 3 to 16384 (MB)")));
        }
        if let Some(v) = o.wal_level
            && !(1..=2).contains(&v)
        {
            return Err(("wal_level", format!("wal_level = {v}: allowed 1 or 2")));
        }
        if !(1..=MAX_BATCH_CREATE_TBL_NUM).contains(&self.batch_create_tbl_num) {
            return Err((
                "batch_create_tbl_num",
                format!(
                    "batch_create_tbl_num = {}: allowed 1 to {MAX_BATCH_CREATE_TBL_NUM}",
                    self.batch_create_tbl_num
                ),
            ));
        }
        // Room for one statement head plus a modest row; TDengine allows up to 1 MiB
        // (16 MiB on recent servers), so anything smaller than 1 KiB is a typo.
        if self.max_sql_length < 1024 {
            return Err((
                "max_sql_length",
                format!(
                    "max_sql_length = {}: must be at least 1024 bytes (TDengine's default is {})",
                    self.max_sql_length, DEFAULT_MAX_SQL_LENGTH
                ),
            ));
        }
        if self.request_timeout.is_zero() {
            return Err(("timeout", "request_timeout must be positive".to_string()));
        }
        Ok(())
    }
}

/// Database names are used unquoted (and in the DSN the driver logs in with), so they are
/// held to TDengine's plain-identifier rules, lower case: a letter or `_` first, then
/// letters, digits and `_`, at most 64 bytes.
fn check_database_name(name: &str) -> Result<(), String> {
    let ok_first = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let ok_rest = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok_first || !ok_rest || name.len() > 64 {
        return Err(format!(
            "database {name:?}: use 1 to 64 lower-case letters, digits and '_', not starting \
             with a digit"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = TdengineConfig::new("ws://root:taosdata@localhost:6041");
        assert_eq!(c.database, "tsload");
        assert_eq!(c.mode, InsertMode::Stmt);
        assert_eq!(c.child_tables, ChildTables::Prepare);
        assert_eq!(c.max_sql_length, 1_048_576);
        assert_eq!(c.db_options.precision, Precision::Ms);
        assert!(c.check().is_ok());

        let c = TdengineConfig::new("ws://localhost:6041/power");
        assert_eq!(c.database, "power");
    }

    #[test]
    fn debug_hides_the_password() {
        let c = TdengineConfig::new("wss://root:s3cret-pw@cloud:443?token=tok123");
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret-pw"), "{shown}");
        assert!(!shown.contains("tok123"), "{shown}");
        assert!(shown.contains("root:***@cloud:443"), "{shown}");
    }

    #[test]
    fn refuses_stmt2_with_a_pointer_to_stmt() {
        let mut c = TdengineConfig::new("ws://localhost:6041");
        c.mode = InsertMode::Stmt2;
        let e = c.check().unwrap_err();
        assert_eq!((e.key, e.kind), ("mode", ErrorKind::Other));
        assert!(
            e.message.contains("stmt2") && e.message.contains("\"stmt\""),
            "{e:?}"
        );
    }

    #[test]
    fn checks_ranges() {
        let base = TdengineConfig::new("ws://localhost:6041");
        // The key the scenario names it by, and what the message says.
        let bad = |f: &dyn Fn(&mut TdengineConfig), key: &str, needle: &str| {
            let mut c = base.clone();
            f(&mut c);
            let e = c.check().unwrap_err();
            assert_eq!((e.key, e.kind), (key, ErrorKind::Other), "{e:?}");
            assert!(e.message.starts_with("TDengine target: "), "{e:?}");
            assert!(e.message.contains(needle), "{e:?}");
        };
        bad(&|c| c.db_options.vgroups = Some(0), "vgroups", "vgroups");
        bad(&|c| c.db_options.buffer = Some(2), "buffer", "buffer");
        bad(
            &|c| c.db_options.wal_level = Some(0),
            "wal_level",
            "allowed 1 or 2",
        );
        bad(
            &|c| c.db_options.wal_level = Some(3),
            "wal_level",
            "allowed 1 or 2",
        );
        let n = "batch_create_tbl_num";
        bad(&|c| c.batch_create_tbl_num = 0, n, n);
        bad(&|c| c.batch_create_tbl_num = 3001, n, n);
        bad(
            &|c| c.max_sql_length = 10,
            "max_sql_length",
            "max_sql_length",
        );
        bad(
            &|c| c.request_timeout = Duration::ZERO,
            "timeout",
            "request_timeout",
        );
        bad(&|c| c.database = "9db".into(), "database", "database");
        bad(&|c| c.database = "My".into(), "database", "database");
        bad(&|c| c.database = "a-b".into(), "database", "database");
        bad(&|c| c.database = String::new(), "database", "database");
        let mut ok = base.clone();
        ok.db_options = DbOptions {
            vgroups: Some(4),
            cachemodel: Some(CacheModel::Both),
            buffer: Some(256),
            wal_level: Some(1),
            precision: Precision::Ns,
        };
        ok.database = "_t1".into();
        assert!(ok.check().is_ok());
    }

    #[test]
    fn precision_conversions() {
        assert_eq!(Precision::Ms.units_of_ns(1_999_999), 1);
        assert_eq!(Precision::Ms.units_of_ns(-1), -1);
        assert_eq!(Precision::Us.units_of_ns(1_999), 1);
        assert_eq!(Precision::Ns.units_of_ns(7), 7);
        assert_eq!(Precision::Ms.units_of_ms(5), 5);
        assert_eq!(Precision::Us.units_of_ms(5), 5_000);
        assert_eq!(Precision::Ns.units_of_ms(5), 5_000_000);
        assert_eq!(Precision::Ns.units_of_ms(i64::MAX), i64::MAX);
        let names: Vec<_> = [Precision::Ms, Precision::Us, Precision::Ns]
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(names, ["ms", "us", "ns"]);
    }
}
