//! ICMP echo RTT through the `surge-ping` crate: interval mode (`ping -i`, 1 s by
//! default) and flood mode (`ping -f`), a count, a timeout per request and a payload
//! size, optionally from inside a named network namespace.
//!
//! Sockets: a raw ICMP socket needs CAP_NET_RAW (root); a datagram ICMP socket ("ping
//! socket") needs the process's group inside `net.ipv4.ping_group_range` (a
//! per-namespace sysctl, `1 0` = nobody by default). [`IcmpSocket::Auto`] tries the
//! datagram socket first and falls back to the raw one, as iputils does; when neither
//! opens, [`ProbeError::IcmpPermission`] names both missing privileges.
//!
//! RTTs run from just before the echo request is built and sent to the moment
//! surge-ping's receive task read the reply (see `timed_ping` for why surge-ping's own
//! figure, which starts after `sendto()` returned, is not used alone). Replies that arrive after `timeout` count as lost; ICMP errors
//! (unreachable, time exceeded) count as errors, as iputils' `+N errors`.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use socket2::{Domain, Protocol, Socket, Type};
use surge_ping::{Client, Config, ICMP, IcmpPacket, PingIdentifier, PingSequence, SurgeError};

use crate::error::{ProbeError, io_reason};
use crate::netns::maybe_in_netns;
use crate::report::{ProbeKind, ProbeReport};
use crate::schedule::{Decision, Pacing, next_send};
use crate::stats::RttStats;

/// iputils' default payload (`-s 56`: 64-byte ICMP packets).
pub const DEFAULT_PAYLOAD: usize = 56;
/// The largest ICMPv4 echo payload (65535 - 20 IP - 8 ICMP).
pub const MAX_PAYLOAD_V4: usize = 65_507;
/// The largest ICMPv6 echo payload (65535 - 8 ICMP; the IPv6 header is not counted).
pub const MAX_PAYLOAD_V6: usize = 65_527;
/// Default wait for each reply (iputils' `MAXWAIT` linger).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Which kind of ICMP socket to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IcmpSocket {
    /// Datagram if `ping_group_range` allows it, else raw (as iputils).
    #[default]
    Auto,
    /// `SOCK_RAW`: needs CAP_NET_RAW.
    Raw,
    /// `SOCK_DGRAM` + `IPPROTO_ICMP`: needs the group in `net.ipv4.ping_group_range`.
    Datagram,
}

/// What to ping and how.
#[derive(Debug, Clone)]
pub struct IcmpOptions {
    pub target: IpAddr,
    /// Echo requests to send (at least 1).
    pub count: u64,
    /// Interval mode (default 1 s) or flood.
    pub pacing: Pacing,
    /// How long each request waits for its reply before it counts as lost.
    pub timeout: Duration,
    /// Payload bytes after the 8-byte ICMP header (filled 0, 1, 2, ... like iputils).
    pub payload_size: usize,
    pub socket: IcmpSocket,
    /// Ping from inside this network namespace (`/var/run/netns/NAME`, or a path).
    pub netns: Option<String>,
}

impl IcmpOptions {
    /// `count` pings of `target`, one a second, 56-byte payload, 10 s timeout.
    pub fn new(target: IpAddr, count: u64) -> Self {
        IcmpOptions {
            target,
            count,
            pacing: Pacing::default(),
            timeout: DEFAULT_TIMEOUT,
            payload_size: DEFAULT_PAYLOAD,
            socket: IcmpSocket::Auto,
            netns: None,
        }
    }

    /// Checks the options without opening anything.
    pub fn validate(&self) -> Result<(), ProbeError> {
        let bad = |m: String| Err(ProbeError::InvalidOptions(m));
        if self.count == 0 {
            return bad("count must be at least 1".into());
        }
        if self.timeout.is_zero() {
            return bad("timeout must be positive".into());
        }
        if self.pacing == Pacing::Interval(Duration::ZERO) {
            return bad("an ICMP interval must be positive (flood mode is Pacing::Flood)".into());
        }
        let max = match self.target {
            IpAddr::V4(_) => MAX_PAYLOAD_V4,
            IpAddr::V6(_) => MAX_PAYLOAD_V6,
        };
        if self.payload_size > max {
            return bad(format!(
                "payload size {} is over the maximum of {max} bytes",
                self.payload_size
            ));
        }
        Ok(())
    }
}

/// Pings as `opts` says and reports iputils' statistics and HDR percentiles.
pub async fn ping(opts: &IcmpOptions) -> Result<ProbeReport, ProbeError> {
    opts.validate()?;
    let o = opts.clone();
    maybe_in_netns(opts.netns.as_deref(), move || async move { run(&o).await }).await
}

async fn run(o: &IcmpOptions) -> Result<ProbeReport, ProbeError> {
    let client = open_client(o.target, o.socket)?;
    let ident = next_ident();
    let payload: Arc<[u8]> = (0..o.payload_size).map(|i| i as u8).collect();
    let mut stats = RttStats::new();
    let mut in_flight = FuturesUnordered::new();
    let mut seq: u16 = 0;
    let mut sent = 0u64;
    let mut first_send: Option<Instant> = None;
    let mut last_send: Option<Instant> = None;

    while sent < o.count {
        let now = Instant::now();
        let since = last_send.map(|t| now.saturating_duration_since(t));
        match next_send(o.pacing, since, in_flight.len()) {
            Decision::SendNow => {
                let mut pinger = client.pinger(o.target, ident).await;
                pinger.timeout(o.timeout);
                let payload = Arc::clone(&payload);
                let s = PingSequence(seq);
                in_flight.push(async move { timed_ping(&mut pinger, s, &payload).await });
                seq = seq.wrapping_add(1);
                sent += 1;
                stats.on_send();
                first_send.get_or_insert(now);
                last_send = Some(now);
                // Poll the new request once so that it goes out now, and take in any
                // replies that are already there.
                while let Some(Some(result)) = in_flight.next().now_or_never() {
                    record(&mut stats, result);
                }
            }
            Decision::Wait(wait) => {
                tokio::select! {
                    Some(result) = in_flight.next(), if !in_flight.is_empty() => {
                        record(&mut stats, result);
                    }
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
    while let Some(result) = in_flight.next().await {
        record(&mut stats, result);
    }
    let elapsed = match (first_send, last_send) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => Duration::ZERO,
    };
    Ok(ProbeReport::from_stats(
        ProbeKind::Icmp,
        o.target.to_string(),
        &stats,
        elapsed,
    ))
}

/// One echo request, its RTT taken from just before the request is built and sent.
///
/// surge-ping's own figure starts once `sendto()` has returned; on a veth pair or
/// loopback the whole round trip can happen inside that `sendto()` (the reply is queued
/// before it returns), so its figure alone would leave most of the RTT out. The first
/// poll of `Pinger::ping` builds and sends the request (and ends just after surge-ping
/// takes its send time), so its duration is added back.
async fn timed_ping(
    pinger: &mut surge_ping::Pinger,
    seq: PingSequence,
    payload: &[u8],
) -> Result<(IcmpPacket, Duration), SurgeError> {
    let mut ping = std::pin::pin!(pinger.ping(seq, payload));
    let start = Instant::now();
    let mut send_took = None;
    let (packet, after_send) = std::future::poll_fn(|cx| {
        let poll = ping.as_mut().poll(cx);
        send_took.get_or_insert_with(|| start.elapsed());
        poll
    })
    .await?;
    Ok((packet, send_took.unwrap_or_default() + after_send))
}

fn record(stats: &mut RttStats, result: Result<(IcmpPacket, Duration), SurgeError>) {
    match result {
        Ok((packet, rtt)) => match icmp_error(&packet) {
            None => stats.on_reply(rtt),
            Some(reason) => stats.on_error(&reason),
        },
        Err(SurgeError::Timeout { .. }) => stats.on_loss("timeout"),
        Err(SurgeError::IOError(e)) => stats.on_error(&io_reason(&e)),
        Err(e) => stats.on_error(&e.to_string()),
    }
}

/// `None` for an echo reply, else what the ICMP error says.
fn icmp_error(packet: &IcmpPacket) -> Option<String> {
    match packet {
        IcmpPacket::V4(p) => {
            let (t, c) = (p.get_icmp_type().0, p.get_icmp_code().0);
            (t != 0).then(|| icmpv4_reason(t, c))
        }
        IcmpPacket::V6(p) => {
            let (t, c) = (p.get_icmpv6_type().0, p.get_icmpv6_code().0);
            (t != 129).then(|| icmpv6_reason(t, c))
        }
    }
}

/// iputils-like words for an ICMPv4 error.
pub fn icmpv4_reason(icmp_type: u8, code: u8) -> String {
    match (icmp_type, code) {
        (3, 0) => "network unreachable".into(),
        (3, 1) => "host unreachable".into(),
        (3, 2) => "protocol unreachable".into(),
        (3, 3) => "port unreachable".into(),
        (3, 4) => "frag needed".into(),
        (3, 9 | 10 | 13) => "administratively prohibited".into(),
        (3, _) => "destination unreachable".into(),
        (11, _) => "time to live exceeded".into(),
        (12, _) => "parameter problem".into(),
        (5, _) => "redirect".into(),
        (4, _) => "source quench".into(),
        (t, c) => format!("icmp type {t} code {c}"),
    }
}

/// Words for an ICMPv6 error.
pub fn icmpv6_reason(icmp_type: u8, code: u8) -> String {
    match (icmp_type, code) {
        (1, 0) => "no route".into(),
        (1, 1) => "administratively prohibited".into(),
        (1, 3) => "address unreachable".into(),
        (1, 4) => "port unreachable".into(),
        (1, _) => "destination unreachable".into(),
        (2, _) => "packet too big".into(),
        (3, _) => "time exceeded".into(),
        (4, _) => "parameter problem".into(),
        (t, c) => format!("icmpv6 type {t} code {c}"),
    }
}

/// An identifier per probe run (raw sockets only; the kernel picks it for datagram
/// sockets), so that concurrent runs in one namespace do not take each other's replies.
fn next_ident() -> PingIdentifier {
    static COUNTER: AtomicU16 = AtomicU16::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    PingIdentifier((std::process::id() as u16).wrapping_add(n.wrapping_mul(0x9e37)))
}

const RAW_HINT: &str =
    "a raw ICMP socket needs CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep` on the binary)";

fn dgram_hint() -> String {
    let gid = nix::unistd::getegid();
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unreadable".to_string());
    format!(
        "a datagram ICMP socket needs the process's group (gid {gid}) inside \
         net.ipv4.ping_group_range (now \"{range}\" in this network namespace): \
         `sysctl -w net.ipv4.ping_group_range=\"{gid} {gid}\"`"
    )
}

fn open_error(socket: &'static str, e: io::Error, hint: impl FnOnce() -> String) -> ProbeError {
    if e.kind() == io::ErrorKind::PermissionDenied {
        ProbeError::IcmpPermission {
            socket,
            source: e,
            hint: hint(),
        }
    } else {
        ProbeError::Io {
            what: format!("opening an ICMP {socket} socket"),
            source: e,
        }
    }
}

/// Opens the surge-ping client on the socket type asked for. The type is tried here
/// first (surge-ping would silently fall back to the other one) so that a missing
/// privilege is reported as such.
fn open_client(target: IpAddr, want: IcmpSocket) -> Result<Client, ProbeError> {
    let (domain, proto, kind) = match target {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4, ICMP::V4),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6, ICMP::V6),
    };
    let try_open = |ty: Type| Socket::new(domain, ty, Some(proto)).map(drop);
    let ty = match want {
        IcmpSocket::Raw => {
            try_open(Type::RAW).map_err(|e| open_error("raw", e, || RAW_HINT.to_string()))?;
            Type::RAW
        }
        IcmpSocket::Datagram => {
            try_open(Type::DGRAM).map_err(|e| open_error("datagram", e, dgram_hint))?;
            Type::DGRAM
        }
        IcmpSocket::Auto => match try_open(Type::DGRAM) {
            Ok(()) => Type::DGRAM,
            Err(dgram) => match try_open(Type::RAW) {
                Ok(()) => Type::RAW,
                Err(raw) if dgram.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(open_error("raw or datagram", raw, || {
                        format!("{RAW_HINT}; {}", dgram_hint())
                    }));
                }
                Err(_) => return Err(open_error("datagram", dgram, dgram_hint)),
            },
        },
    };
    let config = Config::builder().kind(kind).sock_type_hint(ty).build();
    let client = Client::new(&config).map_err(ProbeError::io("opening an ICMP socket"))?;
    if client.get_socket().get_type() != ty {
        return Err(ProbeError::Io {
            what: "opening an ICMP socket".into(),
            source: io::Error::other(format!(
                "surge-ping opened a {:?} socket instead of {ty:?}",
                client.get_socket().get_type()
            )),
        });
    }
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn options_are_checked() {
        let t = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!(IcmpOptions::new(t, 1).validate().is_ok());
        assert!(IcmpOptions::new(t, 0).validate().is_err());
        let mut o = IcmpOptions::new(t, 1);
        o.payload_size = MAX_PAYLOAD_V4 + 1;
        assert!(o.validate().unwrap_err().to_string().contains("65507"));
        let mut o = IcmpOptions::new(t, 1);
        o.pacing = Pacing::Interval(Duration::ZERO);
        assert!(o.validate().is_err());
        let mut o = IcmpOptions::new(t, 1);
        o.timeout = Duration::ZERO;
        assert!(o.validate().is_err());
        let o = IcmpOptions::new(t, 3);
        assert_eq!(o.pacing, Pacing::Interval(Duration::from_secs(1)));
        assert_eq!(o.payload_size, 56);
    }

    #[test]
    fn error_words() {
        assert_eq!(icmpv4_reason(3, 1), "host unreachable");
        assert_eq!(icmpv4_reason(11, 0), "time to live exceeded");
        assert_eq!(icmpv4_reason(42, 7), "icmp type 42 code 7");
        assert_eq!(icmpv6_reason(1, 3), "address unreachable");
    }

    #[test]
    fn idents_differ_between_runs() {
        assert_ne!(next_ident(), next_ident());
    }
}
