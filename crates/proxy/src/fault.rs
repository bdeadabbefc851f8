//! Deterministic fault injection: a [`Fault`] watches a connection's byte streams for a
//! [`FaultTrigger`] (at once, after a byte count, after the n-th occurrence of a pattern)
//! and then applies a [`FaultAction`] (reset, stall, blackhole, or lose the server's next
//! answer), at an exact byte offset.
//!
//! Triggers are evaluated where bytes are forwarded (written to the other side): a lane
//! about to write a chunk asks its [`Watch`] for the next [`Step`], writes exactly the bytes
//! before the trigger point, and then fires. With a delay line that is the writer, after
//! the delay, so events keep their order. One fault at most fires per connection: the
//! first trigger reached (in time; at the same byte, the first fault in the list).
//!
//! The spec grammar of `tsload proxy --fault` is [`Fault`]'s `FromStr` (see
//! [`FAULT_SPEC_HELP`]); its `Display` writes the canonical spec back.

mod spec;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

pub use spec::{FAULT_SPEC_HELP, FaultSpecError};

/// Which stream of a proxied connection a trigger watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// When a [`Fault`] fires on a connection it watches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FaultTrigger {
    /// As soon as the connection is accepted (before any byte is forwarded; the upstream
    /// is connected first, so that it sees the fault too).
    Immediately,
    /// Once `bytes` bytes of `stream` have been forwarded on this connection (the byte at
    /// offset `bytes` and later are never forwarded). `bytes: 0` fires at once, like
    /// [`FaultTrigger::Immediately`].
    AfterBytes {
        /// The stream counted.
        stream: Stream,
        /// Bytes forwarded before the fault fires.
        bytes: u64,
    },
    /// Once the `occurrence`-th (1-based) occurrence of `pattern` in `stream` on this
    /// connection has been forwarded in full (matches may straddle read chunks;
    /// occurrences are counted without overlap, as `str::matches` counts them).
    AfterPattern {
        /// The stream scanned.
        stream: Stream,
        /// The bytes looked for (not empty).
        pattern: Vec<u8>,
        /// Which occurrence fires (from 1).
        occurrence: u64,
    },
}

/// What a [`Fault`] does to the connection once its trigger is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultAction {
    /// Reset both sockets at once (SO_LINGER 0 -> RST), nothing more forwarded. Bytes
    /// already forwarded stay readable by the peers before their reset.
    Reset,
    /// Stop forwarding in both directions but keep both sockets open (reading stops, so
    /// TCP pushes back) until the client or the server closes (a FIN or a reset; a peer
    /// that had half-closed before the stall is not taken for gone), or the proxy shuts
    /// down; then both sockets are closed.
    Stall,
    /// Keep reading both sides and discard everything; sockets stay open until both peers
    /// have closed (or the proxy shuts down).
    Blackhole,
    /// Forward nothing more to the client; as soon as the first bytes of the server's
    /// answer arrive after the trigger (the server has answered: e.g. its reply to
    /// COMMIT), discard them and reset both sockets. This is "the commit reached the
    /// server, its answer was lost". (If the server closes first, reset the client.)
    /// Client-to-server bytes keep flowing until then (the rest of the triggering message
    /// included); server bytes that reached the proxy before the trigger are discarded
    /// without resetting.
    ResetOnReply,
}

/// A fault to inject: which connections it watches, its trigger and its action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fault {
    /// Only the `connection`-th accepted connection (0-based, in accept order, counting
    /// connections whose upstream could not be reached) is watched; `None` = every one,
    /// each with its own byte/occurrence counters.
    pub connection: Option<u64>,
    /// When it fires.
    pub trigger: FaultTrigger,
    /// What it does then.
    pub action: FaultAction,
    /// The fault fires at most this many times over the whole proxy (`None` = no limit).
    pub max_fires: Option<u64>,
}

impl Fault {
    /// A fault on every connection, without a limit on its fires.
    pub fn new(trigger: FaultTrigger, action: FaultAction) -> Self {
        Fault {
            connection: None,
            trigger,
            action,
            max_fires: None,
        }
    }

    /// What is wrong with this fault, if anything.
    pub(crate) fn problem(&self) -> Option<String> {
        if let FaultTrigger::AfterPattern {
            pattern,
            occurrence,
            ..
        } = &self.trigger
        {
            if pattern.is_empty() {
                return Some("the pattern is empty: it would match everywhere".to_owned());
            }
            if *occurrence == 0 {
                return Some("occurrence 0: occurrences count from 1".to_owned());
            }
        }
        if self.max_fires == Some(0) {
            return Some("max_fires 0 would never fire; leave it unset for no limit".to_owned());
        }
        None
    }

    /// Whether the trigger is reached before any byte is forwarded.
    fn is_immediate(&self) -> bool {
        matches!(
            self.trigger,
            FaultTrigger::Immediately | FaultTrigger::AfterBytes { bytes: 0, .. }
        )
    }
}

// ---------------------------------------------------------------------------------------
// The machinery.

/// A configured fault, ready to watch connections: the pattern's KMP table and the fires
/// so far (over the whole proxy).
#[derive(Debug)]
pub(crate) struct Armed {
    fault: Fault,
    /// `fail[i]`: the length of the longest proper prefix of `pattern[..=i]` that is also
    /// its suffix (empty unless the trigger is a pattern).
    fail: Vec<usize>,
    fires: AtomicU64,
}

impl Armed {
    pub(crate) fn new(fault: Fault) -> Self {
        let fail = match &fault.trigger {
            FaultTrigger::AfterPattern { pattern, .. } => failure_table(pattern),
            _ => Vec::new(),
        };
        Armed {
            fault,
            fail,
            fires: AtomicU64::new(0),
        }
    }

    /// How often it fired.
    pub(crate) fn fires(&self) -> u64 {
        self.fires.load(Ordering::Relaxed)
    }

    /// Whether it watches the `connection`-th connection (and may still fire).
    fn watches(&self, connection: u64) -> bool {
        self.fault.connection.is_none_or(|c| c == connection)
            && self.fault.max_fires.is_none_or(|max| self.fires() < max)
    }

    /// Counts one fire, unless that would go over `max_fires`.
    fn claim(&self, total: &AtomicU64) -> bool {
        let max = self.fault.max_fires.unwrap_or(u64::MAX);
        let claimed = self
            .fires
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok();
        if claimed {
            total.fetch_add(1, Ordering::Relaxed);
        }
        claimed
    }
}

fn failure_table(pattern: &[u8]) -> Vec<usize> {
    let mut fail = vec![0; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = fail[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        fail[i] = k;
    }
    fail
}

/// One KMP step: the matched prefix length after byte `b` (`m < pattern.len()`).
fn kmp_step(pattern: &[u8], fail: &[usize], mut m: usize, b: u8) -> usize {
    while m > 0 && pattern[m] != b {
        m = fail[m - 1];
    }
    if pattern[m] == b { m + 1 } else { 0 }
}

/// How a connection starts.
pub(crate) enum Plan<'a> {
    /// No fault watches it: the plain lanes.
    Plain,
    /// A fault fired at once with this action (never [`FaultAction::ResetOnReply`]).
    Act(FaultAction),
    /// Watch both lanes (with `ResetOnReply` already fired when `reply_fired`).
    Watch {
        reply_fired: bool,
        up: Vec<Watcher<'a>>,
        down: Vec<Watcher<'a>>,
    },
}

/// The plan for the `connection`-th connection; immediate triggers are claimed here.
pub(crate) fn plan<'a>(faults: &'a [Armed], connection: u64, total: &AtomicU64) -> Plan<'a> {
    let mut watching = faults.iter().filter(|f| f.watches(connection)).peekable();
    if watching.peek().is_none() {
        return Plan::Plain;
    }
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let mut reply_fired = false;
    for armed in watching {
        if armed.fault.is_immediate() {
            if !reply_fired && armed.claim(total) {
                match armed.fault.action {
                    FaultAction::ResetOnReply => reply_fired = true,
                    action => return Plan::Act(action),
                }
            }
            continue;
        }
        let (stream, progress) = match &armed.fault.trigger {
            FaultTrigger::AfterBytes { stream, bytes } => {
                (*stream, Progress::Bytes { left: *bytes })
            }
            FaultTrigger::AfterPattern { stream, .. } => (
                *stream,
                Progress::Pattern {
                    matched: 0,
                    seen: 0,
                },
            ),
            FaultTrigger::Immediately => continue,
        };
        let watcher = Watcher::new(armed, progress);
        match stream {
            Stream::Up => up.push(watcher),
            Stream::Down => down.push(watcher),
        }
    }
    if reply_fired {
        up.clear();
        down.clear();
    }
    Plan::Watch {
        reply_fired,
        up,
        down,
    }
}

/// One fault watching one stream of one connection.
#[derive(Debug)]
pub(crate) struct Watcher<'a> {
    armed: &'a Armed,
    progress: Progress,
    /// The progress after the chunk being looked at, if the trigger is not in it.
    after: Progress,
}

impl<'a> Watcher<'a> {
    fn new(armed: &'a Armed, progress: Progress) -> Self {
        Watcher {
            armed,
            progress,
            after: progress,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    Bytes { left: u64 },
    Pattern { matched: usize, seen: u64 },
}

/// Where a scan of a chunk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// The trigger is reached once this many bytes of the chunk are forwarded.
    Fire(usize),
    /// Not in this chunk: the progress after all of it.
    End(Progress),
}

impl Watcher<'_> {
    /// Looks at the next chunk, which is not forwarded yet.
    fn scan(&self, data: &[u8]) -> Scan {
        match self.progress {
            Progress::Bytes { left } => match usize::try_from(left) {
                Ok(left) if left <= data.len() => Scan::Fire(left),
                _ => Scan::End(Progress::Bytes {
                    left: left - data.len() as u64,
                }),
            },
            Progress::Pattern { matched, seen } => {
                let FaultTrigger::AfterPattern {
                    pattern,
                    occurrence,
                    ..
                } = &self.armed.fault.trigger
                else {
                    return Scan::End(self.progress);
                };
                scan_pattern(
                    pattern,
                    &self.armed.fail,
                    *occurrence,
                    (matched, seen),
                    data,
                )
            }
        }
    }
}

/// KMP over `data` from `matched` bytes of `pattern` matched and `seen` occurrences
/// counted (without overlap); between matches it skips to the pattern's first byte a word
/// at a time.
fn scan_pattern(
    pattern: &[u8],
    fail: &[usize],
    occurrence: u64,
    (mut matched, mut seen): (usize, u64),
    data: &[u8],
) -> Scan {
    let mut i = 0;
    while i < data.len() {
        if matched == 0 {
            match find_byte(&data[i..], pattern[0]) {
                Some(k) => i += k,
                None => break,
            }
        }
        matched = kmp_step(pattern, fail, matched, data[i]);
        i += 1;
        if matched == pattern.len() {
            matched = 0;
            // Below `occurrence` until now, so no overflow.
            seen += 1;
            if seen == occurrence {
                return Scan::Fire(i);
            }
        }
    }
    Scan::End(Progress::Pattern { matched, seen })
}

/// The index of the first `byte` in `hay`, eight bytes at a time (the lowest byte that the
/// zero-byte test flags is always a true match).
fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let splat = LO * u64::from(byte);
    let mut words = hay.chunks_exact(8);
    let mut base = 0;
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let v = u64::from_le_bytes(bytes) ^ splat;
        let zero = v.wrapping_sub(LO) & !v & HI;
        if zero != 0 {
            return Some(base + (zero.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|k| base + k)
}

/// What both lanes of a watched connection share: the action of the fault that fired
/// (one at most per connection), a wake-up for a lane writing to the client when
/// [`FaultAction::ResetOnReply`] fires, and which peers have closed their side.
#[derive(Debug, Default)]
pub(crate) struct Ctl {
    fired: AtomicU8,
    notify: Notify,
    /// The client's EOF was read (by the up lane), the server's (by the down lane).
    eof: [AtomicBool; 2],
}

impl Ctl {
    fn code(action: FaultAction) -> u8 {
        match action {
            FaultAction::Reset => 1,
            FaultAction::Stall => 2,
            FaultAction::Blackhole => 3,
            FaultAction::ResetOnReply => 4,
        }
    }

    /// Records that a fault with `action` fired on this connection.
    pub(crate) fn fire(&self, action: FaultAction) {
        self.fired.store(Self::code(action), Ordering::Relaxed);
        if action == FaultAction::ResetOnReply {
            self.notify.notify_waiters();
        }
    }

    /// The action of the fault that fired on this connection, if one did.
    pub(crate) fn fired(&self) -> Option<FaultAction> {
        match self.fired.load(Ordering::Relaxed) {
            1 => Some(FaultAction::Reset),
            2 => Some(FaultAction::Stall),
            3 => Some(FaultAction::Blackhole),
            4 => Some(FaultAction::ResetOnReply),
            _ => None,
        }
    }

    /// Completes once `ResetOnReply` fires (after this future was first polled).
    pub(crate) fn reply_fired(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// Records that the lane of `stream` read its sender's EOF.
    pub(crate) fn saw_eof(&self, stream: Stream) {
        self.eof[stream as usize].store(true, Ordering::Relaxed);
    }

    /// Whether the sender of `stream` had closed its side.
    fn eof(&self, stream: Stream) -> bool {
        self.eof[stream as usize].load(Ordering::Relaxed)
    }
}

/// What a lane does next with the bytes it is about to forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Write this many bytes; no trigger in them.
    Forward(usize),
    /// Write this many bytes, then the fault with this action has fired (for
    /// `ResetOnReply`, drain the server's socket before writing: what is in it arrived
    /// before the trigger).
    Fire(usize, FaultAction),
    /// Forward nothing (`ResetOnReply` fired: nothing more goes to the client).
    Discard,
    /// Another lane's fault fired and is about to take the connection over: wait.
    Park,
}

/// The faults watching one lane (one stream) of a connection.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    stream: Stream,
    ctl: &'a Ctl,
    watchers: Vec<Watcher<'a>>,
    total: &'a AtomicU64,
}

impl<'a> Watch<'a> {
    pub(crate) fn new(
        stream: Stream,
        ctl: &'a Ctl,
        watchers: Vec<Watcher<'a>>,
        total: &'a AtomicU64,
    ) -> Self {
        Watch {
            stream,
            ctl,
            watchers,
            total,
        }
    }

    pub(crate) fn stream(&self) -> Stream {
        self.stream
    }

    pub(crate) fn ctl(&self) -> &'a Ctl {
        self.ctl
    }

    /// Whether whatever this lane reads now is the server's answer after
    /// `ResetOnReply` fired (the server's socket was drained when it fired).
    pub(crate) fn reply_due(&self) -> bool {
        reply_due(self.stream, self.ctl)
    }

    /// The next step with `data` (not empty), the bytes this lane is about to forward.
    /// A `Forward` or `Fire` takes the bytes it names as forwarded.
    pub(crate) fn step(&mut self, data: &[u8]) -> Step {
        match self.ctl.fired() {
            Some(FaultAction::ResetOnReply) => {
                return match self.stream {
                    Stream::Up => Step::Forward(data.len()),
                    Stream::Down => Step::Discard,
                };
            }
            Some(_) => return Step::Park,
            None => {}
        }
        loop {
            // The earliest trigger in `data`; at the same byte, the first fault listed.
            let mut next: Option<(usize, usize)> = None;
            for (i, w) in self.watchers.iter_mut().enumerate() {
                match w.scan(data) {
                    Scan::Fire(at) => {
                        if next.is_none_or(|(first, _)| at < first) {
                            next = Some((at, i));
                        }
                    }
                    Scan::End(after) => w.after = after,
                }
            }
            let Some((at, i)) = next else {
                for w in &mut self.watchers {
                    w.progress = w.after;
                }
                return Step::Forward(data.len());
            };
            let armed = self.watchers[i].armed;
            if armed.claim(self.total) {
                // One fault per connection: the others stop watching.
                self.watchers.clear();
                self.ctl.fire(armed.fault.action);
                return Step::Fire(at, armed.fault.action);
            }
            // Fired its last allowed time on another connection meanwhile.
            self.watchers.remove(i);
        }
    }
}

/// Whether a read by the lane of `stream` now is the server's answer after
/// `ResetOnReply` fired.
pub(crate) fn reply_due(stream: Stream, ctl: &Ctl) -> bool {
    stream == Stream::Down && ctl.fired() == Some(FaultAction::ResetOnReply)
}

/// Reads and discards whatever the server's socket holds now, without waiting (what
/// arrived before a `ResetOnReply` trigger is not the answer to it). Reads the socket
/// directly: tokio's readiness may not know yet of bytes that have arrived.
pub(crate) fn drain(stream: &TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match read_now(stream, &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[cfg(target_os = "linux")]
fn read_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    use nix::sys::socket::{MsgFlags, recv};
    use std::os::fd::AsRawFd;
    Ok(recv(stream.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT)?)
}

#[cfg(not(target_os = "linux"))]
fn read_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    stream.try_read(buf)
}

/// Carries out a fired fault's action on a connection whose lanes have stopped (`ctl`:
/// what they saw).
pub(crate) async fn act(action: FaultAction, client: TcpStream, server: TcpStream, ctl: &Ctl) {
    match action {
        FaultAction::Reset | FaultAction::ResetOnReply => {
            let _ = client.set_zero_linger();
            let _ = server.set_zero_linger();
        }
        FaultAction::Stall => {
            // A peer that had half-closed before the stall is not taken for gone: it may
            // be waiting for its answer, which is what stalls.
            tokio::select! {
                _ = closed(&client), if !ctl.eof(Stream::Up) => {}
                _ = closed(&server), if !ctl.eof(Stream::Down) => {}
                else => std::future::pending::<()>().await,
            }
        }
        FaultAction::Blackhole => {
            tokio::join!(swallow(&client), swallow(&server));
        }
    }
}

/// Completes when the peer of `stream` has closed (a FIN or a reset), without reading:
/// waiting data is left in the socket (TCP pushes back), each arrival only clears
/// tokio's readiness so that the next event is awaited.
async fn closed(stream: &TcpStream) {
    loop {
        match stream.ready(Interest::READABLE).await {
            Ok(ready) if !ready.is_read_closed() => {
                let _ = stream.try_io(Interest::READABLE, || {
                    Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock))
                });
            }
            _ => return,
        }
    }
}

/// Reads `stream` until its EOF or an error, discarding everything.
async fn swallow(stream: &TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        match stream.try_read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests;
