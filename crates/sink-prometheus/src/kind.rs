//! `target.kind = "prometheus"`: remote write into Prometheus, VictoriaMetrics and the
//! other receivers: its keys, the pure parse of its section into a [`PrometheusConfig`],
//! and the runs it serves (writes, and TSBS queries in PromQL).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_target::{
    AppProbe, HostPort, HttpEndpoint, KeyDefault, KeyDoc, KeyError, QueryRun, Section, Target,
    TargetKind, WriteRun, same,
};

use crate::{PrometheusConfig, PrometheusSink};

/// The remote-write kind, as registered with the CLI.
pub static KIND: PrometheusKind = PrometheusKind;

/// `target.kind = "prometheus"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrometheusKind;

/// `target.url` when unset: a local Prometheus' receiver.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9090/api/v1/write";

/// `target.timeout` when unset: Prometheus' own `remote_timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        name: "url",
        ty: "string",
        default: KeyDefault::Toml("\"http://127.0.0.1:9090/api/v1/write\""),
        meaning: "the remote-write endpoint (Prometheus and VictoriaMetrics: \
                  `/api/v1/write`; Mimir: `/api/v1/push`)",
    },
    KeyDoc {
        name: "query_url",
        ty: "string",
        default: KeyDefault::Said("the `url`'s scheme, host and port"),
        meaning: "where PromQL queries and the server's `/metrics` are read",
    },
    KeyDoc {
        name: "user",
        ty: "string",
        default: KeyDefault::Unset,
        meaning: "basic auth user",
    },
    KeyDoc {
        name: "password",
        ty: "string (`$NAME` reads the environment)",
        default: KeyDefault::Unset,
        meaning: "basic auth password, kept out of reports",
    },
    KeyDoc {
        name: "timeout",
        ty: "duration",
        default: KeyDefault::Toml("\"30s\""),
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

/// `query.dialect`'s words, the default first: standard PromQL (Prometheus, and every
/// receiver that answers PromQL), or VictoriaMetrics' MetricsQL.
const QUERY_LANGUAGES: &[&str] = &["promql", "metricsql"];

impl TargetKind for PrometheusKind {
    fn name(&self) -> &'static str {
        "prometheus"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["http", "https"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        KEYS
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let url = s
            .http_url("url", DEFAULT_URL)?
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        let query_url = s.http_url("query_url", "http://127.0.0.1:9090")?;
        let tls = s.tls(
            url.starts_with("https://")
                || query_url
                    .as_deref()
                    .is_some_and(|q| q.starts_with("https://")),
        )?;
        let cfg = PrometheusConfig {
            url: url.into(),
            query_url,
            user: s.text("user")?.map(str::to_string),
            password: s.secret("password")?,
            timeout: s
                .duration("timeout", Duration::from_millis(1))?
                .unwrap_or(DEFAULT_TIMEOUT),
            tls,
            connect_to: None,
        };
        Ok(Box::new(cfg))
    }
}

impl PrometheusConfig {
    /// The PromQL read target at the base URL, with the same credentials, trust and
    /// timeout.
    fn reader(&self) -> Result<tsload_http::HttpQueryTarget, tsload_core::SinkError> {
        let prepare =
            |e: String| tsload_core::SinkError::new(tsload_core::ErrorKind::Connection, e);
        let shown = self.base_url();
        let base = reqwest::Url::parse(&shown)
            .map_err(|e| prepare(format!("query URL \"{shown}\" is not a URL: {e}")))?;
        let tls = tsload_tls::client_config(&self.tls)
            .map_err(|e| prepare(format!("query URL \"{shown}\": {e}")))?;
        let endpoint = tsload_http::QueryEndpoint {
            base,
            database: None,
            tls,
            timeout: self.timeout,
            connect_to: self.connect_to.filter(|_| self.query_url.is_none()),
            auth: self.auth(),
        };
        Ok(tsload_http::HttpQueryTarget::new(
            endpoint,
            tsload_http::QueryApi::PromQl,
        ))
    }
}

impl Target for PrometheusConfig {
    fn kind(&self) -> &'static str {
        "prometheus"
    }

    fn clone_box(&self) -> Box<dyn Target> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn Target) -> bool {
        same(self, other)
    }

    fn settings(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "kind": "prometheus",
            "url": self.url,
            "query_url": self.base_url(),
            "timeout": humantime::format_duration(self.timeout).to_string(),
        });
        if let Some(user) = &self.user {
            v["user"] = serde_json::json!(user);
        }
        if self.password.is_some() {
            v["password"] = serde_json::json!("***");
        }
        tsload_target::add_tls_settings(&mut v, &self.tls);
        v
    }

    fn url(&self) -> Option<&str> {
        Some(self.url.shown())
    }

    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(self.url.shown(), None)
    }

    fn set_url(&mut self, url: String) {
        self.url = self.url.with_shown(&url);
    }

    fn connect_via(&mut self, url: String, addr: std::net::SocketAddr) -> bool {
        self.url = self.url.with_shown(&url);
        self.connect_to = Some(addr);
        true
    }

    /// VictoriaMetrics' `/internal/force_flush` (Prometheus has none: a 404, ignored).
    fn flush(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            if let AppProbe::Http(endpoint) = self.app_probe() {
                tsload_http::force_flush(&endpoint.url, &endpoint.tls, endpoint.connect_to).await;
            }
        })
    }

    fn app_probe(&self) -> AppProbe {
        AppProbe::Http(HttpEndpoint {
            url: self.base_url(),
            tls: self.tls.clone(),
            connect_to: if self.query_url.is_none() {
                self.connect_to
            } else {
                None
            },
        })
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(async move {
            let sink = PrometheusSink::new(self.clone()).map_err(EngineError::Prepare)?;
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
        match language.unwrap_or(QUERY_LANGUAGES[0]) {
            "promql" => Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::PROMETHEUS,
            )),
            "metricsql" => Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::METRICSQL,
            )),
            other => Err(format!(
                "query.dialect \"{other}\" is not allowed; allowed: {}",
                QUERY_LANGUAGES.join(", ")
            )),
        }
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let target = self.reader().map_err(EngineError::Prepare)?;
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
        assert_eq!(v["url"], DEFAULT_URL);
        assert_eq!(v["query_url"], "http://127.0.0.1:9090");
        assert_eq!(v["timeout"], "30s");
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
    fn bad_values_are_refused_by_key() {
        let e = KIND
            .parse(&section(&[("url", "ftp://h/x".into())]))
            .unwrap_err();
        assert_eq!(e.key, "target.url");
        assert!(e.message.contains("not an HTTP URL"), "{e}");
        let e = KIND
            .parse(&section(&[("query_url", "h:9090".into())]))
            .unwrap_err();
        assert_eq!(e.key, "target.query_url");
        let e = KIND
            .parse(&section(&[("timeout", "soon".into())]))
            .unwrap_err();
        assert_eq!(e.key, "target.timeout");
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
        assert!(shown.contains("\"user\":\"u\""), "{shown}");
    }

    #[test]
    fn promql_is_standard_and_metricsql_is_victoria_metrics() {
        let t = KIND.parse(&section(&[])).unwrap();
        assert_eq!(
            t.tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::PROMETHEUS
            ))
        );
        assert_eq!(
            t.tsbs_dialect(Some("metricsql"), false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::METRICSQL
            ))
        );
        assert!(t.tsbs_dialect(Some("sql"), false).is_err());
    }
}
