//! One direction of a proxied connection: a plain copy loop when nothing is added, or a
//! delay line (reader stamps and queues chunks, writer sleeps until each chunk's release
//! instant and writes it). A lane watched by faults (see [`crate::fault`]) asks its
//! [`Watch`] before each write how much to forward. What lanes hold in memory, and how it
//! is counted: see [`crate::buffer`].

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::WriteHalf;
use tokio::sync::{Semaphore, mpsc};
use tsload_timer::PreciseTimer;

use crate::buffer::{self, Held, Share, footprint, with_scratch};
use crate::fault::{self, Ctl, FaultAction, Step, Stream, Watch};
use crate::stamp::{self, StampedReader};
use crate::timeout::Activity;

/// The most bytes a delay line reads at once.
const CHUNK: usize = buffer::SCRATCH;
/// Read size of a copy path watched by faults.
const COPY_BUF: usize = 64 * 1024;
/// The default of [`crate::ProxyConfig::queue_limit`]: enough for 1.6 GB/s at 10 ms.
pub(crate) const QUEUE_LIMIT: usize = 16 * 1024 * 1024;
/// The smallest queue limit: one full chunk must fit.
pub(crate) const MIN_QUEUE_LIMIT: usize = footprint(CHUNK);

/// What one direction adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LaneConfig {
    pub delay: Duration,
    pub jitter: Duration,
    pub rate: Option<u64>,
    /// Memory the delay line may queue (see [`footprint`]).
    pub queue_limit: usize,
}

impl LaneConfig {
    pub(crate) fn is_transparent(&self) -> bool {
        self.delay.is_zero() && self.jitter.is_zero() && self.rate.is_none()
    }
}

/// Where a lane counts what it does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meters<'a> {
    /// Bytes written.
    pub written: &'a AtomicU64,
    /// Memory held for bytes in transit (the proxy's, for all connections).
    pub buffered: &'a AtomicU64,
    /// The connection's last activity (for the idle timeout).
    pub activity: &'a Activity,
}

/// Why a lane stopped before its EOF.
#[derive(Debug)]
pub(crate) enum Stop {
    /// An I/O error on either side.
    Io,
    /// A fault fired: the connection is handed over to its action.
    Fault(FaultAction),
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Self {
        Stop::Io
    }
}

/// A connection's RNG seed from its sequence number (SplitMix64 of it, and of the time so
/// that two proxies differ).
pub(crate) fn seed(seq: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    SplitMix64(seq ^ nanos.rotate_left(17)).next_u64()
}

/// Forwards `from` to `to` until EOF (then shuts `to` down) or an error, counting in
/// `meters`. `opposite_delayed`: whether the other direction of the connection is a delay
/// line (then an undelayed lane measures its hop, and a delayed one does not take the hop
/// off its delay). `watch`: the faults watching this lane, if any watch the connection.
///
/// The lane itself (a few kilobytes of state, a delay line's queue) is made, in an
/// allocation of its own, when the first bytes (or the EOF) arrive: until then an idle
/// lane holds only this function's state. Receive timestamps are turned on before, so
/// that the first bytes have theirs.
pub(crate) async fn forward(
    from: &TcpStream,
    to: WriteHalf<'_>,
    config: &LaneConfig,
    opposite_delayed: bool,
    seed: u64,
    watch: Option<Watch<'_>>,
    meters: Meters<'_>,
) -> Result<(), Stop> {
    let transparent = config.is_transparent();
    let stamped = (!transparent || opposite_delayed).then(|| StampedReader::new(from));
    // Not `readable()`: tokio takes a new socket for readable until a read says otherwise.
    from.peek(&mut [0u8; 1]).await?;
    match (transparent, watch) {
        (true, None) => Ok(Box::pin(copy(from, to, stamped, meters)).await?),
        (true, Some(watch)) => Box::pin(watched_copy(from, to, stamped, watch, meters)).await,
        (false, watch) => {
            let stamped = stamped.unwrap_or_else(|| StampedReader::new(from));
            let compensate = !opposite_delayed;
            Box::pin(delay_line(
                from, to, config, compensate, stamped, seed, watch, meters,
            ))
            .await
        }
    }
}

/// What one step of [`copy`] did.
enum Relayed {
    /// Read `n` bytes (that arrived at `arrival`, where known) and wrote `written` of them
    /// at once; the rest wait in the lane's pending buffer.
    Read {
        n: usize,
        written: usize,
        arrival: Option<Instant>,
    },
    /// The sender's EOF.
    Eof,
}

/// The zero-delay path: no timers, no queue. Each read goes into the thread's scratch
/// buffer and is written on at once; what the receiver does not take at once waits in a
/// buffer of the lane's own, which is given back once the lane has caught up, so an idle
/// lane holds no buffer.
///
/// `stamped` (given when the other direction is a delay line): also measure the hop this
/// lane adds (from the bytes' arrival until the write that forwards them returns), for the
/// delay line to take off. Writes that had to wait for room are not measured: that wait is
/// the receiver's pace, not the proxy's cost.
async fn copy(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    mut stamped: Option<StampedReader>,
    meters: Meters<'_>,
) -> io::Result<()> {
    let mut pending = Held::new(meters.buffered);
    loop {
        if !pending.is_empty() {
            to.write_all(pending.bytes()).await?;
            meters
                .written
                .fetch_add(pending.bytes().len() as u64, Ordering::Relaxed);
            pending.clear();
            meters.activity.touch();
        }
        let relayed = with_scratch(|buf| {
            let (n, arrival) = match &mut stamped {
                Some(reader) => reader.try_read(from, buf)?,
                None => (from.try_read(buf)?, None),
            };
            if n == 0 {
                return Ok(Relayed::Eof);
            }
            let written = match to.as_ref().try_write(&buf[..n]) {
                Ok(written) => written,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(e),
            };
            if written < n {
                pending.extend(&buf[written..n]);
            }
            Ok(Relayed::Read {
                n,
                written,
                arrival,
            })
        });
        match relayed {
            Ok(Relayed::Read {
                n,
                written,
                arrival,
            }) => {
                meters.written.fetch_add(written as u64, Ordering::Relaxed);
                meters.activity.touch();
                if written == n
                    && let Some(arrival) = arrival
                {
                    stamp::learn_hop(arrival.elapsed());
                }
            }
            Ok(Relayed::Eof) => return to.shutdown().await,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // Caught up, nothing pending: no buffer while waiting.
                pending.release();
                from.readable().await?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The copy path of a lane watched by faults: each chunk read goes through [`emit`] (which
/// may wait, so the chunk is read into a buffer of the lane's own, allocated when the
/// first bytes arrive); `stamped`: also measure the hop, as [`copy`] does.
async fn watched_copy(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    mut stamped: Option<StampedReader>,
    mut watch: Watch<'_>,
    meters: Meters<'_>,
) -> Result<(), Stop> {
    let measure = stamped.is_some();
    let mut buf = Held::new(meters.buffered);
    loop {
        from.readable().await?;
        let room = buf.zeroed(COPY_BUF);
        let read = match &mut stamped {
            Some(reader) => reader.try_read(from, room),
            None => from.try_read(room).map(|n| (n, None)),
        };
        let (n, arrival) = match read {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            read => read?,
        };
        if watch.reply_due() {
            // The server answered (or closed) after `ResetOnReply` fired.
            return Err(Stop::Fault(FaultAction::Reset));
        }
        if n == 0 {
            watch.ctl().saw_eof(watch.stream());
            return Ok(to.shutdown().await?);
        }
        let t0 = Instant::now();
        meters.activity.touch_at(t0);
        emit(&buf.bytes()[..n], from, &mut to, meters.written, &mut watch).await?;
        meters.activity.touch();
        if measure
            && t0.elapsed() < Duration::from_micros(100)
            && let Some(arrival) = arrival
        {
            stamp::learn_hop(arrival.elapsed());
        }
    }
}

/// Forwards `data` to `to` as the lane's faults allow (see [`Step`]), counting what is
/// written; `Err(Stop::Fault)` once a fault fires whose action takes the connection over.
async fn emit(
    mut data: &[u8],
    from: &TcpStream,
    to: &mut WriteHalf<'_>,
    counter: &AtomicU64,
    watch: &mut Watch<'_>,
) -> Result<(), Stop> {
    while !data.is_empty() {
        let (n, fired) = match watch.step(data) {
            Step::Forward(n) => (n, None),
            Step::Fire(n, action) => {
                if action == FaultAction::ResetOnReply {
                    // What the server sent before the trigger is not its answer.
                    fault::drain(match watch.stream() {
                        Stream::Up => to.as_ref(),
                        Stream::Down => from,
                    });
                }
                (n, Some(action))
            }
            Step::Discard => return Ok(()),
            Step::Park => std::future::pending().await,
        };
        if watch.stream() == Stream::Down && fired.is_none() {
            // Bytes read before a `ResetOnReply` fired on the other lane are not forwarded
            // either: stop a write that waits for the client.
            let ctl = watch.ctl();
            let reply_fired = ctl.reply_fired();
            tokio::select! {
                biased;
                r = to.write_all(&data[..n]) => r?,
                _ = reply_fired => return Ok(()),
            }
        } else {
            to.write_all(&data[..n]).await?;
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
        data = &data[n..];
        match fired {
            None | Some(FaultAction::ResetOnReply) => {}
            Some(action) => return Err(Stop::Fault(action)),
        }
    }
    Ok(())
}

/// A chunk in a delay line; empty data is the end of the stream (a FIN to pass on). Its
/// data is allocated to its size (a copy out of the scratch buffer), and it counts as
/// [`footprint`] of that allocation.
struct Chunk {
    release: Instant,
    data: Vec<u8>,
}

/// The delay path: `compensate` takes the other direction's hop off the delay.
///
/// The queue holds at most `config.queue_limit` of memory, counted as each chunk's
/// [`footprint`] (its allocation and its entry, not its payload): before each read the
/// reader waits for room for the largest chunk it may read, and gives back what the chunk
/// read does not take; the writer gives back each chunk's footprint once it is written.
/// While the queue is full the reader does not read, and TCP pushes back on the sender.
#[allow(clippy::too_many_arguments)]
async fn delay_line(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    config: &LaneConfig,
    compensate: bool,
    mut stamped: StampedReader,
    seed: u64,
    mut watch: Option<Watch<'_>>,
    meters: Meters<'_>,
) -> Result<(), Stop> {
    let mut shaper = Shaper::new(config, seed);
    let limit = shaper.chunk_limit();
    // Fits in u32: at most footprint(CHUNK).
    let most = footprint(limit);
    let budget = Semaphore::new(config.queue_limit.max(most));
    let queued = Share::new(meters.buffered);
    let (tx, mut rx) = mpsc::unbounded_channel::<Chunk>();
    let watched: Option<(Stream, &Ctl)> = watch.as_ref().map(|w| (w.stream(), w.ctl()));
    let activity = meters.activity;

    let reader = async {
        loop {
            // Never fails: the semaphore is never closed and `most` <= its permits.
            if let Ok(permit) = budget.acquire_many(most as u32).await {
                permit.forget();
            }
            let (data, arrival) = loop {
                from.readable().await?;
                let read = with_scratch(|buf| {
                    let (n, arrival) = stamped.try_read(from, &mut buf[..limit])?;
                    Ok::<_, io::Error>((buf[..n].to_vec(), arrival))
                });
                match read {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    read => break read?,
                }
            };
            if watched.is_some_and(|(stream, ctl)| fault::reply_due(stream, ctl)) {
                // The server answered (or closed) after `ResetOnReply` fired.
                return Err(Stop::Fault(FaultAction::Reset));
            }
            let n = data.len();
            let now = Instant::now();
            let arrived = arrival.map_or(now, |a| a.min(now));
            let credit = if compensate {
                stamp::hop()
            } else {
                Duration::ZERO
            };
            let release = shaper.release(arrived, n, credit);
            if n == 0 {
                budget.add_permits(most);
                if let Some((stream, ctl)) = watched {
                    ctl.saw_eof(stream);
                }
                activity.hold_until(release);
                let _ = tx.send(Chunk {
                    release,
                    data: Vec::new(),
                });
                return Ok::<(), Stop>(());
            }
            let cost = footprint(data.capacity());
            budget.add_permits(most - cost);
            queued.add(cost);
            activity.touch_at(now);
            activity.hold_until(release);
            if tx.send(Chunk { release, data }).is_err() {
                // The writer is gone, and so is its error: try_join returns it.
                return Ok(());
            }
        }
    };

    let writer = async {
        // Made for the first chunk that has to wait (a timerfd on Linux): an idle lane
        // that never carried a byte holds none.
        let mut timer: Option<PreciseTimer> = None;
        while let Some(chunk) = rx.recv().await {
            if chunk.release > Instant::now() {
                timer
                    .get_or_insert_with(PreciseTimer::new)
                    .sleep_until(chunk.release)
                    .await?;
            }
            if chunk.data.is_empty() {
                if watch.as_ref().is_some_and(Watch::reply_due) {
                    // The server closed after `ResetOnReply` fired: reset the client.
                    return Err(Stop::Fault(FaultAction::Reset));
                }
                return Ok(to.shutdown().await?);
            }
            let n = chunk.data.len();
            match &mut watch {
                None => {
                    to.write_all(&chunk.data).await?;
                    meters.written.fetch_add(n as u64, Ordering::Relaxed);
                }
                Some(watch) => emit(&chunk.data, from, &mut to, meters.written, watch).await?,
            }
            activity.touch();
            let cost = footprint(chunk.data.capacity());
            drop(chunk);
            queued.sub(cost);
            budget.add_permits(cost);
        }
        Ok(())
    };

    tokio::try_join!(reader, writer).map(drop)
}

/// Computes each chunk's release instant: token bucket, then delay and jitter, never
#[derive(Debug)]
struct Shaper {
    delay: Duration,
    jitter_ns: u64,
    pacer: Option<Pacer>,
    rng: SplitMix64,
    last: Option<Instant>,
}

impl Shaper {
    fn new(config: &LaneConfig, seed: u64) -> Self {
        Shaper {
            delay: config.delay,
            jitter_ns: config.jitter.as_nanos() as u64,
            pacer: config.rate.map(Pacer::new),
            rng: SplitMix64(seed),
            last: None,
        }
    }

    /// The most bytes the reader takes at once.
    fn chunk_limit(&self) -> usize {
        self.pacer.as_ref().map_or(CHUNK, |p| p.chunk)
    }

    /// When the `n` bytes that arrived at `now` (0: the end of the stream) may be written,
    /// with `credit` (time already spent on the round trip by the proxy) taken off the
    /// delay.
    fn release(&mut self, now: Instant, n: usize, credit: Duration) -> Instant {
        let departure = match &mut self.pacer {
            Some(pacer) => pacer.departure(now, n),
            None => now,
        };
        let delay = if self.jitter_ns == 0 {
            self.delay
        } else {
            // uniform(-J, J); the modulo bias is below 2^-40 for any sane J.
            let span = 2 * self.jitter_ns + 1;
            let offset = (self.rng.next_u64() % span) as i128 - self.jitter_ns as i128;
            let nanos = (self.delay.as_nanos() as i128 + offset).max(0);
            Duration::from_nanos(nanos as u64)
        };
        let mut release = departure + delay.saturating_sub(credit);
        if let Some(last) = self.last {
            release = release.max(last);
        }
        self.last = Some(release);
        release
    }
}

/// A token bucket in its GCRA form: a theoretical arrival time that advances by each
/// chunk's transmission time, with one chunk's worth of burst.
#[derive(Debug)]
struct Pacer {
    nanos_per_byte: f64,
    /// Largest chunk, and the burst: 10 ms of the rate, within [1 KiB, 64 KiB].
    chunk: usize,
    burst: Duration,
    tat: Option<Instant>,
}

impl Pacer {
    fn new(rate: u64) -> Self {
        let chunk = ((rate / 100) as usize).clamp(1024, CHUNK);
        let nanos_per_byte = 1e9 / rate as f64;
        Pacer {
            nanos_per_byte,
            chunk,
            burst: Duration::from_nanos((chunk as f64 * nanos_per_byte) as u64),
            tat: None,
        }
    }

    /// When `n` bytes offered at `now` leave the bucket.
    fn departure(&mut self, now: Instant, n: usize) -> Instant {
        let start = self.tat.map_or(now, |tat| tat.max(now));
        let tat = start + Duration::from_nanos((n as f64 * self.nanos_per_byte) as u64);
        self.tat = Some(tat);
        tat.checked_sub(self.burst).map_or(now, |t| t.max(now))
    }
}

/// SplitMix64: tiny, and good enough for jitter.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(delay_us: u64, jitter_us: u64, rate: Option<u64>) -> LaneConfig {
        LaneConfig {
            delay: Duration::from_micros(delay_us),
            jitter: Duration::from_micros(jitter_us),
            rate,
            queue_limit: QUEUE_LIMIT,
        }
    }

    #[test]
    fn transparent_only_without_delay_jitter_and_rate() {
        assert!(lane(0, 0, None).is_transparent());
        assert!(!lane(1, 0, None).is_transparent());
        assert!(!lane(0, 1, None).is_transparent());
        assert!(!lane(0, 0, Some(1000)).is_transparent());
    }

    #[test]
    fn plain_delay_is_exact() {
        let mut s = Shaper::new(&lane(1000, 0, None), 1);
        let t0 = Instant::now();
        assert_eq!(
            s.release(t0, 10, Duration::ZERO),
            t0 + Duration::from_millis(1)
        );
        let t1 = t0 + Duration::from_micros(5);
        assert_eq!(
            s.release(t1, 10, Duration::ZERO),
            t1 + Duration::from_millis(1)
        );
    }

    #[test]
    fn jitter_stays_in_range_never_reorders_and_spreads() {
        let mut s = Shaper::new(&lane(1000, 500, None), 7);
        let t0 = Instant::now();
        let mut last = t0;
        let (mut low, mut high) = (Duration::MAX, Duration::ZERO);
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_micros(i * 100);
            let r = s.release(now, 100, Duration::ZERO);
            assert!(r >= last, "reordered at {i}");
            assert!(r <= now + Duration::from_micros(1500), "over D + J at {i}");
            // Without the clamp, a release is never earlier than D - J.
            if r > last {
                assert!(r >= now + Duration::from_micros(500), "under D - J at {i}");
                low = low.min(r - now);
            }
            high = high.max(r - now);
            last = r;
        }
        assert!(low < Duration::from_micros(600), "low {low:?}");
        assert!(high > Duration::from_micros(1400), "high {high:?}");
    }

    #[test]
    fn jitter_larger_than_delay_never_goes_negative() {
        let mut s = Shaper::new(&lane(100, 1000, None), 3);
        let t0 = Instant::now();
        for i in 0..1000u64 {
            let now = t0 + Duration::from_millis(i * 10);
            assert!(s.release(now, 1, Duration::ZERO) >= now);
        }
    }

    #[test]
    fn pacer_sends_at_the_rate_after_one_burst() {
        // 1 MB/s: 10,000-byte chunks and burst.
        let mut p = Pacer::new(1_000_000);
        assert_eq!(p.chunk, 10_000);
        let t0 = Instant::now();
        // The first chunk goes at once (the burst), then one per 10 ms.
        assert_eq!(p.departure(t0, 10_000), t0);
        for k in 1..100u64 {
            let d = p.departure(t0, 10_000);
            assert_eq!(d, t0 + Duration::from_millis(10 * k), "chunk {k}");
        }
        // After a long idle period the bucket is full again, but holds one burst only.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(p.departure(later, 10_000), later);
        assert_eq!(
            p.departure(later, 10_000),
            later + Duration::from_millis(10)
        );
    }

    #[test]
    fn pacer_chunk_limits() {
        assert_eq!(Pacer::new(1).chunk, 1024);
        assert_eq!(Pacer::new(1_000_000_000).chunk, CHUNK);
    }
}
