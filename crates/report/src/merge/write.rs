//! The merge of write reports: counts and histograms summed, the client figures and what
//! the server says it stored.

use std::collections::BTreeMap;

use crate::report::{ClientSummary, LatencySummary, Summary};
use crate::totals::Count;
use tsload_core::stored::Stored;

use super::shards::check_and_window;
use super::sums::{
    checked_fsum, checked_sum, cpu_sum, first_fatal, merged_histogram, split_rough, stop_reasons,
    summed_errors, summed_totals,
};
use super::{MergeError, Merged, ShardReport};

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
        stop_reason: stop_reasons(reports)?,
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
    Ok(Merged::of(summary, reports))
}

impl super::Report for Summary {
    fn shard_figures(&self) -> super::ShardFigures {
        super::ShardFigures {
            rows: self.rows,
            rows_per_s: self.rows_per_s,
            requests: self.requests,
            ambiguous_rows: self.ambiguous_rows,
            ledger_run_id: self.ledger_run_id,
            stored: self
                .stored
                .as_ref()
                .filter(|s| s.own_devices)
                .and_then(|s| s.rows.or(s.samples)),
            client: self.client.clone(),
        }
    }
    super::report_fields!(super::check::validate_write);
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

/// The shards' client figures summed; CPU per 1,000 metrics over the sum.
fn summed_client(reports: &[ShardReport], metrics: u64) -> Result<ClientSummary, MergeError> {
    let cpu_s = cpu_sum(reports, "client.cpu_s", |s| s.client.cpu_s)?;
    Ok(ClientSummary {
        cpu_user_s: cpu_sum(reports, "client.cpu_user_s", |s| s.client.cpu_user_s)?,
        cpu_system_s: cpu_sum(reports, "client.cpu_system_s", |s| s.client.cpu_system_s)?,
        cpu_s,
        cpu_us_per_1000_metrics: Some(crate::report::per_1000_metrics(cpu_s, metrics)),
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
