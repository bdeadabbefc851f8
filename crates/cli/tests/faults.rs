//! The fault matrix: `tsload run` against real servers on 127.0.0.1 while faults are
//! injected at a known byte or moment (tsload's own proxy with a fault, a server killed
//! and restarted), each checking that the rows reported equal the rows stored, or that
//! the stored count lies within the report's ambiguous bound.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use std::time::Duration;

use tsload_proxy::{Fault, FaultAction, FaultTrigger, Proxy, ProxyConfig, ProxyHandle, Stream};
use tsload_testbed::http_front::{HttpFront, Storm};
use tsload_testbed::{Server, ServerKind};

mod common;
use common::{start, text, tsload};

/// Where a proxy cuts a connection so that a statement that committed loses its answer.
#[derive(Clone, Copy)]
enum Cut {
    /// Once the client's `pattern` reached the server, the server's answer is swallowed
    /// and both sides reset (MySQL: the COMMIT statement; the server answers after it
    /// committed).
    AfterRequest(&'static [u8]),
    /// The server's answer is forwarded up to the end of `pattern` (PostgreSQL: the
    /// CommandComplete of the COMMIT or of an autocommitted COPY, sent once it committed),
    /// then both sides reset before ReadyForQuery: the client sees a lost connection.
    InAnswer(&'static [u8]),
}

/// A proxy on 127.0.0.1 in front of `upstream` with one fault that fires at most `fires`
/// times in all.
fn proxy_with(
    rt: &tokio::runtime::Runtime,
    upstream: SocketAddr,
    trigger: FaultTrigger,
    action: FaultAction,
    fires: u64,
) -> ProxyHandle {
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
    let mut fault = Fault::new(trigger, action);
    fault.max_fires = Some(fires);
    cfg.faults.push(fault);
    rt.block_on(Proxy::start(cfg)).expect("proxy starts")
}

/// A proxy in front of `upstream` that cuts the `occurrence`-th matching exchange of a
/// connection, `fires` times in all (each new connection counts afresh).
fn answer_thief(
    rt: &tokio::runtime::Runtime,
    upstream: SocketAddr,
    cut: Cut,
    occurrence: u64,
    fires: u64,
) -> ProxyHandle {
    let (stream, pattern, action) = match cut {
        Cut::AfterRequest(p) => (Stream::Up, p, FaultAction::ResetOnReply),
        Cut::InAnswer(p) => (Stream::Down, p, FaultAction::Reset),
    };
    let trigger = FaultTrigger::AfterPattern {
        stream,
        pattern: pattern.to_vec(),
        occurrence,
    };
    proxy_with(rt, upstream, trigger, action, fires)
}

/// The server's database URL with its port replaced by `port`.
fn url_via(server: &Server, port: u16) -> String {
    let url = server.database_url().expect("an SQL server");
    let own = format!(":{}/", server.addr().port());
    assert!(url.contains(&own), "{url}");
    url.replace(&own, &format!(":{port}/"))
}

/// 20 hosts x 10 min of cpu-only (1,200 rows) in batches of 10 from 2 workers, closed
/// loop, into `url`; returns the output and the JSON report.
fn load(
    kind: &str,
    url: &str,
    delivery: &str,
    extra: &[&str],
    dir: &Path,
) -> (Output, serde_json::Value) {
    let out = tsload()
        .args([
            "run",
            "--json",
            "r.json",
            "--progress",
            "none",
            "--set",
            &format!("target.kind=\"{kind}\""),
            "--set",
            &format!("target.url=\"{url}\""),
            "--set",
            "target.drop_existing=true",
            "--set",
            &format!("target.delivery=\"{delivery}\""),
            "--set",
            "workload.scale=20",
            "--set",
            "workload.end=\"2016-01-01T00:10:00Z\"",
            "--set",
            "load.batch=10",
            "--set",
            "load.workers=2",
            "--set",
            "load.max_retries=5",
            "--set",
            "load.retry_backoff=\"10ms\"",
        ])
        .args(extra.iter().flat_map(|s| ["--set", s]))
        .current_dir(dir)
        .output()
        .expect("start tsload");
    let report = if out.status.success() {
        let s = std::fs::read_to_string(dir.join("r.json")).expect("report written");
        serde_json::from_str(&s).expect("valid JSON")
    } else {
        serde_json::Value::Null
    };
    (out, report)
}

const ROWS: u64 = 1_200;
const BATCH: u64 = 10;
const FIRES: u64 = 4;

/// Exactly once: every COMMIT whose answer was stolen had committed; the retry finds it
/// in the ledger and stores nothing. Stored == reported, every time.
fn lost_commit_answers_are_settled_by_the_ledger(
    kind: ServerKind,
    target: &str,
    cut: Cut,
    extra: &[&str],
) {
    let server = start(kind);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 1..=3u64 {
        // A different COMMIT each round: the 2nd, 5th, 8th of each connection.
        let proxy = answer_thief(&rt, server.addr(), cut, 3 * round - 1, FIRES);
        let dir = tempfile::tempdir().unwrap();
        let url = url_via(&server, proxy.local_addr().port());
        let (out, r) = load(target, &url, "exactly_once", extra, dir.path());
        let fired = proxy.stats().faults_fired;
        assert!(
            out.status.success(),
            "{target} round {round}: {}\n{}",
            text(&out.stderr),
            server.log_tail()
        );
        assert_eq!(fired, FIRES, "{target} round {round}: the faults fired");
        assert_eq!(r["rows"], ROWS, "{target} round {round}: {r}");
        assert_eq!(
            server.sql_count("cpu"),
            ROWS,
            "{target} round {round}: rows stored == rows reported"
        );
        assert_eq!(
            r["recovered_rows"],
            FIRES * BATCH,
            "{target} round {round}: each stolen answer's batch was found in the ledger: {r}"
        );
        assert_eq!(r["ambiguous_rows"], 0, "{target} round {round}");
        assert_eq!(r["retries"], FIRES, "{target} round {round}");
        assert_eq!(r["errors"]["connection"], FIRES, "{target} round {round}");
        let run_id = r["ledger_run_id"].as_i64().expect("ledger_run_id");
        let ledger = server
            .sql(&format!(
                "SELECT count(*), sum(batch_rows) FROM tsload_ledger WHERE run_id = {run_id}"
            ))
            .unwrap();
        assert_eq!(
            ledger,
            format!("{}\t{ROWS}", ROWS / BATCH),
            "{target} round {round}"
        );
        rt.block_on(proxy.shutdown());
    }
}

/// At least once: the same stolen answers make the retries store those batches twice,
/// and the report says exactly how many rows may have been: stored == rows + ambiguous.
fn lost_commit_answers_are_counted_as_ambiguous_without_a_ledger(
    kind: ServerKind,
    target: &str,
    cut: Cut,
) {
    let server = start(kind);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = answer_thief(&rt, server.addr(), cut, 3, FIRES);
    let dir = tempfile::tempdir().unwrap();
    let url = url_via(&server, proxy.local_addr().port());
    let (out, r) = load(target, &url, "at_least_once", &[], dir.path());
    assert!(
        out.status.success(),
        "{target}: {}\n{}",
        text(&out.stderr),
        server.log_tail()
    );
    assert_eq!(proxy.stats().faults_fired, FIRES);
    assert_eq!(r["rows"], ROWS, "{r}");
    assert_eq!(r["ambiguous_rows"], FIRES * BATCH, "{r}");
    assert_eq!(r["recovered_rows"], 0);
    assert_eq!(
        server.sql_count("cpu"),
        ROWS + FIRES * BATCH,
        "{target}: every ambiguous batch had landed and was stored again"
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ambiguous") && stdout.contains("1,200 to 1,240 rows"),
        "{stdout}"
    );
    rt.block_on(proxy.shutdown());
}

#[test]
fn postgres_lost_commit_answers_are_settled_by_the_ledger() {
    // CommandComplete "COMMIT" of the ledger row's INSERT; COMMIT.
    lost_commit_answers_are_settled_by_the_ledger(
        ServerKind::Postgres,
        "postgres",
        Cut::InAnswer(b"COMMIT\0"),
        &[],
    );
}

#[test]
fn postgres_lost_insert_answers_are_settled_by_the_ledger() {
    // method = insert: one INSERT that also records the ledger row (a CTE), no COMMIT;
    // its CommandComplete "INSERT 0 10" is sent once it committed.
    lost_commit_answers_are_settled_by_the_ledger(
        ServerKind::Postgres,
        "postgres",
        Cut::InAnswer(b"INSERT 0 10\0"),
        &["target.method=\"insert\""],
    );
}

#[test]
fn mariadb_lost_commit_answers_are_settled_by_the_ledger() {
    // The ledger row's INSERT and COMMIT go as one text query ending in COMMIT.
    lost_commit_answers_are_settled_by_the_ledger(
        ServerKind::MariaDb,
        "mysql",
        Cut::AfterRequest(b"COMMIT"),
        &[],
    );
}

#[test]
fn postgres_lost_commit_answers_are_ambiguous_at_least_once() {
    // At least once, a batch of one table is one autocommitted COPY: "COPY 10" answers it.
    lost_commit_answers_are_counted_as_ambiguous_without_a_ledger(
        ServerKind::Postgres,
        "postgres",
        Cut::InAnswer(b"COPY 10\0"),
    );
}

#[test]
fn mariadb_lost_commit_answers_are_ambiguous_at_least_once() {
    lost_commit_answers_are_counted_as_ambiguous_without_a_ledger(
        ServerKind::MariaDb,
        "mysql",
        Cut::AfterRequest(b"COMMIT"),
    );
}

/// `tsload run` with `sets` (after `--set`); returns the output and the JSON report
/// (`Null` when the run failed before writing one).
fn run_with(sets: &[String], dir: &Path) -> (Output, serde_json::Value) {
    let out = tsload()
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(sets.iter().flat_map(|s| ["--set", s.as_str()]))
        .current_dir(dir)
        .output()
        .expect("start tsload");
    let path = dir.join("r.json");
    let report = match std::fs::read_to_string(&path) {
        Ok(s) => serde_json::from_str(&s).expect("valid JSON"),
        Err(_) => serde_json::Value::Null,
    };
    (out, report)
}

/// cpu-only, `hosts` x `minutes` (one row per host per 10 s), line protocol to `url`.
fn http_load(url: &str, hosts: u32, minutes: u32, extra: &[&str]) -> Vec<String> {
    let mut sets = vec![
        "target.kind=\"influx\"".to_string(),
        format!("target.url=\"{url}\""),
        format!("workload.scale={hosts}"),
        format!(
            "workload.end=\"2016-01-01T{:02}:{:02}:00Z\"",
            minutes / 60,
            minutes % 60
        ),
        "load.retry_backoff=\"10ms\"".into(),
    ];
    sets.extend(extra.iter().map(|s| (*s).to_string()));
    sets
}

/// Samples of the cpu measurement VictoriaMetrics holds (10 per row).
fn vm_samples(vm: &Server) -> u64 {
    vm.vm_flush();
    vm.vm_sample_count("{__name__=~\"cpu_.*\"}")
}

/// The stored count lies within what the report promises: [rows, rows + ambiguous].
fn assert_within_bound(stored_rows: u64, r: &serde_json::Value, what: &str) {
    let rows = r["rows"].as_u64().unwrap();
    let ambiguous = r["ambiguous_rows"].as_u64().unwrap();
    assert!(
        (rows..=rows + ambiguous).contains(&stored_rows),
        "{what}: stored {stored_rows} rows, report says {rows} + up to {ambiguous} ambiguous"
    );
}

#[test]
fn victoria_metrics_429_storm_waits_out_retry_after() {
    let vm = start(ServerKind::VictoriaMetrics);
    let front = HttpFront::start(
        vm.http_addr(),
        Storm {
            retry_after: Some(1),
            ..Storm::of(429, 3)
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let sets = http_load(
        &front.url,
        3,
        10,
        &[
            "load.workers=1",
            "load.batch=30",
            "target.create_database=false",
        ],
    );
    let (out, r) = run_with(&sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["retries"], 3);
    assert_eq!(r["errors"]["unavailable"], 3);
    // One worker, one batch refused three times, each answer asking for 1 s: the engine's
    // own 10 ms backoff is overruled.
    assert!(r["elapsed_s"].as_f64().unwrap() >= 2.9, "{r}");
    assert_eq!(r["ambiguous_rows"], 0, "a 429 stored nothing");
    assert_eq!(r["rows"], 180);
    assert_eq!(front.seen(), 6 + 3);
    assert_eq!(vm_samples(&vm), 1_800, "each point once");
}

#[test]
fn victoria_metrics_500_storm_is_retried_and_bounded_as_ambiguous() {
    let vm = start(ServerKind::VictoriaMetrics);
    let front = HttpFront::start(vm.http_addr(), Storm::of(500, 5));
    let dir = tempfile::tempdir().unwrap();
    let sets = http_load(
        &front.url,
        3,
        10,
        &[
            "load.workers=2",
            "load.batch=30",
            "load.max_retries=10",
            "target.create_database=false",
        ],
    );
    let (out, r) = run_with(&sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["retries"], 5);
    assert_eq!(r["ambiguous_rows"], 5 * 30);
    assert_eq!(r["rows"], 180);
    assert_within_bound(vm_samples(&vm) / 10, &r, "500 storm");
}

#[test]
fn victoria_metrics_connection_reset_mid_request_is_retried_within_the_bound() {
    let vm = start(ServerKind::VictoriaMetrics);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Each of the first three connections is reset after its 3,000th byte to the server:
    // inside the first request's body (batches of 100 rows are ~20 KB).
    let trigger = FaultTrigger::AfterBytes {
        stream: Stream::Up,
        bytes: 3_000,
    };
    let proxy = proxy_with(&rt, vm.http_addr(), trigger, FaultAction::Reset, 3);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}", proxy.local_addr());
    let sets = http_load(
        &url,
        10,
        10,
        &[
            "load.workers=2",
            "load.batch=100",
            "target.create_database=false",
        ],
    );
    let (out, r) = run_with(&sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(proxy.stats().faults_fired, 3);
    assert_eq!(r["rows"], 600);
    assert_eq!(r["retries"], 3);
    assert_eq!(r["errors"]["connection"], 3, "{r}");
    assert_eq!(
        r["ambiguous_rows"], 300,
        "a cut request may have been applied in part"
    );
    assert_within_bound(vm_samples(&vm) / 10, &r, "reset at byte 3,000");
    rt.block_on(proxy.shutdown());
}

#[test]
fn victoria_metrics_stalled_past_the_timeout_is_a_retried_timeout() {
    let vm = start(ServerKind::VictoriaMetrics);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The second request of each of the first two connections never reaches the server.
    let trigger = FaultTrigger::AfterPattern {
        stream: Stream::Up,
        pattern: b"POST ".to_vec(),
        occurrence: 2,
    };
    let proxy = proxy_with(&rt, vm.http_addr(), trigger, FaultAction::Stall, 2);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}", proxy.local_addr());
    let sets = http_load(
        &url,
        3,
        10,
        &[
            "load.workers=1",
            "load.batch=30",
            "target.timeout=\"400ms\"",
            "target.create_database=false",
        ],
    );
    let (out, r) = run_with(&sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(proxy.stats().faults_fired, 2);
    assert_eq!(r["errors"]["timeout"], 2, "{r}");
    assert_eq!(r["retries"], 2);
    assert_eq!(r["rows"], 180);
    // Both stalled requests are counted in the latency: each waited out the timeout.
    assert!(r["latency"]["max_ms"].as_f64().unwrap() >= 400.0, "{r}");
    assert_within_bound(vm_samples(&vm) / 10, &r, "stall");
    rt.block_on(proxy.shutdown());
}

/// An open-loop load (about 4 s) into an HTTP server killed once it holds rows (so the
/// kill never lands in the run's prepare step) and restarted 1 s later; returns the
/// report.
fn ride_out_an_http_server_crash(
    server: &mut Server,
    stored: impl Fn(&Server) -> u64,
    extra: &[&str],
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = http_load(
        &server.base_url(),
        10,
        100,
        &[
            "load.rate=1500",
            "load.batch=50",
            "load.workers=2",
            "load.max_retries=40",
            "load.retry_backoff=\"50ms\"",
            "target.timeout=\"2s\"",
        ],
    );
    sets.extend(extra.iter().map(|s| (*s).to_string()));
    let mut child = tsload()
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(sets.iter().flat_map(|s| ["--set", s.as_str()]))
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Err(e) = server.crash_once_rows_flow(stored, Duration::from_secs(1)) {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("{e}\ntsload's output:\n{}", text(&out.stderr));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        server.log_tail()
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["rows"], 6_000, "every row written in the end: {r}");
    assert!(
        r["retries"].as_u64().unwrap() > 0,
        "the crash cost retries: {r}"
    );
    r
}

#[test]
fn influxdb_killed_and_restarted_keeps_every_point() {
    let mut influx = start(ServerKind::InfluxDb1);
    let r = ride_out_an_http_server_crash(
        &mut influx,
        |s| {
            s.influx_count("benchmark", "cpu", "usage_user")
                .unwrap_or(0)
        },
        &[],
    );
    // InfluxDB fsyncs its WAL before answering and keeps one point per series and time,
    // so a retried point overwrites itself: exactly the rows generated.
    let points = influx
        .influx_count("benchmark", "cpu", "usage_user")
        .unwrap();
    assert_eq!(points, 6_000, "{r}");
    assert_within_bound(points, &r, "InfluxDB crash");
}

#[test]
fn victoria_metrics_killed_and_restarted_stays_within_the_bound() {
    let mut vm = start(ServerKind::VictoriaMetrics);
    let r = ride_out_an_http_server_crash(&mut vm, vm_samples, &["target.create_database=false"]);
    let stored = vm_samples(&vm) / 10;
    // VictoriaMetrics answers before its in-memory buffer reaches the disk
    // (-inmemoryDataFlushInterval): a SIGKILL may lose acknowledged rows, which no client
    // can see. What it holds never exceeds what the report allows.
    let rows = r["rows"].as_u64().unwrap();
    let ambiguous = r["ambiguous_rows"].as_u64().unwrap();
    assert!(
        stored <= rows + ambiguous,
        "stored {stored} > {rows} + {ambiguous}"
    );
    eprintln!("VictoriaMetrics after SIGKILL: {stored} of {rows} acknowledged rows stored");
}

/// A tmpfs of `size` mounted on `dir`, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (CAP_SYS_ADMIN)"
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn postgres_disk_full_stops_the_run_and_keeps_rows_reported_equal_to_rows_stored() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let space = dir.path().join("tiny");
    std::fs::create_dir(&space).unwrap();
    let _tmpfs = Tmpfs::mount(&space, "4m");
    let status = Command::new("chown")
        .args(["postgres:postgres"])
        .arg(&space)
        .status()
        .unwrap();
    assert!(status.success());
    let db = pg
        .sql("SELECT current_database()")
        .expect("the database's name");
    pg.sql(&format!(
        "CREATE TABLESPACE tiny LOCATION '{}'",
        space.display()
    ))
    .unwrap_or_else(|e| panic!("CREATE TABLESPACE: {e}\n{}", pg.log_tail()));
    pg.sql(&format!(
        "ALTER DATABASE \"{db}\" SET default_tablespace = tiny"
    ))
    .unwrap();
    let url = pg.database_url().unwrap();
    // 100 hosts x 6 h of cpu-only (~216,000 rows, tens of MB) cannot fit in 4 MiB.
    let sets: Vec<String> = [
        "target.kind=\"postgres\"".to_string(),
        format!("target.url=\"{url}\""),
        "target.drop_existing=true".into(),
        "target.method=\"insert\"".into(),
        "workload.scale=100".into(),
        "workload.end=\"2016-01-01T06:00:00Z\"".into(),
        "load.batch=500".into(),
        "load.workers=2".into(),
    ]
    .to_vec();
    let (out, r) = run_with(&sets, dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a fatal run error: {stderr}");
    assert!(
        stderr.contains("No space left on device") || stderr.contains("could not extend"),
        "the server's reason is shown: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(r["stop_reason"], "fatal error", "{r}");
    let rows = r["rows"].as_u64().unwrap();
    assert!(rows > 0 && rows < 216_000, "{r}");
    assert_eq!(r["ambiguous_rows"], 0);
    assert_eq!(pg.sql_count("cpu"), rows, "rows reported == rows stored");
    // Give the tablespace back before the tmpfs goes.
    let _ = pg.sql(&format!("ALTER DATABASE \"{db}\" RESET default_tablespace"));
    let _ = pg.sql("DROP TABLE IF EXISTS cpu, tsload_ledger");
    let _ = pg.sql("DROP TABLESPACE tiny");
}

/// A front that answers every request of a run with `storm`'s status.
fn every_request(storm: Storm) -> Storm {
    Storm {
        failures: usize::MAX,
        ..storm
    }
}

#[test]
fn a_redirected_write_fails_naming_the_location_and_stores_nothing() {
    let vm = start(ServerKind::VictoriaMetrics);
    // The Location answers 200 to a GET: a client that followed the redirect (reqwest's
    // default) would store nothing and count every row as written.
    let location: &'static str =
        Box::leak(format!("http://{}/health", vm.http_addr()).into_boxed_str());
    for status in [302, 303, 307] {
        let front = HttpFront::start(
            vm.http_addr(),
            every_request(Storm {
                location: Some(location),
                ..Storm::of(status, 0)
            }),
        );
        let dir = tempfile::tempdir().unwrap();
        let sets = http_load(
            &front.url,
            2,
            10,
            &["load.workers=1", "target.create_database=false"],
        );
        let (out, r) = run_with(&sets, dir.path());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{status}: {stderr}");
        assert!(
            stderr.contains(location) && stderr.contains("does not follow redirects"),
            "{status}: {stderr}"
        );
        assert_eq!(r["rows"], 0, "{status}: {r}");
    }
    assert_eq!(vm_samples(&vm), 0);
}

#[test]
fn a_huge_error_body_is_read_only_up_to_a_cap() {
    let vm = start(ServerKind::VictoriaMetrics);
    // 1 GiB of answer: the client read it whole before (RSS past 1 GiB).
    let front = HttpFront::start(
        vm.http_addr(),
        every_request(Storm {
            body_bytes: 1 << 30,
            ..Storm::of(400, 0)
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let sets = http_load(
        &front.url,
        2,
        10,
        &["load.workers=1", "target.create_database=false"],
    );
    let (out, r) = run_with(&sets, dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("HTTP 400"), "{stderr}");
    let rss = r["client"]["peak_rss_bytes"]
        .as_u64()
        .expect("peak RSS in the report");
    assert!(
        rss < 256 << 20,
        "peak RSS {} MiB for a 1 GiB error answer",
        rss >> 20
    );
}

#[test]
fn a_query_run_against_a_closed_port_backs_off_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(["--set", "target.kind=\"influx\""])
        .args(["--set", "target.url=\"http://127.0.0.1:1\""])
        .args(["--set", "workload.scale=2"])
        .args(["--set", "query.kind=\"tsbs\""])
        .args(["--set", "query.dialect=\"influxql\""])
        .args(["--set", "query.types=[\"single-groupby-1-1-1\"]"])
        .args(["--set", "query.workers=2"])
        .args(["--set", "query.duration=\"3s\""])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("every request failed"), "{stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let failed = r["failed_requests"].as_u64().unwrap();
    // Two workers for 3 s, waiting 10 ms doubling to 1 s after each failure: about 20
    // attempts (without a backoff: tens of thousands).
    assert!((2..=60).contains(&failed), "{failed} failed requests: {r}");
}

#[test]
fn sigterm_during_endless_retries_writes_the_report_within_a_grace_period() {
    let vm = start(ServerKind::VictoriaMetrics);
    // Every write is answered 503: each batch is retried up to 1,000 times, 1 s doubling
    // to 5 s apart (over an hour).
    let front = HttpFront::start(vm.http_addr(), every_request(Storm::of(503, 0)));
    let dir = tempfile::tempdir().unwrap();
    let sets = http_load(
        &front.url,
        2,
        10,
        &[
            "load.workers=2",
            "load.max_retries=1000",
            "load.retry_backoff=\"1s\"",
            "target.create_database=false",
        ],
    );
    let mut child = tsload()
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(sets.iter().flat_map(|s| ["--set", s.as_str()]))
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both workers are in their retries once the front has seen four requests.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while front.seen() < 4 {
        assert!(std::time::Instant::now() < deadline, "no retries began");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    // SAFETY: kill(2) with a child's pid and SIGTERM has no memory effects.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still running 20 s after SIGTERM: retries were not cut short");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let waited = signalled.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(143), "{stderr}");
    // The requests in flight finish (a 503 comes back at once); no retry waits on.
    assert!(waited < Duration::from_secs(5), "took {waited:?}: {stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["rows"], 0, "{r}");
    assert_eq!(r["stop_reason"], "interrupted", "{r}");
}

/// File descriptors process `pid` holds.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(Iterator::count)
        .unwrap_or(0)
}

#[test]
fn a_connection_flood_on_the_metrics_endpoint_holds_a_bounded_number_of_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tsload()
        .args([
            "run",
            "--target",
            "null",
            "-r",
            "2000",
            "-d",
            "6s",
            "--progress",
            "none",
        ])
        .args(["--json", "r.json", "--metrics-addr", "127.0.0.1:0"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The endpoint's address, from its first line.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("metrics: http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in {line:?}"))
        .to_string();
    let before = open_fds(child.id());
    // 300 idle connections, kept open: each one the endpoint keeps costs it a descriptor
    // (the run's sockets and files come from the same limit).
    let held: Vec<_> = (0..300)
        .filter_map(|_| std::net::TcpStream::connect(&addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = open_fds(child.id());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(
        held.len() >= 200,
        "the flood opened only {} connections",
        held.len()
    );
    assert!(status.success(), "{rest}");
    assert!(
        during <= before + 40,
        "the endpoint holds {} descriptors for {} idle connections ({before} before)",
        during.saturating_sub(before),
        held.len()
    );
}

#[test]
fn an_influxdb_partial_write_is_not_counted_and_stays_within_the_bound() {
    let influx = start(ServerKind::InfluxDb1);
    // Points older than an hour are dropped by this database's retention policy.
    let answer = influx
        .post(
            "/query",
            &[("q", "CREATE DATABASE partial WITH DURATION 1h")],
            "",
        )
        .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    // With H this hour's start: the points of [H - 2h, H - 1h) are older than the
    // retention and in a shard group that ended before it, dropped whatever the minute
    // now; points from H on are kept. One host, a row every 10 minutes from H - 2h to
    // now, all in one batch: the server keeps part of it and drops at least 6 points.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let hour = now / 3600 * 3600;
    let at = |secs: u64| {
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(secs))
            .to_string()
    };
    let (start, end) = (at(hour - 7200), at(now.max(hour + 1)));
    let dir = tempfile::tempdir().unwrap();
    let sets: Vec<String> = [
        "target.kind=\"influx\"".to_string(),
        format!("target.url=\"{}\"", influx.base_url()),
        "target.db=\"partial\"".into(),
        "target.create_database=false".into(),
        "workload.scale=1".into(),
        format!("workload.start=\"{start}\""),
        format!("workload.end=\"{end}\""),
        "workload.interval=\"10m\"".into(),
        "load.batch=100".into(),
        "load.workers=1".into(),
    ]
    .into();
    let (out, r) = run_with(&sets, dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stderr}\n{}",
        text(&out.stdout)
    );
    assert!(stderr.contains("partial write"), "{stderr}");
    let stored = influx.influx_count("partial", "cpu", "usage_user").unwrap();
    let sent = r["ambiguous_rows"].as_u64().unwrap();
    assert!(
        stored >= 1 && stored + 6 <= sent,
        "stored {stored} of the batch's {sent} points: {stderr}"
    );
    assert_eq!(r["rows"], 0, "{r}");
    assert_within_bound(stored, &r, "InfluxDB partial write");
}
