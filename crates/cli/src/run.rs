//! One run of a plan: the network impairment (if any) and its RTT probe, then the write
//! stream (`mode = "write"`), the read stream (`"query"`, optionally after preloading the
//! data set) or both at once (`"mixed"`), with progress and interval log, the final
//! reports, and the exit code they earn. `tsload run` does one; `tsload sweep` one per
//! grid point. The set-up is here; each mode's streams and report are in `write`,
//! `query` and `mixed`, the end of every run in `report`, the signals in `signals`.

mod mixed;
mod query;
mod report;
mod signals;
mod write;

use std::sync::Arc;

use anyhow::Context as _;
use tsload_core::Workload;
use tsload_core::engine::{EngineError, RunOutcome, StopHandle};
use tsload_core::query::QueryWorkload;
use tsload_core::query::ShardedQueries;
use tsload_core::query_engine::QueryOutcome;
use tsload_core::rusage::Usage;
use tsload_core::shard::ShardedWorkload;
use tsload_probe::ProbeReport;
use tsload_report::StreamKind;
use tsload_report::query_report::QuerySummary;
use tsload_report::report::Summary;
use tsload_report::run_report::RunReport;
use tsload_report::verdict::Verdict;

pub use self::signals::interrupted_exit_code;
use crate::network::{self, ActiveNetwork};
use crate::progress::RunObserver;
use crate::queries;
use tsload_outputs::Outputs;
use tsload_scenario::plan::{Plan, ProgressMode, RunMode};

/// What one run produced.
pub struct Executed {
    /// The RTT measured before the load, when the plan asked for a probe.
    pub probe: Option<ProbeReport>,
    /// The exit code this run earns on its own; [`crate::exit::EXIT_INTERRUPTED`] when a signal
    /// stopped it, whichever signal that was (see [`interrupted_exit_code`]).
    pub code: u8,
    /// The run's report (what `--json` writes); `None` when no stream reported.
    pub report: Option<RunReport>,
}

impl Executed {
    /// A run refused before it started (exit 2, no report).
    fn refused() -> Executed {
        Executed {
            probe: None,
            code: crate::exit::EXIT_USAGE,
            report: None,
        }
    }

    /// The write stream's summary (`None` when there was none or it failed to start).
    pub fn summary(&self) -> Option<&Summary> {
        self.report.as_ref()?.streams.write()
    }

    /// The read stream's summary.
    pub fn query_summary(&self) -> Option<&QuerySummary> {
        self.report.as_ref()?.streams.query()
    }

    /// The run's verdict: a run that left no report failed.
    pub fn verdict(&self) -> Verdict {
        match &self.report {
            Some(r) => r.verdict(self.code),
            None => Verdict::no_report(self.code),
        }
    }
}

/// What each mode's streams ended with.
enum Outcomes {
    Write(Result<RunOutcome, EngineError>),
    Query {
        preload: Option<(Result<RunOutcome, EngineError>, Usage)>,
        query: Result<QueryOutcome, EngineError>,
    },
    Mixed {
        write: Result<RunOutcome, EngineError>,
        query: Result<QueryOutcome, EngineError>,
        split: mixed::WriteSplit,
    },
}

/// What every stream of one run shares.
struct Streams<'a> {
    /// The plan with its target as the network left it (pointed at the proxy).
    plan: &'a Plan,
    workload: Arc<dyn Workload>,
    /// This run's id in an exactly-once target's ledger.
    run_id: i64,
    /// One stop handle per stream (a finished preload's limit must not stop the
    /// queries); Ctrl-C and SIGTERM stop them all.
    write_stop: StopHandle,
    query_stop: StopHandle,
    preload_stop: StopHandle,
}

fn observer_for(plan: &Plan, total: Option<u64>) -> anyhow::Result<RunObserver> {
    let hlog = match &plan.output.hlog {
        None => None,
        Some(p) => Some((
            p.display().to_string(),
            crate::out::create_binary(p)
                .with_context(|| format!("cannot create the interval log {}", p.display()))?,
        )),
    };
    Ok(RunObserver::new(
        plan.output.progress,
        total,
        hlog,
        tsload_redact::text(&format!(
            "tsload {} {}",
            env!("CARGO_PKG_VERSION"),
            plan.name
        )),
    ))
}

/// The `--out` files, created, and the `--metrics-addr` listener, bound (its URL printed):
/// before anything runs, so a bad path or a taken port stops the run at once.
fn open_outputs(plan: &Plan) -> anyhow::Result<(Outputs, Option<std::net::TcpListener>)> {
    let outputs = Outputs::open(&plan.output.out)?;
    let listener = match &plan.output.metrics_addr {
        None => None,
        Some(addr) => {
            let (listener, local) = tsload_outputs::bind_metrics(addr)?;
            errln!("metrics: http://{local}/metrics");
            Some(listener)
        }
    };
    Ok((outputs, listener))
}

/// The `[monitor]` sampler, started (`None` when the plan watches no process).
fn start_monitor(plan: &Plan) -> Result<Option<tsload_monitor::Monitor>, String> {
    let Some(m) = &plan.monitor else {
        return Ok(None);
    };
    let Some(selector) = m.selector.clone() else {
        return Ok(None);
    };
    tsload_monitor::Monitor::start(selector, m.data_dir.clone(), plan.load.report_interval)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Puts the plan's impairment in place (pointing `target` at the proxy) and measures
/// the RTT through it; on a failed probe the impairment is taken down again.
async fn start_network(
    plan: &Plan,
    target: &mut tsload_scenario::plan::TargetPlan,
) -> anyhow::Result<(Option<ActiveNetwork>, Option<ProbeReport>)> {
    let Some(net) = &plan.network else {
        return Ok((None, None));
    };
    let active = ActiveNetwork::start(net, target).await?;
    errln!("network: {}", active.description);
    match network::probe(net, target).await {
        Ok(probe) => {
            if let Some(p) = &probe {
                err!("{}", p.render_text());
            }
            Ok((Some(active), probe))
        }
        Err(e) => {
            if let Err(f) = active.finish().await {
                errln!("error: {f:#}");
            }
            Err(e.context("measuring the RTT before the load"))
        }
    }
}

/// Each mode's streams' reports (their lines and the JSON of their summaries), between
/// the run's common head and tail in [`report::finish`].
fn report_streams(
    outcomes: Outcomes,
    usage: &Usage,
    r: &mut report::Reporter,
) -> Option<tsload_report::Streams> {
    match outcomes {
        Outcomes::Write(o) => write::report(o, usage, r),
        Outcomes::Query { preload, query } => query::report(preload, query, usage, r),
        Outcomes::Mixed {
            write,
            query,
            split,
        } => mixed::report(write, query, split, usage, r),
    }
}

/// A process's part of a run's query workload.
type QueryPart = Arc<dyn QueryWorkload>;

/// The workloads this process runs: its shard's part of the write workload and of the
/// query workload (the whole of each unless `--shard`). `Err`: the query workload cannot
/// be built.
fn shard_workloads(
    whole: &Plan,
    plan: &Plan,
    workload: Arc<dyn Workload>,
) -> Result<(Arc<dyn Workload>, Option<QueryPart>), String> {
    let shard = whole.output.shard.shard;
    let workload: Arc<dyn Workload> = if shard.is_whole() {
        workload
    } else {
        Arc::new(ShardedWorkload::new(workload, shard))
    };
    let query_workload = match plan.mode {
        RunMode::Write => None,
        RunMode::Query | RunMode::Mixed => {
            let w = queries::build_part(whole, plan)?;
            Some(if shard.is_whole() {
                w
            } else {
                Arc::new(ShardedQueries::new(w, shard)) as Arc<dyn QueryWorkload>
            })
        }
    };
    Ok((workload, query_workload))
}

/// The run's observers: the main stream's (its progress, outputs and the monitor's start)
/// and a mixed run's query stream's.
fn observers(
    plan: &Plan,
    workload: &dyn Workload,
    outputs: &Outputs,
    starter: Option<tsload_monitor::Starter>,
) -> anyhow::Result<(RunObserver, RunObserver)> {
    let observer = if plan.mode == RunMode::Query {
        // The bar counts requests: full at the query limit, a spinner without one.
        let total = plan.query.as_ref().and_then(|q| q.config.requests);
        observer_for(plan, total)?
            .for_reads()
            .with_outputs(outputs.clone(), StreamKind::Query)
    } else {
        observer_for(plan, plan.load.rows.or(workload.total_rows()))?
            .with_outputs(outputs.clone(), StreamKind::Write)
    }
    .with_monitor(starter);
    let query_observer = RunObserver::new(
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
    .with_outputs(outputs.clone(), StreamKind::Query);
    Ok((observer, query_observer))
}

/// Runs the plan's load against its target; `run_id` identifies this run's batches in
/// the ledger of an exactly-once target (fresh for every run: [`tsload_core::new_run_id`]).
pub async fn write_target(
    plan: &Plan,
    workload: Arc<dyn Workload>,
    stop: StopHandle,
    observer: &mut dyn tsload_core::engine::Observer,
    run_id: i64,
) -> Result<RunOutcome, EngineError> {
    plan.target
        .write(tsload_target::WriteRun {
            workload,
            load: plan.load.clone(),
            stop,
            observer,
            run_id,
        })
        .await
}

/// Runs `plan` and prints its report (and errors), writing the JSON report and interval
/// log where the plan says.
pub fn execute(whole: &Plan, workload: Arc<dyn Workload>) -> anyhow::Result<Executed> {
    // What this process runs: its shard's part (the whole run unless --shard). Reports
    // show the whole run's scenario, the same in every shard's report.
    let plan = &crate::shard::split(whole, &whole.output.shard);
    let (workload, query_workload) = match shard_workloads(whole, plan, workload) {
        Ok(w) => w,
        Err(e) => {
            errln!("error: {e}");
            return Ok(Executed::refused());
        }
    };
    let (outputs, metrics_listener) = match open_outputs(plan) {
        Ok(o) => o,
        Err(e) => {
            errln!("error: {e:#}");
            return Ok(Executed::refused());
        }
    };
    let monitor = match start_monitor(plan) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: [monitor]: {e}");
            return Ok(Executed::refused());
        }
    };
    let starter = monitor.as_ref().map(tsload_monitor::Monitor::starter);
    let (mut observer, mut query_observer) = observers(plan, workload.as_ref(), &outputs, starter)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if let Err(e) = outputs.start(&runtime) {
        errln!("error: {e}");
        return Ok(Executed::refused());
    }
    if let Some(listener) = metrics_listener {
        let _in_runtime = runtime.enter();
        tsload_outputs::serve_metrics(listener, outputs.clone())
            .context("serving --metrics-addr")?;
    }
    let (write_stop, query_stop, preload_stop) =
        (StopHandle::new(), StopHandle::new(), StopHandle::new());
    let run_id = tsload_core::new_run_id();
    let mut target_plan = plan.clone();
    let result = runtime.block_on(async {
        let watcher = signals::watch(vec![
            write_stop.clone(),
            query_stop.clone(),
            preload_stop.clone(),
        ]);
        let (active, probe) = start_network(plan, &mut target_plan.target).await?;
        let streams = Streams {
            plan: &target_plan,
            workload: workload.clone(),
            run_id,
            write_stop,
            query_stop,
            preload_stop,
        };
        let outcomes = match (plan.mode, &plan.query, query_workload) {
            (RunMode::Query, Some(q), Some(qw)) => query::run(&streams, q, qw, &mut observer).await,
            (RunMode::Mixed, Some(q), Some(qw)) => {
                mixed::run(&streams, q, qw, &mut observer, &mut query_observer).await
            }
            _ => write::run(&streams, &mut observer).await,
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
    report::finish(report::Finished {
        whole,
        plan,
        run_id,
        outcomes,
        probe,
        finish_error,
        usage: Usage::now().since(&observer.usage_at_start),
        monitor,
        observer: &observer,
        outputs: &outputs,
        runtime: &runtime,
        workload: workload.as_ref(),
    })
}
