//! tsload as a library, for a criterion benchmark of your own storage code: implement
//! `tsload_core::Sink` for it and let `tsload_core::engine::run` drive a generated TSBS
//! load into it in-process, with tsload's workers, batching, retries and HDR latencies.
//! Here the "storage" is a toy in-memory column sum; replace it with yours.
//!
//!   cargo bench -p tsload-benches --bench own_sink
//!
//! (`cargo test --all-targets` runs each benchmark once, so the example stays working.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tsload_benches::cpu_only;
use tsload_core::engine::{self, LoadConfig, NoObserver, StopHandle};
use tsload_core::{Batch, BatchId, Schema, Sink, SinkConn, SinkError, Workload, WriteAck};

/// Your storage: here, a count of every field value written, shared by all connections.
#[derive(Default)]
struct ColumnSum {
    values: AtomicU64,
}

/// The sink: a handle on the storage that the engine prepares and connects to.
struct ColumnSumSink(Arc<ColumnSum>);

/// One worker's connection to it.
struct ColumnSumConn {
    store: Arc<ColumnSum>,
}

impl Sink for ColumnSumSink {
    type Conn = ColumnSumConn;

    async fn prepare(&self, _schema: &Arc<Schema>) -> Result<(), SinkError> {
        Ok(())
    }

    async fn connect(
        &self,
        _schema: &Arc<Schema>,
        _worker: usize,
    ) -> Result<ColumnSumConn, SinkError> {
        Ok(ColumnSumConn {
            store: self.0.clone(),
        })
    }
}

impl SinkConn for ColumnSumConn {
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        let mut n = 0u64;
        for table in &batch.tables {
            for column in &table.columns {
                n += column.values.len() as u64;
            }
        }
        self.store.values.fetch_add(n, Ordering::Relaxed);
        Ok(WriteAck {
            rows: batch.rows() as u64,
            bytes: 0,
            duplicate: false,
            metrics: None,
        })
    }
}

fn own_sink(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // 100 hosts x 1 h = 36,000 rows, 360,000 metrics per run.
    let workload: Arc<dyn Workload> = Arc::new(cpu_only(100, 1));
    let mut group = c.benchmark_group("own sink");
    group.throughput(Throughput::Elements(360_000));
    group.sample_size(10);
    for workers in [1usize, 2] {
        let cfg = LoadConfig {
            workers,
            batch: 1_000,
            report_interval: Duration::from_secs(1),
            ..LoadConfig::default()
        };
        group.bench_function(format!("cpu-only, {workers} worker(s)"), |b| {
            b.iter(|| {
                let store = Arc::new(ColumnSum::default());
                let outcome = runtime
                    .block_on(engine::run(
                        workload.clone(),
                        Arc::new(ColumnSumSink(store.clone())),
                        cfg.clone(),
                        StopHandle::new(),
                        &mut NoObserver,
                    ))
                    .expect("run");
                // The engine's count and the store's agree.
                assert_eq!(outcome.counters.metrics, 360_000);
                assert_eq!(store.values.load(Ordering::Relaxed), 360_000);
                outcome.latency.value_at_quantile(0.99)
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = own_sink
}
criterion_main!(benches);
