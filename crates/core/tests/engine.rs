//! Engine behaviour with a small in-memory workload and a recording sink: every row
//! delivered once for any worker count, retries, fatal errors, limits, open loop (its rate,
//! its pacing's accuracy), stop, and each report interval holding what completed in it.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tsload_core::engine::{
    self, IntervalReport, LoadConfig, LoadMode, NoObserver, Observer, StopHandle, StopReason,
};
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagSource, TagValue};
use tsload_core::workload::device_range;
use tsload_core::{
    Batch, BatchId, BatchSource, ColumnValues, ErrorKind, NullSink, Sink, SinkConn, SinkError,
    Workload, WriteAck,
};

#[derive(Debug)]
struct NoTags;
impl TagSource for NoTags {
    fn device_tags(&self, _device: u32, out: &mut Vec<TagValue>) {
        out.clear();
    }
}

struct Grid {
    schema: Schema,
    steps: u32,
}

impl Grid {
    fn workload(devices: u32, steps: u32) -> Arc<dyn Workload> {
        Arc::new(Grid {
            schema: Schema {
                tables: vec![TableSchema {
                    name: "t".into(),
                    tags: vec![],
                    fields: vec![FieldDef {
                        name: "v".into(),
                        data_type: DataType::BigInt,
                    }],
                }],
                tag_slots: 0,
                device_count: devices,
                tags: Arc::new(NoTags),
            },
            steps,
        })
    }
}

struct GridSource {
    devices: std::ops::Range<u32>,
    steps: u32,
    next: u64,
}

impl BatchSource for GridSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let n_dev = (self.devices.end - self.devices.start) as u64;
        let total = n_dev * self.steps as u64;
        let t = &mut batch.tables[0];
        let mut n = 0;
        while n < max_rows && self.next < total {
            let step = self.next / n_dev.max(1);
            let dev = self.devices.start + (self.next % n_dev) as u32;
            t.device.push(dev);
            t.ts.push(step as i64);
            if let ColumnValues::Int(v) = &mut t.columns[0].values {
                v.push(dev as i64 * 1_000_000 + step as i64);
            }
            self.next += 1;
            n += 1;
        }
        n
    }
}

impl Workload for Grid {
    fn schema(&self) -> &Schema {
        &self.schema
    }
    fn total_rows(&self) -> Option<u64> {
        Some(self.schema.device_count as u64 * self.steps as u64)
    }
    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        Box::new(GridSource {
            devices: device_range(self.schema.device_count, worker, workers),
            steps: self.steps,
            next: 0,
        })
    }
}

/// Keeps every row it acks; fails the first `fail_first` writes with `fail_kind`; sleeps
/// `stall` on request number `stall_at`. The first `ambiguous_first` writes store their
/// rows and then fail as if the answer was lost; with `ledger`, a write of a batch id it
/// has stored already stores nothing and acks a duplicate (exactly-once delivery).
#[derive(Default)]
struct Recording {
    rows: Mutex<Vec<i64>>,
    ids: Mutex<Vec<BatchId>>,
    ambiguous_first: u32,
    ledger: Option<Mutex<HashSet<(u32, u64)>>>,
    writes: AtomicU32,
    fail_first: u32,
    fail_kind: Option<ErrorKind>,
    stall_at: Option<u32>,
    stall: Duration,
    delay: Duration,
    /// When each successful write answered, and its rows.
    acks: Mutex<Vec<(Instant, u64)>>,
}

struct RecordingConn(Arc<Recording>);

struct RecordingSink(Arc<Recording>);

impl Sink for RecordingSink {
    type Conn = RecordingConn;
    async fn prepare(&self, _schema: &Arc<Schema>) -> Result<(), SinkError> {
        Ok(())
    }
    async fn connect(
        &self,
        _schema: &Arc<Schema>,
        _worker: usize,
    ) -> Result<RecordingConn, SinkError> {
        Ok(RecordingConn(self.0.clone()))
    }
}

impl SinkConn for RecordingConn {
    fn settles_ambiguity(&self) -> bool {
        self.0.ledger.is_some()
    }

    async fn write(&mut self, batch: &Batch, id: BatchId) -> Result<WriteAck, SinkError> {
        self.0.ids.lock().unwrap().push(id);
        if let Some(ledger) = &self.0.ledger
            && ledger.lock().unwrap().contains(&(id.worker, id.seq))
        {
            return Ok(WriteAck {
                rows: batch.rows() as u64,
                bytes: 0,
                duplicate: true,
                metrics: None,
            });
        }
        let n = self.0.writes.fetch_add(1, Ordering::SeqCst);
        let store = |rec: &Recording| {
            if let ColumnValues::Int(v) = &batch.tables[0].columns[0].values {
                rec.rows.lock().unwrap().extend_from_slice(v);
            }
            if let Some(ledger) = &rec.ledger {
                ledger.lock().unwrap().insert((id.worker, id.seq));
            }
        };
        if n < self.0.ambiguous_first {
            store(&self.0);
            return Err(SinkError::new(ErrorKind::Connection, "lost after COMMIT").into_ambiguous());
        }
        if n < self.0.fail_first {
            return Err(SinkError::new(
                self.0.fail_kind.unwrap_or(ErrorKind::Unavailable),
                "HTTP 500",
            ));
        }
        if self.0.stall_at == Some(n) {
            tokio::time::sleep(self.0.stall).await;
        } else if !self.0.delay.is_zero() {
            tokio::time::sleep(self.0.delay).await;
        }
        store(&self.0);
        self.0
            .acks
            .lock()
            .unwrap()
            .push((Instant::now(), batch.rows() as u64));
        Ok(WriteAck {
            rows: batch.rows() as u64,
            bytes: 8 * batch.rows() as u64,
            duplicate: false,
            metrics: None,
        })
    }
}

fn cfg(workers: usize, batch: usize) -> LoadConfig {
    LoadConfig {
        workers,
        batch,
        report_interval: Duration::from_millis(50),
        retry_backoff: Duration::from_millis(1),
        ..LoadConfig::default()
    }
}

async fn run(w: Arc<dyn Workload>, rec: Arc<Recording>, c: LoadConfig) -> engine::RunOutcome {
    engine::run(
        w,
        Arc::new(RecordingSink(rec)),
        c,
        StopHandle::new(),
        &mut NoObserver,
    )
    .await
    .expect("run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_once_for_any_worker_count() {
    let expected: BTreeSet<i64> = (0..37i64)
        .flat_map(|d| (0..50i64).map(move |s| d * 1_000_000 + s))
        .collect();
    for workers in [1, 3, 8, 50] {
        for in_flight in [1, 3] {
            let rec = Arc::new(Recording::default());
            let mut c = cfg(workers, 7);
            c.in_flight = in_flight;
            let out = run(Grid::workload(37, 50), rec.clone(), c).await;
            let rows = rec.rows.lock().unwrap().clone();
            assert_eq!(
                rows.len(),
                expected.len(),
                "workers {workers} in_flight {in_flight}"
            );
            assert_eq!(rows.iter().copied().collect::<BTreeSet<_>>(), expected);
            assert_eq!(out.counters.rows, expected.len() as u64);
            assert_eq!(out.counters.metrics, expected.len() as u64);
            assert_eq!(out.latency.len(), out.counters.requests);
            assert_eq!(out.stop_reason, StopReason::DataEnd);
        }
    }
}

#[tokio::test]
async fn retryable_errors_are_retried_and_counted() {
    let rec = Arc::new(Recording {
        fail_first: 2,
        ..Default::default()
    });
    let out = run(Grid::workload(1, 10), rec.clone(), cfg(1, 100)).await;
    assert_eq!(out.counters.rows, 10);
    assert_eq!(out.counters.retries, 2);
    assert_eq!(out.counters.errors[&ErrorKind::Unavailable], 2);
    assert_eq!(rec.rows.lock().unwrap().len(), 10, "written once");
    assert!(out.fatal.is_none());
}

#[tokio::test]
async fn fatal_error_stops_the_run_with_its_message() {
    let rec = Arc::new(Recording {
        fail_first: 1,
        fail_kind: Some(ErrorKind::Rejected),
        ..Default::default()
    });
    let out = run(Grid::workload(1, 100), rec.clone(), cfg(1, 10)).await;
    assert_eq!(out.stop_reason, StopReason::Fatal);
    assert_eq!(out.counters.rows, 0);
    assert_eq!(out.counters.failed_rows, 10);
    assert!(out.fatal.unwrap().message.contains("HTTP 500"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_limit_is_exact() {
    let rec = Arc::new(Recording::default());
    let mut c = cfg(4, 10);
    c.rows = Some(1234);
    let out = run(Grid::workload(100, 100), rec.clone(), c).await;
    assert_eq!(out.counters.rows, 1234);
    assert_eq!(rec.rows.lock().unwrap().len(), 1234);
    assert_eq!(out.stop_reason, StopReason::RowLimit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_offers_the_rate_and_corrects_for_a_stall() {
    // 2 workers x 10 rows per request at 2,000 rows/s: one request per worker every 10 ms.
    let rec = Arc::new(Recording {
        stall_at: Some(5),
        stall: Duration::from_millis(200),
        ..Default::default()
    });
    let mut c = cfg(2, 10);
    c.mode = LoadMode::Open { rate: 2000.0 };
    c.duration = Some(Duration::from_millis(600));
    let t = Instant::now();
    let out = run(Grid::workload(2, 1_000_000), rec, c).await;
    let took = t.elapsed();
    assert_eq!(out.stop_reason, StopReason::Duration);
    // ~1,200 rows offered in 0.6 s; allow for scheduling noise on a busy machine.
    assert!(
        (900..=1300).contains(&out.counters.rows),
        "rows {} in {took:?}",
        out.counters.rows
    );
    // The stalled worker's queued requests count their wait: corrected latency p99 >= the
    // stall, while service time of most requests stays small.
    assert!(
        out.latency.max() >= 190_000_000,
        "max latency {}",
        out.latency.max()
    );
    assert!(out.latency.value_at_quantile(0.9) > out.service.value_at_quantile(0.9));
    assert!(out.service.value_at_quantile(0.5) < 50_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_finishes_in_flight_and_reports_interrupted() {
    let rec = Arc::new(Recording {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let stop = StopHandle::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        s2.stop(StopReason::Interrupted);
    });
    let out = engine::run(
        Grid::workload(4, 1_000_000),
        Arc::new(RecordingSink(rec.clone())),
        cfg(2, 10),
        stop,
        &mut NoObserver,
    )
    .await
    .unwrap();
    assert_eq!(out.stop_reason, StopReason::Interrupted);
    assert!(out.counters.rows > 0);
    assert_eq!(
        out.counters.rows as usize,
        rec.rows.lock().unwrap().len(),
        "acked == written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_requests_leave_at_their_due_time() {
    // One request of one row every 1/700 s = 1.43 ms into the null target, which answers at
    // once: latency from the due time is the pacer's lateness plus the engine's overhead.
    // A period that is not a whole millisecond puts the due times at every phase of
    // tokio's 1 ms timer wheel, whose `sleep_until` rounds up (and the runtime's park
    // rounds up again): it made the median 0.87 to 1.0 ms on a 2-core VM. The precise
    // timer is tens of microseconds late at most, typically a few; 300 us leaves room for
    // a machine busy compiling. Two requests in flight: each completion cancels the wait
    // for the next due time, which must not make it late either.
    let mut c = cfg(1, 1);
    c.in_flight = 2;
    c.mode = LoadMode::Open { rate: 700.0 };
    c.duration = Some(Duration::from_secs(1));
    let out = engine::run(
        Grid::workload(1, 1_000_000),
        Arc::new(NullSink),
        c,
        StopHandle::new(),
        &mut NoObserver,
    )
    .await
    .unwrap();
    assert_eq!(out.stop_reason, StopReason::Duration);
    let n = out.counters.requests;
    assert!((650..=701).contains(&n), "requests {n}");
    let p50 = Duration::from_nanos(out.latency.value_at_quantile(0.5));
    assert!(
        p50 < Duration::from_micros(300),
        "median latency {p50:?} from the due time (p90 {:?})",
        Duration::from_nanos(out.latency.value_at_quantile(0.9))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duration_ends_an_open_loop_wait_for_a_request_due_after_it() {
    // One request every 10 s, a run of 300 ms: the second request is due after the end,
    // and the run ends at its duration, not when that request would be due.
    let mut c = cfg(1, 1);
    c.mode = LoadMode::Open { rate: 0.1 };
    c.duration = Some(Duration::from_millis(300));
    let t = Instant::now();
    let out = engine::run(
        Grid::workload(1, 100),
        Arc::new(NullSink),
        c,
        StopHandle::new(),
        &mut NoObserver,
    )
    .await
    .unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(out.stop_reason, StopReason::Duration);
    assert_eq!(out.counters.requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_an_open_loop_wait_for_a_far_due_time() {
    // One request every 10 s: the second is due long after the stop.
    let stop = StopHandle::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        s2.stop(StopReason::Interrupted);
    });
    let mut c = cfg(1, 1);
    c.mode = LoadMode::Open { rate: 0.1 };
    let t = Instant::now();
    let out = engine::run(
        Grid::workload(1, 100),
        Arc::new(NullSink),
        c,
        stop,
        &mut NoObserver,
    )
    .await
    .unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(out.stop_reason, StopReason::Interrupted);
    assert_eq!(out.counters.requests, 1);
}

#[tokio::test]
async fn batch_ids_are_unique_per_worker_and_count_attempts() {
    let rec = Arc::new(Recording {
        fail_first: 2,
        ..Recording::default()
    });
    let mut c = cfg(3, 10);
    c.in_flight = 2;
    let out = run(Grid::workload(6, 20), rec.clone(), c).await;
    assert_eq!(out.counters.rows, 120);
    let ids = rec.ids.lock().unwrap().clone();
    let firsts: Vec<_> = ids.iter().filter(|id| id.attempt == 0).collect();
    let distinct: HashSet<(u32, u64)> = firsts.iter().map(|id| (id.worker, id.seq)).collect();
    assert_eq!(
        distinct.len(),
        firsts.len(),
        "a (worker, seq) was used twice: {ids:?}"
    );
    assert_eq!(firsts.len() as u64, out.counters.requests);
    // The two failed attempts were retried under the same id with attempts 1 and 2 (or two
    // batches each with attempt 1).
    let retries: Vec<_> = ids.iter().filter(|id| id.attempt > 0).collect();
    assert_eq!(retries.len(), 2, "{ids:?}");
    for r in retries {
        assert!(
            firsts
                .iter()
                .any(|f| (f.worker, f.seq) == (r.worker, r.seq)),
            "retry {r:?} of no first attempt"
        );
    }
    for w in 0..3u32 {
        let mut seqs: Vec<u64> = firsts
            .iter()
            .filter(|id| id.worker == w)
            .map(|id| id.seq)
            .collect();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            (0..seqs.len() as u64).collect::<Vec<_>>(),
            "worker {w}"
        );
    }
}

#[tokio::test]
async fn ambiguous_failures_are_counted_where_nothing_settles_them() {
    // At-least-once: the first two writes stored their rows and lost the answer; their
    // retries store them again. The report must bound what is stored.
    let rec = Arc::new(Recording {
        ambiguous_first: 2,
        ..Recording::default()
    });
    let out = run(Grid::workload(2, 10), rec.clone(), cfg(1, 5)).await;
    let stored = rec.rows.lock().unwrap().len() as u64;
    assert_eq!(out.counters.rows, 20);
    // One batch failed ambiguously twice (2 x 5 rows) or two batches once: 10 either way.
    assert_eq!(out.counters.ambiguous_rows, 10);
    assert_eq!(out.counters.recovered_rows, 0);
    assert_eq!(stored, 30);
    assert!(
        stored >= out.counters.rows && stored <= out.counters.rows + out.counters.ambiguous_rows
    );
    assert_eq!(out.counters.errors.get(&ErrorKind::Connection), Some(&2));
}

#[tokio::test]
async fn a_ledger_settles_ambiguous_failures_exactly_once() {
    let rec = Arc::new(Recording {
        ambiguous_first: 3,
        ledger: Some(Mutex::new(HashSet::new())),
        ..Recording::default()
    });
    let mut c = cfg(2, 4);
    c.max_retries = 5;
    let out = run(Grid::workload(4, 10), rec.clone(), c).await;
    let stored = rec.rows.lock().unwrap().clone();
    assert_eq!(out.counters.rows, 40);
    assert_eq!(stored.len(), 40, "a batch was stored twice");
    assert_eq!(stored.iter().collect::<BTreeSet<_>>().len(), 40);
    assert_eq!(out.counters.ambiguous_rows, 0);
    // Every ambiguous write had landed: each retry found it in the ledger.
    assert_eq!(out.counters.recovered_rows, 12);
    assert_eq!(out.counters.retries, 3);
    assert_eq!(out.stop_reason, StopReason::DataEnd);
}

#[tokio::test]
async fn a_batch_given_up_after_an_ambiguous_attempt_stays_ambiguous_with_a_ledger() {
    let rec = Arc::new(Recording {
        ambiguous_first: 1,
        fail_first: 100,
        fail_kind: Some(ErrorKind::Connection),
        ledger: Some(Mutex::new(HashSet::new())),
        ..Recording::default()
    });
    let mut c = cfg(1, 5);
    c.max_retries = 0;
    let out = run(Grid::workload(1, 5), rec.clone(), c).await;
    assert_eq!(out.stop_reason, StopReason::Fatal);
    assert_eq!(out.counters.rows, 0);
    assert_eq!(out.counters.failed_rows, 5);
    assert_eq!(out.counters.ambiguous_rows, 5);
    assert_eq!(rec.rows.lock().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_counts_requests_due_but_never_sent() {
    // 1 worker offered 100 requests/s for 1 s, each taking 50 ms: ~20 are sent, the
    // other ~80 were due before the deadline and must be counted, not forgotten.
    let rec = Arc::new(Recording {
        delay: Duration::from_millis(50),
        ..Recording::default()
    });
    let mut c = cfg(1, 10);
    c.mode = LoadMode::Open { rate: 1000.0 };
    c.duration = Some(Duration::from_secs(1));
    let out = run(Grid::workload(1, 100_000), rec, c).await;
    assert_eq!(out.stop_reason, StopReason::Duration);
    assert_eq!(out.offered_rows_per_s, Some(1000.0));
    let due = out.counters.requests + out.counters.unsent_requests;
    assert_eq!(
        due, 100,
        "sent {} + unsent {}",
        out.counters.requests, out.counters.unsent_requests
    );
    assert!(out.counters.unsent_requests >= 70, "{:?}", out.counters);
    assert_eq!(out.counters.unsent_rows, out.counters.unsent_requests * 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_that_keeps_up_leaves_nothing_unsent() {
    let rec = Arc::new(Recording::default());
    let mut c = cfg(2, 10);
    c.mode = LoadMode::Open { rate: 2000.0 };
    c.duration = Some(Duration::from_millis(500));
    let out = run(Grid::workload(4, 100_000), rec, c).await;
    assert_eq!(out.counters.unsent_requests, 0, "{:?}", out.counters);
    assert_eq!(out.counters.requests, 100);
}

/// Keeps each reported interval (its span and its rows) and the run's start as the
/// observer saw it (a few microseconds after the engine's).
#[derive(Default)]
struct Intervals {
    t0: Option<Instant>,
    seen: Vec<(Duration, Duration, u64)>,
}

impl Observer for Intervals {
    fn on_start(&mut self, _started_at: std::time::SystemTime) {
        self.t0 = Some(Instant::now());
    }
    fn on_interval(&mut self, r: &IntervalReport) {
        self.seen.push((r.start, r.end, r.counters.rows));
    }
}

/// Checks that each interval reported the rows the sink acknowledged in it, by the sink's
/// own clock: at least those acknowledged `slack` inside it and at most those up to `slack`
/// outside it (the engine reads its clock just after the sink, and a thread may be
/// preempted in between). Also that the intervals follow each other from the start and
/// hold every row once. Compared with the sink's clock rather than the offered rate, this
/// holds on a machine so busy that the load itself comes in bursts.
fn check_filed(iv: &Intervals, acks: &[(Instant, u64)], slack: Duration, total: u64) {
    let t0 = iv.t0.expect("started");
    let at = |t: &Instant| t.saturating_duration_since(t0);
    let spans = &iv.seen;
    let mut last_end = Duration::ZERO;
    for &(start, end, rows) in spans {
        assert_eq!(start, last_end, "{spans:?}");
        last_end = end;
        let surely: u64 = acks
            .iter()
            .filter(|(t, _)| at(t) >= start + slack && at(t) + slack < end)
            .map(|a| a.1)
            .sum();
        let maybe: u64 = acks
            .iter()
            .filter(|(t, _)| at(t) + slack >= start && at(t) < end + slack)
            .map(|a| a.1)
            .sum();
        assert!(
            (surely..=maybe).contains(&rows),
            "interval {start:?}..{end:?} reported {rows} rows; {surely} to {maybe} were \
             acknowledged in it: {spans:?}"
        );
    }
    assert_eq!(spans.iter().map(|s| s.2).sum::<u64>(), total, "{spans:?}");
    assert_eq!(acks.iter().map(|a| a.1).sum::<u64>(), total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_open_loop_interval_reports_the_writes_that_completed_in_it() {
    // 4 workers, 10 rows a request at 1,000 rows/s (a request every 10 ms, each worker's
    // every 40 ms), answered 30 ms after they are sent, 200 ms intervals: 200 rows in
    // each interval but the first (30 ms of it pass before the first answer). Before the
    // fix a worker handed an interval over at its first answer after the interval's end,
    // after the reporter had closed the interval, with that answer in it: the first
    // interval showed 0 rows, each later one the one before, and the last, short one held
    // a whole interval more (twice the rate). The rows are checked against the sink's
    // own clock (`check_filed`), not the offered rate: on a starved machine the load
    // really comes in bursts (0.1 then 1.9 times the rate in two intervals, seen with two
    // CPU hogs on two cores).
    let rec = Arc::new(Recording {
        delay: Duration::from_millis(30),
        ..Default::default()
    });
    let mut c = cfg(4, 10);
    c.in_flight = 2;
    c.mode = LoadMode::Open { rate: 1000.0 };
    c.duration = Some(Duration::from_millis(1500));
    c.report_interval = Duration::from_millis(200);
    let mut iv = Intervals::default();
    let out = engine::run(
        Grid::workload(4, 1_000_000),
        Arc::new(RecordingSink(rec.clone())),
        c,
        StopHandle::new(),
        &mut iv,
    )
    .await
    .unwrap();
    assert_eq!(out.stop_reason, StopReason::Duration);
    let acks = rec.acks.lock().unwrap().clone();
    check_filed(&iv, &acks, Duration::from_millis(20), out.counters.rows);
    assert_eq!(iv.seen.len() as u64, out.intervals);
    assert!(iv.seen.len() >= 7, "{:?}", iv.seen);
    assert!(
        iv.seen[0].2 > 0,
        "the first interval is empty: {:?}",
        iv.seen
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_for_an_answer_does_not_hold_back_an_interval() {
    // Closed loop, 2 workers, 20 ms answers, 600 ms intervals; write 16 (at about 160 ms)
    // takes 1.5 s. Its worker waits for the answer through two interval ends and must
    // hand each over as it ends, with the answers it had before: a worker that handed an
    // interval over only with its next answer would hold it past the reporter's grace
    // (half an interval), and its rows would count in a later interval. Before the fix
    // the first interval held nothing (each worker handed it over with its first answer
    // past its end, after the reporter had closed it) and the slow answer came in the
    // interval after the one it came in, with everything its worker had recorded before.
    let rec = Arc::new(Recording {
        delay: Duration::from_millis(20),
        stall_at: Some(16),
        stall: Duration::from_millis(1500),
        ..Default::default()
    });
    let mut c = cfg(2, 10);
    c.duration = Some(Duration::from_millis(2000));
    c.report_interval = Duration::from_millis(600);
    let mut iv = Intervals::default();
    let out = engine::run(
        Grid::workload(2, 1_000_000),
        Arc::new(RecordingSink(rec.clone())),
        c,
        StopHandle::new(),
        &mut iv,
    )
    .await
    .unwrap();
    let acks = rec.acks.lock().unwrap().clone();
    check_filed(&iv, &acks, Duration::from_millis(20), out.counters.rows);
    assert!(iv.seen.len() >= 4, "{:?}", iv.seen);
}

/// An open-loop run that runs out of rows on schedule achieves the offered rate, not
/// more: 20 batches at 10 ms apart span 200 ms of offered load, though the last leaves at
/// 190 ms (20 in 19 periods read as 105%; the CLI showed 100.4% at 100,000 rows/s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_run_that_runs_out_of_rows_achieves_no_more_than_it_offered() {
    let mut c = cfg(1, 10);
    c.mode = LoadMode::Open { rate: 1000.0 };
    c.rows = Some(200);
    let out = engine::run(
        Grid::workload(1, 1_000_000),
        Arc::new(NullSink),
        c,
        StopHandle::new(),
        &mut NoObserver,
    )
    .await
    .unwrap();
    assert_eq!(out.counters.rows, 200);
    let achieved = out.counters.rows as f64 / out.elapsed.as_secs_f64();
    assert!(
        achieved <= 1000.0,
        "achieved {achieved} rows/s of 1000 offered"
    );
    assert!(
        out.elapsed >= Duration::from_millis(200),
        "{:?}",
        out.elapsed
    );
}
