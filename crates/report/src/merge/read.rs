//! Reading one shard's `--json` report from outside: its size capped, its histograms
//! decoded checked, its figures and intervals checked before anything sums them.

use std::sync::Arc;

use hdrhistogram::Histogram;

use crate::query_report::QuerySummary;
use crate::report::{LatencySummary, Summary};
use tsload_core::shard::Shard;

use super::check::check_intervals;
use super::{MAX_KINDS, MAX_REPORT_BYTES, MergeError, Report, ShardReport};

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
