//! tsload target: Prometheus remote write 1.0. Each batch is one `POST` of a
//! snappy-compressed protobuf `WriteRequest` ([`encode`]) to the receiver's write URL
//! (Prometheus with `--web.enable-remote-write-receiver`, VictoriaMetrics, Mimir, Cortex,
//! Thanos receive), with the protocol's headers. Answers are classified as the other HTTP
//! targets classify them: 429 and 5xx are retried, other 4xx refuse the batch (Prometheus
//! refuses a whole request that holds one out-of-order, duplicate or too old sample).
//!
//! What the server stored is read from its own counters ([`Sink::tally`]): Prometheus'
//! `prometheus_tsdb_head_samples_appended_total` (every sample its head took in, scrapes
//! included) and the samples it refused as out of order, out of bounds or too old;
//! VictoriaMetrics' `vm_rows_inserted_total{type="promremotewrite"}` less what it ignored.
//! PromQL reads go through the line-protocol crate's HTTP read target.
//!
//! Prometheus takes each series' samples in time order only, and none older than an hour
//! before the newest sample of its head (unless `storage.tsdb.out_of_order_time_window` is
//! set); a refused request is refused whole. tsload's workers each own a share of the
//! devices and walk time at their own pace, so against Prometheus as installed a run uses
//! one worker, or sets that window. VictoriaMetrics takes any order, and keeps a resent
//! sample twice unless started with `-dedup.minScrapeInterval`.

pub mod encode;
mod kind;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use tsload_core::stored::ServerTally;
use tsload_core::{Batch, BatchId, ErrorKind, Schema, Sink, SinkConn, SinkError, WriteAck};
use tsload_http::{answer_error, classify_request_error, status_error};
use tsload_redact::{Secret, SecretUrl};

pub use encode::{LabelClash, RemoteWriteEncoder};
pub use kind::{KIND, PrometheusKind};

/// The protocol version header's value: remote write 1.0.
pub const PROTOCOL_VERSION: &str = "0.1.0";

/// How long after a write VictoriaMetrics' `/metrics` counts it at the latest (it serves
/// the figures of a scrape up to a second old): the most
/// [`tsload_http::read_after_refresh`] waits.
const VM_METRICS_REFRESH: Duration = Duration::from_millis(1_200);

/// Settings of the remote-write target.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusConfig {
    /// The remote-write endpoint, e.g. `http://127.0.0.1:9090/api/v1/write`, shown with
    /// any password or secret query value as `***`.
    pub url: SecretUrl,
    /// Where PromQL queries and the server's `/metrics` are read: the server's base URL.
    /// `None`: the scheme, host and port of `url`.
    pub query_url: Option<String>,
    /// Basic auth user and password (a secret).
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// Limit for one request, connect to last byte of the answer.
    pub timeout: Duration,
    pub tls: tsload_tls::TlsOptions,
    /// Connect here instead of resolving the URL's host (the `[network]` proxy in front of
    /// an https server named by host name).
    pub connect_to: Option<std::net::SocketAddr>,
}

impl PrometheusConfig {
    /// Writes to `url` with no credentials, a 30 s timeout and the default TLS trust.
    pub fn new(url: impl Into<SecretUrl>) -> Self {
        PrometheusConfig {
            url: url.into(),
            query_url: None,
            user: None,
            password: None,
            timeout: kind::DEFAULT_TIMEOUT,
            tls: tsload_tls::TlsOptions::default(),
            connect_to: None,
        }
    }

    /// The server's base URL: `query_url`, or `url`'s scheme, host and port.
    pub fn base_url(&self) -> String {
        if let Some(q) = &self.query_url {
            return q.trim_end_matches('/').to_string();
        }
        match Url::parse(self.url.shown()) {
            Ok(u) => u.origin().ascii_serialization(),
            Err(_) => self.url.shown().to_string(),
        }
    }

    /// The `Authorization` header of the credentials, if any.
    pub(crate) fn auth(&self) -> Option<Secret> {
        let user = self.user.as_deref()?;
        let none = Secret::new("");
        Some(tsload_redact::basic_auth_header(
            user,
            self.password.as_ref().unwrap_or(&none),
        ))
    }
}

/// The remote-write target.
pub struct PrometheusSink {
    cfg: PrometheusConfig,
    url: Url,
    /// The `Authorization` header.
    auth: Option<Secret>,
    tls: rustls::ClientConfig,
}

impl fmt::Debug for PrometheusSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusSink")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

fn config_error(message: String) -> SinkError {
    SinkError::new(ErrorKind::Connection, message)
}

impl PrometheusSink {
    /// Checks the URL and the TLS settings; connects to nothing yet.
    pub fn new(cfg: PrometheusConfig) -> Result<Self, SinkError> {
        let url = Url::parse(cfg.url.expose())
            .map_err(|e| config_error(format!("target url \"{}\" is not a URL: {e}", cfg.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(config_error(format!(
                "target url \"{}\" is not an HTTP URL",
                cfg.url
            )));
        }
        let tls = tsload_tls::client_config(&cfg.tls)
            .map_err(|e| SinkError::new(ErrorKind::Permission, e.to_string()))?;
        Ok(PrometheusSink {
            auth: cfg.auth(),
            cfg,
            url,
            tls,
        })
    }

    fn client(&self) -> Result<reqwest::Client, SinkError> {
        let mut builder = tsload_http::client_builder(self.tls.clone())
            .timeout(self.cfg.timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1);
        if let Some(addr) = self.cfg.connect_to
            && let Some(host) = self.url.host_str()
        {
            builder = builder.resolve(host, addr);
        }
        builder
            .build()
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("HTTP client: {e}")))
    }

    /// GET `path` under the base URL, with the credentials; its body as text.
    async fn get_text(&self, client: &reqwest::Client, path: &str) -> Result<String, SinkError> {
        let url = format!("{}/{path}", self.cfg.base_url());
        let mut request = client.get(&url);
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request
            .send()
            .await
            .map_err(|e| classify_request_error(&e.without_url(), &url))?;
        let status = response.status();
        if !status.is_success() {
            let text = tsload_http::error_text(response).await;
            return Err(status_error(status, &text, None));
        }
        let body = tsload_http::read_body(response, tsload_http::QUERY_BODY_CAP, false)
            .await
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("{url}: {e}")))?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

impl Sink for PrometheusSink {
    type Conn = PrometheusConn;

    /// Remote write creates series as it goes: nothing to prepare but the check that
    /// every table's columns make distinct labels.
    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        RemoteWriteEncoder::new(schema.clone())
            .map(|_| ())
            .map_err(|e| SinkError::new(ErrorKind::Schema, e.to_string()))
    }

    async fn connect(
        &self,
        schema: &Arc<Schema>,
        _worker: usize,
    ) -> Result<PrometheusConn, SinkError> {
        Ok(PrometheusConn {
            client: self.client()?,
            url: self.url.clone(),
            auth: self.auth.clone(),
            encoder: RemoteWriteEncoder::new(schema.clone())
                .map_err(|e| SinkError::new(ErrorKind::Schema, e.to_string()))?,
            snappy: snap::raw::Encoder::new(),
            bodies: tsload_http::BodyPool::new(),
        })
    }

    /// The server's own sample counters in `/metrics` (see the crate's documentation);
    /// `None` when it publishes neither Prometheus' nor VictoriaMetrics' counters.
    async fn tally(
        &self,
        _schema: &Arc<Schema>,
        _scope: &tsload_core::stored::RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let client = self.client()?;
        let Ok(text) = self.get_text(&client, "metrics").await else {
            return Ok(None);
        };
        if let Some(t) = prometheus_tally(&text) {
            // Prometheus counts a sample as it appends it: its counters are current.
            return Ok(Some(t));
        }
        if vm_tally(&text).is_none() {
            return Ok(None);
        }
        // VictoriaMetrics' counters are up to a second old: read them once they hold every
        // write before this moment, before the load too (see the influx kind's `tally`).
        let text = tsload_http::read_after_refresh(&text, VM_METRICS_REFRESH, || {
            self.get_text(&client, "metrics")
        })
        .await?;
        Ok(vm_tally(&text))
    }
}

/// One worker's connection: its client and reused encode buffers.
pub struct PrometheusConn {
    client: reqwest::Client,
    url: Url,
    auth: Option<Secret>,
    encoder: RemoteWriteEncoder,
    snappy: snap::raw::Encoder,
    /// Buffers of sent bodies, compressed into again.
    bodies: tsload_http::BodyPool,
}

impl fmt::Debug for PrometheusConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusConn")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl PrometheusConn {
    /// The compressed request body of `batch`: snappy's block format, as the protocol asks
    /// (not its framing format).
    fn body(&mut self, batch: &Batch) -> Result<bytes::Bytes, SinkError> {
        let encoded = self.encoder.encode(batch);
        let max = snap::raw::max_compress_len(encoded.bytes.len());
        let mut compressed = self.bodies.take(max);
        compressed.resize(max, 0);
        let n = self
            .snappy
            .compress(encoded.bytes, &mut compressed)
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("snappy: {e}")))?;
        compressed.truncate(n);
        Ok(self.bodies.bytes(compressed))
    }
}

impl SinkConn for PrometheusConn {
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        let body = self.body(batch)?;
        let bytes = body.len() as u64;
        let mut request = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_ENCODING, "snappy")
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .header(
                reqwest::header::USER_AGENT,
                concat!("tsload/", env!("CARGO_PKG_VERSION")),
            )
            .header("X-Prometheus-Remote-Write-Version", PROTOCOL_VERSION);
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| classify_request_error(&e, self.url.as_str()))?;
        let status = response.status();
        if status.is_success() {
            tsload_http::drain(response).await;
            return Ok(WriteAck {
                rows: batch.rows() as u64,
                bytes,
                duplicate: false,
                metrics: None,
            });
        }
        let mut e = answer_error(response).await;
        if status == reqwest::StatusCode::BAD_REQUEST {
            e.message.push_str(prometheus_advice(&e.message));
        }
        if status == reqwest::StatusCode::NOT_FOUND {
            e.message.push_str(
                " (no remote-write receiver there: Prometheus takes writes at /api/v1/write \
                 only when started with --web.enable-remote-write-receiver)",
            );
        }
        Err(e)
    }
}

/// What to do about Prometheus' 400 answer `message`, by the cause it names: a sample
/// "out of bounds" is older than its head block (about the last hour: the data's dates),
/// one "out of order" is older than its series' newest (workers walking time apart).
fn prometheus_advice(message: &str) -> &'static str {
    if message.contains("out of bounds") || message.contains("too old") {
        " (the samples are older than Prometheus' head block, which takes about the last \
         hour before the newest sample it holds: stamp the rows with the clock, \
         workload.time = \"live\" with load.duration, or place the data there, e.g. \
         workload.start = \"now-50m\" and workload.end = \"now\" (start_timestamp for \
         custom), or set Prometheus' storage.tsdb.out_of_order_time_window)"
    } else if message.contains("out of order") {
        " (Prometheus takes a series' samples in time order only; each tsload worker walks \
         time on its own: run with load.workers = 1; and the workload's late rows \
         (workload.out_of_order_ratio, 0.14 for iot) come after newer ones: set it to 0; or \
         set Prometheus' storage.tsdb.out_of_order_time_window)"
    } else {
        ""
    }
}

/// The samples of one metric of a Prometheus text exposition, summed over its label sets
/// (`name` alone or `name{...}`); `None` when it has no such line.
fn exposition_sum(text: &str, name: &str, labels: Option<&str>) -> Option<u64> {
    let mut sum = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (series_labels, value) = match rest.strip_prefix('{') {
            Some(r) => match r.split_once("} ") {
                Some((l, v)) => (l, v),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(v) => ("", v),
                None => continue,
            },
        };
        if labels.is_some_and(|want| !series_labels.contains(want)) {
            continue;
        }
        let value = value.split(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let Some(v) = value.filter(|v| v.is_finite() && *v >= 0.0) {
            *sum.get_or_insert(0u64) += v as u64;
        }
    }
    sum
}

/// Prometheus' counters: samples appended to its head (every type), and the samples it
/// refused, by reason; `None` when the text is not Prometheus' (no TSDB head series).
fn prometheus_tally(text: &str) -> Option<ServerTally> {
    exposition_sum(text, "prometheus_tsdb_head_series", None)?;
    let mut tally = ServerTally {
        // Its label sets appear with the first sample.
        samples: Some(
            exposition_sum(text, "prometheus_tsdb_head_samples_appended_total", None).unwrap_or(0),
        ),
        epoch: exposition_sum(text, "process_start_time_seconds", None).map(|s| s.to_string()),
        // Remote write carries numbers only: every sample sent is one it counts.
        counts_every_sample: true,
        // Every writer's samples, its own scrapes included.
        server_wide: true,
        // A sample repeating its series' time and value is dropped and counted nowhere.
        merges_duplicates: true,
        series_created: exposition_sum(text, "prometheus_tsdb_head_series_created_total", None),
        ..ServerTally::default()
    };
    for (metric, reason) in [
        ("prometheus_tsdb_out_of_order_samples_total", "out of order"),
        (
            "prometheus_tsdb_out_of_bound_samples_total",
            "out of bounds",
        ),
        ("prometheus_tsdb_too_old_samples_total", "too old"),
    ] {
        if let Some(n) = exposition_sum(text, metric, None) {
            tally.refused.insert(reason.to_string(), n);
        }
    }
    Some(tally)
}

/// VictoriaMetrics' counters: the samples it took in by remote write less those it
/// ignored, by reason; `None` when the text is not VictoriaMetrics'.
fn vm_tally(text: &str) -> Option<ServerTally> {
    exposition_sum(text, "vm_rows_inserted_total", None)?;
    let inserted = exposition_sum(
        text,
        "vm_rows_inserted_total",
        Some("type=\"promremotewrite\""),
    )
    .unwrap_or(0);
    let mut tally = ServerTally {
        epoch: exposition_sum(text, "process_start_time_seconds", None).map(|s| s.to_string()),
        // Remote write carries numbers only: every sample sent is one it counts.
        counts_every_sample: true,
        // Every writer's samples, its own scrapes included.
        server_wide: true,
        series_created: exposition_sum(text, "vm_new_timeseries_created_total", None),
        ..ServerTally::default()
    };
    for line in text.lines() {
        let Some(labels) = line.strip_prefix("vm_rows_ignored_total{") else {
            continue;
        };
        let reason = labels
            .split_once("reason=\"")
            .and_then(|(_, r)| r.split_once('"'))
            .map_or("ignored", |(r, _)| r);
        let value = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0);
        if let Some(v) = value {
            *tally.refused.entry(reason.to_string()).or_insert(0) += v as u64;
        }
    }
    let ignored: u64 = tally.refused.values().sum();
    tally.samples = Some(inserted.saturating_sub(ignored));
    Some(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_counters_are_read_with_their_refusals() {
        let text = "# TYPE x counter\nprometheus_tsdb_head_series 4\n\
            prometheus_tsdb_head_samples_appended_total{type=\"float\"} 120\n\
            prometheus_tsdb_head_samples_appended_total{type=\"histogram\"} 0\n\
            prometheus_tsdb_out_of_order_samples_total{type=\"float\"} 3\n\
            prometheus_tsdb_head_series_created_total 41\n\
            process_start_time_seconds 1.79569573971e+09\n";
        let t = prometheus_tally(text).unwrap();
        assert_eq!(t.series_created, Some(41));
        assert_eq!(t.samples, Some(120));
        assert_eq!(t.refused.get("out of order"), Some(&3));
        assert_eq!(t.epoch.as_deref(), Some("1795695739"));
        // A fresh server: the head's metrics without a sample yet.
        let fresh = prometheus_tally("prometheus_tsdb_head_series 0\n").unwrap();
        assert_eq!(fresh.samples, Some(0));
        assert!(prometheus_tally("vm_rows_inserted_total{type=\"influx\"} 5\n").is_none());
    }

    #[test]
    fn victoria_metrics_counts_only_remote_write_samples() {
        let text = "vm_rows_inserted_total{type=\"influx\"} 500\n\
            vm_rows_inserted_total{type=\"promremotewrite\"} 90\n\
            vm_rows_ignored_total{reason=\"too_small_timestamp\"} 4\n\
            vm_new_timeseries_created_total 30\n\
            process_start_time_seconds 17\n";
        let t = vm_tally(text).unwrap();
        assert_eq!(t.samples, Some(86));
        assert_eq!(t.series_created, Some(30));
        assert_eq!(t.refused.get("too_small_timestamp"), Some(&4));
        assert!(vm_tally("prometheus_tsdb_head_series 0\n").is_none());
    }

    #[test]
    fn the_base_url_is_the_write_urls_origin_unless_given() {
        let mut cfg = PrometheusConfig::new("http://127.0.0.1:8428/api/v1/write");
        assert_eq!(cfg.base_url(), "http://127.0.0.1:8428");
        cfg.query_url = Some("http://q:9/prom/".into());
        assert_eq!(cfg.base_url(), "http://q:9/prom");
    }

    #[test]
    fn debug_hides_the_password() {
        let mut cfg = PrometheusConfig::new("http://u:hunter2@h/api/v1/write");
        cfg.password = Some("s3cret".into());
        let shown = format!("{cfg:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("hunter2"),
            "{shown}"
        );
    }

    /// TSBS's 2016 data with one worker was still told "load.workers = 1": the cause is
    /// the dates, as the server says.
    #[test]
    fn the_advice_follows_the_cause_prometheus_names() {
        let old = prometheus_advice("HTTP 400 Bad Request: out of bounds");
        assert!(
            old.contains("workload.start") && !old.contains("workers"),
            "{old}"
        );
        let order = prometheus_advice("HTTP 400 Bad Request: out of order sample");
        assert!(
            order.contains("load.workers = 1") && order.contains("workload.out_of_order_ratio"),
            "{order}"
        );
        assert_eq!(prometheus_advice("HTTP 400 Bad Request: bad label"), "");
    }
}
