//! The line plot: throughput against one varying key, one line per combination of the
//! other varying keys, the x axis numeric, in ms, by measured RTT or by category.

use plotters::prelude::*;

use super::rtt::RttAxis;
use super::{PlotError, PlotOptions, Throughput, axis_of, draw_err, format_compact, padded_range};
use crate::grid::Axis;
use crate::table::{SweepRow, SweepTable};

/// How a line plot places a key's values on the x axis.
enum XPlace {
    Rtt(RttAxis),
    Number,
    Duration,
    /// Non-numeric values: their position in the key's list, labeled with the value.
    Category(Vec<String>),
}

pub(super) fn lines(
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
