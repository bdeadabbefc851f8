//! `target.kind = "clickhouse"`: ClickHouse over its HTTP interface: its keys, the pure
//! parse of its section into a [`ClickHouseConfig`], and the runs it serves (writes, and
//! TSBS queries in ClickHouse's SQL).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::{
    AppProbe, AtLeast, HostPort, HttpEndpoint, HttpUrl, KeyDoc, KeyError, Keys, NonEmpty, QueryRun,
    Section, Target, TargetKind, TlsKeys, WriteRun,
};

use crate::{ClickHouseConfig, ClickHouseQueryTarget, ClickHouseSink};

/// The ClickHouse kind, as registered with the CLI.
pub static KIND: ClickHouseKind = ClickHouseKind;

/// `target.kind = "clickhouse"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClickHouseKind;

/// `target.url` when unset: a local server's HTTP interface.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8123";

/// `target.database` when unset.
pub const DEFAULT_DATABASE: &str = "tsload";

/// `target.timeout` when unset.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

tsload_target::keys! {
    /// `[target]` of `kind = "clickhouse"`, as written.
    pub struct ClickHouseKeys {
        /// the HTTP interface's base URL (`http://` or `https://`)
        url: HttpUrl = HttpUrl::of(DEFAULT_URL);
        /// the database of tsload's tables (one per measurement), created if missing
        database: NonEmpty = NonEmpty::of(DEFAULT_DATABASE);
        /// basic auth user
        // Unset: no credentials, which ClickHouse takes as its `default` user.
        user: String;
        /// basic auth password, kept out of reports
        password: Secret;
        /// drop tsload's tables first
        drop_existing: bool = false;
        /// one request
        timeout: AtLeast<1000> = AtLeast(DEFAULT_TIMEOUT);
        ..tls: TlsKeys;
    }
}

impl TargetKind for ClickHouseKind {
    fn name(&self) -> &'static str {
        "clickhouse"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["http", "https"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        ClickHouseKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = ClickHouseKeys::read(s)?;
        let url = keys.url.0.clone();
        let cfg = ClickHouseConfig {
            database: keys.database.0.clone(),
            user: keys.user.clone(),
            password: keys.password.clone(),
            drop_existing: keys.drop_existing,
            timeout: keys.timeout.0,
            tls: keys.tls.options(s, url.starts_with("https://"))?,
            connect_to: None,
            url,
        };
        Ok(Box::new(ClickHouseTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind clickhouse: the sink's configuration and the keys it came
/// from.
#[derive(Debug, Clone)]
pub struct ClickHouseTarget {
    pub cfg: ClickHouseConfig,
    keys: ClickHouseKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for ClickHouseTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for ClickHouseTarget {
    fn kind(&self) -> &'static str {
        "clickhouse"
    }

    fn settings(&self) -> serde_json::Value {
        tsload_target::settings_of(&KIND, &self.keys, Some(&self.cfg.url))
    }

    fn url(&self) -> Option<&str> {
        Some(&self.cfg.url)
    }

    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(&self.cfg.url, None)
    }

    fn set_url(&mut self, url: String) {
        self.cfg.url = url;
    }

    fn connect_via(&mut self, url: String, addr: std::net::SocketAddr) -> bool {
        self.cfg.url = url;
        self.cfg.connect_to = Some(addr);
        true
    }

    fn drop_existing(&self) -> Option<bool> {
        Some(self.cfg.drop_existing)
    }

    fn set_drop_existing(&mut self, on: bool) {
        self.cfg.drop_existing = on;
        self.keys.drop_existing = on;
    }

    fn app_probe(&self) -> AppProbe {
        AppProbe::Http(HttpEndpoint {
            url: self.cfg.url.clone(),
            tls: self.cfg.tls.clone(),
            connect_to: self.cfg.connect_to,
        })
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(async move {
            let sink = ClickHouseSink::new(self.cfg.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for ClickHouseTarget {
    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::ClickHouseSql))
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let target = ClickHouseQueryTarget::new(&self.cfg).map_err(EngineError::Prepare)?;
            run.into_engine(target).await
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
        assert_eq!(v["kind"], "clickhouse");
        assert_eq!(v["url"], DEFAULT_URL);
        assert_eq!(v["database"], "tsload");
        assert_eq!(v["drop_existing"], false);
        assert_eq!(v["timeout"], "1m");
        assert!(
            v.get("user").is_none() && v.get("password").is_none(),
            "{v}"
        );
        assert_eq!(t.drop_existing(), Some(false));
        for key in ClickHouseKeys::docs() {
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
            ("url", toml::Value::from("ftp://h"), "is not an HTTP URL"),
            ("url", "".into(), "must not be empty"),
            ("database", " ".into(), "must not be empty"),
            ("database", 5.into(), "allowed: a string"),
            ("user", true.into(), "allowed: a string"),
            ("drop_existing", "yes".into(), "true or false"),
            ("timeout", "soon".into(), "not a duration"),
            ("timeout", "0s".into(), "too short"),
            ("insecure_skip_verify", true.into(), "does not ask for TLS"),
            ("ca_file", "/no/such/ca.pem".into(), ""),
        ] {
            let e = KIND.parse(&section(&[(key, value)])).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"), "{e:?}");
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
        assert_eq!(
            KIND.parse(&section(&[("url", "HTTPS://h:8443".into())]))
                .unwrap()
                .url(),
            Some("https://h:8443")
        );
    }

    #[test]
    fn the_password_is_kept_out_of_the_settings() {
        let t = KIND
            .parse(&section(&[
                ("user", "u".into()),
                ("password", "pw-in-the-file".into()),
            ]))
            .unwrap();
        let shown = t.settings().to_string();
        assert!(!shown.contains("pw-in-the-file"), "{shown}");
        assert!(shown.contains("\"password\":\"***\""), "{shown}");
        assert!(shown.contains("\"user\":\"u\""), "{shown}");
        assert!(!format!("{t:?}").contains("pw-in-the-file"));
    }

    #[test]
    fn it_is_queried_in_clickhouse_sql_and_reached_over_http() {
        let mut t = KIND.parse(&section(&[])).unwrap();
        assert!(t.reads().unwrap().query_languages().is_empty());
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::render::ClickHouseSql))
        );
        assert!(t.reads().unwrap().oltp_dialect().is_none());
        assert!(matches!(t.app_probe(), AppProbe::Http(e) if e.url == DEFAULT_URL));
        let addr: std::net::SocketAddr = "127.0.0.1:9999".parse().unwrap();
        assert!(t.connect_via("http://h:9999".into(), addr));
        assert_eq!(t.url(), Some("http://h:9999"));
        t.set_drop_existing(true);
        assert_eq!(t.drop_existing(), Some(true));
    }
}
