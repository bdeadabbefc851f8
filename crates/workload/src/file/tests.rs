//! Tests of file replay: both passes, spooled and gzip input, the line cap, and files changed after open.

use super::series::SeriesIndex;
use super::*;
use std::io::Cursor;
use tsload_core::schema::{DataType, TagValue};
use tsload_core::{Batch, ColumnValues};

const TEXT: &str = "# a comment\n\
    cpu,host=a usage=1i,idle=2.5 10\n\
    \n\
    cpu,host=b usage=3i 20\r\n\
    mem,host=a used=4i,ok=true,note=\"x y\" 30\n";

fn drain(w: &FileReplay, batch_rows: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(w.schema());
    loop {
        batch.clear();
        let n = src.fill(&mut batch, batch_rows);
        assert_eq!(n, batch.rows());
        if n == 0 {
            return out;
        }
        for (ti, t) in batch.tables.iter().enumerate() {
            for r in 0..t.rows() {
                let mut s = format!("{}|{}|{}", ti, t.device[r], t.ts[r]);
                for c in &t.columns {
                    if !c.is_valid(r) {
                        s.push_str("|-");
                        continue;
                    }
                    match &c.values {
                        ColumnValues::Bool(v) => s.push_str(&format!("|{}", v[r])),
                        ColumnValues::Int(v) => s.push_str(&format!("|{}", v[r])),
                        ColumnValues::Float(v) => s.push_str(&format!("|{}", v[r])),
                        ColumnValues::Str(v) => s.push_str(&format!("|{}", v.get(r))),
                    }
                }
                out.push(s);
            }
        }
    }
}

/// The text source's batches: the text sent, each row as `table|device|ts`, and the
/// metrics counted.
fn drain_text(w: &FileReplay, batch_rows: usize) -> (String, Vec<String>, u64) {
    let (mut text, mut rows, mut metrics) = (String::new(), Vec::new(), 0);
    let mut src = w.text_source(0, 1, 1).expect("a file in ns has text in ns");
    let mut batch = Batch::for_schema(w.schema());
    loop {
        batch.clear();
        let n = src.fill(&mut batch, batch_rows);
        assert_eq!(n, batch.rows());
        if n == 0 {
            return (text, rows, metrics);
        }
        let t = batch.text.as_ref().expect("a text source's batch has text");
        assert_eq!(
            t.bytes.iter().filter(|b| **b == b'\n').count(),
            n,
            "one line per row"
        );
        text.push_str(std::str::from_utf8(&t.bytes).unwrap());
        metrics += batch.metrics();
        for (ti, t) in batch.tables.iter().enumerate() {
            assert!(t.columns.iter().all(|c| c.values.is_empty()), "no values");
            for r in 0..t.rows() {
                rows.push(format!("{ti}|{}|{}", t.device[r], t.ts[r]));
            }
        }
    }
}

/// The column source's rows as `table|device|ts` and its metrics.
fn rows_and_metrics(w: &FileReplay) -> (Vec<String>, u64) {
    let rows = drain(w, 1000)
        .iter()
        .map(|r| r.splitn(4, '|').take(3).collect::<Vec<_>>().join("|"))
        .collect();
    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(w.schema());
    let mut metrics = 0;
    while src.fill(&mut batch, 1000) > 0 {
        metrics += batch.metrics();
        batch.clear();
    }
    (rows, metrics)
}

#[test]
fn the_text_source_sends_the_file_s_own_lines_with_the_rows_and_metrics_of_the_columns() {
    // A comment, a blank line and a `\r\n`: each line is copied without them.
    let w = open_spooled("test".into(), Cursor::new(TEXT), ReplayOptions::default()).unwrap();
    for batch_rows in [1, 2, 100] {
        let (text, rows, metrics) = drain_text(&w, batch_rows);
        assert_eq!(
            text,
            "cpu,host=a usage=1i,idle=2.5 10\ncpu,host=b usage=3i 20\n\
             mem,host=a used=4i,ok=true,note=\"x y\" 30\n"
        );
        assert_eq!((rows, metrics), rows_and_metrics(&w));
    }
    assert!(w.error().is_none());
    // Timestamps in another unit than the sink's: no text, the columns are encoded.
    assert!(w.text_source(0, 1, 1_000).is_none());

    // Plain lines: the chunk's buffer is the text; a last line without `\n` gets one.
    // A string may hold commas, spaces, `=` and escaped quotes.
    let plain = "m,t=a x=1i,s=\"a, b=c \\\" d\" 10\nm,t=b x=2i 20\nm,t=a x=3i,y=0.5 30";
    let w = open_spooled("p".into(), Cursor::new(plain), ReplayOptions::default()).unwrap();
    let (text, rows, metrics) = drain_text(&w, 2);
    assert_eq!(text, format!("{plain}\n"));
    assert_eq!(rows, ["0|0|10", "0|1|20", "0|0|30"]);
    assert_eq!(metrics, 5);
    assert_eq!((rows, metrics), rows_and_metrics(&w));
}

#[test]
fn each_line_gets_its_own_series_whether_the_order_repeats_or_not() {
    // Series in a repeating order (found by one comparison with the follower of the line
    // before), out of order, one key a prefix of another, a key with an escaped space
    // and one ending in an escaped backslash.
    let series = ["m,h=a", "m,h=ab", r"m,h=a\ b", r"m,h=c\\\\"];
    let order = [0, 1, 2, 3, 0, 1, 2, 3, 0, 2, 1, 3, 3, 0, 1, 0, 1, 2, 3];
    let mut text = String::new();
    for (i, &s) in order.iter().enumerate() {
        text.push_str(&format!("{} x={i}i {i}\n", series[s]));
    }
    let w = open_spooled(
        "s".into(),
        Cursor::new(text.clone()),
        ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(w.schema().device_count, 4);
    let want: Vec<String> = order
        .iter()
        .enumerate()
        .map(|(i, s)| format!("0|{s}|{i}|{i}"))
        .collect();
    for batch_rows in [1, 3, 100] {
        assert_eq!(drain(&w, batch_rows), want, "{batch_rows} rows a batch");
        let (sent, rows, _) = drain_text(&w, batch_rows);
        assert_eq!(sent, text);
        let want_rows: Vec<String> = want
            .iter()
            .map(|r| r.rsplit_once('|').unwrap().0.to_string())
            .collect();
        assert_eq!(rows, want_rows);
    }
    let mut tags = Vec::new();
    w.schema().tags.device_tags(2, &mut tags);
    assert_eq!(tags, [TagValue::Str("a b".into())]);
    w.schema().tags.device_tags(3, &mut tags);
    assert_eq!(tags, [TagValue::Str(r"c\\".into())]);
}

#[test]
fn a_file_changed_after_open_ends_a_text_replay_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.influx");
    std::fs::write(&path, "m,t=a a=1i 1\nm,t=a a=2i 2\nm,t=a a=3i 3\n").unwrap();
    let w = FileReplay::open(ReplayInput::Path(path.clone()), ReplayOptions::default()).unwrap();
    std::fs::write(&path, "m,t=a a=1i 1\nm,t=b a=2i 2\nm,t=a a=3i 3\n").unwrap();
    let mut src = w.text_source(0, 1, 1).unwrap();
    let mut batch = Batch::for_schema(w.schema());
    assert_eq!(src.fill(&mut batch, 5), 0);
    assert!(batch.is_empty());
    let e = w.error().unwrap();
    assert!(
        e.message
            .contains("x.influx:2: series `m,t=b` was not in the file when it was first read"),
        "{}",
        e.message
    );
    // A line whose structure broke.
    std::fs::write(&path, "m,t=a a=1i 1\nm,t=a a=\"2 2\n").unwrap();
    let mut src = w.text_source(0, 1, 1).unwrap();
    batch.clear();
    assert_eq!(src.fill(&mut batch, 5), 0);
    assert!(w.error().is_some());
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

#[test]
fn spooled_input_replays_like_a_file() {
    let w = open_spooled("test".into(), Cursor::new(TEXT), ReplayOptions::default()).unwrap();
    assert_eq!(w.total_rows(), Some(3));
    let want = ["0|0|10|1|2.5", "0|1|20|3|-", "1|2|30|4|true|x y"];
    assert_eq!(drain(&w, 2), want);
    // A second pass reads the spooled copy again.
    assert_eq!(drain(&w, 100), want);
    assert!(w.error().is_none());

    let gz = open_spooled(
        "test.gz".into(),
        Cursor::new(gzip(TEXT.as_bytes())),
        ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(drain(&gz, 1), want);
    let s = gz.schema();
    assert_eq!(s.tables[1].fields[2].data_type, DataType::Varchar(3));
    assert_eq!(s.device_count, 3);
    assert_eq!(s.device_tags(2), [TagValue::Str("a".into())]);
}

#[test]
fn spooled_errors_name_the_input_and_line() {
    let e = open_spooled(
        "standard input".into(),
        Cursor::new("cpu a=1i 1\ncpu a=1.5 2\n"),
        ReplayOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.key, "file");
    assert!(e.message.starts_with("standard input:2: "), "{}", e.message);
    let e = open_spooled(
        "in".into(),
        Cursor::new("\n# only\n"),
        ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("no data lines"), "{}", e.message);
    let e = open_spooled(
        "in".into(),
        Cursor::new("m a=1i 1"),
        ReplayOptions {
            precision_ns: 0,
            ..ReplayOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.key, "precision");
}

#[test]
fn hash_collisions_fall_back_to_the_key() {
    let mut s = SeriesIndex::default();
    let a = s.insert_hashed(b"m,t=a", 7, 0);
    let b = s.insert_hashed(b"m,t=b", 7, 0);
    let c = s.insert_hashed(b"m,t=c", 8, 1);
    assert_eq!((a, b, c), (0, 1, 2));
    assert_eq!(s.find_hashed(b"m,t=a", 7), Some(0));
    assert_eq!(s.find_hashed(b"m,t=b", 7), Some(1));
    assert_eq!(s.find_hashed(b"m,t=c", 8), Some(2));
    assert_eq!(s.find_hashed(b"m,t=d", 7), None);
    assert_eq!(s.find_hashed(b"m,t=d", 9), None);
    assert_eq!(s.key(1), b"m,t=b");
}

#[test]
fn late_keys_go_after_their_neighbour_on_the_line() {
    let text = "d,a=1 x=1,z=1i 1\n\
                d,a=1,c=3 w=0,x=1,y=2,z=1i 2\n\
                d,b=2,c=3 y=2 3\n";
    let w = open_spooled("t".into(), Cursor::new(text), ReplayOptions::default()).unwrap();
    let t = &w.schema().tables[0];
    let names = |v: Vec<&str>| v.join(",");
    assert_eq!(
        names(t.fields.iter().map(|f| f.name.as_str()).collect()),
        "w,x,y,z"
    );
    assert_eq!(
        names(t.tags.iter().map(|f| f.name.as_str()).collect()),
        "b,a,c"
    );
    assert_eq!(
        t.tags.iter().map(|t| t.slot).collect::<Vec<_>>(),
        [2, 0, 1],
        "slots are numbered in order of first appearance"
    );
    assert_eq!(
        drain(&w, 10),
        ["0|0|1|-|1|-|1", "0|1|2|0|1|2|1", "0|2|3|-|-|2|-"]
    );
}

#[test]
fn a_file_changed_after_open_ends_the_run_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.influx");
    std::fs::write(&path, "m a=1i 1\nm a=2i 2\nm a=3i 3\n").unwrap();
    let w = FileReplay::open(ReplayInput::Path(path.clone()), ReplayOptions::default()).unwrap();
    std::fs::write(&path, "m a=1i 1\nm a=2.5 2\nm a=3i 3\n").unwrap();
    let mut a = w.source(0, 2);
    let mut b = w.source(1, 2);
    let mut batch = Batch::for_schema(w.schema());
    assert_eq!(a.fill(&mut batch, 1), 1);
    batch.clear();
    assert_eq!(b.fill(&mut batch, 5), 0);
    assert!(batch.is_empty());
    batch.clear();
    assert_eq!(a.fill(&mut batch, 5), 0);
    let e = w.error().unwrap();
    assert!(
        e.message.contains("x.influx:2: field `a` is a float here"),
        "{}",
        e.message
    );

    std::fs::remove_file(&path).unwrap();
    let w2 = w.source(0, 1);
    drop(w2);
    assert!(
        w.error().unwrap().message.contains(":2:"),
        "the first error is kept"
    );
}

/// Endless zero bytes without a line end (`/dev/zero`, stdin from a binary), counting
/// what was read; it ends after `stop` bytes so that code without a cap ends too.
struct Zeros {
    read: Arc<Mutex<u64>>,
    stop: u64,
}

impl Read for Zeros {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut read = lock(&self.read);
        let n = (buf.len() as u64).min(self.stop - *read) as usize;
        buf[..n].fill(0);
        *read += n as u64;
        Ok(n)
    }
}

#[test]
fn endless_input_without_line_ends_stops_at_the_cap_having_read_little() {
    let read = Arc::new(Mutex::new(0));
    let zeros = Zeros {
        read: read.clone(),
        stop: 64 << 20,
    };
    let e = open_spooled("standard input".into(), zeros, ReplayOptions::default()).unwrap_err();
    assert_eq!(e.key, "file");
    assert!(
        e.message.starts_with(
            "standard input:1: the line is longer than 1 MiB (1048576 bytes), the longest \
             line a replay accepts"
        ),
        "{}",
        e.message
    );
    // The cap, plus at most one read buffer ahead of it.
    let read = *lock(&read);
    assert!(
        read <= (MAX_LINE_BYTES + BUF_BYTES + 1) as u64,
        "{read} bytes read for one line"
    );
}

#[test]
fn a_line_at_the_cap_is_read_and_one_byte_more_is_refused() {
    let opts = ReplayOptions {
        max_line_bytes: 16,
        ..ReplayOptions::default()
    };
    // 16 bytes, then 16 bytes as the last line without a line end.
    let w = open_spooled(
        "t".into(),
        Cursor::new("m v=1i 100000000\nm v=2i 100000001"),
        opts,
    )
    .unwrap();
    assert_eq!(drain(&w, 10), ["0|0|100000000|1", "0|0|100000001|2"]);
    let e = open_spooled(
        "t".into(),
        Cursor::new("m v=1i 100000000\nm v=1i 1000000000\n"),
        opts,
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("t:2: the line is longer than 16 bytes, the longest line"),
        "{}",
        e.message
    );
    let e = open_spooled(
        "t".into(),
        Cursor::new("m v=1i 1\n"),
        ReplayOptions {
            max_line_bytes: 0,
            ..ReplayOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.key, "max_line_bytes");
}

#[test]
fn a_line_grown_past_the_cap_after_open_ends_the_run_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.influx");
    std::fs::write(&path, "m a=1i 1\nm a=2i 2\nm a=3i 3\n").unwrap();
    let opts = ReplayOptions {
        max_line_bytes: 16,
        ..ReplayOptions::default()
    };
    let w = FileReplay::open(ReplayInput::Path(path.clone()), opts).unwrap();
    std::fs::write(&path, "m a=1i 1\nm a=2i 200000000000\nm a=3i 3\n").unwrap();
    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(w.schema());
    assert_eq!(src.fill(&mut batch, 5), 0);
    assert!(batch.is_empty());
    let e = w.error().unwrap();
    assert!(
        e.message.contains(
            "x.influx:2: the line is longer than 16 bytes, the longest line a replay \
             accepts"
        ) && e.message.contains("while replaying"),
        "{}",
        e.message
    );
}

/// A reader that hands out at most `per_read` bytes a read.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    per_read: usize,
}

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.per_read).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Pass 2's shared reader: lines cut by a read, or by a take's end, come out whole, once,
/// in order, with their line numbers, whatever the reads return and however many lines a
/// take asks for.
#[test]
fn pass_two_takes_every_line_whole_across_reads_and_takes() {
    let text = "# c\nm,t=a x=1i 1\n\nm,t=b x=22i 2\r\nm,t=a x=333i,y=0.5 3\n  \n\
                m,t=b x=4i 4\nm,t=c s=\"a b\" 5";
    let want: Vec<(String, u64)> = text
        .split('\n')
        .enumerate()
        .filter_map(|(i, l)| {
            let l = l.trim_end_matches('\r').trim_start();
            (!l.is_empty() && !l.starts_with('#')).then(|| (l.to_string(), i as u64 + 1))
        })
        .collect();
    for per_read in [1, 3, 7, 64] {
        for max_lines in [1, 2, 3, 100] {
            let input = std::io::BufReader::with_capacity(
                4,
                Trickle {
                    data: text.as_bytes().to_vec(),
                    at: 0,
                    per_read,
                },
            );
            let mut reader = replay::ReplayReader {
                input: Some(Box::new(input)),
                line_no: 0,
                max_line: 40,
            };
            let mut chunk = replay::Chunk::default();
            let mut got = Vec::new();
            loop {
                reader.take(&mut chunk, max_lines).unwrap();
                assert!(chunk.lines().count() <= max_lines);
                if chunk.lines().count() == 0 {
                    break;
                }
                got.extend(
                    chunk
                        .lines()
                        .map(|(l, n)| (String::from_utf8_lossy(l).into_owned(), n)),
                );
            }
            assert_eq!(
                got, want,
                "{per_read} bytes a read, {max_lines} lines a take"
            );
        }
    }
    // A line past the cap, cut across reads, is refused with its number.
    let mut reader = replay::ReplayReader {
        input: Some(Box::new(std::io::BufReader::with_capacity(
            4,
            Trickle {
                data: b"m x=1i 1\nm x=1234567890i 2\n".to_vec(),
                at: 0,
                per_read: 3,
            },
        ))),
        line_no: 0,
        max_line: 12,
    };
    let mut chunk = replay::Chunk::default();
    reader.take(&mut chunk, 1).unwrap();
    assert_eq!(chunk.lines().count(), 1);
    assert!(matches!(
        reader.take(&mut chunk, 1),
        Err(replay::TakeError::TooLong(2))
    ));
}
