//! Outputs over time: every report interval of every stream as a CSV row or an NDJSON
//! record (`--out csv=FILE`, `--out ndjson=FILE`) or as line protocol pushed to a server
//! (`--out influx=URL`, encoded by tsload-lineproto like any other batch), and the run's
//! counters and latency quantiles served in Prometheus' text format while it goes on
//! (`--metrics-addr`). Every interval is also kept for the JSON report's `intervals` and
//! the HTML page (`--out html=FILE`, written at the run's end by `run/report.rs`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tsload_core::engine::IntervalReport;
use tsload_core::recorder::Counters;
use tsload_scenario::plan::OutSpec;

/// Intervals `--out influx=` holds while its server is slow; more are dropped (and said).
const PUSH_QUEUE: usize = 1024;

/// How long the `--out influx=` sender may go on after the run.
const CLOSE_WAIT: Duration = Duration::from_secs(15);

/// One report interval of one stream, as the CSV and NDJSON outputs write it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalRow {
    /// End of the interval, seconds since the Unix epoch.
    pub time: f64,
    /// End of the interval, seconds since the load started.
    pub elapsed_s: f64,
    /// `write` or `query`.
    pub stream: &'static str,
    pub interval_s: f64,
    /// Successful requests in the interval (queries: requests; writes: batches).
    pub requests: u64,
    /// Rows written (writes) or returned (queries) in the interval.
    pub rows: u64,
    /// Field values written (writes) or statements run (queries) in the interval.
    pub metrics: u64,
    pub bytes: u64,
    /// Failed attempts in the interval, retried ones included.
    pub errors: u64,
    pub retries: u64,
    /// Rates over the interval; `None` (CSV: empty) for the last, partial interval when it
    /// is too short (under 50 ms) for a rate to mean anything.
    pub requests_per_s: Option<f64>,
    pub rows_per_s: Option<f64>,
    pub metrics_per_s: Option<f64>,
    /// Latency from the intended send time, milliseconds.
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// The run so far.
    pub total_requests: u64,
    pub total_rows: u64,
    pub total_errors: u64,
}

/// The shortest interval whose rates are written.
const MIN_RATE_INTERVAL_S: f64 = 0.05;

const CSV_HEADER: &str = "time,elapsed_s,stream,interval_s,requests,rows,metrics,bytes,errors,\
retries,requests_per_s,rows_per_s,metrics_per_s,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,\
total_requests,total_rows,total_errors";

impl IntervalRow {
    pub fn new(stream: &'static str, started_at: SystemTime, r: &IntervalReport) -> Self {
        let secs = (r.end - r.start).as_secs_f64();
        let per_s = |n: u64| (secs >= MIN_RATE_INTERVAL_S).then(|| n as f64 / secs);
        let ms = |q: f64| r.latency.value_at_quantile(q) as f64 / 1e6;
        let time = (started_at + r.end)
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64();
        IntervalRow {
            time,
            elapsed_s: r.end.as_secs_f64(),
            stream,
            interval_s: secs,
            requests: r.counters.requests,
            rows: r.counters.rows,
            metrics: r.counters.metrics,
            bytes: r.counters.bytes,
            errors: r.counters.error_count(),
            retries: r.counters.retries,
            requests_per_s: per_s(r.counters.requests),
            rows_per_s: per_s(r.counters.rows),
            metrics_per_s: per_s(r.counters.metrics),
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            max_ms: r.latency.max() as f64 / 1e6,
            total_requests: r.totals.requests,
            total_rows: r.totals.rows,
            total_errors: r.totals.error_count(),
        }
    }

    /// The CSV line (no quoting needed: numbers and a fixed stream word).
    pub fn csv_line(&self) -> String {
        let rate = |r: Option<f64>| r.map(|r| format!("{r:.1}")).unwrap_or_default();
        format!(
            "{:.3},{:.3},{},{:.3},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{}",
            self.time,
            self.elapsed_s,
            self.stream,
            self.interval_s,
            self.requests,
            self.rows,
            self.metrics,
            self.bytes,
            self.errors,
            self.retries,
            rate(self.requests_per_s),
            rate(self.rows_per_s),
            rate(self.metrics_per_s),
            self.p50_ms,
            self.p90_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.total_requests,
            self.total_rows,
            self.total_errors
        )
    }
}

/// What one stream has done so far, for the Prometheus exposition.
#[derive(Debug)]
struct StreamState {
    totals: Counters,
    latency: Histogram<u64>,
    /// The last interval long enough to have rates.
    rates: Option<IntervalRow>,
}

#[derive(Debug, Default)]
struct Inner {
    csv: Option<(PathBuf, crate::out::TextFile)>,
    ndjson: Option<(PathBuf, crate::out::TextFile)>,
    influx: Option<InfluxPush>,
    /// Per stream, in the order they first reported.
    streams: Vec<(&'static str, StreamState)>,
    /// The first write error; the run goes on and the error is reported at its end.
    error: Option<String>,
    /// Every interval of every stream, in the order reported: the JSON report's
    /// `intervals` (about 300 bytes each: a day at 1 s intervals is 26 MB).
    intervals: Vec<tsload_report_html::Interval>,
    /// `--out html=FILE`.
    html: Option<PathBuf>,
}

/// The outputs of one run, shared by its streams' observers and the metrics server.
#[derive(Debug, Clone, Default)]
pub struct Outputs(Arc<Mutex<Inner>>);

impl Outputs {
    /// Creates the `--out` files (with the CSV header).
    pub fn open(specs: &[OutSpec]) -> anyhow::Result<Outputs> {
        use anyhow::Context as _;
        let mut inner = Inner::default();
        for spec in specs {
            let (path, slot) = match spec {
                OutSpec::Csv(p) => (p, &mut inner.csv),
                OutSpec::Ndjson(p) => (p, &mut inner.ndjson),
                OutSpec::Html(p) => {
                    if inner.html.is_some() {
                        anyhow::bail!("--out html= is given twice; one page per run");
                    }
                    inner.html = Some(p.clone());
                    continue;
                }
                OutSpec::Influx(url) => {
                    if inner.influx.is_some() {
                        anyhow::bail!("--out influx= is given twice; one server per run");
                    }
                    inner.influx = Some(InfluxPush::new(url)?);
                    continue;
                }
            };
            if slot.is_some() {
                anyhow::bail!(
                    "--out: {} is given twice; one file per kind",
                    path.display()
                );
            }
            let file = crate::out::create_text(path)
                .with_context(|| format!("--out: cannot create {}", path.display()))?;
            *slot = Some((path.clone(), file));
        }
        if let Some((path, w)) = &mut inner.csv {
            writeln!(w, "{CSV_HEADER}")
                .with_context(|| format!("--out: writing {}", path.display()))?;
        }
        Ok(Outputs(Arc::new(Mutex::new(inner))))
    }

    /// Records one interval of `stream`.
    pub fn record(&self, stream: &'static str, started_at: SystemTime, r: &IntervalReport) {
        let row = IntervalRow::new(stream, started_at, r);
        let Ok(mut inner) = self.0.lock() else {
            return;
        };
        let inner = &mut *inner;
        inner
            .intervals
            .push(tsload_report_html::Interval::new(stream, r));
        let mut failed = None;
        if let Some((path, w)) = &mut inner.csv
            && let Err(e) = writeln!(w, "{}", row.csv_line()).and_then(|()| w.flush())
        {
            failed = Some(format!("writing {}: {e}", path.display()));
        }
        if let Some((path, w)) = &mut inner.ndjson {
            let written = serde_json::to_writer(&mut *w, &row)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(w))
                .and_then(|()| w.flush());
            if let Err(e) = written {
                failed = Some(format!("writing {}: {e}", path.display()));
            }
        }
        if let Some(push) = &mut inner.influx {
            push.send(&row);
        }
        if let Some(e) = failed {
            inner.error.get_or_insert(e);
        }
        let state = match inner.streams.iter_mut().position(|(s, _)| *s == stream) {
            Some(i) => &mut inner.streams[i].1,
            None => {
                let latency = Histogram::new_from(&r.latency);
                inner.streams.push((
                    stream,
                    StreamState {
                        totals: Counters::default(),
                        latency,
                        rates: None,
                    },
                ));
                &mut inner.streams.last_mut().expect("just pushed").1
            }
        };
        state.totals = r.totals.clone();
        // Same precision and range as the engine's histograms: adding cannot fail short of
        // a bug; a failure leaves the quantiles as they were.
        let _ = state.latency.add(&r.latency);
        if row.rows_per_s.is_some() {
            state.rates = Some(row);
        }
    }

    /// Every interval recorded so far, of every stream.
    pub fn intervals(&self) -> Vec<tsload_report_html::Interval> {
        self.0
            .lock()
            .map(|inner| inner.intervals.clone())
            .unwrap_or_default()
    }

    /// Where `--out html=` writes the page, if it was asked for.
    pub fn html_path(&self) -> Option<PathBuf> {
        self.0.lock().ok().and_then(|inner| inner.html.clone())
    }

    /// The first error writing the files or pushing to the server, if any.
    pub fn error(&self) -> Option<String> {
        let inner = self.0.lock().ok()?;
        inner.error.clone().or_else(|| {
            inner
                .influx
                .as_ref()
                .and_then(|p| p.error.lock().ok().and_then(|e| e.clone()))
        })
    }

    /// Starts the `--out influx=` sender on the run's runtime, once the server has taken
    /// an empty write: a missing database or a refused login is said before the run,
    /// not after it.
    pub fn start(&self, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
        if let Ok(mut inner) = self.0.lock()
            && let Some(push) = &mut inner.influx
        {
            runtime.block_on(push.check())?;
            push.start(runtime);
        }
        Ok(())
    }

    /// Sends what is queued and waits for the server's answers (after the run).
    pub fn close(&self, runtime: &tokio::runtime::Runtime) {
        let task = self
            .0
            .lock()
            .ok()
            .and_then(|mut inner| inner.influx.as_mut().and_then(InfluxPush::close));
        if let Some(mut task) = task {
            // Each post has a 10 s timeout; the queue left at the end gets that much more
            // in all, then the rest is dropped (and said so).
            let done = runtime
                .block_on(async { tokio::time::timeout(CLOSE_WAIT, &mut task).await.is_ok() });
            if !done {
                task.abort();
                if let Ok(inner) = self.0.lock()
                    && let Some(push) = &inner.influx
                    && let Ok(mut slot) = push.error.lock()
                {
                    slot.get_or_insert(format!(
                        "--out influx={}: still sending {} s after the run; the rest was dropped",
                        push.url,
                        CLOSE_WAIT.as_secs()
                    ));
                }
            }
        }
    }

    /// The Prometheus text exposition (format 0.0.4) of the run so far.
    pub fn exposition(&self) -> String {
        let Ok(inner) = self.0.lock() else {
            return String::new();
        };
        exposition(&inner.streams)
    }
}

fn exposition(streams: &[(&'static str, StreamState)]) -> String {
    let mut out = String::new();
    type Counter = (&'static str, &'static str, fn(&Counters) -> u64);
    let counters: [Counter; 9] = [
        (
            "tsload_requests_total",
            "Requests acknowledged by the target.",
            |c| c.requests,
        ),
        (
            "tsload_rows_total",
            "Rows written (writes) or returned (queries).",
            |c| c.rows,
        ),
        (
            "tsload_metrics_total",
            "Field values written (writes) or statements run (queries).",
            |c| c.metrics,
        ),
        ("tsload_bytes_total", "Request bytes sent.", |c| c.bytes),
        (
            "tsload_retries_total",
            "Failed attempts that were sent again.",
            |c| c.retries,
        ),
        (
            "tsload_failed_requests_total",
            "Requests that failed for good.",
            |c| c.failed_requests,
        ),
        (
            "tsload_failed_rows_total",
            "Rows of requests that failed for good.",
            |c| c.failed_rows,
        ),
        (
            "tsload_ambiguous_rows_total",
            "Rows sent whose answer was lost (stored at most once more).",
            |c| c.ambiguous_rows,
        ),
        (
            "tsload_recovered_rows_total",
            "Rows of lost answers that the ledger showed stored.",
            |c| c.recovered_rows,
        ),
    ];
    for (name, help, get) in counters {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (stream, s) in streams {
            let _ = writeln!(out, "{name}{{stream=\"{stream}\"}} {}", get(&s.totals));
        }
    }
    let name = "tsload_errors_total";
    let _ = writeln!(
        out,
        "# HELP {name} Failed attempts by kind, retried ones included.\n# TYPE {name} counter"
    );
    for (stream, s) in streams {
        for (kind, n) in &s.totals.errors {
            let _ = writeln!(
                out,
                "{name}{{stream=\"{stream}\",kind=\"{}\"}} {n}",
                kind.as_str()
            );
        }
    }
    type Gauge = (&'static str, &'static str, fn(&IntervalRow) -> Option<f64>);
    let gauges: [Gauge; 3] = [
        (
            "tsload_rows_per_second",
            "Rows per second over the last report interval.",
            |r| r.rows_per_s,
        ),
        (
            "tsload_metrics_per_second",
            "Metrics (writes) or statements (queries) per second over the last report interval.",
            |r| r.metrics_per_s,
        ),
        (
            "tsload_requests_per_second",
            "Requests per second over the last report interval.",
            |r| r.requests_per_s,
        ),
    ];
    for (name, help, get) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (stream, s) in streams {
            if let Some(rate) = s.rates.as_ref().and_then(get) {
                let _ = writeln!(out, "{name}{{stream=\"{stream}\"}} {rate}");
            }
        }
    }
    let name = "tsload_latency_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Request latency from the intended send time (coordinated-omission corrected), over the run so far.\n# TYPE {name} summary"
    );
    for (stream, s) in streams {
        for q in [0.5, 0.9, 0.99, 0.999] {
            let v = s.latency.value_at_quantile(q) as f64 / 1e9;
            let _ = writeln!(out, "{name}{{stream=\"{stream}\",quantile=\"{q}\"}} {v}");
        }
        let sum = s.latency.mean() * s.latency.len() as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{stream=\"{stream}\"}} {sum}");
        let _ = writeln!(
            out,
            "{name}_count{{stream=\"{stream}\"}} {}",
            s.latency.len()
        );
    }
    out
}

/// `--out influx=`: each interval as a row of measurement `tsload` (tag `stream`, time = the
/// interval's start), encoded
/// by tsload-lineproto and posted, in order, by one task on the run's runtime.
struct InfluxPush {
    url: tsload_redact::SecretUrl,
    encoder: tsload_lineproto::LineEncoder,
    batch: tsload_core::Batch,
    tx: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    rx: Option<tokio::sync::mpsc::Receiver<Vec<u8>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    client: reqwest::Client,
    /// `INFLUX_TOKEN` from the environment, sent as `Authorization: Token ...` (InfluxDB
    /// 2.x/3.x; 1.8+ takes `user:password` there too). Never shown.
    token: Option<tsload_redact::Secret>,
    /// The first failed post. After an HTTP error status the later intervals are still
    /// sent; after an unreachable or timed-out post they are not.
    error: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for InfluxPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfluxPush")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// An error and its sources, `: `-joined (reqwest's own text hides the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The environment variable whose token `--out influx=URL` sends (the influx CLI's name).
const INFLUX_TOKEN_ENV: &str = "INFLUX_TOKEN";

/// The streams as devices of the `tsload` measurement: tag `stream`.
const STREAMS: [&str; 2] = ["write", "query"];

#[derive(Debug)]
struct StreamTags;

impl tsload_core::TagSource for StreamTags {
    fn device_tags(&self, device: u32, out: &mut Vec<tsload_core::TagValue>) {
        out.clear();
        let name = STREAMS.get(device as usize).copied().unwrap_or("other");
        out.push(tsload_core::TagValue::Str(std::borrow::Cow::Borrowed(name)));
    }
}

/// The integer fields, then the float ones, of the `tsload` measurement.
const INT_FIELDS: [&str; 6] = ["requests", "rows", "metrics", "bytes", "errors", "retries"];
const FLOAT_FIELDS: [&str; 8] = [
    "requests_per_s",
    "rows_per_s",
    "metrics_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
];

impl InfluxPush {
    fn new(url: &tsload_redact::SecretUrl) -> anyhow::Result<InfluxPush> {
        use tsload_core::{DataType, FieldDef, Schema, TableSchema, TagDef};
        let fields = INT_FIELDS
            .iter()
            .map(|n| (n, DataType::BigInt))
            .chain(FLOAT_FIELDS.iter().map(|n| (n, DataType::Double)))
            .map(|(name, data_type)| FieldDef {
                name: name.to_string(),
                data_type,
            })
            .collect();
        let schema = Arc::new(Schema {
            tables: vec![TableSchema {
                name: "tsload".into(),
                tags: vec![TagDef {
                    name: "stream".into(),
                    data_type: DataType::Varchar(16),
                    slot: 0,
                }],
                fields,
            }],
            tag_slots: 1,
            device_count: STREAMS.len() as u32,
            tags: Arc::new(StreamTags),
        });
        let tls = tsload_tls::client_config(&tsload_tls::TlsOptions::default())?;
        let client = tsload_http::client_builder(tls)
            .timeout(Duration::from_secs(10))
            .build()?;
        let (tx, rx) = tokio::sync::mpsc::channel(PUSH_QUEUE);
        Ok(InfluxPush {
            url: url.clone(),
            batch: tsload_core::Batch::for_schema(&schema),
            encoder: tsload_lineproto::LineEncoder::new(schema, tsload_lineproto::Precision::Ns),
            tx: Some(tx),
            rx: Some(rx),
            task: None,
            client,
            token: std::env::var(INFLUX_TOKEN_ENV)
                .ok()
                .filter(|t| !t.is_empty())
                .map(|t| InfluxPush::token_header(&t)),
            error: Arc::new(Mutex::new(None)),
        })
    }

    /// The `Authorization` value of an InfluxDB token.
    fn token_header(token: &str) -> tsload_redact::Secret {
        tsload_redact::Secret::new(format!("Token {token}"))
    }

    /// One post of `body`, with the token when there is one.
    fn post(
        client: &reqwest::Client,
        url: &str,
        token: Option<&tsload_redact::Secret>,
        body: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        tsload_http::with_authorization(client.post(url).body(body), token)
    }

    /// An empty write to the endpoint: a 401, 403 or 404 (InfluxDB's "database not
    /// found") refuses the run before it starts; an unreachable server too. Other answers
    /// (a server that refuses an empty body with a 400) are left to the run.
    async fn check(&self) -> Result<(), String> {
        let request = InfluxPush::post(
            &self.client,
            self.url.expose(),
            self.token.as_ref(),
            Vec::new(),
        );
        let refused = |why: String| {
            format!(
                "--out influx={}: {why}; the run did not start (fix the URL or the credentials, \
                 or create the database)",
                self.url
            )
        };
        match request.send().await {
            Ok(r) if matches!(r.status().as_u16(), 401 | 403 | 404) => {
                let status = r.status();
                let body = tsload_http::error_text(r).await;
                let body: String = body.trim().chars().take(200).collect();
                Err(refused(format!(
                    "the server answered an empty write with HTTP {status}: {body}"
                )))
            }
            Ok(r) => {
                tsload_http::drain(r).await;
                Ok(())
            }
            Err(e) => Err(refused(format!(
                "the server cannot be reached: {}",
                error_chain(&e.without_url())
            ))),
        }
    }

    fn start(&mut self, runtime: &tokio::runtime::Runtime) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        let (client, url, error) = (self.client.clone(), self.url.clone(), self.error.clone());
        let token = self.token.clone();
        self.task = Some(runtime.spawn(async move {
            while let Some(body) = rx.recv().await {
                let request = InfluxPush::post(&client, url.expose(), token.as_ref(), body);
                let failed = match request.send().await {
                    Ok(r) if r.status().is_success() => {
                        tsload_http::drain(r).await;
                        None
                    }
                    Ok(r) => match tsload_http::redirect_message(r.status(), r.headers()) {
                        Some(m) => Some((m, true)),
                        None => {
                            let status = r.status();
                            let body = tsload_http::error_text(r).await;
                            let body: String = body.trim().chars().take(200).collect();
                            Some((format!("HTTP {status}: {body}"), false))
                        }
                    },
                    // Unreachable or timed out: the next posts would wait as long each.
                    // Without the URL: reqwest's text has its query, secrets and all.
                    Err(e) => Some((error_chain(&e.without_url()), true)),
                };
                let Some((e, give_up)) = failed else { continue };
                if let Ok(mut slot) = error.lock() {
                    let rest = if give_up {
                        "; the later intervals were not sent"
                    } else {
                        ""
                    };
                    slot.get_or_insert(format!("--out influx={url}: {e}{rest}"));
                }
                if give_up {
                    break;
                }
            }
        }));
    }

    fn send(&mut self, row: &IntervalRow) {
        use tsload_core::ColumnValues;
        self.batch.clear();
        let t = &mut self.batch.tables[0];
        t.device
            .push(STREAMS.iter().position(|s| *s == row.stream).unwrap_or(0) as u32);
        // Stamped with the interval's start: distinct even at millisecond precision
        // (VictoriaMetrics), where the last, partial interval can end in the same
        // millisecond as the one before it.
        t.ts.push(((row.time - row.interval_s) * 1e9) as i64);
        let ints = [
            row.requests,
            row.rows,
            row.metrics,
            row.bytes,
            row.errors,
            row.retries,
        ];
        let floats = [
            row.requests_per_s,
            row.rows_per_s,
            row.metrics_per_s,
            Some(row.p50_ms),
            Some(row.p90_ms),
            Some(row.p99_ms),
            Some(row.p999_ms),
            Some(row.max_ms),
        ];
        for (i, v) in ints.iter().enumerate() {
            if let ColumnValues::Int(c) = &mut t.columns[i].values {
                c.push(i64::try_from(*v).unwrap_or(i64::MAX));
            }
        }
        for (j, v) in floats.iter().enumerate() {
            let i = INT_FIELDS.len() + j;
            if let ColumnValues::Float(c) = &mut t.columns[i].values {
                c.push(v.unwrap_or(0.0));
            }
            if v.is_none() {
                t.set_null(i, 0);
            }
        }
        t.finish_validity();
        let mut body = Vec::with_capacity(512);
        self.encoder.encode(&self.batch, &mut body);
        if let Some(tx) = &self.tx
            && let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) = tx.try_send(body)
            && let Ok(mut slot) = self.error.lock()
        {
            // Bounded: a server slower than the report interval loses intervals, said
            // at the end, rather than growing the client's memory.
            slot.get_or_insert(format!(
                "--out influx={}: the server fell {PUSH_QUEUE} intervals behind; later intervals were dropped",
                self.url
            ));
        }
    }

    /// Ends the queue; the task finishes once it has posted everything.
    fn close(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        self.tx = None;
        self.task.take()
    }
}

/// Connections `--metrics-addr` serves at once; more are closed as they come.
const METRICS_CONNECTIONS: usize = 32;

/// Serves `GET /metrics` on `listener` until the runtime stops. A hand-written HTTP/1.0
/// responder: one read-only endpoint, one answer per connection; a server crate (hyper's
/// server side) would add more code than it saves.
pub fn serve_metrics(listener: std::net::TcpListener, outputs: Outputs) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(METRICS_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                // Out of file descriptors, say: wait rather than spin on the error.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            // A flood of connections must not take the file descriptors the load, its
            // outputs and its report need: past the cap, a connection is closed at once.
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                drop(socket);
                continue;
            };
            let outputs = outputs.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let mut request = Vec::with_capacity(1024);
                let mut buf = [0u8; 1024];
                // Read the request head (bounded: 16 KiB, 5 s).
                let head = tokio::time::timeout(Duration::from_secs(5), async {
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16384 {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return false,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    true
                })
                .await;
                if !matches!(head, Ok(true)) {
                    return;
                }
                let line = request.split(|&b| b == b'\r').next().unwrap_or_default();
                let mut words = line.split(|&b| b == b' ');
                let (method, path) = (words.next(), words.next());
                let (status, body) = match (method, path) {
                    (Some(b"GET"), Some(p)) if p == b"/metrics" || p.starts_with(b"/metrics?") => {
                        ("200 OK", outputs.exposition())
                    }
                    (Some(b"GET"), _) => ("404 Not Found", "try /metrics\n".to_string()),
                    _ => ("405 Method Not Allowed", "GET /metrics only\n".to_string()),
                };
                let answer = format!(
                    "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(())
}

/// Binds `--metrics-addr` before anything runs, so a taken port is a usage error.
pub fn bind_metrics(addr: &str) -> Result<(std::net::TcpListener, SocketAddr), String> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| format!("--metrics-addr {addr}: cannot listen there: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
    Ok((listener, local))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(start_s: u64, rows: u64, latency_ms: &[u64]) -> IntervalReport {
        let mut latency = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for ms in latency_ms {
            latency.record(ms * 1_000_000).unwrap();
        }
        let counters = Counters {
            requests: latency_ms.len() as u64,
            rows,
            metrics: rows * 10,
            ..Counters::default()
        };
        IntervalReport {
            index: start_s,
            start: Duration::from_secs(start_s),
            end: Duration::from_secs(start_s + 1),
            counters: counters.clone(),
            latency: latency.clone(),
            service: latency,
            totals: Counters {
                rows: rows * (start_s + 1),
                ..counters
            },
        }
    }

    #[test]
    fn influx_urls_default_to_write_and_hide_secrets() {
        let influx = |s: &str| match s.parse::<OutSpec>() {
            Ok(OutSpec::Influx(url)) => url,
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(
            influx("influx=http://h:8086").expose(),
            "http://h:8086/write?db=tsload"
        );
        assert_eq!(
            influx("influx=https://h/api/v2/write?org=o&bucket=b").expose(),
            "https://h/api/v2/write?org=o&bucket=b"
        );
        assert!("influx=ftp://h".parse::<OutSpec>().is_err());
        let url = influx("influx=http://u:pw1@h:8086/write?db=x&u=me&p=pw2&token=t3");
        assert_eq!(
            url.expose(),
            "http://u:pw1@h:8086/write?db=x&u=me&p=pw2&token=t3"
        );
        let shown = format!("{url} {url:?} {}", serde_json::to_string(&url).unwrap());
        assert!(
            !shown.contains("pw1") && !shown.contains("pw2") && !shown.contains("t3"),
            "{shown}"
        );
        assert!(shown.contains("db=x") && shown.contains("u=me"), "{shown}");
    }

    #[test]
    fn the_influx_token_goes_in_the_authorization_header_only() {
        let tls = tsload_tls::client_config(&tsload_tls::TlsOptions::default()).unwrap();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .build()
            .unwrap();
        let url = "https://h/api/v2/write?org=o&bucket=b";
        let r = InfluxPush::post(
            &client,
            url,
            Some(&InfluxPush::token_header("s3cret")),
            b"x".to_vec(),
        )
        .build()
        .unwrap();
        assert_eq!(r.headers()["authorization"], "Token s3cret");
        assert_eq!(r.url().as_str(), url);
        let r = InfluxPush::post(&client, url, None, Vec::new())
            .build()
            .unwrap();
        assert!(r.headers().get("authorization").is_none());
    }

    #[test]
    fn out_specs_parse_and_name_what_is_wrong() {
        assert_eq!("csv=a.csv".parse(), Ok(OutSpec::Csv("a.csv".into())));
        assert_eq!("ndjson=b".parse(), Ok(OutSpec::Ndjson("b".into())));
        assert_eq!("html=r.html".parse(), Ok(OutSpec::Html("r.html".into())));
        let e = "xml=a".parse::<OutSpec>().unwrap_err();
        assert!(e.contains("allowed: csv, ndjson, influx"), "{e}");
        let e = "csv".parse::<OutSpec>().unwrap_err();
        assert!(e.contains("csv=FILE") && e.contains("influx=URL"), "{e}");
    }

    #[test]
    fn rows_and_exposition_carry_the_intervals_figures() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("i.csv");
        let nd = dir.path().join("i.ndjson");
        let out = Outputs::open(&[OutSpec::Csv(csv.clone()), OutSpec::Ndjson(nd.clone())]).unwrap();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000);
        out.record("write", t0, &report(0, 100, &[1, 2, 3, 4]));
        out.record("write", t0, &report(1, 300, &[10]));
        out.record("query", t0, &report(0, 7, &[5]));
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], CSV_HEADER);
        let cols: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(cols.len(), CSV_HEADER.split(',').count());
        assert_eq!(
            (cols[0], cols[2], cols[5], cols[11]),
            ("1002.000", "write", "300", "300.0")
        );
        let records: Vec<serde_json::Value> = std::fs::read_to_string(&nd)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0]["rows"], 100);
        assert_eq!(records[2]["stream"], "query");
        let p = out.exposition();
        assert!(
            p.contains("tsload_rows_total{stream=\"write\"} 600\n"),
            "{p}"
        );
        assert!(p.contains("tsload_rows_total{stream=\"query\"} 7\n"), "{p}");
        assert!(
            p.contains("tsload_latency_seconds_count{stream=\"write\"} 5\n"),
            "{p}"
        );
        assert!(
            p.contains("tsload_rows_per_second{stream=\"write\"} 300\n"),
            "{p}"
        );
        // The median of 1, 2, 3, 4, 10 ms over the run so far.
        assert!(
            p.contains("tsload_latency_seconds{stream=\"write\",quantile=\"0.5\"} 0.003"),
            "{p}"
        );
        assert_eq!(out.error(), None);
    }

    #[test]
    fn every_grafana_query_names_an_exported_metric() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../../configs/grafana/tsload.json"))
                .expect("the dashboard is JSON");
        let out = Outputs::default();
        out.record("write", UNIX_EPOCH, &report(0, 100, &[1]));
        // Every family, and a summary's _sum and _count series.
        let mut exported = std::collections::BTreeSet::new();
        for line in out.exposition().lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                exported.insert(name.to_string());
                if kind == "summary" {
                    exported.insert(format!("{name}_sum"));
                    exported.insert(format!("{name}_count"));
                }
            }
        }
        let panels = dashboard["panels"].as_array().expect("panels");
        assert!(panels.len() >= 5);
        let mut queries = 0;
        for panel in panels {
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{panel}");
            assert_eq!(panel["datasource"]["type"], "prometheus");
            for target in targets {
                let expr = target["expr"].as_str().expect("expr");
                let names: Vec<&str> = expr
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with("tsload_"))
                    .collect();
                assert!(!names.is_empty(), "{expr} names no tsload metric");
                for name in names {
                    assert!(
                        exported.contains(name),
                        "{expr}: {name} is not exported ({exported:?})"
                    );
                }
                queries += 1;
            }
        }
        assert!(queries >= 8);
    }
}
