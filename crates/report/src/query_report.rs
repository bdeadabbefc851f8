//! The final report of a query run: one [`QuerySummary`] with requests per second (TPS for
//! transactions), statements per second (QPS), errors, latency percentiles per request
//! kind and in all, the data load and client CPU, rendered as a human table or serialized
//! as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::{ClientSummary, LatencySummary, group, latency_table, ms};
use crate::totals::Totals;
use tsload_core::query_engine::{KindOutcome, QueryOutcome};
use tsload_core::recorder::Counters;
use tsload_core::rusage::Usage;

/// One request kind's figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KindSummary {
    pub name: String,
    /// Requests that succeeded.
    pub requests: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Result rows of the successful requests.
    pub rows: u64,
    /// Statements the successful requests executed.
    pub statements: u64,
    /// Successful requests per second of the run.
    pub requests_per_s: f64,
    /// Statements per second of the run.
    pub statements_per_s: f64,
    /// Failed requests by error kind (`rejected`, `empty`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Latency from the intended send time (coordinated-omission corrected).
    pub latency: LatencySummary,
    /// Time from the actual send to the last result row.
    pub service: LatencySummary,
}

/// The whole final report of a query run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuerySummary {
    pub tsload_version: String,
    pub target: String,
    pub workload: String,
    pub started_at: String,
    /// Seconds of the timed load.
    pub elapsed_s: f64,
    /// Seconds of the data load before it (0 without one).
    pub load_s: f64,
    pub load_requests: u64,
    /// Rows the server reported for the data load (e.g. inserted).
    pub load_rows: u64,
    pub load_statements: u64,
    pub stop_reason: crate::StopReasons,
    /// The error that stopped the run (the one that exceeded the error budget). Named as
    /// in the write report.
    pub fatal_error: Option<String>,
    /// Requests that succeeded.
    pub requests: u64,
    pub failed_requests: u64,
    /// Statements the successful requests executed.
    pub statements: u64,
    /// Result rows of the successful requests.
    pub rows: u64,
    /// Failed requests by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Successful requests per second: TPS when requests are transactions.
    pub requests_per_s: f64,
    /// Statements per second: QPS.
    pub statements_per_s: f64,
    pub rows_per_s: f64,
    /// Latency of all kinds together, from the intended send time.
    pub latency: LatencySummary,
    /// Service time of all kinds together.
    pub service: LatencySummary,
    /// One entry per request kind, in the workload's order.
    pub kinds: Vec<KindSummary>,
    /// Client cost.
    pub client: ClientSummary,
    /// Client CPU microseconds per request sent (successful and failed).
    pub cpu_us_per_request: f64,
    /// Open loop: the requests per second asked for; `requests_per_s` is what was
    /// achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_requests_per_s: Option<f64>,
    /// Open loop: `requests_per_s / offered_requests_per_s` (below 0.95 the text warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_ratio: Option<f64>,
    /// Open loop: requests due before the run's deadline that were never sent (a worker
    /// still waiting for earlier answers when its time was up).
    #[serde(default)]
    pub unsent_requests: u64,
    /// Requests still unanswered the grace after the run's end, given up on (counted as
    /// failed).
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub abandoned_requests: u64,
    /// The resolved scenario, secrets redacted.
    pub scenario: serde_json::Value,
}

fn error_names(c: &Counters) -> BTreeMap<String, u64> {
    c.errors
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), *v))
        .collect()
}

/// Achieved over offered requests per second (open loop only; 1 for an offered rate of 0).
pub fn achieved_ratio(requests_per_s: f64, offered: Option<f64>) -> Option<f64> {
    offered.map(|o| if o > 0.0 { requests_per_s / o } else { 1.0 })
}

impl KindSummary {
    pub fn new(kind: &KindOutcome, elapsed_s: f64) -> Self {
        let c = &kind.counters;
        let totals = Totals::from_counters(c, elapsed_s);
        KindSummary {
            name: kind.name.clone(),
            requests: c.requests,
            failed: c.failed_requests,
            rows: c.rows,
            statements: c.metrics,
            requests_per_s: totals.requests_per_s(),
            statements_per_s: totals.metrics_per_s(),
            errors: error_names(c),
            latency: LatencySummary::from_histogram(&kind.latency),
            service: LatencySummary::from_histogram(&kind.service),
        }
    }
}

impl QuerySummary {
    pub fn new(
        outcome: &QueryOutcome,
        usage: &Usage,
        target: &str,
        workload: &str,
        scenario: serde_json::Value,
    ) -> Self {
        let c = &outcome.counters;
        let totals = Totals::from_counters(c, outcome.elapsed.as_secs_f64());
        let cpu_s = usage.cpu().as_secs_f64();
        let sent = c.requests + c.failed_requests;
        QuerySummary {
            tsload_version: env!("CARGO_PKG_VERSION").to_string(),
            target: target.to_string(),
            workload: workload.to_string(),
            started_at: humantime::format_rfc3339_millis(outcome.started_at).to_string(),
            elapsed_s: totals.elapsed_s,
            load_s: outcome.load_elapsed.as_secs_f64(),
            load_requests: outcome.load_counters.requests,
            load_rows: outcome.load_counters.rows,
            load_statements: outcome.load_counters.metrics,
            stop_reason: crate::StopReasons::one(outcome.stop_reason),
            fatal_error: outcome.stop_error.as_ref().map(|e| e.to_string()),
            requests: c.requests,
            failed_requests: c.failed_requests,
            statements: c.metrics,
            rows: c.rows,
            errors: error_names(c),
            requests_per_s: totals.requests_per_s(),
            statements_per_s: totals.metrics_per_s(),
            rows_per_s: totals.rows_per_s(),
            latency: LatencySummary::from_histogram(&outcome.latency),
            service: LatencySummary::from_histogram(&outcome.service),
            kinds: outcome
                .kinds
                .iter()
                .map(|k| KindSummary::new(k, totals.elapsed_s))
                .collect(),
            client: ClientSummary::of_queries(usage),
            cpu_us_per_request: if sent > 0 {
                cpu_s * 1e6 / sent as f64
            } else {
                0.0
            },
            offered_requests_per_s: outcome.offered_requests_per_s,
            achieved_ratio: achieved_ratio(totals.requests_per_s(), outcome.offered_requests_per_s),
            unsent_requests: c.unsent_requests,
            abandoned_requests: outcome.abandoned_requests,
            scenario,
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The counts its rates come from, over [`QuerySummary::elapsed_s`].
    pub fn totals(&self) -> Totals {
        Totals {
            requests: self.requests,
            rows: self.rows,
            metrics: self.statements,
            bytes: 0,
            elapsed_s: self.elapsed_s,
        }
    }

    /// The human table printed at the end of a query run: one line per request kind, then
    /// the totals.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "tsload {} | {} -> {} | {:.3} s | stopped: {}",
            self.tsload_version, self.workload, self.target, self.elapsed_s, self.stop_reason
        );
        if let Some(e) = &self.fatal_error {
            let _ = writeln!(s, "FATAL: {e}");
        }
        if self.load_requests > 0 {
            let _ = writeln!(
                s,
                "  load      {} requests   {} statements   {} rows   in {:.3} s",
                group(self.load_requests),
                group(self.load_statements),
                group(self.load_rows),
                self.load_s
            );
        }
        self.write_kinds(&mut s);
        let _ = writeln!(
            s,
            "  requests   {:>16}   {:>14} requests/s (TPS for transactions)   failed {}",
            group(self.requests),
            per_second(self.requests_per_s),
            group(self.failed_requests)
        );
        let _ = writeln!(
            s,
            "  statements {:>16}   {:>14} statements/s (QPS)",
            group(self.statements),
            per_second(self.statements_per_s)
        );
        let _ = writeln!(
            s,
            "  rows       {:>16}   {:>14} rows/s",
            group(self.rows),
            per_second(self.rows_per_s)
        );
        if let Some(offered) = self.offered_requests_per_s {
            let share = 100.0 * self.achieved_ratio.unwrap_or(1.0);
            let _ = writeln!(
                s,
                "  offered    {:>16}   {:>14} requests/s   achieved {share:.1}%",
                "",
                per_second(offered)
            );
            if self.unsent_requests > 0 {
                let _ = writeln!(
                    s,
                    "  WARNING    the queries fell behind the offered rate: {} requests were due but never sent",
                    group(self.unsent_requests)
                );
            } else if share < 95.0 {
                let _ = writeln!(
                    s,
                    "  WARNING    the queries fell behind the offered rate: requests left late (the wait is in the latency)"
                );
            }
        }
        if self.abandoned_requests > 0 {
            let _ = writeln!(
                s,
                "  WARNING    {} requests were still unanswered the grace after the run's end and were abandoned",
                group(self.abandoned_requests)
            );
        }
        if self.errors.is_empty() {
            let _ = writeln!(s, "  errors     none");
        } else {
            let _ = writeln!(s, "  errors     {}", error_list(&self.errors));
        }
        latency_table(&mut s, "(ms, all kinds)", &self.latency, &self.service);
        let _ = writeln!(
            s,
            "  client    {}   {:.2} us per request   peak RSS {:.1} MiB",
            crate::report::cpu_text(
                self.client.cpu_s,
                self.client.cpu_user_s,
                self.client.cpu_system_s,
                self.client.cpu_split_rough
            ),
            self.cpu_us_per_request,
            self.client.peak_rss_bytes as f64 / (1024.0 * 1024.0)
        );
        s
    }

    /// The table of query kinds: requests, rate, latency percentiles and errors of each,
    /// and the total.
    fn write_kinds(&self, s: &mut String) {
        let width = self
            .kinds
            .iter()
            .map(|k| k.name.chars().count())
            .max()
            .unwrap_or(0)
            .max("total".len());
        let _ = writeln!(
            s,
            "  {:<width$} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}   (latency, ms)",
            "kind", "requests", "req/s", "min", "p50", "p90", "p99", "p99.9", "max", "errors"
        );
        let line = |s: &mut String,
                    name: &str,
                    requests: u64,
                    rate: f64,
                    l: &LatencySummary,
                    failed: u64,
                    errors: &BTreeMap<String, u64>| {
            let _ = write!(
                s,
                "  {:<width$} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
                name,
                group(requests),
                per_second(rate),
                ms(l.min_ms),
                ms(l.p50_ms),
                ms(l.p90_ms),
                ms(l.p99_ms),
                ms(l.p99_9_ms),
                ms(l.max_ms),
                group(failed)
            );
            if !errors.is_empty() {
                let _ = write!(s, "   ({})", error_list(errors));
            }
            s.push('\n');
        };
        for k in &self.kinds {
            line(
                s,
                &k.name,
                k.requests,
                k.requests_per_s,
                &k.latency,
                k.failed,
                &k.errors,
            );
        }
        line(
            s,
            "total",
            self.requests,
            self.requests_per_s,
            &self.latency,
            self.failed_requests,
            &self.errors,
        );
    }
}

/// `rejected 3, empty 2`.
fn error_list(errors: &BTreeMap<String, u64>) -> String {
    let list: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
    list.join(", ")
}

/// A rate: one decimal below 1,000 per second, grouped whole numbers above.
fn per_second(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.1}")
    } else {
        group(v.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use tsload_core::engine::StopReason;
    use tsload_core::recorder::new_histogram;
    use tsload_core::sink::{ErrorKind, SinkError};

    fn kind(
        name: &str,
        requests: u64,
        ms_values: &[u64],
        errors: &[(ErrorKind, u64)],
    ) -> KindOutcome {
        let mut latency = new_histogram();
        let mut service = new_histogram();
        for v in ms_values {
            latency.record(v * 1_000_000).unwrap();
            service.record(v * 500_000).unwrap();
        }
        let mut counters = Counters {
            requests,
            rows: requests * 10,
            metrics: requests * 2,
            ..Default::default()
        };
        for (k, n) in errors {
            counters.errors.insert(*k, *n);
            counters.failed_requests += n;
        }
        KindOutcome {
            name: name.to_string(),
            counters,
            latency,
            service,
        }
    }

    fn outcome() -> QueryOutcome {
        let kinds = vec![
            kind("point-select", 3, &[1, 2, 3], &[]),
            kind(
                "range",
                2,
                &[10, 20],
                &[(ErrorKind::Empty, 4), (ErrorKind::Rejected, 1)],
            ),
        ];
        let mut counters = Counters::default();
        let mut latency = new_histogram();
        let mut service = new_histogram();
        for k in &kinds {
            counters.add(&k.counters);
            latency.add(&k.latency).unwrap();
            service.add(&k.service).unwrap();
        }
        QueryOutcome {
            started_at: SystemTime::UNIX_EPOCH,
            elapsed: Duration::from_secs(2),
            load_elapsed: Duration::from_millis(1500),
            load_counters: Counters {
                requests: 10,
                rows: 1000,
                metrics: 10,
                ..Default::default()
            },
            counters,
            latency,
            service,
            kinds,
            stop_reason: StopReason::Fatal,
            stop_error: Some(SinkError::new(ErrorKind::Rejected, "too many")),
            first_error: None,
            intervals: 2,
            offered_requests_per_s: None,
            abandoned_requests: 0,
        }
    }

    #[test]
    fn summary_sums_kinds_and_computes_rates() {
        let usage = Usage {
            user: Duration::from_millis(30),
            system: Duration::from_millis(20),
            peak_rss_bytes: 1 << 20,
        };
        let s = QuerySummary::new(&outcome(), &usage, "pg", "mix", serde_json::Value::Null);
        assert_eq!(s.requests, 5);
        assert_eq!(s.failed_requests, 5);
        assert_eq!(s.statements, 10);
        assert_eq!(s.rows, 50);
        assert_eq!(s.requests_per_s, 2.5);
        assert_eq!(s.statements_per_s, 5.0);
        assert_eq!(s.errors["empty"], 4);
        assert_eq!(s.error_count(), 5);
        assert_eq!(s.kinds[0].requests_per_s, 1.5);
        assert_eq!(s.kinds[1].failed, 5);
        assert_eq!(s.kinds[1].errors["rejected"], 1);
        assert_eq!(s.latency.count, 5);
        assert!((s.kinds[1].latency.max_ms - 20.0).abs() < 0.1);
        assert_eq!(s.load_rows, 1000);
        assert_eq!(s.load_s, 1.5);
        assert_eq!(s.stop_reason.to_string(), "fatal error");
        assert_eq!(s.fatal_error.as_deref(), Some("rejected: too many"));
        // 50 ms of CPU over 10 requests sent (5 ok, 5 failed).
        assert!((s.cpu_us_per_request - 5000.0).abs() < 1e-6);
        assert!((s.client.cpu_s - 0.05).abs() < 1e-9);
        // 50 ms of CPU: the user/system split is tick-sampled noise, and says so.
        assert!(s.client.cpu_split_rough);
        assert!(
            s.render_text().contains("split rough"),
            "{}",
            s.render_text()
        );
        assert_eq!(s.client.peak_rss_bytes, 1 << 20);
        let json = serde_json::to_string(&s).unwrap();
        let back: QuerySummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["kinds"][1]["name"], "range");
        assert_eq!(v["kinds"][1]["errors"]["empty"], 4);
        assert_eq!(v["statements_per_s"], 5.0);
    }

    /// Every key of `v`, with its path, outside the resolved scenario.
    fn keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    if path.is_empty() && k == "scenario" {
                        continue;
                    }
                    let p = format!("{path}.{k}");
                    out.push(p.clone());
                    keys(v, &p, out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    keys(v, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn the_json_has_no_write_figures_and_keeps_cpu_per_request() {
        // The write report's client block made a query run say e.g.
        // `cpu_us_per_1000_metrics: 1149300`, a figure of metrics a query run never wrote.
        let usage = Usage {
            user: Duration::from_millis(30),
            system: Duration::from_millis(20),
            peak_rss_bytes: 30 << 20,
        };
        let s = QuerySummary::new(&outcome(), &usage, "pg", "mix", serde_json::json!({}));
        let v = serde_json::to_value(&s).unwrap();
        let mut all = Vec::new();
        keys(&v, "", &mut all);
        let write_figures: Vec<&String> = all
            .iter()
            .filter(|k| k.contains("metric") || k.contains("mb_per_s") || k.contains("bytes_per"))
            .collect();
        assert!(write_figures.is_empty(), "{write_figures:?}");
        assert_eq!(v["cpu_us_per_request"], 5000.0);
        let mut client: Vec<&str> = v["client"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        client.sort_unstable();
        assert_eq!(
            client,
            [
                "cpu_s",
                "cpu_split_rough",
                "cpu_system_s",
                "cpu_user_s",
                "peak_rss_bytes"
            ]
        );
        assert_eq!(v["client"]["peak_rss_bytes"], 30 << 20);
    }

    #[test]
    fn open_loop_says_what_was_offered_and_warns_when_it_fell_behind() {
        let mut o = outcome();
        // 5 requests in 2 s against 10 offered per second: 25%.
        o.offered_requests_per_s = Some(10.0);
        o.counters.unsent_requests = 7;
        let s = QuerySummary::new(&o, &Usage::default(), "pg", "mix", serde_json::Value::Null);
        assert_eq!(s.achieved_ratio, Some(0.25));
        assert_eq!(s.unsent_requests, 7);
        let text = s.render_text();
        let offered = text.lines().find(|l| l.starts_with("  offered ")).unwrap();
        assert!(
            offered.ends_with(" 10.0 requests/s   achieved 25.0%"),
            "{text}"
        );
        // The rate lines up with the other rates.
        let requests = text.lines().find(|l| l.starts_with("  requests ")).unwrap();
        assert_eq!(offered.find("requests/s"), requests.find("requests/s"));
        assert!(
            text.contains(
                "WARNING    the queries fell behind the offered rate: 7 requests were due but never sent"
            ),
            "{text}"
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["offered_requests_per_s"], 10.0);
        assert_eq!(v["achieved_ratio"], 0.25);
        assert_eq!(v["unsent_requests"], 7);
        let back: QuerySummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);

        // Late but all sent: the wait is in the latency.
        o.counters.unsent_requests = 0;
        let late = QuerySummary::new(&o, &Usage::default(), "pg", "mix", serde_json::Value::Null);
        assert!(
            late.render_text().contains("requests left late"),
            "{}",
            late.render_text()
        );

        // Kept up: no warning.
        o.offered_requests_per_s = Some(2.56);
        let kept = QuerySummary::new(&o, &Usage::default(), "pg", "mix", serde_json::Value::Null);
        let text = kept.render_text();
        assert!(
            text.contains("achieved 97.7%") && !text.contains("WARNING"),
            "{text}"
        );

        // Closed loop: neither line nor field.
        let closed = QuerySummary::new(
            &outcome(),
            &Usage::default(),
            "pg",
            "mix",
            serde_json::Value::Null,
        );
        assert!(!closed.render_text().contains("offered"));
        let v = serde_json::to_value(&closed).unwrap();
        assert!(v.get("achieved_ratio").is_none() && v.get("offered_requests_per_s").is_none());
    }

    #[test]
    fn text_has_one_line_per_kind_then_totals() {
        let s = QuerySummary::new(
            &outcome(),
            &Usage::default(),
            "pg",
            "mix",
            serde_json::Value::Null,
        );
        let text = s.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("mix -> pg"), "{text}");
        assert!(lines[0].ends_with("stopped: fatal error"), "{text}");
        assert_eq!(lines[1], "FATAL: rejected: too many");
        assert!(
            lines[2].contains("10 requests") && lines[2].contains("1,000 rows"),
            "{text}"
        );
        assert!(lines[3].trim_start().starts_with("kind"), "{text}");
        let point = lines[4];
        assert!(point.trim_start().starts_with("point-select"), "{text}");
        assert!(point.contains(" 1.5 "), "req/s: {point}");
        assert!(point.contains("3.00"), "max: {point}");
        let range = lines[5];
        assert!(range.trim_start().starts_with("range"), "{text}");
        assert!(range.ends_with("(empty 4, rejected 1)"), "{range}");
        assert!(lines[6].trim_start().starts_with("total"), "{text}");
        assert!(
            lines[6].contains("20.0"),
            "max over all kinds: {}",
            lines[6]
        );
        // Columns line up: every table line is as wide up to the error count.
        let at = |l: &str| l.find("   (").unwrap_or(l.len());
        assert_eq!(at(point), at(lines[6]));
        assert!(text.contains("statements/s (QPS)"), "{text}");
        assert!(text.contains("errors     empty 4, rejected 1"), "{text}");
        assert!(text.contains("us per request"), "{text}");
    }
}
