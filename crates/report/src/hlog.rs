//! HdrHistogram interval logs (`.hlog`). The writer: V2 + DEFLATE compressed histograms,
//! one line per interval, in the format HdrHistogram's Java `HistogramLogProcessor` reads;
//! the corrected latency is written untagged (the processor's default), service time with
//! `Tag=service`; values are nanoseconds. The one reader of tsload's logs
//! ([`read_intervals`], which [`merge_logs`] and the HTML page use) and [`decode_checked`],
//! the decoder of histogram payloads that come from outside: sizes,
//! times and counts are bounded and checked, so bad input is an error, never a panic or an
//! allocation of whatever a payload declares.

use std::io::{self, BufRead, Read as _, Write};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

/// Tag of the service-time histograms.
pub const SERVICE_TAG: &str = "service";

/// Appends interval histograms to a writer.
pub struct HlogWriter<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
}

impl<W: Write> std::fmt::Debug for HlogWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HlogWriter")
    }
}

impl<W: Write> HlogWriter<W> {
    /// Writes the log header; interval timestamps are then seconds since `started_at`.
    pub fn new(mut out: W, started_at: SystemTime, comment: &str) -> io::Result<Self> {
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("Values are nanoseconds; untagged = latency from the intended send time (coordinated-omission corrected), Tag=service = service time")
            .with_start_time(started_at)
            .with_base_time(started_at)
            .begin_log_with(&mut out, &mut serializer)?;
        Ok(HlogWriter { out, serializer })
    }

    /// Writes one interval: `start` is measured from the run's start.
    pub fn write_interval(
        &mut self,
        start: Duration,
        length: Duration,
        latency: &Histogram<u64>,
        service: &Histogram<u64>,
    ) -> io::Result<()> {
        let mut log =
            IntervalLogWriterBuilder::new().begin_log_with(&mut self.out, &mut self.serializer)?;
        log.write_histogram(latency, start, length, None)
            .map_err(|e| io::Error::other(e.to_string()))?;
        log.write_histogram(service, start, length, Tag::new(SERVICE_TAG))
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The longest line [`read_intervals`] reads, newline aside. tsload's lines are 100 bytes to a
/// few KiB; a histogram of its precision over the whole u64 range encodes to under 1 MiB.
pub const MAX_LINE_BYTES: usize = 4 << 20;
/// The largest interval log [`merge_logs`] reads (4 GiB).
pub const MAX_LOG_BYTES: u64 = 4 << 30;
/// The latest time an interval log may name, in seconds since the epoch
/// (9999-12-31T23:59:59Z); an interval's start and length are bounded by it too.
pub const MAX_TIME_S: u64 = 253_402_300_799;
/// The most values one histogram may count: what its encoding can hold.
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// An interval log that cannot be read or merged: the file, the line and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    #[error("reading {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: io::Error,
    },
    #[error("{file}: larger than {cap} bytes, the most an interval log is read")]
    TooLarge { file: String, cap: u64 },
    #[error(
        "{file}:{line}: a line longer than {cap} bytes, the most an interval log's line is read (tsload writes a few KiB at most)"
    )]
    LineTooLong { file: String, line: u64, cap: usize },
    #[error(
        "{file}:{line}: not an interval log line (a # comment, #[StartTime: S], #[BaseTime: S], the legend, or [Tag=T,]START,LENGTH,MAX,HISTOGRAM): {text}"
    )]
    Syntax {
        file: String,
        line: u64,
        text: String,
    },
    #[error("{file}:{line}: an interval before any StartTime or BaseTime")]
    NoBase { file: String, line: u64 },
    #[error("{file}: no StartTime or BaseTime")]
    NoTime { file: String },
    #[error(
        "{file}:{line}: {field} is {value} s; allowed: 0 to {MAX_TIME_S} s (up to 9999-12-31T23:59:59Z)"
    )]
    Time {
        file: String,
        line: u64,
        field: &'static str,
        value: String,
    },
    #[error("{file}:{line}: the interval's histogram: {source}")]
    Histogram {
        file: String,
        line: u64,
        #[source]
        source: HistogramError,
    },
    #[error(
        "{file}:{line}: adding the interval's histogram to the merged interval at {start_s} s makes its count pass {MAX_COUNT}, the most a histogram holds"
    )]
    Overflow {
        file: String,
        line: u64,
        start_s: f64,
    },
    #[error("{file}:{line}: {why}")]
    Refused {
        file: String,
        line: u64,
        why: String,
    },
    #[error("writing the merged log: {0}")]
    Write(#[source] io::Error),
}

/// A histogram payload (base64 of HdrHistogram's V2 or V2 + DEFLATE encoding) that cannot
/// be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    #[error("not base64: {0}")]
    Base64(String),
    #[error("it ends inside its {0}")]
    Truncated(&'static str),
    #[error(
        "cookie {0:#010x}: not HdrHistogram's V2 ({V2_COOKIE:#010x}) or V2 + DEFLATE ({V2_DEFLATE_COOKIE:#010x}) encoding"
    )]
    Cookie(u32),
    #[error("its DEFLATE stream is corrupt: {0}")]
    Inflate(String),
    #[error("{0} is not supported")]
    Unsupported(&'static str),
    #[error(
        "lowest value {low}, highest {high}, {digits} significant digits: not a histogram tsload reads (allowed: lowest >= 1, highest >= 2 x lowest, at most 3 significant digits, tsload's precision)"
    )]
    Bounds { low: u64, high: u64, digits: u32 },
    #[error(
        "it declares {declared} bytes of counts; a histogram of its range needs at most {most}"
    )]
    PayloadTooLong { declared: u64, most: u64 },
    #[error("its counts: {0}")]
    Counts(&'static str),
}

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, digits (4 bytes each),
/// lowest, highest (8 each), integer-to-double ratio (an f64).
const V2_HEADER: usize = 40;

/// Decodes a histogram payload from outside (an `.hlog` line's or a report's `hdr`): the
/// header is checked, the DEFLATE stream inflated no further than a histogram of the
/// declared range can need, and every count checked (no count past the range, no sum past
/// [`MAX_COUNT`]) before hdrhistogram's own decoder sees the bytes.
pub fn decode_checked(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| HistogramError::Base64(e.to_string()))?;
    let cookie = be_u32(&bytes, 0).ok_or(HistogramError::Truncated("cookie"))?;
    let (v2, counts) = match cookie {
        V2_COOKIE => {
            let (counts, payload_len) = header(&bytes)?;
            let end = V2_HEADER
                .checked_add(payload_len)
                .filter(|&end| end <= bytes.len())
                .ok_or(HistogramError::Truncated("counts"))?;
            let mut v2 = bytes;
            v2.truncate(end);
            (v2, counts)
        }
        V2_DEFLATE_COOKIE => {
            let declared = be_u32(&bytes, 4).ok_or(HistogramError::Truncated("length"))?;
            let body = &bytes[8..];
            let body = &body[..body.len().min(declared as usize)];
            let mut inflater = flate2::read::ZlibDecoder::new(body);
            let mut v2 = vec![0u8; V2_HEADER];
            inflater
                .read_exact(&mut v2)
                .map_err(|e| inflate_error(e, "header"))?;
            if be_u32(&v2, 0) != Some(V2_COOKIE) {
                return Err(HistogramError::Cookie(be_u32(&v2, 0).unwrap_or_default()));
            }
            let (counts, payload_len) = header(&v2)?;
            let read = (&mut inflater)
                .take(payload_len as u64)
                .read_to_end(&mut v2)
                .map_err(|e| inflate_error(e, "counts"))?;
            if read < payload_len {
                return Err(HistogramError::Truncated("counts"));
            }
            (v2, counts)
        }
        other => return Err(HistogramError::Cookie(other)),
    };
    check_counts(&v2[V2_HEADER..], counts)?;
    Deserializer::new()
        .deserialize(&mut v2.as_slice())
        .map_err(|e| HistogramError::Counts(deserialize_error(&e)))
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A V2 header's number of counters and payload length: unsupported features and
/// ranges that are no histogram refused, and a payload longer than the counters can need
/// (9 bytes each, a zig-zag LEB128 number).
fn header(v2: &[u8]) -> Result<(usize, usize), HistogramError> {
    let field = |v: Option<u64>| v.ok_or(HistogramError::Truncated("header"));
    let payload_len = field(be_u32(v2, 4).map(u64::from))?;
    if field(be_u32(v2, 8).map(u64::from))? != 0 {
        return Err(HistogramError::Unsupported("a normalizing index offset"));
    }
    let digits = field(be_u32(v2, 12).map(u64::from))? as u32;
    let (low, high) = (field(be_u64(v2, 16))?, field(be_u64(v2, 24))?);
    if f64::from_bits(field(be_u64(v2, 32))?) != 1.0 {
        return Err(HistogramError::Unsupported(
            "an integer-to-double conversion ratio other than 1",
        ));
    }
    // tsload's precision at most: 56,320 counters for the whole u64 range (5 digits would
    // let a 100-byte payload decode to a 50 MB histogram).
    let counts = u8::try_from(digits)
        .ok()
        .filter(|&d| d <= tsload_core::recorder::SIGNIFICANT_DIGITS)
        .and_then(|d| Histogram::<u64>::new_with_bounds(low, high, d).ok())
        .ok_or(HistogramError::Bounds { low, high, digits })?
        .distinct_values();
    let most = (counts as u64).saturating_mul(9);
    if payload_len > most {
        return Err(HistogramError::PayloadTooLong {
            declared: payload_len,
            most,
        });
    }
    Ok((counts, payload_len as usize))
}

fn inflate_error(e: io::Error, what: &'static str) -> HistogramError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        HistogramError::Truncated(what)
    } else {
        HistogramError::Inflate(e.to_string())
    }
}

/// Walks the counts as hdrhistogram's decoder will (zig-zag LEB128 numbers: a count, or
/// minus a run of zero counts), refusing what would make it panic or lie: a run of 2^63
/// zeros, a count past the histogram's `counts` counters, a total past [`MAX_COUNT`].
fn check_counts(payload: &[u8], counts: usize) -> Result<(), HistogramError> {
    let past = HistogramError::Counts("runs of zero counts past 2^64");
    let (mut at, mut index, mut total) = (0usize, 0u64, 0u64);
    while at < payload.len() {
        let (value, len) = varint(&payload[at..]).ok_or(HistogramError::Truncated("counts"))?;
        at += len;
        let signed = ((value >> 1) as i64) ^ -((value & 1) as i64);
        if signed < 0 {
            if signed == i64::MIN {
                return Err(HistogramError::Counts("a run of 2^63 zero counts"));
            }
            index = index
                .checked_add(signed.unsigned_abs())
                .ok_or(past.clone())?;
            continue;
        }
        let count = signed as u64;
        if count > 0 {
            if index >= counts as u64 {
                return Err(HistogramError::Counts(
                    "a count past the histogram's highest value",
                ));
            }
            total = total.checked_add(count).filter(|&t| t <= MAX_COUNT).ok_or(
                HistogramError::Counts(
                    "they add up past 9223372036854775807, the most a histogram holds",
                ),
            )?;
        }
        index = index.checked_add(1).ok_or(past.clone())?;
    }
    Ok(())
}

/// HdrHistogram's LEB128 number at the start of `b` (at most 9 bytes, the ninth taken
/// whole) and its length; `None` when `b` ends inside it.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *b.get(i)?;
        if i == 8 {
            return Some((value | u64::from(byte) << 56, 9));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn deserialize_error(e: &hdrhistogram::serialization::DeserializeError) -> &'static str {
    use hdrhistogram::serialization::DeserializeError as E;
    match e {
        E::IoError(_) => "they end early",
        E::InvalidCookie => "a wrong cookie",
        E::UnsupportedFeature => "an unsupported feature",
        E::UnsuitableCounterType => "a count too large",
        E::InvalidParameters => "invalid parameters",
        E::UsizeTypeTooSmall => "a run of zeros too long",
        E::EncodedArrayTooLong => "more counts than the histogram has",
    }
}

/// `into += h`, refused (`Err`) when the count would pass [`MAX_COUNT`]; a histogram of
/// another precision or range is added value by value.
pub(crate) fn add_checked(into: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<(), ()> {
    if into
        .len()
        .checked_add(h.len())
        .is_none_or(|n| n > MAX_COUNT)
    {
        return Err(());
    }
    if into.add(h).is_err() {
        for v in h.iter_recorded() {
            into.record_n(v.value_iterated_to(), v.count_at_value())
                .map_err(|_| ())?;
        }
    }
    Ok(())
}

/// Limits of [`merge_logs`]'s reading (tests use small ones).
#[derive(Debug, Clone, Copy)]
struct Limits {
    line: usize,
    total: u64,
}

const LIMITS: Limits = Limits {
    line: MAX_LINE_BYTES,
    total: MAX_LOG_BYTES,
};

/// One interval read from a shard's log, its histogram still encoded.
struct Entry {
    /// Since the epoch.
    at: Duration,
    length: Duration,
    service: bool,
    log: usize,
    line: u64,
    payload: String,
}

/// Merges interval logs written by [`HlogWriter`] (one per shard) into one: intervals are
/// aligned on the wall clock (each log's base time plus the interval's offset, rounded to
/// the first log's interval length, from the earliest base time), and the histograms of
/// one slot and tag are added. Returns how many merged intervals were written.
///
/// The logs are read line by line, each line at most [`MAX_LINE_BYTES`] and each log at
/// most [`MAX_LOG_BYTES`]; times are bounded by [`MAX_TIME_S`]; histograms are decoded by
/// [`decode_checked`] one merged interval at a time, so memory holds the logs' text and
/// two histograms. Nothing is written unless every log was read.
pub fn merge_logs<R: BufRead, W: Write>(
    logs: impl IntoIterator<Item = (String, R)>,
    out: W,
    comment: &str,
) -> Result<usize, HlogError> {
    merge_logs_within(logs, out, comment, LIMITS)
}

fn merge_logs_within<R: BufRead, W: Write>(
    logs: impl IntoIterator<Item = (String, R)>,
    out: W,
    comment: &str,
    limits: Limits,
) -> Result<usize, HlogError> {
    let mut names = Vec::new();
    let mut entries = Vec::new();
    let mut bases = Vec::new();
    for (i, (name, reader)) in logs.into_iter().enumerate() {
        bases.push(read_log(&name, i, reader, limits, &mut entries)?);
        names.push(name);
    }
    let t0 = bases.iter().min().copied().unwrap_or_default();
    let length = entries
        .iter()
        .map(|e| e.length)
        .find(|l| !l.is_zero())
        .unwrap_or(Duration::from_secs(1));
    let length_ns = length.as_nanos();
    // Every time is bounded by MAX_TIME_S, so these fit a u128 with room to spare.
    let mut slotted: Vec<(u128, Entry)> = entries
        .into_iter()
        .map(|e| {
            let offset = e.at.saturating_sub(t0).as_nanos();
            ((offset + length_ns / 2) / length_ns, e)
        })
        .collect();
    slotted.sort_by_key(|(slot, e)| (*slot, e.log, e.line));

    let mut writer =
        HlogWriter::new(out, std::time::UNIX_EPOCH + t0, comment).map_err(HlogError::Write)?;
    let mut written = 0;
    let mut rest = slotted.as_slice();
    while let Some((slot, _)) = rest.first() {
        let n = rest.iter().take_while(|(s, _)| s == slot).count();
        let (group, after) = rest.split_at(n);
        rest = after;
        let start_ns = slot * length_ns;
        let start = Duration::new(
            (start_ns / 1_000_000_000) as u64,
            (start_ns % 1_000_000_000) as u32,
        );
        let (mut latency, mut service) = (
            tsload_core::recorder::new_histogram(),
            tsload_core::recorder::new_histogram(),
        );
        for (_, e) in group {
            let file = || names[e.log].clone();
            let h = decode_checked(&e.payload).map_err(|source| HlogError::Histogram {
                file: file(),
                line: e.line,
                source,
            })?;
            let into = if e.service {
                &mut service
            } else {
                &mut latency
            };
            add_checked(into, &h).map_err(|()| HlogError::Overflow {
                file: file(),
                line: e.line,
                start_s: start.as_secs_f64(),
            })?;
        }
        writer
            .write_interval(start, length, &latency, &service)
            .map_err(HlogError::Write)?;
        written += 1;
    }
    writer.flush().map_err(HlogError::Write)?;
    Ok(written)
}

/// Reads one log's lines into `entries`; returns its base time.
fn read_log<R: BufRead>(
    name: &str,
    log: usize,
    reader: R,
    limits: Limits,
    entries: &mut Vec<Entry>,
) -> Result<Duration, HlogError> {
    read_intervals_within(name, reader, limits, |i| {
        entries.push(Entry {
            at: i.base + i.start,
            length: i.length,
            service: i.tag == Some(SERVICE_TAG),
            log,
            line: i.line,
            payload: i.payload.to_string(),
        });
        Ok(())
    })
}

/// One interval line of a log, read and bounded.
#[derive(Debug, Clone, Copy)]
pub struct LogLine<'a> {
    /// Its line number, from 1.
    pub line: u64,
    /// The log's base time (since the epoch) and the interval's start from it.
    pub base: Duration,
    pub start: Duration,
    pub length: Duration,
    /// `None` for the latency histogram, `Some("service")` for the service time's.
    pub tag: Option<&'a str>,
    /// The histogram, still encoded.
    pub payload: &'a str,
}

/// Reads an interval log line by line, the one reader of tsload's logs (`merge --hlog`
/// and the HTML page): each line at most [`MAX_LINE_BYTES`], the log at most
/// [`MAX_LOG_BYTES`], every time at most [`MAX_TIME_S`]; comments and the legend are
/// skipped, each interval is handed to `each` (whose `Err` refuses the line, naming it),
/// and the log's base time is returned.
pub fn read_intervals<R: BufRead>(
    name: &str,
    reader: R,
    each: impl FnMut(LogLine<'_>) -> Result<(), String>,
) -> Result<Duration, HlogError> {
    read_intervals_within(name, reader, LIMITS, each)
}

fn read_intervals_within<R: BufRead>(
    name: &str,
    mut reader: R,
    limits: Limits,
    mut each: impl FnMut(LogLine<'_>) -> Result<(), String>,
) -> Result<Duration, HlogError> {
    let mut base: Option<Duration> = None;
    let mut buf = Vec::new();
    let mut total = 0u64;
    let mut line = 0u64;
    loop {
        buf.clear();
        line += 1;
        let n = (&mut reader)
            .take(limits.line as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|source| HlogError::Read {
                file: name.to_string(),
                source,
            })?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limits.total {
            return Err(HlogError::TooLarge {
                file: name.to_string(),
                cap: limits.total,
            });
        }
        if buf.last() != Some(&b'\n') {
            if n > limits.line {
                return Err(HlogError::LineTooLong {
                    file: name.to_string(),
                    line,
                    cap: limits.line,
                });
            }
            // The last line, without its newline.
            buf.push(b'\n');
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(interval) = read_line(name, line, &buf, &mut base)? {
            each(interval).map_err(|why| HlogError::Refused {
                file: name.to_string(),
                line,
                why,
            })?;
        }
    }
    base.ok_or_else(|| HlogError::NoTime {
        file: name.to_string(),
    })
}

/// One line: a base or start time (kept in `base`), an interval, or a comment.
fn read_line<'b>(
    name: &str,
    line: u64,
    buf: &'b [u8],
    base: &mut Option<Duration>,
) -> Result<Option<LogLine<'b>>, HlogError> {
    let time = |field: &'static str, t: Duration| {
        if t.as_secs() > MAX_TIME_S {
            return Err(HlogError::Time {
                file: name.to_string(),
                line,
                field,
                value: format!("{}.{:09}", t.as_secs(), t.subsec_nanos()),
            });
        }
        Ok(t)
    };
    match IntervalLogIterator::new(buf).next() {
        // A comment or the legend.
        None => Ok(None),
        Some(Err(_)) => {
            let text = String::from_utf8_lossy(buf);
            let text: String = text.trim_end().chars().take(80).collect();
            Err(HlogError::Syntax {
                file: name.to_string(),
                line,
                text: format!("{text:?}"),
            })
        }
        Some(Ok(LogEntry::BaseTime(t))) => {
            *base = Some(time("BaseTime", t)?);
            Ok(None)
        }
        Some(Ok(LogEntry::StartTime(t))) => {
            let t = time("StartTime", t)?;
            base.get_or_insert(t);
            Ok(None)
        }
        Some(Ok(LogEntry::Interval(h))) => {
            let base = base.ok_or_else(|| HlogError::NoBase {
                file: name.to_string(),
                line,
            })?;
            Ok(Some(LogLine {
                line,
                base,
                start: time("the interval's start", h.start_timestamp())?,
                length: time("the interval's length", h.duration())?,
                tag: h.tag().map(|t| t.as_str()),
                payload: h.encoded_histogram(),
            }))
        }
    }
}

#[cfg(test)]
mod tests;
