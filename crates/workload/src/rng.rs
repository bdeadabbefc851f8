//! Seeding and hashing helpers: one random stream per device, derived from the run's seed,
//! and stateless hashes for per-row decisions (missing rows, late rows, disorder).

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::SplitMix64;

/// The random stream of one device. SplitMix64 keeps 8 bytes of state, so a million
/// devices cost 8 MB, and one call yields 64 bits for several values.
pub(crate) type DeviceRng = SplitMix64;

/// SplitMix64's output function: a strong 64-bit mixer.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of the seed and up to three coordinates; equal inputs give equal outputs.
#[inline]
pub(crate) fn hash(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    mix64(seed ^ mix64(a ^ mix64(b.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ mix64(c))))
}

/// The random stream of `device` in `stream` (streams keep, say, tag values apart from
/// field values).
pub(crate) fn device_rng(seed: u64, stream: u64, device: u32) -> DeviceRng {
    DeviceRng::seed_from_u64(hash(seed, stream, device as u64, 0))
}

/// A uniform float in [0, 1) from 53 random bits.
#[inline]
pub(crate) fn unit(r: u64) -> f64 {
    (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform float in [0, 1) from the device's stream.
#[inline]
pub(crate) fn next_unit(rng: &mut DeviceRng) -> f64 {
    unit(rng.next_u64())
}

/// A uniform integer in `0..n` (n > 0) from 64 random bits, without division.
#[inline]
pub(crate) fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}

/// Whether a hash value falls under `ratio` (0 = never, 1 = always).
#[inline]
pub(crate) fn chance(h: u64, ratio: f64) -> bool {
    ratio > 0.0 && unit(h) < ratio
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(mut rng: DeviceRng) -> Vec<u64> {
        (0..4).map(|_| rng.next_u64()).collect()
    }

    #[test]
    fn streams_are_deterministic_and_distinct() {
        assert_eq!(draws(device_rng(1, 0, 5)), draws(device_rng(1, 0, 5)));
        assert_ne!(draws(device_rng(1, 0, 5)), draws(device_rng(1, 0, 6)));
        assert_ne!(draws(device_rng(1, 0, 5)), draws(device_rng(2, 0, 5)));
        assert_ne!(draws(device_rng(1, 0, 5)), draws(device_rng(1, 1, 5)));
    }

    #[test]
    fn below_and_chance_cover_their_ranges() {
        let mut rng = device_rng(9, 1, 1);
        let mut seen = [0u32; 7];
        let mut hits = 0;
        for _ in 0..70_000 {
            let r = rng.next_u64();
            seen[below(r, 7) as usize] += 1;
            if chance(mix64(r), 0.25) {
                hits += 1;
            }
        }
        assert!(
            seen.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{seen:?}"
        );
        assert!((16_000..19_000).contains(&hits), "{hits}");
        assert!(!chance(0, 0.0));
        assert!(chance(u64::MAX, 1.0));
    }
}
