//! `cargo xtask bench-targets --sysbench`: tsload's OLTP workloads against Debian's sysbench
//! 1.0 on the same fresh server, the same tables and the same load (4 connections, one
//! table of 10,000 rows, uniform ids), runs alternating A/B, and the medians of TPS, p95
//! and p99 latency and client user and system CPU per transaction, with the ratios.
//!
//! Client CPU is measured the same way for both tools: the children's times of a bash that
//! runs the tool (`times`, from getrusage(RUSAGE_CHILDREN)), so tsload's start and
//! sysbench's count alike; tsload runs with `query.prepare = false` on the tables loaded
//! once before the rounds. Latency for sysbench comes from its `--histogram` (logarithmic
//! buckets, about 1.5% wide), for tsload from its JSON report (HdrHistogram).

use std::process::Command;

use anyhow::{Context as _, bail};

/// The OLTP kinds compared, in order.
const KINDS: &[&str] = &[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_point_select",
    "oltp_insert",
];

/// Connections (sysbench's `--threads`, tsload's `query.workers`).
const THREADS: u32 = 4;
const TABLE_SIZE: u32 = 10_000;

/// What one run of either tool measured.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    tps: f64,
    p95_ms: f64,
    p99_ms: f64,
    /// Client CPU per transaction, microseconds.
    user_us: f64,
    sys_us: f64,
}

/// Options: `[--current BIN] [--baseline BIN] [--time SECONDS] [--rounds N]
/// [mariadb|postgres]... [--kinds K,K...]`. With `--baseline`, a second tsload build runs
/// in each round too (the three in turn), and each kind's line adds current vs baseline.
pub fn bench(args: &[&String]) -> anyhow::Result<()> {
    use tsload_testbed::{Server, ServerKind};
    let mut current: Option<String> = None;
    let mut baseline: Option<String> = None;
    let mut seconds: u32 = 8;
    let mut rounds: usize = 3;
    let mut kinds: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
    let mut servers = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .map(|v| v.to_string())
                .with_context(|| format!("{arg} takes {what}"))
        };
        match arg.as_str() {
            "--current" => current = Some(value("the path of a tsload binary")?),
            "--baseline" => baseline = Some(value("the path of a tsload binary")?),
            "--time" => {
                seconds = value("seconds")?
                    .parse()
                    .context("--time takes whole seconds")?
            }
            "--rounds" => {
                rounds = value("a count")?
                    .parse()
                    .context("--rounds takes a count")?
            }
            "--kinds" => {
                kinds = value("a comma-separated list")?
                    .split(',')
                    .map(str::to_string)
                    .collect();
                if let Some(bad) = kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
                    bail!("--kinds: unknown kind {bad}; allowed: {}", KINDS.join(", "));
                }
            }
            "mariadb" => servers.push(ServerKind::MariaDb),
            "postgres" => servers.push(ServerKind::Postgres),
            other => bail!(
                "bench-targets --sysbench: unknown argument {other}; allowed: mariadb, \
                 postgres, --current BIN, --baseline BIN, --time SECONDS, --rounds N, \
                 --kinds K,K"
            ),
        }
    }
    if servers.is_empty() {
        servers = vec![ServerKind::MariaDb, ServerKind::Postgres];
    }
    let tsload = match current {
        Some(bin) => bin,
        None => {
            crate::run("cargo", &["build", "--release", "-p", "tsload"])?;
            "target/release/tsload".to_string()
        }
    };
    let dir = std::env::temp_dir().join(format!("tsload-bench-sysbench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut table = Vec::new();
    for kind in servers {
        let server = Server::start(kind).with_context(|| format!("starting {kind}"))?;
        let url = server.database_url().context("an SQL server has a URL")?;
        let db = Database::new(kind, &url, server.addr().port());
        // Load sysbench's sbtest1 once (tsload's prepare makes the same table sysbench's
        // prepare does); every timed run then uses it as it is.
        tsload_run(&tsload, &db, "oltp_point_select", None, &dir, true)
            .with_context(|| format!("preparing sbtest1 on {kind}"))?;
        for oltp in &kinds {
            // [sysbench, tsload, baseline tsload] per round, each round starting one
            // further along.
            let tools = if baseline.is_some() { 3 } else { 2 };
            let mut figures: [Vec<Figures>; 3] = [Vec::new(), Vec::new(), Vec::new()];
            for round in 0..rounds {
                for step in 0..tools {
                    let tool = (round + step) % tools;
                    let f = match (tool, &baseline) {
                        (0, _) => sysbench_run(&db, oltp, seconds),
                        (1, _) => tsload_run(&tsload, &db, oltp, Some(seconds), &dir, false),
                        (_, Some(base)) => tsload_run(base, &db, oltp, Some(seconds), &dir, false),
                        (_, None) => unreachable!("two tools without a baseline"),
                    }
                    .with_context(|| format!("{oltp} on {kind}:\n{}", server.log_tail()))?;
                    eprintln!(
                        "   {kind} {oltp} round {} {}: {:.0} TPS, p95 {:.2} ms, p99 {:.2} ms, \
                         user {:.1} us + sys {:.1} us per tx",
                        round + 1,
                        ["sysbench", "tsload", "baseline"][tool],
                        f.tps,
                        f.p95_ms,
                        f.p99_ms,
                        f.user_us,
                        f.sys_us
                    );
                    figures[tool].push(f);
                }
            }
            let [s, t, b] = [
                median(&figures[0]),
                median(&figures[1]),
                median(&figures[2]),
            ];
            let vs_baseline = if baseline.is_some() {
                format!(
                    " | vs baseline: TPS {:.0} ({:.2}), user {:.1} us/tx ({:.2}), sys {:.1} \
                     us/tx ({:.2})",
                    b.tps,
                    ratio(t.tps, b.tps),
                    b.user_us,
                    ratio(t.user_us, b.user_us),
                    b.sys_us,
                    ratio(t.sys_us, b.sys_us),
                )
            } else {
                String::new()
            };
            table.push(format!(
                "   {:<9} {oltp:<17} TPS {:>8.0} vs {:>8.0} ({:.2}) | p95 {:>6.2} vs {:>6.2} ms | \
                 p99 {:>6.2} vs {:>6.2} ms | user {:>6.1} vs {:>6.1} us/tx ({:.2}) | \
                 sys {:>6.1} vs {:>6.1} us/tx ({:.2}){vs_baseline}",
                db.name,
                t.tps,
                s.tps,
                ratio(t.tps, s.tps),
                t.p95_ms,
                s.p95_ms,
                t.p99_ms,
                s.p99_ms,
                t.user_us,
                s.user_us,
                ratio(t.user_us, s.user_us),
                t.sys_us,
                s.sys_us,
                ratio(t.sys_us, s.sys_us),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "== tsload ({tsload}) vs sysbench {THREADS} connections, 1 table of {TABLE_SIZE} rows, \
         {seconds} s runs, median of {rounds} alternated runs each (tsload vs sysbench, ratio):"
    );
    for line in table {
        eprintln!("{line}");
    }
    Ok(())
}

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    a / b.max(f64::MIN_POSITIVE)
}

/// The median of `values` (the upper one of an even count), 0 when there are none.
pub(crate) fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Each figure's median on its own.
fn median(runs: &[Figures]) -> Figures {
    let of = |f: fn(&Figures) -> f64| median_of(runs.iter().map(f));
    Figures {
        tps: of(|f| f.tps),
        p95_ms: of(|f| f.p95_ms),
        p99_ms: of(|f| f.p99_ms),
        user_us: of(|f| f.user_us),
        sys_us: of(|f| f.sys_us),
    }
}

/// One server as both tools name it.
struct Database {
    name: &'static str,
    /// tsload's `target.kind`.
    target_kind: &'static str,
    url: String,
    /// sysbench's connection options.
    sysbench_args: Vec<String>,
}

impl Database {
    fn new(kind: tsload_testbed::ServerKind, url: &str, port: u16) -> Self {
        // The testbed's URLs are `scheme://USER@HOST:PORT/DB`, no password.
        let user = url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('@').next())
            .unwrap_or("root")
            .to_string();
        let db = url.rsplit('/').next().unwrap_or("tsload").to_string();
        if kind == tsload_testbed::ServerKind::Postgres {
            Database {
                name: "postgres",
                target_kind: "postgres",
                url: url.to_string(),
                sysbench_args: vec![
                    "--db-driver=pgsql".into(),
                    "--pgsql-host=127.0.0.1".into(),
                    format!("--pgsql-port={port}"),
                    format!("--pgsql-user={user}"),
                    format!("--pgsql-db={db}"),
                ],
            }
        } else {
            Database {
                name: "mariadb",
                target_kind: "mysql",
                url: url.to_string(),
                sysbench_args: vec![
                    "--db-driver=mysql".into(),
                    "--mysql-host=127.0.0.1".into(),
                    format!("--mysql-port={port}"),
                    format!("--mysql-user={user}"),
                    format!("--mysql-db={db}"),
                ],
            }
        }
    }
}

/// Runs `command` under bash and returns its standard output and the children's user and
/// system CPU seconds (bash's `times`).
pub(crate) fn timed(command: &mut Command) -> anyhow::Result<(String, f64, f64)> {
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#""$@" > "$TSLOAD_BENCH_OUT" || exit $?; times"#)
        .arg("bash")
        .arg(&program)
        .args(&args)
        .env("TSLOAD_BENCH_OUT", "/dev/stderr")
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("starting {}", program.to_string_lossy()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        bail!(
            "`{}` failed: {}\n{stderr}",
            program.to_string_lossy(),
            out.status
        );
    }
    // `times` prints the shell's own times, then its children's: `0m1.860s 0m2.730s`.
    let times = String::from_utf8_lossy(&out.stdout);
    let children = times
        .lines()
        .nth(1)
        .context("bash's `times` printed no children line")?;
    let mut secs = children.split_whitespace().map(parse_times);
    let (Some(Some(user)), Some(Some(sys))) = (secs.next(), secs.next()) else {
        bail!("cannot read bash's `times`: {times}");
    };
    Ok((stderr, user, sys))
}

/// `1m2.345s` as seconds.
fn parse_times(text: &str) -> Option<f64> {
    let (m, s) = text.strip_suffix('s')?.split_once('m')?;
    Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

fn sysbench_run(db: &Database, oltp: &str, seconds: u32) -> anyhow::Result<Figures> {
    let mut cmd = Command::new("sysbench");
    cmd.arg(oltp).args(&db.sysbench_args).args([
        "--tables=1".to_string(),
        format!("--table-size={TABLE_SIZE}"),
        format!("--threads={THREADS}"),
        format!("--time={seconds}"),
        "--rand-type=uniform".into(),
        "--histogram=on".into(),
        "run".into(),
    ]);
    let (out, user, sys) = timed(&mut cmd)?;
    let tx = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("transactions:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .with_context(|| format!("no `transactions:` in sysbench's output:\n{out}"))?;
    let tps = out
        .lines()
        .find(|l| l.trim().starts_with("transactions:"))
        .and_then(|l| l.split('(').nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .with_context(|| format!("no TPS in sysbench's output:\n{out}"))?;
    let histogram = sysbench_histogram(&out);
    Ok(Figures {
        tps,
        p95_ms: quantile(&histogram, 0.95),
        p99_ms: quantile(&histogram, 0.99),
        user_us: user * 1e6 / tx.max(1.0),
        sys_us: sys * 1e6 / tx.max(1.0),
    })
}

/// sysbench's `--histogram` rows: `     0.520 |****       123` as (ms, count).
fn sysbench_histogram(out: &str) -> Vec<(f64, u64)> {
    out.lines()
        .filter_map(|l| {
            let (value, rest) = l.split_once('|')?;
            let value = value.trim().parse::<f64>().ok()?;
            let count = rest.split_whitespace().last()?.parse::<u64>().ok()?;
            Some((value, count))
        })
        .collect()
}

/// The bucket value at quantile `q` of (value, count) rows in ascending value order.
fn quantile(rows: &[(f64, u64)], q: f64) -> f64 {
    let total: u64 = rows.iter().map(|r| r.1).sum();
    let want = (q * total as f64).ceil() as u64;
    let mut seen = 0;
    for (value, count) in rows {
        seen += count;
        if seen >= want.max(1) {
            return *value;
        }
    }
    f64::NAN
}

/// One tsload run: `seconds` of `oltp` on the prepared table, or (`prepare`) the table's
/// creation and load, then one second of load.
fn tsload_run(
    bin: &str,
    db: &Database,
    oltp: &str,
    seconds: Option<u32>,
    dir: &std::path::Path,
    prepare: bool,
) -> anyhow::Result<Figures> {
    let report = dir.join("oltp.json");
    let mut cmd = Command::new(bin);
    cmd.args([
        "run",
        "configs/r2-oltp.toml",
        "--progress",
        "none",
        "--json",
    ])
    .arg(&report);
    let mut sets = vec![
        format!("target.kind=\"{}\"", db.target_kind),
        format!("target.url=\"{}\"", db.url),
        format!("query.kind=\"{oltp}\""),
        format!("query.workers={THREADS}"),
        format!("query.table_size={TABLE_SIZE}"),
        format!("query.prepare={prepare}"),
    ];
    match seconds {
        Some(s) => sets.push(format!("query.duration=\"{s}s\"")),
        None => sets.push("query.duration=\"1s\"".into()),
    }
    for set in &sets {
        cmd.args(["--set", set]);
    }
    let (_, user, sys) = timed(&mut cmd)?;
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report)?)?;
    let tx = r["requests"].as_f64().unwrap_or(0.0) + r["failed_requests"].as_f64().unwrap_or(0.0);
    // Conflicts (a deadlock, or PostgreSQL's duplicate key when two transactions delete and
    // insert the same id) fail a transaction now and then, as sysbench's "ignored errors".
    let failed = r["failed_requests"].as_u64().unwrap_or(0);
    if failed > 0 {
        eprintln!("   tsload: {failed} failed transactions: {}", r["errors"]);
    }
    if failed as f64 > 0.01 * tx {
        bail!(
            "tsload's {oltp} run failed over 1% of its transactions: {}",
            r["errors"]
        );
    }
    Ok(Figures {
        tps: r["requests_per_s"].as_f64().unwrap_or(0.0),
        p95_ms: r["latency"]["p95_ms"].as_f64().unwrap_or(f64::NAN),
        p99_ms: r["latency"]["p99_ms"].as_f64().unwrap_or(f64::NAN),
        user_us: user * 1e6 / tx.max(1.0),
        sys_us: sys * 1e6 / tx.max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bash_times_and_sysbench_histograms() {
        assert_eq!(parse_times("1m2.500s"), Some(62.5));
        assert_eq!(parse_times("0m0.004s"), Some(0.004));
        assert_eq!(parse_times("12"), None);
        let out = "Latency histogram (values are in milliseconds)\n       value  ------------- \
                   distribution ------------- count\n     0.500 |**   1\n     1.000 |***** 8\n \
                   2.000 |* 1\n";
        let h = sysbench_histogram(out);
        assert_eq!(h, vec![(0.5, 1), (1.0, 8), (2.0, 1)]);
        assert_eq!(quantile(&h, 0.1), 0.5);
        assert_eq!(quantile(&h, 0.5), 1.0);
        assert_eq!(quantile(&h, 0.95), 2.0);
    }
}
