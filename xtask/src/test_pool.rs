//! Runs the workspace's tests side by side: cargo builds every test binary once
//! (`--no-run`), then the binaries are started directly, a few at a time, the slowest of
//! the last round first, and each one's output is printed whole when it ends.
//!
//! `cargo test` runs one binary after another, so a round lasted as long as the sum of all
//! of them (12-14 minutes here) although most of that time the tests wait on servers,
//! sleeps and the netem VM rather than use the CPU. Each binary still runs as cargo would
//! run it (its package root as working directory, cargo's package variables, libtest's
//! own threads inside), so what a test shares with the tests of its own binary is
//! unchanged; binaries never shared anything but the machine.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::Counts;

/// One thing a round runs: a test binary, or a cargo command (the doc tests).
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// How cargo names it: `tsload tests/docs.rs`, `tsload_core src/lib.rs`.
    pub(crate) label: String,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Job {
    /// A cargo command run as one job (cargo's own output included).
    pub(crate) fn cargo(label: &str, args: &[&str]) -> Job {
        Job {
            label: label.to_string(),
            program: PathBuf::from("cargo"),
            args: args.iter().map(ToString::to_string).collect(),
            dir: PathBuf::from("."),
            env: Vec::new(),
        }
    }

    fn command_line(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// Builds the test binaries of `cargo ARGS --no-run` (ARGS: `test ...`, without libtest
/// arguments) and returns one job per binary cargo would run, each given `test_args`
/// (libtest's arguments: filters, `--skip`). `suffix` tells two builds of one target apart
/// in the labels (e.g. ` (no default features)`).
pub(crate) fn build(args: &[&str], test_args: &[&str], suffix: &str) -> anyhow::Result<Vec<Job>> {
    use std::io::BufRead as _;
    eprintln!("$ cargo {} --no-run", args.join(" "));
    let mut child = Command::new("cargo")
        .args(args)
        .args(["--no-run", "--message-format=json-render-diagnostics"])
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start cargo")?;
    let stdout = child.stdout.take().context("cargo's output")?;
    let mut jobs = Vec::new();
    let mut library_dirs: Vec<String> = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's messages")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            // Not a message (a build script's stray output): cargo prints it as it is.
            println!("{line}");
            continue;
        };
        match message["reason"].as_str() {
            Some("build-script-executed") => {
                // `native=/path`: where a build script put a library to link, which
                // cargo adds to the dynamic loader's path when it runs a test.
                for path in message["linked_paths"].as_array().into_iter().flatten() {
                    if let Some(p) = path.as_str() {
                        let dir = p.split_once('=').map_or(p, |(_, dir)| dir);
                        library_dirs.push(dir.to_string());
                    }
                }
            }
            Some("compiler-artifact") => {
                if let Some(job) = test_binary(&message, test_args, suffix)? {
                    jobs.push(job);
                }
            }
            _ => {}
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!("`cargo {} --no-run` failed with {status}", args.join(" "));
    }
    if let Some(deps) = jobs.first().and_then(|j| j.program.parent()) {
        library_dirs.push(deps.display().to_string());
    }
    let mut loader_path = library_dirs.join(":");
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        loader_path.push(':');
        loader_path.push_str(&old.to_string_lossy());
    }
    for job in &mut jobs {
        job.env
            .push(("LD_LIBRARY_PATH".to_string(), loader_path.clone()));
    }
    Ok(jobs)
}

/// The job for one `compiler-artifact` message, if cargo test would run what it built:
/// an executable built in test mode (benchmarks too: criterion runs each once when not
/// given `--bench`), not an example (built, never run, by `cargo test --all-targets`).
fn test_binary(
    message: &serde_json::Value,
    test_args: &[&str],
    suffix: &str,
) -> anyhow::Result<Option<Job>> {
    let Some(executable) = message["executable"].as_str() else {
        return Ok(None);
    };
    let kinds: Vec<&str> = message["target"]["kind"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    if message["profile"]["test"].as_bool() != Some(true) || kinds.contains(&"example") {
        return Ok(None);
    }
    let manifest = message["manifest_path"]
        .as_str()
        .context("a compiler-artifact message without manifest_path")?;
    let dir = Path::new(manifest)
        .parent()
        .context("a manifest path without a directory")?
        .to_path_buf();
    let package_id = message["package_id"].as_str().unwrap_or_default();
    let (name, version) = package_name_and_version(package_id, &dir);
    let source = message["target"]["src_path"].as_str().unwrap_or_default();
    let source = Path::new(source)
        .strip_prefix(&dir)
        .map_or_else(|_| source.to_string(), |p| p.display().to_string());
    Ok(Some(Job {
        label: format!("{name}{suffix} {source}"),
        program: PathBuf::from(executable),
        args: test_args.iter().map(ToString::to_string).collect(),
        env: vec![
            ("CARGO_MANIFEST_DIR".to_string(), dir.display().to_string()),
            ("CARGO_PKG_NAME".to_string(), name),
            ("CARGO_PKG_VERSION".to_string(), version),
        ],
        dir,
    }))
}

/// Name and version from a cargo package id: `path+file:///w/crates/cli#tsload@0.1.0`,
/// or `path+file:///w/xtask#0.1.0` where the name is the directory's.
fn package_name_and_version(id: &str, dir: &Path) -> (String, String) {
    let fragment = id.rsplit_once('#').map_or("", |(_, f)| f);
    match fragment.split_once('@') {
        Some((name, version)) => (name.to_string(), version.to_string()),
        None => (
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            fragment.to_string(),
        ),
    }
}

/// What one round found.
#[derive(Debug, Default)]
pub(crate) struct Round {
    pub(crate) counts: Counts,
    /// Labels of the jobs that failed (non-zero exit, or killed at the time limit).
    pub(crate) failed: Vec<String>,
    /// Each job's wall time, slowest first.
    pub(crate) times: Vec<(String, Duration)>,
}

struct Running {
    job: Job,
    child: Child,
    log: PathBuf,
    started: Instant,
}

/// Runs `jobs`, at most `parallel` at once, the slowest of the last round (`history`,
/// seconds by label) first and those with no history before them. Every job runs even
/// after one fails. Past `timeout` every job still running is killed (its process group:
/// the servers it started too) and counted as failed. Logs go to `log_dir`.
pub(crate) fn run(
    mut jobs: Vec<Job>,
    parallel: usize,
    timeout: Duration,
    history: &HashMap<String, f64>,
    log_dir: &Path,
) -> anyhow::Result<Round> {
    use std::os::unix::process::CommandExt as _;
    std::fs::create_dir_all(log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    let expected = |j: &Job| history.get(&j.label).copied().unwrap_or(f64::INFINITY);
    // Longest first; a stable sort keeps cargo's order among equals.
    jobs.sort_by(|a, b| expected(b).total_cmp(&expected(a)));
    let mut pending = jobs.into_iter();
    let mut running: Vec<Running> = Vec::new();
    let mut round = Round::default();
    let deadline = Instant::now() + timeout;
    loop {
        let past_deadline = Instant::now() >= deadline;
        if past_deadline {
            // Jobs not started by then are not run: the round has failed already.
            for job in pending.by_ref() {
                round
                    .failed
                    .push(format!("{} (not started: time limit)", job.label));
            }
        }
        while running.len() < parallel.max(1) {
            let Some(job) = pending.next() else { break };
            let log = log_dir.join(format!("{}.log", file_name(&job.label)));
            let file = std::fs::File::create(&log)
                .with_context(|| format!("creating {}", log.display()))?;
            let child = Command::new(&job.program)
                .args(&job.args)
                .current_dir(&job.dir)
                .envs(job.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(file.try_clone().context("sharing a log file")?)
                .stderr(file)
                .process_group(0)
                .spawn()
                .with_context(|| format!("cannot start {}", job.command_line()))?;
            running.push(Running {
                job,
                child,
                log,
                started: Instant::now(),
            });
        }
        if running.is_empty() {
            break;
        }
        let mut i = 0;
        while i < running.len() {
            let status = running[i]
                .child
                .try_wait()
                .with_context(|| format!("waiting for {}", running[i].job.label))?;
            let status = match status {
                Some(status) => Some(status),
                None if past_deadline => {
                    // Negative pid: the job's process group.
                    let _ = Command::new("kill")
                        .args(["-KILL", "--", &format!("-{}", running[i].child.id())])
                        .status();
                    let _ = running[i].child.wait();
                    println!(
                        "{}: still running after {} minutes: killed (a hung test?)",
                        running[i].job.label,
                        timeout.as_secs() / 60
                    );
                    None
                }
                None => {
                    i += 1;
                    continue;
                }
            };
            let done = running.swap_remove(i);
            let elapsed = done.started.elapsed();
            let ok = status.is_some_and(|s| s.success());
            let output = read_log(&done.log);
            println!(
                "\n──── {} ({}): {} in {:.1} s",
                done.job.label,
                done.job.command_line(),
                if ok { "ok" } else { "FAILED" },
                elapsed.as_secs_f64()
            );
            for line in output.lines() {
                println!("{line}");
                if let Some(c) = Counts::parse(line) {
                    round.counts.add(c);
                }
            }
            if !ok {
                round.failed.push(done.job.label.clone());
            }
            round.times.push((done.job.label, elapsed));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    round.times.sort_by_key(|t| std::cmp::Reverse(t.1));
    Ok(round)
}

fn read_log(path: &Path) -> String {
    let mut bytes = Vec::new();
    match std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)) {
        Ok(_) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// A label as a file name: `tsload tests/docs.rs` -> `tsload_tests_docs.rs`.
fn file_name(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The last round's wall time per job, from `path` (`SECONDS<TAB>LABEL` lines); empty
/// when there is none yet (a fresh clone: jobs then start in cargo's order).
pub(crate) fn read_history(path: &Path) -> HashMap<String, f64> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return HashMap::new();
    };
    text.lines()
        .filter_map(|l| {
            let (seconds, label) = l.split_once('\t')?;
            Some((label.to_string(), seconds.parse().ok()?))
        })
        .collect()
}

/// Adds `times` to the history at `path` (a job not run this round keeps its last time,
/// so a round of a few binaries does not lose the order of the others).
pub(crate) fn update_history(path: &Path, times: &[(String, Duration)]) -> anyhow::Result<()> {
    let mut history: Vec<(String, f64)> = read_history(path).into_iter().collect();
    history.retain(|(label, _)| !times.iter().any(|(l, _)| l == label));
    history.extend(times.iter().map(|(l, t)| (l.clone(), t.as_secs_f64())));
    history.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let text: String = history
        .iter()
        .map(|(label, seconds)| format!("{seconds:.1}\t{label}\n"))
        .collect();
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_ids_give_name_and_version_in_both_forms() {
        let dir = Path::new("/w/xtask");
        assert_eq!(
            package_name_and_version("path+file:///w/crates/cli#tsload@0.1.0", dir),
            ("tsload".to_string(), "0.1.0".to_string())
        );
        assert_eq!(
            package_name_and_version("path+file:///w/xtask#0.1.0", dir),
            ("xtask".to_string(), "0.1.0".to_string())
        );
    }

    #[test]
    fn only_test_mode_executables_that_are_not_examples_are_jobs() {
        let artifact = |kind: &str, test: bool, exe: Option<&str>| {
            serde_json::json!({
                "reason": "compiler-artifact",
                "package_id": "path+file:///w/crates/cli#tsload@0.1.0",
                "manifest_path": "/w/crates/cli/Cargo.toml",
                "target": {"kind": [kind], "name": "docs", "src_path": "/w/crates/cli/tests/docs.rs"},
                "profile": {"test": test},
                "executable": exe,
            })
        };
        let job = test_binary(
            &artifact("test", true, Some("/w/target/debug/deps/docs-1")),
            &["--skip", "x"],
            "",
        )
        .unwrap()
        .unwrap();
        assert_eq!(job.label, "tsload tests/docs.rs");
        assert_eq!(job.dir, Path::new("/w/crates/cli"));
        assert_eq!(job.args, ["--skip", "x"]);
        assert!(job.env.contains(&(
            "CARGO_MANIFEST_DIR".to_string(),
            "/w/crates/cli".to_string()
        )));
        for (kind, test, exe) in [
            ("example", true, Some("/w/target/debug/examples/t-1")),
            ("bin", false, Some("/w/target/debug/tsload")),
            ("lib", true, None),
        ] {
            assert!(
                test_binary(&artifact(kind, test, exe), &[], "")
                    .unwrap()
                    .is_none(),
                "{kind} test={test} {exe:?}"
            );
        }
    }

    #[test]
    fn jobs_start_unknown_first_then_slowest_of_the_last_round_first() {
        let dir = tempfile_dir();
        let job = |label: &str| Job {
            label: label.to_string(),
            program: PathBuf::from("sh"),
            args: vec!["-c".to_string(), format!("echo {label} >> order")],
            dir: dir.clone(),
            env: Vec::new(),
        };
        let history: HashMap<String, f64> =
            [("fast".to_string(), 1.0), ("slow".to_string(), 200.0)].into();
        let jobs = vec![job("fast"), job("slow"), job("new")];
        run(
            jobs,
            1,
            Duration::from_secs(60),
            &history,
            &dir.join("logs"),
        )
        .unwrap();
        let order = std::fs::read_to_string(dir.join("order")).unwrap();
        assert_eq!(order, "new\nslow\nfast\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn history_keeps_what_a_round_did_not_run() {
        let dir = tempfile_dir();
        let path = dir.join("times.tsv");
        assert!(read_history(&path).is_empty());
        update_history(
            &path,
            &[
                (
                    "tsload tests/netem_vm.rs".to_string(),
                    Duration::from_secs(212),
                ),
                (
                    "tsload tests/docs.rs".to_string(),
                    Duration::from_millis(97_040),
                ),
            ],
        )
        .unwrap();
        assert_eq!(read_history(&path)["tsload tests/docs.rs"], 97.0);
        // A later round of one binary changes its time and keeps the other's.
        update_history(
            &path,
            &[("tsload tests/docs.rs".to_string(), Duration::from_secs(50))],
        )
        .unwrap();
        let history = read_history(&path);
        assert_eq!(history.len(), 2);
        assert_eq!(history["tsload tests/netem_vm.rs"], 212.0);
        assert_eq!(history["tsload tests/docs.rs"], 50.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_job_runs_after_a_failure_and_counts_add_up() {
        let dir = tempfile_dir();
        let script = |label: &str, body: &str| Job {
            label: label.to_string(),
            program: PathBuf::from("sh"),
            args: vec!["-c".to_string(), body.to_string()],
            dir: dir.clone(),
            env: Vec::new(),
        };
        let jobs = vec![
            script("a", "echo 'test result: ok. 3 passed; 0 failed; 1 ignored'"),
            script(
                "b",
                "echo 'test result: FAILED. 1 passed; 2 failed; 0 ignored'; exit 101",
            ),
            script("c", "echo 'test result: ok. 5 passed; 0 failed; 0 ignored'"),
        ];
        let round = run(
            jobs,
            2,
            Duration::from_secs(60),
            &HashMap::new(),
            &dir.join("logs"),
        )
        .unwrap();
        assert_eq!(
            (
                round.counts.passed,
                round.counts.failed,
                round.counts.ignored
            ),
            (9, 2, 1)
        );
        assert_eq!(round.failed, ["b"]);
        assert_eq!(round.times.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_job_past_the_time_limit_is_killed_with_its_children_and_fails() {
        let dir = tempfile_dir();
        let started = Instant::now();
        let jobs = vec![Job {
            label: "hung".to_string(),
            program: PathBuf::from("sh"),
            // A child of the job (as a server is a test's) must die with it.
            args: vec![
                "-c".to_string(),
                "sleep 300 & echo $! > child.pid; wait".to_string(),
            ],
            dir: dir.clone(),
            env: Vec::new(),
        }];
        let round = run(
            jobs,
            1,
            Duration::from_secs(1),
            &HashMap::new(),
            &dir.join("logs"),
        )
        .unwrap();
        assert_eq!(round.failed, ["hung"]);
        assert!(started.elapsed() < Duration::from_secs(60));
        let pid = std::fs::read_to_string(dir.join("child.pid")).unwrap();
        let alive = Path::new("/proc").join(pid.trim()).join("stat");
        // A killed child may linger as a zombie until its parent (gone) is reaped by init.
        let state = std::fs::read_to_string(&alive).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "the job's child survived it: {state}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "xtask-test-pool-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
