//! One direction of a proxied connection: a plain copy loop when nothing is added, or a
//! delay line (reader stamps and queues chunks, writer sleeps until each chunk's release
//! instant and writes it). A lane watched by faults (see [`crate::fault`]) asks its
//! [`Watch`] before each write how much to forward.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::sync::{Semaphore, mpsc};
use tsload_timer::PreciseTimer;

use crate::fault::{self, Ctl, FaultAction, Step, Stream, Watch};
use crate::stamp::{self, StampedReader};

/// Read size of the delay lines.
const CHUNK: usize = 64 * 1024;
/// Read size of the copy path.
const COPY_BUF: usize = 64 * 1024;
/// Bytes a delay line holds before its reader stops reading (TCP then pushes back): enough
/// for 1.6 GB/s at 10 ms.
const QUEUE_LIMIT: usize = 16 * 1024 * 1024;

/// What one direction adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LaneConfig {
    pub delay: Duration,
    pub jitter: Duration,
    pub rate: Option<u64>,
}

impl LaneConfig {
    pub(crate) fn is_transparent(&self) -> bool {
        self.delay.is_zero() && self.jitter.is_zero() && self.rate.is_none()
    }
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

/// Forwards `from` to `to` until EOF (then shuts `to` down) or an error, counting the
/// bytes written in `counter`. `opposite_delayed`: whether the other direction of the
/// connection is a delay line (then an undelayed lane measures its hop, and a delayed one
/// does not take the hop off its delay). `watch`: the faults watching this lane, if any
/// watch the connection.
pub(crate) async fn forward(
    from: ReadHalf<'_>,
    to: WriteHalf<'_>,
    config: &LaneConfig,
    opposite_delayed: bool,
    counter: &AtomicU64,
    seed: u64,
    watch: Option<Watch<'_>>,
) -> Result<(), Stop> {
    match (config.is_transparent(), opposite_delayed, watch) {
        (true, false, None) => Ok(copy(from, to, counter).await?),
        (true, true, None) => Ok(measured_copy(from.as_ref(), to, counter).await?),
        (true, _, Some(watch)) => {
            watched_copy(from.as_ref(), to, counter, opposite_delayed, watch).await
        }
        (false, _, watch) => {
            delay_line(
                from.as_ref(),
                to,
                config,
                !opposite_delayed,
                counter,
                seed,
                watch,
            )
            .await
        }
    }
}

/// The zero-delay fast path: read, write, repeat; no timers, no queue.
async fn copy(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    counter: &AtomicU64,
) -> io::Result<()> {
    let mut buf = vec![0u8; COPY_BUF];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        to.write_all(&buf[..n]).await?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The copy path of a connection delayed the other way: it also measures the hop it adds
/// (from the bytes' arrival until the write that forwards them returns), for the delay
/// line to take off. Writes that had to wait for room are not measured: that wait is the
/// receiver's pace, not the proxy's cost.
async fn measured_copy(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    counter: &AtomicU64,
) -> io::Result<()> {
    let mut reader = StampedReader::new(from);
    let mut buf = vec![0u8; COPY_BUF];
    loop {
        let (n, arrival) = reader.read(from, &mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        let written = match to.as_ref().try_write(&buf[..n]) {
            Ok(written) => written,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => return Err(e),
        };
        if written < n {
            to.write_all(&buf[written..n]).await?;
        } else if let Some(arrival) = arrival {
            stamp::learn_hop(arrival.elapsed());
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The copy path of a lane watched by faults: each chunk read goes through [`emit`];
/// `measure`: also measure the hop, as [`measured_copy`] does.
async fn watched_copy(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    counter: &AtomicU64,
    measure: bool,
    mut watch: Watch<'_>,
) -> Result<(), Stop> {
    let mut stamped = measure.then(|| StampedReader::new(from));
    let mut buf = vec![0u8; COPY_BUF];
    loop {
        let (n, arrival) = match &mut stamped {
            Some(reader) => reader.read(from, &mut buf).await?,
            None => (read(from, &mut buf).await?, None),
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
        emit(&buf[..n], from, &mut to, counter, &mut watch).await?;
        if measure
            && t0.elapsed() < Duration::from_micros(100)
            && let Some(arrival) = arrival
        {
            stamp::learn_hop(arrival.elapsed());
        }
    }
}

/// A plain read of a socket shared with the other lane.
async fn read(from: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        from.readable().await?;
        match from.try_read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
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

/// A chunk in a delay line; empty data is the end of the stream (a FIN to pass on).
struct Chunk {
    release: Instant,
    data: Vec<u8>,
}

/// The delay path: `compensate` takes the other direction's hop off the delay.
async fn delay_line(
    from: &TcpStream,
    mut to: WriteHalf<'_>,
    config: &LaneConfig,
    compensate: bool,
    counter: &AtomicU64,
    seed: u64,
    mut watch: Option<Watch<'_>>,
) -> Result<(), Stop> {
    let budget = Semaphore::new(QUEUE_LIMIT);
    let (tx, mut rx) = mpsc::unbounded_channel::<Chunk>();
    let mut shaper = Shaper::new(config, seed);
    let watched: Option<(Stream, &Ctl)> = watch.as_ref().map(|w| (w.stream(), w.ctl()));

    let reader = async {
        let mut reader = StampedReader::new(from);
        let mut buf = vec![0u8; shaper.chunk_limit()];
        loop {
            let (n, arrival) = reader.read(from, &mut buf).await?;
            if watched.is_some_and(|(stream, ctl)| fault::reply_due(stream, ctl)) {
                // The server answered (or closed) after `ResetOnReply` fired.
                return Err(Stop::Fault(FaultAction::Reset));
            }
            let now = Instant::now();
            let arrived = arrival.map_or(now, |a| a.min(now));
            let credit = if compensate {
                stamp::hop()
            } else {
                Duration::ZERO
            };
            let release = shaper.release(arrived, n, credit);
            if n == 0 {
                if let Some((stream, ctl)) = watched {
                    ctl.saw_eof(stream);
                }
                let _ = tx.send(Chunk {
                    release,
                    data: Vec::new(),
                });
                return Ok::<(), Stop>(());
            }
            // Never fails: the semaphore is never closed and n <= CHUNK < QUEUE_LIMIT.
            if let Ok(permit) = budget.acquire_many(n as u32).await {
                permit.forget();
            }
            if tx
                .send(Chunk {
                    release,
                    data: buf[..n].to_vec(),
                })
                .is_err()
            {
                // The writer is gone, and so is its error: try_join returns it.
                return Ok(());
            }
        }
    };

    let writer = async {
        let mut timer = PreciseTimer::new();
        while let Some(chunk) = rx.recv().await {
            timer.sleep_until(chunk.release).await?;
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
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
                Some(watch) => emit(&chunk.data, from, &mut to, counter, watch).await?,
            }
            budget.add_permits(n);
        }
        Ok(())
    };

    tokio::try_join!(reader, writer).map(drop)
}

/// Computes each chunk's release instant: token bucket, then delay and jitter, never
/// before the previous chunk's.
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
