//! Pages of several reports that make one set: a shard set with its merged line, a
//! sweep with its fit, and the sets refused for figures no run has.

use serde_json::{Value, json};

use super::*;

/// Shard `index` of 2: `n` half-second intervals, its load started `offset_ms` after
/// 2026-11-26T15:00:00Z.
fn shard_report(index: u32, n: usize, offset_ms: u64, latency_count: u64) -> Value {
    let mut r = write_report(n);
    r["shard"] = json!({"index": index, "count": 2});
    r["started_at"] = json!(format!("2026-11-26T15:00:00.{offset_ms:03}Z"));
    r["latency"]["count"] = json!(latency_count);
    for (i, iv) in r["intervals"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        iv["elapsed_s"] = json!((i + 1) as f64 * 0.5);
        iv["interval_s"] = json!(0.5);
        iv["metrics"] = json!(1_000 * (index as u64 + 1) + i as u64);
    }
    r
}

#[test]
fn a_shard_set_draws_each_shard_and_the_merged_line() {
    let base = 1_795_705_200; // 2026-11-26T15:00:00Z
    assert_eq!(
        crate::shards::parse_rfc3339("2026-11-26T15:00:00.000Z"),
        Some(base as f64)
    );
    let (t0, h0) = hlog_text(base, 6, 0.5, 20);
    let (t1, h1) = hlog_text(base, 5, 0.5, 30);
    // Shard 1 started 0.5 s later: its interval i is shard 0's interval i + 1.
    let t1 = String::from_utf8(t1)
        .unwrap()
        .replace(&format!("{base}.000"), &format!("{base}.500"))
        .into_bytes();
    let s0 = shard_report(0, 6, 0, 120);
    let s1 = shard_report(1, 5, 500, 150);
    let reports = [
        ReportInput {
            label: "s0.json".into(),
            report: s0.clone(),
        },
        ReportInput {
            label: "s1.json".into(),
            report: s1.clone(),
        },
    ];
    let logs = [
        Some(crate::read_hlog("s0.hlog", &t0).unwrap()),
        Some(crate::read_hlog("s1.hlog", &t1).unwrap()),
    ];
    for with_logs in [false, true] {
        let p = crate::Page {
            reports: &reports,
            hlogs: if with_logs { &logs } else { &[] },
            ..crate::Page::default()
        }
        .render()
        .unwrap();
        // Slots 1..=6: the merged line has 6 points, each shard its own.
        assert!(
            p.contains("id=\"merge-write-throughput\" data-points=\"6\""),
            "{with_logs}"
        );
        let at = p.find("id=\"merge-write-throughput\"").unwrap();
        let chart = &p[at..at + p[at..].find("</figure>").unwrap()];
        assert!(chart.contains("data-series=\"merged\" data-points=\"6\""));
        assert!(chart.contains("data-series=\"s0.json\" data-points=\"6\""));
        assert!(chart.contains("data-series=\"s1.json\" data-points=\"5\""));
        let d = &data_of(&p)["merge-write"];
        // Every shard interval in exactly one merged point, whose count is their sum.
        let shard_metrics = |k: u64, i: u64| {
            [&s0, &s1][k as usize]["intervals"][i as usize]["metrics"]
                .as_u64()
                .unwrap()
        };
        let mut seen = Vec::new();
        for (slot, from) in d["from"].as_array().unwrap().iter().enumerate() {
            let pairs: Vec<(u64, u64)> = from
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
                .collect();
            let sum: u64 = pairs.iter().map(|(k, i)| shard_metrics(*k, *i)).sum();
            assert_eq!(d["metrics"][slot], json!(sum));
            seen.extend(pairs);
        }
        seen.sort_unstable();
        let mut all: Vec<(u64, u64)> = (0..6)
            .map(|i| (0, i))
            .chain((0..5).map(|i| (1, i)))
            .collect();
        all.sort_unstable();
        assert_eq!(seen, all);
        if !with_logs {
            assert!(d["p99_ms"].as_array().unwrap().iter().all(Value::is_null));
            continue;
        }
        assert_eq!(value_of(&p, "merge-write-latency-source"), "shards");
        // Each merged point's p99: the shards' log intervals it holds, added.
        for (slot, from) in d["log_from"].as_array().unwrap().iter().enumerate() {
            let mut h = tsload_core::recorder::new_histogram();
            for pair in from.as_array().unwrap() {
                let (k, i) = (
                    pair[0].as_u64().unwrap(),
                    pair[1].as_u64().unwrap() as usize,
                );
                h.add(&[&h0, &h1][k as usize][i]).unwrap();
            }
            assert_eq!(
                d["p99_ms"][slot],
                json!(ms(h.value_at_quantile(0.99))),
                "{slot}"
            );
        }
        assert_eq!(d["log_from"][1].as_array().unwrap().len(), 2);
    }
    // Runs that were not split (count 1), or one shard twice: no shard set.
    for (a, b) in [((0, 1), (0, 1)), ((0, 2), (0, 2))] {
        let mut x = shard_report(0, 3, 0, 1);
        let mut y = shard_report(1, 3, 0, 1);
        x["shard"] = json!({"index": a.0, "count": a.1});
        y["shard"] = json!({"index": b.0, "count": b.1});
        let p = render(&[
            ReportInput {
                label: "x".into(),
                report: x,
            },
            ReportInput {
                label: "y".into(),
                report: y,
            },
        ])
        .unwrap();
        assert!(!p.contains("id=\"merge\""), "{a:?} {b:?}");
    }
}

/// A write sweep as `tsload sweep` writes sweep.json: `delay` x `workers`, with its fits.
fn sweep_json() -> Value {
    let mut rows = Vec::new();
    for workers in [1u64, 4] {
        for (d, delay) in ["0ms", "5ms", "20ms"].iter().enumerate() {
            let rtt = 0.1 + 2.0 * [0.0, 5.0, 20.0][d];
            let requests_per_s = workers as f64 * 1000.0 / (1.0 + 1.5 * rtt);
            rows.push(json!({
                "point": {"delay": delay, "workers": workers},
                "rtt": {"method": "app", "median_ms": rtt, "min_ms": rtt, "avg_ms": rtt, "max_ms": rtt},
                "rows_per_s": requests_per_s * 100.0, "metrics_per_s": requests_per_s * 1000.0,
                "requests_per_s": requests_per_s,
                "latency_mean_ms": 1.0 + rtt, "latency_p50_ms": 1.0 + rtt, "latency_p99_ms": 3.0 + rtt,
                "service_mean_ms": 0.9 + rtt, "errors": d, "client_cpu_s": 0.25 * workers as f64,
                "server_cpu_s": null, "bytes_per_metric": null,
                "workers": workers, "batch": 100, "in_flight": 1, "stop_reason": "duration",
            }));
        }
    }
    json!({
        "axes": [{"key": "delay", "values": ["0ms", "5ms", "20ms"]}, {"key": "workers", "values": [1, 4]}],
        "rows": rows,
        "fits": [
            {"fixed": {"workers": 1}, "fit": {"k": 1.5, "t_service_ms": 1.0, "r_squared": 1.0, "points": 3,
             "halving_rtt_ms": 0.6666666666666666, "no_halving_reason": null}, "error": null},
            {"fixed": {"workers": 4}, "fit": null, "error": "too few points to fit: 1 with both an RTT and a request time, at least 2 needed"},
        ],
    })
}

/// The `data-x`, `data-y` and `data-rows` of the polyline of `series` in chart `id`.
fn xy_of(page: &str, id: &str, series: &str) -> (Vec<f64>, Vec<f64>, Vec<i64>) {
    let at = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    let chart = &page[at..at + page[at..].find("</figure>").unwrap()];
    let line = chart
        .find(&format!("data-series=\"{series}\""))
        .unwrap_or_else(|| panic!("no series {series} in {id}"));
    let attr = |name: &str| -> String {
        let s = chart[line..].find(&format!("{name}=\"")).unwrap() + line + name.len() + 2;
        chart[s..s + chart[s..].find('"').unwrap()].to_string()
    };
    let nums = |t: String| -> Vec<f64> { t.split(' ').map(|x| x.parse().unwrap()).collect() };
    (
        nums(attr("data-x")),
        nums(attr("data-y")),
        attr("data-rows")
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect(),
    )
}

#[test]
fn a_sweep_draws_each_figure_against_each_key_with_the_fit() {
    let sweep = sweep_json();
    let reports = [ReportInput {
        label: "point 1".into(),
        report: write_report(3),
    }];
    let p = crate::Page {
        reports: &reports,
        sweep: Some(&sweep),
        ..crate::Page::default()
    }
    .render()
    .unwrap();
    let rows = sweep["rows"].as_array().unwrap();
    let delay_ms = |r: &Value| {
        r["point"]["delay"]
            .as_str()
            .unwrap()
            .trim_end_matches("ms")
            .parse::<f64>()
            .unwrap()
    };
    for fig in [
        "rows_per_s",
        "metrics_per_s",
        "requests_per_s",
        "latency_p50_ms",
        "latency_p99_ms",
        "service_mean_ms",
        "errors",
        "client_cpu_s",
    ] {
        // Against delay: one line per workers value, one dot per point.
        let id = format!("sweep-delay-{fig}");
        assert!(
            p.contains(&format!("id=\"{id}\" data-points=\"{}\"", rows.len())),
            "{id}"
        );
        for w in [1, 4] {
            let (x, y, r) = xy_of(&p, &id, &format!("workers={w}"));
            assert_eq!(r.len(), 3);
            for ((x, y), r) in x.iter().zip(&y).zip(&r) {
                let row = &rows[*r as usize];
                assert_eq!(row["point"]["workers"], json!(w));
                assert_eq!(*x, delay_ms(row));
                assert_eq!(*y, row[fig].as_f64().unwrap(), "{id}");
            }
        }
        // Against workers: one line per delay.
        let (x, y, r) = xy_of(&p, &format!("sweep-workers-{fig}"), "delay=5ms");
        assert_eq!(x, [1.0, 4.0]);
        for (y, r) in y.iter().zip(&r) {
            assert_eq!(*y, rows[*r as usize][fig].as_f64().unwrap());
        }
        // Against the measured RTT, grouped by workers.
        let (x, _, r) = xy_of(&p, &format!("sweep-rtt-{fig}"), "workers=1");
        for (x, r) in x.iter().zip(&r) {
            assert_eq!(*x, rows[*r as usize]["rtt"]["median_ms"].as_f64().unwrap());
        }
    }
    // No server CPU measured: no chart of it.
    assert!(!p.contains("sweep-delay-server_cpu_s"));
    // The fit: its figures, and its curve on the rates against the RTT.
    assert_eq!(value_of(&p, "sweep-fit0-k"), "1.5");
    assert_eq!(value_of(&p, "sweep-fit0-t_service_ms"), "1.0");
    assert_eq!(
        value_of(&p, "sweep-fit0-halving_rtt_ms"),
        "0.6666666666666666"
    );
    assert!(value_of(&p, "sweep-fit1-error").starts_with("too few points"));
    let (x, y, r) = xy_of(&p, "sweep-rtt-requests_per_s", "fit workers=1");
    assert!(r.iter().all(|r| *r == -1));
    // The rows follow the model exactly: its curve passes through them.
    for (x, y) in x.iter().zip(&y) {
        let expected = 1000.0 / (1.0 + 1.5 * x);
        assert!(
            (y - expected).abs() < 1e-6 * expected,
            "{x}: {y} vs {expected}"
        );
    }
    assert!(!p.contains("data-series=\"fit workers=4\""));
    assert!(!p.contains("sweep-delay-requests_per_s\" data-points=\"6\"><figcaption>fit"));
    // Not a sweep.json: refused.
    let e = crate::Page {
        reports: &reports,
        sweep: Some(&json!({"rows": []})),
        ..crate::Page::default()
    }
    .render()
    .unwrap_err();
    assert!(matches!(e, Error::BadSweep(_)), "{e}");
}

/// The error `render` gives for `report` (labelled `label`), within 3 s: a loop without
/// bound fails the test rather than hanging it.
fn refusal(label: &str, report: Value) -> Error {
    let label = label.to_string();
    within(3, move || {
        render(&[ReportInput { label, report }])
            .map(|p| p.len())
            .expect_err("rendered, but should be refused")
    })
}

#[test]
fn figures_no_run_has_are_refused_by_report_field_and_value() {
    let mut cases: Vec<(Value, &str)> = Vec::new();
    let mut r = write_report(3);
    r["intervals"][1]["elapsed_s"] = json!(1e308);
    cases.push((
        r,
        "run: intervals[1].elapsed_s is 1e308; allowed: a finite number of seconds from 0 to \
         1000000000 (about 31.7 years)",
    ));
    // (The largest double: the x axis's tick loop once ran forever on it.)
    let mut r = write_report(3);
    r["intervals"][2]["elapsed_s"] = json!(f64::MAX);
    cases.push((
        r,
        "run: intervals[2].elapsed_s is 1.7976931348623157e308; allowed: a finite number",
    ));
    let mut r = write_report(3);
    r["intervals"][2]["elapsed_s"] = json!(1.5);
    cases.push((
        r,
        "run: intervals[2].elapsed_s is 1.5; allowed: at least 2.0, the end of intervals[1] of \
         the same stream: intervals are in time order",
    ));
    let mut r = write_report(3);
    r["intervals"][0]["rows"] = json!(u64::MAX);
    cases.push((
        r,
        "run: intervals[1].rows is 120013; allowed: a count that keeps the sum of the stream's \
         `rows` within 18446744073709551615",
    ));
    let mut r = write_report(3);
    r["intervals"][0]["p99_ms"] = json!(-2.0);
    cases.push((
        r,
        "run: intervals[0].p99_ms is -2.0; allowed: a finite number",
    ));
    let mut r = write_report(3);
    r["latency"]["p99_ms"] = json!(1e308);
    cases.push((
        r,
        "run: latency.p99_ms is 1e308; allowed: a finite number of milliseconds from 0 to \
         1000000000000",
    ));
    let mut r = write_report(3);
    r["errors"] = json!({"a": u64::MAX, "b": 1});
    cases.push((
        r,
        "run: errors.b is 1; allowed: a count that keeps the sum of the errors within \
         18446744073709551615 (the kinds before it sum to 18446744073709551615)",
    ));
    let mut r = write_report(3);
    r["elapsed_s"] = json!(1e300);
    cases.push((
        r,
        "run: elapsed_s is 1e300; allowed: a finite number of seconds",
    ));
    let mut r = write_report(3);
    r["client"]["cpu_s"] = json!(-1);
    cases.push((
        r,
        "run: client.cpu_s is -1; allowed: a finite number of CPU seconds",
    ));
    let mut r = write_report(3);
    r["metrics"] = json!(1.5);
    cases.push((r, "run: metrics is 1.5; allowed: a whole number"));
    for (report, says) in cases {
        let e = refusal("run", report);
        assert!(matches!(e, Error::OutOfRange { .. }), "{e}");
        assert!(
            e.to_string().starts_with(says),
            "{e}\nshould start with\n{says}"
        );
    }
}

#[test]
fn a_shard_set_whose_counts_pass_a_u64_is_refused_not_wrapped() {
    // Each shard's own intervals sum within a u64; the set's do not.
    let half = 1u64 << 63;
    let shard = |index: u32| {
        let mut r = shard_report(index, 2, 0, 1);
        r["intervals"][0]["rows"] = json!(half);
        r["intervals"][1]["rows"] = json!(0);
        r
    };
    let reports = [
        ReportInput {
            label: "s0.json".into(),
            report: shard(0),
        },
        ReportInput {
            label: "s1.json".into(),
            report: shard(1),
        },
    ];
    let e = within(3, move || render(&reports).map(|p| p.len()).unwrap_err());
    assert!(matches!(e, Error::OutOfRange { .. }), "{e}");
    assert!(
        e.to_string().starts_with(
            "s1.json: intervals[0].rows is 9223372036854775808; allowed: a count that keeps the \
             sum over the shard set's write intervals within 18446744073709551615 (the shards' \
             intervals before it sum to 9223372036854775808"
        ),
        "{e}"
    );
    // Half as much each: drawn, the merged point holds the exact sum.
    let shard = |index: u32| {
        let mut r = shard_report(index, 2, 0, 1);
        r["intervals"][0]["rows"] = json!(half / 2);
        r["intervals"][1]["rows"] = json!(0);
        r
    };
    let p = render(&[
        ReportInput {
            label: "s0.json".into(),
            report: shard(0),
        },
        ReportInput {
            label: "s1.json".into(),
            report: shard(1),
        },
    ])
    .unwrap();
    assert_eq!(data_of(&p)["merge-write"]["rows"][0], json!(half));
}

#[test]
fn a_sweep_with_figures_no_run_has_is_refused_by_field() {
    let reports = [ReportInput {
        label: "point 1".into(),
        report: write_report(3),
    }];
    let mut huge = sweep_json();
    huge["rows"][2]["rows_per_s"] = json!(1e308);
    let mut far = sweep_json();
    far["rows"][1]["point"]["delay"] = json!("1e308s");
    far["axes"][0]["values"][1] = json!("1e308s");
    for (sweep, says) in [
        (
            huge,
            "sweep.json: rows[2].rows_per_s is 1e308; allowed: a finite number",
        ),
        (
            far,
            "sweep.json: axes[0].values[1] is inf; allowed: a finite number",
        ),
    ] {
        let e = crate::Page {
            reports: &reports,
            sweep: Some(&sweep),
            ..crate::Page::default()
        }
        .render()
        .map(|p| p.len())
        .unwrap_err();
        assert!(matches!(e, Error::BadSweep(_)), "{e}");
        assert!(e.to_string().starts_with(says), "{e}");
    }
}
