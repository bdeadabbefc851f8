//! Prometheus (Debian's `prometheus`, 2.x) as a remote-write receiver: its generated
//! configuration, command line and the sample counter.
//!
//! Started with `--web.enable-remote-write-receiver`, it takes `POST /api/v1/write`
//! (remote write 1.0: snappy-compressed protobuf). It scrapes nothing (no scrape configs),
//! so every sample in its head came from a remote write; `/metrics` counts them in
//! `prometheus_tsdb_head_samples_appended_total`. It refuses a request (400) with a
//! sample older than its head allows, out of order or a duplicate with another value, and
//! then stores none of that request's samples.

use std::path::Path;
use std::process::Command;

use crate::ports::Ports;
use crate::{Launch, Server, ServerKind, TestbedError, locate};

/// No scrape targets, and rule evaluation and scraping far apart: the server does nothing
/// on its own while a test runs.
const CONFIG: &str = "global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n";

/// `settings` are keys of the configuration's `storage.tsdb` block (e.g.
/// `("out_of_order_time_window", "1d")`), but `scrape_interval`: Prometheus as installed
/// (Debian's configuration) scrapes itself at that interval, so its head holds the
/// present and its sample counter counts its own scrapes.
pub(crate) fn launch(
    dir: &Path,
    ports: &mut Ports,
    settings: &[(&str, &str)],
) -> Result<Launch, TestbedError> {
    let prometheus = locate::binary(
        "prometheus",
        "TSLOAD_PROMETHEUS",
        "the Prometheus server",
        "prometheus",
    )?;
    let http = ports.take()?;
    let config = dir.join("prometheus.yml");
    let (scrape, tsdb): (Vec<_>, Vec<_>) =
        settings.iter().partition(|(k, _)| *k == "scrape_interval");
    let mut text = match scrape.last() {
        None => CONFIG.to_string(),
        Some((_, every)) => format!(
            "global:\n  scrape_interval: {every}\n  evaluation_interval: 1h\n\
             scrape_configs:\n  - job_name: prometheus\n    static_configs:\n      \
             - targets: ['{http}']\n"
        ),
    };
    if !tsdb.is_empty() {
        text.push_str("storage:\n  tsdb:\n");
        for (k, v) in tsdb {
            text.push_str(&format!("    {k}: {v}\n"));
        }
    }
    std::fs::write(&config, text)
        .map_err(|e| TestbedError::io(format!("writing {}", config.display()), e))?;
    let mut command = Command::new(prometheus);
    command
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={http}"))
        .arg("--web.enable-remote-write-receiver");
    Ok(Launch {
        command,
        addr: http,
        pg_addr: None,
        ilp_tcp_addr: None,
        run_as: None,
        sql: None,
    })
}

impl Server {
    /// The samples Prometheus holds in the series `selector` matches (`{__name__=~"cpu_.+"}`)
    /// over the last `window` (`2h`), whoever wrote them: [`Server::prometheus_range`]'s
    /// series' samples, summed.
    ///
    /// # Panics
    /// If this is not Prometheus, or the query fails.
    pub fn prometheus_sample_count(&self, selector: &str, window: &str) -> u64 {
        self.prometheus_range(selector, window)
            .iter()
            .map(|s| s["values"].as_array().map_or(0, Vec::len) as u64)
            .sum()
    }

    /// The series `selector` matches with a sample in the last `window`.
    ///
    /// # Panics
    /// If this is not Prometheus, or the query fails.
    pub fn prometheus_series_count(&self, selector: &str, window: &str) -> u64 {
        self.prometheus_range(selector, window).len() as u64
    }

    /// The range vector `selector[window]` queried now: one JSON object per series, its
    /// `metric` and `values` (`count_over_time` would drop the metric names, and
    /// Prometheus refuses the series that are then alike).
    ///
    /// # Panics
    /// If this is not Prometheus, or the query fails.
    pub fn prometheus_range(&self, selector: &str, window: &str) -> Vec<serde_json::Value> {
        let query = format!("{selector}[{window}]");
        let answer = self
            .require(ServerKind::Prometheus, "prometheus_range")
            .and_then(|()| self.get("/api/v1/query", &[("query", &query)]))
            .and_then(|a| {
                let v: serde_json::Value = serde_json::from_str(&a.body).map_err(|e| {
                    TestbedError::answer("Prometheus query", format!("{e}: {}", a.body))
                })?;
                match v["data"]["result"].as_array() {
                    Some(series) if v["status"] == "success" => Ok(series.clone()),
                    _ => Err(TestbedError::answer("Prometheus query", a.body.clone())),
                }
            });
        match answer {
            Ok(series) => series,
            Err(e) => self.fail(&format!("`{query}`"), e),
        }
    }

    /// The samples Prometheus has appended to its head since it started (every type:
    /// floats and histograms), from its own `/metrics`.
    ///
    /// # Panics
    /// If this is not Prometheus, or it does not answer with the counter.
    pub fn prometheus_samples(&self) -> u64 {
        match self.try_prometheus_samples() {
            Ok(n) => n,
            Err(e) => self.fail("reading prometheus_tsdb_head_samples_appended_total", e),
        }
    }

    fn try_prometheus_samples(&self) -> Result<u64, TestbedError> {
        self.require(ServerKind::Prometheus, "prometheus_samples")?;
        let text = self.get("/metrics", &[])?.body;
        appended(&text).ok_or_else(|| {
            TestbedError::answer(
                "GET /metrics",
                "no prometheus_tsdb_head_samples_appended_total in the answer",
            )
        })
    }
}

/// The sum of `prometheus_tsdb_head_samples_appended_total` over its label sets: 0 when
/// the TSDB's metrics are there without it (its label sets appear with the first sample).
fn appended(text: &str) -> Option<u64> {
    let tsdb = text
        .lines()
        .any(|l| l.starts_with("prometheus_tsdb_head_series "));
    let mut sum = tsdb.then_some(0u64);
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("prometheus_tsdb_head_samples_appended_total") else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        let value = rest.rsplit(' ').next()?.parse::<f64>().ok()?;
        *sum.get_or_insert(0u64) += value as u64;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::appended;

    #[test]
    fn appended_sums_every_type_and_ignores_other_metrics() {
        let text = "# HELP x\nprometheus_tsdb_head_samples_appended_total{type=\"float\"} 12\n\
                    prometheus_tsdb_head_samples_appended_total{type=\"histogram\"} 3\n\
                    prometheus_tsdb_head_samples_appended_totally 99\n\
                    prometheus_tsdb_head_series 7\n";
        assert_eq!(appended(text), Some(15));
        assert_eq!(appended("prometheus_tsdb_head_series 0\n"), Some(0));
        assert_eq!(appended("vm_rows 7\n"), None);
    }
}
