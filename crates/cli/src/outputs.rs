//! Outputs over time: every report interval of every stream as a CSV row or an NDJSON
//! record (`--out csv=FILE`, `--out ndjson=FILE`), and the run's counters and latency
//! quantiles served in Prometheus' text format while it goes on (`--metrics-addr`).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tsload_core::engine::IntervalReport;
use tsload_core::recorder::Counters;

/// One `--out` destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutSpec {
    Csv(PathBuf),
    Ndjson(PathBuf),
}

impl std::str::FromStr for OutSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, path) = s.split_once('=').unwrap_or((s, ""));
        if path.is_empty() {
            return Err(format!(
                "\"{s}\": expected KIND=FILE, with KIND csv or ndjson (e.g. csv=intervals.csv)"
            ));
        }
        match kind {
            "csv" => Ok(OutSpec::Csv(path.into())),
            "ndjson" => Ok(OutSpec::Ndjson(path.into())),
            other => Err(format!(
                "\"{s}\": output kind \"{other}\" is not known; allowed: csv, ndjson"
            )),
        }
    }
}

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
    csv: Option<(PathBuf, BufWriter<File>)>,
    ndjson: Option<(PathBuf, BufWriter<File>)>,
    /// Per stream, in the order they first reported.
    streams: Vec<(&'static str, StreamState)>,
    /// The first write error; the run goes on and the error is reported at its end.
    error: Option<String>,
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
            };
            if slot.is_some() {
                anyhow::bail!(
                    "--out: {} is given twice; one file per kind",
                    path.display()
                );
            }
            let file = File::create(path)
                .with_context(|| format!("--out: cannot create {}", path.display()))?;
            *slot = Some((path.clone(), BufWriter::new(file)));
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

    /// The first error writing the files, if any.
    pub fn error(&self) -> Option<String> {
        self.0.lock().ok().and_then(|i| i.error.clone())
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

/// Serves `GET /metrics` on `listener` until the runtime stops. A hand-written HTTP/1.0
/// responder: one read-only endpoint, one answer per connection; a server crate (hyper's
/// server side) would add more code than it saves.
pub fn serve_metrics(listener: std::net::TcpListener, outputs: Outputs) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            let outputs = outputs.clone();
            tokio::spawn(async move {
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
    fn out_specs_parse_and_name_what_is_wrong() {
        assert_eq!("csv=a.csv".parse(), Ok(OutSpec::Csv("a.csv".into())));
        assert_eq!("ndjson=b".parse(), Ok(OutSpec::Ndjson("b".into())));
        let e = "xml=a".parse::<OutSpec>().unwrap_err();
        assert!(e.contains("allowed: csv, ndjson"), "{e}");
        let e = "csv".parse::<OutSpec>().unwrap_err();
        assert!(e.contains("KIND=FILE"), "{e}");
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
