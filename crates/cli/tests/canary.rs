//! The canary test of "no secret in any output": every subcommand that reads a secret is
//! given a distinct canary in every way a secret can be given (URL user info with a raw
//! `@`, URL query keys, secret-named scenario keys, the drivers' environment variables,
//! `[sweep]` values of secret keys and of URLs, `--out influx=` credentials, `--set`), and
//! run as a user would: successful runs, failed runs, syntax errors, sweeps, compare,
//! probes, validate, the merge of the reports. Then every byte written to standard output,
//! standard error, the Prometheus endpoint and every file under the output directory is
//! searched for every canary. Each canary holds the marker `KNRY` in each of its parts, so
//! half a canary (a password cut at its first `@`) is found too.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: its own files and messages are not tsload's output"
)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tsload_testbed::ServerKind;

mod common;
use common::{start, text, tsload};

/// What marks a canary: no other output of tsload holds it.
const MARKER: &str = "KNRY";

/// Everything tsload wrote while the test ran, with where it came from.
#[derive(Default)]
struct Seen {
    streams: Vec<(String, String)>,
}

impl Seen {
    fn add(&mut self, origin: impl Into<String>, bytes: &[u8]) {
        self.streams.push((origin.into(), text(bytes)));
    }

    /// Runs `cmd` (in `cwd`) and keeps its standard output and error; `want_ok` says
    /// whether it must succeed (a run meant to fail must fail, or it proves nothing).
    fn run(&mut self, label: &str, cmd: &mut Command, want_ok: bool) -> Output {
        let out = cmd.output().expect("start tsload");
        self.add(format!("{label}: stdout"), &out.stdout);
        self.add(format!("{label}: stderr"), &out.stderr);
        assert_eq!(
            out.status.success(),
            want_ok,
            "{label}: exit {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    }

    /// Every file under `dir`, recursively.
    fn files_under(&mut self, dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                self.files_under(&path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                self.add(path.display().to_string(), &bytes);
                // gzip or hlog payloads are not text: the hlog's comment lines are.
            }
        }
    }

    fn leaks(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (origin, body) in &self.streams {
            let mut from = 0;
            while let Some(i) = body[from..].find(MARKER) {
                let at = from + i;
                let lo = body[..at]
                    .char_indices()
                    .rev()
                    .nth(60)
                    .map_or(0, |(i, _)| i);
                let hi = body[at..]
                    .char_indices()
                    .nth(60)
                    .map_or(body.len(), |(i, _)| at + i);
                found.push(format!("{origin}: ...{}...", &body[lo..hi]));
                from = at + MARKER.len();
            }
        }
        found
    }
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// `tsload` with the drivers' secret environment variables set to canaries, in `cwd`.
fn tsload_in(cwd: &Path) -> Command {
    let mut cmd = tsload();
    cmd.current_dir(cwd)
        .env("PGPASSWORD", "KNRYenvPg")
        .env("MYSQL_PWD", "KNRYenvMy")
        .env("INFLUX_TOKEN", "KNRYenvInflux")
        .env("NO_COLOR", "1");
    cmd
}

/// A hostile HTTP server that answers every request 400 with the request itself as the
/// body: its line (query string and all) and every header (`Authorization` included), so
/// whatever tsload sends comes back in its error texts. Ping and `/query` (InfluxDB's
/// set-up) are answered as InfluxDB would, so a run gets as far as its writes.
fn echo_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || echo(stream));
        }
    });
    format!("http://{addr}")
}

fn echo(stream: std::net::TcpStream) {
    use tsload_testbed::http_front::Request;
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some(request) = Request::read(&mut reader) {
        let answer = if request.is("GET", "/ping") {
            "HTTP/1.1 204 No Content\r\n\r\n".to_string()
        } else if request.is("POST", "/query") {
            let body = "{\"results\":[{\"statement_id\":0}]}";
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        } else {
            let head = request.head.trim_end();
            format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{head}",
                head.len()
            )
        };
        if out.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// A GET of `path` on `addr`, the whole answer.
fn http_get(addr: &str, path: &str) -> Option<Vec<u8>> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).ok()?;
    Some(body)
}

#[test]
fn no_canary_secret_reaches_any_output() {
    let pg = start(ServerKind::Postgres);
    let influx = start(ServerKind::InfluxDb1);
    // Prometheus checks no credentials: a remote-write run with a canary password succeeds.
    let prometheus = start(ServerKind::Prometheus);
    let inputs = tempfile::tempdir().unwrap();
    let outdir = tempfile::tempdir().unwrap();
    let (inp, out) = (inputs.path(), outdir.path());
    let pg_addr = pg.addr();
    let influx_url = influx.base_url();
    let influx_addr = influx.addr();
    // PostgreSQL here trusts local connections: any password connects, so a run with
    // canary passwords succeeds and every success path is walked.
    let pg_url = |user_pw: &str, query_pw: &str| {
        format!("postgres://tsload:{user_pw}@{pg_addr}/tsload?password={query_pw}")
    };
    let small = "[workload]\nkind = \"cpu-only\"\nscale = 4\n\
                 start = \"2016-01-01T00:00:00Z\"\nend = \"2016-01-01T00:10:00Z\"\n\
                 [load]\nworkers = 1\nbatch = 50\n";
    let pg_scenario = |name: &str, user_pw: &str, query_pw: &str| {
        format!(
            "name = \"{name}\"\n{small}[target]\nkind = \"postgres\"\nurl = \"{}\"\ndrop_existing = true\n",
            pg_url(user_pw, query_pw)
        )
    };
    let mut seen = Seen::default();
    influx
        .post("/query", &[("q", "CREATE DATABASE tsload_out")], "")
        .expect("create the --out database");

    // validate: the plan shows the URL.
    let ok_pg = write(
        inp,
        "pg.toml",
        &pg_scenario("canary", "KNRYa1@KNRYa2", "KNRYq1"),
    );
    seen.run("validate", tsload_in(out).arg("validate").arg(&ok_pg), true);
    seen.run(
        "validate --set url",
        tsload_in(out).arg("validate").arg(&ok_pg).args([
            "--set",
            &format!("target.url=\"{}\"", pg_url("KNRYs1@KNRYs2", "KNRYs3")),
        ]),
        true,
    );

    // A successful run with every output: report, interval log, CSV, NDJSON, --out influx
    // with credentials in its URL, the metrics endpoint (scraped while it runs), a baseline.
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let mut cmd = tsload_in(out);
    cmd.arg("run")
        .arg(&ok_pg)
        .args([
            "--json",
            "run.json",
            "--hlog",
            "run.hlog",
            "--progress",
            "plain",
        ])
        .args(["--out", "csv=run.csv", "--out", "ndjson=run.ndjson"])
        .args([
            "--out",
            &format!("influx={influx_url}/write?db=tsload_out&u=me&p=KNRYoutP&token=KNRYoutT"),
        ])
        .args(["--metrics-addr", &metrics_addr])
        .args(["--save-baseline", "canary", "-d", "3s", "-r", "2000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("start tsload");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut scraped = false;
    while Instant::now() < deadline && !scraped {
        if let Some(body) = http_get(&metrics_addr, "/metrics") {
            seen.add("--metrics-addr /metrics", &body);
            scraped = true;
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let run_out = child.wait_with_output().unwrap();
    seen.add("run: stdout", &run_out.stdout);
    seen.add("run: stderr", &run_out.stderr);
    assert!(run_out.status.success(), "run: {}", text(&run_out.stderr));
    assert!(scraped, "the metrics endpoint never answered");
    seen.run(
        "run --baseline",
        tsload_in(out)
            .arg("run")
            .arg(&ok_pg)
            .args([
                "--baseline",
                "canary",
                "--json",
                "baseline-run.json",
                "-n",
                "200",
            ])
            .args(["--progress", "none"]),
        true,
    );

    // Shards and their merge.
    for i in 0..2 {
        seen.run(
            "run --shard",
            tsload_in(out)
                .arg("run")
                .arg(&ok_pg)
                .args([
                    "--shard",
                    &format!("{i}/2"),
                    "-n",
                    "100",
                    "--progress",
                    "none",
                ])
                .args(["--json", &format!("shard{i}.json")])
                .args(["--set", "target.drop_existing=false"]),
            true,
        );
    }
    seen.run(
        "merge",
        tsload_in(out).args([
            "merge",
            "shard0.json",
            "shard1.json",
            "--json",
            "merged.json",
        ]),
        true,
    );

    // Through the delay proxy: the RTT probe names its target.
    seen.run(
        "run [network]",
        tsload_in(out)
            .arg("run")
            .arg(&ok_pg)
            .args(["-n", "100", "--progress", "none", "--json", "network.json"])
            .args(["--set", "network.backend=\"proxy\""])
            .args(["--set", "network.delay=\"1ms\""])
            .args(["--set", "network.probe_count=3"]),
        true,
    );

    // An InfluxDB run with a password key, and an InfluxDB URL that is not a URL.
    let influx_scenario = format!(
        "name = \"influx\"\n{small}[target]\nkind = \"influx\"\nurl = \"{influx_url}\"\n\
         db = \"canary\"\nuser = \"me\"\npassword = \"KNRYinfluxPw\"\n"
    );
    let influx_file = write(inp, "influx.toml", &influx_scenario);
    seen.run(
        "run influx",
        tsload_in(out).arg("run").arg(&influx_file).args([
            "-n",
            "100",
            "--progress",
            "none",
            "--json",
            "influx.json",
        ]),
        true,
    );
    seen.run(
        "run influx bad url",
        tsload_in(out).arg("run").arg(&influx_file).args([
            "--set",
            "target.url=\"http://me:KNRYbadUrl@127.0.0.1:99999\"",
        ]),
        false,
    );

    // A remote-write run with basic auth, and the password's write URL refused.
    let prometheus_scenario = format!(
        "name = \"prometheus\"\n{small}[target]\nkind = \"prometheus\"\n\
         url = \"{}/api/v1/write\"\nuser = \"me\"\npassword = \"KNRYpromPw\"\n",
        prometheus.base_url()
    );
    let prometheus_file = write(inp, "prometheus.toml", &prometheus_scenario);
    seen.run(
        "run prometheus",
        tsload_in(out).arg("run").arg(&prometheus_file).args([
            "-n",
            "100",
            "--progress",
            "none",
            "--json",
            "prometheus.json",
        ]),
        true,
    );
    seen.run(
        "run prometheus bad url",
        tsload_in(out)
            .arg("run")
            .arg(&prometheus_file)
            .args(["--set", "target.url=\"ftp://me:KNRYpromUrl@127.0.0.1:9\""]),
        false,
    );

    // Failed runs: a closed port; a wrong password key value from the environment.
    let closed = write(
        inp,
        "closed.toml",
        &pg_scenario("closed", "KNRYc1@KNRYc2", "KNRYc3")
            .replace(&pg_addr.to_string(), "127.0.0.1:1"),
    );
    seen.run(
        "run closed port",
        tsload_in(out).arg("run").arg(&closed).args([
            "--progress",
            "none",
            "--json",
            "closed.json",
        ]),
        false,
    );

    // Syntax errors, with and without overrides, on the secret's line and beside it.
    let broken_beside = write(
        inp,
        "broken1.toml",
        &format!(
            "{small}[target]\nkind = \"influx\"\nurl = \"{influx_url}\"\npassword = \"KNRYsyn1\"\nbroken = = 1\n"
        ),
    );
    let broken_on = write(
        inp,
        "broken2.toml",
        &format!(
            "{small}[target]\nkind = \"influx\"\npassword = \"KNRYsyn2\nurl = \"http://u:KNRYsyn3@h\"\n"
        ),
    );
    for f in [&broken_beside, &broken_on] {
        for args in [&[][..], &["-w", "1"][..], &["--set", "load.batch=10"][..]] {
            seen.run(
                "run syntax error",
                tsload_in(out).arg("run").arg(f).args(args),
                false,
            );
        }
        seen.run(
            "validate syntax error",
            tsload_in(out)
                .arg("validate")
                .arg(f)
                .args(["--set", "load.workers=1"]),
            false,
        );
    }

    // Sweeps: over a secret key, over URLs with credentials, and a value listed twice.
    let sweep_pw = write(
        inp,
        "sweep-pw.toml",
        &format!("{influx_scenario}[sweep]\n\"target.password\" = [\"KNRYsw1\", \"KNRYsw2\"]\n")
            .replace("[load]\n", "[load]\nrows = 100\n"),
    );
    seen.run(
        "sweep over a password",
        tsload_in(out)
            .arg("sweep")
            .arg(&sweep_pw)
            .args(["--out", "sweep-pw"]),
        true,
    );
    let sweep_url = write(
        inp,
        "sweep-url.toml",
        &format!(
            "{}[sweep]\n\"target.url\" = [\"{}\", \"{}\"]\n",
            pg_scenario("sweep", "KNRYsu0", "KNRYsu0q").replace("[load]\n", "[load]\nrows = 100\n"),
            pg_url("KNRYsu1@KNRYsu2", "KNRYsu3"),
            pg_url("KNRYsu4", "KNRYsu5")
        ),
    );
    seen.run(
        "sweep over URLs",
        tsload_in(out)
            .arg("sweep")
            .arg(&sweep_url)
            .args(["--out", "sweep-url"]),
        true,
    );
    let sweep_dup = write(
        inp,
        "sweep-dup.toml",
        &format!("{influx_scenario}[sweep]\n\"target.password\" = [\"KNRYdup\", \"KNRYdup\"]\n"),
    );
    seen.run(
        "sweep duplicate",
        tsload_in(out)
            .arg("sweep")
            .arg(&sweep_dup)
            .args(["--out", "sweep-dup"]),
        false,
    );

    // compare: two profiles with secrets, then a broken profile.
    let profile_pg = write(
        inp,
        "p-pg.toml",
        &format!(
            "name = \"pg\"\n[target]\nkind = \"postgres\"\nurl = \"{}\"\ndrop_existing = true\n",
            pg_url("KNRYcmp1@KNRYcmp2", "KNRYcmp3")
        ),
    );
    let profile_influx = write(
        inp,
        "p-influx.toml",
        &format!(
            "name = \"influx\"\n[target]\nkind = \"influx\"\nurl = \"{influx_url}\"\ndb = \"cmp\"\n\
             user = \"me\"\npassword = \"KNRYcmp4\"\n"
        ),
    );
    let compare_scenario = write(
        inp,
        "compare.toml",
        &format!("name = \"cmp\"\n{small}").replace("[load]\n", "[load]\nrows = 100\n"),
    );
    seen.run(
        "compare",
        tsload_in(out)
            .arg("compare")
            .arg(&compare_scenario)
            .arg("--targets")
            .arg(format!(
                "{},{}",
                profile_pg.display(),
                profile_influx.display()
            ))
            .args(["--out", "compare"]),
        true,
    );
    let profile_broken = write(
        inp,
        "p-broken.toml",
        "name = \"broken\"\n[target]\nkind = \"influx\"\npassword = \"KNRYcmp5\nbroken = = 1\n",
    );
    seen.run(
        "compare broken profile",
        tsload_in(out)
            .arg("compare")
            .arg(&compare_scenario)
            .arg("--targets")
            .arg(profile_broken.display().to_string())
            .args(["--out", "compare-broken"]),
        false,
    );

    // Probes: a successful application probe and one to a closed port.
    seen.run(
        "probe app",
        tsload_in(out)
            .args(["probe", "app", &pg_url("KNRYpr1@KNRYpr2", "KNRYpr3")])
            .args(["-c", "3", "-i", "0s", "--json", "probe.json"]),
        true,
    );
    seen.run(
        "probe app closed",
        tsload_in(out)
            .args(["probe", "app"])
            .arg(pg_url("KNRYpr4", "KNRYpr5").replace(&pg_addr.to_string(), "127.0.0.1:1"))
            .args(["-c", "1", "--timeout", "2s"]),
        false,
    );
    seen.run(
        "probe app influx",
        tsload_in(out)
            .args(["probe", "app"])
            .arg(format!(
                "http://me:KNRYpr6@{influx_addr}/ping?u=me&p=KNRYpr7"
            ))
            .args(["-c", "2", "-i", "0s"]),
        true,
    );

    // generate: a scenario with secrets, its data to a file.
    seen.run(
        "generate",
        tsload_in(out)
            .arg("generate")
            .arg(&ok_pg)
            .args(["-o", "generated.lp"]),
        true,
    );
    // A query run with a password key (InfluxQL against the InfluxDB run's data).
    seen.run(
        "run queries",
        tsload_in(out)
            .arg("run")
            .arg(&influx_file)
            .args(["--progress", "none", "--json", "queries.json"])
            .args(["--set", "query.kind=\"tsbs\""])
            .args(["--set", "query.types=[\"lastpoint\"]"])
            .args(["--set", "query.queries=5"]),
        true,
    );
    // A server that echoes every request: the credentials of `--out influx=` (user info
    // and `p=`), and Basic auth of a target's user and password (its base64 comes back), a
    // password with characters a page escapes, into the JSON and the HTML page.
    let echo = echo_server();
    let echo_scenario = write(
        inp,
        "echo.toml",
        &format!(
            "name = \"echo\"\n{small}[target]\nkind = \"influx\"\nurl = \"{echo}\"\n\
             db = \"echo\"\nuser = \"me\"\npassword = \"KNRYecho<&>\\\"pw\"\n"
        )
        .replace("[load]\n", "[load]\nrows = 100\nmax_retries = 0\n"),
    );
    let echoed = seen.run(
        "run against an echoing server",
        tsload_in(out)
            .arg("run")
            .arg(&echo_scenario)
            .args(["--progress", "none", "--json", "echo.json"])
            .args(["--out", "html=echo.html"]),
        false,
    );
    // The echo came back (the test proves nothing otherwise), its secrets hidden.
    let echoed = text(&echoed.stderr);
    assert!(
        echoed.contains("Bad Request") && echoed.contains("authorization: ***"),
        "{echoed}"
    );
    let echoed = seen.run(
        "--out influx= to an echoing server",
        tsload_in(out)
            .arg("run")
            .arg(&ok_pg)
            .args(["-n", "100", "--progress", "none", "--json", "echo-out.json"])
            .args(["--out", "html=echo-out.html"])
            .arg("--out")
            .arg(format!(
                "influx={}",
                echo.replace("http://", "http://me:KNRYoutEcho@") + "/write?db=x&p=KNRYoutEchoQ"
            )),
        false,
    );
    let echoed = text(&echoed.stderr);
    assert!(
        echoed.contains("--out influx=") && echoed.contains("Bad Request"),
        "{echoed}"
    );
    // TOML errors where the secret sits on a line no key check recognises: a multi-line
    // password, an escaped key, a later line of a sweep's array of passwords.
    for (name, body) in [
        (
            "multi-line.toml",
            "[target]\nkind = \"influx\"\npassword = \"\"\"\nKNRYml1\nKNRYml2\n\"\"\" x\n",
        ),
        (
            "escaped-key.toml",
            "[target]\nkind = \"influx\"\n\"pass\\u0077ord\" = [\"KNRYesc\"]\n",
        ),
        (
            "sweep-array.toml",
            "[target]\nkind = \"influx\"\n[sweep]\n\"target.password\" = [\n  \"KNRYsa1\",\n  \"KNRYsa2\" \"KNRYsa3\",\n]\n",
        ),
    ] {
        let f = write(inp, name, body);
        seen.run(
            &format!("validate {name}"),
            tsload_in(out).arg("validate").arg(&f),
            false,
        );
        seen.run(
            &format!("run {name}"),
            tsload_in(out)
                .arg("run")
                .arg(&f)
                .args(["--set", "load.workers=1"]),
            false,
        );
    }

    // import-taosbenchmark: the password of the JSON file is not copied.
    let insert = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/taosbenchmark/insert.json"),
    )
    .unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&insert).unwrap();
    doc["password"] = "KNRYtaosPw".into();
    let taos = write(inp, "taos.json", &doc.to_string());
    seen.run(
        "import-taosbenchmark",
        tsload_in(out)
            .arg("import-taosbenchmark")
            .arg(&taos)
            .args(["-o", "imported.toml"]),
        true,
    );
    seen.run(
        "import-taosbenchmark to stdout",
        tsload_in(out).arg("import-taosbenchmark").arg(&taos),
        true,
    );

    seen.files_under(out);
    // A Basic header's base64 holds no marker: it is searched for itself.
    {
        use base64::Engine as _;
        for pair in ["me:KNRYecho<&>\"pw", "me:KNRYoutEcho"] {
            let b64 = base64::engine::general_purpose::STANDARD.encode(pair);
            let b64 = b64.trim_end_matches('=');
            for (origin, body) in &seen.streams {
                assert!(!body.contains(b64), "{origin}: the base64 of {pair:?}");
            }
        }
    }
    let leaks = seen.leaks();
    assert!(
        leaks.is_empty(),
        "{} canary secret(s) reached an output:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    // The test saw what it meant to: reports, sweep and compare files, the probe's report.
    for f in [
        "run.json",
        "run.hlog",
        "run.csv",
        "run.ndjson",
        "merged.json",
        "network.json",
        "sweep-pw/sweep.csv",
        "sweep-url/sweep.json",
        "compare/compare.csv",
        "probe.json",
        "generated.lp",
        "queries.json",
        "imported.toml",
        "echo.json",
        "echo.html",
        "echo-out.json",
        "echo-out.html",
    ] {
        assert!(out.join(f).exists(), "{f} was not written");
    }
}
