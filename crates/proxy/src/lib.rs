//! tsload-proxy: a user-space TCP delay proxy, for machines whose kernel has no netem.
//!
//! [`Proxy::start`] listens on [`ProxyConfig::listen`], connects every accepted client to
//! [`ProxyConfig::upstream`] and forwards bytes both ways, adding what netem would add on
//! the client's egress:
//!
//! - **delay** `D`: with [`Direction::Up`] (the default) every byte read from the client is
//!   written to the upstream `D` after it reached the proxy, so a round trip takes `D`
//!   longer; [`Direction::Down`] delays the server-to-client direction instead, and
//!   [`Direction::Both`] delays both (`2D` per round trip, netem on both ends).
//! - **jitter** `J`: each chunk's delay is `D + uniform(-J, J)` (never below zero), but a
//!   chunk is never released before the one read before it, so bytes are never reordered.
//! - **rate**: a bandwidth limit in bytes per second on each delayed direction, a token
//!   bucket whose burst is one chunk (10 ms of the rate, between 1 KiB and 64 KiB); bytes
//!   are delayed by `D` after they leave the bucket.
//!
//! Each connection has its own queues; byte order is kept; a half-close (a FIN) travels
//! through the delay line like data; an I/O error on either side closes both (with a
//! reset). An upstream that refuses a connection gets the client's connection reset and is
//! counted in [`ProxyStats::connect_errors`].
//!
//! # Limits
//!
//! A flood of connections, idle or not, costs bounded memory and descriptors:
//!
//! - an idle connection holds no buffer: reads go into a per-thread scratch buffer and are
//!   written on at once, and a lane is set up (a few kilobytes, a delay line's queue and
//!   its timer) when its first bytes arrive; 2000 idle connections add about 8 MB to the
//!   process (a debug build), where each held two 64 KiB buffers and a timer before;
//! - a delay line queues at most [`ProxyConfig::queue_limit`] (16 MiB) of memory, counted
//!   as allocated (each chunk's allocation and queue entry: 80 bytes for a 1-byte chunk),
//!   not as payload; [`ProxyStats::buffered_bytes`] is what all connections hold now;
//! - [`ProxyConfig::idle_timeout`] (5 minutes) closes a connection that moved no byte;
//! - [`ProxyConfig::max_connections`] (1024) resets connections beyond it at once, with a
//!   log line ([`ProxyConfig::log`]);
//! - [`ProxyConfig::connect_timeout`] (10 s) gives up on an upstream that does not answer.
//!
//! # Faults
//!
//! [`ProxyConfig::faults`] injects network faults at a known byte or moment, for tests: a
//! [`Fault`] watches one connection (or every one) for a [`FaultTrigger`] (at once, once
//! `N` bytes of a [`Stream`] were forwarded, once the `k`-th occurrence of a pattern was
//! forwarded, even across read chunks) and then applies a [`FaultAction`]: reset both
//! sockets, stall (forward nothing, read nothing, keep both open), blackhole (read and
//! discard both ways), or reset on reply (the request reaches the server, its answer is
//! lost and both sockets are reset). Offsets are exact: with `AfterBytes { Down, 10 }`
//! the client gets exactly 10 bytes. Triggers apply where bytes are written, so after a
//! delay line's delay. [`ProxyStats::faults_fired`] counts fires, `max_fires` bounds
//! them. Without faults no byte is looked at. `tsload proxy --fault SPEC` takes the
//! grammar of [`FAULT_SPEC_HELP`] (`Fault` implements `FromStr` and `Display`).
//!
//! # How
//!
//! A direction without delay, jitter or rate is a plain copy loop (reads of up to 64 KiB
//! into the thread's scratch buffer, written on at once, no timers): about 1.5 GB/s
//! through the proxy on a 2-vCPU virtual machine, with 70-85% of a core. A delayed
//! direction is a delay line: the reader stamps each chunk with its release instant and
//! queues it (up to [`ProxyConfig::queue_limit`], then the reader stops reading and TCP
//! pushes back); the writer sleeps until the release instant and writes.
//!
//! Making the round trip grow by `D`, not by `D` plus the proxy's own cost, takes three
//! things (Linux; elsewhere the proxy falls back to plain reads and tokio's timer):
//!
//! - the delay runs from the bytes' arrival in the proxy's socket (the kernel's receive
//!   timestamp, `SO_TIMESTAMPNS`), not from when the task got round to reading them;
//! - the writer sleeps on a timerfd armed a little early (by the learnt median lateness of
//!   its wake-ups) and yields for the last stretch: tokio's own timer rounds up to the next
//!   millisecond;
//! - when one direction only is delayed, the other direction's hop through the proxy
//!   (arrival to the end of the forwarding write, measured, running median) is taken off
//!   the delay.
//!
//! On a 2-vCPU virtual machine (optimised build, 64-byte ping-pong, medians) the round
//! trip then grows by `D` + 0 to 30 us for `D` = 0.1 and 1 ms with one direction delayed,
//! `2D` + 15 to 40 us with both, and by 60 to 180 us more than the delay at 10 ms, most of
//! which is the client and server waking from 10 ms of idle, which netem would cost too;
//! see `tests/timing.rs`. The yielding costs CPU: with 1 ms of delay the proxy uses about
//! a third of a core for 10,000 chunks per second, 4% for 1,000, and a core for a bulk
//! stream (0.8-0.9 GB/s).
//!
//! ```no_run
//! # async fn run() -> Result<(), tsload_proxy::ProxyError> {
//! use std::time::Duration;
//! use tsload_proxy::{Direction, Proxy, ProxyConfig};
//!
//! let mut config = ProxyConfig::new(
//!     "127.0.0.1:0".parse().unwrap(),
//!     "127.0.0.1:8086".parse().unwrap(),
//! );
//! config.delay = Duration::from_millis(10);
//! config.direction = Direction::Up;
//! let proxy = Proxy::start(config).await?;
//! println!("point the load at {}", proxy.local_addr());
//! // ... run the load ...
//! println!("{:?}", proxy.stats());
//! proxy.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod buffer;
mod fault;
mod lane;
mod stamp;
mod timeout;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

pub use crate::fault::{FAULT_SPEC_HELP, Fault, FaultAction, FaultSpecError, FaultTrigger, Stream};

use crate::fault::{Armed, Ctl, Plan, Watch};
use crate::lane::{LaneConfig, Meters, Stop};
use crate::timeout::Activity;

/// The largest delay or jitter accepted (one hour): more is surely a unit mistake.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// The most a delay line takes off its delay for the other direction's hop (see "How"):
/// a round trip through a proxy delaying one direction by `D` is never shorter than
/// `D - MAX_HOP_CREDIT`, even on a machine so busy that the measured hops are long.
pub const MAX_HOP_CREDIT: Duration = stamp::MAX_HOP;

/// The default of [`ProxyConfig::idle_timeout`]: 5 minutes.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The default of [`ProxyConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The default of [`ProxyConfig::connect_timeout`]: 10 seconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default of [`ProxyConfig::queue_limit`]: 16 MiB, enough for 1.6 GB/s at 10 ms.
pub const DEFAULT_QUEUE_LIMIT: usize = lane::QUEUE_LIMIT;

/// The smallest [`ProxyConfig::queue_limit`]: one full chunk (64 KiB and its entry).
pub const MIN_QUEUE_LIMIT: usize = lane::MIN_QUEUE_LIMIT;

/// Which direction of each connection is delayed (and rate-limited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to upstream: netem on the client's egress.
    #[default]
    Up,
    /// Upstream to client: netem on the server's egress.
    Down,
    /// Both directions, each by the full delay: netem on both ends.
    Both,
}

impl Direction {
    fn up(self) -> bool {
        matches!(self, Direction::Up | Direction::Both)
    }

    fn down(self) -> bool {
        matches!(self, Direction::Down | Direction::Both)
    }
}

/// What a [`Proxy`] listens on, where it forwards to, and what it adds on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Address to listen on (port 0 picks a free port; see [`ProxyHandle::local_addr`]).
    pub listen: SocketAddr,
    /// Address every accepted connection is forwarded to.
    pub upstream: SocketAddr,
    /// Delay added to each delayed direction, counted from the bytes' arrival in the
    /// proxy's socket. With one direction delayed, the other direction's measured hop
    /// through the proxy (tens of microseconds, at most 100) is taken off, so that a round
    /// trip grows by `delay` and not by `delay` plus the proxy's own cost.
    pub delay: Duration,
    /// Each chunk's delay is `delay + uniform(-jitter, jitter)`, clamped so that nothing
    /// is reordered and no delay is negative.
    pub jitter: Duration,
    /// Bandwidth limit of each delayed direction, in bytes per second (`None`: unlimited).
    pub rate: Option<u64>,
    /// Which direction the delay, jitter and rate apply to.
    pub direction: Direction,
    /// Faults to inject (see [`Fault`]); empty: none, and no byte is looked at.
    pub faults: Vec<Fault>,
    /// A connection through which no byte was read or written, either way, for this long
    /// is closed (a FIN to both sides), and counted in [`ProxyStats::idle_closed`]. Bytes
    /// waiting in a delay line count as moving until their release. A connection a fault
    /// has taken over (stall, blackhole) is left as the fault says. `None`: never.
    /// Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Option<Duration>,
    /// The most connections open at once: one accepted while this many are open is reset
    /// at once (not queued), counted in [`ProxyStats::refused`] and logged (one line a
    /// second at most, see [`ProxyConfig::log`]). `None`: no cap. Default
    /// [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: Option<usize>,
    /// How long the upstream has to accept a connection; then the client's connection is
    /// reset and counted in [`ProxyStats::connect_errors`] and
    /// [`ProxyStats::connect_timeouts`]. `None`: the system's own timeout (about two
    /// minutes on Linux). Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Option<Duration>,
    /// Memory each delay line (one direction of one connection) may queue, counted as
    /// allocated (each chunk's allocation and queue entry, so 80 bytes for a 1-byte
    /// chunk), not as payload; when it is full the proxy stops reading that direction and
    /// TCP pushes back on the sender. At least [`MIN_QUEUE_LIMIT`]. Default
    /// [`DEFAULT_QUEUE_LIMIT`].
    pub queue_limit: usize,
    /// Where the proxy's log lines go (a refused connection). Default: standard error.
    pub log: Log,
}

/// Where a [`Proxy`] writes its log lines: standard error, or a function given each line
/// (without its newline).
#[derive(Clone, Default)]
pub enum Log {
    /// `eprintln!`.
    #[default]
    Stderr,
    /// This function, called on the proxy's runtime: it should not block.
    To(Arc<dyn Fn(&str) + Send + Sync>),
}

impl Log {
    /// Log lines go to `f`.
    pub fn to(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Log::To(Arc::new(f))
    }

    fn line(&self, line: &str) {
        match self {
            Log::Stderr => eprintln!("{line}"),
            Log::To(f) => f(line),
        }
    }
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Log::Stderr => f.write_str("Stderr"),
            Log::To(_) => f.write_str("To(..)"),
        }
    }
}

/// Two logs are equal when both are standard error or both are the same function.
impl PartialEq for Log {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Log::Stderr, Log::Stderr) => true,
            (Log::To(a), Log::To(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Log {}

impl ProxyConfig {
    /// A transparent proxy from `listen` to `upstream`: no delay, no jitter, no rate limit,
    /// [`Direction::Up`], the default limits.
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> Self {
        ProxyConfig {
            listen,
            upstream,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            rate: None,
            direction: Direction::Up,
            faults: Vec::new(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            max_connections: Some(DEFAULT_MAX_CONNECTIONS),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            queue_limit: DEFAULT_QUEUE_LIMIT,
            log: Log::Stderr,
        }
    }

    fn validate(&self) -> Result<(), ProxyError> {
        if self.delay > MAX_DELAY {
            return Err(ProxyError::Config(format!(
                "delay {:?} is over the maximum of {MAX_DELAY:?}",
                self.delay
            )));
        }
        if self.jitter > MAX_DELAY {
            return Err(ProxyError::Config(format!(
                "jitter {:?} is over the maximum of {MAX_DELAY:?}",
                self.jitter
            )));
        }
        if self.rate == Some(0) {
            return Err(ProxyError::Config(
                "rate 0 would never send a byte; leave it unset for no limit".to_owned(),
            ));
        }
        if self.idle_timeout == Some(Duration::ZERO) {
            return Err(ProxyError::Config(
                "idle_timeout 0 would close every connection at once; None for never".to_owned(),
            ));
        }
        if self.connect_timeout == Some(Duration::ZERO) {
            return Err(ProxyError::Config(
                "connect_timeout 0 would never reach the upstream; None for the system's own"
                    .to_owned(),
            ));
        }
        if self.max_connections == Some(0) {
            return Err(ProxyError::Config(
                "max_connections 0 would refuse every connection; None for no cap".to_owned(),
            ));
        }
        if !(MIN_QUEUE_LIMIT..=tokio::sync::Semaphore::MAX_PERMITS).contains(&self.queue_limit) {
            return Err(ProxyError::Config(format!(
                "queue_limit {} is out of range: at least {MIN_QUEUE_LIMIT} bytes (one full \
                 chunk)",
                self.queue_limit
            )));
        }
        for (i, fault) in self.faults.iter().enumerate() {
            if let Some(problem) = fault.problem() {
                return Err(ProxyError::Config(format!(
                    "fault {} (`{fault}`): {problem}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn lane(&self, delayed: bool) -> LaneConfig {
        if delayed {
            LaneConfig {
                delay: self.delay,
                jitter: self.jitter,
                rate: self.rate,
                queue_limit: self.queue_limit,
            }
        } else {
            LaneConfig::default()
        }
    }
}

/// Why a proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The configuration is out of range.
    #[error("invalid proxy configuration: {0}")]
    Config(String),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

/// Counters of a running proxy (a snapshot, see [`ProxyHandle::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted (and not refused).
    pub connections: u64,
    /// Connections open now (accepted and not yet closed).
    pub active: u64,
    /// Connections reset at once because [`ProxyConfig::max_connections`] were open.
    pub refused: u64,
    /// Connections closed by [`ProxyConfig::idle_timeout`].
    pub idle_closed: u64,
    /// Connections whose upstream could not be reached (refused, unreachable, timed out).
    pub connect_errors: u64,
    /// Of `connect_errors`, those that ran out of [`ProxyConfig::connect_timeout`].
    pub connect_timeouts: u64,
    /// Memory the proxy holds now for bytes in transit, counted as allocated: the delay
    /// queues (each chunk's allocation and entry, see [`ProxyConfig::queue_limit`]) and
    /// the bytes a receiver has not taken yet. Idle connections hold none. Not counted:
    /// each runtime thread's 64 KiB read buffer, and each connection's fixed state (its
    /// task and sockets, about 4 KiB).
    pub buffered_bytes: u64,
    /// Connections closed by an I/O error on either side (reset, broken pipe), and
    /// failed accepts.
    pub io_errors: u64,
    /// Bytes written to the upstream.
    pub bytes_up: u64,
    /// Bytes written to clients.
    pub bytes_down: u64,
    /// Faults fired (all of [`ProxyConfig::faults`] together).
    pub faults_fired: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    active: AtomicU64,
    refused: AtomicU64,
    idle_closed: AtomicU64,
    connect_errors: AtomicU64,
    connect_timeouts: AtomicU64,
    buffered_bytes: AtomicU64,
    io_errors: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    faults_fired: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> ProxyStats {
        ProxyStats {
            connections: self.connections.load(Ordering::Relaxed),
            active: self.active.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            idle_closed: self.idle_closed.load(Ordering::Relaxed),
            connect_errors: self.connect_errors.load(Ordering::Relaxed),
            connect_timeouts: self.connect_timeouts.load(Ordering::Relaxed),
            buffered_bytes: self.buffered_bytes.load(Ordering::Relaxed),
            io_errors: self.io_errors.load(Ordering::Relaxed),
            bytes_up: self.bytes_up.load(Ordering::Relaxed),
            bytes_down: self.bytes_down.load(Ordering::Relaxed),
            faults_fired: self.faults_fired.load(Ordering::Relaxed),
        }
    }
}

/// What every connection task shares.
#[derive(Debug)]
struct Shared {
    listen: SocketAddr,
    upstream: SocketAddr,
    idle_timeout: Option<Duration>,
    max_connections: Option<usize>,
    connect_timeout: Option<Duration>,
    log: Log,
    up: LaneConfig,
    down: LaneConfig,
    faults: Vec<Armed>,
    counters: Counters,
}

/// The user-space delay proxy; see the [crate documentation](crate).
#[derive(Debug)]
pub struct Proxy;

impl Proxy {
    /// Binds `config.listen` and starts accepting and forwarding on the current tokio
    /// runtime. The proxy runs until [`ProxyHandle::shutdown`] or until the handle is
    /// dropped.
    pub async fn start(config: ProxyConfig) -> Result<ProxyHandle, ProxyError> {
        config.validate()?;
        let bind_err = |source| ProxyError::Bind {
            addr: config.listen,
            source,
        };
        let listener = TcpListener::bind(config.listen).await.map_err(bind_err)?;
        let local_addr = listener.local_addr().map_err(bind_err)?;
        let shared = Arc::new(Shared {
            listen: local_addr,
            upstream: config.upstream,
            idle_timeout: config.idle_timeout,
            max_connections: config.max_connections,
            connect_timeout: config.connect_timeout,
            log: config.log.clone(),
            up: config.lane(config.direction.up()),
            down: config.lane(config.direction.down()),
            faults: config.faults.iter().cloned().map(Armed::new).collect(),
            counters: Counters::default(),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop_rx));
        Ok(ProxyHandle {
            local_addr,
            shared,
            stop: stop_tx,
            task: Some(task),
        })
    }
}

/// A running proxy. Dropping it stops the proxy: the listener is closed and every open
/// connection is dropped (both sides closed).
#[derive(Debug)]
pub struct ProxyHandle {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl ProxyHandle {
    /// The address the proxy listens on (with the port picked when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.shared.counters.snapshot()
    }

    /// How often each of [`ProxyConfig::faults`] fired so far, in their order.
    pub fn fault_fires(&self) -> Vec<u64> {
        self.shared.faults.iter().map(Armed::fires).collect()
    }

    /// Stops accepting, closes every open connection (both sides) and waits until all of
    /// the proxy's tasks have ended.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            // Aborting the accept task drops its JoinSet, which aborts every connection.
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut conns = JoinSet::new();
    let mut seq: u64 = 0;
    let mut refusals = Refusals::default();
    loop {
        tokio::select! {
            biased;
            // A stop request, or the handle gone.
            _ = stop.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((client, peer)) => {
                    let counters = &shared.counters;
                    // Counted here, not in the task, so that the cap holds however fast
                    // connections come.
                    let open = counters.active.load(Ordering::Relaxed);
                    if shared.max_connections.is_some_and(|max| open >= max as u64) {
                        counters.refused.fetch_add(1, Ordering::Relaxed);
                        refusals.refused(&shared, peer, open);
                        // A reset, not a FIN: the client must not take it for an answer.
                        let _ = client.set_zero_linger();
                        drop(client);
                        continue;
                    }
                    counters.connections.fetch_add(1, Ordering::Relaxed);
                    counters.active.fetch_add(1, Ordering::Relaxed);
                    let active = ActiveGuard(Arc::clone(&shared));
                    seq += 1;
                    conns.spawn(serve(client, Arc::clone(&shared), seq, active));
                }
                Err(_) => {
                    // Out of descriptors or memory, or an aborted handshake: count it and
                    // back off a little rather than spin on a listener that keeps failing.
                    shared.counters.io_errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            },
        }
    }
    drop(listener);
    conns.shutdown().await;
}

/// The log lines of refused connections: one a second at most, each saying how many were
/// refused since the one before.
#[derive(Debug, Default)]
struct Refusals {
    last_line: Option<Instant>,
    unlogged: u64,
}

impl Refusals {
    fn refused(&mut self, shared: &Shared, peer: SocketAddr, open: u64) {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last_line
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        let more = self.unlogged - 1;
        shared.log.line(&format!(
            "proxy {}: refused a connection from {peer}: {open} connections open, the \
             max_connections cap{}",
            shared.listen,
            if more > 0 {
                format!("; {more} more refused since the last such line")
            } else {
                String::new()
            }
        ));
        self.last_line = Some(now);
        self.unlogged = 0;
    }
}

/// Counts a connection as open from its accept until its task ends or is dropped (even
/// before it first ran).
struct ActiveGuard(Arc<Shared>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.counters.active.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve(mut client: TcpStream, shared: Arc<Shared>, seq: u64, _active: ActiveGuard) {
    let counters = &shared.counters;
    let _ = client.set_nodelay(true);
    let connect = TcpStream::connect(shared.upstream);
    let mut server = match timeout::within(shared.connect_timeout, connect).await {
        Some(Ok(server)) => server,
        failed => {
            counters.connect_errors.fetch_add(1, Ordering::Relaxed);
            if failed.is_none() {
                counters.connect_timeouts.fetch_add(1, Ordering::Relaxed);
            }
            // A reset rather than a clean EOF: the client must not take this for an
            // empty answer.
            let _ = client.set_zero_linger();
            return;
        }
    };
    let _ = server.set_nodelay(true);
    // Connections are numbered from 0 in accept order (`seq` counts from 1).
    let plan = fault::plan(&shared.faults, seq - 1, &counters.faults_fired);
    let ctl = Ctl::default();
    let (up_watch, down_watch) = match plan {
        Plan::Plain => (None, None),
        Plan::Act(action) => return fault::act(action, client, server, &ctl).await,
        Plan::Watch {
            reply_fired,
            up,
            down,
        } => {
            if reply_fired {
                ctl.fire(FaultAction::ResetOnReply);
            }
            let total = &counters.faults_fired;
            (
                Some(Watch::new(Stream::Up, &ctl, up, total)),
                Some(Watch::new(Stream::Down, &ctl, down, total)),
            )
        }
    };
    let seed = lane::seed(seq);
    let activity = Activity::new();
    let meters = |written| Meters {
        written,
        buffered: &counters.buffered_bytes,
        activity: &activity,
    };
    // `None`: closed for idleness.
    let result = {
        let (client_r, client_w) = client.split();
        let (server_r, server_w) = server.split();
        let up_delayed = !shared.up.is_transparent();
        let down_delayed = !shared.down.is_transparent();
        let up = lane::forward(
            client_r.as_ref(),
            server_w,
            &shared.up,
            down_delayed,
            seed,
            up_watch,
            meters(&counters.bytes_up),
        );
        let down = lane::forward(
            server_r.as_ref(),
            client_w,
            &shared.down,
            up_delayed,
            seed.rotate_left(32) ^ 0x5bd1_e995,
            down_watch,
            meters(&counters.bytes_down),
        );
        let forwarding = async { tokio::try_join!(up, down) };
        match shared.idle_timeout {
            None => Some(forwarding.await),
            Some(limit) => tokio::select! {
                biased;
                result = forwarding => Some(result),
                () = activity.idle(limit) => None,
            },
        }
    };
    match result {
        // Both sockets are dropped: a FIN each way.
        None => {
            counters.idle_closed.fetch_add(1, Ordering::Relaxed);
        }
        Some(Ok(_)) => {}
        Some(Err(Stop::Fault(action))) => fault::act(action, client, server, &ctl).await,
        Some(Err(Stop::Io)) => {
            counters.io_errors.fetch_add(1, Ordering::Relaxed);
            let _ = client.set_zero_linger();
            let _ = server.set_zero_linger();
        }
    }
}
