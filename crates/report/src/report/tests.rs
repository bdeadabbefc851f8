//! Tests of the write report: grouped numbers, latency in milliseconds, and what the text
//! says of CPU, storage and a run that fell behind.

use super::*;
use tsload_core::engine::StopReason;
use tsload_core::recorder::Counters;

#[test]
fn groups_thousands() {
    assert_eq!(group(0), "0");
    assert_eq!(group(999), "999");
    assert_eq!(group(1000), "1,000");
    assert_eq!(group(1234567), "1,234,567");
}

#[test]
fn latency_summary_in_ms() {
    let mut h = tsload_core::recorder::new_histogram();
    for v in 1..=1000u64 {
        h.record(v * 1_000_000).unwrap();
    }
    let l = LatencySummary::from_histogram(&h);
    assert_eq!(l.count, 1000);
    assert!((l.p50_ms - 500.0).abs() < 1.0, "{l:?}");
    assert!((l.p99_ms - 990.0).abs() < 1.0, "{l:?}");
    assert!((l.max_ms - 1000.0).abs() < 1.0, "{l:?}");
    assert_eq!(l.get("p99.9"), Some(l.p99_9_ms));
    // Any other percentile comes from the kept histogram; nonsense is not a figure.
    assert!((l.get("p42").unwrap() - 420.0).abs() < 1.0, "{l:?}");
    assert_eq!(l.get("p142"), None);
    assert_eq!(l.get("q42"), None);
    assert_eq!(LatencySummary::default().get("p42"), None);
}

fn outcome(counters: Counters, offered: Option<f64>) -> RunOutcome {
    RunOutcome {
        started_at: std::time::SystemTime::UNIX_EPOCH,
        stop_reason: StopReason::Duration,
        offered_rows_per_s: offered,
        ..crate::fixture::run_outcome(counters, tsload_core::recorder::new_histogram())
    }
}

fn text(counters: Counters, offered: Option<f64>) -> String {
    let usage = Usage::default();
    Summary::new(
        &outcome(counters, offered),
        &usage,
        "t",
        "w",
        serde_json::Value::Null,
    )
    .render_text()
}

#[test]
fn a_cpu_split_too_short_to_sample_is_marked_rough() {
    let summary = |user_ms, system_ms| {
        let usage = Usage {
            user: std::time::Duration::from_millis(user_ms),
            system: std::time::Duration::from_millis(system_ms),
            peak_rss_bytes: 15 << 20,
        };
        let counters = Counters {
            rows: 864_000,
            metrics: 8_640_000,
            ..Counters::default()
        };
        Summary::new(
            &outcome(counters, None),
            &usage,
            "null",
            "cpu-only",
            serde_json::Value::Null,
        )
    };
    // A 15 ms closed-loop run into null: the total is exact, its split a few ticks.
    let short = summary(12, 3);
    assert!(short.client.cpu_split_rough);
    assert!(
        short.render_text().contains(
            "client    cpu 0.015 s (user 0.012, sys 0.003; split rough: tick-sampled, \
             under 1 s)   1.74 us per 1,000 metrics"
        ),
        "{}",
        short.render_text()
    );
    let json = serde_json::to_value(&short).unwrap();
    assert_eq!(json["client"]["cpu_split_rough"], true);
    assert_eq!(json["client"]["cpu_s"], 0.015);
    let long = summary(2_000, 500);
    assert!(!long.client.cpu_split_rough);
    assert!(
        long.render_text()
            .contains("client    cpu 2.500 s (user 2.000, sys 0.500)   289.35 us per"),
        "{}",
        long.render_text()
    );
    let json = serde_json::to_value(&long).unwrap();
    assert_eq!(json["client"]["cpu_split_rough"], false);
}

#[test]
fn storage_asked_for_is_a_figure_or_a_reason_never_nothing() {
    let usage = Usage::default();
    let summary = |storage| {
        let mut o = outcome(
            Counters {
                rows: 100,
                metrics: 1_000,
                ..Counters::default()
            },
            None,
        );
        o.storage_bytes = storage;
        Summary::new(&o, &usage, "t", "w", serde_json::Value::Null)
    };
    let measured = summary(Some(Ok((1_000, 5_000))));
    assert_eq!(measured.storage.as_ref().unwrap().bytes_per_metric, 4.0);
    assert!(measured.render_text().contains("(4.00 bytes per metric)"));
    let cannot = summary(Some(Err("the target cannot tell".into())));
    assert!(cannot.storage.is_none());
    assert!(
        cannot
            .render_text()
            .contains("storage   not measured: the target cannot tell"),
        "{}",
        cannot.render_text()
    );
    let json = serde_json::to_value(&cannot).unwrap();
    assert_eq!(json["storage_error"], "the target cannot tell");
    // Not asked for: no line, no field.
    let none = summary(None);
    assert!(!none.render_text().contains("storage"));
    assert!(
        serde_json::to_value(&none)
            .unwrap()
            .get("storage_error")
            .is_none()
    );
}

#[test]
fn the_text_says_what_fell_behind_and_what_may_be_stored() {
    let behind = text(
        Counters {
            rows: 100,
            unsent_requests: 3,
            unsent_rows: 30,
            ..Counters::default()
        },
        Some(1000.0),
    );
    assert!(
        behind.contains("offered              1,000 rows/s   achieved 10.0%"),
        "{behind}"
    );
    assert!(
        behind.contains("3 requests (30 rows) were due but never sent"),
        "{behind}"
    );
    let late = text(
        Counters {
            rows: 500,
            ..Counters::default()
        },
        Some(1000.0),
    );
    assert!(late.contains("requests left late"), "{late}");
    let kept_up = text(
        Counters {
            rows: 990,
            ..Counters::default()
        },
        Some(1000.0),
    );
    assert!(
        kept_up.contains("achieved 99.0%") && !kept_up.contains("WARNING"),
        "{kept_up}"
    );
    let closed = text(
        Counters {
            rows: 990,
            ambiguous_rows: 20,
            recovered_rows: 10,
            ..Counters::default()
        },
        None,
    );
    assert!(!closed.contains("offered"), "{closed}");
    assert!(closed.contains("holds 990 to 1,010 rows"), "{closed}");
    assert!(
        closed.contains("recovered               10 rows"),
        "{closed}"
    );
}
