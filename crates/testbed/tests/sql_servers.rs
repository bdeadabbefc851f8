//! Starts real PostgreSQL and MariaDB servers on 127.0.0.1, writes rows through the
//! command-line clients, kills and restarts them (the rows must survive), and checks that
//! dropping a server stops every process of it and removes its dir. Needs the Debian
//! packages `postgresql` and `mariadb-server`: `cargo xtask test` installs them; without
//! them these tests fail saying what is missing.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tsload_testbed::{Server, ServerKind};

fn start(kind: ServerKind) -> Server {
    let server = Server::start(kind).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{kind} ready in {:?} at {} (pid {}, dir {})",
        server.startup_time(),
        server.database_url().unwrap(),
        server.pid(),
        server.data_dir().display()
    );
    server
}

/// Every socket the server listens on is on 127.0.0.1, and its SQL port is among them.
fn assert_loopback_only(server: &Server) {
    let listeners = server.listeners().unwrap();
    for l in &listeners {
        assert_eq!(
            l.addr.ip(),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            "{} listens on {l}; all: {listeners:?}",
            server.kind()
        );
    }
    assert!(
        listeners
            .iter()
            .any(|l| l.proto == "tcp" && l.addr == server.addr()),
        "{} does not listen on {}; it listens on {listeners:?}",
        server.kind(),
        server.addr()
    );
}

/// The table every test writes: three rows, one with a NULL.
fn write_three_rows(s: &Server) {
    s.sql(
        "CREATE TABLE cpu (ts bigint NOT NULL, hostname varchar(32), usage_user double precision)",
    )
    .unwrap();
    assert_eq!(s.sql_count("cpu"), 0);
    let out = s
        .sql("INSERT INTO cpu VALUES (1451606400000, 'host_0', 58.5), (1451606400000, 'host_1', NULL), (1451606410000, 'host_0', 59)")
        .unwrap();
    assert_eq!(out, "", "an INSERT prints nothing");
    assert_eq!(s.sql_count("cpu"), 3);
    assert_eq!(
        s.sql("SELECT ts, hostname, usage_user FROM cpu ORDER BY ts, hostname")
            .unwrap(),
        "1451606400000\thost_0\t58.5\n1451606400000\thost_1\tNULL\n1451606410000\thost_0\t59"
    );
}

/// Kills the server, checks that every process of it is gone and the rows cannot be read,
/// restarts it and checks that the rows are back and new ones can be written.
fn kill_and_restart_keep_the_rows(s: &mut Server) {
    let before = s.processes();
    let (old_pid, addr) = (s.pid(), s.addr());
    s.kill();
    for pid in &before {
        assert!(!alive(*pid), "process {pid} survived kill ({before:?})");
    }
    assert!(s.processes().is_empty());
    let err = s.sql("SELECT 1").unwrap_err();
    eprintln!("while killed: {err}");
    s.kill(); // a second kill is a no-op
    let began = std::time::Instant::now();
    s.restart().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{} restarted in {:?}", s.kind(), began.elapsed());
    if s.kind() == ServerKind::Postgres {
        // A real crash, not a clean stop: PostgreSQL replayed its WAL.
        assert!(
            s.log_tail().contains("not properly shut down"),
            "{}",
            s.log_tail()
        );
    }
    assert_ne!(s.pid(), old_pid);
    assert_eq!(s.addr(), addr);
    assert_eq!(s.sql_count("cpu"), 3, "{}", s.log_tail());
    s.sql("INSERT INTO cpu VALUES (1451606420000, 'host_1', 1)")
        .unwrap();
    assert_eq!(s.sql_count("cpu"), 4);
    assert_loopback_only(s);
}

/// Drops `server` and checks that its processes are gone and its dir removed.
fn stop_and_check(server: Server) {
    let (pids, dir): (Vec<u32>, PathBuf) = (server.processes(), server.data_dir().to_path_buf());
    assert!(!pids.is_empty());
    assert!(dir.is_dir());
    let (kind, began) = (server.kind(), std::time::Instant::now());
    drop(server);
    eprintln!("{kind} stopped in {:?}", began.elapsed());
    for pid in &pids {
        assert!(
            !alive(*pid),
            "process {pid} still runs after drop ({pids:?})"
        );
    }
    assert!(!dir.exists(), "{} still exists after drop", dir.display());
}

#[test]
fn postgres_stores_rows_survives_a_kill_and_cleans_up() {
    let mut s = start(ServerKind::Postgres);
    assert_eq!(s.kind(), ServerKind::Postgres);
    assert_eq!(
        s.database_url().unwrap(),
        format!("postgres://tsload@{}/tsload", s.addr())
    );
    assert_eq!(s.pg_addr(), Some(s.addr()));
    assert_eq!(s.ilp_tcp_addr(), None);
    assert_loopback_only(&s);
    // The postmaster and its helpers (checkpointer, walwriter, ...).
    assert!(s.processes().len() > 1, "{:?}", s.processes());
    if running_as_root() {
        assert_ne!(uid_of(s.pid()), 0, "PostgreSQL runs as root");
    }
    // The Unix socket is in the temp dir.
    assert!(
        s.data_dir()
            .join(format!(".s.PGSQL.{}", s.addr().port()))
            .exists()
    );
    // Durability settings are PostgreSQL's defaults.
    assert_eq!(
        s.sql("SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')")
            .unwrap(),
        "on\ton\ton"
    );
    assert_eq!(s.sql("SELECT current_database()").unwrap(), "tsload");

    write_three_rows(&s);
    let err = s
        .sql("SELECT * FROM no_such_table")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no_such_table") && err.contains("psql"),
        "{err}"
    );
    assert!(s.get("/", &[]).is_err());
    assert!(s.write_lines(None, "cpu v=1 1\n").is_err());
    assert!(s.questdb_exec("select 1").is_err());

    // An open connection is a backend process below the postmaster: killed with it.
    let mut client = hold_connection(&s);
    kill_and_restart_keep_the_rows(&mut s);
    client.wait().unwrap();
    // And stopped with it on drop.
    let mut client = hold_connection(&s);
    stop_and_check(s);
    client.wait().unwrap();
}

#[test]
fn mariadb_stores_rows_survives_a_kill_and_cleans_up() {
    let mut s = start(ServerKind::MariaDb);
    assert_eq!(s.kind(), ServerKind::MariaDb);
    assert_eq!(
        s.database_url().unwrap(),
        format!("mysql://root@{}/tsload", s.addr())
    );
    assert_eq!(s.pg_addr(), None);
    assert_loopback_only(&s);
    assert!(s.data_dir().join("mysqld.sock").exists());
    assert_eq!(
        s.sql("SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@bind_address")
            .unwrap(),
        "1\t0\t127.0.0.1"
    );
    assert_eq!(s.sql("SELECT DATABASE()").unwrap(), "tsload");

    write_three_rows(&s);
    let err = s
        .sql("SELECT * FROM no_such_table")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no_such_table") && err.contains("mariadb"),
        "{err}"
    );
    assert!(s.get("/", &[]).is_err());

    kill_and_restart_keep_the_rows(&mut s);
    stop_and_check(s);
}

#[test]
fn settings_reach_the_server_and_survive_a_restart() {
    let mut pg = Server::start_with(ServerKind::Postgres, &[("synchronous_commit", "off")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pg.sql("SHOW synchronous_commit").unwrap(), "off");
    pg.restart().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pg.sql("SHOW synchronous_commit").unwrap(), "off");
    drop(pg);

    let my = Server::start_with(
        ServerKind::MariaDb,
        &[("innodb_flush_log_at_trx_commit", "2")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        my.sql("SELECT @@innodb_flush_log_at_trx_commit").unwrap(),
        "2"
    );
    drop(my);

    let err = Server::start_with(ServerKind::Postgres, &[("fsync=off", "x")]).unwrap_err();
    assert!(err.to_string().contains("fsync=off"), "{err}");
    let err = Server::start_with(ServerKind::InfluxDb1, &[("a", "b")]).unwrap_err();
    assert!(
        err.to_string()
            .contains("only PostgreSQL, MariaDB, VictoriaMetrics and Prometheus take settings"),
        "{err}"
    );
}

/// The parent-death signal reaches PostgreSQL although it runs as another user, and its
/// children follow the postmaster: a test process killed outright (no `Drop`) leaves no
/// PostgreSQL process behind. The child copy of this binary starts a server and waits to
/// be killed.
#[test]
fn a_killed_test_process_takes_postgres_and_its_children_with_it() {
    use std::io::{BufRead as _, Write as _};
    const NAME: &str = "a_killed_test_process_takes_postgres_and_its_children_with_it";
    if std::env::var_os("TSLOAD_TESTBED_INNER").is_some() {
        let server = start(ServerKind::Postgres);
        let pids: Vec<String> = server.processes().iter().map(u32::to_string).collect();
        println!("SERVER {} {}", server.data_dir().display(), pids.join(" "));
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
    let dir = PathBuf::from(words.next().unwrap());
    let pids: Vec<u32> = words.map(|w| w.parse().unwrap()).collect();
    assert!(pids.len() > 1, "{line}");
    // The postmaster is first; its children may come and go (startup, autovacuum workers).
    assert!(alive(pids[0]), "{line}");
    inner.kill().unwrap(); // SIGKILL: no unwinding, no Drop
    inner.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    // Drop never ran, so the dir is ours to remove, and the killed postmaster's SysV
    // shared memory segment (its key is on line 7 of postmaster.pid).
    if let Ok(pid_file) = std::fs::read_to_string(dir.join("data/postmaster.pid"))
        && let Some(key) = pid_file
            .lines()
            .nth(6)
            .and_then(|l| l.split_whitespace().next())
    {
        let _ = Command::new("ipcrm").args(["-M", key]).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        survivors.is_empty(),
        "{survivors:?} of {pids:?} outlived the killed test process"
    );
}

/// A psql session sleeping in PostgreSQL (which forks a backend for it); returns once the
/// backend is there, seen in `pg_stat_activity` and among the server's processes. (Counting
/// the server's processes before and after would race with other backends coming and
/// going, such as the one of the testbed's own previous `psql`.)
fn hold_connection(s: &Server) -> Child {
    let child = Command::new("/usr/lib/postgresql/15/bin/psql")
        .args(["-X", "-q", "-d", &s.database_url().unwrap()])
        .args(["-c", "SELECT pg_sleep(60) AS held"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let backend = s
            .sql(
                "SELECT pid FROM pg_stat_activity \
                 WHERE query = 'SELECT pg_sleep(60) AS held' AND pid <> pg_backend_pid()",
            )
            .unwrap();
        if let Ok(pid) = backend.trim().parse::<u32>() {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no backend for the psql session: {:?}",
            s.processes()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        s.processes().contains(&pid),
        "backend {pid} is not among the server's processes {:?}",
        s.processes()
    );
    child
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t")))
}

/// The real uid of `pid`.
fn uid_of(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
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
