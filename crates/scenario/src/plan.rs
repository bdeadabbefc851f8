//! The resolved plan of a scenario: what will be generated, where it goes, how it is driven
//! and what is written out. `tsload validate` prints it; reports embed it (secrets redacted).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tsload_core::engine::{LoadConfig, LoadMode};
use tsload_report::threshold::Threshold;
use tsload_workload::{
    ColumnSpec, CpuOnly, Custom, CustomConfig, Devops, Iot, IotOptions, StateEstimate, TsbsConfig,
};

/// What will be generated, with every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadPlan {
    /// Replay of a line-protocol file; `path` "-" is standard input.
    File {
        path: String,
        /// Unit of the file's timestamps: ns, us, ms or s.
        precision: String,
    },
    CpuOnly(TsbsConfig),
    Devops(TsbsConfig),
    Iot(TsbsConfig, IotOptions),
    Custom {
        cfg: CustomConfig,
        /// Lines of the `columns` and `tags` entries in the scenario file, for errors.
        column_lines: Vec<usize>,
        tag_lines: Vec<usize>,
    },
}

impl WorkloadPlan {
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadPlan::CpuOnly(_) => "cpu-only",
            WorkloadPlan::Devops(_) => "devops",
            WorkloadPlan::Iot(..) => "iot",
            WorkloadPlan::Custom { .. } => "custom",
            WorkloadPlan::File { .. } => "file",
        }
    }

    /// The generator state of the workload (`None` for a file replay, whose state is
    /// known only once the file was read).
    pub fn state_estimate(&self) -> Option<StateEstimate> {
        match self {
            WorkloadPlan::File { .. } => None,
            WorkloadPlan::CpuOnly(t) => Some(CpuOnly::state_estimate(t)),
            WorkloadPlan::Devops(t) => Some(Devops::state_estimate(t)),
            WorkloadPlan::Iot(t, _) => Some(Iot::state_estimate(t)),
            WorkloadPlan::Custom { cfg, .. } => Some(Custom::state_estimate(cfg)),
        }
    }
}

/// The `[target]` section, parsed by its kind (the installed registry's): every question about
/// it goes through `tsload_target::Target`, reached by `Deref`.
#[derive(Debug, Clone)]
pub struct TargetPlan(pub Box<dyn tsload_target::Target>);

impl PartialEq for TargetPlan {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(other.0.as_ref())
    }
}

impl std::ops::Deref for TargetPlan {
    type Target = dyn tsload_target::Target;

    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}

impl std::ops::DerefMut for TargetPlan {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut()
    }
}

impl TargetPlan {
    /// Whether the target drops and recreates the run's tables in prepare.
    pub fn drops_existing(&self) -> bool {
        self.drop_existing().unwrap_or(false)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live bar on a terminal, plain lines otherwise.
    Auto,
    Bar,
    Plain,
    None,
}

/// One `--out` destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutSpec {
    Csv(PathBuf),
    Ndjson(PathBuf),
    /// The write endpoint (`http://host:8086/write?db=tsload` or a v2 URL), shown with its
    /// secrets as `***`.
    Influx(tsload_redact::SecretUrl),
    /// The HTML report, written once at the end of the run.
    Html(PathBuf),
}

impl std::str::FromStr for OutSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, path) = s.split_once('=').unwrap_or((s, ""));
        if path.is_empty() {
            return Err(format!(
                "\"{s}\": expected csv=FILE, ndjson=FILE, html=FILE or influx=URL (e.g. csv=intervals.csv)"
            ));
        }
        match kind {
            "csv" => Ok(OutSpec::Csv(path.into())),
            "ndjson" => Ok(OutSpec::Ndjson(path.into())),
            "html" => Ok(OutSpec::Html(path.into())),
            "influx" => {
                let url = url::Url::parse(path)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| {
                        format!("\"{s}\": expected an http(s) URL, e.g. influx=http://127.0.0.1:8086/write?db=tsload")
                    })?;
                // Its password and secret query values are a SecretUrl's; the Basic header
                // the HTTP client builds of its user info is registered too (a server may
                // echo either).
                if let Some(password) = url.password() {
                    tsload_redact::register_basic_auth(url.username(), password);
                }
                // A bare server URL writes to InfluxDB 1.x's /write into database tsload.
                Ok(OutSpec::Influx(tsload_redact::SecretUrl::new(
                    if url.path() == "/" && url.query().is_none() {
                        format!("{}write?db=tsload", url.as_str())
                    } else {
                        url.to_string()
                    },
                )))
            }
            other => Err(format!(
                "\"{s}\": output kind \"{other}\" is not known; allowed: csv, ndjson, influx, html"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutputPlan {
    pub json: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub fail_if: Vec<Threshold>,
    pub progress: ProgressMode,
    /// `--out`: per-interval records (CSV, NDJSON).
    pub out: Vec<OutSpec>,
    /// `--metrics-addr`: where Prometheus metrics are served while the run goes on.
    pub metrics_addr: Option<String>,
    /// `--shard`, `--start-at`, `--barrier`: this process's part of the run.
    pub shard: ShardRun,
    /// `--debug-raw-latencies`: every write's corrected latency, one per line (ns).
    pub raw_latencies: Option<PathBuf>,
    /// After a write run, ask the server what it stored (`Sink::tally`).
    pub verify: bool,
}

impl OutputPlan {
    /// The files a run writes, each with the flag that names it.
    pub fn files(&self) -> Vec<(&'static str, &PathBuf)> {
        use OutSpec;
        let mut files: Vec<(&'static str, &PathBuf)> = [
            ("--json", self.json.as_ref()),
            ("--hlog", self.hlog.as_ref()),
            ("--debug-raw-latencies", self.raw_latencies.as_ref()),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.map(|p| (flag, p)))
        .collect();
        files.extend(self.out.iter().filter_map(|spec| match spec {
            OutSpec::Csv(p) => Some(("--out csv=", p)),
            OutSpec::Ndjson(p) => Some(("--out ndjson=", p)),
            OutSpec::Html(p) => Some(("--out html=", p)),
            OutSpec::Influx(_) => None,
        }));
        files
    }

    /// Refuses two outputs written to one file (`--json x --out csv=x`: each would
    /// overwrite the other, and the run would end as if both were kept). Paths are
    /// compared made absolute, and by the file they name when it exists.
    pub fn check_distinct_files(&self) -> Result<(), String> {
        let files = self.files();
        let key = |p: &PathBuf| {
            std::fs::canonicalize(p)
                .or_else(|_| std::path::absolute(p))
                .unwrap_or_else(|_| p.clone())
        };
        for (i, (flag, path)) in files.iter().enumerate() {
            if let Some((other, _)) = files[..i].iter().find(|(_, q)| key(q) == key(path)) {
                return Err(format!(
                    "{other} and {flag} both write {}: give each output its own file",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

/// `[monitor]`: which processes are the server, and its data directory.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorPlan {
    /// The server's processes on this machine (`None`: the database's own figures only).
    pub selector: Option<tsload_monitor::Selector>,
    pub data_dir: Option<PathBuf>,
    /// Ask the target what its tables hold, before and after (`Sink::storage_bytes`).
    pub storage: bool,
}

/// Where the impairment is made.
#[derive(Debug, Clone, PartialEq)]
pub enum NetworkBackend {
    /// tsload's user-space delay proxy, started in-process; the target is reached through it.
    Proxy { direction: tsload_proxy::Direction },
    /// tc netem (or tbf) as the root qdisc of an interface, restored after the run.
    Netem {
        dev: String,
        netns: Option<String>,
        allow_default_route: bool,
    },
}

/// How the real RTT to the target is measured before the load starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeChoice {
    None,
    /// TCP connect() to the target's address (sees netem, not the proxy).
    Tcp,
    /// ICMP echo, flood-paced, to the target's IP address (sees netem, not the proxy).
    Icmp,
    /// The target's own ping: HTTP GET of `probe_path`, or `SELECT 1`.
    App,
}

impl ProbeChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeChoice::None => "none",
            ProbeChoice::Tcp => "tcp",
            ProbeChoice::Icmp => "icmp",
            ProbeChoice::App => "app",
        }
    }
}

/// The `[network]` section: the impairment between client and target during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkPlan {
    pub backend: NetworkBackend,
    /// Added to the round trip (`both`: to each direction).
    pub delay: Duration,
    pub jitter: Duration,
    /// Random loss in percent (netem only).
    pub loss: Option<f64>,
    /// Bandwidth limit in bits per second.
    pub rate_bits: Option<u64>,
    /// The qdisc for the netem backend, built from the keys above.
    pub spec: Option<tsload_netem::Spec>,
    pub probe: ProbeChoice,
    pub probe_count: u64,
    /// HTTP path of the application probe for line-protocol targets.
    pub probe_path: String,
}

impl NetworkPlan {
    pub fn to_json(&self) -> Value {
        let (backend, extra) = match &self.backend {
            NetworkBackend::Proxy { direction } => (
                "proxy",
                json!({"direction": match direction {
                    tsload_proxy::Direction::Up => "up",
                    tsload_proxy::Direction::Down => "down",
                    tsload_proxy::Direction::Both => "both",
                }}),
            ),
            NetworkBackend::Netem {
                dev,
                netns,
                allow_default_route,
            } => (
                "netem",
                json!({"dev": dev, "netns": netns, "allow_default_route": allow_default_route,
                       "spec": self.spec.as_ref().map(|s| s.to_string())}),
            ),
        };
        let mut v = json!({
            "backend": backend,
            "delay": humantime::format_duration(self.delay).to_string(),
            "jitter": humantime::format_duration(self.jitter).to_string(),
            "loss_pct": self.loss,
            "rate_bits_per_s": self.rate_bits,
            "probe": self.probe.as_str(),
            "probe_count": self.probe_count,
            "probe_path": self.probe_path,
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        v
    }
}

/// What a run drives: writes (`[load]`), reads (`[query]`), or both at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Write,
    Query,
    Mixed,
}

impl RunMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Write => "write",
            RunMode::Query => "query",
            RunMode::Mixed => "mixed",
        }
    }
}

/// The read workload of `[query]`.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryWorkloadPlan {
    /// TSBS devops queries over the data set `[workload]` describes.
    Tsbs {
        data: TsbsConfig,
        seed: u64,
        /// `None`: every type the target's language can express.
        types: Option<Vec<tsload_query::QueryType>>,
        /// For line-protocol targets: `influxql`, `promql` or `questdb` (`None`: influxql).
        dialect: Option<String>,
        time_bucket: bool,
        /// Write the data set (through `[load]`) before the queries.
        preload: bool,
    },
    /// sysbench-shaped transactions; `prepare` creates and loads the tables first.
    Oltp {
        config: tsload_oltp::OltpConfig,
        prepare: bool,
    },
}

impl QueryWorkloadPlan {
    pub fn kind(&self) -> String {
        match self {
            QueryWorkloadPlan::Tsbs { .. } => "tsbs".into(),
            QueryWorkloadPlan::Oltp { config, .. } => config.kind.name().into(),
        }
    }
}

/// The `[query]` section: the read stream.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPlan {
    pub workload: QueryWorkloadPlan,
    pub config: tsload_core::QueryConfig,
    /// Mixed mode: the queries start this long after the writes.
    pub start_after: Option<Duration>,
}

impl QueryPlan {
    pub fn to_json(&self) -> Value {
        let c = &self.config;
        let mut v = json!({
            "kind": self.workload.kind(),
            "workers": c.workers,
            "mode": match c.mode { LoadMode::Closed => "closed", LoadMode::Open { .. } => "open" },
            "rate": match c.mode { LoadMode::Closed => None, LoadMode::Open { rate } => Some(rate) },
            "duration": c.duration.map(|d| humantime::format_duration(d).to_string()),
            "queries": c.requests,
            "max_errors": c.max_errors,
            "require_rows": c.require_rows,
            "timeout": c.timeout.map(|d| humantime::format_duration(d).to_string()),
            "start_after": self.start_after.map(|d| humantime::format_duration(d).to_string()),
        });
        match &self.workload {
            QueryWorkloadPlan::Tsbs {
                seed,
                types,
                dialect,
                time_bucket,
                preload,
                ..
            } => {
                v["seed"] = json!(seed);
                v["types"] = json!(
                    types
                        .as_ref()
                        .map(|t| t.iter().map(|t| t.name()).collect::<Vec<_>>())
                );
                v["dialect"] = json!(dialect);
                v["time_bucket"] = json!(time_bucket);
                v["preload"] = json!(preload);
            }
            QueryWorkloadPlan::Oltp { config: o, prepare } => {
                v["prepare"] = json!(prepare);
                v["loaders"] = json!(c.loaders);
                v["dialect"] = json!(o.dialect.name());
                v["seed"] = json!(o.seed);
                for (k, val) in [
                    ("tables", o.tables),
                    ("table_size", o.table_size),
                    ("range_size", o.range_size),
                    ("point_selects", o.point_selects),
                    ("simple_ranges", o.simple_ranges),
                    ("sum_ranges", o.sum_ranges),
                    ("order_ranges", o.order_ranges),
                    ("distinct_ranges", o.distinct_ranges),
                    ("index_updates", o.index_updates),
                    ("non_index_updates", o.non_index_updates),
                    ("delete_inserts", o.delete_inserts),
                    ("load_batch_rows", o.load_batch_rows),
                ] {
                    v[k] = json!(val);
                }
                v["range_selects"] = json!(o.range_selects);
                v["skip_trx"] = json!(o.skip_trx);
                v["rand_type"] = json!(o.rand_type.name());
                v["secondary_index"] = json!(o.secondary_index.name());
            }
        }
        v
    }
}

/// One `[sweep]` list: the key as written (`delay`), the scenario key it sets
/// (`network.delay`), and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    pub key: String,
    pub full_key: String,
    pub values: Vec<toml::Value>,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub name: String,
    pub description: Option<String>,
    /// The file the plan came from.
    pub source: String,
    /// The keys `--set` gave (`workload.path`), so a later error about one of their values
    /// names the `--set`, not the file.
    pub set_keys: Vec<String>,
    pub workload: WorkloadPlan,
    pub target: TargetPlan,
    pub load: LoadConfig,
    pub output: OutputPlan,
    /// The impairment during the run, if any.
    pub network: Option<NetworkPlan>,
    /// The server's processes to sample during the run, if any.
    pub monitor: Option<MonitorPlan>,
    /// The `[sweep]` lists, in file order.
    pub sweep: Vec<SweepAxis>,
    pub mode: RunMode,
    /// The read stream (mode query or mixed).
    pub query: Option<QueryPlan>,
    /// Where the rows' timestamps come from (`workload.time`).
    pub time: TimeMode,
}

/// `workload.time`: where the rows' timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeMode {
    /// The data set's own span (`workload.start` to `workload.end`), written as fast as
    /// the load goes.
    #[default]
    History,
    /// The clock: the span starts as the plan is read, and the load is open loop at the
    /// fleet's rate, so that each row is sent once its time has come.
    Live,
}

impl TimeMode {
    pub fn name(self) -> &'static str {
        match self {
            TimeMode::History => "history",
            TimeMode::Live => "live",
        }
    }
}

fn rfc3339(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_nanos(t).to_string()
}

fn dur(ns: i64) -> String {
    humantime::format_duration(Duration::from_nanos(ns.max(0) as u64)).to_string()
}

fn columns_json(list: &[ColumnSpec]) -> Value {
    list.iter()
        .map(|c| {
            let mut v = json!({"type": c.data_type.to_string(), "count": c.count, "min": c.min,
                   "max": c.max, "values": c.values});
            if c.shape != tsload_workload::Shape::Random {
                v["shape"] = json!(c.shape.name());
                v["period"] = json!(dur(c.period_ns));
                v["noise"] = json!(c.noise);
            }
            v
        })
        .collect()
}

/// Where live time's span starts for a run starting now: the clock (to the millisecond)
/// less one batch's period of the open-loop `load`, so each batch is due once the time of
/// its last row has come. `None` in closed loop.
pub fn live_start_ns(load: &LoadConfig) -> Option<i64> {
    let LoadMode::Open { rate } = load.mode else {
        return None;
    };
    let period_ns = ((load.batch * load.workers) as f64 / rate * 1e9).ceil() as i64;
    let now_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64 * 1_000_000);
    Some(now_ns - period_ns)
}

fn tsbs_json(kind: &str, t: &TsbsConfig, time: TimeMode) -> Value {
    let mut v = json!({
        "kind": kind, "seed": t.seed, "scale": t.scale, "start": rfc3339(t.start_ns),
        "end": rfc3339(t.end_ns), "interval": dur(t.interval_ns), "time": time.name(),
        "out_of_order_ratio": t.arrival.out_of_order_ratio,
        "out_of_order_max_steps": t.arrival.out_of_order_max_steps,
        "duplicate_ratio": t.arrival.duplicate_ratio,
    });
    if t.pods > 1 {
        v["pods_per_host"] = json!(t.pods);
    }
    if let Some(w) = t.wave {
        v["shape"] = json!(w.shape.name());
        v["shape_period"] = json!(dur(w.period_ns));
        v["shape_noise"] = json!(w.noise);
    }
    if let Some(c) = t.churn {
        // How long a host lives before a new one takes its place.
        v["churn_lifetime"] = json!(dur(c.lifetime_ns));
    }
    v
}

impl Plan {
    /// Whether the plan writes its workload's data: always but in query mode without
    /// TSBS's `preload` (there `[workload]` only describes the data the queries read).
    pub fn generates(&self) -> bool {
        self.mode != RunMode::Query
            || matches!(
                self.query.as_ref().map(|q| &q.workload),
                Some(QueryWorkloadPlan::Tsbs { preload: true, .. })
            )
    }

    /// The plan of a run starting now: live time's span moved to start now, less one
    /// batch's period, as the scenario's parser placed it when the plan was read (a plan
    /// read once serves a sweep's points, `--repeat`'s runs and compare's targets, each
    /// at its own clock; the same span twice would send every row again). Otherwise the
    /// plan as it is.
    pub fn at_now(&self) -> Plan {
        let mut plan = self.clone();
        if plan.time != TimeMode::Live {
            return plan;
        }
        let Some(start_ns) = live_start_ns(&plan.load) else {
            return plan;
        };
        match &mut plan.workload {
            WorkloadPlan::CpuOnly(t) | WorkloadPlan::Devops(t) | WorkloadPlan::Iot(t, _) => {
                let span = t.end_ns - t.start_ns;
                t.start_ns = start_ns;
                t.end_ns = start_ns + span;
            }
            WorkloadPlan::Custom { cfg, .. } => cfg.start_timestamp_ns = start_ns,
            WorkloadPlan::File { .. } => {}
        }
        plan
    }

    /// SHA-256 of the resolved scenario (every default filled in, secrets redacted, keys in
    /// order; without its name, description, file and outputs): two runs with the same hash
    /// ran the same workload, target, load, network and queries, however it was written.
    pub fn scenario_sha256(&self) -> String {
        use sha2::Digest as _;
        let mut resolved = self.to_json();
        // Labels, where the file lay and where the results go are not part of what ran.
        if let Some(m) = resolved.as_object_mut() {
            for key in ["name", "description", "source", "output"] {
                m.remove(key);
            }
        }
        // Live time's span is the clock's when each process read its plan: the shards of
        // one live run differ there and nowhere else.
        if self.time == TimeMode::Live
            && let Some(w) = resolved.get_mut("workload").and_then(Value::as_object_mut)
        {
            w.remove("start");
            w.remove("end");
            w.remove("start_timestamp");
        }
        let text = serde_json::to_string(&resolved).unwrap_or_default();
        sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The run's streams as `--fail-if` thresholds see them: the writes (modes write and
    /// mixed) and the queries (modes query and mixed), each open or closed loop.
    pub fn streams(&self) -> Vec<tsload_report::threshold::Stream> {
        let mut out = Vec::new();
        if self.mode != RunMode::Query {
            out.push(tsload_report::threshold::Stream {
                queries: false,
                open_loop: matches!(self.load.mode, LoadMode::Open { .. }),
            });
        }
        if let Some(q) = self.query.as_ref().filter(|_| self.mode != RunMode::Write) {
            out.push(tsload_report::threshold::Stream {
                queries: true,
                open_loop: matches!(q.config.mode, LoadMode::Open { .. }),
            });
        }
        out
    }

    /// The plan as JSON, with every secret-looking value redacted.
    pub fn to_json(&self) -> Value {
        let workload = match &self.workload {
            WorkloadPlan::File { path, precision } => {
                json!({"kind": "file", "path": path, "precision": precision})
            }
            WorkloadPlan::CpuOnly(t) | WorkloadPlan::Devops(t) => {
                tsbs_json(self.workload.kind(), t, self.time)
            }
            WorkloadPlan::Iot(t, o) => {
                let mut v = tsbs_json("iot", t, self.time);
                v["missing_field_ratio"] = json!(o.missing_field_ratio);
                v["missing_row_ratio"] = json!(o.missing_row_ratio);
                v
            }
            WorkloadPlan::Custom { cfg: c, .. } => {
                let mut v = json!({
                "kind": "custom", "seed": c.seed, "stable": c.stable,
                "childtable_count": c.childtable_count, "childtable_prefix": c.childtable_prefix,
                "insert_rows": c.insert_rows, "timestamp_step": dur(c.timestamp_step_ns),
                "start_timestamp": rfc3339(c.start_timestamp_ns),
                "interlace_rows": c.interlace_rows, "disorder_ratio": c.disorder_ratio,
                "time": self.time.name(),
                "disorder_range": dur(c.disorder_range_ns),
                "out_of_order_ratio": c.arrival.out_of_order_ratio,
                "out_of_order_max_steps": c.arrival.out_of_order_max_steps,
                "duplicate_ratio": c.arrival.duplicate_ratio,
                "columns": columns_json(&c.columns), "tags": columns_json(&c.tags),
                });
                if let Some(churn) = c.churn {
                    v["churn_lifetime"] = json!(dur(churn.lifetime_ns));
                }
                v
            }
        };
        let target = self.target.settings();
        let l = &self.load;
        let load = json!({
            "workers": l.workers, "batch": l.batch, "in_flight": l.in_flight,
            "mode": match l.mode { LoadMode::Closed => "closed", LoadMode::Open { .. } => "open" },
            "rate": match l.mode { LoadMode::Closed => None, LoadMode::Open { rate } => Some(rate) },
            "duration": l.duration.map(|d| humantime::format_duration(d).to_string()),
            "rows": l.rows,
            "report_interval": humantime::format_duration(l.report_interval).to_string(),
            "max_retries": l.max_retries,
            "retry_backoff": humantime::format_duration(l.retry_backoff).to_string(),
        });
        let o = &self.output;
        let output = json!({
            "json": o.json.as_ref().map(|p| p.display().to_string()),
            "hlog": o.hlog.as_ref().map(|p| p.display().to_string()),
            "fail_if": o.fail_if.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            "out": o.out.iter().map(|s| match s {
                OutSpec::Csv(p) => format!("csv={}", p.display()),
                OutSpec::Ndjson(p) => format!("ndjson={}", p.display()),
                OutSpec::Html(p) => format!("html={}", p.display()),
                OutSpec::Influx(u) => format!("influx={u}"),
            }).collect::<Vec<_>>(),
            "metrics_addr": o.metrics_addr,
            "verify": o.verify,
        });
        let mut v = json!({
            "name": self.name, "description": self.description, "source": self.source,
            "workload": workload, "target": target, "load": load, "output": output,
        });
        v["mode"] = json!(self.mode.as_str());
        if let Some(q) = &self.query {
            v["query"] = q.to_json();
        }
        if let Some(n) = &self.network {
            v["network"] = n.to_json();
        }
        if let Some(m) = &self.monitor {
            let mut j = match &m.selector {
                Some(tsload_monitor::Selector::Pid(p)) => json!({"pid": p}),
                Some(tsload_monitor::Selector::Name(n)) => json!({"process": n}),
                Some(tsload_monitor::Selector::Unit(u)) => json!({"systemd_unit": u}),
                None => json!({}),
            };
            j["storage"] = json!(m.storage);
            if let Some(d) = &m.data_dir {
                j["data_dir"] = json!(d.display().to_string());
            }
            v["monitor"] = j;
        }
        if !self.sweep.is_empty() {
            v["sweep"] = self
                .sweep
                .iter()
                .map(|a| {
                    let values: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
                    (a.full_key.clone(), json!(values))
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        tsload_redact::json(&mut v);
        v
    }
}

/// Whether a (dotted) key names a secret: its last part is a secret's name.
pub use tsload_redact::is_secret_key;

/// A `--set KEY=VALUE` as it may be shown: a secret key's value hidden, and the password
/// of a URL in the value.
pub fn shown_set(given: &str) -> String {
    match given.split_once('=') {
        Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
        Some((k, v)) => format!("{k}={}", tsload_redact::text(v)),
        None => tsload_redact::text(given),
    }
}

/// How long the shards wait for each other by default.
pub const DEFAULT_BARRIER_TIMEOUT: Duration = Duration::from_secs(600);

/// This process's part of the run and how it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRun {
    pub shard: tsload_core::shard::Shard,
    pub start_at: Option<SystemTime>,
    pub barrier: Option<PathBuf>,
    pub barrier_timeout: Duration,
}

impl Default for ShardRun {
    fn default() -> Self {
        ShardRun {
            shard: tsload_core::shard::Shard::WHOLE,
            start_at: None,
            barrier: None,
            barrier_timeout: DEFAULT_BARRIER_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests;
