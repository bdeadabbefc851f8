//! The shards of one run on one page (`tsload merge --html`, or `tsload report` over a
//! shard set): each shard's throughput and latency over time and the merged run's line.
//!
//! A shard is a report with a `shard` (`index`, `count` of 2 or more); two or more of one
//! count, each index once, make a shard set. Their intervals are put on one wall clock (each report's `started_at` plus
//! the interval's end) and cut into slots of the report interval (the median interval),
//! as `tsload merge` aligns interval logs: a merged point sums the counts of the
//! shard intervals in its slot. Its latency percentiles need histograms: they come from
//! the shards' interval logs when every shard has one (added per slot), else from the
//! merged report's log (`merge --hlog-out`), else the merged line has none. Each merged
//! point names the shard intervals (`from`) and log intervals (`log_from`) it holds, in the
//! page's data, so a test can check it against the files.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::chart::{self, Line, Scale};
use crate::checked::ReportView;
use crate::escape::esc;
use crate::hlog::{add, summarize};
use crate::{Error, Interval, StreamKind, round_us};

const CLASSES: [&str; 5] = ["c0", "c1", "c2", "c3", "c4"];

/// One merged point being built.
#[derive(Default)]
struct Slot {
    requests: u64,
    rows: u64,
    count: u64,
    errors: u64,
    retries: u64,
    length: f64,
    from: Vec<(usize, usize)>,
    log_from: Vec<(usize, usize)>,
    latency: Option<Histogram<u64>>,
    service: Option<Histogram<u64>>,
}

/// `2026-11-26T15:00:00.123Z` as seconds since the epoch (UTC, what tsload writes).
pub(crate) fn parse_rfc3339(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, sec) = (n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let rest = &s[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let f: f64 = format!("0.{}", &r[..digits]).parse().ok()?;
            (f, &r[digits..])
        }
        None => (0.0, rest),
    };
    if zone != "Z" {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) as f64 + frac)
}

/// The counts a merged point adds up: each with its field in an interval.
fn counts(i: &Interval) -> [(&'static str, u64); 5] {
    [
        ("requests", i.requests),
        ("rows", i.rows),
        (
            if i.metrics.is_some() {
                "metrics"
            } else {
                "statements"
            },
            i.count(),
        ),
        ("errors", i.errors),
        ("retries", i.retries),
    ]
}

/// The views (their places in `views`) that make a shard set, if they do: checked here,
/// before anything is drawn, so that every sum the section makes fits. Each report's own
/// intervals were checked to sum within a `u64`; the set's sum of each count over all its
/// shards' intervals must too (the merged run's total is one `u64`), else the report that
/// passes it is refused, naming the interval.
pub(crate) fn find(views: &[ReportView<'_>]) -> Result<Option<Vec<usize>>, Error> {
    let shards: Vec<usize> = views
        .iter()
        .enumerate()
        .filter(|(_, v)| v.shard.is_some())
        .map(|(k, _)| k)
        .collect();
    let Some(count) = shards.first().and_then(|k| views[*k].shard).map(|s| s.1) else {
        return Ok(None);
    };
    // Shards of one split run: a count of 2 or more, each index once.
    let mut indexes: Vec<u64> = shards
        .iter()
        .filter_map(|k| views[*k].shard)
        .map(|s| s.0)
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    if count < 2
        || shards.len() < 2
        || indexes.len() != shards.len()
        || shards
            .iter()
            .any(|k| views[*k].shard.map(|s| s.1) != Some(count))
    {
        return Ok(None);
    }
    for stream in StreamKind::ALL {
        let mut totals = [0u64; 5];
        for k in &shards {
            let v = &views[*k];
            for (i, x) in v.intervals.iter().enumerate() {
                if x.stream != stream {
                    continue;
                }
                for (total, (field, n)) in totals.iter_mut().zip(counts(x)) {
                    *total = total.checked_add(n).ok_or_else(|| Error::OutOfRange {
                        label: v.label.clone(),
                        field: format!("intervals[{i}].{field}"),
                        value: n.to_string(),
                        allowed: format!(
                            "a count that keeps the sum over the shard set's {stream} \
                             intervals within {} (the shards' intervals before it sum to \
                             {total}; the merged run's total is one u64)",
                            u64::MAX
                        ),
                    })?;
                }
            }
        }
    }
    Ok(Some(shards))
}

/// The section of the shard set `set` ([`find`]), if there is one.
pub(crate) fn section(
    out: &mut String,
    views: &[ReportView<'_>],
    set: Option<Vec<usize>>,
    data: &mut serde_json::Map<String, Value>,
) {
    let Some(set) = set else {
        return;
    };
    let shards: Vec<(usize, &ReportView<'_>)> = set.iter().map(|k| (*k, &views[*k])).collect();
    let Some(count) = shards.first().and_then(|(_, v)| v.shard).map(|s| s.1) else {
        return;
    };
    let merged = views.iter().enumerate().find(|(_, v)| v.merged);
    let _ = write!(
        out,
        "<section id=\"merge\"><h2>Shards and the merged run</h2><p class=\"meta\">{} shards of \
         {count}: each shard's line over time (on one clock) and the merged run's, whose \
         points add up the shards' intervals that end in the same report interval.</p>",
        shards.len()
    );
    for stream in StreamKind::ALL {
        stream_charts(out, stream, &shards, merged, data);
    }
    out.push_str("</section>");
}

fn stream_charts(
    out: &mut String,
    stream: StreamKind,
    shards: &[(usize, &ReportView<'_>)],
    merged: Option<(usize, &ReportView<'_>)>,
    data: &mut serde_json::Map<String, Value>,
) {
    // Each shard's JSON intervals of the stream and the time its load started.
    let per = shard_intervals(stream, shards);
    if per.len() < 2 {
        return;
    }
    let t0 = per.iter().map(|p| p.3).fold(f64::INFINITY, f64::min);
    // The report interval: the median interval (the last one of a run may be shorter or
    // longer).
    let mut lengths: Vec<f64> = per
        .iter()
        .flat_map(|p| p.2.iter().map(|i| i.interval_s))
        .collect();
    lengths.sort_by(f64::total_cmp);
    let length = lengths[lengths.len() / 2];
    if length < 1e-3 {
        return;
    }
    let slot_of = |end: f64| ((end - t0) / length).round() as i64;
    let mut slots = shard_slots(&per, &slot_of);
    // The merged latency: the shards' logs added per slot, or the merged report's log.
    let logs = merged_logs(stream, shards, merged);
    add_logs(&mut slots, &logs, &slot_of);
    let points = merged_points(stream, &slots, length);
    let has_latency = !logs.is_empty();
    let unit = if stream == StreamKind::Query {
        "statements"
    } else {
        "metrics"
    };
    let t: Vec<f64> = points.iter().map(|(i, _)| i.elapsed_s).collect();
    let key = format!("merge-{stream}");
    let lines = |f: &dyn Fn(&Interval) -> Option<f64>, merged: bool| {
        chart_lines(&per, &points, t0, f, merged)
    };
    let marks: Vec<(u64, u64)> = points.iter().map(|(i, _)| (i.errors, i.retries)).collect();
    let _ = write!(
        out,
        "<h3>{}</h3>",
        if stream == StreamKind::Query {
            "Queries"
        } else {
            "Writes"
        }
    );
    chart::time_chart(
        out,
        &format!("{key}-throughput"),
        &key,
        &format!("{unit} per second: each shard and the merged run"),
        "",
        &t,
        &lines(&|i| i.rate(), true),
        Scale::Linear,
        Some(&marks),
    );
    latency_note(out, &key, &logs);
    for (q, label, f) in [
        (
            "p50",
            "p50",
            (|i: &Interval| i.p50_ms) as fn(&Interval) -> f64,
        ),
        ("p99", "p99", |i: &Interval| i.p99_ms),
    ] {
        chart::time_chart(
            out,
            &format!("{key}-{q}"),
            &key,
            &format!("{label} latency per interval: each shard and the merged run (log scale)"),
            " ms",
            &t,
            &lines(&|i| Some(f(i)), has_latency),
            Scale::Log,
            None,
        );
    }
    data.insert(key, merged_data(&points, unit, has_latency));
}

/// A shard's JSON intervals of one stream and the time its load started (seconds since
/// the epoch).
type ShardIntervals<'a, 'v> = (usize, &'a ReportView<'v>, Vec<&'a Interval>, f64);

/// Each shard's intervals of `stream` (none for a stream its interval log stands in
/// for) and its start; shards without any left out.
fn shard_intervals<'a, 'v>(
    stream: StreamKind,
    shards: &'a [(usize, &'a ReportView<'v>)],
) -> Vec<ShardIntervals<'a, 'v>> {
    shards
        .iter()
        .map(|(k, v)| {
            let first = v.streams.first().is_some_and(|s| s.name == stream);
            let iv: Vec<&Interval> = v
                .intervals
                .iter()
                .filter(|i| i.stream == stream && !(first && v.from_log))
                .collect();
            let start = v
                .started_at
                .as_deref()
                .and_then(parse_rfc3339)
                .or_else(|| v.hlog.map(|l| l.base_s))
                .unwrap_or(0.0);
            (*k, *v, iv, start)
        })
        .filter(|(_, _, iv, _)| !iv.is_empty())
        .collect()
}

/// One line of `f` per shard over its own intervals, and the merged run's when `merged`:
/// last, so drawn first, and the shards' lines stay visible where they meet it.
fn chart_lines<'p>(
    per: &'p [ShardIntervals<'_, '_>],
    points: &[(Interval, &Slot)],
    t0: f64,
    f: &dyn Fn(&Interval) -> Option<f64>,
    merged: bool,
) -> Vec<Line<'p>> {
    let mut lines: Vec<Line<'p>> = Vec::new();
    for (n, (_, v, iv, start)) in per.iter().enumerate() {
        lines.push(Line {
            key: v.label.as_str(),
            label: v.label.as_str(),
            class: CLASSES[n % CLASSES.len()],
            values: iv.iter().map(|i| f(i)).collect(),
            t: Some(
                iv.iter()
                    .map(|i| round_us(start - t0 + i.elapsed_s))
                    .collect(),
            ),
        });
    }
    if merged {
        lines.push(Line {
            key: "merged",
            label: "merged",
            class: "merged",
            values: points.iter().map(|(i, _)| f(i)).collect(),
            t: None,
        });
    }
    lines
}

/// Where the merged line's latency comes from, or why it has none.
fn latency_note(out: &mut String, key: &str, logs: &[(usize, &crate::Hlog)]) {
    let latency_source = match logs.len() {
        0 => None,
        1 => Some(format!(
            "the merged report's interval log {}",
            logs[0].1.label
        )),
        _ => Some("the shards' interval logs, added".to_string()),
    };
    match &latency_source {
        Some(src) => {
            let _ = write!(
                out,
                "<p class=\"meta\" id=\"{key}-latency-source\" data-value=\"{}\">The merged line's \
                 latency comes from {}.</p>",
                if logs.len() == 1 { "merged" } else { "shards" },
                esc(src)
            );
        }
        None => out.push_str(
            "<p class=\"meta\">The merged line's latency per interval needs histograms: give \
             each shard's interval log (<code>--hlog</code>, in the reports' order) or the \
             merged one; the shards' own lines are drawn.</p>",
        ),
    }
}

/// The shards' intervals summed into the slots their ends fall in.
fn shard_slots(
    per: &[ShardIntervals<'_, '_>],
    slot_of: &dyn Fn(f64) -> i64,
) -> BTreeMap<i64, Slot> {
    let mut slots: BTreeMap<i64, Slot> = BTreeMap::new();
    for (k, _, iv, start) in per {
        for (i, x) in iv.iter().enumerate() {
            let s = slots.entry(slot_of(start + x.elapsed_s)).or_default();
            // The set's totals were checked to fit (`find`): these never saturate.
            s.requests = s.requests.saturating_add(x.requests);
            s.rows = s.rows.saturating_add(x.rows);
            s.count = s.count.saturating_add(x.count());
            s.errors = s.errors.saturating_add(x.errors);
            s.retries = s.retries.saturating_add(x.retries);
            s.length = s.length.max(x.interval_s);
            s.from.push((*k, i));
        }
    }
    slots
}

/// The interval logs whose histograms give the merged line's latency: every shard's when
/// each has one, else the merged report's, else none.
fn merged_logs<'a>(
    stream: StreamKind,
    shards: &[(usize, &'a ReportView<'_>)],
    merged: Option<(usize, &'a ReportView<'_>)>,
) -> Vec<(usize, &'a crate::Hlog)> {
    let is_log_stream = |v: &ReportView<'_>| v.streams.first().is_some_and(|s| s.name == stream);
    if shards
        .iter()
        .all(|(_, v)| v.hlog.is_some() && is_log_stream(v))
    {
        shards
            .iter()
            .filter_map(|(k, v)| Some((*k, v.hlog?)))
            .collect()
    } else {
        merged
            .filter(|(_, v)| is_log_stream(v))
            .and_then(|(k, v)| Some((k, v.hlog?)))
            .into_iter()
            .collect()
    }
}

/// Adds each log interval's histograms to the slot its end falls in.
fn add_logs(
    slots: &mut BTreeMap<i64, Slot>,
    logs: &[(usize, &crate::Hlog)],
    slot_of: &dyn Fn(f64) -> i64,
) {
    for (k, log) in logs {
        for (i, x) in log.intervals.iter().enumerate() {
            let end = log.base_s + x.start_s + x.length_s;
            let Some(s) = slots.get_mut(&slot_of(end)) else {
                continue;
            };
            s.log_from.push((*k, i));
            for (payload, into) in [
                (Some(&x.latency), &mut s.latency),
                (x.service.as_ref(), &mut s.service),
            ] {
                let Some(h) = payload.and_then(|p| tsload_report::hlog::decode_checked(p).ok())
                else {
                    continue;
                };
                let into = into.get_or_insert_with(tsload_core::recorder::new_histogram);
                // Checked when the log was read: its whole sum fits.
                let _ = add(into, &h);
            }
        }
    }
}

/// The merged run's points: one interval per slot, `length` apart.
fn merged_points(
    stream: StreamKind,
    slots: &BTreeMap<i64, Slot>,
    length: f64,
) -> Vec<(Interval, &Slot)> {
    slots
        .iter()
        .map(|(slot, s)| {
            let mut iv = summarize(stream, s.latency.as_ref(), s.service.as_ref());
            iv.elapsed_s = round_us(*slot as f64 * length);
            iv.interval_s = round_us(s.length);
            iv.requests = s.requests;
            iv.rows = s.rows;
            if stream == StreamKind::Query {
                iv.statements = Some(s.count);
            } else {
                iv.metrics = Some(s.count);
            }
            iv.errors = s.errors;
            iv.retries = s.retries;
            (iv, s)
        })
        .collect()
}

/// The merged points as the page's data, each naming the shard and log intervals it holds.
fn merged_data(points: &[(Interval, &Slot)], unit: &str, has_latency: bool) -> Value {
    let pct = |f: fn(&Interval) -> f64| -> Value {
        Value::Array(
            points
                .iter()
                .map(|(i, _)| {
                    if has_latency {
                        json!(f(i))
                    } else {
                        Value::Null
                    }
                })
                .collect(),
        )
    };
    let col = |f: fn(&Interval) -> Value| Value::Array(points.iter().map(|(i, _)| f(i)).collect());
    let pairs = |f: fn(&Slot) -> &Vec<(usize, usize)>| -> Value {
        Value::Array(
            points
                .iter()
                .map(|(_, s)| json!(f(s).iter().map(|(k, i)| [k, i]).collect::<Vec<_>>()))
                .collect(),
        )
    };
    json!({
        "unit": unit,
        "elapsed_s": col(|i| json!(i.elapsed_s)),
        "interval_s": col(|i| json!(i.interval_s)),
        "requests": col(|i| json!(i.requests)),
        "rows": col(|i| json!(i.rows)),
        "metrics": col(|i| json!(i.count())),
        "errors": col(|i| json!(i.errors)),
        "retries": col(|i| json!(i.retries)),
        "p50_ms": pct(|i| i.p50_ms),
        "p99_ms": pct(|i| i.p99_ms),
        "p999_ms": pct(|i| i.p999_ms),
        "max_ms": pct(|i| i.max_ms),
        "service_p50_ms": pct(|i| i.service_p50_ms),
        "service_p99_ms": pct(|i| i.service_p99_ms),
        "from": pairs(|s| &s.from),
        "log_from": pairs(|s| &s.log_from),
    })
}
