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

use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

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
// The spec grammar.

/// The `--fault SPEC` grammar, for command-line help.
pub const FAULT_SPEC_HELP: &str = "\
A fault to inject, repeatable: ACTION[:OPTION,OPTION...]
  ACTION   reset | stall | blackhole | reset_on_reply
           (or ACTION_after_bytes=N / ACTION_after_pattern=P as shorthand, e.g.
           reset_after_bytes=1000)
  OPTION   after_bytes=N              fire once N bytes of the stream were forwarded
           after_pattern=TEXT|hex:HEX fire once the pattern was forwarded in full
           occurrence=K               ... its K-th occurrence (default 1)
           stream=up|down             the stream watched (default up: client to server)
           immediately                fire on accept (the default with no trigger)
           connection=K               only the K-th accepted connection (from 0)
           max_fires=N                fire at most N times in all
  reset: reset both sockets; stall: stop forwarding, keep both open; blackhole: read
  and discard both ways; reset_on_reply: forward nothing more to the client and reset
  both once the server's next answer arrives (the request reached the server, the
  answer was lost). Text patterns cannot hold ',': use hex:.
  e.g. reset:after_bytes=1000,stream=down  stall:after_bytes=4096  blackhole
       reset_on_reply:after_pattern=COMMIT,occurrence=3,connection=0";

/// Why a fault spec does not parse: names the part that is wrong and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FaultSpecError(String);

const ACTIONS: &str = "reset, stall, blackhole, reset_on_reply (or ACTION_after_bytes=N, \
                       ACTION_after_pattern=P)";
const OPTIONS: &str = "after_bytes=N, after_pattern=TEXT|hex:HEX, occurrence=K, \
                       stream=up|down, immediately, connection=K, max_fires=N";

/// Keywords are matched with `-` and `_` alike.
fn keyword(s: &str) -> String {
    s.replace('-', "_")
}

fn parse_action(word: &str) -> Result<FaultAction, FaultSpecError> {
    match keyword(word).as_str() {
        "reset" => Ok(FaultAction::Reset),
        "stall" => Ok(FaultAction::Stall),
        "blackhole" => Ok(FaultAction::Blackhole),
        "reset_on_reply" => Ok(FaultAction::ResetOnReply),
        "" => Err(FaultSpecError(format!(
            "the action is missing; allowed: {ACTIONS}"
        ))),
        _ => Err(FaultSpecError(format!(
            "`{word}` is not a fault action; allowed: {ACTIONS}"
        ))),
    }
}

fn action_name(action: FaultAction) -> &'static str {
    match action {
        FaultAction::Reset => "reset",
        FaultAction::Stall => "stall",
        FaultAction::Blackhole => "blackhole",
        FaultAction::ResetOnReply => "reset_on_reply",
    }
}

fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

/// The options of a spec, each at most once.
#[derive(Default)]
struct Options {
    after_bytes: Option<u64>,
    after_pattern: Option<Vec<u8>>,
    immediately: bool,
    stream: Option<Stream>,
    occurrence: Option<u64>,
    connection: Option<u64>,
    max_fires: Option<u64>,
    seen: Vec<String>,
}

impl Options {
    fn set(&mut self, option: &str) -> Result<(), FaultSpecError> {
        let fail = |why: String| Err(FaultSpecError(format!("`{option}`: {why}")));
        if option.is_empty() {
            return Err(FaultSpecError(format!(
                "an option is empty (a stray ',' or ':'?); allowed: {OPTIONS}"
            )));
        }
        let (key, value) = match option.split_once('=') {
            Some((k, v)) => (keyword(k), Some(v)),
            None => (keyword(option), None),
        };
        if self.seen.contains(&key) {
            return fail(format!("`{key}` is given twice"));
        }
        let number = |what: &str| -> Result<u64, FaultSpecError> {
            match value {
                None => Err(FaultSpecError(format!(
                    "`{key}` needs a value, e.g. {key}=1"
                ))),
                Some(v) => v.parse::<u64>().map_err(|_| {
                    FaultSpecError(format!(
                        "`{option}`: `{v}` is not {what} (a whole number from 0 to {})",
                        u64::MAX
                    ))
                }),
            }
        };
        match key.as_str() {
            "after_bytes" => self.after_bytes = Some(number("a byte count")?),
            "after_pattern" => {
                let Some(v) = value else {
                    return fail("needs a pattern, e.g. after_pattern=COMMIT or hex:00ff".into());
                };
                let pattern = match v.strip_prefix("hex:") {
                    Some(hex) => match parse_hex(hex) {
                        Some(bytes) => bytes,
                        None => {
                            return fail(format!("`{hex}` is not hex (pairs of digits 0-9, a-f)"));
                        }
                    },
                    None => v.as_bytes().to_vec(),
                };
                if pattern.is_empty() {
                    return fail("the pattern is empty: it would match everywhere".into());
                }
                self.after_pattern = Some(pattern);
            }
            "immediately" => {
                if value.is_some() {
                    return fail("`immediately` takes no value".into());
                }
                self.immediately = true;
            }
            "stream" => {
                self.stream = Some(match value.map(keyword).as_deref() {
                    Some("up") => Stream::Up,
                    Some("down") => Stream::Down,
                    _ => return fail("allowed: stream=up (client to server), stream=down".into()),
                })
            }
            "occurrence" => {
                let k = number("an occurrence")?;
                if k == 0 {
                    return fail("occurrences count from 1".into());
                }
                self.occurrence = Some(k);
            }
            "connection" => self.connection = Some(number("a connection number")?),
            "max_fires" => {
                let n = number("a count")?;
                if n == 0 {
                    return fail("0 would never fire; leave max_fires out for no limit".into());
                }
                self.max_fires = Some(n);
            }
            _ => {
                return Err(FaultSpecError(format!(
                    "`{option}` is not an option; allowed: {OPTIONS}"
                )));
            }
        }
        self.seen.push(key);
        Ok(())
    }

    fn into_fault(self, action: FaultAction) -> Result<Fault, FaultSpecError> {
        let triggers = usize::from(self.after_bytes.is_some())
            + usize::from(self.after_pattern.is_some())
            + usize::from(self.immediately);
        if triggers > 1 {
            return Err(FaultSpecError(
                "give one trigger only: after_bytes=N, after_pattern=P or immediately".into(),
            ));
        }
        if self.after_pattern.is_none()
            && let Some(k) = self.occurrence
        {
            return Err(FaultSpecError(format!(
                "`occurrence={k}` needs after_pattern=P"
            )));
        }
        let stream = self.stream.unwrap_or(Stream::Up);
        let trigger = if let Some(bytes) = self.after_bytes {
            FaultTrigger::AfterBytes { stream, bytes }
        } else if let Some(pattern) = self.after_pattern {
            FaultTrigger::AfterPattern {
                stream,
                pattern,
                occurrence: self.occurrence.unwrap_or(1),
            }
        } else {
            if let Some(s) = self.stream {
                return Err(FaultSpecError(format!(
                    "`stream={}` needs after_bytes=N or after_pattern=P",
                    stream_name(s)
                )));
            }
            FaultTrigger::Immediately
        };
        Ok(Fault {
            connection: self.connection,
            trigger,
            action,
            max_fires: self.max_fires,
        })
    }
}

fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Up => "up",
        Stream::Down => "down",
    }
}

impl FromStr for Fault {
    type Err = FaultSpecError;

    /// Parses `ACTION[:OPTION,...]` or `ACTION_after_bytes=N[,OPTION...]` (see
    /// [`FAULT_SPEC_HELP`]).
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        if spec.is_empty() {
            return Err(FaultSpecError(
                "the fault spec is empty; write e.g. reset:after_bytes=1000,stream=down".into(),
            ));
        }
        let mut options = Options::default();
        let head_end = spec.find([':', ',', '=']).unwrap_or(spec.len());
        let (action, rest) = if spec[head_end..].starts_with('=') {
            // The shorthand ACTION_after_bytes=N / ACTION_after_pattern=P: its value runs
            // to the first ','.
            let end = spec.find(',').unwrap_or(spec.len());
            let key = keyword(&spec[..head_end]);
            let (action, trigger) = if let Some(a) = key.strip_suffix("_after_bytes") {
                (a, "after_bytes")
            } else if let Some(a) = key.strip_suffix("_after_pattern") {
                (a, "after_pattern")
            } else {
                return Err(FaultSpecError(format!(
                    "`{}` is not a fault action; allowed: {ACTIONS}",
                    &spec[..end]
                )));
            };
            let action = parse_action(action)?;
            options.set(&format!("{trigger}{}", &spec[head_end..end]))?;
            (action, spec.get(end + 1..))
        } else {
            let action = parse_action(&spec[..head_end])?;
            (action, spec.get(head_end + 1..))
        };
        if let Some(rest) = rest {
            for option in rest.split(',') {
                options.set(option)?;
            }
        }
        options.into_fault(action)
    }
}

/// Whether a pattern can be written as text in a spec (and read back the same).
fn is_text(pattern: &[u8]) -> bool {
    !pattern.is_empty()
        && !pattern.starts_with(b"hex:")
        && pattern
            .iter()
            .all(|&b| (0x20..=0x7e).contains(&b) && b != b',')
}

impl fmt::Display for Fault {
    /// The canonical spec, which [`Fault::from_str`] reads back to the same fault.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(action_name(self.action))?;
        let mut options = Vec::new();
        match &self.trigger {
            FaultTrigger::Immediately => {}
            FaultTrigger::AfterBytes { stream, bytes } => {
                options.push(format!("after_bytes={bytes}"));
                options.push(format!("stream={}", stream_name(*stream)));
            }
            FaultTrigger::AfterPattern {
                stream,
                pattern,
                occurrence,
            } => {
                if is_text(pattern) {
                    // Checked above: printable ASCII.
                    options.push(format!(
                        "after_pattern={}",
                        String::from_utf8_lossy(pattern)
                    ));
                } else {
                    let hex: String = pattern.iter().map(|b| format!("{b:02x}")).collect();
                    options.push(format!("after_pattern=hex:{hex}"));
                }
                options.push(format!("stream={}", stream_name(*stream)));
                if *occurrence != 1 {
                    options.push(format!("occurrence={occurrence}"));
                }
            }
        }
        if let Some(c) = self.connection {
            options.push(format!("connection={c}"));
        }
        if let Some(n) = self.max_fires {
            options.push(format!("max_fires={n}"));
        }
        if !options.is_empty() {
            write!(f, ":{}", options.join(","))?;
        }
        Ok(())
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
mod tests {
    use super::*;

    fn parse(spec: &str) -> Fault {
        spec.parse()
            .unwrap_or_else(|e| panic!("`{spec}` does not parse: {e}"))
    }

    fn error(spec: &str) -> String {
        match spec.parse::<Fault>() {
            Ok(f) => panic!("`{spec}` parsed as {f:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_grammar() {
        assert_eq!(
            parse("reset"),
            Fault::new(FaultTrigger::Immediately, FaultAction::Reset)
        );
        assert_eq!(
            parse("blackhole:immediately"),
            Fault::new(FaultTrigger::Immediately, FaultAction::Blackhole)
        );
        assert_eq!(
            parse("reset:after_bytes=1000,stream=down"),
            Fault::new(
                FaultTrigger::AfterBytes {
                    stream: Stream::Down,
                    bytes: 1000
                },
                FaultAction::Reset
            )
        );
        assert_eq!(
            parse("stall:after_bytes=4096"),
            Fault::new(
                FaultTrigger::AfterBytes {
                    stream: Stream::Up,
                    bytes: 4096
                },
                FaultAction::Stall
            )
        );
        assert_eq!(
            parse("reset_after_bytes=1000"),
            parse("reset:after_bytes=1000")
        );
        assert_eq!(
            parse("reset_after_bytes=7,stream=down,max_fires=2"),
            parse("reset:after_bytes=7,stream=down,max_fires=2")
        );
        assert_eq!(parse("stall-after-bytes=9"), parse("stall:after_bytes=9"));
        assert_eq!(
            parse("reset_on_reply_after_pattern=hex:434f,occurrence=2"),
            parse("reset_on_reply:after_pattern=CO,occurrence=2")
        );
        let f = parse(
            "reset_on_reply:after_pattern=COMMIT,stream=up,occurrence=3,connection=2,max_fires=5",
        );
        assert_eq!(
            f,
            Fault {
                connection: Some(2),
                trigger: FaultTrigger::AfterPattern {
                    stream: Stream::Up,
                    pattern: b"COMMIT".to_vec(),
                    occurrence: 3
                },
                action: FaultAction::ResetOnReply,
                max_fires: Some(5),
            }
        );
        assert_eq!(
            parse("reset:after_pattern=hex:00FF0a").trigger,
            FaultTrigger::AfterPattern {
                stream: Stream::Up,
                pattern: vec![0, 0xff, 0x0a],
                occurrence: 1
            }
        );
        // A text pattern keeps its spaces and colons.
        assert_eq!(
            parse("stall:after_pattern=a b:c").trigger,
            FaultTrigger::AfterPattern {
                stream: Stream::Up,
                pattern: b"a b:c".to_vec(),
                occurrence: 1
            }
        );
    }

    #[test]
    fn display_reads_back() {
        for spec in [
            "reset",
            "stall:connection=3",
            "blackhole:after_bytes=0,stream=down,max_fires=1",
            "reset_on_reply:after_pattern=COMMIT,stream=up,occurrence=3",
            "reset:after_pattern=hex:2c00ff,stream=down",
            "reset:after_pattern=hex:6865783a41,stream=up",
            "stall:after_pattern=a b,stream=up",
        ] {
            let f = parse(spec);
            assert_eq!(f.to_string(), spec);
            assert_eq!(parse(&f.to_string()), f);
        }
        // Patterns that cannot be text are written in hex.
        let f = Fault::new(
            FaultTrigger::AfterPattern {
                stream: Stream::Down,
                pattern: b"hex:x".to_vec(),
                occurrence: 1,
            },
            FaultAction::Reset,
        );
        assert_eq!(parse(&f.to_string()), f);
    }

    #[test]
    fn errors_name_the_part_and_what_is_allowed() {
        for (spec, expect) in [
            ("", "empty"),
            (
                "explode",
                "`explode` is not a fault action; allowed: reset, stall",
            ),
            (":after_bytes=1", "the action is missing"),
            (
                "reset_after_lunch=3",
                "`reset_after_lunch=3` is not a fault action",
            ),
            ("explode_after_bytes=3", "`explode` is not a fault action"),
            (
                "reset:after_bytes=abc",
                "`after_bytes=abc`: `abc` is not a byte count",
            ),
            ("reset:after_bytes=-1", "`-1` is not a byte count"),
            ("reset:after_bytes", "`after_bytes` needs a value"),
            (
                "reset:after_bytes=1,after_bytes=2",
                "`after_bytes` is given twice",
            ),
            (
                "reset:after_pattern=",
                "`after_pattern=`: the pattern is empty",
            ),
            ("reset:after_pattern=hex:", "the pattern is empty"),
            ("reset:after_pattern=hex:zz", "`zz` is not hex"),
            ("reset:after_pattern=hex:abc", "`abc` is not hex"),
            (
                "reset:after_pattern=X,occurrence=0",
                "`occurrence=0`: occurrences count from 1",
            ),
            ("reset:occurrence=2", "`occurrence=2` needs after_pattern=P"),
            ("reset:max_fires=0", "`max_fires=0`: 0 would never fire"),
            (
                "reset:stream=down",
                "`stream=down` needs after_bytes=N or after_pattern=P",
            ),
            (
                "reset:after_bytes=1,stream=sideways",
                "`stream=sideways`: allowed: stream=up",
            ),
            ("reset:after_bytes=1,after_pattern=x", "one trigger only"),
            ("reset:immediately,after_bytes=1", "one trigger only"),
            ("reset:immediately=yes", "`immediately` takes no value"),
            (
                "reset:colour=red",
                "`colour=red` is not an option; allowed: after_bytes=N",
            ),
            ("reset:", "an option is empty"),
            ("reset:after_bytes=1,", "an option is empty"),
            ("reset:connection=x", "`x` is not a connection number"),
            (
                "reset:after_bytes=99999999999999999999",
                "is not a byte count",
            ),
        ] {
            let e = error(spec);
            assert!(e.contains(expect), "`{spec}`: expected `{expect}` in: {e}");
        }
    }

    #[test]
    fn problems() {
        let mut f = Fault::new(
            FaultTrigger::AfterPattern {
                stream: Stream::Up,
                pattern: Vec::new(),
                occurrence: 1,
            },
            FaultAction::Reset,
        );
        assert!(f.problem().unwrap().contains("empty"));
        f.trigger = FaultTrigger::AfterPattern {
            stream: Stream::Up,
            pattern: b"x".to_vec(),
            occurrence: 0,
        };
        assert!(f.problem().unwrap().contains("occurrence 0"));
        f.trigger = FaultTrigger::Immediately;
        f.max_fires = Some(0);
        assert!(f.problem().unwrap().contains("max_fires 0"));
        f.max_fires = Some(1);
        assert_eq!(f.problem(), None);
    }

    /// The offset right after the `occurrence`-th non-overlapping match, the slow way.
    fn naive(data: &[u8], pattern: &[u8], occurrence: u64) -> Option<usize> {
        let mut seen = 0;
        let mut i = 0;
        while i + pattern.len() <= data.len() {
            if &data[i..i + pattern.len()] == pattern {
                seen += 1;
                i += pattern.len();
                if seen == occurrence {
                    return Some(i);
                }
            } else {
                i += 1;
            }
        }
        None
    }

    /// Feeds `data` to a watcher in the given chunks; the offset where it fired.
    fn fired_at(armed: &Armed, data: &[u8], cuts: &[usize]) -> Option<usize> {
        let mut w = Watcher::new(
            armed,
            Progress::Pattern {
                matched: 0,
                seen: 0,
            },
        );
        let mut start = 0;
        for &end in cuts.iter().chain(std::iter::once(&data.len())) {
            match w.scan(&data[start..end]) {
                Scan::Fire(at) => return Some(start + at),
                Scan::End(after) => w.progress = after,
            }
            start = end;
        }
        None
    }

    #[test]
    fn find_byte_finds_the_first() {
        let hay: Vec<u8> = (0..40u8).map(|i| i % 13).collect();
        for start in 0..hay.len() {
            for byte in 0..15u8 {
                let expect = hay[start..].iter().position(|&b| b == byte);
                assert_eq!(find_byte(&hay[start..], byte), expect, "{start} {byte}");
            }
        }
        // Bytes just above the one looked for (borrows) and 0x80 do not confuse it.
        assert_eq!(find_byte(&[0x81, 0x01, 0x80, 0x00, 0x01], 0x00), Some(3));
        assert_eq!(find_byte(&[2, 2, 2, 2, 2, 2, 2, 1, 2, 1], 1), Some(7));
        assert_eq!(find_byte(&[0xff; 17], 0xfe), None);
    }

    #[test]
    fn byte_counts_fire_exactly() {
        let armed = Armed::new(Fault::new(
            FaultTrigger::AfterBytes {
                stream: Stream::Down,
                bytes: 10,
            },
            FaultAction::Reset,
        ));
        let w = Watcher::new(&armed, Progress::Bytes { left: 10 });
        assert_eq!(w.scan(&[0; 9]), Scan::End(Progress::Bytes { left: 1 }));
        assert_eq!(w.scan(&[0; 10]), Scan::Fire(10));
        assert_eq!(w.scan(&[0; 11]), Scan::Fire(10));
        let w = Watcher::new(&armed, Progress::Bytes { left: u64::MAX });
        assert_eq!(
            w.scan(&[0; 5]),
            Scan::End(Progress::Bytes { left: u64::MAX - 5 })
        );
    }

    #[test]
    fn patterns_match_across_every_chunk_split() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"xxCOMMITyyCOMCOMMITzzCOMMIT", b"COMMIT"),
            (b"aaaaaaa", b"aa"),
            (b"abababcabababc", b"ababc"),
            (b"aabaabaaab", b"aab"),
            (b"\0\0\x01\0\0\x01", b"\0\x01"),
            (b"no match here", b"zz"),
        ];
        for (data, pattern) in cases {
            for occurrence in 1..=4 {
                let armed = Armed::new(Fault::new(
                    FaultTrigger::AfterPattern {
                        stream: Stream::Up,
                        pattern: pattern.to_vec(),
                        occurrence,
                    },
                    FaultAction::Reset,
                ));
                let expect = naive(data, pattern, occurrence);
                assert_eq!(fired_at(&armed, data, &[]), expect);
                for a in 0..=data.len() {
                    assert_eq!(fired_at(&armed, data, &[a]), expect, "cut at {a}");
                    for b in a..=data.len() {
                        assert_eq!(fired_at(&armed, data, &[a, b]), expect, "cuts {a} {b}");
                    }
                }
                // One byte at a time.
                let cuts: Vec<usize> = (1..data.len()).collect();
                assert_eq!(fired_at(&armed, data, &cuts), expect);
            }
        }
    }

    #[test]
    fn the_earliest_trigger_fires_and_max_fires_holds() {
        let total = AtomicU64::new(0);
        let faults = [
            Armed::new(Fault::new(
                FaultTrigger::AfterBytes {
                    stream: Stream::Up,
                    bytes: 10,
                },
                FaultAction::Stall,
            )),
            Armed::new(Fault {
                max_fires: Some(1),
                ..Fault::new(
                    FaultTrigger::AfterPattern {
                        stream: Stream::Up,
                        pattern: b"x".to_vec(),
                        occurrence: 1,
                    },
                    FaultAction::Reset,
                )
            }),
        ];
        for (round, expect) in [
            (0, Step::Fire(4, FaultAction::Reset)),
            (1, Step::Fire(10, FaultAction::Stall)),
        ] {
            let Plan::Watch { up, down, .. } = plan(&faults, round, &total) else {
                panic!("not watched");
            };
            assert!(down.is_empty());
            let ctl = Ctl::default();
            let mut watch = Watch::new(Stream::Up, &ctl, up, &total);
            assert_eq!(watch.step(b"abcxdefghijkl"), expect, "round {round}");
            // Once fired, the lane waits for the connection to be taken over.
            assert_eq!(watch.step(b"more"), Step::Park);
        }
        assert_eq!((faults[0].fires(), faults[1].fires()), (1, 1));
        assert_eq!(total.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn reset_on_reply_lets_the_request_through_and_discards_the_answer() {
        let total = AtomicU64::new(0);
        let faults = [Armed::new(Fault::new(
            FaultTrigger::AfterPattern {
                stream: Stream::Up,
                pattern: b"COMMIT".to_vec(),
                occurrence: 1,
            },
            FaultAction::ResetOnReply,
        ))];
        let Plan::Watch { up, down, .. } = plan(&faults, 0, &total) else {
            panic!("not watched");
        };
        let ctl = Ctl::default();
        let mut up = Watch::new(Stream::Up, &ctl, up, &total);
        let mut down = Watch::new(Stream::Down, &ctl, down, &total);
        assert_eq!(down.step(b"ok"), Step::Forward(2));
        assert!(!down.reply_due());
        assert_eq!(
            up.step(b"BEGIN;COMMIT;\n"),
            Step::Fire(12, FaultAction::ResetOnReply)
        );
        assert_eq!(up.step(b";\n"), Step::Forward(2));
        assert_eq!(down.step(b"ok"), Step::Discard);
        assert!(down.reply_due());
        assert!(!up.reply_due());
    }

    #[test]
    fn immediate_faults_and_connection_filters() {
        let total = AtomicU64::new(0);
        let faults = [Armed::new(Fault {
            connection: Some(1),
            max_fires: Some(1),
            ..Fault::new(FaultTrigger::Immediately, FaultAction::Stall)
        })];
        assert!(matches!(plan(&faults, 0, &total), Plan::Plain));
        assert!(matches!(
            plan(&faults, 1, &total),
            Plan::Act(FaultAction::Stall)
        ));
        // Spent.
        assert!(matches!(plan(&faults, 1, &total), Plan::Plain));
        let faults = [Armed::new(Fault::new(
            FaultTrigger::AfterBytes {
                stream: Stream::Down,
                bytes: 0,
            },
            FaultAction::ResetOnReply,
        ))];
        let Plan::Watch {
            reply_fired: true, ..
        } = plan(&faults, 5, &total)
        else {
            panic!("not fired at once");
        };
        assert_eq!(total.load(Ordering::Relaxed), 2);
    }
}
