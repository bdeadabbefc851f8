//! A row budget (`LoadConfig::rows`) is written in full whenever the data holds it, even
//! when some workers have no devices or run dry while they hold a claim on the budget:
//! a worker that finds the budget claimed waits for the other claims to be settled
//! before it ends the run (it used to end it at once, and the rows a dry worker gave
//! back were lost: 334 of 1,001 rows with 3 workers over 3 hosts).

use std::sync::Arc;
use std::time::Duration;

use tsload_core::engine::{self, LoadConfig, NoObserver, StopHandle};
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagSource, TagValue};
use tsload_core::workload::device_range;
use tsload_core::{Batch, BatchSource, ColumnValues, NullSink, Workload};

#[derive(Debug)]
struct NoTags;
impl TagSource for NoTags {
    fn device_tags(&self, _device: u32, out: &mut Vec<TagValue>) {
        out.clear();
    }
}

/// `devices` devices of `steps` rows each, split over the workers by device.
struct Steps {
    schema: Schema,
    steps: u64,
}

impl Steps {
    fn workload(devices: u32, steps: u64) -> Arc<dyn Workload> {
        Arc::new(Steps {
            schema: Schema {
                tables: vec![TableSchema {
                    name: "t".into(),
                    tags: vec![],
                    fields: vec![FieldDef {
                        name: "v".into(),
                        data_type: DataType::BigInt,
                    }],
                }],
                tag_slots: 0,
                device_count: devices,
                tags: Arc::new(NoTags),
            },
            steps,
        })
    }
}

struct StepsSource {
    first: u32,
    rows: u64,
    next: u64,
}

impl BatchSource for StepsSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let t = &mut batch.tables[0];
        let mut n = 0;
        while n < max_rows && self.next < self.rows {
            t.device.push(self.first);
            t.ts.push(self.next as i64);
            if let ColumnValues::Int(v) = &mut t.columns[0].values {
                v.push(self.next as i64);
            }
            self.next += 1;
            n += 1;
        }
        n
    }
}

impl Workload for Steps {
    fn schema(&self) -> &Schema {
        &self.schema
    }
    fn total_rows(&self) -> Option<u64> {
        Some(u64::from(self.schema.device_count) * self.steps)
    }
    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let devices = device_range(self.schema.device_count, worker, workers);
        Box::new(StepsSource {
            first: devices.start,
            rows: u64::from(devices.end - devices.start) * self.steps,
            next: 0,
        })
    }
}

async fn rows_written(devices: u32, steps: u64, workers: usize, budget: u64) -> u64 {
    let cfg = LoadConfig {
        workers,
        batch: 1000,
        rows: Some(budget),
        report_interval: Duration::from_millis(50),
        ..LoadConfig::default()
    };
    let out = engine::run(
        Steps::workload(devices, steps),
        Arc::new(NullSink),
        cfg,
        StopHandle::new(),
        &mut NoObserver,
    )
    .await
    .expect("run");
    out.counters.rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_whole_budget_is_written_when_workers_run_dry_or_have_nothing() {
    for round in 0..100 {
        // 1 device, 4 workers: three of them claim the budget and give it all back.
        assert_eq!(rows_written(1, 500, 4, 400).await, 400, "round {round}");
        // 3 devices of 334 rows, 3 workers, 1,001 of 1,002 rows: the worker that runs
        // dry first gives back most of its claim.
        assert_eq!(rows_written(3, 334, 3, 1001).await, 1001, "round {round}");
        // The data set holds fewer rows than the budget: all of them, then the end.
        assert_eq!(rows_written(3, 10, 4, 1001).await, 30, "round {round}");
    }
}
