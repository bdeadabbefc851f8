//! Property test of the hand-written COPY encoders (binary and text) against a real
//! PostgreSQL 15: random batches (every column kind, random nulls, extreme integers,
//! NaN and infinities, strings with every character COPY must escape) written through the
//! sink and read back give the same values. A fixed number of cases, so CI's time is
//! bounded.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tsload_core::{Batch, DataType, Sink, SinkConn, TableSchema};
use tsload_sink_postgres::{CopyFormat, InsertMethod, Layout, PostgresConfig, PostgresSink};
use tsload_testbed::fixtures::{
    TS0, field, next_id, push_bool, push_float, push_int, push_str, schema_of, tag,
};
use tsload_testbed::{Server, ServerKind};

/// One generated row: each field `None` when null.
#[derive(Debug, Clone)]
struct Row {
    big: Option<i64>,
    small: Option<i16>,
    real: Option<f64>,
    flag: Option<bool>,
    text: Option<String>,
}

fn text_value() -> impl Strategy<Value = String> {
    // Characters COPY text must escape, quotes, non-ASCII, and anything else but NUL
    // (which PostgreSQL's text type cannot hold).
    let special = prop::sample::select(vec![
        '\t',
        '\n',
        '\r',
        '\\',
        '"',
        '\'',
        ',',
        ' ',
        'é',
        '日',
        '\u{1F600}',
        '\u{7f}',
        '\u{1}',
    ]);
    let any = any::<char>().prop_filter("no NUL", |c| *c != '\0');
    prop::collection::vec(prop_oneof![special, any], 0..24)
        .prop_map(|chars| chars.into_iter().collect())
}

fn float_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.8, any::<i64>()),
        prop::option::weighted(0.8, any::<i16>()),
        prop::option::weighted(0.8, float_value()),
        prop::option::weighted(0.8, any::<bool>()),
        prop::option::weighted(0.8, text_value()),
    )
        .prop_map(|(big, small, real, flag, text)| Row {
            big,
            small,
            real,
            flag,
            text,
        })
}

fn schema() -> Arc<tsload_core::Schema> {
    schema_of(vec![TableSchema {
        name: "prop".to_string(),
        tags: vec![tag("hostname", DataType::Varchar(32), 0)],
        fields: vec![
            field("big", DataType::BigInt),
            field("small", DataType::SmallInt),
            field("real", DataType::Double),
            field("flag", DataType::Bool),
            field("note", DataType::Varchar(200)),
        ],
    }])
}

fn batch(schema: &tsload_core::Schema, rows: &[Row]) -> Batch {
    let mut b = Batch::for_schema(schema);
    let t = &mut b.tables[0];
    for (i, r) in rows.iter().enumerate() {
        t.device.push(i as u32 % 7);
        // Whole microseconds, one apart per row: the read-back order and no truncation.
        t.ts.push(TS0 + i as i64 * 1_000);
        push_int(&mut t.columns[0], r.big.unwrap_or(0));
        push_int(&mut t.columns[1], i64::from(r.small.unwrap_or(0)));
        push_float(&mut t.columns[2], r.real.unwrap_or(0.0));
        push_bool(&mut t.columns[3], r.flag.unwrap_or(false));
        push_str(&mut t.columns[4], r.text.as_deref().unwrap_or(""));
        let nulls = [
            r.big.is_none(),
            r.small.is_none(),
            r.real.is_none(),
            r.flag.is_none(),
            r.text.is_none(),
        ];
        for (col, null) in nulls.into_iter().enumerate() {
            if null {
                t.set_null(col, i);
            }
        }
    }
    t.finish_validity();
    b
}

/// A float8 read back as PostgreSQL's text (`real::text`), parsed by Rust, which rounds
/// correctly.
fn float_of(text: &str) -> f64 {
    match text {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        "-Infinity" => f64::NEG_INFINITY,
        other => other
            .parse()
            .unwrap_or_else(|e| panic!("float text {other:?}: {e}")),
    }
}

fn same_float(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a.is_nan() && b.is_nan()) || a == b,
        (None, None) => true,
        _ => false,
    }
}

fn round_trip(server: &Server, rt: &tokio::runtime::Runtime, format: CopyFormat, rows: &[Row]) {
    let schema = schema();
    let mut cfg = PostgresConfig::new(server.database_url().unwrap());
    cfg.method = InsertMethod::Copy;
    cfg.layout = Layout::Wide;
    cfg.copy_format = format;
    cfg.drop_existing = true;
    let b = batch(&schema, rows);
    rt.block_on(async {
        let sink = PostgresSink::new(cfg).unwrap();
        sink.prepare(&schema).await.unwrap();
        let mut conn = sink.connect(&schema, 0).await.unwrap();
        let ack = conn.write(&b, next_id()).await.unwrap();
        assert_eq!(ack.rows, rows.len() as u64);
    });
    // Read back through sqlx (psql's display would drop some code points, such as
    // noncharacters, and serde_json's float parsing is not exact).
    type Back = (
        String,
        Option<i64>,
        Option<i16>,
        Option<String>,
        Option<bool>,
        Option<String>,
        i64,
    );
    let back: Vec<Back> = rt.block_on(async {
        use sqlx::Connection as _;
        let mut c = sqlx::PgConnection::connect(&server.database_url().unwrap())
            .await
            .unwrap();
        sqlx::query_as(
            "SELECT hostname::text, big, small, real::text, flag, note::text, \
             (extract(epoch FROM ts) * 1000000)::bigint FROM prop ORDER BY ts",
        )
        .fetch_all(&mut c)
        .await
        .unwrap()
    });
    assert_eq!(back.len(), rows.len(), "{format}");
    for (i, (want, got)) in rows.iter().zip(&back).enumerate() {
        let what = format!("{format}, row {i}: {want:?} vs {got:?}");
        assert_eq!(got.0, format!("host_{}", i % 7), "{what}");
        assert_eq!(got.1, want.big, "{what}");
        assert_eq!(got.2, want.small, "{what}");
        assert!(
            same_float(got.3.as_deref().map(float_of), want.real),
            "{what}"
        );
        assert_eq!(got.4, want.flag, "{what}");
        assert_eq!(got.5.as_deref(), want.text.as_deref(), "{what}");
        assert_eq!(got.6, TS0 / 1_000 + i as i64, "{what}");
    }
}

#[test]
fn random_batches_survive_copy_binary_and_text() {
    // One server for every case, owned by this test so that its data dir is removed when
    // the test ends (a server in a `static` is never dropped).
    let server = Server::start(ServerKind::Postgres).expect("PostgreSQL starts");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (prop::collection::vec(row(), 1..40), any::<bool>());
    runner
        .run(&strategy, |(rows, binary)| {
            let format = if binary {
                CopyFormat::Binary
            } else {
                CopyFormat::Text
            };
            round_trip(&server, &rt, format, &rows);
            Ok(())
        })
        .unwrap();
}
