//! Starting a test server: each attempt spawns it from a fresh command in its
//! directory, waits until it answers (or says why not, with its log's tail), and the
//! whole start is retried when the server exits during start-up.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::{self, Http};
use crate::ports::Ports;
use crate::process::User;
use crate::tls::TestCa;
use crate::{
    DATABASE, Launch, PROBE_TIMEOUT, Probe, QUESTDB_VERSION, REQUEST_TIMEOUT, START_ATTEMPTS,
    Server, ServerKind, TestbedError, clickhouse, command_line, influxdb, locate, log_stdio,
    mariadb, postgres, process, prometheus, questdb, scratch, victoria,
};

impl Server {
    pub(crate) fn start_attempts(
        kind: ServerKind,
        settings: &[(&str, &str)],
        tls: Option<&TestCa>,
    ) -> Result<Server, TestbedError> {
        let mut attempt = 1;
        loop {
            match Server::start_once(kind, settings, tls, attempt) {
                Err(TestbedError::Exited { .. }) if attempt < START_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    pub(crate) fn start_once(
        kind: ServerKind,
        settings: &[(&str, &str)],
        tls: Option<&TestCa>,
        attempt: u32,
    ) -> Result<Server, TestbedError> {
        let began = Instant::now();
        let dir = scratch::dir(kind.slug())
            .map_err(|e| TestbedError::io("creating the server's temp dir", e))?;
        let log_path = dir.path().join("server.log");
        std::fs::File::create(&log_path)
            .map_err(|e| TestbedError::io(format!("creating {}", log_path.display()), e))?;
        let mut ports = Ports::default();
        let Launch {
            command,
            addr,
            pg_addr,
            ilp_tcp_addr,
            run_as,
            sql,
        } = match kind {
            ServerKind::InfluxDb1 => influxdb::launch(dir.path(), &mut ports, tls)?,
            ServerKind::VictoriaMetrics => victoria::launch(dir.path(), &mut ports, settings, tls)?,
            ServerKind::QuestDb => questdb::launch(dir.path(), &mut ports)?,
            ServerKind::Postgres => postgres::launch(dir.path(), &mut ports, settings, &log_path)?,
            ServerKind::TimescaleDb => {
                locate::timescaledb_installed()?;
                let mut settings = settings.to_vec();
                settings.extend(postgres::TIMESCALEDB_SETTINGS);
                postgres::launch(dir.path(), &mut ports, &settings, &log_path)?
            }
            ServerKind::MariaDb => mariadb::launch(dir.path(), &mut ports, settings, &log_path)?,
            ServerKind::Prometheus => prometheus::launch(dir.path(), &mut ports, settings)?,
            ServerKind::ClickHouse => clickhouse::launch(dir.path(), &mut ports)?,
        };
        let child = spawn_server(&command, run_as, dir.path(), &log_path)?;
        // From here on, an early return drops `server`, which stops the process.
        let mut server = Server {
            kind,
            child,
            addr,
            pg_addr,
            ilp_tcp_addr,
            http: match tls {
                Some(ca) => Http::with_tls(
                    format!("https://{addr}"),
                    REQUEST_TIMEOUT,
                    Some(ca.connector()?),
                ),
                None => Http::new(format!("http://{addr}"), REQUEST_TIMEOUT),
            },
            log_path,
            startup: Duration::ZERO,
            command,
            run_as,
            sql,
            killed: false,
            _ports: ports,
            dir,
        };
        server.wait_ready(attempt, START_ATTEMPTS)?;
        match kind {
            ServerKind::Postgres => {
                server.sql_in(Some("postgres"), &format!("CREATE DATABASE {DATABASE}"))?;
            }
            ServerKind::TimescaleDb => {
                server.sql_in(Some("postgres"), &format!("CREATE DATABASE {DATABASE}"))?;
                server.sql("CREATE EXTENSION timescaledb")?;
            }
            ServerKind::MariaDb => {
                server.sql_in(None, &format!("CREATE DATABASE {DATABASE}"))?;
            }
            _ => {}
        }
        server.startup = began.elapsed();
        Ok(server)
    }

    pub(crate) fn wait_ready(&mut self, attempt: u32, attempts: u32) -> Result<(), TestbedError> {
        let timeout = self.kind.start_timeout();
        let deadline = Instant::now() + timeout;
        let probe = self.kind.probe();
        let http = self.http.with_timeout(Duration::from_secs(2));
        let mut pause = Duration::from_millis(20);
        loop {
            self.check_running(attempt, attempts)?;
            let answer = match probe {
                Probe::Http(path, query, expected) => match http.get(path, query) {
                    Ok(a) if a.status == expected => Ok(()),
                    Ok(a) => Err(format!("HTTP {}: {}", a.status, http::clip(&a.body))),
                    Err(e) => Err(e.to_string()),
                },
                Probe::Tool => self.probe_tool(),
            };
            let last = match answer {
                Ok(()) => {
                    // The answer could come from another process that won our port while
                    // this server failed to bind it: make sure ours is still alive.
                    std::thread::sleep(Duration::from_millis(20));
                    return self.check_running(attempt, attempts);
                }
                Err(last) => last,
            };
            if Instant::now() >= deadline {
                let probe = match probe {
                    Probe::Http(path, _, expected) => {
                        format!("GET {}{path} expecting {expected}", self.http.base())
                    }
                    Probe::Tool => self.probe_command().map_or_else(
                        |e| e.to_string(),
                        |c| format!("{} exiting 0", command_line(&c)),
                    ),
                };
                return Err(TestbedError::NotReady {
                    kind: self.kind,
                    timeout,
                    probe,
                    last,
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// The readiness tool's command (SQL kinds only).
    pub(crate) fn probe_command(&self) -> Result<Command, TestbedError> {
        let tools = self.sql_tools("the readiness probe")?;
        Ok(match self.kind {
            ServerKind::Postgres | ServerKind::TimescaleDb => postgres::probe(tools, self.addr),
            _ => mariadb::probe(tools, self.addr),
        })
    }

    /// Runs the readiness tool once: `Err` says why the server is not ready.
    pub(crate) fn probe_tool(&self) -> Result<(), String> {
        let command = self.probe_command().map_err(|e| e.to_string())?;
        match process::output(command, PROBE_TIMEOUT) {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "{}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    pub(crate) fn check_running(
        &mut self,
        attempt: u32,
        attempts: u32,
    ) -> Result<(), TestbedError> {
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
            attempts,
            hint,
            log,
        })
    }
}

/// Spawns the server from a copy of `template`, as `run_as`, in `dir`, its output
/// appended to `log`.
pub(crate) fn spawn_server(
    template: &Command,
    run_as: Option<User>,
    dir: &Path,
    log: &Path,
) -> Result<Child, TestbedError> {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(template.get_program());
    command.args(template.get_args());
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    if let Some(user) = run_as {
        // std sets these in the child before `pre_exec` runs, so the parent-death signal
        // set there survives the change of user (which would clear it).
        command.uid(user.uid).gid(user.gid);
    }
    let (out, err) = log_stdio(log)?;
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let program = PathBuf::from(command.get_program());
    process::spawn(command).map_err(|source| TestbedError::Spawn { program, source })
}
