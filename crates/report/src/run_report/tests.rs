//! Tests of the run report: what the binary writes reads back as the same report, for
//! each mode, and a report no run can write is refused by name.

use super::*;
use crate::fixture::{query_summary, run_report, write_summary};
use crate::verdict::Verdict;

/// Through the bytes `--json` writes, back.
fn round_trip(r: &RunReport) -> RunReport {
    let text = serde_json::to_string_pretty(&r.to_json().unwrap()).unwrap();
    RunReport::read("r.json", text.as_bytes()).unwrap()
}

#[test]
fn each_mode_reads_back_as_written_histograms_included() {
    let write = run_report(Streams::Write(Box::new(write_summary(50))), 0, "success");
    let back = round_trip(&write);
    assert_eq!(back, write);
    let w = back.streams.write().unwrap();
    // The histogram came back too: any percentile, not only the printed ones.
    let p42 = w.latency.get("p42").unwrap();
    assert_eq!(Some(p42), write.streams.write().unwrap().latency.get("p42"));
    assert!((p42 - 21.0).abs() < 0.05, "{p42}");
    assert_eq!(w.stop_reason.to_string(), "data end");

    let query = run_report(
        Streams::Query {
            query: Some(Box::new(query_summary(20))),
            preload: Some(Box::new(write_summary(5))),
        },
        0,
        "success",
    );
    let back = round_trip(&query);
    assert_eq!(back, query);
    let q = back.streams.query().unwrap();
    let p50 = q.kinds[0].latency.get("p50").unwrap();
    assert!((p50 - 10.0).abs() < 0.05, "{p50}");
    assert!(
        back.streams.write().is_none(),
        "a preload is no write stream"
    );

    let mixed = run_report(
        Streams::Mixed(Box::new(MixedStreams {
            write: Some(write_summary(30)),
            query: Some(query_summary(10)),
            write_latency_alone: Some(LatencySummary::from_histogram(
                write_summary(7).latency.histogram.as_ref().unwrap(),
            )),
            write_latency_with_queries: None,
            queries_ended_with_writes: Some("data end".into()),
            ..MixedStreams::default()
        })),
        0,
        "success",
    );
    let json = mixed.to_json().unwrap();
    assert_eq!(json["mode"], "mixed");
    assert_eq!(json["write"]["rows"], 30);
    assert!(
        json.get("rows").is_none(),
        "a mixed run's streams are nested"
    );
    let back = round_trip(&mixed);
    assert_eq!(back, mixed);
    let Streams::Mixed(m) = &back.streams else {
        panic!("{back:?}")
    };
    let p99_5 = m
        .write_latency_alone
        .as_ref()
        .unwrap()
        .get("p99.5")
        .unwrap();
    assert!((p99_5 - 7.0).abs() < 0.05, "{p99_5}");
    assert_eq!(back.streams.query().unwrap().requests, 10);

    // A query run whose queries did not run, its preload alone: still a query report.
    let preload_only = run_report(
        Streams::Query {
            query: None,
            preload: Some(Box::new(write_summary(5))),
        },
        1,
        "the queries failed",
    );
    assert_eq!(round_trip(&preload_only), preload_only);

    // A write report with a stray `"preload": null` is still the write run it is.
    let mut stray = write.to_json().unwrap();
    stray["preload"] = serde_json::Value::Null;
    let back = RunReport::from_json("r.json", stray).unwrap();
    assert_eq!(back.streams, write.streams);
}

#[test]
fn a_report_no_run_writes_is_refused_by_name() {
    let good = run_report(Streams::Write(Box::new(write_summary(5))), 0, "success")
        .to_json()
        .unwrap();
    let err = |v: &serde_json::Value| {
        RunReport::read("r.json", v.to_string().as_bytes())
            .unwrap_err()
            .to_string()
    };
    let mut bad = good.clone();
    bad["elapsed_s"] = (-1.0).into();
    assert!(
        err(&bad).starts_with("r.json: elapsed_s is -1"),
        "{}",
        err(&bad)
    );
    let mut bad = good.clone();
    bad["latency"]["hdr"] = "AAAA".into();
    assert!(
        err(&bad).starts_with("r.json: latency.hdr: not an encoded histogram"),
        "{}",
        err(&bad)
    );
    let mut bad = good.clone();
    bad["shard"] = serde_json::json!({"index": 3, "count": 2});
    assert!(
        err(&bad).starts_with("r.json: shard: shard '3/2': the index"),
        "{}",
        err(&bad)
    );
    let mut bad = good.clone();
    bad["intervals"] = 7.into();
    assert!(
        err(&bad).starts_with("r.json: intervals is a number"),
        "{}",
        err(&bad)
    );
    let mut bad = good.clone();
    bad["stop_reason"] = "lunch".into();
    assert!(err(&bad).contains("stop reason \"lunch\""), "{}", err(&bad));
    // A mixed run's stream is named where it sits.
    let mixed = run_report(
        Streams::Mixed(Box::new(MixedStreams {
            query: Some(query_summary(3)),
            ..MixedStreams::default()
        })),
        0,
        "",
    );
    let mut bad = mixed.to_json().unwrap();
    bad["query"]["elapsed_s"] = 1e300.into();
    assert!(
        err(&bad).starts_with("r.json (query): elapsed_s is 1e300"),
        "{}",
        err(&bad)
    );
    let mut bad = mixed.to_json().unwrap();
    bad["write_latency_alone"] = serde_json::json!({"hdr": "AAAA"});
    assert!(
        err(&bad).starts_with("r.json: write_latency_alone.hdr: not an encoded histogram"),
        "{}",
        err(&bad)
    );
    let too_big = vec![b' '; MAX_REPORT_BYTES as usize + 1];
    let e = RunReport::read("big.json", &too_big)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("big.json: larger than"), "{e}");
    assert_eq!(
        err(&serde_json::json!([1])),
        "r.json: not a tsload report (a JSON object)"
    );
}

#[test]
fn a_reports_verdict_names_its_worst_flaw() {
    use tsload_core::stored::Stored;
    // A write run: `stored`, `stored_shortfall` and `stored_error` set as given.
    let write = |stored: Option<Stored>, shortfall: Option<&str>, error: Option<&str>| {
        let mut s = write_summary(10);
        s.stored = stored;
        s.stored_shortfall = shortfall.map(str::to_string);
        s.stored_error = error.map(str::to_string);
        Streams::Write(Box::new(s))
    };
    let rows = |n: u64| {
        Some(Stored {
            rows: Some(n),
            ..Stored::default()
        })
    };
    let samples = |n: u64| {
        Some(Stored {
            samples: Some(n),
            ..Stored::default()
        })
    };
    let of = |streams: Streams, code: i64, why: &str| run_report(streams, code, why).verdict(0);
    let ok = of(write(rows(1000), None, None), 0, "success");
    assert_eq!(ok, Verdict::passed(Some(1000)));
    assert_eq!(of(write(samples(7), None, None), 0, "").stored, Some(7));
    // A threshold missed: the figures are whole.
    let threshold = of(write(None, None, None), 3, "a --fail-if threshold broke");
    assert!(threshold.is_measure() && threshold.exit == 3);
    let short = of(
        write(
            samples(0),
            Some("the server stored 0 new samples of the 1080000 it acknowledged"),
            None,
        ),
        1,
        "the server stored less",
    );
    assert_eq!(short.word(), "shortfall");
    assert_eq!(short.stored, Some(0));
    assert!(
        short
            .to_string()
            .ends_with("of the 1080000 it acknowledged")
    );
    let failed = of(
        write(None, None, None),
        1,
        "the run stopped on a fatal error: x",
    );
    assert_eq!(failed.word(), "failed");
    assert_eq!(
        failed.flaw.unwrap().why,
        "the run stopped on a fatal error: x"
    );
    let stopped = of(
        write(None, Some("short because stopped"), None),
        143,
        "interrupted",
    );
    assert_eq!(stopped.word(), "interrupted");
    let unknown = of(
        write(
            None,
            None,
            Some("the server did not answer within 30s after the run"),
        ),
        0,
        "",
    );
    assert_eq!(unknown.word(), "unverified");
    let cannot = of(
        write(None, None, Some(tsload_core::stored::CANNOT_TELL)),
        0,
        "",
    );
    assert!(cannot.is_measure());
    // A mixed run: its writes' figures are its write stream's.
    let mut w = write_summary(10);
    w.stored = rows(5);
    w.stored_shortfall = Some("stored 5 of 10".into());
    let mixed = of(
        Streams::Mixed(Box::new(MixedStreams {
            write: Some(w),
            query: Some(query_summary(3)),
            ..MixedStreams::default()
        })),
        1,
        "x",
    );
    assert_eq!(mixed.stored, Some(5));
    assert_eq!(mixed.word(), "shortfall");
    // A query run's preload is no measure of the run: only its exit counts.
    let mut preload = write_summary(10);
    preload.stored_shortfall = Some("stored 5 of 10".into());
    let query = of(
        Streams::Query {
            query: Some(Box::new(query_summary(3))),
            preload: Some(Box::new(preload)),
        },
        0,
        "success",
    );
    assert_eq!(query, Verdict::passed(None));
    // The report's exit code rules over the one the caller earned.
    let mut no_exit = run_report(write(None, None, None), 0, "");
    no_exit.exit = None;
    assert_eq!(no_exit.verdict(1).word(), "failed");
    let none = Verdict::no_report(2);
    assert_eq!(none.exit, 2);
    assert_eq!(
        none.to_string(),
        "failed (exit 2): the run left no report (exit 2)"
    );
}
