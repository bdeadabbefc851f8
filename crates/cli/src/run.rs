//! One run of a plan: the network impairment (if any) and its RTT probe, the engine with
//! its progress line and interval log, the final report, and the exit code it earns.
//! `tsload run` does one; `tsload sweep` does one per grid point.

use std::sync::Arc;

use anyhow::Context as _;
use tsload_core::Workload;
use tsload_core::engine::{StopHandle, StopReason};
use tsload_core::report::Summary;
use tsload_core::rusage::Usage;
use tsload_probe::ProbeReport;

use crate::network::{self, ActiveNetwork};
use crate::plan::Plan;
use crate::progress::RunObserver;
use crate::{EXIT_INTERRUPTED, EXIT_THRESHOLD};

/// What one run produced.
pub struct Executed {
    /// The final report (`None` when the run failed before the load started).
    pub summary: Option<Summary>,
    /// The RTT measured before the load, when the plan asked for a probe.
    pub probe: Option<ProbeReport>,
    /// The exit code this run earns on its own.
    pub code: u8,
}

/// Runs `plan` and prints its report (and errors), writing the JSON report and interval
/// log where the plan says.
pub fn execute(plan: &Plan, workload: Arc<dyn Workload>) -> anyhow::Result<Executed> {
    let hlog = match &plan.output.hlog {
        None => None,
        Some(p) => Some((
            p.display().to_string(),
            std::fs::File::create(p)
                .with_context(|| format!("cannot create the interval log {}", p.display()))?,
        )),
    };
    let mut observer = RunObserver::new(
        plan.output.progress,
        plan.load.rows.or(workload.total_rows()),
        hlog,
        format!("tsload {} {}", env!("CARGO_PKG_VERSION"), plan.name),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let stop = StopHandle::new();
    let mut target_plan = plan.clone();
    let result = runtime.block_on(async {
        let ctrl_c_stop = stop.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "\ninterrupted: no new requests; finishing the ones in flight (Ctrl-C again to abort)"
                );
                ctrl_c_stop.stop(StopReason::Interrupted);
                if tokio::signal::ctrl_c().await.is_ok() {
                    // Put back any qdisc this run changed before leaving.
                    for (target, result) in tsload_netem::guard::restore_all().await {
                        if let Err(e) = result {
                            eprintln!("error: restoring {target}: {e}");
                        }
                    }
                    std::process::exit(EXIT_INTERRUPTED as i32);
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
                    if let Some(a) = active.take() {
                        a.finish().await?;
                    }
                    return Err(e.context("measuring the RTT before the load"));
                }
            }
            if let Some(p) = &probe {
                eprint!("{}", p.render_text());
            }
        }
        let outcome =
            crate::targets::run(&target_plan, workload.clone(), stop.clone(), &mut observer).await;
        let description = active.as_ref().map(|a| a.description.clone());
        if let Some(a) = active {
            a.finish().await?;
        }
        watcher.abort();
        Ok::<_, anyhow::Error>((outcome, probe, description))
    });
    observer.finish();
    let (outcome, probe, _network) = result?;
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Executed {
                summary: None,
                probe,
                code: 1,
            });
        }
    };
    let usage = Usage::now().since(&observer.usage_at_start);
    let summary = Summary::new(
        &outcome,
        &usage,
        plan.target.kind(),
        plan.workload.kind(),
        plan.to_json(),
    );
    print!("{}", summary.render_text());
    if let Some(p) = &probe {
        println!("{}", p.table_row("rtt"));
    }
    if let Some(e) = &observer.hlog_error {
        eprintln!("error: interval log incomplete: {e}");
    }
    if let Some(path) = &plan.output.json {
        let mut v = serde_json::to_value(&summary)?;
        if let Some(p) = &probe {
            v["rtt"] = serde_json::to_value(p)?;
        }
        let text = serde_json::to_string_pretty(&v)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    let code = if let Some(e) = workload.source_error() {
        eprintln!("error: the data source failed during the run, which ended early: {e}");
        1
    } else if let Some(fatal) = &outcome.fatal {
        eprintln!("error: the run stopped on a fatal error: {fatal}");
        1
    } else if outcome.stop_reason == StopReason::Interrupted {
        EXIT_INTERRUPTED
    } else {
        let broken: Vec<String> = plan
            .output
            .fail_if
            .iter()
            .filter_map(|t| t.check(&summary).err())
            .collect();
        for b in &broken {
            eprintln!("FAIL: {b}");
        }
        if !broken.is_empty() {
            EXIT_THRESHOLD
        } else if observer.hlog_error.is_some() {
            1
        } else {
            0
        }
    };
    Ok(Executed {
        summary: Some(summary),
        probe,
        code,
    })
}
