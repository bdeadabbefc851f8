//! A sweep on the page: from `sweep.json` (what `tsload sweep` writes: `axes`, `rows`,
//! `fits`), each figure (the three rates, p50 and p99 latency, mean service time, errors,
//! client and server CPU) against each swept key, one line per combination of the other
//! keys, one dot per sweep point; with the RTT fit, the same figures against the measured
//! RTT with the model's curve on each rate (`rate = C / (t_service + k * RTT)`, `C` the
//! mean of `rate * (t_service + k * RTT)` over the group's points), and the fit's figures
//! in a table.

use std::fmt::Write as _;

use serde_json::Value;

use crate::Error;
use crate::chart::{self, Scale, XyLine};
use crate::escape::esc;

/// A line's points: x, y and the sweep row each comes from (`None`: a fit's curve).
type Points = Vec<(f64, f64, Option<usize>)>;

/// The keys whose values are a delay: the fit's groups are the other keys' values (as the
/// CLI's `RTT_KEYS`).
const RTT_KEYS: [&str; 2] = ["delay", "network.delay"];
/// The most rows, axes, values of an axis and fits a sweep.json may have.
const MAX_ROWS: usize = 10_000;
const MAX_AXES: usize = 32;
const MAX_VALUES: usize = 1_000;
/// The largest magnitude of any figure the section draws.
const MAX_FIGURE: f64 = 1e15;
const CLASSES: [&str; 5] = ["c0", "c1", "c2", "c3", "c4"];

/// A swept value as shown: strings as they are, numbers and booleans as JSON writes them.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A duration string (`0.5ms`, `250us`, `1.5s`, `0`) as milliseconds.
fn duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    if s == "0" {
        return Some(0.0);
    }
    for (unit, scale) in [
        ("ns", 1e-6),
        ("us", 1e-3),
        ("µs", 1e-3),
        ("ms", 1.0),
        ("s", 1e3),
    ] {
        if let Some(n) = s.strip_suffix(unit)
            && let Ok(v) = n.parse::<f64>()
            && v.is_finite()
            && v >= 0.0
        {
            return Some(v * scale);
        }
    }
    None
}

/// Where a value of a key sits on its axis: numbers as they are, durations in ms; `None`
/// for anything else (the key's values are then placed by their order).
fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => duration_ms(s),
        _ => None,
    }
}

/// One horizontal axis: a swept key, or the measured RTT.
struct XAxis {
    /// `key`, or `rtt` for the measured RTT: the charts' ids are `sweep-{id}-{figure}`.
    id: String,
    title: String,
    /// The x of each row (`None`: the row has none, e.g. no RTT measured).
    xs: Vec<Option<f64>>,
    ticks: Vec<(f64, String)>,
    /// Rows are grouped by the values of these keys (one line each).
    group_keys: Vec<String>,
    /// Whether the fit's curve is drawn on it.
    fit: bool,
}

/// The section of `sweep` (the JSON `tsload sweep` writes as sweep.json).
pub(crate) fn section(out: &mut String, sweep: &Value) -> Result<(), Error> {
    let (keys, rows, fits) = read(sweep)?;
    check(&keys, rows, fits)?;
    let measure = sweep
        .get("measure")
        .and_then(Value::as_str)
        .unwrap_or("writes");
    let (rates, figures) = figures(measure, rows);
    let x_axes = x_axes(&keys, rows, fits);
    let _ = write!(
        out,
        "<section id=\"sweep\"><h2>Sweep</h2><p class=\"meta\">{} points; each figure against \
         each swept key{}, one dot per point, one line per value of the other keys.</p>",
        rows.len(),
        if x_axes.iter().any(|a| a.fit) {
            " and against the measured RTT with the fitted model"
        } else {
            ""
        }
    );
    verdict_table(out, rows);
    fit_table(out, fits);
    for axis in &x_axes {
        axis_charts(out, axis, &figures, rows, fits, &rates);
    }
    out.push_str("</section>");
    Ok(())
}

/// An axis's key and its values.
type Axis<'a> = (&'a str, &'a [Value]);

/// A chart's figure: its field in a row, its label, its unit and its scale.
type Figure = (&'static str, &'static str, &'static str, Scale);

/// `sweep.json`'s axes, rows and fits.
type SweepParts<'a> = (Vec<Axis<'a>>, &'a [Value], &'a [Value]);

/// `sweep.json`'s axes, rows and fits, each row with a `point`.
fn read(sweep: &Value) -> Result<SweepParts<'_>, Error> {
    let bad = |why: &str| Error::BadSweep(why.to_string());
    let axes = sweep
        .get("axes")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `axes` array"))?;
    let rows = sweep
        .get("rows")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `rows` array"))?;
    let fits: &[Value] = sweep
        .get("fits")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut keys: Vec<(&str, &[Value])> = Vec::new();
    for a in axes {
        let key = a
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("an axis without a `key`"))?;
        let values = a
            .get("values")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("an axis without `values`"))?;
        keys.push((key, values));
    }
    for (i, r) in rows.iter().enumerate() {
        if !r.get("point").is_some_and(Value::is_object) {
            return Err(Error::BadSweep(format!("row {}: no `point` object", i + 1)));
        }
    }
    Ok((keys, rows, fits))
}

/// The rates of the sweep's measure, and every figure charted: the rates, latency,
/// service time, errors, and the client's and (where measured) the server's CPU.
fn figures(measure: &str, rows: &[Value]) -> ([&'static str; 3], Vec<Figure>) {
    let rates: [&str; 3] = match measure {
        "queries" => ["requests_per_s", "statements_per_s", "rows_read_per_s"],
        "transactions" => ["transactions_per_s", "statements_per_s", "rows_read_per_s"],
        _ => ["rows_per_s", "metrics_per_s", "requests_per_s"],
    };
    let mut figures: Vec<Figure> = rates
        .iter()
        .map(|r| (*r, r.trim_end_matches("_per_s"), "/s", Scale::Linear))
        .collect();
    figures.extend([
        ("latency_p50_ms", "p50 latency", " ms", Scale::Log),
        ("latency_p99_ms", "p99 latency", " ms", Scale::Log),
        ("service_mean_ms", "mean service time", " ms", Scale::Log),
        ("errors", "errors", "", Scale::Linear),
        ("client_cpu_s", "client CPU", " s", Scale::Linear),
    ]);
    if rows
        .iter()
        .any(|r| r.get("server_cpu_s").is_some_and(Value::is_number))
    {
        figures.push(("server_cpu_s", "server CPU", " s", Scale::Linear));
    }

    (rates, figures)
}

/// The charts' horizontal axes: each swept key with two values or more, and the measured
/// RTT when the sweep has a fit.
fn x_axes(keys: &[Axis<'_>], rows: &[Value], fits: &[Value]) -> Vec<XAxis> {
    let varying: Vec<&str> = keys
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| *k)
        .collect();
    let mut x_axes = Vec::new();
    for (key, values) in keys {
        if values.len() < 2 {
            continue;
        }
        let all_numeric = values.iter().all(|v| numeric(v).is_some());
        let place = |v: &Value| -> Option<f64> {
            if all_numeric {
                numeric(v)
            } else {
                values.iter().position(|x| x == v).map(|i| i as f64)
            }
        };
        let ticks = values
            .iter()
            .filter_map(|v| Some((place(v)?, shown(v))))
            .collect();
        x_axes.push(XAxis {
            id: (*key).to_string(),
            title: (*key).to_string(),
            xs: rows
                .iter()
                .map(|r| place(r.get("point")?.get(*key)?))
                .collect(),
            ticks,
            group_keys: varying
                .iter()
                .filter(|k| *k != key)
                .map(|k| k.to_string())
                .collect(),
            fit: false,
        });
    }
    let rtts: Vec<Option<f64>> = rows
        .iter()
        .map(|r| r.get("rtt")?.get("median_ms")?.as_f64())
        .collect();
    if !fits.is_empty() && rtts.iter().any(Option::is_some) {
        let (lo, hi) = rtts
            .iter()
            .flatten()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let ticks = (0..=4)
            .map(|i| {
                let v = lo + (hi - lo) * f64::from(i) / 4.0;
                (v, format!("{} ms", chart::short(v)))
            })
            .collect();
        x_axes.push(XAxis {
            id: "rtt".into(),
            title: "the measured RTT (median)".into(),
            xs: rtts,
            ticks,
            group_keys: varying
                .iter()
                .filter(|k| !RTT_KEYS.contains(k))
                .map(|k| k.to_string())
                .collect(),
            fit: true,
        });
    }

    x_axes
}

/// Every figure's chart against one axis.
fn axis_charts(
    out: &mut String,
    axis: &XAxis,
    figures: &[Figure],
    rows: &[Value],
    fits: &[Value],
    rates: &[&str; 3],
) {
    let _ = write!(
        out,
        "<h3>Against {}</h3><div class=\"sweepgrid\">",
        esc(&axis.title)
    );
    let (x_lo, x_hi) = axis
        .xs
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let range = if x_lo.is_finite() {
        (x_lo, x_hi)
    } else {
        (0.0, 1.0)
    };
    for (fig, label, unit, scale) in figures {
        // One line per group, in the order groups first appear.
        let mut groups: Vec<(String, Points)> = Vec::new();
        // A point that is no measure is not drawn: its zeros (or partial figures) are
        // not a value the server gave.
        for (i, r) in rows.iter().enumerate().filter(|(_, r)| is_measure(r)) {
            let (Some(x), Some(y)) = (axis.xs[i], r.get(*fig).and_then(Value::as_f64)) else {
                continue;
            };
            let name = group_name(r, &axis.group_keys);
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, pts)) => pts.push((x, y, Some(i))),
                None => groups.push((name, vec![(x, y, Some(i))])),
            }
        }
        if groups.is_empty() {
            continue;
        }
        for (_, pts) in &mut groups {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let mut curves: Vec<(String, Points)> = Vec::new();
        if axis.fit && rates.contains(fig) {
            for (g, f) in fits.iter().enumerate() {
                if let Some(c) = fit_curve(f, rows, &axis.xs, fig, range) {
                    curves.push((format!("fit {}", fit_name(f, g)), c));
                }
            }
        }
        let mut lines: Vec<XyLine<'_>> = groups
            .iter()
            .enumerate()
            .map(|(n, (name, pts))| XyLine {
                key: name,
                label: if name.is_empty() { label } else { name },
                class: CLASSES[n % CLASSES.len()],
                points: pts.clone(),
                dots: true,
            })
            .collect();
        lines.extend(curves.iter().map(|(name, pts)| XyLine {
            key: name,
            label: name,
            class: "fit",
            points: pts.clone(),
            dots: false,
        }));
        chart::xy_chart(
            out,
            &format!("sweep-{}-{fig}", axis.id),
            &format!("{label} against {}", axis.title),
            unit,
            range,
            &axis.ticks,
            &lines,
            *scale,
        );
    }
    out.push_str("</div>");
}

/// Checks, before anything is drawn, what the section reads: sizes within the caps, and
/// every number it places (each row's figures and measured RTT, each swept value that is
/// a number or a duration, each fit's figures) finite and within [`MAX_FIGURE`].
fn check(keys: &[(&str, &[Value])], rows: &[Value], fits: &[Value]) -> Result<(), Error> {
    let too_many = |what: &str, n: usize, max: usize| {
        Error::BadSweep(format!("{what}: {n} entries; allowed: at most {max}"))
    };
    if rows.len() > MAX_ROWS {
        return Err(too_many("rows", rows.len(), MAX_ROWS));
    }
    if fits.len() > MAX_ROWS {
        return Err(too_many("fits", fits.len(), MAX_ROWS));
    }
    if keys.len() > MAX_AXES {
        return Err(too_many("axes", keys.len(), MAX_AXES));
    }
    let in_range = |field: String, v: f64| {
        if v.is_finite() && v.abs() <= MAX_FIGURE {
            Ok(())
        } else {
            Err(Error::BadSweep(format!(
                "{field} is {v:?}; allowed: a finite number from -{MAX_FIGURE:e} to {MAX_FIGURE:e}"
            )))
        }
    };
    let numbers = |path: String, v: Option<&Value>| -> Result<(), Error> {
        if let Some(m) = v.and_then(Value::as_object) {
            for (k, x) in m {
                if let Some(f) = x.as_f64() {
                    in_range(format!("{path}.{}", k.escape_debug()), f)?;
                }
            }
        }
        Ok(())
    };
    for (i, (key, values)) in keys.iter().enumerate() {
        if values.len() > MAX_VALUES {
            return Err(too_many(
                &format!("axes[{i}] ({key}) values"),
                values.len(),
                MAX_VALUES,
            ));
        }
        for (j, v) in values.iter().enumerate() {
            if let Some(x) = numeric(v) {
                in_range(format!("axes[{i}].values[{j}]"), x)?;
            }
        }
    }
    for (i, r) in rows.iter().enumerate() {
        numbers(format!("rows[{i}]"), Some(r))?;
        numbers(format!("rows[{i}].rtt"), r.get("rtt"))?;
        if let Some(point) = r.get("point").and_then(Value::as_object) {
            for (k, v) in point {
                if let Some(x) = numeric(v) {
                    in_range(format!("rows[{i}].point.{}", k.escape_debug()), x)?;
                }
            }
        }
    }
    for (i, f) in fits.iter().enumerate() {
        numbers(format!("fits[{i}].fit"), f.get("fit"))?;
    }
    Ok(())
}

/// `workers=2 batch=10` of a row's point over `keys` (empty: all rows one group).
fn group_name(row: &Value, keys: &[String]) -> String {
    keys.iter()
        .map(|k| {
            let v = row
                .get("point")
                .and_then(|p| p.get(k))
                .map_or_else(String::new, shown);
            format!("{k}={}", crate::escape::redacted(k, &v))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fit group's name: its fixed keys' values, or `all points`.
fn fit_name(f: &Value, g: usize) -> String {
    match f.get("fixed").and_then(Value::as_object) {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={}", crate::escape::redacted(k, &shown(v))))
            .collect::<Vec<_>>()
            .join(" "),
        Some(_) => "all points".into(),
        None => format!("group {}", g + 1),
    }
}

/// The model's curve for `fig` over the group of fit `f`: `C / (t_service + k * RTT)`.
fn fit_curve(
    f: &Value,
    rows: &[Value],
    rtts: &[Option<f64>],
    fig: &str,
    (lo, hi): (f64, f64),
) -> Option<Points> {
    let fit = f.get("fit").filter(|x| x.is_object())?;
    let k = fit.get("k")?.as_f64()?;
    let ts = fit.get("t_service_ms")?.as_f64()?;
    let fixed = f.get("fixed").and_then(Value::as_object);
    let in_group = |r: &Value| {
        fixed.is_none_or(|m| {
            m.iter()
                .all(|(key, v)| r.get("point").and_then(|p| p.get(key)) == Some(v))
        })
    };
    let cs: Vec<f64> = rows
        .iter()
        .zip(rtts)
        .filter(|(r, _)| in_group(r) && is_measure(r))
        .filter_map(|(r, rtt)| Some(r.get(fig)?.as_f64()? * (ts + k * (*rtt)?)))
        .filter(|c| c.is_finite())
        .collect();
    if cs.is_empty() {
        return None;
    }
    let c = cs.iter().sum::<f64>() / cs.len() as f64;
    let pts: Points = (0..=40)
        .filter_map(|i| {
            let x = lo + (hi - lo) * f64::from(i) / 40.0;
            let t = ts + k * x;
            let y = c / t;
            (t > 0.0 && y.is_finite()).then_some((x, y, None))
        })
        .collect();
    (!pts.is_empty()).then_some(pts)
}

/// The fits' figures, one row per group, each cell's JSON value in `data-value`.
fn fit_table(out: &mut String, fits: &[Value]) {
    if fits.is_empty() {
        return;
    }
    out.push_str(
        "<h3>The RTT fit: t_request = t_service + k &times; RTT</h3><div class=\"scroll\">\
         <table class=\"cmp\" id=\"sweep-fits\"><thead><tr><th>group</th><th>k (round trips per \
         request)</th><th>t_service</th><th>R&sup2;</th><th>points</th><th>throughput halves \
         at RTT</th></tr></thead><tbody>",
    );
    for (g, f) in fits.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}</td>", esc(&fit_name(f, g)));
        match f.get("fit").filter(|x| x.is_object()) {
            Some(fit) => {
                for (field, unit) in [
                    ("k", ""),
                    ("t_service_ms", " ms"),
                    ("r_squared", ""),
                    ("points", ""),
                    ("halving_rtt_ms", " ms"),
                ] {
                    let v = fit.get(field);
                    let text = match v.and_then(Value::as_f64) {
                        Some(x) if field == "points" => format!("{x}"),
                        Some(x) => format!("{x:.4}{unit}"),
                        None => fit
                            .get("no_halving_reason")
                            .and_then(Value::as_str)
                            .unwrap_or("-")
                            .to_string(),
                    };
                    let raw = v
                        .filter(|v| v.is_number())
                        .map_or(String::new(), Value::to_string);
                    let _ = write!(
                        out,
                        "<td id=\"sweep-fit{g}-{field}\" data-value=\"{}\">{}</td>",
                        esc(&raw),
                        esc(&text)
                    );
                }
            }
            None => {
                let why = f.get("error").and_then(Value::as_str).unwrap_or("no fit");
                let _ = write!(
                    out,
                    "<td colspan=\"5\" id=\"sweep-fit{g}-error\" data-value=\"{}\">no fit: {}</td>",
                    esc(why),
                    esc(why)
                );
            }
        }
        out.push_str("</tr>");
        let left_out = f.get("left_out").and_then(Value::as_u64).unwrap_or(0);
        let caution = f.get("caution").and_then(Value::as_str);
        if left_out > 0 || caution.is_some() {
            let mut text = String::new();
            if left_out > 0 {
                let _ = write!(
                    text,
                    "{left_out} points left out: no measure (failed, interrupted, short or \
                     unverified). "
                );
            }
            if let Some(why) = caution {
                let _ = write!(text, "Do not trust this fit: {why}");
            }
            let _ = write!(
                out,
                "<tr class=\"caution\"><td colspan=\"6\" id=\"sweep-fit{g}-caution\">{}</td></tr>",
                esc(text.trim_end())
            );
        }
    }
    out.push_str("</tbody></table></div>");
}

/// Whether a sweep row is a measure: its `verdict` has no `flaw` (a sweep.json of an
/// older tsload has no verdict: its rows are taken as they are).
fn is_measure(row: &Value) -> bool {
    row.get("verdict")
        .and_then(|v| v.get("flaw"))
        .is_none_or(Value::is_null)
}

/// Each point's verdict: its exit, what the server stored, and, for a point that is no
/// measure (drawn nowhere, fitted nowhere), why.
fn verdict_table(out: &mut String, rows: &[Value]) {
    if !rows.iter().any(|r| r.get("verdict").is_some()) {
        return;
    }
    let failed = rows.iter().filter(|r| !is_measure(r)).count();
    let _ = write!(
        out,
        "<h3>Each point's verdict</h3><p class=\"meta\" id=\"sweep-verdict-summary\">{}</p>\
         <div class=\"scroll\"><table class=\"cmp\" id=\"sweep-verdicts\"><thead><tr>\
         <th>point</th><th>exit</th><th>stored</th><th>verdict</th><th>why</th></tr></thead>\
         <tbody>",
        if failed == 0 {
            "Every point is a measure.".to_string()
        } else {
            format!(
                "{failed} of {} points are no measure: they are not drawn and not fitted.",
                rows.len()
            )
        }
    );
    for (i, r) in rows.iter().enumerate() {
        let v = r.get("verdict").unwrap_or(&Value::Null);
        let point = r
            .get("point")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, x)| format!("{k}={}", crate::escape::redacted(k, &shown(x))))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let flaw = v.get("flaw").filter(|f| f.is_object());
        let word = flaw
            .and_then(|f| f.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("ok");
        let why = flaw
            .and_then(|f| f.get("why"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let number = |key: &str| {
            v.get(key)
                .and_then(Value::as_u64)
                .map_or_else(|| "-".to_string(), |n| n.to_string())
        };
        let _ = write!(
            out,
            "<tr id=\"sweep-point{i}\" class=\"{}\"><td>{}</td><td>{}</td><td>{}</td>\
             <td id=\"sweep-point{i}-verdict\" data-value=\"{}\">{}</td><td>{}</td></tr>",
            if flaw.is_some() { "flawed" } else { "" },
            esc(&point),
            esc(&number("exit")),
            esc(&number("stored")),
            esc(word),
            esc(word),
            esc(why)
        );
    }
    out.push_str("</tbody></table></div>");
}
