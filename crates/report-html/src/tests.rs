//! Unit tests of the page, without a browser: size, structure, exact figures, escaping,
//! and refusals (crates/cli/tests/html_report.rs opens real pages in Chromium).

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tsload_core::report::LatencySummary;

use crate::{Error, Figure, Interval, ReportInput, render, render_page};

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
            stream: "write".into(),
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
    assert!(e.to_string().contains("`intervals`"), "{e}");
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
