//! `target.kind = "postgres"`: its keys, the pure parse of its section into a
//! [`PostgresConfig`], and the runs it serves (the write sink, the read target).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::Delivery;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::sql_tls::SqlFamily;
use tsload_target::{
    AppProbe, AtLeast, HostPort, KeyDoc, KeyError, Keys, QueryRun, Section, Target, TargetKind,
    TlsKeys, Url, WriteRun,
};

use crate::{
    CopyFormat, InsertMethod, Layout, PostgresConfig, PostgresQueryTarget, PostgresSink,
    SynchronousCommit,
};

/// The PostgreSQL kind, as registered with the CLI.
pub static KIND: PostgresKind = PostgresKind;

/// `target.kind = "postgres"`: PostgreSQL and TimescaleDB.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// `target.connect_timeout` when unset.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

tsload_target::keys! {
    /// `[target]` of `kind = "postgres"`, as written.
    pub struct PostgresKeys {
        /// the server (`postgres://` or `postgresql://`, sqlx's query keys)
        url: Url = Url::of(DEFAULT_URL);
        /// kept out of reports
        password: Secret;
        /// the ledger on or off
        delivery: Delivery = Delivery::ExactlyOnce;
        /// drop tsload's tables first (asks on another host)
        drop_existing: bool = false;
        /// connecting
        connect_timeout: AtLeast<1000> = AtLeast(DEFAULT_CONNECT_TIMEOUT);
        /// one table per measurement, or TSBS's tags table
        layout: Layout = Layout::Wide;
        /// how rows are sent
        method: InsertMethod = InsertMethod::Copy;
        /// COPY format
        copy_format: CopyFormat = CopyFormat::Binary;
        /// TimescaleDB hypertables
        hypertable: bool = false;
        /// hypertable chunks
        chunk_time_interval: AtLeast<1>, "TimescaleDB's";
        /// per connection
        synchronous_commit: SynchronousCommit, "the server's";
        /// TSBS's indexes
        create_index: bool = false;
        ..tls: TlsKeys;
    }
}

impl TargetKind for PostgresKind {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["postgres", "postgresql"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        PostgresKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = PostgresKeys::read(s)?;
        let url = s.url_with_password(
            &keys.url.0,
            keys.password.as_ref(),
            &["postgres://", "postgresql://"],
        )?;
        let url = keys.tls.sql_url(s, url, SqlFamily::Postgres)?;
        let mut cfg = PostgresConfig::new(url);
        cfg.layout = keys.layout;
        cfg.method = keys.method;
        cfg.copy_format = keys.copy_format;
        cfg.hypertable = keys.hypertable;
        cfg.chunk_time_interval = keys.chunk_time_interval.map(|d| d.0);
        cfg.synchronous_commit = keys.synchronous_commit;
        cfg.drop_existing = keys.drop_existing;
        cfg.create_index = keys.create_index;
        cfg.connect_timeout = keys.connect_timeout.0;
        cfg.delivery = keys.delivery;
        // Each run gets a fresh ledger id when its sink is made (`Target::write`).
        cfg.run_id = 0;
        cfg.check().map_err(|e| s.error(e.key, e.message))?;
        Ok(Box::new(PostgresTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind postgres: the sink's configuration and the keys it came
/// from.
#[derive(Debug, Clone)]
pub struct PostgresTarget {
    pub cfg: PostgresConfig,
    keys: PostgresKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for PostgresTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for PostgresTarget {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn settings(&self) -> serde_json::Value {
        tsload_target::settings_of(&KIND, &self.keys, Some(self.cfg.url.shown()))
    }

    fn url(&self) -> Option<&str> {
        Some(self.cfg.url.shown())
    }

    /// As sqlx (and libpq) connect: a `host=` parameter before the URL's host, else
    /// `PGHOST`; the URL's port, else `PGPORT`, else 5432. `None` for a Unix socket (a
    /// host that is a directory).
    fn address(&self) -> Option<HostPort> {
        let url = self.cfg.url.shown();
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
        Box::pin(async move {
            let mut cfg = self.cfg.clone();
            cfg.run_id = run.run_id;
            cfg.connections = (run.load.workers as u64).saturating_mul(run.load.in_flight as u64);
            let sink = PostgresSink::new(cfg).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for PostgresTarget {
    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::PostgresSql {
            layout: self.cfg.layout,
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
            let t = PostgresQueryTarget::new(&self.cfg).map_err(EngineError::Prepare)?;
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
        for key in PostgresKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
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
        let mut moved = t.clone();
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
