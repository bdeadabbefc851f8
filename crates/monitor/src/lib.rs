//! tsload-monitor: what the database server costs while a run goes on, read from /proc on
//! the machine the server runs on (the client's, for a local server).
//!
//! A [`Selector`] names the server's processes: a pid and its descendants, every process
//! of a name and their descendants (all of PostgreSQL's backends under the postmaster), or
//! a systemd unit's cgroup. A [`Sample`] sums over them the CPU time (user + system,
//! including children already reaped, so that backends that came and went still count),
//! the resident memory and the bytes read from and written to storage; with a data
//! directory, its size on disk. Two samples and the run's own figures give the report's
//! [`ServerSummary`]: CPU seconds and per million metrics, peak RSS, disk growth, bytes per
//! metric (R3's compression figure), the client/server CPU ratio, and which side was
//! saturated. [`Monitor`] samples on a thread of its own at the report interval.
//!
//! The /proc parsing is the `procfs` crate's; the arithmetic is pure and tested without
//! I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Which processes are the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// This process and all its descendants.
    Pid(u32),
    /// Every process whose name (`comm`, as `ps` shows it) is this, and their descendants.
    Name(String),
    /// The processes in this systemd unit's cgroup (cgroup v2, `/sys/fs/cgroup`).
    Unit(String),
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Pid(p) => write!(f, "pid {p} and its descendants"),
            Selector::Name(n) => write!(f, "processes named {n} and their descendants"),
            Selector::Unit(u) => write!(f, "systemd unit {u}"),
        }
    }
}

/// Why the server could not be sampled.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("{0}: no such process on this machine")]
    NotFound(Selector),
    #[error("{what}: {message}")]
    Read { what: String, message: String },
}

/// The server's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// User + system CPU of the processes and their reaped children.
    pub cpu: Duration,
    pub rss_bytes: u64,
    /// Bytes read from and written to storage (`/proc/PID/io`; 0 where not readable).
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub processes: usize,
    /// The data directory's size on disk (allocated blocks), when one is watched.
    pub disk_bytes: Option<u64>,
}

/// What the report shows of the server.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerSummary {
    /// What was watched, in words.
    pub watched: String,
    pub cpu_s: f64,
    /// Server CPU seconds per million metrics written (per million requests for queries).
    pub cpu_s_per_million_metrics: f64,
    /// Cores the server kept busy on average.
    pub cores_used: f64,
    pub peak_rss_bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Growth of the data directory over the run (absent without `data_dir`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bytes_added: Option<u64>,
    /// Disk growth per metric written: R3's compression figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_metric: Option<f64>,
    /// Client CPU over server CPU.
    pub client_server_cpu_ratio: f64,
    /// Which side limited the run, in a line.
    pub saturated: String,
    /// The processes the selector matched at the end (a name may match other users'
    /// servers: the report names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<i32>,
    /// What makes a figure doubtful, in words (a data directory that did not grow
    /// while metrics were written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Reads the counters of the processes `selector` names, and the size of `data_dir`.
pub fn sample(selector: &Selector, data_dir: Option<&Path>) -> Result<Sample, MonitorError> {
    let pids = select(selector)?;
    let tps = procfs::ticks_per_second().max(1);
    let mut s = Sample::default();
    for pid in pids {
        // A process may end between listing and reading: it is then a reaped child,
        // counted in its parent's cumulative times.
        let Ok(p) = procfs::process::Process::new(pid) else {
            continue;
        };
        let Ok(stat) = p.stat() else { continue };
        let ticks = stat.utime + stat.stime + stat.cutime.max(0) as u64 + stat.cstime.max(0) as u64;
        s.cpu += Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / tps);
        s.rss_bytes += stat.rss.saturating_mul(procfs::page_size());
        if let Ok(io) = p.io() {
            s.read_bytes += io.read_bytes;
            s.write_bytes += io.write_bytes;
        }
        s.processes += 1;
    }
    if let Some(dir) = data_dir {
        s.disk_bytes = Some(dir_size(dir).map_err(|e| MonitorError::Read {
            what: format!("data_dir {}", dir.display()),
            message: e.to_string(),
        })?);
    }
    Ok(s)
}

/// The pids `selector` names now.
pub fn select(selector: &Selector) -> Result<Vec<i32>, MonitorError> {
    let read_err = |what: &str, e: &dyn std::fmt::Display| MonitorError::Read {
        what: what.to_string(),
        message: e.to_string(),
    };
    let roots: Vec<i32> = match selector {
        Selector::Pid(pid) => vec![*pid as i32],
        Selector::Name(name) => {
            let mut roots = Vec::new();
            for p in procfs::process::all_processes()
                .map_err(|e| read_err("/proc", &e))?
                .flatten()
            {
                if p.stat().is_ok_and(|s| &s.comm == name) {
                    roots.push(p.pid);
                }
            }
            roots
        }
        Selector::Unit(unit) => {
            let path = cgroup_procs(unit);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| read_err(&path.display().to_string(), &e))?;
            text.lines().filter_map(|l| l.trim().parse().ok()).collect()
        }
    };
    let children = children_map()?;
    let mut all = BTreeSet::new();
    let mut stack = roots;
    while let Some(pid) = stack.pop() {
        if procfs::process::Process::new(pid).is_err() {
            continue;
        }
        if all.insert(pid)
            && let Some(kids) = children.get(&pid)
        {
            stack.extend(kids);
        }
    }
    if all.is_empty() {
        return Err(MonitorError::NotFound(selector.clone()));
    }
    Ok(all.into_iter().collect())
}

/// A unit's `cgroup.procs` under cgroup v2's system slice.
fn cgroup_procs(unit: &str) -> PathBuf {
    Path::new("/sys/fs/cgroup/system.slice")
        .join(unit)
        .join("cgroup.procs")
}

fn children_map() -> Result<BTreeMap<i32, Vec<i32>>, MonitorError> {
    let mut map: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in procfs::process::all_processes()
        .map_err(|e| MonitorError::Read {
            what: "/proc".into(),
            message: e.to_string(),
        })?
        .flatten()
    {
        if let Ok(s) = p.stat() {
            map.entry(s.ppid).or_default().push(p.pid);
        }
    }
    Ok(map)
}

/// Bytes allocated on disk under `dir` (blocks, as `du` counts them); files that vanish
/// while it walks are skipped.
pub fn dir_size(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if d != dir && e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.blocks() * 512;
            }
        }
    }
    Ok(total)
}

/// The run's own figures the summary needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFigures {
    pub elapsed: Duration,
    /// Metrics written (requests, for a query run).
    pub metrics: u64,
    pub client_cpu: Duration,
    /// Cores on the client machine.
    pub client_cores: usize,
    /// Whether the server runs on the client's machine (sharing its cores).
    pub server_is_local: bool,
}

/// The summary from the samples at the start and the end and the largest RSS seen.
pub fn summarize(
    watched: &str,
    start: &Sample,
    end: &Sample,
    peak_rss: u64,
    run: &RunFigures,
) -> ServerSummary {
    let cpu_s = end.cpu.saturating_sub(start.cpu).as_secs_f64();
    let secs = run.elapsed.as_secs_f64();
    let per = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
    let disk_bytes_added = match (start.disk_bytes, end.disk_bytes) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let client_s = run.client_cpu.as_secs_f64();
    ServerSummary {
        watched: watched.to_string(),
        cpu_s,
        cpu_s_per_million_metrics: if run.metrics > 0 {
            cpu_s / (run.metrics as f64 / 1e6)
        } else {
            0.0
        },
        cores_used: per(cpu_s),
        peak_rss_bytes: peak_rss.max(end.rss_bytes).max(start.rss_bytes),
        read_bytes: end.read_bytes.saturating_sub(start.read_bytes),
        write_bytes: end.write_bytes.saturating_sub(start.write_bytes),
        disk_bytes_added,
        bytes_per_metric: disk_bytes_added
            .filter(|_| run.metrics > 0)
            .map(|b| b as f64 / run.metrics as f64),
        client_server_cpu_ratio: if cpu_s > 0.0 { client_s / cpu_s } else { 0.0 },
        saturated: saturation(per(cpu_s), per(client_s), run),
        pids: Vec::new(),
        warnings: match disk_bytes_added {
            Some(0) if run.metrics > 0 => vec![format!(
                "the data directory did not grow while {} metrics were written: is it the \
                 server's (a server started elsewhere keeps its data in its own directory)?",
                run.metrics
            )],
            _ => Vec::new(),
        },
    }
}

/// Which side limited the run: a side that kept 90% of the cores it had busy.
fn saturation(server_cores: f64, client_cores: f64, run: &RunFigures) -> String {
    let cores = run.client_cores.max(1) as f64;
    let busy = 0.9 * cores;
    if run.server_is_local && server_cores + client_cores >= busy {
        let who = if server_cores >= client_cores {
            "the server"
        } else {
            "the client"
        };
        return format!(
            "the machine: server and client shared its {cores:.0} cores ({server_cores:.2} + {client_cores:.2} busy), {who} took more"
        );
    }
    if client_cores >= busy {
        return format!("the client: {client_cores:.2} of its {cores:.0} cores busy");
    }
    if run.server_is_local && server_cores >= busy {
        return format!("the server: {server_cores:.2} of {cores:.0} cores busy");
    }
    format!(
        "neither side's CPU (server {server_cores:.2} cores, client {client_cores:.2} of {cores:.0}): latency, locks or I/O set the pace"
    )
}

/// Marks the run's start on a [`Monitor`] (see [`Monitor::starter`]).
#[derive(Clone)]
pub struct Starter(mpsc::Sender<Signal>);

impl Starter {
    pub fn mark(&self) {
        let _ = self.0.send(Signal::Start);
    }
}

impl std::fmt::Debug for Starter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Starter")
    }
}

enum Signal {
    Start,
    Stop,
}

/// Samples the server on a thread of its own: at once when the run's clock starts
/// ([`Monitor::mark_start`]), then every `interval` (for the peak RSS), and at
/// [`Monitor::finish`].
pub struct Monitor {
    selector: Selector,
    data_dir: Option<PathBuf>,
    tx: mpsc::Sender<Signal>,
    state: Arc<Mutex<State>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    start: Option<Sample>,
    peak_rss: u64,
    error: Option<String>,
}

impl Monitor {
    /// Checks that the server can be sampled, then starts the sampling thread.
    pub fn start(
        selector: Selector,
        data_dir: Option<PathBuf>,
        interval: Duration,
    ) -> Result<Monitor, MonitorError> {
        let first = sample(&selector, data_dir.as_deref())?;
        let state = Arc::new(Mutex::new(State {
            peak_rss: first.rss_bytes,
            ..State::default()
        }));
        let (tx, rx) = mpsc::channel();
        let (sel, dir, st) = (selector.clone(), data_dir.clone(), state.clone());
        let thread = std::thread::Builder::new()
            .name("tsload-monitor".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let start = match rx.recv_timeout(wait) {
                        Ok(Signal::Start) => true,
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            next += interval;
                            false
                        }
                        Ok(Signal::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    // The data directory is walked at the start and the end only.
                    let r = sample(&sel, if start { dir.as_deref() } else { None });
                    let Ok(mut st) = st.lock() else { break };
                    match r {
                        Ok(x) => {
                            st.peak_rss = st.peak_rss.max(x.rss_bytes);
                            if start {
                                st.start = Some(x);
                            }
                        }
                        Err(e) => {
                            st.error.get_or_insert(e.to_string());
                        }
                    }
                }
            })
            .map_err(|e| MonitorError::Read {
                what: "the monitor thread".into(),
                message: e.to_string(),
            })?;
        Ok(Monitor {
            selector,
            data_dir,
            tx,
            state,
            thread: Some(thread),
        })
    }

    /// The run's clock has started: take the start sample now.
    pub fn mark_start(&self) {
        let _ = self.tx.send(Signal::Start);
    }

    /// Whether the data directory's size is watched.
    pub fn watches_disk(&self) -> bool {
        self.data_dir.is_some()
    }

    /// A handle that calls [`Monitor::mark_start`] from elsewhere (an observer).
    pub fn starter(&self) -> Starter {
        Starter(self.tx.clone())
    }

    /// Stops sampling and summarises the run (`None` if the run never started).
    pub fn finish(mut self, run: &RunFigures) -> Result<Option<ServerSummary>, MonitorError> {
        self.stop_thread();
        let end = sample(&self.selector, self.data_dir.as_deref())?;
        let st = self.state.lock().map_err(|_| MonitorError::Read {
            what: "the monitor".into(),
            message: "its thread panicked".into(),
        })?;
        if let Some(e) = &st.error
            && st.start.is_none()
        {
            return Err(MonitorError::Read {
                what: self.selector.to_string(),
                message: e.clone(),
            });
        }
        let pids = select(&self.selector).unwrap_or_default();
        Ok(st.start.map(|start| {
            let mut s = summarize(&self.selector.to_string(), &start, &end, st.peak_rss, run);
            s.pids = pids;
            s
        }))
    }

    fn stop_thread(&mut self) {
        let _ = self.tx.send(Signal::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(elapsed_s: u64, metrics: u64, client_cpu_ms: u64, local: bool) -> RunFigures {
        RunFigures {
            elapsed: Duration::from_secs(elapsed_s),
            metrics,
            client_cpu: Duration::from_millis(client_cpu_ms),
            client_cores: 2,
            server_is_local: local,
        }
    }

    fn at(cpu_ms: u64, rss: u64, disk: Option<u64>) -> Sample {
        Sample {
            cpu: Duration::from_millis(cpu_ms),
            rss_bytes: rss,
            read_bytes: 10,
            write_bytes: 100 + cpu_ms,
            processes: 3,
            disk_bytes: disk,
        }
    }

    #[test]
    fn a_data_dir_that_did_not_grow_while_metrics_were_written_is_a_warning() {
        let flat = summarize(
            "x",
            &at(0, 1, Some(500)),
            &at(100, 1, Some(500)),
            1,
            &run(1, 10, 1, true),
        );
        assert_eq!(flat.warnings.len(), 1, "{flat:?}");
        assert!(flat.warnings[0].contains("did not grow"), "{flat:?}");
        let grew = summarize(
            "x",
            &at(0, 1, Some(500)),
            &at(100, 1, Some(900)),
            1,
            &run(1, 10, 1, true),
        );
        assert!(grew.warnings.is_empty(), "{grew:?}");
        let nothing = summarize(
            "x",
            &at(0, 1, Some(500)),
            &at(100, 1, Some(500)),
            1,
            &run(1, 0, 1, true),
        );
        assert!(nothing.warnings.is_empty(), "{nothing:?}");
    }

    #[test]
    fn figures_are_differences_over_the_run() {
        let s = summarize(
            "pid 1",
            &at(1_000, 50, Some(4096)),
            &at(9_000, 70, Some(4096 + 2_000_000)),
            90,
            &run(10, 1_000_000, 2_000, false),
        );
        assert_eq!(s.cpu_s, 8.0);
        assert_eq!(s.cpu_s_per_million_metrics, 8.0);
        assert!((s.cores_used - 0.8).abs() < 1e-12);
        assert_eq!(s.peak_rss_bytes, 90);
        assert_eq!(s.write_bytes, 8_000);
        assert_eq!(s.disk_bytes_added, Some(2_000_000));
        assert_eq!(s.bytes_per_metric, Some(2.0));
        assert_eq!(s.client_server_cpu_ratio, 0.25);
        assert!(s.saturated.starts_with("neither"), "{}", s.saturated);
    }

    #[test]
    fn saturation_names_the_busy_side() {
        let both = summarize(
            "x",
            &at(0, 1, None),
            &at(15_000, 1, None),
            1,
            &run(10, 1, 4_000, true),
        );
        assert!(
            both.saturated.starts_with("the machine")
                && both.saturated.ends_with("the server took more"),
            "{}",
            both.saturated
        );
        let client = summarize(
            "x",
            &at(0, 1, None),
            &at(1_000, 1, None),
            1,
            &run(10, 1, 19_000, false),
        );
        assert!(
            client.saturated.starts_with("the client"),
            "{}",
            client.saturated
        );
        assert_eq!(client.disk_bytes_added, None);
        assert_eq!(client.bytes_per_metric, None);
        let idle = summarize(
            "x",
            &at(5, 1, None),
            &at(5, 1, None),
            1,
            &run(0, 0, 0, false),
        );
        assert_eq!(
            (idle.cpu_s, idle.cores_used, idle.client_server_cpu_ratio),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn this_process_is_found_and_a_missing_one_is_named() {
        let me = std::process::id();
        let s = sample(&Selector::Pid(me), None).unwrap();
        assert!(s.processes >= 1 && s.rss_bytes > 0, "{s:?}");
        let e = sample(&Selector::Pid(u32::MAX - 7), None).unwrap_err();
        assert!(e.to_string().contains("no such process"), "{e}");
        let e = sample(&Selector::Name("no-such-process-tsload".into()), None).unwrap_err();
        assert!(
            e.to_string()
                .contains("processes named no-such-process-tsload"),
            "{e}"
        );
    }

    #[test]
    fn cpu_burnt_by_this_process_is_seen() {
        let me = Selector::Pid(std::process::id());
        let a = sample(&me, None).unwrap();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = sample(&me, None).unwrap();
        // 300 ms of wall time spinning: at least some of it on a CPU, at most all of it
        // (plus other test threads).
        assert!(b.cpu > a.cpu, "{a:?} -> {b:?}");
    }

    #[test]
    fn dir_size_counts_allocated_blocks() {
        let dir = std::env::temp_dir().join(format!("tsload-monitor-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), vec![1u8; 100_000]).unwrap();
        let n = dir_size(&dir).unwrap();
        assert!((100_000..200_000).contains(&n), "{n}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(dir_size(&dir).is_err());
    }

    #[test]
    fn a_monitor_summarises_from_the_marked_start() {
        let me = Selector::Pid(std::process::id());
        let m = Monitor::start(me.clone(), None, Duration::from_millis(20)).unwrap();
        let figures = run(1, 1_000, 0, true);
        // Never started: nothing to summarise.
        let unstarted = Monitor::start(me, None, Duration::from_millis(20)).unwrap();
        assert_eq!(unstarted.finish(&figures).unwrap(), None);
        m.starter().mark();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(200) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let s = m.finish(&figures).unwrap().expect("started");
        assert!(s.cpu_s > 0.0 && s.peak_rss_bytes > 0, "{s:?}");
        assert!(s.watched.starts_with("pid "), "{}", s.watched);
    }
}
