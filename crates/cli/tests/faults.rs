//! The fault matrix: `tsload run` against real servers on 127.0.0.1 while faults are
//! injected at a known byte or moment (tsload's own proxy with a fault, a server killed
//! and restarted), each checking that the rows reported equal the rows stored, or that
//! the stored count lies within the report's ambiguous bound.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use tsload_proxy::{Fault, FaultAction, FaultTrigger, Proxy, ProxyConfig, ProxyHandle, Stream};
use tsload_testbed::{Server, ServerKind};

fn tsload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tsload"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"))
}

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

/// A proxy in front of `upstream` that cuts the `occurrence`-th matching exchange of a
/// connection, `fires` times in all (each new connection counts afresh).
fn answer_thief(
    rt: &tokio::runtime::Runtime,
    upstream: SocketAddr,
    cut: Cut,
    occurrence: u64,
    fires: u64,
) -> ProxyHandle {
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
    let (stream, pattern, action) = match cut {
        Cut::AfterRequest(p) => (Stream::Up, p, FaultAction::ResetOnReply),
        Cut::InAnswer(p) => (Stream::Down, p, FaultAction::Reset),
    };
    let mut fault = Fault::new(
        FaultTrigger::AfterPattern {
            stream,
            pattern: pattern.to_vec(),
            occurrence,
        },
        action,
    );
    fault.max_fires = Some(fires);
    cfg.faults.push(fault);
    rt.block_on(Proxy::start(cfg)).expect("proxy starts")
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
