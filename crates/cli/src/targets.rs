//! Target dispatch: the one place that knows every sink crate. A new database is one new
//! crate and one match arm here.

use std::sync::Arc;

use tsload_core::engine::{self, EngineError, Observer, RunOutcome, StopHandle};
use tsload_core::{NullSink, Workload};
use tsload_sink_influx::{Api, InfluxConfig, InfluxSink, Precision};
use tsload_sink_mysql::MysqlSink;
use tsload_sink_postgres::PostgresSink;
use tsload_sink_sqlite::{JournalMode, SqliteConfig, SqliteSink, Synchronous};
#[cfg(feature = "tdengine")]
use tsload_sink_tdengine::TdengineSink;

use crate::plan::{InfluxPlan, Plan, TargetPlan};

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
        TargetPlan::Null => engine::run(workload, Arc::new(NullSink), load, stop, observer).await,
        TargetPlan::Postgres(cfg) => {
            let mut cfg = cfg.clone();
            cfg.run_id = run_id;
            cfg.connections = (load.workers as u64).saturating_mul(load.in_flight as u64);
            let sink = PostgresSink::new(cfg).map_err(EngineError::Prepare)?;
            engine::run(workload, Arc::new(sink), load, stop, observer).await
        }
        TargetPlan::Mysql(cfg) => {
            let mut cfg = cfg.clone();
            cfg.run_id = run_id;
            cfg.connections = (load.workers as u64).saturating_mul(load.in_flight as u64);
            let sink = MysqlSink::new(cfg).map_err(EngineError::Prepare)?;
            engine::run(workload, Arc::new(sink), load, stop, observer).await
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
        TargetPlan::Sqlite { .. } => {
            let mut cfg = sqlite_config(&plan.target).expect("a sqlite target");
            cfg.run_id = run_id;
            engine::run(
                workload,
                Arc::new(SqliteSink::new(cfg)),
                load,
                stop,
                observer,
            )
            .await
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

/// The SQLite target's settings in the sink's terms (`None` for other targets).
pub fn sqlite_config(target: &TargetPlan) -> Option<SqliteConfig> {
    let TargetPlan::Sqlite {
        url,
        drop_existing,
        synchronous,
        journal_mode,
        busy_timeout,
        delivery,
    } = target
    else {
        return None;
    };
    Some(SqliteConfig {
        url: url.clone(),
        drop_existing: *drop_existing,
        synchronous: match synchronous.as_str() {
            "off" => Synchronous::Off,
            "full" => Synchronous::Full,
            _ => Synchronous::Normal,
        },
        journal_mode: match journal_mode.as_str() {
            "delete" => JournalMode::Delete,
            "memory" => JournalMode::Memory,
            _ => JournalMode::Wal,
        },
        busy_timeout: *busy_timeout,
        delivery: *delivery,
        run_id: 0,
    })
}
