//! `run --shard I/N`, `--start-at` and `--barrier`: which part of a run split over several
//! generator processes this one runs, the budgets and rates it takes, and the start gate
//! (a wall-clock instant, or a directory the shards share) that lines them up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::Args;
use tsload_core::shard::{Gate, GateFuture, Shard, StartGate};

use tsload_scenario::plan::{DEFAULT_BARRIER_TIMEOUT, Plan, ShardRun};

/// The environment variables that name a shard (the flag wins over them).
pub const ENV_INDEX: &str = "TSLOAD_SHARD_INDEX";
pub const ENV_COUNT: &str = "TSLOAD_SHARD_COUNT";
/// Set by Kubernetes in each pod of an Indexed Job; used with `TSLOAD_SHARD_COUNT`.
pub const ENV_JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// How far ahead of the last shard's arrival the barrier's shard 0 sets the start.
const START_MARGIN: Duration = Duration::from_millis(500);
/// How often a waiting shard looks at the barrier directory.
const POLL: Duration = Duration::from_millis(50);

#[derive(Args, Debug, Default)]
pub struct ShardArgs {
    /// Run part I of N of the workload (counted from 0), e.g. `--shard 1/4`; also
    /// TSLOAD_SHARD_INDEX and TSLOAD_SHARD_COUNT, or JOB_COMPLETION_INDEX (Kubernetes
    /// Indexed Job) with TSLOAD_SHARD_COUNT. Merge the shards' --json reports with
    /// `tsload merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Start the timed load at this wall-clock instant (RFC 3339, e.g.
    /// 2026-11-24T18:00:00Z), so that every shard measures the same window.
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// A directory all shards share (a fresh one per run): shard 0 prepares the target
    /// first, then every shard prepares and connects, and all start together.
    #[arg(long, value_name = "DIR")]
    barrier: Option<PathBuf>,
    /// How long a shard waits at the barrier for the others, e.g. `10m` (the default).
    #[arg(long, value_name = "DURATION")]
    barrier_timeout: Option<String>,
}

impl ShardArgs {
    /// The shard and start settings from the flags and the environment.
    pub fn resolve(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<ShardRun, String> {
        let shard = match &self.shard {
            Some(text) => Shard::parse(text).map_err(|e| format!("--shard: {e}"))?,
            None => shard_from_env(env)?,
        };
        let start_at = match &self.start_at {
            None => None,
            Some(t) => Some(humantime::parse_rfc3339_weak(t).map_err(|e| {
                format!(
                    "--start-at {t}: {e}; expected an RFC 3339 time such as 2026-11-24T18:00:00Z"
                )
            })?),
        };
        let barrier_timeout = match &self.barrier_timeout {
            None => DEFAULT_BARRIER_TIMEOUT,
            Some(t) => humantime::parse_duration(t)
                .ok()
                .filter(|d| !d.is_zero() && *d <= Duration::from_secs(7 * 86_400))
                .ok_or_else(|| {
                    format!(
                        "--barrier-timeout {t}: expected a duration from 1ms to 7 days, e.g. 10m"
                    )
                })?,
        };
        if self.barrier_timeout.is_some() && self.barrier.is_none() {
            return Err("--barrier-timeout needs --barrier DIR".into());
        }
        Ok(ShardRun {
            shard,
            start_at,
            barrier: self.barrier.clone(),
            barrier_timeout,
        })
    }
}

/// The shard the environment names, or the whole run.
fn shard_from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, String> {
    let count = env(ENV_COUNT);
    let index = env(ENV_INDEX).map(|v| (ENV_INDEX, v)).or_else(|| {
        // An Indexed Job's index means a shard only where the count is given too.
        count.as_ref()?;
        env(ENV_JOB_INDEX).map(|v| (ENV_JOB_INDEX, v))
    });
    match (index, count) {
        (None, None) => Ok(Shard::WHOLE),
        (Some((name, _)), None) => Err(format!(
            "{name} is set but {ENV_COUNT} is not: set both (or --shard I/N)"
        )),
        (None, Some(_)) => Err(format!(
            "{ENV_COUNT} is set but neither {ENV_INDEX} nor {ENV_JOB_INDEX} is: set the index too (or --shard I/N)"
        )),
        (Some((name, i)), Some(n)) => Shard::parse(&format!("{}/{}", i.trim(), n.trim()))
            .map_err(|e| format!("{name} and {ENV_COUNT}: {e}")),
    }
}

/// The plan this process runs: its shares of the budgets and rates
/// ([`tsload_scenario::shard::share`]) and the start gates (one per stream: a query run's
/// preload and its queries each start together).
pub fn split(plan: &Plan, run: &ShardRun) -> Plan {
    let mut p = tsload_scenario::shard::share(plan, run.shard);
    let shard = run.shard;
    let scenario = plan.scenario_sha256();
    let gate = |phase: &str| -> Gate {
        match (&run.barrier, run.start_at) {
            (Some(dir), start_at) => Gate::new(Arc::new(FileBarrier {
                dir: dir.clone(),
                shard,
                phase: phase.to_string(),
                start_at,
                timeout: run.barrier_timeout,
                scenario: scenario.clone(),
            })),
            (None, Some(at)) => Gate::new(Arc::new(StartAt(at))),
            (None, None) => Gate::default(),
        }
    };
    p.load.keep_raw_latencies = plan.output.raw_latencies.is_some();
    p.load.gate = gate("write");
    if let Some(q) = &mut p.query {
        q.config.gate = gate("query");
    }
    p
}

/// Sleeps until `at`; an instant already past is an error (the shards would not start
/// together).
async fn sleep_until(at: SystemTime, what: &str) -> Result<(), String> {
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            tokio::time::sleep(wait).await;
            Ok(())
        }
        Err(e) => Err(format!(
            "{what} {} was {:.3} s ago when this shard was ready to start: give a later time",
            humantime::format_rfc3339_millis(at),
            e.duration().as_secs_f64()
        )),
    }
}

/// `--start-at` alone: every shard starts its clock at the same wall-clock instant.
struct StartAt(SystemTime);

impl StartGate for StartAt {
    fn before_prepare(&self) -> GateFuture<'_> {
        Box::pin(async { Ok(()) })
    }

    fn after_prepare(&self) -> GateFuture<'_> {
        Box::pin(async { Ok(()) })
    }

    fn before_start(&self) -> GateFuture<'_> {
        Box::pin(sleep_until(self.0, "--start-at"))
    }
}

/// The barrier through a shared directory, per stream (`phase`):
/// - shard 0 checks that the directory holds nothing of this phase (a stale run would
///   otherwise let the others through), prepares, and writes `PHASE.prepared`;
/// - the other shards wait for it before they prepare (without dropping anything);
/// - each shard, connected (and done with its part of a query run's load), writes
///   `PHASE.ready-I`; shard 0 waits for all of them and writes `PHASE.start` (the
///   `--start-at` time, or half a second ahead); every shard starts its clock then.
///
/// `PHASE.prepared` and each `PHASE.ready-I` hold the writer's scenario hash
/// ([`Plan::scenario_sha256`]): a shard whose scenario differs from shard 0's stops at the
/// barrier, before it writes, as shard 0 does when one of the others differs (two shards of
/// different scenarios are not one run: `merge` refused them only afterwards).
///
/// Files are written to a temporary name and renamed, so a reader never sees half of one.
struct FileBarrier {
    dir: PathBuf,
    shard: Shard,
    phase: String,
    start_at: Option<SystemTime>,
    timeout: Duration,
    /// This shard's scenario hash.
    scenario: String,
}

impl FileBarrier {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}.{name}", self.phase))
    }

    fn write(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.path(name);
        let tmp = self
            .dir
            .join(format!(".{}.{name}.{}.tmp", self.phase, std::process::id()));
        crate::out::write_new(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("writing {}: {e}", path.display()))
    }

    /// Waits until `ready` returns `Some`, or the timeout; `waiting` says for what.
    async fn wait_for<T>(
        &self,
        mut ready: impl FnMut() -> Result<Option<T>, String>,
        waiting: impl Fn() -> String,
    ) -> Result<T, String> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            if let Some(v) = ready()? {
                return Ok(v);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "--barrier {}: shard {} gave up after {} waiting for {}",
                    self.dir.display(),
                    self.shard,
                    humantime::format_duration(self.timeout),
                    waiting()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn missing_ready(&self) -> Vec<u32> {
        (0..self.shard.count)
            .filter(|i| !self.path(&format!("ready-{i}")).exists())
            .collect()
    }

    /// Refuses a barrier file of a shard (`who`) whose scenario hash is not this one's.
    fn same_scenario(&self, file: &Path, text: &str, who: &str) -> Result<(), String> {
        let theirs = text.trim();
        if theirs == self.scenario {
            return Ok(());
        }
        Err(format!(
            "--barrier {}: {who} runs another scenario than shard {} (scenario_sha256 {} in              {}, this shard's {}): the shards of one run must run the same scenario, with              the same --set values; only --shard differs",
            self.dir.display(),
            self.shard,
            if theirs.is_empty() { "none" } else { theirs },
            file.display(),
            self.scenario
        ))
    }
}

/// Reads a whole small file; `None` while it does not exist.
fn read_if_there(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

impl StartGate for FileBarrier {
    fn before_prepare(&self) -> GateFuture<'_> {
        Box::pin(async move {
            if self.shard.index == 0 {
                std::fs::create_dir_all(&self.dir)
                    .map_err(|e| format!("creating {}: {e}", self.dir.display()))?;
                let prefix = format!("{}.", self.phase);
                let stale: Vec<String> = std::fs::read_dir(&self.dir)
                    .map_err(|e| format!("reading {}: {e}", self.dir.display()))?
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix))
                    .collect();
                if !stale.is_empty() {
                    return Err(format!(
                        "--barrier {}: holds {} from an earlier run: give each run a fresh directory",
                        self.dir.display(),
                        stale.join(", ")
                    ));
                }
                return Ok(());
            }
            let prepared = self.path("prepared");
            let text = self
                .wait_for(
                    || read_if_there(&prepared),
                    || format!("shard 0 to prepare the target ({})", prepared.display()),
                )
                .await?;
            self.same_scenario(&prepared, &text, "shard 0")
        })
    }

    fn after_prepare(&self) -> GateFuture<'_> {
        Box::pin(async move {
            if self.shard.index == 0 {
                self.write("prepared", &self.scenario)?;
            }
            Ok(())
        })
    }

    fn before_start(&self) -> GateFuture<'_> {
        Box::pin(async move {
            self.write(&format!("ready-{}", self.shard.index), &self.scenario)?;
            if self.shard.index == 0 {
                self.wait_for(
                    || Ok(self.missing_ready().is_empty().then_some(())),
                    || {
                        let missing: Vec<String> =
                            self.missing_ready().iter().map(u32::to_string).collect();
                        format!("shards {} to be ready", missing.join(", "))
                    },
                )
                .await?;
                for i in 1..self.shard.count {
                    let path = self.path(&format!("ready-{i}"));
                    let text = read_if_there(&path)?.unwrap_or_default();
                    self.same_scenario(&path, &text, &format!("shard {i}"))?;
                }
                let at = self
                    .start_at
                    .unwrap_or_else(|| SystemTime::now() + START_MARGIN);
                self.write("start", &humantime::format_rfc3339_nanos(at).to_string())?;
                return sleep_until(at, "the start time").await;
            }
            let path = self.path("start");
            let text = self
                .wait_for(
                    || read_if_there(&path),
                    || format!("shard 0 to set the start ({})", path.display()),
                )
                .await?;
            let at = humantime::parse_rfc3339_weak(text.trim())
                .map_err(|e| format!("{}: '{}': {e}", path.display(), text.trim()))?;
            sleep_until(at, "the start time").await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn resolve(
        flag: Option<&str>,
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<Shard, String> {
        let args = ShardArgs {
            shard: flag.map(str::to_string),
            ..ShardArgs::default()
        };
        args.resolve(&env(vars)).map(|r| r.shard)
    }

    #[test]
    fn the_flag_wins_then_the_environment_then_the_whole_run() {
        let s = |i, n| Shard::new(i, n).unwrap();
        assert_eq!(resolve(None, &[]), Ok(Shard::WHOLE));
        assert_eq!(
            resolve(Some("1/3"), &[(ENV_INDEX, "0"), (ENV_COUNT, "2")]),
            Ok(s(1, 3))
        );
        assert_eq!(
            resolve(None, &[(ENV_INDEX, "1"), (ENV_COUNT, "2")]),
            Ok(s(1, 2))
        );
        assert_eq!(
            resolve(None, &[(ENV_JOB_INDEX, "3"), (ENV_COUNT, "4")]),
            Ok(s(3, 4))
        );
        // An Indexed Job's index alone is not a shard.
        assert_eq!(resolve(None, &[(ENV_JOB_INDEX, "3")]), Ok(Shard::WHOLE));
    }

    #[test]
    fn half_a_shard_in_the_environment_is_an_error() {
        let e = resolve(None, &[(ENV_INDEX, "1")]).unwrap_err();
        assert!(e.contains("TSLOAD_SHARD_COUNT is not"), "{e}");
        let e = resolve(None, &[(ENV_COUNT, "4")]).unwrap_err();
        assert!(e.contains("JOB_COMPLETION_INDEX"), "{e}");
        let e = resolve(None, &[(ENV_INDEX, "4"), (ENV_COUNT, "4")]).unwrap_err();
        assert!(e.contains("4/4") && e.contains("below the count"), "{e}");
        let e = resolve(Some("x"), &[]).unwrap_err();
        assert!(e.starts_with("--shard: shard 'x'"), "{e}");
    }

    #[test]
    fn start_and_barrier_flags_are_checked() {
        let args = ShardArgs {
            start_at: Some("tomorrow".into()),
            ..ShardArgs::default()
        };
        assert!(args.resolve(&env(&[])).unwrap_err().contains("RFC 3339"));
        let args = ShardArgs {
            barrier_timeout: Some("5m".into()),
            ..ShardArgs::default()
        };
        assert!(
            args.resolve(&env(&[]))
                .unwrap_err()
                .contains("needs --barrier")
        );
        let args = ShardArgs {
            barrier: Some("/tmp/b".into()),
            barrier_timeout: Some("0s".into()),
            ..ShardArgs::default()
        };
        assert!(
            args.resolve(&env(&[]))
                .unwrap_err()
                .contains("1ms to 7 days")
        );
    }

    #[tokio::test]
    async fn a_barrier_lines_three_shards_up_and_refuses_a_stale_directory() {
        let dir = std::env::temp_dir().join(format!("tsload-barrier-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let barrier = |i: u32| FileBarrier {
            dir: dir.clone(),
            shard: Shard::new(i, 3).unwrap(),
            phase: "write".into(),
            start_at: None,
            timeout: Duration::from_secs(20),
            scenario: "same".into(),
        };
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Shards 2 and 1 arrive before shard 0: they must wait for its prepare.
        for i in [2u32, 1, 0] {
            let b = barrier(i);
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                b.before_prepare().await?;
                order.lock().unwrap().push(format!("prepare {i}"));
                b.after_prepare().await?;
                b.before_start().await?;
                Ok::<_, String>(SystemTime::now())
            }));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut starts = Vec::new();
        for t in tasks {
            starts.push(t.await.unwrap().unwrap());
        }
        assert_eq!(order.lock().unwrap()[0], "prepare 0");
        // Nobody starts before the instant shard 0 set.
        let text = std::fs::read_to_string(dir.join("write.start")).unwrap();
        let at = humantime::parse_rfc3339_weak(text.trim()).unwrap();
        assert!(starts.iter().all(|s| *s >= at), "{starts:?} vs {at:?}");
        // The same directory again: shard 0 refuses it.
        let e = barrier(0).before_prepare().await.unwrap_err();
        assert!(
            e.contains("from an earlier run") && e.contains("write.prepared"),
            "{e}"
        );
        // A shard whose peers never come gives up, naming what it waited for.
        let lonely = FileBarrier {
            dir: dir.join("lonely"),
            shard: Shard::new(1, 2).unwrap(),
            phase: "write".into(),
            start_at: None,
            timeout: Duration::from_millis(200),
            scenario: "same".into(),
        };
        let e = lonely.before_prepare().await.unwrap_err();
        assert!(
            e.contains("shard 1/2 gave up after 200ms waiting for shard 0"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Two shards of different scenarios met at one barrier and ran as one run; only
    /// `merge` refused them, afterwards.
    #[tokio::test]
    async fn a_shard_of_another_scenario_stops_at_the_barrier() {
        let dir = std::env::temp_dir().join(format!("tsload-barrier-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let barrier = |i: u32, scenario: &str| FileBarrier {
            dir: dir.clone(),
            shard: Shard::new(i, 2).unwrap(),
            phase: "write".into(),
            start_at: None,
            timeout: Duration::from_secs(5),
            scenario: scenario.into(),
        };
        let zero = barrier(0, "aaaa");
        zero.before_prepare().await.unwrap();
        zero.after_prepare().await.unwrap();
        // Shard 1 of another scenario: it stops before it prepares or writes.
        let e = barrier(1, "bbbb").before_prepare().await.unwrap_err();
        assert!(
            e.contains("shard 0 runs another scenario than shard 1/2")
                && e.contains("scenario_sha256 aaaa")
                && e.contains("this shard's bbbb"),
            "{e}"
        );
        // Had it gone on regardless, shard 0 refuses its ready file.
        let other = barrier(1, "bbbb");
        other.write("ready-1", "bbbb").unwrap();
        let e = zero.before_start().await.unwrap_err();
        assert!(
            e.contains("shard 1 runs another scenario than shard 0/2"),
            "{e}"
        );
        assert!(!dir.join("write.start").exists(), "no start was set");
        // The same scenario passes.
        barrier(1, "aaaa").before_prepare().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
