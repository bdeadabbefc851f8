//! The scenario's sections, each defined once: the keys it reads with their types,
//! defaults, meanings and the kinds that take them. serde reads files through the structs
//! made here, the parser checks keys against kinds with them, and `docs/keys.md` is
//! rendered from them (a test keeps the file equal to the rendering).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use serde::Deserialize;
use toml::Spanned;

pub use tsload_target::{KeyDefault, KeyDoc};

use KeyDefault::{Said, Toml, Unset};

/// Every kind of a section.
const ALL: &[&str] = &[];

/// Declares a section's struct (each key an optional, spanned value, unknown keys refused)
/// together with its [`KeyDoc`]s and `present()`, from one list of keys.
macro_rules! section {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $(
                $(#[doc = $meaning:literal])+
                $field:ident: $ty:ty = $tyname:literal, $default:expr, $kinds:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[doc = $meaning])+
                pub $field: Option<Spanned<$ty>>,
            )*
        }

        impl $name {
            pub const KEYS: &'static [KeyDoc] = &[$(KeyDoc {
                name: stringify!($field),
                ty: $tyname,
                default: $default,
                kinds: $kinds,
                meaning: concat!($($meaning),+),
            }),*];

            /// Every key the section sets, with its place in the file.
            #[allow(dead_code, reason = "not every section has kinds to check keys against")]
            pub fn present(&self) -> Vec<(&'static str, Range<usize>)> {
                let mut keys = Vec::new();
                $(if let Some(v) = &self.$field {
                    keys.push((stringify!($field), v.span()));
                })*
                keys
            }
        }
    };
}

section! {
    /// The top level of a scenario file: its name and mode, and the sections.
    struct ScenarioFile {
        /// shown in reports
        name: String = "string", Said("the file's name"), ALL;
        /// free text
        description: String = "string", Unset, ALL;
        /// which streams run
        mode: String = "`write` | `query` | `mixed`",
            Said("`query` with a `[query]` section, else `write`"), ALL;
        /// the data set
        workload: WorkloadSection = "table", Unset, ALL;
        /// where rows go
        target: TargetSection = "table", Unset, ALL;
        /// the write stream
        load: LoadSection = "table", Unset, ALL;
        /// reports
        output: OutputSection = "table", Unset, ALL;
        /// the read stream
        query: QuerySection = "table", Unset, ALL;
        /// the impairment
        network: NetworkSection = "table", Unset, ALL;
        /// the server's side
        monitor: MonitorSection = "table", Unset, ALL;
        /// the grid of runs
        sweep: BTreeMap<String, Spanned<toml::Value>> = "table", Unset, ALL;
    }
}

pub const WORKLOAD_KINDS: &[&str] = &["cpu-only", "devops", "iot", "custom", "file"];
const TSBS: &[&str] = &["cpu-only", "devops", "iot"];
const GENERATED: &[&str] = &["cpu-only", "devops", "iot", "custom"];

section! {
    /// `[workload]`: the data written (and the data set queries ask about).
    struct WorkloadSection {
        /// the data set
        kind: String = "`cpu-only` | `devops` | `iot` | `custom` | `file`",
            Toml("\"cpu-only\""), ALL;
        /// same seed, same data
        seed: i64 = "integer", Toml("123"), GENERATED;
        /// line-protocol file to replay; `-` is standard input
        path: String = "string", Said("(required)"), &["file"];
        /// unit of the file's timestamps
        precision: String = "`ns` | `us` | `ms` | `s`", Toml("\"ns\""), &["file"];
        /// hosts or trucks
        scale: i64 = "integer", Toml("100"), TSBS;
        /// first timestamp: RFC 3339, or `now-DURATION` (e.g. `now-1d`) to place the data inside a server's retention
        start: String = "time", Toml("\"2016-01-01T00:00:00Z\""), TSBS;
        /// end of the data: RFC 3339, `now` or `now-DURATION`
        end: String = "time", Said("start + 1 day"), TSBS;
        /// time between a host's rows
        interval: String = "duration", Toml("\"10s\""), TSBS;
        /// each row's time: the data set's own span (`history`), or the clock as the row is sent (`live`: open loop at the fleet's rate, scale / interval readings per second, a row per table each (devops 9, iot 2 less its missing rows; custom: childtable_count / timestamp_step, each table's next row in turn), batches of at most one reading per device, for load.duration or load.rows)
        time: String = "`history` | `live`", Toml("\"history\""), GENERATED;
        /// series churn: the share of the hosts replaced by new ones (new host names, so new series; the old ones stop) every churn_interval of data time, staggered evenly (0: none)
        churn_ratio: f64 = "number 0..1", Toml("0"), GENERATED;
        /// the period churn_ratio is per
        churn_interval: String = "duration", Toml("\"10m\""), GENERATED;
        /// high cardinality: each host's rows carry one of its N pods in turn (a `pod` tag, `pod_0` .. `pod_<N-1>`), so N times the series at the same rows per second; the report counts the devices (host, pod) and series written (1: no pod tag)
        pods_per_host: i64 = "integer", Toml("1"), &["cpu-only", "devops"];
        /// how the ten usage fields move: TSBS's random `walk`, or a shape between 0 and 100 (`constant`: 0, `sine`, `square`, `sawtooth`), one cycle a shape_period, each host's field at its own phase
        shape: String = "`walk` | `constant` | `sine` | `square` | `sawtooth`", Toml("\"walk\""), &["cpu-only"];
        /// one cycle of the shape
        shape_period: String = "duration", Toml("\"1h\""), &["cpu-only"];
        /// Gaussian noise on the shape: its standard deviation as a share of 100
        shape_noise: f64 = "number", Toml("0"), &["cpu-only"];
        /// fields left out
        missing_field_ratio: f64 = "number 0..1", Toml("0.01"), &["iot"];
        /// rows left out
        missing_row_ratio: f64 = "number 0..1", Toml("0.09"), &["iot"];
        /// share of rows sent late: held back, then sent right after their device's first row 1 to out_of_order_max_steps intervals later (one at a time per device, so at most 1 / (1 + (steps + 1) / 2) of its rows); counted in the report as late_rows
        out_of_order_ratio: f64 = "number 0..1", Said("0.14 for iot (TSBS's), 0 otherwise"),
            GENERATED;
        /// how late a late row comes, at most, in intervals (custom: timestamp_step)
        out_of_order_max_steps: i64 = "integer", Toml("6"), GENERATED;
        /// share of rows sent twice, the copy the same in every value right after; counted in the report as duplicate_rows
        duplicate_ratio: f64 = "number 0..1", Toml("0"), GENERATED;
        /// super table name
        stable: String = "string", Toml("\"meters\""), &["custom"];
        /// child tables (devices)
        childtable_count: i64 = "integer", Toml("10000"), &["custom"];
        /// child table name prefix
        childtable_prefix: String = "string", Toml("\"d\""), &["custom"];
        /// rows per child table
        insert_rows: i64 = "integer", Toml("10000"), &["custom"];
        /// time between a table's rows
        timestamp_step: String = "duration", Toml("\"10s\""), &["custom"];
        /// first timestamp
        start_timestamp: String = "time", Toml("\"2017-07-14T02:40:00Z\""), &["custom"];
        /// rows of one table before the next (0: all)
        interlace_rows: i64 = "integer", Toml("0"), &["custom"];
        /// percent of rows out of order
        disorder_ratio: f64 = "number 0..100", Toml("0"), &["custom"];
        /// how far out of order
        disorder_range: String = "duration", Toml("\"1s\""), &["custom"];
        /// field columns
        columns: Vec<Spanned<ColumnEntry>> = "array of `{ type, len, count, min, max, values, shape, period, noise }` (shape: `random` (default) | `constant` | `sine` | `square` | `sawtooth` between min and max, one cycle a period (default 1h, each device's own phase), noise a Gaussian's standard deviation as a share of max - min)",
            Said("R1's: 1 varchar(10) + 10 float"), &["custom"];
        /// tag columns
        tags: Vec<Spanned<ColumnEntry>> = "array, as `columns`", Said("R1's: 1 varchar(10)"),
            &["custom"];
    }
}

/// One entry of `workload.columns` or `workload.tags`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnEntry {
    #[serde(rename = "type")]
    pub data_type: String,
    pub len: Option<i64>,
    pub count: Option<i64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub values: Option<Vec<String>>,
    /// How a numeric column's values move: `random` | `constant` | `sine` | `square` |
    /// `sawtooth`.
    pub shape: Option<String>,
    /// One cycle of a shape, a duration (default 1h).
    pub period: Option<String>,
    /// Gaussian noise on a shape: its standard deviation as a share of max - min.
    pub noise: Option<f64>,
}

/// `[target]`: where the rows go, and how. Its keys are its kind's (each kind lists them
/// in its own crate: `tsload_target::TargetKind::keys`), so the section is read as a table
/// and checked against the chosen kind's list.
#[derive(Debug, Deserialize, Default)]
#[serde(transparent)]
pub struct TargetSection(pub BTreeMap<String, Spanned<toml::Value>>);

impl TargetSection {
    /// Every key the section sets, with its place in the file.
    pub fn present(&self) -> Vec<(&str, Range<usize>)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.span())).collect()
    }
}

/// `target.kind`'s values: the registered kinds, and those this build left out (named
/// so that choosing one says why it is missing).
pub fn target_kinds() -> Vec<&'static str> {
    crate::kinds().names()
}

/// The names a kind with key sets shows in the reference, one per set (`influx v1`,
/// `influx v2`); a kind without, its name.
fn kind_labels(kind: &dyn tsload_target::TargetKind) -> Vec<String> {
    match kind.key_sets() {
        Some(sets) => sets
            .sets
            .iter()
            .map(|(value, _)| format!("{} {value}", kind.name()))
            .collect(),
        None => vec![kind.name().to_string()],
    }
}

/// The label of the set `kind` reads with `section` (`influx v2` when `api = "v2"`), or its
/// name for a kind without sets.
pub fn target_selector(kind: &dyn tsload_target::TargetKind, chosen: Option<&str>) -> String {
    let Some(sets) = kind.key_sets() else {
        return kind.name().to_string();
    };
    let default = kind
        .keys()
        .iter()
        .find(|k| k.name == sets.chooser)
        .and_then(|k| match k.default {
            Toml(v) => Some(v.trim_matches('"')),
            _ => None,
        })
        .unwrap_or(sets.sets[0].0);
    format!("{} {}", kind.name(), chosen.unwrap_or(default))
}

/// `[target]`'s keys as the reference shows them, from every registered kind's own list:
/// one row per key and meaning, naming the kinds (or key sets) that read it.
static TARGET_KEYS: LazyLock<Vec<KeyDoc>> = LazyLock::new(|| {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let kinds = target_kinds();
    let mut rows: Vec<(KeyDoc, Vec<&'static str>)> = vec![(
        KeyDoc {
            name: "kind",
            ty: leak(
                kinds
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(" | "),
            ),
            default: Toml("\"sqlite\""),
            kinds: ALL,
            meaning: "where rows go",
        },
        Vec::new(),
    )];
    for kind in crate::kinds().kinds {
        let labels: Vec<&'static str> = kind_labels(*kind).into_iter().map(leak).collect();
        for key in kind.keys() {
            let set = kind.key_sets().and_then(|sets| {
                sets.sets
                    .iter()
                    .find(|(_, keys)| keys.contains(&key.name))
                    .map(|(value, _)| leak(format!("{} {value}", kind.name())))
            });
            let readers = set.map_or_else(|| labels.clone(), |l| vec![l]);
            let default = key.default;
            let same = rows.iter_mut().find(|(row, _)| {
                row.name == key.name
                    && row.ty == key.ty
                    && row.meaning == key.meaning
                    && row.default == default
            });
            match same {
                Some((_, k)) => k.extend(readers),
                None => rows.push((
                    KeyDoc {
                        name: key.name,
                        ty: key.ty,
                        default,
                        kinds: ALL,
                        meaning: key.meaning,
                    },
                    readers,
                )),
            }
        }
    }
    // Rows of one key together, in the order keys first appear.
    let order: Vec<&str> = rows.iter().map(|(k, _)| k.name).collect();
    let first = |name: &str| order.iter().position(|n| *n == name).unwrap_or(0);
    rows.sort_by_key(|(k, _)| first(k.name));
    rows.into_iter()
        .map(|(mut key, readers)| {
            if !readers.is_empty() {
                key.kinds = Box::leak(readers.into_boxed_slice());
            }
            key
        })
        .collect()
});

section! {
    /// `[load]`: how hard the write stream pushes.
    struct LoadSection {
        /// concurrent writers (`-w`)
        workers: i64 = "integer", Toml("1"), ALL;
        /// rows per request (`-b`)
        batch: i64 = "integer", Toml("1000"), ALL;
        /// requests per worker at once
        in_flight: i64 = "integer", Toml("1"), ALL;
        /// rows/s offered: open loop (`-r`)
        rate: f64 = "number", Said("none: closed loop"), ALL;
        /// stop after (`-d`)
        duration: String = "duration", Unset, ALL;
        /// stop after (`-n`)
        rows: i64 = "integer", Unset, ALL;
        /// progress line and interval records
        report_interval: String = "duration", Toml("\"1s\""), ALL;
        /// retries of a failed request
        max_retries: i64 = "integer", Toml("3"), ALL;
        /// first retry's wait (doubled each time, at most 5 s)
        retry_backoff: String = "duration", Toml("\"100ms\""), ALL;
        /// how long requests in flight after Ctrl-C or SIGTERM may take before they are abandoned, rows unknown (`--grace`); writes and queries
        grace: String = "duration", Toml("\"5s\""), ALL;
        /// the same after `duration` (and `query.duration`) ends: requests sent in its last moments are waited for this long at most
        drain: String = "duration", Toml("\"30s\""), ALL;
    }
}

section! {
    /// `[output]`: where the report goes and what fails the run.
    struct OutputSection {
        /// the JSON report (`--json`)
        json: String = "string", Unset, ALL;
        /// the HdrHistogram interval log (`--hlog`)
        hlog: String = "string", Unset, ALL;
        /// thresholds (`--fail-if`)
        fail_if: Vec<Spanned<String>> = "array of strings", Unset, ALL;
        /// the progress display
        progress: String = "`auto` | `bar` | `plain` | `none`", Toml("\"auto\""), ALL;
        /// after a write run, ask the server what it stored; less than it acknowledged fails the run
        verify: bool = "bool", Toml("true"), ALL;
    }
}

/// `network.backend` values.
pub const NETWORK_BACKENDS: &[&str] = &["proxy", "netem"];

section! {
    /// `[network]`: an impairment in place during the run, and the RTT measured before it.
    struct NetworkSection {
        /// how the impairment is made
        backend: String = "`proxy` | `netem`", Said("(required)"), ALL;
        /// added delay
        delay: String = "duration", Toml("\"0s\""), ALL;
        /// delay variation
        jitter: String = "duration", Toml("\"0s\""), ALL;
        /// packet loss
        loss: String = "string (`0.5%`)", Unset, &["netem"];
        /// bandwidth limit
        rate: String = "string (`100mbit`)", Unset, ALL;
        /// where the delay is added
        direction: String = "`up` | `down` | `both`", Toml("\"up\""), &["proxy"];
        /// interface
        dev: String = "string", Said("(required)"), &["netem"];
        /// network namespace of `dev`
        netns: String = "string", Unset, &["netem"];
        /// allow the interface holding the default route
        allow_default_route: bool = "bool", Toml("false"), &["netem"];
        /// how RTT is measured first
        probe: String = "`app` | `tcp` | `icmp` | `none`", Said("`app` (proxy), `tcp` (netem)"),
            ALL;
        /// probes
        probe_count: i64 = "integer", Toml("100"), ALL;
        /// the app probe's path over HTTP
        probe_path: String = "string", Toml("\"/ping\""), ALL;
    }
}

section! {
    /// `[monitor]`: the server's processes sampled while the run goes on.
    struct MonitorSection {
        /// this process and its descendants (e.g. the postmaster)
        pid: i64 = "integer", Unset, ALL;
        /// every process of this name (`comm`) and their descendants
        process: String = "string", Unset, ALL;
        /// the processes of this unit's cgroup
        systemd_unit: String = "string", Unset, ALL;
        /// the server's data directory: its growth gives bytes per metric
        data_dir: String = "string", Unset, ALL;
        /// ask the database what its tables hold before and after (works remotely; alone,
        /// without a process)
        storage: bool = "bool", Toml("false"), ALL;
    }
}

/// `query.kind` values.
pub const QUERY_KINDS: &[&str] = &[
    "tsbs",
    "oltp_read_write",
    "oltp_read_only",
    "oltp_point_select",
    "oltp_insert",
];
const OLTP: &[&str] = &[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_point_select",
    "oltp_insert",
];
const OLTP_READS: &[&str] = &["oltp_read_write", "oltp_read_only"];

section! {
    /// `[query]`: the read stream.
    struct QuerySection {
        /// the read workload
        kind: String =
            "`tsbs` | `oltp_read_write` | `oltp_read_only` | `oltp_point_select` | `oltp_insert`",
            Said("(required)"), ALL;
        /// concurrent readers
        workers: i64 = "integer", Toml("1"), ALL;
        /// requests/s: open loop
        rate: f64 = "number", Said("none: closed loop"), ALL;
        /// stop after
        duration: String = "duration", Unset, ALL;
        /// stop after this many requests
        queries: i64 = "integer", Unset, ALL;
        /// error budget: stop when exceeded
        max_errors: i64 = "integer", Unset, ALL;
        /// an empty answer is an error
        require_rows: bool = "bool", Toml("false"), ALL;
        /// progress line
        report_interval: String = "duration", Toml("\"1s\""), ALL;
        /// mixed mode only: queries start this long after the writes
        start_after: String = "duration", Unset, ALL;
        /// which queries
        seed: i64 = "integer", Said("123 (tsbs), 0 (oltp)"), ALL;
        /// a request not answered in time fails
        timeout: String = "duration", Unset, ALL;
        /// TSBS query types
        types: Vec<Spanned<String>> = "array of strings", Said("all the target's language has"),
            &["tsbs"];
        /// query language of a line-protocol (influx) target
        dialect: String = "`influxql` | `promql` | `questdb`",
            Said("the target's first: `influxql` for influx, `promql` for prometheus (which takes `metricsql` too)"),
            &["tsbs"];
        /// TimescaleDB's time_bucket (postgres targets)
        time_bucket: bool = "bool", Toml("false"), &["tsbs"];
        /// write the data set first
        preload: bool = "bool", Toml("false"), &["tsbs"];
        /// create and load the tables first
        prepare: bool = "bool", Toml("true"), OLTP;
        /// parallel loaders
        loaders: i64 = "integer", Said("`query.workers`, at most 16"), OLTP;
        /// rows per load INSERT
        load_batch_rows: i64 = "integer", Toml("1000"), OLTP;
        /// sysbench's `--tables`
        tables: i64 = "integer", Toml("1"), OLTP;
        /// sysbench's `--table-size`
        table_size: i64 = "integer", Toml("10000"), OLTP;
        /// sysbench's `--range-size`
        range_size: i64 = "integer", Toml("100"), OLTP_READS;
        /// sysbench's `--point-selects`
        point_selects: i64 = "integer", Toml("10"), OLTP_READS;
        /// sysbench's `--simple-ranges`
        simple_ranges: i64 = "integer", Toml("1"), OLTP_READS;
        /// sysbench's `--sum-ranges`
        sum_ranges: i64 = "integer", Toml("1"), OLTP_READS;
        /// sysbench's `--order-ranges`
        order_ranges: i64 = "integer", Toml("1"), OLTP_READS;
        /// sysbench's `--distinct-ranges`
        distinct_ranges: i64 = "integer", Toml("1"), OLTP_READS;
        /// sysbench's `--range-selects`
        range_selects: bool = "bool", Toml("true"), OLTP_READS;
        /// sysbench's `--skip-trx`
        skip_trx: bool = "bool", Toml("false"), OLTP_READS;
        /// sysbench's `--index-updates`
        index_updates: i64 = "integer", Toml("1"), &["oltp_read_write"];
        /// sysbench's `--non-index-updates`
        non_index_updates: i64 = "integer", Toml("1"), &["oltp_read_write"];
        /// sysbench's `--delete-inserts`
        delete_inserts: i64 = "integer", Toml("1"), &["oltp_read_write"];
        /// sysbench's `--rand-type`
        rand_type: String = "`uniform` | `special`", Toml("\"uniform\""), OLTP;
        /// sysbench's `--create-secondary`, and when
        secondary_index: String = "`after_load` | `before_load` | `off`", Toml("\"after_load\""),
            OLTP;
        /// sysbench's `--mysql-storage-engine` (mysql targets)
        mysql_storage_engine: String = "string", Toml("\"innodb\""), OLTP;
    }
}

/// `[sweep]`'s short names and the keys they set; any other key is written in full.
pub const SWEEP_SHORT_KEYS: &[(&str, &str)] = &[
    ("delay", "network.delay"),
    ("jitter", "network.jitter"),
    ("loss", "network.loss"),
    ("workers", "load.workers"),
    ("batch", "load.batch"),
    ("in_flight", "load.in_flight"),
    ("duration", "load.duration"),
    ("rows", "load.rows"),
];

/// A section as the reference shows it.
pub struct SectionDoc {
    /// `""` for the top level.
    pub name: &'static str,
    pub note: &'static str,
    pub keys: &'static [KeyDoc],
    /// Names for sets of kinds, used instead of listing them.
    pub groups: &'static [(&'static str, &'static [&'static str])],
    /// Every kind of the section.
    pub kinds: &'static [&'static str],
    /// The key that names the kind (`kind`, or `backend` in `[network]`).
    pub kind_key: &'static str,
}

impl SectionDoc {
    /// The keys `kind` reads, in definition order (never `kind` itself).
    pub fn keys_of(&self, kind: &str) -> Vec<&'static str> {
        self.keys
            .iter()
            .filter(|k| k.name != self.kind_key && (k.kinds.is_empty() || k.kinds.contains(&kind)))
            .map(|k| k.name)
            .collect()
    }

    /// The kinds that read `key` (every kind when the key says none).
    pub fn kinds_of(&self, key: &str) -> Vec<&'static str> {
        let rows: Vec<&KeyDoc> = self.keys.iter().filter(|k| k.name == key).collect();
        if rows.is_empty() || rows.iter().any(|k| k.kinds.is_empty()) {
            return self.kinds.to_vec();
        }
        let mut kinds: Vec<&'static str> =
            rows.iter().flat_map(|k| k.kinds.iter().copied()).collect();
        kinds.sort_by_key(|k| self.kinds.iter().position(|o| o == k));
        kinds.dedup();
        kinds
    }
}

pub const TOP_LEVEL: SectionDoc = SectionDoc {
    name: "",
    note: "",
    keys: ScenarioFile::KEYS,
    groups: &[],
    kinds: ALL,
    kind_key: "",
};
pub const WORKLOAD: SectionDoc = SectionDoc {
    name: "workload",
    note: "",
    keys: WorkloadSection::KEYS,
    groups: &[("TSBS kinds", TSBS)],
    kinds: WORKLOAD_KINDS,
    kind_key: "kind",
};
/// `[target]`, from the registered kinds.
pub static TARGET: LazyLock<SectionDoc> = LazyLock::new(|| {
    let mut groups = Vec::new();
    let mut notes = Vec::new();
    let mut kinds = Vec::new();
    for kind in crate::kinds().kinds {
        let labels: Vec<&'static str> = kind_labels(*kind)
            .into_iter()
            .map(|l| &*Box::leak(l.into_boxed_str()))
            .collect();
        if let Some(sets) = kind.key_sets() {
            notes.push(format!(
                "`{}` has a set of keys for each `{}`: {} below.",
                kind.name(),
                sets.chooser,
                labels
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            groups.push((kind.name(), &*Box::leak(labels.clone().into_boxed_slice())));
        }
        kinds.extend(labels);
    }
    SectionDoc {
        name: "target",
        note: Box::leak(
            format!(
                "Each kind's keys are its own, listed in its crate. {}",
                notes.join(" ")
            )
            .into_boxed_str(),
        ),
        keys: &TARGET_KEYS,
        groups: Box::leak(groups.into_boxed_slice()),
        kinds: Box::leak(kinds.into_boxed_slice()),
        kind_key: "kind",
    }
});
pub const LOAD: SectionDoc = SectionDoc {
    name: "load",
    note: "",
    keys: LoadSection::KEYS,
    groups: &[],
    kinds: ALL,
    kind_key: "",
};
pub const OUTPUT: SectionDoc = SectionDoc {
    name: "output",
    note: "",
    keys: OutputSection::KEYS,
    groups: &[],
    kinds: ALL,
    kind_key: "",
};
pub const NETWORK: SectionDoc = SectionDoc {
    name: "network",
    note: "Kinds here are `backend`s.",
    keys: NetworkSection::KEYS,
    groups: &[],
    kinds: NETWORK_BACKENDS,
    kind_key: "backend",
};
pub const MONITOR: SectionDoc = SectionDoc {
    name: "monitor",
    note: "The database server's processes, sampled from /proc while the run goes on (the \
           server on this machine). Exactly one of `pid`, `process`, `systemd_unit`, unless \
           only `storage` is set.",
    keys: MonitorSection::KEYS,
    groups: &[],
    kinds: ALL,
    kind_key: "",
};
pub const QUERY: SectionDoc = SectionDoc {
    name: "query",
    note: "",
    keys: QuerySection::KEYS,
    groups: &[("oltp", OLTP)],
    kinds: QUERY_KINDS,
    kind_key: "kind",
};

/// Every section, in the reference's order.
pub static SECTIONS: LazyLock<[&SectionDoc; 8]> = LazyLock::new(|| {
    [
        &TOP_LEVEL, &WORKLOAD, &*TARGET, &LOAD, &OUTPUT, &NETWORK, &MONITOR, &QUERY,
    ]
});

/// The default the reference documents for `key` (`section.key`, `[target]` aside), as a
/// TOML value: what the parser reads when the key is left out, so that a default is
/// written once, in its section's definition. `None` when the key has no TOML default.
pub fn documented_default(key: &str) -> Option<toml::Value> {
    let (section, name) = key.split_once('.')?;
    let doc = SECTIONS
        .iter()
        .filter(|s| s.name == section && s.name != "target")
        .flat_map(|s| s.keys.iter())
        .find(|k| k.name == name)?;
    let Toml(text) = doc.default else {
        return None;
    };
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()?
        .remove("v")
}

/// The key reference, `docs/keys.md`, rendered from the definitions above.
pub fn keys_markdown() -> String {
    let mut out = String::from(
        "# Scenario keys\n\n\
         Every key a scenario file (or `--set section.key=value`) takes, with its type and \
         default\n\
         (`tsload keys [SECTION]` prints the same). Durations are strings (`\"10s\"`, \
         `\"500ms\"`, `\"1h 30m\"`,\n\
         `\"0.5ms\"`), times RFC 3339 strings. A key whose meaning starts with kinds in \
         parentheses is read\n\
         by those kinds of its section only; the others refuse it. Rendered from\n\
         `crates/scenario/src/sections.rs`, the parser's own definitions, and for\n\
         `[target]` from each kind's own list in its crate, by the test\n\
         `keys_reference_is_rendered_from_the_sections` (it rewrites this file when it \
         differs).\n",
    );
    for section in SECTIONS.iter() {
        out.push('\n');
        out.push_str(&section_markdown(section));
    }
    out.push('\n');
    out.push_str(&sweep_markdown());
    out
}

/// The names `tsload keys SECTION` takes.
pub const SECTION_NAMES: &[&str] = &[
    "top", "workload", "target", "load", "output", "network", "monitor", "query", "sweep",
];

/// One section of the reference (`top` for the top level), or `None` for no such section.
pub fn section_reference(name: &str) -> Option<String> {
    match name {
        "sweep" => Some(sweep_markdown()),
        "top" => Some(section_markdown(&TOP_LEVEL)),
        _ => SECTIONS
            .iter()
            .find(|s| !s.name.is_empty() && s.name == name)
            .map(|s| section_markdown(s)),
    }
}

fn section_markdown(section: &SectionDoc) -> String {
    let title = if section.name.is_empty() {
        "top level".to_string()
    } else {
        format!("[{}]", section.name)
    };
    let mut out = format!("## {title}\n\n");
    if !section.note.is_empty() {
        out.push_str(section.note);
        out.push_str("\n\n");
    }
    out.push_str("| key | type | default | meaning |\n|---|---|---|---|\n");
    for key in section.keys.iter().filter(|k| k.ty != "table") {
        let default = match key.default {
            Unset => "none".to_string(),
            Toml(v) => format!("`{}`", v.trim_matches('"')),
            Said(s) => s.to_string(),
        };
        let scope = if key.kinds.is_empty() {
            String::new()
        } else {
            format!("({}) ", scope_label(section, key.kinds))
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {scope}{} |\n",
            key.name,
            key.ty.replace('|', "\\|"),
            default.replace('|', "\\|"),
            key.meaning.trim(),
        ));
    }
    out
}

fn sweep_markdown() -> String {
    let mut out = String::from(
        "## [sweep]\n\nLists of values, one run per point of the grid (first key \
         outermost). The short names:\n\n\
         | key | type | default | meaning |\n|---|---|---|---|\n",
    );
    for (short, full) in SWEEP_SHORT_KEYS {
        out.push_str(&format!("| `{short}` | array | none | `{full}` |\n"));
    }
    out.push_str(
        "\nAny other key is written in full, quoted: `\"load.rate\" = [1000, 2000]`, \
         `\"query.workers\" = [80, 160]`.\n",
    );
    out
}

/// `kinds` as the reference names them: a whole group by its name.
fn scope_label(section: &SectionDoc, kinds: &[&str]) -> String {
    let mut left: Vec<&str> = kinds.to_vec();
    let mut names = Vec::new();
    for (name, group) in section.groups {
        if group.iter().all(|k| left.contains(k)) {
            left.retain(|k| !group.contains(k));
            names.push(*name);
        }
    }
    names.extend(left);
    names.join(", ")
}
