//! Unit tests of the page, without a browser: size, structure, exact figures, escaping,
//! and refusals (crates/cli/tests/html_report.rs opens real pages in Chromium).

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tsload_report::report::LatencySummary;

use crate::{Error, Figure, Interval, ReportInput, render, render_page};

mod sets;

/// `f`'s result, run on a thread: a test of something that must end fails (rather than
/// hangs) when it does not end within `secs` seconds.
pub(crate) fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("not done within {secs} s: a loop without bound")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("it panicked"),
    }
}

fn latency(scale_ns: u64) -> Value {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    for i in 1..=10_000u64 {
        h.record(scale_ns + i * 97 % 5_000_000).unwrap();
    }
    serde_json::to_value(LatencySummary::from_histogram(&h)).unwrap()
}

/// A write report of `n` one-second intervals, with errors in every 100th.
fn write_report(n: usize) -> Value {
    let intervals: Vec<Interval> = (0..n)
        .map(|i| Interval {
            stream: crate::StreamKind::Write,
            elapsed_s: (i + 1) as f64,
            interval_s: 1.0,
            requests: 120 + (i as u64 % 7),
            rows: 120_000 + i as u64 * 13 % 9_000,
            metrics: Some(1_200_000 + i as u64 * 131 % 90_000),
            statements: None,
            errors: u64::from(i % 100 == 0),
            retries: u64::from(i % 100 == 0),
            p50_ms: 1.234 + (i % 17) as f64 * 0.01,
            p99_ms: 5.678 + (i % 13) as f64 * 0.1,
            p999_ms: 9.876 + (i % 11) as f64,
            max_ms: 20.5 + (i % 29) as f64,
            service_p50_ms: 1.1,
            service_p99_ms: 4.4,
            service_p999_ms: 8.8,
            service_max_ms: 19.9,
        })
        .collect();
    json!({
        "tsload_version": "0.1.0", "target": "influx", "workload": "cpu-only",
        "started_at": "2026-11-26T15:00:00.000Z", "elapsed_s": n as f64,
        "stop_reason": "duration", "fatal_error": null,
        "rows": 432_000_000u64, "metrics": 4_320_000_000u64, "bytes": 1, "requests": 432_000,
        "retries": 36, "failed_requests": 0, "failed_rows": 0, "ambiguous_rows": 0,
        "recovered_rows": 0, "unsent_requests": 0, "unsent_rows": 0,
        "errors": {"server_busy": 36},
        "rows_per_s": 120_000.5, "metrics_per_s": 1_200_005.25, "mb_per_s": 12.5,
        "latency": latency(1_000_000), "service": latency(900_000),
        "client": {"cpu_user_s": 1.0, "cpu_system_s": 0.5, "cpu_s": 1.5,
                   "cpu_us_per_1000_metrics": 0.35, "peak_rss_bytes": 50_000_000u64},
        "scenario": {"target": {"kind": "influx", "url": "http://127.0.0.1:8086", "token": "s3cret"},
                     "network": {"delay": "5ms"}},
        "server": {"cpu_s": 12.5, "peak_rss_bytes": 300_000_000u64, "saturated": "server"},
        "rtt": {"kind": "tcp", "min_ms": 0.05, "avg_ms": 0.07},
        "exit": {"code": 0, "why": "success"},
        "intervals": intervals,
    })
}

fn page(report: Value) -> String {
    render(&[ReportInput {
        label: "run".into(),
        report,
    }])
    .unwrap()
}

/// The `data-value` of the element with `id`.
fn value_of(page: &str, id: &str) -> String {
    let at = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element {id}"));
    let rest = &page[at..];
    let start = rest.find("data-value=\"").unwrap() + "data-value=\"".len();
    rest[start..start + rest[start..].find('"').unwrap()].to_string()
}

#[test]
fn an_hour_at_one_second_intervals_stays_under_two_mib() {
    let p = page(write_report(3_600));
    assert!(
        p.len() < 2 * 1024 * 1024,
        "the page of a 1-hour run is {} bytes",
        p.len()
    );
    // Each time chart holds one point per interval.
    assert!(p.contains("id=\"r0-write-throughput\" data-points=\"3600\""));
    assert!(p.contains("id=\"r0-write-latency\" data-points=\"3600\""));
    let polylines = p.matches("<polyline").count();
    let full = p.matches("data-points=\"3600\" points=").count();
    // Throughput (1) and latency (4) lines over time, the spectrum's two.
    assert_eq!((polylines, full), (7, 5));
    eprintln!("1-hour page: {} bytes", p.len());
}

#[test]
fn figures_are_the_reports_own() {
    let r = write_report(10);
    let p = page(r.clone());
    assert_eq!(value_of(&p, "r0-write-rows"), "432000000");
    assert_eq!(value_of(&p, "r0-write-metrics_per_s"), "1200005.25");
    for key in ["p50_ms", "p99_ms", "p99_9_ms", "max_ms"] {
        assert_eq!(
            value_of(&p, &format!("r0-write-{key}")),
            r["latency"][key].to_string()
        );
    }
    assert_eq!(value_of(&p, "r0-write-errors"), "36");
    assert_eq!(value_of(&p, "r0-write-stop_reason"), "duration");
    assert_eq!(value_of(&p, "r0-exit"), "0");
    assert_eq!(value_of(&p, "r0-server-cpu_s"), "12.5");
    assert_eq!(value_of(&p, "r0-rtt-min_ms"), "0.05");
    assert_eq!(value_of(&p, "r0-network-delay"), "5ms");
    // Errors are marked where they happened: intervals 0 (of 10).
    assert!(p.contains("class=\"mark err\" data-count=\"1\""));
}

#[test]
fn the_page_asks_for_nothing_and_hides_secrets() {
    let p = page(write_report(5));
    assert!(p.contains("Content-Security-Policy"));
    assert!(p.contains("default-src 'none'"));
    for needle in ["src=", "<link", "@import", "url(", "https:"] {
        assert!(!p.contains(needle), "the page holds {needle}");
    }
    assert!(!p.contains("s3cret"), "a token was shown");
}

#[test]
fn labels_are_escaped() {
    let p = render(&[ReportInput {
        label: "</script><script>alert(1)</script>".into(),
        report: write_report(3),
    }])
    .unwrap();
    assert!(!p.contains("<script>alert(1)"));
    assert!(p.contains("&lt;script&gt;"));
}

#[test]
fn several_reports_stand_side_by_side() {
    let a = write_report(4);
    let mut b = write_report(6);
    b["exit"] = json!({"code": 3, "why": "a --fail-if threshold broke"});
    let p = render(&[
        ReportInput {
            label: "baseline.json".into(),
            report: a,
        },
        ReportInput {
            label: "new.json".into(),
            report: b,
        },
    ])
    .unwrap();
    assert!(p.contains("Side by side"));
    // Each report's line in one chart: 4 and 6 points.
    let at = p.find("id=\"cmp-write-throughput\"").unwrap();
    let chart = &p[at..at + p[at..].find("</figure>").unwrap()];
    assert!(chart.contains("data-series=\"baseline.json\" data-points=\"4\""));
    assert!(chart.contains("data-series=\"new.json\" data-points=\"6\""));
    assert!(p.contains("id=\"r1-write-throughput\" data-points=\"6\""));
    assert_eq!(value_of(&p, "r1-exit"), "3");
}

#[test]
fn an_old_report_without_intervals_still_renders() {
    let mut r = write_report(3);
    r.as_object_mut().unwrap().remove("intervals");
    r.as_object_mut().unwrap().remove("exit");
    let p = page(r);
    assert!(p.contains("no per-interval figures"));
    assert!(p.contains("not recorded"));
    assert!(p.contains("id=\"r0-write-spectrum\""));
}

#[test]
fn what_is_not_a_report_is_refused_by_name() {
    let e = render(&[ReportInput {
        label: "x.json".into(),
        report: json!({"hello": 1}),
    }])
    .unwrap_err();
    assert!(matches!(e, Error::NotAReport { .. }));
    assert!(e.to_string().starts_with("x.json: "), "{e}");
    let mut r = write_report(2);
    r["intervals"] = json!([{"stream": "write"}]);
    let e = render(&[ReportInput {
        label: "y.json".into(),
        report: r,
    }])
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("y.json: intervals[0].elapsed_s is missing; allowed: "),
        "{e}"
    );
    assert!(matches!(render(&[]), Err(Error::NoReport)));
}

#[test]
fn a_query_report_renders_its_statements() {
    let p = page(json!({
        "tsload_version": "0.1.0", "target": "postgres", "workload": "tsbs",
        "started_at": "x", "elapsed_s": 2.0, "stop_reason": "duration",
        "rows": 10, "statements": 40, "requests": 40, "failed_requests": 0,
        "errors": {}, "requests_per_s": 20.0, "statements_per_s": 20.0, "rows_per_s": 5.0,
        "latency": latency(2_000_000), "service": latency(2_000_000),
        "intervals": [{"stream": "query", "elapsed_s": 1.0, "interval_s": 1.0, "statements": 20},
                      {"stream": "query", "elapsed_s": 2.0, "interval_s": 1.0, "metrics": 20}],
    }));
    assert_eq!(value_of(&p, "r0-query-statements_per_s"), "20.0");
    assert!(p.contains("id=\"r0-query-throughput\" data-points=\"2\""));
}

#[test]
fn figures_are_embedded_when_plain_and_refused_otherwise() {
    let inputs = [ReportInput {
        label: "point 1".into(),
        report: write_report(3),
    }];
    let plain = Figure {
        title: "sweep".into(),
        svg: "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\"><text>sent on time</text></svg>\n".into(),
    };
    let p = render_page(Some("tsload sweep"), &inputs, &[plain]).unwrap();
    assert!(p.contains("<title>tsload report: tsload sweep</title>"));
    assert!(p.contains("<svg width=\"10\""));
    assert!(!p.contains("<?xml"));
    for svg in [
        "<svg><script>alert(1)</script></svg>",
        "<svg onload=\"alert(1)\"></svg>",
        "<svg><rect onclick = \"x\"/></svg>",
        "<svg><image href=\"http://x/y.png\"/></svg>",
        "no svg here",
    ] {
        let e = render_page(
            None,
            &inputs,
            &[Figure {
                title: "bad".into(),
                svg: svg.into(),
            }],
        )
        .unwrap_err();
        assert!(matches!(e, Error::BadFigure { .. }), "{svg}: {e}");
    }
}

/// An interval log of `n` intervals of `length_s` from `base` (epoch seconds), interval i
/// holding `per` latency values around `(i + 1)` ms, and its whole-run latency histogram.
fn hlog_text(base: u64, n: usize, length_s: f64, per: u64) -> (Vec<u8>, Vec<Histogram<u64>>) {
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(base);
    let mut w = tsload_report::hlog::HlogWriter::new(Vec::new(), start, "test").unwrap();
    let mut hists = Vec::new();
    for i in 0..n {
        let mut lat = tsload_core::recorder::new_histogram();
        let mut svc = tsload_core::recorder::new_histogram();
        for v in 0..per {
            lat.record((i as u64 + 1) * 1_000_000 + v * 7_919).unwrap();
            svc.record((i as u64 + 1) * 500_000 + v * 3_001).unwrap();
        }
        let at = std::time::Duration::from_secs_f64(i as f64 * length_s);
        w.write_interval(at, std::time::Duration::from_secs_f64(length_s), &lat, &svc)
            .unwrap();
        hists.push(lat);
    }
    (w.into_inner(), hists)
}

fn whole(hists: &[Histogram<u64>]) -> Histogram<u64> {
    let mut all = tsload_core::recorder::new_histogram();
    for h in hists {
        all.add(h).unwrap();
    }
    all
}

/// The page's data (the `tsload-data` JSON).
fn data_of(page: &str) -> Value {
    let start = page.find("id=\"tsload-data\">").unwrap() + "id=\"tsload-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end].replace("<\\/", "</")).unwrap()
}

fn ms(ns: u64) -> f64 {
    (ns / 1000) as f64 / 1000.0
}

#[test]
fn an_interval_log_gives_the_spectrum_and_the_missing_intervals() {
    let (text, hists) = hlog_text(1_795_000_000, 7, 1.0, 50);
    let log = crate::read_hlog("m.hlog", &text).unwrap();
    assert_eq!((log.len(), log.latency_count()), (7, 350));
    // A merged report: no intervals of its own.
    let mut r = write_report(3);
    r.as_object_mut().unwrap().remove("intervals");
    r["latency"]["count"] = json!(350);
    let reports = [ReportInput {
        label: "merged.json".into(),
        report: r,
    }];
    let logs = [Some(log)];
    let p = crate::Page {
        reports: &reports,
        hlogs: &logs,
        ..crate::Page::default()
    }
    .render()
    .unwrap();
    assert_eq!(value_of(&p, "r0-write-intervals-from"), "m.hlog");
    assert!(p.contains("id=\"r0-write-latency\" data-points=\"7\""));
    let d = &data_of(&p)["r0-write"];
    for (i, h) in hists.iter().enumerate() {
        assert_eq!(d["p99_ms"][i], json!(ms(h.value_at_quantile(0.99))));
        assert_eq!(d["max_ms"][i], json!(ms(h.max())));
        assert_eq!(d["requests"][i], json!(h.len()));
        assert_eq!(d["elapsed_s"][i], json!((i + 1) as f64));
    }
    // The spectrum's table: the whole log's percentiles to p99.999.
    let all = whole(&hists);
    assert!(p.contains("id=\"r0-write-percentiles\" data-source=\"hlog\""));
    assert_eq!(value_of(&p, "r0-write-pct-latency-count"), "350");
    for (q, id) in [(0.5, "p50"), (0.99, "p99"), (0.99999, "p99_999")] {
        assert_eq!(
            value_of(&p, &format!("r0-write-pct-latency-{id}")),
            ms(all.value_at_quantile(q)).to_string()
        );
    }
    assert_eq!(
        value_of(&p, "r0-write-pct-latency-max"),
        ms(all.max()).to_string()
    );
}

#[test]
fn a_report_with_its_own_intervals_keeps_them_beside_its_log() {
    let (text, _) = hlog_text(1_795_000_000, 4, 1.0, 10);
    let mut r = write_report(6);
    r["latency"]["count"] = json!(40);
    let reports = [ReportInput {
        label: "a.json".into(),
        report: r,
    }];
    let logs = [Some(crate::read_hlog("a.hlog", &text).unwrap())];
    let p = crate::Page {
        reports: &reports,
        hlogs: &logs,
        ..crate::Page::default()
    }
    .render()
    .unwrap();
    // The JSON's 6 intervals, not the log's 4; the spectrum from the log.
    assert!(p.contains("id=\"r0-write-latency\" data-points=\"6\""));
    assert!(!p.contains("intervals-from"));
    assert_eq!(value_of(&p, "r0-write-pct-latency-count"), "40");
}

#[test]
fn bad_interval_logs_are_named_errors() {
    let (good, _) = hlog_text(1_795_000_000, 2, 1.0, 5);
    let good = String::from_utf8(good).unwrap();
    let no_base: String = good
        .lines()
        .filter(|l| !l.starts_with("#["))
        .map(|l| format!("{l}\n"))
        .collect();
    let first_interval = good.lines().position(|l| l.starts_with("0.000,")).unwrap() + 1;
    let cases: Vec<(String, String)> = vec![
        (
            "garbage\n".into(),
            "x.hlog:1: not an interval log line".into(),
        ),
        (String::new(), "no StartTime or BaseTime".into()),
        (
            good.lines()
                .filter(|l| l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect(),
            "no interval in the log".into(),
        ),
        (
            no_base,
            "an interval before any StartTime or BaseTime".into(),
        ),
        (
            good.replacen(",HISTF", ",HISTFxx", 1),
            format!("x.hlog:{first_interval}: the interval's histogram: not base64"),
        ),
        (
            good.replacen("\nTag=service,", "\nTag=other,", 1),
            "Tag=other".into(),
        ),
        (
            good.lines()
                .filter(|l| !l.starts_with("0.000,"))
                .map(|l| format!("{l}\n"))
                .collect(),
            "without the untagged latency histogram".into(),
        ),
    ];
    for (text, says) in cases {
        let Err(e) = crate::read_hlog("x.hlog", text.as_bytes()) else {
            panic!("read, but should be refused with {says:?}");
        };
        assert!(matches!(e, Error::Hlog { .. } | Error::HlogRead(_)), "{e}");
        let e = e.to_string();
        assert!(e.starts_with("x.hlog:"), "{e}");
        assert!(e.contains(&says), "{says:?} not in {e}");
    }
    // One log per report, and each its report's.
    let log = crate::read_hlog("x.hlog", good.as_bytes()).unwrap();
    let reports = [
        ReportInput {
            label: "a.json".into(),
            report: write_report(2),
        },
        ReportInput {
            label: "b.json".into(),
            report: write_report(2),
        },
    ];
    let logs = [Some(log.clone())];
    let page = |logs: &[Option<crate::Hlog>]| {
        crate::Page {
            reports: &reports,
            hlogs: logs,
            ..crate::Page::default()
        }
        .render()
    };
    assert!(matches!(
        page(&logs),
        Err(Error::HlogCount {
            reports: 2,
            logs: 1
        })
    ));
    let e = page(&[Some(log), None]).unwrap_err();
    assert!(matches!(e, Error::HlogMismatch { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("x.hlog does not belong to a.json: the log holds 10 latency values"),
        "{e}"
    );
}

/// Whether `c` is a control character a page must not carry raw: C0 but `\n` and `\t`,
/// DEL, C1.
fn is_forbidden_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

#[test]
fn control_characters_from_a_report_never_reach_the_page() {
    let mut r = write_report(3);
    r["fatal_error"] = json!("boom\u{0}\u{1b}[2J\u{7f}\u{85}x\r\nnext\tline");
    r["exit"]["why"] = json!("server said \u{1b}]0;pwned\u{7}");
    r["errors"] = json!({"bad\u{1b}kind": 2});
    r["stop_reason"] = json!("dur\u{9b}ation");
    r["server"]["note"] = json!("nul\u{0}here");
    r["scenario"]["name"] = json!("c1\u{90}in plan");
    r["rtt"]["kind\u{1}"] = json!("tcp");
    let p = render(&[ReportInput {
        label: "run\u{1b}[31m.json".into(),
        report: r,
    }])
    .unwrap();
    let raw: Vec<char> = p.chars().filter(|c| is_forbidden_control(*c)).collect();
    assert!(raw.is_empty(), "the page holds {raw:?}");
    // Each shown as U+FFFD, the rest of the text kept (newlines and tabs too).
    assert!(p.contains("fatal: boom\u{fffd}\u{fffd}[2J\u{fffd}\u{fffd}x\u{fffd}\nnext\tline"));
    assert!(p.contains("server said \u{fffd}]0;pwned\u{fffd}"));
    assert!(p.contains("run\u{fffd}[31m.json"));
    assert!(p.contains("bad\u{fffd}kind 2"));
    assert!(p.contains("dur\u{fffd}ation"));
    assert!(p.contains("nul\u{fffd}here"));
    assert!(p.contains("c1\u{fffd}in plan"));
}

/// A bar chart as plotters' SVG backend writes it: each label escaped where it is drawn.
fn bar_chart_svg(labels: &[&str]) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&apos;")
    };
    let mut svg = String::from(
        "<svg width=\"640\" height=\"480\" viewBox=\"0 0 640 480\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n\
         <rect x=\"0\" y=\"0\" width=\"640\" height=\"480\" opacity=\"1\" fill=\"#FFFFFF\" \
         stroke=\"none\"/>\n",
    );
    for (i, label) in labels.iter().enumerate() {
        svg.push_str(&format!(
            "<rect x=\"{x}\" y=\"100\" width=\"40\" height=\"300\" opacity=\"1\" \
             fill=\"#1F77B4\" stroke=\"none\"/>\n\
             <text x=\"{x}\" y=\"420\" dy=\"0.76em\" text-anchor=\"middle\" \
             font-family=\"sans-serif\" font-size=\"12.9\" opacity=\"1\" fill=\"#000000\" \
             transform=\"rotate(90, {x}, 420)\">\n{}\n</text>\n",
            escape(label),
            x = 60 + i * 100
        ));
    }
    svg.push_str(
        "<polyline fill=\"none\" opacity=\"1\" stroke=\"#000000\" stroke-width=\"1\" \
         points=\"50,400 600,400 \"/>\n</svg>\n",
    );
    svg
}

#[test]
fn figures_are_written_again_with_their_text_escaped_never_scanned() {
    let hostile = "<a href=\"javascript:x\" onload=y>";
    let labels = ["ahrefs-prod", hostile, "on-call=1 url(x)"];
    let reports: Vec<ReportInput> = labels
        .iter()
        .map(|l| ReportInput {
            label: l.to_string(),
            report: write_report(2),
        })
        .collect();
    let figures = [Figure {
        title: "rows per second".into(),
        svg: format!("<?xml version=\"1.0\"?>\n{}", bar_chart_svg(&labels)),
    }];
    let p = render_page(Some("tsload compare: x.toml"), &reports, &figures).unwrap();
    assert_eq!(p.matches("<figure class=\"svgfig\">").count(), 1);
    assert!(!p.contains("<?xml"));
    // Each label in the chart, as text.
    assert!(
        p.contains(">\nahrefs-prod\n</text>"),
        "no ahrefs-prod label"
    );
    let escaped = "&lt;a href=&quot;javascript:x&quot; onload=y&gt;";
    assert!(p.contains(&format!(">\n{escaped}\n</text>")));
    assert!(p.contains(&format!("<h2>{escaped}</h2>")));
    // No live markup from it: every `onload` is the escaped label's.
    assert!(!p.contains("<a href=\"javascript"));
    assert_eq!(
        p.matches("onload").count(),
        p.matches("onload=y&gt;").count()
    );
    // The drawing itself is kept.
    assert_eq!(p.matches("fill=\"#1F77B4\"").count(), 3);
    assert!(p.contains("transform=\"rotate(90, 160, 420)\""));

    // Markup that is not a drawing is refused by what it is, wherever it hides.
    for (svg, says) in [
        (format!("<svg><text>{hostile}</text></svg>"), "not XML:"),
        (
            "<svg><text><a href=\"javascript:x\">y</a></text></svg>".to_string(),
            "an element <a> (line 1, column 12); allowed: svg, g,",
        ),
        (
            "<svg><text fill=\"url(https://x/y#z)\">a</text></svg>".to_string(),
            "<text fill=\"url(https://x/y#z)\"> (line 1): a paint is",
        ),
        (
            "<svg><rect style=\"fill:url(x)\"/></svg>".to_string(),
            "<rect style> (line 1): the attribute style; allowed:",
        ),
        (
            "<svg><image xmlns:x=\"http://www.w3.org/1999/xlink\" x:href=\"y\"/></svg>".to_string(),
            "an element <image>",
        ),
        (
            "<svg><rect xmlns:x=\"http://www.w3.org/1999/xlink\" x:href=\"y\"/></svg>".to_string(),
            "the attribute href",
        ),
        (
            "<!DOCTYPE svg [<!ENTITY e \"x\">]><svg>&e;</svg>".to_string(),
            "not XML:",
        ),
        ("<svg><g></svg>".to_string(), "not XML:"),
        ("<svg><text>a".to_string(), "not XML:"),
    ] {
        let e = render_page(
            None,
            &reports[..1],
            &[Figure {
                title: "bad".into(),
                svg,
            }],
        )
        .unwrap_err();
        assert!(matches!(e, Error::BadFigure { .. }), "{e}");
        assert!(e.to_string().contains(says), "{e}\nshould say\n{says}");
    }
}

/// The run page said nothing of what the server stored, of the ambiguous bound or of
/// the offered rate; an interval too short for a rate was drawn as 0, the last, partial
/// interval as a spike, and a 0.014 s run as two empty charts.
#[test]
fn the_run_page_says_what_was_stored_and_draws_no_rate_that_never_was() {
    let mut r = write_report(6);
    r["stored"] = json!({"samples": 0, "refused": {"small_timestamp": 60}});
    r["stored_shortfall"] = json!("the server stored 0 new samples of the 60 it acknowledged");
    r["ambiguous_rows"] = json!(5);
    r["offered_rows_per_s"] = json!(150_000.0);
    // The last interval ended with the run after 0.2 s.
    r["intervals"][5]["interval_s"] = json!(0.2);
    r["intervals"][5]["elapsed_s"] = json!(5.2);
    let p = page(r);
    assert_eq!(value_of(&p, "r0-write-stored"), "0");
    assert!(
        p.contains("SHORTFALL: the server stored 0 new samples"),
        "shortfall said"
    );
    assert_eq!(value_of(&p, "r0-write-ambiguous_rows"), "5");
    assert!(p.contains("432,000,000 to 432,000,005"), "the bound");
    assert_eq!(value_of(&p, "r0-write-offered"), "150000.0");
    assert!(
        p.contains("offered rows/s (achieved 80.0%)"),
        "offered vs achieved"
    );
    // Six intervals, five rates drawn: the partial one is said, not drawn.
    assert!(p.contains("id=\"r0-write-partial\""));
    let at = p.find("id=\"r0-write-throughput\"").unwrap();
    let chart = &p[at..at + p[at..].find("</figure>").unwrap()];
    assert!(
        chart.contains("data-series=\"rate\" data-points=\"5\""),
        "{chart}"
    );
    // Not known: said.
    let mut r = write_report(3);
    r["stored_error"] = json!("the server did not answer within 30s after the run");
    let p = page(r);
    assert!(p.contains("stored not known: the server did not answer"));
    // A run of one 0.014 s interval: no empty charts, a sentence.
    let mut r = write_report(1);
    r["elapsed_s"] = json!(0.014);
    r["intervals"][0]["interval_s"] = json!(0.014);
    r["intervals"][0]["elapsed_s"] = json!(0.014);
    let p = page(r);
    assert!(p.contains("id=\"r0-write-too-short\""));
    assert!(!p.contains("id=\"r0-write-throughput\""));
    assert!(!p.contains("id=\"r0-write-latency\""));
}

/// A mixed run's page: its queries' clock started at 0, not at their offset, and the
/// write latency without and with queries was not on it.
#[test]
fn a_mixed_page_puts_the_queries_on_the_writes_clock_and_splits_the_write_latency() {
    let mut write = write_report(4);
    write["started_at"] = json!("2026-11-26T15:00:00.000Z");
    let intervals = write["intervals"].clone();
    let query = json!({
        "tsload_version": "0.1.0", "target": "influx", "workload": "tsbs",
        "started_at": "2026-11-26T15:00:02.000Z", "elapsed_s": 2.0, "stop_reason": "duration",
        "rows": 10, "statements": 40, "requests": 40, "failed_requests": 0,
        "errors": {}, "requests_per_s": 20.0, "statements_per_s": 20.0, "rows_per_s": 5.0,
        "latency": latency(2_000_000), "service": latency(2_000_000),
    });
    let mut all = intervals.as_array().unwrap().clone();
    all.push(json!({"stream": "query", "elapsed_s": 1.0, "interval_s": 1.0, "statements": 20}));
    all.push(json!({"stream": "query", "elapsed_s": 2.0, "interval_s": 1.0, "statements": 20}));
    let p = page(json!({
        "write": write, "query": query,
        "write_latency_alone": latency(1_000_000),
        "write_latency_with_queries": latency(3_000_000),
        "exit": {"code": 0, "why": "success"},
        "intervals": all,
    }));
    // The queries' intervals, 2 s after the writes began.
    let data = &p[p.find("id=\"tsload-data\">").unwrap()..];
    let at = data.find("\"r0-query\"").expect("the queries' data");
    let query_data = &data[at..at + data[at..].find('}').unwrap()];
    assert!(
        query_data.contains("\"elapsed_s\":[3.0,4.0]"),
        "{query_data}"
    );
    // The writes' latency, without and with the queries.
    assert!(p.contains("id=\"r0-write-split\""));
    let alone = latency(1_000_000);
    assert_eq!(value_of(&p, "r0-write-alone-count"), "10000");
    assert_eq!(
        value_of(&p, "r0-write-alone-p99_ms"),
        alone["p99_ms"].to_string()
    );
    assert_ne!(
        value_of(&p, "r0-write-alone-p99_ms"),
        value_of(&p, "r0-write-with_queries-p99_ms")
    );
}
