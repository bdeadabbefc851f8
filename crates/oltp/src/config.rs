//! The workload's options (sysbench's names and defaults), the names it accepts, and their
//! validation with errors naming the option, the value and what is allowed.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// Largest `table_size` and `range_size`: `id` and `k` are SQL `INTEGER`s.
pub const MAX_TABLE_SIZE: u32 = i32::MAX as u32;
/// Largest number of tables.
pub const MAX_TABLES: u32 = 100_000;
/// Largest count of one statement type per transaction (`point_selects`, ...).
pub const MAX_PER_TRANSACTION: u32 = 100_000;
/// Bind parameters per loaded row: id, k, c, pad.
pub const PARAMS_PER_LOAD_ROW: u32 = 4;

/// Why a configuration was refused: which option, which value, what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OltpError {
    #[error("option `{option}`: value {value} is out of range; allowed: {allowed}")]
    OutOfRange {
        option: &'static str,
        value: u64,
        allowed: String,
    },
    #[error("option `{option}`: unknown value `{value}`; allowed: {allowed}")]
    UnknownValue {
        option: &'static str,
        value: String,
        allowed: &'static str,
    },
    #[error("option `{option}`: value `{value}` is not allowed; allowed: {allowed}")]
    Invalid {
        option: &'static str,
        value: String,
        allowed: &'static str,
    },
    #[error(
        "{kind} would run no statement per transaction; allowed: at least one of \
         point_selects{ranges}{writes} above 0"
    )]
    EmptyTransaction {
        kind: &'static str,
        /// The range options that count (empty when `range_selects` is false).
        ranges: &'static str,
        /// The write options that count (empty for `oltp_read_only`).
        writes: &'static str,
    },
}

impl OltpError {
    /// The option the error is about (`kind` for an empty transaction).
    pub fn option(&self) -> &'static str {
        match self {
            OltpError::OutOfRange { option, .. }
            | OltpError::UnknownValue { option, .. }
            | OltpError::Invalid { option, .. } => option,
            OltpError::EmptyTransaction { .. } => "kind",
        }
    }
}

/// The sysbench test a workload runs; each is one request kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OltpKind {
    /// `oltp_read_write`: point selects, four kinds of range selects, an index update, a
    /// non-index update and a DELETE + INSERT of the same id, in one transaction.
    ReadWrite,
    /// `oltp_read_only`: the reads of `oltp_read_write`, in one transaction.
    ReadOnly,
    /// `oltp_point_select`: one point select, no explicit transaction.
    PointSelect,
    /// `oltp_insert`: one single-row INSERT (id from auto-increment), no explicit
    /// transaction.
    Insert,
}

impl OltpKind {
    pub const ALL: [OltpKind; 4] = [
        OltpKind::ReadWrite,
        OltpKind::ReadOnly,
        OltpKind::PointSelect,
        OltpKind::Insert,
    ];
    /// The accepted names, for error messages.
    pub const NAMES: &'static str =
        "oltp_read_write, oltp_read_only, oltp_point_select, oltp_insert";

    /// sysbench's test name, also the request kind's name.
    pub fn name(self) -> &'static str {
        match self {
            OltpKind::ReadWrite => "oltp_read_write",
            OltpKind::ReadOnly => "oltp_read_only",
            OltpKind::PointSelect => "oltp_point_select",
            OltpKind::Insert => "oltp_insert",
        }
    }

    /// The options (fields of [`OltpConfig`], by sysbench name) this kind reads; the
    /// others are ignored by it, so a caller can refuse them as keys of another kind.
    /// `kind` and `dialect` are always read.
    pub fn options(self) -> &'static [&'static str] {
        // Shared options first, then the reads, then the writes: each kind is a prefix.
        const OPTIONS: [&str; 18] = [
            "tables",
            "table_size",
            "rand_type",
            "seed",
            "secondary_index",
            "mysql_storage_engine",
            "load_batch_rows",
            "range_size",
            "point_selects",
            "simple_ranges",
            "sum_ranges",
            "order_ranges",
            "distinct_ranges",
            "range_selects",
            "skip_trx",
            "index_updates",
            "non_index_updates",
            "delete_inserts",
        ];
        match self {
            OltpKind::ReadWrite => &OPTIONS,
            OltpKind::ReadOnly => &OPTIONS[..15],
            OltpKind::PointSelect | OltpKind::Insert => &OPTIONS[..7],
        }
    }
}

impl fmt::Display for OltpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OltpKind {
    type Err = OltpError;

    fn from_str(s: &str) -> Result<Self, OltpError> {
        OltpKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| OltpError::UnknownValue {
                option: "kind",
                value: s.to_string(),
                allowed: OltpKind::NAMES,
            })
    }
}

/// The SQL dialect the statements are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MySQL, MariaDB, GreatSQL: `?` placeholders, `INTEGER NOT NULL AUTO_INCREMENT`,
    /// `/*! ENGINE = ... */`.
    Mysql,
    /// PostgreSQL: `$1..$n` placeholders, `SERIAL`.
    Postgres,
    /// SQLite: `?` placeholders, `INTEGER PRIMARY KEY` (the rowid).
    Sqlite,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Mysql, Dialect::Postgres, Dialect::Sqlite];
    /// The accepted names, for error messages.
    pub const NAMES: &'static str = "mysql, postgres, sqlite";

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Mysql => "mysql",
            Dialect::Postgres => "postgres",
            Dialect::Sqlite => "sqlite",
        }
    }

    /// The most bind parameters one statement may carry: 65,535 for MySQL and
    /// PostgreSQL (a 16-bit count), 32,766 for SQLite (`SQLITE_MAX_VARIABLE_NUMBER`).
    pub fn max_params(self) -> u32 {
        match self {
            Dialect::Mysql | Dialect::Postgres => 65_535,
            Dialect::Sqlite => 32_766,
        }
    }

    /// The largest `load_batch_rows` (rows of one multi-row INSERT) the dialect takes.
    pub fn max_load_batch_rows(self) -> u32 {
        self.max_params() / PARAMS_PER_LOAD_ROW
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dialect {
    type Err = OltpError;

    fn from_str(s: &str) -> Result<Self, OltpError> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| OltpError::UnknownValue {
                option: "dialect",
                value: s.to_string(),
                allowed: Dialect::NAMES,
            })
    }
}

/// sysbench's `--rand-type`: the distribution of ids and `k` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RandType {
    /// Every id equally likely. sysbench 1.1's default.
    #[default]
    Uniform,
    /// sysbench 1.0's default (`--rand-spec-iter=12 --rand-spec-pct=1
    /// --rand-spec-res=75`): 75% of draws fall in the middle 1% of the range, the rest
    /// follow a bell around the middle.
    Special,
}

impl RandType {
    /// The accepted names, for error messages.
    pub const NAMES: &'static str = "uniform, special";

    pub fn name(self) -> &'static str {
        match self {
            RandType::Uniform => "uniform",
            RandType::Special => "special",
        }
    }
}

impl fmt::Display for RandType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RandType {
    type Err = OltpError;

    fn from_str(s: &str) -> Result<Self, OltpError> {
        match s {
            "uniform" => Ok(RandType::Uniform),
            "special" => Ok(RandType::Special),
            _ => Err(OltpError::UnknownValue {
                option: "rand_type",
                value: s.to_string(),
                allowed: RandType::NAMES,
            }),
        }
    }
}

/// When the secondary index `k_N` on `sbtestN(k)` is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SecondaryIndex {
    /// After the data is loaded, as sysbench's prepare does (loading is faster without
    /// it): the loader that finishes last sends `CREATE INDEX` once every loader has
    /// executed its last INSERT (see [`crate::LoadSource`]).
    #[default]
    AfterLoad,
    /// In [`tsload_core::QueryWorkload::setup`], before the load (slower loading; for
    /// callers whose loaders do not execute each request before asking for the next).
    BeforeLoad,
    /// Never (sysbench's `--create_secondary=off`).
    Off,
}

impl SecondaryIndex {
    /// The accepted names, for error messages.
    pub const NAMES: &'static str = "after_load, before_load, off";

    pub fn name(self) -> &'static str {
        match self {
            SecondaryIndex::AfterLoad => "after_load",
            SecondaryIndex::BeforeLoad => "before_load",
            SecondaryIndex::Off => "off",
        }
    }
}

impl fmt::Display for SecondaryIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SecondaryIndex {
    type Err = OltpError;

    fn from_str(s: &str) -> Result<Self, OltpError> {
        match s {
            "after_load" => Ok(SecondaryIndex::AfterLoad),
            "before_load" => Ok(SecondaryIndex::BeforeLoad),
            "off" => Ok(SecondaryIndex::Off),
            _ => Err(OltpError::UnknownValue {
                option: "secondary_index",
                value: s.to_string(),
                allowed: SecondaryIndex::NAMES,
            }),
        }
    }
}

/// Everything that fixes the workload. Field names are sysbench's option names; defaults
/// ([`OltpConfig::new`]) are sysbench's.
#[derive(Debug, Clone, PartialEq)]
pub struct OltpConfig {
    pub kind: OltpKind,
    pub dialect: Dialect,
    /// Tables `sbtest1..sbtest{tables}` (default 1).
    pub tables: u32,
    /// Rows loaded per table, ids 1..=table_size (default 10,000).
    pub table_size: u32,
    /// Rows of a range select: `id BETWEEN x AND x + range_size - 1` (default 100).
    pub range_size: u32,
    /// `SELECT c ... WHERE id=?` per transaction (default 10; `oltp_point_select` always
    /// runs one per request, as sysbench does).
    pub point_selects: u32,
    /// `SELECT c ... BETWEEN` per transaction (default 1).
    pub simple_ranges: u32,
    /// `SELECT SUM(k) ... BETWEEN` per transaction (default 1).
    pub sum_ranges: u32,
    /// `SELECT c ... BETWEEN ... ORDER BY c` per transaction (default 1).
    pub order_ranges: u32,
    /// `SELECT DISTINCT c ... BETWEEN ... ORDER BY c` per transaction (default 1).
    pub distinct_ranges: u32,
    /// `UPDATE ... SET k=k+1 WHERE id=?` per transaction (default 1).
    pub index_updates: u32,
    /// `UPDATE ... SET c=? WHERE id=?` per transaction (default 1).
    pub non_index_updates: u32,
    /// DELETE + INSERT of one id per transaction (default 1).
    pub delete_inserts: u32,
    /// Whether the four range selects run at all (default true).
    pub range_selects: bool,
    /// Run the statements in autocommit mode instead of one transaction (default false).
    pub skip_trx: bool,
    /// Distribution of ids and `k` (default uniform).
    pub rand_type: RandType,
    /// When the `k` index is created (default after the load, as sysbench).
    pub secondary_index: SecondaryIndex,
    /// MySQL dialect only: `CREATE TABLE ... /*! ENGINE = {this} */` (default `innodb`).
    pub mysql_storage_engine: String,
    /// Rows per multi-row INSERT of the load (default 1,000; at most
    /// [`Dialect::max_load_batch_rows`]). Not a sysbench option.
    pub load_batch_rows: u32,
    /// Seed of every random choice (sysbench's `--rand-seed`; default 0).
    pub seed: u64,
}

impl OltpConfig {
    /// sysbench's defaults for `kind` in `dialect`.
    pub fn new(kind: OltpKind, dialect: Dialect) -> Self {
        OltpConfig {
            kind,
            dialect,
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
            rand_type: RandType::Uniform,
            secondary_index: SecondaryIndex::AfterLoad,
            mysql_storage_engine: "innodb".to_string(),
            load_batch_rows: 1_000,
            seed: 0,
        }
    }

    /// Checks every option; the first bad one is the error.
    pub fn validate(&self) -> Result<(), OltpError> {
        range("tables", self.tables, 1, MAX_TABLES)?;
        range("table_size", self.table_size, 1, MAX_TABLE_SIZE)?;
        range("range_size", self.range_size, 1, MAX_TABLE_SIZE)?;
        for (option, value) in [
            ("point_selects", self.point_selects),
            ("simple_ranges", self.simple_ranges),
            ("sum_ranges", self.sum_ranges),
            ("order_ranges", self.order_ranges),
            ("distinct_ranges", self.distinct_ranges),
            ("index_updates", self.index_updates),
            ("non_index_updates", self.non_index_updates),
            ("delete_inserts", self.delete_inserts),
        ] {
            range(option, value, 0, MAX_PER_TRANSACTION)?;
        }
        let max_batch = self.dialect.max_load_batch_rows();
        if self.load_batch_rows == 0 || self.load_batch_rows > max_batch {
            return Err(OltpError::OutOfRange {
                option: "load_batch_rows",
                value: u64::from(self.load_batch_rows),
                allowed: format!(
                    "1 to {max_batch} ({} rows x {PARAMS_PER_LOAD_ROW} parameters stay \
                     under {}'s {} bind parameters)",
                    max_batch,
                    self.dialect,
                    self.dialect.max_params()
                ),
            });
        }
        let engine = &self.mysql_storage_engine;
        if engine.is_empty()
            || engine.len() > 64
            || !engine
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(OltpError::Invalid {
                option: "mysql_storage_engine",
                value: engine.clone(),
                allowed: "an engine name of 1 to 64 letters, digits and underscores \
                          (e.g. innodb, myisam, rocksdb)",
            });
        }
        let counts = statement_counts(self);
        if counts.statements() == 0 {
            return Err(OltpError::EmptyTransaction {
                kind: self.kind.name(),
                ranges: if self.range_selects {
                    ", simple_ranges, sum_ranges, order_ranges, distinct_ranges"
                } else {
                    " (range_selects is false)"
                },
                writes: if self.kind == OltpKind::ReadWrite {
                    ", index_updates, non_index_updates, delete_inserts"
                } else {
                    ""
                },
            });
        }
        Ok(())
    }
}

fn range(option: &'static str, value: u32, min: u32, max: u32) -> Result<(), OltpError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(OltpError::OutOfRange {
            option,
            value: u64::from(value),
            allowed: format!("{min} to {max}"),
        })
    }
}

// Statements per request (`StatementCounts`).
// Statements per request, split as sysbench's report splits its "queries": reads, writes
// and other (BEGIN and COMMIT).
//
// sysbench counts every statement it sends, BEGIN and COMMIT included (as "other"), and
// reports `queries = read + write + other` and QPS from that. tsload's `QueryAck`
// counts statements without BEGIN and COMMIT. So, for a run of `n` requests:
// - sysbench-comparable queries = `n * StatementCounts::queries()`
//   (`oltp_read_write` by default: 14 reads + 4 writes + 2 other = 20 per transaction);
// - the statements tsload executed = `n * StatementCounts::statements()` (18).
//
// sysbench's drivers classify by result, not by text: a statement returning rows is a
// read; one without rows is a write if it changed rows, else "other". In the steady
// state every UPDATE/DELETE/INSERT of these tests finds its row, so the split here is
// what sysbench prints; an UPDATE or DELETE of an id missing at that moment (another
// worker's DELETE + INSERT in flight) is a write here and "other" in sysbench.

/// Statements of one request of a workload, by sysbench's categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementCounts {
    /// SELECTs.
    pub reads: u64,
    /// UPDATEs, DELETEs and INSERTs.
    pub writes: u64,
    /// BEGIN and COMMIT: 2 per explicit transaction, else 0.
    pub other: u64,
}

impl StatementCounts {
    /// Statements in the request itself (what `QueryAck::statements` counts).
    pub fn statements(&self) -> u64 {
        self.reads + self.writes
    }

    /// sysbench's "queries" per transaction: reads + writes + other.
    pub fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// The statements per request (one transaction, or one statement for
/// `oltp_point_select` and `oltp_insert`) of `config`.
pub fn statement_counts(config: &OltpConfig) -> StatementCounts {
    let ranges = if config.range_selects {
        u64::from(config.simple_ranges)
            + u64::from(config.sum_ranges)
            + u64::from(config.order_ranges)
            + u64::from(config.distinct_ranges)
    } else {
        0
    };
    let reads = u64::from(config.point_selects) + ranges;
    let other = if config.skip_trx { 0 } else { 2 };
    match config.kind {
        OltpKind::ReadWrite => StatementCounts {
            reads,
            writes: u64::from(config.index_updates)
                + u64::from(config.non_index_updates)
                + 2 * u64::from(config.delete_inserts),
            other,
        },
        OltpKind::ReadOnly => StatementCounts {
            reads,
            writes: 0,
            other,
        },
        OltpKind::PointSelect => StatementCounts {
            reads: 1,
            writes: 0,
            other: 0,
        },
        OltpKind::Insert => StatementCounts {
            reads: 0,
            writes: 1,
            other: 0,
        },
    }
}
