//! The postgres target against a real TimescaleDB (PostgreSQL 15 with the extension that
//! `cargo xtask test` builds from source): TSBS's layout (a shared tags table, hypertables
//! on `ts`) for cpu-only, devops and iot, chunks made by `chunk_time_interval`, every row
//! landed and counted by the server, `drop_existing`, and every TSBS query type in
//! TimescaleDB's dialect (`time_bucket`). Every test's name holds `timescaledb`: without a
//! TimescaleDB source, `cargo xtask test` skips them by that name and says so.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{json, start, text, tsload};

/// `tsload run --json r.json` into `server` with TSBS's TimescaleDB layout and `sets`.
fn run(server: &Server, dir: &Path, sets: &[&str]) -> (Output, serde_json::Value) {
    let url = server.database_url().expect("an SQL server");
    let mut all = vec![
        "target.kind=\"postgres\"".to_string(),
        format!("target.url=\"{url}\""),
        "target.layout=\"tags\"".into(),
        "target.hypertable=true".into(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    common::run_sets(dir, &all)
}

fn count(server: &Server, query: &str) -> u64 {
    let text = server
        .sql(query)
        .unwrap_or_else(|e| panic!("{query}: {e}\n{}", server.log_tail()));
    text.parse()
        .unwrap_or_else(|_| panic!("{query}: not a count: {text:?}"))
}

/// Chunks of each hypertable, by name.
fn chunks(server: &Server) -> Vec<(String, u64)> {
    let text = server
        .sql(
            "SELECT h.hypertable_name, count(c.chunk_name) \
             FROM timescaledb_information.hypertables h \
             LEFT JOIN timescaledb_information.chunks c USING (hypertable_schema, hypertable_name) \
             GROUP BY 1 ORDER BY 1",
        )
        .unwrap();
    text.lines()
        .map(|l| {
            let (name, n) = l.split_once('\t').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// Each workload as TSBS loads it into TimescaleDB: 6 h of data in 2 h chunks (3 per
/// hypertable), every row the report counts in the server, counted by the server's own
/// `count(*)` and by tsload's stored check, one tags row per device.
#[test]
fn timescaledb_loads_every_tsbs_workload_into_hypertable_chunks() {
    let db = start(ServerKind::TimescaleDb);
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 3] = [
        ("cpu-only", "insert", &["cpu"]),
        ("devops", "copy", &common::DEVOPS_TABLES),
        ("iot", "unnest", &["diagnostics", "readings"]),
    ];
    for (workload, method, tables) in cases {
        let kind = format!("workload.kind=\"{workload}\"");
        let method_set = format!("target.method=\"{method}\"");
        let (out, r) = run(
            &db,
            dir.path(),
            &[
                &kind,
                &method_set,
                "workload.scale=3",
                "workload.end=\"2016-01-01T06:00:00Z\"",
                "target.chunk_time_interval=\"2h\"",
                "target.drop_existing=true",
                "target.create_index=true",
                "load.batch=1000",
                "load.workers=2",
            ],
        );
        assert!(
            out.status.success(),
            "{workload}: {}\n{}",
            text(&out.stderr),
            db.log_tail()
        );
        let rows = r["rows"]
            .as_u64()
            .unwrap_or_else(|| panic!("{workload}: {r}"));
        let stored: u64 = tables
            .iter()
            .map(|t| count(&db, &format!("SELECT count(*) FROM \"{t}\"")))
            .sum();
        assert_eq!(
            stored, rows,
            "{workload}: the server holds what the report says"
        );
        assert_eq!(
            r["stored"]["rows"], rows,
            "{workload}: the stored check: {r}"
        );
        if workload != "iot" {
            // iot leaves some rows out on purpose (TSBS's missing data): only there is the
            // row count not a product.
            assert_eq!(rows, 3 * 2160 * tables.len() as u64, "{workload}");
        }
        assert_eq!(count(&db, "SELECT count(*) FROM tags"), 3, "{workload}");
        // Earlier workloads' tables stay (drop_existing drops this schema's tables only).
        let got: Vec<(String, u64)> = chunks(&db)
            .into_iter()
            .filter(|(name, _)| tables.contains(&name.as_str()))
            .collect();
        let expected: Vec<(String, u64)> = {
            let mut t: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
            t.sort();
            t.into_iter().map(|t| (t, 3)).collect()
        };
        assert_eq!(got, expected, "{workload}: hypertables and their chunks");
        // Every row refers to a tags row.
        for t in tables {
            let orphans = count(
                &db,
                &format!(
                    "SELECT count(*) FROM \"{t}\" m LEFT JOIN tags g ON g.id = m.tags_id \
                     WHERE g.id IS NULL"
                ),
            );
            assert_eq!(orphans, 0, "{workload}: {t}");
        }
    }
    // devops: a tag only some tables have is a column of those tables, filled for every
    // row; nginx's and redis' `port` are their own columns (TSBS: `additional_tags`).
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM nginx WHERE port IS NULL OR server IS NULL"
        ),
        0
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM redis WHERE port IS NULL"),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM information_schema.columns \
             WHERE table_name = 'tags' AND column_name IN ('port', 'interface')"
        ),
        0,
        "the tags table holds only the tags every table has"
    );
}

/// `drop_existing = true` starts over (hypertables dropped and made again); without it a
/// second run adds its rows to the same hypertables.
#[test]
fn timescaledb_drop_existing_starts_over_and_a_second_run_appends() {
    let db = start(ServerKind::TimescaleDb);
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "workload.scale=2",
        "workload.end=\"2016-01-01T01:00:00Z\"",
        "target.chunk_time_interval=\"30m\"",
        "load.batch=500",
    ];
    let with = |extra: &'static str| {
        let mut v = base.to_vec();
        v.push(extra);
        v
    };
    for round in 0..2 {
        let (out, r) = run(&db, dir.path(), &with("target.drop_existing=true"));
        assert!(out.status.success(), "{round}: {}", text(&out.stderr));
        assert_eq!(r["rows"], 720, "{round}: {r}");
        assert_eq!(count(&db, "SELECT count(*) FROM cpu"), 720, "round {round}");
    }
    let (out, r) = run(&db, dir.path(), &with("target.drop_existing=false"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["rows"], 720, "{r}");
    assert_eq!(count(&db, "SELECT count(*) FROM cpu"), 1440);
    assert_eq!(count(&db, "SELECT count(*) FROM tags"), 2);
    assert_eq!(chunks(&db), [("cpu".to_string(), 2)]);
}

/// Every TSBS query type in TimescaleDB's dialect (the tags layout's join, `time_bucket`)
/// runs on the hypertables and returns rows.
#[test]
fn timescaledb_answers_every_tsbs_query_type_with_time_bucket() {
    let db = start(ServerKind::TimescaleDb);
    let dir = tempfile::tempdir().unwrap();
    let data = [
        "workload.scale=10",
        "workload.end=\"2016-01-01T12:00:00Z\"",
        "target.chunk_time_interval=\"2h\"",
        "load.batch=2000",
    ];
    let mut load = data.to_vec();
    load.extend(["target.drop_existing=true", "mode=\"write\""]);
    let (out, _) = run(&db, dir.path(), &load);
    assert!(out.status.success(), "load: {}", text(&out.stderr));
    let mut queries = data.to_vec();
    queries.extend([
        "query.kind=\"tsbs\"",
        "query.time_bucket=true",
        "query.workers=3",
        "query.queries=45",
    ]);
    let (out, r) = run(&db, dir.path(), &queries);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        db.log_tail()
    );
    let kinds = r["kinds"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(kinds.len(), 15, "{r}");
    assert_eq!(r["failed_requests"], 0, "{r}");
    for k in kinds {
        assert_eq!(k["requests"], 3, "{k}");
        assert!(
            k["rows"].as_u64().unwrap() > 0,
            "{} returned no rows",
            k["name"]
        );
    }
}

/// R3 in one command: TimescaleDB (hypertables, TSBS's layout) beside plain PostgreSQL on
/// the same server, InfluxDB, VictoriaMetrics and QuestDB, each profile asking its database
/// for its storage: compare shows every target's bytes per metric, and it is the figure
/// the target's own report has (the database's, after its flush).
#[test]
fn timescaledb_r3_compare_shows_bytes_per_metric_for_every_target() {
    let db = start(ServerKind::TimescaleDb);
    let others: Vec<(&str, Server)> = [
        ("influxdb", ServerKind::InfluxDb1),
        ("victoriametrics", ServerKind::VictoriaMetrics),
        ("questdb", ServerKind::QuestDb),
    ]
    .into_iter()
    .map(|(name, kind)| (name, start(kind)))
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "[workload]\nkind = \"cpu-only\"\nscale = 10\nend = \"2016-01-01T04:00:00Z\"\n\
         [target]\nkind = \"null\"\n[load]\nworkers = 2\nbatch = 1000\n",
    )
    .unwrap();
    let url = db.database_url().unwrap();
    let mut profiles = vec![
        (
            "timescaledb",
            format!(
                "kind = \"postgres\"\nurl = \"{url}\"\nmethod = \"copy\"\nlayout = \"tags\"\n\
                 hypertable = true\nchunk_time_interval = \"1h\""
            ),
            db.pid(),
        ),
        (
            "postgres",
            format!("kind = \"postgres\"\nurl = \"{url}\"\nmethod = \"copy\""),
            db.pid(),
        ),
    ];
    for (name, s) in &others {
        let extra = if *name == "questdb" {
            "\ncreate_database = false"
        } else {
            ""
        };
        profiles.push((
            name,
            format!("kind = \"influx\"\nurl = \"{}\"{extra}", s.base_url()),
            s.pid(),
        ));
    }
    let mut paths = Vec::new();
    for (name, target, pid) in &profiles {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[target]\n{target}\n[monitor]\npid = {pid}\nstorage = true\n"
            ),
        )
        .unwrap();
        paths.push(path.display().to_string());
    }
    let out = tsload()
        .arg("compare")
        .arg(&scenario)
        .args(["--targets", &paths.join(","), "--out", "r3"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let r3 = dir.path().join("r3");
    let compare = json(&r3.join("compare.json"));
    let rows = compare["targets"].as_array().unwrap();
    assert_eq!(rows.len(), profiles.len(), "{compare}");
    for (row, (name, _, _)) in rows.iter().zip(&profiles) {
        assert_eq!(row["target"], *name);
        assert_eq!(row["rows"], 14_400, "{row}");
        let report = json(&r3.join(format!("{name}.json")));
        let own = report["storage"]["bytes_per_metric"].as_f64();
        assert!(
            own.is_some_and(|b| b > 0.0 && b < 10_000.0),
            "{name}: the database's own figure: {}",
            report["storage"]
        );
        assert_eq!(row["bytes_per_metric"].as_f64(), own, "{name}: {row}");
        // Rows where the server counts rows, samples (10 per row) where it counts those.
        let stored = &report["stored"];
        assert!(
            stored["rows"] == 14_400 || stored["samples"] == 144_000,
            "{name}: {stored}"
        );
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM timescaledb_information.hypertables WHERE hypertable_name = 'cpu'"
        ),
        0,
        "the postgres profile, run after, dropped the hypertable and made a plain table"
    );
    let txt = std::fs::read_to_string(r3.join("compare.txt")).unwrap();
    assert!(txt.contains("timescaledb"), "{txt}");
}
