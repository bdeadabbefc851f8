//! End-to-end tests of the SQLite sink against real database files in a temporary
//! directory, with a hand-built schema, tag source and batches.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use sqlx::{Connection, SqliteConnection};
use tempfile::TempDir;
use tsload_core::{Batch, DataType, ErrorKind, Schema, Sink, SinkConn, TableSchema};
use tsload_sink_sqlite::{JournalMode, SqliteConfig, SqliteSink, Synchronous};
use tsload_testbed::fixtures::{
    TS0, cpu_mem_batch, cpu_mem_schema, field, next_id, schema_of, tag, wide_batch, wide_schema,
};

/// `cpu`: 2 string tags + 3 int fields; `mem`: 1 int tag + float, nullable int, string,
/// bool fields.
fn schema() -> Arc<Schema> {
    cpu_mem_schema(DataType::Varchar(8))
}

/// One cpu and one mem row per device of `devices`, at `TS0 + step + device`.
/// mem.swap is null for devices divisible by 3.
fn batch(schema: &Schema, devices: Range<u32>, step: i64) -> Batch {
    cpu_mem_batch(
        schema,
        devices,
        step,
        |d, step| TS0 + step + i64::from(d),
        "low",
    )
}

fn url(dir: &TempDir) -> String {
    format!("sqlite:{}", dir.path().join("test.db").display())
}

fn config(url: &str, drop_existing: bool) -> SqliteConfig {
    SqliteConfig {
        url: url.to_string(),
        drop_existing,
        synchronous: Synchronous::Normal,
        journal_mode: JournalMode::Wal,
        busy_timeout: Duration::from_secs(5),
        ..SqliteConfig::new(url)
    }
}

async fn reader(url: &str) -> SqliteConnection {
    SqliteConnection::connect(url).await.unwrap()
}

async fn count(conn: &mut SqliteConnection, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM \"{table}\""))
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn prepare_creates_tables_with_expected_columns() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    SqliteSink::new(config(&url, false))
        .prepare(&schema)
        .await
        .unwrap();

    let mut db = reader(&url).await;
    let columns = |table: &'static str| {
        sqlx::query_as::<_, (String, String, bool)>(
            "SELECT name, type, \"notnull\" FROM pragma_table_info(?) ORDER BY cid",
        )
        .bind(table)
    };
    let cpu = columns("cpu").fetch_all(&mut db).await.unwrap();
    let expect = |cols: &[(&str, &str, bool)]| {
        cols.iter()
            .map(|(n, t, nn)| (n.to_string(), t.to_string(), *nn))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        cpu,
        expect(&[
            ("ts", "INTEGER", true),
            ("hostname", "TEXT", false),
            ("region", "TEXT", false),
            ("usage_user", "INTEGER", false),
            ("usage_system", "INTEGER", false),
            ("usage_idle", "INTEGER", false),
        ])
    );
    let mem = columns("mem").fetch_all(&mut db).await.unwrap();
    assert_eq!(
        mem,
        expect(&[
            ("ts", "INTEGER", true),
            ("rack", "INTEGER", false),
            ("used_percent", "REAL", false),
            ("swap", "INTEGER", false),
            ("state", "TEXT", false),
            ("active", "INTEGER", false),
        ])
    );
}

#[tokio::test]
async fn write_inserts_every_row_and_acks_rows_and_bytes() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();

    // Device 1: cpu = ts 8 + "host_1" 6 + null region 0 + 3 ints 24 = 38;
    // mem = ts 8 + rack 8 + float 8 + swap 8 + "low" 3 + bool 8 = 43.
    let ack = conn
        .write(&batch(&schema, 1..2, 0), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 2);
    assert_eq!(ack.bytes, 81);

    let ack = conn
        .write(&batch(&schema, 0..50, 1), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 100);
    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "cpu").await, 51);
    assert_eq!(count(&mut db, "mem").await, 51);

    let ack = conn
        .write(&Batch::for_schema(&schema), next_id())
        .await
        .unwrap();
    assert_eq!((ack.rows, ack.bytes), (0, 0));
}

#[tokio::test]
async fn values_round_trip() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..10, 0), next_id())
        .await
        .unwrap();

    let mut db = reader(&url).await;
    type CpuRow = (i64, String, Option<String>, i64, i64, i64);
    let cpu_row = |host: &'static str| {
        sqlx::query_as::<_, CpuRow>(
            "SELECT ts, hostname, region, usage_user, usage_system, usage_idle \
             FROM cpu WHERE hostname = ?",
        )
        .bind(host)
    };
    let row = cpu_row("host_4").fetch_one(&mut db).await.unwrap();
    assert_eq!(
        row,
        (TS0 + 4, "host_4".into(), Some("eu-west".into()), 12, 13, 96)
    );
    let row = cpu_row("host_7").fetch_one(&mut db).await.unwrap();
    assert_eq!(row, (TS0 + 7, "host_7".into(), None, 21, 22, 93));

    type MemRow = (i64, i64, f64, Option<i64>, String, i64);
    let mem_row = |rack: i64| {
        sqlx::query_as::<_, MemRow>(
            "SELECT ts, rack, used_percent, swap, state, active FROM mem WHERE rack = ?",
        )
        .bind(rack)
    };
    let row = mem_row(50).fetch_one(&mut db).await.unwrap();
    assert_eq!(row, (TS0 + 5, 50, 5.5, Some(5000), "low".into(), 0));
    let row = mem_row(60).fetch_one(&mut db).await.unwrap();
    assert_eq!(row, (TS0 + 6, 60, 6.5, None, "ok".into(), 1));

    // Storage classes, not just values: numbers are stored as numbers.
    let types: (String, String, String) =
        sqlx::query_as("SELECT typeof(ts), typeof(used_percent), typeof(rack) FROM mem LIMIT 1")
            .fetch_one(&mut db)
            .await
            .unwrap();
    assert_eq!(types, ("integer".into(), "real".into(), "integer".into()));
}

#[tokio::test]
async fn batch_larger_than_a_chunk_is_written_completely() {
    // ts + 3 tags + 40 fields = 44 columns: 744 rows per INSERT, so 5,000 rows take 7.
    let schema = wide_schema();
    let rows = 5_000u32;
    let mut b = wide_batch(&schema, rows, TS0, 1);

    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();
    let ack = conn.write(&b, next_id()).await.unwrap();
    assert_eq!(ack.rows, u64::from(rows));
    // The same size again reuses the cached statements.
    b.tables[0].ts.iter_mut().for_each(|ts| *ts += 1_000_000);
    conn.write(&b, next_id()).await.unwrap();

    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "wide").await, 2 * i64::from(rows));
    let (hosts, null_regions, sum_f39, max_ts): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(DISTINCT hostname), sum(region IS NULL), sum(f39), max(ts) FROM wide",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!(hosts, i64::from(rows));
    assert_eq!(null_regions, i64::from(rows)); // odd devices, twice
    let n = i64::from(rows);
    assert_eq!(sum_f39, 2 * (100 * n * (n - 1) / 2 + 39 * n));
    assert_eq!(max_ts, TS0 + n - 1 + 1_000_000);
}

#[tokio::test]
async fn drop_existing_empties_the_tables() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..20, 0), next_id())
        .await
        .unwrap();
    drop(conn);
    drop(sink);

    // Without drop_existing the rows stay.
    SqliteSink::new(config(&url, false))
        .prepare(&schema)
        .await
        .unwrap();
    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "cpu").await, 20);

    SqliteSink::new(config(&url, true))
        .prepare(&schema)
        .await
        .unwrap();
    assert_eq!(count(&mut db, "cpu").await, 0);
    assert_eq!(count(&mut db, "mem").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connections_both_commit() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut a = sink.connect(&schema, 0).await.unwrap();
    let mut b = sink.connect(&schema, 1).await.unwrap();

    let rounds = 20;
    for step in 0..rounds {
        let batch_a = batch(&schema, 0..300, step);
        let batch_b = batch(&schema, 300..600, step);
        let (ra, rb) = tokio::join!(a.write(&batch_a, next_id()), b.write(&batch_b, next_id()));
        assert_eq!(ra.unwrap().rows, 600);
        assert_eq!(rb.unwrap().rows, 600);
    }
    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "cpu").await, 600 * rounds);
    assert_eq!(count(&mut db, "mem").await, 600 * rounds);
}

#[tokio::test]
async fn wrong_table_shape_is_rejected_and_writes_nothing() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    {
        let opts = format!("{url}?mode=rwc");
        let mut db = SqliteConnection::connect(&opts).await.unwrap();
        sqlx::query("CREATE TABLE mem (x INTEGER)")
            .execute(&mut db)
            .await
            .unwrap();
    }
    let sink = SqliteSink::new(config(&url, false));
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();

    // cpu (first in the batch) is fine; mem fails, and takes cpu's rows with it.
    let err = conn
        .write(&batch(&schema, 0..10, 0), next_id())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(!err.is_retryable());
    assert!(err.message.contains("\"mem\""), "{err}");
    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "cpu").await, 0);
    assert_eq!(count(&mut db, "mem").await, 0);

    // The connection is usable afterwards (no transaction left open).
    let mut cpu_only = batch(&schema, 0..5, 0);
    cpu_only.tables[1].clear();
    conn.write(&cpu_only, next_id()).await.unwrap();
    assert_eq!(count(&mut db, "cpu").await, 5);
}

#[tokio::test]
async fn held_lock_gives_a_retryable_conflict() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let mut cfg = config(&url, false);
    cfg.busy_timeout = Duration::ZERO;
    let sink = SqliteSink::new(cfg);
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();

    let mut holder = reader(&url).await;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let b = batch(&schema, 0..10, 0);
    let err = conn.write(&b, next_id()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    assert!(err.is_retryable());

    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    conn.write(&b, next_id()).await.unwrap();
    assert_eq!(count(&mut holder, "cpu").await, 10);
}

#[tokio::test]
async fn bad_path_is_an_error_not_a_panic() {
    let schema = schema();
    let url = "sqlite:/nonexistent-dir/x.db";
    let sink = SqliteSink::new(config(url, false));
    let err = sink.prepare(&schema).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains(url), "{err}");
    assert!(err.message.contains("unable to open"), "{err}");
    let Err(err) = sink.connect(&schema, 0).await else {
        panic!("connect succeeded");
    };
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");

    let url = "sqlite:/tmp/x.db?mode=bogus";
    let err = SqliteSink::new(config(url, false))
        .prepare(&schema)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(
        err.message.contains(url) && err.message.contains("bogus"),
        "{err}"
    );
}

#[tokio::test]
async fn clashing_columns_fail_with_a_schema_error() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let sink = SqliteSink::new(config(&url, false));

    let both = schema_of(vec![TableSchema {
        name: "disk".to_string(),
        tags: vec![tag("path", DataType::Varchar(32), 0)],
        fields: vec![field("path", DataType::Int)],
    }]);
    let err = sink.prepare(&both).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(
        err.message.contains("disk") && err.message.contains("path"),
        "{err}"
    );

    let ts = schema_of(vec![TableSchema {
        name: "net".to_string(),
        tags: vec![],
        fields: vec![field("TS", DataType::Int)],
    }]);
    let err = sink.prepare(&ts).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(
        err.message.contains("net") && err.message.contains("TS"),
        "{err}"
    );
}

#[tokio::test]
async fn in_memory_database_outlives_prepare() {
    let schema = schema();
    let sink = SqliteSink::new(config("sqlite::memory:", false));
    sink.prepare(&schema).await.unwrap();
    let mut a = sink.connect(&schema, 0).await.unwrap();
    let mut b = sink.connect(&schema, 1).await.unwrap();
    // The tables prepare created are there for both connections.
    assert_eq!(
        a.write(&batch(&schema, 0..10, 0), next_id())
            .await
            .unwrap()
            .rows,
        20
    );
    assert_eq!(
        b.write(&batch(&schema, 10..20, 0), next_id())
            .await
            .unwrap()
            .rows,
        20
    );
}

#[tokio::test]
async fn exactly_once_stores_a_retried_batch_once_and_records_it_in_the_ledger() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let cfg = config(&url, true);
    let run_id = cfg.run_id;
    let sink = SqliteSink::new(cfg);
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();
    let b = batch(&schema, 0..10, 0);
    let id = tsload_core::BatchId {
        worker: 3,
        seq: 7,
        attempt: 0,
    };
    let first = conn.write(&b, id).await.unwrap();
    assert_eq!((first.rows, first.duplicate), (20, false));
    // The same batch again, as the engine retries after a lost answer.
    let retry = conn
        .write(&b, tsload_core::BatchId { attempt: 1, ..id })
        .await
        .unwrap();
    assert_eq!((retry.rows, retry.duplicate), (20, true));
    let other = conn.write(&b, next_id()).await.unwrap();
    assert!(!other.duplicate);
    let mut db = reader(&url).await;
    assert_eq!(count(&mut db, "cpu").await, 20);
    assert_eq!(count(&mut db, "mem").await, 20);
    let (batches, rows): (i64, i64) =
        sqlx::query_as("SELECT count(*), sum(batch_rows) FROM tsload_ledger WHERE run_id = ?")
            .bind(run_id)
            .fetch_one(&mut db)
            .await
            .unwrap();
    assert_eq!((batches, rows), (2, 40));
    let seq7: i64 = sqlx::query_scalar(
        "SELECT batch_rows FROM tsload_ledger WHERE run_id = ? AND worker = 3 AND seq = 7",
    )
    .bind(run_id)
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!(seq7, 20);
}

#[tokio::test]
async fn at_least_once_has_no_ledger() {
    let dir = TempDir::new().unwrap();
    let url = url(&dir);
    let schema = schema();
    let mut cfg = config(&url, true);
    cfg.delivery = tsload_core::Delivery::AtLeastOnce;
    let sink = SqliteSink::new(cfg);
    sink.prepare(&schema).await.unwrap();
    let mut conn = sink.connect(&schema, 0).await.unwrap();
    let b = batch(&schema, 0..10, 0);
    let id = next_id();
    conn.write(&b, id).await.unwrap();
    let again = conn
        .write(&b, tsload_core::BatchId { attempt: 1, ..id })
        .await
        .unwrap();
    assert!(!again.duplicate);
    let mut db = reader(&url).await;
    assert_eq!(
        count(&mut db, "cpu").await,
        20,
        "at least once: stored twice"
    );
    let ledger: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = 'tsload_ledger'")
            .fetch_one(&mut db)
            .await
            .unwrap();
    assert_eq!(ledger, 0);
}
