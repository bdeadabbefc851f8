//! The HTML report in a real browser: pages made by real runs into a real VictoriaMetrics
//! (`--out html=`, one run with a storm of 503s in front, `[monitor]` on) and by
//! `tsload report` over two saved reports, opened from disk in Debian's headless Chromium
//! driven over WebDriver (chromedriver on a free 127.0.0.1 port, through fantoccini).
//! Each page loads with no console error and no network request, its figures equal the
//! JSON report's, each chart over time holds one point per interval, hovering shows an
//! interval's figures, nothing overflows a 390 px wide window, and screenshots are written
//! under `target/tmp/html-report/` for a person to look at.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource as _, MouseActions, PointerAction};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
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
        for c in charts.as_array().unwrap() {
            assert_eq!(c["points"], json!(iv.len().to_string()), "{name}: {c}");
            let lines = c["lines"].as_array().unwrap();
            assert!(!lines.is_empty());
            for n in lines {
                assert_eq!(n, &json!(iv.len()), "{name}: {c}");
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
            .map(|r| intervals(r, "write").len() as u64)
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
    assert!(scroll <= inner, "{name}: {scroll} px of page in {inner} px");
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

/// Moves the pointer over interval i of the throughput chart and reads the tooltip.
async fn hover_shows_an_interval(client: &Client, report: &Value, name: &str) {
    let iv = intervals(report, "write");
    let i = iv.len() / 2;
    let t_max = iv
        .iter()
        .map(|i| i["elapsed_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let plot = client
        .find(Locator::Css("#r0-write-throughput .plot"))
        .await
        .unwrap();
    let (_, _, width, _) = plot.rectangle().await.unwrap();
    let x = (iv[i]["elapsed_s"].as_f64().unwrap() / t_max - 0.5) * width;
    let moves = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: plot,
        duration: None,
        x: x.round(),
        y: 0.0,
    });
    client.perform_actions(moves).await.unwrap();
    let tip = client
        .execute(
            "var t = document.querySelector('#r0-write-throughput .tip'); var o = {}; \
             t.querySelectorAll('[data-field]').forEach(function (e) \
             { o[e.getAttribute('data-field')] = e.getAttribute('data-value'); }); \
             return { hidden: t.hidden, interval: t.getAttribute('data-interval'), fields: o };",
            vec![],
        )
        .await
        .unwrap();
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
        ],
        dir.path(),
    );
    assert_eq!(a["retries"], 3, "{}", a["errors"]);
    assert!(a["server"].is_object(), "no server block: {a}");
    assert_eq!(a["exit"], json!({"code": 0, "why": "success"}));
    // Run b: straight into the server; then both side by side from their JSON alone.
    let b = run_into(&vm.base_url(), "b.json", &[], dir.path());
    let out = tsload(
        &[
            "report".into(),
            "a.json".into(),
            "b.json".into(),
            "-o".into(),
            "both.html".into(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Two shards of one run, merged: the merged report beside each shard's.
    let shards: Vec<Value> = (0..2)
        .map(|i| {
            run_into(
                &vm.base_url(),
                &format!("s{i}.json"),
                &["--shard".into(), format!("{i}/2")],
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
        ]
        .map(String::from),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let merged = common::json(&dir.path().join("merged.json"));
    assert_eq!(merged["merged_from"], 2);

    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = driver.session().await;
        check_page(&client, &dir.path().join("run.html"), &[&a], "run", true).await;
        check_page(
            &client,
            &dir.path().join("both.html"),
            &[&a, &b],
            "report-two",
            false,
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
