//! ClickHouse (Debian's `clickhouse-server`, 18.16): the generated `config.xml` and
//! `users.xml`, and the SQL helpers over its HTTP interface.
//!
//! `clickhouse-server --config-file=DIR/config.xml` with its data, temp and user-file
//! paths under the temp dir, the HTTP interface, the native TCP port and the interserver
//! port on free 127.0.0.1 ports (and nothing else: no `::1`), the log on stderr (the
//! server's log file), and one user, `default`, without a password, reachable from
//! 127.0.0.1 only. The files are written here rather than copied from
//! /etc/clickhouse-server, so that the package's own settings (its 8123/9000 ports, its
//! /var paths) cannot leak in. An `INSERT` is visible to `SELECT` when it is answered.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::ports::Ports;
use crate::{Launch, Server, ServerKind, TestbedError, locate};

/// One user, `default`, no password, from 127.0.0.1 only, no quota limits.
const USERS: &str = r#"<?xml version="1.0"?>
<!-- Written by tsload-testbed for one test run. -->
<yandex>
    <profiles>
        <default></default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default></default>
    </quotas>
</yandex>
"#;

pub(crate) fn launch(dir: &Path, ports: &mut Ports) -> Result<Launch, TestbedError> {
    let server = locate::binary(
        "clickhouse-server",
        "TSLOAD_CLICKHOUSE_SERVER",
        "the ClickHouse server",
        "clickhouse-server",
    )?;
    let http = ports.take()?;
    let tcp = ports.take()?;
    let interserver = ports.take()?;
    let config_path = dir.join("config.xml");
    std::fs::write(&config_path, config(dir, http, tcp, interserver))
        .map_err(|e| TestbedError::io(format!("writing {}", config_path.display()), e))?;
    let users_path = dir.join("users.xml");
    std::fs::write(&users_path, USERS)
        .map_err(|e| TestbedError::io(format!("writing {}", users_path.display()), e))?;
    let mut command = Command::new(server);
    command.arg(format!("--config-file={}", config_path.display()));
    Ok(Launch {
        command,
        addr: http,
        pg_addr: None,
        ilp_tcp_addr: None,
        run_as: None,
        sql: None,
    })
}

/// The server's `config.xml`: every path under `dir`, every listener on 127.0.0.1.
fn config(
    dir: &Path,
    http: std::net::SocketAddr,
    tcp: std::net::SocketAddr,
    interserver: std::net::SocketAddr,
) -> String {
    // ClickHouse wants directory paths with a trailing slash.
    let d = |sub: &str| xml_text(&format!("{}/", dir.join(sub).display()));
    let mut c = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        c,
        r#"<?xml version="1.0"?>
<!-- Written by tsload-testbed for one test run. -->
<yandex>
    <logger>
        <level>warning</level>
        <console>1</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <interserver_http_port>{interserver}</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <path>{data}</path>
    <tmp_path>{tmp}</tmp_path>
    <user_files_path>{user_files}</user_files_path>
    <format_schema_path>{format_schemas}</format_schema_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
"#,
        http = http.port(),
        tcp = tcp.port(),
        interserver = interserver.port(),
        data = d("data"),
        tmp = d("data/tmp"),
        user_files = d("data/user_files"),
        format_schemas = d("data/format_schemas"),
    );
    c
}

/// `s` as XML character data.
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Server {
    /// POSTs one SQL statement to ClickHouse's HTTP interface (in database `default`)
    /// and returns the answer's body without its trailing line break: TabSeparated, one
    /// line per row, `\N` for NULL, nothing for statements without rows. Anything but
    /// `200 OK` is an error with the server's message. ClickHouse only.
    ///
    /// ```no_run
    /// # let s = tsload_testbed::Server::start(tsload_testbed::ServerKind::ClickHouse).unwrap();
    /// s.clickhouse_query("CREATE TABLE t (id Int64) ENGINE = Memory").unwrap();
    /// s.clickhouse_query("INSERT INTO t VALUES (1), (2)").unwrap();
    /// assert_eq!(s.clickhouse_query("SELECT count() FROM t").unwrap(), "2");
    /// ```
    pub fn clickhouse_query(&self, sql: &str) -> Result<String, TestbedError> {
        self.require(ServerKind::ClickHouse, "clickhouse_query")?;
        let answer = self
            .http
            .expect("POST", "/", &[], Some(sql.as_bytes()), 200)?;
        Ok(answer.body.trim_end_matches(['\n', '\r']).to_string())
    }

    /// `SELECT count() FROM <table>` (`table` as written: `db.name`, or a name in
    /// `default`).
    ///
    /// # Panics
    /// If this is not ClickHouse, the table does not exist or the answer is no number
    /// (with the error and the server's log tail).
    pub fn clickhouse_count(&self, table: &str) -> u64 {
        let q = format!("SELECT count() FROM {table}");
        let n = self.clickhouse_query(&q).and_then(|text| {
            text.parse::<u64>()
                .map_err(|_| TestbedError::answer(format!("ClickHouse `{q}`"), text))
        });
        match n {
            Ok(n) => n,
            Err(e) => self.fail(&format!("count of table {table}"), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_listens_on_loopback_and_keeps_everything_in_the_dir() {
        let c = config(
            Path::new("/tmp/ch&x"),
            "127.0.0.1:4001".parse().unwrap(),
            "127.0.0.1:4002".parse().unwrap(),
            "127.0.0.1:4003".parse().unwrap(),
        );
        assert!(c.contains("<http_port>4001</http_port>"), "{c}");
        assert!(c.contains("<tcp_port>4002</tcp_port>"), "{c}");
        assert!(c.contains("<interserver_http_port>4003</interserver_http_port>"));
        assert!(c.contains("<path>/tmp/ch&amp;x/data/</path>"), "{c}");
        assert_eq!(c.matches("<listen_host>").count(), 1);
        assert!(c.contains("<listen_host>127.0.0.1</listen_host>"));
        assert!(!c.contains("/var/"), "{c}");
    }
}
