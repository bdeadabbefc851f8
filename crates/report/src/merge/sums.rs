//! The checked sums over the shards' reports: counts, figures, error counts, totals, client
//! CPU and latency histograms, each overflow named by its report and field.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::report::LatencySummary;
use crate::totals::{Count, Totals, TotalsOverflow};
use tsload_core::recorder::new_histogram;

use super::{MergeError, Report, ShardReport};

/// The shards' distinct stop reasons (a merge has one shard at least).
pub(super) fn stop_reasons<S: Report>(
    reports: &[ShardReport<S>],
) -> Result<crate::StopReasons, MergeError> {
    crate::StopReasons::union(reports.iter().map(|r| r.summary.stop_reason()))
        .ok_or(MergeError::Empty)
}

/// The first shard's fatal error, named by its shard.
pub(super) fn first_fatal<S: Report>(reports: &[ShardReport<S>]) -> Option<String> {
    reports.iter().find_map(|r| {
        r.summary
            .fatal_error()
            .map(|e| format!("{}: {e}", shard_name(r)))
    })
}

fn shard_name<S>(r: &ShardReport<S>) -> String {
    match r.shard {
        Some(s) => format!("shard {s}"),
        None => r.source.clone(),
    }
}

/// The sum of one count over the reports; an overflow names the report and the field.
pub(super) fn checked_sum<S>(
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
pub(super) fn add_count(
    total: u64,
    value: u64,
    file: &str,
    field: &str,
) -> Result<u64, MergeError> {
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
pub(super) fn checked_fsum<S>(
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

/// The sum of one client CPU figure (each checked to be at most
/// [`MAX_CPU_S`](super::MAX_CPU_S), so the sum stays finite).
pub(super) fn cpu_sum<S>(
    reports: &[ShardReport<S>],
    field: &str,
    f: impl Fn(&S) -> f64,
) -> Result<f64, MergeError> {
    Ok(checked_fsum(reports, field, |s| Some(f(s)))?.unwrap_or(0.0))
}

/// The error counts by kind, summed; `field` names the map (`errors`, `kinds[K].errors`).
pub(super) fn summed_errors<'a>(
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
pub(super) fn summed_totals<S>(
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
pub(super) fn totals_overflow(e: TotalsOverflow, file: &str, field: String) -> MergeError {
    MergeError::Overflow {
        file: file.to_string(),
        field,
        value: e.value,
        before: e.before,
        max: u64::MAX,
    }
}

/// A count's field in a query report: metrics are `statements` there.
pub(super) fn query_count_name(count: Count) -> &'static str {
    match count {
        Count::Metrics => "statements",
        other => other.name(),
    }
}

/// The sum of the reports' histograms of one kind; a report with requests but no
/// histogram cannot be merged.
pub(super) fn merged_histogram<S>(
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
pub(super) fn add_summary(
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

/// Whether a report's user/system split is rough: it says so, or (a report from before
/// the flag) its CPU is under [`tsload_core::rusage::SPLIT_MIN_CPU`].
pub(super) fn split_rough(cpu_s: f64, flagged: bool) -> bool {
    flagged || cpu_s < tsload_core::rusage::SPLIT_MIN_CPU.as_secs_f64()
}
