//! The request streams: [`RunSource`] makes one sysbench event (transaction) per request
//! for the timed load, [`LoadSource`] the multi-row INSERTs of one loader's share of the
//! rows (sysbench's prepare).

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tsload_core::{Param, QueryRequest, QuerySource, Statement};

use crate::config::{OltpConfig, OltpKind, SecondaryIndex};
use crate::rand::{C_GROUPS, PAD_GROUPS, Rng, STREAM_LOAD, STREAM_RUN};
use crate::sql::{self, TableStatements};

/// What every source of one workload shares: the options.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: OltpConfig,
}

impl Shared {
    pub(crate) fn new(config: OltpConfig) -> Self {
        Shared { config }
    }
}

/// One loaded row's values besides its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRow {
    /// Random in `1..=table_size` (by `rand_type`).
    pub k: u32,
    /// 10 groups of 11 random digits separated by dashes (119 characters).
    pub c: String,
    /// 5 groups of 11 random digits separated by dashes (59 characters).
    pub pad: String,
}

/// The row `id` of table `sbtest{table}` as the load writes it: a pure function of
/// (seed, table, id, table_size, rand_type), whatever the number of loaders.
pub fn load_row(config: &OltpConfig, table: u32, id: u32) -> LoadRow {
    let mut rng = Rng::new(config.seed, STREAM_LOAD, u64::from(table), u64::from(id));
    let k = rng.default(config.rand_type, 1, config.table_size);
    let c = rng.digit_string(C_GROUPS);
    let pad = rng.digit_string(PAD_GROUPS);
    LoadRow { k, c, pad }
}

/// The rows of all tables numbered `0..tables * table_size` (table-major), of which
/// loader `worker` of `workers` takes an even, contiguous, disjoint share.
pub(crate) fn load_share(config: &OltpConfig, worker: usize, workers: usize) -> Range<u64> {
    let total = u128::from(config.tables) * u128::from(config.table_size);
    let workers = workers.max(1) as u128;
    let w = (worker as u128).min(workers);
    let start = total * w / workers;
    let end = total * (w + 1).min(workers) / workers;
    start as u64..end as u64
}

/// One loader's multi-row INSERTs, `load_batch_rows` rows each (fewer at the end of a
/// table or of the share: a statement never spans two tables).
///
/// With [`SecondaryIndex::AfterLoad`], the loader that finishes last then returns one
/// `CREATE INDEX k_N` request per table before it ends. "Finishes" is the call of `next`
/// after its last INSERT: a loader executes each request before it asks for the next (as
/// the query engine's loaders do), so when the count of running loaders drops to zero,
/// every row is in and the index is built once, over the whole table, as in sysbench.
#[derive(Debug)]
pub struct LoadSource {
    shared: Arc<Shared>,
    next: u64,
    end: u64,
    /// Loaders of this load that have not finished their rows (this one included until
    /// it has).
    running: Arc<AtomicUsize>,
    finished: bool,
    /// The index requests still to send, when this loader finished last.
    after: Vec<QueryRequest>,
    /// The last statement text made, by (table, rows): full batches reuse it.
    text: Option<(u32, usize, String)>,
}

impl LoadSource {
    pub(crate) fn new(shared: Arc<Shared>, rows: Range<u64>, running: Arc<AtomicUsize>) -> Self {
        LoadSource {
            shared,
            next: rows.start,
            end: rows.end,
            running,
            finished: false,
            after: Vec::new(),
            text: None,
        }
    }

    /// Called once the rows are done: the last loader to get here takes the index
    /// requests. Then hands them out one per call.
    fn after_rows(&mut self, request: &mut QueryRequest) -> bool {
        if !self.finished {
            self.finished = true;
            let last = self.running.fetch_sub(1, Ordering::AcqRel) == 1;
            if last && self.shared.config.secondary_index == SecondaryIndex::AfterLoad {
                self.after = sql::index_requests(&self.shared.config);
                self.after.reverse();
            }
        }
        match self.after.pop() {
            Some(next) => {
                *request = next;
                true
            }
            None => false,
        }
    }
}

impl QuerySource for LoadSource {
    fn next(&mut self, request: &mut QueryRequest) -> bool {
        if self.next >= self.end {
            return self.after_rows(request);
        }
        let config = &self.shared.config;
        let size = u64::from(config.table_size);
        let table = (self.next / size) as u32 + 1;
        let offset = self.next % size;
        let rows = u64::from(config.load_batch_rows)
            .min(self.end - self.next)
            .min(size - offset) as usize;
        let text = match &self.text {
            Some((t, r, text)) if *t == table && *r == rows => text.clone(),
            _ => {
                let text = sql::load_insert(config.dialect, table, rows);
                self.text = Some((table, rows, text.clone()));
                text
            }
        };
        let mut params = Vec::with_capacity(rows * 4);
        for i in 0..rows as u64 {
            let id = (offset + i + 1) as u32;
            let row = load_row(config, table, id);
            params.push(Param::Int(i64::from(id)));
            params.push(Param::Int(i64::from(row.k)));
            params.push(Param::Text(row.c));
            params.push(Param::Text(row.pad));
        }
        request.kind = 0;
        request.transaction = false;
        request
            .statements
            .push(Statement::with_params(text, params));
        self.next += rows as u64;
        true
    }
}

/// One worker's stream of sysbench events for the timed load; never ends.
#[derive(Debug)]
pub struct RunSource {
    shared: Arc<Shared>,
    /// Index `t - 1` holds table `sbtest{t}`'s statements, this source's own (see
    /// [`TableStatements`]).
    tables: Vec<TableStatements>,
    rng: Rng,
}

impl RunSource {
    pub(crate) fn new(shared: Arc<Shared>, worker: usize) -> Self {
        let rng = Rng::new(shared.config.seed, STREAM_RUN, worker as u64, 0);
        let tables = (1..=shared.config.tables)
            .map(|t| TableStatements::new(shared.config.dialect, t))
            .collect();
        RunSource {
            shared,
            tables,
            rng,
        }
    }

    /// sysbench's `get_table_num`: uniform over the tables, whatever `rand_type`.
    fn table(&mut self) -> &TableStatements {
        let t = self.rng.uniform(1, self.shared.config.tables);
        &self.tables[t as usize - 1]
    }

    /// sysbench's `get_id`: `rand_type` over `1..=table_size`.
    fn id(&mut self) -> i64 {
        let c = &self.shared.config;
        i64::from(self.rng.default(c.rand_type, 1, c.table_size))
    }

    fn point_selects(&mut self, n: u32, out: &mut QueryRequest) {
        let text = self.table().point_select.clone();
        for _ in 0..n {
            let id = self.id();
            out.push(text.clone(), [Param::Int(id)]);
        }
    }

    /// `n` range selects of one table: ids `[x, x + range_size - 1]`.
    fn ranges(&mut self, n: u32, pick: fn(&TableStatements) -> &Arc<str>, out: &mut QueryRequest) {
        let text = pick(self.table()).clone();
        let span = i64::from(self.shared.config.range_size) - 1;
        for _ in 0..n {
            let id = self.id();
            out.push(text.clone(), [Param::Int(id), Param::Int(id + span)]);
        }
    }

    fn writes(&mut self, out: &mut QueryRequest) {
        let (index_updates, non_index_updates, delete_inserts) = {
            let c = &self.shared.config;
            (c.index_updates, c.non_index_updates, c.delete_inserts)
        };
        let text = self.table().index_update.clone();
        for _ in 0..index_updates {
            let id = self.id();
            out.push(text.clone(), [Param::Int(id)]);
        }
        let text = self.table().non_index_update.clone();
        for _ in 0..non_index_updates {
            let c = self.rng.digit_string(C_GROUPS);
            let id = self.id();
            out.push(text.clone(), [Param::Text(c), Param::Int(id)]);
        }
        let table = self.table();
        let (delete, insert) = (table.delete.clone(), table.insert.clone());
        for _ in 0..delete_inserts {
            let id = self.id();
            let k = self.id();
            let c = self.rng.digit_string(C_GROUPS);
            let pad = self.rng.digit_string(PAD_GROUPS);
            out.push(delete.clone(), [Param::Int(id)]);
            out.push(
                insert.clone(),
                [
                    Param::Int(id),
                    Param::Int(k),
                    Param::Text(c),
                    Param::Text(pad),
                ],
            );
        }
    }
}

impl QuerySource for RunSource {
    fn next(&mut self, request: &mut QueryRequest) -> bool {
        request.kind = 0;
        let (kind, point_selects, range_selects, skip_trx) = {
            let c = &self.shared.config;
            (c.kind, c.point_selects, c.range_selects, c.skip_trx)
        };
        match kind {
            OltpKind::ReadWrite | OltpKind::ReadOnly => {
                request.transaction = !skip_trx;
                let out = request;
                self.point_selects(point_selects, out);
                if range_selects {
                    let c = &self.shared.config;
                    let counts = [
                        c.simple_ranges,
                        c.sum_ranges,
                        c.order_ranges,
                        c.distinct_ranges,
                    ];
                    self.ranges(counts[0], |t| &t.simple_range, out);
                    self.ranges(counts[1], |t| &t.sum_range, out);
                    self.ranges(counts[2], |t| &t.order_range, out);
                    self.ranges(counts[3], |t| &t.distinct_range, out);
                }
                if kind == OltpKind::ReadWrite {
                    self.writes(out);
                }
            }
            OltpKind::PointSelect => {
                request.transaction = false;
                self.point_selects(1, request);
            }
            OltpKind::Insert => {
                request.transaction = false;
                let text = self.table().insert_auto_id.clone();
                let k = self.id();
                let c = self.rng.digit_string(C_GROUPS);
                let pad = self.rng.digit_string(PAD_GROUPS);
                request.push(text, [Param::Int(k), Param::Text(c), Param::Text(pad)]);
            }
        }
        true
    }
}
