//! One report interval of one stream as the CSV and NDJSON outputs write it: a serde
//! record, written by the `csv` crate (an empty cell for a rate the interval was too short
//! for) and by serde_json.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tsload_core::engine::IntervalReport;
use tsload_report::StreamKind;

/// One report interval of one stream, as the CSV and NDJSON outputs write it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalRow {
    /// End of the interval, seconds since the Unix epoch.
    pub time: f64,
    /// End of the interval, seconds since the load started.
    pub elapsed_s: f64,
    /// `write` or `query`.
    pub stream: StreamKind,
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

/// The CSV header: the row's fields, in order (a test holds it to serde's names).
pub const CSV_HEADER: [&str; 21] = [
    "time",
    "elapsed_s",
    "stream",
    "interval_s",
    "requests",
    "rows",
    "metrics",
    "bytes",
    "errors",
    "retries",
    "requests_per_s",
    "rows_per_s",
    "metrics_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "total_requests",
    "total_rows",
    "total_errors",
];

impl IntervalRow {
    pub fn new(stream: StreamKind, started_at: SystemTime, r: &IntervalReport) -> Self {
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
}
