//! End-to-end tests of the MySQL sink against a real MariaDB 10.11 started by the testbed
//! (one server per test), with a hand-built schema, tag source and batches; what the
//! server stored is read back with the `mariadb` client.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tsload_core::{Batch, DataType, ErrorKind, Schema, Sink, SinkConn, TableSchema};
use tsload_sink_mysql::{MysqlConfig, MysqlSink, PrimaryKey, TransactionMode, TsType};
use tsload_testbed::fixtures::{
    TS0, cpu_mem_batch, cpu_mem_schema, field, next_id, push_int, push_str, schema_of, tag,
    wide_batch, wide_schema,
};
use tsload_testbed::{Server, ServerKind};

fn start() -> Server {
    Server::start(ServerKind::MariaDb).unwrap_or_else(|e| panic!("MariaDB did not start: {e}"))
}

fn url(server: &Server) -> String {
    server.database_url().expect("MariaDB has a database URL")
}

/// `stmt`'s output (`mariadb -N -B`: tab-separated, `NULL` for nulls), trimmed.
fn query(server: &Server, stmt: &str) -> String {
    server
        .sql(stmt)
        .unwrap_or_else(|e| panic!("{stmt}: {e}"))
        .trim()
        .to_string()
}

/// `cpu`: 2 string tags + 3 int fields; `mem`: 1 int tag + double, nullable bigint,
/// nchar, bool fields.
fn schema() -> Arc<Schema> {
    cpu_mem_schema(DataType::NChar(8))
}

/// Timestamp of `device`'s row at `step`: devices a millisecond apart, steps a second
/// apart, and 789 ns that `DATETIME(6)` drops.
fn ts_of(device: u32, step: i64) -> i64 {
    TS0 + step * 1_000_000_000 + i64::from(device) * 1_000_000 + 789
}

/// One cpu and one mem row per device of `devices`, at `ts_of(device, step)`.
/// mem.swap is null for devices divisible by 3; mem.state is "ok" / "élevé".
fn batch(schema: &Schema, devices: Range<u32>, step: i64) -> Batch {
    cpu_mem_batch(schema, devices, step, ts_of, "élevé")
}

/// Rows of `devices` in the first table (a cpu-shaped one) only, at step 0.
fn cpu_batch(schema: &Schema, devices: &[u32]) -> Batch {
    let mut b = Batch::for_schema(schema);
    let cpu = &mut b.tables[0];
    for &d in devices {
        cpu.device.push(d);
        cpu.ts.push(ts_of(d, 0));
        for c in &mut cpu.columns {
            push_int(c, i64::from(d));
        }
    }
    b
}

fn config(server: &Server) -> MysqlConfig {
    MysqlConfig::new(url(server))
}

fn sink(cfg: MysqlConfig) -> MysqlSink {
    MysqlSink::new(cfg).unwrap()
}

#[tokio::test]
async fn prepare_creates_tables_with_expected_columns() {
    let server = start();
    let schema = schema();
    sink(config(&server)).prepare(&schema).await.unwrap();

    let columns = |table: &str| {
        query(
            &server,
            &format!(
                "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, IFNULL(CHARACTER_SET_NAME, '-') \
                 FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = 'tsload' AND TABLE_NAME = '{table}' \
                 ORDER BY ORDINAL_POSITION"
            ),
        )
    };
    let cpu = columns("cpu");
    let lines: Vec<&str> = cpu.lines().collect();
    assert_eq!(lines.len(), 6, "{cpu}");
    assert_eq!(lines[0], "ts\tdatetime(6)\tNO\t-");
    assert!(
        lines[1].starts_with("hostname\tvarchar(32)\tYES\t"),
        "{cpu}"
    );
    assert!(lines[2].starts_with("region\tvarchar(16)\tYES\t"), "{cpu}");
    assert_eq!(lines[3], "usage_user\tint(11)\tYES\t-");
    assert_eq!(lines[4], "usage_system\tbigint(20)\tYES\t-");
    assert_eq!(lines[5], "usage_idle\tsmallint(6)\tYES\t-");

    assert_eq!(
        columns("mem"),
        "ts\tdatetime(6)\tNO\t-\n\
         rack\tbigint(20)\tYES\t-\n\
         used_percent\tdouble\tYES\t-\n\
         swap\tbigint(20)\tYES\t-\n\
         state\tvarchar(8)\tYES\tutf8mb4\n\
         active\ttinyint(1)\tYES\t-"
    );
    let engines = query(
        &server,
        "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = 'tsload' ORDER BY TABLE_NAME",
    );
    assert_eq!(engines, "cpu\tInnoDB\nmem\tInnoDB\ntsload_ledger\tInnoDB");
}

#[tokio::test]
async fn table_options_reach_the_server() {
    let server = start();
    let schema = schema();

    // MyISAM, an auto-increment id and BIGINT ns timestamps.
    let mut cfg = config(&server);
    cfg.engine = "MyISAM".to_string();
    cfg.delivery = tsload_core::Delivery::AtLeastOnce;
    cfg.primary_key = PrimaryKey::AutoIncrement;
    cfg.ts_type = TsType::BigIntNs;
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..3, 0), next_id())
        .await
        .unwrap();
    assert_eq!(
        query(
            &server,
            "SELECT ENGINE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'tsload' AND TABLE_NAME = 'cpu'"
        ),
        "MyISAM"
    );
    assert_eq!(
        query(
            &server,
            "SELECT id, ts, hostname FROM tsload.cpu ORDER BY id"
        ),
        format!(
            "1\t{}\thost_0\n2\t{}\thost_1\n3\t{}\thost_2",
            ts_of(0, 0),
            ts_of(1, 0),
            ts_of(2, 0)
        )
    );

    // Aria with a (tags..., ts) key: same series and timestamp twice is a duplicate.
    let mut cfg = config(&server);
    cfg.engine = "Aria".to_string();
    cfg.delivery = tsload_core::Delivery::AtLeastOnce;
    cfg.primary_key = PrimaryKey::TagsTs;
    cfg.drop_existing = true;
    let keyed = schema_of(vec![schema.tables[0].clone()]);
    let s = sink(cfg);
    s.prepare(&keyed).await.unwrap();
    assert_eq!(
        query(
            &server,
            "SELECT ENGINE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'tsload' AND TABLE_NAME = 'cpu'"
        ),
        "Aria"
    );
    assert_eq!(
        query(
            &server,
            "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) \
             FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = 'tsload' AND TABLE_NAME = 'cpu' AND INDEX_NAME = 'PRIMARY'"
        ),
        "hostname,region,ts"
    );
    let mut conn = s.connect(&keyed, 0).await.unwrap();
    let even = cpu_batch(&keyed, &[0, 2]);
    conn.write(&even, next_id()).await.unwrap();
    let err = conn.write(&even, next_id()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(
        err.message.contains("1062") && err.message.contains("`cpu`"),
        "{err}"
    );
    // A null tag (odd devices have no region) cannot be part of the key.
    let err = conn
        .write(&cpu_batch(&keyed, &[1]), next_id())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(err.message.contains("1048"), "{err}");
    assert_eq!(server.sql_count("cpu"), 2);

    // An engine the server does not have is a schema error, not a silent InnoDB table.
    let mut cfg = config(&server);
    cfg.engine = "NoSuchEngine".to_string();
    cfg.drop_existing = true;
    let err = sink(cfg).prepare(&schema).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema, "{err}");
    assert!(err.message.contains("`cpu`"), "{err}");
}

async fn writes_every_row(mode: TransactionMode) {
    let server = start();
    let schema = schema();
    let mut cfg = config(&server);
    cfg.transaction = mode;
    if mode == TransactionMode::Autocommit {
        cfg.delivery = tsload_core::Delivery::AtLeastOnce;
    }
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();

    let ack = conn
        .write(&batch(&schema, 1..2, 0), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 2);
    assert!(ack.bytes > 50, "{ack:?}");

    let ack = conn
        .write(&batch(&schema, 0..50, 1), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 100);
    assert_eq!(server.sql_count("cpu"), 51);
    assert_eq!(server.sql_count("mem"), 51);

    let ack = conn
        .write(&Batch::for_schema(&schema), next_id())
        .await
        .unwrap();
    assert_eq!((ack.rows, ack.bytes), (0, 0));
    // Another connection sees the rows: they were committed.
    assert_eq!(
        query(
            &server,
            "SELECT count(*) FROM tsload.mem WHERE swap IS NULL"
        ),
        "17"
    );
}

#[tokio::test]
async fn per_batch_transactions_write_every_row() {
    writes_every_row(TransactionMode::PerBatch).await;
}

#[tokio::test]
async fn autocommit_writes_every_row() {
    writes_every_row(TransactionMode::Autocommit).await;
}

#[tokio::test]
async fn values_round_trip() {
    let server = start();
    let schema = schema();
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..10, 0), next_id())
        .await
        .unwrap();

    // DATETIME(6): the 789 ns are dropped, the microseconds kept.
    let cpu = |host: &str| {
        query(
            &server,
            &format!(
                "SELECT ts, hostname, region, usage_user, usage_system, usage_idle \
                 FROM tsload.cpu WHERE hostname = '{host}'"
            ),
        )
    };
    assert_eq!(
        cpu("host_4"),
        "2023-11-14 22:13:20.004000\thost_4\teu-west\t12\t13\t96"
    );
    assert_eq!(
        cpu("host_7"),
        "2023-11-14 22:13:20.007000\thost_7\tNULL\t21\t22\t93"
    );

    let mem = |rack: i64| {
        query(
            &server,
            &format!(
                "SELECT ts, rack, used_percent, swap, state, active \
                 FROM tsload.mem WHERE rack = {rack}"
            ),
        )
    };
    assert_eq!(
        mem(50),
        "2023-11-14 22:13:20.005000\t50\t5.5\t5000\télevé\t0"
    );
    assert_eq!(mem(60), "2023-11-14 22:13:20.006000\t60\t6.5\tNULL\tok\t1");
    // The multi-byte string is stored as 5 characters, not as mangled bytes.
    assert_eq!(
        query(
            &server,
            "SELECT CHAR_LENGTH(state) FROM tsload.mem WHERE rack = 10"
        ),
        "5"
    );
}

#[tokio::test]
async fn bigint_timestamps_keep_nanoseconds() {
    let server = start();
    let schema = schema();
    let mut cfg = config(&server);
    cfg.ts_type = TsType::BigIntNs;
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..10, 3), next_id())
        .await
        .unwrap();
    assert_eq!(
        query(
            &server,
            "SELECT ts FROM tsload.cpu WHERE hostname = 'host_9'"
        ),
        ts_of(9, 3).to_string()
    );
    assert_eq!(
        query(
            &server,
            "SELECT DATA_TYPE FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = 'tsload' AND TABLE_NAME = 'cpu' AND COLUMN_NAME = 'ts'"
        ),
        "bigint"
    );
}

/// INSERT statements the server has executed so far (prepared ones included).
fn com_insert(server: &Server) -> u64 {
    query(
        server,
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME = 'COM_INSERT'",
    )
    .parse()
    .unwrap()
}

#[tokio::test]
async fn batch_over_the_placeholder_limit_is_written_completely() {
    // 44 columns: 1,489 rows per INSERT (65,535 placeholders), so 5,000 rows take 4, and
    // one more records the batch in the ledger.
    let schema = wide_schema();
    let rows = 5_000u32;
    let server = start();
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    let mut b = wide_batch(&schema, rows, TS0, 1_000);
    let inserts = com_insert(&server);
    let ack = conn.write(&b, next_id()).await.unwrap();
    assert_eq!(ack.rows, u64::from(rows));
    assert_eq!(com_insert(&server) - inserts, 5);
    // The same size again reuses the cached statements.
    b.tables[0]
        .ts
        .iter_mut()
        .for_each(|ts| *ts += 1_000_000_000);
    conn.write(&b, next_id()).await.unwrap();

    assert_eq!(server.sql_count("wide"), 2 * u64::from(rows));
    let n = i64::from(rows);
    assert_eq!(
        query(
            &server,
            "SELECT count(DISTINCT hostname), sum(region IS NULL), sum(f39) FROM tsload.wide"
        ),
        format!("{n}\t{n}\t{}", 2 * (100 * n * (n - 1) / 2 + 39 * n))
    );
}

#[tokio::test]
async fn rows_are_chunked_under_max_allowed_packet() {
    let server = start();
    // 64 KiB packets (new connections read the global value); rows of about 2 KB.
    query(&server, "SET GLOBAL max_allowed_packet = 65536");
    let schema = schema_of(vec![TableSchema {
        name: "logs".to_string(),
        tags: vec![tag("hostname", DataType::Varchar(32), 0)],
        fields: vec![
            field("line", DataType::Varchar(4000)),
            field("n", DataType::BigInt),
        ],
    }]);
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    let rows = 1_000u32;
    let mut b = Batch::for_schema(&schema);
    let t = &mut b.tables[0];
    for d in 0..rows {
        t.device.push(d);
        t.ts.push(TS0 + i64::from(d) * 1_000);
        let line = "x".repeat(1_000 + (d as usize % 1_000));
        push_str(&mut t.columns[0], &line);
        push_int(&mut t.columns[1], i64::from(d));
    }
    let inserts = com_insert(&server);
    let ack = conn.write(&b, next_id()).await.unwrap();
    assert_eq!(ack.rows, u64::from(rows));
    // About 1.5 MB in EXECUTE packets planned within 60 KiB (64 KiB less 1/16): the widest
    // row (9 + 27 ts + 9 tag + 2,002 line + 8 = 2,055 bytes) sizes them all at 29 rows,
    // so 35 statements, and the ledger's.
    assert!(ack.bytes > 1_500_000, "{ack:?}");
    assert_eq!(com_insert(&server) - inserts, 36);
    assert_eq!(server.sql_count("logs"), u64::from(rows));
    assert_eq!(
        query(
            &server,
            "SELECT sum(CHAR_LENGTH(line)), sum(n) FROM tsload.logs"
        ),
        format!("{}\t{}", 1_000 * 1_000 + 999 * 1_000 / 2, 999 * 1_000 / 2)
    );

    // A single row larger than the packet is refused up front, naming the table.
    let mut big = Batch::for_schema(&schema);
    let t = &mut big.tables[0];
    t.device.push(0);
    t.ts.push(TS0);
    push_str(&mut t.columns[0], &"y".repeat(70_000));
    push_int(&mut t.columns[1], 0);
    let err = conn.write(&big, next_id()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(
        err.message.contains("`logs`") && err.message.contains("max_allowed_packet"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_connections_all_commit() {
    let server = start();
    let schema = schema();
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut tasks = Vec::new();
    for worker in 0..4u32 {
        let (s, schema) = (s.clone(), schema.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = s.connect(&schema, worker as usize).await.unwrap();
            for step in 0..20 {
                let devices = worker * 300..(worker + 1) * 300;
                let ack = conn
                    .write(&batch(&schema, devices, step), next_id())
                    .await
                    .unwrap();
                assert_eq!(ack.rows, 600);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(server.sql_count("cpu"), 4 * 300 * 20);
    assert_eq!(server.sql_count("mem"), 4 * 300 * 20);
    assert_eq!(
        query(
            &server,
            "SELECT count(DISTINCT hostname, ts) FROM tsload.cpu"
        ),
        (4 * 300 * 20).to_string()
    );
}

#[tokio::test]
async fn drop_existing_empties_the_tables() {
    let server = start();
    let schema = schema();
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..20, 0), next_id())
        .await
        .unwrap();
    drop(conn);

    // Without drop_existing the rows stay.
    sink(config(&server)).prepare(&schema).await.unwrap();
    assert_eq!(server.sql_count("cpu"), 20);

    let mut cfg = config(&server);
    cfg.drop_existing = true;
    sink(cfg).prepare(&schema).await.unwrap();
    assert_eq!(server.sql_count("cpu"), 0);
    assert_eq!(server.sql_count("mem"), 0);
}

#[tokio::test]
async fn wrong_table_shape_is_rejected_and_writes_nothing() {
    let server = start();
    let schema = schema();
    query(&server, "CREATE TABLE tsload.mem (x INT) ENGINE=InnoDB");
    let s = sink(config(&server));
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();

    // cpu (first in the batch) is fine; mem fails, and takes cpu's rows with it.
    let err = conn
        .write(&batch(&schema, 0..10, 0), next_id())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(!err.is_retryable());
    assert!(err.message.contains("`mem`"), "{err}");
    assert!(err.message.contains("1054"), "{err}");
    assert_eq!(server.sql_count("cpu"), 0);
    assert_eq!(server.sql_count("mem"), 0);

    // The connection is usable afterwards (no transaction left open).
    let mut cpu_only = batch(&schema, 0..5, 0);
    cpu_only.tables[1].clear();
    conn.write(&cpu_only, next_id()).await.unwrap();
    assert_eq!(server.sql_count("cpu"), 5);
}

#[tokio::test]
async fn killed_server_is_a_connection_error_and_a_restart_recovers() {
    let mut server = start();
    let schema = schema();
    let mut cfg = config(&server);
    cfg.connect_timeout = Duration::from_secs(2);
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..10, 0), next_id())
        .await
        .unwrap();

    server.kill();
    for step in 1..3 {
        let err = conn
            .write(&batch(&schema, 0..10, step), next_id())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Connection, "{err}");
        assert!(err.is_retryable());
    }
    // Connecting anew fails the same way, with the URL (no password in it anyway).
    let Err(err) = s.connect(&schema, 1).await else {
        panic!("connected to a killed server");
    };
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("127.0.0.1"), "{err}");

    server.restart().unwrap();
    // The same connection object reconnects on its next write.
    conn.write(&batch(&schema, 0..10, 5), next_id())
        .await
        .unwrap();
    assert_eq!(server.sql_count("cpu"), 20);
}

#[tokio::test]
async fn database_is_created_when_asked() {
    let server = start();
    let schema = schema();
    let other = url(&server).replace("/tsload", "/fresh_db");
    // Without create_database: a clear error.
    let err = sink(MysqlConfig::new(other.clone()))
        .prepare(&schema)
        .await
        .unwrap_err();
    assert!(
        err.message.contains("fresh_db") && err.message.contains("create_database"),
        "{err}"
    );

    let mut cfg = MysqlConfig::new(other);
    cfg.create_database = true;
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    // Twice is fine.
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    conn.write(&batch(&schema, 0..7, 0), next_id())
        .await
        .unwrap();
    assert_eq!(query(&server, "SELECT count(*) FROM fresh_db.cpu"), "7");
}

#[tokio::test]
async fn bad_credentials_are_a_permission_error_without_the_password() {
    let server = start();
    query(
        &server,
        "CREATE USER 'loader'@'127.0.0.1' IDENTIFIED BY 'right'; \
         GRANT SELECT ON tsload.* TO 'loader'@'127.0.0.1'",
    );
    let schema = schema();
    let base = url(&server);
    let wrong = base.replace("root@", "loader:hunter2@");
    let err = sink(MysqlConfig::new(wrong))
        .prepare(&schema)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Permission, "{err}");
    assert!(err.message.contains("1045"), "{err}");
    assert!(!err.message.contains("hunter2"), "{err}");
    assert!(err.message.contains("loader:***@"), "{err}");

    // Right password, no CREATE right: the DDL fails with a permission error.
    let read_only = base.replace("root@", "loader:right@");
    let err = sink(MysqlConfig::new(read_only))
        .prepare(&schema)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Permission, "{err}");
    assert!(
        err.message.contains("1142") && !err.message.contains("right@"),
        "{err}"
    );
}

#[tokio::test]
async fn exactly_once_stores_a_retried_batch_once_and_records_it_in_the_ledger() {
    let server = start();
    let schema = schema();
    let cfg = config(&server);
    let run_id = cfg.run_id;
    let s = sink(cfg);
    s.prepare(&schema).await.unwrap();
    let mut conn = s.connect(&schema, 0).await.unwrap();
    let b = batch(&schema, 0..10, 0);
    let id = tsload_core::BatchId {
        worker: 2,
        seq: 41,
        attempt: 0,
    };
    let first = conn.write(&b, id).await.unwrap();
    assert_eq!((first.rows, first.duplicate), (20, false));
    // The engine's retry after a COMMIT whose answer was lost: stored already.
    let retry = conn
        .write(&b, tsload_core::BatchId { attempt: 1, ..id })
        .await
        .unwrap();
    assert_eq!((retry.rows, retry.duplicate), (20, true));
    // The connection is usable afterwards (the duplicate's transaction was rolled back).
    conn.write(&batch(&schema, 10..12, 0), next_id())
        .await
        .unwrap();
    assert_eq!(server.sql_count("cpu"), 12);
    assert_eq!(server.sql_count("mem"), 12);
    assert_eq!(
        query(
            &server,
            &format!(
                "SELECT count(*), sum(batch_rows) FROM tsload.tsload_ledger WHERE run_id = {run_id}"
            )
        ),
        "2\t24"
    );
    assert_eq!(
        query(
            &server,
            &format!(
                "SELECT batch_rows FROM tsload.tsload_ledger \
                 WHERE run_id = {run_id} AND worker = 2 AND seq = 41"
            )
        ),
        "20"
    );
}

#[tokio::test]
async fn exactly_once_without_transactions_is_a_clear_error() {
    let server = start();
    let mut cfg = config(&server);
    cfg.transaction = TransactionMode::Autocommit;
    let e = MysqlSink::new(cfg).unwrap_err();
    assert!(
        e.message
            .contains("which transaction = \"autocommit\" does not have"),
        "{e}"
    );
    let mut cfg = config(&server);
    cfg.engine = "myisam".to_string();
    let e = MysqlSink::new(cfg).unwrap_err();
    assert!(
        e.message.contains("which engine \"myisam\" does not have"),
        "{e}"
    );
}
