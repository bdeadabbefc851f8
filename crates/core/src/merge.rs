//! Merging the write reports of the shards of one run into one report: counts summed,
//! latency histograms merged exactly (never percentiles averaged), rates over the union
//! of the shards' windows, client CPU and memory per shard and summed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use crate::recorder::new_histogram;
use crate::report::{ClientSummary, LatencySummary, Summary, group};
use crate::shard::Shard;

/// One shard's report, as read from its JSON.
#[derive(Debug, Clone)]
pub struct ShardReport {
    /// Where it came from (a file name), for messages.
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    pub scenario_sha256: Option<String>,
    pub summary: Summary,
}

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
    pub rows: u64,
    pub rows_per_s: f64,
    pub ambiguous_rows: u64,
    pub ledger_run_id: Option<i64>,
    pub client: ClientSummary,
}

/// The merged report.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The whole run: sums, merged histograms, rates over the union window, client
    /// figures summed over the shards.
    pub summary: Summary,
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

/// Merges the reports of all shards of one run. `allow_partial`: accept a run some of
/// whose shards are missing (the report then covers only those given).
pub fn merge(reports: &[ShardReport], allow_partial: bool) -> Result<Merged, MergeError> {
    let first = reports.first().ok_or(MergeError::Empty)?;
    check_shards(reports, allow_partial)?;
    for r in reports {
        for (field, value, expected) in [
            ("target", &r.summary.target, &first.summary.target),
            ("workload", &r.summary.workload, &first.summary.workload),
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
        let at = humantime::parse_rfc3339_weak(&r.summary.started_at).map_err(|_| {
            MergeError::BadTime {
                file: r.source.clone(),
                value: r.summary.started_at.clone(),
            }
        })?;
        starts.push(at);
    }
    let start = *starts.iter().min().unwrap_or(&SystemTime::UNIX_EPOCH);
    let end = starts
        .iter()
        .zip(reports)
        .map(|(s, r)| *s + Duration::from_secs_f64(r.summary.elapsed_s.max(0.0)))
        .max()
        .unwrap_or(start);
    let window = end.duration_since(start).unwrap_or_default().as_secs_f64();

    let latency = merged_histogram(reports, "latency", |s| &s.latency)?;
    let service = merged_histogram(reports, "service", |s| &s.service)?;

    let sum = |f: fn(&Summary) -> u64| reports.iter().map(|r| f(&r.summary)).sum::<u64>();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for r in reports {
        for (k, v) in &r.summary.errors {
            *errors.entry(k.clone()).or_default() += v;
        }
    }
    let mut reasons: Vec<&str> = reports
        .iter()
        .map(|r| r.summary.stop_reason.as_str())
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    let fatal_error = reports.iter().find_map(|r| {
        r.summary
            .fatal_error
            .as_ref()
            .map(|e| format!("{}: {e}", shard_name(r)))
    });
    let offered: Vec<f64> = reports
        .iter()
        .filter_map(|r| r.summary.offered_rows_per_s)
        .collect();
    let (rows, metrics, bytes) = (sum(|s| s.rows), sum(|s| s.metrics), sum(|s| s.bytes));
    let per_s = |v: u64| if window > 0.0 { v as f64 / window } else { 0.0 };
    let client = summed_client(reports, metrics);

    let summary = Summary {
        tsload_version: first.summary.tsload_version.clone(),
        target: first.summary.target.clone(),
        workload: first.summary.workload.clone(),
        started_at: humantime::format_rfc3339_millis(start).to_string(),
        elapsed_s: window,
        stop_reason: reasons.join(", "),
        fatal_error,
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

fn mismatch(
    r: &ShardReport,
    first: &ShardReport,
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

fn shard_name(r: &ShardReport) -> String {
    match r.shard {
        Some(s) => format!("shard {s}"),
        None => r.source.clone(),
    }
}

/// Every report names a shard of the same count, no index twice, none missing (unless
/// `allow_partial`).
fn check_shards(reports: &[ShardReport], allow_partial: bool) -> Result<(), MergeError> {
    let mut seen: BTreeMap<u32, &ShardReport> = BTreeMap::new();
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
fn merged_histogram(
    reports: &[ShardReport],
    what: &str,
    pick: fn(&Summary) -> &LatencySummary,
) -> Result<Histogram<u64>, MergeError> {
    let mut merged = new_histogram();
    for r in reports {
        let l = pick(&r.summary);
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

fn summed_client(reports: &[ShardReport], metrics: u64) -> ClientSummary {
    let mut c = ClientSummary::default();
    for r in reports {
        let s = &r.summary.client;
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

impl Merged {
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
            "  {:<7} {:<16} {:>14} {:>12} {:>9} {:>8}  stopped",
            "shard", "host", "rows", "rows/s", "elapsed", "cpu s"
        );
        for l in &self.shards {
            let _ = writeln!(
                s,
                "  {:<7} {:<16} {:>14} {:>12} {:>8.3}s {:>8.2}  {}",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.host.as_deref().unwrap_or("-"),
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
