//! The pure part of `tsload compare`: one row per target (rate, latency, server and
//! client cost, bytes per metric), as a text table, CSV and JSON, and one SVG bar chart
//! per figure.

use std::fmt::Write as _;
use std::io;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::plot::{PlotError, format_compact};
use crate::table::csv_writer;
use tsload_report::verdict::Verdict;

/// One target's figures, from its run's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// The target profile's name.
    pub target: String,
    pub kind: String,
    pub rows: u64,
    pub metrics: u64,
    pub elapsed_s: f64,
    pub rows_per_s: f64,
    pub metrics_per_s: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// Client CPU microseconds per 1,000 metrics.
    pub client_cpu_us_per_1000_metrics: f64,
    /// With `[monitor]` in the profile: server CPU seconds per million metrics.
    pub server_cpu_s_per_million_metrics: Option<f64>,
    /// With `[monitor] data_dir`: disk growth per metric.
    pub bytes_per_metric: Option<f64>,
    /// `None`: the run has none (`none` in the table).
    #[serde(with = "tsload_report::stop::or_none")]
    pub stop_reason: Option<tsload_report::StopReasons>,
    /// The run's exit, what the server stored, and whether its figures are a measure
    /// (a failed target's are not charted).
    pub verdict: Verdict,
}

/// The figures charted, with their titles and units.
pub const CHARTS: &[(&str, &str, &str)] = &[
    ("rate", "metrics per second", "metrics/s"),
    ("p99", "p99 latency", "ms"),
    ("server_cpu", "server CPU per million metrics", "s"),
    ("bytes_per_metric", "bytes on disk per metric", "bytes"),
    ("client_cpu", "client CPU per 1,000 metrics", "us"),
];

impl CompareRow {
    /// The value a chart of [`CHARTS`] shows; `None` for a run that is no measure.
    pub fn chart_value(&self, chart: &str) -> Option<f64> {
        if !self.verdict.is_measure() {
            return None;
        }
        match chart {
            "rate" => Some(self.metrics_per_s),
            "p99" => Some(self.latency_p99_ms),
            "server_cpu" => self.server_cpu_s_per_million_metrics,
            "bytes_per_metric" => self.bytes_per_metric,
            "client_cpu" => Some(self.client_cpu_us_per_1000_metrics),
            _ => None,
        }
    }
}

const CSV_COLUMNS: [&str; 17] = [
    "target",
    "kind",
    "rows",
    "metrics",
    "elapsed_s",
    "rows_per_s",
    "metrics_per_s",
    "latency_p50_ms",
    "latency_p99_ms",
    "client_cpu_us_per_1000_metrics",
    "server_cpu_s_per_million_metrics",
    "bytes_per_metric",
    "stop_reason",
    "exit",
    "stored",
    "verdict",
    "why",
];

/// Writes the rows as CSV (RFC 4180; a figure not measured is an empty field).
pub fn write_csv<W: io::Write>(rows: &[CompareRow], w: W) -> io::Result<()> {
    let mut w = csv_writer(w);
    w.write_record(CSV_COLUMNS)?;
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in rows {
        w.write_record([
            r.target.clone(),
            r.kind.clone(),
            r.rows.to_string(),
            r.metrics.to_string(),
            r.elapsed_s.to_string(),
            r.rows_per_s.to_string(),
            r.metrics_per_s.to_string(),
            r.latency_p50_ms.to_string(),
            r.latency_p99_ms.to_string(),
            r.client_cpu_us_per_1000_metrics.to_string(),
            opt(r.server_cpu_s_per_million_metrics),
            opt(r.bytes_per_metric),
            tsload_report::stop::shown(r.stop_reason.as_ref()),
            r.verdict.exit.to_string(),
            r.verdict.stored.map(|n| n.to_string()).unwrap_or_default(),
            r.verdict.word().to_string(),
            r.verdict
                .flaw
                .as_ref()
                .map(|f| f.why.clone())
                .unwrap_or_default(),
        ])?;
    }
    w.flush()
}

/// The side-by-side table; under it, each target whose run is no measure, with why.
pub fn render_text(rows: &[CompareRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<18} {:>12} {:>12} {:>12} {:>9} {:>9} {:>12} {:>12} {:>10}  verdict",
        "target",
        "rows",
        "stored",
        "metrics/s",
        "p50 ms",
        "p99 ms",
        "server s/M",
        "bytes/metric",
        "client us/k"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), format_compact);
    for r in rows {
        let _ = writeln!(
            s,
            "{:<18} {:>12} {:>12} {:>12} {:>9} {:>9} {:>12} {:>12} {:>10}  {}",
            r.target,
            r.rows,
            r.verdict.stored_text(),
            format_compact(r.metrics_per_s),
            format_compact(r.latency_p50_ms),
            format_compact(r.latency_p99_ms),
            opt(r.server_cpu_s_per_million_metrics),
            opt(r.bytes_per_metric),
            format_compact(r.client_cpu_us_per_1000_metrics),
            r.verdict.word(),
        );
    }
    for r in rows.iter().filter(|r| !r.verdict.is_measure()) {
        let _ = writeln!(s, "{} is no measure, not charted: {}", r.target, r.verdict);
    }
    s
}

/// A bar chart of one figure over the targets; targets without the figure get no bar
/// and "n/a" under their name, a run that is no measure no bar and its verdict's word
/// ("failed") there.
pub fn bar_svg(rows: &[CompareRow], chart: &str) -> Result<String, PlotError> {
    let (_, title, unit) = CHARTS
        .iter()
        .find(|c| c.0 == chart)
        .copied()
        .unwrap_or((chart, chart, ""));
    if rows.is_empty() {
        return Err(PlotError::NoRows);
    }
    let values: Vec<Option<f64>> = rows.iter().map(|r| r.chart_value(chart)).collect();
    let top = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let n = rows.len();
    let mut svg = String::new();
    {
        let width = (160 * n as u32).max(480);
        let root = SVGBackend::with_string(&mut svg, (width, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top)
            .map_err(draw_err)?;
        c.configure_mesh()
            .disable_x_mesh()
            .label_style(("sans-serif", 14))
            .y_desc(unit)
            .y_label_formatter(&|v| format_compact(*v))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => rows.get(*i).map_or(String::new(), |r| {
                    if !r.verdict.is_measure() {
                        format!("{} ({})", r.target, r.verdict.word())
                    } else if values[*i].is_some() {
                        r.target.clone()
                    } else {
                        format!("{} (n/a)", r.target)
                    }
                }),
                _ => String::new(),
            })
            .draw()
            .map_err(draw_err)?;
        c.draw_series(values.iter().enumerate().filter_map(|(i, v)| {
            v.map(|v| {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    BLUE.mix(0.6).filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            })
        }))
        .map_err(draw_err)?;
        c.draw_series(values.iter().enumerate().filter_map(|(i, v)| {
            v.map(|v| {
                Text::new(
                    format_compact(v),
                    (SegmentValue::CenterOf(i), v),
                    ("sans-serif", 14),
                )
            })
        }))
        .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(target: &str, rate: f64, server: Option<f64>) -> CompareRow {
        CompareRow {
            target: target.into(),
            kind: "influx".into(),
            rows: 3_600,
            metrics: 36_000,
            elapsed_s: 1.0,
            rows_per_s: rate / 10.0,
            metrics_per_s: rate,
            latency_p50_ms: 1.0,
            latency_p99_ms: 4.0,
            client_cpu_us_per_1000_metrics: 20.0,
            server_cpu_s_per_million_metrics: server,
            bytes_per_metric: server.map(|s| s / 2.0),
            stop_reason: "data end".parse().ok(),
            verdict: Verdict::passed(Some(3_600)),
        }
    }

    /// A target whose run failed was drawn as bars of its partial figures (or zero);
    /// its failure was only in the table below the charts.
    #[test]
    fn a_failed_target_gets_no_bar_and_says_why() {
        let mut failed = row("vm", 2.0e6, Some(0.5));
        failed.verdict = Verdict {
            exit: 1,
            stored: Some(0),
            flaw: Some(crate::Flaw {
                kind: crate::FlawKind::Shortfall,
                why: "the server stored 0 new rows of the 3600 it acknowledged".into(),
            }),
        };
        let rows = [row("pg", 1.5e6, Some(0.8)), failed];
        for (chart, _, _) in CHARTS {
            assert_eq!(rows[1].chart_value(chart), None, "{chart}");
            let svg = bar_svg(&rows, chart).unwrap();
            assert!(svg.contains("vm (shortfall)"), "{chart}");
            let doc = roxmltree::Document::parse(&svg).unwrap();
            // No label over a bar of the failed target's 2M.
            assert!(
                !doc.descendants().any(|n| n.text() == Some("2M")),
                "{chart}"
            );
        }
        let text = render_text(&rows);
        assert!(
            text.lines().nth(2).unwrap().ends_with("shortfall"),
            "{text}"
        );
        assert!(
            text.contains(
                "vm is no measure, not charted: shortfall (exit 1): the server stored 0 new rows"
            ),
            "{text}"
        );
        let mut out = Vec::new();
        write_csv(&rows, &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        assert!(
            csv.split("\r\n").nth(2).unwrap().ends_with(
                ",1,0,shortfall,the server stored 0 new rows of the 3600 it acknowledged"
            ),
            "{csv}"
        );
    }

    #[test]
    fn csv_text_and_bars() {
        let rows = [row("pg", 1.5e6, Some(0.8)), row("vm, fast", 2.0e6, None)];
        let mut out = Vec::new();
        write_csv(&rows, &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert!(
            lines[1].starts_with("pg,influx,3600,36000,"),
            "{}",
            lines[1]
        );
        assert!(lines[2].starts_with("\"vm, fast\","), "{}", lines[2]);
        assert!(lines[2].contains(",,,data end"), "{}", lines[2]);
        let text = render_text(&rows);
        assert!(
            text.contains("1.5M") && text.contains("2M") && text.contains("vm, fast"),
            "{text}"
        );
        for (chart, _, _) in CHARTS {
            let svg = bar_svg(&rows, chart).unwrap();
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let bars = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
            // The background, plus one bar per target that has the figure.
            let expected = 1 + rows
                .iter()
                .filter(|r| r.chart_value(chart).is_some())
                .count();
            assert!(bars >= expected, "{chart}: {bars} rects");
            if rows.iter().any(|r| r.chart_value(chart).is_none()) {
                assert!(svg.contains("(n/a)"), "{chart}");
            }
        }
        assert!(matches!(bar_svg(&[], "rate"), Err(PlotError::NoRows)));
    }
}
