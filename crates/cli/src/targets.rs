//! Target dispatch: the one place that knows every sink crate. The registry of kinds
//! defined through `tsload_target` ([`KINDS`]); the kinds not moved there yet are matched
//! here by hand.

use std::sync::Arc;

use tsload_core::Workload;
use tsload_core::engine::{self, EngineError, Observer, RunOutcome, StopHandle};
use tsload_sink_influx::{Api, InfluxConfig, InfluxSink, Precision};
#[cfg(feature = "tdengine")]
use tsload_sink_tdengine::TdengineSink;

use crate::plan::{InfluxPlan, Plan, TargetPlan};

/// Every kind defined in its own crate through `tsload_target::TargetKind`: adding one is
/// a line here.
pub static KINDS: &[&dyn tsload_target::TargetKind] = &[
    &tsload_target::NullKind,
    &tsload_sink_sqlite::KIND,
    &tsload_sink_postgres::KIND,
    &tsload_sink_mysql::KIND,
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
    let load = plan.load.clone();
    match &plan.target {
        TargetPlan::Registered(t) => {
            t.write(tsload_target::WriteRun {
                workload,
                load,
                stop,
                observer,
                run_id,
            })
            .await
        }
        #[cfg(feature = "tdengine")]
        TargetPlan::Tdengine(cfg) => {
            let sink = TdengineSink::new(cfg.clone()).map_err(EngineError::Prepare)?;
            engine::run(workload, Arc::new(sink), load, stop, observer).await
        }
        TargetPlan::Influx(i) => {
            let cfg = influx_config(i);
            let sink = InfluxSink::new(cfg).map_err(EngineError::Prepare)?;
            engine::run(workload, Arc::new(sink), load, stop, observer).await
        }
    }
}

/// The HTTP target's settings in the sink's terms.
pub fn influx_config(i: &InfluxPlan) -> InfluxConfig {
    InfluxConfig {
        url: i.url.clone(),
        api: if i.api == "v2" {
            Api::V2 {
                org: i.org.clone(),
                bucket: i.bucket.clone(),
                token: i.token.clone(),
            }
        } else {
            Api::V1 {
                db: i.db.clone(),
                rp: i.rp.clone(),
                user: i.user.clone(),
                password: i.password.clone(),
            }
        },
        precision: match i.precision.as_str() {
            "us" => Precision::Us,
            "ms" => Precision::Ms,
            "s" => Precision::S,
            _ => Precision::Ns,
        },
        gzip: i.gzip,
        create_database: i.create_database,
        timeout: i.timeout,
        tls: i.tls.clone(),
        connect_to: i.connect_to,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sections::TARGET;

    /// While the reference is still rendered from `scenario/sections.rs`, a registered
    /// kind's own key list and the reference's must name the same keys with the same
    /// types.
    #[test]
    fn each_registered_kind_reads_the_keys_the_reference_gives_it() {
        for kind in KINDS {
            let mut own: Vec<&str> = kind.keys().iter().map(|k| k.name).collect();
            let mut reference = TARGET.keys_of(kind.name());
            own.sort_unstable();
            reference.sort_unstable();
            assert_eq!(own, reference, "kind {}", kind.name());
            for key in kind.keys() {
                let doc = TARGET.keys.iter().find(|k| k.name == key.name).unwrap();
                if doc.kinds == [kind.name()] {
                    assert_eq!(doc.ty, key.ty, "{}.{}", kind.name(), key.name);
                }
            }
        }
    }
}
