//! The run's counters, rates and latency quantiles in Prometheus' text format, for
//! `--metrics-addr`.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use tsload_core::recorder::Counters;
use tsload_report::StreamKind;

use crate::row::IntervalRow;

/// What one stream has done so far, for the Prometheus exposition.
#[derive(Debug)]
pub(crate) struct StreamState {
    pub(crate) totals: Counters,
    pub(crate) latency: Histogram<u64>,
    /// The last interval long enough to have rates.
    pub(crate) rates: Option<IntervalRow>,
}

/// The Prometheus text exposition (format 0.0.4) of `streams`. By hand, not by
/// prometheus-client: its encoders write OpenMetrics without a summary type, and
/// `tsload_latency_seconds{quantile=...}` is what dashboards (configs/grafana) read.
pub(crate) fn exposition(streams: &[(StreamKind, StreamState)]) -> String {
    let mut out = String::new();
    counters(&mut out, streams);
    rates(&mut out, streams);
    latency(&mut out, streams);
    out
}

/// The counters of the run so far, and the errors by kind.
fn counters(out: &mut String, streams: &[(StreamKind, StreamState)]) {
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
}

/// The rates of the last interval long enough to have them.
fn rates(out: &mut String, streams: &[(StreamKind, StreamState)]) {
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
}

/// The latency quantiles, sum and count of the run so far.
fn latency(out: &mut String, streams: &[(StreamKind, StreamState)]) {
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
}
