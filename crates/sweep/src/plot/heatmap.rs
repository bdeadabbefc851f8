//! The heat map of a batch x workers sweep: one cell per point coloured by throughput
//! (log scale when the values span more than 20x), its value written in the cell, and
//! the colour scale beside it.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{PlotError, PlotOptions, Throughput, axis_of, draw_err, format_compact};
use crate::grid::Axis;
use crate::table::SweepTable;

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

pub(super) fn heatmap(
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
