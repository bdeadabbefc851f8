//! `mode = "query"` and `"mixed"` against real servers on 127.0.0.1: every TSBS query type
//! runs through tsload's own read targets in each server's language and returns rows; a
//! query error is counted and the run goes on (until an error budget stops it); the OLTP
//! workload keeps sysbench's statement mix and table shape (sysbench itself runs on the
//! tables tsload prepared); a mixed run reports writes and queries side by side.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::{Command, Output};

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{start, text, tsload};

/// `tsload run --json r.json` with `sets`; the report when it wrote one.
fn run(dir: &Path, sets: &[String]) -> (Output, serde_json::Value) {
    let _ = std::fs::remove_file(dir.join("r.json"));
    let mut cmd = tsload();
    cmd.args(["run", "--json", "r.json", "--progress", "none"])
        .current_dir(dir);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("start tsload");
    let Ok(bytes) = std::fs::read(dir.join("r.json")) else {
        return (out, serde_json::Value::Null);
    };
    // Every report the binary writes reads back through the one reader, checked.
    if let Err(e) = tsload_report::RunReport::read("r.json", &bytes) {
        panic!(
            "the report tsload wrote does not read back: {e}\n{}",
            text(&bytes)
        );
    }
    (out, serde_json::from_slice(&bytes).unwrap())
}

fn s(v: &str) -> String {
    v.to_string()
}

/// TSBS data for the queries: 10 hosts x 12 h (every type's window fits).
fn tsbs_data() -> Vec<String> {
    vec![
        s("workload.kind=\"cpu-only\""),
        s("workload.scale=10"),
        s("workload.end=\"2016-01-01T12:00:00Z\""),
        s("load.batch=2000"),
        s("load.workers=2"),
    ]
}

fn target_sets(server: &Server) -> Vec<String> {
    match server.kind() {
        ServerKind::Postgres => vec![
            s("target.kind=\"postgres\""),
            format!("target.url=\"{}\"", server.database_url().unwrap()),
            s("target.drop_existing=true"),
        ],
        ServerKind::TimescaleDb => vec![
            s("target.kind=\"postgres\""),
            format!("target.url=\"{}\"", server.database_url().unwrap()),
            s("target.drop_existing=true"),
            s("target.hypertable=true"),
            s("target.layout=\"tags\""),
            s("query.time_bucket=true"),
        ],
        ServerKind::MariaDb => vec![
            s("target.kind=\"mysql\""),
            format!("target.url=\"{}\"", server.database_url().unwrap()),
            s("target.drop_existing=true"),
        ],
        ServerKind::InfluxDb1 => vec![
            s("target.kind=\"influx\""),
            format!("target.url=\"{}\"", server.base_url()),
        ],
        ServerKind::VictoriaMetrics => vec![
            s("target.kind=\"influx\""),
            format!("target.url=\"{}\"", server.base_url()),
            s("target.create_database=false"),
            s("query.dialect=\"promql\""),
        ],
        ServerKind::QuestDb => vec![
            s("target.kind=\"influx\""),
            format!("target.url=\"{}\"", server.base_url()),
            s("target.create_database=false"),
            s("query.dialect=\"questdb\""),
        ],
        // Remote write, read back in standard PromQL. One worker: Prometheus as installed
        // refuses samples an hour older than its newest, and two workers each walk the 12 h
        // on their own.
        ServerKind::Prometheus => vec![
            s("load.workers=1"),
            s("target.kind=\"prometheus\""),
            format!("target.url=\"{}/api/v1/write\"", server.base_url()),
            s("query.dialect=\"promql\""),
        ],
        ServerKind::ClickHouse => vec![
            s("target.kind=\"clickhouse\""),
            format!("target.url=\"{}\"", server.base_url()),
            s("target.drop_existing=true"),
        ],
    }
}

/// Runs every type the target's language has, 3 queries each, after writing the data.
fn every_type(name: &str, dir: &Path, target: Vec<String>, before_queries: impl Fn()) {
    let mut sets = tsbs_data();
    sets.extend(target.iter().filter(|t| !t.starts_with("query.")).cloned());
    sets.push(s("mode=\"write\""));
    let (out, _) = run(dir, &sets);
    assert!(out.status.success(), "{name} load: {}", text(&out.stderr));
    before_queries();
    let mut sets = tsbs_data();
    sets.extend(target);
    sets.retain(|t| !t.starts_with("target.drop_existing"));
    sets.extend([s("query.kind=\"tsbs\""), s("query.workers=3")]);
    let promql = sets.iter().any(|t| t.contains("promql"));
    let types = if promql { 11 } else { 15 };
    sets.push(format!("query.queries={}", types * 3));
    let (out, r) = run(dir, &sets);
    assert!(
        out.status.success(),
        "{name}: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let kinds = r["kinds"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: {r}"));
    assert_eq!(kinds.len(), types, "{name}");
    assert_eq!(r["requests"], types as u64 * 3, "{name}: {r}");
    assert_eq!(r["failed_requests"], 0, "{name}: {r}");
    for k in kinds {
        assert_eq!(k["requests"], 3, "{name}: {k}");
        assert!(
            k["rows"].as_u64().unwrap() > 0,
            "{name}: {} returned no rows",
            k["name"]
        );
        assert!(
            k["latency"]["p50_ms"].as_f64().unwrap() > 0.0,
            "{name}: {k}"
        );
    }
}

/// Waits until VictoriaMetrics' searches see every series of `tsbs_data()` (10 hosts x 10
/// fields): a flushed write's new series reached the index a moment after the flush once
/// on a busy machine, and the first queries (single-groupby-1-1-1) then found nothing.
fn vm_searchable(server: &Server) {
    server.vm_flush();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let series = server.vm_series_count(r#"{__name__=~"cpu_.*"}"#);
        if series == 100 {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "VictoriaMetrics shows {series} of 100 series 30 s after the flush"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        server.vm_flush();
    }
}

#[test]
fn every_tsbs_query_type_runs_and_returns_rows_on_every_server() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [
        ServerKind::Postgres,
        ServerKind::MariaDb,
        ServerKind::InfluxDb1,
        ServerKind::VictoriaMetrics,
        ServerKind::QuestDb,
        ServerKind::Prometheus,
        ServerKind::ClickHouse,
    ] {
        let server = start(kind);
        let name = format!("{kind:?}");
        every_type(&name, dir.path(), target_sets(&server), || match kind {
            ServerKind::VictoriaMetrics => vm_searchable(&server),
            ServerKind::QuestDb => server.questdb_wait_wal().unwrap(),
            _ => {}
        });
    }
    // The embedded default too.
    every_type(
        "sqlite",
        dir.path(),
        vec![
            s("target.url=\"sqlite:./q.db\""),
            s("target.drop_existing=true"),
        ],
        || {},
    );
}

#[test]
fn a_query_error_is_counted_and_the_run_goes_on() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let mut base = tsbs_data();
    base.extend(target_sets(&pg));
    let mut load = base.clone();
    load.push(s("mode=\"write\""));
    let (out, _) = run(dir.path(), &load);
    assert!(out.status.success(), "{}", text(&out.stderr));
    base.retain(|t| !t.starts_with("target.drop_existing"));
    base.extend([
        s("query.kind=\"tsbs\""),
        s("query.types=[\"single-groupby-1-1-1\", \"lastpoint\"]"),
        s("query.workers=2"),
        s("query.duration=\"4s\""),
    ]);
    // The table goes away once the run has answered more than 10 queries: a progress line
    // (250 ms intervals) says so, whatever the machine's load (two lines alone held only
    // 9 answers on a busy machine).
    let mut child = {
        let mut cmd = tsload();
        cmd.args(["run", "--json", "r.json", "--progress", "plain"])
            .args(["--set", "query.report_interval=\"250ms\""])
            .current_dir(dir.path())
            .stderr(std::process::Stdio::piped());
        for t in &base {
            cmd.args(["--set", t]);
        }
        cmd.spawn().unwrap()
    };
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut answered = 0u64;
    while answered <= 10 {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "the run ended before it answered 11 queries: {seen}");
        // `[   0.5s] requests          12 | ...`: the requests answered so far.
        if line.starts_with('[')
            && let Some(count) = line
                .split("requests")
                .nth(1)
                .and_then(|rest| rest.split('|').next())
        {
            answered = count.trim().replace(',', "").parse().unwrap_or(0);
        }
        seen.push_str(&line);
    }
    pg.sql("DROP TABLE cpu").expect("drop the table mid-run");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    let out = Output {
        status,
        stdout: Vec::new(),
        stderr: seen.into_bytes(),
    };
    // The run went on to its end, and then failed: far more than 5% of its requests
    // failed, and no `max_errors` said that was expected.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("requests failed") && text(&out.stderr).contains("max_errors"),
        "{}",
        text(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["stop_reason"], "duration", "{r}");
    let rejected = r["errors"]["rejected"].as_u64().unwrap_or(0);
    assert!(rejected > 10, "errors after the drop are counted: {r}");
    assert!(
        r["requests"].as_u64().unwrap() > 10,
        "requests before the drop: {r}"
    );
    assert_eq!(r["failed_requests"].as_u64().unwrap(), rejected);
    for k in r["kinds"].as_array().unwrap() {
        assert!(k["failed"].as_u64().unwrap() > 0, "{k}");
        assert!(k["requests"].as_u64().unwrap() > 0, "{k}");
    }

    // With an error budget, the run stops on it and exits 1.
    let mut sets = base.clone();
    sets.push(s("query.max_errors=5"));
    let (out, r) = run(dir.path(), &sets);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(r["stop_reason"], "fatal error", "{r}");
    // The 6th failure stops the run; the other worker's request in flight may add one.
    let failed = r["failed_requests"].as_u64().unwrap();
    assert!((6..=7).contains(&failed), "{r}");
    assert!(
        r["fatal_error"].as_str().unwrap().contains("max_errors"),
        "{r}"
    );
    assert!(
        text(&out.stderr).contains("does not exist"),
        "{}",
        text(&out.stderr)
    );
}

fn oltp_sets(server: &Server) -> Vec<String> {
    let mut sets = target_sets(server);
    sets.retain(|t| !t.starts_with("target.drop_existing"));
    sets.extend([
        s("query.kind=\"oltp_read_write\""),
        s("query.table_size=2000"),
        s("query.workers=2"),
        s("query.duration=\"2s\""),
    ]);
    sets
}

#[test]
fn oltp_read_write_keeps_sysbench_s_mix_and_sysbench_runs_on_its_tables() {
    let db = start(ServerKind::MariaDb);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run(dir.path(), &oltp_sets(&db));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tx = r["requests"].as_u64().unwrap();
    assert!(tx > 20, "{r}");
    // 10 point selects + 4 ranges + 2 updates + delete + insert per transaction.
    assert_eq!(r["statements"].as_u64().unwrap(), tx * 18, "{r}");
    assert_eq!(r["load_rows"].as_u64().unwrap(), 2000, "{r}");
    assert_eq!(r["kinds"][0]["name"], "oltp_read_write");
    assert_eq!(
        db.sql_count("sbtest1"),
        2000,
        "delete + insert keep the row count"
    );

    // sysbench (Debian's 1.0.20, installed by `cargo xtask test`) on the same tables.
    let addr = db.addr();
    let out = Command::new("sysbench")
        .args([
            "oltp_read_write",
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={}", addr.port()),
            "--mysql-user=root",
            "--mysql-db=tsload",
            "--tables=1",
            "--table-size=2000",
            "--rand-type=uniform",
            "--threads=2",
            "--time=2",
            "run",
        ])
        .output()
        .expect("sysbench is installed (cargo xtask test installs Debian's sysbench)");
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}\n{}", text(&out.stderr));
    let field = |name: &str| -> u64 {
        report
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in:\n{report}"))
    };
    let (read, write, other) = (field("read:"), field("write:"), field("other:"));
    let transactions = field("transactions:");
    assert!(transactions > 0, "{report}");
    assert_eq!(read, transactions * 14, "{report}");
    assert_eq!(write, transactions * 4, "{report}");
    assert_eq!(other, transactions * 2, "BEGIN + COMMIT: {report}");
}

#[test]
fn oltp_runs_on_postgres_and_sqlite() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    for kind in ["oltp_read_write", "oltp_point_select", "oltp_insert"] {
        let mut sets = oltp_sets(&pg);
        sets.push(format!("query.kind=\"{kind}\""));
        let (out, r) = run(dir.path(), &sets);
        assert!(out.status.success(), "{kind}: {}", text(&out.stderr));
        assert!(r["requests"].as_u64().unwrap() > 10, "{kind}: {r}");
        let failed = r["failed_requests"].as_u64().unwrap();
        // Concurrent delete + insert of one id may conflict, as in sysbench (which
        // retries those); never more than a few.
        assert!(
            failed * 100 <= r["requests"].as_u64().unwrap(),
            "{kind}: {r}"
        );
    }
    let sets = vec![
        s("target.url=\"sqlite:./oltp.db\""),
        s("query.kind=\"oltp_read_write\""),
        s("query.table_size=1000"),
        s("query.workers=1"),
        s("query.queries=200"),
    ];
    let (out, r) = run(dir.path(), &sets);
    assert!(out.status.success(), "sqlite: {}", text(&out.stderr));
    assert_eq!(r["requests"], 200, "{r}");
    assert_eq!(r["stop_reason"], "request limit", "{r}");
}

#[test]
fn a_mixed_run_reports_writes_and_queries_side_by_side() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let mut sets = tsbs_data();
    sets.extend(target_sets(&vm));
    sets.extend([
        s("mode=\"mixed\""),
        s("load.rate=20000"),
        s("load.batch=500"),
        s("load.duration=\"3s\""),
        s("load.report_interval=\"250ms\""),
        s("query.kind=\"tsbs\""),
        s("query.types=[\"single-groupby-1-1-1\", \"cpu-max-all-1\"]"),
        s("query.rate=20"),
        s("query.start_after=\"1s\""),
        // Each stream is judged on what it measures: metrics/s on the writes,
        // statements/s on the queries, latency on both.
        s("output.fail_if=[\"metrics_per_s>1\", \"statements_per_s>0.1\", \"p99<60s\"]"),
    ]);
    let (out, r) = run(dir.path(), &sets);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("=== writes ===") && stdout.contains("=== queries ==="));
    assert!(r["write"]["rows"].as_u64().unwrap() > 30_000, "{r}");
    let q = r["query"]["requests"].as_u64().unwrap();
    // 20/s from 1 s after the writes' start to their end (3 s plus set-up).
    assert!((20..=80).contains(&q), "about 20/s for 2 s: {q}");
    assert!(
        r["write_latency_alone"]["count"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert!(
        r["write_latency_with_queries"]["count"].as_u64().unwrap() > 0,
        "{r}"
    );
    // Read back as one report: both streams, the writes' own verdict.
    let typed = tsload_report::RunReport::from_json("r.json", r.clone()).unwrap();
    assert_eq!(typed.streams.write().unwrap().rows, r["write"]["rows"]);
    assert_eq!(typed.streams.query().unwrap().requests, q);
    assert!(typed.verdict(0).is_measure(), "{:?}", typed.verdict(0));
    assert_eq!(typed.thresholds.len(), 3);
    assert!(
        typed.thresholds.iter().all(|t| t.passed),
        "{:?}",
        typed.thresholds
    );
}

#[test]
fn query_settings_are_checked_before_anything_runs() {
    let cases: &[(&[&str], &str)] = &[
        (&["mode=\"query\""], "needs a [query] section"),
        (
            &["query.kind=\"graphql\""],
            "allowed: tsbs, oltp_read_write",
        ),
        (
            &[
                "query.kind=\"tsbs\"",
                "query.types=[\"single-groupby-9-9-9\"]",
            ],
            "not a TSBS devops query type",
        ),
        (
            &["query.kind=\"tsbs\"", "query.table_size=10"],
            "not a setting of query kind \"tsbs\"",
        ),
        (
            &["query.kind=\"oltp_point_select\"", "query.delete_inserts=2"],
            "not a setting of query kind \"oltp_point_select\"",
        ),
        (
            &["query.kind=\"tsbs\"", "query.dialect=\"promql\""],
            "only line-protocol targets",
        ),
        // The quickstart's 6 h are shorter than the 8 h and 12 h windows.
        (&["query.kind=\"tsbs\""], "[query]"),
        (
            &["mode=\"mixed\"", "query.kind=\"oltp_read_write\""],
            "an OLTP workload writes by itself",
        ),
        (
            &["query.kind=\"tsbs\"", "query.start_after=\"1s\""],
            "only mode \"mixed\"",
        ),
    ];
    for (sets, expect) in cases {
        let mut cmd = tsload();
        cmd.arg("validate");
        for t in *sets {
            cmd.args(["--set", t]);
        }
        let out = cmd.output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sets:?}: {err}");
        assert!(
            err.contains(expect),
            "{sets:?}: expected `{expect}` in: {err}"
        );
    }
}

#[test]
fn a_preload_that_ends_on_its_row_limit_still_runs_the_queries() {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = tsbs_data();
    sets.extend([
        s("target.url=\"sqlite:./p.db\""),
        s("target.drop_existing=true"),
        s("load.rows=20000"),
        s("query.kind=\"tsbs\""),
        s("query.preload=true"),
        s("query.types=[\"lastpoint\"]"),
        s("query.queries=5"),
    ]);
    let (out, r) = run(dir.path(), &sets);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["preload"]["rows"], 20000, "{r}");
    assert_eq!(r["requests"], 5, "{r}");
    assert_eq!(r["stop_reason"], "request limit", "{r}");
}

#[test]
fn a_query_report_has_no_write_figures_and_keeps_cpu_per_request() {
    // The write report's client block made a query run's JSON say e.g.
    // `cpu_us_per_1000_metrics: 1149300`, for metrics it never wrote.
    let dir = tempfile::tempdir().unwrap();
    let sets = vec![
        s("target.url=\"sqlite:./oltp.db\""),
        s("query.kind=\"oltp_point_select\""),
        s("query.table_size=1000"),
        s("query.workers=1"),
        s("query.queries=300"),
    ];
    let (out, r) = run(dir.path(), &sets);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["requests"], 300, "{r}");
    let mut report = r.as_object().unwrap().clone();
    report.remove("scenario");
    let text_of = serde_json::Value::Object(report).to_string();
    for write_only in ["metric", "mb_per_s"] {
        assert!(!text_of.contains(write_only), "`{write_only}` in {text_of}");
    }
    let client = r["client"].as_object().unwrap();
    let mut keys: Vec<&str> = client.keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cpu_s",
            "cpu_split_rough",
            "cpu_system_s",
            "cpu_user_s",
            "peak_rss_bytes"
        ],
        "{r}"
    );
    assert!(r["cpu_us_per_request"].as_f64().unwrap() > 0.0, "{r}");
    assert!(client["peak_rss_bytes"].as_u64().unwrap() > 0, "{r}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("us per request"), "{stdout}");
    assert!(!stdout.contains("per 1,000 metrics"), "{stdout}");
}

/// The requests of each kind in a query report.
fn per_kind(r: &serde_json::Value) -> Vec<(String, u64)> {
    r["kinds"]
        .as_array()
        .unwrap_or_else(|| panic!("no kinds: {r}"))
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["requests"].as_u64().unwrap() + k["failed"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_open_loop_query_run_that_falls_short_says_so_and_keeps_its_type_mix() {
    // The defect: with as many workers as types each worker ran one type, so a slow type
    // (here double-groupby-all, a scan of the whole data set, against 1-host lookups) fell
    // far behind the others when time cut the run; and the report said nothing of the
    // rate it fell short of.
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let mut base = tsbs_data();
    base.extend(target_sets(&pg));
    let mut load = base.clone();
    load.push(s("mode=\"write\""));
    let (out, _) = run(dir.path(), &load);
    assert!(out.status.success(), "{}", text(&out.stderr));
    base.retain(|t| !t.starts_with("target.drop_existing"));
    let workers = 4u64;
    base.extend([
        s("mode=\"query\""),
        s("query.kind=\"tsbs\""),
        s("query.types=[\"single-groupby-1-1-1\", \"single-groupby-5-1-1\", \"cpu-max-all-1\", \"double-groupby-all\"]"),
        format!("query.workers={workers}"),
        // Far above what 4 connections can do when a quarter of the queries scan the
        // whole table (10,000/s is 0.4 ms per query per worker): it falls short by
        // construction, whatever the machine.
        s("query.rate=10000"),
        s("query.duration=\"2s\""),
    ]);
    let (out, r) = run(dir.path(), &base);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    assert_eq!(r["stop_reason"], "duration", "{r}");

    // Each worker runs the types in turn, so when time cuts the run each type has had its
    // share: within one request per worker of every other type.
    let kinds = per_kind(&r);
    assert_eq!(kinds.len(), 4);
    let (lo, hi) = (
        kinds.iter().map(|k| k.1).min().unwrap(),
        kinds.iter().map(|k| k.1).max().unwrap(),
    );
    assert!(lo > 0, "{kinds:?}");
    assert!(hi - lo <= workers, "the type mix: {kinds:?}");

    // Offered vs achieved, in JSON and text, with the warning.
    assert_eq!(r["offered_requests_per_s"], 10000.0, "{r}");
    let achieved = r["achieved_ratio"]
        .as_f64()
        .unwrap_or_else(|| panic!("{r}"));
    let rate = r["requests_per_s"].as_f64().unwrap();
    assert!((achieved - rate / 10000.0).abs() < 1e-9, "{r}");
    assert!(achieved < 0.95, "{r}");
    let unsent = r["unsent_requests"].as_u64().unwrap();
    assert!(unsent > 0, "requests were due and never sent: {r}");
    let offered = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("offered"))
        .unwrap_or_else(|| panic!("no offered line: {stdout}"));
    assert!(
        offered.contains("10,000 requests/s")
            && offered.contains(&format!("achieved {:.1}%", achieved * 100.0)),
        "{offered}"
    );
    assert!(
        stdout.contains(&format!(
            "WARNING    the queries fell behind the offered rate: {} requests were due but never sent",
            tsload_report::report::group(unsent)
        )),
        "{stdout}"
    );
}

#[test]
fn a_mixed_runs_queries_end_on_their_duration_or_say_the_writes_ended_them() {
    // The defect: without a limit of its own the read stream was stopped as "data end"
    // whenever the writes ended, and said nothing else.
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let mut sets = tsbs_data();
    sets.extend(target_sets(&vm));
    sets.extend([
        s("mode=\"mixed\""),
        s("load.batch=500"),
        s("query.kind=\"tsbs\""),
        s("query.types=[\"single-groupby-1-1-1\", \"cpu-max-all-1\"]"),
        s("query.workers=2"),
        s("query.rate=20"),
        s("query.start_after=\"1s\""),
    ]);
    // Writes for 2.5 s at 10,000 rows/s: 25,000 of the 43,200 rows. The queries end on
    // their own clock, at the writes' end, and say what they were offered.
    let mut enough = sets.clone();
    enough.extend([s("load.rate=10000"), s("load.duration=\"2500ms\"")]);
    let (out, r) = run(dir.path(), &enough);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    assert_eq!(r["write"]["stop_reason"], "duration", "{r}");
    assert_eq!(r["query"]["stop_reason"], "duration", "{r}");
    assert_eq!(r["query"]["offered_requests_per_s"], 20.0, "{r}");
    assert!(r["query"]["achieved_ratio"].as_f64().is_some(), "{r}");
    assert!(
        !text(&out.stderr).contains("warning: the writes"),
        "{}",
        text(&out.stderr)
    );

    // Writes for 10 s at 20,000 rows/s would need 200,000 rows: the data set ends after
    // about 2.2 s, which tsload says before it starts, and the queries end with the writes,
    // which the report says too.
    let mut short = sets.clone();
    short.extend([s("load.rate=20000"), s("load.duration=\"10s\"")]);
    let (out, r) = run(dir.path(), &short);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(
        stderr.contains("warning: the writes have 43,200 rows, 2.2 s at load.rate = 20,000 rows/s, less than load.duration = 10s"),
        "{stderr}"
    );
    assert_eq!(r["write"]["stop_reason"], "data end", "{r}");
    assert_eq!(r["queries_ended_with_writes"], "data end", "{r}");
    assert!(
        stdout.contains(
            "the queries, without a limit of their own, ended with the writes: data end after"
        ),
        "{stdout}"
    );
}
