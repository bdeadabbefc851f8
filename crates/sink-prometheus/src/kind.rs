//! `target.kind = "prometheus"`: remote write into Prometheus, VictoriaMetrics and the
//! other receivers: its keys, the pure parse of its section into a [`PrometheusConfig`],
//! and the runs it serves (writes, and TSBS queries in PromQL).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_redact::Secret;
use tsload_target::{
    AppProbe, AtLeast, HostPort, HttpEndpoint, HttpUrl, KeyDoc, KeyError, Keys, QueryRun, Section,
    Target, TargetKind, TlsKeys, WriteRun,
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

tsload_target::keys! {
    /// `[target]` of `kind = "prometheus"`, as written.
    pub struct PrometheusKeys {
        /// the remote-write endpoint (Prometheus and VictoriaMetrics: `/api/v1/write`;
        /// Mimir: `/api/v1/push`)
        url: HttpUrl = HttpUrl::of(DEFAULT_URL);
        /// where PromQL queries and the server's `/metrics` are read
        query_url: HttpUrl, "the `url`'s scheme, host and port";
        /// basic auth user
        user: String;
        /// basic auth password, kept out of reports
        password: Secret;
        /// one request
        timeout: AtLeast<1000> = AtLeast(DEFAULT_TIMEOUT);
        ..tls: TlsKeys;
    }
}

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
        PrometheusKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = PrometheusKeys::read(s)?;
        let url = keys.url.0.clone();
        let query_url = keys.query_url.as_ref().map(|q| q.0.clone());
        let tls = keys.tls.options(
            s,
            url.starts_with("https://")
                || query_url
                    .as_deref()
                    .is_some_and(|q| q.starts_with("https://")),
        )?;
        let cfg = PrometheusConfig {
            url: url.into(),
            query_url,
            user: keys.user.clone(),
            password: keys.password.clone(),
            timeout: keys.timeout.0,
            tls,
            connect_to: None,
        };
        Ok(Box::new(PrometheusTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind prometheus: the sink's configuration and the keys it came
/// from.
#[derive(Debug, Clone)]
pub struct PrometheusTarget {
    pub cfg: PrometheusConfig,
    keys: PrometheusKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for PrometheusTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
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

impl Target for PrometheusTarget {
    fn kind(&self) -> &'static str {
        "prometheus"
    }

    fn settings(&self) -> serde_json::Value {
        let mut v = tsload_target::settings_of(&KIND, &self.keys, Some(self.cfg.url.shown()));
        v["query_url"] = tsload_redact::url(&self.cfg.base_url()).into();
        v
    }

    fn url(&self) -> Option<&str> {
        Some(self.cfg.url.shown())
    }

    fn address(&self) -> Option<HostPort> {
        HostPort::of_url(self.cfg.url.shown(), None)
    }

    fn set_url(&mut self, url: String) {
        self.cfg.url = self.cfg.url.with_shown(&url);
    }

    fn connect_via(&mut self, url: String, addr: std::net::SocketAddr) -> bool {
        self.cfg.url = self.cfg.url.with_shown(&url);
        self.cfg.connect_to = Some(addr);
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
            url: self.cfg.base_url(),
            tls: self.cfg.tls.clone(),
            connect_to: if self.cfg.query_url.is_none() {
                self.cfg.connect_to
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
            let sink = PrometheusSink::new(self.cfg.clone()).map_err(EngineError::Prepare)?;
            run.into_engine(sink).await
        })
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for PrometheusTarget {
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
            let target = self.cfg.reader().map_err(EngineError::Prepare)?;
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
        for key in PrometheusKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
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
            t.reads().unwrap().tsbs_dialect(None, false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::PROMETHEUS
            ))
        );
        assert_eq!(
            t.reads().unwrap().tsbs_dialect(Some("metricsql"), false),
            Ok(tsload_query::Dialect::new(
                tsload_query::render::PromQl::METRICSQL
            ))
        );
        assert!(t.reads().unwrap().tsbs_dialect(Some("sql"), false).is_err());
    }
}
