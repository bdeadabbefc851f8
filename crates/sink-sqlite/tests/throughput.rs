//! A rough speed figure, ignored by default. Run it optimised:
//! `cargo test --release -p tsload-sink-sqlite --test throughput -- --ignored --nocapture`

use std::sync::Arc;
use std::time::{Duration, Instant};

use tsload_core::{
    Batch, ColumnValues, DataType, FieldDef, Schema, Sink, SinkConn, TableSchema, TagDef,
    TagSource, TagValue,
};
use tsload_sink_sqlite::{JournalMode, SqliteConfig, SqliteSink, Synchronous};

const TAGS: usize = 10;
const FIELDS: usize = 10;
const DEVICES: u32 = 1_000;
const ROWS: usize = 216_000;
const BATCH: usize = 5_000;

#[derive(Debug)]
struct Tags;

impl TagSource for Tags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        for slot in 0..TAGS {
            let value = format!("tag{slot}_{}", device % (10 * (slot as u32 + 1)));
            out.push(TagValue::Str(value.into()));
        }
    }
}

/// A cpu-like table: 10 string tags, 10 int fields.
fn schema() -> Arc<Schema> {
    Arc::new(Schema {
        tables: vec![TableSchema {
            name: "cpu".to_string(),
            tags: (0..TAGS)
                .map(|slot| TagDef {
                    name: format!("tag{slot}"),
                    data_type: DataType::Varchar(32),
                    slot,
                })
                .collect(),
            fields: (0..FIELDS)
                .map(|i| FieldDef {
                    name: format!("usage_{i}"),
                    data_type: DataType::BigInt,
                })
                .collect(),
        }],
        tag_slots: TAGS,
        device_count: DEVICES,
        tags: Arc::new(Tags),
    })
}

/// Rows `first..first + BATCH`: row r is device `r % DEVICES` at step `r / DEVICES`.
fn batch(schema: &Schema, first: usize) -> Batch {
    let mut b = Batch::for_schema(schema);
    let t = &mut b.tables[0];
    for r in first..(first + BATCH).min(ROWS) {
        t.device.push((r % DEVICES as usize) as u32);
        t.ts.push(1_700_000_000_000_000_000 + (r / DEVICES as usize) as i64 * 10_000_000_000);
        for (i, c) in t.columns.iter_mut().enumerate() {
            if let ColumnValues::Int(v) = &mut c.values {
                v.push(((r * 7 + i * 13) % 100) as i64);
            }
        }
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "speed figure; run with --release --ignored --nocapture"]
async fn throughput_cpu_like_table() {
    let dir = tempfile::TempDir::new().unwrap();
    let cfg = SqliteConfig {
        url: format!("sqlite:{}", dir.path().join("bench.db").display()),
        drop_existing: true,
        synchronous: Synchronous::Normal,
        journal_mode: JournalMode::Wal,
        busy_timeout: Duration::from_secs(5),
    };
    let schema = schema();
    let batches: Vec<Batch> = (0..ROWS)
        .step_by(BATCH)
        .map(|r| batch(&schema, r))
        .collect();
    let sink = SqliteSink::new(cfg);
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();

    let start = Instant::now();
    let mut rows = 0;
    for b in &batches {
        rows += conn.write(b).await.unwrap().rows;
    }
    let elapsed = start.elapsed();
    assert_eq!(rows, ROWS as u64);
    println!(
        "{rows} rows ({TAGS} string tags + {FIELDS} int fields, batch {BATCH}, WAL, \
         synchronous=normal, 1 connection) in {:.2} s: {:.0} rows/s",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64()
    );
}
