//! Checks of each report's figures as it comes in: seconds, CPU and rates in range, and a
//! report's `intervals` as `tsload run --json` writes them.

use crate::StreamKind;
use crate::query_report::QuerySummary;
use crate::report::Summary;

use super::{MAX_CPU_S, MAX_ELAPSED_S, MAX_INTERVALS, MAX_KINDS, MAX_LATENCY_MS, MergeError};

pub(super) fn validate_write(s: &Summary, file: &str) -> Result<(), MergeError> {
    check_seconds(file, "elapsed_s", s.elapsed_s)?;
    check_rate(file, "rows_per_s", s.rows_per_s)?;
    if let Some(r) = s.offered_rows_per_s {
        check_rate(file, "offered_rows_per_s", r)?;
    }
    check_cpu(file, "client.cpu_user_s", s.client.cpu_user_s)?;
    check_cpu(file, "client.cpu_system_s", s.client.cpu_system_s)?;
    check_cpu(file, "client.cpu_s", s.client.cpu_s)
}

pub(super) fn validate_query(s: &QuerySummary, file: &str) -> Result<(), MergeError> {
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
/// the report comes in: [`read_report`](super::read_report), and the HTML report's.
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
