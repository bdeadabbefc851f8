//! Throughput check, ignored by default: encodes 1,000,000 cpu-like rows (10 string tags,
//! 10 integer fields, 1000 devices) and prints ns per row. Run it optimised:
//! `cargo test -p tsload-lineproto --release -- --ignored --nocapture`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use tsload_core::{
    Batch, ColumnValues, DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue,
};
use tsload_lineproto::{LineEncoder, Precision};

const DEVICES: u32 = 1000;
const ROWS_PER_BATCH: usize = 10_000;
const BATCHES: usize = 100;

#[derive(Debug)]
struct Hosts;

impl TagSource for Hosts {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.push(TagValue::Str(Cow::Owned(format!("host_{device}"))));
        for v in [
            "eu-central-1",
            "eu-central-1a",
            "6",
            "Ubuntu15.10",
            "x86",
            "SF",
            "19",
            "1",
            "test",
        ] {
            out.push(TagValue::Str(Cow::Borrowed(v)));
        }
    }
}

fn cpu_schema() -> Schema {
    let tags = [
        "hostname",
        "region",
        "datacenter",
        "rack",
        "os",
        "arch",
        "team",
        "service",
        "service_version",
        "service_environment",
    ];
    let fields = [
        "usage_user",
        "usage_system",
        "usage_idle",
        "usage_nice",
        "usage_iowait",
        "usage_irq",
        "usage_softirq",
        "usage_steal",
        "usage_guest",
        "usage_guest_nice",
    ];
    Schema {
        tables: vec![TableSchema {
            name: "cpu".into(),
            tags: tags
                .iter()
                .enumerate()
                .map(|(slot, n)| TagDef {
                    name: n.to_string(),
                    data_type: DataType::Varchar(32),
                    slot,
                })
                .collect(),
            fields: fields
                .iter()
                .map(|n| FieldDef {
                    name: n.to_string(),
                    data_type: DataType::BigInt,
                })
                .collect(),
        }],
        tag_slots: tags.len(),
        device_count: DEVICES,
        tags: Arc::new(Hosts),
    }
}

#[test]
#[ignore = "throughput measurement; run with --release -- --ignored --nocapture"]
fn cpu_rows_per_second() {
    let schema = Arc::new(cpu_schema());
    // Ten distinct batches in TSBS order (every device at each step), values 0..100.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let batches: Vec<Batch> = (0..10)
        .map(|b| {
            let mut batch = Batch::for_schema(&schema);
            let tb = &mut batch.tables[0];
            for r in 0..ROWS_PER_BATCH {
                let n = b * ROWS_PER_BATCH + r;
                tb.device.push((n % DEVICES as usize) as u32);
                tb.ts.push(
                    1_451_606_400_000_000_000 + (n / DEVICES as usize) as i64 * 10_000_000_000,
                );
                for c in &mut tb.columns {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let ColumnValues::Int(v) = &mut c.values else {
                        unreachable!()
                    };
                    v.push((state % 100) as i64);
                }
            }
            batch
        })
        .collect();

    let mut encoder = LineEncoder::new(schema, Precision::Ns);
    let mut out = Vec::with_capacity(4 << 20);
    // Warm the prefix cache and the output buffer.
    encoder.encode(&batches[0], &mut out);
    let mut bytes = 0;
    let start = Instant::now();
    for i in 0..BATCHES {
        out.clear();
        encoder.encode(&batches[i % batches.len()], &mut out);
        bytes += out.len();
    }
    let elapsed = start.elapsed();
    let rows = (BATCHES * ROWS_PER_BATCH) as f64;
    let ns_per_row = elapsed.as_nanos() as f64 / rows;
    println!(
        "{rows} cpu rows in {elapsed:?}: {ns_per_row:.1} ns/row, {:.1} M metrics/s, {:.0} MB/s, {:.0} bytes/row",
        rows * 10.0 / elapsed.as_secs_f64() / 1e6,
        bytes as f64 / elapsed.as_secs_f64() / 1e6,
        bytes as f64 / rows,
    );
    assert!(bytes > 0);
}
