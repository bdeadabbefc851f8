//! Every TSBS devops query type against real servers: a small `cpu-only` data set (8 hosts,
//! 13 hours at 10 s) is loaded with tsload's own sinks through the engine, then one query
//! of each type the dialect supports runs through the server's own client (psql, mariadb,
//! InfluxDB's and QuestDB's HTTP APIs, VictoriaMetrics' `/api/v1/query_range`, sqlx for
//! SQLite). Each query is one whose reference answer has rows; every SQL and InfluxQL
//! answer must have the reference's number of rows, and the grouped answers (max per
//! bucket, mean per hour and host, the last 5 buckets) the reference's values.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use sqlx::{Connection, Row};
use tsload_core::engine::{self, LoadConfig, NoObserver, StopHandle};
use tsload_core::{Param, Sink, Statement};
use tsload_query::render::PromQl;
use tsload_query::{
    Dialect, QueryShape, QuerySpec, QueryType, ReferenceRow, TsbsQueries, TsbsQueriesConfig,
    reference_answer, rfc3339,
};
use tsload_sink_mysql::{MysqlSql, TsType};
use tsload_sink_postgres::{Layout, PostgresSql};
use tsload_testbed::{Server, ServerKind};
use tsload_workload::{CpuOnly, TsbsConfig};

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;
/// 2016-01-01T00:00:00Z
const T0: i64 = 1_451_606_400 * S;
const SCALE: u32 = 8;
const HOURS: i64 = 13;
/// 13 h at 10 s: 4,680 rows per host.
const ROWS: u64 = SCALE as u64 * (HOURS as u64 * 360);

fn data() -> TsbsConfig {
    TsbsConfig {
        seed: 123,
        scale: SCALE,
        start_ns: T0,
        end_ns: T0 + HOURS * H,
        interval_ns: 10 * S,
        churn: None,
        arrival: tsload_workload::Arrival::default(),
        pods: 1,
        wave: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Loads the data set into `sink` with 2 workers; every row must be acknowledged.
fn load<K: Sink>(sink: K, server: Option<&Server>) {
    let workload = Arc::new(CpuOnly::new(data()).expect("valid data set"));
    let cfg = LoadConfig {
        workers: 2,
        batch: 2_000,
        ..LoadConfig::default()
    };
    let outcome = runtime()
        .block_on(engine::run(
            workload,
            Arc::new(sink),
            cfg,
            StopHandle::new(),
            &mut NoObserver,
        ))
        .unwrap_or_else(|e| {
            panic!(
                "load failed: {e}\n{}",
                server.map(|s| s.log_tail()).unwrap_or_default()
            )
        });
    assert!(outcome.fatal.is_none(), "load: {:?}", outcome.fatal);
    assert_eq!(outcome.counters.rows, ROWS, "rows acknowledged");
}

fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"))
}

/// One query of a type, and what it must return.
struct Case {
    spec: QuerySpec,
    statement: Statement,
    expected: Vec<ReferenceRow>,
}

impl Case {
    fn name(&self) -> &'static str {
        self.spec.query_type.name()
    }
}

/// For each type `dialect` supports: the first query of a run of that type alone whose
/// reference answer has rows (high-cpu-1 may find no usage_user above 90 for its host).
fn cases(dialect: Dialect) -> Vec<Case> {
    let mut out = Vec::new();
    for t in dialect.supported_types() {
        let mut cfg = TsbsQueriesConfig::new(42, SCALE, T0, T0 + HOURS * H, dialect.clone());
        cfg.types = Some(vec![t]);
        let w = TsbsQueries::new(cfg).expect("the data fits every type");
        let case = (0..200).find_map(|i| {
            let spec = w.spec(i);
            let expected = reference_answer(&data(), &spec).expect("a reference answer");
            (!expected.is_empty()).then(|| Case {
                statement: w.statement(i),
                spec,
                expected,
            })
        });
        out.push(case.unwrap_or_else(|| panic!("no {t} query with rows in 200 tries")));
    }
    assert_eq!(out.len(), dialect.supported_types().len());
    out
}

/// A row read back: time as the server printed it, the host (per-host shapes), values.
#[derive(Debug, Clone, PartialEq)]
struct GotRow {
    time: String,
    host: Option<String>,
    values: Vec<f64>,
}

/// Checks the grouped shapes' rows against the reference, time printed by `time_text`,
/// values within `tolerance`; rows of per-host answers are compared sorted.
fn check_values(
    server: &str,
    case: &Case,
    mut got: Vec<GotRow>,
    time_text: fn(i64) -> String,
    tolerance: f64,
) {
    let mut expected: Vec<GotRow> = case
        .expected
        .iter()
        .map(|r| GotRow {
            time: time_text(r.time_ns),
            host: r.host.map(|h| format!("host_{h}")),
            values: r.values.clone(),
        })
        .collect();
    if case.spec.query_type.shape() == QueryShape::MeanPerBucketAndHost {
        let key = |r: &GotRow| (r.time.clone(), r.host.clone());
        got.sort_by_key(key);
        expected.sort_by_key(key);
    }
    assert_eq!(
        got.len(),
        expected.len(),
        "{server} {}: rows\n{}",
        case.name(),
        case.statement.text
    );
    for (g, e) in got.iter().zip(&expected) {
        let close = g.values.len() == e.values.len()
            && g.values
                .iter()
                .zip(&e.values)
                .all(|(a, b)| (a - b).abs() <= tolerance);
        assert!(
            g.time == e.time && g.host == e.host && close,
            "{server} {}: got {g:?}, expected {e:?}\n{}",
            case.name(),
            case.statement.text
        );
    }
}

/// Whether the reference values of `case` can be compared (the grouped shapes).
fn grouped(case: &Case) -> bool {
    matches!(
        case.spec.query_type.shape(),
        QueryShape::MaxPerBucket
            | QueryShape::MeanPerBucketAndHost
            | QueryShape::LastBucketsBeforeEnd
    )
}

/// Splits psql / mariadb output into rows of tab-separated fields.
fn lines(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Grouped rows from text rows: time, (host,) values.
fn text_rows(case: &Case, rows: &[Vec<String>]) -> Vec<GotRow> {
    let per_host = case.spec.query_type.shape() == QueryShape::MeanPerBucketAndHost;
    rows.iter()
        .map(|r| {
            let first_value = if per_host { 2 } else { 1 };
            GotRow {
                time: r[0].clone(),
                host: per_host.then(|| r[1].clone()),
                values: r[first_value..]
                    .iter()
                    .map(|v| {
                        v.parse()
                            .unwrap_or_else(|_| panic!("{}: not a number: {v:?}", case.name()))
                    })
                    .collect(),
            }
        })
        .collect()
}

/// `2016-01-01 05:17:00` (MariaDB's DATETIME text).
fn sql_time(ns: i64) -> String {
    rfc3339(ns).replace('T', " ").replace('Z', "")
}

/// `2016-01-01 05:17:00+00` (PostgreSQL's timestamptz text in UTC).
fn pg_time(ns: i64) -> String {
    sql_time(ns) + "+00"
}

fn check_sql_server(
    server: &Server,
    label: &str,
    dialect: Dialect,
    time_text: fn(i64) -> String,
    tolerance: f64,
) {
    for case in cases(dialect) {
        let text = if server.kind() == ServerKind::Postgres {
            format!("SET TIME ZONE 'UTC'; {}", case.statement.text)
        } else {
            case.statement.text.to_string()
        };
        let out = server
            .sql(&text)
            .unwrap_or_else(|e| panic!("{label} {}: {e}\n{}", case.name(), server.log_tail()));
        let rows = lines(&out);
        assert_eq!(
            rows.len(),
            case.expected.len(),
            "{label} {}: rows\n{}\n{out}",
            case.name(),
            case.statement.text
        );
        if grouped(&case) {
            check_values(label, &case, text_rows(&case, &rows), time_text, tolerance);
        }
    }
}

#[test]
fn postgres_answers_every_type_in_both_layouts() {
    let pg = start(ServerKind::Postgres);
    let url = pg.database_url().expect("an SQL server");
    for layout in [Layout::Wide, Layout::TagsTable] {
        let mut cfg = tsload_sink_postgres::PostgresConfig::new(url.clone());
        cfg.drop_existing = true;
        cfg.layout = layout;
        load(
            tsload_sink_postgres::PostgresSink::new(cfg).expect("valid config"),
            Some(&pg),
        );
        let dialect = Dialect::new(PostgresSql {
            layout,
            time_bucket: false,
        });
        check_sql_server(
            &pg,
            &format!("PostgreSQL {layout:?}"),
            dialect,
            pg_time,
            1e-9,
        );
    }
}

/// TSBS's TimescaleDB set-up: hypertables of 2 h chunks in the tags layout, queried with
/// `time_bucket`; every type's answer equals the reference computed from the generator.
#[test]
fn timescaledb_answers_every_type_with_time_bucket_on_hypertables() {
    let db = start(ServerKind::TimescaleDb);
    let mut cfg = tsload_sink_postgres::PostgresConfig::new(db.database_url().unwrap());
    cfg.drop_existing = true;
    cfg.hypertable = true;
    cfg.chunk_time_interval = Some(std::time::Duration::from_secs(2 * 3600));
    cfg.layout = tsload_sink_postgres::Layout::TagsTable;
    load(
        tsload_sink_postgres::PostgresSink::new(cfg).expect("valid config"),
        Some(&db),
    );
    let chunks = db
        .sql("SELECT count(*) FROM timescaledb_information.chunks WHERE hypertable_name = 'cpu'")
        .unwrap();
    assert!(
        chunks.parse::<u32>().unwrap() >= 2,
        "the data spans several chunks: {chunks}"
    );
    let dialect = Dialect::new(PostgresSql {
        layout: Layout::TagsTable,
        time_bucket: true,
    });
    check_sql_server(&db, "TimescaleDB", dialect, pg_time, 1e-9);
}

#[test]
fn postgres_single_groupby_and_cpu_max_all_equal_the_reference() {
    // The two answers the reference was written for, spelled out on their own.
    let pg = start(ServerKind::Postgres);
    let mut cfg = tsload_sink_postgres::PostgresConfig::new(pg.database_url().unwrap());
    cfg.drop_existing = true;
    load(
        tsload_sink_postgres::PostgresSink::new(cfg).unwrap(),
        Some(&pg),
    );
    let dialect = Dialect::new(PostgresSql::default());
    for t in [QueryType::SingleGroupby_1_1_1, QueryType::CpuMaxAll_1] {
        let mut c = TsbsQueriesConfig::new(7, SCALE, T0, T0 + HOURS * H, dialect.clone());
        c.types = Some(vec![t]);
        let w = TsbsQueries::new(c).unwrap();
        for i in 0..3 {
            let spec = w.spec(i);
            let expected = reference_answer(&data(), &spec).unwrap();
            let buckets = if t == QueryType::CpuMaxAll_1 {
                8..=9
            } else {
                60..=61
            };
            assert!(buckets.contains(&expected.len()), "{t}: {}", expected.len());
            let case = Case {
                statement: w.statement(i),
                spec,
                expected,
            };
            let out = pg
                .sql(&format!("SET TIME ZONE 'UTC'; {}", case.statement.text))
                .unwrap();
            check_values(
                "PostgreSQL",
                &case,
                text_rows(&case, &lines(&out)),
                pg_time,
                0.0,
            );
        }
    }
}

#[test]
fn mariadb_answers_every_type_with_both_ts_types() {
    let db = start(ServerKind::MariaDb);
    let url = db.database_url().expect("an SQL server");
    for ts in [TsType::DateTime6, TsType::BigIntNs] {
        let mut cfg = tsload_sink_mysql::MysqlConfig::new(url.clone());
        cfg.drop_existing = true;
        cfg.ts_type = ts;
        load(
            tsload_sink_mysql::MysqlSink::new(cfg).expect("valid config"),
            Some(&db),
        );
        let time_text: fn(i64) -> String = match ts {
            TsType::DateTime6 => sql_time,
            TsType::BigIntNs => |ns| ns.to_string(),
        };
        // MariaDB's AVG of integers keeps 4 decimals.
        check_sql_server(
            &db,
            &format!("MariaDB {ts:?}"),
            Dialect::new(MysqlSql { ts }),
            time_text,
            1e-4,
        );
    }
}

#[test]
fn sqlite_answers_every_type() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("q.db").display());
    load(
        tsload_sink_sqlite::SqliteSink::new(tsload_sink_sqlite::SqliteConfig::new(url.clone())),
        None,
    );
    let rt = runtime();
    rt.block_on(async {
        let mut conn = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("open the database");
        for case in cases(Dialect::new(tsload_sink_sqlite::SqliteSql)) {
            let rows = sqlx::query(&case.statement.text)
                .fetch_all(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("SQLite {}: {e}\n{}", case.name(), case.statement.text));
            assert_eq!(
                rows.len(),
                case.expected.len(),
                "SQLite {}: rows\n{}",
                case.name(),
                case.statement.text
            );
            if !grouped(&case) {
                continue;
            }
            let per_host = case.spec.query_type.shape() == QueryShape::MeanPerBucketAndHost;
            let got = rows
                .iter()
                .map(|r| {
                    let first_value = if per_host { 2 } else { 1 };
                    GotRow {
                        time: r.get::<i64, _>(0).to_string(),
                        host: per_host.then(|| r.get::<String, _>(1)),
                        values: (first_value..r.len())
                            .map(|i| {
                                // max() of integers is INTEGER, avg() REAL.
                                r.try_get::<i64, _>(i)
                                    .map(|v| v as f64)
                                    .unwrap_or_else(|_| r.get::<f64, _>(i))
                            })
                            .collect(),
                    }
                })
                .collect();
            check_values("SQLite", &case, got, |ns| ns.to_string(), 1e-9);
        }
    });
}

/// The values of InfluxQL's answer, one row per point of every series (per-host series
/// carry their `hostname` tag).
fn influx_rows(case: &Case, json: &Value) -> Vec<GotRow> {
    let per_host = case.spec.query_type.shape() == QueryShape::MeanPerBucketAndHost;
    let mut out = Vec::new();
    for series in json["results"][0]["series"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let host = series["tags"]["hostname"].as_str().map(str::to_string);
        for v in series["values"].as_array().into_iter().flatten() {
            let v = v.as_array().expect("a row");
            out.push(GotRow {
                time: v[0].as_str().unwrap_or_default().to_string(),
                host: if per_host { host.clone() } else { None },
                values: v[1..]
                    .iter()
                    .map(|x| x.as_f64().unwrap_or(f64::NAN))
                    .collect(),
            });
        }
    }
    out
}

#[test]
fn influxdb_answers_every_type() {
    let influx = start(ServerKind::InfluxDb1);
    load(
        tsload_sink_influx::InfluxSink::new(tsload_sink_influx::InfluxConfig::v1(
            influx.base_url(),
            "benchmark",
        ))
        .expect("valid config"),
        Some(&influx),
    );
    for case in cases(Dialect::new(tsload_sink_influx::InfluxQl)) {
        let json = influx
            .influx_query("benchmark", &case.statement.text)
            .unwrap_or_else(|e| panic!("InfluxDB {}: {e}", case.name()));
        let got = influx_rows(&case, &json);
        assert_eq!(
            got.len(),
            case.expected.len(),
            "InfluxDB {}: rows\n{}\n{json}",
            case.name(),
            case.statement.text
        );
        if grouped(&case) {
            check_values("InfluxDB", &case, got, rfc3339, 1e-9);
        }
    }
}

#[test]
fn questdb_answers_every_type() {
    let qdb = start(ServerKind::QuestDb);
    let mut cfg = tsload_sink_influx::InfluxConfig::v1(qdb.base_url(), "qdb");
    cfg.create_database = false;
    load(
        tsload_sink_influx::InfluxSink::new(cfg).expect("valid config"),
        Some(&qdb),
    );
    qdb.questdb_wait_wal().expect("QuestDB applies its WAL");
    for case in cases(Dialect::new(tsload_sink_influx::QuestDbSql)) {
        let json = qdb
            .questdb_exec(&case.statement.text)
            .unwrap_or_else(|e| panic!("QuestDB {}: {e}\n{}", case.name(), qdb.log_tail()));
        let rows = json["dataset"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            rows.len(),
            case.expected.len(),
            "QuestDB {}: rows\n{}\n{json}",
            case.name(),
            case.statement.text
        );
        if grouped(&case) {
            let per_host = case.spec.query_type.shape() == QueryShape::MeanPerBucketAndHost;
            let got = rows
                .iter()
                .map(|r| {
                    let first_value = if per_host { 2 } else { 1 };
                    let time = r[0].as_str().unwrap_or_default();
                    GotRow {
                        // 2016-01-01T05:17:00.000000Z -> 2016-01-01T05:17:00Z
                        time: time.replace(".000000Z", "Z"),
                        host: per_host.then(|| r[1].as_str().unwrap_or_default().to_string()),
                        values: r.as_array().unwrap()[first_value..]
                            .iter()
                            .map(|x| x.as_f64().unwrap_or(f64::NAN))
                            .collect(),
                    }
                })
                .collect();
            check_values("QuestDB", &case, got, rfc3339, 1e-9);
        }
    }
}

/// `1451606400123` ms as `/api/v1/query_range`'s seconds: `1451606400.123`.
fn seconds(p: &Param) -> String {
    match p {
        Param::Int(ms) => format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000)),
        other => panic!("not a time parameter: {other:?}"),
    }
}

#[test]
fn victoriametrics_answers_every_type_it_can_express() {
    let vm = start(ServerKind::VictoriaMetrics);
    let mut cfg = tsload_sink_influx::InfluxConfig::v1(vm.base_url(), "vm");
    cfg.create_database = false;
    load(
        tsload_sink_influx::InfluxSink::new(cfg).expect("valid config"),
        Some(&vm),
    );
    vm.vm_flush();
    let all = cases(Dialect::new(PromQl::METRICSQL));
    assert_eq!(
        all.len(),
        11,
        "PromQL leaves out high-cpu-*, groupby-orderby-limit, lastpoint"
    );
    for case in all {
        let [start, end, Param::Int(step)] = case.statement.params.as_slice() else {
            panic!("{}: params {:?}", case.name(), case.statement.params);
        };
        let (start, end, step) = (seconds(start), seconds(end), step.to_string());
        let answer = vm
            .get(
                "/api/v1/query_range",
                &[
                    ("query", &*case.statement.text),
                    ("start", &start),
                    ("end", &end),
                    ("step", &step),
                ],
            )
            .unwrap_or_else(|e| panic!("VictoriaMetrics {}: {e}", case.name()));
        assert_eq!(
            answer.status,
            200,
            "VictoriaMetrics {}: {}\n{}",
            case.name(),
            answer.body,
            case.statement.text
        );
        let json = answer.json("query_range").unwrap();
        let series = json["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // One series per metric (keep_metric_names), per host for double-groupby.
        let metrics = case.spec.query_type.metrics();
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for s in &series {
            let name = s["metric"]["__name__"]
                .as_str()
                .unwrap_or("<none>")
                .to_string();
            *names.entry(name).or_default() += 1;
            assert!(
                !s["values"].as_array().is_none_or(Vec::is_empty),
                "VictoriaMetrics {}: a series without points: {s}",
                case.name()
            );
        }
        let per_name = match case.spec.query_type.shape() {
            QueryShape::MeanPerBucketAndHost => SCALE as usize,
            _ => 1,
        };
        let expected: BTreeMap<String, usize> = metrics
            .iter()
            .map(|m| (format!("cpu_{m}"), per_name))
            .collect();
        assert_eq!(
            names,
            expected,
            "VictoriaMetrics {}\n{}",
            case.name(),
            case.statement.text
        );
    }
}
