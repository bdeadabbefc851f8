//! Outputs over time: every report interval of every stream as a CSV row or an NDJSON
//! record (`--out csv=FILE`, `--out ndjson=FILE`) or as line protocol pushed to a server
//! (`--out influx=URL`, encoded by tsload-lineproto like any other batch), and the run's
//! counters and latency quantiles served in Prometheus' text format while it goes on
//! (`--metrics-addr`). Every interval is also kept for the JSON report's `intervals` and
//! the HTML page (`--out html=FILE`, written at the run's end by the binary). Every file
//! is written through tsload's one redaction (`tsload_redact::file`).

mod exposition;
mod influx;
mod row;
mod serve;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use tsload_core::engine::IntervalReport;
use tsload_core::recorder::Counters;
use tsload_report::StreamKind;
use tsload_scenario::plan::OutSpec;

use crate::exposition::{StreamState, exposition};
use crate::influx::InfluxPush;
pub use crate::row::{CSV_HEADER, IntervalRow};
pub use crate::serve::{bind_metrics, serve_metrics};

/// How long the `--out influx=` sender may go on after the run.
const CLOSE_WAIT: Duration = Duration::from_secs(15);

/// Why an output cannot be opened or served.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The same destination, or a second of a kind there is one of, given twice.
    #[error("--out {0} is given twice; {1}")]
    Twice(String, &'static str),
    #[error("--out: {doing} {}: {source}", path.display())]
    File {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// `--out influx=`'s HTTP client could not be built.
    #[error("--out influx=: cannot build the HTTP client: {0}")]
    Client(String),
    /// `--out influx=`'s server refused an empty write or could not be reached.
    #[error("{0}")]
    Refused(String),
    #[error("--metrics-addr {addr}: cannot listen there: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

#[derive(Debug, Default)]
struct Inner {
    csv: Option<(PathBuf, csv::Writer<tsload_redact::file::TextFile>)>,
    ndjson: Option<(PathBuf, tsload_redact::file::TextFile)>,
    influx: Option<InfluxPush>,
    /// Per stream, in the order they first reported.
    streams: Vec<(StreamKind, StreamState)>,
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
    pub fn open(specs: &[OutSpec]) -> Result<Outputs, OutputError> {
        let mut inner = Inner::default();
        for spec in specs {
            let (path, is_csv) = match spec {
                OutSpec::Csv(p) => (p, true),
                OutSpec::Ndjson(p) => (p, false),
                OutSpec::Html(p) => {
                    if inner.html.is_some() {
                        return Err(OutputError::Twice("html=".into(), "one page per run"));
                    }
                    inner.html = Some(p.clone());
                    continue;
                }
                OutSpec::Influx(url) => {
                    if inner.influx.is_some() {
                        return Err(OutputError::Twice("influx=".into(), "one server per run"));
                    }
                    inner.influx = Some(InfluxPush::new(url)?);
                    continue;
                }
            };
            let taken = if is_csv {
                inner.csv.is_some()
            } else {
                inner.ndjson.is_some()
            };
            if taken {
                return Err(OutputError::Twice(
                    path.display().to_string(),
                    "one file per kind",
                ));
            }
            let failed = |doing| {
                let path = path.clone();
                move |source| OutputError::File {
                    doing,
                    path,
                    source,
                }
            };
            let file = tsload_redact::file::create_text(path).map_err(failed("cannot create"))?;
            if is_csv {
                let mut w = csv::WriterBuilder::new()
                    .has_headers(false)
                    .from_writer(file);
                w.write_record(CSV_HEADER)
                    .map_err(std::io::Error::from)
                    .and_then(|()| w.flush())
                    .map_err(failed("writing"))?;
                inner.csv = Some((path.clone(), w));
            } else {
                inner.ndjson = Some((path.clone(), file));
            }
        }
        Ok(Outputs(Arc::new(Mutex::new(inner))))
    }

    /// Records one interval of `stream`.
    pub fn record(&self, stream: StreamKind, started_at: SystemTime, r: &IntervalReport) {
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
            && let Err(e) = w
                .serialize(&row)
                .map_err(std::io::Error::from)
                .and_then(|()| w.flush())
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
    pub fn start(&self, runtime: &tokio::runtime::Runtime) -> Result<(), OutputError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

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
    fn rows_and_exposition_carry_the_intervals_figures() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("i.csv");
        let nd = dir.path().join("i.ndjson");
        let out = Outputs::open(&[OutSpec::Csv(csv.clone()), OutSpec::Ndjson(nd.clone())]).unwrap();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000);
        out.record(StreamKind::Write, t0, &report(0, 100, &[1, 2, 3, 4]));
        out.record(StreamKind::Write, t0, &report(1, 300, &[10]));
        out.record(StreamKind::Query, t0, &report(0, 7, &[5]));
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], CSV_HEADER.join(","));
        let cols: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(cols.len(), CSV_HEADER.len());
        assert_eq!(
            (cols[0], cols[2], cols[5], cols[11]),
            ("1002.0", "write", "300", "300.0")
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
        out.record(StreamKind::Write, UNIX_EPOCH, &report(0, 100, &[1]));
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

    #[test]
    fn the_csv_header_is_the_rows_serde_names_and_a_short_interval_has_empty_rates() {
        let mut short = report(0, 100, &[1]);
        short.end = Duration::from_millis(10);
        let row = IntervalRow::new(StreamKind::Write, UNIX_EPOCH, &short);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&row).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER.join(",").as_str()));
        let cols: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = |name: &str| cols[CSV_HEADER.iter().position(|h| *h == name).unwrap()];
        assert_eq!((at("rows"), at("rows_per_s")), ("100", ""), "{text}");
    }
}
