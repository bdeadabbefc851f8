//! The end of a run: each stream's summary printed and put in the JSON report, the RTT
//! and the server's side, the thresholds judged, and the exit code the run earns.

use anyhow::Context as _;
use tsload_core::Workload;
use tsload_core::engine::{EngineError, RunOutcome, StopReason};
use tsload_core::query_engine::QueryOutcome;
use tsload_core::rusage::Usage;
use tsload_probe::ProbeReport;
use tsload_report::query_report::QuerySummary;
use tsload_report::report::Summary;
use tsload_report::run_report::{ExitStatus, RunReport, Streams, ThresholdVerdict};

use super::{Executed, Outcomes};
use crate::exit::{EXIT_INTERRUPTED, EXIT_THRESHOLD};
use crate::progress::RunObserver;
use tsload_outputs::Outputs;
use tsload_scenario::plan::{Plan, RunMode};

/// Everything a finished run left for its reports.
pub(super) struct Finished<'a> {
    /// The whole run's plan (what reports show) and this process's part of it.
    pub whole: &'a Plan,
    pub plan: &'a Plan,
    pub run_id: i64,
    pub outcomes: Outcomes,
    pub probe: Option<ProbeReport>,
    /// A failed network restore, reported after the results.
    pub finish_error: Option<anyhow::Error>,
    /// The whole process's client cost over the run.
    pub usage: Usage,
    pub monitor: Option<tsload_monitor::Monitor>,
    pub observer: &'a RunObserver,
    pub outputs: &'a Outputs,
    pub runtime: &'a tokio::runtime::Runtime,
    pub workload: &'a dyn Workload,
}

/// Turns the streams' outcomes into summaries, noting what failed.
pub(super) struct Reporter<'a> {
    whole: &'a Plan,
    plan: &'a Plan,
    run_id: i64,
    fatal: bool,
    interrupted: bool,
}

impl Reporter<'_> {
    /// The write stream's summary (`label` prefixes its errors), or `None` when it
    /// failed to run.
    pub fn write_summary(
        &mut self,
        o: Result<RunOutcome, EngineError>,
        usage: &Usage,
        label: &str,
    ) -> Option<Summary> {
        let o = match o {
            Err(e) => {
                errln!("error: {label}{e}");
                self.fatal = true;
                return None;
            }
            Ok(o) => o,
        };
        let mut s = Summary::new(
            &o,
            usage,
            self.plan.target.kind(),
            self.plan.workload.kind(),
            self.whole.to_json(),
        );
        s.ledger_run_id = self.plan.target.has_ledger().then_some(self.run_id);
        if let Some(path) = &self.whole.output.raw_latencies
            && label.is_empty()
            && let Err(e) = write_raw_latencies(path, &o.raw_latencies)
        {
            errln!("error: writing {}: {e}", path.display());
            self.fatal = true;
        }
        if let Some(f) = &o.fatal {
            errln!("error: {label}the run stopped on a fatal error: {f}");
            self.fatal = true;
        }
        if let Some(why) = &s.stored_shortfall {
            let old = why.contains("small_timestamp") || why.contains("retention");
            // The keys that place the data in time are the workload kind's own.
            let place = if self.whole.workload.kind() == "custom" {
                "workload.start_timestamp = \"now-1d\""
            } else {
                "workload.start = \"now-1d\" and workload.end = \"now\""
            };
            let hint = if old {
                format!(
                    "; the data set lies outside the server's retention: place it inside with \
                     {place}, or lengthen the retention (VictoriaMetrics: -retentionPeriod)"
                )
            } else {
                String::new()
            };
            errln!(
                "error: {label}{why}: the rows it acknowledged are not all stored (output.verify){hint}"
            );
            self.fatal = true;
        }
        if o.stop_reason == StopReason::Interrupted {
            self.interrupted = true;
        }
        Some(s)
    }

    /// The read stream's summary, or `None` when it failed to run.
    pub fn query_summary(
        &mut self,
        o: Result<QueryOutcome, EngineError>,
        usage: &Usage,
    ) -> Option<QuerySummary> {
        let o = match o {
            Err(e) => {
                errln!("error: queries: {e}");
                self.fatal = true;
                return None;
            }
            Ok(o) => o,
        };
        let kind = self
            .plan
            .query
            .as_ref()
            .map(|q| q.workload.kind())
            .unwrap_or_default();
        let s = QuerySummary::new(
            &o,
            usage,
            self.plan.target.kind(),
            &kind,
            self.whole.to_json(),
        );
        if let Some(f) = &o.stop_error {
            errln!("error: queries: the run stopped: {f}");
            self.fatal = true;
        } else if let Some(why) = failed_queries(&o, self.plan) {
            errln!("error: queries: {why}");
            self.fatal = true;
        }
        if o.stop_reason == StopReason::Interrupted {
            self.interrupted = true;
        }
        Some(s)
    }
}

/// The share of failed requests a query run may have when `query.max_errors` is not set;
/// past it the run fails (the figures describe a server that mostly refused).
pub const DEFAULT_MAX_ERROR_RATIO: f64 = 0.05;

/// Why a query run whose error budget did not stop it still failed: every request failed,
/// or (without `max_errors`) more than [`DEFAULT_MAX_ERROR_RATIO`] of them.
fn failed_queries(o: &QueryOutcome, plan: &Plan) -> Option<String> {
    let failed = o.counters.failed_requests;
    if failed == 0 {
        return None;
    }
    let total = failed.saturating_add(o.counters.requests);
    let first = o
        .first_error
        .as_ref()
        .map(|e| format!("; the first: {e}"))
        .unwrap_or_default();
    let budget = plan.query.as_ref().and_then(|q| q.config.max_errors);
    if o.counters.requests == 0 {
        return Some(format!("every request failed ({failed} of {total}){first}"));
    }
    let share = failed as f64 / total as f64;
    (budget.is_none() && share > DEFAULT_MAX_ERROR_RATIO).then(|| {
        format!(
            "{failed} of {total} requests failed ({:.1}%): more than the {:.0}% a run may \
             lose without `query.max_errors`{first}",
            share * 100.0,
            DEFAULT_MAX_ERROR_RATIO * 100.0
        )
    })
}

/// Prints the reports, writes the JSON report, and decides the exit code.
pub(super) fn finish(f: Finished<'_>) -> anyhow::Result<Executed> {
    let (whole, plan) = (f.whole, f.plan);
    let mut r = Reporter {
        whole,
        plan,
        run_id: f.run_id,
        fatal: false,
        interrupted: false,
    };
    let reported = super::report_streams(f.outcomes, &f.usage, &mut r);
    let streams = reported.as_ref();
    let rtt = match &f.probe {
        Some(p) => {
            outln!("{}", p.table_row("rtt"));
            Some(serde_json::to_value(p)?)
        }
        None => None,
    };
    let server = match f.monitor {
        Some(m) => server_report(m, plan, streams, &f.usage, f.runtime),
        None => None,
    };
    if let Some(e) = &f.observer.hlog_error {
        errln!("error: interval log incomplete: {e}");
    }
    let outputs_error = f.outputs.error();
    if let Some(e) = &outputs_error {
        errln!("error: --out incomplete: {e}");
    }
    // Every threshold, judged before the JSON is written so that it carries the verdicts.
    let broken = judge_thresholds(plan, streams);
    let mut fatal = r.fatal;
    if let Some(e) = &f.finish_error {
        errln!("error: {e:#}");
        fatal = true;
    }
    // The exit code, decided before the reports are written so that they carry it.
    let (code, why) = exit_of(
        plan,
        f.workload.source_error(),
        r.interrupted,
        fatal.then(|| fatal_why(streams, f.finish_error.as_ref())),
        streams,
        &broken,
        f.observer.hlog_error.as_ref().or(outputs_error.as_ref()),
    );
    let mut executed = Executed {
        probe: f.probe,
        code,
        report: None,
    };
    let Some(streams) = reported else {
        // No stream reported: the page says there is nothing to show, as the JSON is left
        // unwritten.
        if let Some(path) = f.outputs.html_path()
            && let Err(e) =
                crate::html::write_run_page(&path, &whole.name, &serde_json::Value::Null)
        {
            errln!("error: --out html={}: {e:#}", path.display());
        }
        return Ok(executed);
    };
    let report = RunReport {
        streams,
        rtt,
        server,
        thresholds: thresholds_of(plan, &broken),
        host: Some(host_name()),
        commit: Some(env!("TSLOAD_COMMIT").to_string()),
        scenario_sha256: Some(whole.scenario_sha256()),
        shard: Some(whole.output.shard.shard),
        exit: Some(ExitStatus {
            // The code the process exits with: a signal's own (130 or 143).
            code: i64::from(if code == EXIT_INTERRUPTED {
                super::signals::interrupted_exit_code()
            } else {
                code
            }),
            why,
        }),
        baseline: None,
        intervals: serde_json::to_value(f.outputs.intervals())?,
    };
    let json = report.to_json()?;
    if let Some(path) = &plan.output.json {
        let text = serde_json::to_string_pretty(&json)?;
        crate::out::write_text(path, &(text + "\n"))
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    if let Some(path) = f.outputs.html_path()
        && let Err(e) = crate::html::write_run_page(&path, &whole.name, &json)
    {
        errln!("error: --out html={}: {e:#}", path.display());
        if executed.code == 0 {
            executed.code = 1;
        }
    }
    executed.report = Some(report);
    Ok(executed)
}

/// The run's exit code and why: a failed data source, a signal, a fatal error, requests
/// abandoned after the end, a broken threshold, an incomplete output, else success.
fn exit_of(
    plan: &Plan,
    source_error: Option<String>,
    interrupted: bool,
    fatal_why: Option<String>,
    streams: Option<&Streams>,
    broken: &[(String, String)],
    incomplete: Option<&String>,
) -> (u8, String) {
    if let Some(e) = source_error {
        errln!("error: the data source failed during the run, which ended early: {e}");
        (1, format!("the data source failed during the run: {e}"))
    } else if interrupted {
        (
            EXIT_INTERRUPTED,
            "stopped by a signal (Ctrl-C or SIGTERM)".to_string(),
        )
    } else if let Some(why) = fatal_why {
        (1, why)
    } else if let Some(n) = abandoned_requests(streams) {
        let why = format!(
            "{n} requests were still unanswered {} after the run's end and were abandoned: \
             their rows may or may not be stored",
            humantime::format_duration(plan.load.drain)
        );
        errln!("error: {why}");
        (1, why)
    } else {
        for (_, b) in broken {
            errln!("FAIL: {b}");
        }
        if let Some((_, b)) = broken.first() {
            (EXIT_THRESHOLD, format!("a --fail-if threshold broke: {b}"))
        } else if let Some(e) = incomplete {
            (1, format!("an output is incomplete: {e}"))
        } else {
            (0, "success".to_string())
        }
    }
}

/// Requests of either stream abandoned the grace after the run's end, if any.
fn abandoned_requests(streams: Option<&Streams>) -> Option<u64> {
    let write = streams
        .and_then(Streams::write)
        .map_or(0, |s| s.abandoned_requests);
    let query = streams
        .and_then(Streams::query)
        .map_or(0, |q| q.abandoned_requests);
    Some(write + query).filter(|n| *n > 0)
}

/// Why a run that hit a fatal error failed, in one line for the reports' `exit.why`.
fn fatal_why(streams: Option<&Streams>, finish_error: Option<&anyhow::Error>) -> String {
    let write = streams.and_then(Streams::write);
    if let Some(e) = write.and_then(|s| s.fatal_error.as_ref()) {
        return format!("the run stopped on a fatal error: {e}");
    }
    if let Some(why) = write.and_then(|s| s.stored_shortfall.as_ref()) {
        return format!("the server stored less than it acknowledged: {why}");
    }
    if let Some(e) = streams
        .and_then(Streams::query)
        .and_then(|q| q.fatal_error.as_ref())
    {
        return format!("the queries stopped on a fatal error: {e}");
    }
    if let Some(e) = finish_error {
        return format!("{e:#}");
    }
    if let Some(n) = abandoned_requests(streams) {
        return format!(
            "{n} requests were still unanswered the grace after the run's end and were abandoned"
        );
    }
    "the run failed: see the errors it printed".to_string()
}

/// The server's side over the run (`[monitor]`): printed, and kept for the JSON report.
fn server_report(
    monitor: tsload_monitor::Monitor,
    plan: &Plan,
    streams: Option<&Streams>,
    usage: &Usage,
    runtime: &tokio::runtime::Runtime,
) -> Option<tsload_monitor::ServerSummary> {
    // The stream the monitor's start sample belongs to: writes, or the queries of a
    // query run.
    let (write, query) = (
        streams.and_then(Streams::write),
        streams.and_then(Streams::query),
    );
    let figures = match (write, query, plan.mode) {
        (_, Some(q), RunMode::Query) => Some((q.elapsed_s, q.requests + q.failed_requests)),
        (Some(w), _, _) => Some((w.elapsed_s, w.metrics)),
        _ => None,
    };
    let run = figures.map(|(elapsed_s, metrics)| tsload_monitor::RunFigures {
        elapsed: std::time::Duration::from_secs_f64(elapsed_s.max(0.0)),
        metrics,
        client_cpu: usage.cpu(),
        client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        server_is_local: true,
    });
    if monitor.watches_disk() {
        flush_target(runtime, &plan.target);
    }
    match run.map(|r| monitor.finish(&r)) {
        Some(Ok(Some(server))) => {
            out!("{}", server_text(&server, plan.mode == RunMode::Query));
            Some(server)
        }
        Some(Err(e)) => {
            errln!("error: [monitor]: {e}");
            None
        }
        Some(Ok(None)) | None => None,
    }
}

/// The report's `thresholds`: each `--fail-if` with its verdict and what broke.
fn thresholds_of(plan: &Plan, broken: &[(String, String)]) -> Vec<ThresholdVerdict> {
    plan.output
        .fail_if
        .iter()
        .map(|t| {
            let failures: Vec<String> = broken
                .iter()
                .filter(|(i, _)| *i == t.to_string())
                .map(|(_, b)| b.clone())
                .collect();
            ThresholdVerdict {
                threshold: t.to_string(),
                passed: failures.is_empty(),
                failures,
            }
        })
        .collect()
}

/// The `--fail-if` thresholds that broke, as (threshold as written, what broke). Each
/// stream is judged on the figures it measures (`Threshold::measured_by`: a mixed run
/// both on latency, the writes alone on metrics/s, the queries alone on statements/s, an
/// open loop alone on achieved_ratio); a figure no stream measured breaks the threshold
/// (validation refuses such a threshold, so that is a stream that did not run). Each
/// threshold that held is printed with its value.
fn judge_thresholds(plan: &Plan, reported: Option<&Streams>) -> Vec<(String, String)> {
    let mut broken = Vec::new();
    let streams = plan.streams();
    let (w, q) = (
        reported.and_then(Streams::write),
        reported.and_then(Streams::query),
    );
    for t in &plan.output.fail_if {
        let both = w.is_some() && q.is_some();
        let mut judgements = Vec::new();
        for stream in streams.iter().filter(|s| t.measured_by(**s)) {
            let judged = match (stream.queries, w, q) {
                (false, Some(s), _) => ("writes", t.check(s)),
                (true, _, Some(s)) => ("queries", t.check_query(s)),
                _ => continue,
            };
            judgements.push(judged);
        }
        if judgements.is_empty() {
            broken.push((
                t.to_string(),
                format!("threshold `{t}` broken: no stream of the run measured it"),
            ));
        }
        for (stream, judged) in judgements {
            let said = |line: String| {
                if both {
                    format!("{stream}: {line}")
                } else {
                    line
                }
            };
            match judged {
                Ok(held) => outln!("PASS: {}", said(held)),
                Err(b) => broken.push((t.to_string(), said(b))),
            }
        }
    }
    broken
}

/// VictoriaMetrics keeps the last seconds of samples in memory: it is asked to write them
/// out (`/internal/force_flush`) before its data directory is measured. Other
/// line-protocol servers answer 404, which is ignored, as is any failure: the figure is
/// then what the disk held.
fn flush_target(runtime: &tokio::runtime::Runtime, target: &tsload_scenario::plan::TargetPlan) {
    runtime.block_on(target.flush());
}

/// The report's server block.
fn server_text(s: &tsload_monitor::ServerSummary, queries: bool) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let per = if queries { "M requests" } else { "M metrics" };
    let mut t = format!(
        "  server    cpu {:.2} s ({:.2} cores)   {:.3} s per {per}   peak RSS {:.1} MiB   client/server cpu {:.2}\n",
        s.cpu_s,
        s.cores_used,
        s.cpu_s_per_million_metrics,
        mib(s.peak_rss_bytes),
        s.client_server_cpu_ratio
    );
    t += &format!(
        "            read {:.1} MiB   written {:.1} MiB",
        mib(s.read_bytes),
        mib(s.write_bytes)
    );
    if let Some(d) = s.disk_bytes_added {
        t += &format!("   data_dir +{:.1} MiB", mib(d));
    }
    if let Some(b) = s.bytes_per_metric {
        t += &format!(" ({b:.2} bytes per metric)");
    }
    let pids = if s.pids.is_empty() {
        String::new()
    } else {
        let shown: Vec<String> = s.pids.iter().take(12).map(i32::to_string).collect();
        let more = s.pids.len().saturating_sub(12);
        format!(
            " ({} process{}: {}{})",
            s.pids.len(),
            if s.pids.len() == 1 { "" } else { "es" },
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    t += &format!(
        "\n            watched: {}{pids}; saturated: {}\n",
        s.watched, s.saturated
    );
    for w in &s.warnings {
        t += &format!("  WARNING   {w}\n");
    }
    t
}

/// `--debug-raw-latencies`: one corrected latency per line, in nanoseconds.
fn write_raw_latencies(path: &std::path::Path, values: &[u64]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(crate::out::create_binary(path)?);
    for v in values {
        writeln!(out, "{v}")?;
    }
    out.flush()
}

/// This machine's name, for reports compared across machines.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
