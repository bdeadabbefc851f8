//! The load engine: prepares the sink, connects every worker, then drives workers as tokio
//! tasks in closed loop (next request on ack) or open loop (request i of a worker is due at
//! `t0 + i * batch / rate_per_worker`, sent within tens of microseconds of it, latency
//! measured from that due time), while the calling task acts as the reporter that merges
//! interval records. A write counts in the report interval in which it completed: workers
//! hand each interval over when it ends (even while they wait), and the reporter reports an
//! interval once every worker has handed it over (`report_intervals`, both engines').

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_utils::CachePadded;
use futures_util::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;
use tokio::sync::{mpsc, watch};

use crate::batch::Batch;
use crate::pacing::{Due, Pacer, Schedule};
use crate::recorder::{
    Counters, HandOver, IntervalRecord, IntervalTicker, WorkerRecorder, boundary, flushing,
    new_histogram,
};
use crate::shard::Gate;
use crate::sink::{BatchId, ErrorKind, MAX_RETRY_AFTER, Sink, SinkConn, SinkError, WriteAck};
use crate::workload::{BatchSource, Workload};

/// Closed or open loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadMode {
    /// Each in-flight slot sends its next request as soon as the previous one is acked.
    Closed,
    /// Offered rate in rows per second for the whole run, spread evenly over the workers.
    Open { rate: f64 },
}

/// How to drive the load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadConfig {
    pub workers: usize,
    /// Rows per request.
    pub batch: usize,
    /// Concurrent requests per worker (each has its own connection).
    pub in_flight: usize,
    pub mode: LoadMode,
    /// Stop issuing after this long.
    pub duration: Option<Duration>,
    /// Stop after this many rows (over all workers).
    pub rows: Option<u64>,
    pub report_interval: Duration,
    /// Times a batch that failed with a retryable error is sent again.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one (capped at 5 s).
    pub retry_backoff: Duration,
    /// Coordination with other shards around prepare and the start (none by default).
    pub gate: Gate,
    /// Debugging: keep every request's corrected latency (nanoseconds) in
    /// [`RunOutcome::raw_latencies`], to check the histograms against.
    pub keep_raw_latencies: bool,
    /// Ask the target what its tables hold ([`Sink::storage_bytes`]) before the clock
    /// starts and after the last write: [`RunOutcome::storage_bytes`].
    pub measure_storage: bool,
    /// Ask the target what it stored ([`Sink::tally`]) before the clock starts and after
    /// the last write: [`RunOutcome::stored`].
    pub verify_stored: bool,
    /// How long requests still in flight after a signal (Ctrl-C, SIGTERM) may take before
    /// they are abandoned: [`RunOutcome::abandoned_requests`], their rows counted as
    /// unknown (ambiguous).
    pub grace: Duration,
    /// The same after the run's duration: requests sent in its last moments are part of
    /// it and are waited for, this long at most. No retry starts after the duration.
    pub drain: Duration,
}

/// [`LoadConfig::grace`] unless set: a service manager's or Kubernetes' stop waits longer
/// (10 s, 30 s) before it kills.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// [`LoadConfig::drain`] unless set: a loaded server may take seconds per request, and a
/// request it answers is part of the run.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(30);

/// The longest the questions to the server about what it stored and its storage may take
/// together, before the run and again after it ([`LoadConfig::grace`] after a signal): a
/// server that stopped answering cannot hold the run or its report back.
pub const AFTER_RUN_LIMIT: Duration = Duration::from_secs(30);

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            workers: 1,
            batch: 1000,
            in_flight: 1,
            mode: LoadMode::Closed,
            duration: None,
            rows: None,
            report_interval: Duration::from_secs(1),
            max_retries: 3,
            retry_backoff: Duration::from_millis(100),
            gate: Gate::default(),
            keep_raw_latencies: false,
            measure_storage: false,
            verify_stored: false,
            grace: DEFAULT_GRACE,
            drain: DEFAULT_DRAIN,
        }
    }
}

/// Why the run stopped issuing requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    DataEnd,
    Duration,
    RowLimit,
    Interrupted,
    Fatal,
    /// A query run's request limit was reached.
    RequestLimit,
}

/// Asks a running engine to stop issuing requests (Ctrl-C, a fatal error, a limit).
/// In-flight requests are finished and recorded, or, past the grace after the run's end,
/// abandoned ([`StopHandle::abandon`]) and recorded as unknown.
#[derive(Debug, Clone)]
pub struct StopHandle {
    /// Set by [`StopHandle::stop`], read by [`StopHandle::is_stopped`] before every
    /// request: a plain load of a line no one writes until the stop (the watch's value sits
    /// behind a lock whose read takes and gives back a count: two atomic writes to a line
    /// every worker shares, per request, bounced between the cores).
    stopped: Arc<CachePadded<AtomicBool>>,
    /// Wakes [`StopHandle::stopped`] (the flag says whether it was a stop).
    tx: Arc<watch::Sender<()>>,
    reason: Arc<Mutex<Option<StopReason>>>,
    /// Set by a stop for [`StopReason::Interrupted`] even when another reason came first:
    /// retries end at once then (the report must be out within a grace period).
    interrupted: Arc<AtomicBool>,
    /// Set by [`StopHandle::abandon`]: requests in flight are given up on.
    abandoned: Arc<AtomicBool>,
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl StopHandle {
    pub fn new() -> Self {
        StopHandle {
            stopped: Arc::new(CachePadded::new(AtomicBool::new(false))),
            tx: Arc::new(watch::channel(()).0),
            reason: Arc::new(Mutex::new(None)),
            interrupted: Arc::new(AtomicBool::new(false)),
            abandoned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Gives up on every request in flight: each ends at once, its rows unknown. Called
    /// [`LoadConfig::grace`] after the run's end.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
        self.tx.send_replace(());
    }

    /// Whether [`StopHandle::abandon`] was called.
    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Resolves once [`StopHandle::abandon`] has been called.
    pub async fn abandoned(&self) {
        self.until(Self::is_abandoned).await;
    }

    /// Resolves once a signal has stopped the run.
    pub async fn interrupted(&self) {
        self.until(Self::is_interrupted).await;
    }

    /// Resolves once `done` holds (each stop or abandon wakes the waiters).
    async fn until(&self, done: fn(&StopHandle) -> bool) {
        // Subscribed before the flag is read: a change after the read is seen.
        let mut rx = self.tx.subscribe();
        while !done(self) {
            // The sender lives in `self`, so waiting cannot fail.
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Abandons what is in flight `drain` after `deadline` (if any) or `grace` after a
    /// signal, whichever comes first. The caller aborts the task when the run is over.
    pub fn abandon_after_end(
        &self,
        deadline: Option<Instant>,
        drain: Duration,
        grace: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let stop = self.clone();
        tokio::spawn(async move {
            let drained = async {
                match deadline.and_then(|d| d.checked_add(drain)) {
                    Some(at) => {
                        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let signalled = async {
                stop.interrupted().await;
                tokio::time::sleep(grace).await;
            };
            tokio::select! {
                _ = drained => {}
                _ = signalled => {}
            }
            stop.abandon();
        })
    }

    /// Stops the run; the first reason given is the one reported.
    pub fn stop(&self, reason: StopReason) {
        if reason == StopReason::Interrupted {
            self.interrupted.store(true, Ordering::Relaxed);
        }
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.stopped.store(true, Ordering::Release);
        self.tx.send_replace(());
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Whether a signal (Ctrl-C, SIGTERM) stopped the run, whatever stopped it first.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    pub fn reason(&self) -> Option<StopReason> {
        self.reason.lock().ok().and_then(|r| *r)
    }

    /// Resolves once [`StopHandle::stop`] has been called.
    pub async fn stopped(&self) {
        self.until(Self::is_stopped).await;
    }
}

/// The merged records of one report interval.
#[derive(Debug)]
pub struct IntervalReport {
    pub index: u64,
    /// Start and end of the interval, measured from the run's start.
    pub start: Duration,
    pub end: Duration,
    pub counters: Counters,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    /// Counters of the whole run so far, this interval included.
    pub totals: Counters,
}

/// Sees the run as it goes: the CLI's progress line and interval log hang here.
pub trait Observer {
    /// Called once, when the load starts (after prepare and connect).
    fn on_start(&mut self, _started_at: SystemTime) {}
    fn on_interval(&mut self, report: &IntervalReport);
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn on_interval(&mut self, _report: &IntervalReport) {}
}

/// What a finished run measured.
#[derive(Debug)]
pub struct RunOutcome {
    pub started_at: SystemTime,
    /// From the first request to the last acknowledgement.
    pub elapsed: Duration,
    pub counters: Counters,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    pub stop_reason: StopReason,
    /// The error that stopped the run, if one did.
    pub fatal: Option<SinkError>,
    pub intervals: u64,
    /// Open loop: the rows per second offered (`None` in closed loop).
    pub offered_rows_per_s: Option<f64>,
    /// Every request's corrected latency in ns, with [`LoadConfig::keep_raw_latencies`].
    pub raw_latencies: Vec<u64>,
    /// With [`LoadConfig::measure_storage`]: the target's storage for the tables before
    /// and after the load, or why it could not be read.
    pub storage_bytes: Option<Result<(u64, u64), String>>,
    /// With [`LoadConfig::verify_stored`]: what the server says it stored during the run,
    /// or why it cannot tell.
    pub stored: Option<Result<crate::stored::Stored, String>>,
    /// How long the questions to the server about its storage and what it stored took,
    /// before the clock started and after the last write (wall time outside the run's
    /// figures); `None` when none was asked.
    pub server_questions: Option<crate::stored::ServerQuestions>,
    /// With series churn or pods, the devices written: those whose first row was sent
    /// ([`Workload::counts_devices`]).
    pub devices_written: Option<u64>,
    /// With series churn or pods, the series written where each field of a device in a
    /// table is one (as Prometheus and VictoriaMetrics keep them).
    pub series_written: Option<u64>,
    /// Requests still unanswered [`LoadConfig::grace`] after the run's end, given up on
    /// (their rows are in `counters.failed_rows` and `counters.ambiguous_rows`: they may
    /// or may not be stored).
    pub abandoned_requests: u64,
}

/// Failures before any load was sent.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid load settings: {0}")]
    Config(String),
    #[error("preparing the target failed: {0}")]
    Prepare(SinkError),
    #[error("worker {worker} could not connect: {error}")]
    Connect { worker: usize, error: SinkError },
    /// A query run's setup request (counted from 0) failed.
    #[error("setup request {request} failed: {error}")]
    Setup { request: usize, error: SinkError },
    /// A query run's data loader failed to connect or to execute a request.
    #[error("loader {loader} failed: {error}")]
    Load { loader: usize, error: SinkError },
    /// The start gate (other shards) failed or timed out.
    #[error("waiting for the other shards: {0}")]
    Gate(String),
}

impl LoadConfig {
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |m: &str| Err(EngineError::Config(m.to_string()));
        if self.workers == 0 {
            return bad("workers must be at least 1");
        }
        if self.batch == 0 {
            return bad("batch must be at least 1 row");
        }
        if self.in_flight == 0 {
            return bad("in_flight must be at least 1");
        }
        if let LoadMode::Open { rate } = self.mode
            && !(rate.is_finite() && rate > 0.0)
        {
            return bad("rate must be a positive number of rows per second");
        }
        if self.report_interval.is_zero() {
            return bad("report_interval must be positive");
        }
        Ok(())
    }
}

/// State every worker shares; touched once per request at most.
struct Shared {
    cfg: LoadConfig,
    t0: Instant,
    deadline: Option<Instant>,
    /// Rows of the row limit claimed, and the claims being filled: a claim's unused rows
    /// come back when its source runs short.
    budget: Mutex<(u64, usize)>,
    stop: StopHandle,
    fatal: Mutex<Option<SinkError>>,
    /// Requests given up on [`LoadConfig::grace`] after the run's end.
    abandoned: AtomicU64,
}

impl Shared {
    /// Claims up to `want` rows of the run's row limit; 0 when the limit is reached: all
    /// of it claimed and no claim left to settle (another worker's claim is filled
    /// without an await, so the wait for its unused rows is short; bounded all the same).
    fn claim_rows(&self, want: usize) -> usize {
        let Some(limit) = self.cfg.rows else {
            return want;
        };
        let since = Instant::now();
        loop {
            let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
            let grant = limit.saturating_sub(b.0).min(want as u64);
            if grant > 0 {
                *b = (b.0 + grant, b.1 + 1);
                return grant as usize;
            }
            if b.1 == 0 || since.elapsed() > Duration::from_secs(1) {
                return 0;
            }
            drop(b);
            std::thread::yield_now();
        }
    }

    /// Settles a claim of `want` rows of which `got` were filled.
    fn settle_rows(&self, want: usize, got: usize) {
        if self.cfg.rows.is_some() && want > 0 {
            let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
            *b = (b.0 - (want - got) as u64, b.1.saturating_sub(1));
        }
    }
}

/// Runs the load to its end and returns what it measured.
///
/// Open loop needs a runtime with I/O enabled (`enable_all`), as sockets do: each worker
/// paces its requests on a timerfd registered with tokio's reactor.
pub async fn run<S: Sink>(
    workload: Arc<dyn Workload>,
    sink: Arc<S>,
    cfg: LoadConfig,
    stop: StopHandle,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, EngineError> {
    cfg.validate()?;
    let schema = Arc::new(workload.schema().clone());
    let scope = workload.scope();
    cfg.gate.before_prepare().await.map_err(EngineError::Gate)?;
    sink.prepare(&schema).await.map_err(EngineError::Prepare)?;
    cfg.gate.after_prepare().await.map_err(EngineError::Gate)?;

    // Connect everything before the clock starts: connection set-up is not ingest time.
    let mut connects = Vec::with_capacity(cfg.workers);
    for worker in 0..cfg.workers {
        let (sink, schema) = (sink.clone(), schema.clone());
        let in_flight = cfg.in_flight;
        connects.push(async move {
            let mut conns = Vec::with_capacity(in_flight);
            for _ in 0..in_flight {
                let conn = sink
                    .connect(&schema, worker)
                    .await
                    .map_err(|error| EngineError::Connect { worker, error })?;
                conns.push(conn);
            }
            Ok::<_, EngineError>(conns)
        });
    }
    let conns = futures_util::future::try_join_all(connects).await?;
    // The questions before the run share the limit of those after it.
    let before_run = tokio::time::Instant::now() + AFTER_RUN_LIMIT;
    let unanswered_before = || {
        SinkError::new(
            ErrorKind::Timeout,
            format!("the server did not answer within {AFTER_RUN_LIMIT:?} before the run"),
        )
    };
    let asked_before = Instant::now();
    let storage_before = if cfg.measure_storage {
        Some(
            tokio::time::timeout_at(before_run, sink.storage_bytes(&schema))
                .await
                .unwrap_or_else(|_| Err(unanswered_before())),
        )
    } else {
        None
    };
    let tally_before = if cfg.verify_stored {
        Some(
            tokio::time::timeout_at(before_run, sink.tally(&schema, &scope, false))
                .await
                .unwrap_or_else(|_| Err(unanswered_before())),
        )
    } else {
        None
    };
    let asked_before = asked_before.elapsed();
    cfg.gate.before_start().await.map_err(EngineError::Gate)?;

    let t0 = Instant::now();
    let started_at = SystemTime::now();
    observer.on_start(started_at);
    let shared = Arc::new(Shared {
        deadline: cfg.duration.map(|d| t0 + d),
        cfg: cfg.clone(),
        t0,
        budget: Mutex::new((0, 0)),
        stop: stop.clone(),
        fatal: Mutex::new(None),
        abandoned: AtomicU64::new(0),
    });
    let abandon = stop.abandon_after_end(shared.deadline, cfg.drain, cfg.grace);

    let (tx, rx) = mpsc::unbounded_channel::<IntervalRecord>();
    let raw = cfg
        .keep_raw_latencies
        .then(|| Arc::new(Mutex::new(Vec::new())));
    let ticker = IntervalTicker::new(t0, cfg.report_interval, cfg.workers);
    let mut tasks = tokio::task::JoinSet::new();
    for (worker, conns) in conns.into_iter().enumerate() {
        // A sink that sends line protocol takes a workload's own lines as they are.
        let source = sink
            .line_text_unit_ns()
            .and_then(|unit| workload.text_source(worker, cfg.workers, unit))
            .unwrap_or_else(|| workload.source(worker, cfg.workers));
        let mut recorder = WorkerRecorder::new(worker, ticker.clone(), tx.clone());
        if let Some(raw) = &raw {
            recorder.keep_raw_latencies(raw.clone());
        }
        let batches = (0..cfg.in_flight)
            .map(|_| Batch::for_schema(&schema))
            .collect();
        tasks.spawn(run_worker(
            worker,
            source,
            conns,
            batches,
            shared.clone(),
            recorder,
        ));
    }
    drop(tx);

    // The reporter: file records by interval, report each once every worker is past it.
    let reported = report_intervals(rx, &ticker, cfg.workers, observer, |record, into| {
        into.add(record)
    })
    .await;

    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            let error = SinkError::new(ErrorKind::Other, format!("a worker failed: {e}"));
            if let Ok(mut f) = shared.fatal.lock() {
                f.get_or_insert(error);
            }
            stop.stop(StopReason::Fatal);
        }
    }
    abandon.abort();

    // The questions after the run share one limit: a server that stopped answering
    // cannot hold the report back (after a signal, the grace is all there is).
    let limit = if stop.is_interrupted() {
        cfg.grace
    } else {
        AFTER_RUN_LIMIT
    };
    let after_run = tokio::time::Instant::now() + limit;
    let asked_after = Instant::now();
    let unanswered = || format!("the server did not answer within {limit:?} after the run");
    let storage_bytes = match storage_before {
        None => None,
        Some(before) => Some(
            match (
                before,
                tokio::time::timeout_at(after_run, sink.storage_bytes(&schema)).await,
            ) {
                (_, Err(_)) => Err(unanswered()),
                (Ok(Some(a)), Ok(Ok(Some(b)))) => Ok((a, b)),
                (Ok(None), _) | (_, Ok(Ok(None))) => Err(crate::stored::CANNOT_TELL.to_string()),
                (Err(e), _) | (_, Ok(Err(e))) => Err(e.to_string()),
            },
        ),
    };
    let stored = match tally_before {
        None => None,
        Some(before) => Some(
            match (
                before,
                tokio::time::timeout_at(after_run, sink.tally(&schema, &scope, true)).await,
            ) {
                (_, Err(_)) => Err(unanswered()),
                (Ok(Some(b)), Ok(Ok(Some(a)))) => {
                    crate::stored::stored_between(&b, &a).and_then(|s| {
                        match scope.part_cannot_tell() {
                            // Counts of whole tables hold the other shards' rows.
                            Some(why) if !s.own_devices => Err(why),
                            _ => Ok(s),
                        }
                    })
                }
                (Ok(None), _) | (_, Ok(Ok(None))) => Err(crate::stored::CANNOT_TELL.to_string()),
                (Err(e), _) | (_, Ok(Err(e))) => Err(format!("asking the server failed: {e}")),
            },
        ),
    };
    let server_questions =
        (cfg.measure_storage || cfg.verify_stored).then(|| crate::stored::ServerQuestions {
            before_s: asked_before.as_secs_f64(),
            after_s: asked_after.elapsed().as_secs_f64(),
        });
    let fatal = shared.fatal.lock().ok().and_then(|mut f| f.take());
    // An open-loop run that ran out of rows offered them over `rows / rate` seconds: its
    // last batch is due one period before that ends, so the time to its answer alone (n
    // batches in n - 1 periods) made the achieved rate look above the offered one (100.4%).
    let elapsed = match cfg.mode {
        LoadMode::Open { rate } if matches!(stop.reason(), None | Some(StopReason::RowLimit)) => {
            let c = &reported.counters;
            let offered = (c.rows + c.failed_rows + c.unsent_rows) as f64 / rate;
            reported
                .end
                .max(Duration::try_from_secs_f64(offered).unwrap_or(Duration::MAX))
        }
        _ => reported.end,
    };
    let (devices_written, series_written) = match workload.counts_devices() {
        true => (
            Some(reported.counters.devices_started),
            Some(reported.counters.series_started),
        ),
        false => (None, None),
    };
    Ok(RunOutcome {
        started_at,
        elapsed,
        counters: reported.counters,
        latency: reported.latency,
        service: reported.service,
        stop_reason: stop.reason().unwrap_or(StopReason::DataEnd),
        fatal,
        intervals: reported.intervals,
        offered_rows_per_s: match cfg.mode {
            LoadMode::Closed => None,
            LoadMode::Open { rate } => Some(rate),
        },
        raw_latencies: raw
            .and_then(|r| r.lock().ok().map(|mut v| std::mem::take(&mut *v)))
            .unwrap_or_default(),
        storage_bytes,
        stored,
        server_questions,
        devices_written,
        series_written,
        abandoned_requests: shared.abandoned.load(Ordering::Relaxed),
    })
}

pub(crate) struct IntervalAccumulator {
    counters: Counters,
    latency: Histogram<u64>,
    service: Histogram<u64>,
    records: usize,
}

impl IntervalAccumulator {
    pub(crate) fn new() -> Self {
        IntervalAccumulator {
            counters: Counters::default(),
            latency: new_histogram(),
            service: new_histogram(),
            records: 0,
        }
    }

    fn add(&mut self, r: &IntervalRecord) {
        self.add_parts(&r.counters, &r.latency, &r.service);
    }

    pub(crate) fn add_parts(
        &mut self,
        counters: &Counters,
        latency: &Histogram<u64>,
        service: &Histogram<u64>,
    ) {
        self.counters.add(counters);
        // Auto-resizing histograms accept any other histogram's range.
        let _ = self.latency.add(latency);
        let _ = self.service.add(service);
        self.records += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records == 0
    }
}

/// What the reporter merged over a whole run.
pub(crate) struct Reported {
    pub(crate) counters: Counters,
    pub(crate) latency: Histogram<u64>,
    pub(crate) service: Histogram<u64>,
    /// From the start to the last record (at least to the last interval's end).
    pub(crate) end: Duration,
    pub(crate) intervals: u64,
}

impl Reported {
    /// Adds one interval, ending at `end`, to the totals and shows it to the observer.
    fn emit(&mut self, acc: IntervalAccumulator, end: Duration, observer: &mut dyn Observer) {
        self.counters.add(&acc.counters);
        let _ = self.latency.add(&acc.latency);
        let _ = self.service.add(&acc.service);
        let report = IntervalReport {
            index: self.intervals,
            start: self.end,
            end,
            counters: acc.counters,
            latency: acc.latency,
            service: acc.service,
            totals: self.counters.clone(),
        };
        observer.on_interval(&report);
        self.intervals += 1;
        self.end = end;
    }
}

/// The reporter of both engines: files each worker's hand-overs under the interval they
/// belong to (merged with `merge`), and reports an interval once every worker has handed
/// it over (or has finished), until every worker has hung up; returns the run's totals.
/// A worker that has not handed an interval over half an interval after its end (a stuck
/// thread) does not hold the report back longer: the interval is reported without it, and
/// its late records count in the interval that is open when they come. The last interval
/// ends with the last record that held anything. Meanwhile it tells the workers when each
/// interval ends ([`IntervalTicker::tick`]).
pub(crate) async fn report_intervals<R: HandOver>(
    mut rx: mpsc::UnboundedReceiver<R>,
    ticker: &IntervalTicker,
    workers: usize,
    observer: &mut dyn Observer,
    mut merge: impl FnMut(&R, &mut IntervalAccumulator),
) -> Reported {
    let (t0, interval) = (ticker.t0(), ticker.interval());
    let grace = interval / 2;
    let mut reported = Reported {
        counters: Counters::default(),
        latency: new_histogram(),
        service: new_histogram(),
        end: Duration::ZERO,
        intervals: 0,
    };
    // open[i] holds interval first + i.
    let mut first: u64 = 0;
    let mut open: VecDeque<IntervalAccumulator> = VecDeque::new();
    // Per worker: the intervals before this one it has handed over.
    let mut next = vec![0u64; workers];
    loop {
        // Report every interval that all workers have handed over, unless all have
        // finished: the rest (the last interval ends with the last record) comes below.
        while next.iter().all(|&n| n > first) && next.iter().any(|&n| n != u64::MAX) {
            let acc = open.pop_front().unwrap_or_else(IntervalAccumulator::new);
            reported.emit(acc, boundary(interval, first + 1), observer);
            first += 1;
        }
        let overdue = t0
            .checked_add(boundary(interval, first + 1))
            .and_then(|end| end.checked_add(grace));
        let overdue = async {
            match overdue {
                Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // Records already come are filed before an interval is declared overdue (a
            // reporter woken late finds both ready).
            biased;
            record = rx.recv() => match record {
                Some(record) => {
                    if !record.is_empty() {
                        // Records of an interval already reported count in the open one.
                        let slot = usize::try_from(record.interval().saturating_sub(first))
                            .unwrap_or(usize::MAX);
                        if open.len() <= slot {
                            open.resize_with(slot.saturating_add(1), IntervalAccumulator::new);
                        }
                        merge(&record, &mut open[slot]);
                    }
                    if let Some(n) = next.get_mut(record.worker()) {
                        *n = (*n).max(record.next());
                    }
                }
                None => break,
            },
            () = ticker.tick() => {}
            _ = overdue => {
                let acc = open.pop_front().unwrap_or_else(IntervalAccumulator::new);
                reported.emit(acc, boundary(interval, first + 1), observer);
                first += 1;
            }
        }
    }
    // Every worker has finished: report what is left, up to the last interval that holds
    // anything, which ends when the workers did (the run's window: a worker of an open
    // loop whose next request fell due after the duration waited for its end, and a run
    // measured to its last answer instead would achieve more than it was offered).
    // (Now is past every record: the channel closed after the last.)
    let end = Instant::now()
        .saturating_duration_since(t0)
        .max(reported.end);
    while open.back().is_some_and(|r| r.is_empty()) {
        open.pop_back();
    }
    let left = open.len();
    for (i, acc) in open.into_iter().enumerate() {
        let k = first + i as u64;
        let until = if i + 1 == left {
            end
        } else {
            boundary(interval, k + 1).min(end)
        };
        reported.emit(acc, until.max(reported.end), observer);
    }
    reported.end = reported.end.max(end);
    reported
}

/// One request's result, handed back with the connection and batch it borrowed.
struct Completed<C> {
    conn: C,
    batch: Batch,
    intended: Instant,
    sent: Instant,
    done: Instant,
    metrics: u64,
    result: Result<WriteAck, SinkError>,
    /// Kinds of the failed attempts that were retried.
    retried: Vec<ErrorKind>,
    /// Rows that may be stored once more than the result says (see
    /// [`Counters::ambiguous_rows`](crate::recorder::Counters::ambiguous_rows)).
    ambiguous_rows: u64,
}

/// Sleeps `wait` before a retry unless a signal interrupts the run first; false when
/// interrupted.
async fn sleep_unless_interrupted(wait: Duration, stop: &StopHandle) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => !stop.is_interrupted(),
        _ = stop.interrupted() => false,
    }
}

/// Sends `batch` as request `seq` of `worker`, retrying retryable failures, and settles
/// what the attempts' ambiguity leaves uncertain.
///
/// No retry starts after the run's end (`deadline`); the worker gives up on the request
/// itself when the run is abandoned ([`StopHandle::abandon`]).
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, each argument named"
)]
async fn send<C: SinkConn>(
    mut conn: C,
    batch: Batch,
    (worker, seq): (u32, u64),
    intended: Instant,
    max_retries: u32,
    backoff: Duration,
    deadline: Option<Instant>,
    stop: &StopHandle,
) -> Completed<C> {
    let metrics = batch.metrics();
    let rows = batch.rows() as u64;
    let sent = Instant::now();
    let mut retried = Vec::new();
    // Attempts that failed ambiguously: each may have stored the batch.
    let mut ambiguous_attempts = 0u64;
    let result = loop {
        let id = BatchId {
            worker,
            seq,
            attempt: retried.len() as u32,
        };
        let outcome = conn.write(&batch, id).await;
        if matches!(&outcome, Err(e) if e.ambiguous) {
            ambiguous_attempts += 1;
        }
        match outcome {
            Ok(ack) => break Ok(ack),
            // After a signal nothing is sent again: the batch fails (ambiguous if an
            // attempt was) and the report comes out within the grace a service manager
            // or Kubernetes gives, not after up to `max_retries` waits.
            Err(e)
                if e.is_retryable()
                    && (retried.len() as u32) < max_retries
                    && !stop.is_interrupted() =>
            {
                retried.push(e.kind);
                let factor = 1u32 << (retried.len() - 1).min(16);
                let wait = backoff.saturating_mul(factor).min(Duration::from_secs(5));
                // The server's own Retry-After wins when it asks for longer.
                let wait = wait.max(e.retry_after.unwrap_or_default().min(MAX_RETRY_AFTER));
                // No retry starts after the run's end.
                if deadline.is_some_and(|d| Instant::now() + wait >= d)
                    || !sleep_unless_interrupted(wait, stop).await
                {
                    break Err(e);
                }
            }
            Err(e) => break Err(e),
        }
    };
    Completed {
        batch,
        intended,
        sent,
        done: Instant::now(),
        metrics,
        ambiguous_rows: if conn.settles_ambiguity() {
            // A ledger stores a batch at most once, and a successful attempt knows
            // whether an earlier one did: only a batch given up for good after an
            // ambiguous attempt may be stored without being counted.
            if result.is_err() && ambiguous_attempts > 0 {
                rows
            } else {
                0
            }
        } else {
            ambiguous_attempts * rows
        },
        conn,
        result,
        retried,
    }
}

async fn run_worker<C: SinkConn>(
    worker: usize,
    mut source: Box<dyn BatchSource>,
    conns: Vec<C>,
    batches: Vec<Batch>,
    shared: Arc<Shared>,
    mut recorder: WorkerRecorder,
) {
    let cfg = &shared.cfg;
    let stop = &shared.stop;
    // Seconds between two requests of this worker in open loop.
    let period = match cfg.mode {
        LoadMode::Closed => None,
        LoadMode::Open { rate } => Some(cfg.batch as f64 * cfg.workers as f64 / rate),
    };
    let mut free: Vec<(C, Batch)> = conns.into_iter().zip(batches).collect();
    let mut in_flight = FuturesUnordered::new();
    let mut pending: Option<(C, Batch)> = None;
    let mut exhausted = false;
    let mut seq: u64 = 0;
    let mut pacer = Pacer::new(period.unwrap_or_default(), true);
    let schedule = Schedule::new(shared.t0, period, worker, cfg.workers);
    // Rows of the requests in flight: what is unknown if they are abandoned.
    let mut in_flight_rows = 0u64;
    // One subscription for the worker's life, not one per request.
    let abandoned = stop.abandoned();
    let mut abandoned = std::pin::pin!(abandoned);

    loop {
        // Fill the next batch while a slot is free.
        if pending.is_none()
            && !exhausted
            && !stop.is_stopped()
            && let Some((conn, mut batch)) = free.pop()
        {
            let now = Instant::now();
            if shared.deadline.is_some_and(|d| now >= d) {
                stop.stop(StopReason::Duration);
                free.push((conn, batch));
            } else {
                batch.clear();
                let want = shared.claim_rows(cfg.batch);
                let got = if want == 0 {
                    stop.stop(StopReason::RowLimit);
                    0
                } else {
                    source.fill(&mut batch, want)
                };
                shared.settle_rows(want, got);
                if got == 0 {
                    exhausted = want > 0;
                    free.push((conn, batch));
                } else {
                    pending = Some((conn, batch));
                }
            }
        }

        if let Some((conn, batch)) = pending.take() {
            let intended = match schedule.due(seq) {
                Due::Now => Instant::now(),
                Due::At(due) => due,
                Due::Never => {
                    // Due past what an Instant holds: this worker is done.
                    free.push((conn, batch));
                    exhausted = true;
                    continue;
                }
            };
            let now = Instant::now();
            if intended > now {
                // Never past the run's end: a request due after it is not waited for.
                let until = shared.deadline.map_or(intended, |d| intended.min(d));
                // The recorder hands its interval over if one ends while this waits.
                let waited: Waited<Completed<C>> = flushing(&mut recorder, async {
                    tokio::select! {
                        _ = pacer.wait_until(until) => Waited::Due,
                        Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                            Waited::Completed(done)
                        }
                        _ = stop.stopped() => Waited::Stopped,
                    }
                })
                .await;
                match waited {
                    Waited::Due => {}
                    Waited::Completed(done) => {
                        pending = Some((conn, batch));
                        in_flight_rows -= done.batch.rows() as u64;
                        finish(done, &mut free, &mut recorder, &shared);
                        continue;
                    }
                    Waited::Stopped => {
                        free.push((conn, batch));
                        continue;
                    }
                }
                // Woken by the run's end rather than the request's due time, or both.
                if until < intended || shared.deadline.is_some_and(|d| Instant::now() >= d) {
                    stop.stop(StopReason::Duration);
                    free.push((conn, batch));
                    continue;
                }
            }
            in_flight_rows += batch.rows() as u64;
            in_flight.push(send(
                conn,
                batch,
                (worker as u32, seq),
                intended,
                cfg.max_retries,
                cfg.retry_backoff,
                shared.deadline,
                stop,
            ));
            seq += 1;
            if !free.is_empty() && !exhausted && !stop.is_stopped() {
                continue;
            }
        }

        // Answers and retry backoffs: the recorder hands its interval over meanwhile, and
        // the grace after the run's end bounds the wait.
        let next = tokio::select! {
            biased;
            next = flushing(&mut recorder, in_flight.next()) => Some(next),
            _ = &mut abandoned, if !in_flight.is_empty() => None,
        };
        match next {
            Some(Some(done)) => {
                in_flight_rows -= done.batch.rows() as u64;
                finish(done, &mut free, &mut recorder, &shared);
            }
            Some(None) => {
                if exhausted || stop.is_stopped() || free.is_empty() {
                    break;
                }
            }
            None => {
                // Sent, and no answer by the grace after the run's end: given up on.
                // Stored or not, no one knows (a ledger settles nothing it never heard
                // back about): failed, and ambiguous.
                let requests = in_flight.len() as u64;
                drop(std::mem::take(&mut in_flight));
                recorder.advance(Instant::now());
                for _ in 0..requests {
                    recorder.record_error(ErrorKind::Timeout, false);
                    recorder.record_failure(0);
                }
                recorder.record_failure_rows(in_flight_rows);
                recorder.record_ambiguous(in_flight_rows);
                shared.abandoned.fetch_add(requests, Ordering::Relaxed);
                // A closed-loop worker stuck on its answer never saw the deadline pass.
                if shared.deadline.is_some_and(|d| Instant::now() >= d) {
                    stop.stop(StopReason::Duration);
                }
                break;
            }
        }
    }
    if let Some(deadline) = shared.deadline
        && !exhausted
        && stop.reason() == Some(StopReason::Duration)
    {
        // Requests due before the deadline that a lagging worker never sent: the offered
        // load it did not deliver.
        let unsent = schedule.unsent_before(deadline, seq);
        if unsent > 0 {
            recorder.record_unsent(unsent, unsent.saturating_mul(cfg.batch as u64));
        }
    }
    recorder.finish();
}

/// What an open-loop wait for a due time ended with.
enum Waited<T> {
    Due,
    Completed(T),
    Stopped,
}

fn finish<C>(
    done: Completed<C>,
    free: &mut Vec<(C, Batch)>,
    recorder: &mut WorkerRecorder,
    shared: &Shared,
) {
    // The completion counts in the interval in which it completed: one comparison, and a
    // hand-over of the interval before when this is its first completion past it.
    recorder.advance(done.done);
    for kind in &done.retried {
        recorder.record_error(*kind, true);
    }
    let rows = done.batch.rows() as u64;
    if done.ambiguous_rows > 0 {
        recorder.record_ambiguous(done.ambiguous_rows);
    }
    recorder.record_devices(&done.batch);
    if done.result.is_ok() {
        recorder.record_arrival(&done.batch);
    }
    match done.result {
        Ok(ack) if ack.duplicate => {
            recorder.record_recovered(ack.rows);
            recorder.record_success(
                done.done.saturating_duration_since(done.intended),
                done.done.saturating_duration_since(done.sent),
                ack.rows,
                done.metrics,
                0,
            );
        }
        Ok(ack) => {
            let metrics = ack.metrics.unwrap_or(done.metrics);
            recorder.record_success(
                done.done.saturating_duration_since(done.intended),
                done.done.saturating_duration_since(done.sent),
                ack.rows,
                if ack.rows == rows {
                    metrics
                } else {
                    metrics * ack.rows / rows.max(1)
                },
                ack.bytes,
            )
        }
        Err(e) => {
            recorder.record_error(e.kind, false);
            recorder.record_failure(rows);
            if let Ok(mut f) = shared.fatal.lock() {
                f.get_or_insert(e);
            }
            shared.stop.stop(StopReason::Fatal);
        }
    }
    free.push((done.conn, done.batch));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_is_seen_by_every_clone_and_keeps_the_first_reason() {
        let stop = StopHandle::new();
        let clone = stop.clone();
        assert!(!clone.is_stopped() && clone.reason().is_none());
        let waiting = tokio::spawn({
            let clone = clone.clone();
            async move { clone.stopped().await }
        });
        stop.stop(StopReason::Duration);
        stop.stop(StopReason::Interrupted);
        assert!(clone.is_stopped());
        assert_eq!(clone.reason(), Some(StopReason::Duration));
        assert!(
            clone.is_interrupted(),
            "an interrupt is told even when second"
        );
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("stopped() resolves after stop()")
            .unwrap();
        // A waiter that comes after the stop resolves at once.
        tokio::time::timeout(Duration::from_secs(10), clone.stopped())
            .await
            .expect("stopped() after the stop");
    }
}
