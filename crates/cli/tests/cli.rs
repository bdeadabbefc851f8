//! End-to-end tests of the `tsload` binary: the quickstart into a real SQLite file, data-set
//! determinism, scenario errors, the interval log, thresholds and Ctrl-C.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

mod common;
use common::{json, text, tsload};

fn run(args: &[&str], dir: &Path) -> Output {
    tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

/// `SELECT count(*)` of every table of a SQLite file, by table name.
fn sqlite_counts(db: &Path) -> std::collections::BTreeMap<String, i64> {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", db.display()))
            .await
            .unwrap();
        let tables: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table'")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        let mut counts = std::collections::BTreeMap::new();
        for (t,) in tables {
            let (n,): (i64,) = sqlx::query_as(&format!("SELECT count(*) FROM \"{t}\""))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            counts.insert(t, n);
        }
        counts
    })
}

#[test]
fn quickstart_row_count_equals_the_rows_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let report = dir.path().join("r.json");
    let out = run(
        &[
            "run",
            "--set",
            &format!("target.url=sqlite:{}", db.display()),
            "--json",
            report.to_str().unwrap(),
            "--progress",
            "plain",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let r = json(&report);
    let reported = r["rows"].as_u64().unwrap();
    assert_eq!(reported, 216_000, "100 hosts x 6 h at 10 s");
    assert_eq!(r["metrics"].as_u64().unwrap(), 2_160_000);

    let mut counts = sqlite_counts(&db);
    // Exactly-once delivery (the default): one ledger row per acknowledged request.
    assert_eq!(
        counts.remove("tsload_ledger"),
        Some(r["requests"].as_i64().unwrap())
    );
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["cpu"]);
    let counted: i64 = counts.values().sum();
    assert_eq!(counted as u64, reported);
    let run_id = r["ledger_run_id"]
        .as_i64()
        .expect("ledger_run_id in the report");
    let ledgered = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", db.display()))
            .await
            .unwrap();
        let (n,): (i64,) =
            sqlx::query_as("SELECT sum(batch_rows) FROM tsload_ledger WHERE run_id = ?")
                .bind(run_id)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        n
    });
    assert_eq!(ledgered as u64, reported);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("216,000"),
        "report table shows the rows: {stdout}"
    );
    assert!(
        text(&out.stderr).contains("rows/s"),
        "plain progress lines on stderr"
    );
}

#[test]
fn generate_is_deterministic_and_seed_dependent() {
    let dir = tempfile::tempdir().unwrap();
    let gen_args = |seed: &str, file: &str| {
        vec![
            "generate".to_string(),
            "--set".into(),
            format!("workload.seed={seed}"),
            "--set".into(),
            "workload.scale=7".into(),
            "--set".into(),
            "workload.end=\"2016-01-01T00:10:00Z\"".into(),
            "-o".into(),
            file.into(),
        ]
    };
    for (seed, file) in [("1", "a.lp"), ("1", "b.lp"), ("2", "c.lp")] {
        let args = gen_args(seed, file);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args, dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let a = std::fs::read(dir.path().join("a.lp")).unwrap();
    let b = std::fs::read(dir.path().join("b.lp")).unwrap();
    let c = std::fs::read(dir.path().join("c.lp")).unwrap();
    assert_eq!(text(&a).lines().count(), 7 * 60, "7 hosts x 60 steps");
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "another seed, other values");
    let first = text(&a).lines().next().unwrap().to_string();
    assert!(
        first.starts_with("cpu,hostname=host_0,region="),
        "TSBS measurement and first tag: {first}"
    );
    assert!(first.ends_with(" 1451606400000000000"), "{first}");
}

#[test]
fn generate_gz_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "generate",
            "--set",
            "workload.scale=2",
            "--set",
            "workload.end=\"2016-01-01T00:01:00Z\"",
            "-o",
            "x.lp.gz",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let gz = std::fs::File::open(dir.path().join("x.lp.gz")).unwrap();
    let mut s = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz), &mut s).unwrap();
    assert_eq!(s.lines().count(), 12);
}

fn scenario_error(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.toml"), body).unwrap();
    let out = run(&["run", "bad.toml"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(2),
        "bad input exits 2; stderr: {}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing ran");
    text(&out.stderr)
}

#[test]
fn scenario_errors_name_file_line_key_value_and_what_is_allowed() {
    let e = scenario_error("[load]\nworkers = 2\nbatchsize = 10\n");
    assert!(
        e.contains("bad.toml:3")
            && e.contains("unknown field `batchsize`")
            && e.contains("`batch`"),
        "{e}"
    );

    let e = scenario_error("[workload]\nscale = \"many\"\n");
    assert!(
        e.contains("bad.toml:2") && e.contains("\"many\"") && e.contains("expected an integer"),
        "{e}"
    );

    let e = scenario_error("[target]\nkind = \"null\"\n[load]\nbatch = -5\n");
    assert!(
        e.contains(
            "bad.toml:4: key `load.batch`: value -5 is out of range; allowed: 1 to 10000000"
        ),
        "{e}"
    );
}

#[test]
fn validate_prints_the_resolved_plan_with_the_data_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["validate", "--set", "load.workers=3"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["load"]["workers"], 3);
    assert_eq!(v["workload"]["kind"], "cpu-only");
    assert_eq!(v["data_set"]["rows"], 216_000);
}

fn hlog_counts(bytes: &[u8]) -> (u64, u64) {
    let mut de = Deserializer::new();
    let (mut latency, mut service) = (0, 0);
    for entry in IntervalLogIterator::new(bytes) {
        if let LogEntry::Interval(h) = entry.expect("valid interval log line") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: Histogram<u64> = de.deserialize(&mut &raw[..]).unwrap();
            match h.tag() {
                None => latency += hist.len(),
                Some(_) => service += hist.len(),
            }
        }
    }
    (latency, service)
}

#[test]
fn interval_log_holds_every_request_of_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "target.url=",
            "--set",
            "load.batch=100",
            "--set",
            "load.rate=20000",
            "--set",
            "workload.scale=10",
            "--set",
            "load.report_interval=\"100ms\"",
            "--hlog",
            "run.hlog",
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    // target.url is not a setting of null: the override must be refused...
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "load.batch=100",
            "--set",
            "load.rate=20000",
            "--set",
            "workload.scale=10",
            "--set",
            "load.report_interval=\"100ms\"",
            "--set",
            "workload.end=\"2016-01-01T01:00:00Z\"",
            "--hlog",
            "run.hlog",
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&dir.path().join("r.json"));
    let requests = r["requests"].as_u64().unwrap();
    assert_eq!(requests, 36, "3,600 rows in batches of 100");
    assert_eq!(r["latency"]["count"].as_u64().unwrap(), requests);
    let bytes = std::fs::read(dir.path().join("run.hlog")).unwrap();
    let (latency, service) = hlog_counts(&bytes);
    assert_eq!(latency, requests);
    assert_eq!(service, requests);
    assert!(text(&bytes).contains("#[StartTime:"));
}

#[test]
fn a_threshold_the_run_cannot_measure_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A closed loop offers no rate; a write run has no statements: both ran to the end and
    // broke as NaN (exit 3).
    for (threshold, why) in [
        ("achieved_ratio>=0.95", "runs closed loop"),
        ("statements_per_s>1", "only has writes"),
    ] {
        let out = run(
            &[
                "run",
                "--set",
                "target.kind=\"null\"",
                "--progress",
                "none",
                "--fail-if",
                threshold,
                "--json",
                "r.json",
            ],
            dir.path(),
        );
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{threshold}: {e}");
        assert!(
            e.contains(&format!("--fail-if: threshold `{threshold}`")) && e.contains(why),
            "{threshold}: {e}"
        );
        assert!(!dir.path().join("r.json").exists(), "{threshold}: it ran");
    }
    // The same in the file, named by its key; with a rate, achieved_ratio is measured.
    std::fs::write(
        dir.path().join("t.toml"),
        "[target]\nkind = \"null\"\n[output]\nfail_if = [\"p99<1s\", \"achieved_ratio>=0.9\"]\n",
    )
    .unwrap();
    let out = run(&["validate", "t.toml"], dir.path());
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("key `output.fail_if[1]`"), "{e}");
    let out = run(
        &["validate", "t.toml", "--set", "load.rate=1000"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn broken_threshold_exits_3_after_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "workload.scale=2",
            "--progress",
            "none",
            "--fail-if",
            "rows_per_s<1",
            "--fail-if",
            "errors==0",
            "--json",
            "r.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("rows"));
    let e = text(&out.stderr);
    assert!(e.contains("FAIL: threshold `rows_per_s<1` broken"), "{e}");
    assert!(
        !e.contains("errors==0"),
        "the kept threshold is not an error: {e}"
    );
    // Said with its value (it printed nothing before).
    assert!(
        text(&out.stdout).contains("PASS: threshold `errors==0` held: errors was 0"),
        "{}",
        text(&out.stdout)
    );
    // The JSON carries each verdict, and where and from what the run came.
    let r = json(&dir.path().join("r.json"));
    let t = r["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2, "{r}");
    assert_eq!(
        (&t[0]["threshold"], &t[0]["passed"]),
        (&"rows_per_s<1".into(), &false.into())
    );
    assert!(
        t[0]["failures"][0].as_str().unwrap().contains("broken"),
        "{r}"
    );
    assert_eq!(
        (&t[1]["threshold"], &t[1]["passed"]),
        (&"errors==0".into(), &true.into())
    );
    assert!(!r["host"].as_str().unwrap().is_empty());
    assert!(r["commit"].as_str().is_some());
    let hash = r["scenario_sha256"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);
    // The same scenario however written, with other outputs: the same hash; another
    // scenario: another.
    let hash_of = |file: &str, body: &str, extra: &[&str]| {
        std::fs::write(dir.path().join(file), body).unwrap();
        let mut args = vec!["run", file, "--progress", "none", "--json", "h.json"];
        args.extend(extra);
        let out = run(&args, dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        json(&dir.path().join("h.json"))["scenario_sha256"].clone()
    };
    let a = hash_of(
        "a.toml",
        "[target]\nkind = \"null\"\n[workload]\nscale = 2\n",
        &[],
    );
    let b = hash_of(
        "b.toml",
        "# the same\n[workload]\nscale = 2\n\n[target]\nkind = 'null'\n",
        &["--fail-if", "errors==0"],
    );
    let c = hash_of(
        "c.toml",
        "[target]\nkind = \"null\"\n[workload]\nscale = 3\n",
        &[],
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn ctrl_c_stops_the_run_and_still_prints_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    // Open loop at 2,000 rows/s over 216,000 rows: would take 108 s.
    let child = tsload()
        .args([
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "load.rate=2000",
            "--set",
            "load.batch=100",
            "--json",
            report.to_str().unwrap(),
            "--progress",
            "none",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped promptly"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "stderr: {}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("stopped: interrupted"), "{stdout}");
    let r = json(&report);
    let rows = r["rows"].as_u64().unwrap();
    assert!(rows > 0 && rows < 216_000, "partial run: {rows} rows");
    assert_eq!(r["stop_reason"], "interrupted");
}

/// Per measurement of line protocol text: tag keys, and field keys with whether the value
/// is an integer (`i` suffix), a string (quoted) or a float.
type Shapes = std::collections::BTreeMap<String, (Vec<String>, Vec<(String, char)>)>;

fn line_shapes(text: &str) -> Shapes {
    let mut shapes = Shapes::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (key, fields) = (parts.next().unwrap(), parts.next().unwrap());
        let mut key = key.split(',');
        let measurement = key.next().unwrap().to_string();
        let entry: &mut (Vec<String>, Vec<(String, char)>) = shapes.entry(measurement).or_default();
        for tag in key {
            let k = tag.split('=').next().unwrap().to_string();
            if !entry.0.contains(&k) {
                entry.0.push(k);
            }
        }
        for field in fields.split(',') {
            let (k, v) = field.split_once('=').unwrap();
            let shape = if v.ends_with('i') {
                'i'
            } else if v.starts_with('"') {
                's'
            } else {
                'f'
            };
            if !entry.1.iter().any(|(name, _)| name == k) {
                entry.1.push((k.to_string(), shape));
            }
        }
    }
    for (tags, fields) in shapes.values_mut() {
        tags.sort();
        fields.sort();
    }
    shapes
}

#[test]
fn generated_line_protocol_has_tsbs_names_and_value_shapes() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, scale, sample) in [
        ("cpu-only", "10", "cpu-only-seed123-scale10-1h.influx.gz"),
        ("devops", "2", "devops-seed123-scale2-1h.influx.gz"),
        ("iot", "4", "iot-seed123-scale4-1h.influx.gz"),
    ] {
        let out = run(
            &[
                "generate",
                "--set",
                &format!("workload.kind=\"{kind}\""),
                "--set",
                &format!("workload.scale={scale}"),
                "--set",
                "workload.end=\"2016-01-01T01:00:00Z\"",
                "-o",
                "g.lp",
            ],
            dir.path(),
        );
        assert!(out.status.success(), "{kind}: {}", text(&out.stderr));
        let ours = std::fs::read_to_string(dir.path().join("g.lp")).unwrap();
        let path = format!(
            "{}/../../testdata/tsbs/{sample}",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut theirs = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
            &mut theirs,
        )
        .unwrap();
        assert_eq!(line_shapes(&ours), line_shapes(&theirs), "{kind}");
        if kind != "iot" {
            assert_eq!(
                ours.lines().count(),
                theirs.lines().count(),
                "{kind}: same row count as TSBS"
            );
        }
    }
}

type CpuRow = (
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
);

#[test]
fn sqlite_holds_the_same_rows_for_1_3_and_8_workers() {
    let dir = tempfile::tempdir().unwrap();
    let mut dumps: Vec<Vec<CpuRow>> = Vec::new();
    for workers in [1, 3, 8] {
        let db = dir.path().join(format!("w{workers}.db"));
        let out = run(
            &[
                "run",
                "--set",
                &format!("target.url=sqlite:{}", db.display()),
                "--set",
                &format!("load.workers={workers}"),
                "--set",
                "load.batch=13",
                "--set",
                "workload.scale=7",
                "--set",
                "workload.end=\"2016-01-01T00:10:00Z\"",
                "--progress",
                "none",
            ],
            dir.path(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let rows = tokio::runtime::Runtime::new().unwrap().block_on(async {
            use sqlx::Connection as _;
            let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", db.display())).await.unwrap();
            sqlx::query_as::<_, CpuRow>(
                "SELECT hostname, ts, usage_user, usage_system, usage_idle, usage_nice, usage_iowait, \
                 usage_irq, usage_softirq, usage_steal, usage_guest, usage_guest_nice FROM cpu ORDER BY hostname, ts",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap()
        });
        assert_eq!(rows.len(), 7 * 60);
        dumps.push(rows);
    }
    assert_eq!(dumps[0], dumps[1], "1 vs 3 workers");
    assert_eq!(dumps[0], dumps[2], "1 vs 8 workers");
}

#[test]
fn custom_column_error_names_its_line() {
    let e = scenario_error(
        "[workload]\nkind = \"custom\"\ncolumns = [\n  { type = \"int\" },\n  { type = \"tinyint\", max = 300 },\n]\n",
    );
    assert!(
        e.contains("bad.toml:5: key `workload.columns[1].max`: 300 is not a tinyint value"),
        "{e}"
    );
}

/// HdrHistogram's own jar, fetched by `cargo xtask test` (Maven Central).
fn hdrhistogram_jar() -> std::path::PathBuf {
    let home = std::env::var("HOME").expect("HOME is set");
    let jar = Path::new(&home)
        .join(".m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar");
    assert!(
        jar.is_file(),
        "{} is missing: run `cargo xtask test`, which fetches it, or \
         `mvn dependency:get -Dartifact=org.hdrhistogram:HdrHistogram:2.2.2`",
        jar.display()
    );
    jar
}

/// `Total count` as HdrHistogram's Java HistogramLogProcessor reports it for `tag`.
fn java_total_count(hlog: &Path, tag: Option<&str>) -> u64 {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(hdrhistogram_jar())
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(hlog);
    if let Some(tag) = tag {
        cmd.args(["-tag", tag]);
    }
    let out = cmd.output().expect(
        "java is needed (Debian package default-jre-headless; `cargo xtask test` installs it)",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let line = stdout
        .lines()
        .find(|l| l.contains("Total count"))
        .unwrap_or_else(|| panic!("no total in: {stdout}"));
    line.rsplit('=')
        .next()
        .unwrap()
        .trim()
        .trim_end_matches(']')
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn java_histogram_log_processor_reads_the_interval_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "load.batch=50",
            "--set",
            "load.rate=40000",
            "--set",
            "workload.scale=10",
            "--set",
            "load.report_interval=\"50ms\"",
            "--set",
            "workload.end=\"2016-01-01T00:30:00Z\"",
            "--hlog",
            "run.hlog",
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = json(&dir.path().join("r.json"))["requests"]
        .as_u64()
        .unwrap();
    assert_eq!(requests, 36, "1,800 rows in batches of 50");
    let hlog = dir.path().join("run.hlog");
    assert_eq!(
        java_total_count(&hlog, None),
        requests,
        "latency histograms"
    );
    assert_eq!(
        java_total_count(&hlog, Some("service")),
        requests,
        "service-time histograms"
    );
}

fn sample(name: &str) -> String {
    format!("{}/../../testdata/tsbs/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_replayed_tsbs_file_lands_whole_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("replay.db");
    let out = run(
        &[
            "run",
            "--set",
            "workload.kind=\"file\"",
            "--set",
            &format!(
                "workload.path=\"{}\"",
                sample("devops-seed123-scale2-1h.influx.gz")
            ),
            "--set",
            &format!("target.url=\"sqlite:{}\"", db.display()),
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["rows"], 6_480);
    let mut counts = sqlite_counts(&db);
    assert!(counts.remove("tsload_ledger").is_some());
    assert_eq!(counts.len(), 9, "devops's 9 tables: {counts:?}");
    let counted: i64 = counts.values().sum();
    assert_eq!(counted, 6_480);
}

#[test]
fn standard_input_replays_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tsload()
        .args([
            "run",
            "--set",
            "workload.kind=\"file\"",
            "--set",
            "workload.path=\"-\"",
            "--set",
            "target.kind=\"null\"",
            "--json",
            "r.json",
            "--progress",
            "none",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let gz = std::fs::read(sample("iot-seed123-scale4-1h.influx.gz")).unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &gz).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&dir.path().join("r.json"))["rows"], 2_607);
}

#[test]
fn a_bad_replay_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.lp"),
        "cpu,host=a usage=1i 1\ncpu,host=a usage=2.5 2\n",
    )
    .unwrap();
    let out = run(
        &[
            "run",
            "--set",
            "workload.kind=\"file\"",
            "--set",
            "workload.path=\"bad.lp\"",
            "--set",
            "target.kind=\"null\"",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(e.contains("bad.lp:2") && e.contains("usage"), "{e}");
    let out = run(&["run", "--set", "workload.kind=\"file\""], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("needs `path`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_shipped_scenario_validates() {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut checked = 0;
    for entry in std::fs::read_dir(&configs).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = run(&["validate", path.to_str().unwrap()], &configs);
            if !cfg!(feature = "tdengine") && path.ends_with("tdengine-r1.toml") {
                assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
                assert!(text(&out.stderr).contains("feature `tdengine`"));
                continue;
            }
            assert!(
                out.status.success(),
                "{}: {}",
                path.display(),
                text(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 9, "only {checked} scenarios found");
}

#[test]
fn sigterm_stops_the_run_exits_143_and_still_prints_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    // Open loop at 2,000 rows/s over 216,000 rows: would take 108 s.
    let child = tsload()
        .args([
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "load.rate=2000",
            "--set",
            "load.batch=100",
            "--json",
            report.to_str().unwrap(),
            "--progress",
            "none",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped promptly"
    );
    assert_eq!(
        out.status.code(),
        Some(143),
        "128 + SIGTERM; stderr: {}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("stopped: interrupted"), "{stdout}");
    assert!(stdout.contains("peak RSS"), "the whole report: {stdout}");
    let r = json(&report);
    let rows = r["rows"].as_u64().unwrap();
    assert!(rows > 0 && rows < 216_000, "partial run: {rows} rows");
    assert_eq!(r["stop_reason"], "interrupted");
}

/// Set in a copy of this test binary that grows to a large RSS and then `exec`s tsload
/// with the JSON list of arguments it holds, as `cargo run` (a big process) does.
const EXEC_AFTER_ALLOC: &str = "TSLOAD_TEST_EXEC_AFTER_ALLOC";

#[test]
fn peak_rss_is_tsloads_own_not_the_process_that_execd_it() {
    if let Ok(args) = std::env::var(EXEC_AFTER_ALLOC) {
        // The copy: 256 MiB resident (every page written), then it becomes tsload.
        let mut big = vec![0u8; 256 << 20];
        for i in (0..big.len()).step_by(4096) {
            big[i] = 1;
        }
        std::hint::black_box(&big);
        let args: Vec<String> = serde_json::from_str(&args).unwrap();
        use std::os::unix::process::CommandExt as _;
        let e = tsload().args(args).exec();
        panic!("exec tsload: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let args = [
        "run",
        "--set",
        "target.kind=\"null\"",
        "--set",
        "workload.scale=2",
        "--progress",
        "none",
        "--json",
        report.to_str().unwrap(),
    ];
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "peak_rss_is_tsloads_own_not_the_process_that_execd_it",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(EXEC_AFTER_ALLOC, serde_json::to_string(&args).unwrap())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("peak RSS"), "tsload ran: {stdout}");
    // getrusage's ru_maxrss keeps the high-water mark across exec: it said 256 MiB and
    // more here (and 218 MiB under `cargo run`); tsload itself needs tens of MiB.
    let rss = json(&report)["client"]["peak_rss_bytes"].as_u64().unwrap();
    assert!(
        rss > 0 && rss < 100 << 20,
        "peak RSS {:.1} MiB",
        rss as f64 / (1 << 20) as f64
    );
}

#[test]
fn delivery_is_checked_per_target_and_shown_in_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let mysql = [
        "--set",
        "target.kind=\"mysql\"",
        "--set",
        "target.url=\"mysql://root@127.0.0.1:3306/x\"",
        "--set",
        "target.transaction=\"autocommit\"",
    ];
    let bad: [(&[&str], &str); 3] = [
        (
            &["--set", "target.delivery=\"twice\""],
            "\"twice\" is not allowed; allowed: exactly_once, at_least_once",
        ),
        (
            &[
                "--set",
                "target.kind=\"influx\"",
                "--set",
                "target.delivery=\"at_least_once\"",
            ],
            "key `target.delivery`: not a setting of target kind \"influx\"",
        ),
        (
            &["--set", "target.delivery=\"exactly_once\""],
            "which transaction = \"autocommit\" does not have; allowed with it: at_least_once",
        ),
    ];
    for (i, (sets, message)) in bad.into_iter().enumerate() {
        let mut args = vec!["validate"];
        if i == 2 {
            args.extend(mysql);
        }
        args.extend(sets);
        let out = run(&args, dir.path());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    // Autocommit defaults to at least once; the quickstart (SQLite) to exactly once.
    let mut args = vec!["validate"];
    args.extend(mysql);
    let out = run(&args, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"delivery\": \"at_least_once\""));
    let out = run(&["validate"], dir.path());
    assert!(text(&out.stdout).contains("\"delivery\": \"exactly_once\""));
    // An engine without transactions: at least once by default, exactly once refused.
    let myisam = [
        "validate",
        "--set",
        "target.kind=\"mysql\"",
        "--set",
        "target.url=\"mysql://root@127.0.0.1:3306/x\"",
        "--set",
        "target.engine=\"MyISAM\"",
    ];
    let out = run(&myisam, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"delivery\": \"at_least_once\""));
    let mut args = myisam.to_vec();
    args.extend(["--set", "target.delivery=\"exactly_once\""]);
    let out = run(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("which engine \"MyISAM\" does not have"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn durations_past_what_nanoseconds_hold_are_refused_not_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, key) in [
        (vec!["workload.interval=\"400y\""], "workload.interval"),
        (
            vec![
                "workload.kind=\"custom\"",
                "workload.timestamp_step=\"300y\"",
            ],
            "workload.timestamp_step",
        ),
        (
            vec![
                "workload.kind=\"custom\"",
                "workload.disorder_ratio=10",
                "workload.disorder_range=\"293y\"",
            ],
            "workload.disorder_range",
        ),
    ] {
        let mut args = vec!["validate"];
        for s in &sets {
            args.extend(["--set", s]);
        }
        let out = run(&args, dir.path());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sets:?}: {stderr}");
        assert!(
            stderr.contains(&format!("key `{key}`")) && stderr.contains("is too long"),
            "{sets:?}: {stderr}"
        );
    }
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["--version"], dir.path());
    assert!(out.status.success());
    let shown = text(&out.stdout);
    assert!(
        shown.starts_with(&format!("tsload {} (", env!("CARGO_PKG_VERSION"))),
        "{shown}"
    );
    // Built from a git checkout (as the tests are): the commit is HEAD's at build time.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    assert!(head.status.success(), "the tests run in a git checkout");
    let head = text(&head.stdout);
    assert!(
        shown.contains(&format!("({})", head.trim())),
        "{shown} vs HEAD {head}"
    );
}

#[test]
fn completions_are_valid_shell_and_the_man_page_names_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["completions", "bash"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let script = dir.path().join("tsload.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "bash -n: {}", text(&check.stderr));
    let script = text(&out.stdout);
    for sub in [
        "run",
        "validate",
        "sweep",
        "proxy",
        "probe",
        "netem",
        "--fail-if",
    ] {
        assert!(script.contains(sub), "completions lack {sub}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell], dir.path());
        assert!(out.status.success() && out.stdout.len() > 1000, "{shell}");
    }
    let out = run(&["completions", "tcsh"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("possible values"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["man"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains(".TH tsload 1"), "{page}");
    // Every subcommand has its own section with its options; no page it names is missing.
    for sub in [
        "RUN",
        "VALIDATE",
        "GENERATE",
        "NETEM APPLY",
        "SWEEP",
        "PROXY",
        "PROBE APP",
        "MERGE",
        "COMPARE",
    ] {
        assert!(
            page.contains(&format!(".SH \"TSLOAD {sub}\"")),
            "man page lacks {sub}"
        );
    }
    for option in ["\\-\\-json", "\\-\\-max\\-connections", "\\-\\-fail\\-if"] {
        assert!(page.contains(option), "man page lacks {option}");
    }
    assert!(
        !page.contains("tsload\\-run(1)"),
        "a page that does not exist"
    );
}

/// `GET /metrics` on `addr`: the body.
fn scrape(addr: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).expect("metrics server answers");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    answer.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn metric_sample(exposition: &str, series: &str) -> Option<f64> {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_addr_serves_rising_counters_and_out_files_hold_every_interval() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tsload()
        .args([
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "load.rate=20000",
            "--set",
            "load.batch=100",
            "--set",
            "load.duration=\"6s\"",
            "--set",
            "load.report_interval=\"200ms\"",
            "--metrics-addr",
            "127.0.0.1:0",
            "--out",
            "csv=i.csv",
            "--out",
            "ndjson=i.ndjson",
            "--json",
            "r.json",
            "--progress",
            "none",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no metrics line");
        if let Some(rest) = line.trim().strip_prefix("metrics: http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    let rows = "tsload_rows_total{stream=\"write\"}";
    let deadline = Instant::now() + Duration::from_secs(3);
    let first = loop {
        let body = scrape(&addr);
        if let Some(n) = metric_sample(&body, rows).filter(|n| *n > 0.0) {
            assert!(
                body.contains("# TYPE tsload_latency_seconds summary"),
                "{body}"
            );
            break n;
        }
        assert!(Instant::now() < deadline, "no rows after 3 s: {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(1000));
    let second = metric_sample(&scrape(&addr), rows).unwrap();
    assert!(second > first, "rows_total {first} then {second}");
    assert!(child.wait().unwrap().success());

    let report = json(&dir.path().join("r.json"));
    let csv = std::fs::read_to_string(dir.path().join("i.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines.len() >= 15, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let last: Vec<&str> = lines[lines.len() - 1].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(last[col("total_rows")], report["rows"].to_string(), "{csv}");
    let sum: u64 = lines[1..]
        .iter()
        .map(|l| {
            l.split(',')
                .nth(col("rows"))
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        sum,
        report["rows"].as_u64().unwrap(),
        "intervals add up to the run"
    );
    let nd = std::fs::read_to_string(dir.path().join("i.ndjson")).unwrap();
    assert_eq!(nd.lines().count(), lines.len() - 1);
}

#[test]
fn a_bad_out_or_metrics_addr_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["run", "--out", "xml=x"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("allowed: csv, ndjson, influx"),
        "{}",
        text(&out.stderr)
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--metrics-addr",
            &addr,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--metrics-addr"),
        "{}",
        text(&out.stderr)
    );
    // A directory that cannot be made (a file is in the way); missing ones are created.
    std::fs::write(dir.path().join("plain-file"), "").unwrap();
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--out",
            "csv=plain-file/dir/x.csv",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("plain-file/dir/x.csv"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "workload.scale=1",
            "--out",
            "csv=made/by/tsload.csv",
            "--json",
            "made/r.json",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.path().join("made/by/tsload.csv").is_file());
    assert!(dir.path().join("made/r.json").is_file());
}

#[test]
fn quick_flags_stand_for_their_sets_and_target_infers_the_kind() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "run",
            "--target",
            "sqlite:q.db",
            "-w",
            "3",
            "-b",
            "50",
            "-n",
            "500",
            "-d",
            "30s",
            "--progress",
            "none",
            "--json",
            "r.json",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["rows"], 500);
    let s = &r["scenario"];
    assert_eq!(
        (&s["target"]["kind"], &s["target"]["url"]),
        (&"sqlite".into(), &"sqlite:q.db".into())
    );
    assert_eq!(
        (&s["load"]["workers"], &s["load"]["batch"]),
        (&3.into(), &50.into())
    );
    assert_eq!(s["load"]["duration"], "30s");
    let total: i64 = sqlite_counts(&dir.path().join("q.db"))
        .iter()
        .filter(|(t, _)| *t != "tsload_ledger")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(total, 500);
    let out = run(
        &["run", "--target", "null", "-n", "10", "--progress", "none"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("-> null"),
        "{}",
        text(&out.stdout)
    );
    let out = run(&["run", "--target", "ftp://x"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("does not name a target kind"));
}

#[test]
fn dropping_tables_on_another_host_needs_yes_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // Refused before anything connects: no traffic leaves this machine.
    for command in ["run", "sweep"] {
        let mut args = vec![
            command,
            "--set",
            "target.kind=postgres",
            "--set",
            "target.url=\"postgres://u@db.example:5432/d\"",
            "--set",
            "target.drop_existing=true",
        ];
        if command == "sweep" {
            args.extend(["--set", "sweep.workers=[1, 2]", "--out", "sw"]);
        }
        let out = tsload()
            .args(&args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {e}");
        assert!(
            e.contains("db.example") && e.contains("--yes"),
            "{command}: {e}"
        );
    }
}

fn taosbenchmark_json(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/taosbenchmark")
        .join(name)
}

#[test]
fn taosbenchmark_files_import_to_scenarios_that_validate_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let import = |name: &str| {
        let out = run(
            &[
                "import-taosbenchmark",
                taosbenchmark_json(name).to_str().unwrap(),
                "-o",
                "s.toml",
            ],
            dir.path(),
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        // The written scenario reads the password from the environment: it is text the
        // user will run, not a report (the redaction once wrote `"***"` there, and a run
        // of it sent `***`).
        let written = std::fs::read_to_string(dir.path().join("s.toml")).unwrap();
        if written.contains("password") {
            assert!(
                written.contains("password = \"$TAOS_PASSWORD\""),
                "{name}: {written}"
            );
            let unset = tsload()
                .args(["validate", "s.toml"])
                .env_remove("TAOS_PASSWORD")
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                !unset.status.success() && text(&unset.stderr).contains("TAOS_PASSWORD is not set"),
                "{name}: {}",
                text(&unset.stderr)
            );
        }
        let plan = tsload()
            .args(["validate", "s.toml"])
            .env("TAOS_PASSWORD", "secret-pw")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(plan.status.success(), "{name}: {}", text(&plan.stderr));
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        assert!(!text(&out.stdout).contains("secret") && !plan.to_string().contains("secret-pw"));
        (plan, text(&out.stderr))
    };

    // R1's file: the same load as configs/tdengine-r1.toml.
    let (p, notes) = import("r1-stmt2.json");
    let (w, t, l) = (&p["workload"], &p["target"], &p["load"]);
    assert_eq!(
        (w["kind"].as_str(), w["childtable_count"].as_u64()),
        (Some("custom"), Some(80_000))
    );
    assert_eq!(
        (w["insert_rows"].as_u64(), w["interlace_rows"].as_u64()),
        (Some(10_000), Some(10))
    );
    assert_eq!(w["timestamp_step"], "10s");
    assert_eq!(
        (l["workers"].as_u64(), l["batch"].as_u64()),
        (Some(16), Some(10))
    );
    assert_eq!(
        (
            t["kind"].as_str(),
            t["mode"].as_str(),
            t["vgroups"].as_u64()
        ),
        (Some("tdengine"), Some("stmt"), Some(8))
    );
    assert_eq!(t["database"], "test");
    assert!(
        notes.contains("stmt2") && notes.contains("dbinfo.replica"),
        "{notes}"
    );
    assert!(notes.contains("export TAOS_PASSWORD"), "{notes}");

    // taosBenchmark's own example shape: named columns, value lists, a ms step.
    let (p, notes) = import("insert.json");
    let w = &p["workload"];
    assert_eq!(w["timestamp_step"], "10ms");
    assert_eq!(w["start_timestamp"], "2020-10-01T00:00:00.000000000Z");
    assert_eq!(w["columns"].as_array().unwrap().len(), 3);
    assert!(notes.contains("names are not carried"), "{notes}");
    assert_eq!(p["target"]["mode"], "sql");

    // Schemaless, tables made on insert, microseconds, "now".
    let (p, notes) = import("sml-auto-us.json");
    let t = &p["target"];
    assert_eq!(
        (t["mode"].as_str(), t["child_tables"].as_str()),
        (Some("schemaless"), Some("auto"))
    );
    assert_eq!(
        (t["precision"].as_str(), t["cachemodel"].as_str()),
        (Some("us"), Some("both"))
    );
    assert_eq!(p["workload"]["timestamp_step"], "1s");
    assert_eq!(p["workload"]["disorder_range"], "2s");
    assert!(
        notes.contains("\"now\"")
            && notes.contains("childtable_limit")
            && notes.contains("load.rate"),
        "{notes}"
    );

    // The imported workload runs (into the null target, made small).
    import("insert.json");
    let out = run(
        &[
            "run",
            "s.toml",
            "--set",
            "target.kind=null",
            "--set",
            "workload.childtable_count=10",
            "--set",
            "workload.insert_rows=10",
            "--progress",
            "none",
            "--json",
            "r.json",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&dir.path().join("r.json"))["rows"], 100);

    // What cannot be imported is named, exit 2.
    std::fs::write(dir.path().join("q.json"), r#"{"filetype": "query"}"#).unwrap();
    let out = run(&["import-taosbenchmark", "q.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("q.json: filetype \"query\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn keys_prints_the_key_reference_and_refuses_an_unknown_section() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["keys"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = include_str!("../../../docs/keys.md");
    assert_eq!(text(&out.stdout), doc, "`tsload keys` is docs/keys.md");
    let out = run(&["keys", "load"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let load = text(&out.stdout);
    assert!(load.starts_with("## [load]\n"), "{load}");
    assert!(load.contains("| `workers` | integer | `1` |"), "{load}");
    assert!(!load.contains("`url`"), "another section's key: {load}");
    let out = run(&["keys", "bogus"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("no section `bogus`") && err.contains("workload, target, load"),
        "{err}"
    );
}
