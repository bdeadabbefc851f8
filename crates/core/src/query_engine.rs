//! The query engine: runs a [`QueryWorkload`]'s setup requests and its data load, connects
//! one [`QueryConn`] per worker, then drives the workers as tokio tasks in closed loop (next
//! request on the answer) or open loop (request i of a worker is due at
//! `t0 + i * workers / rate`, sent within tens of microseconds of it, latency measured
//! from that due time), keeping latency, service time and counters per request kind. The
//! calling task is the reporter: it merges the workers' interval records and feeds the
//! same [`Observer`] as the write engine.
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

use crate::engine::{EngineError, LoadMode, Observer, StopHandle, StopReason, run_reporter};
use crate::pacing::Pacer;
use crate::query::{QueryAck, QueryConn, QueryRequest, QuerySource, QueryTarget, QueryWorkload};
use crate::recorder::{Counters, nanos, new_histogram};
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
    pub intervals: u64,
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
    /// A worker's next request was due at or after the deadline: it ended (the others
    /// still send what is due before it).
    deadline_reached: std::sync::atomic::AtomicBool,
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

    /// Counts a failed request against the error budget.
    fn count_failure(&self, error: SinkError) {
        let Some(max) = self.cfg.max_errors else {
            return;
        };
        let failed = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
        if failed == max.saturating_add(1) {
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

/// What a query worker sends to the reporter once per interval: the kinds it recorded.
#[derive(Debug)]
struct QueryIntervalRecord {
    kinds: Vec<(usize, Counters, Histogram<u64>, Histogram<u64>)>,
}

/// One query worker's recorder: per-kind histograms and counters, handed over once per
/// interval, like [`crate::recorder::WorkerRecorder`].
#[derive(Debug)]
struct QueryRecorder {
    kinds: Vec<KindRecord>,
    interval: Duration,
    next_flush: Instant,
    tx: UnboundedSender<QueryIntervalRecord>,
}

impl QueryRecorder {
    fn new(
        kinds: usize,
        t0: Instant,
        interval: Duration,
        tx: UnboundedSender<QueryIntervalRecord>,
    ) -> Self {
        QueryRecorder {
            kinds: (0..kinds).map(|_| KindRecord::new()).collect(),
            interval,
            next_flush: t0 + interval,
            tx,
        }
    }

    fn record_success(&mut self, kind: usize, latency: Duration, service: Duration, ack: QueryAck) {
        let k = &mut self.kinds[kind];
        // `record` grows an auto-resizing histogram; `saturating_record` would clamp instead.
        if k.latency.record(nanos(latency)).is_err() {
            k.latency.saturating_record(nanos(latency));
        }
        if k.service.record(nanos(service)).is_err() {
            k.service.saturating_record(nanos(service));
        }
        k.counters.requests += 1;
        k.counters.rows += ack.rows;
        k.counters.metrics += ack.statements;
        k.active = true;
    }

    fn record_failure(&mut self, kind: usize, error: ErrorKind) {
        let k = &mut self.kinds[kind];
        *k.counters.errors.entry(error).or_default() += 1;
        k.counters.failed_requests += 1;
        k.active = true;
    }

    fn maybe_flush(&mut self, now: Instant) {
        if now >= self.next_flush {
            self.flush();
            // Skip intervals in which this worker was blocked rather than bunching flushes.
            while self.next_flush <= now {
                self.next_flush += self.interval;
            }
        }
    }

    fn flush(&mut self) {
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
        if !kinds.is_empty() {
            // The reporter outlives the workers; if it is gone the run is over anyway.
            let _ = self.tx.send(QueryIntervalRecord { kinds });
        }
    }
}

impl Drop for QueryRecorder {
    fn drop(&mut self) {
        // A worker that panicked still hands over what it recorded.
        if self.kinds.iter().any(|k| k.active) {
            self.flush();
        }
    }
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

    run_setup(workload.as_ref(), target.as_ref(), &stop).await?;
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
            intervals: 0,
        });
    }

    // Connect everything before the clock starts: connection set-up is not query time.
    let connects = (0..cfg.workers).map(|worker| {
        let target = target.clone();
        async move {
            target
                .connect(worker)
                .await
                .map_err(|error| EngineError::Connect { worker, error })
        }
    });
    let conns = futures_util::future::try_join_all(connects).await?;

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
        deadline_reached: std::sync::atomic::AtomicBool::new(false),
    });

    let (tx, rx) = mpsc::unbounded_channel::<QueryIntervalRecord>();
    let mut tasks = tokio::task::JoinSet::new();
    for (worker, conn) in conns.into_iter().enumerate() {
        let source = workload.source(worker, cfg.workers);
        let recorder = QueryRecorder::new(names.len(), t0, cfg.report_interval, tx.clone());
        tasks.spawn(run_worker(
            worker,
            source,
            conn,
            target.clone(),
            shared.clone(),
            recorder,
        ));
    }
    drop(tx);

    // The reporter: merge records per kind and in all, emit one report per interval.
    let mut kinds: Vec<KindOutcome> = names.into_iter().map(empty_kind).collect();
    let reported = run_reporter(rx, t0, cfg.report_interval, observer, |record, current| {
        for (kind, counters, latency, service) in &record.kinds {
            let k = &mut kinds[*kind];
            k.counters.add(counters);
            // Auto-resizing histograms accept any other histogram's range.
            let _ = k.latency.add(latency);
            let _ = k.service.add(service);
            current.add_parts(counters, latency, service);
        }
    })
    .await;

    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            shared.fatal(SinkError::new(
                ErrorKind::Other,
                format!("a query worker failed: {e}"),
            ));
        }
    }

    let stop_error = shared.stop_error.lock().ok().and_then(|mut e| e.take());
    Ok(QueryOutcome {
        started_at,
        elapsed: reported.end,
        load_elapsed,
        load_counters,
        counters: reported.counters,
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
        intervals: reported.intervals,
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
        counters.rows += ack.rows;
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
) {
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
    let mut pacer = Pacer::new(period.unwrap_or_default());

    // Workers are staggered by a fraction of the period, so that the offered load arrives
    // evenly rather than in bursts of `workers` requests.
    let offset = worker as f64 / cfg.workers.max(1) as f64;
    while !stop.is_stopped() {
        // A due time past what an Instant holds (an absurdly low rate) is never reached.
        let due = period.map(|p| {
            Duration::try_from_secs_f64(p * (seq as f64 + offset))
                .ok()
                .and_then(|d| shared.t0.checked_add(d))
        });
        if let Some(deadline) = shared.deadline
            && (Instant::now() >= deadline || due.is_some_and(|d| d.is_none_or(|d| d >= deadline)))
        {
            // This worker is done; the others still send what falls due before the deadline.
            shared.deadline_reached.store(true, Ordering::Relaxed);
            break;
        }
        let due = match due {
            Some(None) => break,
            Some(Some(d)) => Some(d),
            None => None,
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
                    _ = pacer.wait_until(due) => {}
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
        // Reconnect where a timed-out request left no usable connection; a failed
        // reconnect fails this request (the next one tries again).
        if conn.is_none() {
            match target.connect(worker).await {
                Ok(c) => conn = Some(c),
                Err(error) => {
                    recorder.record_failure(kind, error.kind);
                    shared.count_failure(error);
                    seq += 1;
                    recorder.maybe_flush(Instant::now());
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else {
            continue;
        };
        let sent = Instant::now();
        let result = match cfg.timeout {
            None => c.execute(&request).await,
            Some(limit) => match tokio::time::timeout(limit, c.execute(&request)).await {
                Ok(r) => r,
                Err(_) => {
                    // The connection may still be busy with the request: drop it.
                    conn = None;
                    Err(SinkError::new(
                        ErrorKind::Timeout,
                        format!(
                            "a `{kind_name}` request took longer than the {:?} timeout",
                            limit
                        ),
                    ))
                }
            },
        };
        let done = Instant::now();
        seq += 1;
        match result {
            Ok(ack) if cfg.require_rows && ack.rows == 0 => {
                recorder.record_failure(kind, ErrorKind::Empty);
                shared.count_failure(SinkError::new(
                    ErrorKind::Empty,
                    format!("a `{kind_name}` request returned no rows (require_rows)"),
                ));
            }
            Ok(ack) => recorder.record_success(
                kind,
                done.saturating_duration_since(intended),
                done.saturating_duration_since(sent),
                ack,
            ),
            Err(error) => {
                recorder.record_failure(kind, error.kind);
                shared.count_failure(error);
            }
        }
        recorder.maybe_flush(done);
    }
    recorder.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_hands_over_active_kinds_only() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let t0 = Instant::now();
        let mut r = QueryRecorder::new(3, t0, Duration::from_secs(1), tx);
        let ack = QueryAck {
            rows: 4,
            statements: 2,
        };
        r.record_success(2, Duration::from_micros(10), Duration::from_micros(8), ack);
        r.record_failure(2, ErrorKind::Conflict);
        r.record_failure(0, ErrorKind::Empty);
        r.maybe_flush(t0);
        assert!(rx.try_recv().is_err(), "interval not over yet");
        r.maybe_flush(t0 + Duration::from_millis(1500));
        let rec = rx.try_recv().unwrap();
        let kinds: Vec<usize> = rec.kinds.iter().map(|k| k.0).collect();
        assert_eq!(kinds, [0, 2]);
        let (_, c, l, s) = &rec.kinds[1];
        assert_eq!((c.requests, c.rows, c.metrics), (1, 4, 2));
        assert_eq!(c.errors[&ErrorKind::Conflict], 1);
        assert_eq!(c.failed_requests, 1);
        assert_eq!((l.len(), s.len()), (1, 1));
        assert_eq!(rec.kinds[0].1.errors[&ErrorKind::Empty], 1);
        r.flush();
        assert!(rx.try_recv().is_err(), "nothing new: nothing sent");
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
