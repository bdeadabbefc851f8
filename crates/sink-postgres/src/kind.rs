//! `target.kind = "postgres"`: its keys, the pure parse of its section into a
//! [`PostgresConfig`], and the runs it serves (the write sink, the read target).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::Delivery;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_target::sql_tls::SqlFamily;
use tsload_target::{
    AppProbe, HostPort, KeyDefault, KeyDoc, KeyError, QueryRun, Section, Target, TargetKind,
    WriteRun, same,
};

use crate::{PostgresConfig, PostgresQueryTarget, PostgresSink};

/// The PostgreSQL kind, as registered with the CLI.
pub static KIND: PostgresKind = PostgresKind;

/// `target.kind = "postgres"`: PostgreSQL and TimescaleDB.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        name: "url",
        ty: "string",
        default: KeyDefault::Toml("\"postgres://postgres@127.0.0.1:5432/postgres\""),
        meaning: "the server (`postgres://` or `postgresql://`, sqlx's query keys)",
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
        default: KeyDefault::Toml("\"exactly_once\""),
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
        name: "layout",
        ty: "`wide` | `tags`",
        default: KeyDefault::Toml("\"wide\""),
        meaning: "one table per measurement, or TSBS's tags table",
    },
    KeyDoc {
        name: "method",
        ty: "`copy` | `insert` | `unnest`",
        default: KeyDefault::Toml("\"copy\""),
        meaning: "how rows are sent",
    },
    KeyDoc {
        name: "copy_format",
        ty: "`binary` | `text`",
        default: KeyDefault::Toml("\"binary\""),
        meaning: "COPY format",
    },
    KeyDoc {
        name: "hypertable",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "TimescaleDB hypertables",
    },
    KeyDoc {
        name: "chunk_time_interval",
        ty: "duration",
        default: KeyDefault::Said("TimescaleDB's"),
        meaning: "hypertable chunks",
    },
    KeyDoc {
        name: "synchronous_commit",
        ty: "`on` | `off` | `local` | `remote_write` | `remote_apply`",
        default: KeyDefault::Said("the server's"),
        meaning: "per connection",
    },
    KeyDoc {
        name: "create_index",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "TSBS's indexes",
    },
];

impl TargetKind for PostgresKind {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["postgres", "postgresql"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        KEYS
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let url = s.url_with_password(s.url(DEFAULT_URL)?, &["postgres://", "postgresql://"])?;
        let url = s.sql_url_with_tls(url, SqlFamily::Postgres)?;
        let mut cfg = PostgresConfig::new(url);
        cfg.layout = s.word("layout")?.unwrap_or_default();
        cfg.method = s.word("method")?.unwrap_or_default();
        cfg.copy_format = s.word("copy_format")?.unwrap_or_default();
        cfg.hypertable = s.flag("hypertable", false)?;
        cfg.chunk_time_interval = s.duration("chunk_time_interval", Duration::from_micros(1))?;
        cfg.synchronous_commit = s.word("synchronous_commit")?;
        cfg.drop_existing = s.flag("drop_existing", false)?;
        cfg.create_index = s.flag("create_index", false)?;
        if let Some(d) = s.duration("connect_timeout", Duration::from_millis(1))? {
            cfg.connect_timeout = d;
        }
        cfg.delivery = s.delivery(Delivery::ExactlyOnce)?;
        // Each run gets a fresh ledger id when its sink is made (`Target::write`).
        cfg.run_id = 0;
        cfg.check().map_err(|e| s.error(e.key, e.message))?;
        Ok(Box::new(cfg))
    }
}

impl Target for PostgresConfig {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn clone_box(&self) -> Box<dyn Target> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn Target) -> bool {
        same(self, other)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "postgres", "url": self.url, "layout": self.layout.as_str(),
            "method": self.method.as_str(), "copy_format": self.copy_format.as_str(),
            "hypertable": self.hypertable,
            "chunk_time_interval": self
                .chunk_time_interval
                .map(|d| humantime::format_duration(d).to_string()),
            "synchronous_commit": self.synchronous_commit.map(|v| v.as_str()),
            "drop_existing": self.drop_existing,
            "create_index": self.create_index,
            "connect_timeout": humantime::format_duration(self.connect_timeout).to_string(),
            "delivery": self.delivery.as_str(),
        })
    }

    fn url(&self) -> Option<&str> {
        Some(self.url.shown())
    }

    /// As sqlx (and libpq) connect: a `host=` parameter before the URL's host, else
    /// `PGHOST`; the URL's port, else `PGPORT`, else 5432. `None` for a Unix socket (a
    /// host that is a directory).
    fn address(&self) -> Option<HostPort> {
        let url = self.url.shown();
        let parsed = url::Url::parse(url).ok()?;
        let param = parsed
            .query_pairs()
            .find(|(k, _)| k == "host")
            .map(|(_, v)| v.into_owned());
        let host = param
            .or_else(|| {
                parsed
                    .host_str()
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
            })
            .or_else(|| std::env::var("PGHOST").ok())
            .filter(|h| !h.is_empty() && !h.starts_with('/'))?;
        let port = parsed.port().unwrap_or_else(|| {
            std::env::var("PGPORT")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(5432)
        });
        Some(HostPort {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        })
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
        Box::pin(async move {
            let mut cfg = self.clone();
            cfg.run_id = run.run_id;
            cfg.connections = (run.load.workers as u64).saturating_mul(run.load.in_flight as u64);
            let sink = PostgresSink::new(cfg).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::PostgresSql {
            layout: self.layout,
            time_bucket,
        }))
    }

    fn takes_time_bucket(&self) -> bool {
        true
    }

    fn oltp_dialect(&self) -> Option<tsload_oltp::Dialect> {
        Some(tsload_oltp::Dialect::Postgres)
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let t = PostgresQueryTarget::new(self).map_err(EngineError::Prepare)?;
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

    #[test]
    fn an_empty_section_gets_the_documented_defaults() {
        let t = KIND.parse(&section(&[])).unwrap();
        let v = t.settings();
        assert_eq!(v["url"], DEFAULT_URL);
        assert_eq!(v["layout"], "wide");
        assert_eq!(v["method"], "copy");
        assert_eq!(v["copy_format"], "binary");
        assert_eq!(v["connect_timeout"], "10s");
        assert!(v["synchronous_commit"].is_null());
        assert!(t.has_ledger());
        for key in KEYS {
            let KeyDefault::Toml(text) = key.default else {
                continue;
            };
            let value = toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
            let with = KIND.parse(&section(&[(key.name, value)])).unwrap();
            assert!(with.eq_dyn(t.as_ref()), "{}: {with:?} vs {t:?}", key.name);
        }
    }

    #[test]
    fn each_key_refuses_a_bad_value_naming_itself() {
        for (key, value, says) in [
            ("layout", toml::Value::from("tall"), "allowed: wide, tags"),
            ("method", "bulk".into(), "allowed: copy, insert, unnest"),
            ("copy_format", "csv".into(), "\"csv\" is not allowed"),
            (
                "synchronous_commit",
                "off; DROP TABLE x".into(),
                "remote_apply",
            ),
            ("chunk_time_interval", "10ns".into(), "at least 1us"),
            ("connect_timeout", "soon".into(), "not a duration"),
            ("hypertable", "yes".into(), "true or false"),
            (
                "delivery",
                "twice".into(),
                "allowed: exactly_once, at_least_once",
            ),
            (
                "url",
                "mysql://root@h/db".into(),
                "must start with postgres://",
            ),
            (
                "url",
                "postgres://u@h:notaport/db".into(),
                "invalid PostgreSQL URL",
            ),
        ] {
            let e = KIND.parse(&section(&[(key, value)])).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"), "{e:?}");
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
        let e = KIND
            .parse(&section(&[
                ("url", "postgres://h/db".into()),
                ("password", "pw".into()),
            ]))
            .unwrap_err();
        assert_eq!(e.key, "target.url");
        assert!(e.message.contains("needs a user name"), "{}", e.message);
    }

    #[test]
    fn a_password_goes_into_the_url_percent_encoded() {
        let t = KIND
            .parse(&section(&[
                ("url", "postgres://u@h/db".into()),
                ("password", "p@ss/w:rd".into()),
            ]))
            .unwrap();
        // Shown masked; the driver's URL holds it.
        assert_eq!(t.url(), Some("postgres://u:***@h/db"));
        assert_eq!(t.settings()["url"], "postgres://u:***@h/db");
        let AppProbe::Sql { url } = t.app_probe() else {
            panic!("a SQL probe")
        };
        assert_eq!(url.expose(), "postgres://u:p%40ss%2Fw%3Ard@h/db");
        // Moved to the proxy's address, it keeps the password.
        let mut moved = t.clone_box();
        moved.set_url("postgres://u:***@127.0.0.1:40000/db".into());
        let AppProbe::Sql { url } = moved.app_probe() else {
            panic!("a SQL probe")
        };
        assert_eq!(
            url.expose(),
            "postgres://u:p%40ss%2Fw%3Ard@127.0.0.1:40000/db"
        );
    }
}
