//! Sharding: one generator process's disjoint part of a workload that several processes
//! run together, and the start gate that lines their prepare steps and clocks up.
//!
//! Workloads already split their data set disjointly over any worker count, so a shard
//! plays some of the global workers of a run with `W * N` workers (`W` per shard), the
//! shards' union is exactly the data set an unsharded run writes with `W * N` workers, and
//! the shards need no coordination on the hot path. Which global workers:
//!
//! - writes ([`ShardedWorkload`]): a block, `i * W + w` for `w` in `0..W`. The generators
//!   give each worker a contiguous range of devices ([`device_range`]), so shard `i`
//!   generates exactly the devices `device_range(D, i, N)`: the shards' device counts
//!   differ by at most one, whatever `W` (or even if the shards' `W` differ), and every
//!   shard has a device when `N <= D` ([`Shard::devices`]). A row budget is split in
//!   proportion to those devices ([`Shard::share_by_devices`]), so each shard's part is
//!   one its devices can fill.
//! - queries ([`ShardedQueries`](crate::query::ShardedQueries)): each local worker's source comes from
//!   [`QueryWorkload::shard_source`]. By default that is global worker `w * N + i` of
//!   `W * N`, interleaved (sysbench's transactions, and a time-limited TSBS run, whose
//!   workers each cycle through every query type). A workload whose requests are numbered
//!   up to a limit gives shard `i` its block of them instead ([`Shard::part`]: TSBS runs
//!   queries `Q * i / N` up to `Q * (i + 1) / N`), so that the shards' parts sum to the
//!   limit and each part has the whole run's mix of query types.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::schema::Schema;
use crate::stored::RunScope;
use crate::workload::{BatchSource, Workload, device_range};

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

    /// The global worker number and count of local worker `worker` of `workers`, for
    /// query workloads: interleaved, `worker * N + index` of `workers * N`.
    pub fn global_worker(&self, worker: usize, workers: usize) -> (usize, usize) {
        let n = self.count as usize;
        (worker * n + self.index as usize, workers * n)
    }

    /// The global worker number and count of local worker `worker` of `workers`, for
    /// write workloads: a block, `index * workers + worker` of `workers * N`.
    pub fn block_worker(&self, worker: usize, workers: usize) -> (usize, usize) {
        let n = self.count as usize;
        (self.index as usize * workers + worker, workers * n)
    }

    /// The devices of `total` that this shard's [`ShardedWorkload`] generates (for
    /// workloads that split devices with [`device_range`], as every generator does):
    /// empty for some shard exactly when `total < count`.
    pub fn devices(&self, total: u32) -> std::ops::Range<u32> {
        device_range(total, self.index as usize, self.count as usize)
    }

    /// This shard's part of a row budget `total` over a data set of `devices` devices, in
    /// proportion to its [`Shard::devices`]: the shards' parts sum to `total`, and a part
    /// is never more than one row above its devices' proportional share. Equal parts
    /// ([`Shard::share`]) when `devices` is 0 (unknown).
    pub fn share_by_devices(&self, total: u64, devices: u32) -> u64 {
        if devices == 0 {
            return self.share(total);
        }
        let mine = self.devices(devices);
        let (t, d) = (u128::from(total), u128::from(devices));
        // Both fit: t * end / d <= t.
        (t * u128::from(mine.end) / d - t * u128::from(mine.start) / d) as u64
    }

    /// This shard's part of a total (a row or request budget): the parts of all shards
    /// differ by at most one and sum to `total`. The length of [`Shard::part`].
    pub fn share(&self, total: u64) -> u64 {
        let part = self.part(total);
        part.end - part.start
    }

    /// This shard's block of `0..total`, `total * i / N .. total * (i + 1) / N`: the
    /// shards' blocks follow each other, cover `0..total`, and differ in length by at most
    /// one ([`Shard::share`]).
    pub fn part(&self, total: u64) -> std::ops::Range<u64> {
        let (i, n) = (u128::from(self.index), u128::from(self.count));
        let t = u128::from(total);
        // Both fit: t * (i + 1) / n <= t.
        (t * i / n) as u64..(t * (i + 1) / n) as u64
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

/// A write workload seen by one shard: its local workers are a block of the global ones,
/// so it generates the devices [`Shard::devices`] says.
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
        let (w, n) = self.shard.block_worker(worker, workers);
        self.inner.source(w, n)
    }

    fn source_error(&self) -> Option<String> {
        self.inner.source_error()
    }

    fn counts_devices(&self) -> bool {
        self.inner.counts_devices()
    }

    /// The shard's devices ([`Shard::devices`]) where the workload splits by device.
    fn scope(&self) -> RunScope {
        let inner = self.inner.scope();
        if self.shard.is_whole() {
            return inner;
        }
        RunScope {
            devices: inner
                .devices
                .map(|set| set.with_slots(self.shard.devices(set.slot_count))),
            part: Some(format!("shard {}", self.shard)),
        }
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
    fn parts_are_consecutive_blocks_of_the_total() {
        for total in [0u64, 1, 7, 1000, 4000, 1_000_003, u64::MAX] {
            for count in [1u32, 2, 3, 4, 7, 64] {
                let mut next = 0;
                for i in 0..count {
                    let shard = Shard::new(i, count).unwrap();
                    let part = shard.part(total);
                    assert_eq!(part.start, next, "{total} over {count}");
                    assert_eq!(part.end - part.start, shard.share(total));
                    next = part.end;
                }
                assert_eq!(next, total, "{total} over {count}");
            }
        }
        assert_eq!(Shard::new(1, 4).unwrap().part(4000), 1000..2000);
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

    #[test]
    fn a_write_shard_generates_a_block_of_devices_whatever_its_worker_count() {
        for devices in [0u32, 1, 2, 3, 7, 10, 1001] {
            for count in [1u32, 2, 3, 4, 7] {
                let mut next = 0;
                for i in 0..count {
                    let shard = Shard::new(i, count).unwrap();
                    let mine = shard.devices(devices);
                    assert_eq!(mine.start, next, "{devices} over {count}");
                    next = mine.end;
                    for workers in [1usize, 2, 3, 4, 8] {
                        // The union of the block's workers' ranges is the shard's devices.
                        let mut covered = mine.start..mine.start;
                        for w in 0..workers {
                            let (g, n) = shard.block_worker(w, workers);
                            assert_eq!(n, workers * count as usize);
                            let r = device_range(devices, g, n);
                            assert_eq!(r.start, covered.end, "{devices}/{count}/{workers}");
                            covered.end = r.end;
                        }
                        assert_eq!(covered, mine, "{devices} over {count} x {workers}");
                    }
                }
                assert_eq!(next, devices);
                let sizes: Vec<u32> = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().devices(devices).len() as u32)
                    .collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1, "{devices} over {count}: {sizes:?}");
                assert_eq!(
                    *lo == 0,
                    devices < count,
                    "{devices} over {count}: {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn block_workers_partition_the_global_workers() {
        for count in [1u32, 2, 3] {
            for workers in [1usize, 2, 5] {
                let mut seen = vec![false; workers * count as usize];
                for i in 0..count {
                    for w in 0..workers {
                        let (g, _) = Shard::new(i, count).unwrap().block_worker(w, workers);
                        assert!(!seen[g], "global worker {g} twice");
                        seen[g] = true;
                    }
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }

    #[test]
    fn row_budgets_follow_the_devices_and_sum_to_the_total() {
        let parts = |total: u64, devices: u32, count: u32| -> Vec<u64> {
            (0..count)
                .map(|i| {
                    Shard::new(i, count)
                        .unwrap()
                        .share_by_devices(total, devices)
                })
                .collect()
        };
        // 3 devices over 2 shards: 1 and 2 of them.
        assert_eq!(parts(1001, 3, 2), [333, 668]);
        assert_eq!(parts(1001, 3, 3), [333, 334, 334]);
        assert_eq!(
            parts(1001, 2, 3),
            [0, 500, 501],
            "a shard without devices gets 0"
        );
        assert_eq!(parts(10, 0, 3), [3, 3, 4], "unknown devices: equal parts");
        for total in [0u64, 1, 7, 1001, 1_000_003, u64::MAX] {
            for devices in [1u32, 2, 3, 10, 1001, u32::MAX] {
                for count in [1u32, 2, 3, 4, 7, 64] {
                    let p = parts(total, devices, count);
                    let sum: u128 = p.iter().map(|&x| u128::from(x)).sum();
                    assert_eq!(sum, u128::from(total), "{total} / {devices} / {count}");
                    for (i, &part) in p.iter().enumerate() {
                        let mine = Shard::new(i as u32, count).unwrap().devices(devices);
                        let fair = u128::from(total) * mine.len() as u128;
                        let d = u128::from(devices);
                        // floor(fair / d) <= part <= ceil(fair / d)
                        assert!(
                            u128::from(part) * d + d > fair && u128::from(part) * d < fair + d,
                            "{total} / {devices} / {count}: {p:?}"
                        );
                    }
                }
            }
        }
    }
}
