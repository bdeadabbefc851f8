//! `target.kind = "mysql"`: its keys, the pure parse of its section into a
//! [`MysqlConfig`], and the runs it serves (the write sink, the read target).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::Delivery;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_target::sql_tls::SqlFamily;
use tsload_target::{
    AppProbe, HostPort, KeyDefault, KeyDoc, KeyError, QueryRun, Section, Target, TargetKind, Word,
    WriteRun, same,
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

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        name: "url",
        ty: "string",
        default: KeyDefault::Toml("\"mysql://root@127.0.0.1:3306/tsload\""),
        meaning: "the server (`mysql://user@host:3306/database`, or `mariadb://`)",
    },
    KeyDoc {
        name: "password",
        ty: "string (`$NAME` reads the environment)",
        default: KeyDefault::Unset,
        meaning: "kept out of reports",
    },
    KeyDoc {
        name: "delivery",
        ty: "`exactly_once` | `at_least_once`",
        default: KeyDefault::Said(
            "`exactly_once` (`at_least_once` with `transaction = \"autocommit\"` or an engine \
             without transactions)",
        ),
        meaning: "the ledger on or off",
    },
    KeyDoc {
        name: "drop_existing",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "drop tsload's tables first (asks on another host)",
    },
    KeyDoc {
        name: "connect_timeout",
        ty: "duration",
        default: KeyDefault::Toml("\"10s\""),
        meaning: "connecting",
    },
    KeyDoc {
        name: "ca_file",
        ty: "string",
        default: KeyDefault::Unset,
        meaning: "PEM CA certificates trusted besides Mozilla's",
    },
    KeyDoc {
        name: "insecure_skip_verify",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "TLS without checking the certificate",
    },
    KeyDoc {
        name: "create_database",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "create the database first",
    },
    KeyDoc {
        name: "engine",
        ty: "string",
        default: KeyDefault::Toml("\"InnoDB\""),
        meaning: "table engine",
    },
    KeyDoc {
        name: "primary_key",
        ty: "`none` | `auto_increment` | `tags_ts`",
        default: KeyDefault::Toml("\"none\""),
        meaning: "key of each table",
    },
    KeyDoc {
        name: "transaction",
        ty: "`per_batch` | `autocommit`",
        default: KeyDefault::Toml("\"per_batch\""),
        meaning: "how writes commit",
    },
    KeyDoc {
        name: "ts_type",
        ty: "`datetime` | `bigint_ns`",
        default: KeyDefault::Toml("\"datetime\""),
        meaning: "type of `ts`",
    },
];

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
        KEYS
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let url = s.url_with_password(s.url(DEFAULT_URL)?, URL_PREFIXES)?;
        let url = s.sql_url_with_tls(url, SqlFamily::Mysql)?;
        let mut cfg = MysqlConfig::new(url);
        if let Some(engine) = s.text("engine")? {
            cfg.engine = engine.to_string();
        }
        cfg.primary_key = s.word("primary_key")?.unwrap_or_default();
        cfg.transaction = s.word("transaction")?.unwrap_or_default();
        cfg.ts_type = s.word("ts_type")?.unwrap_or_default();
        cfg.drop_existing = s.flag("drop_existing", false)?;
        cfg.create_database = s.flag("create_database", false)?;
        if let Some(d) = s.duration("connect_timeout", Duration::ZERO)? {
            cfg.connect_timeout = d;
        }
        // Autocommit, or an engine without transactions, has no transaction to record a
        // batch in: at least once, unless asked for exactly once, which is then an error.
        cfg.delivery = s.delivery(match cfg.lacks_batch_transaction() {
            Some(_) => Delivery::AtLeastOnce,
            None => Delivery::ExactlyOnce,
        })?;
        cfg.check_delivery().map_err(|m| s.error("delivery", m))?;
        // Each run gets a fresh ledger id when its sink is made (`Target::write`).
        cfg.run_id = 0;
        Ok(Box::new(cfg))
    }
}

impl Target for MysqlConfig {
    fn kind(&self) -> &'static str {
        "mysql"
    }

    fn clone_box(&self) -> Box<dyn Target> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn Target) -> bool {
        same(self, other)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "mysql", "url": self.url, "engine": self.engine,
            "primary_key": self.primary_key.word(),
            "transaction": self.transaction.word(), "ts_type": self.ts_type.word(),
            "drop_existing": self.drop_existing, "create_database": self.create_database,
            "connect_timeout": humantime::format_duration(self.connect_timeout).to_string(),
            "delivery": self.delivery.as_str(),
        })
    }

    fn url(&self) -> Option<&str> {
        Some(self.url.shown())
    }

    /// MySQL's port is 3306 where the URL names none.
    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(self.url.shown(), Some(3306))
    }

    fn set_url(&mut self, url: String) {
        self.url = self.url.with_shown(&url);
    }

    fn drop_existing(&self) -> Option<bool> {
        Some(self.drop_existing)
    }

    fn set_drop_existing(&mut self, on: bool) {
        self.drop_existing = on;
    }

    fn has_ledger(&self) -> bool {
        self.delivery == Delivery::ExactlyOnce
    }

    fn app_probe(&self) -> AppProbe {
        AppProbe::Sql {
            url: self.url.clone(),
        }
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        let mut cfg = self.clone();
        cfg.run_id = run.run_id;
        cfg.connections = (run.load.workers as u64).saturating_mul(run.load.in_flight as u64);
        Box::pin(async move {
            let sink = MysqlSink::new(cfg).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::MysqlSql {
            ts: self.ts_type,
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
            let t = MysqlQueryTarget::new(self).map_err(EngineError::Prepare)?;
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
        assert_eq!(t.oltp_dialect(), Some(tsload_oltp::Dialect::Mysql));
        assert_eq!(
            t.tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::render::MysqlSql {
                ts: TsType::DateTime6
            }))
        );
        // The defaults the sink's own constructor gives, but for the run id each run sets.
        let mut by_hand = MysqlConfig::new(DEFAULT_URL);
        by_hand.run_id = 0;
        assert!(by_hand.eq_dyn(t.as_ref()));
        // Each documented TOML default means the same as leaving the key out.
        for key in KEYS {
            let KeyDefault::Toml(text) = key.default else {
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
                "kind": "mysql", "url": shown, "engine": "RocksDB",
                "primary_key": "tags_ts", "transaction": "autocommit", "ts_type": "bigint_ns",
                "drop_existing": true, "create_database": true, "connect_timeout": "1m 30s",
                "delivery": "at_least_once",
            })
        );
        assert!(!t.has_ledger());
        assert_eq!(
            t.tsbs_dialect(None, true),
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
                "ca_file",
                "insecure_skip_verify",
                "create_database",
                "engine",
                "primary_key",
                "transaction",
                "ts_type",
            ]
        );
    }
}
