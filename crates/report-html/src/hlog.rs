//! HdrHistogram interval logs (`.hlog`, what `tsload run --hlog` and `tsload merge
//! --hlog-out` write) read from their text for the page: each interval's latency and
//! service-time percentiles, and the whole run's histograms for the percentile spectrum.
//! Pure: the caller reads the file; every line, time and histogram is checked (payloads
//! through core's `decode_checked`), so a garbled log is an [`Error::Hlog`] naming the
//! log, the line and what is wrong, never a panic.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use tsload_report::hlog::{MAX_COUNT, MAX_LINE_BYTES, MAX_TIME_S, SERVICE_TAG, decode_checked};

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
    tag: Option<String>,
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
        Some(t) if t == SERVICE_TAG => {
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

/// Reads the interval log `text` (named `label` in errors and on the page).
pub fn read_hlog(label: &str, text: &[u8]) -> Result<Hlog, Error> {
    let bad = |line: usize, why: String| Error::Hlog {
        label: label.to_string(),
        why: if line == 0 {
            why
        } else {
            format!("line {line}: {why}")
        },
    };
    let mut base: Option<f64> = None;
    let mut intervals: Vec<LogInterval> = Vec::new();
    let mut latency = tsload_core::recorder::new_histogram();
    let mut service = tsload_core::recorder::new_histogram();
    for (n, line) in text.split(|b| *b == b'\n').enumerate() {
        let n = n + 1;
        if line.len() > MAX_LINE_BYTES {
            return Err(bad(
                n,
                format!("longer than {MAX_LINE_BYTES} bytes (tsload writes a few KiB at most)"),
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut owned = line.to_vec();
        owned.push(b'\n');
        let time = |field: &str, t: std::time::Duration| {
            if t.as_secs() > MAX_TIME_S {
                Err(bad(
                    n,
                    format!(
                        "{field} is {} s; allowed: 0 to {MAX_TIME_S} s",
                        t.as_secs_f64()
                    ),
                ))
            } else {
                Ok(t.as_secs_f64())
            }
        };
        match IntervalLogIterator::new(&owned).next() {
            None => {}
            Some(Err(_)) => {
                let shown: String = String::from_utf8_lossy(line)
                    .trim_end()
                    .chars()
                    .take(80)
                    .collect();
                return Err(bad(
                    n,
                    format!(
                        "not an interval log line (a # comment, #[StartTime: S], #[BaseTime: S], \
                         the legend, or [Tag=T,]START,LENGTH,MAX,HISTOGRAM): {shown:?}"
                    ),
                ));
            }
            Some(Ok(LogEntry::BaseTime(t))) => base = Some(time("BaseTime", t)?),
            Some(Ok(LogEntry::StartTime(t))) => {
                let t = time("StartTime", t)?;
                base.get_or_insert(t);
            }
            Some(Ok(LogEntry::Interval(h))) => {
                if base.is_none() {
                    return Err(bad(
                        n,
                        "an interval before any StartTime or BaseTime".into(),
                    ));
                }
                let start_s = time("the interval's start", h.start_timestamp())?;
                let length_s = time("the interval's length", h.duration())?;
                let tag = h.tag().map(|t| t.as_str().to_string());
                add_interval(
                    (&mut intervals, &mut latency, &mut service),
                    start_s,
                    length_s,
                    tag,
                    h.encoded_histogram(),
                )
                .map_err(|why| bad(n, why))?;
            }
        }
    }
    let Some(base_s) = base else {
        return Err(bad(
            0,
            "no StartTime or BaseTime: not an interval log".into(),
        ));
    };
    if intervals.is_empty() {
        return Err(bad(0, "no interval in the log".into()));
    }
    Ok(Hlog {
        label: label.to_string(),
        base_s,
        intervals,
        latency,
        service,
    })
}
