//! HdrHistogram interval logs (`.hlog`, what `tsload run --hlog` and `tsload merge
//! --hlog-out` write) read from their text for the page: each interval's latency and
//! service-time percentiles, and the whole run's histograms for the percentile spectrum.
//! Pure: the caller reads the file; every line, time and histogram is checked (lines and
//! times by tsload-report's one log reader, payloads by its `decode_checked`), so a
//! garbled log is an [`Error::HlogRead`] naming the log, the line and what is wrong,
//! never a panic.

use hdrhistogram::Histogram;
use tsload_report::hlog::{MAX_COUNT, SERVICE_TAG, decode_checked, read_intervals};

use crate::{Error, Interval, StreamKind, ms, round_us};

/// One interval of a log: its time and both histograms, still encoded (a 1-hour log holds
/// thousands; decoded, they would take gigabytes).
#[derive(Debug, Clone)]
pub(crate) struct LogInterval {
    /// Since the log's base time, seconds.
    pub start_s: f64,
    pub length_s: f64,
    pub latency: String,
    /// The service-time histogram (`Tag=service`), when the log has one for this interval.
    pub service: Option<String>,
}

/// An interval log as the page uses it.
#[derive(Clone)]
pub struct Hlog {
    /// The log's name on the page (its file name).
    pub label: String,
    /// The log's base time, seconds since the epoch (intervals are measured from it).
    pub base_s: f64,
    pub(crate) intervals: Vec<LogInterval>,
    /// The whole log, every interval added: the percentile spectrum's histograms.
    pub(crate) latency: Histogram<u64>,
    pub(crate) service: Histogram<u64>,
}

impl std::fmt::Debug for Hlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hlog")
            .field("label", &self.label)
            .field("base_s", &self.base_s)
            .field("intervals", &self.intervals.len())
            .field("latency_count", &self.latency.len())
            .finish()
    }
}

impl Hlog {
    /// How many intervals the log holds.
    pub fn len(&self) -> usize {
        self.intervals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Latency values counted over the whole log (one per request).
    pub fn latency_count(&self) -> u64 {
        self.latency.len()
    }

    /// Each interval's figures, as the JSON report's `intervals` would state them for
    /// `stream` (counts other than requests are not in a log: left at zero).
    pub(crate) fn intervals(&self, stream: StreamKind) -> Vec<Interval> {
        self.intervals
            .iter()
            .map(|i| {
                let lat = decode_checked(&i.latency).ok();
                let svc = i.service.as_deref().and_then(|s| decode_checked(s).ok());
                let mut iv = summarize(stream, lat.as_ref(), svc.as_ref());
                iv.elapsed_s = round_us(i.start_s + i.length_s);
                iv.interval_s = round_us(i.length_s);
                iv
            })
            .collect()
    }
}

/// An [`Interval`] of `stream` whose percentiles come from `latency` and `service`.
pub(crate) fn summarize(
    stream: StreamKind,
    latency: Option<&Histogram<u64>>,
    service: Option<&Histogram<u64>>,
) -> Interval {
    let q = |h: Option<&Histogram<u64>>, q: f64| match h {
        Some(h) if !h.is_empty() => ms(h.value_at_quantile(q)),
        _ => 0.0,
    };
    let max = |h: Option<&Histogram<u64>>| match h {
        Some(h) if !h.is_empty() => ms(h.max()),
        _ => 0.0,
    };
    Interval {
        stream,
        requests: latency.map_or(0, Histogram::len),
        p50_ms: q(latency, 0.5),
        p99_ms: q(latency, 0.99),
        p999_ms: q(latency, 0.999),
        max_ms: max(latency),
        service_p50_ms: q(service, 0.5),
        service_p99_ms: q(service, 0.99),
        service_p999_ms: q(service, 0.999),
        service_max_ms: max(service),
        ..Interval::default()
    }
}

/// `into += h`, refused when the count would pass what a histogram holds.
pub(crate) fn add(into: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<(), String> {
    if into
        .len()
        .checked_add(h.len())
        .is_none_or(|n| n > MAX_COUNT)
    {
        return Err(format!(
            "the histograms add up past {MAX_COUNT} values, the most a histogram holds"
        ));
    }
    if into.add(h).is_err() {
        for v in h.iter_recorded() {
            into.record_n(v.value_iterated_to(), v.count_at_value())
                .map_err(|e| format!("adding a histogram: {e}"))?;
        }
    }
    Ok(())
}

/// One interval of a log: an untagged (latency) histogram, or the `Tag=service` one of the
/// interval just read; each added to the log's whole. `Err`: why the line is refused.
fn add_interval(
    (intervals, latency, service): (
        &mut Vec<LogInterval>,
        &mut Histogram<u64>,
        &mut Histogram<u64>,
    ),
    start_s: f64,
    length_s: f64,
    tag: Option<&str>,
    payload: &str,
) -> Result<(), String> {
    let hist = decode_checked(payload).map_err(|e| format!("the interval's histogram: {e}"))?;
    match tag {
        None => {
            add(latency, &hist)?;
            intervals.push(LogInterval {
                start_s,
                length_s,
                latency: payload.to_string(),
                service: None,
            });
        }
        Some(SERVICE_TAG) => {
            add(service, &hist)?;
            // tsload writes it right after the same interval's latency.
            match intervals.last_mut() {
                Some(last) if last.start_s == start_s && last.service.is_none() => {
                    last.service = Some(payload.to_string());
                }
                _ => {
                    return Err(format!(
                        "a Tag=service histogram at {start_s} s without the \
                             untagged latency histogram of that interval before it"
                    ));
                }
            }
        }
        Some(t) => {
            return Err(format!(
                "Tag={t}: tsload's logs hold untagged (latency) and \
                     Tag={SERVICE_TAG} histograms only"
            ));
        }
    }
    Ok(())
}

/// Reads the interval log `text` (named `label` in errors and on the page) through
/// [`tsload_report::hlog::read_intervals`], the one reader of tsload's logs.
pub fn read_hlog(label: &str, text: &[u8]) -> Result<Hlog, Error> {
    let mut intervals: Vec<LogInterval> = Vec::new();
    let mut latency = tsload_core::recorder::new_histogram();
    let mut service = tsload_core::recorder::new_histogram();
    let base = read_intervals(label, text, |i| {
        add_interval(
            (&mut intervals, &mut latency, &mut service),
            i.start.as_secs_f64(),
            i.length.as_secs_f64(),
            i.tag,
            i.payload,
        )
    })?;
    if intervals.is_empty() {
        return Err(Error::Hlog {
            label: label.to_string(),
            why: "no interval in the log".into(),
        });
    }
    Ok(Hlog {
        label: label.to_string(),
        base_s: base.as_secs_f64(),
        intervals,
        latency,
        service,
    })
}
