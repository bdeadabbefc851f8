//! File replay against TSBS's own files: the schema the file shows, exactly the file's
//! rows (each line once) for any number of workers, escapes that come back exact, and bad
//! lines that stop with the file, the line and what is wrong.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use tsload_core::schema::{DataType, TagValue};
use tsload_core::{Batch, BatchSource, ColumnValues, Workload};
use tsload_workload::{FileReplay, ReplayInput, ReplayOptions};

const CPU: &str = "cpu-only-seed123-scale10-1h.influx.gz";
const DEVOPS: &str = "devops-seed123-scale2-1h.influx.gz";
const IOT: &str = "iot-seed123-scale4-1h.influx.gz";

fn sample(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/tsbs")
        .join(file)
}

fn sample_text(file: &str) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(sample(file)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn open(path: &Path) -> FileReplay {
    FileReplay::open(
        ReplayInput::Path(path.to_path_buf()),
        ReplayOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn open_err(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let e = FileReplay::open(ReplayInput::Path(path), ReplayOptions::default())
        .expect_err("a bad file");
    assert_eq!(e.key, "file");
    e.message
}

fn escape(s: &str, specials: &[char]) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if specials.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Row `r` of table `ti` written back as a line, the way TSBS writes it: tags in the
/// table's order (missing ones left out), integers with `i`, floats with `{}`, strings
/// quoted.
fn encode(w: &dyn Workload, batch: &Batch, ti: usize, r: usize) -> String {
    let schema = w.schema();
    let table = &schema.tables[ti];
    let t = &batch.tables[ti];
    let tags = schema.device_tags(t.device[r]);
    let mut line = escape(&table.name, &[',', ' ', '\\']);
    for tag in &table.tags {
        match &tags[tag.slot] {
            TagValue::Null => {}
            v => {
                let special = [',', '=', ' ', '\\'];
                line.push_str(&format!(
                    ",{}={}",
                    escape(&tag.name, &special),
                    escape(&v.to_string(), &special)
                ));
            }
        }
    }
    let mut sep = ' ';
    for (f, c) in table.fields.iter().zip(&t.columns) {
        if !c.is_valid(r) {
            continue;
        }
        let value = match &c.values {
            ColumnValues::Int(v) => format!("{}i", v[r]),
            ColumnValues::Float(v) => format!("{}", v[r]),
            ColumnValues::Bool(v) => format!("{}", v[r]),
            ColumnValues::Str(v) => format!("\"{}\"", escape(v.get(r), &['"', '\\'])),
        };
        line.push(sep);
        line.push_str(&escape(&f.name, &[',', '=', ' ', '\\']));
        line.push('=');
        line.push_str(&value);
        sep = ',';
    }
    line.push_str(&format!(" {}", t.ts[r]));
    line
}

/// Appends what one `fill` gave, checking the batch's shape.
fn take(
    w: &dyn Workload,
    src: &mut dyn BatchSource,
    batch_rows: usize,
    out: &mut Vec<String>,
) -> usize {
    let mut batch = Batch::for_schema(w.schema());
    let n = src.fill(&mut batch, batch_rows);
    assert_eq!(n, batch.rows(), "fill returns what it appended");
    assert!(n <= batch_rows, "{n} > {batch_rows}");
    for (ti, t) in batch.tables.iter().enumerate() {
        assert_eq!(t.device.len(), t.rows());
        for c in &t.columns {
            assert_eq!(c.values.len(), t.rows(), "one value per row");
            assert!(c.valid.is_empty() || c.valid.len() == t.rows());
        }
        for r in 0..t.rows() {
            out.push(encode(w, &batch, ti, r));
        }
    }
    n
}

/// Every row as a line, sorted, read by `workers` sources created together and drained
/// round robin, each with its own batch size.
fn replay(w: &dyn Workload, workers: usize) -> Vec<String> {
    let mut sources: Vec<_> = (0..workers).map(|i| w.source(i, workers)).collect();
    let mut live = vec![true; workers];
    let mut out = Vec::new();
    let mut round = 0usize;
    while live.iter().any(|l| *l) {
        for (i, src) in sources.iter_mut().enumerate() {
            if live[i] {
                let batch_rows = [1000, 7, 333, 1][(i + round) % 4];
                live[i] = take(w, src.as_mut(), batch_rows, &mut out) > 0;
            }
        }
        round += 1;
    }
    out.sort();
    out
}

fn file_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn names<T>(items: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| name(i).to_string()).collect()
}

#[test]
fn cpu_only_sample_replays_exactly() {
    let w = open(&sample(CPU));
    assert_eq!(w.total_rows(), Some(3600));
    let s = w.schema();
    assert_eq!(s.tables.len(), 1);
    assert_eq!(s.device_count, 10);
    let cpu = &s.tables[0];
    assert_eq!(cpu.name, "cpu");
    assert_eq!(
        names(&cpu.tags, |t| &t.name),
        [
            "hostname",
            "region",
            "datacenter",
            "rack",
            "os",
            "arch",
            "team",
            "service",
            "service_version",
            "service_environment"
        ]
    );
    assert_eq!(
        names(&cpu.fields, |f| &f.name),
        [
            "usage_user",
            "usage_system",
            "usage_idle",
            "usage_nice",
            "usage_iowait",
            "usage_irq",
            "usage_softirq",
            "usage_steal",
            "usage_guest",
            "usage_guest_nice"
        ]
    );
    assert!(cpu.fields.iter().all(|f| f.data_type == DataType::BigInt));
    assert!(
        cpu.tags
            .iter()
            .all(|t| matches!(t.data_type, DataType::Varchar(n) if n >= 1))
    );
    assert_eq!(s.tag_slots, 10);
    assert_eq!(
        s.device_tags(0)[0],
        TagValue::Str("host_0".into()),
        "devices in order of first appearance"
    );

    let want = file_lines(&sample_text(CPU));
    let one = replay(&w, 1);
    assert_eq!(one, want, "1 worker: exactly the file's lines");
    assert_eq!(replay(&w, 3), want, "3 workers: exactly the file's lines");
    assert!(w.error().is_none());
}

#[test]
fn devops_sample_replays_exactly() {
    let w = open(&sample(DEVOPS));
    assert_eq!(w.total_rows(), Some(6480));
    let s = w.schema();
    assert_eq!(
        names(&s.tables, |t| &t.name),
        [
            "cpu",
            "diskio",
            "disk",
            "kernel",
            "mem",
            "net",
            "nginx",
            "postgresl",
            "redis"
        ]
    );
    let disk = s.table("disk").unwrap();
    let tags = names(&disk.tags, |t| &t.name);
    assert_eq!(tags.len(), 12);
    assert_eq!(&tags[10..], ["path", "fstype"]);
    assert_eq!(disk.fields.len(), 7);
    assert_eq!(disk.fields[0].name, "total");
    assert_eq!(s.table("cpu").unwrap().tags.len(), 10);
    assert_eq!(s.table("net").unwrap().tags[10].name, "interface");
    // 10 host tags, serial, path, fstype, interface, port, server.
    assert_eq!(s.tag_slots, 16);
    // 2 hosts x (cpu, diskio, disk, kernel, mem, net, nginx, postgresl, redis).
    assert_eq!(s.device_count, 18);

    let want = file_lines(&sample_text(DEVOPS));
    assert_eq!(replay(&w, 1), want);
    assert_eq!(replay(&w, 3), want);
}

#[test]
fn iot_sample_replays_with_missing_fields_and_tags() {
    let w = open(&sample(IOT));
    assert_eq!(w.total_rows(), Some(2607));
    let s = w.schema();
    assert_eq!(names(&s.tables, |t| &t.name), ["readings", "diagnostics"]);
    let readings = &s.tables[0];
    assert_eq!(
        names(&readings.fields, |f| &f.name),
        [
            "load_capacity",
            "fuel_capacity",
            "nominal_fuel_consumption",
            "latitude",
            "longitude",
            "elevation",
            "velocity",
            "heading",
            "grade",
            "fuel_consumption"
        ]
    );
    assert!(
        readings
            .fields
            .iter()
            .all(|f| f.data_type == DataType::Double)
    );
    let diagnostics = &s.tables[1];
    assert_eq!(
        names(&diagnostics.fields, |f| &f.name),
        [
            "load_capacity",
            "fuel_capacity",
            "nominal_fuel_consumption",
            "fuel_state",
            "current_load",
            "status"
        ],
        "current_load, missing on the first line, goes where TSBS writes it"
    );
    assert_eq!(diagnostics.fields[5].data_type, DataType::BigInt);
    assert_eq!(
        names(&readings.tags, |t| &t.name),
        ["name", "fleet", "driver", "model", "device_version"]
    );
    // Trucks whose tag TSBS left out (nil) are series of their own, with a null there.
    let nulls = (0..s.device_count)
        .filter(|&d| s.device_tags(d).contains(&TagValue::Null))
        .count();
    assert!(nulls > 0);

    let text = sample_text(IOT);
    let want = file_lines(&text);
    // Every value comes back as written, with the missing ones null (left out of the
    // line); Rust's `{}` writes floats as TSBS (Go's 'f', -1) does.
    assert_eq!(replay(&w, 1), want);
    assert_eq!(replay(&w, 3), want);
    // The sample has late rows: the replay keeps the file's order, so they stay late.
    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(s);
    let mut late = 0;
    let mut newest = i64::MIN;
    while src.fill(&mut batch, 100_000) > 0 {
        for &ts in &batch.tables[0].ts {
            late += usize::from(ts < newest);
            newest = newest.max(ts);
        }
        batch.clear();
    }
    assert!(late > 0);
}

#[test]
fn gzip_and_plain_give_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("devops.influx");
    std::fs::write(&plain, sample_text(DEVOPS)).unwrap();
    let gz = open(&sample(DEVOPS));
    let pl = open(&plain);
    assert_eq!(replay(&pl, 2), replay(&gz, 2));
    assert_eq!(pl.schema().tables, gz.schema().tables);
    // Gzip found by its magic bytes, whatever the name.
    let renamed = dir.path().join("devops.data");
    std::fs::copy(sample(DEVOPS), &renamed).unwrap();
    assert_eq!(replay(&open(&renamed), 1), replay(&gz, 1));
}

#[test]
fn sources_of_a_new_pass_start_over() {
    let w = open(&sample(CPU));
    let mut out = Vec::new();
    let mut a = w.source(0, 1);
    take(&w, a.as_mut(), 100, &mut out);
    // Worker 0 again: a new pass from the first line; the old pass goes on by itself.
    let mut b = w.source(0, 2);
    let mut c = w.source(1, 2);
    let mut fresh = Vec::new();
    while take(&w, b.as_mut(), 500, &mut fresh) + take(&w, c.as_mut(), 64, &mut fresh) > 0 {}
    assert_eq!(fresh.len(), 3600);
    while take(&w, a.as_mut(), 1000, &mut out) > 0 {}
    assert_eq!(out.len(), 3600);
}

#[test]
fn escapes_come_back_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("escapes.influx");
    let text = concat!(
        "my\\ meas\\,ure,tag\\ key\\=x=val\\,ue\\ 1\\=2,path=C:\\dir\\\\ ",
        "str\\ f\\,x\\=y=\"he said \\\"hi\\\", then \\\\ left, a\\b, k=v\",n=-3i,ok=T 1000\n",
        "my\\ meas\\,ure,tag\\ key\\=x=other ok=false,n=9223372036854775807i 2000\n",
    );
    std::fs::write(&path, text).unwrap();
    let w = open(&path);
    let s = w.schema();
    let t = &s.tables[0];
    assert_eq!(t.name, "my meas,ure");
    assert_eq!(names(&t.tags, |t| &t.name), ["tag key=x", "path"]);
    assert_eq!(names(&t.fields, |f| &f.name), ["str f,x=y", "n", "ok"]);
    let text_value = "he said \"hi\", then \\ left, a\\b, k=v";
    assert_eq!(
        t.fields[0].data_type,
        DataType::Varchar(text_value.len() as u32)
    );
    assert_eq!(
        s.device_tags(0),
        [
            TagValue::Str("val,ue 1=2".into()),
            TagValue::Str("C:\\dir\\".into())
        ]
    );
    assert_eq!(
        s.device_tags(1),
        [TagValue::Str("other".into()), TagValue::Null]
    );

    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(s);
    assert_eq!(src.fill(&mut batch, 10), 2);
    let b = &batch.tables[0];
    let ColumnValues::Str(strs) = &b.columns[0].values else {
        panic!("a string column")
    };
    assert_eq!(strs.get(0), text_value);
    assert!(!b.columns[0].is_valid(1));
    assert_eq!(b.columns[1].values, ColumnValues::Int(vec![-3, i64::MAX]));
    assert_eq!(b.columns[2].values, ColumnValues::Bool(vec![true, false]));
    assert_eq!(b.ts, [1000, 2000]);
    assert_eq!(b.device, [0, 1]);
}

#[test]
fn precision_scales_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.influx");
    std::fs::write(&path, "m v=1 1451606400\n").unwrap();
    let opts = ReplayOptions {
        precision_ns: 1_000_000_000,
        ..ReplayOptions::default()
    };
    let w = FileReplay::open(ReplayInput::Path(path.clone()), opts).unwrap();
    let mut batch = Batch::for_schema(w.schema());
    w.source(0, 1).fill(&mut batch, 10);
    assert_eq!(batch.tables[0].ts, [1_451_606_400_000_000_000]);

    std::fs::write(&path, "m v=1 1451606400000\n").unwrap();
    let e = FileReplay::open(ReplayInput::Path(path), opts).unwrap_err();
    assert!(
        e.message
            .contains(":1: timestamp 1451606400000 times 1000000000 ns"),
        "{}",
        e.message
    );
}

#[test]
fn bad_lines_name_the_file_the_line_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let m = open_err(
        d,
        "types.influx",
        "cpu,host=a usage=1i 1\n# comment\n\ncpu,host=b usage=2.5 2\n",
    );
    assert!(m.contains("types.influx:4: "), "{m}");
    assert!(
        m.contains("field `usage` of measurement `cpu` is a float here but an integer on line 1"),
        "{m}"
    );

    let m = open_err(
        d,
        "nots.influx",
        "cpu,host=a usage=1i 1\ncpu,host=a usage=2i\n",
    );
    assert!(m.contains("nots.influx:2: no timestamp"), "{m}");

    let m = open_err(d, "empty-value.influx", "cpu,host=a usage=\n");
    assert!(
        m.contains("empty-value.influx:1: field `usage` has no value"),
        "{m}"
    );

    let m = open_err(d, "quote.influx", "m s=\"ok\" 1\nm s=\"no end 2\n");
    assert!(
        m.contains("quote.influx:2: the string value of field `s` has no closing `\"`"),
        "{m}"
    );

    let m = open_err(d, "uint.influx", "m n=18446744073709551615u 1\n");
    assert!(m.contains("uint.influx:1: field `n`: unsigned integer `18446744073709551615u` is larger than the largest bigint"), "{m}");

    let m = open_err(d, "nofields.influx", "cpu,host=a\n");
    assert!(m.contains("nofields.influx:1: no fields"), "{m}");

    let m = open_err(d, "tag.influx", "cpu,host usage=1i 1\n");
    assert!(
        m.contains("tag.influx:1: tag `host` has no `=value`"),
        "{m}"
    );

    let m = open_err(d, "dup.influx", "cpu a=1i,a=2i 1\n");
    assert!(m.contains("dup.influx:1: field `a` appears twice"), "{m}");

    let m = open_err(d, "duptag.influx", "cpu,h=1,h=2 a=1i 1\n");
    assert!(m.contains("duptag.influx:1: tag `h` appears twice"), "{m}");

    let m = open_err(d, "value.influx", "cpu a=1i 1\ncpu a=12abc 2\n");
    assert!(
        m.contains("value.influx:2: field `a`: `12abc` is not a value"),
        "{m}"
    );

    let m = open_err(d, "blank.influx", "\n\n# nothing\n");
    assert!(m.contains("blank.influx has no data lines"), "{m}");

    let e = FileReplay::open(
        ReplayInput::Path(d.join("missing.influx")),
        ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("cannot open") && e.message.contains("missing.influx"));

    let path = d.join("broken.influx.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(sample_text(CPU).as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = FileReplay::open(ReplayInput::Path(path), ReplayOptions::default()).unwrap_err();
    assert!(
        e.message
            .contains("broken.influx.gz: cannot read after line"),
        "{}",
        e.message
    );
}

#[test]
fn unsigned_fields_stay_unsigned_and_do_not_mix_with_signed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.influx");
    std::fs::write(&path, "m,t=a c=5u 1\nm,t=a c=7u 2\n").unwrap();
    let w = open(&path);
    assert_eq!(w.schema().tables[0].fields[0].data_type, DataType::UBigInt);
    let e = open_err(dir.path(), "mixed.influx", "m c=5u 1\nm c=6i 2\n");
    assert!(
        e.contains("mixed.influx:2") && e.contains("unsigned integer"),
        "{e}"
    );
}

#[test]
fn a_gzip_that_inflates_to_one_huge_line_stops_at_the_cap_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.influx.gz");
    // Two good lines, then 64 MiB of 'a' without a line end: about 64 KiB on disk,
    // written in steps so that the test never holds the line either.
    let mut gz = flate2::write::GzEncoder::new(
        std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        flate2::Compression::fast(),
    );
    gz.write_all(b"m v=1i 1\nm v=2i 2\n").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&chunk).unwrap();
    }
    gz.write_all(b" v=3i 3\n").unwrap();
    gz.finish().unwrap().flush().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 4 << 20);

    let started = std::time::Instant::now();
    let e = FileReplay::open(ReplayInput::Path(path), ReplayOptions::default()).unwrap_err();
    assert_eq!(e.key, "file");
    assert!(
        e.message.contains(
            "huge.influx.gz:3: the line is longer than 1 MiB (1048576 bytes), the longest line \
             a replay accepts"
        ),
        "{}",
        e.message
    );
    assert_eq!(tsload_workload::MAX_LINE_BYTES, 1 << 20);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[cfg(target_os = "linux")]
#[test]
fn dev_zero_is_refused_at_the_cap_of_its_first_line() {
    let e = FileReplay::open(
        ReplayInput::Path("/dev/zero".into()),
        ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("/dev/zero:1: the line is longer than 1 MiB (1048576 bytes)"),
        "{}",
        e.message
    );
}
