//! The sweep's result table: one [`SweepRow`] per grid point (the point plus what its run
//! measured) and its writers: an aligned text table, CSV (RFC 4180) and JSON.

use std::fmt::Write as _;
use std::io;

use serde::{Deserialize, Serialize};

use crate::grid::{Axis, Grid, Point};
use tsload_report::verdict::Verdict;

/// The RTT measured at one point, in milliseconds. `median_ms` is the figure the fit and
/// the plots use (robust against the odd slow probe); the others are optional extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttStats {
    /// How it was measured: e.g. `icmp`, `tcp`, `http`, `sql`.
    pub method: String,
    pub median_ms: f64,
    pub min_ms: Option<f64>,
    pub avg_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// What a sweep's runs measured: it names the rate columns of the table, the CSV and the
/// JSON, and the plot's axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Write runs: rows, metrics (field values) and requests (batches) per second.
    #[default]
    Writes,
    /// Query runs: requests (queries), statements and result rows read per second.
    Queries,
    /// Query runs whose requests are transactions (sysbench's `oltp_read_write` and
    /// `oltp_read_only`): transactions (TPS), statements (QPS) and rows read per second.
    Transactions,
}

impl Measure {
    /// The rate columns' names in the CSV and the JSON rows, in order.
    pub fn columns(self) -> [&'static str; 3] {
        match self {
            Measure::Writes => ["rows_per_s", "metrics_per_s", "requests_per_s"],
            Measure::Queries => ["requests_per_s", "statements_per_s", "rows_read_per_s"],
            Measure::Transactions => ["transactions_per_s", "statements_per_s", "rows_read_per_s"],
        }
    }

    /// The rate columns' headers in the text table, in order.
    fn headers(self) -> [&'static str; 3] {
        match self {
            Measure::Writes => ["rows/s", "metrics/s", "req/s"],
            Measure::Queries => ["req/s", "stmt/s", "rows read/s"],
            Measure::Transactions => ["txn/s", "stmt/s", "rows read/s"],
        }
    }
}

/// A point's rates, per second, each named for what it counts (as [`Measure::columns`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rates {
    /// A write run's rows, metrics and requests (batches) acknowledged per second.
    Writes {
        rows_per_s: f64,
        metrics_per_s: f64,
        requests_per_s: f64,
    },
    /// A query run's successful transactions (TPS), their statements (QPS) and the result
    /// rows they read, per second.
    Transactions {
        transactions_per_s: f64,
        statements_per_s: f64,
        rows_read_per_s: f64,
    },
    /// A query run's successful requests (queries), their statements and the result rows
    /// they read, per second.
    Queries {
        requests_per_s: f64,
        statements_per_s: f64,
        rows_read_per_s: f64,
    },
}

impl Rates {
    /// What the rates measure.
    pub fn measure(&self) -> Measure {
        match self {
            Rates::Writes { .. } => Measure::Writes,
            Rates::Queries { .. } => Measure::Queries,
            Rates::Transactions { .. } => Measure::Transactions,
        }
    }

    /// Requests completed per second: batches, queries or transactions, what one
    /// in-flight slot does one at a time (the fit's request time comes from it).
    pub fn requests_per_s(&self) -> f64 {
        match *self {
            Rates::Writes { requests_per_s, .. } | Rates::Queries { requests_per_s, .. } => {
                requests_per_s
            }
            Rates::Transactions {
                transactions_per_s, ..
            } => transactions_per_s,
        }
    }

    /// The rates in the order of [`Measure::columns`].
    pub fn values(&self) -> [f64; 3] {
        match *self {
            Rates::Writes {
                rows_per_s,
                metrics_per_s,
                requests_per_s,
            } => [rows_per_s, metrics_per_s, requests_per_s],
            Rates::Queries {
                requests_per_s,
                statements_per_s,
                rows_read_per_s,
            } => [requests_per_s, statements_per_s, rows_read_per_s],
            Rates::Transactions {
                transactions_per_s,
                statements_per_s,
                rows_read_per_s,
            } => [transactions_per_s, statements_per_s, rows_read_per_s],
        }
    }
}

/// One grid point and what its run measured. The CLI fills it from the run's report:
/// for writes `rows_per_s`, `metrics_per_s` and `requests / elapsed_s`; for queries
/// `requests_per_s` (or transactions), `statements_per_s` and the rows read per second;
/// then `latency.{mean,p50,p99}_ms`, `service.mean_ms`, `failed_requests` (or the sum of
/// `errors`), `stop_reason`, its [`Verdict`], and the run's effective `workers`, `batch` (rows per request)
/// and `in_flight` (requests in flight per worker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub point: Point,
    /// `None` when no probe ran or every probe failed.
    pub rtt: Option<RttStats>,
    /// Written as its own columns (`rows_per_s`, ... or `requests_per_s`, ...).
    #[serde(flatten)]
    pub rates: Rates,
    /// Latency from the intended send time (coordinated-omission corrected), ms.
    pub latency_mean_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// Time from the actual send to the acknowledgement, ms.
    pub service_mean_ms: f64,
    pub errors: u64,
    /// The client's CPU seconds over the run.
    #[serde(default)]
    pub client_cpu_s: f64,
    /// With `[monitor]`: the server's CPU seconds, and its data directory's growth per
    /// metric.
    #[serde(default)]
    pub server_cpu_s: Option<f64>,
    #[serde(default)]
    pub bytes_per_metric: Option<f64>,
    pub workers: u64,
    pub batch: u64,
    pub in_flight: u64,
    /// `None`: the point did not run (`none` in the table).
    #[serde(with = "tsload_report::stop::or_none")]
    pub stop_reason: Option<tsload_report::StopReasons>,
    /// The run's exit, what the server stored, and whether the row is a measure (a
    /// failed, interrupted, short or unverified point is marked and left out of fits).
    pub verdict: Verdict,
}

/// Why a row does not fit the table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    #[error("the row's point has keys [{got}] but the sweep's keys are [{expected}] (same order)")]
    KeysMismatch { expected: String, got: String },
    #[error(
        "the row's point has {key} = {value}, which is not one of the sweep's values for `{key}`"
    )]
    ValueNotInGrid { key: String, value: String },
    #[error("the row measures {row:?} but the sweep's table measures {table:?}")]
    MeasureMismatch { table: Measure, row: Measure },
}

/// The results of a sweep: the grid's axes, what its runs measured, and one row per
/// point that ran, in run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepTable {
    pub axes: Vec<Axis>,
    /// Writes unless said (a write sweep's JSON has no `measure`).
    #[serde(default)]
    pub measure: Measure,
    pub rows: Vec<SweepRow>,
}

/// Columns after the key columns and before the rates, in the CSV.
const RTT_COLUMNS: [&str; 5] = [
    "rtt_method",
    "rtt_median_ms",
    "rtt_min_ms",
    "rtt_avg_ms",
    "rtt_max_ms",
];

/// Columns after the rates ([`Measure::columns`]), in the CSV (the text table shows a
/// subset).
const MEASURE_COLUMNS: [&str; 8] = [
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "service_mean_ms",
    "errors",
    "client_cpu_s",
    "server_cpu_s",
    "bytes_per_metric",
];

/// The last columns of the CSV: the run's end and its [`Verdict`] (`verdict` is `ok` or
/// the flaw's word, `why` its reason).
const VERDICT_COLUMNS: [&str; 5] = ["stop_reason", "exit", "stored", "verdict", "why"];

/// Run settings columns; each is left out when a sweep key of the same name already
/// gives it (the values are then the point's).
const SETTING_COLUMNS: [&str; 3] = ["workers", "batch", "in_flight"];

impl SweepTable {
    /// An empty table of write runs for `grid`'s points.
    pub fn new(grid: &Grid) -> SweepTable {
        SweepTable::measuring(grid, Measure::Writes)
    }

    /// An empty table for `grid`'s points whose runs measure `measure`.
    pub fn measuring(grid: &Grid, measure: Measure) -> SweepTable {
        SweepTable {
            axes: grid.axes().to_vec(),
            measure,
            rows: Vec::new(),
        }
    }

    /// Appends a row; its point must have the grid's keys, in order, with values from the
    /// grid's lists, and its rates must be of the table's [`Measure`].
    pub fn push(&mut self, row: SweepRow) -> Result<(), TableError> {
        if row.rates.measure() != self.measure {
            return Err(TableError::MeasureMismatch {
                table: self.measure,
                row: row.rates.measure(),
            });
        }
        let keys_match = row.point.values().len() == self.axes.len()
            && row
                .point
                .values()
                .iter()
                .zip(&self.axes)
                .all(|((k, _), a)| *k == a.key);
        if !keys_match {
            return Err(TableError::KeysMismatch {
                expected: self.keys().join(", "),
                got: row
                    .point
                    .values()
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        for ((key, value), axis) in row.point.values().iter().zip(&self.axes) {
            if !axis.values.contains(value) {
                return Err(TableError::ValueNotInGrid {
                    key: key.clone(),
                    value: value.to_string(),
                });
            }
        }
        self.rows.push(row);
        Ok(())
    }

    /// The sweep's keys in order.
    pub fn keys(&self) -> Vec<&str> {
        self.axes.iter().map(|a| a.key.as_str()).collect()
    }

    fn setting_columns(&self) -> Vec<&'static str> {
        SETTING_COLUMNS
            .into_iter()
            .filter(|c| !self.axes.iter().any(|a| a.key == *c))
            .collect()
    }

    /// The CSV header: the sweep keys, then `rtt_method, rtt_median_ms, rtt_min_ms,
    /// rtt_avg_ms, rtt_max_ms`, the rates ([`Measure::columns`]: `rows_per_s,
    /// metrics_per_s, requests_per_s` for writes; `requests_per_s, statements_per_s,
    /// rows_read_per_s` for queries, `transactions_per_s, ...` for transactions), then
    /// `latency_mean_ms, latency_p50_ms, latency_p99_ms, service_mean_ms, errors,
    /// client_cpu_s, server_cpu_s, bytes_per_metric`, then those of `workers, batch,
    /// in_flight` that are not sweep keys, then `stop_reason, exit, stored, verdict, why`
    /// (the [`Verdict`]: `stored` empty when not known, `verdict` `ok` or the flaw's word,
    /// `why` empty or its reason).
    pub fn csv_header(&self) -> Vec<String> {
        let mut h: Vec<String> = self.axes.iter().map(|a| a.key.clone()).collect();
        h.extend(RTT_COLUMNS.iter().map(|c| c.to_string()));
        h.extend(self.measure.columns().iter().map(|c| c.to_string()));
        h.extend(MEASURE_COLUMNS.iter().map(|c| c.to_string()));
        h.extend(self.setting_columns().iter().map(|c| c.to_string()));
        h.extend(VERDICT_COLUMNS.iter().map(|c| c.to_string()));
        h
    }

    /// Writes the table as CSV: the [`csv_header`](Self::csv_header) line, then one line
    /// per row. RFC 4180: CRLF line ends, a field holding `,`, `"`, CR or LF is quoted with
    /// `"` and its quotes doubled. Numbers use Rust's shortest round-trip form; a missing
    /// value (no RTT, no RTT min) is an empty field.
    pub fn write_csv<W: io::Write>(&self, w: W) -> io::Result<()> {
        let mut w = csv_writer(w);
        w.write_record(self.csv_header())?;
        let settings = self.setting_columns();
        for row in &self.rows {
            let mut rec: Vec<String> = row
                .point
                .values()
                .iter()
                .map(|(k, v)| crate::grid::shown_value(k, &v.to_string()))
                .collect();
            let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
            let rtt = row.rtt.as_ref();
            rec.push(rtt.map(|r| r.method.clone()).unwrap_or_default());
            rec.push(opt(rtt.map(|r| r.median_ms)));
            rec.push(opt(rtt.and_then(|r| r.min_ms)));
            rec.push(opt(rtt.and_then(|r| r.avg_ms)));
            rec.push(opt(rtt.and_then(|r| r.max_ms)));
            for v in row.rates.values().into_iter().chain([
                row.latency_mean_ms,
                row.latency_p50_ms,
                row.latency_p99_ms,
                row.service_mean_ms,
            ]) {
                rec.push(v.to_string());
            }
            rec.push(row.errors.to_string());
            rec.push(row.client_cpu_s.to_string());
            rec.push(opt(row.server_cpu_s));
            rec.push(opt(row.bytes_per_metric));
            for c in &settings {
                rec.push(
                    match *c {
                        "workers" => row.workers,
                        "batch" => row.batch,
                        _ => row.in_flight,
                    }
                    .to_string(),
                );
            }
            rec.push(tsload_report::stop::shown(row.stop_reason.as_ref()));
            let v = &row.verdict;
            rec.push(v.exit.to_string());
            rec.push(v.stored.map(|n| n.to_string()).unwrap_or_default());
            rec.push(v.word().to_string());
            rec.push(v.flaw.as_ref().map(|f| f.why.clone()).unwrap_or_default());
            w.write_record(&rec)?;
        }
        w.flush()
    }

    /// The table as aligned text, one line per row, for a terminal: the sweep keys, then
    /// `rtt ms` (median), the rates (`rows/s`, `metrics/s`, `req/s` for writes; `req/s`
    /// or `txn/s`, `stmt/s`, `rows read/s` for queries), `lat mean`, `p50`, `p99`,
    /// `svc mean` (ms), `errors`, `stop`, `exit`, `stored`, `verdict`. Numbers are
    /// right-aligned, text left-aligned. Under the table, each point that is not a
    /// measure, with why.
    pub fn render_text(&self) -> String {
        let mut header: Vec<String> = self.axes.iter().map(|a| a.key.clone()).collect();
        let n_keys = header.len();
        let rates = self.measure.headers();
        header.extend(
            [
                "rtt ms", rates[0], rates[1], rates[2], "lat mean", "p50", "p99", "svc mean",
                "errors", "stop", "exit", "stored", "verdict",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        let mut cells: Vec<Vec<String>> = Vec::with_capacity(self.rows.len());
        for row in &self.rows {
            cells.push(self.text_cells(row));
        }
        let ncols = header.len();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for line in &cells {
            for (i, c) in line.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        // Key columns are right-aligned when every value of the key is a number.
        let numeric: Vec<bool> = (0..ncols)
            .map(|i| {
                if i < n_keys {
                    self.axes[i].values.iter().all(|v| v.as_f64().is_some())
                } else {
                    // `stop` and `verdict` are words.
                    i != ncols - 1 && i != ncols - 4
                }
            })
            .collect();
        let mut out = String::new();
        let mut emit = |line: &[String]| {
            let mut s = String::new();
            for (i, c) in line.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = widths[i] - c.chars().count();
                if numeric[i] {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    if i != ncols - 1 {
                        s.push_str(&" ".repeat(pad));
                    }
                }
            }
            let _ = writeln!(out, "{}", s.trim_end());
        };
        emit(&header);
        for line in &cells {
            emit(line);
        }
        for (i, row) in self.rows.iter().enumerate() {
            if !row.verdict.is_measure() {
                let _ = writeln!(
                    out,
                    "point {} ({}) is no measure, left out of fits: {}",
                    i + 1,
                    row.point.label(),
                    row.verdict
                );
            }
        }
        out
    }

    /// A row's cells in the text table: its point, RTT, rates, latencies, errors and
    /// verdict.
    fn text_cells(&self, row: &SweepRow) -> Vec<String> {
        let mut line: Vec<String> = row
            .point
            .values()
            .iter()
            .map(|(k, v)| crate::grid::shown_value(k, &v.to_string()))
            .collect();
        line.push(
            row.rtt
                .as_ref()
                .map(|r| format!("{:.3}", r.median_ms))
                .unwrap_or_else(|| "-".to_string()),
        );
        let [a, b, c] = row.rates.values();
        match self.measure {
            Measure::Writes => {
                line.push(format!("{a:.0}"));
                line.push(format!("{b:.0}"));
                line.push(format!("{c:.1}"));
            }
            Measure::Queries | Measure::Transactions => {
                line.push(format!("{a:.1}"));
                line.push(format!("{b:.1}"));
                line.push(format!("{c:.0}"));
            }
        }
        line.push(format!("{:.3}", row.latency_mean_ms));
        line.push(format!("{:.3}", row.latency_p50_ms));
        line.push(format!("{:.3}", row.latency_p99_ms));
        line.push(format!("{:.3}", row.service_mean_ms));
        line.push(row.errors.to_string());
        line.push(tsload_report::stop::shown(row.stop_reason.as_ref()));
        line.push(row.verdict.exit.to_string());
        line.push(row.verdict.stored_text());
        line.push(row.verdict.word().to_string());
        line
    }
}

/// A CSV writer as the sweep's tables are written: RFC 4180 (a field holding `,`, `"`,
/// CR or LF quoted, its quotes doubled), CRLF line ends.
pub(crate) fn csv_writer<W: io::Write>(w: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::SweepValue;

    pub(crate) fn row(point: &Point, rtt: Option<f64>, rows_per_s: f64) -> SweepRow {
        SweepRow {
            point: point.clone(),
            rtt: rtt.map(|m| RttStats {
                method: "icmp".into(),
                median_ms: m,
                min_ms: Some(m * 0.9),
                avg_ms: None,
                max_ms: Some(m * 1.5),
            }),
            rates: Rates::Writes {
                rows_per_s,
                metrics_per_s: rows_per_s * 10.0,
                requests_per_s: rows_per_s / 10.0,
            },
            latency_mean_ms: 1.25,
            latency_p50_ms: 1.0,
            latency_p99_ms: 4.5,
            service_mean_ms: 1.2,
            errors: 0,
            client_cpu_s: 0.5,
            server_cpu_s: None,
            bytes_per_metric: None,
            workers: 16,
            batch: 10,
            in_flight: 1,
            stop_reason: "duration".parse().ok(),
            verdict: crate::Verdict::passed(None),
        }
    }

    fn table() -> SweepTable {
        let grid = Grid::new(vec![
            (
                "delay",
                vec![SweepValue::from("0ms"), SweepValue::from("1ms")],
            ),
            ("batch", vec![SweepValue::Int(1), SweepValue::Int(50)]),
        ])
        .unwrap();
        let mut t = SweepTable::new(&grid);
        for (i, p) in grid.points().iter().enumerate() {
            t.push(row(p, Some(0.05 + i as f64), 1000.0 * (i + 1) as f64))
                .unwrap();
        }
        t
    }

    #[test]
    fn push_checks_keys_and_values() {
        let mut t = table();
        let wrong_order = Point::new(vec![
            ("batch".into(), SweepValue::Int(1)),
            ("delay".into(), SweepValue::from("0ms")),
        ]);
        let err = t.push(row(&wrong_order, None, 1.0)).unwrap_err();
        assert_eq!(
            err,
            TableError::KeysMismatch {
                expected: "delay, batch".into(),
                got: "batch, delay".into()
            }
        );
        let off_grid = Point::new(vec![
            ("delay".into(), SweepValue::from("3ms")),
            ("batch".into(), SweepValue::Int(1)),
        ]);
        assert_eq!(
            t.push(row(&off_grid, None, 1.0)).unwrap_err(),
            TableError::ValueNotInGrid {
                key: "delay".into(),
                value: "3ms".into()
            }
        );
        assert_eq!(t.rows.len(), 4);
    }

    #[test]
    fn csv_header_rows_and_quoting() {
        let mut t = table();
        t.rows[1].stop_reason = None;
        t.rows[1].verdict = crate::Verdict {
            exit: 1,
            stored: Some(0),
            flaw: Some(crate::Flaw {
                kind: crate::FlawKind::Shortfall,
                why: "stored 0, of \"500\"\nrows".into(),
            }),
        };
        t.rows[2].rtt = None;
        let mut out = Vec::new();
        t.write_csv(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "delay,batch,rtt_method,rtt_median_ms,rtt_min_ms,rtt_avg_ms,rtt_max_ms,rows_per_s,\
             metrics_per_s,requests_per_s,latency_mean_ms,latency_p50_ms,latency_p99_ms,\
             service_mean_ms,errors,client_cpu_s,server_cpu_s,bytes_per_metric,workers,in_flight,\
             stop_reason,exit,stored,verdict,why"
        );
        assert_eq!(
            lines[1],
            "0ms,1,icmp,0.05,0.045000000000000005,,0.07500000000000001,1000,10000,100,1.25,1,4.5,1.2,0,0.5,,,16,1,duration,0,,ok,"
        );
        assert!(
            lines[2].ends_with(",16,1,none,1,0,shortfall,\"stored 0, of \"\"500\"\"\nrows\""),
            "{}",
            lines[2]
        );
        assert!(lines[3].starts_with("1ms,1,,,,,,3000,"), "{}", lines[3]);
        assert_eq!(lines.len(), 6); // header, 4 rows, "" after the last CRLF
        assert_eq!(lines[5], "");
    }

    #[test]
    fn text_is_aligned() {
        let t = table();
        let text = t.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(
            lines[0].starts_with("delay  batch  rtt ms  rows/s"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("0ms        1   0.050    1000"),
            "{text}"
        );
        assert!(
            lines[4].starts_with("1ms       50   3.050    4000"),
            "{text}"
        );
        // The right-aligned numeric columns end at the same offset on every line.
        let end_of = |line: &str, col: &str| line.find(col).map(|i| i + col.len());
        assert_eq!(end_of(lines[0], "rows/s"), end_of(lines[1], "1000"));
        assert_eq!(end_of(lines[0], "rows/s"), end_of(lines[4], "4000"));
    }

    #[test]
    fn json_round_trips() {
        let t = table();
        let mut out = Vec::new();
        t.write_json(&[], &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["axes"][0]["key"], "delay");
        assert_eq!(v["axes"][1]["values"], serde_json::json!([1, 50]));
        assert_eq!(
            v["rows"][3]["point"],
            serde_json::json!({"delay": "1ms", "batch": 50})
        );
        assert_eq!(v["rows"][3]["rtt"]["median_ms"], 3.05);
        assert_eq!(v["fits"], serde_json::json!([]));
        // Read back from the bytes (a serde_json::Value would sort the point's keys).
        let back: SweepTable = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.axes, t.axes);
        assert_eq!(back.rows.len(), t.rows.len());
        for (b, r) in back.rows.iter().zip(&t.rows) {
            assert_eq!(b.point, r.point);
            assert_eq!(b.rates, r.rates);
            assert_eq!(b.stop_reason, r.stop_reason);
        }
        assert_eq!(back.measure, Measure::Writes);
        // A write sweep's JSON is as it was: no `measure`, the rows' rates by their names.
        assert!(v.get("measure").is_none(), "{v}");
        let row = v["rows"][0].as_object().unwrap();
        let keys: Vec<&str> = row.keys().map(|k| k.as_str()).collect();
        for k in ["rows_per_s", "metrics_per_s", "requests_per_s"] {
            assert!(keys.contains(&k), "{keys:?}");
        }
    }

    /// A query sweep's table: requests (or transactions), statements and rows read.
    fn query_table(measure: Measure) -> SweepTable {
        let grid = Grid::new(vec![(
            "query.workers",
            vec![SweepValue::Int(1), SweepValue::Int(8)],
        )])
        .unwrap();
        let mut t = SweepTable::measuring(&grid, measure);
        for (i, p) in grid.points().iter().enumerate() {
            let mut r = row(p, None, 0.0);
            let n = (i + 1) as f64;
            r.rates = match measure {
                Measure::Queries => Rates::Queries {
                    requests_per_s: 100.0 * n,
                    statements_per_s: 100.0 * n,
                    rows_read_per_s: 6000.0 * n,
                },
                _ => Rates::Transactions {
                    transactions_per_s: 50.5 * n,
                    statements_per_s: 1010.0 * n,
                    rows_read_per_s: 7070.0 * n,
                },
            };
            t.push(r).unwrap();
        }
        t
    }

    #[test]
    fn a_query_sweep_names_its_rates_for_what_they_count() {
        let t = query_table(Measure::Transactions);
        let mut out = Vec::new();
        t.write_csv(&mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "query.workers,rtt_method,rtt_median_ms,rtt_min_ms,rtt_avg_ms,rtt_max_ms,\
             transactions_per_s,statements_per_s,rows_read_per_s,latency_mean_ms,\
             latency_p50_ms,latency_p99_ms,service_mean_ms,errors,client_cpu_s,\
             server_cpu_s,bytes_per_metric,workers,batch,in_flight,stop_reason,exit,stored,\
             verdict,why"
        );
        assert!(
            lines[2].starts_with("8,,,,,,101,2020,14140,"),
            "{}",
            lines[2]
        );
        let text = t.render_text();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("txn/s  stmt/s  rows read/s"),
            "{text}"
        );
        assert!(!text.contains("metrics"), "{text}");

        let mut out = Vec::new();
        t.write_json(&[], &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["measure"], "transactions");
        let row = &v["rows"][1];
        assert_eq!(row["transactions_per_s"], 101.0);
        assert_eq!(row["statements_per_s"], 2020.0);
        assert_eq!(row["rows_read_per_s"], 14140.0);
        for gone in ["rows_per_s", "metrics_per_s", "requests_per_s"] {
            assert!(row.get(gone).is_none(), "{gone} in {row}");
        }
        let back: SweepTable = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, t);

        let q = query_table(Measure::Queries);
        let header = q.csv_header().join(",");
        assert!(
            header.contains(",requests_per_s,statements_per_s,rows_read_per_s,"),
            "{header}"
        );
        let mut out = Vec::new();
        q.write_json(&[], &mut out).unwrap();
        let back: SweepTable = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, q);
        assert_eq!(back.rows[1].rates.requests_per_s(), 200.0);
    }

    #[test]
    fn a_row_of_another_measure_is_refused() {
        let mut t = query_table(Measure::Queries);
        let p = t.rows[0].point.clone();
        assert_eq!(
            t.push(row(&p, None, 1.0)).unwrap_err(),
            TableError::MeasureMismatch {
                table: Measure::Queries,
                row: Measure::Writes
            }
        );
    }
}
