//! The query engine: runs a [`QueryWorkload`]'s setup requests and its data load, connects
//! one [`QueryConn`] per worker, then drives the workers as tokio tasks in closed loop (next
//! request on the answer) or open loop (request i of a worker is due at
//! `t0 + i * workers / rate`, sent within tens of microseconds of it, latency measured
//! from that due time), keeping latency, service time and counters per request kind. The
//! calling task is the reporter: it merges the workers' interval records and feeds the
//! same [`Observer`] as the write engine. A request counts in the interval in which its
//! answer came; workers hand each interval over when it ends (even while they wait), and
//! the reporter reports an interval once every worker has handed it over, so each
//! interval's figures are its own.
//!
//! A failed request never stops the run by itself: it is counted per (kind, [`ErrorKind`]),
//! the connection is kept and the worker goes on. Only an exceeded error budget
//! ([`QueryConfig::max_errors`]), a limit or the [`StopHandle`] stops it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;
use tokio::sync::mpsc::{self, UnboundedSender};
use tsload_timer::ReactorTimer;

use crate::engine::{
    EngineError, LoadMode, Observer, Reported, StopHandle, StopReason, report_intervals,
};
use crate::pacing::{Due, Pacer, Schedule};
use crate::query::{QueryAck, QueryConn, QueryRequest, QuerySource, QueryTarget, QueryWorkload};
use crate::recorder::{
    Counters, HandOver, HandsOver, IntervalClock, IntervalTicker, flushing, nanos, new_histogram,
};
use crate::shard::Gate;
use crate::sink::{ErrorKind, SinkError};

/// How to drive a query run.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryConfig {
    /// Concurrent workers, one connection each.
    pub workers: usize,
    /// Closed loop, or `Open { rate }` with `rate` in requests per second over all workers.
    pub mode: LoadMode,
    /// Stop issuing after this long.
    pub duration: Option<Duration>,
    /// Stop after this many requests (succeeded or failed, over all workers).
    pub requests: Option<u64>,
    pub report_interval: Duration,
    /// Failed requests allowed: when more fail, the run stops with [`StopReason::Fatal`].
    /// `None` never stops on errors.
    pub max_errors: Option<u64>,
    /// Whether a request that returns no rows counts as failed ([`ErrorKind::Empty`]).
    pub require_rows: bool,
    /// Connections that run the workload's [`QueryWorkload::load`] sources in parallel.
    pub loaders: usize,
    /// A request not answered within this long fails with [`ErrorKind::Timeout`], and its
    /// connection (which may still be busy with it) is replaced by a new one. `None`:
    /// requests may take as long as the target does.
    pub timeout: Option<Duration>,
    /// Coordination with other shards around setup and the start (none by default).
    pub gate: Gate,
    /// How long requests still unanswered after a signal may take before they are
    /// abandoned: [`QueryOutcome::abandoned_requests`].
    pub grace: Duration,
    /// The same after the run's duration.
    pub drain: Duration,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            workers: 1,
            mode: LoadMode::Closed,
            duration: None,
            requests: None,
            report_interval: Duration::from_secs(1),
            max_errors: None,
            require_rows: false,
            loaders: 1,
            timeout: None,
            gate: Gate::default(),
            grace: crate::engine::DEFAULT_GRACE,
            drain: crate::engine::DEFAULT_DRAIN,
        }
    }
}

impl QueryConfig {
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |m: &str| Err(EngineError::Config(m.to_string()));
        if self.workers == 0 {
            return bad("workers must be at least 1");
        }
        if self.loaders == 0 {
            return bad("loaders must be at least 1");
        }
        if let LoadMode::Open { rate } = self.mode
            && !(rate.is_finite() && rate > 0.0)
        {
            return bad("rate must be a positive number of requests per second");
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return bad("duration must be positive (omit it for no time limit)");
        }
        if self.requests == Some(0) {
            return bad("requests must be at least 1 (omit it for no request limit)");
        }
        if self.report_interval.is_zero() {
            return bad("report_interval must be positive");
        }
        Ok(())
    }
}

/// What a finished query run measured for one request kind.
#[derive(Debug)]
pub struct KindOutcome {
    /// The kind's name, from [`QueryWorkload::kinds`].
    pub name: String,
    /// Same mapping as [`QueryOutcome::counters`].
    pub counters: Counters,
    /// Latency of the kind's successful requests from their intended send time, ns.
    pub latency: Histogram<u64>,
    /// Service time of the kind's successful requests, ns.
    pub service: Histogram<u64>,
}

/// What a finished query run measured.
///
/// [`Counters`] are the write engine's, read this way for queries: `requests` = requests
/// that succeeded; `rows` = result rows they returned (rows affected, for statements that
/// return none); `metrics` = statements they executed (BEGIN and COMMIT not counted);
/// `errors` = failed requests by [`ErrorKind`] (one error per failed request: no retries);
/// `failed_requests` = requests that failed. `bytes`, `retries` and `failed_rows` stay 0.
/// The histograms hold successful requests only, so `latency.len() == counters.requests`.
#[derive(Debug)]
pub struct QueryOutcome {
    /// When the timed load started (after setup, data load and connect).
    pub started_at: SystemTime,
    /// From the first request to the last answer of the timed load.
    pub elapsed: Duration,
    /// Time taken by the data load, connections included (zero without one).
    pub load_elapsed: Duration,
    /// What the data load executed: requests, `rows` = rows the server reported
    /// (e.g. inserted), `metrics` = statements.
    pub load_counters: Counters,
    /// All kinds together.
    pub counters: Counters,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    /// One entry per kind, in the order of [`QueryWorkload::kinds`].
    pub kinds: Vec<KindOutcome>,
    pub stop_reason: StopReason,
    /// The error that stopped the run: the failure that exceeded the error budget, or a
    /// request with a kind the workload does not name, or a worker that panicked.
    pub stop_error: Option<SinkError>,
    /// The first request that failed, whatever stopped the run: what a run in which
    /// requests failed says about why.
    pub first_error: Option<SinkError>,
    pub intervals: u64,
    /// Open loop: the requests per second offered (`None` in closed loop).
    pub offered_requests_per_s: Option<f64>,
    /// Requests still unanswered [`QueryConfig::grace`] after the run's end, given up on
    /// (counted as failed, [`ErrorKind::Timeout`]).
    pub abandoned_requests: u64,
}

/// State every worker shares; touched once per request at most (the request limit), and
/// once per failed request (the error budget).
struct Shared {
    cfg: QueryConfig,
    /// Names of the request kinds.
    kinds: Vec<String>,
    t0: Instant,
    deadline: Option<Instant>,
    claimed: AtomicU64,
    failed: AtomicU64,
    stop: StopHandle,
    stop_error: Mutex<Option<SinkError>>,
    /// The first failed request's error.
    first_error: Mutex<Option<SinkError>>,
    /// A worker's next request was due at or after the deadline: it ended (the others
    /// still send what is due before it).
    deadline_reached: std::sync::atomic::AtomicBool,
    /// Open loop: requests due before the deadline that workers lagging behind never sent.
    unsent: AtomicU64,
    /// Requests given up on [`QueryConfig::grace`] after the run's end.
    abandoned: AtomicU64,
}

impl Shared {
    /// Claims one request of the run's request limit; false when the limit is reached.
    fn claim_request(&self) -> bool {
        let Some(limit) = self.cfg.requests else {
            return true;
        };
        self.claimed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    fn unclaim_request(&self) {
        if self.cfg.requests.is_some() {
            self.claimed.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Stops the run with `error` unless another stop came first.
    fn fatal(&self, error: SinkError) {
        if let Ok(mut e) = self.stop_error.lock() {
            e.get_or_insert(error);
        }
        self.stop.stop(StopReason::Fatal);
    }

    /// Counts a failed request (the first one's error is kept) against the error budget.
    fn count_failure(&self, error: SinkError) {
        let failed = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
        if failed == 1
            && let Ok(mut first) = self.first_error.lock()
        {
            first.get_or_insert_with(|| error.clone());
        }
        let Some(max) = self.cfg.max_errors else {
            return;
        };
        // Every failure past the budget stops the run, not only the one that crossed it:
        // the thread that crossed it may be descheduled before it says so, while the
        // others go on failing (the first error kept is reported).
        if failed > max {
            self.fatal(SinkError::new(
                error.kind,
                format!(
                    "more than {max} requests failed (max_errors); the last: {}",
                    error.message
                ),
            ));
        }
    }
}

/// Records of one kind over one interval, kept by a worker.
#[derive(Debug)]
struct KindRecord {
    counters: Counters,
    latency: Histogram<u64>,
    service: Histogram<u64>,
    active: bool,
}

impl KindRecord {
    fn new() -> Self {
        KindRecord {
            counters: Counters::default(),
            latency: new_histogram(),
            service: new_histogram(),
            active: false,
        }
    }
}

/// What a query worker hands the reporter when an interval ends (and once when it
/// finishes): the kinds it recorded in interval `interval`, and how far it has got.
#[derive(Debug)]
struct QueryIntervalRecord {
    worker: usize,
    /// The interval the records belong to (0 = the first `report_interval` of the run).
    interval: u64,
    /// Every interval before this one is complete for this worker: it sends nothing more
    /// for them. `u64::MAX` once the worker has finished.
    next: u64,
    kinds: Vec<(usize, Counters, Histogram<u64>, Histogram<u64>)>,
}

impl HandOver for QueryIntervalRecord {
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
        self.kinds.is_empty()
    }
}

/// One query worker's recorder: per-kind histograms and counters of the interval in
/// which each request ended, handed over once per interval.
///
/// A request belongs to the interval in which its answer came. The recorder hands an
/// interval over as soon as its worker sees a later time: when it records an answer past
/// the interval's end, or at the end itself while it waits (see [`flushing`]), even when
/// it recorded nothing (the reporter waits for every worker's hand-over before it reports
/// an interval, so an interval's figures are that interval's, not the previous one's).
#[derive(Debug)]
struct QueryRecorder {
    worker: usize,
    kinds: Vec<KindRecord>,
    /// The interval being recorded, and when it ends.
    clock: IntervalClock,
    tx: UnboundedSender<QueryIntervalRecord>,
}

impl QueryRecorder {
    fn new(
        worker: usize,
        kinds: usize,
        ticker: Arc<IntervalTicker>,
        tx: UnboundedSender<QueryIntervalRecord>,
    ) -> Self {
        QueryRecorder {
            worker,
            kinds: (0..kinds).map(|_| KindRecord::new()).collect(),
            clock: IntervalClock::new(ticker, worker),
            tx,
        }
    }

    /// Records a successful request whose answer came at `at`.
    fn record_success(
        &mut self,
        kind: usize,
        at: Instant,
        latency: Duration,
        service: Duration,
        ack: QueryAck,
    ) {
        self.advance(at);
        let k = &mut self.kinds[kind];
        // `record` grows an auto-resizing histogram; `saturating_record` would clamp instead.
        if k.latency.record(nanos(latency)).is_err() {
            k.latency.saturating_record(nanos(latency));
        }
        if k.service.record(nanos(service)).is_err() {
            k.service.saturating_record(nanos(service));
        }
        k.counters.requests += 1;
        k.counters.rows = k.counters.rows.saturating_add(ack.rows);
        k.counters.metrics += ack.statements;
        k.active = true;
    }

    /// Records a request that failed at `at`.
    fn record_failure(&mut self, kind: usize, at: Instant, error: ErrorKind) {
        self.advance(at);
        let k = &mut self.kinds[kind];
        *k.counters.errors.entry(error).or_default() += 1;
        k.counters.failed_requests += 1;
        k.active = true;
    }

    /// Moves on to the interval that holds `now`, handing over the one recorded so far
    /// (and marking any skipped ones complete) when `now` is past its end.
    fn advance(&mut self, now: Instant) {
        if let Some((left, next)) = self.clock.advance(now) {
            self.send(left, next);
        }
    }

    /// Hands over what was recorded and says that the worker is done.
    fn finish(&mut self) {
        if let Some(last) = self.clock.finish() {
            self.send(last, u64::MAX);
        }
    }

    fn send(&mut self, interval: u64, next: u64) {
        let mut kinds = Vec::new();
        for (i, k) in self.kinds.iter_mut().enumerate() {
            if !k.active {
                continue;
            }
            kinds.push((
                i,
                std::mem::take(&mut k.counters),
                k.latency.clone(),
                k.service.clone(),
            ));
            k.latency.reset();
            k.service.reset();
            k.active = false;
        }
        // Sent even when empty: the reporter learns that this worker is past the interval.
        // The reporter outlives the workers; if it is gone the run is over anyway.
        let _ = self.tx.send(QueryIntervalRecord {
            worker: self.worker,
            interval,
            next,
            kinds,
        });
    }
}

impl Drop for QueryRecorder {
    fn drop(&mut self) {
        // A worker that panicked still hands over what it recorded, and the reporter
        // stops waiting for it.
        self.finish();
    }
}

impl HandsOver for QueryRecorder {
    fn clock(&mut self) -> &mut IntervalClock {
        &mut self.clock
    }
    fn advance(&mut self, now: Instant) {
        QueryRecorder::advance(self, now);
    }
}

/// The query run's reporter: [`report_intervals`], which also adds each record to its
/// kind's totals in `kinds`.
async fn report_queries(
    rx: mpsc::UnboundedReceiver<QueryIntervalRecord>,
    ticker: &IntervalTicker,
    workers: usize,
    observer: &mut dyn Observer,
    kinds: &mut [KindOutcome],
) -> Reported {
    report_intervals(rx, ticker, workers, observer, |record, into| {
        for (kind, counters, latency, service) in &record.kinds {
            let k = &mut kinds[*kind];
            k.counters.add(counters);
            let _ = k.latency.add(latency);
            let _ = k.service.add(service);
            into.add_parts(counters, latency, service);
        }
    })
    .await
}

/// Runs setup, the data load and the timed query load, and returns what it measured.
///
/// Setup requests run once, in order, on one connection (worker 0's `connect`); then every
/// [`QueryWorkload::load`] source of `cfg.loaders` runs on its own connection, in parallel;
/// then all workers connect, and only then the clock starts. Neither setup nor load is
/// recorded in the histograms. A stop during setup or load ends the run there, with an
/// empty timed load (and the observer is not started). Open loop needs a runtime with I/O
/// enabled (`enable_all`): each worker paces its requests on a timerfd registered with
/// tokio's reactor.
pub async fn run_queries<T: QueryTarget>(
    workload: Arc<dyn QueryWorkload>,
    target: Arc<T>,
    cfg: QueryConfig,
    stop: StopHandle,
    observer: &mut dyn Observer,
) -> Result<QueryOutcome, EngineError> {
    cfg.validate()?;
    let names: Vec<String> = workload.kinds().to_vec();
    if names.is_empty() {
        return Err(EngineError::Config(
            "the query workload names no request kinds".to_string(),
        ));
    }

    cfg.gate.before_prepare().await.map_err(EngineError::Gate)?;
    run_setup(workload.as_ref(), target.as_ref(), &stop).await?;
    cfg.gate.after_prepare().await.map_err(EngineError::Gate)?;
    let load_start = Instant::now();
    let (load_counters, load_elapsed) =
        match run_load(&workload, &target, cfg.loaders, &stop).await? {
            Some(counters) => (counters, load_start.elapsed()),
            None => (Counters::default(), Duration::ZERO),
        };
    if stop.is_stopped() {
        return Ok(QueryOutcome {
            started_at: SystemTime::now(),
            elapsed: Duration::ZERO,
            load_elapsed,
            load_counters,
            counters: Counters::default(),
            latency: new_histogram(),
            service: new_histogram(),
            kinds: names.into_iter().map(empty_kind).collect(),
            stop_reason: stop.reason().unwrap_or(StopReason::Interrupted),
            stop_error: None,
            first_error: None,
            intervals: 0,
            offered_requests_per_s: None,
            abandoned_requests: 0,
        });
    }

    // Connect everything before the clock starts: connection set-up is not query time.
    let workers = if target.thread_per_worker() {
        Workers::threads(&target, cfg.workers).await?
    } else {
        Workers::tasks(&target, cfg.workers).await?
    };
    cfg.gate.before_start().await.map_err(EngineError::Gate)?;

    let t0 = Instant::now();
    let started_at = SystemTime::now();
    observer.on_start(started_at);
    let shared = Arc::new(Shared {
        deadline: cfg.duration.map(|d| t0 + d),
        cfg: cfg.clone(),
        kinds: names.clone(),
        t0,
        claimed: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        stop: stop.clone(),
        stop_error: Mutex::new(None),
        first_error: Mutex::new(None),
        deadline_reached: std::sync::atomic::AtomicBool::new(false),
        unsent: AtomicU64::new(0),
        abandoned: AtomicU64::new(0),
    });
    let abandon = stop.abandon_after_end(shared.deadline, cfg.drain, cfg.grace);

    let (tx, rx) = mpsc::unbounded_channel::<QueryIntervalRecord>();
    let ticker = IntervalTicker::new(t0, cfg.report_interval, cfg.workers);
    let running = workers.start(|worker| WorkerStart {
        source: workload.source(worker, cfg.workers),
        target: target.clone(),
        shared: shared.clone(),
        recorder: QueryRecorder::new(worker, names.len(), ticker.clone(), tx.clone()),
    });
    drop(tx);

    // The reporter: merge records per kind and in all, emit one report per interval.
    let mut kinds: Vec<KindOutcome> = names.into_iter().map(empty_kind).collect();
    let reported = report_queries(rx, &ticker, cfg.workers, observer, &mut kinds).await;

    for failure in running.join().await {
        shared.fatal(SinkError::new(
            ErrorKind::Other,
            format!("a query worker failed: {failure}"),
        ));
    }
    abandon.abort();

    let stop_error = shared.stop_error.lock().ok().and_then(|mut e| e.take());
    let first_error = shared.first_error.lock().ok().and_then(|mut e| e.take());
    Ok(QueryOutcome {
        started_at,
        elapsed: reported.end,
        load_elapsed,
        load_counters,
        counters: Counters {
            unsent_requests: shared.unsent.load(Ordering::Relaxed),
            ..reported.counters
        },
        latency: reported.latency,
        service: reported.service,
        kinds,
        stop_reason: stop
            .reason()
            .unwrap_or(if shared.deadline_reached.load(Ordering::Relaxed) {
                StopReason::Duration
            } else {
                StopReason::DataEnd
            }),
        stop_error,
        first_error,
        intervals: reported.intervals,
        offered_requests_per_s: match cfg.mode {
            LoadMode::Closed => None,
            LoadMode::Open { rate } => Some(rate),
        },
        abandoned_requests: shared.abandoned.load(Ordering::Relaxed),
    })
}

fn empty_kind(name: String) -> KindOutcome {
    KindOutcome {
        name,
        counters: Counters::default(),
        latency: new_histogram(),
        service: new_histogram(),
    }
}

/// What a connected worker needs to start once the clock has started.
struct WorkerStart<T: QueryTarget> {
    source: Box<dyn QuerySource>,
    target: Arc<T>,
    shared: Arc<Shared>,
    recorder: QueryRecorder,
}

/// The timed load's workers, connected and waiting for the start: tasks on the caller's
/// runtime, or (when the target asks, [`QueryTarget::thread_per_worker`]) each on its own
/// thread with a current-thread runtime, where its connection was opened.
enum Workers<T: QueryTarget> {
    Tasks(Vec<T::Conn>),
    Threads(
        Vec<tokio::sync::oneshot::Sender<WorkerStart<T>>>,
        Vec<WorkerThread>,
    ),
}

/// A worker thread: its OS thread, and what it says when its worker ends (nothing when it
/// panicked).
struct WorkerThread {
    handle: std::thread::JoinHandle<()>,
    done: tokio::sync::oneshot::Receiver<()>,
}

/// The started workers, to join.
enum Running {
    Tasks(tokio::task::JoinSet<()>),
    Threads(Vec<WorkerThread>),
}

impl<T: QueryTarget> Workers<T> {
    /// Connects every worker from the caller's runtime, at the same time.
    async fn tasks(target: &Arc<T>, workers: usize) -> Result<Self, EngineError> {
        let connects = (0..workers).map(|worker| {
            let target = target.clone();
            async move {
                target
                    .connect(worker)
                    .await
                    .map_err(|error| EngineError::Connect { worker, error })
            }
        });
        Ok(Workers::Tasks(
            futures_util::future::try_join_all(connects).await?,
        ))
    }

    /// Starts one thread per worker, each with its own current-thread runtime, and waits
    /// until each has connected. On a failure every thread ends without starting.
    async fn threads(target: &Arc<T>, workers: usize) -> Result<Self, EngineError> {
        let mut starts = Vec::with_capacity(workers);
        let mut threads = Vec::with_capacity(workers);
        let mut connected = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (start_tx, start_rx) = tokio::sync::oneshot::channel::<WorkerStart<T>>();
            let (connected_tx, connected_rx) = tokio::sync::oneshot::channel();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            let target = target.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("tsload-query-{worker}"))
                .spawn(move || {
                    // I/O only: a time driver costs a lock, a look at its wheel and two
                    // clock reads on every wait for an answer (about 480 instructions, some
                    // 10% of a point select's client work, in callgrind), and the worker's
                    // waits for time are on timerfds (tsload_timer::ReactorTimer, the
                    // pacer's PreciseTimer).
                    let time_driver = tsload_timer::NEEDS_TIME_DRIVER;
                    let mut builder = tokio::runtime::Builder::new_current_thread();
                    builder.enable_io();
                    if time_driver {
                        builder.enable_time();
                    }
                    let runtime = match builder.build() {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            let _ = connected_tx.send(Err(SinkError::new(
                                ErrorKind::Other,
                                format!("cannot start the worker's runtime: {e}"),
                            )));
                            return;
                        }
                    };
                    runtime.block_on(async move {
                        let conn = match target.connect_on_own_thread(worker).await {
                            Ok(conn) => conn,
                            Err(error) => {
                                let _ = connected_tx.send(Err(error));
                                return;
                            }
                        };
                        if connected_tx.send(Ok(())).is_err() {
                            return;
                        }
                        // No start (another worker failed to connect): end here.
                        if let Ok(start) = start_rx.await {
                            run_worker(
                                worker,
                                start.source,
                                conn,
                                start.target,
                                start.shared,
                                start.recorder,
                                Threading::OwnThread { time_driver },
                            )
                            .await;
                        }
                        let _ = done_tx.send(());
                    });
                });
            let handle = spawned.map_err(|e| EngineError::Connect {
                worker,
                error: SinkError::new(
                    ErrorKind::Other,
                    format!("cannot start the worker's thread: {e}"),
                ),
            })?;
            starts.push(start_tx);
            threads.push(WorkerThread {
                handle,
                done: done_rx,
            });
            connected.push(connected_rx);
        }
        for (worker, rx) in connected.into_iter().enumerate() {
            let result = rx.await.unwrap_or_else(|_| {
                Err(SinkError::new(
                    ErrorKind::Other,
                    "the worker's thread ended while connecting".to_string(),
                ))
            });
            if let Err(error) = result {
                // Dropping the start senders ends the connected threads.
                return Err(EngineError::Connect { worker, error });
            }
        }
        Ok(Workers::Threads(starts, threads))
    }

    /// Starts every worker with what `start(worker)` gives it.
    fn start(self, mut start: impl FnMut(usize) -> WorkerStart<T>) -> Running {
        match self {
            Workers::Tasks(conns) => {
                let mut tasks = tokio::task::JoinSet::new();
                for (worker, conn) in conns.into_iter().enumerate() {
                    let s = start(worker);
                    // On the caller's runtime, which has tokio's time driver.
                    tasks.spawn(run_worker(
                        worker,
                        s.source,
                        conn,
                        s.target,
                        s.shared,
                        s.recorder,
                        Threading::Task,
                    ));
                }
                Running::Tasks(tasks)
            }
            Workers::Threads(starts, threads) => {
                for (worker, tx) in starts.into_iter().enumerate() {
                    // A thread that already ended says so when joined.
                    let _ = tx.send(start(worker));
                }
                Running::Threads(threads)
            }
        }
    }
}

impl Running {
    /// Waits for every worker; returns why each one that did not end normally failed.
    async fn join(self) -> Vec<String> {
        let mut failures = Vec::new();
        match self {
            Running::Tasks(mut tasks) => {
                while let Some(joined) = tasks.join_next().await {
                    if let Err(e) = joined {
                        failures.push(e.to_string());
                    }
                }
            }
            Running::Threads(threads) => {
                for thread in threads {
                    if thread.done.await.is_err() {
                        failures.push("its thread panicked".to_string());
                    }
                    // It has ended (or is ending): joining does not wait for long.
                    let _ = tokio::task::spawn_blocking(move || thread.handle.join()).await;
                }
            }
        }
        failures
    }
}

/// Runs the setup requests in order on one connection.
async fn run_setup<T: QueryTarget>(
    workload: &dyn QueryWorkload,
    target: &T,
    stop: &StopHandle,
) -> Result<(), EngineError> {
    let setup = workload.setup();
    if setup.is_empty() || stop.is_stopped() {
        return Ok(());
    }
    let mut conn = target
        .connect(0)
        .await
        .map_err(|error| EngineError::Connect { worker: 0, error })?;
    for (request, statements) in setup.iter().enumerate() {
        if stop.is_stopped() {
            break;
        }
        conn.execute(statements)
            .await
            .map_err(|error| EngineError::Setup { request, error })?;
    }
    Ok(())
}

/// Runs every load source on its own connection, in parallel; the first failure ends the
/// load (the other loaders are cancelled) and the run. `None` when there is no load.
async fn run_load<T: QueryTarget>(
    workload: &Arc<dyn QueryWorkload>,
    target: &Arc<T>,
    loaders: usize,
    stop: &StopHandle,
) -> Result<Option<Counters>, EngineError> {
    let mut totals = Counters::default();
    if stop.is_stopped() {
        return Ok(None);
    }
    let mut tasks = tokio::task::JoinSet::new();
    let mut loader_of = HashMap::new();
    for loader in 0..loaders {
        let Some(source) = workload.load(loader, loaders) else {
            continue;
        };
        let (target, stop) = (target.clone(), stop.clone());
        let handle = tasks.spawn(run_loader(loader, source, target, stop));
        loader_of.insert(handle.id(), loader);
    }
    if tasks.is_empty() {
        return Ok(None);
    }
    while let Some(joined) = tasks.join_next_with_id().await {
        match joined {
            Ok((_, Ok(counters))) => totals.add(&counters),
            Ok((_, Err(e))) => return Err(e),
            Err(e) => {
                let loader = loader_of.get(&e.id()).copied().unwrap_or(0);
                return Err(EngineError::Load {
                    loader,
                    error: SinkError::new(ErrorKind::Other, format!("the loader failed: {e}")),
                });
            }
        }
    }
    Ok(Some(totals))
}

async fn run_loader<T: QueryTarget>(
    loader: usize,
    mut source: Box<dyn QuerySource>,
    target: Arc<T>,
    stop: StopHandle,
) -> Result<Counters, EngineError> {
    let mut conn = target
        .connect(loader)
        .await
        .map_err(|error| EngineError::Load { loader, error })?;
    let mut counters = Counters::default();
    let mut request = QueryRequest::default();
    while !stop.is_stopped() {
        request.clear();
        if !source.next(&mut request) {
            break;
        }
        let ack = conn
            .execute(&request)
            .await
            .map_err(|error| EngineError::Load { loader, error })?;
        counters.requests += 1;
        counters.rows = counters.rows.saturating_add(ack.rows);
        counters.metrics += ack.statements;
    }
    Ok(counters)
}

async fn run_worker<T: QueryTarget>(
    worker: usize,
    mut source: Box<dyn QuerySource>,
    conn: T::Conn,
    target: Arc<T>,
    shared: Arc<Shared>,
    mut recorder: QueryRecorder,
    threading: Threading,
) {
    let time_driver = match threading {
        Threading::Task => true,
        Threading::OwnThread { time_driver } => time_driver,
    };
    let cfg = &shared.cfg;
    let stop = &shared.stop;
    // Seconds between two requests of this worker in open loop.
    let period = match cfg.mode {
        LoadMode::Closed => None,
        LoadMode::Open { rate } => Some(cfg.workers as f64 / rate),
    };
    let mut conn = Some(conn);
    let mut request = QueryRequest::default();
    let mut seq: u64 = 0;
    let mut pacer = Pacer::new(period.unwrap_or_default(), time_driver);
    // For the back-off and request timeouts, made on first use.
    let mut timer: Option<ReactorTimer> = None;
    let schedule = Schedule::new(shared.t0, period, worker, cfg.workers);

    // Failures in a row: a worker whose requests fail waits before the next one
    // ([`failure_backoff`]), so a closed port or a refusing server is not hammered.
    let mut failures_in_a_row: u32 = 0;
    // One subscription for the worker's life, not one per request.
    let abandoned = stop.abandoned();
    let mut abandoned = std::pin::pin!(abandoned);
    while !stop.is_stopped() {
        if failures_in_a_row > 0 {
            let wait = failure_backoff(failures_in_a_row);
            let slept = async { reactor_timer(&mut timer)?.sleep(wait).await };
            tokio::select! {
                slept = flushing(&mut recorder, slept) => if let Err(e) = slept {
                    shared.fatal(no_timer("the back-off after a failure", &e));
                    break;
                },
                _ = stop.stopped() => break,
            }
        }
        // A due time past what an Instant holds (an absurdly low rate) is never reached.
        let due = schedule.due(seq);
        if let Some(deadline) = shared.deadline
            && (Instant::now() >= deadline || due.is_at_or_after(deadline))
        {
            // This worker is done; the others still send what falls due before the deadline.
            // It ends at the deadline, not at its last answer: the run's window is its
            // duration, so offered and achieved are over the same time (ended at the last
            // answer, 0.01 requests/s for 3 s measured one request in 0.016 s, 629,432%).
            if Instant::now() < deadline {
                tokio::select! {
                    _ = flushing(&mut recorder, pacer.wait_until(deadline)) => {}
                    _ = stop.stopped() => {}
                }
            }
            shared.deadline_reached.store(true, Ordering::Relaxed);
            let unsent = schedule.unsent_before(deadline, seq);
            shared.unsent.fetch_add(unsent, Ordering::Relaxed);
            break;
        }
        let due = match due {
            Due::Never => break,
            Due::At(d) => Some(d),
            Due::Now => None,
        };
        if !shared.claim_request() {
            stop.stop(StopReason::RequestLimit);
            break;
        }
        request.clear();
        if !source.next(&mut request) {
            shared.unclaim_request();
            break;
        }
        let kind = request.kind;
        let Some(kind_name) = shared.kinds.get(kind) else {
            shared.unclaim_request();
            shared.fatal(SinkError::new(
                ErrorKind::Other,
                format!(
                    "the workload made a request of kind {kind}, but names only {} kinds",
                    shared.kinds.len()
                ),
            ));
            break;
        };
        let intended = match due {
            Some(due) if due > Instant::now() => {
                tokio::select! {
                    _ = flushing(&mut recorder, pacer.wait_until(due)) => {}
                    _ = stop.stopped() => {
                        shared.unclaim_request();
                        break;
                    }
                }
                due
            }
            Some(due) => due,
            None => Instant::now(),
        };
        // When the request is sent: in closed loop, when it was intended (just read),
        // unless a reconnect comes between.
        let mut sent = due.is_none().then_some(intended);
        // Reconnect where a timed-out request left no usable connection; a failed
        // reconnect fails this request (the next one tries again).
        if conn.is_none() {
            sent = None;
            let connect = async {
                match threading {
                    Threading::Task => target.connect(worker).await,
                    Threading::OwnThread { .. } => target.connect_on_own_thread(worker).await,
                }
            };
            match flushing(&mut recorder, connect).await {
                Ok(c) => conn = Some(c),
                Err(error) => {
                    recorder.record_failure(kind, Instant::now(), error.kind);
                    shared.count_failure(error);
                    seq += 1;
                    failures_in_a_row = failures_in_a_row.saturating_add(1);
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else {
            continue;
        };
        let sent = sent.unwrap_or_else(Instant::now);
        // `None`: the request timed out. Pinned here, so `flushing` takes a reference
        // instead of moving the whole request future (kilobytes, with a driver's nested
        // futures) into its own on every request.
        let answer = {
            let execute = std::pin::pin!(async {
                match cfg.timeout {
                    None => Some(c.execute(&request).await),
                    Some(limit) => {
                        let timed = async {
                            reactor_timer(&mut timer)?
                                .timeout(limit, c.execute(&request))
                                .await
                        };
                        timed
                            .await
                            .unwrap_or_else(|e| Some(Err(no_timer("the request timeout", &e))))
                    }
                }
            });
            // The grace after the run's end bounds the wait for an answer.
            tokio::select! {
                biased;
                answer = flushing(&mut recorder, execute) => answer,
                _ = &mut abandoned => {
                    // Given up on: counted as failed, not as a failure that stops the run.
                    recorder.record_failure(kind, Instant::now(), ErrorKind::Timeout);
                    shared.abandoned.fetch_add(1, Ordering::Relaxed);
                    if shared.deadline.is_some_and(|d| Instant::now() >= d) {
                        shared.deadline_reached.store(true, Ordering::Relaxed);
                    }
                    break;
                }
            }
        };
        let result = match (answer, cfg.timeout) {
            (Some(r), _) => r,
            (None, limit) => {
                // The connection may still be busy with the request: drop it.
                conn = None;
                Err(SinkError::new(
                    ErrorKind::Timeout,
                    format!(
                        "a `{kind_name}` request took longer than the {:?} timeout",
                        limit.unwrap_or_default()
                    ),
                ))
            }
        };
        let done = Instant::now();
        seq += 1;
        failures_in_a_row = match &result {
            Err(e) if backs_off(e.kind) => failures_in_a_row.saturating_add(1),
            _ => 0,
        };
        match result {
            Ok(ack) if cfg.require_rows && ack.rows == 0 => {
                recorder.record_failure(kind, done, ErrorKind::Empty);
                shared.count_failure(SinkError::new(
                    ErrorKind::Empty,
                    format!("a `{kind_name}` request returned no rows (require_rows)"),
                ));
            }
            Ok(ack) => recorder.record_success(
                kind,
                done,
                done.saturating_duration_since(intended),
                done.saturating_duration_since(sent),
                ack,
            ),
            Err(error) => {
                recorder.record_failure(kind, done, error.kind);
                shared.count_failure(error);
            }
        }
    }
    recorder.finish();
}

/// Where a worker runs.
#[derive(Debug, Clone, Copy)]
enum Threading {
    /// A task on the run's shared runtime (which has tokio's time driver).
    Task,
    /// Alone on its own thread and current-thread runtime; with tokio's time driver or
    /// not (only the pacer's fallback needs it; everything else waits on timerfds).
    OwnThread { time_driver: bool },
}

/// The worker's timer for back-off and timeouts, made on first use.
fn reactor_timer(timer: &mut Option<ReactorTimer>) -> std::io::Result<&mut ReactorTimer> {
    match timer {
        Some(timer) => Ok(timer),
        None => Ok(timer.insert(ReactorTimer::new()?)),
    }
}

/// The error of a wait that could not get a timer (out of file descriptors).
fn no_timer(what: &str, e: &std::io::Error) -> SinkError {
    SinkError::new(
        ErrorKind::Other,
        format!("no timer for {what}: {e} (out of file descriptors? see `ulimit -n`)"),
    )
}

/// Whether a failure of `kind` makes the worker wait before its next request: the server
/// could not be reached, timed out or said it is overloaded. A refused query (the server
/// answered) is sent on at the load's pace.
fn backs_off(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Unavailable
    )
}

/// How long a worker waits after `failures` failed requests in a row: 10 ms, doubling up
/// to 1 s. A success resets it.
pub fn failure_backoff(failures: u32) -> Duration {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);
    let shift = failures.saturating_sub(1).min(16);
    FIRST.saturating_mul(1 << shift).min(MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::IntervalReport;
    use crate::pacing::unsent_before;

    #[test]
    fn recorder_hands_over_each_interval_with_what_ended_in_it() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut r =
            QueryRecorder::new(7, 3, IntervalTicker::new(t0, Duration::from_secs(1), 8), tx);
        let ack = QueryAck {
            rows: 4,
            statements: 2,
        };
        let us = Duration::from_micros;
        r.record_success(2, ms(10), us(10), us(8), ack);
        r.record_failure(2, ms(20), ErrorKind::Conflict);
        r.record_failure(0, ms(999), ErrorKind::Empty);
        r.advance(ms(999));
        assert!(rx.try_recv().is_err(), "interval not over yet");
        r.advance(ms(1500));
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.worker, rec.interval, rec.next), (7, 0, 1));
        let kinds: Vec<usize> = rec.kinds.iter().map(|k| k.0).collect();
        assert_eq!(kinds, [0, 2]);
        let (_, c, l, s) = &rec.kinds[1];
        assert_eq!((c.requests, c.rows, c.metrics), (1, 4, 2));
        assert_eq!(c.errors[&ErrorKind::Conflict], 1);
        assert_eq!(c.failed_requests, 1);
        assert_eq!((l.len(), s.len()), (1, 1));
        assert_eq!(rec.kinds[0].1.errors[&ErrorKind::Empty], 1);
        assert!(rx.try_recv().is_err());
        // An answer 2.2 intervals later: interval 1 is handed over (empty), 2 is skipped,
        // and the answer counts in interval 3.
        r.record_failure(1, ms(3700), ErrorKind::Timeout);
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next), (1, 3));
        assert!(rec.kinds.is_empty());
        r.finish();
        let rec = rx.try_recv().unwrap();
        assert_eq!((rec.interval, rec.next), (3, u64::MAX));
        assert_eq!(rec.kinds.len(), 1);
        assert_eq!(rec.kinds[0].1.errors[&ErrorKind::Timeout], 1);
        drop(r);
        assert!(rx.try_recv().is_err(), "finished once");
    }

    /// Keeps what each reported interval held: (start, end, requests).
    #[derive(Default)]
    struct Shown(Vec<(Duration, Duration, u64)>);

    impl Observer for Shown {
        fn on_interval(&mut self, r: &IntervalReport) {
            self.0.push((r.start, r.end, r.counters.requests));
        }
    }

    fn record(worker: usize, interval: u64, next: u64, requests: u64) -> QueryIntervalRecord {
        let mut latency = new_histogram();
        for _ in 0..requests {
            latency.record(1_000).unwrap();
        }
        QueryIntervalRecord {
            worker,
            interval,
            next,
            kinds: vec![(
                0,
                Counters {
                    requests,
                    ..Counters::default()
                },
                latency.clone(),
                latency,
            )],
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_reporter_files_records_under_their_interval() {
        // Worker 1 hands interval 0 over after the reporter's clock passed its end: the
        // interval waits for it. Worker 0 then hands nothing over for a while (a stuck
        // thread): interval 1 is reported half an interval after its end without it, and
        // its late records count in the interval open when they come.
        let (tx, rx) = mpsc::unbounded_channel();
        let t0 = Instant::now();
        let interval = Duration::from_secs(1);
        let feed = async move {
            let at = |ms: u64| tokio::time::Instant::from_std(t0 + Duration::from_millis(ms));
            tokio::time::sleep_until(at(1_050)).await;
            tx.send(record(0, 0, 1, 10)).unwrap();
            tokio::time::sleep_until(at(1_200)).await;
            tx.send(record(1, 0, 1, 20)).unwrap();
            tokio::time::sleep_until(at(2_100)).await;
            tx.send(record(1, 1, 2, 5)).unwrap();
            tokio::time::sleep_until(at(3_200)).await;
            tx.send(record(0, 1, 3, 3)).unwrap();
            tx.send(record(1, 2, 3, 4)).unwrap();
            tokio::time::sleep_until(at(3_400)).await;
            tx.send(record(1, 3, u64::MAX, 2)).unwrap();
            tx.send(record(0, 3, u64::MAX, 1)).unwrap();
        };
        let mut shown = Shown::default();
        let mut kinds = vec![empty_kind("k".into())];
        let ticker = IntervalTicker::new(t0, interval, 2);
        let (_, reported) =
            tokio::join!(feed, report_queries(rx, &ticker, 2, &mut shown, &mut kinds));
        let s = Duration::from_secs;
        assert_eq!(
            shown.0[..3],
            [(s(0), s(1), 30), (s(1), s(2), 5), (s(2), s(3), 7)]
        );
        // The last one ends with the last answer (std's clock: the test's is paused).
        assert_eq!((shown.0[3].0, shown.0[3].2), (s(3), 3));
        assert_eq!(shown.0.len(), 4);
        assert_eq!(reported.counters.requests, 45);
        assert_eq!(kinds[0].counters.requests, 45);
        assert_eq!(reported.intervals, 4);
    }

    #[test]
    fn unsent_requests_are_those_due_before_the_deadline_beyond_what_was_sent() {
        let s = Duration::from_secs;
        // 10 requests/s for 2 s, offset 0: requests 0..20 are due (the 20th at 2 s is not).
        assert_eq!(unsent_before(s(2), 0.1, 0.0, 20), 0);
        assert_eq!(unsent_before(s(2), 0.1, 0.0, 12), 8);
        // Offset half a period: due at 0.05, 0.15, ..., 1.95: 20 of them.
        assert_eq!(unsent_before(s(2), 0.1, 0.5, 0), 20);
        assert_eq!(unsent_before(s(2), 0.1, 0.0, 25), 0, "never negative");
        assert_eq!(unsent_before(Duration::ZERO, 0.1, 0.5, 0), 0);
    }

    #[test]
    fn config_errors_name_the_setting() {
        let check = |c: QueryConfig, want: &str| {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        };
        check(
            QueryConfig {
                workers: 0,
                ..Default::default()
            },
            "workers must be at least 1",
        );
        check(
            QueryConfig {
                loaders: 0,
                ..Default::default()
            },
            "loaders must be at least 1",
        );
        check(
            QueryConfig {
                mode: LoadMode::Open { rate: 0.0 },
                ..Default::default()
            },
            "rate must be a positive number of requests per second",
        );
        check(
            QueryConfig {
                mode: LoadMode::Open { rate: f64::NAN },
                ..Default::default()
            },
            "rate",
        );
        check(
            QueryConfig {
                requests: Some(0),
                ..Default::default()
            },
            "requests must be at least 1",
        );
        check(
            QueryConfig {
                duration: Some(Duration::ZERO),
                ..Default::default()
            },
            "duration must be positive",
        );
        check(
            QueryConfig {
                report_interval: Duration::ZERO,
                ..Default::default()
            },
            "report_interval must be positive",
        );
        assert!(QueryConfig::default().validate().is_ok());
    }
}
