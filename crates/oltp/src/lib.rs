//! tsload-oltp: sysbench 1.0's OLTP workloads (`oltp_read_write`, `oltp_read_only`,
//! `oltp_point_select`, `oltp_insert`) as a [`QueryWorkload`] for MySQL/MariaDB,
//! PostgreSQL and SQLite.
//!
//! The tables are sysbench's `sbtest1..sbtestN` (`id` auto-increment primary key,
//! `k INTEGER`, `c CHAR(120)`, `pad CHAR(60)`, index `k_N` on `k`), the statements are
//! its prepared statements with the same parameters, and every random choice comes from
//! the seed:
//!
//! - [`QueryWorkload::setup`]: per table `DROP TABLE IF EXISTS`, `CREATE TABLE`, for
//!   PostgreSQL a `setval` so the id sequence continues after the loaded ids, and the
//!   `k` index when [`SecondaryIndex::BeforeLoad`].
//! - [`QueryWorkload::load`]: multi-row INSERTs of ids `1..=table_size` in every table,
//!   split evenly and disjointly over the loaders; row `id`'s `k`, `c` and `pad` are a
//!   pure function of (seed, table, id) ([`load_row`]), so the data set does not depend
//!   on the loader count.
//!   With [`SecondaryIndex::AfterLoad`] (the default, as sysbench's prepare) the loader
//!   that finishes last then sends `CREATE INDEX k_N` per table, once every loader has
//!   executed its last INSERT (it relies on each loader executing a request before it
//!   asks for the next, as `tsload_core`'s query engine does).
//! - [`QueryWorkload::source`]: one sysbench event per request; a transaction unless
//!   `skip_trx` (always a single statement for `oltp_point_select` and `oltp_insert`).
//!
//! As in sysbench, each statement group of a transaction (the point selects, each range
//! type, the index updates, the non-index updates, the delete/inserts) picks its table
//! uniformly at random; ids and `k` follow `rand_type`.
//!
//! ```
//! use tsload_core::{QueryRequest, QueryWorkload};
//! use tsload_oltp::{Dialect, Oltp, OltpConfig, OltpKind};
//!
//! let oltp = Oltp::new(OltpConfig::new(OltpKind::ReadWrite, Dialect::Postgres)).unwrap();
//! let mut request = QueryRequest::default();
//! assert!(oltp.source(0, 1).next(&mut request));
//! assert!(request.transaction);
//! assert_eq!(request.statements.len(), 18); // + BEGIN and COMMIT = sysbench's 20 queries
//! assert_eq!(&*request.statements[0].text, "SELECT c FROM sbtest1 WHERE id=$1");
//! assert_eq!(oltp.statement_counts().queries(), 20);
//! ```

mod config;
mod rand;
mod source;
mod sql;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, PoisonError};

use tsload_core::{QueryRequest, QuerySource, QueryWorkload};

pub use config::{
    Dialect, MAX_PER_TRANSACTION, MAX_TABLE_SIZE, MAX_TABLES, OltpConfig, OltpError, OltpKind,
    PARAMS_PER_LOAD_ROW, RandType, SecondaryIndex,
};
pub use config::{StatementCounts, statement_counts};
pub use source::{LoadRow, LoadSource, RunSource, load_row};

use source::Shared;

/// A validated OLTP workload: one request kind, named after the sysbench test.
#[derive(Debug)]
pub struct Oltp {
    shared: Arc<Shared>,
    kinds: Vec<String>,
    round: Mutex<Option<LoadRound>>,
}

impl Oltp {
    /// Validates `config` and prepares every table's statement texts.
    pub fn new(config: OltpConfig) -> Result<Self, OltpError> {
        config.validate()?;
        let kinds = vec![config.kind.name().to_string()];
        Ok(Oltp {
            shared: Arc::new(Shared::new(config)),
            kinds,
            round: Mutex::new(None),
        })
    }

    pub fn config(&self) -> &OltpConfig {
        &self.shared.config
    }

    /// Statements per request, as sysbench counts them (see [`StatementCounts`]).
    pub fn statement_counts(&self) -> StatementCounts {
        statement_counts(&self.shared.config)
    }

    /// Rows the load inserts in all: `tables * table_size`.
    pub fn load_rows(&self) -> u64 {
        u64::from(self.shared.config.tables) * u64::from(self.shared.config.table_size)
    }
}

/// The loaders of one load: `load(w, workers)` for every `w` hands out a share and a
/// count of loaders still running; a new round starts once all were handed out.
#[derive(Debug)]
struct LoadRound {
    workers: usize,
    handed: usize,
    running: Arc<AtomicUsize>,
}

impl QueryWorkload for Oltp {
    fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// Per table: DROP TABLE IF EXISTS, CREATE TABLE, PostgreSQL's sequence restart, and
    /// the `k` index with [`SecondaryIndex::BeforeLoad`].
    fn setup(&self) -> Vec<QueryRequest> {
        let config = &self.shared.config;
        (1..=config.tables)
            .map(|t| {
                let mut texts = vec![sql::drop_table(t), sql::create_table(config, t)];
                texts.extend(sql::restart_sequence(config, t));
                if config.secondary_index == SecondaryIndex::BeforeLoad {
                    texts.push(sql::create_index(t));
                }
                sql::ddl(texts)
            })
            .collect()
    }

    /// Loader `worker`'s share of the rows; with [`SecondaryIndex::AfterLoad`] the loader
    /// that finishes last also sends the `CREATE INDEX` statements.
    fn load(&self, worker: usize, workers: usize) -> Option<Box<dyn QuerySource>> {
        let workers = workers.max(1);
        let rows = source::load_share(&self.shared.config, worker, workers);
        let running = {
            let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
            let round = match &mut *round {
                Some(r) if r.workers == workers && r.handed < workers => r,
                slot => slot.insert(LoadRound {
                    workers,
                    handed: 0,
                    running: Arc::new(AtomicUsize::new(workers)),
                }),
            };
            round.handed += 1;
            Arc::clone(&round.running)
        };
        Some(Box::new(LoadSource::new(
            Arc::clone(&self.shared),
            rows,
            running,
        )))
    }

    fn source(&self, worker: usize, _workers: usize) -> Box<dyn QuerySource> {
        Box::new(RunSource::new(Arc::clone(&self.shared), worker))
    }
}

#[cfg(test)]
mod tests;
