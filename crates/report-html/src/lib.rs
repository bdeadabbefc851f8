//! The HTML report of tsload runs: one self-contained page (inline CSS and JS, SVG drawn
//! here, no request to any network) built from run reports as JSON, the same JSON
//! `tsload run --json` writes, so `--out html=` and `tsload report` give the same page.
//!
//! Pure: [`render`] takes the reports and returns the page as a `String`; the caller
//! writes it (the CLI through its redacting `out.rs`). The figures the page shows carry
//! their exact JSON value in `data-value` attributes (ids `r{report}-{stream}-{figure}`),
//! and each chart says how many points it holds (`data-points`), so a browser test can
//! check the page against the report.
//!
//! A report is checked once, as it comes in, into the typed view the drawing code takes
//! (`checked.rs`): a figure no run can have (a time that is not finite or out of range,
//! interval ends going back, counts whose sum passes a `u64`, sizes past the caps) is an
//! [`Error::OutOfRange`] naming the report, the field and the value, never a chart that
//! cannot end or a sum that wraps.
//!
//! Beside the reports a page may take each report's HdrHistogram interval log ([`Hlog`],
//! read by [`read_hlog`]; paired with the reports in the order given), a sweep's
//! `sweep.json` (each figure against each swept key, with the RTT fit) and, for the shards
//! of one run, draws each shard's line over time and the merged one ([`Page`]).

mod chart;
mod checked;
mod escape;
mod hlog;
mod page;
mod shards;
mod svg;
mod sweep;

use serde::{Deserialize, Serialize};
pub use tsload_report::StreamKind;

pub use hlog::{Hlog, read_hlog};
pub use page::{Figure, Page, render, render_page};

/// What stops a page from being built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No report was given.
    #[error("no report to show")]
    NoReport,
    /// A report is not what `tsload run --json` writes.
    #[error("{label}: not a tsload run report: {why}")]
    NotAReport { label: String, why: String },
    /// A report states a figure no run can have: which report, the field's path
    /// (`intervals[3].elapsed_s`), its value and what is allowed.
    #[error("{label}: {field} is {value}; allowed: {allowed}")]
    OutOfRange {
        label: String,
        field: String,
        value: String,
        allowed: String,
    },
    /// An interval log that cannot be read: which, and what is wrong.
    #[error("{label}: not a readable tsload interval log: {why}")]
    Hlog { label: String, why: String },
    /// An interval log line refused by the log reader: the log, the line and why.
    #[error("{0}")]
    HlogRead(#[from] tsload_report::hlog::HlogError),
    /// Interval logs given, but not one per report.
    #[error(
        "{logs} interval log(s) for {reports} report(s): give one --hlog per report, in the reports' order"
    )]
    HlogCount { reports: usize, logs: usize },
    /// An interval log that is not its report's.
    #[error("{log} does not belong to {report}: {why}")]
    HlogMismatch {
        log: String,
        report: String,
        why: String,
    },
    /// A sweep's `sweep.json` is not what `tsload sweep` writes.
    #[error("sweep.json: {0}")]
    BadSweep(String),
    /// A figure to embed is not a plain SVG chart.
    #[error("figure {title:?}: not a plain SVG chart: {why}")]
    BadFigure { title: String, why: String },
}

/// One report to show: its JSON (what `tsload run --json` writes) and a label (its file
/// name, or `run`).
#[derive(Debug, Clone)]
pub struct ReportInput {
    pub label: String,
    pub report: serde_json::Value,
}

/// One report interval of one stream, as the JSON report's `intervals` array carries it:
/// what the page's time charts and hover show. Latencies in milliseconds (to the
/// microsecond), from the interval's own histograms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub stream: StreamKind,
    /// End of the interval, seconds since the load started.
    pub elapsed_s: f64,
    /// The interval's length in seconds (the last one may be shorter).
    pub interval_s: f64,
    /// Requests acknowledged in the interval (writes: batches).
    #[serde(default)]
    pub requests: u64,
    /// Rows written (writes) or returned (queries).
    #[serde(default)]
    pub rows: u64,
    /// Field values written (write intervals only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<u64>,
    /// Statements run (query intervals only: a query report names no metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements: Option<u64>,
    /// Failed attempts, retried ones included.
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub retries: u64,
    /// Latency from the intended send time.
    #[serde(default)]
    pub p50_ms: f64,
    #[serde(default)]
    pub p99_ms: f64,
    #[serde(default)]
    pub p999_ms: f64,
    #[serde(default)]
    pub max_ms: f64,
    /// Service time: from the actual send.
    #[serde(default)]
    pub service_p50_ms: f64,
    #[serde(default)]
    pub service_p99_ms: f64,
    #[serde(default)]
    pub service_p999_ms: f64,
    #[serde(default)]
    pub service_max_ms: f64,
}

impl Interval {
    /// The record of one interval the engine reported.
    pub fn new(stream: StreamKind, r: &tsload_core::engine::IntervalReport) -> Self {
        let q = |h: &hdrhistogram::Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(q))
            }
        };
        let max = |h: &hdrhistogram::Histogram<u64>| if h.is_empty() { 0.0 } else { ms(h.max()) };
        Interval {
            stream,
            elapsed_s: round_us(r.end.as_secs_f64()),
            interval_s: round_us(r.end.saturating_sub(r.start).as_secs_f64()),
            requests: r.counters.requests,
            rows: r.counters.rows,
            metrics: (stream == StreamKind::Write).then_some(r.counters.metrics),
            statements: (stream == StreamKind::Query).then_some(r.counters.metrics),
            errors: r.counters.error_count(),
            retries: r.counters.retries,
            p50_ms: q(&r.latency, 0.5),
            p99_ms: q(&r.latency, 0.99),
            p999_ms: q(&r.latency, 0.999),
            max_ms: max(&r.latency),
            service_p50_ms: q(&r.service, 0.5),
            service_p99_ms: q(&r.service, 0.99),
            service_p999_ms: q(&r.service, 0.999),
            service_max_ms: max(&r.service),
        }
    }

    /// Field values (or statements) per second over the interval; `None` for an interval
    /// too short (under 50 ms) for a rate to mean anything.
    pub fn rate(&self) -> Option<f64> {
        (self.interval_s >= 0.05).then(|| self.count() as f64 / self.interval_s)
    }

    /// Field values written, or statements run.
    pub fn count(&self) -> u64 {
        self.metrics.or(self.statements).unwrap_or(0)
    }
}

/// Nanoseconds as milliseconds rounded to the microsecond (short in JSON, exact enough).
pub(crate) fn ms(ns: u64) -> f64 {
    (ns / 1000) as f64 / 1000.0
}

/// Seconds rounded to the microsecond.
pub(crate) fn round_us(s: f64) -> f64 {
    (s * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests;
