//! One stream of a report on the page: its figure cards, what the server says it
//! stored, its charts over time, its percentile spectrum and the client's own cost.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{StreamWords, amount, card, group, mib, millis, raw, raw_count, val, words};
use crate::chart::{self, Line, Scale};
use crate::checked::{Client, Latency, Stream};
use crate::escape::esc;
use crate::{Hlog, Interval, StreamKind};

/// Whether the last of a stream's intervals is partial: shorter than half the median of
/// the others (it ends with the run, not with the report interval).
pub(super) fn partial_last(iv: &[&Interval]) -> bool {
    let Some((last, rest)) = iv.split_last() else {
        return false;
    };
    if rest.is_empty() {
        return false;
    }
    let mut lengths: Vec<f64> = rest.iter().map(|i| i.interval_s).collect();
    lengths.sort_by(f64::total_cmp);
    last.interval_s < 0.5 * lengths[lengths.len() / 2]
}

#[allow(clippy::too_many_arguments)]
pub(super) fn stream_block(
    out: &mut String,
    k: usize,
    sv: &Stream,
    all: &[Interval],
    log: Option<&Hlog>,
    from_log: bool,
    data: &mut serde_json::Map<String, Value>,
) {
    let s = sv.name;
    let w = words(s);
    // Intervals read from an interval log count requests only.
    let unit = if from_log { "requests" } else { w.unit };
    let id = |f: &str| format!("r{k}-{s}-{f}");
    let _ = write!(out, "<h3>{}</h3><div class=\"cards\">", w.title);
    figure_cards(out, &id, sv, &w);
    outcome_cards(out, &id, sv);
    let stop = sv.stop_reason.as_deref().unwrap_or("?");
    card(out, &id("stop_reason"), "stopped", stop, stop, "");
    out.push_str("</div>");
    stream_notes(out, &id, sv);
    let iv: Vec<&Interval> = all.iter().filter(|i| i.stream == s).collect();
    let key = format!("r{k}-{s}");
    let rate = |i: &Interval| {
        if from_log {
            (i.interval_s >= 0.05).then(|| i.requests as f64 / i.interval_s)
        } else {
            i.rate()
        }
    };
    // The last interval ends with the run: shorter than half the others, its rate is
    // a few requests over a sliver of time (a spike, or a fall), so it is not drawn.
    let partial_last = partial_last(&iv);
    let rates: Vec<Option<f64>> = iv
        .iter()
        .enumerate()
        .map(|(n, i)| {
            if partial_last && n + 1 == iv.len() {
                None
            } else {
                rate(i)
            }
        })
        .collect();
    let drawn = rates.iter().filter(|r| r.is_some()).count();
    if iv.is_empty() {
        out.push_str(
            "<p class=\"meta\">This report has no per-interval figures (a merged report, or one from an older tsload): no charts over time.</p>",
        );
    } else if drawn < 2 {
        let _ = write!(
            out,
            "<p class=\"meta\" id=\"{key}-too-short\">The run lasted {:.3} s in {} \
             interval(s): too short for charts over time; its figures are above.</p>",
            sv.elapsed_s,
            iv.len()
        );
    } else {
        if partial_last {
            let _ = write!(
                out,
                "<p class=\"meta\" id=\"{key}-partial\">The last interval ({:.3} s) ended \
                 with the run, shorter than half the others: its rate is not drawn.</p>",
                iv.last().map_or(0.0, |i| i.interval_s)
            );
        }
        if from_log {
            let _ = write!(
                out,
                "<p class=\"meta\" id=\"{key}-intervals-from\" data-value=\"{}\">The report has no \
                 per-interval figures: these come from the interval log {}, which counts \
                 requests and their latency (not rows).</p>",
                esc(log.map_or("", |l| l.label.as_str())),
                esc(log.map_or("", |l| l.label.as_str()))
            );
        }
        interval_charts(out, &key, &iv, rates, unit);
        let counts: Vec<u64> = iv
            .iter()
            .map(|i| if from_log { i.requests } else { i.count() })
            .collect();
        data.insert(key.clone(), interval_data(&iv, unit, counts));
    }
    spectrum(out, &key, sv, log);
    client_block(out, &key, sv);
}

/// A stream's figure cards: rows, count, rate, latency, errors and retries.
fn figure_cards(out: &mut String, id: &dyn Fn(&str) -> String, sv: &Stream, w: &StreamWords) {
    card(
        out,
        &id("rows"),
        "rows",
        &sv.rows.to_string(),
        &group(sv.rows),
        "",
    );
    card(
        out,
        &id(w.count),
        w.count,
        &raw_count(sv.count),
        &group(sv.count.unwrap_or(0)),
        "",
    );
    card(
        out,
        &id(w.rate),
        &format!("{}/s", w.unit),
        &raw(sv.rate.as_ref()),
        &amount(val(sv.rate.as_ref()).unwrap_or(0.0)),
        "big",
    );
    let lat = |key: &str| sv.latency.as_ref().and_then(|l| l.get(key));
    for (key, label) in [
        ("p50_ms", "p50"),
        ("p99_ms", "p99"),
        ("p99_9_ms", "p99.9"),
        ("max_ms", "max"),
    ] {
        card(
            out,
            &id(key),
            label,
            &raw(lat(key)),
            &millis(val(lat(key)).unwrap_or(0.0)),
            "",
        );
    }
    let errors = sv.errors_total;
    card(
        out,
        &id("errors"),
        "errors",
        &errors.to_string(),
        &group(errors),
        if errors > 0 { "warn" } else { "" },
    );
    if let Some(retries) = sv.retries {
        card(
            out,
            &id("retries"),
            "retries",
            &retries.to_string(),
            &group(retries),
            "",
        );
    }
}

/// What the server says of a stream, beside what it acknowledged: stored, ambiguous and
/// offered. A shortfall or an unknown count is said, never left out.
fn outcome_cards(out: &mut String, id: &dyn Fn(&str) -> String, sv: &Stream) {
    if let Some((n, unit)) = sv.stored {
        card(
            out,
            &id("stored"),
            &format!("stored ({unit}, per the server)"),
            &n.to_string(),
            &group(n),
            if sv.stored_shortfall.is_some() {
                "warn"
            } else {
                ""
            },
        );
    } else if sv.stored_error.is_some() {
        card(out, &id("stored"), "stored", "", "not known", "warn");
    }
    if sv.ambiguous_rows > 0 {
        let bound = format!(
            "{} to {}",
            group(sv.rows),
            group(sv.rows.saturating_add(sv.ambiguous_rows))
        );
        card(
            out,
            &id("ambiguous_rows"),
            "the target holds (rows)",
            &sv.ambiguous_rows.to_string(),
            &bound,
            "warn",
        );
    }
    if let (Some(offered), Some(achieved)) = (&sv.offered, &sv.achieved) {
        let ratio = if offered.value > 0.0 {
            format!("{:.1}%", 100.0 * achieved.value / offered.value)
        } else {
            "-".to_string()
        };
        card(
            out,
            &id("offered"),
            &format!(
                "offered {}/s (achieved {ratio})",
                if sv.name == StreamKind::Write {
                    "rows"
                } else {
                    "requests"
                }
            ),
            &offered.raw,
            &amount(offered.value),
            "",
        );
    }
}

/// A stream's shortfall, unknown stored count, fatal error and errors by kind.
fn stream_notes(out: &mut String, id: &dyn Fn(&str) -> String, sv: &Stream) {
    for (class, why) in [
        ("SHORTFALL", &sv.stored_shortfall),
        ("stored not known", &sv.stored_error),
    ] {
        if let Some(why) = why {
            let _ = write!(
                out,
                "<p class=\"exit bad\" id=\"{}\">{class}: {}</p>",
                id(if class == "SHORTFALL" {
                    "stored-shortfall"
                } else {
                    "stored-error"
                }),
                esc(why)
            );
        }
    }
    if let Some(e) = &sv.fatal_error {
        let _ = write!(out, "<p class=\"exit bad\">fatal: {}</p>", esc(e));
    }
    if !sv.errors.is_empty() {
        let list: Vec<String> = sv.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = write!(
            out,
            "<p class=\"meta\">errors by kind: {}</p>",
            esc(&list.join(", "))
        );
    }
}

/// The throughput and latency charts over a stream's intervals (`rates` per interval,
/// `None` where not drawn).
fn interval_charts(
    out: &mut String,
    key: &str,
    iv: &[&Interval],
    rates: Vec<Option<f64>>,
    unit: &str,
) {
    let t: Vec<f64> = iv.iter().map(|i| i.elapsed_s).collect();
    let marks: Vec<(u64, u64)> = iv.iter().map(|i| (i.errors, i.retries)).collect();
    chart::time_chart(
        out,
        &format!("{key}-throughput"),
        key,
        &format!("{unit} per second, per interval"),
        "",
        &t,
        &[Line {
            key: "rate",
            label: &format!("{unit}/s"),
            class: "c0",
            values: rates,
            t: None,
        }],
        Scale::Linear,
        Some(&marks),
    );
    let col =
        |f: fn(&Interval) -> f64| -> Vec<Option<f64>> { iv.iter().map(|i| Some(f(i))).collect() };
    chart::time_chart(
        out,
        &format!("{key}-latency"),
        key,
        "latency per interval (from the intended send time; log scale)",
        " ms",
        &t,
        &[
            Line {
                key: "p50_ms",
                label: "p50",
                class: "c0",
                values: col(|i| i.p50_ms),
                t: None,
            },
            Line {
                key: "p99_ms",
                label: "p99",
                class: "c1",
                values: col(|i| i.p99_ms),
                t: None,
            },
            Line {
                key: "p999_ms",
                label: "p99.9",
                class: "c2",
                values: col(|i| i.p999_ms),
                t: None,
            },
            Line {
                key: "max_ms",
                label: "max",
                class: "c3",
                values: col(|i| i.max_ms),
                t: None,
            },
        ],
        Scale::Log,
        Some(&marks),
    );
}

/// A stream's intervals as the page's data: one array per figure (`counts`: the rows, or
/// requests when the intervals come from an interval log).
fn interval_data(iv: &[&Interval], unit: &str, counts: Vec<u64>) -> Value {
    let column = |f: fn(&Interval) -> Value| Value::Array(iv.iter().map(|i| f(i)).collect());
    json!({
            "unit": unit,
            "elapsed_s": column(|i| json!(i.elapsed_s)),
            "interval_s": column(|i| json!(i.interval_s)),
            "requests": column(|i| json!(i.requests)),
            "rows": column(|i| json!(i.rows)),
            "metrics": json!(counts),
            "errors": column(|i| json!(i.errors)),
            "retries": column(|i| json!(i.retries)),
            "p50_ms": column(|i| json!(i.p50_ms)),
            "p99_ms": column(|i| json!(i.p99_ms)),
            "p999_ms": column(|i| json!(i.p999_ms)),
            "max_ms": column(|i| json!(i.max_ms)),
            "service_p50_ms": column(|i| json!(i.service_p50_ms)),
            "service_p99_ms": column(|i| json!(i.service_p99_ms)),
    })
}

/// The percentile spectrum of corrected latency and service time: from the interval log's
/// histograms (the whole run, every interval added) when one was given, else the
/// summaries' histograms (`hdr`), or their fixed percentiles when a report has none. A
/// table under it states the log's (or `hdr`'s) percentiles to p99.999 exactly.
fn spectrum(out: &mut String, key: &str, sv: &Stream, log: Option<&Hlog>) {
    let mut lines = Vec::new();
    let mut hists: Vec<(&str, &str, hdrhistogram::Histogram<u64>)> = Vec::new();
    for (name, label, class) in [
        ("latency", "latency (corrected)", "c1"),
        ("service", "service time", "c0"),
    ] {
        let from_log = log.map(|l| {
            if name == "latency" {
                l.latency.clone()
            } else {
                l.service.clone()
            }
        });
        let summary = if name == "latency" {
            sv.latency.as_ref()
        } else {
            sv.service.as_ref()
        };
        let hist = match from_log {
            Some(h) => Some(h).filter(|h| !h.is_empty()),
            None => {
                let Some(summary) = summary else {
                    continue;
                };
                if summary.count.unwrap_or(0) == 0 {
                    continue;
                }
                summary.hist.clone()
            }
        };
        if log.is_some() && hist.is_none() {
            continue;
        }
        let values: Vec<Option<f64>> = (0..chart::SPECTRUM_POINTS)
            .map(|k| {
                let q = chart::spectrum_quantile(k);
                match &hist {
                    Some(h) => Some(h.value_at_quantile(q) as f64 / 1e6),
                    None => summary.and_then(|s| fixed_percentile(s, q)),
                }
            })
            .collect();
        lines.push(Line {
            key: name,
            label,
            class,
            values,
            t: None,
        });
        if let Some(h) = hist {
            hists.push((name, label, h));
        }
    }
    if lines.is_empty() {
        return;
    }
    let title = match log {
        Some(l) => format!(
            "latency by percentile (whole run, from the interval log {})",
            l.label
        ),
        None => "latency by percentile (whole run)".to_string(),
    };
    chart::spectrum_chart(out, &format!("{key}-spectrum"), &title, &lines);
    if hists.is_empty() {
        return;
    }
    let source = log.map_or("report", |_| "hlog");
    let _ = write!(
        out,
        "<div class=\"scroll\"><table class=\"cmp\" id=\"{key}-percentiles\" data-source=\"{source}\">\
         <thead><tr><th></th><th>count</th>"
    );
    for (_, label) in SPECTRUM_TABLE {
        let _ = write!(out, "<th>{label}</th>");
    }
    out.push_str("<th>max</th></tr></thead><tbody>");
    for (name, label, h) in &hists {
        let _ = write!(
            out,
            "<tr><th>{}</th><td id=\"{key}-pct-{name}-count\" data-value=\"{}\">{}</td>",
            esc(label),
            h.len(),
            group(h.len())
        );
        for (q, field) in SPECTRUM_TABLE {
            let v = crate::ms(h.value_at_quantile(q));
            let id = format!("{key}-pct-{name}-{}", field.replace('.', "_"));
            let _ = write!(out, "<td id=\"{id}\" data-value=\"{v}\">{}</td>", millis(v));
        }
        let max = crate::ms(h.max());
        let _ = write!(
            out,
            "<td id=\"{key}-pct-{name}-max\" data-value=\"{max}\">{}</td></tr>",
            millis(max)
        );
    }
    out.push_str("</tbody></table></div>");
}

/// The percentiles the spectrum's table states: `(quantile, label)`; the id of each
/// cell is the label with `_` for `.` (`p99_999`).
pub(crate) const SPECTRUM_TABLE: [(f64, &str); 6] = [
    (0.5, "p50"),
    (0.9, "p90"),
    (0.99, "p99"),
    (0.999, "p99.9"),
    (0.9999, "p99.99"),
    (0.99999, "p99.999"),
];

/// The summary's stated percentile at or above `q` (a step spectrum without histogram).
fn fixed_percentile(summary: &Latency, q: f64) -> Option<f64> {
    let steps = [
        (0.5, "p50_ms"),
        (0.9, "p90_ms"),
        (0.95, "p95_ms"),
        (0.99, "p99_ms"),
        (0.999, "p99_9_ms"),
        (0.9999, "p99_99_ms"),
    ];
    steps
        .iter()
        .find(|(p, _)| q <= *p + 1e-12)
        .map_or_else(|| val(summary.get("max_ms")), |(_, k)| val(summary.get(k)))
}

fn client_block(out: &mut String, key: &str, sv: &Stream) {
    let Some(c) = &sv.client else {
        return;
    };
    let num = |c: &Client, key: &str| val(c.get(key));
    let _ = write!(out, "<h4>Client</h4><div class=\"cards\">");
    card(
        out,
        &format!("{key}-cpu_s"),
        "client CPU",
        &raw(c.get("cpu_s")),
        &format!("{:.3} s", num(c, "cpu_s").unwrap_or(0.0)),
        "",
    );
    card(
        out,
        &format!("{key}-peak_rss_bytes"),
        "peak RSS",
        &raw(c.get("peak_rss_bytes")),
        &mib(num(c, "peak_rss_bytes").unwrap_or(0.0)),
        "",
    );
    if let Some(per) = num(c, "cpu_us_per_1000_metrics") {
        card(
            out,
            &format!("{key}-cpu_us_per_1000_metrics"),
            "CPU per 1,000 metrics",
            &raw(c.get("cpu_us_per_1000_metrics")),
            &format!("{per:.1} µs"),
            "",
        );
    }
    if let (Some(u), Some(s)) = (num(c, "cpu_user_s"), num(c, "cpu_system_s")) {
        card(
            out,
            &format!("{key}-cpu_split"),
            "user / system",
            "",
            &format!("{u:.3} / {s:.3} s"),
            "",
        );
    }
    out.push_str("</div>");
}
