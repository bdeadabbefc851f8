//! Target dispatch: the one place that knows every sink crate. The registry of kinds
//! defined through `tsload_target` ([`KINDS`]).

use std::sync::Arc;

use tsload_core::Workload;
use tsload_core::engine::{EngineError, Observer, RunOutcome, StopHandle};

use crate::plan::Plan;

/// Every kind defined in its own crate through `tsload_target::TargetKind`: adding one is
/// a line here.
pub static KINDS: &[&dyn tsload_target::TargetKind] = &[
    &tsload_sink_sqlite::KIND,
    &tsload_sink_influx::KIND,
    &tsload_sink_postgres::KIND,
    &tsload_sink_mysql::KIND,
    #[cfg(feature = "tdengine")]
    &tsload_sink_tdengine::KIND,
    &tsload_sink_prometheus::KIND,
    &tsload_sink_clickhouse::KIND,
    &tsload_target::NullKind,
];

/// The kind of a scenario that names none: the embedded default.
pub const DEFAULT_KIND: &str = "sqlite";

/// A kind this build was made without: its name and URL schemes, and how to get it.
#[derive(Debug)]
pub struct NotBuilt {
    pub name: &'static str,
    pub url_schemes: &'static [&'static str],
    pub why: &'static str,
}

/// Kinds this build was made without: choosing one says so.
pub static NOT_BUILT: &[NotBuilt] = &[
    #[cfg(not(feature = "tdengine"))]
    NotBuilt {
        name: "tdengine",
        url_schemes: &["ws", "wss", "taos+ws", "taos+wss"],
        why: "it was built without the cargo feature `tdengine`; rebuild with default \
              features, e.g. `cargo install --path crates/cli`",
    },
];

/// The registered kind named `name`.
pub fn kind(name: &str) -> Option<&'static dyn tsload_target::TargetKind> {
    KINDS.iter().copied().find(|k| k.name() == name)
}

/// Runs the plan's load against its target; `run_id` identifies this run's batches in
/// the ledger of an exactly-once target (fresh for every run: [`tsload_core::new_run_id`]).
pub async fn run(
    plan: &Plan,
    workload: Arc<dyn Workload>,
    stop: StopHandle,
    observer: &mut dyn Observer,
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
