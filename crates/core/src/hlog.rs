//! HdrHistogram interval log (`.hlog`) writer: V2 + DEFLATE compressed histograms, one line
//! per interval, in the format HdrHistogram's Java `HistogramLogProcessor` reads. The
//! corrected latency is written untagged (the processor's default), service time with
//! `Tag=service`. Values are nanoseconds.

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

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

/// Merges interval logs written by [`HlogWriter`] (one per shard) into one: intervals are
/// aligned on the wall clock (each log's base time plus the interval's offset, rounded to
/// the first log's interval length, from the earliest base time), and the histograms of
/// one slot and tag are added. Returns how many merged intervals were written.
pub fn merge_logs<W: Write>(
    logs: &[(String, Vec<u8>)],
    out: W,
    comment: &str,
) -> Result<usize, String> {
    use std::collections::BTreeMap;

    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    struct Entry {
        at: Duration,
        length: Duration,
        service: bool,
        histogram: Histogram<u64>,
    }
    let mut entries = Vec::new();
    let mut bases = Vec::new();
    for (name, bytes) in logs {
        let mut base = None;
        for item in IntervalLogIterator::new(bytes) {
            let item = item.map_err(|e| format!("{name}: not an interval log: {e:?}"))?;
            match item {
                LogEntry::BaseTime(t) => base = Some(t),
                LogEntry::StartTime(t) => {
                    base.get_or_insert(t);
                }
                LogEntry::Interval(h) => {
                    let base = base.ok_or_else(|| {
                        format!("{name}: an interval before any StartTime or BaseTime")
                    })?;
                    let histogram = crate::report::decode_histogram(h.encoded_histogram())
                        .map_err(|e| format!("{name}: an interval's histogram: {e}"))?;
                    entries.push(Entry {
                        at: base + h.start_timestamp(),
                        length: h.duration(),
                        service: h.tag().is_some_and(|t| t.as_str() == SERVICE_TAG),
                        histogram,
                    });
                }
            }
        }
        bases.push(base.ok_or_else(|| format!("{name}: no StartTime or BaseTime"))?);
    }
    let t0 = bases.iter().min().copied().unwrap_or_default();
    let length = entries
        .iter()
        .map(|e| e.length)
        .find(|l| !l.is_zero())
        .unwrap_or(Duration::from_secs(1));
    let mut slots: BTreeMap<u64, (Histogram<u64>, Histogram<u64>)> = BTreeMap::new();
    for e in entries {
        let offset = e.at.saturating_sub(t0).as_secs_f64() / length.as_secs_f64();
        let slot = slots.entry(offset.round() as u64).or_insert_with(|| {
            (
                crate::recorder::new_histogram(),
                crate::recorder::new_histogram(),
            )
        });
        let into = if e.service { &mut slot.1 } else { &mut slot.0 };
        into.add(&e.histogram)
            .map_err(|err| format!("adding an interval's histogram: {err:?}"))?;
    }
    let mut writer =
        HlogWriter::new(out, std::time::UNIX_EPOCH + t0, comment).map_err(|e| e.to_string())?;
    for (slot, (latency, service)) in &slots {
        let start = length.saturating_mul(u32::try_from(*slot).unwrap_or(u32::MAX));
        writer
            .write_interval(start, length, latency, service)
            .map_err(|e| e.to_string())?;
    }
    writer.flush().map_err(|e| e.to_string())?;
    Ok(slots.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn written_log_reads_back_with_the_same_counts() {
        let mut a = crate::recorder::new_histogram();
        let mut b = crate::recorder::new_histogram();
        for v in [1_000u64, 20_000, 3_000_000] {
            a.record(v).unwrap();
        }
        b.record(500).unwrap();
        let mut w = HlogWriter::new(Vec::new(), SystemTime::now(), "test").unwrap();
        w.write_interval(Duration::ZERO, Duration::from_secs(1), &a, &b)
            .unwrap();
        w.write_interval(Duration::from_secs(1), Duration::from_secs(1), &a, &b)
            .unwrap();
        let bytes = w.into_inner();
        let mut de = Deserializer::new();
        let (mut untagged, mut tagged) = (0u64, 0u64);
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(h) = entry.unwrap() {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .unwrap();
                let hist: Histogram<u64> = de.deserialize(&mut &raw[..]).unwrap();
                match h.tag() {
                    None => untagged += hist.len(),
                    Some(t) => {
                        assert_eq!(t.as_str(), SERVICE_TAG);
                        tagged += hist.len()
                    }
                }
            }
        }
        assert_eq!(untagged, 6);
        assert_eq!(tagged, 2);
    }

    #[test]
    fn merged_logs_align_on_the_wall_clock_and_add_up() {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let log = |start: SystemTime, values: &[&[u64]]| {
            let mut w = HlogWriter::new(Vec::new(), start, "shard").unwrap();
            for (i, vs) in values.iter().enumerate() {
                let mut h = crate::recorder::new_histogram();
                for v in *vs {
                    h.record(*v).unwrap();
                }
                let s = Duration::from_secs(i as u64);
                w.write_interval(s, Duration::from_secs(1), &h, &h).unwrap();
            }
            w.into_inner()
        };
        let a = log(t, &[&[1000, 2000], &[3000]]);
        // Started 1.01 s later: its first interval is the other's second.
        let b = log(t + Duration::from_millis(1010), &[&[5000], &[6000, 7000]]);
        let mut out = Vec::new();
        let n = merge_logs(&[("a".into(), a), ("b".into(), b)], &mut out, "merged").unwrap();
        assert_eq!(n, 3);
        let mut counts = Vec::new();
        let mut untagged = 0;
        for e in IntervalLogIterator::new(&out) {
            if let LogEntry::Interval(h) = e.unwrap()
                && h.tag().is_none()
            {
                untagged += 1;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .unwrap();
                let hist: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut raw.as_slice())
                    .unwrap();
                counts.push((h.start_timestamp().as_secs(), hist.len()));
            }
        }
        assert_eq!(untagged, 3);
        assert_eq!(counts, vec![(0, 2), (1, 2), (2, 2)]);
        let e = merge_logs(
            &[("junk".into(), b"not a log\n1,2".to_vec())],
            Vec::new(),
            "",
        )
        .unwrap_err();
        assert!(e.starts_with("junk:"), "{e}");
    }
}
