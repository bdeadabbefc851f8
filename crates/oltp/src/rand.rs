//! Random choices as sysbench makes them: uniform and 'special' integers in `[a, b]` from
//! a xoroshiro128+ stream (sysbench's generator), and strings of random digits in
//! 11-digit groups. Every stream is seeded from a hash of the seed and its coordinates.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoroshiro128Plus;

use crate::config::RandType;

/// Streams kept apart by the first hashed coordinate.
pub(crate) const STREAM_LOAD: u64 = 1;
pub(crate) const STREAM_RUN: u64 = 2;

/// Digits per group of a `c` or `pad` value.
const GROUP_DIGITS: usize = 11;
/// Groups of `c` (119 characters) and `pad` (59 characters).
pub(crate) const C_GROUPS: usize = 10;
pub(crate) const PAD_GROUPS: usize = 5;
/// sysbench's `--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res` defaults.
const SPECIAL_ITER: u32 = 12;
const SPECIAL_PCT: f64 = 1.0;
const SPECIAL_RES: f64 = 75.0;

/// Length of a string of `groups` digit groups separated by dashes.
pub(crate) const fn digits_len(groups: usize) -> usize {
    groups * (GROUP_DIGITS + 1) - 1
}

/// SplitMix64's output function: every output bit depends on every input bit.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of the seed and three coordinates.
fn hash(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    mix64(seed ^ mix64(a ^ mix64(b.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ mix64(c))))
}

/// One random stream.
#[derive(Debug, Clone)]
pub(crate) struct Rng(Xoroshiro128Plus);

impl Rng {
    /// The stream at (`stream`, `a`, `b`) of `seed`.
    pub(crate) fn new(seed: u64, stream: u64, a: u64, b: u64) -> Self {
        Rng(Xoroshiro128Plus::seed_from_u64(hash(seed, stream, a, b)))
    }

    /// A uniform double in [0, 1) from 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[a, b]` (`a <= b`).
    pub(crate) fn uniform(&mut self, a: u32, b: u32) -> u32 {
        let span = f64::from(b - a) + 1.0;
        (a + (self.unit() * span) as u32).min(b)
    }

    /// sysbench 1.0's 'special' distribution over `[a, b]`: with probability 3/4 uniform
    /// over the middle 1% of the range, otherwise the mean of 12 uniform draws (a bell
    /// over the whole range).
    pub(crate) fn special(&mut self, a: u32, b: u32) -> u32 {
        let t = f64::from(b - a);
        let rnd = self.unit();
        let offset = if rnd * t * (100.0 / (100.0 - SPECIAL_RES)) < t {
            let sum: f64 = (0..SPECIAL_ITER).map(|_| self.unit()).sum();
            sum * t / f64::from(SPECIAL_ITER)
        } else {
            // The draw that chose this branch is in [bell, 1): rescaled to [0, 1), it picks
            // uniformly among the SPECIAL_PCT percent of values in the middle of the range
            // (at least one), as sysbench's `res % d + t/2 - t*pct/200` does.
            let bell = (100.0 - SPECIAL_RES) / 100.0;
            let width = (t * SPECIAL_PCT / 100.0).floor().max(1.0);
            let u = ((rnd - bell) / (1.0 - bell)).clamp(0.0, 1.0 - f64::EPSILON);
            (u * width).floor() + (t / 2.0 - t * SPECIAL_PCT / 200.0).floor()
        };
        (a + offset as u32).min(b)
    }

    /// An integer in `[a, b]` from the configured distribution (sysbench's
    /// `sysbench.rand.default`).
    pub(crate) fn default(&mut self, rand_type: RandType, a: u32, b: u32) -> u32 {
        match rand_type {
            RandType::Uniform => self.uniform(a, b),
            RandType::Special => self.special(a, b),
        }
    }

    /// Appends `groups` groups of 11 uniform random digits separated by dashes
    /// (sysbench's `###########-...` templates). One 64-bit draw makes a group: each digit
    /// is the integer part of ten times the remaining fraction.
    pub(crate) fn digits(&mut self, groups: usize, out: &mut String) {
        out.reserve(digits_len(groups));
        for g in 0..groups {
            if g > 0 {
                out.push('-');
            }
            let mut frac = self.0.next_u64();
            for _ in 0..GROUP_DIGITS {
                let m = u128::from(frac) * 10;
                out.push(char::from(b'0' + (m >> 64) as u8));
                frac = m as u64;
            }
        }
    }

    /// A new string of `groups` digit groups.
    pub(crate) fn digit_string(&mut self, groups: usize) -> String {
        let mut s = String::new();
        self.digits(groups, &mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let draw = |mut r: Rng| (0..4).map(|_| r.uniform(1, 1_000_000)).collect::<Vec<_>>();
        assert_eq!(draw(Rng::new(1, 2, 3, 4)), draw(Rng::new(1, 2, 3, 4)));
        assert_ne!(draw(Rng::new(1, 2, 3, 4)), draw(Rng::new(2, 2, 3, 4)));
        assert_ne!(draw(Rng::new(1, 2, 3, 4)), draw(Rng::new(1, 2, 3, 5)));
        assert_ne!(draw(Rng::new(1, 2, 3, 4)), draw(Rng::new(1, 1, 3, 4)));
    }

    #[test]
    fn uniform_covers_its_range_evenly() {
        let mut r = Rng::new(7, 0, 0, 0);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.uniform(1, 10);
            assert!((1..=10).contains(&v));
            seen[v as usize - 1] += 1;
        }
        for n in seen {
            assert!((9_000..11_000).contains(&n), "{seen:?}");
        }
        assert_eq!(r.uniform(5, 5), 5);
        let v = r.uniform(0, u32::MAX);
        let _ = v; // the full range does not overflow
    }

    #[test]
    fn special_puts_three_quarters_in_the_middle_percent() {
        let mut r = Rng::new(7, 0, 0, 0);
        let (a, b) = (1u32, 10_000u32);
        let n = 200_000;
        let mut middle = 0;
        for _ in 0..n {
            let v = r.special(a, b);
            assert!((a..=b).contains(&v));
            // The hot spot: [t/2 - t/200, t/2 + t/200 + 1] above a.
            if (4_951..=5_052).contains(&v) {
                middle += 1;
            }
        }
        let share = f64::from(middle) / f64::from(n);
        assert!(
            (0.75..0.80).contains(&share),
            "share in the middle 1%: {share}"
        );
        for b in [1u32, 2, 3, 10] {
            for _ in 0..1_000 {
                assert!((1..=b).contains(&r.special(1, b)));
            }
        }
    }

    #[test]
    fn digit_strings_match_sysbench_templates() {
        let mut r = Rng::new(3, 0, 0, 0);
        let c = r.digit_string(C_GROUPS);
        let pad = r.digit_string(PAD_GROUPS);
        assert_eq!(c.len(), 119);
        assert_eq!(pad.len(), 59);
        for s in [&c, &pad] {
            for (i, ch) in s.chars().enumerate() {
                if i % 12 == 11 {
                    assert_eq!(ch, '-', "{s}");
                } else {
                    assert!(ch.is_ascii_digit(), "{s}");
                }
            }
        }
        let mut counts = [0u32; 10];
        for _ in 0..2_000 {
            for ch in r.digit_string(C_GROUPS).bytes().filter(u8::is_ascii_digit) {
                counts[usize::from(ch - b'0')] += 1;
            }
        }
        // 220,000 digits: 22,000 each expected.
        for n in counts {
            assert!((21_000..23_000).contains(&n), "{counts:?}");
        }
    }
}
