//! QuestDB: the generated `conf/server.conf`, the JVM command and the SQL helpers.
//!
//! `java -p questdb-VERSION.jar -m io.questdb/io.questdb.ServerMain -d DIR` with DIR the
//! temp dir (QuestDB puts `conf/`, `db/`, `import/` and the web console's `public/` there).
//! Tables made by line protocol are WAL tables: a write is acknowledged once it is in the
//! WAL, and rows become visible a little later, when the WAL is applied. The count helper
//! waits for that, so a count right after a write is exact.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::ports::Ports;
use crate::{Launch, Server, ServerKind, TestbedError, locate};

/// How long the helpers wait for QuestDB to apply its WAL.
const WAL_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn launch(dir: &Path, ports: &mut Ports) -> Result<Launch, TestbedError> {
    let java = locate::java()?;
    let jar = locate::questdb_jar()?;
    let http = ports.take()?;
    let http_min = ports.take()?;
    let ilp_tcp = ports.take()?;
    let pg = ports.take()?;
    let conf_dir = dir.join("conf");
    let java_tmp = dir.join("java-tmp");
    for d in [&conf_dir, &java_tmp] {
        std::fs::create_dir_all(d)
            .map_err(|e| TestbedError::io(format!("creating {}", d.display()), e))?;
    }
    let conf = conf_dir.join("server.conf");
    std::fs::write(&conf, config(http, http_min, ilp_tcp, pg))
        .map_err(|e| TestbedError::io(format!("writing {}", conf.display()), e))?;
    let mut command = Command::new(java);
    command
        // Modest memory: the heap is small; QuestDB's column data lives off-heap in
        // mmapped files. The serial collector suits a 2-core shared machine.
        .args([
            "-Xms64m",
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-XX:-UsePerfData",
        ])
        // Keep whatever the JVM or QuestDB unpacks inside the temp dir.
        .arg(format!("-Djava.io.tmpdir={}", java_tmp.display()))
        .arg("-p")
        .arg(&jar)
        .args(["-m", "io.questdb/io.questdb.ServerMain", "-d"])
        .arg(dir);
    // QDB_* variables override server.conf; a developer's must not leak in.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("QDB_") {
            command.env_remove(key);
        }
    }
    Ok(Launch {
        command,
        addr: http,
        pg_addr: Some(pg),
        ilp_tcp_addr: Some(ilp_tcp),
        run_as: None,
        sql: None,
    })
}

fn config(
    http: std::net::SocketAddr,
    http_min: std::net::SocketAddr,
    ilp_tcp: std::net::SocketAddr,
    pg: std::net::SocketAddr,
) -> String {
    let mut c = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        c,
        "# Written by tsload-testbed for one test run.
# REST API, web console and ILP over HTTP (/write).
http.bind.to={http}
# Health and metrics server.
http.min.net.bind.to={http_min}
# ILP over TCP.
line.tcp.net.bind.to={ilp_tcp}
# PostgreSQL wire protocol.
pg.net.bind.to={pg}
line.udp.enabled=false
telemetry.enabled=false
# Files grow by these steps; with the 16 MiB defaults a fresh server's own tables hold
# ~250 MB of disk (the symbol maps' index values chiefly) while it runs.
cairo.writer.data.append.page.size=1m
cairo.writer.data.index.value.append.page.size=256k
"
    );
    c
}

/// A QuestDB double-quoted identifier.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

impl Server {
    /// Runs `sql` through the REST API (GET /exec?query=) and returns the JSON answer
    /// (`columns`, `dataset`, `count`, ...). An HTTP error or an `"error"` in the answer is
    /// an error.
    pub fn questdb_exec(&self, sql: &str) -> Result<serde_json::Value, TestbedError> {
        self.require(ServerKind::QuestDb, "questdb_exec")?;
        let answer = self
            .http
            .expect("GET", "/exec", &[("query", sql)], None, 200)?;
        let json = answer.json(&format!("QuestDB `{sql}`"))?;
        if let Some(e) = json.get("error") {
            return Err(TestbedError::answer(
                format!("QuestDB `{sql}`"),
                e.to_string(),
            ));
        }
        Ok(json)
    }

    /// Waits until QuestDB has applied every WAL table's pending transactions, so reads
    /// see everything written so far. A suspended table (a failed apply) is an error.
    pub fn questdb_wait_wal(&self) -> Result<(), TestbedError> {
        self.wait_wal(None)
    }

    fn wait_wal(&self, table: Option<&str>) -> Result<(), TestbedError> {
        let sql = "select name, suspended, writerTxn, sequencerTxn, errorMessage from wal_tables()";
        let deadline = Instant::now() + WAL_TIMEOUT;
        loop {
            let json = self.questdb_exec(sql)?;
            let rows = json["dataset"].as_array().cloned().unwrap_or_default();
            let mut pending = Vec::new();
            for row in &rows {
                let name = row[0].as_str().unwrap_or("?");
                if table.is_some_and(|t| !t.eq_ignore_ascii_case(name)) {
                    continue;
                }
                if row[1].as_bool() == Some(true) {
                    return Err(TestbedError::answer(
                        format!("QuestDB table {name}"),
                        format!("suspended: its WAL could not be applied: {}", row[4]),
                    ));
                }
                let (writer, sequencer) = (row[2].as_i64(), row[3].as_i64());
                if writer < sequencer {
                    pending.push(format!("{name} at txn {writer:?} of {sequencer:?}"));
                }
            }
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TestbedError::Timeout {
                    what: "QuestDB applying its WAL".into(),
                    timeout: WAL_TIMEOUT,
                    detail: pending.join(", "),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_questdb_count(&self, table: &str) -> Result<u64, TestbedError> {
        self.wait_wal(Some(table))?;
        let sql = format!("select count() from {}", quote_ident(table));
        let json = self.questdb_exec(&sql)?;
        json["dataset"][0][0].as_u64().ok_or_else(|| {
            TestbedError::answer(format!("QuestDB `{sql}`"), format!("no count in: {json}"))
        })
    }

    /// The number of rows in `table`, once QuestDB has applied the table's WAL.
    ///
    /// # Panics
    /// If the table does not exist or the query fails (with the error and the server's
    /// log tail).
    pub fn questdb_count(&self, table: &str) -> u64 {
        match self.try_questdb_count(table) {
            Ok(n) => n,
            Err(e) => self.fail(&format!("count of table {table}"), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_binds_every_listener_to_loopback() {
        let a = |p: u16| std::net::SocketAddr::from(([127, 0, 0, 1], p));
        let c = config(a(1), a(2), a(3), a(4));
        for line in [
            "http.bind.to=127.0.0.1:1",
            "http.min.net.bind.to=127.0.0.1:2",
            "line.tcp.net.bind.to=127.0.0.1:3",
            "pg.net.bind.to=127.0.0.1:4",
            "telemetry.enabled=false",
            "line.udp.enabled=false",
        ] {
            assert!(c.lines().any(|l| l == line), "{line} missing from:\n{c}");
        }
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("cpu"), "\"cpu\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
