//! `target.kind = "mysql"`: its keys, the pure parse of its section into a
//! [`MysqlConfig`], and the runs it serves (the write sink, the read target).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::Delivery;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::sql_tls::SqlFamily;
use tsload_target::{
    AppProbe, AtLeast, HostPort, KeyDoc, KeyError, Keys, QueryRun, Section, Target, TargetKind,
    TlsKeys, Url, Word, WriteRun,
};

use crate::{MysqlConfig, MysqlQueryTarget, MysqlSink, PrimaryKey, TransactionMode, TsType};

/// The MySQL kind, as registered with the CLI.
pub static KIND: MysqlKind = MysqlKind;

/// `target.kind = "mysql"`: MySQL, MariaDB and GreatSQL.
#[derive(Debug, Clone, Copy, Default)]
pub struct MysqlKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/tsload";

/// `target.engine` when unset.
pub const DEFAULT_ENGINE: &str = "InnoDB";

/// `target.connect_timeout` when unset.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The starts of the URLs `target.url` takes.
const URL_PREFIXES: &[&str] = &["mysql://", "mariadb://"];

tsload_target::keys! {
    /// `[target]` of `kind = "mysql"`, as written.
    pub struct MysqlKeys {
        /// the server (`mysql://user@host:3306/database`, or `mariadb://`)
        url: Url = Url::of(DEFAULT_URL);
        /// kept out of reports
        password: Secret;
        /// the ledger on or off
        delivery: Delivery,
            "`exactly_once` (`at_least_once` with `transaction = \"autocommit\"` or an engine \
             without transactions)";
        /// drop tsload's tables first (asks on another host)
        drop_existing: bool = false;
        /// connecting
        connect_timeout: AtLeast<0> = AtLeast(DEFAULT_CONNECT_TIMEOUT);
        /// create the database first
        create_database: bool = false;
        /// table engine
        engine: String = DEFAULT_ENGINE.into();
        /// key of each table
        primary_key: PrimaryKey = PrimaryKey::None;
        /// how writes commit
        transaction: TransactionMode = TransactionMode::PerBatch;
        /// type of `ts`
        ts_type: TsType = TsType::DateTime6;
        ..tls: TlsKeys;
    }
}

impl Word for PrimaryKey {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("none", PrimaryKey::None),
        ("auto_increment", PrimaryKey::AutoIncrement),
        ("tags_ts", PrimaryKey::TagsTs),
    ];
}

impl Word for TransactionMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("per_batch", TransactionMode::PerBatch),
        ("autocommit", TransactionMode::Autocommit),
    ];
}

impl Word for TsType {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("datetime", TsType::DateTime6),
        ("bigint_ns", TsType::BigIntNs),
    ];
}

impl TargetKind for MysqlKind {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["mysql", "mariadb"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        MysqlKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = MysqlKeys::read(s)?;
        let url = s.url_with_password(&keys.url.0, keys.password.as_ref(), URL_PREFIXES)?;
        let url = keys.tls.sql_url(s, url, SqlFamily::Mysql)?;
        let mut cfg = MysqlConfig::new(url);
        cfg.engine = keys.engine.clone();
        cfg.primary_key = keys.primary_key;
        cfg.transaction = keys.transaction;
        cfg.ts_type = keys.ts_type;
        cfg.drop_existing = keys.drop_existing;
        cfg.create_database = keys.create_database;
        cfg.connect_timeout = keys.connect_timeout.0;
        // Autocommit, or an engine without transactions, has no transaction to record a
        // batch in: at least once, unless asked for exactly once, which is then an error.
        cfg.delivery = keys
            .delivery
            .unwrap_or(match cfg.lacks_batch_transaction() {
                Some(_) => Delivery::AtLeastOnce,
                None => Delivery::ExactlyOnce,
            });
        cfg.check_delivery().map_err(|m| s.error("delivery", m))?;
        // Each run gets a fresh ledger id when its sink is made (`Target::write`).
        cfg.run_id = 0;
        Ok(Box::new(MysqlTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind mysql: the sink's configuration and the keys it came from.
#[derive(Debug, Clone)]
pub struct MysqlTarget {
    pub cfg: MysqlConfig,
    keys: MysqlKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for MysqlTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for MysqlTarget {
    fn kind(&self) -> &'static str {
        "mysql"
    }

    fn settings(&self) -> serde_json::Value {
        let mut v = tsload_target::settings_of(&KIND, &self.keys, Some(self.cfg.url.shown()));
        v["delivery"] = self.cfg.delivery.word().into();
        v
    }

    fn url(&self) -> Option<&str> {
        Some(self.cfg.url.shown())
    }

    /// MySQL's port is 3306 where the URL names none.
    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(self.cfg.url.shown(), Some(3306))
    }

    fn set_url(&mut self, url: String) {
        self.cfg.url = self.cfg.url.with_shown(&url);
    }

    fn drop_existing(&self) -> Option<bool> {
        Some(self.cfg.drop_existing)
    }

    fn set_drop_existing(&mut self, on: bool) {
        self.cfg.drop_existing = on;
        self.keys.drop_existing = on;
    }

    fn has_ledger(&self) -> bool {
        self.cfg.delivery == Delivery::ExactlyOnce
    }

    fn app_probe(&self) -> AppProbe {
        AppProbe::Sql {
            url: self.cfg.url.clone(),
        }
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        let mut cfg = self.cfg.clone();
        cfg.run_id = run.run_id;
        cfg.connections = (run.load.workers as u64).saturating_mul(run.load.in_flight as u64);
        Box::pin(async move {
            let sink = MysqlSink::new(cfg).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for MysqlTarget {
    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::MysqlSql {
            ts: self.cfg.ts_type,
        }))
    }

    fn oltp_dialect(&self) -> Option<tsload_oltp::Dialect> {
        Some(tsload_oltp::Dialect::Mysql)
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let t = MysqlQueryTarget::new(&self.cfg).map_err(EngineError::Prepare)?;
            run.into_engine(t).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(pairs: &[(&str, toml::Value)]) -> Section {
        Section::of_pairs("target", pairs)
    }

    fn parse(pairs: &[(&str, toml::Value)]) -> Result<Box<dyn Target>, KeyError> {
        KIND.parse(&section(pairs))
    }

    #[test]
    fn an_empty_section_gets_the_documented_defaults() {
        let t = parse(&[]).unwrap();
        assert_eq!(t.kind(), "mysql");
        assert_eq!(
            t.settings(),
            serde_json::json!({
                "kind": "mysql", "url": DEFAULT_URL, "engine": "InnoDB",
                "primary_key": "none", "transaction": "per_batch", "ts_type": "datetime",
                "drop_existing": false, "create_database": false, "connect_timeout": "10s",
                "delivery": "exactly_once",
            })
        );
        assert!(t.has_ledger());
        assert_eq!(t.url(), Some(DEFAULT_URL));
        assert_eq!(t.drop_existing(), Some(false));
        assert_eq!(
            t.app_probe(),
            AppProbe::Sql {
                url: DEFAULT_URL.into()
            }
        );
        assert_eq!(
            t.reads().unwrap().oltp_dialect(),
            Some(tsload_oltp::Dialect::Mysql)
        );
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::render::MysqlSql {
                ts: TsType::DateTime6
            }))
        );
        // The defaults the sink's own constructor gives, but for the run id each run sets.
        let mut by_hand = MysqlConfig::new(DEFAULT_URL);
        by_hand.run_id = 0;
        let parsed = (t.as_ref() as &dyn std::any::Any).downcast_ref::<MysqlTarget>();
        assert_eq!(parsed.map(|p| &p.cfg), Some(&by_hand));
        // Each documented TOML default means the same as leaving the key out.
        for key in MysqlKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
                continue;
            };
            let value: toml::Value =
                toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
            let with = parse(&[(key.name, value)]).unwrap();
            assert!(with.eq_dyn(t.as_ref()), "{}: {with:?} vs {t:?}", key.name);
        }
    }

    #[test]
    fn every_key_is_read() {
        let t = parse(&[
            ("url", "mariadb://bench@db.example:3307/metrics".into()),
            ("password", "p@ss word".into()),
            ("delivery", "at_least_once".into()),
            ("drop_existing", true.into()),
            ("connect_timeout", "1m 30s".into()),
            ("insecure_skip_verify", true.into()),
            ("create_database", true.into()),
            ("engine", "RocksDB".into()),
            ("primary_key", "tags_ts".into()),
            ("transaction", "autocommit".into()),
            ("ts_type", "bigint_ns".into()),
        ])
        .unwrap();
        let url = "mariadb://bench:p%40ss%20word@db.example:3307/metrics?ssl-mode=REQUIRED";
        let AppProbe::Sql { url: driver_url } = t.app_probe() else {
            panic!("a SQL probe")
        };
        assert_eq!(driver_url.expose(), url);
        // The settings (plan, reports) hold no password.
        let shown = "mariadb://bench:***@db.example:3307/metrics?ssl-mode=REQUIRED";
        assert_eq!(
            t.settings(),
            serde_json::json!({
                "kind": "mysql", "url": shown, "engine": "RocksDB", "password": "***",
                "insecure_skip_verify": true,
                "primary_key": "tags_ts", "transaction": "autocommit", "ts_type": "bigint_ns",
                "drop_existing": true, "create_database": true, "connect_timeout": "1m 30s",
                "delivery": "at_least_once",
            })
        );
        assert!(!t.has_ledger());
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, true),
            Ok(tsload_query::Dialect::new(crate::render::MysqlSql {
                ts: TsType::BigIntNs
            }))
        );
        let mut moved = t.clone();
        moved.set_url("mysql://bench@127.0.0.1:40000/metrics".into());
        moved.set_drop_existing(false);
        assert_eq!(moved.url(), Some("mysql://bench@127.0.0.1:40000/metrics"));
        assert_eq!(moved.drop_existing(), Some(false));
        assert!(!moved.eq_dyn(t.as_ref()));
    }

    #[test]
    fn delivery_defaults_to_at_least_once_without_a_transaction_per_batch() {
        for (key, value) in [("transaction", "autocommit"), ("engine", "MyISAM")] {
            let t = parse(&[(key, value.into())]).unwrap();
            assert_eq!(t.settings()["delivery"], "at_least_once", "{key}");
            assert!(!t.has_ledger());
        }
        let t = parse(&[
            ("engine", "Aria".into()),
            ("delivery", "at_least_once".into()),
        ]);
        assert!(t.is_ok());
    }

    #[test]
    fn exactly_once_without_a_transaction_per_batch_is_refused_at_parse_and_by_the_sink() {
        for (key, value, why) in [
            ("transaction", "autocommit", "transaction = \"autocommit\""),
            ("engine", "MyISAM", "engine \"MyISAM\""),
        ] {
            let e = parse(&[(key, value.into()), ("delivery", "exactly_once".into())]).unwrap_err();
            assert_eq!(e.key, "target.delivery");
            assert_eq!(
                e.message,
                format!(
                    "exactly_once records each batch in its own transaction, which {why} does \
                     not have; allowed with it: at_least_once"
                )
            );
            // A configuration built by hand meets the same check in the sink.
            let mut cfg = MysqlConfig::new(DEFAULT_URL);
            match key {
                "transaction" => cfg.transaction = TransactionMode::Autocommit,
                _ => cfg.engine = value.to_string(),
            }
            let sink_error = MysqlSink::new(cfg).unwrap_err();
            assert_eq!(sink_error.kind, tsload_core::ErrorKind::Schema);
            assert_eq!(sink_error.message, e.message);
        }
    }

    #[test]
    fn each_key_refuses_a_bad_value_naming_itself() {
        // The key named, the section, what the message says.
        type Case = (&'static str, Vec<(&'static str, toml::Value)>, &'static str);
        let cases: Vec<Case> = vec![
            ("url", vec![("url", "".into())], "must not be empty"),
            (
                "url",
                vec![("url", "postgres://root@127.0.0.1/tsload".into())],
                "the URL must start with mysql:// or mariadb://",
            ),
            (
                "url",
                vec![
                    ("url", "mysql://127.0.0.1:3306/tsload".into()),
                    ("password", "secret".into()),
                ],
                "a `password` needs a user name in the URL",
            ),
            ("url", vec![("url", 3306.into())], "allowed: a string"),
            (
                "password",
                vec![
                    ("url", "mysql://root:one@127.0.0.1/tsload".into()),
                    ("password", "two".into()),
                ],
                "the URL has a password already",
            ),
            (
                "delivery",
                vec![("delivery", "twice".into())],
                "\"twice\" is not allowed; allowed: exactly_once, at_least_once",
            ),
            (
                "drop_existing",
                vec![("drop_existing", "yes".into())],
                "true or false",
            ),
            (
                "connect_timeout",
                vec![("connect_timeout", "soon".into())],
                "is not a duration",
            ),
            (
                "connect_timeout",
                vec![("connect_timeout", "101y".into())],
                "at most 100 years",
            ),
            (
                "ca_file",
                vec![("ca_file", "/nonexistent/tsload-ca.pem".into())],
                "",
            ),
            (
                "ca_file",
                vec![
                    ("ca_file", "/nonexistent/tsload-ca.pem".into()),
                    ("insecure_skip_verify", true.into()),
                ],
                "is pointless with insecure_skip_verify = true",
            ),
            (
                "insecure_skip_verify",
                vec![("insecure_skip_verify", "no".into())],
                "true or false",
            ),
            (
                "insecure_skip_verify",
                vec![
                    (
                        "url",
                        "mysql://root@127.0.0.1/tsload?ssl-mode=DISABLED".into(),
                    ),
                    ("insecure_skip_verify", true.into()),
                ],
                "target.url sets ssl-mode already",
            ),
            (
                "create_database",
                vec![("create_database", 1.into())],
                "true or false",
            ),
            (
                "engine",
                vec![("engine", false.into())],
                "allowed: a string",
            ),
            (
                "primary_key",
                vec![("primary_key", "uuid".into())],
                "\"uuid\" is not allowed; allowed: none, auto_increment, tags_ts",
            ),
            (
                "transaction",
                vec![("transaction", "per_row".into())],
                "\"per_row\" is not allowed; allowed: per_batch, autocommit",
            ),
            (
                "ts_type",
                vec![("ts_type", "timestamp".into())],
                "\"timestamp\" is not allowed; allowed: datetime, bigint_ns",
            ),
            (
                "delivery",
                vec![
                    ("transaction", "autocommit".into()),
                    ("delivery", "exactly_once".into()),
                ],
                "which transaction = \"autocommit\" does not have; allowed with it: \
                 at_least_once",
            ),
        ];
        for (key, pairs, says) in cases {
            let e = parse(&pairs).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"), "{pairs:?}: {e}");
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
    }

    #[test]
    fn the_words_are_the_scenario_spellings() {
        for (word, value) in PrimaryKey::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        for (word, value) in TransactionMode::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        for (word, value) in TsType::WORDS {
            assert_eq!(value.as_str(), *word);
        }
        let keys: Vec<&str> = KIND.keys().iter().map(|k| k.name).collect();
        assert_eq!(
            keys,
            [
                "url",
                "password",
                "delivery",
                "drop_existing",
                "connect_timeout",
                "create_database",
                "engine",
                "primary_key",
                "transaction",
                "ts_type",
                "ca_file",
                "insecure_skip_verify",
            ]
        );
    }
}
