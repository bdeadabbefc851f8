//! `target.kind = "influx"`: line protocol over HTTP (InfluxDB 1.x with `api = "v1"`,
//! 2.x/3.x with `"v2"`, and the servers that speak either: VictoriaMetrics, QuestDB, ...):
//! its keys, the pure parse of its section into an [`InfluxConfig`], and the runs it
//! serves.

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_target::{
    AppProbe, HostPort, HttpEndpoint, KeyDefault, KeyDoc, KeyError, KeySets, QueryRun, Section,
    Target, TargetKind, Word, WriteRun, same,
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

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        name: "url",
        ty: "string",
        default: KeyDefault::Toml("\"http://127.0.0.1:8086\""),
        meaning: "the server's base URL (`http://` or `https://`)",
    },
    KeyDoc {
        name: "api",
        ty: "`v1` | `v2`",
        default: KeyDefault::Toml("\"v1\""),
        meaning: "`/write?db=` or `/api/v2/write`",
    },
    KeyDoc {
        name: "password",
        ty: "string (`$NAME` reads the environment)",
        default: KeyDefault::Unset,
        meaning: "basic auth password, kept out of reports",
    },
    KeyDoc {
        name: "db",
        ty: "string",
        default: KeyDefault::Toml("\"benchmark\""),
        meaning: "database",
    },
    KeyDoc {
        name: "rp",
        ty: "string",
        default: KeyDefault::Unset,
        meaning: "retention policy",
    },
    KeyDoc {
        name: "user",
        ty: "string",
        default: KeyDefault::Unset,
        meaning: "basic auth user",
    },
    KeyDoc {
        name: "create_database",
        ty: "bool",
        default: KeyDefault::Toml("true"),
        meaning: "create the database first",
    },
    KeyDoc {
        name: "org",
        ty: "string",
        default: KeyDefault::Toml("\"tsload\""),
        meaning: "organisation",
    },
    KeyDoc {
        name: "bucket",
        ty: "string",
        default: KeyDefault::Toml("\"benchmark\""),
        meaning: "bucket",
    },
    KeyDoc {
        name: "token",
        ty: "string (`$NAME`)",
        default: KeyDefault::Unset,
        meaning: "API token",
    },
    KeyDoc {
        name: "precision",
        ty: "`ns` | `us` | `ms` | `s`",
        default: KeyDefault::Toml("\"ns\""),
        meaning: "timestamp unit",
    },
    KeyDoc {
        name: "gzip",
        ty: "bool",
        default: KeyDefault::Toml("false"),
        meaning: "gzip request bodies",
    },
    KeyDoc {
        name: "timeout",
        ty: "duration",
        default: KeyDefault::Toml("\"1m\""),
        meaning: "one request",
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
];

/// `api`: which write API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApiVersion {
    V1,
    V2,
}

impl Word for ApiVersion {
    const WORDS: &'static [(&'static str, Self)] =
        &[("v1", ApiVersion::V1), ("v2", ApiVersion::V2)];
}

/// `precision`'s words ([`Precision`] lives in tsload-lineproto, which knows no scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PrecisionWord(Precision);

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
        KEYS
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
        let url = s
            .http_url("url", DEFAULT_URL)?
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        let text = |key: &str| -> Result<Option<String>, KeyError> {
            Ok(s.text(key)?.map(str::to_string))
        };
        let api = match s.word("api")?.unwrap_or(ApiVersion::V1) {
            ApiVersion::V1 => Api::V1 {
                db: text("db")?.unwrap_or_else(|| "benchmark".into()),
                rp: text("rp")?,
                user: text("user")?,
                password: s.secret("password")?,
            },
            ApiVersion::V2 => Api::V2 {
                org: text("org")?.unwrap_or_else(|| "tsload".into()),
                bucket: text("bucket")?.unwrap_or_else(|| "benchmark".into()),
                token: s.secret("token")?,
            },
        };
        let tls = s.tls(url.starts_with("https://"))?;
        let cfg = InfluxConfig {
            precision: s
                .word::<PrecisionWord>("precision")?
                .map_or(Precision::Ns, |p| p.0),
            gzip: s.flag("gzip", false)?,
            create_database: s.flag("create_database", true)?,
            timeout: s
                .duration("timeout", Duration::from_millis(1))?
                .unwrap_or(DEFAULT_TIMEOUT),
            tls,
            connect_to: None,
            api,
            url,
        };
        Ok(Box::new(cfg))
    }
}

impl Target for InfluxConfig {
    fn kind(&self) -> &'static str {
        "influx"
    }

    fn clone_box(&self) -> Box<dyn Target> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn Target) -> bool {
        same(self, other)
    }

    fn settings(&self) -> serde_json::Value {
        let api = match self.api {
            Api::V1 { .. } => "v1",
            Api::V2 { .. } => "v2",
        };
        let mut v = serde_json::json!({
            "kind": "influx", "url": self.url, "api": api,
            "precision": self.precision.as_str(), "gzip": self.gzip,
            "timeout": humantime::format_duration(self.timeout).to_string(),
        });
        tsload_target::add_tls_settings(&mut v, &self.tls);
        match &self.api {
            Api::V2 { org, bucket, token } => {
                v["org"] = serde_json::json!(org);
                v["bucket"] = serde_json::json!(bucket);
                v["token"] = serde_json::json!(token);
            }
            Api::V1 {
                db,
                rp,
                user,
                password,
            } => {
                v["db"] = serde_json::json!(db);
                v["rp"] = serde_json::json!(rp);
                v["user"] = serde_json::json!(user);
                v["password"] = serde_json::json!(password);
                v["create_database"] = serde_json::json!(self.create_database);
            }
        }
        v
    }

    fn url(&self) -> Option<&str> {
        Some(&self.url)
    }

    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(&self.url, None)
    }

    fn set_url(&mut self, url: String) {
        self.url = url;
    }

    fn connect_via(&mut self, url: String, addr: std::net::SocketAddr) -> bool {
        self.url = url;
        self.connect_to = Some(addr);
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
            url: self.url.clone(),
            tls: self.tls.clone(),
            connect_to: self.connect_to,
        })
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(async move {
            let sink = InfluxSink::new(self.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

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
            let sink = InfluxSink::new(self.clone()).map_err(EngineError::Prepare)?;
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
        for key in KEYS {
            let KeyDefault::Toml(text) = key.default else {
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
        assert_eq!(t.query_languages()[0], "influxql");
        assert_eq!(
            t.tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(crate::influxql::InfluxQl))
        );
        assert_eq!(
            t.tsbs_dialect(Some("promql"), false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::METRICSQL
            ))
        );
        assert!(t.tsbs_dialect(Some("sql"), false).is_err());
    }
}
