//! The merge of query reports: totals and each request kind (matched by name) summed,
//! their histograms merged, the data-load figures summed.

use std::collections::{BTreeMap, BTreeSet};

use hdrhistogram::Histogram;

use crate::query_report::{KindSummary, QuerySummary};
use crate::report::{ClientSummary, LatencySummary};
use crate::totals::Totals;
use tsload_core::recorder::new_histogram;

use super::shards::check_and_window;
use super::sums::{
    add_count, add_summary, checked_fsum, checked_sum, cpu_sum, first_fatal, merged_histogram,
    query_count_name, split_rough, stop_reasons, summed_errors, summed_totals, totals_overflow,
};
use super::{MergeError, Merged, ShardReport};

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
    let client = ClientSummary {
        cpu_user_s: cpu_sum(reports, "client.cpu_user_s", |s| s.client.cpu_user_s)?,
        cpu_system_s: cpu_sum(reports, "client.cpu_system_s", |s| s.client.cpu_system_s)?,
        cpu_s: cpu_sum(reports, "client.cpu_s", |s| s.client.cpu_s)?,
        cpu_us_per_1000_metrics: None,
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
        stop_reason: stop_reasons(reports)?,
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
    Ok(Merged::of(summary, reports))
}

impl super::Report for QuerySummary {
    fn shard_figures(&self) -> super::ShardFigures {
        super::ShardFigures {
            rows: self.rows,
            rows_per_s: self.rows_per_s,
            requests: self.requests,
            ambiguous_rows: 0,
            ledger_run_id: None,
            stored: None,
            client: self.client.clone(),
        }
    }
    super::report_fields!(super::check::validate_query);
}
