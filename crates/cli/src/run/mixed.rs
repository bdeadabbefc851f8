//! Mixed mode: the write stream and the read stream at once (the queries optionally
//! `start_after` the writes), with the write latency split by whether the queries were
//! running; its report.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use tsload_core::engine::{
    EngineError, IntervalReport, LoadMode, Observer, RunOutcome, StopReason,
};
use tsload_core::query::QueryWorkload;
use tsload_core::query_engine::QueryOutcome;
use tsload_core::recorder::new_histogram;
use tsload_core::rusage::Usage;
use tsload_report::report::{LatencySummary, group};

use tsload_report::run_report::{MixedStreams, Streams as Reported};

use super::report::Reporter;
use super::{Outcomes, Streams};
use crate::progress::RunObserver;
use crate::queries;
use tsload_scenario::plan::QueryPlan;

/// Write latency of a mixed run, split by whether the queries were running; and why the
/// queries ended when the writes ended them.
#[derive(Default)]
pub(super) struct WriteSplit {
    alone: Option<Histogram<u64>>,
    with_queries: Option<Histogram<u64>>,
    /// The queries (without a limit of their own) were still running when the writes
    /// stopped, after these seconds of writes.
    queries_ended_with_writes: Option<f64>,
}

/// When the read stream's timed run started and ended (shared by the two streams).
type QueryWindow = Arc<Mutex<(Option<Instant>, Option<Instant>)>>;

/// Forwards to the CLI's observer and files each write interval's latency under "alone"
/// (wholly before the queries' timed run or after it) or "with queries" (wholly inside);
/// an interval that straddles either edge counts in neither.
struct SplitObserver<'a> {
    inner: &'a mut RunObserver,
    window: QueryWindow,
    write_t0: Option<Instant>,
    split: WriteSplit,
}

impl Observer for SplitObserver<'_> {
    fn on_start(&mut self, started_at: std::time::SystemTime) {
        self.write_t0 = Some(Instant::now());
        self.inner.on_start(started_at);
    }

    fn on_interval(&mut self, r: &IntervalReport) {
        let t0 = self.write_t0.unwrap_or_else(Instant::now);
        let (from, to) = (t0 + r.start, t0 + r.end);
        let (qs, qe) = *self.window.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match (qs, qe) {
            (None, _) => Some(&mut self.split.alone),
            (Some(qs), _) if to <= qs => Some(&mut self.split.alone),
            (_, Some(qe)) if from >= qe => Some(&mut self.split.alone),
            (Some(qs), qe) if from >= qs && qe.is_none_or(|qe| to <= qe) => {
                Some(&mut self.split.with_queries)
            }
            _ => None,
        };
        if let Some(slot) = slot {
            let _ = slot.get_or_insert_with(new_histogram).add(&r.latency);
        }
        self.inner.on_interval(r);
    }
}

/// The read stream's observer in a mixed run: notes when its timed run starts.
struct WindowObserver<'a> {
    inner: &'a mut RunObserver,
    window: QueryWindow,
}

impl Observer for WindowObserver<'_> {
    fn on_start(&mut self, started_at: std::time::SystemTime) {
        if let Ok(mut w) = self.window.lock() {
            w.0 = Some(Instant::now());
        }
        self.inner.on_start(started_at);
    }

    fn on_interval(&mut self, r: &IntervalReport) {
        self.inner.on_interval(r);
    }
}

pub(super) async fn run(
    s: &Streams<'_>,
    q: &QueryPlan,
    workload: Arc<dyn QueryWorkload>,
    observer: &mut RunObserver,
    query_observer: &mut RunObserver,
) -> Outcomes {
    let delay = q.start_after.unwrap_or_default();
    let window = QueryWindow::default();
    let mut split_observer = SplitObserver {
        inner: observer,
        window: window.clone(),
        write_t0: None,
        split: WriteSplit::default(),
    };
    let mut window_observer = WindowObserver {
        inner: query_observer,
        window: window.clone(),
    };
    let own_limit = q.config.duration.is_some() || q.config.requests.is_some();
    let mut config = q.config.clone();
    if !own_limit {
        // Without a limit of its own the read stream ends with the writes: when they have a
        // duration, the queries' clock knows it, so that requests still due at the end
        // count as never sent and the read stream ends on its duration too.
        config.duration = s
            .plan
            .load
            .duration
            .and_then(|d| d.checked_sub(delay))
            .filter(|d| !d.is_zero());
    }
    if let Some(warning) = short_data_warning(s) {
        errln!("warning: {warning}");
    }
    let write_ended = Arc::new(Mutex::new(None));
    let write = async {
        let r = crate::run::write_target(
            s.plan,
            s.workload.clone(),
            s.write_stop.clone(),
            &mut split_observer,
            s.run_id,
        )
        .await;
        let (queries_started, queries_ended) = window
            .lock()
            .map_or((false, true), |w| (w.0.is_some(), w.1.is_some()));
        if !own_limit && !queries_ended {
            // Without a limit of its own, the read stream ends with the writes, for the
            // writes' reason (a write stream that failed ends it as its data's end).
            let (reason, secs) = match &r {
                Ok(o) => (o.stop_reason, o.elapsed.as_secs_f64()),
                Err(_) => (StopReason::DataEnd, 0.0),
            };
            if queries_started && let Ok(mut e) = write_ended.lock() {
                *e = Some(secs);
            }
            s.query_stop.stop(reason);
        }
        r
    };
    let read = async {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = s.query_stop.stopped() => {}
        }
        if s.query_stop.is_stopped() {
            return Err(EngineError::Config(
                "the writes ended before the queries were to start".into(),
            ));
        }
        let r = queries::run(
            &s.plan.target,
            q,
            workload,
            config,
            s.query_stop.clone(),
            &mut window_observer,
        )
        .await;
        if let Ok(mut w) = window.lock() {
            w.1 = Some(Instant::now());
        }
        r
    };
    let (write, query) = tokio::join!(write, read);
    let mut split = split_observer.split;
    split.queries_ended_with_writes = write_ended.lock().ok().and_then(|e| *e);
    Outcomes::Mixed {
        write,
        query,
        split,
    }
}

/// Why the writes of a mixed run will end before `load.duration` (the queries, ending with
/// them, end early too): open loop at `load.rate` wants more rows than the data set (or
/// `load.rows`) holds.
fn short_data_warning(s: &Streams<'_>) -> Option<String> {
    let load = &s.plan.load;
    let duration = load.duration?;
    let LoadMode::Open { rate } = load.mode else {
        return None;
    };
    let (rows, end) = match (load.rows, s.workload.total_rows()) {
        (Some(limit), Some(total)) if total < limit => (total, "data end"),
        (Some(limit), _) => (limit, "row limit"),
        (None, Some(total)) => (total, "data end"),
        (None, None) => return None,
    };
    let wanted = rate * duration.as_secs_f64();
    (rate > 0.0 && (rows as f64) < wanted).then(|| {
        format!(
            "the writes have {} rows, {:.1} s at load.rate = {} rows/s, less than load.duration = {}: \
             they will stop early ({end}) and the queries with them; lengthen the data set \
             (workload.end, workload.scale) or shorten load.duration",
            group(rows),
            rows as f64 / rate,
            group(rate.round() as u64),
            humantime::format_duration(duration)
        )
    })
}

pub(super) fn report(
    write: Result<RunOutcome, EngineError>,
    query: Result<QueryOutcome, EngineError>,
    split: WriteSplit,
    usage: &Usage,
    r: &mut Reporter<'_>,
) -> Option<Reported> {
    let write = r.write_summary(write, usage, "writes: ");
    let query = r.query_summary(query, usage);
    if let Some(s) = &write {
        outln!("=== writes ===");
        out!("{}", s.render_text());
    }
    let alone = split.alone.as_ref().map(LatencySummary::from_histogram);
    let with = split
        .with_queries
        .as_ref()
        .map(LatencySummary::from_histogram);
    if let (Some(a), Some(w)) = (&alone, &with) {
        outln!(
            "  write latency     min      mean       p50       p90       p99     p99.9       max   (ms)"
        );
        for (label, l) in [("alone", a), ("with queries", w)] {
            outln!(
                "  {label:<14}{:>8.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}   (n={})",
                l.min_ms,
                l.mean_ms,
                l.p50_ms,
                l.p90_ms,
                l.p99_ms,
                l.p99_9_ms,
                l.max_ms,
                l.count
            );
        }
    }
    if let Some(s) = &query {
        outln!("=== queries ===");
        out!("{}", s.render_text());
    }
    // The read stream's stop reason is the writes' when they ended it: say so.
    let ended_with_writes = split.queries_ended_with_writes.map(|secs| {
        let why = write
            .as_ref()
            .map_or_else(|| "an error".to_string(), |s| s.stop_reason.to_string());
        outln!(
            "  (the queries, without a limit of their own, ended with the writes: {why} after {secs:.3} s of writes)"
        );
        why
    });
    outln!("  (client cpu in both reports: the whole process, writes and queries together)");
    Some(Reported::Mixed(Box::new(MixedStreams {
        write,
        query,
        write_latency_alone: alone,
        write_latency_with_queries: with,
        queries_ended_with_writes: ended_with_writes,
        ..MixedStreams::default()
    })))
}
