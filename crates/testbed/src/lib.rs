//! Real database servers on 127.0.0.1 for integration tests (dev-only).
//!
//! `Server::start(kind)` starts InfluxDB 1.x, VictoriaMetrics or QuestDB as a child process
//! in its own temp dir, on free loopback ports, waits until it answers, and stops it and
//! removes the dir on drop (also while a failing test unwinds). Small blocking helpers
//! write line protocol and read counts back, so sink and CLI tests can check what the
//! server actually stored.
//!
//! ```no_run
//! use tsload_testbed::{Server, ServerKind};
//!
//! let vm = Server::start(ServerKind::VictoriaMetrics).unwrap();
//! vm.write_lines(None, "cpu,host=h0 usage_user=1 1451606400000000000\n").unwrap();
//! assert_eq!(vm.vm_sample_count(r#"{__name__="cpu_usage_user"}"#), 1);
//! ```
//!
//! What each server needs is installed by `cargo xtask test`; when something is missing,
//! `start` fails with a message naming it and how to install it (tests must not skip).
//!
//! Servers are spawned from a helper thread so the kernel's parent-death signal kills them
//! when the test process dies, whatever thread started them (see `process`).

mod error;
mod http;
mod influxdb;
mod locate;
mod ports;
mod process;
mod questdb;
mod sockets;
mod victoria;

use std::fmt;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use error::TestbedError;
pub use http::HttpAnswer;
pub use locate::QUESTDB_VERSION;
pub use sockets::Listener;

use http::Http;
use ports::Ports;

/// How many times `start` tries when the server exits during start-up (a free port taken
/// by another process between choosing it and the server binding it).
const START_ATTEMPTS: u32 = 3;
/// How long a stopping server gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
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
}

impl ServerKind {
    pub const ALL: [ServerKind; 3] = [
        ServerKind::InfluxDb1,
        ServerKind::VictoriaMetrics,
        ServerKind::QuestDb,
    ];

    /// How long `start` waits for the server to answer its readiness probe.
    pub fn start_timeout(self) -> Duration {
        match self {
            ServerKind::QuestDb => Duration::from_secs(60),
            ServerKind::InfluxDb1 | ServerKind::VictoriaMetrics => Duration::from_secs(30),
        }
    }

    fn slug(self) -> &'static str {
        match self {
            ServerKind::InfluxDb1 => "influxdb",
            ServerKind::VictoriaMetrics => "victoria-metrics",
            ServerKind::QuestDb => "questdb",
        }
    }

    /// The readiness probe: GET this path (and query) must answer this status.
    fn probe(self) -> (&'static str, &'static [(&'static str, &'static str)], u16) {
        match self {
            ServerKind::InfluxDb1 => ("/ping", &[], 204),
            ServerKind::VictoriaMetrics => ("/health", &[], 200),
            ServerKind::QuestDb => ("/exec", &[("query", "select 1")], 200),
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerKind::InfluxDb1 => "InfluxDB 1.x",
            ServerKind::VictoriaMetrics => "VictoriaMetrics",
            ServerKind::QuestDb => "QuestDB",
        })
    }
}

/// What a kind's module prepared: the command to run and where it will listen.
pub(crate) struct Launch {
    pub(crate) command: Command,
    pub(crate) http_addr: SocketAddr,
    pub(crate) pg_addr: Option<SocketAddr>,
    pub(crate) ilp_tcp_addr: Option<SocketAddr>,
}

/// A running server; stopped (SIGTERM, then SIGKILL after 5 s) and its temp dir removed
/// on drop.
pub struct Server {
    kind: ServerKind,
    child: Child,
    http_addr: SocketAddr,
    pg_addr: Option<SocketAddr>,
    ilp_tcp_addr: Option<SocketAddr>,
    http: Http,
    log_path: PathBuf,
    startup: Duration,
    _ports: Ports,
    // Dropped after `Drop::drop` has stopped the process.
    dir: tempfile::TempDir,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("kind", &self.kind)
            .field("pid", &self.child.id())
            .field("http_addr", &self.http_addr)
            .field("pg_addr", &self.pg_addr)
            .field("ilp_tcp_addr", &self.ilp_tcp_addr)
            .field("dir", &self.dir.path())
            .finish()
    }
}

impl Server {
    /// Starts a server of `kind` on free 127.0.0.1 ports in a fresh temp dir and waits
    /// (blocking) until it answers: up to 60 s for QuestDB, 30 s for the others. If the
    /// server exits during start-up (say a chosen port was taken meanwhile) the whole
    /// start is retried, 3 attempts in all.
    pub fn start(kind: ServerKind) -> Result<Server, TestbedError> {
        let mut attempt = 1;
        loop {
            match Server::start_once(kind, attempt) {
                Err(TestbedError::Exited { .. }) if attempt < START_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    fn start_once(kind: ServerKind, attempt: u32) -> Result<Server, TestbedError> {
        let began = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix(&format!("tsload-testbed-{}-", kind.slug()))
            .tempdir()
            .map_err(|e| TestbedError::io("creating the server's temp dir", e))?;
        let mut ports = Ports::default();
        let Launch {
            mut command,
            http_addr,
            pg_addr,
            ilp_tcp_addr,
        } = match kind {
            ServerKind::InfluxDb1 => influxdb::launch(dir.path(), &mut ports)?,
            ServerKind::VictoriaMetrics => victoria::launch(dir.path(), &mut ports)?,
            ServerKind::QuestDb => questdb::launch(dir.path(), &mut ports)?,
        };
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| TestbedError::io(format!("creating {}", log_path.display()), e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| TestbedError::io("duplicating the log file handle", e))?;
        command
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let program = PathBuf::from(command.get_program());
        let child =
            process::spawn(command).map_err(|source| TestbedError::Spawn { program, source })?;
        // From here on, an early return drops `server`, which stops the process.
        let mut server = Server {
            kind,
            child,
            http_addr,
            pg_addr,
            ilp_tcp_addr,
            http: Http::new(format!("http://{http_addr}"), REQUEST_TIMEOUT),
            log_path,
            startup: Duration::ZERO,
            _ports: ports,
            dir,
        };
        server.wait_ready(attempt)?;
        server.startup = began.elapsed();
        Ok(server)
    }

    fn wait_ready(&mut self, attempt: u32) -> Result<(), TestbedError> {
        let timeout = self.kind.start_timeout();
        let deadline = Instant::now() + timeout;
        let (path, query, expected) = self.kind.probe();
        let probe = Http::new(self.http.base().to_string(), Duration::from_secs(2));
        let mut pause = Duration::from_millis(20);
        loop {
            self.check_running(attempt)?;
            let last = match probe.get(path, query) {
                Ok(a) if a.status == expected => {
                    // The answer could come from another process that won our port while
                    // this server failed to bind it: make sure ours is still alive.
                    std::thread::sleep(Duration::from_millis(20));
                    return self.check_running(attempt);
                }
                Ok(a) => format!("HTTP {}: {}", a.status, http::clip(&a.body)),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(TestbedError::NotReady {
                    kind: self.kind,
                    timeout,
                    probe: format!("GET {}{path} expecting {expected}", self.http.base()),
                    last,
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    fn check_running(&mut self, attempt: u32) -> Result<(), TestbedError> {
        let status = match self.child.try_wait() {
            Ok(None) => return Ok(()),
            Ok(Some(status)) => status.to_string(),
            Err(e) => format!("unknown status ({e})"),
        };
        let log = self.log_tail();
        let lower = log.to_lowercase();
        let hint = if lower.contains("unsupportedclassversionerror") {
            format!("; QuestDB {QUESTDB_VERSION} needs Java 17 or newer (check `java -version`)")
        } else if lower.contains("address already in use") || lower.contains("could not bind") {
            "; a port was taken by another process between choosing and binding it".into()
        } else {
            String::new()
        };
        Err(TestbedError::Exited {
            kind: self.kind,
            status,
            attempt,
            attempts: START_ATTEMPTS,
            hint,
            log,
        })
    }

    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The HTTP API's address (127.0.0.1:PORT).
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// "http://127.0.0.1:PORT".
    pub fn base_url(&self) -> String {
        self.http.base().to_string()
    }

    /// QuestDB's PostgreSQL wire protocol address; `None` for the other kinds.
    pub fn pg_addr(&self) -> Option<SocketAddr> {
        self.pg_addr
    }

    /// QuestDB's ILP-over-TCP address; `None` for the other kinds (they take line
    /// protocol over HTTP at `/write`).
    pub fn ilp_tcp_addr(&self) -> Option<SocketAddr> {
        self.ilp_tcp_addr
    }

    /// The server's temp dir: its config, data and `server.log`; removed on drop.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How long `start` took for the attempt that succeeded (spawn to ready).
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// The last 50 lines of the server's stdout and stderr, for test failure messages.
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
    pub fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<HttpAnswer, TestbedError> {
        self.http.get(path, query)
    }

    /// POST `body` to `path` with `query`. Any HTTP status is `Ok`.
    pub fn post(
        &self,
        path: &str,
        query: &[(&str, &str)],
        body: impl AsRef<[u8]>,
    ) -> Result<HttpAnswer, TestbedError> {
        self.http.post(path, query, body.as_ref())
    }

    /// POSTs line protocol (nanosecond timestamps) to `/write`, which all three kinds
    /// accept; `db` is InfluxDB's database (`?db=`), `None` for the others. Anything but
    /// `204 No Content` is an error.
    pub fn write_lines(&self, db: Option<&str>, lines: &str) -> Result<(), TestbedError> {
        let query: Vec<(&str, &str)> = db.map(|db| ("db", db)).into_iter().collect();
        self.http
            .expect("POST", "/write", &query, Some(lines.as_bytes()), 204)
            .map(drop)
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
}

impl Drop for Server {
    fn drop(&mut self) {
        process::terminate(&mut self.child, STOP_GRACE);
        // `dir` (a TempDir) is removed when the fields drop, after this.
    }
}

/// The last `n` lines of the file at `path` (at most its last 64 KiB).
fn tail(path: &Path, n: usize) -> String {
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
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let t = tail(&path, 3);
        assert_eq!(t, "line 97\nline 98\nline 99");
        std::fs::write(&path, "").unwrap();
        assert_eq!(tail(&path, 3), "(the server wrote nothing)");
        assert!(tail(&dir.path().join("none"), 3).contains("cannot read"));
    }

    #[test]
    fn error_debug_is_its_display() {
        let e = TestbedError::answer("what", "detail");
        assert_eq!(format!("{e:?}"), "what: detail");
    }
}
