//! The 15 TSBS devops query types (`tsbs_generate_queries --use-case=devops`): their
//! names, and what each one asks for (metrics, hosts, time window, grouping), as TSBS
//! defines them; and the crate's one error type, [`QueryError`].

use std::fmt;
use std::str::FromStr;

/// Nanoseconds in a minute and in an hour.
pub const MINUTE_NS: i64 = 60_000_000_000;
pub const HOUR_NS: i64 = 60 * MINUTE_NS;

/// TSBS's cpu metrics (fields of the `cpu` table), in TSBS's order: the ones the
/// workload writes. Queries that read "N metrics" read the first N.
pub const CPU_METRICS: [&str; 10] = tsload_workload::CPU_FIELDS;

/// The `usage_user` threshold of the high-cpu queries (`usage_user > 90.0`).
pub const HIGH_CPU_THRESHOLD: f64 = 90.0;

/// Buckets the groupby-orderby-limit query returns (`LIMIT 5`).
pub const GROUPBY_ORDERBY_LIMIT_ROWS: usize = 5;

/// One TSBS devops query type. The names (`Display`, `FromStr`) are TSBS's.
///
/// | type | metrics | hosts | window | grouping |
/// |---|---|---|---|---|
/// | `single-groupby-M-H-T` | max of the first M | H random | T hours | per minute |
/// | `cpu-max-all-H` | max of all 10 | H random | 8 h | per hour |
/// | `double-groupby-M` (`all` = 10) | mean of the first M | all | 12 h | per hour and host |
/// | `high-cpu-1`, `high-cpu-all` | every column of rows with `usage_user > 90` | 1 random / all | 12 h | none |
/// | `groupby-orderby-limit` | max of usage_user | all | before a random end | per minute, last 5 |
/// | `lastpoint` | every column of each host's last row | all | all data | per host |
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryType {
    SingleGroupby_1_1_1,
    SingleGroupby_1_1_12,
    SingleGroupby_1_8_1,
    SingleGroupby_5_1_1,
    SingleGroupby_5_1_12,
    SingleGroupby_5_8_1,
    CpuMaxAll_1,
    CpuMaxAll_8,
    DoubleGroupby_1,
    DoubleGroupby_5,
    DoubleGroupby_All,
    HighCpu_1,
    HighCpu_All,
    GroupbyOrderbyLimit,
    Lastpoint,
}

/// The family of a query type: what its text looks like in every dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryShape {
    /// Max of some metrics for some hosts, per minute (single-groupby) or per hour
    /// (cpu-max-all), over one window.
    MaxPerBucket,
    /// Mean of some metrics per hour and per host, all hosts, over one window.
    MeanPerBucketAndHost,
    /// Every column of the rows with `usage_user > 90` in one window, for some or all
    /// hosts.
    HighCpu,
    /// Max of usage_user per minute over all hosts before the window's end, the last 5
    /// minutes, newest first.
    LastBucketsBeforeEnd,
    /// Every column of each host's last row, over all data.
    LastPointPerHost,
}

impl QueryType {
    /// Every type, in TSBS's order.
    pub const ALL: [QueryType; 15] = [
        QueryType::SingleGroupby_1_1_1,
        QueryType::SingleGroupby_1_1_12,
        QueryType::SingleGroupby_1_8_1,
        QueryType::SingleGroupby_5_1_1,
        QueryType::SingleGroupby_5_1_12,
        QueryType::SingleGroupby_5_8_1,
        QueryType::CpuMaxAll_1,
        QueryType::CpuMaxAll_8,
        QueryType::DoubleGroupby_1,
        QueryType::DoubleGroupby_5,
        QueryType::DoubleGroupby_All,
        QueryType::HighCpu_1,
        QueryType::HighCpu_All,
        QueryType::GroupbyOrderbyLimit,
        QueryType::Lastpoint,
    ];

    /// TSBS's name, e.g. `single-groupby-1-1-1`.
    pub fn name(self) -> &'static str {
        match self {
            QueryType::SingleGroupby_1_1_1 => "single-groupby-1-1-1",
            QueryType::SingleGroupby_1_1_12 => "single-groupby-1-1-12",
            QueryType::SingleGroupby_1_8_1 => "single-groupby-1-8-1",
            QueryType::SingleGroupby_5_1_1 => "single-groupby-5-1-1",
            QueryType::SingleGroupby_5_1_12 => "single-groupby-5-1-12",
            QueryType::SingleGroupby_5_8_1 => "single-groupby-5-8-1",
            QueryType::CpuMaxAll_1 => "cpu-max-all-1",
            QueryType::CpuMaxAll_8 => "cpu-max-all-8",
            QueryType::DoubleGroupby_1 => "double-groupby-1",
            QueryType::DoubleGroupby_5 => "double-groupby-5",
            QueryType::DoubleGroupby_All => "double-groupby-all",
            QueryType::HighCpu_1 => "high-cpu-1",
            QueryType::HighCpu_All => "high-cpu-all",
            QueryType::GroupbyOrderbyLimit => "groupby-orderby-limit",
            QueryType::Lastpoint => "lastpoint",
        }
    }

    pub fn shape(self) -> QueryShape {
        match self {
            QueryType::SingleGroupby_1_1_1
            | QueryType::SingleGroupby_1_1_12
            | QueryType::SingleGroupby_1_8_1
            | QueryType::SingleGroupby_5_1_1
            | QueryType::SingleGroupby_5_1_12
            | QueryType::SingleGroupby_5_8_1
            | QueryType::CpuMaxAll_1
            | QueryType::CpuMaxAll_8 => QueryShape::MaxPerBucket,
            QueryType::DoubleGroupby_1
            | QueryType::DoubleGroupby_5
            | QueryType::DoubleGroupby_All => QueryShape::MeanPerBucketAndHost,
            QueryType::HighCpu_1 | QueryType::HighCpu_All => QueryShape::HighCpu,
            QueryType::GroupbyOrderbyLimit => QueryShape::LastBucketsBeforeEnd,
            QueryType::Lastpoint => QueryShape::LastPointPerHost,
        }
    }

    /// How many random hosts the query names; 0 for the queries over all hosts.
    pub fn hosts(self) -> u32 {
        match self {
            QueryType::SingleGroupby_1_1_1
            | QueryType::SingleGroupby_1_1_12
            | QueryType::SingleGroupby_5_1_1
            | QueryType::SingleGroupby_5_1_12
            | QueryType::CpuMaxAll_1
            | QueryType::HighCpu_1 => 1,
            QueryType::SingleGroupby_1_8_1
            | QueryType::SingleGroupby_5_8_1
            | QueryType::CpuMaxAll_8 => 8,
            QueryType::DoubleGroupby_1
            | QueryType::DoubleGroupby_5
            | QueryType::DoubleGroupby_All
            | QueryType::HighCpu_All
            | QueryType::GroupbyOrderbyLimit
            | QueryType::Lastpoint => 0,
        }
    }

    /// The metrics the query aggregates (for high-cpu, lastpoint: the ones it returns,
    /// with `SELECT *`; for groupby-orderby-limit: usage_user).
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            QueryType::SingleGroupby_1_1_1
            | QueryType::SingleGroupby_1_1_12
            | QueryType::SingleGroupby_1_8_1
            | QueryType::DoubleGroupby_1
            | QueryType::GroupbyOrderbyLimit => &CPU_METRICS[..1],
            QueryType::SingleGroupby_5_1_1
            | QueryType::SingleGroupby_5_1_12
            | QueryType::SingleGroupby_5_8_1
            | QueryType::DoubleGroupby_5 => &CPU_METRICS[..5],
            QueryType::CpuMaxAll_1
            | QueryType::CpuMaxAll_8
            | QueryType::DoubleGroupby_All
            | QueryType::HighCpu_1
            | QueryType::HighCpu_All
            | QueryType::Lastpoint => &CPU_METRICS,
        }
    }

    /// Length of the random time window, ns; `None` for lastpoint (all data). For
    /// groupby-orderby-limit only the window's end is used (TSBS: the end of a random
    /// hour).
    pub fn window_ns(self) -> Option<i64> {
        match self {
            QueryType::SingleGroupby_1_1_1
            | QueryType::SingleGroupby_1_8_1
            | QueryType::SingleGroupby_5_1_1
            | QueryType::SingleGroupby_5_8_1
            | QueryType::GroupbyOrderbyLimit => Some(HOUR_NS),
            QueryType::SingleGroupby_1_1_12 | QueryType::SingleGroupby_5_1_12 => Some(12 * HOUR_NS),
            QueryType::CpuMaxAll_1 | QueryType::CpuMaxAll_8 => Some(8 * HOUR_NS),
            QueryType::DoubleGroupby_1
            | QueryType::DoubleGroupby_5
            | QueryType::DoubleGroupby_All
            | QueryType::HighCpu_1
            | QueryType::HighCpu_All => Some(12 * HOUR_NS),
            QueryType::Lastpoint => None,
        }
    }

    /// Width of the time buckets the query groups by, ns; `None` when it has none.
    pub fn bucket_ns(self) -> Option<i64> {
        match self.shape() {
            QueryShape::MaxPerBucket => match self {
                QueryType::CpuMaxAll_1 | QueryType::CpuMaxAll_8 => Some(HOUR_NS),
                _ => Some(MINUTE_NS),
            },
            QueryShape::MeanPerBucketAndHost => Some(HOUR_NS),
            QueryShape::LastBucketsBeforeEnd => Some(MINUTE_NS),
            QueryShape::HighCpu | QueryShape::LastPointPerHost => None,
        }
    }

    /// The type named `name` (TSBS's name).
    pub fn from_name(name: &str) -> Result<QueryType, QueryError> {
        QueryType::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| QueryError::UnknownType {
                name: name.to_string(),
            })
    }
}

impl fmt::Display for QueryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for QueryType {
    type Err = QueryError;

    fn from_str(s: &str) -> Result<Self, QueryError> {
        QueryType::from_name(s)
    }
}

/// Every type's name, comma-separated, for messages.
pub(crate) fn all_names() -> String {
    QueryType::ALL.map(QueryType::name).join(", ")
}

/// The bucket width as the dialects write it: `1m` or `1h`.
pub(crate) fn bucket_unit(bucket_ns: i64) -> BucketUnit {
    if bucket_ns == HOUR_NS {
        BucketUnit::Hour
    } else {
        BucketUnit::Minute
    }
}

/// The two bucket widths TSBS devops queries use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketUnit {
    Minute,
    Hour,
}

impl BucketUnit {
    pub fn ns(self) -> i64 {
        match self {
            BucketUnit::Minute => MINUTE_NS,
            BucketUnit::Hour => HOUR_NS,
        }
    }

    /// `minute` or `hour`: PostgreSQL's `date_trunc` field, and the SQL column alias.
    pub fn word(self) -> &'static str {
        match self {
            BucketUnit::Minute => "minute",
            BucketUnit::Hour => "hour",
        }
    }

    /// `1m` or `1h`: InfluxQL, QuestDB, TDengine and PromQL durations.
    pub fn short(self) -> &'static str {
        match self {
            BucketUnit::Minute => "1m",
            BucketUnit::Hour => "1h",
        }
    }
}

/// Why a query workload cannot be built or a query cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A setting of the workload is out of range; `key` names it (`scale`, `end`,
    /// `types`, `queries`, ...).
    #[error("{key}: {message}")]
    Config { key: String, message: String },

    /// No such TSBS devops query type.
    #[error("unknown query type {name:?}; expected one of: {}", all_names())]
    UnknownType { name: String },

    /// The dialect has no equivalent of this query type.
    #[error("query type {query_type} cannot be expressed in {dialect}: {reason}")]
    Unsupported {
        query_type: QueryType,
        dialect: &'static str,
        reason: &'static str,
    },

    /// A [`crate::QuerySpec`] that does not fit its query type (wrong host count, no
    /// window, ...).
    #[error("query spec for {query_type}: {message}")]
    BadSpec {
        query_type: QueryType,
        message: String,
    },
}

impl QueryError {
    pub(crate) fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        QueryError::Config {
            key: key.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_tsbs_names() {
        for t in QueryType::ALL {
            assert_eq!(t.name().parse::<QueryType>().unwrap(), t);
            assert_eq!(t.to_string(), t.name());
        }
        let e = "single-groupby-2-1-1".parse::<QueryType>().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"single-groupby-2-1-1\""), "{msg}");
        assert!(
            msg.contains("lastpoint") && msg.contains("cpu-max-all-8"),
            "{msg}"
        );
    }

    #[test]
    fn single_groupby_names_read_metrics_hosts_hours() {
        for t in QueryType::ALL {
            let Some(rest) = t.name().strip_prefix("single-groupby-") else {
                continue;
            };
            let n: Vec<i64> = rest.split('-').map(|x| x.parse().unwrap()).collect();
            assert_eq!(t.metrics().len() as i64, n[0], "{t}");
            assert_eq!(t.hosts() as i64, n[1], "{t}");
            assert_eq!(t.window_ns(), Some(n[2] * HOUR_NS), "{t}");
            assert_eq!(t.bucket_ns(), Some(MINUTE_NS), "{t}");
        }
    }

    #[test]
    fn the_other_types_follow_tsbs() {
        use QueryType::*;
        assert_eq!(CpuMaxAll_8.hosts(), 8);
        assert_eq!(CpuMaxAll_1.window_ns(), Some(8 * HOUR_NS));
        assert_eq!(CpuMaxAll_1.bucket_ns(), Some(HOUR_NS));
        assert_eq!(CpuMaxAll_1.metrics().len(), 10);
        assert_eq!(DoubleGroupby_5.metrics(), &CPU_METRICS[..5]);
        assert_eq!(DoubleGroupby_All.metrics().len(), 10);
        assert_eq!(DoubleGroupby_1.window_ns(), Some(12 * HOUR_NS));
        assert_eq!(DoubleGroupby_1.hosts(), 0);
        assert_eq!(HighCpu_1.hosts(), 1);
        assert_eq!(HighCpu_All.hosts(), 0);
        assert_eq!(HighCpu_All.window_ns(), Some(12 * HOUR_NS));
        assert_eq!(HighCpu_All.bucket_ns(), None);
        assert_eq!(GroupbyOrderbyLimit.window_ns(), Some(HOUR_NS));
        assert_eq!(GroupbyOrderbyLimit.bucket_ns(), Some(MINUTE_NS));
        assert_eq!(Lastpoint.window_ns(), None);
        assert_eq!(Lastpoint.hosts(), 0);
    }
}
