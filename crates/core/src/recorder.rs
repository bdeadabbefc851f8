//! Latency recording without locks: each worker records into its own HDR histograms and
//! counters and, once per report interval, hands them to the reporter over a channel.
//! Nothing per request leaves a worker but these records.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
        for (k, v) in &other.errors {
            *self.errors.entry(*k).or_default() += v;
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// What a worker sends to the reporter once per interval (and once at its end).
#[derive(Debug)]
pub struct IntervalRecord {
    pub worker: usize,
    pub counters: Counters,
    /// Latency from the intended send time (coordinated-omission corrected), ns.
    pub latency: Histogram<u64>,
    /// Service time from the actual send to the acknowledgement, ns.
    pub service: Histogram<u64>,
}

/// Where workers hand their raw latencies (debugging).
type RawLatencies = Arc<Mutex<Vec<u64>>>;

/// One worker's recorder.
#[derive(Debug)]
pub struct WorkerRecorder {
    worker: usize,
    counters: Counters,
    latency: Histogram<u64>,
    service: Histogram<u64>,
    interval: Duration,
    next_flush: Instant,
    tx: UnboundedSender<IntervalRecord>,
    /// Debugging: every latency recorded (ns), handed to `raw_out` at each flush.
    raw: Option<(Vec<u64>, RawLatencies)>,
}

impl WorkerRecorder {
    pub fn new(
        worker: usize,
        t0: Instant,
        interval: Duration,
        tx: UnboundedSender<IntervalRecord>,
    ) -> Self {
        WorkerRecorder {
            worker,
            counters: Counters::default(),
            latency: new_histogram(),
            service: new_histogram(),
            interval,
            next_flush: t0 + interval,
            tx,
            raw: None,
        }
    }

    /// Debugging: also keeps every latency recorded, appended to `out` at each flush.
    pub fn keep_raw_latencies(&mut self, out: Arc<Mutex<Vec<u64>>>) {
        self.raw = Some((Vec::new(), out));
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

    /// Hands the interval's records to the reporter when the interval is over.
    pub fn maybe_flush(&mut self, now: Instant) {
        if now >= self.next_flush {
            self.flush();
            // Skip intervals in which this worker was blocked rather than bunching flushes.
            while self.next_flush <= now {
                self.next_flush += self.interval;
            }
        }
    }

    /// Hands everything recorded so far to the reporter.
    pub fn flush(&mut self) {
        let record = IntervalRecord {
            worker: self.worker,
            counters: std::mem::take(&mut self.counters),
            latency: self.latency.clone(),
            service: self.service.clone(),
        };
        self.latency.reset();
        self.service.reset();
        if let Some((raw, out)) = &mut self.raw
            && let Ok(mut out) = out.lock()
        {
            out.append(raw);
        }
        // The reporter outlives the workers; if it is gone the run is over anyway.
        let _ = self.tx.send(record);
    }
}

impl Drop for WorkerRecorder {
    fn drop(&mut self) {
        if self.counters != Counters::default()
            || !self.latency.is_empty()
            || self.raw.as_ref().is_some_and(|(raw, _)| !raw.is_empty())
        {
            self.flush();
        }
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_hands_over_and_resets() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = Instant::now();
        let mut r = WorkerRecorder::new(3, t0, Duration::from_secs(1), tx);
        r.record_success(
            Duration::from_micros(10),
            Duration::from_micros(8),
            5,
            50,
            100,
        );
        r.record_error(ErrorKind::Timeout, true);
        r.maybe_flush(t0); // interval not over yet
        assert!(rx.try_recv().is_err());
        r.maybe_flush(t0 + Duration::from_millis(2500));
        let rec = rx.try_recv().unwrap();
        assert_eq!(rec.worker, 3);
        assert_eq!(rec.counters.rows, 5);
        assert_eq!(rec.counters.retries, 1);
        assert_eq!(rec.counters.errors[&ErrorKind::Timeout], 1);
        assert_eq!(rec.latency.len(), 1);
        r.record_success(Duration::from_micros(1), Duration::from_micros(1), 1, 1, 0);
        drop(r);
        let last = rx.try_recv().unwrap();
        assert_eq!(last.counters.rows, 1);
        assert_eq!(last.latency.len(), 1);
    }
}
