//! Sharding: one generator process's disjoint part of a workload that several processes
//! run together, and the start gate that lines their prepare steps and clocks up.
//!
//! Shard `i` of `N` running `W` workers plays the global workers `w * N + i` of `W * N`
//! (for `w` in `0..W`). Workloads already split their data set disjointly over any worker
//! count, so the shards' union is exactly the data set an unsharded run writes with
//! `W * N` workers, and the shards need no coordination on the hot path. Interleaving the
//! global worker numbers (rather than giving each shard a block of them) keeps query
//! workloads' rule "query `q` belongs to worker `q mod workers`" as "query `q` belongs to
//! shard `q mod N`".

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::query::{QueryRequest, QuerySource, QueryWorkload};
use crate::schema::Schema;
use crate::workload::{BatchSource, Workload};

/// The most shards a run may be split into.
pub const MAX_SHARDS: u32 = 65_536;

/// Which part of the workload this process runs: `index` of `count`, `0 <= index < count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// A shard spelled wrongly or out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "shard '{text}': {reason} (expected INDEX/COUNT with 0 <= INDEX < COUNT <= {MAX_SHARDS}, e.g. 0/4)"
)]
pub struct ShardError {
    pub text: String,
    pub reason: String,
}

impl Shard {
    /// The whole workload: one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Checks `index < count <= MAX_SHARDS`.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        let err = |reason: &str| ShardError {
            text: format!("{index}/{count}"),
            reason: reason.to_string(),
        };
        if count == 0 {
            return Err(err("the count must be at least 1"));
        }
        if count > MAX_SHARDS {
            return Err(err("too many shards"));
        }
        if index >= count {
            return Err(err("the index counts from 0 and must be below the count"));
        }
        Ok(Shard { index, count })
    }

    /// Parses `INDEX/COUNT`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let err = |reason: &str| ShardError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (i, n) = text.trim().split_once('/').ok_or_else(|| err("no '/'"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| err(&format!("the {what} '{}' is not a whole number", s.trim())))
        };
        let shard = Shard::new(number(i, "index")?, number(n, "count")?);
        shard.map_err(|e| err(&e.reason))
    }

    /// Whether this is the whole workload.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// The global worker number and count of local worker `worker` of `workers`.
    pub fn global_worker(&self, worker: usize, workers: usize) -> (usize, usize) {
        let n = self.count as usize;
        (worker * n + self.index as usize, workers * n)
    }

    /// This shard's part of a total (a row or request budget): the parts of all shards
    /// differ by at most one and sum to `total`.
    pub fn share(&self, total: u64) -> u64 {
        let (i, n) = (u128::from(self.index), u128::from(self.count));
        let t = u128::from(total);
        // Both fit: t * (i + 1) / n <= t.
        (t * (i + 1) / n - t * i / n) as u64
    }

    /// This shard's part of a rate (rows or requests per second over all shards).
    pub fn share_of_rate(&self, rate: f64) -> f64 {
        rate / f64::from(self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A write workload seen by one shard.
pub struct ShardedWorkload {
    inner: Arc<dyn Workload>,
    shard: Shard,
}

impl ShardedWorkload {
    pub fn new(inner: Arc<dyn Workload>, shard: Shard) -> Self {
        ShardedWorkload { inner, shard }
    }
}

impl Workload for ShardedWorkload {
    fn schema(&self) -> &Schema {
        self.inner.schema()
    }

    /// Unknown for a part: workloads do not say how many rows a worker range holds.
    fn total_rows(&self) -> Option<u64> {
        if self.shard.is_whole() {
            self.inner.total_rows()
        } else {
            None
        }
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let (w, n) = self.shard.global_worker(worker, workers);
        self.inner.source(w, n)
    }

    fn source_error(&self) -> Option<String> {
        self.inner.source_error()
    }
}

/// A query workload seen by one shard: shard 0 alone runs the setup (the others wait for
/// it at the start gate), loaders and workers take their global parts.
pub struct ShardedQueries {
    inner: Arc<dyn QueryWorkload>,
    shard: Shard,
}

impl ShardedQueries {
    pub fn new(inner: Arc<dyn QueryWorkload>, shard: Shard) -> Self {
        ShardedQueries { inner, shard }
    }
}

impl QueryWorkload for ShardedQueries {
    fn kinds(&self) -> &[String] {
        self.inner.kinds()
    }

    fn setup(&self) -> Vec<QueryRequest> {
        if self.shard.index == 0 {
            self.inner.setup()
        } else {
            Vec::new()
        }
    }

    fn load(&self, worker: usize, workers: usize) -> Option<Box<dyn QuerySource>> {
        let (w, n) = self.shard.global_worker(worker, workers);
        self.inner.load(w, n)
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource> {
        let (w, n) = self.shard.global_worker(worker, workers);
        self.inner.source(w, n)
    }
}

/// A future a start gate returns.
pub type GateFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Coordination with the other shards, at three moments of a run: before the target is
/// prepared (shards other than 0 wait for shard 0 to have prepared it), after (shard 0
/// says it has), and before the clock starts (every shard has connected, or loaded its
/// part of a query workload's data; all start together). An error stops the run before
/// anything is measured.
pub trait StartGate: Send + Sync {
    fn before_prepare(&self) -> GateFuture<'_>;
    fn after_prepare(&self) -> GateFuture<'_>;
    fn before_start(&self) -> GateFuture<'_>;
}

/// The engines' optional start gate (none: start at once).
#[derive(Clone, Default)]
pub struct Gate(Option<Arc<dyn StartGate>>);

impl Gate {
    pub fn new(gate: Arc<dyn StartGate>) -> Self {
        Gate(Some(gate))
    }

    pub(crate) async fn before_prepare(&self) -> Result<(), String> {
        match &self.0 {
            Some(g) => g.before_prepare().await,
            None => Ok(()),
        }
    }

    pub(crate) async fn after_prepare(&self) -> Result<(), String> {
        match &self.0 {
            Some(g) => g.after_prepare().await,
            None => Ok(()),
        }
    }

    pub(crate) async fn before_start(&self) -> Result<(), String> {
        match &self.0 {
            Some(g) => g.before_start().await,
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Gate(set)"
        } else {
            "Gate(none)"
        })
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_index_over_count() {
        assert_eq!(Shard::parse("0/1").unwrap(), Shard::WHOLE);
        assert_eq!(
            Shard::parse(" 3 / 4 ").unwrap(),
            Shard { index: 3, count: 4 }
        );
    }

    #[test]
    fn parse_names_what_is_wrong() {
        for (text, reason) in [
            ("4/4", "below the count"),
            ("0/0", "at least 1"),
            ("1", "no '/'"),
            ("a/4", "index 'a'"),
            ("1/-2", "count '-2'"),
            ("0/65537", "too many"),
        ] {
            let e = Shard::parse(text).unwrap_err();
            assert_eq!(e.text, text);
            assert!(e.to_string().contains(reason), "{text}: {e}");
            assert!(e.to_string().contains("e.g. 0/4"), "{e}");
        }
    }

    #[test]
    fn shares_sum_to_the_total_and_differ_by_at_most_one() {
        for total in [0u64, 1, 7, 1000, 1_000_003, u64::MAX] {
            for count in [1u32, 2, 3, 4, 7, 64] {
                let parts: Vec<u64> = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().share(total))
                    .collect();
                let sum: u128 = parts.iter().map(|&p| u128::from(p)).sum();
                assert_eq!(sum, u128::from(total), "{total} over {count}");
                let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {count}: {parts:?}");
            }
        }
    }

    #[test]
    fn global_workers_partition_and_interleave() {
        for count in [1u32, 2, 3, 4] {
            for workers in [1usize, 2, 5] {
                let mut seen = vec![false; workers * count as usize];
                for i in 0..count {
                    let shard = Shard::new(i, count).unwrap();
                    for w in 0..workers {
                        let (g, n) = shard.global_worker(w, workers);
                        assert_eq!(n, workers * count as usize);
                        assert_eq!(
                            g % count as usize,
                            i as usize,
                            "query q goes to shard q mod N"
                        );
                        assert!(!seen[g], "global worker {g} twice");
                        seen[g] = true;
                    }
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }
}
