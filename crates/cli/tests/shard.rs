//! Sharded runs (`run --shard I/N --barrier DIR`) as separate processes, merged with
//! `tsload merge`: the shards together write exactly the rows one unsharded run writes
//! (SQLite and a real VictoriaMetrics), the merged report counts what the server holds,
//! and the merged histogram is the histogram of all the shards' raw latencies.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{json, text};

fn tsload(args: &[String], dir: &Path) -> Output {
    common::tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

/// cpu-only, 10 hosts x 1 hour (3,600 rows), 2 workers per process, into `target`.
fn base_args(target: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["run", "--progress", "none"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for set in [
        "workload.scale=10",
        "workload.end=\"2016-01-01T01:00:00Z\"",
        "load.workers=2",
        "load.batch=100",
    ]
    .iter()
    .chain(target)
    {
        args.push("--set".into());
        args.push(set.to_string());
    }
    args
}

/// Runs `n` shard processes at once in `dir` (reports `r{i}.json`, logs `r{i}.hlog`,
/// the barrier in `bar/`) and returns what each printed and its exit.
fn spawn_shards(n: u32, args: &[String], extra: &[&str], dir: &Path) -> Vec<Output> {
    let shards: Vec<_> = (0..n)
        .map(|i| {
            let mut a = args.to_vec();
            for s in [
                "--shard".to_string(),
                format!("{i}/{n}"),
                "--barrier".into(),
                "bar".into(),
                "--json".into(),
                format!("reports/r{i}.json"),
                "--hlog".into(),
                format!("reports/r{i}.hlog"),
            ] {
                a.push(s);
            }
            a.extend(extra.iter().map(|s| s.replace("{i}", &i.to_string())));
            common::tsload()
                .args(&a)
                .current_dir(dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start tsload")
        })
        .collect();
    shards
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect()
}

/// [`spawn_shards`], each of which must pass, then `tsload merge` over them; returns the
/// merged report.
fn run_shards(n: u32, args: &[String], extra: &[&str], dir: &Path) -> serde_json::Value {
    for (i, out) in spawn_shards(n, args, extra, dir).into_iter().enumerate() {
        assert!(
            out.status.success(),
            "shard {i}/{n}: {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    let merged = tsload(
        &[
            "merge".into(),
            "reports".into(),
            "--hlog-out".into(),
            "merged.hlog".into(),
            "--json".into(),
            "merged.json".into(),
        ],
        dir,
    );
    assert!(
        merged.status.success(),
        "{}\n{}",
        text(&merged.stdout),
        text(&merged.stderr)
    );
    assert!(
        text(&merged.stdout).contains(&format!("merged from {n} shard report(s)")),
        "{}",
        text(&merged.stdout)
    );
    json(&dir.join("merged.json"))
}

type CpuRow = (
    i64,
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
);

/// Every row of the `cpu` table, ordered.
fn sqlite_rows(db: &Path) -> Vec<CpuRow> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite:{}", db.display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query_as::<_, CpuRow>(
            "SELECT ts, hostname, usage_user, usage_system, usage_idle, usage_nice, usage_iowait, \
             usage_irq, usage_softirq, usage_steal, usage_guest, usage_guest_nice \
             FROM cpu ORDER BY hostname, ts",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap()
    })
}

#[test]
fn sqlite_shards_of_1_2_and_4_store_exactly_the_rows_of_one_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let whole = tsload(
        &[
            base_args(&["target.url=\"sqlite:./whole.db\""]),
            vec!["--json".into(), "whole.json".into()],
        ]
        .concat(),
        dir.path(),
    );
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let expected = sqlite_rows(&dir.path().join("whole.db"));
    assert_eq!(expected.len(), 3_600);
    assert_eq!(json(&dir.path().join("whole.json"))["rows"], 3_600);

    for n in [1u32, 2, 4] {
        let sub = dir.path().join(format!("n{n}"));
        std::fs::create_dir_all(sub.join("reports")).unwrap();
        let merged = run_shards(n, &base_args(&["target.url=\"sqlite:./s.db\""]), &[], &sub);
        let stored = sqlite_rows(&sub.join("s.db"));
        assert_eq!(merged["rows"], stored.len() as u64, "{n} shards");
        assert_eq!(merged["merged_from"], n);
        assert_eq!(merged["errors"], serde_json::json!({}));
        assert!(
            stored == expected,
            "{n} shards stored other rows than one run"
        );
        // Each shard wrote its own part: none wrote everything (n > 1).
        let parts: Vec<u64> = (0..n)
            .map(|i| {
                json(&sub.join(format!("reports/r{i}.json")))["rows"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(parts.iter().sum::<u64>(), 3_600, "{parts:?}");
        if n > 1 {
            assert!(parts.iter().all(|&p| p > 0 && p < 3_600), "{parts:?}");
        }
        // Each shard counted the rows of its own devices in the shared file, and the
        // merged report sums them.
        for i in 0..n {
            let r = json(&sub.join(format!("reports/r{i}.json")));
            assert_eq!(r["stored"]["rows"], r["rows"], "shard {i}/{n}: {r}");
            assert_eq!(r["stored"]["own_devices"], true, "shard {i}/{n}: {r}");
        }
        assert_eq!(merged["stored"]["rows"], 3_600, "{merged}");
    }
}

/// The `--set`s of a PostgreSQL target at `url` in `layout` (`wide` or `tags`).
fn postgres_target(url: &str, layout: &str) -> Vec<String> {
    vec![
        "target.kind=\"postgres\"".to_string(),
        format!("target.url=\"{url}\""),
        format!("target.layout=\"{layout}\""),
    ]
}

/// Two shards into one PostgreSQL with another writer beside them: each shard counts the
/// rows of its own devices (before, each saw the table grow by both shards' rows and the
/// other writer's, and could only say "cannot verify per shard"). A trigger drops shard
/// 1's rows after the server acknowledged them: shard 1 alone reports the shortfall, and
/// the merged report names it. Both layouts: per device by `hostname` (wide) and by
/// `tags_id` (tags).
#[test]
fn shards_into_one_postgres_beside_another_writer_each_count_their_own_devices() {
    let pg = common::start(ServerKind::Postgres);
    let url = pg.database_url().unwrap();
    for layout in ["wide", "tags"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("reports")).unwrap();
        let mut target = postgres_target(&url, layout);
        // COPY checks the rows the server took; a multi-row INSERT leaves the silent
        // drop to the stored check.
        target.extend([
            "target.method=\"insert\"".into(),
            "target.drop_existing=true".into(),
        ]);
        let target: Vec<&str> = target.iter().map(String::as_str).collect();
        // The tables first (4 hosts, one row each), then the trigger that drops the rows
        // of hosts 2 and 3 (shard 1/2's devices of 4).
        let mut first = base_args(&target);
        first.extend(
            [
                "--set",
                "workload.scale=4",
                "--set",
                "workload.end=\"2016-01-01T00:00:10Z\"",
            ]
            .map(String::from),
        );
        let out = tsload(&first, dir.path());
        assert!(out.status.success(), "{layout}: {}", text(&out.stderr));
        let host = if layout == "wide" {
            "NEW.hostname"
        } else {
            "(SELECT hostname FROM tags WHERE id = NEW.tags_id)"
        };
        pg.sql(&format!(
            "CREATE OR REPLACE FUNCTION drop_shard_1() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF {host} IN ('host_2', 'host_3') THEN RETURN NULL; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER drop_shard_1 BEFORE INSERT ON cpu FOR EACH ROW \
             EXECUTE FUNCTION drop_shard_1()"
        ))
        .unwrap();
        // The other writer: rows of a host no shard has, until the shards are done.
        let insert = if layout == "wide" {
            "INSERT INTO cpu (ts, hostname) VALUES (now(), 'other')"
        } else {
            "INSERT INTO cpu (ts, tags_id) VALUES (now(), 1000000)"
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        // Shards of 4 hosts x 1 hour: 720 rows each.
        let mut args = base_args(&target);
        args.extend(
            [
                "--set",
                "workload.scale=4",
                "--set",
                "target.drop_existing=false",
            ]
            .map(String::from),
        );
        let (outs, others) = std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    pg.sql(insert).unwrap();
                    n += 1;
                }
                n
            });
            let outs = spawn_shards(2, &args, &[], dir.path());
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (outs, other.join().unwrap())
        });
        assert!(others > 0, "the other writer wrote nothing");
        let (r0, r1) = (
            json(&dir.path().join("reports/r0.json")),
            json(&dir.path().join("reports/r1.json")),
        );
        assert!(
            outs[0].status.success(),
            "{layout}: {}",
            text(&outs[0].stderr)
        );
        assert_eq!(r0["rows"], 720, "{layout}: {r0}");
        assert_eq!(r0["stored"]["rows"], 720, "{layout}: {r0}");
        assert_eq!(r0["stored"]["own_devices"], true, "{layout}: {r0}");
        assert!(r0.get("stored_shortfall").is_none(), "{layout}: {r0}");
        assert_eq!(
            outs[1].status.code(),
            Some(1),
            "{layout}: {}",
            text(&outs[1].stderr)
        );
        assert_eq!(r1["rows"], 720, "{layout}: {r1}");
        assert_eq!(r1["stored"]["rows"], 0, "{layout}: {r1}");
        assert!(
            r1["stored_shortfall"]
                .as_str()
                .unwrap()
                .starts_with("the server stored 0 new rows of the 720 it acknowledged"),
            "{layout}: {r1}"
        );
        assert!(
            text(&outs[0].stdout).contains("720   rows, per the server (this run's devices)"),
            "{layout}: {}",
            text(&outs[0].stdout)
        );
        // The other writer's rows are in the table all the same.
        assert_eq!(pg.sql_count("cpu"), 4 + 720 + others, "{layout}");
        // The merged run: the shards' own counts summed, shard 1's shortfall named.
        let merged = tsload(
            &["merge", "reports", "--json", "merged.json"].map(String::from),
            dir.path(),
        );
        assert!(merged.status.success(), "{}", text(&merged.stderr));
        let m = json(&dir.path().join("merged.json"));
        assert_eq!(m["stored"]["rows"], 720, "{layout}: {m}");
        assert!(
            m["stored_shortfall"]
                .as_str()
                .unwrap()
                .starts_with("shard 1/2 ("),
            "{layout}: {m}"
        );
        assert_eq!(m["shards"][0]["stored"], 720, "{layout}: {m}");
        assert_eq!(m["shards"][1]["stored"], 0, "{layout}: {m}");
        assert!(
            text(&merged.stdout).contains("SHORTFALL shard 1/2"),
            "{}",
            text(&merged.stdout)
        );
    }
}

/// Churn under shards: each shard's hosts are its slots in every generation, so each counts
/// its own rows of all of them (postgres' tags layout counts by `tags_id` modulo the
/// slots; the wide layout by host name), and the shards' devices written are the table's.
#[test]
fn shards_with_churn_count_their_own_hosts_of_every_generation() {
    let pg = common::start(ServerKind::Postgres);
    let url = pg.database_url().unwrap();
    for layout in ["tags", "wide"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("reports")).unwrap();
        let target = postgres_target(&url, layout);
        let target: Vec<&str> = target.iter().map(String::as_str).collect();
        let mut first = base_args(&target);
        first.extend(["--set", "target.drop_existing=true", "-n", "1"].map(String::from));
        let out = tsload(&first, dir.path());
        assert!(out.status.success(), "{layout}: {}", text(&out.stderr));
        pg.sql("DELETE FROM cpu").unwrap();
        // 10 hosts, half of them replaced every 10 minutes, for an hour.
        let mut args = base_args(&target);
        args.extend(
            [
                "--set",
                "workload.churn_ratio=0.5",
                "--set",
                "workload.churn_interval=\"10m\"",
            ]
            .map(String::from),
        );
        let outs = spawn_shards(2, &args, &[], dir.path());
        let mut devices = 0;
        for (i, out) in outs.iter().enumerate() {
            assert!(out.status.success(), "{layout} {i}: {}", text(&out.stderr));
            let r = json(&dir.path().join(format!("reports/r{i}.json")));
            assert_eq!(r["stored"]["rows"], r["rows"], "{layout} {i}: {r}");
            assert_eq!(r["stored"]["own_devices"], true, "{layout} {i}: {r}");
            devices += r["devices_written"].as_u64().unwrap();
        }
        assert_eq!(pg.sql_count("cpu"), 3_600, "{layout}");
        let column = if layout == "tags" {
            "tags_id"
        } else {
            "hostname"
        };
        let distinct: u64 = pg
            .sql(&format!("SELECT count(DISTINCT {column}) FROM cpu"))
            .unwrap()
            .parse()
            .unwrap();
        // 10 to start with, 5 new every 10 minutes after the first.
        assert_eq!(distinct, devices, "{layout}");
        assert!(devices > 10, "{layout}: {devices}");
    }
}

fn start_vm() -> Server {
    Server::start(ServerKind::VictoriaMetrics)
        .unwrap_or_else(|e| panic!("VictoriaMetrics did not start: {e}"))
}

/// Every cpu series VictoriaMetrics holds, as sorted export lines.
fn vm_dump(vm: &Server) -> Vec<String> {
    vm.vm_flush();
    let mut lines: Vec<String> = vm
        .vm_export("{__name__=~\"cpu_.*\"}")
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn victoria_metrics_shards_of_1_2_and_4_store_exactly_the_samples_of_one_unsharded_run() {
    let vm = start_vm();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("target.url=\"{}\"", vm.base_url());
    let target = ["target.kind=\"influx\"", url.as_str()];
    let whole = tsload(&base_args(&target), dir.path());
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let expected = vm_dump(&vm);
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), 36_000);
    drop(vm);

    for n in [1u32, 2, 4] {
        let vm = start_vm();
        let url = format!("target.url=\"{}\"", vm.base_url());
        let target = ["target.kind=\"influx\"", url.as_str()];
        let sub = dir.path().join(format!("n{n}"));
        std::fs::create_dir_all(sub.join("reports")).unwrap();
        let merged = run_shards(n, &base_args(&target), &[], &sub);
        assert_eq!(merged["metrics"], 36_000, "{n} shards");
        assert_eq!(
            vm.vm_sample_count("{__name__=~\"cpu_.*\"}"),
            merged["metrics"].as_u64().unwrap(),
            "{n} shards: the server holds what the merged report counts"
        );
        assert!(
            vm_dump(&vm) == expected,
            "{n} shards stored other samples than one run"
        );
        // Each shard saw the server's counter grow by every shard's samples: it claims
        // no stored figure of its own (each said the whole server's count before).
        if n > 1 {
            for i in 0..n {
                let r = common::json(&sub.join(format!("reports/r{i}.json")));
                assert!(r.get("stored").is_none(), "shard {i}/{n}: {r}");
                assert!(
                    r["stored_error"]
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("cannot verify per shard: shard {i}/{n}")),
                    "shard {i}/{n}: {r}"
                );
            }
        }
    }
}

#[test]
fn merged_percentiles_are_the_percentiles_of_all_shards_raw_latencies() {
    let vm = start_vm();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reports")).unwrap();
    let url = format!("target.url=\"{}\"", vm.base_url());
    let target = ["target.kind=\"influx\"", url.as_str(), "load.batch=10"];
    let merged = run_shards(
        4,
        &base_args(&target),
        &["--debug-raw-latencies", "raw{i}.txt"],
        dir.path(),
    );
    let mut raw: Vec<u64> = Vec::new();
    for i in 0..4 {
        let t = std::fs::read_to_string(dir.path().join(format!("raw{i}.txt"))).unwrap();
        raw.extend(t.lines().map(|l| l.parse::<u64>().unwrap()));
    }
    raw.sort_unstable();
    assert_eq!(raw.len(), 360, "3,600 rows in batches of 10");
    assert_eq!(merged["latency"]["count"], raw.len() as u64);
    let hdr = merged["latency"]["hdr"].as_str().expect("merged hdr");
    let h = tsload_report::report::decode_histogram(hdr).unwrap();
    assert_eq!(h.len(), raw.len() as u64);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        // The raw value at that rank, and the histogram's answer: equal within the
        // histogram's 3 significant digits (HDR reports its bucket's highest value).
        let rank = ((q * raw.len() as f64).ceil() as usize).clamp(1, raw.len());
        let exact = raw[rank - 1];
        let merged_value = h.value_at_quantile(q);
        assert!(
            h.equivalent(merged_value, exact),
            "q {q}: merged {merged_value} ns, raw {exact} ns"
        );
    }
    let p99_ms = merged["latency"]["p99_ms"].as_f64().unwrap();
    assert!((p99_ms - h.value_at_quantile(0.99) as f64 / 1e6).abs() < 1e-9);
}

#[test]
fn what_cannot_be_sharded_or_merged_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut a = base_args(&["target.url=\"sqlite:./x.db\""]);
        a.extend(extra.iter().map(|s| s.to_string()));
        tsload(&a, dir.path())
    };
    let out = run(&["--shard", "0/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("drop_existing = true needs --barrier"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--shard", "2/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("below the count"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(dir.path().join("d.lp"), "m v=1 1\n").unwrap();
    let out = tsload(
        &[
            "run",
            "--shard",
            "1/2",
            "--set",
            "workload.kind=\"file\"",
            "--set",
            "workload.path=\"d.lp\"",
            "--set",
            "target.url=\"sqlite:./x.db\"",
            "--set",
            "target.drop_existing=false",
        ]
        .map(String::from),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot be sharded"),
        "{}",
        text(&out.stderr)
    );

    // Shard 1 of 2 alone: merged without --allow-partial, it is refused.
    let out = run(&[
        "--shard",
        "1/2",
        "--set",
        "target.drop_existing=false",
        "--json",
        "r1.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let merged = tsload(&["merge".into(), "r1.json".into()], dir.path());
    assert_eq!(merged.status.code(), Some(2));
    assert!(
        text(&merged.stderr).contains("shards 0 of 2 are missing"),
        "{}",
        text(&merged.stderr)
    );
    let merged = tsload(
        &["merge".into(), "r1.json".into(), "--allow-partial".into()],
        dir.path(),
    );
    assert!(merged.status.success(), "{}", text(&merged.stderr));
}

#[test]
fn sharded_query_runs_load_their_parts_and_merge_per_kind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reports")).unwrap();
    let args: Vec<String> = [
        "run",
        "--progress",
        "none",
        "--set",
        "mode=\"query\"",
        "--set",
        "target.kind=\"sqlite\"",
        "--set",
        "target.url=\"sqlite:./q.db\"",
        "--set",
        "query.kind=\"oltp_point_select\"",
        "--set",
        "query.table_size=3000",
        "--set",
        "query.workers=2",
        "--set",
        "query.queries=2000",
    ]
    .map(String::from)
    .to_vec();
    let merged = run_shards(2, &args, &[], dir.path());
    // 2,000 requests over 2 shards: 1,000 each.
    assert_eq!(merged["requests"], 2_000, "{merged}");
    assert_eq!(
        merged["load_rows"], 3_000,
        "the shards loaded one table between them"
    );
    assert_eq!(merged["kinds"][0]["name"], "oltp_point_select");
    assert_eq!(merged["kinds"][0]["requests"], 2_000);
    assert_eq!(merged["kinds"][0]["latency"]["count"], 2_000);
    assert_eq!(merged["latency"]["count"], 2_000);
    for i in 0..2 {
        let r = json(&dir.path().join(format!("reports/r{i}.json")));
        assert_eq!(r["requests"], 1_000);
        assert_eq!(r["shard"]["index"], i);
    }
    // The secondary index exists once, made by shard 0 before the load.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (rows, indexes): (i64, i64) = rt.block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite:{}", dir.path().join("q.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM sbtest1")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let idx: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'k_1'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        (rows, idx)
    });
    assert_eq!((rows, indexes), (3_000, 1));
}

/// TSBS queries over `n` shards of `workers` workers each, 400 queries of R5's four types
/// against a SQLite file holding the data set: the shards' counts sum to `query.queries`
/// and each shard runs every type, in the run's proportions.
fn sharded_tsbs_queries(db: &Path, n: u32, workers: u32) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reports")).unwrap();
    let mut args: Vec<String> = ["run", "--progress", "none"].map(String::from).to_vec();
    for set in [
        "workload.scale=10".to_string(),
        "workload.end=\"2016-01-01T08:00:00Z\"".to_string(),
        "target.kind=\"sqlite\"".to_string(),
        format!("target.url=\"sqlite:{}\"", db.display()),
        "mode=\"query\"".to_string(),
        "query.kind=\"tsbs\"".to_string(),
        "query.types=[\"single-groupby-1-1-1\", \"single-groupby-1-8-1\", \"single-groupby-5-1-1\", \"cpu-max-all-1\"]".to_string(),
        format!("query.workers={workers}"),
        "query.queries=400".to_string(),
    ] {
        args.push("--set".into());
        args.push(set);
    }
    let merged = run_shards(n, &args, &[], dir.path());
    // (requests, requests per kind) of a report.
    let counts = |r: &serde_json::Value| {
        let kinds: Vec<(String, u64)> = r["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["name"].as_str().unwrap().to_string(),
                    k["requests"].as_u64().unwrap(),
                )
            })
            .collect();
        (r["requests"].as_u64().unwrap(), kinds)
    };
    let what = format!("{n} shards x {workers} workers");
    let (total, kinds) = counts(&merged);
    assert_eq!(
        total, 400,
        "{what}: merged {kinds:?}, failed {} ({}), shards {}",
        merged["failed_requests"], merged["errors"], merged["shards"]
    );
    assert_eq!(merged["failed_requests"], 0, "{what}");
    assert_eq!(kinds.len(), 4, "{what}");
    assert!(
        kinds.iter().all(|(_, k)| *k == 100),
        "{what}: merged {kinds:?}"
    );
    let share = 400 / u64::from(n);
    for i in 0..n {
        let r = json(&dir.path().join(format!("reports/r{i}.json")));
        let (requests, kinds) = counts(&r);
        assert_eq!(requests, share, "{what}, shard {i}: {kinds:?}");
        assert_eq!(r["stop_reason"], "request limit", "{what}, shard {i}");
        // Every type, in the run's proportion.
        assert!(
            kinds.iter().all(|(_, k)| *k == share / 4),
            "{what}, shard {i}: {kinds:?}"
        );
    }
}

#[test]
fn sharded_tsbs_queries_sum_to_the_limit_and_each_shard_runs_every_type() {
    // The defect: query.queries was split twice (by the CLI, then again by the shards'
    // interleaving), so N shards ran queries / N² in all, and with as many shards as
    // types each shard ran one type.
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("tsbs.db");
    let mut args = base_args(&[
        "workload.end=\"2016-01-01T08:00:00Z\"",
        "target.kind=\"sqlite\"",
        &format!("target.url=\"sqlite:{}\"", db.display()),
    ]);
    args.extend(["--set".to_string(), "mode=\"write\"".to_string()]);
    let out = tsload(&args, data.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (n, workers) in [(2, 2), (4, 1), (4, 3)] {
        sharded_tsbs_queries(&db, n, workers);
    }
}
