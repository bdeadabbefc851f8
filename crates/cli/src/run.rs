//! One run of a plan: the network impairment (if any) and its RTT probe, then the write
//! stream (`mode = "write"`), the read stream (`"query"`, optionally after preloading the
//! data set) or both at once (`"mixed"`), with progress and interval log, the final
//! reports, and the exit code they earn. `tsload run` does one; `tsload sweep` one per
//! grid point.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use hdrhistogram::Histogram;
use tsload_core::Workload;
use tsload_core::engine::{
    EngineError, IntervalReport, Observer, RunOutcome, StopHandle, StopReason,
};
use tsload_core::query::QueryWorkload;
use tsload_core::query_engine::QueryOutcome;
use tsload_core::query_report::QuerySummary;
use tsload_core::recorder::new_histogram;
use tsload_core::report::{LatencySummary, Summary};
use tsload_core::rusage::Usage;
use tsload_core::shard::{ShardedQueries, ShardedWorkload};
use tsload_probe::ProbeReport;

use crate::network::{self, ActiveNetwork};
use crate::outputs::Outputs;
use crate::plan::{Plan, ProgressMode, QueryWorkloadPlan, RunMode};
use crate::progress::RunObserver;
use crate::{EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_THRESHOLD, queries};

/// The exit code of the signal that stopped a run (0: none did): 130 after SIGINT, 143
/// after SIGTERM. Set by the signal watcher of [`execute`].
static INTERRUPTED_BY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// The exit code for a run (or sweep) stopped by a signal: 128 + the signal's number, as
/// shells expect ([`EXIT_INTERRUPTED`] when no signal was seen).
pub fn interrupted_exit_code() -> u8 {
    match INTERRUPTED_BY.load(std::sync::atomic::Ordering::Relaxed) {
        0 => EXIT_INTERRUPTED,
        code => code,
    }
}

/// What one run produced.
pub struct Executed {
    /// The write stream's report (`None` when there was none or it failed to start).
    pub summary: Option<Summary>,
    /// The read stream's report.
    pub query_summary: Option<QuerySummary>,
    /// The RTT measured before the load, when the plan asked for a probe.
    pub probe: Option<ProbeReport>,
    /// The exit code this run earns on its own; [`EXIT_INTERRUPTED`] when a signal stopped
    /// it, whichever signal that was (see [`interrupted_exit_code`]).
    pub code: u8,
    /// The JSON report (what `--json` writes), `Null` when there is none.
    pub report: serde_json::Value,
}

impl Executed {
    /// A run refused before it started (exit 2, no report).
    fn refused() -> Executed {
        Executed {
            summary: None,
            query_summary: None,
            probe: None,
            code: crate::EXIT_USAGE,
            report: serde_json::Value::Null,
        }
    }
}

/// Write latency of a mixed run, split by whether the queries were running.
#[derive(Default)]
struct WriteSplit {
    alone: Option<Histogram<u64>>,
    with_queries: Option<Histogram<u64>>,
}

/// When the read stream's timed run started and ended (shared by the two streams).
type QueryWindow = std::sync::Arc<std::sync::Mutex<(Option<Instant>, Option<Instant>)>>;

/// Forwards to the CLI's observer and files each write interval's latency under "alone"
/// (wholly before the queries' timed run or after it) or "with queries" (wholly inside);
/// an interval that straddles either edge counts in neither.
struct SplitObserver<'a> {
    inner: &'a mut RunObserver,
    window: QueryWindow,
    write_t0: Option<Instant>,
    split: WriteSplit,
}

impl Observer for SplitObserver<'_> {
    fn on_start(&mut self, started_at: std::time::SystemTime) {
        self.write_t0 = Some(Instant::now());
        self.inner.on_start(started_at);
    }

    fn on_interval(&mut self, r: &IntervalReport) {
        let t0 = self.write_t0.unwrap_or_else(Instant::now);
        let (from, to) = (t0 + r.start, t0 + r.end);
        let (qs, qe) = *self.window.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match (qs, qe) {
            (None, _) => Some(&mut self.split.alone),
            (Some(qs), _) if to <= qs => Some(&mut self.split.alone),
            (_, Some(qe)) if from >= qe => Some(&mut self.split.alone),
            (Some(qs), qe) if from >= qs && qe.is_none_or(|qe| to <= qe) => {
                Some(&mut self.split.with_queries)
            }
            _ => None,
        };
        if let Some(slot) = slot {
            let _ = slot.get_or_insert_with(new_histogram).add(&r.latency);
        }
        self.inner.on_interval(r);
    }
}

/// The read stream's observer in a mixed run: notes when its timed run starts.
struct WindowObserver<'a> {
    inner: &'a mut RunObserver,
    window: QueryWindow,
}

impl Observer for WindowObserver<'_> {
    fn on_start(&mut self, started_at: std::time::SystemTime) {
        if let Ok(mut w) = self.window.lock() {
            w.0 = Some(Instant::now());
        }
        self.inner.on_start(started_at);
    }

    fn on_interval(&mut self, r: &IntervalReport) {
        self.inner.on_interval(r);
    }
}

enum Outcomes {
    Write(Result<RunOutcome, EngineError>),
    Query {
        preload: Option<(Result<RunOutcome, EngineError>, Usage)>,
        query: Result<QueryOutcome, EngineError>,
    },
    Mixed {
        write: Result<RunOutcome, EngineError>,
        query: Result<QueryOutcome, EngineError>,
        split: WriteSplit,
    },
}

fn observer_for(plan: &Plan, total: Option<u64>) -> anyhow::Result<RunObserver> {
    let hlog = match &plan.output.hlog {
        None => None,
        Some(p) => Some((
            p.display().to_string(),
            std::fs::File::create(p)
                .with_context(|| format!("cannot create the interval log {}", p.display()))?,
        )),
    };
    Ok(RunObserver::new(
        plan.output.progress,
        total,
        hlog,
        format!("tsload {} {}", env!("CARGO_PKG_VERSION"), plan.name),
    ))
}

/// The `--out` files, created, and the `--metrics-addr` listener, bound (its URL printed):
/// before anything runs, so a bad path or a taken port stops the run at once.
fn open_outputs(plan: &Plan) -> anyhow::Result<(Outputs, Option<std::net::TcpListener>)> {
    let outputs = Outputs::open(&plan.output.out)?;
    let listener = match &plan.output.metrics_addr {
        None => None,
        Some(addr) => {
            let (listener, local) =
                crate::outputs::bind_metrics(addr).map_err(anyhow::Error::msg)?;
            eprintln!("metrics: http://{local}/metrics");
            Some(listener)
        }
    };
    Ok((outputs, listener))
}

/// Runs `plan` and prints its report (and errors), writing the JSON report and interval
/// log where the plan says.
pub fn execute(whole: &Plan, workload: Arc<dyn Workload>) -> anyhow::Result<Executed> {
    // What this process runs: its shard's part (the whole run unless --shard). Reports
    // show the whole run's scenario, the same in every shard's report.
    let shard = whole.output.shard.shard;
    let plan = &crate::shard::split(whole, &whole.output.shard);
    let workload: Arc<dyn Workload> = if shard.is_whole() {
        workload
    } else {
        Arc::new(ShardedWorkload::new(workload, shard))
    };
    let query_workload = match plan.mode {
        RunMode::Write => None,
        RunMode::Query | RunMode::Mixed => match queries::build(plan) {
            Ok(w) if shard.is_whole() => Some(w),
            Ok(w) => Some(Arc::new(ShardedQueries::new(w, shard)) as Arc<dyn QueryWorkload>),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Executed::refused());
            }
        },
    };
    let (outputs, metrics_listener) = match open_outputs(plan) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(Executed::refused());
        }
    };
    let selected = plan
        .monitor
        .as_ref()
        .and_then(|m| m.selector.clone().map(|s| (m, s)));
    let monitor = match selected {
        None => None,
        Some((m, selector)) => match tsload_monitor::Monitor::start(
            selector,
            m.data_dir.clone(),
            plan.load.report_interval,
        ) {
            Ok(monitor) => Some(monitor),
            Err(e) => {
                eprintln!("error: [monitor]: {e}");
                return Ok(Executed::refused());
            }
        },
    };
    let starter = monitor.as_ref().map(tsload_monitor::Monitor::starter);
    let mut observer = if plan.mode == RunMode::Query {
        // The bar counts requests: full at the query limit, a spinner without one.
        let total = plan.query.as_ref().and_then(|q| q.config.requests);
        observer_for(plan, total)?
            .for_reads()
            .with_outputs(outputs.clone(), "query")
    } else {
        observer_for(plan, plan.load.rows.or(workload.total_rows()))?
            .with_outputs(outputs.clone(), "write")
    }
    .with_monitor(starter);
    let mut query_observer = RunObserver::new(
        match plan.output.progress {
            ProgressMode::None => ProgressMode::None,
            _ => ProgressMode::Plain,
        },
        None,
        None,
        String::new(),
    )
    .for_reads()
    .with_prefix("query ")
    .with_outputs(outputs.clone(), "query");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    outputs.start(&runtime);
    if let Some(listener) = metrics_listener {
        let _in_runtime = runtime.enter();
        crate::outputs::serve_metrics(listener, outputs.clone())
            .context("serving --metrics-addr")?;
    }
    // One stop handle per stream (a finished preload's limit must not stop the queries);
    // Ctrl-C and SIGTERM stop them all.
    let stop = StopHandle::new();
    let query_stop = StopHandle::new();
    let preload_stop = StopHandle::new();
    let mut target_plan = plan.clone();
    // This run's id in an exactly-once target's ledger.
    let run_id = tsload_core::new_run_id();
    let result = runtime.block_on(async {
        let handles = [stop.clone(), query_stop.clone(), preload_stop.clone()];
        let watcher = tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let terminated = async {
                match term.as_mut() {
                    Some(t) => t.recv().await,
                    None => std::future::pending().await,
                }
            };
            // The exit code each signal earns.
            let first = tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok().then_some(EXIT_INTERRUPTED),
                _ = terminated => Some(EXIT_TERMINATED),
            };
            if let Some(code) = first {
                INTERRUPTED_BY.store(code, std::sync::atomic::Ordering::Relaxed);
                eprintln!(
                    "\ninterrupted: no new requests; finishing the ones in flight (Ctrl-C again to abort)"
                );
                for h in &handles {
                    h.stop(StopReason::Interrupted);
                }
                let again = tokio::select! {
                    r = tokio::signal::ctrl_c() => r.is_ok().then_some(EXIT_INTERRUPTED),
                    _ = async {
                        match term.as_mut() {
                            Some(t) => t.recv().await,
                            None => std::future::pending().await,
                        }
                    } => Some(EXIT_TERMINATED),
                };
                if let Some(code) = again {
                    // Put back any qdisc this run changed before leaving.
                    for (target, result) in tsload_netem::guard::restore_all().await {
                        if let Err(e) = result {
                            eprintln!("error: restoring {target}: {e}");
                        }
                    }
                    std::process::exit(i32::from(code));
                }
            }
        });
        let mut active = None;
        let mut probe = None;
        if let Some(net) = &plan.network {
            let a = ActiveNetwork::start(net, &mut target_plan.target).await?;
            eprintln!("network: {}", a.description);
            active = Some(a);
            match network::probe(net, &target_plan.target).await {
                Ok(p) => probe = p,
                Err(e) => {
                    if let Some(a) = active.take()
                        && let Err(f) = a.finish().await
                    {
                        eprintln!("error: {f:#}");
                    }
                    return Err(e.context("measuring the RTT before the load"));
                }
            }
            if let Some(p) = &probe {
                eprint!("{}", p.render_text());
            }
        }
        let outcomes = match (plan.mode, &plan.query, query_workload) {
            (RunMode::Query, Some(q), Some(qw)) => {
                let preload = match &q.workload {
                    QueryWorkloadPlan::Tsbs { preload: true, .. } => {
                        eprintln!("preload: writing the data set the queries read");
                        let mut quiet = RunObserver::new(ProgressMode::None, None, None, String::new());
                        let o = crate::targets::run(&target_plan, workload.clone(), preload_stop.clone(), &mut quiet, run_id)
                            .await;
                        // The preload's own client cost (the query run's is counted apart).
                        Some((o, Usage::now().since(&quiet.usage_at_start)))
                    }
                    _ => None,
                };
                let preload_failed = matches!(&preload, Some((Err(_), _)))
                    || matches!(&preload, Some((Ok(o), _)) if o.fatal.is_some());
                let interrupted = preload_stop.reason() == Some(StopReason::Interrupted);
                let query = if preload_failed || interrupted {
                    Err(EngineError::Config("the preload did not complete".into()))
                } else {
                    queries::run(
                        &target_plan.target,
                        q,
                        qw,
                        q.config.clone(),
                        query_stop.clone(),
                        &mut observer,
                    )
                    .await
                };
                Outcomes::Query { preload, query }
            }
            (RunMode::Mixed, Some(q), Some(qw)) => {
                let delay = q.start_after.unwrap_or_default();
                let window = QueryWindow::default();
                let mut split_observer = SplitObserver {
                    inner: &mut observer,
                    window: window.clone(),
                    write_t0: None,
                    split: WriteSplit::default(),
                };
                let mut window_observer = WindowObserver {
                    inner: &mut query_observer,
                    window: window.clone(),
                };
                let write_stop = stop.clone();
                let qs = query_stop.clone();
                let own_limit = q.config.duration.is_some() || q.config.requests.is_some();
                let target = target_plan.target.clone();
                let write = async {
                    let r = crate::targets::run(&target_plan, workload.clone(), write_stop, &mut split_observer, run_id).await;
                    if !own_limit {
                        // Without a limit of its own, the read stream ends with the writes.
                        qs.stop(StopReason::DataEnd);
                    }
                    r
                };
                let read = async {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = query_stop.stopped() => {}
                    }
                    if query_stop.is_stopped() {
                        return Err(EngineError::Config("the writes ended before the queries were to start".into()));
                    }
                    let r = queries::run(&target, q, qw, q.config.clone(), query_stop.clone(), &mut window_observer).await;
                    if let Ok(mut w) = window.lock() {
                        w.1 = Some(Instant::now());
                    }
                    r
                };
                let (write, query) = tokio::join!(write, read);
                let split = split_observer.split;
                Outcomes::Mixed { write, query, split }
            }
            _ => Outcomes::Write(
                crate::targets::run(&target_plan, workload.clone(), stop.clone(), &mut observer, run_id).await,
            ),
        };
        // A failed restore must not throw away the run's results: reported after them.
        let finish_error = match active {
            Some(a) => a.finish().await.err(),
            None => None,
        };
        watcher.abort();
        Ok::<_, anyhow::Error>((outcomes, probe, finish_error))
    });
    observer.finish();
    query_observer.finish();
    outputs.close(&runtime);
    let (outcomes, probe, finish_error) = result?;
    let usage = Usage::now().since(&observer.usage_at_start);
    let mut executed = Executed {
        summary: None,
        query_summary: None,
        probe,
        code: 0,
        report: serde_json::Value::Null,
    };
    let mut json = serde_json::Map::new();
    let fatal = std::cell::Cell::new(false);
    let interrupted = std::cell::Cell::new(false);
    let write_summary =
        |o: Result<RunOutcome, EngineError>, usage: &Usage, label: &str| -> Option<Summary> {
            match o {
                Err(e) => {
                    eprintln!("error: {label}{e}");
                    fatal.set(true);
                    None
                }
                Ok(o) => {
                    let mut s = Summary::new(
                        &o,
                        usage,
                        plan.target.kind(),
                        plan.workload.kind(),
                        whole.to_json(),
                    );
                    s.ledger_run_id = plan.target.has_ledger().then_some(run_id);
                    if let Some(path) = &whole.output.raw_latencies
                        && label.is_empty()
                        && let Err(e) = write_raw_latencies(path, &o.raw_latencies)
                    {
                        eprintln!("error: writing {}: {e}", path.display());
                        fatal.set(true);
                    }
                    if let Some(f) = &o.fatal {
                        eprintln!("error: {label}the run stopped on a fatal error: {f}");
                        fatal.set(true);
                    }
                    if o.stop_reason == StopReason::Interrupted {
                        interrupted.set(true);
                    }
                    Some(s)
                }
            }
        };
    let query_kind = plan
        .query
        .as_ref()
        .map(|q| q.workload.kind())
        .unwrap_or_default();
    let query_summary = |o: Result<QueryOutcome, EngineError>| -> Option<QuerySummary> {
        match o {
            Err(e) => {
                eprintln!("error: queries: {e}");
                fatal.set(true);
                None
            }
            Ok(o) => {
                let s =
                    QuerySummary::new(&o, &usage, plan.target.kind(), &query_kind, whole.to_json());
                if let Some(f) = &o.stop_error {
                    eprintln!("error: queries: the run stopped: {f}");
                    fatal.set(true);
                }
                if o.stop_reason == StopReason::Interrupted {
                    interrupted.set(true);
                }
                Some(s)
            }
        }
    };
    match outcomes {
        Outcomes::Write(o) => {
            executed.summary = write_summary(o, &usage, "");
            if let Some(s) = &executed.summary {
                print!("{}", s.render_text());
                json = to_map(serde_json::to_value(s)?);
            }
        }
        Outcomes::Query { preload, query } => {
            if let Some((p, preload_usage)) = preload
                && let Some(s) = write_summary(p, &preload_usage, "preload: ")
            {
                println!(
                    "preload: {} rows in {:.3} s ({:.0} rows/s)",
                    s.rows, s.elapsed_s, s.rows_per_s
                );
                json.insert("preload".into(), serde_json::to_value(&s)?);
            }
            executed.query_summary = query_summary(query);
            if let Some(s) = &executed.query_summary {
                print!("{}", s.render_text());
                let mut m = to_map(serde_json::to_value(s)?);
                m.extend(json);
                json = m;
            }
        }
        Outcomes::Mixed {
            write,
            query,
            split,
        } => {
            executed.summary = write_summary(write, &usage, "writes: ");
            executed.query_summary = query_summary(query);
            if let Some(s) = &executed.summary {
                println!("=== writes ===");
                print!("{}", s.render_text());
                json.insert("write".into(), serde_json::to_value(s)?);
            }
            let alone = split.alone.as_ref().map(LatencySummary::from_histogram);
            let with = split
                .with_queries
                .as_ref()
                .map(LatencySummary::from_histogram);
            if let (Some(a), Some(w)) = (&alone, &with) {
                println!(
                    "  write latency     min      mean       p50       p90       p99     p99.9       max   (ms)"
                );
                for (label, l) in [("alone", a), ("with queries", w)] {
                    println!(
                        "  {label:<14}{:>8.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}   (n={})",
                        l.min_ms,
                        l.mean_ms,
                        l.p50_ms,
                        l.p90_ms,
                        l.p99_ms,
                        l.p99_9_ms,
                        l.max_ms,
                        l.count
                    );
                }
            }
            json.insert("write_latency_alone".into(), serde_json::to_value(&alone)?);
            json.insert(
                "write_latency_with_queries".into(),
                serde_json::to_value(&with)?,
            );
            if let Some(s) = &executed.query_summary {
                println!("=== queries ===");
                print!("{}", s.render_text());
                json.insert("query".into(), serde_json::to_value(s)?);
            }
            println!(
                "  (client cpu in both reports: the whole process, writes and queries together)"
            );
            json.insert("mode".into(), "mixed".into());
        }
    }
    if let Some(p) = &executed.probe {
        println!("{}", p.table_row("rtt"));
        json.insert("rtt".into(), serde_json::to_value(p)?);
    }
    if let Some(m) = monitor {
        // The stream the monitor's start sample belongs to: writes, or the queries of a
        // query run.
        let figures = match (&executed.summary, &executed.query_summary, plan.mode) {
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
        if m.watches_disk() {
            flush_target(&runtime, &plan.target);
        }
        match run.map(|r| m.finish(&r)) {
            Some(Ok(Some(server))) => {
                print!("{}", server_text(&server, plan.mode == RunMode::Query));
                json.insert("server".into(), serde_json::to_value(&server)?);
            }
            Some(Err(e)) => eprintln!("error: [monitor]: {e}"),
            Some(Ok(None)) | None => {}
        }
    }
    if let Some(e) = &observer.hlog_error {
        eprintln!("error: interval log incomplete: {e}");
    }
    let outputs_error = outputs.error();
    if let Some(e) = &outputs_error {
        eprintln!("error: --out incomplete: {e}");
    }
    // Every threshold, judged before the JSON is written so that it carries the verdicts.
    let broken = judge_thresholds(plan, &executed);
    if !json.is_empty() {
        json.insert(
            "thresholds".into(),
            serde_json::Value::Array(
                plan.output
                    .fail_if
                    .iter()
                    .map(|t| {
                        let failures: Vec<&String> = broken
                            .iter()
                            .filter(|(i, _)| *i == t.to_string())
                            .map(|(_, b)| b)
                            .collect();
                        serde_json::json!({
                            "threshold": t.to_string(),
                            "passed": failures.is_empty(),
                            "failures": failures,
                        })
                    })
                    .collect(),
            ),
        );
        json.insert("host".into(), host_name().into());
        json.insert("commit".into(), env!("TSLOAD_COMMIT").into());
        json.insert("scenario_sha256".into(), scenario_hash(whole).into());
        json.insert("shard".into(), serde_json::to_value(shard)?);
    }
    if !json.is_empty() {
        executed.report = serde_json::Value::Object(json.clone());
    }
    if let Some(path) = &plan.output.json
        && !json.is_empty()
    {
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(json))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    if let Some(e) = &finish_error {
        eprintln!("error: {e:#}");
        fatal.set(true);
    }
    executed.code = if let Some(e) = workload.source_error() {
        eprintln!("error: the data source failed during the run, which ended early: {e}");
        1
    } else if interrupted.get() {
        EXIT_INTERRUPTED
    } else if fatal.get() {
        1
    } else {
        let broken: Vec<String> = broken.into_iter().map(|(_, b)| b).collect();
        for b in &broken {
            eprintln!("FAIL: {b}");
        }
        if !broken.is_empty() {
            EXIT_THRESHOLD
        } else if observer.hlog_error.is_some() || outputs_error.is_some() {
            1
        } else {
            0
        }
    };
    Ok(executed)
}

/// The `--fail-if` thresholds that broke, as (threshold as written, what broke). Each
/// stream is judged on the figures it measures (a mixed run: both on latency, the writes
/// alone on metrics/s, the queries alone on statements/s); a figure neither measures
/// breaks the threshold.
fn judge_thresholds(plan: &Plan, executed: &Executed) -> Vec<(String, String)> {
    let mut broken = Vec::new();
    for t in &plan.output.fail_if {
        let (w, q) = (&executed.summary, &executed.query_summary);
        let mut judged = false;
        if let Some(s) = w
            && (t.measured_by_writes() || q.is_none())
        {
            judged = true;
            if let Err(b) = t.check(s) {
                broken.push((
                    t.to_string(),
                    if q.is_some() {
                        format!("writes: {b}")
                    } else {
                        b
                    },
                ));
            }
        }
        if let Some(s) = q
            && (t.measured_by_queries() || !judged)
            && let Err(b) = t.check_query(s)
        {
            broken.push((
                t.to_string(),
                if w.is_some() {
                    format!("queries: {b}")
                } else {
                    b
                },
            ));
        }
    }
    broken
}

/// This machine's name, for reports compared across machines.
/// VictoriaMetrics keeps the last seconds of samples in memory: it is asked to write them
/// out (`/internal/force_flush`) before its data directory is measured. Other
/// line-protocol servers answer 404, which is ignored, as is any failure: the figure is
/// then what the disk held.
fn flush_target(runtime: &tokio::runtime::Runtime, target: &crate::plan::TargetPlan) {
    let crate::plan::TargetPlan::Influx(p) = target else {
        return;
    };
    let Ok(tls) = tsload_tls::client_config(&p.tls) else {
        return;
    };
    let url = format!("{}/internal/force_flush", p.url.trim_end_matches('/'));
    runtime.block_on(async {
        if let Ok(client) = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .tls_backend_preconfigured(tls)
            .build()
        {
            let _ = client.get(url).send().await;
        }
    });
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
    t += &format!(
        "\n            watched: {}; saturated: {}\n",
        s.watched, s.saturated
    );
    t
}

/// `--debug-raw-latencies`: one corrected latency per line, in nanoseconds.
fn write_raw_latencies(path: &std::path::Path, values: &[u64]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for v in values {
        writeln!(out, "{v}")?;
    }
    out.flush()
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// SHA-256 of the resolved scenario (every default filled in, secrets redacted, keys in
/// order; without its name, description, file and outputs): two runs with the same hash
/// ran the same workload, target, load, network and queries, however it was written.
fn scenario_hash(plan: &Plan) -> String {
    use sha2::Digest as _;
    let mut resolved = plan.to_json();
    // Labels, where the file lay and where the results go are not part of what ran.
    if let Some(m) = resolved.as_object_mut() {
        for key in ["name", "description", "source", "output"] {
            m.remove(key);
        }
    }
    let text = serde_json::to_string(&resolved).unwrap_or_default();
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn to_map(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}
