//! Merging the reports of the shards of one run (write or query) into one report: counts
//! summed, latency histograms merged exactly (never percentiles averaged), rates over the
//! union of the shards' windows, client CPU and memory per shard and summed.
//!
//! Reports come from outside (files), so [`read_report`] reads at most
//! [`MAX_REPORT_BYTES`] and decodes histograms with [`crate::hlog::decode_checked`], and
//! the merge checks every figure it sums or turns into a time: counts are summed with
//! `checked_add` (an overflow names the file and the field), seconds must be finite and
//! within range. Bad input is a [`MergeError`], never a panic or a wrapped sum.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use crate::StreamKind;
use crate::hlog::HistogramError;
use crate::query_report::{KindSummary, QueryClientSummary, QuerySummary};
use crate::report::{ClientSummary, LatencySummary, Summary, group};
use crate::totals::{Count, Totals, TotalsOverflow};
use tsload_core::recorder::new_histogram;
use tsload_core::shard::Shard;
use tsload_core::stored::Stored;

/// The largest report [`read_report`] reads (64 MiB); tsload's reports are a few KiB to a
/// few MiB (the scenario and the histograms).
pub const MAX_REPORT_BYTES: u64 = 64 << 20;
/// The longest run a report may state, in seconds (about 31.7 years).
pub const MAX_ELAPSED_S: f64 = 1e9;
/// The most client CPU seconds a report may state (about 31,700 CPU-years).
pub const MAX_CPU_S: f64 = 1e12;
/// The most request kinds a query report may have (tsload's workloads have at most 15).
pub const MAX_KINDS: usize = 1000;
/// The most entries a report's `intervals` may hold (11.6 days of 1 s intervals; a report
/// of [`MAX_REPORT_BYTES`] holds about 200,000).
pub const MAX_INTERVALS: usize = 1_000_000;
/// The longest latency an interval may state, in milliseconds: the longest run.
pub const MAX_LATENCY_MS: f64 = MAX_ELAPSED_S * 1000.0;

/// One shard's report, as read from its JSON: a write [`Summary`] or a [`QuerySummary`].
#[derive(Debug, Clone)]
pub struct ShardReport<S = Summary> {
    /// Where it came from (a file name), for messages.
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    pub scenario_sha256: Option<String>,
    /// The shard's exit code (`exit.code`; `None` in a report of an older tsload).
    pub exit: Option<i64>,
    pub summary: S,
}

/// What merging needs of either report.
pub trait Report {
    fn target(&self) -> &str;
    fn workload(&self) -> &str;
    fn started_at(&self) -> &str;
    fn elapsed_s(&self) -> f64;
    fn stop_reason(&self) -> &str;
    fn fatal_error(&self) -> Option<&str>;
    fn errors(&self) -> &BTreeMap<String, u64>;
    /// Refuses figures no run can have: seconds that are not finite or out of range,
    /// negative rates.
    fn validate(&self, file: &str) -> Result<(), MergeError>;
}

macro_rules! impl_report {
    ($t:ty, $validate:ident) => {
        impl Report for $t {
            fn target(&self) -> &str {
                &self.target
            }
            fn workload(&self) -> &str {
                &self.workload
            }
            fn started_at(&self) -> &str {
                &self.started_at
            }
            fn elapsed_s(&self) -> f64 {
                self.elapsed_s
            }
            fn stop_reason(&self) -> &str {
                &self.stop_reason
            }
            fn fatal_error(&self) -> Option<&str> {
                self.fatal_error.as_deref()
            }
            fn errors(&self) -> &BTreeMap<String, u64> {
                &self.errors
            }
            fn validate(&self, file: &str) -> Result<(), MergeError> {
                $validate(self, file)
            }
        }
    };
}
impl_report!(Summary, validate_write);
impl_report!(QuerySummary, validate_query);

fn validate_write(s: &Summary, file: &str) -> Result<(), MergeError> {
    check_seconds(file, "elapsed_s", s.elapsed_s)?;
    check_rate(file, "rows_per_s", s.rows_per_s)?;
    if let Some(r) = s.offered_rows_per_s {
        check_rate(file, "offered_rows_per_s", r)?;
    }
    check_cpu(file, "client.cpu_user_s", s.client.cpu_user_s)?;
    check_cpu(file, "client.cpu_system_s", s.client.cpu_system_s)?;
    check_cpu(file, "client.cpu_s", s.client.cpu_s)
}

fn validate_query(s: &QuerySummary, file: &str) -> Result<(), MergeError> {
    check_seconds(file, "elapsed_s", s.elapsed_s)?;
    check_seconds(file, "load_s", s.load_s)?;
    check_rate(file, "rows_per_s", s.rows_per_s)?;
    if let Some(r) = s.offered_requests_per_s {
        check_rate(file, "offered_requests_per_s", r)?;
    }
    check_cpu(file, "client.cpu_user_s", s.client.cpu_user_s)?;
    check_cpu(file, "client.cpu_system_s", s.client.cpu_system_s)?;
    check_cpu(file, "client.cpu_s", s.client.cpu_s)?;
    if s.kinds.len() > MAX_KINDS {
        return Err(MergeError::OutOfRange {
            file: file.to_string(),
            field: "kinds".into(),
            value: format!("{} entries", s.kinds.len()),
            allowed: format!("at most {MAX_KINDS} request kinds"),
        });
    }
    Ok(())
}

/// Seconds of a run (converted to a `Duration`): finite, 0 to [`MAX_ELAPSED_S`].
fn check_seconds(file: &str, field: &str, v: f64) -> Result<(), MergeError> {
    check_range(
        file,
        field,
        v,
        MAX_ELAPSED_S,
        "a finite number of seconds from 0 to 1000000000 (about 31.7 years)",
    )
}

/// Client CPU seconds (summed): finite, 0 to [`MAX_CPU_S`].
fn check_cpu(file: &str, field: &str, v: f64) -> Result<(), MergeError> {
    check_range(
        file,
        field,
        v,
        MAX_CPU_S,
        "a finite number of CPU seconds from 0 to 1000000000000",
    )
}

/// A rate (copied or summed): finite, not negative.
fn check_rate(file: &str, field: &str, v: f64) -> Result<(), MergeError> {
    check_range(file, field, v, f64::MAX, "a finite number, not negative")
}

fn check_range(file: &str, field: &str, v: f64, max: f64, allowed: &str) -> Result<(), MergeError> {
    if v.is_finite() && (0.0..=max).contains(&v) {
        return Ok(());
    }
    Err(MergeError::OutOfRange {
        file: file.to_string(),
        field: field.to_string(),
        value: format!("{v:?}"),
        allowed: allowed.to_string(),
    })
}

/// The counts of one report interval ([`check_intervals`]).
const INTERVAL_COUNTS: [&str; 6] = [
    "requests",
    "rows",
    "metrics",
    "statements",
    "errors",
    "retries",
];

/// The latency figures of one report interval, milliseconds ([`check_intervals`]).
const INTERVAL_LATENCIES: [&str; 8] = [
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "service_p50_ms",
    "service_p99_ms",
    "service_p999_ms",
    "service_max_ms",
];

/// Checks a report's `intervals` (`None` or `null`: it has none), as `tsload run --json`
/// writes them: at most [`MAX_INTERVALS`] objects, each with a `stream` (`write` or
/// `query`), `elapsed_s` and `interval_s` (finite, 0 to [`MAX_ELAPSED_S`]); each stream's
/// `elapsed_s` never going back; counts (`requests`, `rows`, `metrics`, `statements`,
/// `errors`, `retries`) whole numbers whose sum over a stream's intervals fits in a `u64`
/// (the run's total does); latencies (`p50_ms` ... `service_max_ms`) finite, 0 to
/// [`MAX_LATENCY_MS`]. A count or a latency may be missing or `null`. The error is an
/// [`MergeError::OutOfRange`] naming `file`, the field's path (`intervals[3].elapsed_s`),
/// its value and what is allowed. Every reader of a report's intervals calls it once, as
/// the report comes in: [`read_report`], and the HTML report's.
pub fn check_intervals(
    file: &str,
    intervals: Option<&serde_json::Value>,
) -> Result<(), MergeError> {
    use serde_json::Value;
    let bad = |field: String, value: String, allowed: String| MergeError::OutOfRange {
        file: file.to_string(),
        field,
        value,
        allowed,
    };
    let list = match intervals {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(bad(
                "intervals".into(),
                json_kind(other),
                "an array of the report's intervals".into(),
            ));
        }
    };
    if list.len() > MAX_INTERVALS {
        return Err(bad(
            "intervals".into(),
            format!("{} entries", list.len()),
            format!("at most {MAX_INTERVALS} intervals"),
        ));
    }
    // Per stream: the last interval's index and end, and each count's sum so far.
    let mut last: [Option<(usize, f64)>; 2] = [None, None];
    let mut sums = [[0u64; INTERVAL_COUNTS.len()]; 2];
    for (i, iv) in list.iter().enumerate() {
        let path = |key: &str| format!("intervals[{i}].{key}");
        if !iv.is_object() {
            return Err(bad(
                format!("intervals[{i}]"),
                json_kind(iv),
                "an object (stream, elapsed_s, interval_s, counts, latencies)".into(),
            ));
        }
        let kind = iv
            .get("stream")
            .and_then(Value::as_str)
            .and_then(StreamKind::of_word);
        let stream = match (kind, iv.get("stream")) {
            (Some(StreamKind::Write), _) => 0,
            (Some(StreamKind::Query), _) => 1,
            (None, other) => {
                return Err(bad(
                    path("stream"),
                    json_shown(other),
                    "\"write\" or \"query\"".into(),
                ));
            }
        };
        let mut seconds = [0.0; 2];
        for (slot, key) in seconds.iter_mut().zip(["elapsed_s", "interval_s"]) {
            let v = iv.get(key);
            match v.and_then(Value::as_f64) {
                Some(x) if x.is_finite() && (0.0..=MAX_ELAPSED_S).contains(&x) => *slot = x,
                _ => {
                    return Err(bad(
                        path(key),
                        json_shown(v),
                        "a finite number of seconds from 0 to 1000000000 (about 31.7 years)".into(),
                    ));
                }
            }
        }
        if let Some((before, end)) = last[stream]
            && seconds[0] < end
        {
            return Err(bad(
                path("elapsed_s"),
                format!("{:?}", seconds[0]),
                format!(
                    "at least {end:?}, the end of intervals[{before}] of the same stream: \
                     intervals are in time order"
                ),
            ));
        }
        last[stream] = Some((i, seconds[0]));
        check_interval_figures(file, i, iv, &mut sums[stream])?;
    }
    Ok(())
}

/// Interval `i`'s counts, added to its stream's sums (no sum may pass a u64), and its
/// latencies, each a finite number of milliseconds in range.
fn check_interval_figures(
    file: &str,
    i: usize,
    iv: &serde_json::Value,
    sums: &mut [u64; INTERVAL_COUNTS.len()],
) -> Result<(), MergeError> {
    use serde_json::Value;
    let bad = |field: String, value: String, allowed: String| MergeError::OutOfRange {
        file: file.to_string(),
        field,
        value,
        allowed,
    };
    let path = |key: &str| format!("intervals[{i}].{key}");
    for (sum, key) in sums.iter_mut().zip(INTERVAL_COUNTS) {
        let n = match iv.get(key) {
            None | Some(Value::Null) => continue,
            Some(v) => v.as_u64().ok_or_else(|| {
                bad(
                    path(key),
                    json_shown(Some(v)),
                    format!("a whole number from 0 to {}", u64::MAX),
                )
            })?,
        };
        *sum = sum.checked_add(n).ok_or_else(|| {
            bad(
                path(key),
                n.to_string(),
                format!(
                    "a count that keeps the sum of the stream's `{key}` within {} (the \
                     intervals before it sum to {sum}; a run's total is one u64)",
                    u64::MAX
                ),
            )
        })?;
    }
    for key in INTERVAL_LATENCIES {
        match iv.get(key) {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&x) => {}
                _ => {
                    return Err(bad(
                        path(key),
                        json_shown(Some(v)),
                        format!(
                            "a finite number of milliseconds from 0 to {MAX_LATENCY_MS} \
                             (the longest run)"
                        ),
                    ));
                }
            },
        }
    }
    Ok(())
}

/// A JSON value as a message shows it: numbers as Rust writes them (`1e308`, `-3`),
/// strings quoted, `missing` for none.
fn json_shown(v: Option<&serde_json::Value>) -> String {
    match v {
        None => "missing".into(),
        Some(serde_json::Value::Number(n)) if n.is_f64() => n
            .as_f64()
            .map_or_else(|| n.to_string(), |x| format!("{x:?}")),
        Some(v) => v.to_string(),
    }
}

/// What a JSON value is, for a message: `a string`, `an object`, ...
fn json_kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
    .to_string()
}

/// One shard's line in the merged report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShardLine {
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    /// The shard's exit code (0 passed); a shard that failed is in the sums all the same,
    /// and the merged text says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i64>,
    pub started_at: String,
    pub elapsed_s: f64,
    pub stop_reason: String,
    pub fatal_error: Option<String>,
    /// Write reports: rows written; query reports: result rows read.
    pub rows: u64,
    pub rows_per_s: f64,
    pub requests: u64,
    pub ambiguous_rows: u64,
    pub ledger_run_id: Option<i64>,
    /// What the server says it stored of the shard's own devices (rows, else samples);
    /// `None`: not asked, not known, or a query report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<u64>,
    pub client: ClientSummary,
}

/// The merged report.
#[derive(Debug, Clone)]
pub struct Merged<S = Summary> {
    /// The whole run: sums, merged histograms, rates over the union window, client
    /// figures summed over the shards.
    pub summary: S,
    pub shards: Vec<ShardLine>,
    pub scenario_sha256: Option<String>,
}

/// Reports that cannot be merged into one honest report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("no reports to merge")]
    Empty,
    #[error(
        "{file}: {what} has no histogram ('hdr'), so its percentiles cannot be merged; rerun with a tsload that writes them"
    )]
    NoHistogram { file: String, what: String },
    #[error(
        "{file}: {field} is '{value}', but {first} has '{expected}': these are not shards of one run"
    )]
    Mismatch {
        file: String,
        field: String,
        value: String,
        first: String,
        expected: String,
    },
    #[error(
        "{file}: no shard recorded (it ran the whole workload, not a part: run with --shard I/N)"
    )]
    NoShard { file: String },
    #[error("{file} and {other} are both shard {shard}")]
    DuplicateShard {
        file: String,
        other: String,
        shard: Shard,
    },
    #[error(
        "shards {missing} of {count} are missing (the reports cover only part of the run); \
         --allow-partial merges what is there"
    )]
    MissingShards { missing: String, count: u32 },
    #[error("{file}: started_at '{value}' is not an RFC 3339 time")]
    BadTime { file: String, value: String },
    #[error("{file}: {field} is {value}; allowed: {allowed}")]
    OutOfRange {
        file: String,
        field: String,
        value: String,
        allowed: String,
    },
    #[error(
        "{file}: {field} is {value}, and the reports before it sum to {before}: the total passes {max}, the most it can hold, so these cannot be the counts of one run"
    )]
    Overflow {
        file: String,
        field: String,
        value: u64,
        before: u64,
        max: u64,
    },
    #[error(
        "{file}: {field} is {value}, and the sum over the reports before it is {before}: the total is not a finite number"
    )]
    NotFinite {
        file: String,
        field: String,
        value: String,
        before: String,
    },
    #[error(
        "{file}: larger than {cap} bytes, the most a report is read (tsload's reports are a few KiB to a few MiB)"
    )]
    TooLarge { file: String, cap: u64 },
    #[error("{file}: {field}: not an encoded histogram: {source}")]
    BadHistogram {
        file: String,
        field: String,
        #[source]
        source: HistogramError,
    },
    #[error("{file}: {reason}")]
    NotAReport { file: String, reason: String },
}

/// What every merge does first: the reports are shards of one run (same target,
/// workload and scenario, shards complete unless `allow_partial`); returns the union
/// window (earliest start, its length in seconds).
fn check_and_window<S: Report>(
    reports: &[ShardReport<S>],
    allow_partial: bool,
) -> Result<(SystemTime, f64), MergeError> {
    let first = reports.first().ok_or(MergeError::Empty)?;
    check_shards(reports, allow_partial)?;
    for r in reports {
        for (field, value, expected) in [
            ("target", r.summary.target(), first.summary.target()),
            ("workload", r.summary.workload(), first.summary.workload()),
        ] {
            if value != expected {
                return Err(mismatch(r, first, field, value, expected));
            }
        }
        if r.scenario_sha256 != first.scenario_sha256 {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
            return Err(mismatch(
                r,
                first,
                "scenario_sha256",
                &show(&r.scenario_sha256),
                &show(&first.scenario_sha256),
            ));
        }
    }
    let mut start = None;
    let mut end = None;
    for r in reports {
        r.summary.validate(&r.source)?;
        let bad_time = || MergeError::BadTime {
            file: r.source.clone(),
            value: r.summary.started_at().to_string(),
        };
        let at = humantime::parse_rfc3339_weak(r.summary.started_at()).map_err(|_| bad_time())?;
        // Validated: finite, 0 to MAX_ELAPSED_S, so the conversion cannot panic.
        let until = at
            .checked_add(Duration::from_secs_f64(r.summary.elapsed_s()))
            .ok_or_else(bad_time)?;
        start = Some(start.map_or(at, |s: SystemTime| s.min(at)));
        end = Some(end.map_or(until, |e: SystemTime| e.max(until)));
    }
    let start = start.unwrap_or(SystemTime::UNIX_EPOCH);
    let end = end.unwrap_or(start);
    Ok((
        start,
        end.duration_since(start).unwrap_or_default().as_secs_f64(),
    ))
}

/// The distinct stop reasons, joined.
fn stop_reasons<S: Report>(reports: &[ShardReport<S>]) -> String {
    let mut reasons: Vec<&str> = reports.iter().map(|r| r.summary.stop_reason()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    reasons.join(", ")
}

/// The first shard's fatal error, named by its shard.
fn first_fatal<S: Report>(reports: &[ShardReport<S>]) -> Option<String> {
    reports.iter().find_map(|r| {
        r.summary
            .fatal_error()
            .map(|e| format!("{}: {e}", shard_name(r)))
    })
}

/// The sum of one count over the reports; an overflow names the report and the field.
fn checked_sum<S>(
    reports: &[ShardReport<S>],
    field: &str,
    f: impl Fn(&S) -> u64,
) -> Result<u64, MergeError> {
    let mut total = 0u64;
    for r in reports {
        total = add_count(total, f(&r.summary), &r.source, field)?;
    }
    Ok(total)
}

/// `total + value`, or the overflow that names `file` and `field`.
fn add_count(total: u64, value: u64, file: &str, field: &str) -> Result<u64, MergeError> {
    total
        .checked_add(value)
        .ok_or_else(|| MergeError::Overflow {
            file: file.to_string(),
            field: field.to_string(),
            value,
            before: total,
            max: u64::MAX,
        })
}

/// The sum of one figure over the reports (each already checked finite and not negative);
/// a sum that is no longer finite names the report and the field.
fn checked_fsum<S>(
    reports: &[ShardReport<S>],
    field: &str,
    f: impl Fn(&S) -> Option<f64>,
) -> Result<Option<f64>, MergeError> {
    let mut total: Option<f64> = None;
    for r in reports {
        let Some(v) = f(&r.summary) else { continue };
        let before = total.unwrap_or(0.0);
        let sum = before + v;
        if !sum.is_finite() {
            return Err(MergeError::NotFinite {
                file: r.source.clone(),
                field: field.to_string(),
                value: format!("{v:?}"),
                before: format!("{before:?}"),
            });
        }
        total = Some(sum);
    }
    Ok(total)
}

/// The error counts by kind, summed; `field` names the map (`errors`, `kinds[K].errors`).
fn summed_errors<'a>(
    maps: impl Iterator<Item = (&'a str, &'a BTreeMap<String, u64>)>,
    field: &str,
) -> Result<BTreeMap<String, u64>, MergeError> {
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for (file, m) in maps {
        for (k, v) in m {
            let e = errors.entry(k.clone()).or_default();
            *e = add_count(*e, *v, file, &format!("{field}.{k}"))?;
        }
    }
    Ok(errors)
}

/// The reports' [`Totals`] summed, over the union `window` of their windows; `name` is a
/// count's field in the report, for an overflow's message.
fn summed_totals<S>(
    reports: &[ShardReport<S>],
    window: f64,
    totals: impl Fn(&S) -> Totals,
    name: fn(Count) -> &'static str,
) -> Result<Totals, MergeError> {
    let mut sum = Totals {
        elapsed_s: window,
        ..Totals::default()
    };
    for r in reports {
        sum.merge(&totals(&r.summary))
            .map_err(|e| totals_overflow(e, &r.source, name(e.count).to_string()))?;
    }
    Ok(sum)
}

/// A [`TotalsOverflow`] in `file`, `field` naming the count.
fn totals_overflow(e: TotalsOverflow, file: &str, field: String) -> MergeError {
    MergeError::Overflow {
        file: file.to_string(),
        field,
        value: e.value,
        before: e.before,
        max: u64::MAX,
    }
}

/// A count's field in a query report: metrics are `statements` there.
fn query_count_name(count: Count) -> &'static str {
    match count {
        Count::Metrics => "statements",
        other => other.name(),
    }
}

/// Merges the write reports of all shards of one run. `allow_partial`: accept a run some
/// of whose shards are missing (the report then covers only those given).
pub fn merge(reports: &[ShardReport], allow_partial: bool) -> Result<Merged, MergeError> {
    let (start, window) = check_and_window(reports, allow_partial)?;
    let first = &reports[0];
    let latency = merged_histogram(reports, "latency", |s| Some(&s.latency))?;
    let service = merged_histogram(reports, "service", |s| Some(&s.service))?;

    let sum = |field: &str, f: fn(&Summary) -> u64| checked_sum(reports, field, f);
    let errors = summed_errors(
        reports
            .iter()
            .map(|r| (r.source.as_str(), &r.summary.errors)),
        "errors",
    )?;
    let offered = checked_fsum(reports, "offered_rows_per_s", |s| s.offered_rows_per_s)?;
    let totals = summed_totals(reports, window, Summary::totals, Count::name)?;
    let client = summed_client(reports, totals.metrics)?;
    let MergedStored {
        stored,
        stored_error,
        stored_shortfall,
    } = merged_stored(reports);

    let summary = Summary {
        tsload_version: first.summary.tsload_version.clone(),
        target: first.summary.target.clone(),
        workload: first.summary.workload.clone(),
        started_at: humantime::format_rfc3339_millis(start).to_string(),
        elapsed_s: totals.elapsed_s,
        stop_reason: stop_reasons(reports),
        fatal_error: first_fatal(reports),
        rows: totals.rows,
        metrics: totals.metrics,
        bytes: totals.bytes,
        requests: totals.requests,
        retries: sum("retries", |s| s.retries)?,
        failed_requests: sum("failed_requests", |s| s.failed_requests)?,
        failed_rows: sum("failed_rows", |s| s.failed_rows)?,
        ambiguous_rows: sum("ambiguous_rows", |s| s.ambiguous_rows)?,
        recovered_rows: sum("recovered_rows", |s| s.recovered_rows)?,
        unsent_requests: sum("unsent_requests", |s| s.unsent_requests)?,
        unsent_rows: sum("unsent_rows", |s| s.unsent_rows)?,
        abandoned_requests: sum("abandoned_requests", |s| s.abandoned_requests)?,
        late_rows: sum("late_rows", |s| s.late_rows)?,
        duplicate_rows: sum("duplicate_rows", |s| s.duplicate_rows)?,
        duplicate_metrics: sum("duplicate_metrics", |s| s.duplicate_metrics)?,
        errors,
        offered_rows_per_s: offered,
        ledger_run_id: None,
        rows_per_s: totals.rows_per_s(),
        metrics_per_s: totals.metrics_per_s(),
        mb_per_s: totals.mb_per_s(),
        latency: LatencySummary::from_histogram(&latency),
        service: LatencySummary::from_histogram(&service),
        client,
        storage: None,
        storage_error: None,
        stored,
        stored_error,
        stored_shortfall,
        server_questions: None,
        // The shards' devices are their own: the sums are the run's.
        devices_written: reports
            .iter()
            .map(|r| r.summary.devices_written)
            .sum::<Option<u64>>(),
        series_written: reports
            .iter()
            .map(|r| r.summary.series_written)
            .sum::<Option<u64>>(),
        server_series_created: None,
        scenario: first.summary.scenario.clone(),
    };
    let shards = write_shard_lines(reports);
    Ok(Merged {
        summary,
        shards,
        scenario_sha256: first.scenario_sha256.clone(),
    })
}

/// Each shard's line of a merged write report, as its own report says it.
fn write_shard_lines(reports: &[ShardReport<Summary>]) -> Vec<ShardLine> {
    reports
        .iter()
        .map(|r| ShardLine {
            source: r.source.clone(),
            shard: r.shard,
            host: r.host.clone(),
            exit: r.exit,
            started_at: r.summary.started_at.clone(),
            elapsed_s: r.summary.elapsed_s,
            stop_reason: r.summary.stop_reason.clone(),
            fatal_error: r.summary.fatal_error.clone(),
            rows: r.summary.rows,
            rows_per_s: r.summary.rows_per_s,
            requests: r.summary.requests,
            ambiguous_rows: r.summary.ambiguous_rows,
            ledger_run_id: r.summary.ledger_run_id,
            stored: r
                .summary
                .stored
                .as_ref()
                .filter(|s| s.own_devices)
                .and_then(|s| s.rows.or(s.samples)),
            client: r.summary.client.clone(),
        })
        .collect()
}

/// The merged run's stored check, from its shards'.
#[derive(Debug, Default)]
struct MergedStored {
    stored: Option<Stored>,
    stored_error: Option<String>,
    stored_shortfall: Option<String>,
}

/// What the shards stored, summed, where each counted its own devices
/// ([`Stored::own_devices`]); a shard that counted another's rows too, or has no figure,
/// leaves the merged run without one, and says so. Each shard's shortfall is the merged
/// run's, named by its shard.
fn merged_stored(reports: &[ShardReport]) -> MergedStored {
    let name = |r: &ShardReport| match r.shard {
        Some(shard) => format!("shard {shard} ({})", r.source),
        None => r.source.clone(),
    };
    if reports
        .iter()
        .all(|r| r.summary.stored.is_none() && r.summary.stored_error.is_none())
    {
        return MergedStored::default();
    }
    let unknown: Vec<String> = reports
        .iter()
        .filter_map(|r| match (&r.summary.stored, &r.summary.stored_error) {
            (Some(s), _) if s.own_devices => None,
            (Some(_), _) => Some(format!(
                "{}: its count is not of its devices alone",
                name(r)
            )),
            (None, Some(e)) => Some(format!("{}: {e}", name(r))),
            (None, None) => Some(format!("{}: not asked", name(r))),
        })
        .collect();
    if !unknown.is_empty() {
        return MergedStored {
            stored_error: Some(unknown.join("; ")),
            ..MergedStored::default()
        };
    }
    let all: Vec<&Stored> = reports
        .iter()
        .filter_map(|r| r.summary.stored.as_ref())
        .collect();
    let add = |f: fn(&Stored) -> Option<u64>| {
        all.iter()
            .map(|s| f(s))
            .try_fold(0u64, |sum, n| n.map(|n| sum.saturating_add(n)))
    };
    let mut refused = BTreeMap::new();
    for s in &all {
        for (reason, n) in &s.refused {
            let sum: &mut u64 = refused.entry(reason.clone()).or_default();
            *sum = sum.saturating_add(*n);
        }
    }
    let shortfalls: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            r.summary
                .stored_shortfall
                .as_ref()
                .map(|why| format!("{}: {why}", name(r)))
        })
        .collect();
    MergedStored {
        stored: Some(Stored {
            rows: add(|s| s.rows),
            samples: add(|s| s.samples),
            counts_every_sample: all.iter().all(|s| s.counts_every_sample),
            refused,
            server_wide: false,
            own_devices: true,
            merges_duplicates: all.iter().any(|s| s.merges_duplicates),
            // Each shard's count is the server's, every shard's series in it.
            series_created: None,
        }),
        stored_error: None,
        stored_shortfall: (!shortfalls.is_empty()).then(|| shortfalls.join("; ")),
    }
}

/// One request kind summed over the reports.
struct KindTotal {
    name: String,
    /// Requests, rows and statements (as metrics), over the union window.
    totals: Totals,
    failed: u64,
    errors: BTreeMap<String, u64>,
    latency: Histogram<u64>,
    service: Histogram<u64>,
}

/// The request kinds of all reports summed, in the first report's order, then any only
/// others have; a report's later entry of a name it already had is ignored. Their totals
/// are over `window`, the union of the reports' windows.
fn summed_kinds(
    reports: &[ShardReport<QuerySummary>],
    window: f64,
) -> Result<Vec<KindTotal>, MergeError> {
    let mut totals: Vec<KindTotal> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for r in reports {
        let mut seen = BTreeSet::new();
        for k in &r.summary.kinds {
            if !seen.insert(k.name.as_str()) {
                continue;
            }
            let i = *index.entry(k.name.clone()).or_insert_with(|| {
                totals.push(KindTotal {
                    name: k.name.clone(),
                    totals: Totals {
                        elapsed_s: window,
                        ..Totals::default()
                    },
                    failed: 0,
                    errors: BTreeMap::new(),
                    latency: new_histogram(),
                    service: new_histogram(),
                });
                totals.len() - 1
            });
            let t = &mut totals[i];
            let field = |f: &str| format!("kinds[{}].{f}", k.name);
            let kind = Totals {
                requests: k.requests,
                rows: k.rows,
                metrics: k.statements,
                ..Totals::default()
            };
            t.totals
                .merge(&kind)
                .map_err(|e| totals_overflow(e, &r.source, field(query_count_name(e.count))))?;
            t.failed = add_count(t.failed, k.failed, &r.source, &field("failed"))?;
            for (e, v) in &k.errors {
                let total = t.errors.entry(e.clone()).or_default();
                *total = add_count(*total, *v, &r.source, &format!("{}.{e}", field("errors")))?;
            }
            let what = format!("kind {}", k.name);
            add_summary(
                &mut t.latency,
                &k.latency,
                &r.source,
                &format!("{what} latency"),
            )?;
            add_summary(
                &mut t.service,
                &k.service,
                &r.source,
                &format!("{what} service"),
            )?;
        }
    }
    Ok(totals)
}

/// Merges the query reports of all shards of one run: totals and each request kind
/// (matched by name) summed, their histograms merged; the data-load figures summed.
pub fn merge_queries(
    reports: &[ShardReport<QuerySummary>],
    allow_partial: bool,
) -> Result<Merged<QuerySummary>, MergeError> {
    let (start, window) = check_and_window(reports, allow_partial)?;
    let first = &reports[0];
    let latency = merged_histogram(reports, "latency", |s| Some(&s.latency))?;
    let service = merged_histogram(reports, "service", |s| Some(&s.service))?;
    let sum = |field: &str, f: fn(&QuerySummary) -> u64| checked_sum(reports, field, f);

    let kinds = summed_kinds(reports, window)?
        .into_iter()
        .map(|k| KindSummary {
            name: k.name,
            requests: k.totals.requests,
            failed: k.failed,
            rows: k.totals.rows,
            statements: k.totals.metrics,
            requests_per_s: k.totals.requests_per_s(),
            statements_per_s: k.totals.metrics_per_s(),
            errors: k.errors,
            latency: LatencySummary::from_histogram(&k.latency),
            service: LatencySummary::from_histogram(&k.service),
        })
        .collect();
    let client = QueryClientSummary {
        cpu_user_s: cpu_sum(reports, "client.cpu_user_s", |s| s.client.cpu_user_s)?,
        cpu_system_s: cpu_sum(reports, "client.cpu_system_s", |s| s.client.cpu_system_s)?,
        cpu_s: cpu_sum(reports, "client.cpu_s", |s| s.client.cpu_s)?,
        peak_rss_bytes: sum("client.peak_rss_bytes", |s| s.client.peak_rss_bytes)?,
        cpu_split_rough: reports
            .iter()
            .any(|r| split_rough(r.summary.client.cpu_s, r.summary.client.cpu_split_rough)),
    };
    let totals = summed_totals(reports, window, QuerySummary::totals, query_count_name)?;
    let failed = sum("failed_requests", |s| s.failed_requests)?;
    // As floats: requests + failed may pass u64 even when each does not.
    let sent = totals.requests as f64 + failed as f64;
    let offered = checked_fsum(reports, "offered_requests_per_s", |s| {
        s.offered_requests_per_s
    })?;
    let summary = QuerySummary {
        tsload_version: first.summary.tsload_version.clone(),
        target: first.summary.target.clone(),
        workload: first.summary.workload.clone(),
        started_at: humantime::format_rfc3339_millis(start).to_string(),
        elapsed_s: totals.elapsed_s,
        load_s: reports.iter().map(|r| r.summary.load_s).fold(0.0, f64::max),
        load_requests: sum("load_requests", |s| s.load_requests)?,
        load_rows: sum("load_rows", |s| s.load_rows)?,
        load_statements: sum("load_statements", |s| s.load_statements)?,
        stop_reason: stop_reasons(reports),
        fatal_error: first_fatal(reports),
        requests: totals.requests,
        failed_requests: failed,
        statements: totals.metrics,
        rows: totals.rows,
        errors: summed_errors(
            reports
                .iter()
                .map(|r| (r.source.as_str(), &r.summary.errors)),
            "errors",
        )?,
        requests_per_s: totals.requests_per_s(),
        statements_per_s: totals.metrics_per_s(),
        rows_per_s: totals.rows_per_s(),
        latency: LatencySummary::from_histogram(&latency),
        service: LatencySummary::from_histogram(&service),
        kinds,
        cpu_us_per_request: if sent > 0.0 {
            client.cpu_s * 1e6 / sent
        } else {
            0.0
        },
        offered_requests_per_s: offered,
        achieved_ratio: crate::query_report::achieved_ratio(totals.requests_per_s(), offered),
        unsent_requests: sum("unsent_requests", |s| s.unsent_requests)?,
        abandoned_requests: sum("abandoned_requests", |s| s.abandoned_requests)?,
        client,
        scenario: first.summary.scenario.clone(),
    };
    let shards = query_shard_lines(reports);
    Ok(Merged {
        summary,
        shards,
        scenario_sha256: first.scenario_sha256.clone(),
    })
}

/// Each shard's line of a merged query report, as its own report says it.
fn query_shard_lines(reports: &[ShardReport<QuerySummary>]) -> Vec<ShardLine> {
    reports
        .iter()
        .map(|r| {
            let c = &r.summary.client;
            ShardLine {
                source: r.source.clone(),
                shard: r.shard,
                host: r.host.clone(),
                exit: r.exit,
                started_at: r.summary.started_at.clone(),
                elapsed_s: r.summary.elapsed_s,
                stop_reason: r.summary.stop_reason.clone(),
                fatal_error: r.summary.fatal_error.clone(),
                rows: r.summary.rows,
                rows_per_s: r.summary.rows_per_s,
                requests: r.summary.requests,
                ambiguous_rows: 0,
                ledger_run_id: None,
                stored: None,
                client: ClientSummary {
                    cpu_user_s: c.cpu_user_s,
                    cpu_system_s: c.cpu_system_s,
                    cpu_s: c.cpu_s,
                    cpu_us_per_1000_metrics: 0.0,
                    peak_rss_bytes: c.peak_rss_bytes,
                    // A query report has no flag: judged by its CPU.
                    cpu_split_rough: split_rough(c.cpu_s, false),
                },
            }
        })
        .collect()
}

/// The sum of one client CPU figure (each checked to be at most [`MAX_CPU_S`], so the sum
/// stays finite).
fn cpu_sum<S>(
    reports: &[ShardReport<S>],
    field: &str,
    f: impl Fn(&S) -> f64,
) -> Result<f64, MergeError> {
    Ok(checked_fsum(reports, field, |s| Some(f(s)))?.unwrap_or(0.0))
}

fn mismatch<S>(
    r: &ShardReport<S>,
    first: &ShardReport<S>,
    field: &str,
    value: &str,
    expected: &str,
) -> MergeError {
    MergeError::Mismatch {
        file: r.source.clone(),
        field: field.to_string(),
        value: value.to_string(),
        first: first.source.clone(),
        expected: expected.to_string(),
    }
}

fn shard_name<S>(r: &ShardReport<S>) -> String {
    match r.shard {
        Some(s) => format!("shard {s}"),
        None => r.source.clone(),
    }
}

/// Every report names a shard of the same count, no index twice, none missing (unless
/// `allow_partial`).
fn check_shards<S>(reports: &[ShardReport<S>], allow_partial: bool) -> Result<(), MergeError> {
    let mut seen: BTreeMap<u32, &ShardReport<S>> = BTreeMap::new();
    let mut count = None;
    for r in reports {
        let shard = r.shard.ok_or_else(|| MergeError::NoShard {
            file: r.source.clone(),
        })?;
        Shard::new(shard.index, shard.count).map_err(|e| MergeError::OutOfRange {
            file: r.source.clone(),
            field: "shard".into(),
            value: shard.to_string(),
            allowed: e.to_string(),
        })?;
        let first = *count.get_or_insert((shard.count, r));
        if shard.count != first.0 {
            return Err(mismatch(
                r,
                first.1,
                "the shard count",
                &shard.count.to_string(),
                &first.0.to_string(),
            ));
        }
        if let Some(other) = seen.insert(shard.index, r) {
            return Err(MergeError::DuplicateShard {
                file: r.source.clone(),
                other: other.source.clone(),
                shard,
            });
        }
    }
    let count = count.map_or(0, |c| c.0);
    let missing = (0..count).filter(|i| !seen.contains_key(i));
    // Named up to 20; a count of up to 65,536 shards would make a page of numbers.
    let shown: Vec<String> = missing.clone().take(20).map(|i| i.to_string()).collect();
    if !shown.is_empty() && !allow_partial {
        let more = missing.count() - shown.len();
        let mut list = shown.join(", ");
        if more > 0 {
            let _ = write!(list, " and {more} more");
        }
        return Err(MergeError::MissingShards {
            missing: list,
            count,
        });
    }
    Ok(())
}

/// The sum of the reports' histograms of one kind; a report with requests but no
/// histogram cannot be merged.
fn merged_histogram<S>(
    reports: &[ShardReport<S>],
    what: &str,
    pick: impl Fn(&S) -> Option<&LatencySummary>,
) -> Result<Histogram<u64>, MergeError> {
    let mut merged = new_histogram();
    for r in reports {
        if let Some(l) = pick(&r.summary) {
            add_summary(&mut merged, l, &r.source, what)?;
        }
    }
    Ok(merged)
}

/// `into += l`'s histogram: none is fine when nothing was counted; a count past
/// [`crate::hlog::MAX_COUNT`] is an overflow naming the file.
fn add_summary(
    into: &mut Histogram<u64>,
    l: &LatencySummary,
    file: &str,
    what: &str,
) -> Result<(), MergeError> {
    match &l.histogram {
        Some(h) => crate::hlog::add_checked(into, h).map_err(|()| MergeError::Overflow {
            file: file.to_string(),
            field: format!("{what}'s histogram count"),
            value: h.len(),
            before: into.len(),
            max: crate::hlog::MAX_COUNT,
        }),
        None if l.count == 0 => Ok(()),
        None => Err(MergeError::NoHistogram {
            file: file.to_string(),
            what: what.to_string(),
        }),
    }
}

/// The shards' client figures summed; CPU per 1,000 metrics over the sum.
fn summed_client(reports: &[ShardReport], metrics: u64) -> Result<ClientSummary, MergeError> {
    let cpu_s = cpu_sum(reports, "client.cpu_s", |s| s.client.cpu_s)?;
    Ok(ClientSummary {
        cpu_user_s: cpu_sum(reports, "client.cpu_user_s", |s| s.client.cpu_user_s)?,
        cpu_system_s: cpu_sum(reports, "client.cpu_system_s", |s| s.client.cpu_system_s)?,
        cpu_s,
        cpu_us_per_1000_metrics: if metrics > 0 {
            cpu_s * 1e6 / (metrics as f64 / 1000.0)
        } else {
            0.0
        },
        peak_rss_bytes: checked_sum(reports, "client.peak_rss_bytes", |s| {
            s.client.peak_rss_bytes
        })?,
        // Each shard's split is its own kernel's tick sample: the sum is as rough as its
        // roughest part.
        cpu_split_rough: reports
            .iter()
            .any(|r| split_rough(r.summary.client.cpu_s, r.summary.client.cpu_split_rough)),
    })
}

/// Whether a report's user/system split is rough: it says so, or (a report from before
/// the flag) its CPU is under [`tsload_core::rusage::SPLIT_MIN_CPU`].
fn split_rough(cpu_s: f64, flagged: bool) -> bool {
    flagged || cpu_s < tsload_core::rusage::SPLIT_MIN_CPU.as_secs_f64()
}

/// A shard's report of either kind, as [`read_report`] found it (boxed: a write report
/// is larger than a query report).
#[derive(Debug, Clone)]
pub enum AnyReport {
    Write(Box<ShardReport<Summary>>),
    Query(Box<ShardReport<QuerySummary>>),
}

/// Reads one shard's `--json` report (`source` names it in errors): at most
/// [`MAX_REPORT_BYTES`], a write or a query report (not a mixed or an already merged one),
/// its histograms (`hdr`) decoded by [`crate::hlog::decode_checked`]; its figures checked
/// as it is read ([`Report::validate`], and [`check_intervals`] on its `intervals`), so a
/// report no run can write is refused here, by name, before anything sums or draws it.
pub fn read_report(source: &str, bytes: &[u8]) -> Result<AnyReport, MergeError> {
    let not = |reason: String| MergeError::NotAReport {
        file: source.to_string(),
        reason,
    };
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(MergeError::TooLarge {
            file: source.to_string(),
            cap: MAX_REPORT_BYTES,
        });
    }
    let mut value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| not(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(not("not a tsload report (a JSON object)".into()));
    }
    if value.get("mode").and_then(|m| m.as_str()) == Some("mixed") {
        return Err(not(
            "a mixed report; mixed runs are not sharded, so there is nothing to merge".into(),
        ));
    }
    if value.get("merged_from").is_some() {
        return Err(not("already a merged report".into()));
    }
    let shard = match value.get("shard") {
        None | Some(serde_json::Value::Null) => None,
        Some(s) => {
            let shard: Shard =
                serde_json::from_value(s.clone()).map_err(|e| not(format!("shard: {e}")))?;
            Some(Shard::new(shard.index, shard.count).map_err(|e| not(format!("shard: {e}")))?)
        }
    };
    check_intervals(source, value.get("intervals"))?;
    let text_field = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (host, scenario_sha256) = (text_field("host"), text_field("scenario_sha256"));
    let exit = value
        .get("exit")
        .and_then(|e| e.get("code"))
        .and_then(serde_json::Value::as_i64);

    // The histograms, taken out of the JSON and decoded here (not by the serde reader).
    let top = take_histograms(&mut value, "", source)?;
    let mut kinds = Vec::new();
    if let Some(list) = value.get_mut("kinds").and_then(|k| k.as_array_mut()) {
        if list.len() > MAX_KINDS {
            return Err(MergeError::OutOfRange {
                file: source.to_string(),
                field: "kinds".into(),
                value: format!("{} entries", list.len()),
                allowed: format!("at most {MAX_KINDS} request kinds"),
            });
        }
        for (i, k) in list.iter_mut().enumerate() {
            kinds.push(take_histograms(k, &format!("kinds[{i}]."), source)?);
        }
    }
    let put = |l: &mut LatencySummary, h: &Option<Arc<Histogram<u64>>>| {
        if h.is_some() {
            l.histogram = h.clone();
        }
    };
    if value.get("kinds").is_some() {
        let mut summary: QuerySummary = serde_json::from_value(value)
            .map_err(|e| not(format!("not a tsload query report (`run --json`): {e}")))?;
        put(&mut summary.latency, &top[0]);
        put(&mut summary.service, &top[1]);
        for (k, h) in summary.kinds.iter_mut().zip(&kinds) {
            put(&mut k.latency, &h[0]);
            put(&mut k.service, &h[1]);
        }
        summary.validate(source)?;
        return Ok(AnyReport::Query(Box::new(ShardReport {
            source: source.to_string(),
            shard,
            host,
            scenario_sha256,
            exit,
            summary,
        })));
    }
    let mut summary: Summary = serde_json::from_value(value)
        .map_err(|e| not(format!("not a tsload write report (`run --json`): {e}")))?;
    put(&mut summary.latency, &top[0]);
    put(&mut summary.service, &top[1]);
    summary.validate(source)?;
    Ok(AnyReport::Write(Box::new(ShardReport {
        source: source.to_string(),
        shard,
        host,
        scenario_sha256,
        exit,
        summary,
    })))
}

/// The `latency.hdr` and `service.hdr` strings of `parent`, decoded and replaced by
/// `null` in the JSON; `prefix` is `parent`'s path, for messages.
fn take_histograms(
    parent: &mut serde_json::Value,
    prefix: &str,
    source: &str,
) -> Result<[Option<Arc<Histogram<u64>>>; 2], MergeError> {
    let mut out = [None, None];
    for (slot, key) in out.iter_mut().zip(["latency", "service"]) {
        let Some(hdr) = parent.get_mut(key).and_then(|l| l.get_mut("hdr")) else {
            continue;
        };
        // Anything but a string is left to the report's reader, which names its type.
        let Some(text) = hdr.as_str() else { continue };
        let h = crate::hlog::decode_checked(text).map_err(|e| MergeError::BadHistogram {
            file: source.to_string(),
            field: format!("{prefix}{key}.hdr"),
            source: e,
        })?;
        *slot = Some(Arc::new(h));
        *hdr = serde_json::Value::Null;
    }
    Ok(out)
}

/// The report's own text table.
pub trait RenderText {
    fn render_text(&self) -> String;
}

impl RenderText for Summary {
    fn render_text(&self) -> String {
        Summary::render_text(self)
    }
}

impl RenderText for QuerySummary {
    fn render_text(&self) -> String {
        QuerySummary::render_text(self)
    }
}

impl<S: RenderText> Merged<S> {
    /// The merged report's text: the whole run's table, then one line per shard.
    pub fn render_text(&self) -> String {
        let mut s = self.summary.render_text();
        let _ = writeln!(
            s,
            "  merged from {} shard report(s); rates over the union of their windows; client CPU and RSS summed",
            self.shards.len()
        );
        let _ = writeln!(
            s,
            "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>12} {:>9} {:>8} {:>5}  stopped",
            "shard", "host", "requests", "rows", "stored", "rows/s", "elapsed", "cpu s", "exit"
        );
        for l in &self.shards {
            let _ = writeln!(
                s,
                "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>12} {:>8.3}s {:>8.2} {:>5}  {}",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.host.as_deref().unwrap_or("-"),
                group(l.requests),
                group(l.rows),
                l.stored.map_or_else(|| "-".to_string(), group),
                group(l.rows_per_s.round() as u64),
                l.elapsed_s,
                l.client.cpu_s,
                l.exit.map_or_else(|| "-".to_string(), |c| c.to_string()),
                l.stop_reason
            );
        }
        // A shard that did not pass is in the sums: said, not left to the column.
        for l in self
            .shards
            .iter()
            .filter(|l| l.exit.is_some_and(|c| c != 0))
        {
            let _ = writeln!(
                s,
                "  shard {} ({}) exited {}: its figures are in the sums above; see its report",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.source,
                l.exit.unwrap_or_default()
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::engine::{RunOutcome, StopReason};
    use tsload_core::recorder::Counters;
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
            started_at: SystemTime::UNIX_EPOCH
                + Duration::from_millis(1_700_000_000_000 + start_ms),
            elapsed: Duration::from_millis(elapsed_ms),
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
        };
        let summary = Summary::new(
            &outcome,
            &Usage::default(),
            "sqlite",
            "cpu-only",
            serde_json::json!({}),
        );
        // Through JSON, as `tsload merge` reads it.
        let summary: Summary =
            serde_json::from_str(&serde_json::to_string(&summary).unwrap()).unwrap();
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
        let e = merge_queries(&[read_query("a.json", &p), read_query("b.json", &q)], false)
            .unwrap_err();
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
        q["kinds"][0]["service"]["hdr"] =
            base64::engine::general_purpose::STANDARD.encode(&v2).into();
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
        assert_eq!(e, "m.json: already a merged report");
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
}
