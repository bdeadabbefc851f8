//! [`TsbsQueries`]: the TSBS devops queries as a core [`QueryWorkload`].
//!
//! TSBS generates one file per query type and runs one file at a time; a tsload run may
//! mix types: query `i` of the run has type `types[i % types.len()]` (round robin, so the
//! mix is exact at any moment), and its spec is drawn from `(seed, i)`. Worker `w` of `W`
//! runs queries `w, w + W, w + 2W, ...` below the `queries` limit, so the run's queries are
//! the same whatever the worker count.

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
        let mut s = Statement::default();
        render_checked(&spec, &self.cfg.dialect, &mut s.text, &mut s.params);
        s
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

impl QueryWorkload for TsbsQueries {
    fn kinds(&self) -> &[String] {
        &self.kinds
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource> {
        let workers = workers.max(1) as u64;
        Box::new(TsbsSource {
            generator: self.generator,
            types: self.types.clone(),
            dialect: self.cfg.dialect,
            next: worker as u64,
            stride: workers,
            limit: self.cfg.queries,
            spec: QuerySpec {
                query_type: self.types[0],
                hosts: Vec::with_capacity(8),
                window: None,
            },
            text_capacity: 256,
        })
    }
}

/// One worker's queries.
struct TsbsSource {
    generator: SpecGenerator,
    types: Vec<QueryType>,
    dialect: Dialect,
    /// Index of this worker's next query in the run.
    next: u64,
    stride: u64,
    limit: Option<u64>,
    /// Reused for every query.
    spec: QuerySpec,
    /// The longest text so far: each new text is allocated once, at this size.
    text_capacity: usize,
}

impl QuerySource for TsbsSource {
    fn next(&mut self, request: &mut QueryRequest) -> bool {
        let index = self.next;
        if self.limit.is_some_and(|limit| index >= limit) {
            return false;
        }
        let Some(next) = index.checked_add(self.stride) else {
            return false;
        };
        self.next = next;
        let k = (index % self.types.len() as u64) as usize;
        fill_checked(&self.generator, index, self.types[k], &mut self.spec);
        let mut statement = Statement {
            text: String::with_capacity(self.text_capacity),
            params: Vec::new(),
        };
        render_checked(
            &self.spec,
            &self.dialect,
            &mut statement.text,
            &mut statement.params,
        );
        self.text_capacity = self.text_capacity.max(statement.text.len());
        request.kind = k;
        request.transaction = false;
        request.statements.push(statement);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{PgLayout, PostgresOptions};

    const T0: i64 = 1_451_606_400_000_000_000;
    const H: i64 = 3_600_000_000_000;

    fn pg() -> Dialect {
        Dialect::Postgres(PostgresOptions::default())
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
        let w = TsbsQueries::new(cfg(pg())).unwrap();
        assert_eq!(w.kinds().len(), 15);
        assert_eq!(w.kinds()[0], "single-groupby-1-1-1");
        assert_eq!(w.kinds()[14], "lastpoint");
        let w = TsbsQueries::new(cfg(Dialect::PromQl)).unwrap();
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
        let mut c = cfg(pg());
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
        let mut c = cfg(pg());
        c.types = Some(vec![]);
        assert_eq!(key(c), "types");
        let mut c = cfg(pg());
        c.types = Some(vec![QueryType::HighCpu_1, QueryType::HighCpu_1]);
        assert_eq!(key(c), "types");
        let mut c = cfg(pg());
        c.queries = Some(0);
        assert_eq!(key(c), "queries");
        let mut c = cfg(pg());
        c.scale = 4;
        assert_eq!(key(c), "scale", "8-host types need 8 hosts");
        let mut c = cfg(pg());
        c.end_ns = T0 + 6 * H;
        assert_eq!(key(c), "end", "12-hour windows need 12 hours");
        let mut c = cfg(pg());
        c.end_ns = T0 + 6 * H;
        c.types = Some(vec![QueryType::SingleGroupby_1_1_1, QueryType::Lastpoint]);
        assert!(TsbsQueries::new(c).is_ok(), "1-hour types fit in 6 hours");

        let mut c = cfg(Dialect::PromQl);
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
    fn workers_cycle_through_the_types_and_split_the_limit() {
        let mut c = cfg(pg());
        c.queries = Some(100);
        let w = TsbsQueries::new(c).unwrap();
        let mut total = 0;
        let mut all = Vec::new();
        for worker in 0..3 {
            let reqs = drain(&w, worker, 3, 1000);
            assert_eq!(reqs.len(), if worker == 0 { 34 } else { 33 });
            for (k, r) in reqs.iter().enumerate() {
                let index = (worker + 3 * k) as u64;
                assert_eq!(r.kind, (index % 15) as usize);
                assert_eq!(r.statements.len(), 1);
                assert!(!r.transaction);
                assert_eq!(r.statements[0], w.statement(index));
                all.push((index, r.statements[0].clone()));
            }
            total += reqs.len();
        }
        assert_eq!(total, 100);
        // One worker produces the same 100 queries.
        let one = drain(&w, 0, 1, 1000);
        assert_eq!(one.len(), 100);
        all.sort_by_key(|(i, _)| *i);
        for (r, (_, s)) in one.iter().zip(&all) {
            assert_eq!(&r.statements[0], s);
        }
    }

    #[test]
    fn without_a_limit_sources_do_not_end_and_are_deterministic() {
        let mut c = cfg(Dialect::Tdengine(Default::default()));
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
            a.iter().map(|r| r.statements[0].text.as_str()).collect();
        assert!(distinct.len() > 490);
    }

    #[test]
    fn specs_follow_the_run_index() {
        let mut c = cfg(Dialect::Postgres(PostgresOptions {
            layout: PgLayout::TagsTable,
            time_bucket: true,
        }));
        c.types = Some(vec![QueryType::CpuMaxAll_8, QueryType::Lastpoint]);
        let w = TsbsQueries::new(c).unwrap();
        assert_eq!(w.spec(0).query_type, QueryType::CpuMaxAll_8);
        assert_eq!(w.spec(0).hosts.len(), 8);
        assert_eq!(w.spec(1).query_type, QueryType::Lastpoint);
        assert_eq!(w.spec(1).window, None);
        assert_eq!(w.types(), [QueryType::CpuMaxAll_8, QueryType::Lastpoint]);
    }
}
