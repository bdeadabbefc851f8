//! Real database servers on 127.0.0.1 for integration tests (dev-only).
//!
//! `Server::start(kind)` starts InfluxDB 1.x, VictoriaMetrics, QuestDB, PostgreSQL 15,
//! MariaDB 10.11, Prometheus (a remote-write receiver) or ClickHouse as a child process in its own temp dir, on free loopback ports, waits
//! until it answers, and stops it and removes the dir on drop (also while a failing test
//! unwinds). Small blocking helpers write line protocol or run SQL and read counts back,
//! so sink and CLI tests can check what the server actually stored.
//!
//! ```no_run
//! use tsload_testbed::{Server, ServerKind};
//!
//! let vm = Server::start(ServerKind::VictoriaMetrics).unwrap();
//! vm.write_lines(None, "cpu,host=h0 usage_user=1 1451606400000000000\n").unwrap();
//! assert_eq!(vm.vm_sample_count(r#"{__name__="cpu_usage_user"}"#), 1);
//! ```
//!
//! PostgreSQL and MariaDB come with an empty database `tsload`, reachable at
//! `database_url()` (sqlx's URL format), and `sql` runs a statement through the server's
//! own command-line client. `kill` and `restart` crash a server (SIGKILL, every process)
//! and start it again on the same port and data, for durability tests:
//!
//! ```no_run
//! use tsload_testbed::{Server, ServerKind};
//!
//! let mut pg = Server::start(ServerKind::Postgres).unwrap();
//! let url = pg.database_url().unwrap(); // postgres://tsload@127.0.0.1:PORT/tsload
//! pg.sql("CREATE TABLE t (ts bigint, v double precision)").unwrap();
//! pg.sql("INSERT INTO t VALUES (1, 0.5), (2, 1.5)").unwrap();
//! pg.kill();
//! pg.restart().unwrap();
//! assert_eq!(pg.sql_count("t"), 2);
//! assert_eq!(pg.sql("SELECT ts, v FROM t ORDER BY ts LIMIT 1").unwrap(), "1\t0.5");
//! # let _ = url;
//! ```
//!
//! What each server needs is installed by `cargo xtask test`; when something is missing,
//! `start` fails with a message naming it and how to install it (tests must not skip).
//!
//! `query_checks` and `sql_server_checks` hold the read-target checks that the sink
//! crates' tests share (request builders, error assertions, and scenarios generic over
//! `tsload_core::QueryTarget` with what differs between databases as parameters).
//! `fixtures` holds the hand-built schemas, tag source and batches of their SQL tests.
//!
//! Servers are spawned from a helper thread so the kernel's parent-death signal kills them
//! when the test process dies, whatever thread started them (see `process`).

mod clickhouse;
mod error;
mod http;
mod influxdb;
mod locate;
mod mariadb;
mod ports;
mod postgres;
mod process;
mod prometheus;
mod questdb;
mod scratch;
mod sockets;
mod start;
mod tls;
mod victoria;

pub use tls::TestCa;

pub mod fixtures;
pub mod http_front;
pub mod k8s;
pub mod query_checks;
pub mod sql_server_checks;
pub mod vm;

use std::fmt;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use process::User;

pub use error::TestbedError;
pub use http::HttpAnswer;
pub use locate::{QUESTDB_VERSION, TIMESCALEDB_VERSION, timescaledb_installed};
pub use sockets::Listener;

use http::Http;
use ports::Ports;
use start::spawn_server;

/// How many times `start` tries when the server exits during start-up (a free port taken
/// by another process between choosing it and the server binding it).
const START_ATTEMPTS: u32 = 3;
/// How long a stopping server gets after its stop signal (`ServerKind::stop_signal`)
/// before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long `kill` waits for every killed process to be gone.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout of one readiness probe by a command-line tool (pg_isready, mariadb-admin).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The database the testbed creates in PostgreSQL and MariaDB.
const DATABASE: &str = "tsload";
/// Timeout of one helper request (queries, writes, exports).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines `log_tail` returns.
const LOG_TAIL_LINES: usize = 50;

/// The database servers the testbed can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// InfluxDB 1.x (`influxd`, Debian package `influxdb`).
    InfluxDb1,
    /// VictoriaMetrics single-node (`victoria-metrics`, Debian package `victoria-metrics`).
    VictoriaMetrics,
    /// QuestDB (Maven artifact `org.questdb:questdb`, run with `java`).
    QuestDb,
    /// PostgreSQL 15 (`/usr/lib/postgresql/15/bin/postgres`, Debian package `postgresql`).
    /// Runs as the `postgres` user when the tests run as root.
    Postgres,
    /// PostgreSQL 15 with TimescaleDB [`TIMESCALEDB_VERSION`] (its Apache-2.0 edition,
    /// which no Debian package has: `cargo xtask test` builds it from source into
    /// PostgreSQL's directories): `shared_preload_libraries = 'timescaledb'`, telemetry
    /// off, and `CREATE EXTENSION timescaledb` in the database `tsload`. Everything else
    /// as [`ServerKind::Postgres`].
    TimescaleDb,
    /// MariaDB 10.11 (`mariadbd`, Debian package `mariadb-server`).
    MariaDb,
    /// Prometheus 2.x as a remote-write receiver (`prometheus`, Debian package
    /// `prometheus`).
    Prometheus,
    /// ClickHouse over its HTTP interface (`clickhouse-server`, Debian package
    /// `clickhouse-server`, 18.16).
    ClickHouse,
}

impl ServerKind {
    pub const ALL: [ServerKind; 8] = [
        ServerKind::InfluxDb1,
        ServerKind::VictoriaMetrics,
        ServerKind::QuestDb,
        ServerKind::Postgres,
        ServerKind::TimescaleDb,
        ServerKind::MariaDb,
        ServerKind::Prometheus,
        ServerKind::ClickHouse,
    ];

    /// How long `start` (and `restart`) waits for the server to answer its readiness
    /// probe, once the process runs (PostgreSQL's and MariaDB's data dir set-up comes
    /// before, with its own 2-minute limit).
    pub fn start_timeout(self) -> Duration {
        match self {
            ServerKind::QuestDb
            | ServerKind::Postgres
            | ServerKind::TimescaleDb
            | ServerKind::MariaDb => Duration::from_secs(60),
            ServerKind::InfluxDb1
            | ServerKind::VictoriaMetrics
            | ServerKind::Prometheus
            | ServerKind::ClickHouse => Duration::from_secs(30),
        }
    }

    /// Whether this is a SQL database the `sql` helpers and `database_url` serve.
    pub fn is_sql(self) -> bool {
        self.is_postgres() || self == ServerKind::MariaDb
    }

    /// Whether this is PostgreSQL, with or without TimescaleDB.
    pub fn is_postgres(self) -> bool {
        matches!(self, ServerKind::Postgres | ServerKind::TimescaleDb)
    }

    fn slug(self) -> &'static str {
        match self {
            ServerKind::InfluxDb1 => "influxdb",
            ServerKind::VictoriaMetrics => "victoria-metrics",
            ServerKind::QuestDb => "questdb",
            ServerKind::Postgres => "postgres",
            ServerKind::TimescaleDb => "timescaledb",
            ServerKind::MariaDb => "mariadb",
            ServerKind::Prometheus => "prometheus",
            ServerKind::ClickHouse => "clickhouse",
        }
    }

    /// The readiness probe.
    fn probe(self) -> Probe {
        match self {
            ServerKind::InfluxDb1 => Probe::Http("/ping", &[], 204),
            ServerKind::VictoriaMetrics => Probe::Http("/health", &[], 200),
            ServerKind::QuestDb => Probe::Http("/exec", &[("query", "select 1")], 200),
            ServerKind::Prometheus => Probe::Http("/-/ready", &[], 200),
            ServerKind::ClickHouse => Probe::Http("/", &[("query", "SELECT 1")], 200),
            ServerKind::Postgres | ServerKind::TimescaleDb | ServerKind::MariaDb => Probe::Tool,
        }
    }

    /// The signal that stops the server on drop, when its data is thrown away anyway.
    /// PostgreSQL: SIGQUIT, its immediate shutdown (no checkpoint; it still stops its
    /// children and removes its shared memory and pid file). MariaDB: SIGKILL (a clean
    /// InnoDB shutdown flushes and syncs, 0.1 s idle and 0.7 s on a busy machine, for
    /// nothing; its one process leaves nothing outside the temp dir). ClickHouse: SIGKILL
    /// too (on SIGTERM it waits for its open HTTP keep-alive connections, such as the
    /// testbed's own, past the 5 s grace; it is one process that writes only under its
    /// temp dir). SIGTERM, the usual clean stop, otherwise.
    fn stop_signal(self) -> libc::c_int {
        match self {
            ServerKind::Postgres | ServerKind::TimescaleDb => libc::SIGQUIT,
            ServerKind::MariaDb | ServerKind::ClickHouse => libc::SIGKILL,
            _ => libc::SIGTERM,
        }
    }
}

/// How `start` knows a server is ready.
enum Probe {
    /// GET this path (and query) must answer this status.
    Http(&'static str, &'static [(&'static str, &'static str)], u16),
    /// The server's readiness tool must exit 0 (`pg_isready`, `mariadb-admin ping`).
    Tool,
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerKind::InfluxDb1 => "InfluxDB 1.x",
            ServerKind::VictoriaMetrics => "VictoriaMetrics",
            ServerKind::QuestDb => "QuestDB",
            ServerKind::Postgres => "PostgreSQL",
            ServerKind::TimescaleDb => "TimescaleDB",
            ServerKind::MariaDb => "MariaDB",
            ServerKind::Prometheus => "Prometheus",
            ServerKind::ClickHouse => "ClickHouse",
        })
    }
}

/// What a kind's module prepared: the command to run and where it will listen.
pub(crate) struct Launch {
    /// The server's command line and environment (stdio, working dir and user are set at
    /// each spawn; the command is copied for a restart).
    pub(crate) command: Command,
    /// The main address: the HTTP API, or the SQL port.
    pub(crate) addr: SocketAddr,
    pub(crate) pg_addr: Option<SocketAddr>,
    pub(crate) ilp_tcp_addr: Option<SocketAddr>,
    /// The account the server runs as, if not ours (PostgreSQL when we are root).
    pub(crate) run_as: Option<User>,
    /// The command-line client and readiness tool of a SQL server.
    pub(crate) sql: Option<SqlTools>,
}

/// A SQL server's command-line tools.
#[derive(Debug, Clone)]
pub(crate) struct SqlTools {
    /// `psql` or `mariadb`.
    pub(crate) client: PathBuf,
    /// `pg_isready` or `mariadb-admin`.
    pub(crate) probe: PathBuf,
}

/// A running server; stopped on drop (SIGTERM; PostgreSQL SIGQUIT, its immediate
/// shutdown; MariaDB and ClickHouse SIGKILL; then SIGKILL to it and its child processes
/// after 5 s) and its temp dir removed.
pub struct Server {
    kind: ServerKind,
    child: Child,
    addr: SocketAddr,
    pg_addr: Option<SocketAddr>,
    ilp_tcp_addr: Option<SocketAddr>,
    http: Http,
    log_path: PathBuf,
    startup: Duration,
    /// The server's command, copied for each (re)start.
    command: Command,
    run_as: Option<User>,
    sql: Option<SqlTools>,
    /// Set by `kill` (every process of the server is gone), cleared by `restart`.
    killed: bool,
    _ports: Ports,
    // Dropped after `Drop::drop` has stopped the process.
    dir: tempfile::TempDir,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("kind", &self.kind)
            .field("pid", &self.child.id())
            .field("addr", &self.addr)
            .field("pg_addr", &self.pg_addr)
            .field("ilp_tcp_addr", &self.ilp_tcp_addr)
            .field("dir", &self.dir.path())
            .finish()
    }
}

impl Server {
    /// Starts a server of `kind` on free 127.0.0.1 ports in a fresh temp dir and waits
    /// (blocking) until it answers: up to 60 s for QuestDB, PostgreSQL and MariaDB, 30 s
    /// for the others. If the server exits during start-up (say a chosen port was taken
    /// meanwhile) the whole start is retried, 3 attempts in all. PostgreSQL and MariaDB
    /// get a fresh data dir (`initdb`, `mariadb-install-db`) and an empty database
    /// `tsload`, with their default settings (durability included).
    pub fn start(kind: ServerKind) -> Result<Server, TestbedError> {
        Server::start_with(kind, &[])
    }

    /// `start` with server settings, kept for `restart`: PostgreSQL's `-c key=value`
    /// (e.g. `("synchronous_commit", "off")`), MariaDB's `--key=value` options (e.g.
    /// `("innodb_flush_log_at_trx_commit", "2")`), VictoriaMetrics' `-key=value` flags
    /// (e.g. `("retentionPeriod", "1")`, its default) or keys of Prometheus'
    /// `storage.tsdb` (e.g. `("out_of_order_time_window", "1d")`). The other kinds take none:
    /// settings for them are an error.
    pub fn start_with(kind: ServerKind, settings: &[(&str, &str)]) -> Result<Server, TestbedError> {
        if !settings.is_empty()
            && !kind.is_sql()
            && !matches!(kind, ServerKind::VictoriaMetrics | ServerKind::Prometheus)
        {
            return Err(TestbedError::answer(
                format!("settings for {kind}"),
                "only PostgreSQL, MariaDB, VictoriaMetrics and Prometheus take settings",
            ));
        }
        Server::start_attempts(kind, settings, None)
    }

    /// `start` with TLS on, the server's certificate signed by `ca` (for 127.0.0.1 and
    /// localhost): PostgreSQL `ssl = on` and MariaDB `ssl-cert`/`ssl-key` (plain
    /// connections still allowed, so the testbed's own clients work as before),
    /// VictoriaMetrics `-tls` and InfluxDB `https-enabled` (HTTPS only; the testbed's
    /// helpers then speak HTTPS, trusting `ca`). QuestDB is not offered.
    pub fn start_tls(kind: ServerKind, ca: &TestCa) -> Result<Server, TestbedError> {
        let (cert, key, ca_file) = (
            ca.cert_file().display().to_string(),
            ca.key_file().display().to_string(),
            ca.ca_file().display().to_string(),
        );
        match kind {
            ServerKind::Postgres | ServerKind::TimescaleDb => {
                if let Some(user) = postgres::run_as()? {
                    ca.give_key_to(user.uid, user.gid)?;
                }
                Server::start_attempts(
                    kind,
                    &[
                        ("ssl", "on"),
                        ("ssl_cert_file", &cert),
                        ("ssl_key_file", &key),
                    ],
                    None,
                )
            }
            ServerKind::MariaDb => Server::start_attempts(
                kind,
                &[("ssl-cert", &cert), ("ssl-key", &key), ("ssl-ca", &ca_file)],
                None,
            ),
            ServerKind::VictoriaMetrics | ServerKind::InfluxDb1 => {
                Server::start_attempts(kind, &[], Some(ca))
            }
            ServerKind::QuestDb => Err(TestbedError::answer(
                "TLS for QuestDB",
                "its open-source edition serves no TLS",
            )),
            ServerKind::Prometheus => Err(TestbedError::answer(
                "TLS for Prometheus",
                "the testbed does not offer it (a web config file would)",
            )),
            ServerKind::ClickHouse => Err(TestbedError::answer(
                "TLS for ClickHouse",
                "the testbed does not offer it (an https_port and openSSL section would)",
            )),
        }
    }

    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The server's main address (127.0.0.1:PORT): the HTTP API of InfluxDB,
    /// VictoriaMetrics and QuestDB, the SQL port of PostgreSQL and MariaDB.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The HTTP API's address (127.0.0.1:PORT). PostgreSQL and MariaDB have no HTTP API:
    /// for them this is their SQL address, the same as `addr()` (and `get`, `post` and
    /// `write_lines` return an error).
    pub fn http_addr(&self) -> SocketAddr {
        self.addr
    }

    /// "http://127.0.0.1:PORT" (for PostgreSQL and MariaDB, which have no HTTP API, an
    /// http URL of their SQL port: use `database_url` instead).
    pub fn base_url(&self) -> String {
        self.http.base().to_string()
    }

    /// The PostgreSQL wire protocol address: QuestDB's, or PostgreSQL's own (the same as
    /// `addr()`); `None` for the other kinds.
    pub fn pg_addr(&self) -> Option<SocketAddr> {
        self.pg_addr
    }

    /// QuestDB's ILP-over-TCP address; `None` for the other kinds (InfluxDB,
    /// VictoriaMetrics and QuestDB take line protocol over HTTP at `/write`).
    pub fn ilp_tcp_addr(&self) -> Option<SocketAddr> {
        self.ilp_tcp_addr
    }

    /// The URL of the database `tsload`, in the format sqlx takes:
    /// `postgres://tsload@127.0.0.1:PORT/tsload` (PostgreSQL: superuser `tsload`, no
    /// password) or `mysql://root@127.0.0.1:PORT/tsload` (MariaDB: `root`, no password);
    /// `None` for the other kinds.
    pub fn database_url(&self) -> Option<String> {
        match self.kind {
            ServerKind::Postgres | ServerKind::TimescaleDb => Some(format!(
                "postgres://{}@{}/{DATABASE}",
                postgres::USER,
                self.addr
            )),
            ServerKind::MariaDb => Some(format!(
                "mysql://{}@{}/{DATABASE}",
                mariadb::USER,
                self.addr
            )),
            _ => None,
        }
    }

    /// The server's temp dir: its config, data and `server.log`; removed on drop.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id (PostgreSQL's postmaster). A new one after `restart`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's process and all processes below it, from /proc (a snapshot:
    /// PostgreSQL forks a process per connection besides its helpers; the others are one
    /// process). Empty after `kill`.
    pub fn processes(&self) -> Vec<u32> {
        if self.killed {
            return Vec::new();
        }
        process::tree(self.pid())
    }

    /// How long `start` took for the attempt that succeeded (temp dir to ready, including
    /// PostgreSQL's and MariaDB's data dir set-up and the creation of database `tsload`).
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// The last 50 lines of the server's stdout and stderr (and, for PostgreSQL and
    /// MariaDB, of the data dir set-up), for test failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log_path, LOG_TAIL_LINES)
    }

    /// The TCP sockets the server process listens on and the UDP sockets it has bound,
    /// from /proc (Linux only). Tests use it to check that nothing listens beyond
    /// 127.0.0.1.
    pub fn listeners(&self) -> Result<Vec<Listener>, TestbedError> {
        sockets::listeners(self.pid()).map_err(|e| {
            TestbedError::io(
                format!("reading the sockets of pid {} in /proc", self.pid()),
                e,
            )
        })
    }

    /// GET `path` with `query` (values are URL-encoded here). Any HTTP status is `Ok`.
    /// An error for PostgreSQL and MariaDB (no HTTP API).
    pub fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<HttpAnswer, TestbedError> {
        self.require_http("get")?;
        self.http.get(path, query)
    }

    /// POST `body` to `path` with `query`. Any HTTP status is `Ok`. An error for
    /// PostgreSQL and MariaDB (no HTTP API).
    pub fn post(
        &self,
        path: &str,
        query: &[(&str, &str)],
        body: impl AsRef<[u8]>,
    ) -> Result<HttpAnswer, TestbedError> {
        self.require_http("post")?;
        self.http.post(path, query, body.as_ref())
    }

    /// POSTs line protocol (nanosecond timestamps) to `/write`, which InfluxDB,
    /// VictoriaMetrics and QuestDB accept; `db` is InfluxDB's database (`?db=`), `None`
    /// for the others. Anything but `204 No Content` is an error.
    pub fn write_lines(&self, db: Option<&str>, lines: &str) -> Result<(), TestbedError> {
        self.require_http("write_lines")?;
        let query: Vec<(&str, &str)> = db.map(|db| ("db", db)).into_iter().collect();
        self.http
            .expect("POST", "/write", &query, Some(lines.as_bytes()), 204)
            .map(drop)
    }

    /// Runs one SQL statement in the database `tsload` through the server's command-line
    /// client (`psql`, `mariadb`) and returns what it printed, without leading and
    /// trailing line breaks: one line per row, columns separated by tabs, NULL as `NULL`,
    /// no column names, nothing for statements without rows. An SQL error (or a server
    /// that does not answer) is an error with the client's message. PostgreSQL and
    /// MariaDB only.
    ///
    /// ```no_run
    /// # let s = tsload_testbed::Server::start(tsload_testbed::ServerKind::MariaDb).unwrap();
    /// s.sql("CREATE TABLE t (id int, name text)").unwrap();
    /// s.sql("INSERT INTO t VALUES (1, 'a'), (2, NULL)").unwrap();
    /// assert_eq!(s.sql("SELECT * FROM t ORDER BY id").unwrap(), "1\ta\n2\tNULL");
    /// ```
    pub fn sql(&self, statement: &str) -> Result<String, TestbedError> {
        self.sql_in(Some(DATABASE), statement)
    }

    /// `SELECT count(*) FROM table` in the database `tsload` (`table` is quoted as one
    /// identifier, so it is case-sensitive).
    ///
    /// # Panics
    /// If the table does not exist or the query fails (with the error and the server's
    /// log tail).
    pub fn sql_count(&self, table: &str) -> u64 {
        let quoted = match self.kind {
            ServerKind::MariaDb => mariadb::quote_ident(table),
            _ => postgres::quote_ident(table),
        };
        let q = format!("SELECT count(*) FROM {quoted}");
        let n = self.sql(&q).and_then(|text| {
            text.parse::<u64>()
                .map_err(|_| TestbedError::answer(format!("{} `{q}`", self.kind), text))
        });
        match n {
            Ok(n) => n,
            Err(e) => self.fail(&format!("count of table {table}"), e),
        }
    }

    /// `sql` in `database` (`None`: MariaDB without a default database).
    fn sql_in(&self, database: Option<&str>, statement: &str) -> Result<String, TestbedError> {
        let tools = self.sql_tools("sql")?;
        let (name, command) = match self.kind {
            ServerKind::Postgres | ServerKind::TimescaleDb => (
                "psql",
                postgres::client(tools, self.addr, database.unwrap_or(DATABASE), statement),
            ),
            _ => (
                "mariadb",
                mariadb::client(tools, self.addr, database, statement),
            ),
        };
        let what = format!("{} `{}`", self.kind, http::clip(statement));
        let out = process::output(command, REQUEST_TIMEOUT).map_err(|e| {
            TestbedError::io(format!("running {} for {what}", tools.client.display()), e)
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(TestbedError::answer(
                what,
                format!(
                    "{name} exited with {}: {}",
                    out.status,
                    http::clip(stderr.trim())
                ),
            ));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        Ok(stdout.trim_matches(['\n', '\r']).to_string())
    }

    /// Kills the server as a crash would once `stored` (a count read from it) is above
    /// zero, half a second later, so that a crash test's kill lands while rows flow and
    /// never inside the load's prepare step (which a loaded machine can stretch past any
    /// fixed delay). Then starts it again after `down`.
    ///
    /// # Errors
    /// If nothing is stored within 30 s (the caller has the load's output to show).
    ///
    /// # Panics
    /// If the restart fails.
    pub fn crash_once_rows_flow(
        &mut self,
        stored: impl Fn(&Server) -> u64,
        down: Duration,
    ) -> Result<(), String> {
        let waited = Instant::now();
        while stored(self) == 0 {
            if waited.elapsed() >= Duration::from_secs(30) {
                return Err(format!(
                    "{}: no row reached the server in 30 s\n{}",
                    self.kind,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(500));
        self.kill();
        std::thread::sleep(down);
        if let Err(e) = self.restart() {
            self.fail("restart", e);
        }
        Ok(())
    }

    /// Kills the server as a crash would: SIGKILL to its process and every process below
    /// it (PostgreSQL's backends and helpers) at once, then waits until all are gone.
    /// The data dir, the port and the log stay; `restart` starts it again. Nothing
    /// happens if the server is not running.
    ///
    /// # Panics
    /// If a killed process is still alive 10 s later.
    pub fn kill(&mut self) {
        if let Err(e) = process::kill_tree(&mut self.child, KILL_TIMEOUT) {
            panic!("killing {} (pid {}): {e}", self.kind, self.child.id());
        }
        self.killed = true;
    }

    /// Starts the server again, on the same ports with the same data dir and settings,
    /// and waits until it answers (up to `start_timeout`; after a `kill`, PostgreSQL and
    /// MariaDB recover from the crash first). A server that still runs is killed first,
    /// as by `kill`. Its log continues in the same `server.log`. Not retried: if another
    /// process took the port meanwhile, this fails.
    pub fn restart(&mut self) -> Result<(), TestbedError> {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
        if self.kind.is_postgres() && self.killed {
            // Every process of the old server is gone (`kill` waited for that).
            postgres::clear_stale(self.dir.path());
        }
        self.child = spawn_server(&self.command, self.run_as, self.dir.path(), &self.log_path)?;
        self.killed = false;
        self.wait_ready(1, 1)
    }

    /// Panics with `what`, the error and the server's log tail (for the helpers that
    /// return plain numbers).
    fn fail(&self, what: &str, err: TestbedError) -> ! {
        panic!(
            "{} {what} failed: {err}\n--- last lines of the server's log ---\n{}",
            self.kind,
            self.log_tail()
        )
    }

    /// Errors unless this server is `kind` (helpers of one database on another).
    fn require(&self, kind: ServerKind, helper: &str) -> Result<(), TestbedError> {
        if self.kind == kind {
            return Ok(());
        }
        Err(TestbedError::answer(
            format!("{helper} is a {kind} helper"),
            format!("this server is {}", self.kind),
        ))
    }

    /// Errors for the kinds without an HTTP API.
    fn require_http(&self, helper: &str) -> Result<(), TestbedError> {
        if !self.kind.is_sql() {
            return Ok(());
        }
        Err(TestbedError::answer(
            format!("{helper} needs an HTTP API"),
            format!(
                "{} has none; use `sql`, or a driver at `database_url()`",
                self.kind
            ),
        ))
    }

    /// The SQL tools, or an error naming `helper` for the kinds without.
    fn sql_tools(&self, helper: &str) -> Result<&SqlTools, TestbedError> {
        self.sql.as_ref().ok_or_else(|| {
            TestbedError::answer(
                format!("{helper} is a PostgreSQL and MariaDB helper"),
                format!("this server is {}", self.kind),
            )
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        process::terminate(&mut self.child, self.kind.stop_signal(), STOP_GRACE);
        if self.kind.is_postgres() {
            // After a `kill`: the shared memory segment nobody else would remove.
            postgres::clear_stale(self.dir.path());
        }
        // `dir` (a TempDir) is removed when the fields drop, after this.
    }
}

/// Two append handles on `log` for a child's stdout and stderr.
pub(crate) fn log_stdio(log: &Path) -> Result<(std::fs::File, std::fs::File), TestbedError> {
    let out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .map_err(|e| TestbedError::io(format!("opening {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| TestbedError::io("duplicating the log file handle", e))?;
    Ok((out, err))
}

/// Runs a data dir set-up step (`initdb`, `mariadb-install-db`), its output already
/// going to `log`; an error with the log's tail if it fails.
pub(crate) fn run_setup_step(
    kind: ServerKind,
    step: &str,
    command: Command,
    timeout: Duration,
    log: &Path,
) -> Result<(), TestbedError> {
    let program = PathBuf::from(command.get_program());
    match process::run_step(command, timeout) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(status)) => {
            let log = tail(log, LOG_TAIL_LINES);
            let hint = if log.to_lowercase().contains("permission denied") {
                "; the server's user must be able to reach the temp dir: \
                 set TMPDIR to a directory every user can traverse, such as /tmp"
            } else {
                ""
            };
            Err(TestbedError::Setup {
                kind,
                step: step.into(),
                status,
                hint: hint.into(),
                log,
            })
        }
        Err(source) => Err(TestbedError::Spawn { program, source }),
    }
}

/// A command as one shell-like line, for messages.
pub(crate) fn command_line(c: &Command) -> String {
    std::iter::once(c.get_program())
        .chain(c.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` lines of the file at `path` (at most its last 64 KiB).
pub(crate) fn tail(path: &Path, n: usize) -> String {
    const MAX: u64 = 64 * 1024;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return format!("(cannot read {}: {e})", path.display()),
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    if tail.is_empty() {
        "(the server wrote nothing)".into()
    } else {
        tail
    }
}

#[cfg(test)]
mod tests;
