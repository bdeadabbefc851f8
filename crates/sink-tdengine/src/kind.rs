//! `target.kind = "tdengine"`: its keys, the pure parse of its section into a
//! [`TdengineConfig`], and the runs it serves (the write sink, the read target).

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::{
    AppProbe, AtLeast, HostPort, Int, KeyDoc, KeyError, Keys, QueryRun, Section, Target,
    TargetKind, Url, Word, WriteRun,
};

use crate::config::DEFAULT_REQUEST_TIMEOUT;
use crate::{
    CacheModel, ChildTables, DEFAULT_BATCH_CREATE_TBL_NUM, DEFAULT_MAX_SQL_LENGTH, InsertMode,
    MAX_BATCH_CREATE_TBL_NUM, Precision, STMT2_UNAVAILABLE, TdengineConfig, TdengineQueryTarget,
    TdengineSink,
};

/// The TDengine kind, as registered with the CLI.
pub static KIND: TdengineKind = TdengineKind;

/// `target.kind = "tdengine"`: TDengine over WebSocket (taosAdapter).
#[derive(Debug, Clone, Copy, Default)]
pub struct TdengineKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "ws://root:taosdata@127.0.0.1:6041";

/// The starts of the URLs `target.url` takes.
const URL_PREFIXES: &[&str] = &["ws://", "wss://", "taos+ws://", "taos+wss://"];

/// The longest `target.max_sql_length` taken (64 MiB).
const MAX_MAX_SQL_LENGTH: i64 = 64 << 20;

/// `target.batch_create_tbl_num`'s type.
type BatchCreateTblNum = Int<1, { MAX_BATCH_CREATE_TBL_NUM as i64 }>;

/// `target.max_sql_length`'s type.
type MaxSqlLength = Int<1024, MAX_MAX_SQL_LENGTH>;

tsload_target::keys! {
    /// `[target]` of `kind = "tdengine"`, as written.
    pub struct TdengineKeys {
        /// taosAdapter's WebSocket address (`ws://`, `wss://`, `taos+ws://` or
        /// `taos+wss://`; a path names the database)
        url: Url = Url::of(DEFAULT_URL);
        /// kept out of reports
        password: Secret;
        /// drop the database first (asks on another host)
        drop_existing: bool = false;
        /// timestamp unit: the database's precision
        precision: Precision = Precision::Ms;
        /// one request
        timeout: AtLeast<1000> = AtLeast(DEFAULT_REQUEST_TIMEOUT);
        /// database
        database: String, "the one the URL's path names, else `tsload`";
        /// CREATE DATABASE option
        vgroups: Int<1, 1024>, "the server's";
        /// CREATE DATABASE option
        cachemodel: CacheModel, "the server's";
        /// CREATE DATABASE option, MB
        buffer: Int<3, 16_384>, "the server's";
        /// CREATE DATABASE option
        wal_level: Int<1, 2>, "the server's";
        /// create tables before or while inserting
        child_tables: ChildTables = ChildTables::Prepare;
        /// tables per CREATE
        batch_create_tbl_num: BatchCreateTblNum = Int(DEFAULT_BATCH_CREATE_TBL_NUM as i64);
        /// insert API
        mode: InsertMode = InsertMode::Stmt;
        /// split SQL inserts under it
        max_sql_length: MaxSqlLength = Int(DEFAULT_MAX_SQL_LENGTH as i64);
    }
}

impl Word for Precision {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("ms", Precision::Ms),
        ("us", Precision::Us),
        ("ns", Precision::Ns),
    ];
}

impl Word for CacheModel {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("none", CacheModel::None),
        ("last_row", CacheModel::LastRow),
        ("last_value", CacheModel::LastValue),
        ("both", CacheModel::Both),
    ];
}

impl Word for ChildTables {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("prepare", ChildTables::Prepare),
        ("auto", ChildTables::Auto),
    ];
}

/// The modes a scenario may ask for: `stmt2` is not one (the parse refuses it with its
/// own message, saying what to use instead).
impl Word for InsertMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("stmt", InsertMode::Stmt),
        ("sql", InsertMode::Sql),
        ("schemaless", InsertMode::Schemaless),
    ];
}

impl TargetKind for TdengineKind {
    fn name(&self) -> &'static str {
        "tdengine"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["ws", "wss", "taos+ws", "taos+wss"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        TdengineKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        if s.text("mode")? == Some(InsertMode::Stmt2.as_str()) {
            // Refused here, not when the run starts: validate says so (exit 2).
            return Err(s.error("mode", format!("\"stmt2\" {STMT2_UNAVAILABLE}")));
        }
        let keys = TdengineKeys::read(s)?;
        let url = s.url_with_password(&keys.url.0, keys.password.as_ref(), URL_PREFIXES)?;
        let mut cfg = TdengineConfig::new(url);
        if let Some(db) = &keys.database {
            cfg.database = db.clone();
        }
        let o = &mut cfg.db_options;
        // The ranges checked when read fit these types.
        o.vgroups = keys.vgroups.map(|v| v.0 as u32);
        o.buffer = keys.buffer.map(|v| v.0 as u32);
        o.wal_level = keys.wal_level.map(|v| v.0 as u8);
        o.cachemodel = keys.cachemodel;
        o.precision = keys.precision;
        cfg.child_tables = keys.child_tables;
        cfg.batch_create_tbl_num = keys.batch_create_tbl_num.0 as usize;
        cfg.mode = keys.mode;
        cfg.max_sql_length = keys.max_sql_length.0 as usize;
        cfg.drop_existing = keys.drop_existing;
        cfg.request_timeout = keys.timeout.0;
        // The sink's own checks (the DSN; the database's name, and the DSN's database
        // against it), so that validate finds what the run would refuse.
        cfg.check().map_err(|e| s.error(e.key, e.message))?;
        Ok(Box::new(TdengineTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind tdengine: the sink's configuration and the keys it came
/// from.
#[derive(Debug, Clone)]
pub struct TdengineTarget {
    pub cfg: TdengineConfig,
    keys: TdengineKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for TdengineTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for TdengineTarget {
    fn kind(&self) -> &'static str {
        "tdengine"
    }

    fn settings(&self) -> serde_json::Value {
        let mut v = tsload_target::settings_of(&KIND, &self.keys, Some(self.cfg.dsn.shown()));
        v["database"] = self.cfg.database.clone().into();
        v
    }

    fn url(&self) -> Option<&str> {
        Some(self.cfg.dsn.shown())
    }

    /// taosAdapter's port, 6041, where the DSN names none (`ws://` and `wss://` take 80
    /// and 443, as their schemes do).
    fn address(&self) -> Option<HostPort> {
        let dsn = self.cfg.dsn.shown();
        let web = dsn.starts_with("ws://") || dsn.starts_with("wss://");
        HostPort::of_url(dsn, (!web).then_some(6041))
    }

    fn set_url(&mut self, url: String) {
        self.cfg.dsn = self.cfg.dsn.with_shown(&url);
    }

    fn drop_existing(&self) -> Option<bool> {
        Some(self.cfg.drop_existing)
    }

    fn set_drop_existing(&mut self, on: bool) {
        self.cfg.drop_existing = on;
        self.keys.drop_existing = on;
    }

    /// TDengine has no transactions to record a batch in: no ledger (rows rewritten
    /// after a retry overwrite themselves instead).
    fn has_ledger(&self) -> bool {
        false
    }

    fn app_probe(&self) -> AppProbe {
        AppProbe::None
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(async move {
            let sink = TdengineSink::new(self.cfg.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for TdengineTarget {
    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::TdengineSql {
            precision: self.cfg.db_options.precision,
            schemaless: self.cfg.mode == InsertMode::Schemaless,
        }))
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let t = TdengineQueryTarget::new(&self.cfg).map_err(EngineError::Prepare)?;
            run.into_engine(t).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DbOptions;

    fn section(pairs: &[(&str, toml::Value)]) -> Section {
        Section::of_pairs("target", pairs)
    }

    /// The sink's configuration of a parsed target.
    fn cfg_of(t: &dyn Target) -> &TdengineConfig {
        let any: &dyn std::any::Any = t;
        &any.downcast_ref::<TdengineTarget>()
            .expect("a TDengine target")
            .cfg
    }

    /// The DSN the driver is given.
    fn dsn_of(t: &dyn Target) -> String {
        let any: &dyn std::any::Any = t;
        let target = any
            .downcast_ref::<TdengineTarget>()
            .expect("a TDengine target");
        target.cfg.dsn.expose().to_string()
    }

    fn parse(pairs: &[(&str, toml::Value)]) -> Result<Box<dyn Target>, KeyError> {
        KIND.parse(&section(pairs))
    }

    #[test]
    fn an_empty_section_gets_the_documented_defaults() {
        let t = parse(&[]).unwrap();
        assert_eq!(t.kind(), "tdengine");
        // The default DSN's password is shown by nothing: not the settings, not Debug.
        for shown in [format!("{t:?}"), t.settings().to_string()] {
            assert!(!shown.contains("taosdata"), "{shown}");
        }
        assert_eq!(
            t.settings(),
            serde_json::json!({
                "kind": "tdengine", "url": "ws://root:***@127.0.0.1:6041",
                "database": "tsload", "precision": "ms", "child_tables": "prepare",
                "mode": "stmt", "batch_create_tbl_num": 1000, "max_sql_length": 1048576,
                "drop_existing": false, "timeout": "1m",
            })
        );
        assert!(!t.has_ledger());
        assert!(t.stores());
        assert_eq!(t.url(), Some("ws://root:***@127.0.0.1:6041"));
        assert_eq!(dsn_of(t.as_ref()), DEFAULT_URL);
        assert_eq!(t.drop_existing(), Some(false));
        assert_eq!(t.app_probe(), AppProbe::None);
        assert_eq!(t.reads().unwrap().oltp_dialect(), None);
        assert!(!t.reads().unwrap().takes_time_bucket());
        assert!(t.reads().unwrap().query_languages().is_empty());
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::render::TdengineSql {
                precision: Precision::Ms,
                schemaless: false,
            }))
        );
        // The defaults the sink's own constructor gives.
        assert_eq!(cfg_of(t.as_ref()), &TdengineConfig::new(DEFAULT_URL));
        // Each documented TOML default means the same as leaving the key out.
        for key in TdengineKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
                continue;
            };
            let value: toml::Value =
                toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
            let with = parse(&[(key.name, value)]).unwrap();
            assert!(with.eq_dyn(t.as_ref()), "{}: {with:?} vs {t:?}", key.name);
        }
        // `database` is said in words: the URL's, else `tsload`.
        assert!(
            parse(&[("database", "tsload".into())])
                .unwrap()
                .eq_dyn(t.as_ref())
        );
        let from_url = parse(&[("url", "ws://127.0.0.1:6041/power".into())]).unwrap();
        assert_eq!(from_url.settings()["database"], "power");
    }

    #[test]
    fn every_key_is_read() {
        let t = parse(&[
            ("url", "wss://bench@td.example:443/metrics".into()),
            ("password", "p@ss word".into()),
            ("drop_existing", true.into()),
            ("precision", "ns".into()),
            ("timeout", "1m 30s".into()),
            ("database", "metrics".into()),
            ("vgroups", 8.into()),
            ("cachemodel", "last_row".into()),
            ("buffer", 512.into()),
            ("wal_level", 2.into()),
            ("child_tables", "auto".into()),
            ("batch_create_tbl_num", 3000.into()),
            ("mode", "schemaless".into()),
            ("max_sql_length", 4_194_304.into()),
        ])
        .unwrap();
        let url = "wss://bench:p%40ss%20word@td.example:443/metrics";
        assert_eq!(t.url(), Some("wss://bench:***@td.example:443/metrics"));
        assert_eq!(dsn_of(t.as_ref()), url);
        assert_eq!(
            t.settings(),
            serde_json::json!({
                "kind": "tdengine", "url": "wss://bench:***@td.example:443/metrics",
                "password": "***", "database": "metrics", "vgroups": 8, "buffer": 512, "wal_level": 2,
                "cachemodel": "last_row", "precision": "ns", "child_tables": "auto",
                "mode": "schemaless", "batch_create_tbl_num": 3000,
                "max_sql_length": 4_194_304, "drop_existing": true, "timeout": "1m 30s",
            })
        );
        let mut by_hand = TdengineConfig::new(url);
        by_hand.db_options = DbOptions {
            vgroups: Some(8),
            cachemodel: Some(CacheModel::LastRow),
            buffer: Some(512),
            wal_level: Some(2),
            precision: Precision::Ns,
        };
        by_hand.child_tables = ChildTables::Auto;
        by_hand.batch_create_tbl_num = 3000;
        by_hand.mode = InsertMode::Schemaless;
        by_hand.max_sql_length = 4_194_304;
        by_hand.drop_existing = true;
        by_hand.request_timeout = std::time::Duration::from_secs(90);
        assert_eq!(cfg_of(t.as_ref()), &by_hand);
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, true),
            Ok(tsload_query::Dialect::new(crate::render::TdengineSql {
                precision: Precision::Ns,
                schemaless: true,
            }))
        );
        let mut moved = t.clone();
        moved.set_url("ws://127.0.0.1:40000".into());
        moved.set_drop_existing(false);
        assert_eq!(moved.url(), Some("ws://127.0.0.1:40000"));
        assert_eq!(moved.drop_existing(), Some(false));
        assert!(!moved.eq_dyn(t.as_ref()));
    }

    #[test]
    fn the_password_goes_into_the_dsn_and_stays_out_of_the_settings() {
        for (url, with) in [
            (
                "ws://root@127.0.0.1:6041",
                "ws://root:s3cret%2F1@127.0.0.1:6041",
            ),
            (
                "taos+ws://root@h:6041/db1",
                "taos+ws://root:s3cret%2F1@h:6041/db1",
            ),
            ("wss://root@h?token=x", "wss://root:s3cret%2F1@h?token=x"),
        ] {
            let t = parse(&[("url", url.into()), ("password", "s3cret/1".into())]).unwrap();
            assert_eq!(dsn_of(t.as_ref()), with);
            assert!(!t.url().unwrap().contains("s3cret"));
            let shown = t.settings().to_string();
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(!format!("{t:?}").contains("s3cret"));
        }
    }

    #[test]
    fn each_key_refuses_a_bad_value_naming_itself() {
        // The key named, the section, what the message says.
        type Case = (&'static str, Vec<(&'static str, toml::Value)>, &'static str);
        let cases: Vec<Case> = vec![
            ("url", vec![("url", "".into())], "must not be empty"),
            ("url", vec![("url", 6041.into())], "allowed: a string"),
            (
                "url",
                vec![("url", "http://127.0.0.1:6041".into())],
                "the URL must start with ws:// or wss:// or taos+ws:// or taos+wss://",
            ),
            (
                "url",
                vec![
                    ("url", "ws://127.0.0.1:6041".into()),
                    ("password", "secret".into()),
                ],
                "a `password` needs a user name in the URL",
            ),
            (
                "url",
                vec![("url", "ws://root@h1:6041,h2:6041".into())],
                "invalid TDengine DSN",
            ),
            (
                "password",
                vec![
                    ("url", "ws://root:one@127.0.0.1:6041".into()),
                    ("password", "two".into()),
                ],
                "the URL has a password already",
            ),
            (
                "password",
                vec![("password", 5.into())],
                "allowed: a string",
            ),
            (
                "drop_existing",
                vec![("drop_existing", "yes".into())],
                "true or false",
            ),
            (
                "precision",
                vec![("precision", "s".into())],
                "\"s\" is not allowed; allowed: ms, us, ns",
            ),
            (
                "timeout",
                vec![("timeout", "soon".into())],
                "is not a duration",
            ),
            (
                "timeout",
                vec![("timeout", "0s".into())],
                "is too short; allowed: at least 1ms",
            ),
            (
                "database",
                vec![("database", 1.into())],
                "allowed: a string",
            ),
            (
                "database",
                vec![("database", "9db".into())],
                "TDengine target: database \"9db\": use 1 to 64 lower-case letters",
            ),
            (
                "database",
                vec![
                    ("url", "ws://root:pw-123456@127.0.0.1:6041/one".into()),
                    ("database", "two".into()),
                ],
                "TDengine target: the DSN ws://root:***@127.0.0.1:6041/one names database \
                 \"one\" but database is \"two\"; name it in one place",
            ),
            (
                "vgroups",
                vec![("vgroups", 0.into())],
                "value 0 is out of range; allowed: 1 to 1024",
            ),
            (
                "vgroups",
                vec![("vgroups", "4".into())],
                "allowed: an integer",
            ),
            (
                "cachemodel",
                vec![("cachemodel", "last".into())],
                "\"last\" is not allowed; allowed: none, last_row, last_value, both",
            ),
            (
                "buffer",
                vec![("buffer", 2.into())],
                "value 2 is out of range; allowed: 3 to 16384",
            ),
            (
                "wal_level",
                vec![("wal_level", 0.into())],
                "value 0 is out of range; allowed: 1 to 2",
            ),
            (
                "wal_level",
                vec![("wal_level", 3.into())],
                "value 3 is out of range; allowed: 1 to 2",
            ),
            (
                "child_tables",
                vec![("child_tables", "lazy".into())],
                "\"lazy\" is not allowed; allowed: prepare, auto",
            ),
            (
                "batch_create_tbl_num",
                vec![("batch_create_tbl_num", 3001.into())],
                "value 3001 is out of range; allowed: 1 to 3000",
            ),
            (
                "mode",
                vec![("mode", "stmt2".into())],
                "\"stmt2\" is not available: the taos crate 0.12.x",
            ),
            (
                "mode",
                vec![("mode", "line".into())],
                "\"line\" is not allowed; allowed: stmt, sql, schemaless",
            ),
            (
                "max_sql_length",
                vec![("max_sql_length", 1023.into())],
                "value 1023 is out of range; allowed: 1024 to 67108864",
            ),
        ];
        for (key, pairs, says) in cases {
            let e = parse(&pairs).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"), "{pairs:?}: {e}");
            assert!(e.message.contains(says), "{key}: {}", e.message);
            assert!(!e.message.contains("pw-123456"), "{e}");
        }
        // `stmt2`'s message says what to use instead.
        let e = parse(&[("mode", "stmt2".into())]).unwrap_err();
        assert!(e.message.contains("use mode = \"stmt\""), "{e}");
    }

    #[test]
    fn parse_and_the_sink_make_one_check() {
        // What the parse refuses through the sink's check, the sink refuses with the same
        // words for a configuration built by hand.
        let mut cfg = TdengineConfig::new("ws://127.0.0.1:6041/one");
        cfg.database = "two".into();
        let e = parse(&[
            ("url", "ws://127.0.0.1:6041/one".into()),
            ("database", "two".into()),
        ])
        .unwrap_err();
        let sink_error = TdengineSink::new(cfg).unwrap_err();
        assert_eq!(sink_error.kind, tsload_core::ErrorKind::Other);
        assert_eq!(sink_error.message, e.message);

        let e = parse(&[("url", "ws://root@h1:6041,h2:6041".into())]).unwrap_err();
        let sink_error =
            TdengineSink::new(TdengineConfig::new("ws://root@h1:6041,h2:6041")).unwrap_err();
        assert_eq!(sink_error.kind, tsload_core::ErrorKind::Connection);
        assert_eq!(sink_error.message, e.message);
    }

    #[test]
    fn the_words_are_the_scenario_spellings() {
        for (word, value) in Precision::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        for (word, value) in CacheModel::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        for (word, value) in ChildTables::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        for (word, value) in InsertMode::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        let keys: Vec<&str> = KIND.keys().iter().map(|k| k.name).collect();
        assert_eq!(
            keys,
            [
                "url",
                "password",
                "drop_existing",
                "precision",
                "timeout",
                "database",
                "vgroups",
                "cachemodel",
                "buffer",
                "wal_level",
                "child_tables",
                "batch_create_tbl_num",
                "mode",
                "max_sql_length",
            ]
        );
    }
}
