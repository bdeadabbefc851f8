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
}
