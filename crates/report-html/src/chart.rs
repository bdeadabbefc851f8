//! The page's charts, as hand-written SVG: polylines in a 1000 x 200 plot area stretched to
//! the page's width (strokes keep their width), axis labels as HTML around it so they stay
//! readable on a phone. Time charts have one point per report interval; the percentile
//! spectrum has a log axis to p99.999, as HdrHistogram's plotter draws it.

use std::fmt::Write as _;

use crate::escape::esc;

/// Width and height of every plot's SVG coordinate space.
const W: f64 = 1000.0;
const H: f64 = 200.0;
/// Room left above the highest value.
const TOP: f64 = 8.0;
/// The most tick labels an axis gets, whatever its values: every loop that draws ticks
/// runs over a count computed first, at most this.
const MAX_TICKS: usize = 12;

/// One line of a chart: a value per point (`None`: nothing measured there, drawn at the
/// bottom).
pub(crate) struct Line<'a> {
    /// The figure it draws, as the page names it (`data-series`).
    pub key: &'a str,
    pub label: &'a str,
    /// Its color class (`c0`..`c5`).
    pub class: &'a str,
    pub values: Vec<Option<f64>>,
    /// Its own times (seconds), when the chart's lines do not share them (reports side
    /// by side); `None`: the chart's.
    pub t: Option<Vec<f64>>,
}

/// How values map to heights.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    Linear,
    /// Decades; values at or under the lowest decade sit on the bottom.
    Log,
}

/// The vertical range and its tick labels.
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Axis {
    fn new(scale: Scale, values: impl Iterator<Item = f64>, unit: &str) -> Axis {
        let (mut min_pos, mut max) = (f64::INFINITY, 0.0f64);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            min_pos = min_pos.min(v);
            max = max.max(v);
        }
        match scale {
            Scale::Linear => {
                // A little room above the highest value, so a flat line is not the frame.
                let top = if max > 0.0 { max * 1.08 } else { 1.0 };
                let step = nice_step(top);
                let hi = ((top / step).ceil() * step).max(step);
                // `as usize` saturates (NaN: 0), and the count is capped.
                let n = ((hi / step).round() as usize).min(MAX_TICKS - 1);
                let ticks = (0..=n)
                    .map(|i| i as f64 * step)
                    .map(|v| (v, format!("{}{unit}", short(v))))
                    .collect();
                Axis {
                    scale,
                    lo: 0.0,
                    hi,
                    ticks,
                }
            }
            Scale::Log => {
                let (lo, hi) = if max > 0.0 {
                    let hi = max.log10().ceil();
                    // At most MAX_TICKS - 1 decades: values further down sit on the bottom.
                    let lo = min_pos
                        .log10()
                        .floor()
                        .max(hi - (MAX_TICKS - 1) as f64)
                        .min(hi - 1.0);
                    (lo, hi)
                } else {
                    (-1.0, 1.0)
                };
                let ticks = (lo as i32..=hi as i32)
                    .map(|e| {
                        let v = 10f64.powi(e);
                        (v, format!("{}{unit}", short(v)))
                    })
                    .collect();
                Axis {
                    scale,
                    lo: 10f64.powf(lo),
                    hi: 10f64.powf(hi),
                    ticks,
                }
            }
        }
    }

    /// The height in the plot's coordinates (0 at the top).
    fn y(&self, v: f64) -> f64 {
        let f = match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => {
                if v <= self.lo {
                    0.0
                } else {
                    (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
                }
            }
        };
        let f = if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        };
        H - f * (H - TOP)
    }
}

/// A round step that cuts `max` into about four parts: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64) -> f64 {
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// `1500` -> `1.5k`, `0.25` -> `0.25`: a tick label.
pub(crate) fn short(v: f64) -> String {
    let (v, suffix) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if v == 0.0 || v >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v >= 0.01 {
        let t = format!("{v:.2}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        // 0.001, 0.0001: the shortest decimal that says it.
        format!("{v}")
    };
    format!("{text}{suffix}")
}

/// The x ticks of a time axis from 0 to `t_max` seconds: multiples of a round step, their
/// count computed (at most [`MAX_TICKS`]), never found by adding steps until past the end.
fn time_ticks(t_max: f64) -> Vec<f64> {
    if !(t_max.is_finite() && t_max > 0.0) {
        return vec![0.0];
    }
    let step = nice_step(t_max);
    if !(step.is_finite() && step > 0.0) {
        return vec![0.0];
    }
    // `as usize` saturates, and the count is capped.
    let n = ((t_max / step * 1.0001).floor() as usize).min(MAX_TICKS - 1);
    (0..=n).map(|i| i as f64 * step).collect()
}

/// `90` -> `1.5 min`: an elapsed-time tick label.
fn seconds_label(s: f64) -> String {
    if s >= 120.0 {
        format!("{} min", short(s / 60.0))
    } else {
        format!("{} s", short(s))
    }
}

/// A chart over the run's time: `t[i]` is the end of interval i (seconds), each line has
/// one value per interval (or its own times). `marks[i]` is `(errors, retries)` of
/// interval i: intervals with errors get a red stroke, with retries only an amber one.
/// `data_key` names the hover's figures in the page's data (empty: no hover).
#[allow(clippy::too_many_arguments)]
pub(crate) fn time_chart(
    out: &mut String,
    id: &str,
    data_key: &str,
    title: &str,
    unit: &str,
    t: &[f64],
    lines: &[Line<'_>],
    scale: Scale,
    marks: Option<&[(u64, u64)]>,
) {
    let t_max = t
        .iter()
        .chain(lines.iter().flat_map(|l| l.t.iter().flatten()))
        .copied()
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let x = |s: f64| s / t_max * W;
    let axis = Axis::new(
        scale,
        lines
            .iter()
            .flat_map(|l| l.values.iter().flatten().copied()),
        unit,
    );
    let points = (!t.is_empty()).then_some(t.len());
    open_figure(out, id, points, data_key, title);
    grid(out, &axis);
    if let Some(marks) = marks {
        let (mut err, mut retry) = (String::new(), String::new());
        let (mut n_err, mut n_retry) = (0, 0);
        for (i, (e, r)) in marks.iter().enumerate() {
            let Some(&ti) = t.get(i) else { break };
            if *e > 0 {
                n_err += 1;
                let _ = write!(err, "M{:.1} 0V{H}", x(ti));
            } else if *r > 0 {
                n_retry += 1;
                let _ = write!(retry, "M{:.1} 0V{H}", x(ti));
            }
        }
        let _ = write!(
            out,
            "<path class=\"mark err\" data-count=\"{n_err}\" d=\"{err}\"/>\
             <path class=\"mark retry\" data-count=\"{n_retry}\" d=\"{retry}\"/>"
        );
    }
    // The first line drawn last, on top (p50 over max where they meet).
    for l in lines.iter().rev() {
        let times = l.t.as_deref().unwrap_or(t);
        // An interval without a value (too short for a rate) is no point: drawn as 0 it
        // was a fall that never happened.
        polyline(
            out,
            l,
            times
                .iter()
                .zip(&l.values)
                .filter_map(|(ti, v)| Some((x(*ti), axis.y((*v)?)))),
        );
    }
    out.push_str("</svg>");
    y_labels(out, &axis);
    for s in time_ticks(t_max) {
        let _ = write!(
            out,
            "<span class=\"xl\" style=\"left:{:.2}%\">{}</span>",
            s / t_max * 100.0,
            seconds_label(s)
        );
    }
    if !data_key.is_empty() {
        out.push_str("<div class=\"cursor\" hidden></div><div class=\"tip\" hidden></div>");
    }
    out.push_str("</div>");
    legend(out, lines);
    out.push_str("</figure>");
}

/// The percentile spectrum: each line's value at percentiles from 0 to 99.999 on a log
/// axis of 1 / (1 - q) (101 points, 20 per decade).
pub(crate) fn spectrum_chart(out: &mut String, id: &str, title: &str, lines: &[Line<'_>]) {
    let axis = Axis::new(
        Scale::Linear,
        lines
            .iter()
            .flat_map(|l| l.values.iter().flatten().copied()),
        " ms",
    );
    open_figure(out, id, Some(SPECTRUM_POINTS), "", title);
    grid(out, &axis);
    for l in lines {
        polyline(
            out,
            l,
            l.values.iter().enumerate().map(|(k, v)| {
                (
                    k as f64 / (SPECTRUM_POINTS - 1) as f64 * W,
                    axis.y(v.unwrap_or(0.0)),
                )
            }),
        );
    }
    out.push_str("</svg>");
    y_labels(out, &axis);
    for (k, label) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        .iter()
        .enumerate()
    {
        let _ = write!(
            out,
            "<span class=\"xl\" style=\"left:{}%\">{label}</span>",
            k * 20
        );
    }
    out.push_str("</div>");
    legend(out, lines);
    out.push_str("</figure>");
}

/// Points of the spectrum: 20 per decade of 1 / (1 - q), from q = 0 to q = 0.99999.
pub(crate) const SPECTRUM_POINTS: usize = 101;

/// The quantile of spectrum point `k`.
pub(crate) fn spectrum_quantile(k: usize) -> f64 {
    let x = k as f64 * 5.0 / (SPECTRUM_POINTS - 1) as f64;
    1.0 - 10f64.powf(-x)
}

/// Opens a chart's figure, its plot and SVG: `data-points` (the points it draws, for the
/// browser test) when given, `data-key` when not empty.
fn open_figure(out: &mut String, id: &str, points: Option<usize>, data_key: &str, title: &str) {
    let points = points.map_or(String::new(), |n| format!(" data-points=\"{n}\""));
    let key = if data_key.is_empty() {
        String::new()
    } else {
        format!(" data-key=\"{}\"", esc(data_key))
    };
    let _ = write!(
        out,
        "<figure class=\"chart\" id=\"{}\"{points}><figcaption>{}</figcaption>\
         <div class=\"plot\"{key}>\
         <svg viewBox=\"0 0 {W} {H}\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"{}\">",
        esc(id),
        esc(title),
        esc(title)
    );
}

fn grid(out: &mut String, axis: &Axis) {
    let mut d = String::new();
    for (v, _) in &axis.ticks {
        let _ = write!(d, "M0 {:.1}H{W}", axis.y(*v));
    }
    let _ = write!(out, "<path class=\"grid\" d=\"{d}\"/>");
}

fn y_labels(out: &mut String, axis: &Axis) {
    for (v, label) in &axis.ticks {
        let _ = write!(
            out,
            "<span class=\"yl\" style=\"top:{:.2}%\">{}</span>",
            axis.y(*v) / H * 100.0,
            esc(label)
        );
    }
}

/// The narrowest a small chart is drawn (the sweep grid's column), and the width of one
/// character of its 11 px labels, both in px: what [`spaced_ticks`] plans with.
const NARROWEST_CHART_PX: f64 = 330.0;
const LABEL_CHAR_PX: f64 = 6.5;

/// The x labels at `ticks` (fraction of the width, text) that fit side by side on the
/// narrowest chart, left to right: a label that would overlap the last one kept is left
/// out (its value still has its dot). Long labels (`2016-01-01T00:00:00Z`) printed over
/// each other before.
fn spaced_ticks<'a>(ticks: impl Iterator<Item = (f64, &'a str)>) -> Vec<(f64, &'a str)> {
    let mut ticks: Vec<(f64, &str)> = ticks.collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = |l: &str| l.chars().count() as f64 * LABEL_CHAR_PX / NARROWEST_CHART_PX / 2.0;
    let mut kept: Vec<(f64, &str)> = Vec::new();
    for (at, label) in ticks {
        let clear = kept
            .last()
            .is_none_or(|(prev, prev_label)| at - half(label) >= prev + half(prev_label) + 0.01);
        if clear {
            kept.push((at, label));
        }
    }
    kept
}

fn polyline(out: &mut String, l: &Line<'_>, points: impl Iterator<Item = (f64, f64)>) {
    let mut text = String::new();
    let mut n = 0usize;
    for (x, y) in points {
        if n > 0 {
            text.push(' ');
        }
        let _ = write!(text, "{x:.1},{y:.1}");
        n += 1;
    }
    let _ = write!(
        out,
        "<polyline class=\"line {}\" data-series=\"{}\" data-points=\"{n}\" points=\"{text}\"/>",
        l.class,
        esc(l.key)
    );
}

fn legend(out: &mut String, lines: &[Line<'_>]) {
    out.push_str("<div class=\"legend\">");
    for l in lines {
        let _ = write!(
            out,
            "<span><i class=\"{}\"></i>{}</span>",
            l.class,
            esc(l.label)
        );
    }
    out.push_str("</div>");
}

/// One line of an x-y chart (a sweep's figure against a key): its points in order, each
/// with the sweep row it comes from (`None`: a drawn curve, such as a fit).
pub(crate) struct XyLine<'a> {
    pub key: &'a str,
    pub label: &'a str,
    pub class: &'a str,
    pub points: Vec<(f64, f64, Option<usize>)>,
    /// Draw a dot at each point (measured points; a fit's curve has none).
    pub dots: bool,
}

/// A chart of figures against a swept key: `x_ticks` label the horizontal axis (from
/// `x_lo` to `x_hi`). Each line's polyline states its points exactly (`data-x`, `data-y`,
/// `data-rows`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn xy_chart(
    out: &mut String,
    id: &str,
    title: &str,
    unit: &str,
    (x_lo, x_hi): (f64, f64),
    x_ticks: &[(f64, String)],
    lines: &[XyLine<'_>],
    scale: Scale,
) {
    let axis = Axis::new(
        scale,
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        unit,
    );
    let span = if x_hi > x_lo { x_hi - x_lo } else { 1.0 };
    // A little room on both sides, so the first and last dots show whole.
    let x = |v: f64| (0.03 + 0.94 * (v - x_lo) / span) * W;
    let measured: usize = lines
        .iter()
        .filter(|l| l.dots)
        .map(|l| l.points.len())
        .sum();
    open_figure(out, id, Some(measured), "", title);
    grid(out, &axis);
    for l in lines.iter().rev() {
        let (mut pts, mut xs, mut ys, mut rows, mut dots) = (
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        );
        for (n, (px, py, row)) in l.points.iter().enumerate() {
            if n > 0 {
                pts.push(' ');
                xs.push(' ');
                ys.push(' ');
                rows.push(' ');
            }
            let (sx, sy) = (x(*px), axis.y(*py));
            let _ = write!(pts, "{sx:.1},{sy:.1}");
            let _ = write!(xs, "{px}");
            let _ = write!(ys, "{py}");
            let _ = write!(rows, "{}", row.map_or(-1, |r| r as i64));
            let _ = write!(dots, "M{sx:.1} {sy:.1}h0");
        }
        let _ = write!(
            out,
            "<polyline class=\"line {}\" data-series=\"{}\" data-points=\"{}\" data-x=\"{xs}\" \
             data-y=\"{ys}\" data-rows=\"{rows}\" points=\"{pts}\"/>",
            l.class,
            esc(l.key),
            l.points.len()
        );
        if l.dots {
            let _ = write!(out, "<path class=\"dot {}\" d=\"{dots}\"/>", l.class);
        }
    }
    out.push_str("</svg>");
    y_labels(out, &axis);
    for (at, label) in spaced_ticks(x_ticks.iter().map(|(v, l)| (x(*v) / W, l.as_str()))) {
        let _ = write!(
            out,
            "<span class=\"xl\" style=\"left:{:.2}%\">{}</span>",
            at * 100.0,
            esc(label)
        );
    }
    out.push_str("</div><div class=\"legend\">");
    for l in lines {
        let _ = write!(
            out,
            "<span><i class=\"{}\"></i>{}</span>",
            l.class,
            esc(l.label)
        );
    }
    out.push_str("</div></figure>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_values() {
        let a = Axis::new(Scale::Linear, [0.0, 37_000.0].into_iter(), "");
        assert_eq!(a.hi, 40_000.0);
        let labels: Vec<&str> = a.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "10k", "20k", "30k", "40k"]);
        let a = Axis::new(Scale::Log, [0.3, 45.0].into_iter(), " ms");
        assert_eq!((a.lo, a.hi), (0.1, 100.0));
        assert_eq!(a.y(100.0), TOP);
        assert_eq!(a.y(0.0), H);
    }

    #[test]
    fn empty_values_still_make_an_axis() {
        let a = Axis::new(Scale::Linear, std::iter::empty(), "");
        assert!(a.hi > a.lo);
        assert_eq!(a.y(0.0), H);
        let a = Axis::new(Scale::Log, [f64::NAN].into_iter(), "");
        assert!(a.y(f64::NAN).is_finite());
    }

    /// A chart over any times ends, with a bounded count of tick labels; run in a thread so
    /// that a loop without bound fails the test instead of hanging it.
    #[test]
    fn a_time_chart_of_any_times_ends_with_few_ticks() {
        for t_end in [1e308, f64::MAX, 1e9, 3600.0, 0.5, 0.0] {
            let page = crate::tests::within(3, move || {
                let mut out = String::new();
                let line = Line {
                    key: "rate",
                    label: "rate",
                    class: "c0",
                    values: vec![Some(1.0), Some(1e308)],
                    t: None,
                };
                time_chart(
                    &mut out,
                    "x",
                    "",
                    "t",
                    "",
                    &[t_end / 2.0, t_end],
                    &[line],
                    Scale::Log,
                    None,
                );
                out
            });
            let ticks = page.matches("class=\"xl\"").count();
            assert!((1..=MAX_TICKS).contains(&ticks), "{t_end}: {ticks} x ticks");
            let ticks = page.matches("class=\"yl\"").count();
            assert!((1..=MAX_TICKS).contains(&ticks), "{t_end}: {ticks} y ticks");
        }
        let a = Axis::new(Scale::Log, [5e-324, 1e308].into_iter(), "");
        assert!(a.ticks.len() <= MAX_TICKS, "{} log ticks", a.ticks.len());
        let a = Axis::new(Scale::Linear, [f64::MAX].into_iter(), "");
        assert!(a.ticks.len() <= MAX_TICKS);
    }

    #[test]
    fn spectrum_ends_at_five_nines() {
        assert_eq!(spectrum_quantile(0), 0.0);
        assert!((spectrum_quantile(SPECTRUM_POINTS - 1) - 0.99999).abs() < 1e-12);
        assert!((spectrum_quantile(20) - 0.9).abs() < 1e-12);
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(1500.0), "1.5k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(0.0), "0");
    }

    /// A sweep over `workload.start` printed its RFC 3339 values over each other.
    #[test]
    fn x_labels_that_would_overlap_are_left_out() {
        let long: Vec<(f64, String)> = (0..6)
            .map(|i| (f64::from(i) / 5.0, format!("2016-01-0{}T00:00:00Z", i + 1)))
            .collect();
        let kept = spaced_ticks(long.iter().map(|(v, l)| (*v, l.as_str())));
        assert!(kept.len() >= 2 && kept.len() < 6, "{kept:?}");
        let half = 20.0 * LABEL_CHAR_PX / NARROWEST_CHART_PX / 2.0;
        for pair in kept.windows(2) {
            assert!(pair[1].0 - pair[0].0 >= 2.0 * half, "{kept:?}");
        }
        assert_eq!(kept[0].1, "2016-01-01T00:00:00Z");
        // Short labels all fit.
        let short: Vec<(f64, String)> = (0..6)
            .map(|i| (f64::from(i) / 5.0, format!("{i}")))
            .collect();
        assert_eq!(
            spaced_ticks(short.iter().map(|(v, l)| (*v, l.as_str()))).len(),
            6
        );
    }
}
