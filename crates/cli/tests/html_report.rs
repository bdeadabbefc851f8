//! The HTML report in a real browser: pages made by real runs into a real VictoriaMetrics
//! (`--out html=`, one run with a storm of 503s in front, `[monitor]` on) and by
//! `tsload report` over two saved reports, opened from disk in Debian's headless Chromium
//! driven over WebDriver (chromedriver on a free 127.0.0.1 port, through fantoccini).
//! Each page loads with no console error and no network request, its figures equal the
//! JSON report's, each chart over time holds one point per interval, hovering shows an
//! interval's figures, nothing overflows a 390 px wide window, and screenshots are written
//! under `target/tmp/html-report/` for a person to look at.
//!
//! Beyond one run: `tsload report --hlog` (each report's interval log: the percentile
//! table equals the log's histograms added, and a merged report's intervals come from its
//! log), the shard set (`merge --html` and `report` over the shards: each shard's line and
//! the merged one, whose points hold exactly the shards' intervals and add up their counts
//! and histograms, hover included) and a real `tsload sweep` through the delay proxy (each
//! figure against each swept key and the measured RTT, one dot per point, equal to
//! sweep.json's rows, the fit's figures); every expected figure is computed here from the
//! files the runs wrote. A bad --hlog is refused with the file named and exit code 2.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use fantoccini::actions::{InputSource as _, MouseActions, PointerAction};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::{Value, json};
use tsload_testbed::ServerKind;
use tsload_testbed::http_front::{HttpFront, Storm};

mod common;
use common::{start, text};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Where the screenshots go: `target/tmp/html-report/`.
fn shots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// chromedriver on a free port of 127.0.0.1, killed on drop.
struct Driver {
    child: Child,
    url: String,
    /// Chromium's profile and the driver's log.
    dir: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start() -> Driver {
        for (path, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
            assert!(
                Path::new(path).exists(),
                "{path} is missing: install Debian's `{package}` package (`cargo xtask test` \
                 installs it); the HTML report's browser test cannot run without it"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("chromedriver.log")).unwrap();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{CHROMEDRIVER} did not start: {e}"));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver does not listen on {addr} after 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver {
            child,
            url: format!("http://{addr}/"),
            dir,
        }
    }

    /// Runs `check` in a Chromium session of this driver, on a runtime of its own.
    fn check(&self, check: impl AsyncFnOnce(Client)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async { check(self.session().await).await });
    }

    async fn session(&self) -> Client {
        let profile = self.dir.path().join("profile");
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", profile.display()),
                    "--window-size=1100,900", "--hide-scrollbars",
                ],
            },
            "goog:loggingPrefs": { "browser": "ALL" },
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no Chromium session through chromedriver: {e}\n{}",
                    std::fs::read_to_string(self.dir.path().join("chromedriver.log"))
                        .unwrap_or_default()
                )
            })
    }
}

/// chromedriver's own command for the browser's console log (`se/log`): the entries since
/// the last call.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

fn tsload(args: &[String], dir: &Path) -> Output {
    common::tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

/// A 4-second open-loop cpu-only run into `url` at 0.5 s intervals; `extra` sets and
/// flags after.
fn run_into(url: &str, json_name: &str, extra: &[String], dir: &Path) -> Value {
    let mut args: Vec<String> = [
        "run",
        "--set",
        "target.kind=\"influx\"",
        "--set",
        "workload.scale=10",
        "--set",
        "workload.end=\"2016-01-02T00:00:00Z\"",
        "--set",
        "load.report_interval=\"500ms\"",
        "--set",
        "load.workers=2",
        "--set",
        "load.batch=100",
        "--set",
        "load.retry_backoff=\"10ms\"",
        "--set",
        "target.create_database=false",
        "-r",
        "6000",
        "-d",
        "4s",
        "--progress",
        "none",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend([
        "--set".into(),
        format!("target.url=\"{url}\""),
        "--json".into(),
        json_name.into(),
    ]);
    args.extend(extra.iter().cloned());
    let out = tsload(&args, dir);
    assert!(
        out.status.success(),
        "tsload {args:?}: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    common::json(&dir.join(json_name))
}

/// The intervals of `stream` in a report.
fn intervals<'a>(report: &'a Value, stream: &str) -> Vec<&'a Value> {
    if report.get("merged_from").is_some() {
        return Vec::new();
    }
    report["intervals"]
        .as_array()
        .expect("the report has `intervals`")
        .iter()
        .filter(|i| i["stream"] == stream)
        .collect()
}

/// A `data-value` as the number it states.
fn number(values: &Value, id: &str) -> f64 {
    let text = values[id]
        .as_str()
        .unwrap_or_else(|| panic!("the page has no #{id} with data-value: {values}"));
    text.parse()
        .unwrap_or_else(|e| panic!("#{id} data-value {text:?}: {e}"))
}

/// The points of a stream's throughput line: one per interval but those too short for a
/// rate (under 50 ms) and a last interval shorter than half the median of the others (it
/// ended with the run).
fn drawn_rates(iv: &[&Value]) -> usize {
    let length = |i: &Value| i["interval_s"].as_f64().unwrap();
    let Some((last, rest)) = iv.split_last() else {
        return 0;
    };
    let mut others: Vec<f64> = rest.iter().map(|i| length(i)).collect();
    others.sort_by(f64::total_cmp);
    let partial = !others.is_empty() && length(last) < 0.5 * others[others.len() / 2];
    iv.iter()
        .enumerate()
        .filter(|(n, i)| length(i) >= 0.05 && !(partial && *n + 1 == iv.len()))
        .count()
}

/// Opens `page` and checks it against `reports` (report k is the page's `r{k}`); with
/// `hover`, hovers an interval of the first report's throughput chart; writes the
/// screenshots `{name}.png` and `{name}-390px.png`.
async fn check_page(client: &Client, page: &Path, reports: &[&Value], name: &str, hover: bool) {
    client.set_window_size(1100, 900).await.unwrap();
    client
        .goto(&format!("file://{}", page.display()))
        .await
        .unwrap();
    // Nothing was asked of any network.
    let resources = client
        .execute(
            "return performance.getEntriesByType('resource').map(function (e) { return e.name; });",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(resources, json!([]), "{name}: the page made requests");
    // The whole page in the window, for the screenshot.
    let height = client
        .execute("return document.documentElement.scrollHeight;", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    client
        .set_window_size(1100, height.clamp(600, 6000) as u32)
        .await
        .unwrap();

    // The figures are the reports' own.
    let values = client
        .execute(
            "var o = {}; document.querySelectorAll('[id][data-value]').forEach(function (e) \
             { o[e.id] = e.getAttribute('data-value'); }); return o;",
            vec![],
        )
        .await
        .unwrap();
    for (k, r) in reports.iter().enumerate() {
        let id = |f: &str| format!("r{k}-write-{f}");
        for f in ["rows", "metrics", "retries"] {
            assert_eq!(
                number(&values, &id(f)),
                r[f].as_f64().unwrap(),
                "{name}: {f}"
            );
        }
        assert_eq!(
            number(&values, &id("metrics_per_s")),
            r["metrics_per_s"].as_f64().unwrap()
        );
        for f in ["p50_ms", "p99_ms", "p99_9_ms", "max_ms"] {
            assert_eq!(
                number(&values, &id(f)),
                r["latency"][f].as_f64().unwrap(),
                "{name}: latency {f}"
            );
        }
        let errors: u64 = r["errors"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(number(&values, &id("errors")), errors as f64);
        assert_eq!(values[id("stop_reason")], r["stop_reason"]);
        // A merged report has no exit status of its own.
        if r["exit"].is_object() {
            assert_eq!(
                number(&values, &format!("r{k}-exit")),
                r["exit"]["code"].as_f64().unwrap()
            );
        }
        assert_eq!(
            number(&values, &id("cpu_s")),
            r["client"]["cpu_s"].as_f64().unwrap()
        );
        assert_eq!(
            number(&values, &id("peak_rss_bytes")),
            r["client"]["peak_rss_bytes"].as_f64().unwrap()
        );
        if let Some(server) = r.get("server") {
            assert_eq!(
                number(&values, &format!("r{k}-server-cpu_s")),
                server["cpu_s"].as_f64().unwrap(),
                "{name}: server cpu"
            );
        }

        // One point per interval in every line of every chart over time, and errors
        // marked in the intervals that had them (a merged report has no intervals).
        if r.get("merged_from").is_some() {
            continue;
        }
        let iv = intervals(r, "write");
        // About 8 (4 s at 0.5 s); fewer when a loaded machine stretches them.
        assert!(
            iv.len() >= 3,
            "{name}: only {} intervals: {:?}",
            iv.len(),
            r["intervals"]
        );
        let charts = client
            .execute(
                "var k = arguments[0]; return ['throughput', 'latency'].map(function (c) { \
                 var f = document.getElementById(k + '-' + c); return { \
                 points: f.getAttribute('data-points'), \
                 lines: Array.prototype.map.call(f.querySelectorAll('polyline'), function (p) \
                 { return p.getAttribute('points').trim().split(/\\s+/).length; }), \
                 errors: f.querySelector('.mark.err').getAttribute('data-count') }; });",
                vec![json!(format!("r{k}-write"))],
            )
            .await
            .unwrap();
        let with_errors = iv.iter().filter(|i| i["errors"].as_u64() > Some(0)).count();
        // The throughput line has no point for an interval too short for a rate (under
        // 50 ms), nor for a last interval shorter than half the median of the others (it
        // ended with the run); the latency lines have one per interval.
        let rates = drawn_rates(&iv);
        for (c, drawn) in charts.as_array().unwrap().iter().zip([rates, iv.len()]) {
            assert_eq!(c["points"], json!(iv.len().to_string()), "{name}: {c}");
            let lines = c["lines"].as_array().unwrap();
            assert!(!lines.is_empty());
            for n in lines {
                assert_eq!(n, &json!(drawn), "{name}: {c}");
            }
            assert_eq!(c["errors"], json!(with_errors.to_string()), "{name}: {c}");
        }
    }

    // Several reports: each one's line in the side-by-side chart, one point per interval.
    if reports.len() > 1 {
        let lines = client
            .execute(
                "return Array.prototype.map.call(document.querySelectorAll(\
                 '#cmp-write-throughput polyline'), function (p) \
                 { return p.getAttribute('points').trim().split(/\\s+/).length; });",
                vec![],
            )
            .await
            .unwrap();
        // In any drawing order.
        let mut drawn: Vec<u64> = lines
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        drawn.sort_unstable();
        let mut expected: Vec<u64> = reports
            .iter()
            .map(|r| drawn_rates(&intervals(r, "write")) as u64)
            .filter(|n| *n > 0)
            .collect();
        expected.sort_unstable();
        assert_eq!(drawn, expected, "{name}: side by side");
    }
    if hover {
        hover_shows_an_interval(client, reports[0], name).await;
    }
    let shots = shots_dir();
    let wide = shots.join(format!("{name}.png"));
    let png = client.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}");
    std::fs::write(&wide, png).unwrap();
    eprintln!("screenshot: {}", wide.display());

    // Readable at a phone's width: nothing wider than the window.
    client.set_window_size(390, 844).await.unwrap();
    let widths = client
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap();
    let (scroll, inner) = (widths[0].as_u64().unwrap(), widths[1].as_u64().unwrap());
    assert!(inner <= 420, "{name}: the window is {inner} px wide");
    if scroll > inner {
        // Name what sticks out, for the message.
        let wide = client
            .execute(
                "var w = window.innerWidth, o = []; document.querySelectorAll('body *')\
                 .forEach(function (e) { var r = e.getBoundingClientRect(); if (r.right > w + 1 \
                 && !e.closest('.scroll') && o.length < 8) { o.push(e.tagName + '#' + e.id + '.' + e.className + ': ' + \
                 Math.round(r.right) + ' px: ' + (e.textContent || '').slice(0, 60)); } }); \
                 return o;",
                vec![],
            )
            .await
            .unwrap();
        panic!("{name}: {scroll} px of page in {inner} px: {wide}");
    }
    let narrow = shots.join(format!("{name}-390px.png"));
    std::fs::write(&narrow, client.screenshot().await.unwrap()).unwrap();

    // No console error (a refused request would be one too).
    let log = client.issue_cmd(BrowserLog).await.unwrap();
    let errors: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "{name}: console errors: {errors:?}");
}

/// Moves the pointer over chart `chart` at `at` (0 to 1) of its width and reads its
/// tooltip: whether it is hidden, the interval it shows, and its fields' values.
async fn hover(client: &Client, chart: &str, at: f64) -> Value {
    let plot = client
        .find(Locator::Css(&format!("#{chart} .plot")))
        .await
        .unwrap();
    let (_, _, width, _) = plot.rectangle().await.unwrap();
    let moves = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: plot,
        duration: None,
        x: ((at - 0.5) * width).round(),
        y: 0.0,
    });
    client.perform_actions(moves).await.unwrap();
    client
        .execute(
            "var t = document.querySelector('#' + arguments[0] + ' .tip'); var o = {}; \
             t.querySelectorAll('[data-field]').forEach(function (e) \
             { o[e.getAttribute('data-field')] = e.getAttribute('data-value'); }); \
             return { hidden: t.hidden, interval: t.getAttribute('data-interval'), fields: o };",
            vec![json!(chart)],
        )
        .await
        .unwrap()
}

/// Moves the pointer over interval i of the throughput chart and reads the tooltip.
async fn hover_shows_an_interval(client: &Client, report: &Value, name: &str) {
    let iv = intervals(report, "write");
    let i = iv.len() / 2;
    let t_max = iv
        .iter()
        .map(|i| i["elapsed_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let at = iv[i]["elapsed_s"].as_f64().unwrap() / t_max;
    let tip = hover(client, "r0-write-throughput", at).await;
    assert_eq!(
        tip["hidden"], false,
        "{name}: no tooltip after hovering: {tip}"
    );
    assert_eq!(tip["interval"], json!(i.to_string()), "{name}: {tip}");
    for f in [
        "rows", "metrics", "errors", "retries", "p50_ms", "p99_ms", "p999_ms", "max_ms",
    ] {
        assert_eq!(
            number(&tip["fields"], f),
            iv[i][f].as_f64().unwrap(),
            "{name}: interval {i}'s {f}: {tip}"
        );
    }
}

/// An interval log as the test reads it, with hdrhistogram's own reader: each interval's
/// untagged (latency) and `Tag=service` histograms.
#[derive(Clone)]
struct Log {
    latency: Vec<Histogram<u64>>,
    service: Vec<Histogram<u64>>,
}

fn read_log(path: &Path) -> Log {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut log = Log {
        latency: Vec::new(),
        service: Vec::new(),
    };
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(h) = entry.unwrap() {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: Histogram<u64> = Deserializer::new()
                .deserialize(&mut raw.as_slice())
                .unwrap();
            match h.tag() {
                None => log.latency.push(hist),
                Some(_) => log.service.push(hist),
            }
        }
    }
    assert!(!log.latency.is_empty(), "{}: no interval", path.display());
    log
}

fn added<'a>(hists: impl IntoIterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut all = Histogram::<u64>::new(3).unwrap();
    for h in hists {
        all.add(h).unwrap();
    }
    all
}

/// Nanoseconds as the page states milliseconds (to the microsecond).
fn ms(ns: u64) -> f64 {
    (ns / 1000) as f64 / 1000.0
}

/// The page's own data (each chart's figures per point).
async fn page_data(client: &Client) -> Value {
    client
        .execute(
            "return JSON.parse(document.getElementById('tsload-data').textContent);",
            vec![],
        )
        .await
        .unwrap()
}

async fn data_values(client: &Client) -> Value {
    client
        .execute(
            "var o = {}; document.querySelectorAll('[id][data-value]').forEach(function (e) \
             { o[e.id] = e.getAttribute('data-value'); }); return o;",
            vec![],
        )
        .await
        .unwrap()
}

/// On the open page: report k's percentile table equals its log's histograms added (to
/// p99.999), and a report without intervals of its own shows the log's, one point each.
async fn check_logs(client: &Client, logs: &[Option<Log>], name: &str) {
    let values = data_values(client).await;
    let data = page_data(client).await;
    for (k, log) in logs.iter().enumerate() {
        let Some(log) = log else { continue };
        for (hist, which) in [
            (added(&log.latency), "latency"),
            (added(&log.service), "service"),
        ] {
            let id = |f: &str| format!("r{k}-write-pct-{which}-{f}");
            assert_eq!(number(&values, &id("count")), hist.len() as f64, "{name}");
            for (q, f) in [
                (0.5, "p50"),
                (0.9, "p90"),
                (0.99, "p99"),
                (0.999, "p99_9"),
                (0.9999, "p99_99"),
                (0.99999, "p99_999"),
            ] {
                assert_eq!(
                    number(&values, &id(f)),
                    ms(hist.value_at_quantile(q)),
                    "{name}: r{k} {which} {f}"
                );
            }
            assert_eq!(number(&values, &id("max")), ms(hist.max()), "{name}");
        }
        // A merged report: its intervals are the log's.
        if values.get(format!("r{k}-write-intervals-from")).is_some() {
            let d = &data[format!("r{k}-write")];
            assert_eq!(
                d["p99_ms"].as_array().unwrap().len(),
                log.latency.len(),
                "{name}: r{k}: one point per log interval"
            );
            let points = client
                .execute(
                    "return document.getElementById(arguments[0]).getAttribute('data-points');",
                    vec![json!(format!("r{k}-write-latency"))],
                )
                .await
                .unwrap();
            assert_eq!(points, json!(log.latency.len().to_string()), "{name}");
            for (i, h) in log.latency.iter().enumerate() {
                // As numbers: the browser hands a whole number of ms back as an integer.
                assert_eq!(
                    d["p99_ms"][i].as_f64(),
                    Some(ms(h.value_at_quantile(0.99))),
                    "{name}: interval {i}"
                );
                assert_eq!(d["requests"][i], json!(h.len()), "{name}");
            }
        }
    }
}

/// On the open page: the shard set's charts. `shards` are (the page's report index, the
/// shard's report); `logs` their interval logs. Each shard's line holds its intervals; the
/// merged line's points hold every shard interval exactly once, their counts added, and
/// their logs' histograms added; hovering the merged line shows one merged interval.
async fn check_shards(client: &Client, shards: &[(usize, &Value)], logs: &[Log], name: &str) {
    let data = page_data(client).await;
    let d = &data["merge-write"];
    let n = d["elapsed_s"].as_array().unwrap().len();
    let charts = client
        .execute(
            "return ['throughput', 'p50', 'p99'].map(function (c) { \
             var f = document.getElementById('merge-write-' + c); var o = {}; \
             f.querySelectorAll('polyline').forEach(function (p) { \
             o[p.getAttribute('data-series')] = p.getAttribute('points').trim().split(/\\s+/).length; }); \
             return { points: f.getAttribute('data-points'), lines: o }; });",
            vec![],
        )
        .await
        .unwrap();
    for c in charts.as_array().unwrap() {
        assert_eq!(c["points"], json!(n.to_string()), "{name}: {c}");
        assert_eq!(c["lines"]["merged"], json!(n), "{name}: {c}");
        for (k, (_, r)) in shards.iter().enumerate() {
            assert_eq!(
                c["lines"][format!("s{k}.json")],
                json!(intervals(r, "write").len()),
                "{name}: {c}"
            );
        }
    }
    // Every shard interval in exactly one merged point, whose counts are theirs added.
    let index_of = |page_k: u64| {
        shards
            .iter()
            .position(|(k, _)| *k as u64 == page_k)
            .unwrap()
    };
    let mut seen = Vec::new();
    for slot in 0..n {
        let from: Vec<(usize, usize)> = d["from"][slot]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    index_of(p[0].as_u64().unwrap()),
                    p[1].as_u64().unwrap() as usize,
                )
            })
            .collect();
        for f in ["metrics", "rows", "requests", "errors", "retries"] {
            let sum: u64 = from
                .iter()
                .map(|(s, i)| intervals(shards[*s].1, "write")[*i][f].as_u64().unwrap())
                .sum();
            assert_eq!(d[f][slot], json!(sum), "{name}: merged point {slot}'s {f}");
        }
        let log_from: Vec<(usize, usize)> = d["log_from"][slot]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    index_of(p[0].as_u64().unwrap()),
                    p[1].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let h = added(log_from.iter().map(|(s, i)| &logs[*s].latency[*i]));
        if !h.is_empty() {
            assert_eq!(
                d["p99_ms"][slot].as_f64(),
                Some(ms(h.value_at_quantile(0.99))),
                "{name}: merged point {slot}'s p99"
            );
        }
        seen.extend(from);
    }
    seen.sort_unstable();
    let mut all: Vec<(usize, usize)> = (0..shards.len())
        .flat_map(|s| (0..intervals(shards[s].1, "write").len()).map(move |i| (s, i)))
        .collect();
    all.sort_unstable();
    assert_eq!(
        seen, all,
        "{name}: the merged points hold each shard interval once"
    );
    let total: u64 = shards
        .iter()
        .flat_map(|(_, r)| intervals(r, "write"))
        .map(|i| i["metrics"].as_u64().unwrap())
        .sum();
    let merged_total: u64 = d["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(merged_total, total, "{name}");

    // Hover: the merged line's point i.
    let i = n / 2;
    let t_max = d["elapsed_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .fold(0.0, f64::max);
    let at = d["elapsed_s"][i].as_f64().unwrap() / t_max;
    let tip = hover(client, "merge-write-throughput", at).await;
    assert_eq!(tip["hidden"], false, "{name}: no tooltip: {tip}");
    assert_eq!(tip["interval"], json!(i.to_string()), "{name}: {tip}");
    for f in ["rows", "metrics", "errors", "p99_ms"] {
        assert_eq!(
            number(&tip["fields"], f),
            d[f][i].as_f64().unwrap(),
            "{name}: merged interval {i}'s {f}: {tip}"
        );
    }
    client
        .execute("window.scrollTo(0, 0);", vec![])
        .await
        .unwrap();
}

/// A sweep value's place on its axis, as sweep.json states it: a number, or a duration
/// such as `5ms`; on an axis with a value that is neither (`now-1h`), its place in the
/// axis's `values`.
fn axis_value(v: &Value, values: &[Value]) -> f64 {
    let number = |v: &Value| match v {
        Value::String(s) => s.strip_suffix("ms")?.parse().ok(),
        other => other.as_f64(),
    };
    if values.iter().all(|v| number(v).is_some()) {
        number(v).unwrap()
    } else {
        values.iter().position(|x| x == v).unwrap() as f64
    }
}

/// On the open sweep page: each figure against each swept key (and the measured RTT), one
/// dot per point, each equal to sweep.json's row; the fit's figures.
async fn check_sweep(client: &Client, sweep: &Value, name: &str) {
    let rows = sweep["rows"].as_array().unwrap();
    // A point that is no measure (failed, short, ...) is drawn nowhere.
    let measured = rows
        .iter()
        .filter(|r| r["verdict"]["flaw"].is_null())
        .count();
    // Its points are runs of their own, not shards of one.
    let merge = client
        .execute("return document.getElementById('merge') === null;", vec![])
        .await
        .unwrap();
    assert_eq!(
        merge,
        json!(true),
        "{name}: a shard section on a sweep page"
    );
    let charts = client
        .execute(
            "var o = {}; document.querySelectorAll('figure[id^=\"sweep-\"]').forEach(function (f) { \
             o[f.id] = { points: f.getAttribute('data-points'), lines: Array.prototype.map.call(\
             f.querySelectorAll('polyline'), function (p) { return { series: p.getAttribute('data-series'), \
             n: p.getAttribute('points').trim().split(/\\s+/).length, x: p.getAttribute('data-x'), \
             y: p.getAttribute('data-y'), rows: p.getAttribute('data-rows') }; }) }; }); return o;",
            vec![],
        )
        .await
        .unwrap();
    let charts = charts.as_object().unwrap();
    let figures = [
        "rows_per_s",
        "metrics_per_s",
        "requests_per_s",
        "latency_p50_ms",
        "latency_p99_ms",
        "service_mean_ms",
        "errors",
        "client_cpu_s",
    ];
    let mut axes: Vec<String> = sweep["axes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["values"].as_array().unwrap().len() > 1)
        .map(|a| a["key"].as_str().unwrap().to_string())
        .collect();
    if !sweep["fits"].as_array().unwrap().is_empty() {
        axes.push("rtt".into());
    }
    for key in &axes {
        for fig in figures {
            let id = format!("sweep-{key}-{fig}");
            let chart = charts
                .get(&id)
                .unwrap_or_else(|| panic!("{name}: no chart {id}"));
            assert_eq!(chart["points"], json!(measured.to_string()), "{name}: {id}");
            let mut dots = 0;
            for line in chart["lines"].as_array().unwrap() {
                let parse = |f: &str| -> Vec<f64> {
                    line[f]
                        .as_str()
                        .unwrap()
                        .split(' ')
                        .map(|v| v.parse().unwrap())
                        .collect()
                };
                let (x, y, r) = (parse("x"), parse("y"), parse("rows"));
                assert_eq!(line["n"], json!(x.len()), "{name}: {id}");
                if line["series"].as_str().unwrap().starts_with("fit ") {
                    assert_eq!(key, "rtt", "{name}: a fit on {id}");
                    continue;
                }
                for ((x, y), r) in x.iter().zip(&y).zip(&r) {
                    let row = &rows[*r as usize];
                    assert!(row["verdict"]["flaw"].is_null(), "{name}: {id}: row {r}");
                    let expected_x = if key == "rtt" {
                        row["rtt"]["median_ms"].as_f64().unwrap()
                    } else {
                        let values = sweep["axes"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .find(|a| a["key"] == json!(key))
                            .unwrap()["values"]
                            .as_array()
                            .unwrap();
                        axis_value(&row["point"][key.as_str()], values)
                    };
                    assert_eq!(*x, expected_x, "{name}: {id}");
                    assert_eq!(*y, row[fig].as_f64().unwrap(), "{name}: {id}");
                }
                dots += x.len();
            }
            assert_eq!(dots, measured, "{name}: {id}: one dot per point");
        }
    }
    let values = data_values(client).await;
    for (i, r) in rows.iter().enumerate() {
        let word = r["verdict"]["flaw"]["kind"].as_str().unwrap_or("ok");
        assert_eq!(
            values[format!("sweep-point{i}-verdict")],
            json!(word),
            "{name}: point {i}"
        );
    }
    for (g, f) in sweep["fits"].as_array().unwrap().iter().enumerate() {
        if f["fit"].is_object() {
            for field in ["k", "t_service_ms", "r_squared"] {
                assert_eq!(
                    number(&values, &format!("sweep-fit{g}-{field}")),
                    f["fit"][field].as_f64().unwrap(),
                    "{name}: fit {g}"
                );
            }
        }
    }
}

#[test]
fn html_reports_of_real_runs_open_in_chromium_offline_with_the_reports_figures() {
    let vm = start(ServerKind::VictoriaMetrics);
    let front = HttpFront::start(vm.http_addr(), Storm::of(503, 3));
    let dir = tempfile::tempdir().unwrap();
    // Run a: through a front that refuses the first 3 writes, the server watched.
    let a = run_into(
        &front.url,
        "a.json",
        &[
            "--set".into(),
            format!("monitor.pid={}", vm.pid()),
            "--set".into(),
            format!("monitor.data_dir=\"{}\"", vm.data_dir().display()),
            "--out".into(),
            "html=run.html".into(),
            "--hlog".into(),
            "a.hlog".into(),
        ],
        dir.path(),
    );
    assert_eq!(a["retries"], 3, "{}", a["errors"]);
    assert!(a["server"].is_object(), "no server block: {a}");
    assert_eq!(a["exit"], json!({"code": 0, "why": "success"}));
    // Run b: straight into the server; then both side by side from their JSON alone.
    let b = run_into(
        &vm.base_url(),
        "b.json",
        &["--hlog".into(), "b.hlog".into()],
        dir.path(),
    );
    let out = tsload(
        &[
            "report",
            "a.json",
            "b.json",
            "--hlog",
            "a.hlog",
            "--hlog",
            "b.hlog",
            "-o",
            "both.html",
        ]
        .map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Two shards of one run, merged: the merged report beside each shard's.
    let shards: Vec<Value> = (0..2)
        .map(|i| {
            run_into(
                &vm.base_url(),
                &format!("s{i}.json"),
                &[
                    "--shard".into(),
                    format!("{i}/2"),
                    "--hlog".into(),
                    format!("s{i}.hlog"),
                ],
                dir.path(),
            )
        })
        .collect();
    let out = tsload(
        &[
            "merge",
            "s0.json",
            "s1.json",
            "--json",
            "merged.json",
            "--html",
            "merged.html",
            "--hlog",
            "s0.hlog",
            "--hlog",
            "s1.hlog",
            "--hlog-out",
            "merged.hlog",
        ]
        .map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let merged = common::json(&dir.path().join("merged.json"));
    assert_eq!(merged["merged_from"], 2);
    // The shards alone, later, with their logs: the merged line is the page's own.
    let out = tsload(
        &[
            "report",
            "s0.json",
            "s1.json",
            "--hlog",
            "s0.hlog",
            "--hlog",
            "s1.hlog",
            "-o",
            "shards.html",
        ]
        .map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = |name: &str| read_log(&dir.path().join(name));

    Driver::start().check(async |client| {
        check_page(&client, &dir.path().join("run.html"), &[&a], "run", true).await;
        check_page(
            &client,
            &dir.path().join("both.html"),
            &[&a, &b],
            "report-two",
            false,
        )
        .await;
        check_logs(
            &client,
            &[Some(log("a.hlog")), Some(log("b.hlog"))],
            "report-two",
        )
        .await;
        check_page(
            &client,
            &dir.path().join("merged.html"),
            &[&merged, &shards[0], &shards[1]],
            "merge",
            false,
        )
        .await;
        let shard_logs = [log("s0.hlog"), log("s1.hlog")];
        check_logs(
            &client,
            &[
                Some(log("merged.hlog")),
                Some(shard_logs[0].clone()),
                Some(shard_logs[1].clone()),
            ],
            "merge",
        )
        .await;
        check_shards(
            &client,
            &[(1, &shards[0]), (2, &shards[1])],
            &shard_logs,
            "merge",
        )
        .await;
        check_page(
            &client,
            &dir.path().join("shards.html"),
            &[&shards[0], &shards[1]],
            "report-shards",
            false,
        )
        .await;
        check_shards(
            &client,
            &[(0, &shards[0]), (1, &shards[1])],
            &shard_logs,
            "report-shards",
        )
        .await;
        client.close().await.unwrap();
    });
}

#[test]
fn report_refuses_what_is_not_a_run_report_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.json"), "{\"hello\": 1}").unwrap();
    std::fs::write(dir.path().join("y.json"), "not json").unwrap();
    for (file, says) in [
        ("x.json", "x.json: not a tsload run report"),
        ("y.json", "y.json: not JSON"),
        ("missing.json", "missing.json: cannot open"),
    ] {
        let out = tsload(
            &["report".into(), file.into(), "-o".into(), "p.html".into()],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(
            text(&out.stderr).contains(says),
            "{file}: {}",
            text(&out.stderr)
        );
        assert!(!dir.path().join("p.html").exists());
    }
    // The page never replaces a report it reads.
    let out = tsload(
        &["report", "x.json", "-o", "x.json"].map(String::from),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("also a report to read"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x.json")).unwrap(),
        "{\"hello\": 1}"
    );
}

#[test]
fn a_sweep_page_shows_each_figure_against_each_key_with_the_fit() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sweep.toml"),
        format!(
            "name = \"html-sweep\"\n\n[workload]\nkind = \"cpu-only\"\nscale = 10\n\
             end = \"2016-01-15T00:00:00Z\"\n\n[target]\nkind = \"influx\"\nurl = \"{}\"\n\
             create_database = false\n\n[load]\nreport_interval = \"500ms\"\nbatch = 100\n\
             duration = \"2s\"\n\n[network]\nbackend = \"proxy\"\nprobe = \"app\"\n\
             probe_count = 20\n\n[sweep]\ndelay = [\"0ms\", \"5ms\", \"20ms\"]\n\
             workers = [1, 2]\n",
            vm.base_url()
        ),
    )
    .unwrap();
    let out = tsload(
        &["sweep", "sweep.toml", "--out", "sw"].map(String::from),
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let sweep = common::json(&dir.path().join("sw/sweep.json"));
    assert_eq!(sweep["rows"].as_array().unwrap().len(), 6, "{sweep}");
    let points: Vec<Value> = (1..=6)
        .map(|i| common::json(&dir.path().join(format!("sw/points/{i:03}.json"))))
        .collect();
    Driver::start().check(async |client| {
        let refs: Vec<&Value> = points.iter().collect();
        check_page(
            &client,
            &dir.path().join("sw/sweep.html"),
            &refs,
            "sweep",
            false,
        )
        .await;
        check_sweep(&client, &sweep, "sweep").await;
        client.close().await.unwrap();
    });
}

/// A sweep whose 2016 points all fall outside a default VictoriaMetrics' retention: the
/// server answers 204 and keeps nothing. Before, sweep.csv, sweep.json, the table and the
/// page showed those points' rates like any other, fitted them, and said so only in the
/// last stderr line.
#[test]
fn a_sweep_marks_the_points_that_stored_nothing_everywhere_and_fits_without_them() {
    let vm = tsload_testbed::Server::start_with(
        ServerKind::VictoriaMetrics,
        &[("retentionPeriod", "1")],
    )
    .expect("VictoriaMetrics starts");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sweep.toml"),
        format!(
            "name = \"verdict-sweep\"\n\n[workload]\nkind = \"cpu-only\"\nscale = 3\n\n\
             [target]\nkind = \"influx\"\nurl = \"{}\"\ncreate_database = false\n\n[load]\n\
             batch = 100\nrows = 600\n\n[network]\nbackend = \"proxy\"\nprobe = \"app\"\n\
             probe_count = 10\n\n[sweep]\ndelay = [\"0ms\", \"2ms\"]\n\
             \"workload.start\" = [\"now-1h\", \"2016-01-01T00:00:00Z\"]\n",
            vm.base_url()
        ),
    )
    .unwrap();
    let out = tsload(
        &["sweep", "sweep.toml", "--out", "sw"].map(String::from),
        dir.path(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("2 of 4 points failed"), "{stderr}");
    // Points 2 and 4 (first key outermost) are the 2016 ones.
    let sweep = common::json(&dir.path().join("sw/sweep.json"));
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{sweep}");
    for (i, r) in rows.iter().enumerate() {
        let v = &r["verdict"];
        if i % 2 == 1 {
            assert_eq!(v["exit"], 1, "{r}");
            assert_eq!(v["stored"], 0, "{r}");
            assert_eq!(v["flaw"]["kind"], "shortfall", "{r}");
            assert!(
                v["flaw"]["why"]
                    .as_str()
                    .unwrap()
                    .contains("small_timestamp"),
                "{r}"
            );
        } else {
            assert_eq!(v["exit"], 0, "{r}");
            assert_eq!(v["stored"], 600 * 10, "600 rows of 10 fields: {r}");
            assert!(v["flaw"].is_null(), "{r}");
        }
    }
    // The fits: the 2016 group has no measure left; the other says its 2 points prove
    // nothing.
    let fits = sweep["fits"].as_array().unwrap();
    assert_eq!(fits.len(), 2, "{sweep}");
    assert!(
        fits[0]["caution"].as_str().unwrap().contains("2 points"),
        "{sweep}"
    );
    assert_eq!(fits[1]["left_out"], 2, "{sweep}");
    assert!(fits[1]["fit"].is_null(), "{sweep}");
    // The CSV and the table say the same.
    let csv = std::fs::read_to_string(dir.path().join("sw/sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert!(
        lines[0].ends_with(",stop_reason,exit,stored,verdict,why"),
        "{csv}"
    );
    assert!(lines[1].contains(",0,6000,ok,"), "{csv}");
    assert!(lines[2].contains(",1,0,shortfall,"), "{csv}");
    assert!(
        stdout.contains("point 2 (delay=0ms workload.start=2016-01-01T00:00:00Z) is no measure"),
        "{stdout}"
    );
    assert!(
        stdout.contains("do not trust this fit: 2 points"),
        "{stdout}"
    );
    // The page, in the browser: the verdict of each point, and no dot for a short one
    // (each point is too short for the page checks of a run's intervals).
    Driver::start().check(async |client| {
        client.set_window_size(1100, 900).await.unwrap();
        let page = dir.path().join("sw/sweep.html");
        client
            .goto(&format!("file://{}", page.display()))
            .await
            .unwrap();
        check_sweep(&client, &sweep, "verdict-sweep").await;
        let values = data_values(&client).await;
        assert!(
            values.get("sweep-fit1-error").is_some(),
            "the 2016 group's fit: {values}"
        );
        client.close().await.unwrap();
    });
}

/// `merge --html` over two SQLite shards, one of whose rows a trigger drops after they
/// were acknowledged: the side-by-side table shows each report's stored figure and
/// verdict (the merged run's and shard 1's a shortfall, shard 0's ok) and says under it
/// why a report is no measure. Before, the table had an exit column only, and the shards
/// could not tell what they stored.
#[test]
fn a_merged_page_shows_each_shards_stored_figure_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("reports")).unwrap();
    let sets = |end: &str| -> Vec<String> {
        let mut a: Vec<String> = ["run", "--progress", "none"].map(String::from).to_vec();
        for set in [
            "workload.scale=4".to_string(),
            format!("workload.end=\"{end}\""),
            "target.url=\"sqlite:./s.db\"".into(),
            "load.batch=100".into(),
        ] {
            a.extend(["--set".to_string(), set]);
        }
        a
    };
    // The table first, then the trigger that skips the rows of shard 1/2's hosts.
    let out = tsload(&sets("2016-01-01T00:00:10Z"), dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            use sqlx::Connection as _;
            let url = format!("sqlite:{}", dir.path().join("s.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query(
                "CREATE TRIGGER drop_shard_1 BEFORE INSERT ON cpu \
                 WHEN NEW.hostname IN ('host_2', 'host_3') BEGIN SELECT RAISE(IGNORE); END",
            )
            .execute(&mut conn)
            .await
            .unwrap();
        });
    let shards: Vec<Child> = (0..2)
        .map(|i| {
            let mut a = sets("2016-01-01T01:00:00Z");
            a.extend([
                "--shard".to_string(),
                format!("{i}/2"),
                "--barrier".into(),
                "bar".into(),
                "--json".into(),
                format!("reports/r{i}.json"),
                // Keep the table and its trigger (SQLite's default drops them).
                "--set".into(),
                "target.drop_existing=false".into(),
            ]);
            common::tsload()
                .args(&a)
                .current_dir(dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<Option<i32>> = shards
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code())
        .collect();
    assert_eq!(codes, [Some(0), Some(1)]);
    let out = tsload(
        &["merge", "reports", "--html", "merged.html"].map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    Driver::start().check(async |client| {
        let page = dir.path().join("merged.html");
        client
            .goto(&format!("file://{}", page.display()))
            .await
            .unwrap();
        let values = data_values(&client).await;
        // r0: the merged run; r1 and r2: the shards' reports, in file order.
        for (k, stored, verdict) in [
            (0, "720", "shortfall"),
            (1, "720", "ok"),
            (2, "0", "shortfall"),
        ] {
            assert_eq!(values[format!("r{k}-stored")], stored, "r{k}: {values}");
            assert_eq!(values[format!("r{k}-verdict")], verdict, "r{k}: {values}");
        }
        let said = |id: &'static str| {
            let client = client.clone();
            async move {
                client
                    .find(Locator::Id(id))
                    .await
                    .unwrap_or_else(|e| panic!("#{id}: {e}"))
                    .text()
                    .await
                    .unwrap()
            }
        };
        let shard_1 = said("r2-flaw").await;
        assert!(
            shard_1.contains("shortfall (exit 1): the server stored 0 new rows of the 720")
                && shard_1.ends_with("its figures are no measure"),
            "{shard_1}"
        );
        let merged = said("r0-flaw").await;
        assert!(merged.contains("shard 1/2 (reports/r1.json)"), "{merged}");
        assert!(
            client.find(Locator::Id("r1-flaw")).await.is_err(),
            "shard 0 passed: no flaw line"
        );
        client.close().await.unwrap();
    });
}

#[test]
fn report_refuses_a_bad_interval_log_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A real report and its real log, from a run into the null target.
    let out = tsload(
        &[
            "run",
            "--set",
            "target.kind=\"null\"",
            "--set",
            "workload.kind=\"cpu-only\"",
            "--set",
            "workload.scale=10",
            "--set",
            "load.report_interval=\"500ms\"",
            "--set",
            "load.batch=100",
            "-r",
            "2000",
            "-d",
            "1500ms",
            "--progress",
            "none",
            "--json",
            "r.json",
            "--hlog",
            "r.hlog",
        ]
        .map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(dir.path().join("r.hlog")).unwrap();
    let garbled = log.replacen(",HISTF", ",HISTF!!", 1);
    std::fs::write(dir.path().join("garbled.hlog"), garbled).unwrap();
    std::fs::write(dir.path().join("text.hlog"), "hello\n").unwrap();
    let other: String = log
        .lines()
        .take_while(|l| l.starts_with('#'))
        .chain(log.lines().filter(|l| !l.starts_with('#')).take(2))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("short.hlog"), other).unwrap();
    let first_interval = log.lines().position(|l| !l.starts_with('#')).unwrap() + 1;
    for (args, says) in [
        (
            vec!["r.json", "--hlog", "missing.hlog"],
            "--hlog missing.hlog: cannot open".to_string(),
        ),
        (
            vec!["r.json", "--hlog", "text.hlog"],
            "--hlog text.hlog:1: not an interval log line".to_string(),
        ),
        (
            vec!["r.json", "--hlog", "garbled.hlog"],
            format!("--hlog garbled.hlog:{first_interval}: the interval's histogram: not base64"),
        ),
        (
            vec!["r.json", "--hlog", "r.hlog", "--hlog", "r.hlog"],
            "2 --hlog for 1 reports".to_string(),
        ),
        (
            vec!["r.json", "r.json", "--hlog", "r.hlog"],
            "1 --hlog for 2 reports".to_string(),
        ),
        (
            vec!["r.json", "--hlog", "short.hlog"],
            "short.hlog does not belong to r.json: the log holds".to_string(),
        ),
    ] {
        let mut full = vec!["report"];
        full.extend(&args);
        full.extend(["-o", "p.html"]);
        let full: Vec<String> = full.into_iter().map(String::from).collect();
        let out = tsload(&full, dir.path());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(&says),
            "{args:?}: {says:?} not in {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).contains("panicked"));
        assert!(!dir.path().join("p.html").exists(), "{args:?}");
    }
    // The good log is taken.
    let out = tsload(
        &["report", "r.json", "--hlog", "r.hlog", "-o", "p.html"].map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}
