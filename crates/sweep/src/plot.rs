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

use std::io;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::fit::{DEFAULT_RTT_KEYS, RttFit, TRequestSource, fit_rows};
use crate::grid::{Axis, SweepValue};
use crate::table::{Measure, Rates, SweepRow, SweepTable};

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

/// The x position of a row on an RTT axis: its measured median RTT, or (when no row has
/// one) the first RTT key's value read as a duration.
struct RttAxis {
    measured: bool,
    key: String,
}

impl RttAxis {
    fn new(table: &SweepTable, key: &str) -> Result<RttAxis, PlotError> {
        let measured = table.rows.iter().any(|r| r.rtt.is_some());
        if !measured
            && !table
                .rows
                .iter()
                .any(|r| r.point.get(key).and_then(SweepValue::as_ms).is_some())
        {
            return Err(PlotError::NoRtt {
                key: key.to_string(),
            });
        }
        Ok(RttAxis {
            measured,
            key: key.to_string(),
        })
    }

    fn x(&self, row: &SweepRow) -> Option<f64> {
        if self.measured {
            row.rtt.as_ref().map(|r| r.median_ms)
        } else {
            row.point.get(&self.key).and_then(SweepValue::as_ms)
        }
    }

    fn title(&self) -> String {
        if self.measured {
            "measured RTT (ms, median)".to_string()
        } else {
            format!("{} setting (ms; no RTT measured)", self.key)
        }
    }
}

fn rate_vs_rtt(
    table: &SweepTable,
    throughput: Throughput,
    opts: &PlotOptions,
    svg: &mut String,
) -> Result<(), PlotError> {
    let key = table
        .axes
        .iter()
        .find(|a| opts.rtt_keys.contains(&a.key))
        .or(table.axes.first())
        .map(|a| a.key.clone())
        .unwrap_or_default();
    let axis = RttAxis::new(table, &key)?;
    let mut points: Vec<(f64, f64)> = table
        .rows
        .iter()
        .filter_map(|r| Some((axis.x(r)?, throughput.of(r)?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));

    let x_range = padded_range(points.iter().map(|p| p.0), 0.05);
    let (model, curve) = model_curve(table, throughput, opts, &axis, &x_range);
    let y_range = padded_range(
        points.iter().map(|p| p.1).chain(curve.iter().map(|p| p.1)),
        0.1,
    );
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| format!("{} vs RTT", throughput.unit()));

    let root = SVGBackend::with_string(svg, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc(axis.title())
        .y_desc(throughput.unit())
        .y_label_formatter(&|v| format_compact(*v))
        .x_label_formatter(&|v| format_compact(*v))
        .draw()
        .map_err(draw_err)?;
    let measured_color = BLUE;
    chart
        .draw_series(LineSeries::new(points.iter().copied(), measured_color))
        .map_err(draw_err)?
        .label(format!("measured {}", throughput.unit()))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], measured_color));
    chart
        .draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, 4, measured_color.filled())),
        )
        .map_err(draw_err)?;
    if let (Some((fit, _)), false) = (&model, curve.is_empty()) {
        let halving = match fit.halving_rtt_ms() {
            Ok(h) => format!(", halves at {} ms", format_compact(h)),
            Err(_) => String::new(),
        };
        let label = format!(
            "model C / (t_service + k x RTT): t_service {} ms, k {:.2}, R^2 {:.3}{halving}",
            format_compact(fit.t_service_ms),
            fit.k,
            fit.r_squared
        );
        let model_style = RED.stroke_width(2);
        chart
            .draw_series(LineSeries::new(curve, model_style))
            .map_err(draw_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], model_style));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_err)?;
    root.present().map_err(draw_err)?;
    Ok(())
}

/// A fitted RTT model and its constant C (rate * t_request).
type Model = (RttFit, f64);

/// The fitted model's curve over `x_range`: rate = C / (t_service + k * RTT), C the mean
/// of rate * t_request; none when the fit failed or the RTT was not measured.
fn model_curve(
    table: &SweepTable,
    throughput: Throughput,
    opts: &PlotOptions,
    axis: &RttAxis,
    x_range: &std::ops::Range<f64>,
) -> (Option<Model>, Vec<(f64, f64)>) {
    // The model curve: rate = C / (t_service + k * RTT), C the mean of rate * t_request.
    let fit = fit_rows(&table.rows, opts.t_request_source).ok();
    let model: Option<Model> = fit.and_then(|fit| {
        let cs: Vec<f64> = table
            .rows
            .iter()
            .filter_map(|r| Some(throughput.of(r)? * r.t_request_ms(opts.t_request_source)?))
            .collect();
        (!cs.is_empty()).then(|| (fit, cs.iter().sum::<f64>() / cs.len() as f64))
    });
    let curve: Vec<(f64, f64)> = match (&model, axis.measured) {
        (Some((fit, c)), true) => (0..=200)
            .map(|i| x_range.start + (x_range.end - x_range.start) * i as f64 / 200.0)
            .filter_map(|x| {
                let t = fit.t_request_ms(x);
                (t > 0.0).then_some((x, c / t))
            })
            .collect(),
        _ => Vec::new(),
    };
    (model, curve)
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

/// The width of the heat map's colour scale strip, px.
const COLOR_SCALE_PX: u32 = 120;

/// The heat map's colour scale: a bar from `lo` (bottom) to `hi` (top) in the map's
/// colours, its ends and middle labelled (the middle geometric on a log scale).
fn color_scale<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    lo: f64,
    hi: f64,
    log: bool,
    height: u32,
) -> Result<(), PlotError> {
    const STEPS: i32 = 64;
    let (top, bottom) = (70i32, height as i32 - 80);
    let (x0, x1) = (10i32, 34i32);
    let span = (bottom - top).max(STEPS);
    for k in 0..STEPS {
        // k = 0 at the bottom (lo).
        let t = (f64::from(k) + 0.5) / f64::from(STEPS);
        let y1 = bottom - span * k / STEPS;
        let y0 = bottom - span * (k + 1) / STEPS;
        area.draw(&Rectangle::new(
            [(x0, y0), (x1, y1)],
            ViridisRGB::get_color(t).filled(),
        ))
        .map_err(draw_err)?;
    }
    let mid = if log {
        (lo * hi).sqrt()
    } else {
        (lo + hi) / 2.0
    };
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (value, y) in [(hi, bottom - span), (mid, bottom - span / 2), (lo, bottom)] {
        area.draw(&Text::new(
            format_compact(value),
            (x1 + 6, y),
            style.clone(),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

fn heatmap(
    table: &SweepTable,
    x_key: &str,
    y_key: &str,
    throughput: Throughput,
    opts: &PlotOptions,
    svg: &mut String,
) -> Result<(), PlotError> {
    let x_axis = axis_of(table, x_key)?;
    let y_axis = axis_of(table, y_key)?;
    let (nx, ny) = (x_axis.values.len(), y_axis.values.len());
    let cells = cells_of(table, x_axis, y_axis, throughput);
    let shade = Shade::of(&cells);
    let log = shade.log;
    let title = opts.title.clone().unwrap_or_else(|| {
        format!(
            "{} by {x_key} x {y_key}{}",
            throughput.unit(),
            if log { " (color: log scale)" } else { "" }
        )
    });
    let (x_labels, y_labels) = (shown(x_axis), shown(y_axis));

    let root = SVGBackend::with_string(svg, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    // The colour scale in a strip on the right: a figure's colour means nothing without
    // the values it spans.
    let strip = COLOR_SCALE_PX.min(opts.width / 3);
    let (plot_area, scale_area) = root.split_horizontally(opts.width - strip);
    // One value (or none): one colour, nothing to scale.
    if shade.spans() {
        color_scale(&scale_area, shade.lo, shade.hi, log, opts.height)?;
    }
    // An i32 range a..b holds b - a + 1 values: 0..n-1 gives n segments.
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (0..nx as i32 - 1).into_segmented(),
            (0..ny as i32 - 1).into_segmented(),
        )
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_labels(nx)
        .y_labels(ny)
        .x_label_formatter(&|v| segment_label(&x_labels, v))
        .y_label_formatter(&|v| segment_label(&y_labels, v))
        .x_desc(x_key)
        .y_desc(y_key)
        .draw()
        .map_err(draw_err)?;
    let cell_list: Vec<(i32, i32, Option<f64>)> = (0..nx)
        .flat_map(|i| (0..ny).map(move |j| (i, j)))
        .map(|(i, j)| (i as i32, j as i32, cells[i][j]))
        .collect();
    chart
        .draw_series(
            cell_list
                .iter()
                .map(|&(i, j, v)| cell_rect((i, j), (nx, ny), v, &shade)),
        )
        .map_err(draw_err)?;
    chart
        .draw_series(cell_list.iter().map(|&(i, j, v)| {
            let (text, color) = match v {
                Some(v) => (
                    format_compact(v),
                    if shade.at(v) < 0.6 { WHITE } else { BLACK },
                ),
                None => ("-".to_string(), BLACK),
            };
            let style = ("sans-serif", 15)
                .into_font()
                .color(&color)
                .pos(Pos::new(HPos::Center, VPos::Center));
            Text::new(
                text,
                (SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)),
                style,
            )
        }))
        .map_err(draw_err)?;
    root.present().map_err(draw_err)?;
    Ok(())
}

/// A heat map's cells in grid order (x, then y): each point's figure; a point that ran
/// twice (other keys constant) keeps the last.
fn cells_of(
    table: &SweepTable,
    x_axis: &Axis,
    y_axis: &Axis,
    throughput: Throughput,
) -> Vec<Vec<Option<f64>>> {
    let (x_key, y_key) = (x_axis.key.as_str(), y_axis.key.as_str());
    let (nx, ny) = (x_axis.values.len(), y_axis.values.len());
    let mut cells: Vec<Vec<Option<f64>>> = vec![vec![None; ny]; nx];
    for row in &table.rows {
        let (Some(xv), Some(yv)) = (row.point.get(x_key), row.point.get(y_key)) else {
            continue;
        };
        let (Some(i), Some(j)) = (
            x_axis.values.iter().position(|v| v == xv),
            y_axis.values.iter().position(|v| v == yv),
        ) else {
            continue;
        };
        cells[i][j] = throughput.of(row);
    }
    cells
}

/// A heat map's colour scale: the finite values' range, logarithmic when it spans more
/// than a factor of 20.
struct Shade {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Shade {
    fn of(cells: &[Vec<Option<f64>>]) -> Shade {
        let finite = || {
            cells
                .iter()
                .flatten()
                .flatten()
                .copied()
                .filter(|v| v.is_finite())
        };
        let lo = finite().fold(f64::INFINITY, f64::min);
        let hi = finite().fold(f64::NEG_INFINITY, f64::max);
        Shade {
            lo,
            hi,
            log: lo > 0.0 && hi / lo > 20.0,
        }
    }

    /// Whether there is a range to scale (two different finite values, at least).
    fn spans(&self) -> bool {
        self.hi > self.lo
    }

    /// Where `v` sits on the scale, 0 to 1 (the middle when there is no range).
    fn at(&self, v: f64) -> f64 {
        if !self.spans() {
            return 0.5;
        }
        let h = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        h.clamp(0.0, 1.0)
    }
}

/// Cell (i, j) of an nx x ny heat map, coloured by its value (grey for none).
fn cell_rect(
    (i, j): (i32, i32),
    (nx, ny): (usize, usize),
    v: Option<f64>,
    shade: &Shade,
) -> Rectangle<(SegmentValue<i32>, SegmentValue<i32>)> {
    let color = match v {
        Some(v) if v.is_finite() => ViridisRGB::get_color(shade.at(v)),
        _ => RGBColor(220, 220, 220),
    };
    let next = |k: i32, n: usize| {
        if (k as usize) + 1 >= n {
            SegmentValue::Last
        } else {
            SegmentValue::Exact(k + 1)
        }
    };
    Rectangle::new(
        [
            (SegmentValue::Exact(i), SegmentValue::Exact(j)),
            (next(i, nx), next(j, ny)),
        ],
        color.filled(),
    )
}

/// An axis's values as the plot shows them (secrets hidden).
fn shown(axis: &Axis) -> Vec<String> {
    axis.values
        .iter()
        .map(|v| crate::grid::shown_value(&axis.key, &v.to_string()))
        .collect()
}

/// The label of a segment's centre: its value's; nothing elsewhere.
fn segment_label(labels: &[String], v: &SegmentValue<i32>) -> String {
    match v {
        SegmentValue::CenterOf(i) => usize::try_from(*i)
            .ok()
            .and_then(|i| labels.get(i).cloned())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// How a line plot places a key's values on the x axis.
enum XPlace {
    Rtt(RttAxis),
    Number,
    Duration,
    /// Non-numeric values: their position in the key's list, labeled with the value.
    Category(Vec<String>),
}

fn lines(
    table: &SweepTable,
    x_key: &str,
    throughput: Throughput,
    opts: &PlotOptions,
    svg: &mut String,
) -> Result<(), PlotError> {
    let x_axis = axis_of(table, x_key)?;
    let place = x_place(table, x_axis, opts)?;
    let x_of = |row: &SweepRow| -> Option<f64> {
        let v = row.point.get(x_key)?;
        match &place {
            XPlace::Rtt(axis) => axis.x(row),
            XPlace::Number => v.as_f64(),
            XPlace::Duration => v.as_ms(),
            XPlace::Category(_) => x_axis.values.iter().position(|a| a == v).map(|i| i as f64),
        }
    };
    let x_title = match &place {
        XPlace::Rtt(axis) => axis.title(),
        XPlace::Duration => format!("{x_key} (ms)"),
        XPlace::Number | XPlace::Category(_) => x_key.to_string(),
    };
    let series = series_of(table, x_key, throughput, &x_of);
    let all = || series.iter().flat_map(|(_, p)| p.iter());
    let x_range = match &place {
        XPlace::Category(labels) => -0.5..labels.len() as f64 - 0.5,
        _ => padded_range(all().map(|p| p.0), 0.05),
    };
    let y_range = padded_range(all().map(|p| p.1), 0.1);
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| format!("{} vs {x_key}", throughput.unit()));
    let (category_label, n_x_labels) = x_labels(&place);

    let root = SVGBackend::with_string(svg, (opts.width, opts.height)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc(x_title)
        .y_desc(throughput.unit())
        .x_labels(n_x_labels)
        .x_label_formatter(&category_label)
        .y_label_formatter(&|v| format_compact(*v))
        .draw()
        .map_err(draw_err)?;
    // The legend goes where the lines are not: upper right when they mostly fall.
    let falling = series
        .iter()
        .filter_map(|(_, p)| Some(p.last()?.1 < p.first()?.1))
        .filter(|f| *f)
        .count()
        * 2
        > series.len();
    let single = series.len() == 1;
    for (n, (label, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(n).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color))
            .map_err(draw_err)?
            .label(if single && label.is_empty() {
                format!("measured {}", throughput.unit())
            } else {
                label.clone()
            })
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(draw_err)?;
    }
    chart
        .configure_series_labels()
        .position(if falling {
            SeriesLabelPosition::UpperRight
        } else {
            SeriesLabelPosition::UpperLeft
        })
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_err)?;
    root.present().map_err(draw_err)?;
    Ok(())
}

/// The x axis's labels of a place: each category's name at its index (nothing between),
/// or compact numbers; and how many to show.
fn x_labels(place: &XPlace) -> (impl Fn(&f64) -> String + '_, usize) {
    let label = move |v: &f64| match place {
        XPlace::Category(labels) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        _ => format_compact(*v),
    };
    let count = match place {
        XPlace::Category(labels) => labels.len(),
        _ => 10,
    };
    (label, count)
}

/// Where a plot puts its x values: the measured RTT (an RTT key), numbers, durations in
/// ms, or categories in the axis's order.
fn x_place(table: &SweepTable, x_axis: &Axis, opts: &PlotOptions) -> Result<XPlace, PlotError> {
    let x_key = x_axis.key.as_str();
    Ok(if opts.rtt_keys.iter().any(|k| k == x_key) {
        XPlace::Rtt(RttAxis::new(table, &x_axis.key)?)
    } else if x_axis.values.iter().all(|v| v.as_f64().is_some()) {
        XPlace::Number
    } else if x_axis.values.iter().all(|v| v.as_ms().is_some()) {
        XPlace::Duration
    } else {
        XPlace::Category(
            x_axis
                .values
                .iter()
                .map(|v| crate::grid::shown_value(&x_axis.key, &v.to_string()))
                .collect(),
        )
    })
}

/// The lines of a plot against `x_key`: one per combination of the other varying keys, in
/// first-seen order, each point's x by `x_of`, sorted by x.
fn series_of(
    table: &SweepTable,
    x_key: &str,
    throughput: Throughput,
    x_of: &dyn Fn(&SweepRow) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let others: Vec<&str> = table
        .axes
        .iter()
        .filter(|a| a.varies() && a.key != x_key)
        .map(|a| a.key.as_str())
        .collect();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for row in &table.rows {
        let Some(x) = x_of(row) else { continue };
        let label = others
            .iter()
            .map(|k| {
                let v = row
                    .point
                    .get(k)
                    .map(ToString::to_string)
                    .unwrap_or_default();
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(" ");
        let Some(y) = throughput.of(row) else {
            continue;
        };
        match series.iter_mut().find(|(l, _)| *l == label) {
            Some((_, pts)) => pts.push((x, y)),
            None => series.push((label, vec![(x, y)])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}
