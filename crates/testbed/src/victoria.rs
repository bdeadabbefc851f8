//! VictoriaMetrics (single node): command-line flags and the export helpers.
//!
//! VictoriaMetrics stores a line-protocol field `f` of measurement `m` as the metric
//! `m_f` (e.g. `cpu_usage_user`) with the tags as labels. Freshly written samples sit in an
//! in-memory buffer for up to a second before searches see them; the export helpers force
//! a flush first (`/internal/force_flush`), and a settled sample count (once writes have
//! ended) is taken when two exports agree.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::ports::Ports;
use crate::{Launch, Server, ServerKind, TestbedError, locate};

pub(crate) fn launch(
    dir: &Path,
    ports: &mut Ports,
    settings: &[(&str, &str)],
    tls: Option<&crate::TestCa>,
) -> Result<Launch, TestbedError> {
    let vm = locate::binary(
        "victoria-metrics",
        "TSLOAD_VICTORIA_METRICS",
        "the VictoriaMetrics server",
        "victoria-metrics",
    )?;
    let http_addr = ports.take()?;
    let mut command = Command::new(vm);
    command.args(args(dir, http_addr));
    // Settings come after the defaults: the last of a flag given twice wins.
    command.args(settings.iter().map(|(k, v)| format!("-{k}={v}")));
    if let Some(ca) = tls {
        command
            .arg("-tls")
            .arg(format!("-tlsCertFile={}", ca.cert_file().display()))
            .arg(format!("-tlsKeyFile={}", ca.key_file().display()));
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

fn args(dir: &Path, http: std::net::SocketAddr) -> Vec<String> {
    vec![
        // The only listener: graphite, influx (TCP/UDP) and opentsdb listeners are off
        // unless their -*ListenAddr flags are given.
        format!("-httpListenAddr={http}"),
        format!("-storageDataPath={}", dir.join("data").display()),
        // Retention is counted back from now, and samples older than it are dropped on
        // ingestion: 100 years keeps the test data sets' 2016 timestamps.
        "-retentionPeriod=100y".into(),
        // Searches see samples as soon as they are flushed (no 30 s hold-back), and no
        // response cache can hide a later write.
        "-search.latencyOffset=0s".into(),
        "-search.disableCache".into(),
        "-loggerOutput=stderr".into(),
    ]
}

impl Server {
    /// Makes everything written so far visible to searches and exports
    /// (GET /internal/force_flush).
    ///
    /// # Panics
    /// If the server does not answer 200 (with the error and the server's log tail).
    pub fn vm_flush(&self) {
        if let Err(e) = self.try_vm_flush() {
            self.fail("force flush", e);
        }
    }

    fn try_vm_flush(&self) -> Result<(), TestbedError> {
        self.require(ServerKind::VictoriaMetrics, "vm_flush")?;
        self.http
            .expect("GET", "/internal/force_flush", &[], None, 200)
            .map(drop)
    }

    /// Flushes, then exports every series matching the series selector `match_expr`
    /// (e.g. `{__name__=~"cpu_.*"}`) over all time: JSON lines, one per series, each
    /// `{"metric":{..labels..},"values":[..],"timestamps":[..ms..]}`.
    pub fn vm_export(&self, match_expr: &str) -> Result<String, TestbedError> {
        self.try_vm_flush()?;
        self.http
            .expect(
                "GET",
                "/api/v1/export",
                // Without `end`, the export stops before the current second and misses
                // samples stamped a moment ago; 2100-01-01 takes everything.
                &[("match[]", match_expr), ("end", "4102444800")],
                None,
                200,
            )
            .map(|a| a.body)
    }

    /// The export of `match_expr` parsed, one JSON value per line.
    pub fn vm_export_json(&self, match_expr: &str) -> Result<Vec<serde_json::Value>, TestbedError> {
        let text = self.vm_export(match_expr)?;
        parse_export(&text)
    }

    /// The number of distinct series matching `match_expr`.
    ///
    /// # Panics
    /// If the export fails (with the error and the server's log tail).
    pub fn vm_series_count(&self, match_expr: &str) -> u64 {
        match self.vm_export_json(match_expr) {
            Ok(lines) => series_count(&lines),
            Err(e) => self.fail(&format!("export of {match_expr}"), e),
        }
    }

    /// The number of samples in all series matching `match_expr` (the lengths of the
    /// export's `values` arrays, summed), as one export right after a flush sees them:
    /// for counts taken while a load still writes.
    ///
    /// # Panics
    /// If the export fails (with the error and the server's log tail).
    pub fn vm_sample_count(&self, match_expr: &str) -> u64 {
        match self
            .vm_export_json(match_expr)
            .and_then(|l| sample_count(&l))
        {
            Ok(n) => n,
            Err(e) => self.fail(&format!("export of {match_expr}"), e),
        }
    }

    /// [`Server::vm_sample_count`] once writes have ended: exports until two exports a
    /// quarter of a second apart agree (for up to 20 s). Once, on a loaded CI machine, an
    /// export right after a flush held 504,979 of the 727,200 samples the server had
    /// counted in (`vm_rows_inserted_total`; all were there, distinct, when exported
    /// again). A count that stays short still fails the caller's comparison. Not for a
    /// count taken while rows still arrive: it would wait until they stop.
    ///
    /// # Panics
    /// If an export fails (with the error and the server's log tail).
    pub fn vm_settled_sample_count(&self, match_expr: &str) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last = self.vm_sample_count(match_expr);
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let now = self.vm_sample_count(match_expr);
            if now == last || Instant::now() >= deadline {
                return now;
            }
            last = now;
        }
    }
}

fn parse_export(text: &str) -> Result<Vec<serde_json::Value>, TestbedError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                TestbedError::answer(
                    "VictoriaMetrics export: a line is not JSON",
                    format!("{e}; line: {}", crate::http::clip(l)),
                )
            })
        })
        .collect()
}

/// Distinct `metric` objects (a series may span several lines in some exports).
fn series_count(lines: &[serde_json::Value]) -> u64 {
    // Sorted label pairs: serde_json keeps insertion order if a crate in the build
    // enables its `preserve_order` feature, so the printed objects could differ.
    let distinct: HashSet<Vec<(String, String)>> = lines
        .iter()
        .map(|l| {
            let mut labels: Vec<(String, String)> = l["metric"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
                .unwrap_or_default();
            labels.sort();
            labels
        })
        .collect();
    distinct.len() as u64
}

fn sample_count(lines: &[serde_json::Value]) -> Result<u64, TestbedError> {
    lines.iter().try_fold(0u64, |sum, line| {
        let values = line["values"].as_array().ok_or_else(|| {
            TestbedError::answer(
                "VictoriaMetrics export",
                format!("a line without a values array: {line}"),
            )
        })?;
        Ok(sum + values.len() as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_listen_on_loopback_and_keep_old_samples() {
        let a = args(Path::new("/tmp/vm"), "127.0.0.1:4242".parse().unwrap());
        assert!(a.contains(&"-httpListenAddr=127.0.0.1:4242".to_string()));
        assert!(a.contains(&"-storageDataPath=/tmp/vm/data".to_string()));
        assert!(a.contains(&"-retentionPeriod=100y".to_string()));
        assert!(
            !a.iter()
                .any(|f| f.contains("ListenAddr") && !f.contains("127.0.0.1"))
        );
    }

    #[test]
    fn counts_series_and_samples_of_an_export() {
        let text = r#"{"metric":{"__name__":"cpu_usage_user","hostname":"host_0"},"values":[58,59],"timestamps":[1451606400000,1451606410000]}
{"metric":{"hostname":"host_0","__name__":"cpu_usage_user"},"values":[60],"timestamps":[1451606420000]}
{"metric":{"__name__":"cpu_usage_user","hostname":"host_1"},"values":[1],"timestamps":[1451606400000]}

"#;
        let lines = parse_export(text).unwrap();
        assert_eq!(series_count(&lines), 2);
        assert_eq!(sample_count(&lines).unwrap(), 4);
        assert!(parse_export("not json").is_err());
        assert_eq!(series_count(&[]), 0);
    }
}
