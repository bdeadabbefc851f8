//! `cargo xtask`: the project's own tasks. `test` installs what the tests need and runs
//! every check CI runs; `bench` runs the criterion benchmarks and the end-to-end figures.

use std::process::Command;

use anyhow::{Context as _, bail};

mod sysbench;
mod test_pool;
mod timescaledb;
mod tsbs;

const USAGE: &str =
    "usage: cargo xtask <test|bench|bench-targets|serve|k8s-simulate|timescaledb|container-base|fmt>
  test [--repeat N] [--timeout MINUTES] [--jobs J] [CARGO ARGS] [-- LIBTEST ARGS]
                 (CARGO ARGS, e.g. `-p tsload --test docs`, select the test binaries)
                 install what the tests need, then fmt check, clippy, and every test
                 (N rounds, each killed and failed past MINUTES, default 60; J test
                 binaries at a time, default 2, the slowest of the last round first)
  bench          criterion benchmarks of the hot path
  bench-targets [--ledger-only] [--baseline BIN [--current BIN]]
                [null|victoria-metrics|influxdb|questdb|postgres|mariadb|prometheus|clickhouse]...
                [-- KEY=VALUE...]
                 start each real server on loopback and load TSBS cpu-only (seed 123,
                 100 hosts, 4 workers, batch 10,000; 1 day = 8.64 M metrics over line
                 protocol, 6 h = 2.16 M metrics into the SQL servers) three times with
                 the release build, printing tsload's reports; for PostgreSQL and MariaDB
                 then what exactly-once delivery's ledger costs at batch 1, 10 and 10,000
                 (--ledger-only: just that); KEY=VALUE are --set's. --baseline BIN: this
                 build (or --current BIN) against another tsload binary, alternated on
                 fresh servers, three
                 rounds, medians and ratios of rows/s and client CPU (default targets:
                 null, victoria-metrics, postgres, mariadb). --sysbench [mariadb]
                 [postgres] [--kinds K,K] [--time S] [--rounds N] [--current BIN]
                 [--baseline BIN]: tsload's OLTP kinds against Debian's sysbench on one
                 fresh server each, alternated, medians and ratios of TPS, p95/p99 and
                 client user/system CPU per transaction (and against a baseline tsload
                 build in the same rounds, when given). --tsbs [generate]
                 [victoria-metrics] [influxdb] [postgres] [queries] [--rounds N]
                 [--scale HOSTS] [--hours H] [--workers W] [--batch B] [--queries N]
                 [--query-types T,T] [--current BIN] [--tsbs-dir DIR]: TSBS built from
                 its Go module, side by side with tsload, alternated on fresh servers,
                 medians and ratios of rate, client and server CPU per metric
  serve <victoria-metrics|influxdb|questdb|postgres|timescaledb|mariadb|prometheus|clickhouse>
                 start one testbed server on 127.0.0.1, print its URLs and keep it up
                 until Ctrl-C or SIGTERM (for experiments by hand; `&` works)
  k8s-simulate [--env NAME=VALUE]... [--dir DIR]
                 run deploy/k8s's Indexed Job of shards and then its merge Job as local
                 processes (the pods' environment, args and volumes as Kubernetes gives
                 them; volumes under DIR), into a testbed VictoriaMetrics started here
                 unless --env TSLOAD_TARGET=URL names another target
  timescaledb    build TimescaleDB (Apache-2.0 edition) from ../shared/vendor or
                 $TSLOAD_TIMESCALEDB_SOURCE into PostgreSQL 15, unless installed
                 (`test` does this too)
  container-base make the local Debian image the container test builds the Dockerfile's
                 runtime stage on (debootstrap from apt's mirror; `test` does this too)
  fmt            format the workspace";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("bench-targets") => bench_targets(&args[1..]),
        Some("serve") => serve(&args[1..]),
        Some("k8s-simulate") => k8s_simulate(&args[1..]),
        Some("container-base") => {
            ensure_packages()?;
            ensure_container_base()
        }
        Some("fmt") => run("cargo", &["fmt", "--all"]),
        Some("timescaledb") => {
            if !timescaledb::ensure()? {
                bail!("no TimescaleDB source: see above");
            }
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("cannot start {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed with {status}", args.join(" "));
    }
    Ok(())
}

/// Debian packages the tests need, as (package, a binary it installs: a name looked up on
/// PATH, /usr/sbin and /sbin, or an absolute path). SQLite is compiled in; Java runs
/// HdrHistogram's own `HistogramLogProcessor` over tsload's interval logs, and QuestDB.
/// InfluxDB 1.x, VictoriaMetrics, PostgreSQL 15 (whose programs are not on PATH) and
/// MariaDB are the real servers `tsload-testbed` starts for the sinks' integration tests;
/// sysbench runs side by side with the OLTP workload.
const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("default-jre-headless", "java"),
    ("maven", "mvn"),
    ("influxdb", "influxd"),
    ("victoria-metrics", "victoria-metrics"),
    ("postgresql", "/usr/lib/postgresql/15/bin/postgres"),
    ("mariadb-server", "mariadbd"),
    ("sysbench", "sysbench"),
    // The remote-write receiver of the Prometheus target's tests.
    ("prometheus", "prometheus"),
    // The server of the ClickHouse target's tests (18.16, over its HTTP interface).
    ("clickhouse-server", "/usr/sbin/clickhouse-server"),
    // `man ./tsload.1`, a README command the doc test runs (crates/cli/tests/docs.rs).
    ("man-db", "man"),
    // Makes the test CAs and certificates of the TLS tests (tsload_testbed::TestCa).
    ("openssl", "openssl"),
    // Build and run the Dockerfile's image (crates/cli/tests/container.rs): no image
    // registry is reachable, so its Debian base is made with debootstrap.
    ("podman", "podman"),
    ("runc", "runc"),
    ("debootstrap", "debootstrap"),
    // A kernel with sch_netem for the netem tests: Debian's kernel booted under qemu (TCG)
    // with a busybox initramfs (tsload_testbed's VM harness); this machine's own kernel
    // has no netem. iputils' `ping -f` is what `tsload probe icmp --flood` is checked
    // against.
    ("qemu-system-x86", "qemu-system-x86_64"),
    ("linux-image-amd64", "/vmlinuz"),
    ("busybox-static", "busybox"),
    ("iputils-ping", "ping"),
    // The headless browser the HTML report's test drives over WebDriver.
    ("chromium", "chromium"),
    ("chromium-driver", "chromedriver"),
];

/// The local image the container test builds the Dockerfile's runtime stage on (a
/// minimal Debian bookworm, as debian:bookworm-slim); crates/cli/tests/container.rs names
/// it too.
const CONTAINER_BASE: &str = "localhost/tsload-base:bookworm";

/// The Debian mirror apt is set up with here: the first `URIs:` of a deb822 source for
/// bookworm, or the URL of a `deb URL bookworm ...` line.
fn apt_mirror() -> anyhow::Result<String> {
    let mut texts = Vec::new();
    for dir in ["/etc/apt/sources.list.d"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for p in paths {
                let name = p.to_string_lossy();
                if name.ends_with(".sources") || name.ends_with(".list") {
                    texts.push(std::fs::read_to_string(&p).unwrap_or_default());
                }
            }
        }
    }
    texts.push(std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default());
    for text in &texts {
        for stanza in text.split("\n\n") {
            let field = |name: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(str::trim))
                    .unwrap_or("")
            };
            let suites = field("Suites:");
            if suites.split_whitespace().any(|s| s == "bookworm")
                && let Some(uri) = field("URIs:").split_whitespace().next()
            {
                return Ok(uri.to_string());
            }
        }
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["deb", rest @ ..] = words.as_slice()
                && let Some(at) = rest.iter().position(|w| *w == "bookworm")
                && at > 0
            {
                return Ok(rest[at - 1].to_string());
            }
        }
    }
    bail!("no Debian bookworm source in /etc/apt: debootstrap needs the mirror apt uses")
}

/// Makes [`CONTAINER_BASE`] with debootstrap from Debian's mirror, unless podman has it.
fn ensure_container_base() -> anyhow::Result<()> {
    let exists = Command::new("podman")
        .args(["image", "exists", CONTAINER_BASE])
        .status()
        .context("cannot start podman")?;
    if exists.success() {
        return Ok(());
    }
    let rootfs = workspace_root().join("target/tools/bookworm-rootfs");
    if rootfs.exists() {
        std::fs::remove_dir_all(&rootfs)
            .with_context(|| format!("removing a partial {}", rootfs.display()))?;
    }
    let dir = rootfs.display().to_string();
    let mirror = apt_mirror()?;
    run(
        "debootstrap",
        &["--variant=minbase", "bookworm", &dir, &mirror],
    )
    .context("making the container test's Debian base with debootstrap")?;
    let script = format!(
        "tar -C '{dir}' -c . | podman import --change 'CMD [\"/bin/bash\"]' - {CONTAINER_BASE}"
    );
    // pipefail: a tar that fails must not import half a base.
    let script = format!("set -o pipefail; {script}");
    run("bash", &["-c", &script]).context("importing the Debian base into podman")?;
    std::fs::remove_dir_all(&rootfs).ok();
    Ok(())
}

/// Maven artifacts the tests need, as (group, artifact, version); fetched into ~/.m2.
/// QuestDB's version must match `QUESTDB_VERSION` in crates/testbed/src/locate.rs (a
/// testbed unit test checks).
const MAVEN_ARTIFACTS: &[(&str, &str, &str)] = &[
    ("org.hdrhistogram", "HdrHistogram", "2.2.2"),
    ("org.questdb", "questdb", "9.3.4"),
];

fn ensure_maven_artifacts() -> anyhow::Result<()> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    for (group, artifact, version) in MAVEN_ARTIFACTS {
        let jar = std::path::Path::new(&home)
            .join(".m2/repository")
            .join(group.replace('.', "/"))
            .join(artifact)
            .join(version)
            .join(format!("{artifact}-{version}.jar"));
        if jar.is_file() {
            continue;
        }
        run(
            "mvn",
            &[
                "-q",
                "-B",
                "dependency:get",
                &format!("-Dartifact={group}:{artifact}:{version}"),
            ],
        )
        .with_context(|| format!("fetching {group}:{artifact}:{version} from Maven Central"))?;
    }
    Ok(())
}

/// The Kubernetes schema validator the manifest test runs (`crates/cli/tests/k8s.rs`),
/// from PyPI, into `target/tools/kubernetes-validate` (its schemas come with it).
const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";

fn ensure_kubernetes_validate() -> anyhow::Result<()> {
    let dir = workspace_root().join("target/tools/kubernetes-validate");
    if dir.join("kubernetes_validate").is_dir() {
        return Ok(());
    }
    let target = dir.display().to_string();
    run(
        "python3",
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            &target,
            KUBERNETES_VALIDATE,
        ],
    )
    .with_context(|| format!("installing {KUBERNETES_VALIDATE} from PyPI into {target}"))
}

fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// `cargo xtask k8s-simulate`: see USAGE.
fn k8s_simulate(args: &[String]) -> anyhow::Result<()> {
    use std::collections::BTreeMap;
    use tsload_testbed::k8s::{Cluster, ConfigMap, Job};

    let mut overrides = BTreeMap::new();
    let mut dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--env" => {
                let v = it.next().context("--env needs NAME=VALUE")?;
                let (k, val) = v
                    .split_once('=')
                    .with_context(|| format!("--env {v}: expected NAME=VALUE"))?;
                overrides.insert(k.to_string(), val.to_string());
            }
            "--dir" => {
                dir = Some(std::path::PathBuf::from(
                    it.next().context("--dir needs DIR")?,
                ))
            }
            other => bail!("k8s-simulate: unknown argument {other}\n{USAGE}"),
        }
    }
    let root = workspace_root();
    run("cargo", &["build", "--release", "-p", "tsload"])?;
    let k8s = root.join("deploy/k8s");
    let load = |f: &str| k8s.join(f);
    let configmap =
        ConfigMap::load(&load("scenario-configmap.yaml")).map_err(anyhow::Error::msg)?;
    let shards = Job::load(&load("shards-job.yaml")).map_err(anyhow::Error::msg)?;
    let merge = Job::load(&load("merge-job.yaml")).map_err(anyhow::Error::msg)?;
    let _server;
    if !overrides.contains_key("TSLOAD_TARGET") {
        let vm = tsload_testbed::Server::start(tsload_testbed::ServerKind::VictoriaMetrics)
            .context("starting a testbed VictoriaMetrics for TSLOAD_TARGET")?;
        eprintln!(
            "VictoriaMetrics at {} stands in for the Service",
            vm.base_url()
        );
        overrides.insert("TSLOAD_TARGET".into(), vm.base_url());
        _server = vm;
    }
    let tmp;
    let root_dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
            d
        }
        None => {
            tmp = tempfile_dir()?;
            tmp.clone()
        }
    };
    let cluster = Cluster {
        root: root_dir.clone(),
        tsload: root.join("target/release/tsload"),
        env_overrides: overrides,
        configmaps: vec![configmap],
    };
    for job in [&shards, &merge] {
        eprintln!("job {}: {} pod(s)", job.name, job.completions);
        let outs = cluster.run(job).map_err(anyhow::Error::msg)?;
        for (i, o) in outs.iter().enumerate() {
            print!("{}", String::from_utf8_lossy(&o.stdout));
            eprint!("{}", String::from_utf8_lossy(&o.stderr));
            if !o.status.success() {
                bail!("job {} pod {i} failed: {}", job.name, o.status);
            }
        }
    }
    eprintln!("volumes under {}", root_dir.display());
    Ok(())
}

/// A fresh directory under the system's temp dir for the simulated volumes (kept).
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!("tsload-k8s-{}", std::process::id()));
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    Ok(d)
}

fn ensure_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .filter(|(_, bin)| which(bin).is_none())
        .map(|(pkg, _)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!(
        "installing Debian packages the tests need: {}",
        missing.join(" ")
    );
    apt_get(&["update", "-q"])?;
    // The server packages' maintainer scripts start their services (influxd on :8086, on
    // every interface); tests start their own servers on 127.0.0.1, so forbid that.
    let _no_services = NoServiceStarts::install()?;
    // Keep existing config files rather than ask.
    let mut args = vec![
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        "-o",
        "Dpkg::Options::=--force-confdef",
        "-o",
        "Dpkg::Options::=--force-confold",
    ];
    args.extend(&missing);
    apt_get(&args).context("installing test dependencies (needs root and Debian's package mirror)")
}

/// While alive, a `/usr/sbin/policy-rc.d` that answers 101 ("action forbidden"), so
/// `invoke-rc.d` and `deb-systemd-invoke` in maintainer scripts start no services. Only
/// made if there is none (Debian's container images ship one); removed on drop.
struct NoServiceStarts(Option<&'static std::path::Path>);

impl NoServiceStarts {
    fn install() -> anyhow::Result<NoServiceStarts> {
        use std::os::unix::fs::PermissionsExt as _;
        let path = std::path::Path::new("/usr/sbin/policy-rc.d");
        if path.exists() {
            return Ok(NoServiceStarts(None));
        }
        std::fs::write(
            path,
            "#!/bin/sh\n# tsload xtask: no services during install\nexit 101\n",
        )
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)))
        .with_context(|| format!("writing {} (needs root)", path.display()))?;
        Ok(NoServiceStarts(Some(path)))
    }
}

impl Drop for NoServiceStarts {
    fn drop(&mut self) {
        if let Some(path) = self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `apt-get ARGS` that can never stop to ask: no terminal prompts (debconf, conffiles)
/// and no input to wait for.
fn apt_get(args: &[&str]) -> anyhow::Result<()> {
    eprintln!(
        "$ DEBIAN_FRONTEND=noninteractive apt-get {}",
        args.join(" ")
    );
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("DEBCONF_NONINTERACTIVE_SEEN", "true")
        .stdin(std::process::Stdio::null())
        .status()
        .context("cannot start apt-get")?;
    if !status.success() {
        bail!("`apt-get {}` failed with {status}", args.join(" "));
    }
    Ok(())
}

/// `bin` itself if it is an absolute path to a file, else the first `bin` on PATH,
/// /usr/sbin and /sbin.
fn which(bin: &str) -> Option<std::path::PathBuf> {
    let direct = std::path::Path::new(bin);
    if direct.is_absolute() {
        return direct.is_file().then(|| direct.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// How many test binaries a round runs at once by default. On this project's 2-core
/// machine a round of one binary at a time took about 13 minutes, of which the netem VM
/// alone took 3.5 to 4.5; two at a time, 8.4 minutes (the VM's 6.3 the longest part);
/// three at a time, 7.4 to 8.7 (the VM's 7 to 8.7 with two others beside it, which its
/// timing checks must survive but which gains little: the whole `cargo xtask test` used
/// 16.8 CPU-minutes in 10.3, checks and build included, so the work, not the order, is
/// what is left to cut).
const DEFAULT_TEST_JOBS: usize = 2;

/// `cargo xtask test [--repeat N] [--timeout MINUTES] [--jobs J] [CARGO TEST ARGS...
/// [-- LIBTEST ARGS...]]`: installs, checks formatting and lints once, builds the test
/// binaries (cargo's arguments, if any, select them instead of the whole workspace, its
/// doc tests and its lean build), then runs every test N times (default 1), J binaries at a time
/// (`test_pool`), each round under a time limit (default 60 minutes: a hung test fails
/// the round instead of hanging the task). Stops at the first failing round.
fn test(args: &[String]) -> anyhow::Result<()> {
    let mut repeat = 1u32;
    let mut timeout = std::time::Duration::from_secs(60 * 60);
    let mut parallel = DEFAULT_TEST_JOBS;
    let mut extra = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--repeat" => {
                let v = it.next().context("--repeat needs a number of rounds")?;
                repeat = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .with_context(|| format!("--repeat {v}: expected a whole number >= 1"))?;
            }
            "--jobs" => {
                let v = it.next().context("--jobs needs a number")?;
                parallel = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .with_context(|| format!("--jobs {v}: expected a whole number >= 1"))?;
            }
            "--timeout" => {
                let v = it.next().context("--timeout needs minutes")?;
                let minutes: u64 = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .with_context(|| format!("--timeout {v}: expected whole minutes >= 1"))?;
                timeout = std::time::Duration::from_secs(minutes * 60);
            }
            _ => extra.push(a.as_str()),
        }
    }
    warn_if_disk_is_short();
    ensure_packages()?;
    ensure_maven_artifacts()?;
    ensure_kubernetes_validate()?;
    ensure_container_base()?;
    // False (said loudly) where there is no TimescaleDB source: its tests are skipped by
    // name in every round below.
    let skip: &[&str] = if timescaledb::ensure()? {
        &[]
    } else {
        &["--skip", timescaledb::TEST_FILTER]
    };
    run("cargo", &["fmt", "--all", "--", "--check"])?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    // The lean build (`--no-default-features`: no TDengine driver) must stay clean too.
    let lean = ["-p", "tsload", "--no-default-features"];
    run(
        "cargo",
        &[
            &["clippy"],
            &lean[..],
            &["--all-targets", "--", "-D", "warnings"],
        ]
        .concat(),
    )?;
    // Cargo's arguments before a `--`, libtest's after it (filters, --exact, --skip).
    let (cargo_extra, libtest_extra) = match extra.iter().position(|a| *a == "--") {
        Some(i) => (&extra[..i], &extra[i + 1..]),
        None => (&extra[..], &[][..]),
    };
    let libtest_args = [libtest_extra, skip].concat();
    let mut jobs;
    if cargo_extra.is_empty() {
        jobs = test_pool::build(&["test", "--workspace", "--all-targets"], &libtest_args, "")?;
        // The lean build's scenario checks: TDengine is refused at validation, by name.
        jobs.extend(test_pool::build(
            &[&["test"], &lean[..], &["--bin", "tsload"]].concat(),
            skip,
            " (no default features)",
        )?);
        // Doc tests are not part of --all-targets; rustdoc builds them as they run.
        jobs.push(test_pool::Job::cargo(
            "doc tests",
            &["test", "--workspace", "--doc"],
        ));
    } else {
        // Cargo's selection (`-p tsload --test docs`) instead of the whole workspace.
        jobs = test_pool::build(&[&["test"], cargo_extra].concat(), &libtest_args, "")?;
    }
    let target = target_dir();
    let history_file = target.join("xtask-test-times.tsv");
    let mut total = Counts::default();
    let mut failed = Vec::new();
    for round in 1..=repeat {
        let started = std::time::Instant::now();
        let history = test_pool::read_history(&history_file);
        let result = test_pool::run(
            jobs.clone(),
            parallel,
            timeout,
            &history,
            &target.join("xtask-test-logs"),
        )?;
        test_pool::update_history(&history_file, &result.times)?;
        let counts = result.counts;
        println!(
            "\nround {round} of {repeat}: {} passed, {} failed, {} skipped in {:.0} s \
             ({} jobs, {parallel} at a time); the slowest:",
            counts.passed,
            counts.failed,
            counts.ignored,
            started.elapsed().as_secs_f64(),
            result.times.len()
        );
        for (label, t) in result.times.iter().take(8) {
            println!("  {:7.1} s  {label}", t.as_secs_f64());
        }
        total.add(counts);
        if !result.failed.is_empty() {
            failed = result.failed;
            break;
        }
    }
    if !failed.is_empty() {
        println!(
            "tests: {} passed, {} failed, {} skipped",
            total.passed, total.failed, total.ignored
        );
        bail!(
            "{} test job(s) failed (their output is above, and under {}):\n  {}",
            failed.len(),
            target.join("xtask-test-logs").display(),
            failed.join("\n  ")
        );
    }
    // One closing line for the whole suite (the last runner's own line may count 0).
    println!(
        "tests: {} passed, {} failed, {} skipped",
        total.passed, total.failed, total.ignored
    );
    if total.passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

/// What a cold `cargo xtask test` writes, in GiB, measured from a fresh clone: the build
/// under target/ (with CARGO_INCREMENTAL=0, as .ci/run sets), and the servers' data dirs
/// and test files under the temp dir at their peak.
/// At 196af02: target/ 3.4 GiB after three rounds (it was 13-14 GiB with full debuginfo
/// and incremental builds); the temp dir's testbed dirs peaked near 0.3 GiB.
const COLD_RUN_BUILD_GIB: f64 = 4.0;
const COLD_RUN_TEMP_GIB: f64 = 1.0;

/// Prints the free space where the build and the servers write, with a warning when it
/// is less than a cold run needs: a full disk otherwise shows up as a compiler or server
/// error somewhere in the middle of the run.
fn warn_if_disk_is_short() {
    use std::os::unix::fs::MetadataExt as _;
    let target = target_dir();
    // The target dir, or (before the first build) the nearest dir above it that exists.
    let build = target.ancestors().find(|p| p.exists()).map_or_else(
        || std::path::PathBuf::from("."),
        std::path::Path::to_path_buf,
    );
    let temp = std::env::temp_dir();
    let device = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    let one_disk = device(&build).is_some() && device(&build) == device(&temp);
    let places: Vec<(std::path::PathBuf, f64)> = if one_disk {
        vec![(build, COLD_RUN_BUILD_GIB + COLD_RUN_TEMP_GIB)]
    } else {
        vec![(build, COLD_RUN_BUILD_GIB), (temp, COLD_RUN_TEMP_GIB)]
    };
    for (path, need) in places {
        match free_gib(&path) {
            Some(free) if free < need => eprintln!(
                "warning: {free:.1} GiB free at {}; a cold `cargo xtask test` writes about \
                 {need:.0} GiB there (build and servers' data) and fails with `No space \
                 left on device` when it runs out",
                path.display()
            ),
            Some(free) => eprintln!("disk: {free:.1} GiB free at {}", path.display()),
            None => eprintln!("disk: cannot read the free space at {}", path.display()),
        }
    }
}

/// Cargo's target dir: `$CARGO_TARGET_DIR`, or `target/` in the workspace root.
fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join("target")
        },
        std::path::PathBuf::from,
    )
}

/// Free space at `path` in GiB, from `df -Pk` (POSIX output: the fourth column of the
/// second line is the space available, in KiB).
fn free_gib(path: &std::path::Path) -> Option<f64> {
    let out = Command::new("df").arg("-Pk").arg(path).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let kib: f64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// Test counts summed over every `test result:` line of a cargo test run.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.ignored += other.ignored;
    }

    /// Reads `test result: ok. 5 passed; 0 failed; 1 ignored; ...`.
    fn parse(line: &str) -> Option<Counts> {
        let rest = line.trim().strip_prefix("test result: ")?;
        let mut c = Counts::default();
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let n: u64 = n.parse().unwrap_or(0);
            match what {
                "passed" => c.passed = n,
                "failed" => c.failed = n,
                "ignored" => c.ignored = n,
                _ => {}
            }
        }
        Some(c)
    }
}

fn bench(extra: &[String]) -> anyhow::Result<()> {
    let mut args = vec!["bench", "-p", "tsload-benches"];
    args.extend(extra.iter().map(String::as_str));
    run("cargo", &args)
}

/// Loads the same data set into each real server, a fresh server per run, and prints
/// tsload's own reports (rate, latency, client CPU per metric) and the server's CPU time.
/// Starts one testbed server on 127.0.0.1, prints how to reach it and keeps it up until
/// Ctrl-C (or until standard input closes): for experiments by hand.
fn serve(args: &[String]) -> anyhow::Result<()> {
    use tsload_testbed::Server;
    let [name] = args else {
        bail!(
            "usage: cargo xtask serve \
             <victoria-metrics|influxdb|questdb|postgres|timescaledb|mariadb|prometheus|clickhouse>"
        );
    };
    let kind = server_kind(name)?;
    // Signals are caught before the server starts, so that one arriving during its start
    // still stops it through its Drop (which removes its data directory).
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])
    .context("catching SIGINT and SIGTERM")?;
    // As installed: VictoriaMetrics keeps one month (the testbed's own runs keep 100
    // years), so what a user meets here is what their server does.
    let server = match kind {
        tsload_testbed::ServerKind::VictoriaMetrics => {
            Server::start_with(kind, &[("retentionPeriod", "1")])
        }
        _ => Server::start(kind),
    }
    .with_context(|| format!("starting {kind}"))?;
    println!("{kind} is up (Ctrl-C or SIGTERM stops it and removes its data)");
    println!("base_url={}", server.base_url());
    if let Some(url) = server.database_url() {
        println!("database_url={url}");
    }
    println!("data_dir={}", server.data_dir().display());
    // Runs in the background (`&`, stdin closed) until a signal.
    if let Some(signal) = signals.forever().next() {
        println!("signal {signal}: stopping {kind}");
    }
    drop(server);
    Ok(())
}

fn server_kind(name: &str) -> anyhow::Result<tsload_testbed::ServerKind> {
    use tsload_testbed::ServerKind;
    Ok(match name {
        "victoria-metrics" | "vm" => ServerKind::VictoriaMetrics,
        "influxdb" => ServerKind::InfluxDb1,
        "questdb" => ServerKind::QuestDb,
        "postgres" => ServerKind::Postgres,
        "timescaledb" => ServerKind::TimescaleDb,
        "mariadb" => ServerKind::MariaDb,
        "prometheus" => ServerKind::Prometheus,
        "clickhouse" => ServerKind::ClickHouse,
        other => bail!(
            "unknown server {other}; allowed: victoria-metrics, influxdb, questdb, postgres, \
             timescaledb, mariadb, prometheus, clickhouse"
        ),
    })
}

fn bench_targets(args: &[String]) -> anyhow::Result<()> {
    use tsload_testbed::{Server, ServerKind};
    let (names, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    if names.iter().any(|a| a == "--tsbs") {
        let rest: Vec<&String> = names.iter().filter(|a| *a != "--tsbs").collect();
        return tsbs::bench(&rest);
    }
    if names.iter().any(|a| a == "--sysbench") {
        let rest: Vec<&String> = names.iter().filter(|a| *a != "--sysbench").collect();
        return sysbench::bench(&rest);
    }
    let ledger_only = names.iter().any(|a| a == "--ledger-only");
    if let Some(i) = names.iter().position(|a| a == "--baseline") {
        let baseline = names
            .get(i + 1)
            .context("--baseline takes the path of another tsload binary")?;
        let rest: Vec<&String> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i && *j != i + 1)
            .map(|(_, a)| a)
            .collect();
        // `--current BIN`: the binary to compare (default: this tree's release build).
        let (current, rest): (Option<&String>, Vec<&String>) =
            match rest.iter().position(|a| *a == "--current") {
                Some(j) => (
                    Some(
                        rest.get(j + 1)
                            .context("--current takes the path of a tsload binary")?,
                    ),
                    rest.iter()
                        .enumerate()
                        .filter(|(k, _)| *k != j && *k != j + 1)
                        .map(|(_, a)| *a)
                        .collect(),
                ),
                None => (None, rest),
            };
        return bench_against(current.map(String::as_str), baseline, &rest, extra);
    }
    let names: Vec<&String> = names.iter().filter(|a| *a != "--ledger-only").collect();
    let kinds: Vec<ServerKind> = if names.is_empty() {
        vec![
            ServerKind::VictoriaMetrics,
            ServerKind::InfluxDb1,
            ServerKind::QuestDb,
            ServerKind::Postgres,
            ServerKind::MariaDb,
        ]
    } else {
        names
            .iter()
            .map(|n| server_kind(n))
            .collect::<anyhow::Result<_>>()?
    };
    run("cargo", &["build", "--release", "-p", "tsload"])?;
    for kind in kinds {
        for round in 1..=3 {
            if ledger_only {
                break;
            }
            let server = Server::start(kind).with_context(|| format!("starting {kind}"))?;
            eprintln!("== {kind}, run {round}: {}", server.base_url());
            let mut cmd = Command::new("target/release/tsload");
            cmd.args(["run", "configs/cpu-only.toml", "--progress", "none"]);
            let sets = bench_sets(Some(&server))?;
            for set in &sets {
                cmd.args(["--set", set]);
            }
            for set in extra {
                cmd.args(["--set", set]);
            }
            let status = cmd.status().context("starting target/release/tsload")?;
            eprintln!("   server CPU: {}", server_cpu(&server));
            if !status.success() {
                bail!(
                    "tsload failed against {kind}: {status}\n{}",
                    server.log_tail()
                );
            }
        }
        if matches!(kind, ServerKind::Postgres | ServerKind::MariaDb) {
            ledger_cost(kind, extra)?;
        }
    }
    Ok(())
}

/// The `--set`s of one bench-targets run into `server` (`None`: the null target, a
/// larger data set so that the run lasts about a second).
fn bench_sets(server: Option<&tsload_testbed::Server>) -> anyhow::Result<Vec<String>> {
    use tsload_testbed::ServerKind;
    let mut sets = vec!["load.workers=4".to_string(), "load.batch=10000".into()];
    let Some(server) = server else {
        sets.push("target.kind=\"null\"".into());
        sets.push("workload.scale=4000".into());
        return Ok(sets);
    };
    let kind = server.kind();
    match kind {
        ServerKind::Postgres | ServerKind::TimescaleDb | ServerKind::MariaDb => {
            let target = if kind.is_postgres() {
                "postgres"
            } else {
                "mysql"
            };
            let url = server.database_url().context("an SQL server has a URL")?;
            sets.push(format!("target.kind=\"{target}\""));
            sets.push(format!("target.url=\"{url}\""));
            sets.push("target.drop_existing=true".into());
            sets.push("workload.end=\"2016-01-01T06:00:00Z\"".into());
            if kind == ServerKind::TimescaleDb {
                // TSBS's TimescaleDB layout: hypertables of 12 h chunks, a shared tags table.
                sets.push("target.hypertable=true".into());
                sets.push("target.layout=\"tags\"".into());
            }
        }
        ServerKind::Prometheus => {
            // Prometheus as installed takes each series in time order only: one worker.
            sets[0] = "load.workers=1".into();
            sets.push("target.kind=\"prometheus\"".into());
            sets.push(format!("target.url=\"{}/api/v1/write\"", server.base_url()));
        }
        ServerKind::ClickHouse => {
            sets.push("target.kind=\"clickhouse\"".into());
            sets.push(format!("target.url=\"{}\"", server.base_url()));
            sets.push("target.drop_existing=true".into());
        }
        ServerKind::InfluxDb1 | ServerKind::VictoriaMetrics | ServerKind::QuestDb => {
            sets.push("target.kind=\"influx\"".into());
            sets.push(format!("target.url=\"{}\"", server.base_url()));
            if kind != ServerKind::InfluxDb1 {
                sets.push("target.create_database=false".into());
            }
        }
    }
    Ok(sets)
}

/// This build against `baseline` (another tsload binary, e.g. an earlier commit's release
/// build) on the same loads: per target (`null` or a server), three rounds, each running
/// both binaries in alternating order against a fresh server; prints the medians of
/// rows/s and client CPU per 1,000 metrics, and the ratios this / baseline.
fn bench_against(
    current: Option<&str>,
    baseline: &str,
    names: &[&String],
    extra: &[String],
) -> anyhow::Result<()> {
    use tsload_testbed::Server;
    let names: Vec<&str> = if names.is_empty() {
        vec!["null", "victoria-metrics", "postgres", "mariadb"]
    } else {
        names.iter().map(|n| n.as_str()).collect()
    };
    let current = match current {
        Some(bin) => bin,
        None => {
            run("cargo", &["build", "--release", "-p", "tsload"])?;
            "target/release/tsload"
        }
    };
    let dir = std::env::temp_dir().join(format!("tsload-bench-against-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let report = dir.join("r.json");
    let mut table = Vec::new();
    for name in names {
        let kind = match name {
            "null" => None,
            other => Some(server_kind(other)?),
        };
        // [this, baseline]: (rows/s, us per 1,000 metrics) per round.
        let mut figures: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for round in 0..3 {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let server = kind
                    .map(|k| Server::start(k).with_context(|| format!("starting {k}")))
                    .transpose()?;
                let bin = if i == 0 { current } else { baseline };
                let mut cmd = Command::new(bin);
                cmd.args([
                    "run",
                    "configs/cpu-only.toml",
                    "--progress",
                    "none",
                    "--json",
                ])
                .arg(&report)
                .stdout(std::process::Stdio::null());
                for set in bench_sets(server.as_ref())?.iter().chain(extra) {
                    cmd.args(["--set", set]);
                }
                let status = cmd.status().with_context(|| format!("starting {bin}"))?;
                if !status.success() {
                    bail!("{bin} failed against {name}: {status}");
                }
                let r: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&report)?)?;
                figures[i].push((
                    r["rows_per_s"].as_f64().unwrap_or(0.0),
                    r["client"]["cpu_us_per_1000_metrics"]
                        .as_f64()
                        .unwrap_or(0.0),
                ));
            }
        }
        let median = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
            let mut x: Vec<f64> = v.iter().map(f).collect();
            x.sort_by(f64::total_cmp);
            x[x.len() / 2]
        };
        let (rate, cpu) = (|p: &(f64, f64)| p.0, |p: &(f64, f64)| p.1);
        let (new_rate, old_rate) = (median(&figures[0], rate), median(&figures[1], rate));
        let (new_cpu, old_cpu) = (median(&figures[0], cpu), median(&figures[1], cpu));
        table.push(format!(
            "   {name:<17} rows/s {new_rate:>11.0} vs {old_rate:>11.0} (ratio {:.3}) | \
             client CPU per 1,000 metrics {new_cpu:>8.2} us vs {old_cpu:>8.2} us (ratio {:.3})",
            new_rate / old_rate.max(f64::MIN_POSITIVE),
            new_cpu / old_cpu.max(f64::MIN_POSITIVE),
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("== this build vs {baseline} (median of 3 alternated runs each):");
    for line in table {
        eprintln!("{line}");
    }
    Ok(())
}

/// What exactly-once delivery's ledger costs: the same load at batch 1, 10 and 10,000,
/// exactly once and at least once alternated, three runs each, on one fresh server;
/// prints the medians and their ratio.
fn ledger_cost(kind: tsload_testbed::ServerKind, extra: &[String]) -> anyhow::Result<()> {
    use tsload_testbed::{Server, ServerKind};
    let server = Server::start(kind).with_context(|| format!("starting {kind}"))?;
    let url = server.database_url().context("an SQL server has a URL")?;
    let target = if kind == ServerKind::Postgres {
        "postgres"
    } else {
        "mysql"
    };
    let dir = std::env::temp_dir().join(format!("tsload-ledger-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let report = dir.join("r.json");
    eprintln!("== {kind}: ledger cost (rows/s and p50 latency, median of 3, 4 workers)");
    let mut table = Vec::new();
    for batch in [1u32, 10, 10_000] {
        let mut figures: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for _round in 0..3 {
            for (i, delivery) in ["at_least_once", "exactly_once"].iter().enumerate() {
                let mut cmd = Command::new("target/release/tsload");
                cmd.args([
                    "run",
                    "configs/cpu-only.toml",
                    "--progress",
                    "none",
                    "--json",
                ])
                .arg(&report)
                .stdout(std::process::Stdio::null());
                let mut sets = vec![
                    format!("target.kind=\"{target}\""),
                    format!("target.url=\"{url}\""),
                    "target.drop_existing=true".to_string(),
                    format!("target.delivery=\"{delivery}\""),
                    "load.workers=4".into(),
                    format!("load.batch={batch}"),
                ];
                if batch < 10_000 {
                    sets.push("load.duration=\"5s\"".into());
                } else {
                    sets.push("workload.end=\"2016-01-01T06:00:00Z\"".into());
                }
                sets.extend(extra.iter().cloned());
                for set in &sets {
                    cmd.args(["--set", set]);
                }
                let status = cmd.status().context("starting target/release/tsload")?;
                if !status.success() {
                    bail!(
                        "tsload failed against {kind}: {status}\n{}",
                        server.log_tail()
                    );
                }
                let r: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&report)?)?;
                let rate = r["rows_per_s"].as_f64().unwrap_or(0.0);
                let p50 = r["latency"]["p50_ms"].as_f64().unwrap_or(0.0);
                figures[i].push((rate, p50));
            }
        }
        let median = |v: &mut Vec<(f64, f64)>| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let rate = v[v.len() / 2].0;
            v.sort_by(|a, b| a.1.total_cmp(&b.1));
            (rate, v[v.len() / 2].1)
        };
        let (once_rate, once_p50) = median(&mut figures[1]);
        let (least_rate, least_p50) = median(&mut figures[0]);
        table.push(format!(
            "   batch {batch:>6}: at least once {least_rate:>11.0} rows/s p50 {least_p50:.3} ms | \
             exactly once {once_rate:>11.0} rows/s p50 {once_p50:.3} ms | rate ratio {:.3}",
            if least_rate > 0.0 {
                once_rate / least_rate
            } else {
                0.0
            }
        ));
    }
    for line in table {
        eprintln!("{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// User + system CPU seconds of a server so far, from /proc: its processes, and the
/// children they have reaped (PostgreSQL's backends, once their connections closed).
fn server_cpu(server: &tsload_testbed::Server) -> String {
    format!("{:.2} s", server_cpu_s(server))
}

/// [`server_cpu`] in seconds.
fn server_cpu_s(server: &tsload_testbed::Server) -> f64 {
    let mut ticks = 0.0;
    for pid in server.processes() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) start after the last ')':
        // utime, stime, cutime, cstime are stat's fields 14-17, 11-14 after the name.
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        ticks += (11..=14)
            .filter_map(|i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
            .sum::<f64>();
    }
    ticks / 100.0
}
