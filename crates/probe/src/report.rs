//! [`ProbeReport`]: the result of one probe run, with iputils' figures (transmitted,
//! received, loss, time, rtt min/avg/max/mdev) and the load engine's
//! [`LatencySummary`] of the same RTTs, printable in iputils' shape and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use tsload_report::report::LatencySummary;

use crate::format::{c_g, ms3, table_ms, time_ms};
use crate::stats::RttStats;

/// What was probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// ICMP echo request / reply.
    Icmp,
    /// TCP connect(): SYN -> SYN/ACK.
    Tcp,
    /// An HTTP GET over a kept-alive connection.
    Http,
    /// `SELECT 1` over one SQL connection.
    Sql,
    /// Another [`AppPing`](crate::app::AppPing).
    App,
}

impl ProbeKind {
    /// The word before "statistics" in the report's first line (`ping` for ICMP, as
    /// iputils prints it).
    pub fn title(self) -> &'static str {
        match self {
            ProbeKind::Icmp => "ping",
            ProbeKind::Tcp => "tcp connect",
            ProbeKind::Http => "http ping",
            ProbeKind::Sql => "sql ping",
            ProbeKind::App => "app ping",
        }
    }

    /// The short name (`icmp`, `tcp`, `http`, `sql`, `app`), as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Icmp => "icmp",
            ProbeKind::Tcp => "tcp",
            ProbeKind::Http => "http",
            ProbeKind::Sql => "sql",
            ProbeKind::App => "app",
        }
    }
}

/// The result of one probe run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProbeReport {
    pub kind: ProbeKind,
    /// What was probed, as given (an address, `ADDR:PORT`, a URL without credentials).
    pub target: String,
    pub transmitted: u64,
    pub received: u64,
    /// Probes answered with an error (ICMP error, refused connection, HTTP error
    /// status, SQL error): iputils' `+N errors`. Unanswered probes are not errors.
    pub errors: u64,
    /// iputils' loss: `(transmitted - received) * 100 / transmitted` (as a C float).
    pub loss_pct: f64,
    /// iputils' `time`: from the first probe out to the last probe out.
    #[serde(rename = "elapsed_s", serialize_with = "secs")]
    pub elapsed: Duration,
    /// iputils' rtt figures: whole microseconds shown as ms (avg and mdev with its
    /// integer arithmetic). 0 when nothing was received.
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub mdev_ms: f64,
    /// HDR percentiles of the same RTTs (nanosecond histogram), as the load report's.
    pub latency: LatencySummary,
    /// Failed or unanswered probes by reason (`timeout`, `connection refused`, ...).
    pub failures: BTreeMap<String, u64>,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn us_to_ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

fn ms_to_us(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

impl ProbeReport {
    /// The report of `stats`, probes sent over `elapsed`.
    pub fn from_stats(
        kind: ProbeKind,
        target: impl Into<String>,
        stats: &RttStats,
        elapsed: Duration,
    ) -> Self {
        ProbeReport {
            kind,
            target: target.into(),
            transmitted: stats.transmitted(),
            received: stats.received(),
            errors: stats.errors(),
            loss_pct: stats.loss_pct(),
            elapsed,
            min_ms: us_to_ms(stats.min_us()),
            avg_ms: us_to_ms(stats.avg_us()),
            max_ms: us_to_ms(stats.max_us()),
            mdev_ms: us_to_ms(stats.mdev_us()),
            latency: LatencySummary::from_histogram(stats.histogram()),
            failures: stats.failures().clone(),
        }
    }

    /// iputils' closing statistics plus one line of HDR percentiles (and, when some
    /// probes failed, one line of failures by reason):
    ///
    /// ```text
    /// --- 169.254.77.2 ping statistics ---
    /// 1000 packets transmitted, 1000 received, 0% packet loss, time 41ms
    /// rtt min/avg/max/mdev = 0.021/0.034/0.212/0.008 ms
    /// hdr p50/p90/p99/p99.9/p99.99 = 0.033/0.041/0.071/0.150/0.212 ms (n=1000)
    /// ```
    ///
    /// Non-ICMP kinds say `probes` instead of `packets` and `loss` instead of
    /// `packet loss`.
    pub fn render_text(&self) -> String {
        let icmp = self.kind == ProbeKind::Icmp;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "--- {} {} statistics ---",
            self.target,
            self.kind.title()
        );
        let _ = write!(
            s,
            "{} {} transmitted, {} received",
            self.transmitted,
            if icmp { "packets" } else { "probes" },
            self.received
        );
        if self.errors > 0 {
            let _ = write!(s, ", +{} errors", self.errors);
        }
        if self.transmitted > 0 {
            let _ = write!(
                s,
                ", {}% {}, time {}ms",
                c_g(self.loss_pct),
                if icmp { "packet loss" } else { "loss" },
                time_ms(self.elapsed)
            );
        }
        s.push('\n');
        if self.received > 0 {
            let _ = writeln!(
                s,
                "rtt min/avg/max/mdev = {}/{}/{}/{} ms",
                ms3(ms_to_us(self.min_ms)),
                ms3(ms_to_us(self.avg_ms)),
                ms3(ms_to_us(self.max_ms)),
                ms3(ms_to_us(self.mdev_ms))
            );
            let l = &self.latency;
            let _ = writeln!(
                s,
                "hdr p50/p90/p99/p99.9/p99.99 = {:.3}/{:.3}/{:.3}/{:.3}/{:.3} ms (n={})",
                l.p50_ms, l.p90_ms, l.p99_ms, l.p99_9_ms, l.p99_99_ms, l.count
            );
        }
        if !self.failures.is_empty() {
            let list: Vec<String> = self
                .failures
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(s, "failures: {}", list.join(", "));
        }
        s
    }

    /// One row in the column layout of the load report's latency table
    /// (`tsload_report::report::Summary::render_text`: label, then min, mean, p50, p90,
    /// p95, p99, p99.9, p99.99, max in ms), so RTT lines up under write latency.
    pub fn table_row(&self, label: &str) -> String {
        let l = &self.latency;
        format!(
            "  {:<10}{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            label,
            table_ms(l.min_ms),
            table_ms(l.mean_ms),
            table_ms(l.p50_ms),
            table_ms(l.p90_ms),
            table_ms(l.p95_ms),
            table_ms(l.p99_ms),
            table_ms(l.p99_9_ms),
            table_ms(l.p99_99_ms),
            table_ms(l.max_ms)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(kind: ProbeKind, samples_us: &[i64], lost: u64, errors: u64) -> ProbeReport {
        let mut s = RttStats::new();
        for &us in samples_us {
            s.on_send();
            s.on_reply_us(us);
        }
        for _ in 0..lost {
            s.on_send();
            s.on_loss("timeout");
        }
        for _ in 0..errors {
            s.on_send();
            s.on_error("connection refused");
        }
        ProbeReport::from_stats(kind, "169.254.77.2", &s, Duration::from_micros(812_400))
    }

    #[test]
    fn renders_like_iputils() {
        let r = report(ProbeKind::Icmp, &[21, 34, 212, 30], 0, 0);
        let text = r.render_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "--- 169.254.77.2 ping statistics ---");
        assert_eq!(
            lines[1],
            "4 packets transmitted, 4 received, 0% packet loss, time 812ms"
        );
        // tsum 297, tsum2 441+1156+44944+900 = 47441; avg 74;
        // tmvar = (47441 - 88209/4)/4 = (47441 - 22052)/4 = 6347; llsqrt = 79.
        assert_eq!(
            lines[2],
            "rtt min/avg/max/mdev = 0.021/0.074/0.212/0.079 ms"
        );
        assert!(
            lines[3].starts_with("hdr p50/p90/p99/p99.9/p99.99 = "),
            "{}",
            lines[3]
        );
        assert!(lines[3].ends_with(" ms (n=4)"), "{}", lines[3]);
        assert_eq!(lines.len(), 4);
        assert_eq!(r.min_ms, 0.021);
        assert_eq!(r.avg_ms, 0.074);
        assert_eq!(r.mdev_ms, 0.079);
        assert_eq!(r.latency.count, 4);
    }

    #[test]
    fn loss_errors_and_failures() {
        let r = report(ProbeKind::Icmp, &[100, 200], 1, 0);
        let text = r.render_text();
        assert!(
            text.contains("3 packets transmitted, 2 received, 33.3333% packet loss, time 812ms\n"),
            "{text}"
        );
        assert!(text.contains("failures: timeout 1\n"), "{text}");

        let r = report(ProbeKind::Tcp, &[], 0, 5);
        let text = r.render_text();
        assert_eq!(
            text,
            "--- 169.254.77.2 tcp connect statistics ---\n\
             5 probes transmitted, 0 received, +5 errors, 100% loss, time 812ms\n\
             failures: connection refused 5\n"
        );
        assert_eq!(r.loss_pct, 100.0);
        assert_eq!(r.latency, LatencySummary::default());
    }

    #[test]
    fn serializes_to_json() {
        let r = report(ProbeKind::Http, &[1500], 0, 0);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["kind"], "http");
        assert_eq!(v["target"], "169.254.77.2");
        assert_eq!(v["transmitted"], 1);
        assert_eq!(v["received"], 1);
        assert_eq!(v["loss_pct"], 0.0);
        assert_eq!(v["elapsed_s"], 0.8124);
        assert_eq!(v["min_ms"], 1.5);
        assert_eq!(v["mdev_ms"], 0.0);
        assert_eq!(v["latency"]["count"], 1);
        assert!(v["latency"]["p99_ms"].as_f64().unwrap() > 1.49);
        assert!(v["failures"].as_object().unwrap().is_empty());
    }

    #[test]
    fn table_row_lines_up_with_the_load_report() {
        let r = report(ProbeKind::Icmp, &[21, 34], 0, 0);
        let row = r.table_row("rtt");
        assert!(row.starts_with("  rtt       "), "{row:?}");
        assert_eq!(row.split_whitespace().count(), 10, "{row:?}");
    }
}
