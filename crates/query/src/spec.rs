//! Query specs (a type, its hosts, its time window) and their seeded random choice.
//!
//! Query `i` of a run is a pure function of `(seed, i)`: its own SplitMix64 stream, seeded
//! from a hash of both, draws first the window, then the hosts. So worker `w` of `W`
//! (taking queries `w, w + W, w + 2W, ...`) has a stream independent of the others, and
//! the run's queries as a whole are the same for any worker count.

use crate::QueryError;
use crate::types::QueryType;

const NS_PER_SEC: i64 = 1_000_000_000;

/// A half-open time range `[start_ns, end_ns)`, ns since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeWindow {
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One query: its type and the random choices TSBS makes for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QuerySpec {
    pub query_type: QueryType,
    /// Host numbers (`host_N`), distinct, in the order drawn; `query_type.hosts()` of
    /// them, none for the types over all hosts.
    pub hosts: Vec<u32>,
    /// The time range; `None` only for lastpoint. For groupby-orderby-limit only the end
    /// is used (`time < end`).
    pub window: Option<TimeWindow>,
}

impl QuerySpec {
    /// Checks that the spec fits its type: the number of hosts, distinct; a window of the
    /// type's length (any for lastpoint, which has none).
    pub fn check(&self) -> Result<(), QueryError> {
        let t = self.query_type;
        let bad = |message: String| {
            Err(QueryError::BadSpec {
                query_type: t,
                message,
            })
        };
        if self.hosts.len() != t.hosts() as usize {
            return bad(format!(
                "has {} hosts; the type takes {}",
                self.hosts.len(),
                t.hosts()
            ));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            if self.hosts[..i].contains(h) {
                return bad(format!("host_{h} appears twice"));
            }
        }
        match (t.window_ns(), self.window) {
            (None, None) => Ok(()),
            (None, Some(_)) => bad("has a window; the type reads all data".into()),
            (Some(_), None) => bad("has no time window".into()),
            (Some(len), Some(w)) if w.end_ns.checked_sub(w.start_ns) != Some(len) => bad(format!(
                "window is {} ns long; the type takes {len} ns",
                w.end_ns as i128 - w.start_ns as i128
            )),
            _ => Ok(()),
        }
    }
}

/// SplitMix64's output function.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A SplitMix64 stream (8 bytes of state).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// A uniform integer in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Stream id that keeps query choices apart from other uses of the same seed.
const QUERY_STREAM: u64 = 0x7473_6273_7175_6572;

/// Draws the random parts of query specs: hosts among `scale` hosts, windows inside the
/// data's time range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecGenerator {
    seed: u64,
    scale: u32,
    start_ns: i64,
    end_ns: i64,
}

impl SpecGenerator {
    /// Queries over `scale` hosts (`host_0` .. `host_{scale-1}`) with data in
    /// `[start_ns, end_ns)`.
    pub fn new(seed: u64, scale: u32, start_ns: i64, end_ns: i64) -> Result<Self, QueryError> {
        if scale == 0 {
            return Err(QueryError::config("scale", "must be at least 1"));
        }
        if end_ns <= start_ns {
            return Err(QueryError::config("end", "must be later than start"));
        }
        Ok(SpecGenerator {
            seed,
            scale,
            start_ns,
            end_ns,
        })
    }

    /// Whether `query_type` can be drawn over this data: enough hosts, a window no longer
    /// than the data's range. The error names the type and what it needs.
    pub fn check(&self, query_type: QueryType) -> Result<(), QueryError> {
        if query_type.hosts() > self.scale {
            return Err(QueryError::config(
                "scale",
                format!(
                    "query type {query_type} needs {} distinct hosts but the data has {} \
                     (scale {}); load more hosts or leave the type out",
                    query_type.hosts(),
                    self.scale,
                    self.scale
                ),
            ));
        }
        if let Some(len) = query_type.window_ns() {
            let range = self.end_ns as i128 - self.start_ns as i128;
            if (len as i128) > range {
                return Err(QueryError::config(
                    "end",
                    format!(
                        "query type {query_type} needs a {} window but the data covers only {} \
                         ({} to {}); load a longer time range or leave the type out",
                        duration_text(len as i128),
                        duration_text(range),
                        crate::time::rfc3339(self.start_ns),
                        crate::time::rfc3339(self.end_ns)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Fills `spec` with query `index` of type `query_type` (reusing its host vector).
    /// Windows start a whole number of seconds after the data's start, uniformly among
    /// the starts that keep the window inside the data (TSBS draws nanoseconds but
    /// prints whole seconds). Hosts are distinct, drawn uniformly without replacement.
    /// The type must pass [`SpecGenerator::check`], or this returns its error.
    pub fn fill(
        &self,
        index: u64,
        query_type: QueryType,
        spec: &mut QuerySpec,
    ) -> Result<(), QueryError> {
        self.check(query_type)?;
        let mut rng = SplitMix64(mix64(
            self.seed ^ mix64(QUERY_STREAM ^ mix64(index.wrapping_add(0x632b_e59b_d9b4_e019))),
        ));
        spec.query_type = query_type;
        spec.window = query_type.window_ns().map(|len| {
            let slack = (self.end_ns as i128 - self.start_ns as i128 - len as i128) as u128;
            let steps = (slack / NS_PER_SEC as u128) as u64;
            let offset = rng.below(steps.saturating_add(1)) as i64 * NS_PER_SEC;
            let start_ns = self.start_ns + offset;
            TimeWindow {
                start_ns,
                end_ns: start_ns + len,
            }
        });
        spec.hosts.clear();
        while spec.hosts.len() < query_type.hosts() as usize {
            let h = rng.below(self.scale as u64) as u32;
            if !spec.hosts.contains(&h) {
                spec.hosts.push(h);
            }
        }
        Ok(())
    }

    /// Query `index` of type `query_type` as a new spec.
    pub fn spec(&self, index: u64, query_type: QueryType) -> Result<QuerySpec, QueryError> {
        let mut spec = QuerySpec {
            query_type,
            hosts: Vec::new(),
            window: None,
        };
        self.fill(index, query_type, &mut spec)?;
        Ok(spec)
    }

    pub fn scale(&self) -> u32 {
        self.scale
    }

    pub fn start_ns(&self) -> i64 {
        self.start_ns
    }

    pub fn end_ns(&self) -> i64 {
        self.end_ns
    }
}

/// `12h`, `1h30m`, `45m10s`, `0.5s` ...
fn duration_text(ns: i128) -> String {
    let secs = ns / NS_PER_SEC as i128;
    if secs * NS_PER_SEC as i128 != ns || secs == 0 {
        return format!("{}s", ns as f64 / NS_PER_SEC as f64);
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (v, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if v != 0 {
            out.push_str(&format!("{v}{unit}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_451_606_400 * NS_PER_SEC;
    const H: i64 = 3600 * NS_PER_SEC;

    fn generator(scale: u32, hours: i64) -> SpecGenerator {
        SpecGenerator::new(7, scale, T0, T0 + hours * H).unwrap()
    }

    #[test]
    fn specs_are_a_function_of_seed_and_index() {
        let g = generator(100, 24);
        for t in QueryType::ALL {
            for i in 0..50 {
                assert_eq!(g.spec(i, t).unwrap(), g.spec(i, t).unwrap());
            }
        }
        let a: Vec<_> = (0..50)
            .map(|i| g.spec(i, QueryType::CpuMaxAll_8).unwrap())
            .collect();
        let other = SpecGenerator::new(8, 100, T0, T0 + 24 * H).unwrap();
        let b: Vec<_> = (0..50)
            .map(|i| other.spec(i, QueryType::CpuMaxAll_8).unwrap())
            .collect();
        assert_ne!(a, b, "another seed, other choices");
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        assert!(distinct.len() > 45, "indexes draw independently");
    }

    #[test]
    fn windows_stay_inside_the_data_and_cover_it() {
        let g = generator(10, 13);
        for t in QueryType::ALL {
            let Some(len) = t.window_ns() else {
                assert_eq!(g.spec(0, t).unwrap().window, None);
                continue;
            };
            let (mut first, mut last) = (i64::MAX, i64::MIN);
            for i in 0..2000 {
                let s = g.spec(i, t).unwrap();
                s.check().unwrap();
                let w = s.window.unwrap();
                assert_eq!(w.end_ns - w.start_ns, len, "{t}");
                assert!(w.start_ns >= T0 && w.end_ns <= T0 + 13 * H, "{t} {w:?}");
                assert_eq!((w.start_ns - T0) % NS_PER_SEC, 0, "whole seconds");
                first = first.min(w.start_ns);
                last = last.max(w.start_ns);
            }
            let slack = 13 * H - len;
            assert!(first - T0 < slack / 50, "{t}: earliest start {first}");
            assert!(T0 + slack - last < slack / 50, "{t}: latest start {last}");
        }
        // A window as long as the data starts at the data's start.
        let g = generator(10, 12);
        let w = g.spec(3, QueryType::HighCpu_All).unwrap().window.unwrap();
        assert_eq!((w.start_ns, w.end_ns), (T0, T0 + 12 * H));
    }

    #[test]
    fn hosts_are_distinct_and_cover_the_scale() {
        let g = generator(8, 24);
        let mut seen = [0u32; 8];
        for i in 0..500 {
            let s = g.spec(i, QueryType::SingleGroupby_5_8_1).unwrap();
            let mut hosts = s.hosts.clone();
            hosts.sort_unstable();
            assert_eq!(hosts, (0..8).collect::<Vec<_>>(), "8 of 8: every host once");
            let s = g.spec(i, QueryType::CpuMaxAll_1).unwrap();
            assert_eq!(s.hosts.len(), 1);
            seen[s.hosts[0] as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 30), "{seen:?}");
        let g = generator(1000, 24);
        for i in 0..500 {
            let s = g.spec(i, QueryType::CpuMaxAll_8).unwrap();
            s.check().unwrap();
            assert!(s.hosts.iter().all(|&h| h < 1000));
        }
        assert!(g.spec(0, QueryType::Lastpoint).unwrap().hosts.is_empty());
    }

    #[test]
    fn types_that_do_not_fit_the_data_are_errors() {
        let g = generator(4, 6);
        let e = g.check(QueryType::CpuMaxAll_8).unwrap_err();
        assert!(
            matches!(&e, QueryError::Config { key, .. } if key == "scale"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("cpu-max-all-8 needs 8 distinct hosts"),
            "{e}"
        );
        let e = g.spec(0, QueryType::DoubleGroupby_1).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("end: "), "{msg}");
        assert!(msg.contains("double-groupby-1 needs a 12h window"), "{msg}");
        assert!(msg.contains("covers only 6h"), "{msg}");
        assert!(g.check(QueryType::SingleGroupby_1_1_1).is_ok());
        assert!(SpecGenerator::new(1, 0, 0, 1).is_err());
        assert!(SpecGenerator::new(1, 1, 5, 5).is_err());
        assert_eq!(duration_text(90 * 60 * NS_PER_SEC as i128), "1h30m");
        assert_eq!(duration_text(NS_PER_SEC as i128 / 2), "0.5s");
    }

    #[test]
    fn spec_check_catches_specs_that_do_not_fit() {
        let good = generator(10, 24)
            .spec(1, QueryType::SingleGroupby_1_8_1)
            .unwrap();
        good.check().unwrap();
        let mut s = good.clone();
        s.hosts.pop();
        assert!(s.check().unwrap_err().to_string().contains("has 7 hosts"));
        let mut s = good.clone();
        s.hosts[1] = s.hosts[0];
        assert!(s.check().unwrap_err().to_string().contains("appears twice"));
        let mut s = good.clone();
        s.window = None;
        assert!(s.check().is_err());
        let mut s = good;
        s.window.as_mut().unwrap().end_ns += 1;
        assert!(s.check().unwrap_err().to_string().contains("window is"));
    }
}
