//! A report as the page takes it, checked once as it comes in ([`ReportView::new`]): every
//! figure the page shows or draws is read out of the JSON here into typed fields, and a
//! figure no run can have is refused ([`Error::OutOfRange`]: the report, the field's path,
//! its value, what is allowed). Seconds are finite, 0 to core's `MAX_ELAPSED_S`;
//! latencies 0 to `MAX_LATENCY_MS`; counts whole numbers, and what the page adds up fits
//! in a `u64`; each stream's interval ends go forward in time; sizes are capped
//! (intervals, error kinds, table rows, nesting). A report's `intervals` (and those an
//! interval log gives) go through core's `merge::check_intervals`, the rules `tsload
//! merge` reads reports by. The drawing code takes these types, never the JSON, so no
//! number reaches a chart unchecked.

use hdrhistogram::Histogram;
use serde_json::Value;
use tsload_report::merge::{
    MAX_CPU_S, MAX_ELAPSED_S, MAX_KINDS, MAX_LATENCY_MS, MergeError, check_intervals,
};
use tsload_report::verdict::{Verdict, WriteCheck};

use crate::{Error, Hlog, Interval, ReportInput, StreamKind};

/// The most rows a table of a report's scalars (server, probe RTT, network) may have.
pub(crate) const MAX_TABLE_ROWS: usize = 10_000;
/// The deepest a report's JSON may nest (tsload's nest 5 levels or so).
pub(crate) const MAX_DEPTH: usize = 64;

/// The latency figures a summary states (milliseconds), in the order of its steps.
pub(crate) const LATENCY_KEYS: [&str; 7] = [
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "p99_9_ms",
    "p99_99_ms",
    "max_ms",
];

/// A figure as the report states it: its value, and its JSON text (what `data-value`
/// shows, exactly as the report wrote it).
#[derive(Debug, Clone)]
pub(crate) struct Num {
    pub value: f64,
    pub raw: String,
}

/// A latency summary (`latency` or `service`).
pub(crate) struct Latency {
    /// Values counted.
    pub count: Option<u64>,
    /// Its histogram (`hdr`), decoded through core's `decode_checked`.
    pub hist: Option<Histogram<u64>>,
    /// The figures of [`LATENCY_KEYS`] it states.
    pub figures: Vec<(&'static str, Num)>,
}

impl Latency {
    pub(crate) fn get(&self, key: &str) -> Option<&Num> {
        self.figures.iter().find(|(k, _)| *k == key).map(|(_, n)| n)
    }
}

/// The client's figures of a stream (`client`).
pub(crate) struct Client {
    pub figures: Vec<(&'static str, Num)>,
}

impl Client {
    pub(crate) fn get(&self, key: &str) -> Option<&Num> {
        self.figures.iter().find(|(k, _)| *k == key).map(|(_, n)| n)
    }
}

/// One stream's summary (writes or queries).
pub(crate) struct Stream {
    /// `write` or `query`.
    pub name: StreamKind,
    pub elapsed_s: f64,
    pub rows: u64,
    /// `metrics` (writes) or `statements` (queries).
    pub count: Option<u64>,
    /// `metrics_per_s` or `statements_per_s`.
    pub rate: Option<Num>,
    pub retries: Option<u64>,
    /// Errors by kind, and their sum.
    pub errors: Vec<(String, u64)>,
    pub errors_total: u64,
    pub stop_reason: Option<String>,
    pub fatal_error: Option<String>,
    pub latency: Option<Latency>,
    pub service: Option<Latency>,
    pub client: Option<Client>,
    /// What the server says it stored (writes): rows, else samples, with its unit.
    pub stored: Option<(u64, &'static str)>,
    /// Why the server holds less than acknowledged (`stored_shortfall`), or why what it
    /// stored is not known (`stored_error`).
    pub stored_shortfall: Option<String>,
    pub stored_error: Option<String>,
    /// Rows whose answer was lost: the target holds `rows` to `rows + ambiguous_rows`.
    pub ambiguous_rows: u64,
    /// Open loop: the rate offered (`offered_rows_per_s` or `offered_requests_per_s`).
    pub offered: Option<Num>,
    /// The achieved rate in the offered one's unit (`rows_per_s` or `requests_per_s`).
    pub achieved: Option<Num>,
}

/// One row of a table of scalars: its key (`a.b` for nested objects), the value's JSON
/// text, and the number when it is one (`float`: written with a fraction or exponent).
pub(crate) struct Row {
    pub key: String,
    pub raw: String,
    pub number: Option<f64>,
    pub float: bool,
}

/// One report as the page reads it: checked, typed.
pub(crate) struct ReportView<'a> {
    pub label: String,
    pub streams: Vec<Stream>,
    /// Every stream's intervals, each stream's in time order.
    pub intervals: Vec<Interval>,
    /// Its interval log (its first stream's), if one was given.
    pub hlog: Option<&'a Hlog>,
    /// Whether the first stream's intervals come from the log (the JSON has none): they
    /// then count requests only.
    pub from_log: bool,
    pub exit_code: Option<i64>,
    pub exit_why: String,
    /// Whether its figures are a measure: its exit, what the server stored, its flaw.
    pub verdict: tsload_report::verdict::Verdict,
    pub tsload_version: Option<String>,
    pub workload: Option<String>,
    pub target: Option<String>,
    pub started_at: Option<String>,
    /// `(index, count)`, if it is a shard's report.
    pub shard: Option<(u64, u64)>,
    /// A merged report (`merged_from`).
    pub merged: bool,
    pub server: Option<Vec<Row>>,
    pub rtt: Option<Vec<Row>>,
    /// The plan's `[network]` impairment.
    pub network: Option<Vec<Row>>,
    /// The resolved plan, secrets hidden, as pretty JSON.
    pub plan: String,
    /// A mixed run's write latency while no query ran, and while queries ran.
    pub write_latency_split: Option<(Latency, Latency)>,
}

/// Reads a report's fields, naming the report and the field in its refusals.
struct Fields<'l> {
    label: &'l str,
}

impl Fields<'_> {
    fn refuse(&self, field: String, value: String, allowed: impl Into<String>) -> Error {
        Error::OutOfRange {
            label: self.label.to_string(),
            field,
            value,
            allowed: allowed.into(),
        }
    }

    /// A whole number, or `None` when missing or `null`.
    fn count(&self, v: &Value, key: &str, path: &str) -> Result<Option<u64>, Error> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_u64().map(Some).ok_or_else(|| {
                self.refuse(
                    format!("{path}{key}"),
                    shown(x),
                    format!("a whole number from 0 to {}", u64::MAX),
                )
            }),
        }
    }

    /// A finite number from 0 to `max`, or `None` when missing or `null`.
    fn number(
        &self,
        v: &Value,
        key: &str,
        path: &str,
        max: f64,
        allowed: &str,
    ) -> Result<Option<Num>, Error> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => match x.as_f64() {
                Some(f) if f.is_finite() && (0.0..=max).contains(&f) => Ok(Some(Num {
                    value: f,
                    raw: x.to_string(),
                })),
                _ => Err(self.refuse(format!("{path}{key}"), shown(x), allowed)),
            },
        }
    }
}

/// A JSON value as a refusal shows it: numbers as Rust writes them (`1e308`), strings
/// quoted and escaped (no control character reaches a terminal), others by their kind.
fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => n
            .as_f64()
            .map_or_else(|| n.to_string(), |x| format!("{x:?}")),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

/// A key as a field's path names it: control characters escaped.
fn key_shown(k: &str) -> String {
    if k.chars().any(char::is_control) {
        format!("{k:?}")
    } else {
        k.to_string()
    }
}

const SECONDS: &str = "a finite number of seconds from 0 to 1000000000 (about 31.7 years)";
const MILLIS: &str = "a finite number of milliseconds from 0 to 1000000000000 (the longest run)";
const RATE: &str = "a finite number, not negative";

/// Whether `v` nests at most `depth` levels (it looks no deeper than that).
fn within_depth(v: &Value, depth: usize) -> bool {
    match v {
        Value::Array(a) => depth > 0 && a.iter().all(|x| within_depth(x, depth - 1)),
        Value::Object(m) => depth > 0 && m.values().all(|x| within_depth(x, depth - 1)),
        _ => true,
    }
}

/// A [`MergeError`] of core's checks as the page's error about report `label`.
fn from_merge(label: &str, e: MergeError) -> Error {
    match e {
        MergeError::OutOfRange {
            file,
            field,
            value,
            allowed,
        } => Error::OutOfRange {
            label: file,
            field,
            value,
            allowed,
        },
        other => Error::NotAReport {
            label: label.to_string(),
            why: other.to_string(),
        },
    }
}

impl<'a> ReportView<'a> {
    /// `input` checked and read, with its interval log `hlog` (its first stream's).
    pub(crate) fn new(input: &ReportInput, hlog: Option<&'a Hlog>) -> Result<Self, Error> {
        let r = &input.report;
        let label = input.label.as_str();
        let bad = |why: String| Error::NotAReport {
            label: label.to_string(),
            why,
        };
        if !r.is_object() {
            return Err(bad("not a JSON object".into()));
        }
        if !within_depth(r, MAX_DEPTH) {
            return Err(bad(format!(
                "it nests deeper than {MAX_DEPTH} levels (tsload's reports nest a few)"
            )));
        }
        let f = Fields { label };
        let summaries = summaries_of(r).map_err(bad)?;
        let mut streams = Vec::new();
        for (name, v, path) in &summaries {
            for key in ["rows", "elapsed_s"] {
                if !v.get(key).is_some_and(Value::is_number) {
                    return Err(bad(format!("the {name} stream has no number `{key}`")));
                }
            }
            streams.push(read_stream(&f, *name, v, path)?);
        }

        let mut intervals = intervals_of(label, r)?;
        let from_log = match hlog {
            Some(log) => log_intervals(label, log, &streams[0], &mut intervals)?,
            None => false,
        };

        let text = |key: &str| -> Option<String> {
            summaries
                .first()
                .and_then(|(_, v, _)| v.get(key))
                .or_else(|| r.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let (exit_code, exit_why) = exit_of(r);
        let shard = shard_of(&f, r)?;
        let mut plan = summaries
            .first()
            .and_then(|(_, v, _)| v.get("scenario"))
            .cloned()
            .unwrap_or(Value::Null);
        tsload_redact::json(&mut plan);
        let table = |key: &str, v: Option<&Value>| -> Result<Option<Vec<Row>>, Error> {
            v.filter(|v| v.is_object())
                .map(|v| rows(label, key, v))
                .transpose()
        };
        // A mixed run: the writes' latency while the queries ran and while they did not;
        // and the queries' clock, which starts at their own start, put on the writes'.
        let write_latency_split = match (
            read_latency(&f, r, "write_latency_alone", "")?,
            read_latency(&f, r, "write_latency_with_queries", "")?,
        ) {
            (Some(alone), Some(with)) => Some((alone, with)),
            _ => None,
        };
        if let Some(offset) = query_offset_s(r) {
            for i in intervals
                .iter_mut()
                .filter(|i| i.stream == StreamKind::Query)
            {
                i.elapsed_s += offset;
            }
        }
        Ok(ReportView {
            write_latency_split,
            label: label.to_string(),
            streams,
            intervals,
            hlog,
            from_log,
            verdict: verdict_of(r, exit_code, &exit_why),
            exit_code,
            exit_why,
            tsload_version: text("tsload_version"),
            workload: text("workload"),
            target: text("target"),
            started_at: text("started_at"),
            shard,
            merged: r.get("merged_from").is_some(),
            server: table("server", r.get("server"))?,
            rtt: table("rtt", r.get("rtt"))?,
            network: table("scenario.network", plan.get("network"))?,
            plan: serde_json::to_string_pretty(&plan).unwrap_or_default(),
        })
    }
}

/// The run's verdict by [`Verdict::of`], the rule `tsload_report`'s own reader judges
/// by: its exit and, of its write stream (a mixed run's `write`), what the server stored.
fn verdict_of(r: &Value, exit_code: Option<i64>, why: &str) -> Verdict {
    let writes = r.get("write").filter(|w| w.is_object()).unwrap_or(r);
    let text = |key: &str| writes.get(key).and_then(Value::as_str);
    let stored = writes.get("stored");
    let count = |key: &str| stored.and_then(|s| s.get(key)).and_then(Value::as_u64);
    Verdict::of(
        exit_code.and_then(|c| u8::try_from(c).ok()).unwrap_or(0),
        Some(why).filter(|_| r.get("exit").is_some()),
        WriteCheck {
            stored: count("rows").or_else(|| count("samples")),
            shortfall: text("stored_shortfall"),
            stored_error: text("stored_error"),
        },
    )
}

/// How long after a mixed run's writes its queries started (`query.started_at` less
/// `write.started_at`, 0 to a day): their intervals count from their own start, so this
/// puts them on the writes' clock. `None` for any other report.
fn query_offset_s(r: &Value) -> Option<f64> {
    let at = |s: &str| {
        let text = r.get(s)?.get("started_at")?.as_str()?;
        humantime::parse_rfc3339_weak(text).ok()
    };
    let (w, q) = (at("write")?, at("query")?);
    let offset = q.duration_since(w).ok()?.as_secs_f64();
    (offset <= 86_400.0).then_some(offset)
}

/// A report's stream summaries, each with its path prefix: `write` and `query` of a mixed
/// report, or the report itself (a query report has `statements_per_s`, a write report
/// `metrics_per_s`). `Err`: why it is neither.
fn summaries_of(r: &Value) -> Result<Vec<(StreamKind, &Value, String)>, String> {
    let mut summaries: Vec<(StreamKind, &Value, String)> = Vec::new();
    if r.get("write").is_some_and(Value::is_object) || r.get("query").is_some_and(Value::is_object)
    {
        for s in StreamKind::ALL {
            if let Some(v) = r.get(s.as_str()).filter(|v| v.is_object()) {
                summaries.push((s, v, format!("{s}.")));
            }
        }
    } else if r.get("statements_per_s").is_some() {
        summaries.push((StreamKind::Query, r, String::new()));
    } else if r.get("metrics_per_s").is_some() {
        summaries.push((StreamKind::Write, r, String::new()));
    } else {
        return Err(
            "it has neither `metrics_per_s` (writes) nor `statements_per_s` (queries)".into(),
        );
    }
    Ok(summaries)
}

/// A report's `intervals`, checked as `tsload merge` checks them, then read.
fn intervals_of(label: &str, r: &Value) -> Result<Vec<Interval>, Error> {
    check_intervals(label, r.get("intervals")).map_err(|e| from_merge(label, e))?;
    Ok(match r.get("intervals") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            serde_json::from_value::<Vec<Interval>>(v.clone()).map_err(|e| Error::NotAReport {
                label: label.to_string(),
                why: format!("`intervals`: {e}"),
            })?
        }
    })
}

/// With its interval log, a report's first stream: the log must count what the report
/// counts; its intervals stand in for the report's when the report has none (checked by
/// the same rules). Whether they did.
fn log_intervals(
    label: &str,
    log: &Hlog,
    first: &Stream,
    intervals: &mut Vec<Interval>,
) -> Result<bool, Error> {
    let bad = |why: String| Error::NotAReport {
        label: label.to_string(),
        why,
    };
    // The log counts each request once, as the summary's latency does.
    let counted = first.latency.as_ref().and_then(|l| l.count);
    if let Some(counted) = counted
        && counted != log.latency_count()
    {
        return Err(Error::HlogMismatch {
            log: log.label.clone(),
            report: label.to_string(),
            why: format!(
                "the log holds {} latency values, the report's {} latency counts \
                 {counted} (each --hlog goes with the report in the same place)",
                log.latency_count(),
                first.name
            ),
        });
    }
    if !intervals.iter().any(|i| i.stream == first.name) {
        let from = log.intervals(first.name);
        // The log's intervals go by the same rules as the report's own.
        let as_json = serde_json::to_value(&from).map_err(|e| bad(e.to_string()))?;
        let named = format!("{label} (intervals from {})", log.label);
        check_intervals(&named, Some(&as_json)).map_err(|e| from_merge(&named, e))?;
        intervals.extend(from);
        return Ok(true);
    }
    Ok(false)
}

/// A report's exit code and why, as its `exit` says (a merged or older report has none).
fn exit_of(r: &Value) -> (Option<i64>, String) {
    match r.get("exit") {
        Some(e) => (
            e.get("code").and_then(Value::as_i64),
            e.get("why")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ),
        None if r.get("merged_from").is_some() => (
            None,
            "not its own: a merged report (each shard's is in its report)".to_string(),
        ),
        None => (
            None,
            "not recorded (a report from an older tsload)".to_string(),
        ),
    }
}

/// A report's shard (index, count), when it names one.
fn shard_of(f: &Fields<'_>, r: &Value) -> Result<Option<(u64, u64)>, Error> {
    Ok(match r.get("shard") {
        None | Some(Value::Null) => None,
        Some(s) => {
            let index = f.count(s, "index", "shard.")?;
            let count = f.count(s, "count", "shard.")?;
            match (index, count) {
                (Some(i), Some(c)) => Some((i, c)),
                _ => {
                    return Err(f.refuse(
                        "shard".into(),
                        shown(s),
                        "an object with the whole numbers `index` and `count`",
                    ));
                }
            }
        }
    })
}

/// One stream's summary `v` (`path`: its place in the report, `write.` or empty).
fn read_stream(f: &Fields<'_>, name: StreamKind, v: &Value, path: &str) -> Result<Stream, Error> {
    let (count_key, rate_key) = if name == StreamKind::Query {
        ("statements", "statements_per_s")
    } else {
        ("metrics", "metrics_per_s")
    };
    let elapsed_s = f
        .number(v, "elapsed_s", path, MAX_ELAPSED_S, SECONDS)?
        .map_or(0.0, |n| n.value);
    let rows = f.count(v, "rows", path)?.ok_or_else(|| {
        f.refuse(
            format!("{path}rows"),
            v.get("rows").map_or_else(|| "missing".into(), shown),
            format!("a whole number from 0 to {}", u64::MAX),
        )
    })?;
    let (errors, errors_total) = read_errors(f, v, path)?;
    let latency = |key: &str| read_latency(f, v, key, path);
    let client = read_client(f, v, path)?;
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let stored = match v.get("stored").filter(|s| s.is_object()) {
        None => None,
        Some(st) => {
            let at = format!("{path}stored.");
            match f.count(st, "rows", &at)? {
                Some(n) => Some((n, "rows")),
                None => f.count(st, "samples", &at)?.map(|n| (n, "samples")),
            }
        }
    };
    let (offered_key, achieved_key) = if name == StreamKind::Write {
        ("offered_rows_per_s", "rows_per_s")
    } else {
        ("offered_requests_per_s", "requests_per_s")
    };
    Ok(Stream {
        stored,
        stored_shortfall: text("stored_shortfall"),
        stored_error: text("stored_error"),
        ambiguous_rows: f.count(v, "ambiguous_rows", path)?.unwrap_or(0),
        offered: f.number(v, offered_key, path, f64::MAX, RATE)?,
        achieved: f.number(v, achieved_key, path, f64::MAX, RATE)?,
        name,
        elapsed_s,
        rows,
        count: f.count(v, count_key, path)?,
        rate: f.number(v, rate_key, path, f64::MAX, RATE)?,
        retries: f.count(v, "retries", path)?,
        errors,
        errors_total,
        stop_reason: text("stop_reason"),
        fatal_error: text("fatal_error"),
        latency: latency("latency")?,
        service: latency("service")?,
        client,
    })
}

/// A stream's error counts by kind (at most `MAX_KINDS`) and their sum, each checked.
fn read_errors(f: &Fields<'_>, v: &Value, path: &str) -> Result<(Vec<(String, u64)>, u64), Error> {
    let mut errors = Vec::new();
    let mut errors_total = 0u64;
    match v.get("errors") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            if m.len() > MAX_KINDS {
                return Err(f.refuse(
                    format!("{path}errors"),
                    format!("{} kinds", m.len()),
                    format!("at most {MAX_KINDS} kinds of error"),
                ));
            }
            for (kind, n) in m {
                let field = format!("{path}errors.{}", key_shown(kind));
                let n = n.as_u64().ok_or_else(|| {
                    f.refuse(
                        field.clone(),
                        shown(n),
                        format!("a whole number from 0 to {}", u64::MAX),
                    )
                })?;
                errors_total = errors_total.checked_add(n).ok_or_else(|| {
                    f.refuse(
                        field,
                        n.to_string(),
                        format!(
                            "a count that keeps the sum of the errors within {} (the kinds \
                             before it sum to {errors_total})",
                            u64::MAX
                        ),
                    )
                })?;
                errors.push((kind.clone(), n));
            }
        }
        Some(other) => {
            return Err(f.refuse(
                format!("{path}errors"),
                shown(other),
                "an object of error counts by kind",
            ));
        }
    }
    Ok((errors, errors_total))
}

/// A stream's client figures (CPU seconds, peak RSS, CPU per 1,000 metrics), each checked;
/// `None` when the report has none.
fn read_client(f: &Fields<'_>, v: &Value, path: &str) -> Result<Option<Client>, Error> {
    Ok(match v.get("client").filter(|c| c.is_object()) {
        None => None,
        Some(c) => {
            let at = format!("{path}client.");
            let mut figures = Vec::new();
            for (k, max, allowed) in [
                (
                    "cpu_s",
                    MAX_CPU_S,
                    "a finite number of CPU seconds from 0 to 1000000000000",
                ),
                (
                    "cpu_user_s",
                    MAX_CPU_S,
                    "a finite number of CPU seconds from 0 to 1000000000000",
                ),
                (
                    "cpu_system_s",
                    MAX_CPU_S,
                    "a finite number of CPU seconds from 0 to 1000000000000",
                ),
                ("peak_rss_bytes", f64::MAX, RATE),
                ("cpu_us_per_1000_metrics", f64::MAX, RATE),
            ] {
                if let Some(n) = f.number(c, k, &at, max, allowed)? {
                    figures.push((k, n));
                }
            }
            Some(Client { figures })
        }
    })
}

/// The latency summary `key` of object `v` (at `path`), checked; `None` when absent.
fn read_latency(f: &Fields, v: &Value, key: &str, path: &str) -> Result<Option<Latency>, Error> {
    let Some(l) = v.get(key).filter(|l| l.is_object()) else {
        return Ok(None);
    };
    let at = format!("{path}{key}.");
    let mut figures = Vec::new();
    for k in LATENCY_KEYS {
        if let Some(n) = f.number(l, k, &at, MAX_LATENCY_MS, MILLIS)? {
            figures.push((k, n));
        }
    }
    let hist = match l.get("hdr") {
        Some(Value::String(text)) => Some(tsload_report::hlog::decode_checked(text).map_err(
            |e| Error::NotAReport {
                label: f.label.to_string(),
                why: format!("{at}hdr: not an encoded histogram: {e}"),
            },
        )?),
        _ => None,
    };
    Ok(Some(Latency {
        count: f.count(l, "count", &at)?,
        hist,
        figures,
    }))
}

/// The scalars of object `v` (nested objects flattened as `a.b`, short arrays of scalars
/// joined, long ones counted), at most [`MAX_TABLE_ROWS`]; `hdr` histograms left out.
fn rows(label: &str, key: &str, v: &Value) -> Result<Vec<Row>, Error> {
    fn walk(prefix: &str, v: &Value, rows: &mut Vec<Row>) {
        let row = |raw: String, number: Option<f64>, float: bool| Row {
            key: prefix.to_string(),
            raw,
            number,
            float,
        };
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "hdr" {
                        continue;
                    }
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, rows);
                    if rows.len() > MAX_TABLE_ROWS {
                        return;
                    }
                }
            }
            Value::Array(a) if a.len() > 12 => {
                rows.push(row(format!("{} items", a.len()), None, false));
            }
            Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
                let text: Vec<String> = a.iter().map(scalar_text).collect();
                rows.push(row(text.join(", "), None, false));
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(&format!("{prefix}.{i}"), x, rows);
                    if rows.len() > MAX_TABLE_ROWS {
                        return;
                    }
                }
            }
            Value::Null => {}
            Value::Number(n) => rows.push(row(n.to_string(), n.as_f64(), n.is_f64())),
            other => rows.push(row(scalar_text(other), None, false)),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    if out.len() > MAX_TABLE_ROWS {
        return Err(Error::OutOfRange {
            label: label.to_string(),
            field: key.to_string(),
            value: format!("more than {MAX_TABLE_ROWS} figures"),
            allowed: format!("at most {MAX_TABLE_ROWS}"),
        });
    }
    Ok(out)
}

/// A scalar's text as the page shows it: strings as they are, numbers and booleans as JSON
/// writes them.
pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}
