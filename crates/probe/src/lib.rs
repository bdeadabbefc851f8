//! RTT probes for tsload, reported with the load engine's own HDR histograms and
//! [`LatencySummary`](tsload_report::report::LatencySummary), so that network RTT and
//! write latency print side by side.
//!
//! - [`icmp`]: ICMP echo through surge-ping, interval or flood mode, raw or datagram
//!   sockets, optionally from inside a network namespace.
//! - [`tcp`]: TCP connect() RTT.
//! - [`app`]: application RTT ([`AppPing`]): an HTTP GET over a kept-alive connection,
//!   `SELECT 1` over one SQL connection.
//! - [`report`]: [`ProbeReport`], rendered in iputils' shape or as JSON.
//! - [`stats`], [`format`], [`schedule`]: the pure parts (iputils' statistics and number
//!   formats, the flood/interval sending decision).
//! - [`netns`]: running a probe inside a named network namespace.
//!
//! ```no_run
//! # async fn run() -> Result<(), tsload_probe::ProbeError> {
//! use tsload_probe::{IcmpOptions, Pacing, icmp};
//!
//! let mut opts = IcmpOptions::new("169.254.77.2".parse().unwrap(), 1000);
//! opts.pacing = Pacing::Flood;
//! opts.netns = Some("lab-left".to_string());
//! let report = icmp::ping(&opts).await?;
//! print!("{}", report.render_text());
//! # Ok(())
//! # }
//! ```

pub mod app;
mod error;
pub mod format;
pub mod icmp;
pub mod netns;
pub mod report;
pub mod schedule;
mod sequential;
pub mod stats;
pub mod tcp;

pub use app::{AppOptions, AppPing, HttpPing, SqlPing, http_rtt, run_app, sql_rtt};
pub use error::{ProbeError, io_reason};
pub use icmp::{IcmpOptions, IcmpSocket};
pub use report::{ProbeKind, ProbeReport};
pub use schedule::Pacing;
pub use stats::RttStats;
pub use tcp::{TcpOptions, connect_rtt};
