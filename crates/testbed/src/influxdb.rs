//! InfluxDB 1.x: the generated `influxdb.conf` and the query helpers.
//!
//! `influxd run -config DIR/influxdb.conf` with everything under the temp dir, the HTTP API
//! and the RPC (backup) service on free 127.0.0.1 ports, every other listener (graphite,
//! collectd, opentsdb, udp, ifql, the unix socket) off, and no phoning home.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::ports::Ports;
use crate::{Launch, Server, ServerKind, TestbedError, locate};

pub(crate) fn launch(
    dir: &Path,
    ports: &mut Ports,
    tls: Option<&crate::TestCa>,
) -> Result<Launch, TestbedError> {
    let influxd = locate::binary(
        "influxd",
        "TSLOAD_INFLUXD",
        "the InfluxDB 1.x server",
        "influxdb",
    )?;
    let http_addr = ports.take()?;
    let rpc_addr = ports.take()?;
    let config_path = dir.join("influxdb.conf");
    let mut text = config(dir, http_addr, rpc_addr);
    if let Some(ca) = tls {
        text = text.replacen(
            "  https-enabled = false\n",
            &format!(
                "  https-enabled = true\n  https-certificate = {}\n  https-private-key = {}\n",
                toml_string(&ca.cert_file().to_string_lossy()),
                toml_string(&ca.key_file().to_string_lossy())
            ),
            1,
        );
    }
    std::fs::write(&config_path, text)
        .map_err(|e| TestbedError::io(format!("writing {}", config_path.display()), e))?;
    let mut command = Command::new(influxd);
    command.arg("run").arg("-config").arg(&config_path);
    // INFLUXDB_* variables override the config file; a developer's must not leak in.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("INFLUXDB_") {
            command.env_remove(key);
        }
    }
    Ok(Launch {
        command,
        addr: http_addr,
        pg_addr: None,
        ilp_tcp_addr: None,
        run_as: None,
        sql: None,
    })
}

fn config(dir: &Path, http: std::net::SocketAddr, rpc: std::net::SocketAddr) -> String {
    let d = |sub: &str| toml_string(&dir.join(sub).to_string_lossy());
    let mut c = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        c,
        r#"# Written by tsload-testbed for one test run.
reporting-enabled = false
bind-address = "{rpc}"

[meta]
  dir = {meta}
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = {data}
  wal-dir = {wal}
  wal-fsync-delay = "0s"
  index-version = "inmem"
  query-log-enabled = true

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "{http}"
  auth-enabled = false
  log-enabled = false
  suppress-write-log = true
  pprof-enabled = false
  https-enabled = false
  unix-socket-enabled = false

[ifql]
  enabled = false

[logging]
  format = "auto"
  level = "info"
  suppress-logo = true

[continuous_queries]
  enabled = false
  log-enabled = false

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false
"#,
        meta = d("meta"),
        data = d("data"),
        wal = d("wal"),
    );
    c
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Server {
    /// Runs InfluxQL `q` against database `db` (GET /query?db=&q=) and returns the JSON
    /// answer. An `"error"` in the answer (for the request or the first statement) is an
    /// error.
    pub fn influx_query(&self, db: &str, q: &str) -> Result<serde_json::Value, TestbedError> {
        self.require(ServerKind::InfluxDb1, "influx_query")?;
        let answer = self
            .http
            .expect("GET", "/query", &[("db", db), ("q", q)], None, 200)?;
        let json = answer.json(&format!("InfluxQL `{q}`"))?;
        statement_error(&json).map_or(Ok(json), |e| {
            Err(TestbedError::answer(
                format!("InfluxQL `{q}` on database {db}"),
                e,
            ))
        })
    }

    /// Creates database `db` (POST /query, `CREATE DATABASE`; a no-op if it exists).
    pub fn influx_create_db(&self, db: &str) -> Result<(), TestbedError> {
        self.require(ServerKind::InfluxDb1, "influx_create_db")?;
        let q = format!("CREATE DATABASE {}", quote_ident(db));
        let answer = self
            .http
            .expect("POST", "/query", &[("q", &q)], None, 200)?;
        let json = answer.json(&q)?;
        statement_error(&json).map_or(Ok(()), |e| Err(TestbedError::answer(q, e)))
    }

    /// `SELECT count("field") FROM "measurement"` in `db`: the number of points that
    /// have `field`; 0 if the measurement has none (or does not exist).
    pub fn influx_count(
        &self,
        db: &str,
        measurement: &str,
        field: &str,
    ) -> Result<u64, TestbedError> {
        let q = format!(
            "SELECT count({}) FROM {}",
            quote_ident(field),
            quote_ident(measurement)
        );
        let json = self.influx_query(db, &q)?;
        let series = &json["results"][0]["series"];
        if series.is_null() {
            return Ok(0);
        }
        series[0]["values"][0][1].as_u64().ok_or_else(|| {
            TestbedError::answer(
                format!("InfluxQL `{q}`"),
                format!("no count in the answer: {json}"),
            )
        })
    }
}

/// InfluxQL double-quoted identifier.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The request's or the first statement's `"error"`, if any.
fn statement_error(json: &serde_json::Value) -> Option<String> {
    json.get("error")
        .or_else(|| json["results"][0].get("error"))
        .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_listens_on_loopback_only_and_stays_in_the_dir() {
        let dir = Path::new("/tmp/x \"y\"");
        let c = config(
            dir,
            "127.0.0.1:1234".parse().unwrap(),
            "127.0.0.1:5678".parse().unwrap(),
        );
        assert!(c.contains("bind-address = \"127.0.0.1:1234\""), "{c}");
        assert!(c.contains("bind-address = \"127.0.0.1:5678\""), "{c}");
        assert!(c.contains(r#"dir = "/tmp/x \"y\"/meta""#), "{c}");
        assert!(c.contains("reporting-enabled = false"));
        assert!(c.contains("store-enabled = false"));
        // Every bind-address in the file is on 127.0.0.1.
        for line in c.lines().filter(|l| l.contains("bind-address")) {
            assert!(line.contains("\"127.0.0.1:"), "{line}");
        }
    }

    #[test]
    fn statement_errors_are_found() {
        let ok: serde_json::Value =
            serde_json::from_str(r#"{"results":[{"statement_id":0}]}"#).unwrap();
        assert_eq!(statement_error(&ok), None);
        let bad: serde_json::Value = serde_json::from_str(
            r#"{"results":[{"statement_id":0,"error":"database not found: x"}]}"#,
        )
        .unwrap();
        assert_eq!(
            statement_error(&bad).as_deref(),
            Some("database not found: x")
        );
        let top: serde_json::Value = serde_json::from_str(r#"{"error":"bad query"}"#).unwrap();
        assert_eq!(statement_error(&top).as_deref(), Some("bad query"));
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("cpu"), "\"cpu\"");
        assert_eq!(quote_ident("a\"b"), "\"a\\\"b\"");
    }
}
