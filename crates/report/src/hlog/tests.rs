//! Tests of the interval log: the writer read back, the merge of shards' logs, and the
//! checked decoder refusing forged, huge and out-of-range input.

use super::*;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

#[test]
fn written_log_reads_back_with_the_same_counts() {
    let mut a = tsload_core::recorder::new_histogram();
    let mut b = tsload_core::recorder::new_histogram();
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
            let mut h = tsload_core::recorder::new_histogram();
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
    let n = merge_logs(
        [
            ("a".to_string(), a.as_slice()),
            ("b".to_string(), b.as_slice()),
        ],
        &mut out,
        "merged",
    )
    .unwrap();
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
        [("junk".to_string(), b"not a log\n1,2".as_slice())],
        Vec::new(),
        "",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("junk:1: not an interval log line"), "{e}");
}

fn shard_log(start: SystemTime, intervals: usize) -> String {
    let mut w = HlogWriter::new(Vec::new(), start, "shard").unwrap();
    let mut h = tsload_core::recorder::new_histogram();
    h.record(1000).unwrap();
    for i in 0..intervals {
        let s = Duration::from_secs(i as u64);
        w.write_interval(s, Duration::from_secs(1), &h, &h).unwrap();
    }
    String::from_utf8(w.into_inner()).unwrap()
}

fn merged(logs: &[(&str, &str)]) -> Result<usize, HlogError> {
    merge_logs(
        logs.iter().map(|(n, t)| (n.to_string(), t.as_bytes())),
        Vec::new(),
        "merged",
    )
}

#[test]
fn times_past_any_calendar_are_refused_not_a_panic() {
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_795_671_411);
    let good = shard_log(t, 2);
    let base = |log: &str, time: &str| {
        log.lines()
            .map(|l| {
                if l.starts_with("#[BaseTime: ") {
                    format!("#[BaseTime: {time} (seconds since epoch)]\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect::<String>()
    };
    // Both logs at u64's last second: the merged log's start was past SystemTime.
    let huge = base(&good, "18446744073709551615.000");
    let e = merged(&[("a.hlog", &huge), ("b.hlog", &huge)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a.hlog:5: BaseTime is 18446744073709551615.000000000 s; allowed: 0 to \
         253402300799 s (up to 9999-12-31T23:59:59Z)"
    );
    // An interval that starts seconds after it: its time overflowed a Duration.
    let later = huge.replace("\n0.000,", "\n5.000,");
    assert!(matches!(
        merged(&[("a.hlog", &good), ("b.hlog", &later)]),
        Err(HlogError::Time {
            line: 5,
            field: "BaseTime",
            ..
        })
    ));
    let start = good.replacen("\n0.000,", "\n253402300800.000,", 1);
    let e = merged(&[("a.hlog", &start)]).unwrap_err().to_string();
    assert!(
        e.starts_with("a.hlog:6: the interval's start is 253402300800.000000000 s"),
        "{e}"
    );
    // The last second allowed merges.
    let last = base(&good, "253402300799.000");
    assert_eq!(merged(&[("a.hlog", &good), ("b.hlog", &last)]).unwrap(), 4);
}

#[test]
fn long_lines_and_large_logs_are_refused() {
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_795_671_411);
    let log = shard_log(t, 3);
    let longest = log.lines().map(str::len).max().unwrap();
    let read = |line: usize, total: u64| {
        merge_logs_within(
            [("a.hlog".to_string(), log.as_bytes())],
            Vec::new(),
            "",
            Limits { line, total },
        )
    };
    assert_eq!(read(longest, log.len() as u64).unwrap(), 3);
    let e = read(longest - 1, log.len() as u64).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "a.hlog:3: a line longer than {} bytes, the most an interval log's line is read",
            longest - 1
        )),
        "{e}"
    );
    let e = read(longest, log.len() as u64 - 1).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "a.hlog: larger than {} bytes, the most an interval log is read",
            log.len() - 1
        )
    );
    // The defaults: a line of zeros without a newline stops at the cap, unread further.
    let zeros = vec![0u8; MAX_LINE_BYTES + 2];
    let e = merge_logs([("z.hlog".to_string(), zeros.as_slice())], Vec::new(), "").unwrap_err();
    assert!(
        matches!(
            e,
            HlogError::LineTooLong {
                line: 1,
                cap: MAX_LINE_BYTES,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn corrupt_histogram_payloads_are_errors() {
    let v2 = |digits: u32, low: u64, high: u64, counts: &[u8], len: Option<u32>| {
        let mut v = Vec::new();
        v.extend(0x1c84_9313u32.to_be_bytes());
        v.extend(len.unwrap_or(counts.len() as u32).to_be_bytes());
        v.extend(0u32.to_be_bytes());
        v.extend(digits.to_be_bytes());
        v.extend(low.to_be_bytes());
        v.extend(high.to_be_bytes());
        v.extend(1.0f64.to_bits().to_be_bytes());
        v.extend(counts);
        base64::engine::general_purpose::STANDARD.encode(v)
    };
    let error = |text: &str| decode_checked(text).unwrap_err().to_string();
    // Zig-zag of i64::MIN: hdrhistogram negates it (a panic in a debug build).
    assert_eq!(
        error(&v2(3, 1, 2048, &[0xff; 9], None)),
        "its counts: a run of 2^63 zero counts"
    );
    // A declared length hdrhistogram would allocate before reading a byte.
    assert_eq!(
        error(&v2(3, 1, 2048, &[], Some(u32::MAX))),
        "it declares 4294967295 bytes of counts; a histogram of its range needs at most \
         27648"
    );
    // 5 digits: a 50 MB histogram from 40 bytes.
    assert!(error(&v2(5, 1, u64::MAX, &[], None)).contains("5 significant digits"));
    assert!(error(&v2(3, 0, 2048, &[], None)).contains("lowest value 0"));
    // A count past the range; counts summing past i64 (the most an encoding holds).
    assert_eq!(
        error(&v2(3, 1, 2048, &[0x81, 0xc0, 0x02, 0x02], None)),
        "its counts: a count past the histogram's highest value"
    );
    // Runs of zeros to 2^64 - 1 counters, then one more counter.
    let run = [0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(
        error(&v2(
            3,
            1,
            2048,
            &[&run[..], &run, &[0x01, 0x00]].concat(),
            None
        )),
        "its counts: runs of zero counts past 2^64"
    );
    let big = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    assert_eq!(
        error(&v2(3, 1, 2048, &[big, big, big].concat(), None)),
        "its counts: they add up past 9223372036854775807, the most a histogram holds"
    );
    assert_eq!(error("HISTFAAAAA=="), "it ends inside its length");
    assert!(error("not base64!").starts_with("not base64: "));
    assert!(error("AAAAAA==").starts_with("cookie 0x00000000: not HdrHistogram's V2"));
    // What tsload writes decodes to what it was.
    let mut h = tsload_core::recorder::new_histogram();
    for v in [1u64, 1000, 3_000_000, u64::MAX] {
        h.record(v).unwrap();
    }
    let text = crate::report::encode_histogram(&h).unwrap();
    let back = decode_checked(&text).unwrap();
    let recorded = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(recorded(&back), recorded(&h));
}

#[test]
fn a_histogram_of_the_whole_range_fits_a_line() {
    // Every counter of tsload's precision over all of u64, with large counts.
    let full = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
    assert_eq!(full.distinct_values(), 56_320);
    let mut h = tsload_core::recorder::new_histogram();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for v in full.iter_all().map(|v| v.value_iterated_to()) {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        h.record_n(v, 1 + (x >> 24)).unwrap();
    }
    let text = crate::report::encode_histogram(&h).unwrap();
    assert!(text.len() < MAX_LINE_BYTES / 4, "{} bytes", text.len());
    assert_eq!(decode_checked(&text).unwrap().len(), h.len());
}
