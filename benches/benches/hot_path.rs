//! Criterion benchmarks of tsload's hot path: generating rows into a batch, encoding line
//! protocol, replaying a line-protocol file (its check pass, and its lines sent as they
//! are), recording latencies into HDR histograms, and the engine end to end into the
//! `null` target. Throughput is reported in metrics (field values) per second.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use tsload_benches::{cpu_only, devops};
use tsload_core::engine::{self, LoadConfig, NoObserver, StopHandle};
use tsload_core::recorder::new_histogram;
use tsload_core::{Batch, NullSink, Workload};
use tsload_lineproto::{LineEncoder, Precision};
use tsload_workload::{FileReplay, ReplayInput, ReplayOptions};

const BATCH: usize = 10_000;

/// Fills one batch of `BATCH` rows per iteration from a source that never runs dry.
fn bench_fill(c: &mut Criterion, name: &str, w: &dyn Workload) {
    let mut batch = Batch::for_schema(w.schema());
    w.source(0, 1).fill(&mut batch, BATCH);
    let mut group = c.benchmark_group("generate");
    group.throughput(Throughput::Elements(batch.metrics()));
    let mut source = w.source(0, 1);
    group.bench_function(name, |b| {
        b.iter(|| {
            batch.clear();
            let n = source.fill(&mut batch, BATCH);
            // A fill may hold fewer rows before the end (a source with late rows stops
            // at the rows it took): only the end starts the data set again.
            if n == 0 {
                source = w.source(0, 1);
            }
            n
        })
    });
    group.finish();
}

fn generate(c: &mut Criterion) {
    bench_fill(c, "cpu-only", &cpu_only(1000, 24 * 365));
    bench_fill(c, "devops", &devops(1000, 24 * 365));
    // Late and duplicate rows: the wrapping ArrivalSource places each row on its own.
    let arrival = tsload_workload::Arrival {
        out_of_order_ratio: 0.05,
        out_of_order_max_steps: 6,
        duplicate_ratio: 0.01,
    };
    let late = tsload_workload::CpuOnly::new(tsload_workload::TsbsConfig {
        arrival,
        ..tsload_benches::tsbs(1000, 24 * 365)
    })
    .expect("valid settings");
    bench_fill(c, "cpu-only, 5% late, 1% twice", &late);
}

fn encode(c: &mut Criterion) {
    let w = cpu_only(1000, 24);
    let schema = Arc::new(w.schema().clone());
    let mut batch = Batch::for_schema(&schema);
    w.source(0, 1).fill(&mut batch, BATCH);
    let mut encoder = LineEncoder::new(schema.clone(), Precision::Ns);
    let mut out = Vec::new();
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(batch.metrics()));
    group.bench_function("lineproto cpu-only", |b| {
        b.iter(|| {
            out.clear();
            encoder.encode(&batch, &mut out);
            out.len()
        })
    });
    group.finish();
}

/// A TSBS cpu-only file of 100 hosts x 2 h (72,000 lines, 720,000 metrics, about 25 MB),
/// written by the line-protocol encoder as `tsload generate` writes it: TSBS's bytes.
fn cpu_only_file(dir: &std::path::Path) -> std::path::PathBuf {
    let w = cpu_only(100, 2);
    let schema = Arc::new(w.schema().clone());
    let mut batch = Batch::for_schema(&schema);
    let mut encoder = LineEncoder::new(schema.clone(), Precision::Ns);
    let mut out = Vec::new();
    let mut source = w.source(0, 1);
    while source.fill(&mut batch, BATCH) > 0 {
        encoder.encode(&batch, &mut out);
        batch.clear();
    }
    let path = dir.join("cpu-only.lp");
    std::fs::write(&path, &out).expect("write the replay file");
    path
}

fn replay(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = cpu_only_file(dir.path());
    let open = || {
        FileReplay::open(ReplayInput::Path(path.clone()), ReplayOptions::default())
            .expect("a valid file")
    };
    let metrics = 720_000;
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(metrics));
    group.sample_size(20);
    group.bench_function("check pass (open), cpu-only", |b| {
        b.iter(|| open().total_rows())
    });
    let w = open();
    let mut batch = Batch::for_schema(w.schema());
    group.bench_function("lines as they are (text source), cpu-only", |b| {
        b.iter(|| {
            let mut source = w.text_source(0, 1, 1).expect("the file's unit is ns");
            let mut sent = 0;
            loop {
                batch.clear();
                if source.fill(&mut batch, BATCH) == 0 {
                    break;
                }
                sent += batch.text.as_ref().map_or(0, |t| t.metrics);
            }
            assert_eq!(sent, metrics);
        })
    });
    group.finish();
}

fn record(c: &mut Criterion) {
    let mut h = new_histogram();
    let values: Vec<u64> = (0..1000u64)
        .map(|i| 50_000 + i * 7_919 % 2_000_000)
        .collect();
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("hdr 1000 latencies", |b| {
        b.iter(|| {
            for v in &values {
                h.record(*v).expect("auto-resizing histogram");
            }
        })
    });
    group.finish();
}

fn engine_null(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // 100 hosts x 6 h = 216,000 rows, 2.16 M metrics per run.
    let w: Arc<dyn Workload> = Arc::new(cpu_only(100, 6));
    let cfg = LoadConfig {
        workers: 1,
        batch: BATCH,
        report_interval: Duration::from_secs(1),
        ..LoadConfig::default()
    };
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(2_160_000));
    group.sample_size(20);
    group.bench_function("cpu-only into null, 1 worker", |b| {
        b.iter_batched(
            || w.clone(),
            |w| {
                let outcome = runtime
                    .block_on(engine::run(
                        w,
                        Arc::new(NullSink),
                        cfg.clone(),
                        StopHandle::new(),
                        &mut NoObserver,
                    ))
                    .expect("run");
                assert_eq!(outcome.counters.metrics, 2_160_000);
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = generate, encode, replay, record, engine_null
}
criterion_main!(benches);
