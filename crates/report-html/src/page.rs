//! The page itself: headline figures, the charts of each stream, the client, server and
//! network blocks and the resolved plan of each report, with the inline CSS and JS that
//! make it readable offline (light and dark, down to a phone's width) and the hover.
//!
//! Every text that comes from a report (labels, a server's error message, stop reasons,
//! error kinds, the plan, table keys and values) reaches the page through [`esc`], which
//! escapes it for HTML and replaces each control character with U+FFFD (`\u{fffd}`, the
//! replacement character): C0 (0x00 to 0x1f) but newline and tab, DEL (0x7f) and C1
//! (0x80 to 0x9f), so no ESC sequence, NUL or other control byte is in the page. The
//! page's data (the hover's JSON) escapes the same characters as `\uXXXX`.

use std::fmt::Write as _;

use serde_json::Value;

use crate::chart::{self, Line, Scale};
use crate::checked::{Latency, ReportView, Row};
use crate::escape::esc;
use crate::{Error, Hlog, Interval, ReportInput, StreamKind};

mod stream;

use stream::{partial_last, stream_block};

/// Refuses every request the page could make: nothing leaves, and a try is logged.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// An SVG chart drawn elsewhere (a sweep's plot, compare's bar charts), put in the page
/// as `svg.rs` writes it again: drawing elements and attributes only, every text escaped.
#[derive(Debug, Clone)]
pub struct Figure {
    pub title: String,
    /// One `<svg>` element (an XML prolog before it is dropped).
    pub svg: String,
}

/// The page of `reports` (one run, or several side by side: shards, a baseline and a new
/// run). The figures come from the reports alone.
pub fn render(reports: &[ReportInput]) -> Result<String, Error> {
    render_page(None, reports, &[])
}

/// The page of `reports` under `title` (the reports' labels when `None`), `figures` first.
pub fn render_page(
    title: Option<&str>,
    reports: &[ReportInput],
    figures: &[Figure],
) -> Result<String, Error> {
    Page {
        title,
        reports,
        figures,
        ..Page::default()
    }
    .render()
}

/// Everything one page shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Page<'a> {
    /// The page's title (the reports' labels when `None`).
    pub title: Option<&'a str>,
    pub reports: &'a [ReportInput],
    /// Interval logs, paired with the reports in order: `hlogs[k]` is `reports[k]`'s (its
    /// first stream's: writes, or queries for a query run; `None`: that report has none).
    /// Empty: none; otherwise exactly one entry per report.
    pub hlogs: &'a [Option<Hlog>],
    /// SVG charts drawn elsewhere, shown first.
    pub figures: &'a [Figure],
    /// A sweep's `sweep.json` (`axes`, `rows`, `fits`): each figure against each swept key,
    /// with the fit.
    pub sweep: Option<&'a Value>,
}

impl Page<'_> {
    /// The page as one self-contained HTML document.
    pub fn render(&self) -> Result<String, Error> {
        let reports = self.reports;
        if reports.is_empty() {
            return Err(Error::NoReport);
        }
        if !self.hlogs.is_empty() && self.hlogs.len() != reports.len() {
            return Err(Error::HlogCount {
                reports: reports.len(),
                logs: self.hlogs.len(),
            });
        }
        let views: Vec<ReportView<'_>> = reports
            .iter()
            .enumerate()
            .map(|(k, r)| ReportView::new(r, self.hlogs.get(k).and_then(Option::as_ref)))
            .collect::<Result<_, _>>()?;
        // What the shards' section adds up is checked here too, before anything is drawn.
        let shard_set = crate::shards::find(&views)?;
        let svgs: Vec<String> = self
            .figures
            .iter()
            .map(|f| crate::svg::clean(&f.title, &f.svg))
            .collect::<Result<_, _>>()?;
        let labels = views
            .iter()
            .map(|v| v.label.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let title = self.title.map_or(labels, str::to_string);
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
             <meta name=\"color-scheme\" content=\"light dark\">\
             <title>tsload report: {}</title><style>{CSS}</style></head><body>\
             <header><h1>tsload report</h1><p class=\"meta\">{}</p></header>",
            esc(&title),
            esc(&title)
        );
        for (f, svg) in self.figures.iter().zip(&svgs) {
            let _ = write!(
                out,
                "<figure class=\"svgfig\"><figcaption>{}</figcaption>{svg}</figure>",
                esc(&f.title)
            );
        }
        if let Some(sweep) = self.sweep {
            crate::sweep::section(&mut out, sweep)?;
        }
        let mut data = serde_json::Map::new();
        crate::shards::section(&mut out, &views, shard_set, &mut data);
        if views.len() > 1 {
            comparison(&mut out, &views);
        }
        for (k, v) in views.iter().enumerate() {
            report_section(&mut out, k, v, &mut data);
        }
        let data = data_text(Value::Object(data));
        let _ = writeln!(
            out,
            "<footer>Made by tsload {}. Hover or tap a chart to see one interval's figures.</footer>\
             <script type=\"application/json\" id=\"tsload-data\">{data}</script>\
             <script>{JS}</script></body></html>",
            esc(views[0].tsload_version.as_deref().unwrap_or("?"))
        );
        Ok(out)
    }
}

/// The names a stream's figures go by.
struct StreamWords {
    title: &'static str,
    count: &'static str,
    rate: &'static str,
    unit: &'static str,
}

fn words(stream: StreamKind) -> StreamWords {
    if stream == StreamKind::Query {
        StreamWords {
            title: "Queries",
            count: "statements",
            rate: "statements_per_s",
            unit: "statements",
        }
    } else {
        StreamWords {
            title: "Writes",
            count: "metrics",
            rate: "metrics_per_s",
            unit: "metrics",
        }
    }
}

/// A figure's JSON text as the page states it in `data-value` (empty: not stated).
fn raw(v: Option<&crate::checked::Num>) -> String {
    v.map_or(String::new(), |n| n.raw.clone())
}

/// A figure's value, when stated.
fn val(v: Option<&crate::checked::Num>) -> Option<f64> {
    v.map(|n| n.value)
}

/// A count as `data-value` states it (empty: not stated).
fn raw_count(v: Option<u64>) -> String {
    v.map_or(String::new(), |n| n.to_string())
}

/// `1234567` -> `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate or size, grouped, no decimals over 100.
fn amount(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v.abs() >= 100.0 {
        group(v.round().max(0.0) as u64)
    } else {
        format!("{v:.2}")
    }
}

/// Milliseconds with three significant digits or so.
fn millis(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

/// The page's data as the text of its `<script type="application/json">`: `</` written
/// `<\/`, and each control character (those JSON leaves raw: DEL, C1) as `\uXXXX`.
fn data_text(data: Value) -> String {
    let mut out = String::new();
    for c in data.to_string().replace("</", "<\\/").chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// One headline figure: its label, its exact value in `data-value`, its text.
fn card(out: &mut String, id: &str, label: &str, value: &str, text: &str, class: &str) {
    let _ = write!(
        out,
        "<div class=\"fig {class}\"><span>{}</span><b id=\"{id}\" data-value=\"{}\">{}</b></div>",
        esc(label),
        esc(value),
        esc(text)
    );
}

/// Several reports: one row per stream of each, side by side.
fn comparison(out: &mut String, views: &[ReportView<'_>]) {
    out.push_str(
        "<section><h2>Side by side</h2><div class=\"scroll\"><table class=\"cmp\"><thead><tr>\
         <th>report</th><th>stream</th><th>rows</th><th>rate /s</th><th>p50</th><th>p99</th>\
         <th>p99.9</th><th>max</th><th>errors</th><th>exit</th><th>stored</th>\
         <th>verdict</th></tr></thead><tbody>",
    );
    comparison_rows(out, views);
    out.push_str("</tbody></table></div>");
    // A report whose figures are no measure says why, in words, under the table.
    for (k, v) in views.iter().enumerate() {
        if let Some(flaw) = &v.verdict.flaw {
            let _ = write!(
                out,
                "<p class=\"exit bad\" id=\"r{k}-flaw\">{}: {} (exit {}): {}; its figures are no measure</p>",
                esc(&v.label),
                flaw.kind.word(),
                v.verdict.exit,
                esc(&flaw.why)
            );
        }
    }
    // Each report's line over time, per stream.
    const CLASSES: [&str; 6] = ["c0", "c1", "c2", "c3", "c4", "c5"];
    for stream in StreamKind::ALL {
        // Intervals read from a log count requests, not the rates compared here.
        let per: Vec<(&str, Vec<&Interval>)> = views
            .iter()
            .filter(|v| !(v.from_log && v.streams.first().is_some_and(|s| s.name == stream)))
            .map(|v| {
                (
                    v.label.as_str(),
                    v.intervals.iter().filter(|i| i.stream == stream).collect(),
                )
            })
            .filter(|(_, iv): &(&str, Vec<&Interval>)| !iv.is_empty())
            .collect();
        if per.len() < 2 {
            continue;
        }
        let w = words(stream);
        let times = |iv: &[&Interval]| Some(iv.iter().map(|i| i.elapsed_s).collect());
        // `rates`: a report's partial last interval gets no rate (as on its own block).
        let lines = |f: &dyn Fn(&Interval) -> Option<f64>, rates: bool| -> Vec<Line<'_>> {
            per.iter()
                .enumerate()
                .map(|(n, (label, iv))| {
                    let partial = rates && partial_last(iv);
                    Line {
                        key: label,
                        label,
                        class: CLASSES[n % CLASSES.len()],
                        values: iv
                            .iter()
                            .enumerate()
                            .map(|(j, i)| f(i).filter(|_| !(partial && j + 1 == iv.len())))
                            .collect(),
                        t: times(iv),
                    }
                })
                .collect()
        };
        chart::time_chart(
            out,
            &format!("cmp-{stream}-throughput"),
            "",
            &format!("{} per second, each report", w.unit),
            "",
            &[],
            &lines(&|i| i.rate(), true),
            Scale::Linear,
            None,
        );
        chart::time_chart(
            out,
            &format!("cmp-{stream}-p99"),
            "",
            "p99 latency per interval, each report (log scale)",
            " ms",
            &[],
            &lines(&|i| Some(i.p99_ms), false),
            Scale::Log,
            None,
        );
    }
    out.push_str("</section>");
}

/// The side-by-side table's rows: each report's streams, with the run's stored count and
/// verdict on its first.
fn comparison_rows(out: &mut String, views: &[ReportView<'_>]) {
    for (k, v) in views.iter().enumerate() {
        let code = v.exit_code;
        let verdict = &v.verdict;
        for sv in &v.streams {
            let s = sv.name;
            let w = words(s);
            let _ = write!(
                out,
                "<tr><td><a href=\"#r{k}\">{}</a></td><td>{s}</td><td>{}</td><td>{} {}</td>",
                esc(&v.label),
                group(sv.rows),
                amount(val(sv.rate.as_ref()).unwrap_or(0.0)),
                w.unit
            );
            for key in ["p50_ms", "p99_ms", "p99_9_ms", "max_ms"] {
                let ms = sv.latency.as_ref().and_then(|l| val(l.get(key)));
                let _ = write!(out, "<td>{}</td>", millis(ms.unwrap_or(0.0)));
            }
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td>",
                group(sv.errors_total),
                code.map_or("-".to_string(), |c| c.to_string())
            );
            // What the server stored and the verdict are the run's (its writes'): on its
            // first row only.
            if s == v.streams[0].name {
                let _ = write!(
                    out,
                    "<td id=\"r{k}-stored\" data-value=\"{}\">{}</td><td id=\"r{k}-verdict\" \
                     data-value=\"{}\" class=\"{}\" title=\"{}\">{}</td></tr>",
                    verdict.stored.map_or_else(String::new, |n| n.to_string()),
                    verdict.stored.map_or_else(|| "-".to_string(), group),
                    verdict.word(),
                    if verdict.is_measure() { "ok" } else { "bad" },
                    esc(&verdict.to_string()),
                    verdict.word()
                );
            } else {
                out.push_str("<td></td><td></td></tr>");
            }
        }
    }
}

fn report_section(
    out: &mut String,
    k: usize,
    v: &ReportView<'_>,
    data: &mut serde_json::Map<String, Value>,
) {
    let _ = write!(
        out,
        "<section class=\"report\" id=\"r{k}\"><h2>{}</h2>",
        esc(&v.label)
    );
    let _ = write!(
        out,
        "<p class=\"meta\">{} &rarr; {} &middot; started {} &middot; {:.1} s &middot; tsload {}</p>",
        esc(v.workload.as_deref().unwrap_or("?")),
        esc(v.target.as_deref().unwrap_or("?")),
        esc(v.started_at.as_deref().unwrap_or("?")),
        v.streams.first().map_or(0.0, |s| s.elapsed_s),
        esc(v.tsload_version.as_deref().unwrap_or("?"))
    );
    let (code, why) = (v.exit_code, &v.exit_why);
    let _ = write!(
        out,
        "<p class=\"exit {}\">exit status <b id=\"r{k}-exit\" data-value=\"{}\">{}</b> <span id=\"r{k}-exit-why\">{}</span></p>",
        match code {
            Some(0) => "ok",
            Some(_) => "bad",
            None => "",
        },
        code.map_or(String::new(), |c| c.to_string()),
        code.map_or("?".to_string(), |c| c.to_string()),
        esc(why)
    );
    for (n, sv) in v.streams.iter().enumerate() {
        let log = v.hlog.filter(|_| n == 0);
        stream_block(out, k, sv, &v.intervals, log, n == 0 && v.from_log, data);
    }
    if let Some((alone, with)) = &v.write_latency_split {
        latency_split(out, k, alone, with);
    }
    server_block(out, k, v);
    network_block(out, k, v);
    let _ = write!(
        out,
        "<details><summary>Resolved plan (secrets hidden)</summary><pre id=\"r{k}-plan\">{}</pre></details></section>",
        esc(&v.plan)
    );
}

/// A mixed run's write latency while no query ran beside while queries ran: what the
/// queries cost the writes.
fn latency_split(out: &mut String, k: usize, alone: &Latency, with: &Latency) {
    let _ = write!(
        out,
        "<h3>Write latency, without and with the queries</h3><div class=\"scroll\">\
         <table class=\"cmp\" id=\"r{k}-write-split\"><thead><tr><th>writes</th>\
         <th>requests</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead><tbody>"
    );
    for (name, l) in [("alone", alone), ("with_queries", with)] {
        let _ = write!(
            out,
            "<tr><td>{}</td><td id=\"r{k}-write-{name}-count\" data-value=\"{}\">{}</td>",
            if name == "alone" {
                "while no query ran"
            } else {
                "while queries ran"
            },
            l.count.map_or(String::new(), |c| c.to_string()),
            group(l.count.unwrap_or(0))
        );
        for key in ["p50_ms", "p99_ms", "p99_9_ms", "max_ms"] {
            let n = l.get(key);
            let _ = write!(
                out,
                "<td id=\"r{k}-write-{name}-{key}\" data-value=\"{}\">{}</td>",
                esc(&raw(n)),
                millis(val(n).unwrap_or(0.0))
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

/// A report's scalars (nested objects flattened as `a.b`), as a table.
fn table(out: &mut String, id_prefix: &str, rows: &[Row]) {
    out.push_str("<div class=\"scroll\"><table class=\"kv\"><tbody>");
    for row in rows {
        let k = &row.key;
        let text = match row.number {
            Some(n) if k.contains("bytes") && !k.contains("per") => mib(n),
            Some(f) if row.float => {
                if f.abs() >= 100.0 {
                    amount(f)
                } else {
                    format!("{f:.3}")
                }
            }
            _ => row.raw.clone(),
        };
        let _ = write!(
            out,
            "<tr><th>{}</th><td id=\"{id_prefix}-{}\" data-value=\"{}\">{}</td></tr>",
            esc(k),
            esc(k),
            esc(&row.raw),
            esc(&text)
        );
    }
    out.push_str("</tbody></table></div>");
}

fn server_block(out: &mut String, k: usize, v: &ReportView<'_>) {
    let Some(server) = &v.server else {
        return;
    };
    let _ = write!(out, "<h3>Server ([monitor])</h3>");
    table(out, &format!("r{k}-server"), server);
}

fn network_block(out: &mut String, k: usize, v: &ReportView<'_>) {
    if v.rtt.is_none() && v.network.is_none() {
        return;
    }
    out.push_str("<h3>Network</h3>");
    if let Some(rtt) = &v.rtt {
        out.push_str("<h4>Probe RTT</h4>");
        table(out, &format!("r{k}-rtt"), rtt);
    }
    if let Some(n) = &v.network {
        out.push_str("<h4>Impairment ([network])</h4>");
        table(out, &format!("r{k}-network"), n);
    }
}
