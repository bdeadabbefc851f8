//! The SQL targets against real PostgreSQL 15 and MariaDB 10.11 started on 127.0.0.1 by the
//! testbed: every insert method lands every reported row, devops creates its 9 tables, rows
//! read back carry the generated values, and a server killed mid-run costs retries, not
//! rows.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{start, text, tsload};

fn report(dir: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(dir.join("r.json")).expect("report written");
    serde_json::from_str(&s).expect("valid JSON")
}

/// `tsload run` into `server` with `--set` overrides; returns the output and the report.
fn run_into(server: &Server, kind: &str, sets: &[&str], dir: &Path) -> (Output, serde_json::Value) {
    let url = server.database_url().expect("an SQL server");
    let mut args = vec![
        "run".to_string(),
        "--json".into(),
        "r.json".into(),
        "--progress".into(),
        "none".into(),
        "--set".into(),
        format!("target.kind=\"{kind}\""),
        "--set".into(),
        format!("target.url=\"{url}\""),
        "--set".into(),
        "target.drop_existing=true".into(),
    ];
    for s in sets {
        args.push("--set".into());
        args.push((*s).into());
    }
    let out = tsload()
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("start tsload");
    let r = if out.status.success() {
        report(dir)
    } else {
        serde_json::Value::Null
    };
    (out, r)
}

const SMALL_CPU: &[&str] = &[
    "workload.scale=5",
    "workload.end=\"2016-01-01T00:30:00Z\"",
    "load.batch=100",
];

#[test]
fn postgres_lands_every_row_for_every_method_and_layout() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    for method in ["copy", "insert", "unnest"] {
        for layout in ["wide", "tags"] {
            let mut sets = SMALL_CPU.to_vec();
            let m = format!("target.method=\"{method}\"");
            let l = format!("target.layout=\"{layout}\"");
            sets.extend([m.as_str(), l.as_str(), "load.workers=3"]);
            let (out, r) = run_into(&pg, "postgres", &sets, dir.path());
            assert!(
                out.status.success(),
                "{method}/{layout}: {}\n{}",
                text(&out.stderr),
                pg.log_tail()
            );
            assert_eq!(r["rows"], 900, "{method}/{layout}");
            assert_eq!(pg.sql_count("cpu"), 900, "{method}/{layout}");
        }
    }
    // copy text too.
    let mut sets = SMALL_CPU.to_vec();
    sets.push("target.copy_format=\"text\"");
    let (out, _) = run_into(&pg, "postgres", &sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(pg.sql_count("cpu"), 900);
}

#[test]
fn postgres_row_read_back_has_the_generated_tags_and_values() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_into(&pg, "postgres", SMALL_CPU, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let generated = tsload()
        .args([
            "generate",
            "--set",
            "workload.scale=5",
            "--set",
            "workload.end=\"2016-01-01T00:30:00Z\"",
        ])
        .output()
        .unwrap();
    let lines = text(&generated.stdout);
    let line = lines
        .lines()
        .find(|l| l.starts_with("cpu,hostname=host_2,"))
        .unwrap();
    let (key, rest) = line.split_once(' ').unwrap();
    let (fields, _) = rest.split_once(' ').unwrap();
    let row = pg
        .sql(
            "SELECT region, datacenter, rack, os, usage_user, usage_idle, usage_guest_nice, \
             extract(epoch from ts)::bigint FROM cpu WHERE hostname = 'host_2' ORDER BY ts LIMIT 1",
        )
        .unwrap();
    let got: Vec<&str> = row.split('\t').collect();
    let tag = |k: &str| {
        key.split(',')
            .find_map(|t| t.strip_prefix(&format!("{k}=")))
            .unwrap()
    };
    let field = |k: &str| {
        fields
            .split(',')
            .find_map(|f| f.strip_prefix(&format!("{k}=")))
            .unwrap()
            .trim_end_matches('i')
    };
    assert_eq!(
        got,
        [
            tag("region"),
            tag("datacenter"),
            tag("rack"),
            tag("os"),
            field("usage_user"),
            field("usage_idle"),
            field("usage_guest_nice"),
            "1451606400",
        ]
    );
}

#[test]
fn devops_creates_all_nine_tables_in_postgres_and_mariadb() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, target) in [
        (ServerKind::Postgres, "postgres"),
        (ServerKind::MariaDb, "mysql"),
    ] {
        let server = start(kind);
        let sets = [
            "workload.kind=\"devops\"",
            "workload.scale=2",
            "workload.end=\"2016-01-01T00:10:00Z\"",
            "load.batch=50",
        ];
        let (out, r) = run_into(&server, target, &sets, dir.path());
        assert!(
            out.status.success(),
            "{target}: {}\n{}",
            text(&out.stderr),
            server.log_tail()
        );
        assert_eq!(r["rows"], 2 * 60 * 9);
        let mut total = 0;
        for t in common::DEVOPS_TABLES {
            let n = server.sql_count(t);
            assert_eq!(n, 120, "{target}: {t}");
            total += n;
        }
        assert_eq!(total, 1_080);
    }
}

#[test]
fn mariadb_lands_every_row_in_both_transaction_modes() {
    let db = start(ServerKind::MariaDb);
    let dir = tempfile::tempdir().unwrap();
    for mode in ["per_batch", "autocommit"] {
        let mut sets = SMALL_CPU.to_vec();
        let m = format!("target.transaction=\"{mode}\"");
        sets.extend([m.as_str(), "load.workers=3"]);
        let (out, r) = run_into(&db, "mysql", &sets, dir.path());
        assert!(
            out.status.success(),
            "{mode}: {}\n{}",
            text(&out.stderr),
            db.log_tail()
        );
        assert_eq!(r["rows"], 900);
        assert_eq!(db.sql_count("cpu"), 900, "{mode}");
    }
}

/// Runs an open-loop load (about 4 s) into `server`, kills the server once rows flow and
/// restarts it 1 s later; the run must ride it out with retries and every row it reports
/// must be in the table, exactly once (the ledger settles the batches whose COMMIT
/// answer the crash swallowed).
fn ride_out_a_server_crash(mut server: Server, target: &str) {
    let dir = tempfile::tempdir().unwrap();
    let url = server.database_url().unwrap();
    let mut child = tsload()
        .args([
            "run",
            "--json",
            "r.json",
            "--progress",
            "none",
            "--set",
            &format!("target.kind=\"{target}\""),
            "--set",
            &format!("target.url=\"{url}\""),
            "--set",
            "target.drop_existing=true",
            "--set",
            "workload.scale=10",
            "--set",
            "workload.end=\"2016-01-01T01:40:00Z\"",
            "--set",
            "load.rate=1500",
            "--set",
            "load.batch=50",
            "--set",
            "load.workers=2",
            "--set",
            "load.max_retries=30",
            "--set",
            "load.retry_backoff=\"50ms\"",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let flowed = server.crash_once_rows_flow(
        |s| {
            s.sql("SELECT count(*) FROM cpu")
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        },
        Duration::from_secs(1),
    );
    if let Err(e) = flowed {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("{target}: {e}\ntsload's output:\n{}", text(&out.stderr));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "{target}: {stderr}\n{}",
        server.log_tail()
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = report(dir.path());
    assert_eq!(r["rows"], 6_000, "{target}: every row written in the end");
    assert!(
        r["retries"].as_u64().unwrap() > 0,
        "{target}: the crash cost retries: {r}"
    );
    assert!(
        r["errors"]["connection"].as_u64().unwrap_or(0) > 0,
        "{target}: {}",
        r["errors"]
    );
    assert_eq!(
        server.sql_count("cpu"),
        6_000,
        "{target}: rows reported == rows stored"
    );
}

#[test]
fn postgres_crash_mid_run_costs_retries_not_rows() {
    ride_out_a_server_crash(start(ServerKind::Postgres), "postgres");
}

#[test]
fn mariadb_crash_mid_run_costs_retries_not_rows() {
    ride_out_a_server_crash(start(ServerKind::MariaDb), "mysql");
}

#[test]
fn a_hypertable_on_plain_postgres_names_the_missing_extension() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let mut sets = SMALL_CPU.to_vec();
    sets.push("target.hypertable=true");
    let (out, _) = run_into(&pg, "postgres", &sets, dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("timescaledb"),
        "{}",
        text(&out.stderr)
    );
}
