//! [`TsbsQueries`]: the TSBS devops queries as a core [`QueryWorkload`].
//!
//! TSBS generates one file per query type and runs one file at a time; a tsload run may
//! mix types: query `i` of the run has type `types[i % types.len()]` (round robin, so the
//! mix is exact at any moment), and its spec is drawn from `(seed, i)`.
//!
//! Which worker runs which queries: with `T` types, query `i` is in round `r = i / T` and
//! has type `t = i % T`; worker `w` of `W` runs, in order, the queries below the `queries`
//! limit whose `(r + t) % W == w`. So the run's queries are the same whatever the worker
//! count (the workers' sets partition them), and every worker cycles through every type:
//! any `W` consecutive rounds give each worker each type once. (Striding, worker `w`
//! running `w, w + W, ...`, gave a worker only the types `t` with `t = w (mod gcd(W, T))`:
//! with as many workers as types, one type each, and a slow type then fell behind the
//! others in a run cut by time.) A shard of a run with a limit runs its block of the
//! queries ([`Shard::part`]), split over its workers by the same rule.

use tsload_core::shard::Shard;
use tsload_core::{Param, QueryRequest, QuerySource, QueryWorkload, Statement};

use crate::QueryError;
use crate::render::{Dialect, render_into};
use crate::spec::{QuerySpec, SpecGenerator};
use crate::types::QueryType;

/// Settings of a TSBS devops query run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsbsQueriesConfig {
    /// Seed of the queries' random choices (hosts, windows).
    pub seed: u64,
    /// Hosts in the loaded data (`host_0` .. `host_{scale-1}`): the data's `scale`.
    pub scale: u32,
    /// The loaded data's time range `[start_ns, end_ns)`, ns since the Unix epoch: the
    /// data's `start` and `end`. Windows fall inside it.
    pub start_ns: i64,
    pub end_ns: i64,
    /// The query types to run, in this order, each at most once; `None` runs every type
    /// the dialect can express (all 15, or the 11 of PromQL).
    pub types: Option<Vec<QueryType>>,
    /// The target's query language.
    pub dialect: Dialect,
    /// Queries of the whole run, split over the workers; `None`: no limit (the run's
    /// duration ends it).
    pub queries: Option<u64>,
}

impl TsbsQueriesConfig {
    /// Every type the dialect supports, no query limit.
    pub fn new(seed: u64, scale: u32, start_ns: i64, end_ns: i64, dialect: Dialect) -> Self {
        TsbsQueriesConfig {
            seed,
            scale,
            start_ns,
            end_ns,
            types: None,
            dialect,
            queries: None,
        }
    }
}

/// The TSBS devops query workload.
#[derive(Debug, Clone)]
pub struct TsbsQueries {
    cfg: TsbsQueriesConfig,
    types: Vec<QueryType>,
    kinds: Vec<String>,
    generator: SpecGenerator,
}

impl TsbsQueries {
    /// Checks every setting: scale and time range, each type (known to the dialect, hosts
    /// no more than `scale`, window no longer than the data), no type twice, a positive
    /// query limit. Errors name the setting (`scale`, `end`, `types`, `queries`).
    pub fn new(cfg: TsbsQueriesConfig) -> Result<Self, QueryError> {
        let generator = SpecGenerator::new(cfg.seed, cfg.scale, cfg.start_ns, cfg.end_ns)?;
        let types = match &cfg.types {
            None => cfg.dialect.supported_types(),
            Some(list) => {
                if list.is_empty() {
                    return Err(QueryError::config(
                        "types",
                        "is empty; name at least one query type (or leave `types` out for all)",
                    ));
                }
                for (i, t) in list.iter().enumerate() {
                    if list[..i].contains(t) {
                        return Err(QueryError::config("types", format!("{t} appears twice")));
                    }
                    cfg.dialect.check(*t)?;
                }
                list.clone()
            }
        };
        for t in &types {
            generator.check(*t)?;
        }
        if cfg.queries == Some(0) {
            return Err(QueryError::config(
                "queries",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        let kinds = types.iter().map(|t| t.name().to_string()).collect();
        Ok(TsbsQueries {
            cfg,
            types,
            kinds,
            generator,
        })
    }

    pub fn config(&self) -> &TsbsQueriesConfig {
        &self.cfg
    }

    /// The types run, in order (the `kinds`).
    pub fn types(&self) -> &[QueryType] {
        &self.types
    }

    /// The spec of query `index` of the run (its type is `types[index % types.len()]`).
    pub fn spec(&self, index: u64) -> QuerySpec {
        let t = self.type_of(index);
        let mut spec = QuerySpec {
            query_type: t,
            hosts: Vec::new(),
            window: None,
        };
        fill_checked(&self.generator, index, t, &mut spec);
        spec
    }

    /// Query `index` of the run as the statement a worker sends.
    pub fn statement(&self, index: u64) -> Statement {
        let spec = self.spec(index);
        let (mut text, mut params) = (String::new(), Vec::new());
        render_checked(&spec, &self.cfg.dialect, &mut text, &mut params);
        Statement::with_params(text, params)
    }

    fn type_of(&self, index: u64) -> QueryType {
        self.types[(index % self.types.len() as u64) as usize]
    }
}

/// `SpecGenerator::fill` for a type `TsbsQueries::new` checked.
fn fill_checked(g: &SpecGenerator, index: u64, t: QueryType, spec: &mut QuerySpec) {
    if let Err(e) = g.fill(index, t, spec) {
        unreachable!("TsbsQueries::new checked every type against the data: {e}");
    }
}

/// `render_into` for a spec of a type `TsbsQueries::new` checked.
fn render_checked(spec: &QuerySpec, dialect: &Dialect, text: &mut String, params: &mut Vec<Param>) {
    if let Err(e) = render_into(spec, dialect, text, params) {
        unreachable!("TsbsQueries::new checked every type against the dialect: {e}");
    }
}

impl TsbsQueries {
    /// The source of worker `worker` of `workers` over the run's queries `start..end`
    /// (`None`: no end).
    fn range_source(
        &self,
        start: u64,
        end: Option<u64>,
        worker: usize,
        workers: usize,
    ) -> Box<dyn QuerySource> {
        Box::new(self.tsbs_source(start, end, worker, workers))
    }

    fn tsbs_source(
        &self,
        start: u64,
        end: Option<u64>,
        worker: usize,
        workers: usize,
    ) -> TsbsSource {
        let workers = workers.max(1) as u64;
        let types = self.types.len() as u64;
        TsbsSource {
            generator: self.generator,
            types: self.types.clone(),
            dialect: self.cfg.dialect.clone(),
            worker: worker as u64 % workers,
            workers,
            round: start / types,
            min_type: start % types,
            end,
            spec: QuerySpec {
                query_type: self.types[0],
                hosts: Vec::with_capacity(8),
                window: None,
            },
            text: String::with_capacity(256),
        }
    }
}

impl QueryWorkload for TsbsQueries {
    fn kinds(&self) -> &[String] {
        &self.kinds
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource> {
        self.range_source(0, self.cfg.queries, worker, workers)
    }

    /// With a query limit `Q`, shard `i` of `N` runs the block `Q * i / N .. Q * (i + 1) / N`
    /// ([`Shard::part`]): the blocks sum to `Q` and each has the run's type mix. Without
    /// one, the shard's workers are global workers ([`Shard::global_worker`]).
    fn shard_source(&self, worker: usize, workers: usize, shard: Shard) -> Box<dyn QuerySource> {
        match self.cfg.queries {
            Some(total) => {
                let part = shard.part(total);
                self.range_source(part.start, Some(part.end), worker, workers)
            }
            None => {
                let (w, n) = shard.global_worker(worker, workers);
                self.source(w, n)
            }
        }
    }
}

/// One worker's queries: those of the run (from a start, below an end) whose round plus
/// type is the worker's number modulo the worker count, in order.
struct TsbsSource {
    generator: SpecGenerator,
    types: Vec<QueryType>,
    dialect: Dialect,
    worker: u64,
    workers: u64,
    /// The round of the next query (`index / types`), and the smallest type still to come
    /// in it.
    round: u64,
    min_type: u64,
    /// Queries from this index on are not this source's.
    end: Option<u64>,
    /// Reused for every query.
    spec: QuerySpec,
    /// Reused for every query: each is rendered here, then copied once into its
    /// statement's shared text.
    text: String,
}

impl TsbsSource {
    /// The run index of this worker's next query; `None` past the end.
    fn next_index(&mut self) -> Option<u64> {
        let types = self.types.len() as u64;
        let n = self.workers;
        loop {
            // This worker's types in this round: t = worker - round (mod workers).
            let first = (self.worker + n - self.round % n) % n;
            let t = if self.min_type <= first {
                first
            } else {
                first + (self.min_type - first).div_ceil(n) * n
            };
            if t < types {
                let index = self.round.checked_mul(types)?.checked_add(t)?;
                if self.end.is_some_and(|end| index >= end) {
                    return None;
                }
                self.min_type = t + 1;
                return Some(index);
            }
            // On to the next round that holds one of this worker's types: with more
            // workers than types, `first` falls by one per round until it is below `types`.
            let skip = if first >= types {
                first - (types - 1)
            } else {
                1
            };
            self.round = self.round.checked_add(skip)?;
            self.min_type = 0;
        }
    }
}

impl QuerySource for TsbsSource {
    fn next(&mut self, request: &mut QueryRequest) -> bool {
        let Some(index) = self.next_index() else {
            return false;
        };
        let k = (index % self.types.len() as u64) as usize;
        fill_checked(&self.generator, index, self.types[k], &mut self.spec);
        let mut params = Vec::new();
        self.text.clear();
        render_checked(&self.spec, &self.dialect, &mut self.text, &mut params);
        let statement = Statement::with_params(self.text.as_str(), params);
        request.kind = k;
        request.transaction = false;
        request.statements.push(statement);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{PromQl, Query, Renderer};

    /// A language that renders every type: the query's shape, hosts and window.
    #[derive(Debug)]
    struct Echo;

    impl Renderer for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }

        fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<Param>) {
            text.push_str(&format!("cpu {:?} {:?} {:?}", q.shape, q.hosts, q.window));
        }
    }

    const T0: i64 = 1_451_606_400_000_000_000;
    const H: i64 = 3_600_000_000_000;

    fn echo() -> Dialect {
        Dialect::new(Echo)
    }

    fn cfg(dialect: Dialect) -> TsbsQueriesConfig {
        TsbsQueriesConfig::new(123, 10, T0, T0 + 24 * H, dialect)
    }

    fn drain(w: &TsbsQueries, worker: usize, workers: usize, max: usize) -> Vec<QueryRequest> {
        let mut src = w.source(worker, workers);
        let mut out = Vec::new();
        let mut req = QueryRequest::default();
        while out.len() < max {
            req.clear();
            if !src.next(&mut req) {
                break;
            }
            out.push(req.clone());
        }
        out
    }

    #[test]
    fn kinds_are_the_types_and_default_to_what_the_dialect_supports() {
        let w = TsbsQueries::new(cfg(echo())).unwrap();
        assert_eq!(w.kinds().len(), 15);
        assert_eq!(w.kinds()[0], "single-groupby-1-1-1");
        assert_eq!(w.kinds()[14], "lastpoint");
        let w = TsbsQueries::new(cfg(Dialect::new(PromQl::METRICSQL))).unwrap();
        assert_eq!(
            w.kinds(),
            [
                "single-groupby-1-1-1",
                "single-groupby-1-1-12",
                "single-groupby-1-8-1",
                "single-groupby-5-1-1",
                "single-groupby-5-1-12",
                "single-groupby-5-8-1",
                "cpu-max-all-1",
                "cpu-max-all-8",
                "double-groupby-1",
                "double-groupby-5",
                "double-groupby-all"
            ]
        );
        let mut c = cfg(echo());
        c.types = Some(vec![QueryType::Lastpoint, QueryType::CpuMaxAll_1]);
        let w = TsbsQueries::new(c).unwrap();
        assert_eq!(w.kinds(), ["lastpoint", "cpu-max-all-1"]);
    }

    #[test]
    fn bad_settings_are_errors_naming_the_key() {
        let key = |c: TsbsQueriesConfig| match TsbsQueries::new(c).unwrap_err() {
            QueryError::Config { key, .. } => key,
            e => panic!("{e}"),
        };
        let mut c = cfg(echo());
        c.types = Some(vec![]);
        assert_eq!(key(c), "types");
        let mut c = cfg(echo());
        c.types = Some(vec![QueryType::HighCpu_1, QueryType::HighCpu_1]);
        assert_eq!(key(c), "types");
        let mut c = cfg(echo());
        c.queries = Some(0);
        assert_eq!(key(c), "queries");
        let mut c = cfg(echo());
        c.scale = 4;
        assert_eq!(key(c), "scale", "8-host types need 8 hosts");
        let mut c = cfg(echo());
        c.end_ns = T0 + 6 * H;
        assert_eq!(key(c), "end", "12-hour windows need 12 hours");
        let mut c = cfg(echo());
        c.end_ns = T0 + 6 * H;
        c.types = Some(vec![QueryType::SingleGroupby_1_1_1, QueryType::Lastpoint]);
        assert!(TsbsQueries::new(c).is_ok(), "1-hour types fit in 6 hours");

        let mut c = cfg(Dialect::new(PromQl::METRICSQL));
        c.types = Some(vec![QueryType::CpuMaxAll_1, QueryType::Lastpoint]);
        let e = TsbsQueries::new(c).unwrap_err();
        assert!(
            matches!(
                e,
                QueryError::Unsupported {
                    query_type: QueryType::Lastpoint,
                    dialect: "PromQL",
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("lastpoint cannot be expressed in PromQL"),
            "{e}"
        );
    }

    #[test]
    fn one_worker_runs_the_queries_in_order() {
        let mut c = cfg(echo());
        c.queries = Some(100);
        let w = TsbsQueries::new(c).unwrap();
        let one = drain(&w, 0, 1, 1000);
        assert_eq!(one.len(), 100);
        for (i, r) in one.iter().enumerate() {
            assert_eq!(r.kind, i % 15);
            assert_eq!(r.statements.len(), 1);
            assert!(!r.transaction);
            assert_eq!(r.statements[0], w.statement(i as u64));
        }
        // Three workers run the same 100 queries between them.
        let mut all: Vec<Statement> = (0..3)
            .flat_map(|worker| drain(&w, worker, 3, 1000))
            .map(|r| r.statements[0].clone())
            .collect();
        assert_eq!(all.len(), 100);
        let mut expected: Vec<Statement> = (0..100).map(|i| w.statement(i)).collect();
        let key = |s: &Statement| s.text.clone();
        all.sort_by_key(key);
        expected.sort_by_key(key);
        assert_eq!(all, expected);
    }

    /// The run indices worker `worker` of `workers` runs in `start..end`.
    fn indices(
        w: &TsbsQueries,
        start: u64,
        end: Option<u64>,
        worker: usize,
        workers: usize,
        max: usize,
    ) -> Vec<u64> {
        let mut src = w.tsbs_source(start, end, worker, workers);
        std::iter::from_fn(|| src.next_index()).take(max).collect()
    }

    fn with_types(n: usize) -> TsbsQueries {
        let mut c = cfg(echo());
        c.types = Some(QueryType::ALL[..n].to_vec());
        TsbsQueries::new(c).unwrap()
    }

    #[test]
    fn workers_partition_the_queries_whatever_their_count() {
        for types in [1usize, 2, 4, 15] {
            let w = with_types(types);
            for (start, end) in [
                (0u64, 0u64),
                (0, 1),
                (0, 14),
                (0, 100),
                (0, 1000),
                (7, 7),
                (3, 250),
                (1000, 2000),
            ] {
                for workers in [1usize, 2, 3, 4, 5, 8, 15, 16, 80, 320] {
                    let mut seen = vec![0u32; (end - start) as usize];
                    let mut counts = Vec::new();
                    for worker in 0..workers {
                        let mine = indices(&w, start, Some(end), worker, workers, usize::MAX);
                        assert!(mine.windows(2).all(|p| p[0] < p[1]), "in order");
                        for &i in &mine {
                            assert!((start..end).contains(&i), "{i} outside {start}..{end}");
                            seen[(i - start) as usize] += 1;
                        }
                        counts.push(mine.len());
                    }
                    assert!(
                        seen.iter().all(|&n| n == 1),
                        "{types} types, {start}..{end} over {workers}: {seen:?}"
                    );
                    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                    assert!(
                        hi - lo <= types.max(2),
                        "{types} types, {start}..{end} over {workers}: {counts:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_worker_cycles_through_every_type() {
        // The defect: worker w ran queries w, w + W, ..., so with 4 workers and 4 types
        // each worker ran one type, and with 80 workers each ran one of the 4.
        for types in [2usize, 3, 4, 15] {
            let w = with_types(types);
            for workers in [1usize, 2, 3, 4, 5, 6, 8, 15, 16, 30, 80, 320] {
                for worker in [0, 1, workers / 2, workers - 1] {
                    let mine = indices(&w, 0, None, worker, workers, types * 6);
                    assert_eq!(mine.len(), types * 6);
                    let mut count = vec![0usize; types];
                    for &i in &mine {
                        count[(i % types as u64) as usize] += 1;
                        // At any moment the worker's types are within one of each other.
                        let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
                        assert!(
                            hi - lo <= 1,
                            "{types} types, worker {worker}/{workers}: {count:?} after {mine:?}"
                        );
                    }
                    assert!(count.iter().all(|&c| c == 6), "{count:?}");
                }
            }
        }
    }

    #[test]
    fn shards_of_a_limited_run_take_blocks_with_the_whole_mix() {
        let mut c = cfg(echo());
        c.types = Some(QueryType::ALL[..4].to_vec());
        c.queries = Some(4000);
        let w = TsbsQueries::new(c).unwrap();
        for count in [1u32, 2, 3, 4, 7] {
            let mut seen = vec![false; 4000];
            for index in 0..count {
                let shard = Shard::new(index, count).unwrap();
                for workers in [1usize, 2, 3, 4] {
                    let mut kinds = [0u64; 4];
                    let mut total = 0;
                    for worker in 0..workers {
                        let mut src = w.shard_source(worker, workers, shard);
                        let mut req = QueryRequest::default();
                        loop {
                            req.clear();
                            if !src.next(&mut req) {
                                break;
                            }
                            kinds[req.kind] += 1;
                            total += 1;
                        }
                    }
                    assert_eq!(total, shard.share(4000), "shard {shard} x {workers}");
                    for k in kinds {
                        assert!(
                            k.abs_diff(total / 4) <= 1,
                            "shard {shard} x {workers}: {kinds:?}"
                        );
                    }
                }
                for worker in 0..2 {
                    let part = shard.part(4000);
                    let mut src = w.tsbs_source(part.start, Some(part.end), worker, 2);
                    while let Some(i) = src.next_index() {
                        assert!(!seen[i as usize], "query {i} twice");
                        seen[i as usize] = true;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s), "{count} shards");
        }
    }

    #[test]
    fn shards_of_an_unlimited_run_are_global_workers_that_cycle_through_every_type() {
        let mut c = cfg(echo());
        c.types = Some(QueryType::ALL[..4].to_vec());
        let w = TsbsQueries::new(c).unwrap();
        for index in 0..4 {
            let shard = Shard::new(index, 4).unwrap();
            let reqs: Vec<usize> = {
                let mut src = w.shard_source(0, 1, shard);
                let mut req = QueryRequest::default();
                (0..8)
                    .map(|_| {
                        req.clear();
                        assert!(src.next(&mut req));
                        req.kind
                    })
                    .collect()
            };
            for k in 0..4 {
                assert_eq!(reqs.iter().filter(|&&r| r == k).count(), 2, "{reqs:?}");
            }
        }
    }

    #[test]
    fn without_a_limit_sources_do_not_end_and_are_deterministic() {
        let mut c = cfg(Dialect::new(Echo));
        c.types = Some(vec![QueryType::SingleGroupby_1_8_1]);
        let w = TsbsQueries::new(c.clone()).unwrap();
        let a = drain(&w, 1, 2, 500);
        assert_eq!(a.len(), 500);
        assert!(a.iter().all(|r| r.kind == 0));
        let b = drain(&TsbsQueries::new(c.clone()).unwrap(), 1, 2, 500);
        assert_eq!(a, b);
        c.seed += 1;
        let other = drain(&TsbsQueries::new(c).unwrap(), 1, 2, 500);
        assert_ne!(a, other);
        let distinct: std::collections::HashSet<&str> =
            a.iter().map(|r| &*r.statements[0].text).collect();
        assert!(distinct.len() > 490);
    }

    #[test]
    fn specs_follow_the_run_index() {
        let mut c = cfg(Dialect::new(Echo));
        c.types = Some(vec![QueryType::CpuMaxAll_8, QueryType::Lastpoint]);
        let w = TsbsQueries::new(c).unwrap();
        assert_eq!(w.spec(0).query_type, QueryType::CpuMaxAll_8);
        assert_eq!(w.spec(0).hosts.len(), 8);
        assert_eq!(w.spec(1).query_type, QueryType::Lastpoint);
        assert_eq!(w.spec(1).window, None);
        assert_eq!(w.types(), [QueryType::CpuMaxAll_8, QueryType::Lastpoint]);
    }
}
