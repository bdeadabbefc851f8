//! Property tests of the readers of outside input that `tsload merge` uses: the report JSON
//! reader (`merge::read_report`, then `merge`/`merge_queries`), the `.hlog` reader
//! (`hlog::merge_logs`) and the histogram payload decoder (`hlog::decode_checked`). Each is
//! fed arbitrary bytes and structured mutations of real input (fields set to extreme or
//! wrong values, payloads with bytes flipped, headers forged). The property: no panic;
//! `Ok` or a specific error; and what is `Ok` is sound (sums that did not wrap, finite
//! figures that survive a JSON round trip, a merged log that reads back).
//!
//! Budgets are fixed (`cases`) so that each property takes a few seconds at most in the
//! debug build on two cores; proptest prints the shrunk (minimal) failing input.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Value, json};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};
use tsload_core::recorder::new_histogram;
use tsload_report::hlog::{self, HlogWriter, MAX_COUNT};
use tsload_report::merge::{AnyReport, MergeError, ShardReport, merge, merge_queries, read_report};
use tsload_report::report::{LatencySummary, encode_histogram};

fn config(cases: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

fn histogram(values: &[u64]) -> Histogram<u64> {
    let mut h = new_histogram();
    for &v in values {
        h.record(v).unwrap();
    }
    h
}

/// A latency block as `run --json` writes it.
fn latency(values: &[u64]) -> Value {
    let h = histogram(values);
    let mut v = serde_json::to_value(LatencySummary::from_histogram(&h)).unwrap();
    v["hdr"] = json!(encode_histogram(&h).unwrap());
    v
}

/// Shard `index` of 2 of a write run, as its `--json` report.
fn write_report(index: u32) -> Value {
    static REPORTS: LazyLock<[Value; 2]> =
        LazyLock::new(|| [make_write_report(0), make_write_report(1)]);
    REPORTS[index as usize].clone()
}

fn make_write_report(index: u32) -> Value {
    json!({
        "tsload_version": "0.1.0",
        "target": "null",
        "workload": "cpu-only",
        "started_at": "2026-11-26T05:36:51.513Z",
        "elapsed_s": 1.5,
        "stop_reason": "row limit",
        "fatal_error": null,
        "rows": 1000, "metrics": 10000, "bytes": 0, "requests": 3, "retries": 0,
        "failed_requests": 0, "failed_rows": 0, "ambiguous_rows": 0, "recovered_rows": 0,
        "unsent_requests": 0, "unsent_rows": 0,
        "errors": {"timeout": 2},
        "offered_rows_per_s": 1000.0,
        "rows_per_s": 666.6, "metrics_per_s": 6666.6, "mb_per_s": 0.0,
        "latency": latency(&[1000, 20_000, 3_000_000]),
        "service": latency(&[900, 15_000, 2_000_000]),
        "client": {"cpu_user_s": 0.1, "cpu_system_s": 0.1, "cpu_s": 0.2,
                   "cpu_us_per_1000_metrics": 20.0, "peak_rss_bytes": 29_560_832u64},
        "scenario": {"name": "q"},
        "shard": {"index": index, "count": 2},
        "host": "vm",
        "scenario_sha256": "abc",
    })
}

fn kind(name: &str) -> Value {
    json!({
        "name": name, "requests": 5, "failed": 1, "rows": 50, "statements": 5,
        "requests_per_s": 5.0, "statements_per_s": 5.0, "errors": {"rejected": 1},
        "latency": latency(&[1000, 2000]), "service": latency(&[900]),
    })
}

/// Shard `index` of 2 of a query run, as its `--json` report.
fn query_report(index: u32) -> Value {
    static REPORTS: LazyLock<[Value; 2]> =
        LazyLock::new(|| [make_query_report(0), make_query_report(1)]);
    REPORTS[index as usize].clone()
}

fn make_query_report(index: u32) -> Value {
    json!({
        "tsload_version": "0.1.0",
        "target": "sqlite",
        "workload": "tsbs",
        "started_at": "2026-11-26T05:36:51.513Z",
        "elapsed_s": 2.0, "load_s": 0.5,
        "load_requests": 1, "load_rows": 10, "load_statements": 1,
        "stop_reason": "duration", "fatal_error": null,
        "requests": 10, "failed_requests": 2, "statements": 10, "rows": 100,
        "errors": {"rejected": 2},
        "requests_per_s": 5.0, "statements_per_s": 5.0, "rows_per_s": 50.0,
        "latency": latency(&[1000, 2000, 3000]),
        "service": latency(&[800]),
        "kinds": [kind("single-groupby-1-1-1"), kind("lastpoint")],
        "client": {"cpu_user_s": 0.1, "cpu_system_s": 0.1, "cpu_s": 0.2, "peak_rss_bytes": 1000},
        "cpu_us_per_request": 1.0,
        "scenario": {},
        "shard": {"index": index, "count": 2},
        "host": "vm",
        "scenario_sha256": "abc",
    })
}

fn read(name: &str, v: &Value) -> Result<AnyReport, MergeError> {
    read_report(name, serde_json::to_string(v).unwrap().as_bytes())
}

/// A JSON value of any kind, weighted to the extremes a hostile or broken report holds.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(vec![
            0u64,
            1,
            499,
            500,
            u32::MAX as u64,
            i64::MAX as u64,
            i64::MAX as u64 + 1,
            u64::MAX - 1,
            u64::MAX,
        ])
        .prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            -1.0,
            -0.0,
            0.5,
            1e-300,
            5e-324,
            1e9,
            1e9 + 1.0,
            1e12,
            1e15,
            1e19,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
        ])
        .prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "mixed",
            "0/2",
            "2026-11-26T05:36:51.513Z",
            "9999-12-31T23:59:59Z",
            "0000-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "HISTFAAAACB4nJNpmSzMwMDAzAABMJoRQrn123+AsM4HMgEAT0YEdA==",
            "HISTFAAAAA==",
            "not base64!",
        ])
        .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    // Mostly single values: nested ones are wrong types too, but rarer.
    let nested = leaf.clone().prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![4 => leaf, 1 => nested]
}

/// A number at the edges: of u64, of i64, of f64, of a `Duration`, of the ranges allowed.
fn extreme_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            0u64,
            1,
            500,
            1_000_000_000,
            i64::MAX as u64,
            u64::MAX - 499,
            u64::MAX,
        ])
        .prop_map(Value::from),
        prop::sample::select(vec![-1i64, i64::MIN]).prop_map(Value::from),
        prop::sample::select(vec![
            -1.0,
            -1e-9,
            -0.0,
            5e-324,
            0.5,
            1e9,
            1e9 + 1.0,
            1.8446744073709552e19,
            1e19,
            1e12,
            1e12 + 1.0,
            1e300,
            f64::MAX,
            f64::MIN,
        ])
        .prop_map(Value::from),
    ]
}

/// The numbers of a write report.
const NUMBER_PATHS: &[&str] = &[
    "/elapsed_s",
    "/rows",
    "/metrics",
    "/bytes",
    "/requests",
    "/retries",
    "/failed_requests",
    "/ambiguous_rows",
    "/unsent_rows",
    "/errors/timeout",
    "/offered_rows_per_s",
    "/rows_per_s",
    "/metrics_per_s",
    "/latency/count",
    "/latency/p99_ms",
    "/client/cpu_s",
    "/client/cpu_user_s",
    "/client/cpu_system_s",
    "/client/peak_rss_bytes",
    "/shard/index",
    "/shard/count",
];

/// The numbers of a query report.
const QUERY_NUMBER_PATHS: &[&str] = &[
    "/elapsed_s",
    "/load_s",
    "/load_requests",
    "/load_rows",
    "/requests",
    "/failed_requests",
    "/statements",
    "/rows",
    "/errors/rejected",
    "/rows_per_s",
    "/offered_requests_per_s",
    "/unsent_requests",
    "/kinds/0/requests",
    "/kinds/0/failed",
    "/kinds/0/rows",
    "/kinds/0/statements",
    "/kinds/0/errors/rejected",
    "/kinds/1/requests",
    "/client/cpu_s",
    "/client/cpu_user_s",
    "/client/peak_rss_bytes",
];

/// Where a mutation lands: the paths a report has (and a few it does not).
const WRITE_PATHS: &[&str] = &[
    "/elapsed_s",
    "/started_at",
    "/rows",
    "/metrics",
    "/bytes",
    "/requests",
    "/retries",
    "/failed_requests",
    "/failed_rows",
    "/ambiguous_rows",
    "/recovered_rows",
    "/unsent_requests",
    "/unsent_rows",
    "/errors",
    "/errors/timeout",
    "/offered_rows_per_s",
    "/rows_per_s",
    "/latency",
    "/latency/hdr",
    "/latency/count",
    "/service/hdr",
    "/client",
    "/client/cpu_s",
    "/client/cpu_user_s",
    "/client/peak_rss_bytes",
    "/shard",
    "/shard/index",
    "/shard/count",
    "/target",
    "/scenario_sha256",
    "/mode",
    "/merged_from",
    "/kinds",
    "",
];

const QUERY_PATHS: &[&str] = &[
    "/elapsed_s",
    "/load_s",
    "/started_at",
    "/requests",
    "/failed_requests",
    "/statements",
    "/rows",
    "/load_rows",
    "/errors/rejected",
    "/offered_requests_per_s",
    "/latency/hdr",
    "/kinds",
    "/kinds/0",
    "/kinds/0/name",
    "/kinds/0/requests",
    "/kinds/0/failed",
    "/kinds/0/errors/rejected",
    "/kinds/0/latency/hdr",
    "/kinds/1/service/hdr",
    "/kinds/1/name",
    "/client/cpu_s",
    "/client/peak_rss_bytes",
    "/shard/count",
    "",
];

/// Sets `path` (a JSON pointer; its last key is created in an object) to `v`.
fn set(doc: &mut Value, path: &str, v: Value) {
    if path.is_empty() {
        *doc = v;
        return;
    }
    let (parent, key) = path.rsplit_once('/').unwrap();
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(key.to_string(), v);
        }
        Some(Value::Array(a)) => {
            if let Some(slot) = key.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = v;
            }
        }
        _ => {}
    }
}

/// A valid histogram's encoding with bytes changed (after base64 decoding).
fn mutated_hdr() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(1u64..10_000_000_000, 0..20),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        any::<bool>(),
    )
        .prop_map(|(values, flips, truncate)| {
            let text = encode_histogram(&histogram(&values)).unwrap();
            let mut bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap();
            for (at, b) in flips {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
            if truncate {
                bytes.truncate(bytes.len() / 2);
            }
            Value::from(base64::engine::general_purpose::STANDARD.encode(bytes))
        })
}

/// Every number in `v` is finite and the merged report reads back as JSON.
fn check_merged_json<S: serde::Serialize + serde::de::DeserializeOwned>(
    summary: &S,
) -> Result<(), TestCaseError> {
    // A non-finite f64 becomes `null`, which the report type does not read back.
    let text = serde_json::to_string(summary).unwrap();
    let back: Result<S, _> = serde_json::from_str(&text);
    prop_assert!(back.is_ok(), "merged report does not read back: {text}");
    Ok(())
}

/// Reads both reports; when they read and merge, the merge is sound.
fn check_pair(a: &Value, b: &Value) -> Result<(), TestCaseError> {
    let (a, b) = match (read("a.json", a), read("b.json", b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            prop_assert!(!e.to_string().is_empty());
            return Ok(());
        }
    };
    match (a, b) {
        (AnyReport::Write(a), AnyReport::Write(b)) => {
            let (ra, rb) = (a.summary.rows, b.summary.rows);
            match merge(&[*a, *b], true) {
                Ok(m) => {
                    prop_assert_eq!(Some(m.summary.rows), ra.checked_add(rb));
                    check_merged_json(&m.summary)?;
                    let _ = m.render_text();
                }
                Err(e) => prop_assert!(e.to_string().contains(".json"), "{e}"),
            }
        }
        (AnyReport::Query(a), AnyReport::Query(b)) => {
            let (ra, rb) = (a.summary.requests, b.summary.requests);
            match merge_queries(&[*a, *b], true) {
                Ok(m) => {
                    prop_assert_eq!(Some(m.summary.requests), ra.checked_add(rb));
                    check_merged_json(&m.summary)?;
                    let _ = m.render_text();
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        _ => {}
    }
    Ok(())
}

#[test]
fn the_unmutated_reports_merge() {
    for (a, b) in [
        (write_report(0), write_report(1)),
        (query_report(0), query_report(1)),
    ] {
        check_pair(&a, &b).unwrap();
        assert!(read("a.json", &a).is_ok());
    }
    let (Ok(AnyReport::Write(a)), Ok(AnyReport::Write(b))) = (
        read("a.json", &write_report(0)),
        read("b.json", &write_report(1)),
    ) else {
        panic!("write reports")
    };
    let m = merge(&[*a, *b], false).unwrap();
    assert_eq!(m.summary.rows, 2000);
    assert_eq!(m.summary.latency.count, 6);
}

proptest! {
    #![proptest_config(config(400))]

    /// Any bytes: a report or an error, never a panic.
    #[test]
    fn report_reader_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Err(e) = read_report("x.json", &bytes) {
            prop_assert!(e.to_string().starts_with("x.json: "), "{e}");
        }
    }

    /// Text made of JSON's own characters, so that much of it parses.
    #[test]
    fn report_reader_takes_json_like_text(text in "[{}\\[\\]\":,0-9a-z_.eE+-]{0,80}") {
        let _ = read_report("x.json", text.as_bytes());
    }
}

proptest! {
    #![proptest_config(config(500))]

    /// A real write report with one to four fields set to anything: a report or an
    /// error; merged with a good shard, sums that do not wrap and figures that are finite.
    #[test]
    fn write_reports_with_wrong_fields_never_panic(
        edits in prop::collection::vec(
            (prop::sample::select(WRITE_PATHS), json_value(), any::<bool>()),
            1..5,
        ),
    ) {
        let (mut a, b) = (write_report(0), write_report(1));
        for (path, v, other) in edits {
            let v = if path.ends_with("hdr") && other { Value::Null } else { v };
            set(&mut a, path, v);
        }
        check_pair(&a, &b)?;
    }

    /// Every number a report holds set to an extreme: seconds past any `Duration`,
    /// negative or tiny ones, counts at u64's maximum.
    #[test]
    fn write_reports_with_extreme_numbers_never_panic(
        edits in prop::collection::vec(
            (prop::sample::select(NUMBER_PATHS), extreme_number()),
            1..4,
        ),
        both in any::<bool>(),
    ) {
        let (mut a, mut b) = (write_report(0), write_report(1));
        for (path, v) in edits {
            set(&mut a, path, v.clone());
            if both {
                set(&mut b, path, v);
            }
        }
        check_pair(&a, &b)?;
    }

    /// The numbers of a query report (totals, request kinds, the load) at the extremes.
    #[test]
    fn query_reports_with_extreme_numbers_never_panic(
        edits in prop::collection::vec(
            (prop::sample::select(QUERY_NUMBER_PATHS), extreme_number()),
            1..4,
        ),
        both in any::<bool>(),
    ) {
        let (mut a, mut b) = (query_report(0), query_report(1));
        for (path, v) in edits {
            set(&mut a, path, v.clone());
            if both {
                set(&mut b, path, v);
            }
        }
        check_pair(&a, &b)?;
    }

    /// The same for query reports (request kinds, load figures).
    #[test]
    fn query_reports_with_wrong_fields_never_panic(
        edits in prop::collection::vec(
            (prop::sample::select(QUERY_PATHS), json_value()),
            1..5,
        ),
    ) {
        let (mut a, b) = (query_report(0), query_report(1));
        for (path, v) in edits {
            set(&mut a, path, v);
        }
        check_pair(&a, &b)?;
    }

    /// Histograms with bytes flipped or cut: decoded and merged, or an error naming the
    /// field.
    #[test]
    fn reports_with_corrupt_histograms_never_panic(
        hdr in mutated_hdr(),
        path in prop::sample::select(vec!["/latency/hdr", "/service/hdr"]),
    ) {
        let mut a = write_report(0);
        set(&mut a, path, hdr);
        if let Err(e) = read("a.json", &a) {
            let field = path.trim_start_matches('/').replace('/', ".");
            let e = e.to_string();
            prop_assert!(e.starts_with("a.json: ") && e.contains(&field), "{e}");
        }
        check_pair(&a, &write_report(1))?;
    }
}

/// Counts near u64's maximum in both shards (every combination): the sum is exact or
/// refused, naming the second report and the field.
#[test]
fn counts_near_the_maximum_sum_exactly_or_are_refused() {
    for field in ["rows", "metrics", "requests", "unsent_rows"] {
        for x in [0u64, 1, 500, u64::MAX / 2, u64::MAX - 499, u64::MAX] {
            for y in [0u64, 1, 500, u64::MAX / 2 + 1, u64::MAX] {
                let (mut a, mut b) = (write_report(0), write_report(1));
                a[field] = json!(x);
                b[field] = json!(y);
                let (Ok(AnyReport::Write(a)), Ok(AnyReport::Write(b))) =
                    (read("a.json", &a), read("b.json", &b))
                else {
                    panic!("the reports read");
                };
                match (merge(&[*a, *b], false), x.checked_add(y)) {
                    (Ok(m), Some(sum)) => {
                        let got = serde_json::to_value(&m.summary).unwrap()[field].as_u64();
                        assert_eq!(got, Some(sum), "{field}: {x} + {y}");
                    }
                    (Err(MergeError::Overflow { file, field: f, .. }), None) => {
                        assert_eq!((file.as_str(), f.as_str()), ("b.json", field));
                    }
                    (other, sum) => panic!("{field}: {x} + {y}: {other:?} for the sum {sum:?}"),
                }
            }
        }
    }
}

/// A V2 header and counts, forged field by field: each field mostly one a decoder
/// accepts (so that the counts are reached), sometimes anything.
fn forged_v2() -> impl Strategy<Value = Vec<u8>> {
    let low = prop_oneof![
        9 => prop::sample::select(vec![1u64, 2, 3, 1000, 2048]),
        1 => prop::sample::select(vec![0u64, 1 << 20, 1 << 62, u64::MAX / 2, u64::MAX]),
        1 => any::<u64>(),
    ];
    let high = prop_oneof![
        9 => prop::sample::select(vec![2048u64, 1 << 20, 3_600_000_000_000, u64::MAX]),
        1 => prop::sample::select(vec![0u64, 1, 2, 3]),
        1 => any::<u64>(),
    ];
    (
        prop_oneof![9 => Just(0x1c84_9313u32), 1 => any::<u32>()],
        prop_oneof![9 => Just(None), 1 => any::<u32>().prop_map(Some)],
        prop_oneof![9 => Just(0u32), 1 => any::<u32>()],
        prop_oneof![9 => 0u32..=3, 1 => 4u32..7, 1 => any::<u32>()],
        low,
        high,
        prop_oneof![9 => Just(1.0f64), 1 => any::<f64>()],
        prop::collection::vec(
            prop_oneof![
                // A run of 2^63 zeros (zig-zag of i64::MIN), of 2^63 - 1, a count of 2^62.
                Just(vec![0xffu8; 9]),
                Just(vec![0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
                Just(vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]),
                Just(vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
                prop::collection::vec(any::<u8>(), 1..10),
                (0u8..0x80).prop_map(|b| vec![b]),
                (0u8..0x80).prop_map(|b| vec![b | 1]),
            ],
            0..12,
        ),
    )
        .prop_map(|(cookie, len, offset, digits, low, high, ratio, counts)| {
            let counts: Vec<u8> = counts.concat();
            let mut v = Vec::new();
            v.extend(cookie.to_be_bytes());
            v.extend(len.unwrap_or(counts.len() as u32).to_be_bytes());
            v.extend(offset.to_be_bytes());
            v.extend(digits.to_be_bytes());
            v.extend(low.to_be_bytes());
            v.extend(high.to_be_bytes());
            v.extend(ratio.to_bits().to_be_bytes());
            v.extend(counts);
            v
        })
}

/// `bytes` as V2 + DEFLATE (`declared` as the compressed length when given).
fn deflated(bytes: &[u8], declared: Option<u32>) -> Vec<u8> {
    use std::io::Write as _;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    let z = z.finish().unwrap();
    let mut v = Vec::new();
    v.extend(0x1c84_9314u32.to_be_bytes());
    v.extend(declared.unwrap_or(z.len() as u32).to_be_bytes());
    v.extend(z);
    v
}

/// What decoding anything must give: an error, or a histogram within the count bound
/// that encodes and decodes back to itself and merges through a report.
fn check_decoded(text: &str) -> Result<(), TestCaseError> {
    let Ok(h) = hlog::decode_checked(text) else {
        return Ok(());
    };
    prop_assert!(h.len() <= MAX_COUNT);
    let again = hlog::decode_checked(&encode_histogram(&h).unwrap()).unwrap();
    prop_assert_eq!(again.len(), h.len());
    let summary = LatencySummary::from_histogram(&h);
    for f in [
        summary.min_ms,
        summary.mean_ms,
        summary.p99_99_ms,
        summary.max_ms,
    ] {
        prop_assert!(f.is_finite());
    }
    // Merged with a good shard's, through the report.
    let Ok(AnyReport::Write(good)) = read("b.json", &write_report(1)) else {
        panic!("the good report reads");
    };
    let mut forged: ShardReport = (*good).clone();
    forged.source = "a.json".into();
    forged.shard = Some(tsload_core::shard::Shard::new(0, 2).unwrap());
    forged.summary.latency = summary;
    match merge(&[forged, *good], false) {
        Ok(m) => prop_assert_eq!(m.summary.latency.count, h.len() + 3),
        Err(e) => prop_assert!(matches!(e, MergeError::Overflow { .. }), "{e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(600))]

    /// Any text: base64 or not, any bytes behind it.
    #[test]
    fn histogram_decoder_takes_any_text(text in "\\PC{0,40}") {
        check_decoded(&text)?;
    }

    #[test]
    fn histogram_decoder_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..96)) {
        check_decoded(&base64::engine::general_purpose::STANDARD.encode(&bytes))?;
        check_decoded(&base64::engine::general_purpose::STANDARD.encode(deflated(&bytes, None)))?;
    }

    /// Forged headers (any cookie, length, range, digits, ratio) and counts (runs of
    /// 2^63 zeros, counts past the range or past i64), plain and deflated.
    #[test]
    fn histogram_decoder_takes_forged_headers(
        v2 in forged_v2(),
        declared in prop_oneof![Just(None), any::<u32>().prop_map(Some)],
    ) {
        check_decoded(&base64::engine::general_purpose::STANDARD.encode(&v2))?;
        check_decoded(&base64::engine::general_purpose::STANDARD.encode(deflated(&v2, declared)))?;
    }
}

/// A shard's interval log as `run --hlog` writes it.
fn shard_log(start: SystemTime, intervals: &[&[u64]]) -> String {
    let mut w = HlogWriter::new(Vec::new(), start, "shard").unwrap();
    for (i, vs) in intervals.iter().enumerate() {
        let h = histogram(vs);
        w.write_interval(
            Duration::from_secs(i as u64),
            Duration::from_secs(1),
            &h,
            &h,
        )
        .unwrap();
    }
    String::from_utf8(w.into_inner()).unwrap()
}

fn t0() -> SystemTime {
    std::time::UNIX_EPOCH + Duration::from_secs(1_795_671_411)
}

/// Merges `logs`; when it succeeds, the merged log reads back and decodes.
fn check_logs(logs: &[(&str, &[u8])]) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let logs = logs.iter().map(|(n, b)| (n.to_string(), *b));
    match hlog::merge_logs(logs, &mut out, "merged") {
        Ok(n) => {
            let mut intervals = 0;
            for e in IntervalLogIterator::new(&out) {
                let e = e.map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
                if let LogEntry::Interval(h) = e {
                    intervals += 1;
                    prop_assert!(hlog::decode_checked(h.encoded_histogram()).is_ok());
                }
            }
            prop_assert_eq!(intervals, 2 * n);
        }
        Err(e) => prop_assert!(!e.to_string().is_empty()),
    }
    Ok(())
}

/// A number as an interval log might hold it: plain, huge (past u64), fractional.
fn log_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (any::<u64>(), "[0-9]{1,12}").prop_map(|(s, f)| format!("{s}.{f}")),
        prop::sample::select(vec![
            "18446744073709551615.000",
            "18446744073709551616.000",
            "9223372036854775807.999999999",
            "253402300799.999",
            "253402300800.000",
            "0.000",
            "1.5",
            "-1.000",
            "1e300",
            ".5",
            "5.",
            "",
        ])
        .prop_map(str::to_string),
        "[0-9]{1,25}\\.[0-9]{1,3}",
    ]
}

/// One change to a line of a real log.
#[derive(Debug, Clone)]
enum LineEdit {
    /// Replace the `field`-th comma-separated field (or the time of a header line).
    Field(usize, String),
    Drop,
    Duplicate,
    Truncate(usize),
    Insert(Vec<u8>),
}

fn line_edit() -> impl Strategy<Value = LineEdit> {
    prop_oneof![
        4 => (0usize..5, log_number()).prop_map(|(i, n)| LineEdit::Field(i, n)),
        1 => (0usize..5, "[A-Za-z0-9+/=]{0,30}").prop_map(|(i, n)| LineEdit::Field(i, n)),
        1 => Just(LineEdit::Drop),
        1 => Just(LineEdit::Duplicate),
        1 => (0usize..200).prop_map(LineEdit::Truncate),
        1 => prop::collection::vec(any::<u8>(), 0..20).prop_map(LineEdit::Insert),
    ]
}

fn edit_log(log: &str, edits: &[(prop::sample::Index, LineEdit)]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = log.lines().map(|l| l.as_bytes().to_vec()).collect();
    for (at, edit) in edits {
        if lines.is_empty() {
            break;
        }
        let i = at.index(lines.len());
        match edit {
            LineEdit::Field(f, n) => {
                let text = String::from_utf8_lossy(&lines[i]).into_owned();
                lines[i] = if let Some(rest) = text.strip_prefix("#[") {
                    // `#[BaseTime: 123.456 (seconds since epoch)]`
                    let (name, _) = rest.split_once(": ").unwrap_or((rest, ""));
                    format!("#[{name}: {n} (seconds since epoch)]").into_bytes()
                } else {
                    let mut fields: Vec<String> = text.split(',').map(str::to_string).collect();
                    let f = f % fields.len();
                    fields[f] = n.clone();
                    fields.join(",").into_bytes()
                };
            }
            LineEdit::Drop => {
                lines.remove(i);
            }
            LineEdit::Duplicate => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            LineEdit::Truncate(n) => {
                let n = (*n).min(lines[i].len());
                lines[i].truncate(n);
            }
            LineEdit::Insert(b) => lines.insert(i, b.clone()),
        }
    }
    lines.join(&b'\n')
}

#[test]
fn the_unedited_logs_merge() {
    let a = shard_log(t0(), &[&[1000, 2000], &[3000]]);
    let b = shard_log(
        t0() + Duration::from_millis(1010),
        &[&[5000], &[6000, 7000]],
    );
    check_logs(&[("a", a.as_bytes()), ("b", b.as_bytes())]).unwrap();
}

proptest! {
    #![proptest_config(config(400))]

    /// Any bytes as a log, alone or beside a good one.
    #[test]
    fn log_reader_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_logs(&[("x", &bytes)])?;
        let good = shard_log(t0(), &[&[1000]]);
        check_logs(&[("good", good.as_bytes()), ("x", &bytes)])?;
    }

    /// Real logs with lines edited: times past any calendar, fields that are not
    /// numbers, payloads cut or replaced, lines dropped, doubled, cut or inserted.
    #[test]
    fn logs_with_edited_lines_never_panic(
        edits_a in prop::collection::vec((any::<prop::sample::Index>(), line_edit()), 1..5),
        edits_b in prop::collection::vec((any::<prop::sample::Index>(), line_edit()), 0..3),
    ) {
        let a = shard_log(t0(), &[&[1000, 2000], &[3000], &[4000]]);
        let b = shard_log(t0() + Duration::from_millis(1010), &[&[5000], &[6000, 7000]]);
        let (a, b) = (edit_log(&a, &edits_a), edit_log(&b, &edits_b));
        check_logs(&[("a", &a), ("b", &b)])?;
    }
}
