//! Latency recording without locks: each worker records into its own HDR histograms and
//! counters and, once per report interval, hands them to the reporter over a channel.
//! Nothing per request leaves a worker but these records. Both engines file records the
//! same way (`IntervalClock`, `flushing`): a completion counts in the report interval
//! in which it completed, and a worker hands each interval over when it ends, even when it
//! recorded nothing and even while it waits, so the reporter can report an interval once
//! every worker is past it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use futures_util::task::AtomicWaker;
use hdrhistogram::Histogram;
use tokio::sync::mpsc::UnboundedSender;

use crate::sink::ErrorKind;

/// Significant digits kept by every latency histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A fresh auto-resizing histogram of nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    // Auto-resizing: starts small and grows only when a larger value first appears, so
    // memory follows the latencies actually seen; `new` cannot fail for 3 digits.
    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid")
}

/// Counters of one interval or of a whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests that succeeded.
    pub requests: u64,
    pub rows: u64,
    pub metrics: u64,
    pub bytes: u64,
    /// Attempts that failed with a retryable error and were sent again.
    pub retries: u64,
    /// Failed attempts by kind (retried ones included).
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Requests that failed for good (their rows are not counted as written).
    pub failed_requests: u64,
    pub failed_rows: u64,
    /// Rows whose request reached the server but whose answer was lost, and that no
    /// ledger settled: each may be stored once more than counted. The rows stored lie in
    /// `[rows, rows + ambiguous_rows]`.
    pub ambiguous_rows: u64,
    /// Rows of batches whose answer was lost but which the target's ledger showed stored:
    /// counted once (in `rows`), not sent again.
    pub recovered_rows: u64,
    /// Open loop: requests that were due before the run ended but were never sent (the
    /// client or the target fell behind), and their rows.
    pub unsent_requests: u64,
    pub unsent_rows: u64,
    /// Of `rows`: rows sent after a later row of their device (`out_of_order_ratio`), and
    /// rows that repeat the row before them (`duplicate_ratio`).
    pub late_rows: u64,
    pub duplicate_rows: u64,
    /// The field values of `duplicate_rows`.
    pub duplicate_metrics: u64,
    /// Devices whose first row was sent ([`crate::Batch::devices_started`]), whether or
    /// not the server took the batch.
    pub devices_started: u64,
    /// Series whose first value was sent ([`crate::Batch::series_started`]).
    pub series_started: u64,
}

impl Counters {
    pub fn add(&mut self, other: &Counters) {
        self.requests += other.requests;
        self.rows += other.rows;
        self.metrics += other.metrics;
        self.bytes += other.bytes;
        self.retries += other.retries;
        self.failed_requests += other.failed_requests;
        self.failed_rows += other.failed_rows;
        self.ambiguous_rows += other.ambiguous_rows;
        self.recovered_rows += other.recovered_rows;
        self.unsent_requests += other.unsent_requests;
        self.unsent_rows += other.unsent_rows;
        self.late_rows += other.late_rows;
        self.duplicate_rows += other.duplicate_rows;
        self.duplicate_metrics += other.duplicate_metrics;
        self.devices_started += other.devices_started;
        self.series_started += other.series_started;
        for (k, v) in &other.errors {
            *self.errors.entry(*k).or_default() += v;
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// What a worker hands the reporter when a report interval ends (even when it recorded
/// nothing), and once when it finishes.
#[derive(Debug)]
pub struct IntervalRecord {
    pub worker: usize,
    /// The interval the records belong to (0 = the first `report_interval` of the run).
    pub interval: u64,
    /// Every interval before this one is complete for this worker: it sends nothing more
    /// for them. `u64::MAX` once the worker has finished.
    pub next: u64,
    pub counters: Counters,
    /// Latency from the intended send time (coordinated-omission corrected), ns.
    pub latency: Histogram<u64>,
    /// Service time from the actual send to the acknowledgement, ns.
    pub service: Histogram<u64>,
}

/// A worker's hand-over of one report interval, as the reporter files it (the write
/// engine's [`IntervalRecord`] and the query engine's per-kind record).
pub(crate) trait HandOver {
    fn worker(&self) -> usize;
    /// The interval the records belong to.
    fn interval(&self) -> u64;
    /// Every interval before this one is complete for this worker; `u64::MAX` once it
    /// has finished.
    fn next(&self) -> u64;
    /// Whether it holds no records.
    fn is_empty(&self) -> bool;
}

impl HandOver for IntervalRecord {
    fn worker(&self) -> usize {
        self.worker
    }
    fn interval(&self) -> u64 {
        self.interval
    }
    fn next(&self) -> u64 {
        self.next
    }
    fn is_empty(&self) -> bool {
        self.latency.is_empty() && self.counters == Counters::default()
    }
}

/// `interval * k` from the run's start (saturating).
pub(crate) fn boundary(interval: Duration, k: u64) -> Duration {
    let ns = interval.as_nanos().saturating_mul(u128::from(k));
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// When report intervals end, told to every worker at once by the reporter
/// ([`IntervalTicker::tick`], which `report_intervals` runs), so a worker waits for an
/// interval's end without a timer of its own. One would cost each wait a timer-wheel entry
/// and the kernel a timer for every `epoll_wait`: about a tenth of a query worker's
/// instructions at tens of thousands of requests a second (callgrind, `oltp_point_select`).
#[derive(Debug)]
pub(crate) struct IntervalTicker {
    t0: Instant,
    interval: Duration,
    /// Intervals ended so far: interval `k` has ended once this is over `k`.
    ended: AtomicU64,
    /// One per worker, woken at each end. Each on a cache line of its own: a worker
    /// registers its waker at every wait (atomic writes), and wakers side by side would
    /// have the workers on different cores take the line from each other at every request.
    wakers: Vec<CachePadded<AtomicWaker>>,
}

impl IntervalTicker {
    pub(crate) fn new(t0: Instant, interval: Duration, workers: usize) -> Arc<Self> {
        Arc::new(IntervalTicker {
            t0,
            interval,
            ended: AtomicU64::new(0),
            wakers: (0..workers)
                .map(|_| CachePadded::new(AtomicWaker::new()))
                .collect(),
        })
    }

    /// Waits until the next interval ends and tells every worker; never resolves past
    /// what an `Instant` holds. One caller (the reporter) at a time.
    pub(crate) async fn tick(&self) {
        let k = self.ended.load(Ordering::Acquire).saturating_add(1);
        let Some(at) = self.t0.checked_add(boundary(self.interval, k)) else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(at.into()).await;
        self.ended.store(k, Ordering::Release);
        for waker in &self.wakers {
            waker.wake();
        }
    }

    pub(crate) fn t0(&self) -> Instant {
        self.t0
    }

    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    fn has_ended(&self, index: u64) -> bool {
        self.ended.load(Ordering::Acquire) > index
    }
}

/// Which report interval a worker is recording, and when it ends: the part of the
/// recorders that both engines share.
///
/// A recorder moves on ([`IntervalClock::advance`]) before it records a completion, so the
/// completion counts in the interval in which it completed, and hands the interval it
/// leaves over, even when empty: the reporter then knows this worker is past it.
#[derive(Debug)]
pub(crate) struct IntervalClock {
    t0: Instant,
    interval: Duration,
    /// The interval being recorded.
    index: u64,
    /// When interval `index` ends; `None` past what an `Instant` holds, or once finished.
    end: Option<Instant>,
    finished: bool,
    /// Says when intervals end (for [`flushing`]), and which of its wakers is this
    /// worker's.
    ticker: Arc<IntervalTicker>,
    worker: usize,
}

impl IntervalClock {
    /// The clock of worker `worker` (one of the ticker's).
    pub(crate) fn new(ticker: Arc<IntervalTicker>, worker: usize) -> Self {
        IntervalClock {
            t0: ticker.t0,
            interval: ticker.interval,
            index: 0,
            end: ticker.t0.checked_add(ticker.interval),
            finished: false,
            ticker,
            worker,
        }
    }

    /// When `now` is past the end of the interval being recorded: moves on to the
    /// interval that holds `now` and returns `(left, next)`, the interval to hand over and
    /// the one now recorded (any between them are complete, and empty). One comparison
    /// otherwise.
    #[inline]
    pub(crate) fn advance(&mut self, now: Instant) -> Option<(u64, u64)> {
        match self.end {
            Some(end) if now >= end => Some(self.step(now)),
            _ => None,
        }
    }

    fn step(&mut self, now: Instant) -> (u64, u64) {
        let elapsed = now.saturating_duration_since(self.t0).as_nanos();
        let next = u64::try_from(elapsed / self.interval.as_nanos().max(1))
            .unwrap_or(u64::MAX - 1)
            .max(self.index.saturating_add(1))
            .min(u64::MAX - 1);
        let left = self.index;
        self.index = next;
        self.end = self
            .t0
            .checked_add(boundary(self.interval, next.saturating_add(1)));
        (left, next)
    }

    /// The interval being recorded, to hand over as the worker's last; `None` when
    /// finished already.
    pub(crate) fn finish(&mut self) -> Option<u64> {
        if self.finished {
            return None;
        }
        self.finished = true;
        self.end = None;
        Some(self.index)
    }

    /// Resolves at the end of the interval being recorded, with that end (never once the
    /// clock is finished or past what an `Instant` holds, or for a worker the ticker does
    /// not know).
    async fn ended(&mut self) -> Instant {
        let (Some(end), Some(waker)) = (self.end, self.ticker.wakers.get(self.worker)) else {
            return std::future::pending().await;
        };
        let (ticker, index) = (&self.ticker, self.index);
        std::future::poll_fn(|cx| {
            if ticker.has_ended(index) {
                return Poll::Ready(());
            }
            waker.register(cx.waker());
            // An end told between the check and the registration is seen here.
            if ticker.has_ended(index) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        end
    }
}

/// A recorder that hands its intervals over on an [`IntervalClock`].
pub(crate) trait HandsOver {
    fn clock(&mut self) -> &mut IntervalClock;
    /// Moves on to the interval that holds `now`, handing over the one left.
    fn advance(&mut self, now: Instant);
}

/// Awaits `fut`, handing over the recorder's interval whenever one ends meanwhile, so a
/// worker waiting for a due time, an answer or a backoff never holds back an interval's
/// records. A `fut` that is ready at once costs nothing more.
pub(crate) async fn flushing<R: HandsOver, F: Future>(recorder: &mut R, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    loop {
        let end = tokio::select! {
            biased;
            out = &mut fut => return out,
            end = recorder.clock().ended() => end,
        };
        // At least the end the ticker told, whatever clock the runtime keeps.
        recorder.advance(Instant::now().max(end));
    }
}

/// Where workers hand their raw latencies (debugging).
type RawLatencies = Arc<Mutex<Vec<u64>>>;

/// One write worker's recorder. Call [`WorkerRecorder::advance`] with a completion's time
/// before recording it (and wrap the worker's waits in `flushing`).
#[derive(Debug)]
pub struct WorkerRecorder {
    worker: usize,
    counters: Counters,
    latency: Histogram<u64>,
    service: Histogram<u64>,
    clock: IntervalClock,
    tx: UnboundedSender<IntervalRecord>,
    /// Debugging: every latency recorded (ns), handed to `raw_out` at each hand-over.
    raw: Option<(Vec<u64>, RawLatencies)>,
}

impl WorkerRecorder {
    pub(crate) fn new(
        worker: usize,
        ticker: Arc<IntervalTicker>,
        tx: UnboundedSender<IntervalRecord>,
    ) -> Self {
        WorkerRecorder {
            worker,
            counters: Counters::default(),
            latency: new_histogram(),
            service: new_histogram(),
            clock: IntervalClock::new(ticker, worker),
            tx,
            raw: None,
        }
    }

    /// Debugging: also keeps every latency recorded, appended to `out` at each hand-over.
    pub fn keep_raw_latencies(&mut self, out: Arc<Mutex<Vec<u64>>>) {
        self.raw = Some((Vec::new(), out));
    }

    /// Moves on to the report interval that holds `now` when `now` is past the current
    /// one, handing that one over (even when empty). Call it before recording what
    /// completed at `now`.
    #[inline]
    pub fn advance(&mut self, now: Instant) {
        if let Some((left, next)) = self.clock.advance(now) {
            self.send(left, next);
        }
    }

    /// Records one acknowledged request.
    pub fn record_success(
        &mut self,
        latency: Duration,
        service: Duration,
        rows: u64,
        metrics: u64,
        bytes: u64,
    ) {
        // `record` grows an auto-resizing histogram; `saturating_record` would clamp instead.
        if self.latency.record(nanos(latency)).is_err() {
            self.latency.saturating_record(nanos(latency));
        }
        if self.service.record(nanos(service)).is_err() {
            self.service.saturating_record(nanos(service));
        }
        if let Some((raw, _)) = &mut self.raw {
            raw.push(nanos(latency));
        }
        let c = &mut self.counters;
        c.requests += 1;
        c.rows += rows;
        c.metrics += metrics;
        c.bytes += bytes;
    }

    /// Records the devices and series whose first rows a sent batch holds.
    pub fn record_devices(&mut self, batch: &crate::Batch) {
        self.counters.devices_started += batch.devices_started;
        self.counters.series_started += batch.series_started;
    }

    /// Records the late and duplicate rows of an acknowledged batch.
    pub fn record_arrival(&mut self, batch: &crate::Batch) {
        self.counters.late_rows += batch.late_rows;
        self.counters.duplicate_rows += batch.duplicate_rows;
        self.counters.duplicate_metrics += batch.duplicate_metrics;
    }

    /// Records a failed attempt; `retried` says whether the batch is sent again.
    pub fn record_error(&mut self, kind: ErrorKind, retried: bool) {
        *self.counters.errors.entry(kind).or_default() += 1;
        if retried {
            self.counters.retries += 1;
        }
    }

    /// Records a request given up for good.
    pub fn record_failure(&mut self, rows: u64) {
        self.counters.failed_requests += 1;
        self.counters.failed_rows += rows;
    }

    /// Records the rows of requests recorded with [`WorkerRecorder::record_failure`]
    /// without them (given up on together).
    pub fn record_failure_rows(&mut self, rows: u64) {
        self.counters.failed_rows += rows;
    }

    /// Records rows that may be stored once more than counted (see
    /// [`Counters::ambiguous_rows`]).
    pub fn record_ambiguous(&mut self, rows: u64) {
        self.counters.ambiguous_rows += rows;
    }

    /// Records rows the target's ledger found stored after their answer was lost.
    pub fn record_recovered(&mut self, rows: u64) {
        self.counters.recovered_rows += rows;
    }

    /// Records open-loop requests that were due but never sent.
    pub fn record_unsent(&mut self, requests: u64, rows: u64) {
        self.counters.unsent_requests += requests;
        self.counters.unsent_rows += rows;
    }

    /// Hands over the interval being recorded and says that the worker is done (once;
    /// dropping the recorder does it too).
    pub fn finish(&mut self) {
        if let Some(last) = self.clock.finish() {
            self.send(last, u64::MAX);
        }
    }

    fn send(&mut self, interval: u64, next: u64) {
        let record = IntervalRecord {
            worker: self.worker,
            interval,
            next,
            counters: std::mem::take(&mut self.counters),
            latency: self.latency.clone(),
            service: self.service.clone(),
        };
        self.latency.reset();
        self.service.reset();
        if let Some((raw, out)) = &mut self.raw
            && !raw.is_empty()
            && let Ok(mut out) = out.lock()
        {
            out.append(raw);
        }
        // Sent even when empty: the reporter learns that this worker is past the interval.
        // The reporter outlives the workers; if it is gone the run is over anyway.
        let _ = self.tx.send(record);
    }
}

impl HandsOver for WorkerRecorder {
    fn clock(&mut self) -> &mut IntervalClock {
        &mut self.clock
    }
    fn advance(&mut self, now: Instant) {
        WorkerRecorder::advance(self, now);
    }
}

impl Drop for WorkerRecorder {
    fn drop(&mut self) {
        // A worker that panicked still hands over what it recorded, and the reporter
        // stops waiting for it.
        self.finish();
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_interval_is_handed_over_with_what_completed_in_it() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let us = Duration::from_micros;
        let ticker = IntervalTicker::new(t0, Duration::from_secs(1), 4);
        let mut r = WorkerRecorder::new(3, ticker, tx);
        r.advance(ms(10));
        r.record_success(us(10), us(8), 5, 50, 100);
        r.record_error(ErrorKind::Timeout, true);
        r.advance(ms(999));
        assert!(rx.try_recv().is_err(), "interval not over yet");
        // A completion 1.5 intervals in: interval 0 is handed over before it is recorded.
        r.advance(ms(1500));
        r.record_success(us(1), us(1), 1, 1, 0);
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.worker, rec.interval, rec.next), (3, 0, 1));
        assert_eq!(rec.counters.rows, 5);
        assert_eq!(rec.counters.retries, 1);
        assert_eq!(rec.counters.errors[&ErrorKind::Timeout], 1);
        assert_eq!(rec.latency.len(), 1);
        assert!(rx.try_recv().is_err());
        // 2.2 intervals later: interval 1 is handed over, 2 is skipped (complete, empty).
        r.advance(ms(3700));
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next), (1, 3));
        assert_eq!((rec.counters.rows, rec.latency.len()), (1, 1));
        // An interval that recorded nothing is handed over too, empty.
        r.advance(ms(4000));
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next), (3, 4));
        assert!(HandOver::is_empty(&rec));
        r.record_unsent(2, 20);
        drop(r);
        let last = rx.try_recv().unwrap();
        assert_eq!((last.interval, last.next), (4, u64::MAX));
        assert_eq!(last.counters.unsent_rows, 20);
        assert!(rx.try_recv().is_err(), "finished once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_worker_hands_its_interval_over_at_the_end() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = Instant::now();
        let ticker = IntervalTicker::new(t0, Duration::from_millis(100), 1);
        let reporter = ticker.clone();
        let ticking = tokio::spawn(async move {
            loop {
                reporter.tick().await;
            }
        });
        let mut r = WorkerRecorder::new(0, ticker, tx);
        r.record_success(Duration::ZERO, Duration::ZERO, 7, 7, 0);
        // A wait of 250 ms (paused clock): intervals 0 and 1 are handed over meanwhile.
        let out = flushing(&mut r, async {
            tokio::time::sleep(Duration::from_millis(250)).await;
            42
        })
        .await;
        assert_eq!(out, 42);
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next, rec.counters.rows), (0, 1, 7));
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next), (1, 2));
        assert!(rx.try_recv().is_err());
        // A future ready at once hands nothing over.
        assert_eq!(flushing(&mut r, async { 1 }).await, 1);
        assert!(rx.try_recv().is_err());
        ticking.abort();
    }
}
