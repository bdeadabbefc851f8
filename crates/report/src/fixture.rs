//! Reports for tests: a write and a query summary from outcomes of known figures, and a
//! run's report around them, as `tsload run --json` writes them.

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use tsload_core::engine::{RunOutcome, StopReason};
use tsload_core::query_engine::{KindOutcome, QueryOutcome};
use tsload_core::recorder::{Counters, new_histogram};
use tsload_core::rusage::Usage;

use crate::query_report::QuerySummary;
use crate::report::Summary;
use crate::run_report::{ExitStatus, RunReport, Streams};

/// A write run's outcome of `counters`, `latency` its latency and service time: started
/// at 1,700,000,000 s past the epoch, 1 s long, ended by its data, nothing else measured.
pub(crate) fn run_outcome(counters: Counters, latency: Histogram<u64>) -> RunOutcome {
    RunOutcome {
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        elapsed: Duration::from_secs(1),
        counters,
        latency: latency.clone(),
        service: latency,
        stop_reason: StopReason::DataEnd,
        fatal: None,
        intervals: 1,
        offered_rows_per_s: None,
        raw_latencies: Vec::new(),
        storage_bytes: None,
        stored: None,
        server_questions: None,
        devices_written: None,
        series_written: None,
        abandoned_requests: 0,
    }
}

/// A write run's summary: `rows` rows of 10 metrics over 1 s, latencies 1..=rows ms.
pub(crate) fn write_summary(rows: u64) -> Summary {
    let mut latency = new_histogram();
    for ms in 1..=rows {
        latency.record(ms * 1_000_000).unwrap();
    }
    let counters = Counters {
        requests: rows,
        rows,
        metrics: rows * 10,
        ..Counters::default()
    };
    Summary::new(
        &run_outcome(counters, latency),
        &Usage::default(),
        "sqlite",
        "cpu-only",
        serde_json::json!({"name": "t"}),
    )
}

/// A query run's summary: `requests` requests of one kind over 1 s.
pub(crate) fn query_summary(requests: u64) -> QuerySummary {
    let mut latency = new_histogram();
    for ms in 1..=requests {
        latency.record(ms * 1_000_000).unwrap();
    }
    let counters = Counters {
        requests,
        rows: requests * 2,
        metrics: requests,
        ..Counters::default()
    };
    let outcome = QueryOutcome {
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        elapsed: Duration::from_secs(1),
        load_elapsed: Duration::ZERO,
        load_counters: Counters::default(),
        counters: counters.clone(),
        latency: latency.clone(),
        service: latency.clone(),
        kinds: vec![KindOutcome {
            name: "point".into(),
            counters,
            latency: latency.clone(),
            service: latency,
        }],
        stop_reason: StopReason::RequestLimit,
        stop_error: None,
        first_error: None,
        intervals: 1,
        offered_requests_per_s: None,
        abandoned_requests: 0,
    };
    QuerySummary::new(
        &outcome,
        &Usage::default(),
        "sqlite",
        "tsbs",
        serde_json::json!({"name": "t"}),
    )
}

/// A run's report of `streams` that exited `code` for `why`.
pub(crate) fn run_report(streams: Streams, code: i64, why: &str) -> RunReport {
    RunReport {
        streams,
        rtt: None,
        server: None,
        thresholds: Vec::new(),
        host: Some("h".into()),
        commit: Some("c".into()),
        scenario_sha256: Some("abc".into()),
        shard: None,
        exit: Some(ExitStatus {
            code,
            why: why.into(),
        }),
        baseline: None,
        intervals: serde_json::json!([]),
    }
}
