//! `target.kind = "influx"`: line protocol over HTTP (InfluxDB 1.x with `api = "v1"`,
//! 2.x/3.x with `"v2"`, and the servers that speak either: VictoriaMetrics, QuestDB, ...):
//! its keys, the pure parse of its section into an [`InfluxConfig`], and the runs it
//! serves.

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::{
    AppProbe, AtLeast, HostPort, HttpEndpoint, HttpUrl, KeyDoc, KeyError, KeySets, Keys, QueryRun,
    Section, Target, TargetKind, TlsKeys, Word, WriteRun,
};

use tsload_http::QueryApi;

use crate::{Api, InfluxConfig, InfluxSink, Precision};

/// The line-protocol kind, as registered with the CLI.
pub static KIND: InfluxKind = InfluxKind;

/// `target.kind = "influx"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct InfluxKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8086";

/// `target.timeout` when unset.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

tsload_target::keys! {
    /// `[target]` of `kind = "influx"`, as written.
    pub struct InfluxKeys {
        /// the server's base URL (`http://` or `https://`)
        url: HttpUrl = HttpUrl::of(DEFAULT_URL);
        /// `/write?db=` or `/api/v2/write`
        api: ApiVersion = ApiVersion::V1;
        /// basic auth password, kept out of reports
        password: Secret;
        /// database
        db: String = "benchmark".into();
        /// retention policy
        rp: String;
        /// basic auth user
        user: String;
        /// create the database first
        create_database: bool = true;
        /// organisation
        org: String = "tsload".into();
        /// bucket
        bucket: String = "benchmark".into();
        /// API token
        token: Secret;
        /// timestamp unit
        precision: PrecisionWord = PrecisionWord(Precision::Ns);
        /// gzip request bodies
        gzip: bool = false;
        /// one request
        timeout: AtLeast<1000> = AtLeast(DEFAULT_TIMEOUT);
        ..tls: TlsKeys;
    }
}

/// `api`: which write API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    V1,
    V2,
}

impl Word for ApiVersion {
    const WORDS: &'static [(&'static str, Self)] =
        &[("v1", ApiVersion::V1), ("v2", ApiVersion::V2)];
}

/// `precision`'s words ([`Precision`] lives in tsload-lineproto, which knows no scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrecisionWord(Precision);

impl Word for PrecisionWord {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("ns", PrecisionWord(Precision::Ns)),
        ("us", PrecisionWord(Precision::Us)),
        ("ms", PrecisionWord(Precision::Ms)),
        ("s", PrecisionWord(Precision::S)),
    ];
}

/// `query.dialect`'s words and the query APIs they choose, the default first.
const QUERY_APIS: &[(&str, QueryApi)] = &[
    ("influxql", QueryApi::InfluxQl),
    ("promql", QueryApi::PromQl),
    ("questdb", QueryApi::QuestDb),
];

/// `query.dialect`'s words, the default first.
const QUERY_LANGUAGES: &[&str] = &["influxql", "promql", "questdb"];

impl TargetKind for InfluxKind {
    fn name(&self) -> &'static str {
        "influx"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["http", "https"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        InfluxKeys::docs()
    }

    fn key_sets(&self) -> Option<KeySets> {
        Some(KeySets {
            chooser: "api",
            sets: &[
                ("v1", &["password", "db", "rp", "user", "create_database"]),
                ("v2", &["org", "bucket", "token"]),
            ],
        })
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = InfluxKeys::read(s)?;
        let url = keys.url.0.clone();
        let api = match keys.api {
            ApiVersion::V1 => Api::V1 {
                db: keys.db.clone(),
                rp: keys.rp.clone(),
                user: keys.user.clone(),
                password: keys.password.clone(),
            },
            ApiVersion::V2 => Api::V2 {
                org: keys.org.clone(),
                bucket: keys.bucket.clone(),
                token: keys.token.clone(),
            },
        };
        let cfg = InfluxConfig {
            precision: keys.precision.0,
            gzip: keys.gzip,
            create_database: keys.create_database,
            timeout: keys.timeout.0,
            tls: keys.tls.options(s, url.starts_with("https://"))?,
            connect_to: None,
            api,
            url,
        };
        Ok(Box::new(InfluxTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind influx: the sink's configuration and the keys it came from.
#[derive(Debug, Clone)]
pub struct InfluxTarget {
    pub cfg: InfluxConfig,
    keys: InfluxKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for InfluxTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for InfluxTarget {
    fn kind(&self) -> &'static str {
        "influx"
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

    fn flush(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            if let AppProbe::Http(endpoint) = self.app_probe() {
                tsload_http::force_flush(&endpoint.url, &endpoint.tls, endpoint.connect_to).await;
            }
        })
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
            let sink = InfluxSink::new(self.cfg.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for InfluxTarget {
    fn query_languages(&self) -> &'static [&'static str] {
        QUERY_LANGUAGES
    }

    fn tsbs_dialect(
        &self,
        language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(match query_api(language)? {
            QueryApi::InfluxQl => tsload_query::Dialect::new(crate::influxql::InfluxQl),
            QueryApi::PromQl => tsload_query::Dialect::new(tsload_query::render::PromQl::METRICSQL),
            QueryApi::QuestDb => tsload_query::Dialect::new(crate::questdb::QuestDbSql),
        })
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let api = query_api(run.language).map_err(|e| {
                EngineError::Prepare(tsload_core::SinkError::new(
                    tsload_core::ErrorKind::Schema,
                    e,
                ))
            })?;
            let sink = InfluxSink::new(self.cfg.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink.reader(api)).await
        })
    }
}

/// The query API for `query.dialect` (InfluxQL when unset).
fn query_api(language: Option<&str>) -> Result<QueryApi, String> {
    match language {
        None => Ok(QueryApi::InfluxQl),
        Some(word) => QUERY_APIS
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, api)| *api)
            .ok_or_else(|| {
                format!(
                    "query.dialect \"{word}\" is not allowed; allowed: {}",
                    QUERY_LANGUAGES.join(", ")
                )
            }),
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
        assert_eq!(v["api"], "v1");
        assert_eq!(v["db"], "benchmark");
        assert_eq!(v["precision"], "ns");
        assert_eq!(v["timeout"], "1m");
        assert_eq!(v["create_database"], true);
        for key in InfluxKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
                continue;
            };
            let value = toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
            let with = KIND.parse(&section(&[(key.name, value)])).unwrap();
            // org and bucket are read under api = "v2" only.
            if !["org", "bucket"].contains(&key.name) {
                assert!(with.eq_dyn(t.as_ref()), "{}: {with:?} vs {t:?}", key.name);
            }
        }
        let v2 = KIND
            .parse(&section(&[("api", "v2".into())]))
            .unwrap()
            .settings();
        assert_eq!(
            (v2["org"].as_str(), v2["bucket"].as_str()),
            (Some("tsload"), Some("benchmark"))
        );
    }

    #[test]
    fn each_key_refuses_a_bad_value_naming_itself() {
        for (key, value, says) in [
            ("api", toml::Value::from("v3"), "allowed: v1, v2"),
            ("precision", "h".into(), "allowed: ns, us, ms, s"),
            ("timeout", "soon".into(), "not a duration"),
            ("gzip", "yes".into(), "true or false"),
            ("url", "ftp://h".into(), "is not an HTTP URL"),
            ("insecure_skip_verify", true.into(), "does not ask for TLS"),
        ] {
            let e = KIND.parse(&section(&[(key, value)])).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"), "{e:?}");
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
        assert_eq!(
            KIND.parse(&section(&[("url", "HTTPS://h".into())]))
                .unwrap()
                .url(),
            Some("https://h")
        );
    }

    #[test]
    fn query_languages_map_to_their_dialects() {
        let t = KIND.parse(&section(&[])).unwrap();
        assert_eq!(t.reads().unwrap().query_languages()[0], "influxql");
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::influxql::InfluxQl))
        );
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(Some("promql"), false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::METRICSQL
            ))
        );
        assert!(t.reads().unwrap().tsbs_dialect(Some("sql"), false).is_err());
    }
}
