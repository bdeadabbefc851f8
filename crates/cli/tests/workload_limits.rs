//! Workloads the machine or the shards cannot hold, refused before anything runs: a
//! generator whose state exceeds this machine's memory (`tsload validate` and `run`, exit
//! 2, naming the key, the value, the estimate and the limit), and more shards than
//! devices; and a row budget split over shards so that their rows sum to exactly
//! `load.rows`.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

mod common;
use common::{json, text};

fn tsload(dir: &Path, args: &[&str]) -> Output {
    common::tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

/// `--set` flags for each of `sets`.
fn with_sets<'a>(mut args: Vec<&'a str>, sets: &[&'a str]) -> Vec<&'a str> {
    for s in sets {
        args.push("--set");
        args.push(s);
    }
    args
}

/// MemTotal of /proc/meminfo, in bytes (`None` off Linux).
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let kb = l
            .strip_prefix("MemTotal:")?
            .trim()
            .strip_suffix("kB")?
            .trim();
        kb.parse::<u64>().ok().map(|k| k * 1024)
    })
}

#[test]
fn a_generator_state_larger_than_this_machine_is_refused_by_validate_and_run() {
    let Some(total) = mem_total() else {
        eprintln!("no /proc/meminfo: nothing is refused here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut refused = 0;
    for (kind, set, key, noun, per) in [
        (
            "cpu-only",
            "workload.scale=4294967295",
            "workload.scale",
            "hosts",
            24u64,
        ),
        (
            "devops",
            "workload.scale=4294967295",
            "workload.scale",
            "hosts",
            760,
        ),
        (
            "iot",
            "workload.scale=4294967295",
            "workload.scale",
            "trucks",
            88,
        ),
        (
            "custom",
            "workload.childtable_count=4294967295",
            "workload.childtable_count",
            "child tables",
            8,
        ),
    ] {
        let need = u64::from(u32::MAX) * per;
        if need <= total {
            eprintln!("{kind}: this machine has {total} bytes, enough for {need}");
            continue;
        }
        refused += 1;
        let kind_set = format!("workload.kind=\"{kind}\"");
        let sets = [kind_set.as_str(), set, "target.url=\"sqlite:./x.db\""];
        for command in [vec!["validate"], vec!["run", "--progress", "none", "--yes"]] {
            let out = tsload(d, &with_sets(command.clone(), &sets));
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{kind} {command:?}: {err}");
            let want = format!(
                "key `{key}`: 4294967295 {noun} need about {} of generator state ({per} bytes \
                 each), more than the ",
                tsload_workload::human_bytes(need)
            );
            assert!(err.contains(&want), "{kind} {command:?}: {err}");
            assert!(
                err.contains("this machine can give it (half of the ")
                    && err.contains("; lower it, or split")
                    && err.contains("--shard I/N"),
                "{kind} {command:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
        assert!(!d.join("x.db").exists(), "{kind}: run touched the target");
    }
    assert!(refused >= 1, "devops's 3 TiB is more than any machine here");

    // What fits still validates.
    let out = tsload(d, &with_sets(vec!["validate"], &["workload.scale=1000"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Runs shard `i` of `n` with the null target; its report's rows, or the failed output.
fn run_shard(d: &Path, i: u32, n: u32, sets: &[&str]) -> Result<u64, Output> {
    let shard = format!("{i}/{n}");
    let report = format!("r{n}-{i}.json");
    let args = vec![
        "run",
        "--progress",
        "none",
        "--shard",
        &shard,
        "--json",
        &report,
    ];
    let out = tsload(d, &with_sets(args, sets));
    if !out.status.success() {
        return Err(out);
    }
    Ok(json(&d.join(&report))["rows"].as_u64().unwrap())
}

#[test]
fn more_shards_than_hosts_are_refused_and_the_shards_rows_sum_to_load_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let null = "target.kind=\"null\"";

    // 2 hosts cannot make 3 shards: every shard says so, none runs.
    for i in 0..3 {
        let out = run_shard(
            d,
            i,
            3,
            &[null, "workload.scale=2", "load.rows=1001", "load.workers=3"],
        )
        .expect_err("3 shards of 2 hosts");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "--shard {i}/3: 3 shards but workload.scale = 2 makes only 2 hosts, so 1 of \
                 the shards would have none and write nothing; use at most 2 shards"
            )),
            "{err}"
        );
    }

    // 3 hosts, a budget of 1,001 rows, over 2 and 3 shards: the parts sum to the budget.
    // - 334 steps (1,002 rows): each shard's part must fit in its own hosts' rows (an even
    //   split gave 500 rows to a shard of one host, which has 334), and a worker that runs
    //   dry must not end its shard's run while another worker can still write.
    // - A day of data, 3 or 4 workers per shard: every shard must have hosts whatever the
    //   worker count (interleaved global workers gave shard 0 none with 3 workers).
    let short = "workload.end=\"2016-01-01T00:55:40Z\"";
    let day = "workload.end=\"2016-01-02T00:00:00Z\"";
    for (workers, end) in [
        ("load.workers=1", short),
        ("load.workers=3", short),
        ("load.workers=3", day),
        ("load.workers=4", day),
    ] {
        for n in [2u32, 3] {
            let sets = [null, "workload.scale=3", end, "load.rows=1001", workers];
            let parts: Vec<u64> = (0..n)
                .map(|i| {
                    run_shard(d, i, n, &sets).unwrap_or_else(|out| {
                        panic!("shard {i}/{n}, {workers}: {}", text(&out.stderr))
                    })
                })
                .collect();
            assert_eq!(
                parts.iter().sum::<u64>(),
                1001,
                "{n} shards, {workers}, {end}: {parts:?}"
            );
            assert!(parts.iter().all(|&p| p > 0), "{n} shards: {parts:?}");
        }
    }
}

#[test]
fn sqlite_shards_store_exactly_load_rows_distinct_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sets = [
        "target.url=\"sqlite:./s.db\"",
        "target.drop_existing=false",
        "workload.scale=3",
        "load.rows=1001",
        "load.workers=3",
    ];
    // One after the other: SQLite's file needs no barrier then.
    let parts: Vec<u64> = (0..3)
        .map(|i| run_shard(d, i, 3, &sets).unwrap_or_else(|o| panic!("{}", text(&o.stderr))))
        .collect();
    assert_eq!(parts.iter().sum::<u64>(), 1001, "{parts:?}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (rows, distinct): (i64, i64) = rt.block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite:{}", d.join("s.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query_as(
            "SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT hostname, ts FROM cpu)) \
             FROM cpu",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap()
    });
    assert_eq!((rows, distinct), (1001, 1001));
}

/// Late and duplicate rows and pods the generators cannot make are refused before anything
/// runs (exit 2), naming the key, the value and what is allowed; and `tsload generate`
/// writes the late and duplicate rows a run would send.
#[test]
fn late_duplicate_and_pod_settings_are_checked_and_generate_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (sets, key, says) in [
        (
            &["workload.out_of_order_ratio=0.3"][..],
            "workload.out_of_order_ratio",
            "at most 0.222 of its rows are late",
        ),
        (
            &["workload.kind=custom", "workload.out_of_order_max_steps=0"],
            "workload.out_of_order_max_steps",
            "allowed: 1 to 1000000",
        ),
        (
            &["workload.kind=iot", "workload.duplicate_ratio=1.5"],
            "workload.duplicate_ratio",
            "allowed: 0 to 1",
        ),
        (
            &["workload.pods_per_host=0"],
            "workload.pods_per_host",
            "allowed: 1 to 1000000",
        ),
        (
            &["workload.pods_per_host=3", "workload.churn_ratio=0.1"],
            "workload.pods_per_host",
            "pods do not go with series churn yet",
        ),
        (
            &["workload.kind=iot", "workload.pods_per_host=3"],
            "workload.pods_per_host",
            "cpu-only, devops",
        ),
        (
            &[
                "workload.kind=custom",
                "workload.time=live",
                "load.duration=3s",
                "workload.insert_rows=5",
            ],
            "workload.insert_rows",
            "sends each table's rows one at a time, in time",
        ),
        (
            &["workload.kind=custom", "workload.time=live"],
            "workload.time",
            "end the run with load.duration",
        ),
        (
            &["workload.shape=sinus"],
            "workload.shape",
            "walk, constant, sine, square, sawtooth",
        ),
        (
            &["workload.kind=devops", "workload.shape=sine"],
            "workload.shape",
            "cpu-only",
        ),
    ] {
        let out = tsload(d, &with_sets(vec!["validate"], sets));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sets:?}: {stderr}");
        assert!(
            stderr.contains(&format!("key `{key}`")) && stderr.contains(says),
            "{sets:?}: {stderr}"
        );
    }
    // One host for an hour: 360 readings; about 10% late, 5% twice.
    let out = tsload(
        d,
        &with_sets(
            vec!["generate"],
            &[
                "workload.scale=1",
                "workload.end=2016-01-01T01:00:00Z",
                "workload.out_of_order_ratio=0.1",
                "workload.duplicate_ratio=0.05",
            ],
        ),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = text(&out.stdout);
    let mut seen = std::collections::BTreeSet::new();
    let (mut late, mut twice, mut newest) = (0, 0, 0i64);
    for line in lines.lines() {
        let ts: i64 = line
            .rsplit_once(' ')
            .expect("a timestamp")
            .1
            .parse()
            .unwrap();
        if !seen.insert(ts) {
            twice += 1;
        } else if ts < newest {
            late += 1;
        }
        newest = newest.max(ts);
    }
    assert_eq!(seen.len(), 360, "every reading once at least");
    assert!((10..=70).contains(&late), "{late} late of 360");
    assert!((3..=40).contains(&twice), "{twice} twice of 360");
}

/// A column's shape, period and noise are checked where the file gives them (file, line,
/// key, what is allowed; exit 2).
#[test]
fn column_shapes_are_checked_by_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (entry, key, says) in [
        (
            r#"{ type = "double", shape = "sinus" }"#,
            "workload.columns[1].shape",
            "\"sinus\" is not a shape; allowed: random, constant, sine, square, sawtooth",
        ),
        (
            r#"{ type = "int", shape = "sine", period = "ten" }"#,
            "workload.columns[1].period",
            "is not a positive duration",
        ),
        (
            r#"{ type = "varchar", shape = "square" }"#,
            "workload.columns[1].shape",
            "square is for numeric columns",
        ),
        (
            r#"{ type = "float", noise = 0.1 }"#,
            "workload.columns[1].noise",
            "is for a shape",
        ),
    ] {
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            format!(
                "[workload]\nkind = \"custom\"\ncolumns = [\n  {{ type = \"int\" }},\n  {entry},\n]\n"
            ),
        )
        .unwrap();
        let out = tsload(dir.path(), &["validate", "s.toml"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {stderr}");
        assert!(
            stderr.contains(&format!("s.toml:5: key `{key}`")) && stderr.contains(says),
            "{entry}: {stderr}"
        );
    }
}
