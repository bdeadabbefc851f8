//! Tests of the merge of shards' reports: histograms merged exactly, shards checked to be
//! one whole run, and figures, counts and intervals no run has refused, not summed.

use super::*;
use std::time::{Duration, SystemTime};

use crate::query_report::QuerySummary;
use crate::report::LatencySummary;
use tsload_core::engine::RunOutcome;
use tsload_core::recorder::Counters;
use tsload_core::recorder::new_histogram;
use tsload_core::rusage::Usage;

fn report(shard: &str, start_ms: u64, elapsed_ms: u64, values: &[u64]) -> ShardReport {
    let mut latency = new_histogram();
    for &v in values {
        latency.record(v).unwrap();
    }
    let counters = Counters {
        requests: values.len() as u64,
        rows: values.len() as u64 * 10,
        metrics: values.len() as u64 * 100,
        ..Counters::default()
    };
    let outcome = RunOutcome {
        started_at: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + start_ms),
        elapsed: Duration::from_millis(elapsed_ms),
        ..crate::fixture::run_outcome(counters, latency)
    };
    let summary = Summary::new(
        &outcome,
        &Usage::default(),
        "sqlite",
        "cpu-only",
        serde_json::json!({}),
    );
    // Through JSON, as `tsload merge` reads it.
    let summary: Summary = serde_json::from_str(&serde_json::to_string(&summary).unwrap()).unwrap();
    ShardReport {
        source: format!("shard-{shard}.json"),
        shard: Some(Shard::parse(shard).unwrap()),
        host: Some("h".into()),
        scenario_sha256: Some("abc".into()),
        exit: Some(0),
        summary,
    }
}

#[test]
fn merged_percentiles_are_those_of_all_values() {
    let a: Vec<u64> = (1..=900).map(|v| v * 1000).collect();
    let b: Vec<u64> = (1..=100).map(|v| v * 1_000_000).collect();
    let m = merge(
        &[report("0/2", 0, 1000, &a), report("1/2", 500, 1000, &b)],
        false,
    )
    .unwrap();
    let mut all = new_histogram();
    for v in a.iter().chain(&b) {
        all.record(*v).unwrap();
    }
    assert_eq!(m.summary.latency, LatencySummary::from_histogram(&all));
    assert_eq!(m.summary.requests, 1000);
    assert_eq!(m.summary.rows, 10_000);
    // The union window: 0 .. 1.5 s.
    assert!(
        (m.summary.elapsed_s - 1.5).abs() < 1e-9,
        "{}",
        m.summary.elapsed_s
    );
    assert!((m.summary.rows_per_s - 10_000.0 / 1.5).abs() < 1e-6);
    assert_eq!(m.shards.len(), 2);
    assert!(m.render_text().contains("merged from 2 shard report(s)"));
}

#[test]
fn merged_cpu_split_is_as_rough_as_its_roughest_shard() {
    let (mut a, mut b) = (
        report("0/2", 0, 1000, &[1000]),
        report("1/2", 0, 1000, &[1000]),
    );
    for (r, user, system) in [(&mut a, 2.0, 0.5), (&mut b, 1.5, 0.25)] {
        let c = &mut r.summary.client;
        (c.cpu_user_s, c.cpu_system_s, c.cpu_s) = (user, system, user + system);
        c.cpu_split_rough = false;
    }
    let m = merge(&[a.clone(), b.clone()], false).unwrap();
    assert!(!m.summary.client.cpu_split_rough);
    assert!(!m.render_text().contains("split rough"));
    // One shard that says its split is rough makes the sum's rough.
    b.summary.client.cpu_split_rough = true;
    let m = merge(&[a.clone(), b.clone()], false).unwrap();
    assert!(m.summary.client.cpu_split_rough);
    assert!(
        m.render_text().contains("split rough"),
        "{}",
        m.render_text()
    );
    // A report from before the flag is judged by its CPU: 0.2 s is too short.
    let mut old = serde_json::to_value(&b.summary).unwrap();
    old["client"]
        .as_object_mut()
        .unwrap()
        .remove("cpu_split_rough");
    old["client"]["cpu_s"] = 0.2.into();
    b.summary = serde_json::from_value(old).unwrap();
    assert!(!b.summary.client.cpu_split_rough);
    assert!(
        merge(&[a, b], false)
            .unwrap()
            .summary
            .client
            .cpu_split_rough
    );
}

#[test]
fn refuses_what_is_not_one_whole_run() {
    let a = report("0/3", 0, 1000, &[1000]);
    let b = report("1/3", 0, 1000, &[1000]);
    let c = report("2/3", 0, 1000, &[1000]);
    assert!(matches!(
        merge(&[a.clone(), b.clone()], false),
        Err(MergeError::MissingShards { ref missing, count: 3 }) if missing == "2"
    ));
    assert!(merge(&[a.clone(), b.clone()], true).is_ok());
    assert!(matches!(
        merge(&[a.clone(), a.clone(), c.clone()], false),
        Err(MergeError::DuplicateShard { .. })
    ));
    let mut other = c.clone();
    other.scenario_sha256 = Some("def".into());
    let e = merge(&[a.clone(), b.clone(), other], false).unwrap_err();
    assert!(e.to_string().contains("scenario_sha256 is 'def'"), "{e}");
    let mut whole = c.clone();
    whole.shard = None;
    assert!(matches!(
        merge(&[a.clone(), b.clone(), whole], false),
        Err(MergeError::NoShard { .. })
    ));
    let mut no_hdr = c;
    no_hdr.summary.latency.histogram = None;
    let e = merge(&[a, b, no_hdr], false).unwrap_err();
    assert!(e.to_string().contains("latency has no histogram"), "{e}");
    assert_eq!(merge(&[], false).unwrap_err(), MergeError::Empty);
}

/// Shard `index` of 2 of a query run, as its `--json` report's text.
fn query_json(index: u32) -> serde_json::Value {
    let mut h = new_histogram();
    h.record(1000).unwrap();
    let mut l = serde_json::to_value(LatencySummary::from_histogram(&h)).unwrap();
    l["hdr"] = crate::report::encode_histogram(&h).unwrap().into();
    let kind = serde_json::json!({
        "name": "lastpoint", "requests": 5, "failed": 0, "rows": 5, "statements": 5,
        "requests_per_s": 5.0, "statements_per_s": 5.0, "errors": {},
        "latency": l, "service": l,
    });
    serde_json::json!({
        "tsload_version": "0.1.0", "target": "sqlite", "workload": "tsbs",
        "started_at": "2026-11-26T05:36:51.513Z", "elapsed_s": 1.0, "load_s": 0.0,
        "load_requests": 0, "load_rows": 0, "load_statements": 0,
        "stop_reason": "duration", "fatal_error": null,
        "requests": 5, "failed_requests": 0, "statements": 5, "rows": 5, "errors": {},
        "requests_per_s": 5.0, "statements_per_s": 5.0, "rows_per_s": 5.0,
        "latency": l, "service": l, "kinds": [kind],
        "client": {"cpu_user_s": 0.0, "cpu_system_s": 0.0, "cpu_s": 0.0, "peak_rss_bytes": 0},
        "cpu_us_per_request": 0.0, "scenario": {},
        "shard": {"index": index, "count": 2}, "scenario_sha256": "abc",
    })
}

fn read_query(name: &str, v: &serde_json::Value) -> ShardReport<QuerySummary> {
    match read_report(name, v.to_string().as_bytes()).unwrap() {
        AnyReport::Query(r) => *r,
        AnyReport::Write(_) => panic!("{name}: read as a write report"),
    }
}

#[test]
fn open_loop_query_shards_sum_what_was_offered_and_never_sent() {
    // Reports written before `unsent_requests` existed read as 0.
    assert_eq!(
        read_query("old.json", &query_json(0))
            .summary
            .unsent_requests,
        0
    );
    let shard = |index: u32, unsent: u64| {
        let mut q = query_json(index);
        q["offered_requests_per_s"] = 8.0.into();
        q["unsent_requests"] = unsent.into();
        read_query(&format!("q{index}.json"), &q)
    };
    let m = merge_queries(&[shard(0, 2), shard(1, 3)], false).unwrap();
    assert_eq!(m.summary.offered_requests_per_s, Some(16.0));
    assert_eq!(m.summary.unsent_requests, 5);
    // 10 requests in the shards' 1 s window against 16 offered.
    assert_eq!(m.summary.achieved_ratio, Some(0.625));
    assert!(
        m.summary
            .render_text()
            .contains("5 requests were due but never sent"),
        "{}",
        m.summary.render_text()
    );
}

#[test]
fn elapsed_that_is_no_duration_is_refused_not_a_panic() {
    for (v, shown) in [
        (1e300, "1e300"),
        (1e19, "1e19"),
        (1e9 + 1.0, "1000000001.0"),
        (-1.0, "-1.0"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "inf"),
    ] {
        let a = report("0/2", 0, 1000, &[1000]);
        let mut b = report("1/2", 0, 1000, &[1000]);
        b.summary.elapsed_s = v;
        assert_eq!(
            merge(&[a, b], false).unwrap_err().to_string(),
            format!(
                "shard-1/2.json: elapsed_s is {shown}; allowed: a finite number of seconds \
                 from 0 to 1000000000 (about 31.7 years)"
            )
        );
    }
    // The longest run allowed merges.
    let a = report("0/2", 0, 1000, &[1000]);
    let mut b = report("1/2", 0, 1000, &[1000]);
    b.summary.elapsed_s = MAX_ELAPSED_S;
    assert!(merge(&[a, b], false).is_ok());
    // Query reports: the load's seconds too; client CPU seconds.
    // (Refused as the report is read.)
    let mut a = query_json(0);
    a["load_s"] = 1e300.into();
    let e = read_report("a.json", a.to_string().as_bytes()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("a.json: load_s is 1e300; allowed: "),
        "{e}"
    );
    let mut c = report("1/2", 0, 1000, &[1000]);
    c.summary.client.cpu_s = -0.5;
    let e = merge(&[report("0/2", 0, 1000, &[1000]), c], false).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("shard-1/2.json: client.cpu_s is -0.5; allowed: "),
        "{e}"
    );
}

#[test]
fn counts_that_overflow_are_refused_not_wrapped() {
    let mut a = report("0/2", 0, 1000, &[1000]);
    let mut b = report("1/2", 0, 1000, &[1000]);
    a.summary.rows = u64::MAX;
    b.summary.rows = 500;
    assert_eq!(
        merge(&[a.clone(), b.clone()], false)
            .unwrap_err()
            .to_string(),
        "shard-1/2.json: rows is 500, and the reports before it sum to 18446744073709551615: \
         the total passes 18446744073709551615, the most it can hold, so these cannot be the \
         counts of one run"
    );
    // Every sum is checked: errors by kind, client memory.
    a.summary.rows = 1;
    a.summary.errors.insert("timeout".into(), u64::MAX);
    b.summary.errors.insert("timeout".into(), 1);
    let e = merge(&[a.clone(), b.clone()], false).unwrap_err();
    assert!(
        matches!(&e, MergeError::Overflow { field, .. } if field == "errors.timeout"),
        "{e}"
    );
    a.summary.errors.clear();
    a.summary.client.peak_rss_bytes = u64::MAX;
    b.summary.client.peak_rss_bytes = 1;
    let e = merge(&[a.clone(), b.clone()], false).unwrap_err();
    assert!(
        matches!(&e, MergeError::Overflow { field, .. } if field == "client.peak_rss_bytes"),
        "{e}"
    );
    // Query reports: totals and each kind's counts.
    let mut q = query_json(0);
    q["kinds"][0]["requests"] = u64::MAX.into();
    let e = merge_queries(
        &[
            read_query("a.json", &q),
            read_query("b.json", &query_json(1)),
        ],
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "b.json: kinds[lastpoint].requests is 5, and the reports before it sum to \
         18446744073709551615: the total passes 18446744073709551615, the most it can hold, \
         so these cannot be the counts of one run"
    );
    let mut q = query_json(1);
    q["load_rows"] = u64::MAX.into();
    q["rows"] = 0.into();
    let mut p = query_json(0);
    p["load_rows"] = 1.into();
    let e =
        merge_queries(&[read_query("a.json", &p), read_query("b.json", &q)], false).unwrap_err();
    assert!(
        matches!(&e, MergeError::Overflow { field, file, .. } if field == "load_rows" && file == "b.json"),
        "{e}"
    );
}

#[test]
fn missing_shards_are_named_up_to_twenty() {
    let mut a = report("0/2", 0, 1000, &[1000]);
    a.shard = Some(Shard::new(0, 100).unwrap());
    let e = merge(&[a.clone()], false).unwrap_err().to_string();
    assert_eq!(
        e,
        "shards 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 79 \
         more of 100 are missing (the reports cover only part of the run); \
         --allow-partial merges what is there"
    );
    // A shard no run can have (the fields are public): refused, not a 4-billion list.
    a.shard = Some(Shard {
        index: 0,
        count: u32::MAX,
    });
    let e = merge(&[a], true).unwrap_err().to_string();
    assert!(
        e.starts_with("shard-0/2.json: shard is 0/4294967295; allowed: "),
        "{e}"
    );
}

#[test]
fn read_report_refuses_what_is_not_a_shard_report() {
    let big = vec![b' '; MAX_REPORT_BYTES as usize + 1];
    assert_eq!(
        read_report("big.json", &big).unwrap_err().to_string(),
        "big.json: larger than 67108864 bytes, the most a report is read (tsload's reports \
         are a few KiB to a few MiB)"
    );
    // A histogram whose counts say "a run of 2^63 zeros": hdrhistogram's own decoder
    // negates i64::MIN on it (a panic in a debug build).
    let mut v2 = Vec::new();
    for (x, n) in [
        (0x1c84_9313u64, 4),
        (9, 4),
        (0, 4),
        (3, 4),
        (1, 8),
        (2048, 8),
    ] {
        v2.extend(&x.to_be_bytes()[8 - n..]);
    }
    v2.extend(1.0f64.to_bits().to_be_bytes());
    v2.extend([0xff; 9]);
    use base64::Engine as _;
    let mut q = query_json(0);
    q["kinds"][0]["service"]["hdr"] = base64::engine::general_purpose::STANDARD.encode(&v2).into();
    assert_eq!(
        read_report("q.json", q.to_string().as_bytes())
            .unwrap_err()
            .to_string(),
        "q.json: kinds[0].service.hdr: not an encoded histogram: its counts: a run of 2^63 \
         zero counts"
    );
    let e = read_report("n.json", b"[1, 2]").unwrap_err().to_string();
    assert_eq!(e, "n.json: not a tsload report (a JSON object)");
    let mut m = query_json(0);
    m["merged_from"] = 2.into();
    let e = read_report("m.json", m.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "m.json: already a merged report (`tsload merge`), not one run's report"
    );
    let mut w = query_json(0);
    w["kinds"] = serde_json::Value::Array(vec![serde_json::json!({}); MAX_KINDS + 1]);
    let e = read_report("k.json", w.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "k.json: kinds is 1001 entries; allowed: at most 1000 request kinds"
    );
}

#[test]
fn read_report_refuses_intervals_no_run_has() {
    let iv = |elapsed: serde_json::Value, rows: u64| {
        serde_json::json!({"stream": "query", "elapsed_s": elapsed, "interval_s": 1.0,
                           "statements": 1, "rows": rows, "p99_ms": 2.5})
    };
    let read = |intervals: serde_json::Value| {
        let mut q = query_json(0);
        q["intervals"] = intervals;
        read_report("q.json", q.to_string().as_bytes()).map(|_| ())
    };
    read(serde_json::json!([iv(1.0.into(), 1), iv(2.0.into(), 1)])).unwrap();
    let half = 1u64 << 63;
    for (intervals, says) in [
        (
            serde_json::json!([iv(1.0.into(), 1), iv(1e308.into(), 1)]),
            "q.json: intervals[1].elapsed_s is 1e308; allowed: a finite number of seconds \
             from 0 to 1000000000",
        ),
        (
            serde_json::json!([iv(2.0.into(), 1), iv(1.0.into(), 1)]),
            "q.json: intervals[1].elapsed_s is 1.0; allowed: at least 2.0, the end of \
             intervals[0] of the same stream",
        ),
        (
            serde_json::json!([iv(1.0.into(), half), iv(2.0.into(), half)]),
            "q.json: intervals[1].rows is 9223372036854775808; allowed: a count that keeps \
             the sum of the stream's `rows` within 18446744073709551615 (the intervals \
             before it sum to 9223372036854775808",
        ),
        (
            serde_json::json!([iv((-1.0).into(), 1)]),
            "q.json: intervals[0].elapsed_s is -1.0; allowed",
        ),
        (
            serde_json::json!([{"stream": "x", "elapsed_s": 1.0, "interval_s": 1.0}]),
            "q.json: intervals[0].stream is \"x\"; allowed: \"write\" or \"query\"",
        ),
        (
            serde_json::json!([{"stream": "query", "elapsed_s": 1.0, "interval_s": 1.0,
                                "max_ms": 1e300}]),
            "q.json: intervals[0].max_ms is 1e300; allowed: a finite number of milliseconds",
        ),
        (
            serde_json::json!([{"stream": "query", "elapsed_s": 1.0, "interval_s": 1.0,
                                "rows": -3}]),
            "q.json: intervals[0].rows is -3; allowed: a whole number",
        ),
        (
            serde_json::json!("x"),
            "q.json: intervals is a string; allowed",
        ),
    ] {
        let e = read(intervals).unwrap_err().to_string();
        assert!(e.starts_with(says), "{e}\nshould start with\n{says}");
    }
    // The summary's own figures are checked as it is read, too.
    let mut q = query_json(0);
    q["elapsed_s"] = 1e300.into();
    let e = read_report("q.json", q.to_string().as_bytes()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("q.json: elapsed_s is 1e300; allowed"),
        "{e}"
    );
}

/// A shard that failed went into the sums without a word: the merged text said each
/// shard's rows and rate, not its exit.
#[test]
fn a_shard_that_failed_is_named_in_the_merged_text() {
    let a = report("0/2", 0, 1000, &[1000]);
    let mut b = report("1/2", 0, 1000, &[1000]);
    b.exit = Some(1);
    let m = merge(&[a, b], false).unwrap();
    assert_eq!(m.shards[1].exit, Some(1));
    let text = m.render_text();
    assert!(
        text.contains("shard 1/2 (shard-1/2.json) exited 1: its figures are in the sums"),
        "{text}"
    );
    let json = serde_json::to_value(&m.shards[1]).unwrap();
    assert_eq!(json["exit"], 1);
}

#[test]
fn a_stop_reason_tsload_does_not_write_is_refused_by_name() {
    let mut q = query_json(0);
    q["stop_reason"] = "tired".into();
    let e = read_report("q.json", q.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("q.json"), "{e}");
    assert!(
        e.contains("stop reason \"tired\"") && e.contains("\"row limit\""),
        "{e}"
    );
    // Merged shards' reasons read back as the reasons they were.
    q["stop_reason"] = "duration, row limit".into();
    let read = read_query("q.json", &q);
    assert!(
        read.summary
            .stop_reason
            .contains(tsload_core::engine::StopReason::RowLimit)
    );
}
