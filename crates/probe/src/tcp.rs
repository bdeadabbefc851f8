//! TCP connect RTT: the time `connect()` takes to ADDR (SYN out, SYN/ACK in: one round
//! trip plus the kernels' work), one connection at a time, each closed right away.
//! Refused connections count as errors (`connection refused`), unanswered ones as lost.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpSocket;

use crate::error::ProbeError;
use crate::netns::maybe_in_netns;
use crate::report::{ProbeKind, ProbeReport};
use crate::sequential::{Sequential, validate};

/// What to connect to and how.
#[derive(Debug, Clone)]
pub struct TcpOptions {
    pub target: SocketAddr,
    /// Connections to make (at least 1).
    pub count: u64,
    /// From one connect() to the next (default 1 s; zero: back to back).
    pub interval: Duration,
    /// How long a connect() may take before it counts as lost (default 10 s).
    pub timeout: Duration,
    /// Connect from inside this network namespace.
    pub netns: Option<String>,
}

impl TcpOptions {
    /// `count` connects to `target`, one a second, 10 s timeout.
    pub fn new(target: SocketAddr, count: u64) -> Self {
        TcpOptions {
            target,
            count,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            netns: None,
        }
    }
}

/// Measures connect() RTTs as `opts` says.
pub async fn connect_rtt(opts: &TcpOptions) -> Result<ProbeReport, ProbeError> {
    validate(opts.count, opts.timeout)?;
    let o = opts.clone();
    maybe_in_netns(opts.netns.as_deref(), move || async move { run(&o).await }).await
}

async fn run(o: &TcpOptions) -> Result<ProbeReport, ProbeError> {
    let mut seq = Sequential::new(o.interval, o.timeout);
    for _ in 0..o.count {
        seq.wait_turn().await;
        // The socket is made before the clock starts: only connect() is timed.
        let socket = match o.target {
            SocketAddr::V4(_) => TcpSocket::new_v4(),
            SocketAddr::V6(_) => TcpSocket::new_v6(),
        }
        .map_err(ProbeError::io("opening a TCP socket"))?;
        let target = o.target;
        let stream = seq
            .probe(async move {
                socket
                    .connect(target)
                    .await
                    .map_err(|source| ProbeError::Io {
                        what: format!("connecting to {target}"),
                        source,
                    })
            })
            .await;
        // Closed once the clock has stopped.
        drop(stream);
    }
    Ok(seq.report(ProbeKind::Tcp, o.target.to_string()))
}
