//! The JSON report of one run (`tsload run --json`), one type for write, query and mixed
//! runs: [`RunReport`], built by the binary, written as JSON, and read back by
//! [`RunReport::read`], the one reader, which checks every figure before anything merges,
//! compares, judges or draws it.
//!
//! The JSON keeps the shape tsload has always written: a write run's [`Summary`] fields
//! at the top, a query run's [`QuerySummary`] fields at the top (and its data load's
//! summary under `preload`), a mixed run's summaries under `write` and `query` with
//! `"mode": "mixed"`; beside them what every run adds (`exit`, `thresholds`, `host`,
//! `commit`, `scenario_sha256`, `shard`, `server`, `rtt`, `intervals`).

use std::sync::Arc;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tsload_core::shard::Shard;
use tsload_monitor::ServerSummary;

use crate::comparison::Comparison;
use crate::merge::{MAX_KINDS, MAX_REPORT_BYTES, MergeError, Report as _, check_intervals};
use crate::query_report::QuerySummary;
use crate::report::{LatencySummary, Summary};
use crate::verdict::{Verdict, WriteCheck};

/// The streams a run reported, by the run's mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Streams {
    /// A write run: its summary's fields at the top of the JSON.
    Write(Box<Summary>),
    /// A query run (`None`: its queries did not run), and the data set it wrote first
    /// (TSBS's `preload`).
    Query {
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        query: Option<Box<QuerySummary>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        preload: Option<Box<Summary>>,
    },
    /// A mixed run: writes and queries at once.
    Mixed(Box<MixedStreams>),
}

/// `"mixed"`, the `mode` that tells a mixed report from the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MixedMode {
    #[default]
    Mixed,
}

/// A mixed run's streams: each one's summary (`None`: it did not run) and the writes'
/// latency split by whether queries ran beside them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MixedStreams {
    pub mode: MixedMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<QuerySummary>,
    /// Write latency while no query ran, and while queries ran.
    #[serde(default)]
    pub write_latency_alone: Option<LatencySummary>,
    #[serde(default)]
    pub write_latency_with_queries: Option<LatencySummary>,
    /// The queries, without a limit of their own, ended with the writes: why the writes
    /// ended.
    #[serde(default)]
    pub queries_ended_with_writes: Option<String>,
}

/// One `--fail-if` threshold and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThresholdVerdict {
    /// The threshold as written.
    pub threshold: String,
    pub passed: bool,
    /// What broke, one line per stream that broke it.
    #[serde(default)]
    pub failures: Vec<String>,
}

/// The code the process exits with and why, in a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    pub code: i64,
    #[serde(default)]
    pub why: String,
}

/// The whole JSON report of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    #[serde(flatten)]
    pub streams: Streams,
    /// The RTT probe's report (`[network] probe`), as the probe wrote it (the probe crate
    /// builds on this one, so its type is not named here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<serde_json::Value>,
    /// The server's side over the run (`[monitor]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSummary>,
    pub thresholds: Vec<ThresholdVerdict>,
    /// The machine the run ran on, the tsload commit and the scenario's hash (`None` in a
    /// report of an older tsload).
    pub host: Option<String>,
    pub commit: Option<String>,
    pub scenario_sha256: Option<String>,
    /// The part of the workload this process ran (`--shard`; `0/1`: all of it); `None`
    /// in a report of an older tsload.
    pub shard: Option<Shard>,
    pub exit: Option<ExitStatus>,
    /// `--baseline`: the comparison of this run (and its repeats) with the baseline, in
    /// the last run's report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Comparison>,
    /// The report intervals of each stream (what `--out` writes), checked by
    /// [`check_intervals`] as the report is read (the outputs crate that owns their row
    /// type builds on this one).
    pub intervals: serde_json::Value,
}

/// What every run adds beside its streams, as read (its intervals apart).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    rtt: Option<serde_json::Value>,
    #[serde(default)]
    server: Option<ServerSummary>,
    #[serde(default)]
    thresholds: Vec<ThresholdVerdict>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    scenario_sha256: Option<String>,
    #[serde(default)]
    shard: Option<Shard>,
    #[serde(default)]
    exit: Option<ExitStatus>,
    #[serde(default)]
    baseline: Option<Comparison>,
}

impl Streams {
    /// The write stream's summary: a write run's, a mixed run's writes (not a query run's
    /// preload, which is no measure).
    pub fn write(&self) -> Option<&Summary> {
        match self {
            Streams::Write(s) => Some(s),
            Streams::Mixed(m) => m.write.as_ref(),
            Streams::Query { .. } => None,
        }
    }

    /// The read stream's summary: a query run's, a mixed run's queries.
    pub fn query(&self) -> Option<&QuerySummary> {
        match self {
            Streams::Query { query, .. } => query.as_deref(),
            Streams::Mixed(m) => m.query.as_ref(),
            Streams::Write(_) => None,
        }
    }
}

impl RunReport {
    /// Reads one run's `--json` report (`source` names it in errors): at most
    /// [`MAX_REPORT_BYTES`], then [`RunReport::from_json`].
    pub fn read(source: &str, bytes: &[u8]) -> Result<RunReport, MergeError> {
        if bytes.len() as u64 > MAX_REPORT_BYTES {
            return Err(MergeError::TooLarge {
                file: source.to_string(),
                cap: MAX_REPORT_BYTES,
            });
        }
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| MergeError::NotAReport {
                file: source.to_string(),
                reason: format!("not JSON: {e}"),
            })?;
        RunReport::from_json(source, value)
    }

    /// A run's report from its JSON: a write, query or mixed report by its shape (`mode`
    /// `mixed`; `kinds`, or a `preload` alone, for a query run; else a write run), its histograms
    /// (`hdr`) decoded by [`crate::hlog::decode_checked`], each summary's figures checked
    /// ([`crate::merge::Report::validate`]), its `intervals` by [`check_intervals`] and its
    /// shard by [`Shard::new`]: a report no run can write is refused here, by name.
    pub fn from_json(source: &str, mut value: serde_json::Value) -> Result<RunReport, MergeError> {
        let not = |reason: String| MergeError::NotAReport {
            file: source.to_string(),
            reason,
        };
        if !value.is_object() {
            return Err(not("not a tsload report (a JSON object)".into()));
        }
        if value.get("merged_from").is_some() {
            return Err(not(
                "already a merged report (`tsload merge`), not one run's report".into(),
            ));
        }
        check_intervals(source, value.get("intervals"))?;
        let intervals = value
            .get_mut("intervals")
            .map_or(serde_json::Value::Null, serde_json::Value::take);
        let envelope = Envelope::deserialize(&value)
            .map_err(|e| not(format!("not a tsload report (`run --json`): {e}")))?;
        let shard = match envelope.shard {
            None => None,
            Some(s) => Some(Shard::new(s.index, s.count).map_err(|e| not(format!("shard: {e}")))?),
        };
        Ok(RunReport {
            streams: streams_of(source, value)?,
            rtt: envelope.rtt,
            server: envelope.server,
            thresholds: envelope.thresholds,
            host: envelope.host,
            commit: envelope.commit,
            scenario_sha256: envelope.scenario_sha256,
            shard,
            exit: envelope.exit,
            baseline: envelope.baseline,
            intervals,
        })
    }

    /// The resolved scenario the run ran (secrets redacted), from its streams' summaries;
    /// `null` when none reported.
    pub fn scenario(&self) -> &serde_json::Value {
        static NONE: serde_json::Value = serde_json::Value::Null;
        let preload = match &self.streams {
            Streams::Query { preload, .. } => preload.as_deref(),
            _ => None,
        };
        (self.streams.write().or(preload).map(|w| &w.scenario))
            .or_else(|| self.streams.query().map(|q| &q.scenario))
            .unwrap_or(&NONE)
    }

    /// What the run's data costs on disk per metric: the database's own figure for the
    /// run's tables (`[monitor] storage`: `storage.bytes_per_metric`, read after the
    /// server's flush), else what the server's data dir grew by
    /// (`server.bytes_per_metric`: the whole server, WAL and all).
    pub fn bytes_per_metric(&self) -> Option<f64> {
        self.streams
            .write()
            .and_then(|w| w.storage.as_ref())
            .map(|s| s.bytes_per_metric)
            .or_else(|| self.server.as_ref()?.bytes_per_metric)
    }

    /// The report as JSON (what `--json` writes). `Err`: a histogram that would not
    /// encode.
    pub fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    /// The run's verdict by [`Verdict::of`]: its exit code (the report's, else `earned`,
    /// the code the run earned), and of its write stream (a mixed run's writes; a query
    /// run has none) what the server stored (rows, else samples), `stored_shortfall` and
    /// `stored_error`.
    pub fn verdict(&self, earned: u8) -> Verdict {
        let exit = self.exit.as_ref();
        let writes = self.streams.write();
        Verdict::of(
            exit.and_then(|e| u8::try_from(e.code).ok())
                .unwrap_or(earned),
            exit.map(|e| e.why.as_str()),
            WriteCheck {
                stored: writes
                    .and_then(|w| w.stored.as_ref())
                    .and_then(|s| s.rows.or(s.samples)),
                shortfall: writes.and_then(|w| w.stored_shortfall.as_deref()),
                stored_error: writes.and_then(|w| w.stored_error.as_deref()),
            },
        )
    }
}

/// A report's streams, by its shape: `mode` `mixed`; `kinds`, or a `preload` alone, for a
/// query run; else a write run.
fn streams_of(source: &str, mut value: serde_json::Value) -> Result<Streams, MergeError> {
    if value.get("mode").and_then(|m| m.as_str()) == Some("mixed") {
        return mixed_of(source, value).map(|m| Streams::Mixed(Box::new(m)));
    }
    // A query run has its kinds, or (its queries not run) its preload's summary alone.
    let preload_only = value.get("preload").is_some_and(|p| !p.is_null());
    if value.get("kinds").is_none() && !preload_only {
        return Ok(Streams::Write(Box::new(write_summary(source, "", value)?)));
    }
    let preload = match value.get_mut("preload").filter(|p| !p.is_null()) {
        Some(p) => Some(Box::new(write_summary(source, "preload.", p.take())?)),
        None => None,
    };
    let query = match value.get("kinds") {
        Some(_) => Some(Box::new(query_summary(source, "", value)?)),
        None => None,
    };
    Ok(Streams::Query { query, preload })
}

/// A mixed run's streams: each one's summary under `write` and `query`, the write latency
/// split beside them.
fn mixed_of(source: &str, mut value: serde_json::Value) -> Result<MixedStreams, MergeError> {
    let mut write = None;
    let mut query = None;
    if let Some(w) = value.get_mut("write").filter(|w| !w.is_null()) {
        write = Some(write_summary(source, "write.", w.take())?);
    }
    if let Some(q) = value.get_mut("query").filter(|q| !q.is_null()) {
        query = Some(query_summary(source, "query.", q.take())?);
    }
    let mut split = [None, None];
    for (h, key) in split
        .iter_mut()
        .zip(["write_latency_alone", "write_latency_with_queries"])
    {
        if let Some(l) = value.get_mut(key) {
            *h = take_hdr(l, key, source)?;
        }
    }
    let mut mixed: MixedStreams =
        serde_json::from_value(value).map_err(|e| MergeError::NotAReport {
            file: source.to_string(),
            reason: format!("not a tsload mixed report (`run --json`): {e}"),
        })?;
    (mixed.write, mixed.query) = (write, query);
    let [alone, with] = split;
    if let Some(l) = &mut mixed.write_latency_alone {
        put(l, alone);
    }
    if let Some(l) = &mut mixed.write_latency_with_queries {
        put(l, with);
    }
    Ok(mixed)
}

/// A write stream's summary from its JSON (`prefix`: where it sits, for messages).
fn write_summary(
    source: &str,
    prefix: &str,
    mut value: serde_json::Value,
) -> Result<Summary, MergeError> {
    let [latency, service] = take_histograms(&mut value, prefix, source)?;
    let mut s: Summary = serde_json::from_value(value).map_err(|e| MergeError::NotAReport {
        file: source.to_string(),
        reason: format!("{prefix}not a tsload write report (`run --json`): {e}"),
    })?;
    put(&mut s.latency, latency);
    put(&mut s.service, service);
    s.validate(&in_file(source, prefix))?;
    Ok(s)
}

/// A read stream's summary from its JSON, its kinds' histograms too.
fn query_summary(
    source: &str,
    prefix: &str,
    mut value: serde_json::Value,
) -> Result<QuerySummary, MergeError> {
    let [latency, service] = take_histograms(&mut value, prefix, source)?;
    let mut kinds = Vec::new();
    if let Some(list) = value.get_mut("kinds").and_then(|k| k.as_array_mut()) {
        if list.len() > MAX_KINDS {
            return Err(MergeError::OutOfRange {
                file: source.to_string(),
                field: format!("{prefix}kinds"),
                value: format!("{} entries", list.len()),
                allowed: format!("at most {MAX_KINDS} request kinds"),
            });
        }
        for (i, k) in list.iter_mut().enumerate() {
            kinds.push(take_histograms(k, &format!("{prefix}kinds[{i}]."), source)?);
        }
    }
    let mut s: QuerySummary =
        serde_json::from_value(value).map_err(|e| MergeError::NotAReport {
            file: source.to_string(),
            reason: format!("{prefix}not a tsload query report (`run --json`): {e}"),
        })?;
    put(&mut s.latency, latency);
    put(&mut s.service, service);
    for (k, [l, sv]) in s.kinds.iter_mut().zip(kinds) {
        put(&mut k.latency, l);
        put(&mut k.service, sv);
    }
    s.validate(&in_file(source, prefix))?;
    Ok(s)
}

/// `source`, and the part of it a summary sits in (`shard-0.json (write)`).
fn in_file(source: &str, prefix: &str) -> String {
    match prefix.strip_suffix('.') {
        Some(part) => format!("{source} ({part})"),
        None => source.to_string(),
    }
}

fn put(l: &mut LatencySummary, h: Option<Arc<Histogram<u64>>>) {
    if h.is_some() {
        l.histogram = h;
    }
}

/// The `latency.hdr` and `service.hdr` strings of `parent`, decoded and replaced by
/// `null` in the JSON (so the serde reader does not decode them unchecked); `prefix` is
/// `parent`'s path, for messages.
fn take_histograms(
    parent: &mut serde_json::Value,
    prefix: &str,
    source: &str,
) -> Result<[Option<Arc<Histogram<u64>>>; 2], MergeError> {
    let mut out = [None, None];
    for (slot, key) in out.iter_mut().zip(["latency", "service"]) {
        if let Some(l) = parent.get_mut(key) {
            *slot = take_hdr(l, &format!("{prefix}{key}"), source)?;
        }
    }
    Ok(out)
}

/// The `hdr` string of one latency summary's JSON (`field` names it), decoded checked and
/// replaced by `null`.
fn take_hdr(
    latency: &mut serde_json::Value,
    field: &str,
    source: &str,
) -> Result<Option<Arc<Histogram<u64>>>, MergeError> {
    let Some(hdr) = latency.get_mut("hdr") else {
        return Ok(None);
    };
    // Anything but a string is left to the report's reader, which names its type.
    let Some(text) = hdr.as_str() else {
        return Ok(None);
    };
    let h = crate::hlog::decode_checked(text).map_err(|e| MergeError::BadHistogram {
        file: source.to_string(),
        field: format!("{field}.hdr"),
        source: e,
    })?;
    *hdr = serde_json::Value::Null;
    Ok(Some(Arc::new(h)))
}

#[cfg(test)]
mod tests;
