//! Starts each real server on 127.0.0.1, writes a few points, reads them back through the
//! helpers, and checks that dropping the server stops its process and removes its dir.
//! Needs influxd, victoria-metrics, java and the QuestDB jar: `cargo xtask test` installs
//! them; without them these tests fail saying what is missing.

use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tsload_testbed::{Server, ServerKind};

/// Three points at 2016-01-01 (the test data sets' era): two hosts, two fields each.
const LINES: &str = "\
cpu,hostname=host_0 usage_user=58i,usage_system=2.5 1451606400000000000
cpu,hostname=host_1 usage_user=12i,usage_system=7.5 1451606400000000000
cpu,hostname=host_0 usage_user=59i,usage_system=3.5 1451606410000000000
";

fn start(kind: ServerKind) -> Server {
    let server = Server::start(kind).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{kind} ready in {:?} at {} (pid {}, dir {})",
        server.startup_time(),
        server.base_url(),
        server.pid(),
        server.data_dir().display()
    );
    server
}

/// Every socket the server listens on is on 127.0.0.1, and `expected` are among them.
fn assert_loopback_only(server: &Server, expected: &[std::net::SocketAddr]) {
    let listeners = server.listeners().unwrap();
    for l in &listeners {
        assert_eq!(
            l.addr.ip(),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            "{} listens on {l}; all: {listeners:?}",
            server.kind()
        );
    }
    for addr in expected {
        assert!(
            listeners
                .iter()
                .any(|l| l.proto == "tcp" && l.addr == *addr),
            "{} does not listen on {addr}; it listens on {listeners:?}",
            server.kind()
        );
    }
}

/// Drops `server` and checks that its process is gone and its dir removed.
fn stop_and_check(server: Server) {
    let (pid, dir): (u32, PathBuf) = (server.pid(), server.data_dir().to_path_buf());
    assert!(dir.is_dir());
    drop(server);
    assert_gone(pid, &dir);
}

fn assert_gone(pid: u32, dir: &Path) {
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} still exists after drop"
    );
    assert!(!dir.exists(), "{} still exists after drop", dir.display());
}

#[test]
fn influxdb_stores_points_and_cleans_up() {
    let s = start(ServerKind::InfluxDb1);
    assert_eq!(s.kind(), ServerKind::InfluxDb1);
    assert_eq!(s.base_url(), format!("http://{}", s.http_addr()));
    assert_eq!(s.pg_addr(), None);
    assert_loopback_only(&s, &[s.http_addr()]);
    assert_eq!(s.get("/ping", &[]).unwrap().status, 204);

    s.influx_create_db("benchmark").unwrap();
    s.write_lines(Some("benchmark"), LINES).unwrap();
    assert_eq!(s.influx_count("benchmark", "cpu", "usage_user").unwrap(), 3);
    assert_eq!(
        s.influx_count("benchmark", "cpu", "usage_system").unwrap(),
        3
    );
    assert_eq!(s.influx_count("benchmark", "mem", "used").unwrap(), 0);
    let json = s
        .influx_query(
            "benchmark",
            r#"SELECT "usage_user" FROM "cpu" WHERE "hostname" = 'host_1'"#,
        )
        .unwrap();
    let values = &json["results"][0]["series"][0]["values"];
    assert_eq!(values[0][0], "2016-01-01T00:00:00Z", "{json}");
    assert_eq!(values[0][1], 12, "{json}");

    // Errors are errors, and name what failed.
    let err = s
        .influx_count("no_such_db", "cpu", "usage_user")
        .unwrap_err();
    assert!(err.to_string().contains("database not found"), "{err}");
    let err = s.write_lines(Some("no_such_db"), LINES).unwrap_err();
    assert!(err.to_string().contains("HTTP 404"), "{err}");
    assert!(s.questdb_exec("select 1").is_err());
    assert!(!s.log_tail().is_empty());
    // The SQL helpers are PostgreSQL's and MariaDB's.
    assert_eq!(s.database_url(), None);
    assert_eq!(s.addr(), s.http_addr());
    let err = s.sql("SELECT 1").unwrap_err();
    assert!(err.to_string().contains("PostgreSQL and MariaDB"), "{err}");

    stop_and_check(s);
}

#[test]
fn victoria_metrics_stores_points_and_cleans_up() {
    let s = start(ServerKind::VictoriaMetrics);
    assert_loopback_only(&s, &[s.http_addr()]);
    assert_eq!(s.get("/health", &[]).unwrap().status, 200);

    s.write_lines(None, LINES).unwrap();
    // Fields become metrics named measurement_field.
    assert_eq!(s.vm_series_count(r#"{__name__=~"cpu_.*"}"#), 4);
    assert_eq!(s.vm_sample_count(r#"{__name__=~"cpu_.*"}"#), 6);
    assert_eq!(s.vm_sample_count(r#"{__name__="cpu_usage_user"}"#), 3);
    assert_eq!(
        s.vm_sample_count(r#"{__name__="cpu_usage_user",hostname="host_0"}"#),
        2
    );
    assert_eq!(s.vm_series_count(r#"{__name__="mem_used"}"#), 0);
    let export = s
        .vm_export(r#"{__name__="cpu_usage_user",hostname="host_1"}"#)
        .unwrap();
    let line: serde_json::Value = serde_json::from_str(export.trim()).unwrap();
    assert_eq!(line["values"], serde_json::json!([12]), "{export}");
    assert_eq!(
        line["timestamps"],
        serde_json::json!([1451606400000_u64]),
        "{export}"
    );
    s.vm_flush();

    let err = s.vm_export("not a selector{").unwrap_err();
    assert!(err.to_string().contains("HTTP 400"), "{err}");
    assert!(s.influx_count("db", "cpu", "usage_user").is_err());

    stop_and_check(s);
}

/// Prometheus answers ready, scrapes nothing (no sample appended by itself), and serves
/// the remote-write receiver: a body that is not snappy-compressed protobuf is a 400, not
/// the 404 of a server without the receiver. (The Prometheus target's tests write real
/// samples; the testbed has no encoder of its own.)
#[test]
fn prometheus_receives_remote_writes_and_cleans_up() {
    let s = start(ServerKind::Prometheus);
    assert_loopback_only(&s, &[s.http_addr()]);
    assert_eq!(s.get("/-/ready", &[]).unwrap().status, 200);
    assert_eq!(s.prometheus_samples(), 0);
    let answer = s
        .post("/api/v1/write", &[], "not snappy")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(s.prometheus_samples(), 0);
    stop_and_check(s);
}

/// ClickHouse listens on 127.0.0.1 only (its HTTP, native and interserver ports), answers
/// `SELECT 1` over HTTP, stores rows in a MergeTree table and counts them, names a missing
/// table in its error, and is gone with its dir once dropped.
#[test]
fn clickhouse_stores_rows_and_cleans_up() {
    let s = start(ServerKind::ClickHouse);
    assert_eq!(s.kind(), ServerKind::ClickHouse);
    assert_loopback_only(&s, &[s.http_addr()]);
    let one = s.get("/", &[("query", "SELECT 1")]).unwrap();
    assert_eq!((one.status, one.body.as_str()), (200, "1\n"));
    assert_eq!(s.get("/ping", &[]).unwrap().status, 200);

    s.clickhouse_query(
        "CREATE TABLE cpu (ts Int64, hostname String, usage_user Int64, usage_system Float64) \
         ENGINE = MergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(ts, 1000000000))) \
         ORDER BY (hostname, ts)",
    )
    .unwrap();
    s.clickhouse_query(
        "INSERT INTO cpu VALUES (1451606400000000000, 'host_0', 58, 2.5), \
         (1451606400000000000, 'host_1', 12, 7.5), (1451606410000000000, 'host_0', 59, 3.5)",
    )
    .unwrap();
    assert_eq!(s.clickhouse_count("cpu"), 3);
    assert_eq!(
        s.clickhouse_query(
            "SELECT hostname, usage_user, usage_system, ts FROM cpu WHERE hostname = 'host_1'"
        )
        .unwrap(),
        "host_1\t12\t7.5\t1451606400000000000"
    );
    assert_eq!(s.clickhouse_query("SELECT 1 WHERE 0").unwrap(), "");

    let err = s
        .clickhouse_query("SELECT count() FROM no_such_table")
        .unwrap_err();
    assert!(err.to_string().contains("no_such_table"), "{err}");
    // Other servers' helpers refuse.
    assert!(s.vm_export("{}").is_err());
    assert!(s.sql("SELECT 1").is_err());
    assert_eq!(s.database_url(), None);

    stop_and_check(s);
}

#[test]
fn questdb_stores_points_and_cleans_up() {
    let s = start(ServerKind::QuestDb);
    let (pg, ilp) = (s.pg_addr().unwrap(), s.ilp_tcp_addr().unwrap());
    assert_loopback_only(&s, &[s.http_addr(), pg, ilp]);
    TcpStream::connect_timeout(&pg, Duration::from_secs(2)).unwrap();
    TcpStream::connect_timeout(&ilp, Duration::from_secs(2)).unwrap();

    s.write_lines(None, LINES).unwrap();
    assert_eq!(s.questdb_count("cpu"), 3);
    let json = s
        .questdb_exec("select hostname, usage_user, usage_system, timestamp from cpu where hostname = 'host_1'")
        .unwrap();
    let row = &json["dataset"][0];
    assert_eq!(row[0], "host_1", "{json}");
    assert_eq!(row[1], 12, "{json}");
    assert_eq!(row[2], 7.5, "{json}");
    assert_eq!(row[3], "2016-01-01T00:00:00.000000Z", "{json}");
    s.questdb_wait_wal().unwrap();

    let err = s
        .questdb_exec("select count() from no_such_table")
        .unwrap_err();
    assert!(err.to_string().contains("no_such_table"), "{err}");
    assert!(s.vm_export("{}").is_err());

    stop_and_check(s);
}

#[test]
fn two_victoria_metrics_at_once_get_different_ports_and_dirs() {
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| start(ServerKind::VictoriaMetrics));
        let b = scope.spawn(|| start(ServerKind::VictoriaMetrics));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_ne!(a.http_addr(), b.http_addr());
    assert_ne!(a.data_dir(), b.data_dir());
    // Each is its own server: a point written to one is not in the other.
    a.write_lines(None, "only_a value=1 1451606400000000000\n")
        .unwrap();
    assert_eq!(a.vm_sample_count(r#"{__name__="only_a_value"}"#), 1);
    assert_eq!(b.vm_sample_count(r#"{__name__="only_a_value"}"#), 0);
    stop_and_check(a);
    stop_and_check(b);
}

#[test]
fn a_panicking_test_still_stops_its_server() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        let s = start(ServerKind::VictoriaMetrics);
        tx.send((s.pid(), s.data_dir().to_path_buf())).unwrap();
        panic!("a failing assertion while the server runs");
    })
    .join();
    assert!(result.is_err());
    let (pid, dir) = rx.recv().unwrap();
    assert_gone(pid, &dir);
}

/// Runs in a child copy of this test binary, where `TSLOAD_VICTORIA_METRICS` points at a
/// script that fails like a server whose port was taken (no env changes in this process).
#[test]
fn a_server_that_exits_at_start_up_is_retried_and_reported_with_its_log() {
    const NAME: &str = "a_server_that_exits_at_start_up_is_retried_and_reported_with_its_log";
    if std::env::var_os("TSLOAD_TESTBED_INNER").is_some() {
        let err = Server::start(ServerKind::VictoriaMetrics).unwrap_err();
        let msg = err.to_string();
        for part in [
            "VictoriaMetrics exited during start-up",
            "attempt 3 of 3",
            "a port was taken",
            "cannot listen on 127.0.0.1: address already in use",
        ] {
            assert!(msg.contains(part), "{part:?} missing from: {msg}");
        }
        // The failed attempt's temp dir (named in the script's output) is gone.
        let data = msg
            .split_whitespace()
            .find_map(|w| w.strip_prefix("-storageDataPath="))
            .unwrap_or_else(|| panic!("no -storageDataPath in: {msg}"));
        let dir = Path::new(data).parent().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake-victoria-metrics");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"fake victoria-metrics $*\"\n\
         echo 'cannot listen on 127.0.0.1: address already in use' >&2\nexit 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("TSLOAD_TESTBED_INNER", "1")
        .env("TSLOAD_VICTORIA_METRICS", &script)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "inner run failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The parent-death signal: a test process killed outright (no `Drop`) takes its servers
/// with it. The child copy of this binary starts a server and waits to be killed.
#[test]
fn a_killed_test_process_takes_its_server_with_it() {
    use std::io::{BufRead as _, Write as _};
    const NAME: &str = "a_killed_test_process_takes_its_server_with_it";
    if std::env::var_os("TSLOAD_TESTBED_INNER").is_some() {
        // Started from a short-lived thread, as a server shared between tests might be.
        let server = std::thread::spawn(|| start(ServerKind::VictoriaMetrics))
            .join()
            .unwrap();
        println!("SERVER {} {}", server.pid(), server.data_dir().display());
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let stderr_path = scratch.path().join("stderr");
    let mut inner = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("TSLOAD_TESTBED_INNER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(inner.stdout.take().unwrap());
    // The harness prints "test NAME ... " before the test's own output, on that line.
    let line = stdout
        .lines()
        .map(Result::unwrap)
        .find_map(|l| l.find("SERVER ").map(|at| l[at..].to_string()));
    let Some(line) = line else {
        let _ = inner.kill();
        panic!(
            "the inner test printed no SERVER line ({:?}); its stderr:\n{}",
            inner.wait(),
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        );
    };
    let mut words = line.split_whitespace().skip(1);
    let pid: u32 = words.next().unwrap().parse().unwrap();
    let dir = PathBuf::from(words.next().unwrap());
    assert!(alive(pid), "server {pid} is not running");
    inner.kill().unwrap(); // SIGKILL: no unwinding, no Drop
    inner.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(pid);
    // Drop never ran, so the dir is ours to remove.
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!survived, "server {pid} outlived the killed test process");
}

/// Whether `pid` exists and is not a zombie (a killed orphan may wait for init to reap it).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
        }
        Err(_) => false,
    }
}
