//! The final report of a run: one [`Summary`] with throughput, errors, latency percentiles
//! (corrected latency and service time), client CPU and memory, rendered as a human table
//! or serialized as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::totals::Totals;
use tsload_core::engine::RunOutcome;
use tsload_core::rusage::Usage;
use tsload_core::stored::ServerQuestions;

/// `p97.5` -> 97.5: a percentile name, 0 to 100.
pub fn percentile_of(name: &str) -> Option<f64> {
    let p: f64 = name.strip_prefix('p')?.parse().ok()?;
    (p.is_finite() && (0.0..=100.0).contains(&p)).then_some(p)
}

/// Latency percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// The histogram the figures came from, for thresholds on any percentile and for
    /// merging shards' reports exactly: in JSON `hdr`, HdrHistogram's V2 + DEFLATE
    /// encoding in base64 (as in `.hlog` lines).
    #[serde(
        rename = "hdr",
        default,
        skip_serializing_if = "Option::is_none",
        with = "hdr_base64"
    )]
    pub histogram: Option<std::sync::Arc<Histogram<u64>>>,
    pub count: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub p99_99_ms: f64,
    pub max_ms: f64,
}

/// Equal when the printed figures are (the kept histogram is not compared).
impl PartialEq for LatencySummary {
    fn eq(&self, o: &Self) -> bool {
        (
            self.count,
            self.min_ms,
            self.mean_ms,
            self.p50_ms,
            self.p90_ms,
            self.p95_ms,
        ) == (o.count, o.min_ms, o.mean_ms, o.p50_ms, o.p90_ms, o.p95_ms)
            && (self.p99_ms, self.p99_9_ms, self.p99_99_ms, self.max_ms)
                == (o.p99_ms, o.p99_9_ms, o.p99_99_ms, o.max_ms)
    }
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        LatencySummary {
            histogram: Some(std::sync::Arc::new(h.clone())),
            count: h.len(),
            min_ms: ms(h.min()),
            mean_ms: h.mean() / 1e6,
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p99_9_ms: ms(h.value_at_quantile(0.999)),
            p99_99_ms: ms(h.value_at_quantile(0.9999)),
            max_ms: ms(h.max()),
        }
    }

    /// The figure a threshold names: min, mean, p50, p90, p95, p99, p99.9, p99.99, max;
    /// `None` (not measured) for every name when nothing was recorded.
    pub fn get(&self, name: &str) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        Some(match name {
            "min" => self.min_ms,
            "mean" | "avg" => self.mean_ms,
            "p50" | "median" => self.p50_ms,
            "p90" => self.p90_ms,
            "p95" => self.p95_ms,
            "p99" => self.p99_ms,
            "p99.9" => self.p99_9_ms,
            "p99.99" => self.p99_99_ms,
            "max" => self.max_ms,
            other => {
                // Any other percentile, `pNN` or `pNN.NNN`, from the histogram.
                let q = percentile_of(other)?;
                let h = self.histogram.as_ref()?;
                if h.is_empty() {
                    return None;
                }
                h.value_at_quantile(q / 100.0) as f64 / 1e6
            }
        })
    }
}

/// Histograms in JSON: V2 + DEFLATE, base64.
mod hdr_base64 {
    use std::sync::Arc;

    use base64::Engine as _;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
    use serde::{Deserialize as _, Serializer};

    pub fn serialize<S: Serializer>(
        h: &Option<Arc<Histogram<u64>>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match h {
            None => s.serialize_none(),
            Some(h) => s.serialize_str(&encode(h).map_err(serde::ser::Error::custom)?),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Arc<Histogram<u64>>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => decode(&text).map(|h| Some(Arc::new(h))).map_err(|e| {
                serde::de::Error::custom(format!("hdr: not an encoded histogram: {e}"))
            }),
        }
    }

    /// `h` as base64 of its V2 + DEFLATE encoding.
    pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .map_err(|e| format!("{e:?}"))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// The histogram [`encode`] wrote.
    /// Through [`crate::hlog::decode_checked`]: a forged payload is an error, never a
    /// panic or an allocation the payload declares.
    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        crate::hlog::decode_checked(text).map_err(|e| e.to_string())
    }
}

pub use hdr_base64::{decode as decode_histogram, encode as encode_histogram};

/// What the client itself cost, in a write or a query report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientSummary {
    /// The kernel's split of `cpu_s`, tick-sampled: see `cpu_split_rough`.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// User plus system CPU of the whole process over the load: exact (the scheduler's
    /// own run time).
    pub cpu_s: f64,
    /// Client CPU microseconds spent per 1,000 metrics written; `None` (left out of the
    /// JSON) for a query run, which writes no metrics (its cost is per request,
    /// [`crate::QuerySummary::cpu_us_per_request`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us_per_1000_metrics: Option<f64>,
    pub peak_rss_bytes: u64,
    /// The run used too little CPU (under [`tsload_core::rusage::SPLIT_MIN_CPU`]) for the
    /// kernel's user/system split, sampled at timer ticks, to mean much; `cpu_s` is exact
    /// either way. Reports without the field are judged by their `cpu_s` when merged.
    #[serde(default)]
    pub cpu_split_rough: bool,
}

impl ClientSummary {
    /// The text report's CPU figures: `cpu 0.015 s (user 0.012, sys 0.003)`, marked when
    /// the split is too rough to read.
    pub fn cpu_text(&self) -> String {
        cpu_text(
            self.cpu_s,
            self.cpu_user_s,
            self.cpu_system_s,
            self.cpu_split_rough,
        )
    }
}

/// `cpu 0.015 s (user 0.012, sys 0.003)`, the split marked when too rough to read: the
/// client CPU line of write and query reports.
pub(crate) fn cpu_text(cpu_s: f64, user_s: f64, system_s: f64, split_rough: bool) -> String {
    format!(
        "cpu {cpu_s:.3} s (user {user_s:.3}, sys {system_s:.3}{})",
        if split_rough {
            format!(
                "; split rough: tick-sampled, under {} s",
                tsload_core::rusage::SPLIT_MIN_CPU.as_secs()
            )
        } else {
            String::new()
        }
    )
}

/// Whether a count is zero (left out of the JSON).
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The whole final report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub tsload_version: String,
    pub target: String,
    pub workload: String,
    pub started_at: String,
    pub elapsed_s: f64,
    pub stop_reason: crate::StopReasons,
    pub fatal_error: Option<String>,
    pub rows: u64,
    pub metrics: u64,
    pub bytes: u64,
    pub requests: u64,
    pub retries: u64,
    pub failed_requests: u64,
    pub failed_rows: u64,
    /// Rows sent whose answer was lost and that no ledger settled: the target holds
    /// between `rows` and `rows + ambiguous_rows` of this run's rows.
    pub ambiguous_rows: u64,
    /// Rows whose answer was lost but which the target's ledger showed stored (counted
    /// once in `rows`, not sent again).
    pub recovered_rows: u64,
    /// Open loop: requests due before the end that were never sent, and their rows.
    pub unsent_requests: u64,
    pub unsent_rows: u64,
    /// Requests still unanswered the grace after the run's end (its duration, or a
    /// signal), given up on: counted in `failed_requests`, their rows in `failed_rows` and
    /// `ambiguous_rows` (stored or not, no one knows).
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub abandoned_requests: u64,
    /// Of `rows`: rows sent after a later row of their device and table (the workload's
    /// `out_of_order_ratio`).
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub late_rows: u64,
    /// Of `rows`: rows that repeat the row before them exactly (the workload's
    /// `duplicate_ratio`), the second copies.
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub duplicate_rows: u64,
    /// The field values of `duplicate_rows`.
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub duplicate_metrics: u64,
    pub errors: BTreeMap<String, u64>,
    /// Open loop: the rate asked for; `rows_per_s` is what was achieved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rows_per_s: Option<f64>,
    /// The ledger's run id (exactly-once delivery), to find this run's batches in the
    /// target's `tsload_ledger` table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_run_id: Option<i64>,
    pub rows_per_s: f64,
    pub metrics_per_s: f64,
    pub mb_per_s: f64,
    /// Latency from the intended send time (coordinated-omission corrected).
    pub latency: LatencySummary,
    /// Time from the actual send to the acknowledgement.
    pub service: LatencySummary,
    pub client: ClientSummary,
    /// What the target's tables grew by, asked of the database (`[monitor] storage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageSummary>,
    /// Why the storage asked for is not there (the target cannot tell, or asking failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_error: Option<String>,
    /// What the server says it stored during the run (beside `rows`, what it
    /// acknowledged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<tsload_core::stored::Stored>,
    /// Why what the server stored is not known (it cannot tell, or asking failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_error: Option<String>,
    /// Why the server holds less than it acknowledged: the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_shortfall: Option<String>,
    /// How long asking the server what it stored (and its storage) took, outside the
    /// run's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_questions: Option<ServerQuestions>,
    /// With series churn or pods: the devices written, each generation of a slot, or each
    /// pod of a host, one of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_written: Option<u64>,
    /// With series churn or pods: the series written, a device's fields with a value in
    /// each table each one (as Prometheus and VictoriaMetrics keep them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_written: Option<u64>,
    /// New series the server says it created during the run, every writer's (where it
    /// counts them), even when its sample counts hold another writer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_series_created: Option<u64>,
    /// The resolved scenario, secrets redacted.
    pub scenario: serde_json::Value,
}

/// The target's storage for the run's tables, as the database reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StorageSummary {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub bytes_added: u64,
    /// `bytes_added` over the metrics written.
    pub bytes_per_metric: f64,
}

impl ClientSummary {
    /// The client's CPU over the load phase, per 1,000 of the run's `metrics` too, and its
    /// peak RSS.
    pub fn of(usage: &Usage, metrics: u64) -> ClientSummary {
        let mut c = ClientSummary::of_queries(usage);
        c.cpu_us_per_1000_metrics = Some(per_1000_metrics(c.cpu_s, metrics));
        c
    }

    /// The client's CPU and peak RSS over a query run's load phase (no per-metric figure).
    pub fn of_queries(usage: &Usage) -> ClientSummary {
        ClientSummary {
            cpu_user_s: usage.user.as_secs_f64(),
            cpu_system_s: usage.system.as_secs_f64(),
            cpu_s: usage.cpu().as_secs_f64(),
            cpu_us_per_1000_metrics: None,
            peak_rss_bytes: usage.peak_rss_bytes,
            cpu_split_rough: usage.split_is_rough(),
        }
    }
}

/// Client CPU microseconds per 1,000 metrics (0 for none).
pub(crate) fn per_1000_metrics(cpu_s: f64, metrics: u64) -> f64 {
    if metrics > 0 {
        cpu_s * 1e6 / (metrics as f64 / 1000.0)
    } else {
        0.0
    }
}

impl StorageSummary {
    /// What the target's tables grew by over the run, per metric written; `None` where it
    /// was not measured.
    pub fn of(outcome: &RunOutcome, metrics: u64) -> Option<StorageSummary> {
        match &outcome.storage_bytes {
            Some(Ok((before, after))) => {
                let added = after.saturating_sub(*before);
                Some(StorageSummary {
                    bytes_before: *before,
                    bytes_after: *after,
                    bytes_added: added,
                    bytes_per_metric: if metrics > 0 {
                        added as f64 / metrics as f64
                    } else {
                        0.0
                    },
                })
            }
            _ => None,
        }
    }
}

impl Summary {
    pub fn new(
        outcome: &RunOutcome,
        usage: &Usage,
        target: &str,
        workload: &str,
        scenario: serde_json::Value,
    ) -> Self {
        let c = &outcome.counters;
        let totals = Totals::from_counters(c, outcome.elapsed.as_secs_f64());
        // Counts that grew by more than the run sent are not the run's: no figure, and why.
        let stored = match &outcome.stored {
            None => Err(None),
            Some(Err(e)) => Err(Some(e.clone())),
            Some(Ok(s)) => match s.other_writers(c.rows, c.metrics, c.ambiguous_rows) {
                Some(why) => Err(Some(why)),
                None => Ok(s.clone()),
            },
        };
        Summary {
            tsload_version: env!("CARGO_PKG_VERSION").to_string(),
            target: target.to_string(),
            workload: workload.to_string(),
            started_at: humantime::format_rfc3339_millis(outcome.started_at).to_string(),
            elapsed_s: totals.elapsed_s,
            stop_reason: crate::StopReasons::one(outcome.stop_reason),
            fatal_error: outcome.fatal.as_ref().map(|e| e.to_string()),
            rows: c.rows,
            metrics: c.metrics,
            bytes: c.bytes,
            requests: c.requests,
            retries: c.retries,
            failed_requests: c.failed_requests,
            failed_rows: c.failed_rows,
            ambiguous_rows: c.ambiguous_rows,
            recovered_rows: c.recovered_rows,
            unsent_requests: c.unsent_requests,
            unsent_rows: c.unsent_rows,
            late_rows: c.late_rows,
            duplicate_rows: c.duplicate_rows,
            duplicate_metrics: c.duplicate_metrics,
            abandoned_requests: outcome.abandoned_requests,
            offered_rows_per_s: outcome.offered_rows_per_s,
            ledger_run_id: None,
            errors: c
                .errors
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), *v))
                .collect(),
            rows_per_s: totals.rows_per_s(),
            metrics_per_s: totals.metrics_per_s(),
            mb_per_s: totals.mb_per_s(),
            latency: LatencySummary::from_histogram(&outcome.latency),
            service: LatencySummary::from_histogram(&outcome.service),
            client: ClientSummary::of(usage, c.metrics),
            storage: StorageSummary::of(outcome, c.metrics),
            storage_error: match &outcome.storage_bytes {
                Some(Err(e)) => Some(e.clone()),
                _ => None,
            },
            stored: stored.as_ref().ok().cloned(),
            stored_error: stored.as_ref().err().cloned().flatten(),
            server_questions: outcome.server_questions,
            devices_written: outcome.devices_written,
            series_written: outcome.series_written,
            server_series_created: match &outcome.stored {
                Some(Ok(s)) => s.series_created,
                _ => None,
            },
            stored_shortfall: match &stored {
                Ok(s) => s.shortfall(tsload_core::stored::Acknowledged {
                    rows: c.rows,
                    metrics: c.metrics,
                    duplicate_rows: c.duplicate_rows,
                    duplicate_metrics: c.duplicate_metrics,
                }),
                Err(_) => None,
            },
            scenario,
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The counts its rates come from, over [`Summary::elapsed_s`].
    pub fn totals(&self) -> Totals {
        Totals {
            requests: self.requests,
            rows: self.rows,
            metrics: self.metrics,
            bytes: self.bytes,
            elapsed_s: self.elapsed_s,
        }
    }

    /// The human table printed at the end of a run.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        // Which time ran: the data set's span, or the clock (`workload.time = "live"`).
        let time = match self.scenario["workload"]["time"].as_str() {
            Some("live") => " (live time)",
            _ => "",
        };
        let _ = writeln!(
            s,
            "tsload {} | {}{time} -> {} | {:.3} s | stopped: {}",
            self.tsload_version, self.workload, self.target, self.elapsed_s, self.stop_reason
        );
        if let Some(e) = &self.fatal_error {
            let _ = writeln!(s, "FATAL: {e}");
        }
        self.write_counts(&mut s);
        self.write_stored(&mut s);
        self.write_data_set(&mut s);
        self.write_delivery(&mut s);
        latency_table(&mut s, "(ms)", &self.latency, &self.service);
        let _ = writeln!(
            s,
            "  client    {}   {:.2} us per 1,000 metrics   peak RSS {:.1} MiB",
            self.client.cpu_text(),
            self.client.cpu_us_per_1000_metrics.unwrap_or(0.0),
            self.client.peak_rss_bytes as f64 / (1024.0 * 1024.0)
        );
        if let Some(st) = &self.storage {
            let _ = writeln!(
                s,
                "  storage   +{:.1} MiB in the target's tables, as the database reports ({:.2} bytes per metric)",
                st.bytes_added as f64 / (1024.0 * 1024.0),
                st.bytes_per_metric
            );
        }
        if let Some(e) = &self.storage_error {
            let _ = writeln!(s, "  storage   not measured: {e}");
        }
        s
    }

    /// The run's counts: rows, metrics, bytes and requests, with their rates.
    fn write_counts(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "  rows      {:>16}   {:>14} rows/s",
            group(self.rows),
            group(self.rows_per_s.round() as u64)
        );
        let _ = writeln!(
            s,
            "  metrics   {:>16}   {:>14} metrics/s",
            group(self.metrics),
            group(self.metrics_per_s.round() as u64)
        );
        let _ = writeln!(
            s,
            "  bytes     {:>16}   {:>14.2} MB/s",
            group(self.bytes),
            self.mb_per_s
        );
        let _ = writeln!(
            s,
            "  requests  {:>16}   retries {}   failed {} ({} rows)",
            group(self.requests),
            self.retries,
            self.failed_requests,
            self.failed_rows
        );
    }

    /// What the server says it stored, and a shortfall against what was acknowledged.
    fn write_stored(&self, s: &mut String) {
        if let Some(stored) = &self.stored {
            let (n, what) = match (stored.rows, stored.samples) {
                (Some(r), _) => (r, "rows, per the server"),
                (None, Some(n)) => (n, "samples (field values), per the server"),
                (None, None) => (0, "(the server gave no count)"),
            };
            let refused: Vec<String> = stored
                .refused
                .iter()
                .map(|(reason, n)| format!("{} {reason}", group(*n)))
                .collect();
            let refused = if refused.is_empty() {
                String::new()
            } else {
                format!("; refused {}", refused.join(", "))
            };
            // Whose rows the count holds: the run's own devices, or every writer's.
            let whose = if stored.own_devices {
                " (this run's devices)"
            } else if stored.server_wide {
                " (server-wide: other writers are included)"
            } else {
                ""
            };
            // Duplicates it merged are not in its count, and not missing.
            let merged = if stored.merges_duplicates && self.duplicate_rows > 0 {
                format!(
                    "; {} duplicate rows ({} samples) merged into their originals, as it does",
                    group(self.duplicate_rows),
                    group(self.duplicate_metrics)
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  stored    {:>16}   {what}{whose}{refused}{merged}",
                group(n)
            );
        }
        if let Some(why) = &self.stored_shortfall {
            let _ = writeln!(s, "  SHORTFALL {why}");
        }
        if let Some(e) = &self.stored_error {
            let _ = writeln!(s, "  stored    not known: {e}");
        }
    }

    /// The data set's shape as sent: late and duplicate rows, devices, series, and the time the server was asked.
    fn write_data_set(&self, s: &mut String) {
        if self.late_rows > 0 {
            let _ = writeln!(
                s,
                "  late      {:>16}   rows sent after a later row of their device (workload.out_of_order_ratio)",
                group(self.late_rows)
            );
        }
        if self.duplicate_rows > 0 {
            let _ = writeln!(
                s,
                "  duplicate {:>16}   rows repeating the row before them (workload.duplicate_ratio)",
                group(self.duplicate_rows)
            );
        }
        if let Some(n) = self.devices_written {
            let _ = writeln!(
                s,
                "  devices   {:>16}   written: each generation of a host under series churn, or each pod of a host, a device of its own",
                group(n)
            );
        }
        match (self.series_written, self.server_series_created) {
            (Some(w), Some(c)) => {
                let _ = writeln!(
                    s,
                    "  series    {:>16}   written (each device's fields); the server created {} new ones during the run{}",
                    group(w),
                    group(c),
                    match c.cmp(&w) {
                        std::cmp::Ordering::Equal => ", as many",
                        std::cmp::Ordering::Greater => {
                            " (more: the count is server-wide, another writer's are in it)"
                        }
                        std::cmp::Ordering::Less => {
                            " (fewer: it held some already, from an earlier run, or lost some)"
                        }
                    }
                );
            }
            (Some(w), None) => {
                let _ = writeln!(
                    s,
                    "  series    {:>16}   written (each device's fields)",
                    group(w)
                );
            }
            (None, Some(c)) => {
                let _ = writeln!(
                    s,
                    "  series    {:>16}   created during the run, per the server (server-wide)",
                    group(c)
                );
            }
            (None, None) => {}
        }
        if let Some(q) = &self.server_questions {
            let _ = writeln!(
                s,
                "  asked     the server {:.2} s before the clock and {:.2} s after the last write (not in the run's time)",
                q.before_s, q.after_s
            );
        }
    }

    /// How delivery went: rows recovered or ambiguous, the offered rate, abandoned requests, errors.
    fn write_delivery(&self, s: &mut String) {
        if self.recovered_rows > 0 {
            let _ = writeln!(
                s,
                "  recovered {:>16} rows: answer lost, found stored by the ledger, not sent again",
                group(self.recovered_rows)
            );
        }
        if self.ambiguous_rows > 0 {
            let _ = writeln!(
                s,
                "  ambiguous {:>16} rows: sent, answer lost, then retried or given up; the target holds {} to {} rows",
                group(self.ambiguous_rows),
                group(self.rows),
                group(self.rows.saturating_add(self.ambiguous_rows))
            );
        }
        if let Some(offered) = self.offered_rows_per_s {
            let share = if offered > 0.0 {
                100.0 * self.rows_per_s / offered
            } else {
                100.0
            };
            let _ = writeln!(
                s,
                "  offered   {:>16} rows/s   achieved {:.1}%",
                group(offered.round().min(u64::MAX as f64) as u64),
                share
            );
            if self.unsent_requests > 0 {
                let _ = writeln!(
                    s,
                    "  WARNING   the load fell behind the offered rate: {} requests ({} rows) were due but never sent",
                    group(self.unsent_requests),
                    group(self.unsent_rows)
                );
            } else if share < 95.0 {
                let _ = writeln!(
                    s,
                    "  WARNING   the load fell behind the offered rate: requests left late (the wait is in the latency)"
                );
            }
        }
        if self.abandoned_requests > 0 {
            let _ = writeln!(
                s,
                "  WARNING   {} requests were still unanswered the grace after the run's end and were abandoned: their rows may or may not be stored",
                group(self.abandoned_requests)
            );
        }
        if self.errors.is_empty() {
            let _ = writeln!(s, "  errors    none");
        } else {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(s, "  errors    {}", list.join(", "));
        }
    }
}

pub(crate) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// `1234567` -> `1,234,567`.
/// The latency table of a report: a header (ending in `note`), then one row each for the
/// corrected latency and the service time, min to max in milliseconds.
pub(crate) fn latency_table(
    s: &mut String,
    note: &str,
    latency: &LatencySummary,
    service: &LatencySummary,
) {
    let _ = writeln!(
        s,
        "  {:<10}{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}   {note}",
        "", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max"
    );
    for (name, l) in [("latency", latency), ("service", service)] {
        let _ = writeln!(
            s,
            "  {:<10}{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            ms(l.min_ms),
            ms(l.mean_ms),
            ms(l.p50_ms),
            ms(l.p90_ms),
            ms(l.p95_ms),
            ms(l.p99_ms),
            ms(l.p99_9_ms),
            ms(l.p99_99_ms),
            ms(l.max_ms)
        );
    }
}

pub fn group(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests;
