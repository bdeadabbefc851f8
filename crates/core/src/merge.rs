//! Merging the reports of the shards of one run (write or query) into one report: counts
//! summed, latency histograms merged exactly (never percentiles averaged), rates over the
//! union of the shards' windows, client CPU and memory per shard and summed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use crate::query_report::{KindSummary, QueryClientSummary, QuerySummary};
use crate::recorder::new_histogram;
use crate::report::{ClientSummary, LatencySummary, Summary, group};
use crate::shard::Shard;

/// One shard's report, as read from its JSON: a write [`Summary`] or a [`QuerySummary`].
#[derive(Debug, Clone)]
pub struct ShardReport<S = Summary> {
    /// Where it came from (a file name), for messages.
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    pub scenario_sha256: Option<String>,
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
}

macro_rules! impl_report {
    ($t:ty) => {
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
        }
    };
}
impl_report!(Summary);
impl_report!(QuerySummary);

/// One shard's line in the merged report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShardLine {
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
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
    #[error("shards {missing} of {count} are missing (the reports cover only part of the run)")]
    MissingShards { missing: String, count: u32 },
    #[error("{file}: started_at '{value}' is not an RFC 3339 time")]
    BadTime { file: String, value: String },
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
    let mut starts = Vec::with_capacity(reports.len());
    for r in reports {
        let at = humantime::parse_rfc3339_weak(r.summary.started_at()).map_err(|_| {
            MergeError::BadTime {
                file: r.source.clone(),
                value: r.summary.started_at().to_string(),
            }
        })?;
        starts.push(at);
    }
    let start = *starts.iter().min().unwrap_or(&SystemTime::UNIX_EPOCH);
    let end = starts
        .iter()
        .zip(reports)
        .map(|(s, r)| *s + Duration::from_secs_f64(r.summary.elapsed_s().max(0.0)))
        .max()
        .unwrap_or(start);
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

fn summed_errors<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, u64>>,
) -> BTreeMap<String, u64> {
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *errors.entry(k.clone()).or_default() += v;
        }
    }
    errors
}

fn rate(v: u64, secs: f64) -> f64 {
    if secs > 0.0 { v as f64 / secs } else { 0.0 }
}

/// Merges the write reports of all shards of one run. `allow_partial`: accept a run some
/// of whose shards are missing (the report then covers only those given).
pub fn merge(reports: &[ShardReport], allow_partial: bool) -> Result<Merged, MergeError> {
    let (start, window) = check_and_window(reports, allow_partial)?;
    let first = &reports[0];
    let latency = merged_histogram(reports, "latency", |s| Some(&s.latency))?;
    let service = merged_histogram(reports, "service", |s| Some(&s.service))?;

    let sum = |f: fn(&Summary) -> u64| reports.iter().map(|r| f(&r.summary)).sum::<u64>();
    let errors = summed_errors(reports.iter().map(|r| &r.summary.errors));
    let offered: Vec<f64> = reports
        .iter()
        .filter_map(|r| r.summary.offered_rows_per_s)
        .collect();
    let (rows, metrics, bytes) = (sum(|s| s.rows), sum(|s| s.metrics), sum(|s| s.bytes));
    let per_s = |v: u64| rate(v, window);
    let client = summed_client(reports.iter().map(|r| r.summary.client.clone()), metrics);

    let summary = Summary {
        tsload_version: first.summary.tsload_version.clone(),
        target: first.summary.target.clone(),
        workload: first.summary.workload.clone(),
        started_at: humantime::format_rfc3339_millis(start).to_string(),
        elapsed_s: window,
        stop_reason: stop_reasons(reports),
        fatal_error: first_fatal(reports),
        rows,
        metrics,
        bytes,
        requests: sum(|s| s.requests),
        retries: sum(|s| s.retries),
        failed_requests: sum(|s| s.failed_requests),
        failed_rows: sum(|s| s.failed_rows),
        ambiguous_rows: sum(|s| s.ambiguous_rows),
        recovered_rows: sum(|s| s.recovered_rows),
        unsent_requests: sum(|s| s.unsent_requests),
        unsent_rows: sum(|s| s.unsent_rows),
        errors,
        offered_rows_per_s: (!offered.is_empty()).then(|| offered.iter().sum()),
        ledger_run_id: None,
        rows_per_s: per_s(rows),
        metrics_per_s: per_s(metrics),
        mb_per_s: per_s(bytes) / 1e6,
        latency: LatencySummary::from_histogram(&latency),
        service: LatencySummary::from_histogram(&service),
        client,
        storage: None,
        storage_error: None,
        scenario: first.summary.scenario.clone(),
    };
    let shards = reports
        .iter()
        .map(|r| ShardLine {
            source: r.source.clone(),
            shard: r.shard,
            host: r.host.clone(),
            started_at: r.summary.started_at.clone(),
            elapsed_s: r.summary.elapsed_s,
            stop_reason: r.summary.stop_reason.clone(),
            fatal_error: r.summary.fatal_error.clone(),
            rows: r.summary.rows,
            rows_per_s: r.summary.rows_per_s,
            requests: r.summary.requests,
            ambiguous_rows: r.summary.ambiguous_rows,
            ledger_run_id: r.summary.ledger_run_id,
            client: r.summary.client.clone(),
        })
        .collect();
    Ok(Merged {
        summary,
        shards,
        scenario_sha256: first.scenario_sha256.clone(),
    })
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
    let sum = |f: fn(&QuerySummary) -> u64| reports.iter().map(|r| f(&r.summary)).sum::<u64>();

    // Kinds in the first report's order, then any only others have.
    let mut names: Vec<&str> = Vec::new();
    for r in reports {
        for k in &r.summary.kinds {
            if !names.contains(&k.name.as_str()) {
                names.push(&k.name);
            }
        }
    }
    let mut kinds = Vec::with_capacity(names.len());
    for name in names {
        let of = |s: &QuerySummary| -> Option<KindSummary> {
            s.kinds.iter().find(|k| k.name == name).cloned()
        };
        let ksum = |f: fn(&KindSummary) -> u64| {
            reports
                .iter()
                .filter_map(|r| of(&r.summary))
                .map(|k| f(&k))
                .sum::<u64>()
        };
        let what = format!("kind {name}");
        let kl = merged_histogram(reports, &format!("{what} latency"), |s| {
            s.kinds.iter().find(|k| k.name == name).map(|k| &k.latency)
        })?;
        let ks = merged_histogram(reports, &format!("{what} service"), |s| {
            s.kinds.iter().find(|k| k.name == name).map(|k| &k.service)
        })?;
        let (requests, statements) = (ksum(|k| k.requests), ksum(|k| k.statements));
        let kind_errors: Vec<KindSummary> = reports.iter().filter_map(|r| of(&r.summary)).collect();
        kinds.push(KindSummary {
            name: name.to_string(),
            requests,
            failed: ksum(|k| k.failed),
            rows: ksum(|k| k.rows),
            statements,
            requests_per_s: rate(requests, window),
            statements_per_s: rate(statements, window),
            errors: summed_errors(kind_errors.iter().map(|k| &k.errors)),
            latency: LatencySummary::from_histogram(&kl),
            service: LatencySummary::from_histogram(&ks),
        });
    }
    let mut client = QueryClientSummary::default();
    for r in reports {
        let c = &r.summary.client;
        client.cpu_user_s += c.cpu_user_s;
        client.cpu_system_s += c.cpu_system_s;
        client.cpu_s += c.cpu_s;
        client.peak_rss_bytes += c.peak_rss_bytes;
    }
    let (requests, failed) = (sum(|s| s.requests), sum(|s| s.failed_requests));
    let (statements, rows) = (sum(|s| s.statements), sum(|s| s.rows));
    let sent = requests + failed;
    let summary = QuerySummary {
        tsload_version: first.summary.tsload_version.clone(),
        target: first.summary.target.clone(),
        workload: first.summary.workload.clone(),
        started_at: humantime::format_rfc3339_millis(start).to_string(),
        elapsed_s: window,
        load_s: reports.iter().map(|r| r.summary.load_s).fold(0.0, f64::max),
        load_requests: sum(|s| s.load_requests),
        load_rows: sum(|s| s.load_rows),
        load_statements: sum(|s| s.load_statements),
        stop_reason: stop_reasons(reports),
        fatal_error: first_fatal(reports),
        requests,
        failed_requests: failed,
        statements,
        rows,
        errors: summed_errors(reports.iter().map(|r| &r.summary.errors)),
        requests_per_s: rate(requests, window),
        statements_per_s: rate(statements, window),
        rows_per_s: rate(rows, window),
        latency: LatencySummary::from_histogram(&latency),
        service: LatencySummary::from_histogram(&service),
        kinds,
        cpu_us_per_request: if sent > 0 {
            client.cpu_s * 1e6 / sent as f64
        } else {
            0.0
        },
        offered_requests_per_s: {
            let offered: Vec<f64> = reports
                .iter()
                .filter_map(|r| r.summary.offered_requests_per_s)
                .collect();
            (!offered.is_empty()).then(|| offered.iter().sum())
        },
        client,
        scenario: first.summary.scenario.clone(),
    };
    let shards = reports
        .iter()
        .map(|r| {
            let c = &r.summary.client;
            ShardLine {
                source: r.source.clone(),
                shard: r.shard,
                host: r.host.clone(),
                started_at: r.summary.started_at.clone(),
                elapsed_s: r.summary.elapsed_s,
                stop_reason: r.summary.stop_reason.clone(),
                fatal_error: r.summary.fatal_error.clone(),
                rows: r.summary.rows,
                rows_per_s: r.summary.rows_per_s,
                requests: r.summary.requests,
                ambiguous_rows: 0,
                ledger_run_id: None,
                client: ClientSummary {
                    cpu_user_s: c.cpu_user_s,
                    cpu_system_s: c.cpu_system_s,
                    cpu_s: c.cpu_s,
                    cpu_us_per_1000_metrics: 0.0,
                    peak_rss_bytes: c.peak_rss_bytes,
                },
            }
        })
        .collect();
    Ok(Merged {
        summary,
        shards,
        scenario_sha256: first.scenario_sha256.clone(),
    })
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
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::MissingShards {
            missing: missing.join(", "),
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
        let Some(l) = pick(&r.summary) else { continue };
        match &l.histogram {
            Some(h) => add(&mut merged, h),
            None if l.count == 0 => {}
            None => {
                return Err(MergeError::NoHistogram {
                    file: r.source.clone(),
                    what: what.to_string(),
                });
            }
        }
    }
    Ok(merged)
}

/// `into += h`; a histogram of another precision is re-recorded value by value.
fn add(into: &mut Histogram<u64>, h: &Arc<Histogram<u64>>) {
    if into.add(h.as_ref()).is_err() {
        for v in h.iter_recorded() {
            let _ = into.record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

fn summed_client(clients: impl Iterator<Item = ClientSummary>, metrics: u64) -> ClientSummary {
    let mut c = ClientSummary::default();
    for s in clients {
        c.cpu_user_s += s.cpu_user_s;
        c.cpu_system_s += s.cpu_system_s;
        c.cpu_s += s.cpu_s;
        c.peak_rss_bytes += s.peak_rss_bytes;
    }
    c.cpu_us_per_1000_metrics = if metrics > 0 {
        c.cpu_s * 1e6 / (metrics as f64 / 1000.0)
    } else {
        0.0
    };
    c
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
            "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>9} {:>8}  stopped",
            "shard", "host", "requests", "rows", "rows/s", "elapsed", "cpu s"
        );
        for l in &self.shards {
            let _ = writeln!(
                s,
                "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>8.3}s {:>8.2}  {}",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.host.as_deref().unwrap_or("-"),
                group(l.requests),
                group(l.rows),
                group(l.rows_per_s.round() as u64),
                l.elapsed_s,
                l.client.cpu_s,
                l.stop_reason
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{RunOutcome, StopReason};
    use crate::recorder::Counters;
    use crate::rusage::Usage;

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
}
