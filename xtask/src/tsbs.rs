//! `cargo xtask bench-targets --tsbs`: tsload against TSBS's own tools on the same data
//! shape, the same servers and the same load, runs alternated, medians and ratios.
//!
//! TSBS is built here from its Go module at a pinned commit (`go get` + `go build`, into
//! `target/tsbs`, once). Each round runs every tool in turn, starting one further along,
//! each write run on a fresh server from `tsload-testbed`:
//!
//! - **generate:** `tsbs_generate_data --format=influx` against `tsload generate`, both to
//!   a file;
//! - **ingest** into VictoriaMetrics, InfluxDB 1.x and PostgreSQL: TSBS's loader
//!   (`tsbs_load_influx`, `tsbs_load_timescaledb` with COPY and no hypertable) on TSBS's
//!   file, against tsload on its own data made on the fly, and tsload replaying TSBS's
//!   influx file (`workload.kind = "file"`);
//! - **queries** on InfluxDB: `tsbs_run_queries_influx` on `tsbs_generate_queries`' file
//!   against tsload's `query.kind = "tsbs"`, one query type at a time, on one data set
//!   loaded once.
//!
//! Client CPU is the whole process for both tools (user + system, from bash's `times`:
//! start-up and tsload's stored check included); server CPU is what the server's processes
//! spent during the run (/proc). Rates are each tool's own figure (TSBS's "mean rate",
//! tsload's `metrics_per_s` / `requests_per_s`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use tsload_testbed::{Server, ServerKind};

use crate::sysbench::{median_of, ratio, timed};

/// TSBS's commit, as its Go module version.
const TSBS_VERSION: &str = "v0.0.0-20230921131859-37fced794d56";
const TSBS_MODULE: &str = "github.com/timescale/tsbs";
/// The TSBS programs the comparison runs.
const TSBS_COMMANDS: &[&str] = &[
    "tsbs_generate_data",
    "tsbs_generate_queries",
    "tsbs_load_influx",
    "tsbs_load_timescaledb",
    "tsbs_run_queries_influx",
];
/// The query types compared by default (the three: one host, eight hosts, all).
const QUERY_TYPES: &[&str] = &["single-groupby-1-1-1", "cpu-max-all-8", "double-groupby-1"];
const START: &str = "2016-01-01T00:00:00Z";
/// Measured fields per cpu-only row.
const FIELDS: u64 = 10;

/// One part of the comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Generate,
    Ingest(ServerKind),
    Queries,
}

/// Who does the work in one run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tool {
    /// TSBS's program on TSBS's file.
    Tsbs,
    /// tsload on its own data, made on the fly.
    Tsload,
    /// tsload replaying TSBS's influx file.
    Replay,
    /// tsload replaying `tsload generate`'s file of its own data (`--own-file`): the same
    /// bytes as [`Tool::Tsload`] sends, read from a file, as TSBS's loader reads its own.
    ReplayOwn,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Tsbs => "TSBS",
            Tool::Tsload => "tsload",
            Tool::Replay => "tsload replaying TSBS's file",
            Tool::ReplayOwn => "tsload replaying its own file",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    /// Metrics (or queries) per second, the tool's own figure.
    rate: f64,
    /// Metrics (or queries) done.
    count: f64,
    /// The client's user + system CPU seconds, the whole process.
    client_s: f64,
    /// The server's CPU seconds during the run (0 where no server runs).
    server_s: f64,
}

impl Figures {
    fn client_ns_per(&self) -> f64 {
        self.client_s * 1e9 / self.count.max(1.0)
    }
    fn server_ns_per(&self) -> f64 {
        self.server_s * 1e9 / self.count.max(1.0)
    }
    /// Client CPU as a share of the server's, percent.
    fn client_share(&self) -> f64 {
        100.0 * self.client_s / self.server_s.max(f64::MIN_POSITIVE)
    }
}

/// The data set and load both tools get.
#[derive(Debug, Clone)]
struct Load {
    scale: u32,
    hours: u32,
    workers: u32,
    batch: u32,
    /// Queries per type and run; `None`: [`Load::queries_of`]'s defaults.
    queries: Option<u32>,
    /// Ingest parts also replay tsload's own data from a file ([`Tool::ReplayOwn`]).
    own_file: bool,
    query_types: Vec<String>,
}

impl Load {
    fn end(&self) -> String {
        let days = self.hours / 24;
        let hours = self.hours % 24;
        format!("2016-01-{:02}T{hours:02}:00:00Z", 1 + days)
    }
    /// Queries per run of `query_type`: `--queries`, or enough for a run of a few seconds
    /// on this machine (a one-host query takes about half a millisecond, the others tens).
    fn queries_of(&self, query_type: &str) -> u32 {
        self.queries
            .unwrap_or(if query_type.starts_with("single-groupby") {
                5_000
            } else {
                400
            })
    }

    fn metrics(&self) -> u64 {
        u64::from(self.scale) * u64::from(self.hours) * 360 * FIELDS
    }
}

/// Options: `[--current BIN] [--rounds N] [--scale HOSTS] [--hours H] [--workers W]
/// [--batch B] [--queries N] [--query-types T,T] [--tsbs-dir DIR] [--own-file]
/// [generate|victoria-metrics|influxdb|postgres|queries]...`.
pub fn bench(args: &[&String]) -> anyhow::Result<()> {
    let mut current: Option<String> = None;
    let mut rounds: usize = 3;
    let mut tsbs_dir = PathBuf::from("target/tsbs");
    let mut load = Load {
        scale: 100,
        hours: 24,
        workers: 4,
        batch: 10_000,
        queries: None,
        own_file: false,
        query_types: QUERY_TYPES.iter().map(|t| t.to_string()).collect(),
    };
    let mut parts = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .map(|v| v.to_string())
                .with_context(|| format!("{arg} takes {what}"))
        };
        let count = |text: String, name: &str| -> anyhow::Result<u32> {
            match text.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => bail!("{name} takes a whole number above 0, not {text:?}"),
            }
        };
        match arg.as_str() {
            "--current" => current = Some(value("the path of a tsload binary")?),
            "--tsbs-dir" => tsbs_dir = PathBuf::from(value("a directory")?),
            "--own-file" => load.own_file = true,
            "--rounds" => rounds = count(value("a count")?, "--rounds")? as usize,
            "--scale" => load.scale = count(value("a host count")?, "--scale")?,
            "--hours" => load.hours = count(value("hours")?, "--hours")?,
            "--workers" => load.workers = count(value("a count")?, "--workers")?,
            "--batch" => load.batch = count(value("rows")?, "--batch")?,
            "--queries" => load.queries = Some(count(value("a count")?, "--queries")?),
            "--query-types" => {
                load.query_types = value("a comma-separated list")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "generate" => parts.push(Part::Generate),
            "victoria-metrics" | "vm" => parts.push(Part::Ingest(ServerKind::VictoriaMetrics)),
            "influxdb" => parts.push(Part::Ingest(ServerKind::InfluxDb1)),
            "postgres" => parts.push(Part::Ingest(ServerKind::Postgres)),
            "queries" => parts.push(Part::Queries),
            other => bail!(
                "bench-targets --tsbs: unknown argument {other}; allowed: generate, \
                 victoria-metrics, influxdb, postgres, queries, --current BIN, --rounds N, \
                 --scale HOSTS, --hours H, --workers W, --batch B, --queries N, \
                 --query-types T,T, --tsbs-dir DIR, --own-file"
            ),
        }
    }
    if load.hours > 24 * 28 {
        bail!("--hours: at most {} (four weeks of January 2016)", 24 * 28);
    }
    if parts.is_empty() {
        parts = vec![
            Part::Generate,
            Part::Ingest(ServerKind::VictoriaMetrics),
            Part::Ingest(ServerKind::InfluxDb1),
            Part::Ingest(ServerKind::Postgres),
            Part::Queries,
        ];
    }
    if parts.contains(&Part::Queries) && load.hours <= 12 {
        bail!(
            "--hours {}: TSBS's queries need a span longer than their longest window \
             (12 h, double-groupby); give --hours 13 or more, or leave out `queries`",
            load.hours
        );
    }
    let bin = build_tsbs(&tsbs_dir)?;
    let tsload = match current {
        Some(bin) => bin,
        None => {
            crate::run("cargo", &["build", "--release", "-p", "tsload"])?;
            "target/release/tsload".to_string()
        }
    };
    let dir = std::env::temp_dir().join(format!("tsload-bench-tsbs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = compare(&bin, &tsload, &dir, &load, &parts, rounds);
    let _ = std::fs::remove_dir_all(&dir);
    let table = result?;
    eprintln!(
        "== tsload ({tsload}) vs TSBS ({TSBS_VERSION}): cpu-only, seed 123, {} hosts x {} h = \
         {} metrics, {} workers, batch {}; median of {rounds} alternated runs, fresh server \
         per write run (tsload vs TSBS, ratio):",
        load.scale,
        load.hours,
        load.metrics(),
        load.workers,
        load.batch
    );
    for line in table {
        eprintln!("{line}");
    }
    Ok(())
}

/// Builds TSBS's programs into `dir/bin` unless they are there; returns that directory.
fn build_tsbs(dir: &Path) -> anyhow::Result<PathBuf> {
    let bin = std::fs::canonicalize(dir.parent().unwrap_or(Path::new(".")))
        .unwrap_or_else(|_| PathBuf::from("."))
        .join(dir.file_name().unwrap_or_default())
        .join("bin");
    if TSBS_COMMANDS.iter().all(|c| bin.join(c).is_file()) {
        return Ok(bin);
    }
    let module = bin.with_file_name("module");
    std::fs::create_dir_all(&module).with_context(|| format!("creating {}", module.display()))?;
    let go = |args: &[&str]| -> anyhow::Result<()> {
        eprintln!("$ (cd {}) go {}", module.display(), args.join(" "));
        let status = Command::new("go")
            .args(args)
            .current_dir(&module)
            .env("GOFLAGS", "-mod=mod")
            .status()
            .context("cannot start `go` (TSBS is built with Go, from its module)")?;
        if !status.success() {
            bail!("`go {}` failed with {status}", args.join(" "));
        }
        Ok(())
    };
    if !module.join("go.mod").is_file() {
        go(&["mod", "init", "tsload-bench-tsbs"])?;
    }
    let packages: Vec<String> = TSBS_COMMANDS
        .iter()
        .map(|c| format!("{TSBS_MODULE}/cmd/{c}"))
        .collect();
    let mut get = vec!["get".to_string()];
    get.extend(packages.iter().map(|p| format!("{p}@{TSBS_VERSION}")));
    go(&get.iter().map(String::as_str).collect::<Vec<_>>())?;
    let out = format!("{}/", bin.display());
    let mut build = vec!["build", "-o", &out];
    build.extend(packages.iter().map(String::as_str));
    go(&build)?;
    Ok(bin)
}

/// Runs every part `rounds` times and returns the table's lines.
fn compare(
    tsbs: &Path,
    tsload: &str,
    dir: &Path,
    load: &Load,
    parts: &[Part],
    rounds: usize,
) -> anyhow::Result<Vec<String>> {
    let files = Files {
        influx: dir.join("tsbs-cpu-only.influx"),
        timescaledb: dir.join("tsbs-cpu-only.timescaledb"),
        tsload: dir.join("tsload-cpu-only.influx"),
        own: dir.join("tsload-own-cpu-only.influx"),
        report: dir.join("report.json"),
    };
    // TSBS's files, made once (the generate part times it again in its rounds).
    generate_tsbs(tsbs, load, "influx", &files.influx)?;
    if parts.contains(&Part::Ingest(ServerKind::Postgres)) {
        generate_tsbs(tsbs, load, "timescaledb", &files.timescaledb)?;
    }
    let mut ingest_tools = vec![Tool::Tsbs, Tool::Tsload, Tool::Replay];
    if load.own_file && parts.iter().any(|p| matches!(p, Part::Ingest(_))) {
        generate_tsload(tsload, load, &files.own)?;
        ingest_tools.push(Tool::ReplayOwn);
    }
    let mut table = Vec::new();
    for part in parts {
        let tools: &[Tool] = match part {
            Part::Generate | Part::Queries => &[Tool::Tsbs, Tool::Tsload],
            Part::Ingest(_) => &ingest_tools,
        };
        match part {
            Part::Generate | Part::Ingest(_) => {
                let mut figures = vec![Vec::new(); tools.len()];
                for round in 0..rounds {
                    for step in 0..tools.len() {
                        let i = (round + step) % tools.len();
                        let f = match part {
                            Part::Generate => generate_run(tsbs, tsload, tools[i], load, &files),
                            Part::Ingest(kind) => {
                                ingest_run(tsbs, tsload, tools[i], *kind, load, &files)
                            }
                            Part::Queries => unreachable!("queries run below"),
                        }
                        .with_context(|| format!("{part:?}, {}", tools[i].name()))?;
                        eprintln!(
                            "   {part:?} round {} {}: {:.3} M/s, client {:.2} s ({:.0} ns per \
                             metric), server {:.2} s",
                            round + 1,
                            tools[i].name(),
                            f.rate / 1e6,
                            f.client_s,
                            f.client_ns_per(),
                            f.server_s
                        );
                        figures[i].push(f);
                    }
                }
                let name = match part {
                    Part::Generate => "generate".to_string(),
                    Part::Ingest(kind) => format!("into {kind}"),
                    Part::Queries => unreachable!("queries run below"),
                };
                let tsbs_median = median(&figures[0]);
                for (i, tool) in tools.iter().enumerate().skip(1) {
                    table.push(metrics_line(
                        &name,
                        *tool,
                        &median(&figures[i]),
                        &tsbs_median,
                    ));
                }
            }
            Part::Queries => table.extend(queries(tsbs, tsload, load, &files, rounds)?),
        }
    }
    Ok(table)
}

/// Where one comparison's files go.
struct Files {
    influx: PathBuf,
    timescaledb: PathBuf,
    tsload: PathBuf,
    /// `tsload generate`'s file for [`Tool::ReplayOwn`], made once (the generate part
    /// writes [`Files::tsload`] in each of its rounds).
    own: PathBuf,
    report: PathBuf,
}

fn metrics_line(part: &str, tool: Tool, t: &Figures, s: &Figures) -> String {
    let server = if s.server_s > 0.0 {
        format!(
            " | server {:>5.0} vs {:>5.0} ns/metric ({:.2}) | client/server CPU {:.1}% vs {:.1}%",
            t.server_ns_per(),
            s.server_ns_per(),
            ratio(t.server_ns_per(), s.server_ns_per()),
            t.client_share(),
            s.client_share(),
        )
    } else {
        String::new()
    };
    format!(
        "   {part:<26} {:<30} {:>6.3} vs {:>6.3} M metrics/s ({:.2}) | client {:>5.0} vs {:>5.0} \
         ns/metric ({:.2}){server}",
        tool.name(),
        t.rate / 1e6,
        s.rate / 1e6,
        ratio(t.rate, s.rate),
        t.client_ns_per(),
        s.client_ns_per(),
        ratio(t.client_ns_per(), s.client_ns_per()),
    )
}

/// Each figure's median on its own.
fn median(runs: &[Figures]) -> Figures {
    let of = |f: fn(&Figures) -> f64| median_of(runs.iter().map(f));
    Figures {
        rate: of(|f| f.rate),
        count: of(|f| f.count),
        client_s: of(|f| f.client_s),
        server_s: of(|f| f.server_s),
    }
}

/// `tsbs_generate_data` of the load's data set in `format` to `file`; returns its client
/// CPU seconds.
fn generate_tsbs(tsbs: &Path, load: &Load, format: &str, file: &Path) -> anyhow::Result<f64> {
    let mut cmd = Command::new(tsbs.join("tsbs_generate_data"));
    cmd.args([
        "--use-case=cpu-only".to_string(),
        "--seed=123".into(),
        format!("--scale={}", load.scale),
        format!("--timestamp-start={START}"),
        format!("--timestamp-end={}", load.end()),
        "--log-interval=10s".into(),
        format!("--format={format}"),
        format!("--file={}", file.display()),
    ]);
    let (_, user, sys) = timed(&mut cmd)?;
    Ok(user + sys)
}

/// The `--set`s that make configs/cpu-only.toml the load's data set and load.
fn tsload_sets(load: &Load) -> Vec<String> {
    vec![
        format!("workload.scale={}", load.scale),
        format!("workload.start=\"{START}\""),
        format!("workload.end=\"{}\"", load.end()),
        format!("load.workers={}", load.workers),
        format!("load.batch={}", load.batch),
    ]
}

/// `tsload generate` of the load's data set to `file`; returns its client CPU seconds.
fn generate_tsload(tsload: &str, load: &Load, file: &Path) -> anyhow::Result<f64> {
    let mut cmd = Command::new(tsload);
    cmd.args(["generate", "configs/cpu-only.toml", "-o"])
        .arg(file);
    for set in tsload_sets(load) {
        cmd.args(["--set", &set]);
    }
    let (_, user, sys) = timed(&mut cmd)?;
    Ok(user + sys)
}

fn generate_run(
    tsbs: &Path,
    tsload: &str,
    tool: Tool,
    load: &Load,
    files: &Files,
) -> anyhow::Result<Figures> {
    let started = std::time::Instant::now();
    let client_s = match tool {
        Tool::Tsbs => generate_tsbs(tsbs, load, "influx", &files.influx)?,
        Tool::Tsload | Tool::Replay | Tool::ReplayOwn => {
            generate_tsload(tsload, load, &files.tsload)?
        }
    };
    let metrics = load.metrics() as f64;
    Ok(Figures {
        rate: metrics / started.elapsed().as_secs_f64(),
        count: metrics,
        client_s,
        server_s: 0.0,
    })
}

/// One write run on a fresh `kind` server.
fn ingest_run(
    tsbs: &Path,
    tsload: &str,
    tool: Tool,
    kind: ServerKind,
    load: &Load,
    files: &Files,
) -> anyhow::Result<Figures> {
    let server = Server::start(kind).with_context(|| format!("starting {kind}"))?;
    let before = crate::server_cpu_s(&server);
    let figures = match tool {
        Tool::Tsbs => tsbs_load(tsbs, &server, load, files),
        Tool::Tsload | Tool::Replay | Tool::ReplayOwn => {
            tsload_load(tsload, &server, tool, load, files)
        }
    }
    .with_context(|| format!("the server's log ends:\n{}", server.log_tail()))?;
    Ok(Figures {
        server_s: crate::server_cpu_s(&server) - before,
        ..figures
    })
}

fn tsbs_load(tsbs: &Path, server: &Server, load: &Load, files: &Files) -> anyhow::Result<Figures> {
    let common = [
        format!("--workers={}", load.workers),
        format!("--batch-size={}", load.batch),
        "--db-name=benchmark".to_string(),
    ];
    let mut cmd;
    if server.kind().is_postgres() {
        let port = server.addr().port().to_string();
        cmd = Command::new(tsbs.join("tsbs_load_timescaledb"));
        cmd.arg(format!("--file={}", files.timescaledb.display()))
            .args([
                "--host=127.0.0.1",
                &format!("--port={port}"),
                "--user=tsload",
                "--pass=",
                "--postgres=sslmode=disable",
                "--use-hypertable=false",
            ]);
    } else {
        cmd = Command::new(tsbs.join("tsbs_load_influx"));
        cmd.arg(format!("--file={}", files.influx.display()))
            .arg(format!("--urls={}", server.base_url()))
            // The same bytes on the wire as tsload's (its `gzip` is off by default).
            .arg("--gzip=false");
        if server.kind() == ServerKind::VictoriaMetrics {
            // VictoriaMetrics has no CREATE DATABASE; any db name is taken.
            cmd.arg("--do-create-db=false");
        }
    }
    cmd.args(common);
    let (out, user, sys) = timed(&mut cmd)?;
    let (count, rate) = summary(&out, LOAD_SUMMARY)?;
    if count != load.metrics() as f64 {
        bail!(
            "TSBS loaded {count} metrics, not the data set's {}",
            load.metrics()
        );
    }
    Ok(Figures {
        rate,
        count,
        client_s: user + sys,
        server_s: 0.0,
    })
}

/// The `--set`s that aim tsload at `server` (database `benchmark`, as TSBS's).
fn target_sets(server: &Server) -> anyhow::Result<Vec<String>> {
    Ok(match server.kind() {
        ServerKind::Postgres | ServerKind::TimescaleDb => {
            let url = server.database_url().context("an SQL server has a URL")?;
            vec![
                "target.kind=\"postgres\"".into(),
                format!("target.url=\"{url}\""),
                // TSBS's timescaledb layout: a tags table, an index on time and on
                // (tags_id, time), COPY.
                "target.layout=\"tags\"".into(),
                "target.create_index=true".into(),
                "target.drop_existing=true".into(),
            ]
        }
        kind => {
            let mut sets = vec![
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", server.base_url()),
                "target.db=\"benchmark\"".into(),
            ];
            if kind != ServerKind::InfluxDb1 {
                sets.push("target.create_database=false".into());
            }
            sets
        }
    })
}

/// One `tsload run CONFIG --set ...` writing its JSON report to `report`: the report and
/// the process's user + system CPU seconds.
fn tsload_run(
    tsload: &str,
    config: &str,
    sets: &[String],
    report: &Path,
) -> anyhow::Result<(serde_json::Value, f64)> {
    let mut cmd = Command::new(tsload);
    cmd.args(["run", config, "--progress", "none", "--json"])
        .arg(report);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let (_, user, sys) = timed(&mut cmd)?;
    let text =
        std::fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    Ok((serde_json::from_str(&text)?, user + sys))
}

fn tsload_load(
    tsload: &str,
    server: &Server,
    tool: Tool,
    load: &Load,
    files: &Files,
) -> anyhow::Result<Figures> {
    let mut sets = tsload_sets(load);
    let file = match tool {
        Tool::Replay => Some(&files.influx),
        Tool::ReplayOwn => Some(&files.own),
        Tool::Tsbs | Tool::Tsload => None,
    };
    if let Some(file) = file {
        // A file has its own hosts and span: only the load's keys apply.
        sets.retain(|s| s.starts_with("load."));
        sets.push("workload.kind=\"file\"".into());
        sets.push(format!("workload.path=\"{}\"", file.display()));
    }
    sets.extend(target_sets(server)?);
    let (r, client_s) = tsload_run(tsload, "configs/cpu-only.toml", &sets, &files.report)?;
    let count = r["metrics"].as_f64().unwrap_or(0.0);
    if count != load.metrics() as f64 || r["failed_rows"].as_u64() != Some(0) {
        bail!(
            "tsload sent {count} metrics ({} rows failed), not the data set's {}",
            r["failed_rows"],
            load.metrics()
        );
    }
    Ok(Figures {
        rate: r["metrics_per_s"].as_f64().unwrap_or(0.0),
        count,
        client_s,
        server_s: 0.0,
    })
}

/// TSBS's queries on InfluxDB: the data set loaded once (by tsload, into `benchmark`),
/// then per type and round both tools in turn; lines of queries/s and CPU per query.
fn queries(
    tsbs: &Path,
    tsload: &str,
    load: &Load,
    files: &Files,
    rounds: usize,
) -> anyhow::Result<Vec<String>> {
    let server = Server::start(ServerKind::InfluxDb1).context("starting InfluxDB")?;
    tsload_load(tsload, &server, Tool::Tsload, load, files)
        .with_context(|| format!("loading the queries' data:\n{}", server.log_tail()))?;
    let mut table = Vec::new();
    for query_type in &load.query_types {
        let query_file = files.influx.with_file_name(format!("queries-{query_type}"));
        let mut cmd = Command::new(tsbs.join("tsbs_generate_queries"));
        cmd.args([
            "--use-case=cpu-only".to_string(),
            "--seed=123".into(),
            format!("--scale={}", load.scale),
            format!("--timestamp-start={START}"),
            format!("--timestamp-end={}", load.end()),
            format!("--queries={}", load.queries_of(query_type)),
            format!("--query-type={query_type}"),
            "--format=influx".into(),
            format!("--file={}", query_file.display()),
        ]);
        timed(&mut cmd).with_context(|| format!("generating TSBS's {query_type} queries"))?;
        let tools = [Tool::Tsbs, Tool::Tsload];
        let mut figures = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            for step in 0..2 {
                let i = (round + step) % 2;
                let before = crate::server_cpu_s(&server);
                let f = match tools[i] {
                    Tool::Tsbs => tsbs_queries(tsbs, &server, load, &query_file),
                    _ => tsload_queries(tsload, &server, load, query_type, files),
                }
                .with_context(|| format!("{query_type}, {}", tools[i].name()))?;
                let f = Figures {
                    server_s: crate::server_cpu_s(&server) - before,
                    ..f
                };
                eprintln!(
                    "   {query_type} round {} {}: {:.0} queries/s, client {:.1} us per query, \
                     server {:.2} s",
                    round + 1,
                    tools[i].name(),
                    f.rate,
                    f.client_s * 1e6 / f.count.max(1.0),
                    f.server_s
                );
                figures[i].push(f);
            }
        }
        let (t, s) = (median(&figures[1]), median(&figures[0]));
        let per = |f: &Figures| f.client_s * 1e6 / f.count.max(1.0);
        table.push(format!(
            "   {:<26} {:<30} {:>6.0} vs {:>6.0} queries/s ({:.2}) | client {:>5.1} vs {:>5.1} \
             us/query ({:.2}) | server {:.2} vs {:.2} s",
            format!("InfluxDB {query_type}"),
            "tsload",
            t.rate,
            s.rate,
            ratio(t.rate, s.rate),
            per(&t),
            per(&s),
            ratio(per(&t), per(&s)),
            t.server_s,
            s.server_s,
        ));
    }
    Ok(table)
}

/// How a TSBS program's summary line reads: its start, what else it holds, the word
/// (from 0) that is the count, and what comes right before the rate.
struct SummaryLine {
    starts: &'static str,
    holds: &'static str,
    count_word: usize,
    rate_after: &'static str,
}

/// `loaded 8640000 metrics in 2.345sec with 4 workers (mean rate 3684434.12 metrics/sec)`
/// (TSBS's load/loader.go).
const LOAD_SUMMARY: SummaryLine = SummaryLine {
    starts: "loaded ",
    // Not the `loaded N rows in` line that some loaders add.
    holds: " metrics in ",
    count_word: 1,
    rate_after: "mean rate ",
};

/// `Run complete after 1000 queries with 4 workers (Overall query rate 1234.56
/// queries/sec):` (TSBS's pkg/query/stat_processor.go).
const QUERY_SUMMARY: SummaryLine = SummaryLine {
    starts: "Run complete after ",
    holds: " queries with ",
    count_word: 3,
    rate_after: "query rate ",
};

/// The count and the rate of a TSBS program's summary line in `out`.
fn summary(out: &str, line: SummaryLine) -> anyhow::Result<(f64, f64)> {
    let text = out
        .lines()
        .find(|l| l.starts_with(line.starts) && l.contains(line.holds))
        .with_context(|| format!("no `{}...` line in TSBS's output:\n{out}", line.starts))?;
    let count = text
        .split_whitespace()
        .nth(line.count_word)
        .and_then(|n| n.parse::<f64>().ok());
    let rate = text
        .split(line.rate_after)
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok());
    match (count, rate) {
        (Some(count), Some(rate)) => Ok((count, rate)),
        _ => bail!("cannot read TSBS's count and rate: {text}"),
    }
}

fn tsbs_queries(
    tsbs: &Path,
    server: &Server,
    load: &Load,
    query_file: &Path,
) -> anyhow::Result<Figures> {
    let mut cmd = Command::new(tsbs.join("tsbs_run_queries_influx"));
    cmd.args([
        format!("--file={}", query_file.display()),
        format!("--urls={}", server.base_url()),
        format!("--workers={}", load.workers),
        "--db-name=benchmark".into(),
    ]);
    let (out, user, sys) = timed(&mut cmd)?;
    let (count, rate) = summary(&out, QUERY_SUMMARY)?;
    Ok(Figures {
        rate,
        count,
        client_s: user + sys,
        server_s: 0.0,
    })
}

fn tsload_queries(
    tsload: &str,
    server: &Server,
    load: &Load,
    query_type: &str,
    files: &Files,
) -> anyhow::Result<Figures> {
    let mut sets = vec![
        format!("workload.scale={}", load.scale),
        format!("workload.start=\"{START}\""),
        format!("workload.end=\"{}\"", load.end()),
        format!("query.types=[\"{query_type}\"]"),
        format!("query.queries={}", load.queries_of(query_type)),
        format!("query.workers={}", load.workers),
        "query.max_errors=0".into(),
    ];
    sets.extend(target_sets(server)?);
    let (r, client_s) = tsload_run(tsload, "configs/r5-queries.toml", &sets, &files.report)?;
    let count = r["requests"].as_f64().unwrap_or(0.0);
    let queries = load.queries_of(query_type);
    if r["failed_requests"].as_u64() != Some(0) || count != f64::from(queries) {
        bail!(
            "tsload ran {count} of {} queries, {} failed: {}",
            queries,
            r["failed_requests"],
            r["errors"]
        );
    }
    Ok(Figures {
        rate: r["requests_per_s"].as_f64().unwrap_or(0.0),
        count,
        client_s,
        server_s: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_set_ends_where_its_hours_say() {
        let mut load = Load {
            scale: 100,
            hours: 24,
            workers: 4,
            batch: 10_000,
            queries: None,
            own_file: false,
            query_types: Vec::new(),
        };
        assert_eq!(load.end(), "2016-01-02T00:00:00Z");
        assert_eq!(load.metrics(), 8_640_000);
        load.hours = 12;
        assert_eq!(load.end(), "2016-01-01T12:00:00Z");
        load.hours = 36;
        assert_eq!(load.end(), "2016-01-02T12:00:00Z");
    }

    #[test]
    fn reads_tsbs_summary_lines() {
        let load = "time,per. metric/s,metric total,overall metric/s\n\nSummary:\nloaded \
                    8640000 metrics in 3.976sec with 4 workers (mean rate 2172977.12 \
                    metrics/sec)\nloaded 864000 rows in 3.976sec with 4 workers (mean rate \
                    217297.71 rows/sec)\n";
        assert_eq!(
            summary(load, LOAD_SUMMARY).unwrap(),
            (8_640_000.0, 2_172_977.12)
        );
        let queries = "After 100 queries with 4 workers:\nRun complete after 5000 queries with \
                       4 workers (Overall query rate 2006.03 queries/sec):\n";
        assert_eq!(summary(queries, QUERY_SUMMARY).unwrap(), (5000.0, 2006.03));
        let err = summary("panic: no file", LOAD_SUMMARY).unwrap_err();
        assert!(err.to_string().contains("no `loaded ...` line"), "{err}");
        let err = summary("loaded x metrics in 1s (mean rate y)", LOAD_SUMMARY).unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
    }

    #[test]
    fn shares_and_rates_per_metric() {
        let f = Figures {
            rate: 1e6,
            count: 2e6,
            client_s: 0.2,
            server_s: 4.0,
        };
        assert_eq!(f.client_ns_per(), 100.0);
        assert_eq!(f.server_ns_per(), 2000.0);
        assert_eq!(f.client_share(), 5.0);
    }
}
