//! Every command the docs give (README.md, docs/*.md, the header comments of configs/)
//! runs as written against servers started as a user starts them, and every write run's
//! server stored what its report says. In the spirit of rust-analyzer's tidy tests: a doc
//! that drifts from the code fails the build.
//!
//! How a command runs: in a scratch directory holding a copy of `configs/`, through `sh
//! -c`, with `tsload` a shell function that calls the binary under test. The servers are
//! the testbed's on random loopback ports, so the documented default addresses
//! (`127.0.0.1:8086`, `:8428`, `:9000`, `:5432`, `:3306`) are rewritten to theirs, in the
//! copied configs and in the command text; nothing else in a command changes, except
//! what its table entry names (a shorter duration appended to each `tsload` call, a file
//! path that would touch the system). Each `tsload run` also gets `--json` so the test
//! can read what it reported.
//!
//! The servers run with their default settings: VictoriaMetrics' one-month retention,
//! MariaDB's max_connections, PostgreSQL with the `postgres` superuser Debian's cluster
//! has, MariaDB without the `tsload` database the testbed usually makes.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::text;

/// The servers a command needs, which decides the test that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    /// No server: null, SQLite, the commands that print.
    Local,
    Influx,
    Victoria,
    Quest,
    Postgres,
    /// PostgreSQL with TimescaleDB (built from source by `cargo xtask test`).
    Timescale,
    Maria,
    Prometheus,
    ClickHouse,
    /// `tsload compare` over TimescaleDB (PostgreSQL with the extension: the postgres and
    /// timescaledb profiles), InfluxDB, VictoriaMetrics and QuestDB at once.
    Compare,
}

/// What the test does with a documented command.
#[derive(Debug, Clone, Copy)]
enum How {
    /// Runs it (see the module doc) and expects the exit code.
    Run(Run),
    /// A synopsis with placeholders (`SCENARIO.toml`, `ADDR`): its subcommand and every
    /// `--flag` it names must be in `tsload SUBCOMMAND --help`.
    Synopsis,
    /// Names a subcommand in prose: `tsload SUBCOMMAND --help` must succeed.
    Mention,
    /// Cannot run here, and why (said by name in the test's output).
    Skip(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Run {
    group: Group,
    /// Appended to each `tsload` call in the command (durations shortened).
    extra: &'static str,
    /// Replacements in the command text before it runs (`{port}` is the group's main
    /// server port).
    rewrite: &'static [(&'static str, &'static str)],
    /// SQL run on the group's server first, as the doc says to.
    setup: &'static [&'static str],
    /// What is run when the documented text is not a whole command (a flag list to add
    /// to the command above it, `cargo run --release --`): `{doc}` stands for the text.
    command: Option<&'static str>,
    exit: i32,
    /// Said on stderr (where the exit is an error, what it must name).
    stderr: &'static str,
}

const fn run(group: Group, extra: &'static str) -> How {
    How::Run(Run {
        group,
        extra,
        rewrite: &[],
        setup: &[],
        command: None,
        exit: 0,
        stderr: "",
    })
}

/// Every command the docs give, as written there (continuation lines joined, comments
/// cut), in the order the runs happen within a group.
const DOC_COMMANDS: &[(&str, How)] = &[
    // README.md: set-up.
    (
        "cargo run --release -- run",
        How::Run(Run {
            group: Group::Local,
            extra: "",
            rewrite: &[],
            setup: &[],
            // The same code as the release binary's; the test builds the dev profile.
            command: Some("tsload run"),
            exit: 0,
            stderr: "",
        }),
    ),
    (
        "cargo xtask test",
        How::Skip("it is the run this test is part of"),
    ),
    (
        "cargo xtask timescaledb",
        How::Skip("builds and installs TimescaleDB: `cargo xtask test` ran it before this test"),
    ),
    (
        "cargo install --path crates/cli",
        How::Skip(
            "installs into ~/.cargo/bin: a release build (4 min) of the binary this test runs",
        ),
    ),
    (
        "cargo install --path crates/cli --no-default-features",
        How::Skip(
            "installs into ~/.cargo/bin; the lean build is compiled and tested by `cargo xtask test`",
        ),
    ),
    ("tsload --version", run(Group::Local, "")),
    (
        "tsload completions bash > /etc/bash_completion.d/tsload",
        How::Run(Run {
            group: Group::Local,
            extra: "",
            rewrite: &[("/etc/bash_completion.d/tsload", "tsload.bash")],
            setup: &[],
            command: Some("{doc} && bash -n tsload.bash"),
            exit: 0,
            stderr: "",
        }),
    ),
    (
        "tsload man > tsload.1 && man ./tsload.1",
        run(Group::Local, ""),
    ),
    (
        "docker build -t tsload --build-arg TSLOAD_COMMIT=$(git rev-parse --short=12 HEAD) .",
        How::Skip(
            "docker: no image registry here; crates/cli/tests/container.rs builds the Dockerfile with podman",
        ),
    ),
    (
        "docker run --rm --network host tsload run --target http://127.0.0.1:8428 -d 30s",
        How::Skip("docker: crates/cli/tests/container.rs runs the image against VictoriaMetrics"),
    ),
    (
        "mkdir -p ctx/out && cp target/release/tsload ctx/out/",
        How::Skip("a release build; crates/cli/tests/container.rs makes the same context"),
    ),
    (
        "podman build --build-arg RUNTIME_IMAGE=localhost/tsload-base:bookworm --build-context build=ctx -t tsload .",
        How::Skip("crates/cli/tests/container.rs runs this build"),
    ),
    // README.md: the synopsis.
    (
        "tsload run [SCENARIO.toml] [--set key=value]... [--json FILE] [--hlog FILE] [--fail-if EXPR]... [--out csv=FILE] [--out ndjson=FILE] [--out influx=URL] [--out html=FILE] [--metrics-addr HOST:PORT] [--shard I/N] [--barrier DIR] [--start-at TIME] [--repeat N] [--save-baseline NAME] [--baseline NAME] [--regress-if EXPR]...",
        How::Synopsis,
    ),
    (
        "tsload merge REPORT.json...|DIR [--hlog FILE]... [--hlog-out FILE] [--json FILE] [--html FILE]",
        How::Synopsis,
    ),
    (
        "tsload report REPORT.json... [--hlog FILE]... -o FILE.html",
        How::Synopsis,
    ),
    (
        "tsload compare SCENARIO.toml --targets a.toml,b.toml,... [--set key=value]... [--out DIR]",
        How::Synopsis,
    ),
    (
        "tsload validate [SCENARIO.toml] [--set key=value]...",
        How::Synopsis,
    ),
    (
        "tsload generate [SCENARIO.toml] --format influx [-o FILE]",
        How::Synopsis,
    ),
    (
        "tsload netem apply --dev IF [--netns NS] [--add] [--dry-run --hex] -- SPEC",
        How::Synopsis,
    ),
    (
        "tsload netem show|clear --dev IF [--netns NS]",
        How::Synopsis,
    ),
    ("tsload netem restore", How::Synopsis),
    (
        "tsload sweep SCENARIO.toml [--set key=value]... [--out DIR]",
        How::Synopsis,
    ),
    (
        "tsload proxy --listen ADDR --upstream ADDR --delay D [--jitter J] [--rate R] [--direction up|down|both] [--idle-timeout 5m] [--max-connections 1024] [--connect-timeout 10s] [--fault SPEC]...",
        How::Synopsis,
    ),
    (
        "tsload probe icmp ADDR [--flood] [-c N] | tcp ADDR:PORT | app URL   [--json FILE] [--netns NS]",
        How::Synopsis,
    ),
    (
        "tsload import-taosbenchmark FILE.json [-o SCENARIO.toml]",
        How::Synopsis,
    ),
    ("tsload keys [SECTION]", How::Synopsis),
    (
        "tsload import-taosbenchmark FILE.json -o scenario.toml",
        How::Synopsis,
    ),
    ("tsload probe app URL", How::Synopsis),
    ("tsload keys", How::Mention),
    (
        "cargo run --release -- <args>",
        How::Skip("a synopsis of the set-up command above"),
    ),
    // README.md: prose.
    (
        "tsload run --target null -r 100000 -d 2s",
        run(Group::Local, ""),
    ),
    (
        "tsload run --target null -d 2s --out html=run.html",
        run(Group::Local, ""),
    ),
    ("tsload report", How::Mention),
    ("tsload compare", How::Mention),
    ("tsload proxy", How::Mention),
    ("tsload sweep", How::Mention),
    ("tsload probe", How::Mention),
    ("tsload probe icmp", How::Mention),
    ("tsload netem", How::Mention),
    ("tsload merge", How::Mention),
    ("tsload generate", How::Mention),
    (
        "tsload merge shard-*.json",
        How::Skip("needs shard reports: crates/cli/tests/shard.rs merges real ones"),
    ),
    (
        "tsload compare configs/r3-compare.toml --targets configs/compare/postgres.toml,...",
        How::Skip("elided (`...`); the whole command is in configs/r3-compare.toml, run below"),
    ),
    (
        "podman --runtime runc --cgroup-manager cgroupfs",
        How::Skip("options for podman, said in prose; crates/cli/tests/container.rs uses them"),
    ),
    (
        "cargo build --release",
        How::Skip("a release build (4 min)"),
    ),
    (
        "cargo build --profile profiling",
        How::Skip("a release build with line tables (4 min)"),
    ),
    (
        "cargo xtask test --repeat N",
        How::Skip("the test suite itself, N times"),
    ),
    (
        "cargo xtask serve postgres",
        How::Skip("serves until stopped; the testbed servers it starts are what this test uses"),
    ),
    (
        "cargo xtask container-base",
        How::Skip("debootstrap; crates/cli/tests/container.rs makes the base"),
    ),
    (
        "cargo xtask bench",
        How::Skip("criterion benchmarks, minutes"),
    ),
    (
        "cargo xtask bench-targets [victoria-metrics|influxdb|questdb|postgres|mariadb] [-- KEY=VALUE...]",
        How::Skip("benchmarks against every server, minutes each"),
    ),
    (
        "cargo xtask bench-targets --ledger-only postgres mariadb",
        How::Skip("benchmarks, minutes"),
    ),
    (
        "cargo xtask bench-targets --sysbench [mariadb] [postgres]",
        How::Skip("benchmarks against sysbench, minutes"),
    ),
    (
        "cargo xtask bench-targets --sysbench mariadb postgres --rounds 5 --time 8",
        How::Skip("benchmarks against sysbench, 10 minutes and more"),
    ),
    (
        "cargo xtask bench-targets --tsbs [generate] [victoria-metrics] [influxdb] [postgres]",
        How::Skip("builds TSBS from the Go module proxy, then about 12 minutes of benchmarks"),
    ),
    (
        "cargo xtask bench-targets --tsbs",
        How::Skip("builds TSBS from the Go module proxy, then about 12 minutes of benchmarks"),
    ),
    (
        "cargo bench -p tsload-benches --bench own_sink",
        How::Skip("a criterion benchmark, minutes"),
    ),
    // README.md: sharding over Kubernetes.
    (
        "tsload run configs/r5-queries.toml --set query.workers=80 --shard $i/4 --barrier /shared/r5/barrier --json /shared/r5/shard-$i.json --hlog /shared/r5/shard-$i.hlog",
        How::Skip(
            "kubectl: a step of the Kubernetes job (deploy/k8s); crates/cli/tests/k8s.rs runs the job's commands",
        ),
    ),
    (
        "tsload merge /shared/r5 --hlog-out /shared/r5/merged.hlog --json /shared/r5/merged.json",
        How::Skip(
            "kubectl: a step of the Kubernetes job (deploy/k8s); crates/cli/tests/k8s.rs runs the job's commands",
        ),
    ),
    (
        "kubectl apply -f deploy/k8s/scenario-configmap.yaml -f deploy/k8s/results-pvc.yaml -f deploy/k8s/shards-job.yaml",
        How::Skip(
            "kubectl: no cluster here; crates/cli/tests/k8s.rs validates the manifests and runs their commands",
        ),
    ),
    (
        "kubectl wait --for=condition=complete job/tsload-shards --timeout=2h",
        How::Skip("kubectl: no cluster here"),
    ),
    (
        "kubectl apply -f deploy/k8s/merge-job.yaml && kubectl logs -f job/tsload-merge",
        How::Skip("kubectl: no cluster here"),
    ),
    // configs/: the embedded and null targets.
    ("tsload run configs/quickstart.toml", run(Group::Local, "")),
    ("tsload run configs/cpu-only.toml", run(Group::Local, "")),
    (
        "tsload run configs/custom.toml",
        run(Group::Local, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/devops.toml",
        run(Group::Local, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/iot.toml",
        run(Group::Local, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/tdengine-r1.toml",
        How::Skip(
            "TDengine: no server package here (crates/sink-tdengine's server test is #[ignore]d)",
        ),
    ),
    (
        "tsload sweep configs/r1-rtt-sweep.toml --out r1",
        How::Skip(
            "TDengine: its target; the same sweep runs into PostgreSQL below, as its header offers",
        ),
    ),
    // README.md and docs/experiments.md: R1 with kernel netem, in the qemu VM.
    (
        "tsload sweep configs/r1-rtt-sweep.toml",
        How::Skip(
            "TDengine as written; crates/cli/tests/netem_vm.rs runs this sweep against VictoriaMetrics with netem and the proxy, the PostgreSQL run below its flags",
        ),
    ),
    (
        "cargo test -p tsload --test netem_vm",
        How::Skip("boots a kernel under qemu (minutes); `cargo xtask test` runs it"),
    ),
    (
        "cargo test -p tsload --test netem_vm -- --ignored --exact r1_sweeps_in_the_vm_for_results",
        How::Skip("R1's seven delays (x20) in the VM for results/, about 5 minutes"),
    ),
    // InfluxDB.
    (
        "tsload run configs/influxdb.toml",
        run(Group::Influx, "--set load.duration=3s"),
    ),
    (
        "for w in 1 5 10 20 40; do tsload run configs/ctsdb-cpu-only.toml --set load.workers=$w; done",
        run(Group::Influx, "--set load.duration=1s"),
    ),
    (
        "tsload run configs/mixed-influx.toml",
        run(
            Group::Influx,
            "--set load.duration=4s --set query.start_after=2s",
        ),
    ),
    (
        "tsload run configs/r5-queries.toml --set mode=write --set load.workers=10",
        run(Group::Influx, "--set load.duration=3s"),
    ),
    (
        "tsload sweep configs/r5-queries.toml --out r5",
        run(Group::Influx, "--set query.queries=200"),
    ),
    // VictoriaMetrics, with its default retention (one month).
    (
        "tsload run configs/victoriametrics.toml",
        run(Group::Victoria, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/late-duplicates.toml",
        run(Group::Victoria, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/pods.toml",
        run(Group::Victoria, "--set workload.pods_per_host=5"),
    ),
    // QuestDB.
    (
        "tsload run configs/questdb.toml",
        run(Group::Quest, "--set load.duration=3s"),
    ),
    // Prometheus (remote write) and ClickHouse.
    (
        "tsload run configs/prometheus.toml",
        run(Group::Prometheus, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/clickhouse.toml",
        run(Group::ClickHouse, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/shapes.toml",
        run(Group::ClickHouse, "--set workload.insert_rows=200"),
    ),
    // PostgreSQL.
    (
        "tsload run configs/postgres.toml",
        run(Group::Postgres, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/timescaledb.toml",
        run(Group::Timescale, "--set load.duration=3s"),
    ),
    (
        "--set target.kind=\"postgres\" --set target.url=\"postgres://postgres@127.0.0.1:5432/postgres\" --set network.probe=\"app\"",
        How::Run(Run {
            group: Group::Postgres,
            extra: "--set load.duration=1s",
            rewrite: &[],
            setup: &[],
            command: Some("tsload sweep configs/r1-rtt-sweep.toml --out r1 {doc}"),
            exit: 0,
            stderr: "",
        }),
    ),
    // MariaDB, with its default max_connections (151).
    (
        "tsload run configs/mysql.toml",
        run(Group::Maria, "--set load.duration=3s"),
    ),
    (
        "tsload run configs/lindorm-devops.toml --set load.batch=200 --set load.workers=50",
        run(Group::Maria, "--set load.duration=2s"),
    ),
    (
        "tsload run configs/r2-oltp.toml",
        run(Group::Maria, "--set query.duration=3s"),
    ),
    (
        "sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-db=tsload --tables=1 --table-size=10000 --threads=10 --time=60 --rand-type=uniform run",
        How::Run(Run {
            group: Group::Maria,
            extra: "",
            rewrite: &[
                (
                    "--mysql-host=127.0.0.1",
                    "--mysql-host=127.0.0.1 --mysql-port={port}",
                ),
                ("--time=60", "--time=2"),
            ],
            setup: &[],
            command: None,
            exit: 0,
            stderr: "",
        }),
    ),
    (
        "tsload sweep configs/r2-oltp-delay.toml --out r2",
        run(Group::Maria, "--set query.duration=2s"),
    ),
    (
        "tsload sweep configs/r4-grid.toml --out r4",
        How::Run(Run {
            group: Group::Maria,
            extra: "--set load.duration=1s",
            rewrite: &[],
            // As its header says: raise the limit first.
            setup: &["SET GLOBAL max_connections = 300"],
            command: None,
            exit: 0,
            stderr: "",
        }),
    ),
    // Five targets on four servers side by side (TimescaleDB's server is the postgres
    // profile's too).
    (
        "tsload compare configs/r3-compare.toml --out r3 --targets configs/compare/timescaledb.toml,configs/compare/postgres.toml,configs/compare/influxdb.toml,configs/compare/victoriametrics.toml,configs/compare/questdb.toml",
        run(Group::Compare, "--set load.duration=3s"),
    ),
];

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command found in a doc: its text, and where.
#[derive(Debug)]
struct Found {
    text: String,
    place: String,
}

/// The words that start a command in a config header or a doc's code span.
const COMMAND_WORDS: &[&str] = &[
    "tsload", "cargo", "sysbench", "for", "docker", "podman", "kubectl", "mkdir",
];

fn starts_command(s: &str) -> bool {
    let mut words = s.split_whitespace();
    let first = words.next().unwrap_or("");
    // A word alone (`tsload`, `sysbench`) is a name, not a command.
    (COMMAND_WORDS.contains(&first) && words.next().is_some()) || s.starts_with("--set ")
}

/// Cuts a shell comment (` # ...`) off a line.
fn cut_comment(line: &str) -> &str {
    match line.find(" #") {
        Some(i) => line[..i].trim_end(),
        None => line.trim_end(),
    }
}

/// Joins lines ending in `\` with the next ones.
fn join_continued(lines: impl Iterator<Item = (usize, String)>) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, line) in lines {
        let piece = line.trim();
        let (piece, continues) = match piece.strip_suffix('\\') {
            Some(p) => (p.trim_end(), true),
            None => (piece, false),
        };
        if open {
            let last = out.last_mut().expect("a continued line has a first line");
            last.1.push(' ');
            last.1.push_str(piece);
        } else {
            out.push((n, piece.to_string()));
        }
        open = continues;
    }
    out
}

/// The commands of a Markdown file: each line of a ```sh block, and each inline code
/// span that starts with a command word.
fn markdown_commands(name: &str, doc: &str) -> Vec<Found> {
    /// Where the line is: in prose, in a ```sh block (its lines so far), in another
    /// block (sample output).
    enum At {
        Prose,
        Shell(Vec<(usize, String)>),
        Other,
    }
    let mut found = Vec::new();
    let mut at = At::Prose;
    for (i, line) in doc.lines().enumerate() {
        let n = i + 1;
        if let Some(fence) = line.strip_prefix("```") {
            at = match std::mem::replace(&mut at, At::Prose) {
                At::Shell(lines) => {
                    for (n, text) in join_continued(lines.into_iter()) {
                        if !text.is_empty() {
                            found.push(Found {
                                text,
                                place: format!("{name}:{n}"),
                            });
                        }
                    }
                    At::Prose
                }
                At::Other => At::Prose,
                At::Prose if fence.trim() == "sh" => At::Shell(Vec::new()),
                At::Prose => At::Other,
            };
            continue;
        }
        match &mut at {
            At::Shell(lines) => {
                let code = cut_comment(line);
                if code.trim_start().starts_with('#') {
                    continue;
                }
                // An indented line goes on with the line above (a synopsis over lines).
                match lines.last_mut() {
                    Some(last) if code.starts_with(' ') && !last.1.ends_with('\\') => {
                        last.1.push_str(" \\");
                    }
                    _ => {}
                }
                lines.push((n, code.to_string()));
            }
            At::Other => {}
            At::Prose => {
                for (k, span) in line.split('`').enumerate() {
                    if k % 2 == 1 && starts_command(span) && !span.starts_with("--set ") {
                        found.push(Found {
                            text: span.to_string(),
                            place: format!("{name}:{n}"),
                        });
                    }
                }
            }
        }
    }
    found
}

/// The commands in a config's header comment: lines indented under `#` by three spaces
/// or more that start with a command word, continuation lines joined.
fn config_commands(name: &str, config: &str) -> Vec<Found> {
    let header = config
        .lines()
        .enumerate()
        .take_while(|(_, l)| l.starts_with('#') || l.is_empty());
    let mut lines = Vec::new();
    let mut open = false;
    for (i, line) in header {
        let body = line.trim_start_matches('#');
        let indented = body.starts_with("   ");
        let code = body.trim();
        if open || (indented && starts_command(code)) {
            lines.push((i + 1, code.to_string()));
            open = code.ends_with('\\');
        }
    }
    join_continued(lines.into_iter())
        .into_iter()
        .map(|(n, text)| Found {
            text,
            place: format!("{name}:{n}"),
        })
        .collect()
}

/// Every command in README.md, docs/*.md and the headers of configs/**/*.toml.
fn documented_commands() -> Vec<Found> {
    let root = root();
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut found = markdown_commands("README.md", &read(&root.join("README.md")));
    let files = |dir: &str, ext: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = walk(&root.join(dir))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    };
    for p in files("docs", "md") {
        let name = p.strip_prefix(&root).unwrap().display().to_string();
        found.extend(markdown_commands(&name, &read(&p)));
    }
    for p in files("configs", "toml") {
        let name = p.strip_prefix(&root).unwrap().display().to_string();
        found.extend(config_commands(&name, &read(&p)));
    }
    found
}

/// The files under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = entry.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn every_documented_command_is_in_the_table_and_every_entry_in_the_docs() {
    let found = documented_commands();
    // What cannot run here, named in the test's output.
    for (doc, how) in DOC_COMMANDS {
        if let How::Skip(why) = how {
            eprintln!("skipped `{doc}`: {why}");
        }
    }
    let known: BTreeSet<&str> = DOC_COMMANDS.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        known.len(),
        DOC_COMMANDS.len(),
        "an entry is in DOC_COMMANDS twice"
    );
    let unknown: Vec<String> = found
        .iter()
        .filter(|f| !known.contains(f.text.as_str()))
        .map(|f| format!("  {}: {}", f.place, f.text))
        .collect();
    let seen: BTreeSet<&str> = found.iter().map(|f| f.text.as_str()).collect();
    let stale: Vec<&str> = known
        .iter()
        .filter(|t| !seen.contains(*t))
        .copied()
        .collect();
    assert!(
        unknown.is_empty() && stale.is_empty(),
        "the docs and this test's DOC_COMMANDS disagree.\n\
         Documented commands with no entry (add one saying how to run it):\n{}\n\
         Entries no doc gives any more (remove them):\n  {}",
        unknown.join("\n"),
        stale.join("\n  ")
    );
}

#[test]
fn every_synopsis_and_mention_names_real_subcommands_and_flags() {
    let mut wrong = Vec::new();
    for (doc, how) in DOC_COMMANDS {
        if !matches!(how, How::Synopsis | How::Mention) {
            continue;
        }
        for alternative in synopsis_alternatives(doc) {
            let help = help_of(&alternative.subcommand);
            let Some(help) = help else {
                wrong.push(format!(
                    "`{doc}`: `tsload {} --help` fails",
                    alternative.subcommand.join(" ")
                ));
                continue;
            };
            for flag in &alternative.flags {
                let listed = help
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .any(|w| w == flag);
                if !listed {
                    wrong.push(format!(
                        "`{doc}`: `{flag}` is not an option of `tsload {}`",
                        alternative.subcommand.join(" ")
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One subcommand a synopsis line describes and the flags it names.
struct Alternative {
    subcommand: Vec<String>,
    flags: Vec<String>,
}

/// A synopsis split at `|` between subcommands (`netem show|clear`, `probe icmp ... | tcp
/// ...`): the subcommand words (lower-case words before the first placeholder or flag)
/// and the `-x`/`--flag` words.
fn synopsis_alternatives(doc: &str) -> Vec<Alternative> {
    let words: Vec<&str> = doc.split_whitespace().skip(1).collect();
    let mut subcommand = Vec::new();
    let mut rest = &words[..];
    while let Some((w, tail)) = rest.split_first() {
        if w.chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c == '|')
            && !w.starts_with('-')
        {
            subcommand.push(*w);
            rest = tail;
        } else {
            break;
        }
    }
    let flags_of = |ws: &[&str]| -> Vec<String> {
        ws.iter()
            .flat_map(|w| w.split(['[', ']', '|', '=']))
            .filter(|w| w.starts_with('-') && w.len() > 1 && *w != "--")
            .map(|w| w.trim_end_matches("...").to_string())
            .collect()
    };
    // `probe icmp ADDR ... | tcp ADDR:PORT | app URL [--json FILE]`: alternatives after
    // the first subcommand word, each with the flags up to the next `|`.
    if subcommand.len() >= 2 && rest.contains(&"|") {
        let parent = subcommand[..subcommand.len() - 1]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        let mut alts = Vec::new();
        let mut current = vec![*subcommand.last().unwrap()];
        for w in rest {
            if *w == "|" {
                alts.push(current);
                current = Vec::new();
            } else {
                current.push(*w);
            }
        }
        alts.push(current);
        // Flags after the last alternative's own words apply to all (`[--json FILE]`).
        let shared = flags_of(alts.last().unwrap());
        return alts
            .into_iter()
            .map(|a| {
                let mut flags = flags_of(&a[1..]);
                flags.extend(shared.iter().cloned());
                flags.dedup();
                let mut sub = parent.clone();
                sub.push(a[0].to_string());
                Alternative {
                    subcommand: sub,
                    flags,
                }
            })
            .collect();
    }
    let flags = flags_of(rest);
    // `netem show|clear`: one alternative per name.
    let last = subcommand.pop().unwrap_or("");
    last.split('|')
        .filter(|s| !s.is_empty())
        .map(|name| {
            let mut sub: Vec<String> = subcommand.iter().map(|s| s.to_string()).collect();
            sub.push(name.to_string());
            Alternative {
                subcommand: sub,
                flags: flags.clone(),
            }
        })
        .collect()
}

/// `tsload SUBCOMMAND --help`, or `None` when it fails.
fn help_of(subcommand: &[String]) -> Option<String> {
    let out = common::tsload()
        .args(subcommand)
        .arg("--help")
        .output()
        .unwrap();
    out.status.success().then(|| text(&out.stdout))
}

/// A group's servers, started with their default settings.
struct Servers {
    list: Vec<Server>,
}

impl Servers {
    fn start(group: Group) -> Servers {
        let kinds: &[ServerKind] = match group {
            Group::Local => &[],
            Group::Influx => &[ServerKind::InfluxDb1],
            Group::Victoria => &[ServerKind::VictoriaMetrics],
            Group::Quest => &[ServerKind::QuestDb],
            Group::Postgres => &[ServerKind::Postgres],
            Group::Timescale => &[ServerKind::TimescaleDb],
            Group::Maria => &[ServerKind::MariaDb],
            Group::Prometheus => &[ServerKind::Prometheus],
            Group::ClickHouse => &[ServerKind::ClickHouse],
            Group::Compare => &[
                ServerKind::TimescaleDb,
                ServerKind::InfluxDb1,
                ServerKind::VictoriaMetrics,
                ServerKind::QuestDb,
            ],
        };
        let list = kinds
            .iter()
            .map(|&kind| {
                let server = match kind {
                    // Its default retention: one month.
                    ServerKind::VictoriaMetrics => {
                        Server::start_with(kind, &[("retentionPeriod", "1")])
                    }
                    _ => Server::start(kind),
                }
                .unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"));
                match kind {
                    // Debian's cluster has the superuser `postgres`; the configs log in as it.
                    ServerKind::Postgres | ServerKind::TimescaleDb => {
                        server.sql("CREATE ROLE postgres SUPERUSER LOGIN").unwrap();
                    }
                    // Debian's MariaDB has no database `tsload`.
                    ServerKind::MariaDb => {
                        server.sql("DROP DATABASE tsload").unwrap();
                    }
                    _ => {}
                }
                server
            })
            .collect();
        Servers { list }
    }

    /// The documented default address of each server, and the testbed's.
    fn addresses(&self) -> Vec<(String, String)> {
        let mut map = Vec::new();
        for s in &self.list {
            let default = match s.kind() {
                ServerKind::InfluxDb1 => "127.0.0.1:8086",
                ServerKind::VictoriaMetrics => "127.0.0.1:8428",
                ServerKind::QuestDb => "127.0.0.1:9000",
                ServerKind::Postgres | ServerKind::TimescaleDb => "127.0.0.1:5432",
                ServerKind::MariaDb => "127.0.0.1:3306",
                ServerKind::Prometheus => "127.0.0.1:9090",
                ServerKind::ClickHouse => "127.0.0.1:8123",
            };
            map.push((default.to_string(), s.addr().to_string()));
        }
        map
    }

    /// Debian's data directories the compare profiles name, and the testbed's.
    fn data_dirs(&self) -> Vec<(String, String)> {
        let mut map = Vec::new();
        for s in &self.list {
            let debian = match s.kind() {
                ServerKind::InfluxDb1 => "/var/lib/influxdb",
                ServerKind::VictoriaMetrics => "/var/lib/victoria-metrics",
                ServerKind::Postgres | ServerKind::TimescaleDb => "/var/lib/postgresql/15/main",
                ServerKind::QuestDb
                | ServerKind::MariaDb
                | ServerKind::Prometheus
                | ServerKind::ClickHouse => continue,
            };
            map.push((
                format!("\"{debian}\""),
                format!("\"{}\"", s.data_dir().display()),
            ));
        }
        map
    }
}

/// Copies `configs/` into `dir`, the default addresses (and data dirs) rewritten.
fn copy_configs(dir: &Path, replace: &[(String, String)]) {
    let from = root().join("configs");
    for p in walk(&from) {
        let to = dir.join("configs").join(p.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let mut s = std::fs::read_to_string(&p).unwrap();
        for (a, b) in replace {
            s = s.replace(a, b);
        }
        std::fs::write(&to, s).unwrap();
    }
}

/// Runs the group's documented commands in table order; returns what went wrong.
fn run_group(group: Group) -> Vec<String> {
    let servers = Servers::start(group);
    let dir = tempfile::tempdir().unwrap();
    let mut replace = servers.addresses();
    replace.extend(servers.data_dirs());
    copy_configs(dir.path(), &replace);
    let reports = dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let bin = env!("CARGO_BIN_EXE_tsload");
    let mut wrong = Vec::new();
    for (doc, how) in DOC_COMMANDS {
        let How::Run(r) = how else { continue };
        if r.group != group {
            continue;
        }
        let port = servers
            .list
            .first()
            .map(|s| s.addr().port().to_string())
            .unwrap_or_default();
        for sql in r.setup {
            servers.list[0]
                .sql(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let mut command = r.command.unwrap_or("{doc}").replace("{doc}", doc);
        for (a, b) in r.rewrite {
            command = command.replace(a, &b.replace("{port}", &port));
        }
        for (a, b) in &replace {
            command = command.replace(a, b);
        }
        // `tsload` is the binary under test; each `run` also writes its JSON report.
        let script = format!(
            "n=0\n\
             tsload() {{\n\
               if [ \"$1\" = run ]; then n=$((n+1)); set -- \"$@\" --json \"$TSLOAD_REPORTS/run-$n.json\"; fi\n\
               \"$TSLOAD_BIN\" \"$@\" $TSLOAD_EXTRA\n\
             }}\n\
             {command}\n"
        );
        let started = std::time::Instant::now();
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .env("TSLOAD_BIN", bin)
            .env("TSLOAD_REPORTS", &reports)
            .env("TSLOAD_EXTRA", r.extra)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        eprintln!(
            "{group:?}: `{doc}`: exit {:?} in {:.1} s",
            out.status.code(),
            started.elapsed().as_secs_f64()
        );
        if out.status.code() != Some(r.exit) || !text(&out.stderr).contains(r.stderr) {
            wrong.push(format!(
                "`{doc}` (run as `{command}` + `{}`): exit {:?}, expected {}{}\nstderr:\n{}",
                r.extra,
                out.status.code(),
                r.exit,
                if r.stderr.is_empty() {
                    String::new()
                } else {
                    format!(" naming `{}`", r.stderr)
                },
                tail(&text(&out.stderr), 30)
            ));
        }
        // Every run report written since: the server stored what it reports.
        for p in walk(dir.path()) {
            if p.extension().is_some_and(|e| e == "json")
                && let Some(problem) = stored_problem(&p)
            {
                wrong.push(format!("`{doc}`: {}: {problem}", p.display()));
            }
        }
        // Each report is checked once.
        for p in walk(dir.path()) {
            if p.extension().is_some_and(|e| e == "json") {
                let mut done = p.clone().into_os_string();
                done.push(".checked");
                std::fs::rename(&p, done).unwrap();
            }
        }
    }
    wrong
}

/// Why a run report's figures are not what its server stored, if they are not (`None`
/// also for JSON that is not a write run's report).
fn stored_problem(path: &Path) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let r: serde_json::Value = serde_json::from_str(&s).ok()?;
    let rows = r.get("rows")?.as_u64()?;
    // A query run's report: rows read, nothing stored.
    if r.get("statements").is_some() {
        return None;
    }
    let target = r.get("target")?;
    if rows == 0 || target.is_null() || target == "null" || target["kind"] == "null" {
        return None;
    }
    if let Some(shortfall) = r.get("stored_shortfall") {
        return Some(format!("shortfall: {shortfall}"));
    }
    let stored = r.get("stored").filter(|s| !s.is_null());
    let Some(stored) = stored else {
        return Some(format!(
            "no `stored` block: the server's own count is missing (target {target})"
        ));
    };
    if let Some(n) = stored.get("rows").and_then(|v| v.as_u64())
        && n != rows
    {
        return Some(format!("reported {rows} rows, the server stored {n}"));
    }
    if let Some(n) = stored.get("samples").and_then(|v| v.as_u64()) {
        let metrics = r["metrics"].as_u64().unwrap_or(0);
        if n != metrics {
            return Some(format!(
                "reported {metrics} metrics, the server stored {n} samples"
            ));
        }
    }
    if stored.get("rows").is_none() && stored.get("samples").is_none() {
        return Some(format!("`stored` holds no count: {stored}"));
    }
    None
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn check(group: Group) {
    let wrong = run_group(group);
    assert!(
        wrong.is_empty(),
        "documented commands that failed:\n\n{}",
        wrong.join("\n\n")
    );
}

#[test]
fn documented_commands_run_locally() {
    check(Group::Local);
}

#[test]
fn documented_commands_run_against_influxdb() {
    check(Group::Influx);
}

#[test]
fn documented_commands_run_against_victoriametrics() {
    check(Group::Victoria);
}

#[test]
fn documented_commands_run_against_questdb() {
    check(Group::Quest);
}

#[test]
fn documented_commands_run_against_postgres() {
    check(Group::Postgres);
}

#[test]
fn documented_commands_run_against_timescaledb() {
    check(Group::Timescale);
}

#[test]
fn documented_commands_run_against_mariadb() {
    check(Group::Maria);
}

#[test]
fn documented_commands_run_against_prometheus() {
    check(Group::Prometheus);
}

#[test]
fn documented_commands_run_against_clickhouse() {
    check(Group::ClickHouse);
}

#[test]
fn documented_compare_runs_against_timescaledb_and_three_other_servers() {
    check(Group::Compare);
}
