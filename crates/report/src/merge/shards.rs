//! That the reports are the shards of one run (same target, workload and scenario, each
//! shard once, none missing), and the union of their windows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use tsload_core::shard::Shard;

use super::{MergeError, Report, ShardReport};

/// What every merge does first: the reports are shards of one run (same target,
/// workload and scenario, shards complete unless `allow_partial`); returns the union
/// window (earliest start, its length in seconds).
pub(super) fn check_and_window<S: Report>(
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
