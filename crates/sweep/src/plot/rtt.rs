//! The rate-vs-RTT plot: throughput against each row's measured RTT (or an RTT key's
//! value), with the fitted model `rate = C / (t_service + k * RTT)` as a second series.

use plotters::prelude::*;

use super::{PlotError, PlotOptions, Throughput, draw_err, format_compact, padded_range};
use crate::fit::{RttFit, fit_rows};
use crate::grid::SweepValue;
use crate::table::{SweepRow, SweepTable};

/// The x position of a row on an RTT axis: its measured median RTT, or (when no row has
/// one) the first RTT key's value read as a duration.
pub(super) struct RttAxis {
    measured: bool,
    key: String,
}

impl RttAxis {
    pub(super) fn new(table: &SweepTable, key: &str) -> Result<RttAxis, PlotError> {
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

    pub(super) fn x(&self, row: &SweepRow) -> Option<f64> {
        if self.measured {
            row.rtt.as_ref().map(|r| r.median_ms)
        } else {
            row.point.get(&self.key).and_then(SweepValue::as_ms)
        }
    }

    pub(super) fn title(&self) -> String {
        if self.measured {
            "measured RTT (ms, median)".to_string()
        } else {
            format!("{} setting (ms; no RTT measured)", self.key)
        }
    }
}

pub(super) fn rate_vs_rtt(
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
