//! SVG plots of a sweep, drawn with plotters' SVG backend alone (no font or bitmap
//! libraries: text is written as SVG `<text>` elements and laid out by the viewer).
//!
//! Three kinds, chosen by [`choose_plot`] from which keys vary:
//! - [`PlotKind::RateVsRtt`] (only RTT keys such as `delay` vary; docs/experiments.md R1):
//!   throughput against the measured RTT, points and line, with the fitted model
//!   `rate = C / (t_service + k * RTT)` as a second series.
//! - [`PlotKind::Heatmap`] (exactly `batch` and `workers` vary; docs/experiments.md R4): one cell
//!   per (workers, batch), colored by throughput (log scale when the values span more
//!   than 20x), the value written in the cell.
//! - [`PlotKind::Lines`] (anything else): throughput against the first varying key, one
//!   line per combination of the other varying keys.

mod heatmap;
mod lines;
mod rtt;

use std::io;

use crate::fit::{DEFAULT_RTT_KEYS, TRequestSource};
use crate::grid::Axis;
use crate::table::{Measure, Rates, SweepRow, SweepTable};
use heatmap::heatmap;
use lines::lines;
use rtt::rate_vs_rtt;

/// Which plot to draw (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum PlotKind {
    /// Throughput vs measured RTT with the fitted model curve.
    RateVsRtt,
    /// Throughput over `x_key` (columns) x `y_key` (rows).
    Heatmap { x_key: String, y_key: String },
    /// Throughput vs `x_key`, one line per combination of the other varying keys.
    Lines { x_key: String },
}

/// Which rate the plot shows: a write sweep's rows, metrics or requests (batches); a query
/// sweep's requests, transactions, statements or rows read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    Rows,
    Metrics,
    /// Write batches, or queries.
    Requests,
    /// Query transactions (TPS).
    Transactions,
    /// Query statements (QPS).
    Statements,
    /// Result rows a query sweep read.
    RowsRead,
}

impl Throughput {
    /// The rate of this kind in `row`; `None` when the row's run does not measure it
    /// (rows/s of a query run, statements/s of a write run) or is no measure at all
    /// ([`crate::Verdict::is_measure`]: it is not plotted).
    pub fn of(self, row: &SweepRow) -> Option<f64> {
        if !row.verdict.is_measure() {
            return None;
        }
        match (self, row.rates) {
            (Throughput::Rows, Rates::Writes { rows_per_s, .. }) => Some(rows_per_s),
            (Throughput::Metrics, Rates::Writes { metrics_per_s, .. }) => Some(metrics_per_s),
            (
                Throughput::Requests,
                Rates::Writes { requests_per_s, .. } | Rates::Queries { requests_per_s, .. },
            ) => Some(requests_per_s),
            (
                Throughput::Transactions,
                Rates::Transactions {
                    transactions_per_s, ..
                },
            ) => Some(transactions_per_s),
            (
                Throughput::Statements,
                Rates::Queries {
                    statements_per_s, ..
                }
                | Rates::Transactions {
                    statements_per_s, ..
                },
            ) => Some(statements_per_s),
            (
                Throughput::RowsRead,
                Rates::Queries {
                    rows_read_per_s, ..
                }
                | Rates::Transactions {
                    rows_read_per_s, ..
                },
            ) => Some(rows_read_per_s),
            _ => None,
        }
    }

    /// The axis unit: `rows/s`, `metrics/s`, `requests/s`, `transactions/s`,
    /// `statements/s`, `rows read/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Throughput::Rows => "rows/s",
            Throughput::Metrics => "metrics/s",
            Throughput::Requests => "requests/s",
            Throughput::Transactions => "transactions/s",
            Throughput::Statements => "statements/s",
            Throughput::RowsRead => "rows read/s",
        }
    }

    /// The default for a kind of plot of runs that measured `measure`: for writes rows/s
    /// against RTT (as R1 reports), metrics/s in the heat map (as R4's fields/s), rows/s
    /// in line plots; for queries requests/s (transactions/s, TPS, for transactions).
    pub fn default_for(kind: &PlotKind, measure: Measure) -> Throughput {
        match (measure, kind) {
            (Measure::Writes, PlotKind::Heatmap { .. }) => Throughput::Metrics,
            (Measure::Writes, PlotKind::RateVsRtt | PlotKind::Lines { .. }) => Throughput::Rows,
            (Measure::Queries, _) => Throughput::Requests,
            (Measure::Transactions, _) => Throughput::Transactions,
        }
    }
}

/// How to draw. `Default`: automatic throughput, automatic title, 900 x 600 pixels,
/// RTT keys [`DEFAULT_RTT_KEYS`], closed-loop request times for the fit.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotOptions {
    /// `None`: [`Throughput::default_for`] the kind and the table's measure.
    pub throughput: Option<Throughput>,
    /// `None`: a title naming what is plotted.
    pub title: Option<String>,
    pub width: u32,
    pub height: u32,
    /// Keys that set the network RTT: a line plot against one of them uses the measured
    /// RTT as its x axis.
    pub rtt_keys: Vec<String>,
    /// The request time used for the model curve of [`PlotKind::RateVsRtt`].
    pub t_request_source: TRequestSource,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            throughput: None,
            title: None,
            width: 900,
            height: 600,
            rtt_keys: DEFAULT_RTT_KEYS.iter().map(|k| k.to_string()).collect(),
            t_request_source: TRequestSource::ClosedLoop,
        }
    }
}

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("nothing to plot: the sweep has no results")]
    NoRows,
    #[error(
        "nothing to plot: no point is a measure (each failed, was interrupted, fell short or is unverified)"
    )]
    NoMeasure,
    #[error("the sweep's runs did not measure {unit}: they measured {measure:?}")]
    NotMeasured {
        unit: &'static str,
        measure: Measure,
    },
    #[error("the plot names key `{key}`, which the sweep does not have (keys: {keys})")]
    UnknownKey { key: String, keys: String },
    #[error(
        "cannot place the points on the x axis: no row has a measured RTT and the `{key}` values are not durations"
    )]
    NoRtt { key: String },
    #[error("drawing the plot failed: {0}")]
    Draw(String),
    #[error("writing the plot failed: {0}")]
    Io(#[from] io::Error),
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Picks the plot for a sweep from the keys that vary (more than one value):
/// - only keys in `rtt_keys` vary (e.g. `delay`), or none varies but an RTT key is
///   present: [`PlotKind::RateVsRtt`];
/// - exactly `batch` and `workers` vary: [`PlotKind::Heatmap`] with workers across and
///   batch up;
/// - otherwise [`PlotKind::Lines`] against the first varying key (the first key when
///   none varies).
pub fn choose_plot(axes: &[Axis], rtt_keys: &[&str]) -> PlotKind {
    let varying: Vec<&str> = axes
        .iter()
        .filter(|a| a.varies())
        .map(|a| a.key.as_str())
        .collect();
    let is_rtt = |k: &str| rtt_keys.contains(&k);
    if varying.is_empty() {
        if axes.iter().any(|a| is_rtt(&a.key)) {
            return PlotKind::RateVsRtt;
        }
        return PlotKind::Lines {
            x_key: axes.first().map(|a| a.key.clone()).unwrap_or_default(),
        };
    }
    if varying.iter().all(|k| is_rtt(k)) {
        return PlotKind::RateVsRtt;
    }
    if varying.len() == 2 && varying.contains(&"batch") && varying.contains(&"workers") {
        return PlotKind::Heatmap {
            x_key: "workers".to_string(),
            y_key: "batch".to_string(),
        };
    }
    PlotKind::Lines {
        x_key: varying[0].to_string(),
    }
}

/// Draws `kind` for `table` as an SVG document.
pub fn render_svg(
    table: &SweepTable,
    kind: &PlotKind,
    opts: &PlotOptions,
) -> Result<String, PlotError> {
    if table.rows.is_empty() {
        return Err(PlotError::NoRows);
    }
    if !table.rows.iter().any(|r| r.verdict.is_measure()) {
        return Err(PlotError::NoMeasure);
    }
    let throughput = opts
        .throughput
        .unwrap_or(Throughput::default_for(kind, table.measure));
    if table.rows.iter().all(|r| throughput.of(r).is_none()) {
        return Err(PlotError::NotMeasured {
            unit: throughput.unit(),
            measure: table.measure,
        });
    }
    let mut svg = String::new();
    match kind {
        PlotKind::RateVsRtt => rate_vs_rtt(table, throughput, opts, &mut svg)?,
        PlotKind::Heatmap { x_key, y_key } => {
            heatmap(table, x_key, y_key, throughput, opts, &mut svg)?
        }
        PlotKind::Lines { x_key } => lines(table, x_key, throughput, opts, &mut svg)?,
    }
    Ok(svg)
}

/// [`render_svg`], written to `w`.
pub fn write_svg<W: io::Write>(
    table: &SweepTable,
    kind: &PlotKind,
    opts: &PlotOptions,
    mut w: W,
) -> Result<(), PlotError> {
    let svg = render_svg(table, kind, opts)?;
    w.write_all(svg.as_bytes())?;
    Ok(())
}

/// A compact number for labels: 3 significant digits with k/M/G (`3.9k`, `7.29M`, `0.45`).
pub fn format_compact(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let sa = scaled.abs();
    let decimals = if sa >= 100.0 || sa == 0.0 {
        0
    } else if sa >= 10.0 {
        1
    } else if sa >= 1.0 {
        2
    } else {
        3
    };
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s + suffix
}

/// The axis range for values: from 0 (or the smallest value if negative) to 5% past the
/// largest; a flat or empty set gets a unit range.
fn padded_range(values: impl Iterator<Item = f64>, pad: f64) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = (0.0f64, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !hi.is_finite() || hi <= lo {
        return lo..lo + 1.0;
    }
    lo..hi + (hi - lo) * pad
}

fn axis_of<'a>(table: &'a SweepTable, key: &str) -> Result<&'a Axis, PlotError> {
    table
        .axes
        .iter()
        .find(|a| a.key == key)
        .ok_or_else(|| PlotError::UnknownKey {
            key: key.to_string(),
            keys: table.keys().join(", "),
        })
}
