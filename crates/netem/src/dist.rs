//! netem's delay distribution tables, generated as iproute2's `netem/*.c` generators do.
//!
//! `tc ... distribution normal` reads `/usr/lib/tc/normal.dist`, a file iproute2 builds at
//! compile time by running `netem/normal.c` (and `pareto.c`, `paretonormal.c`). Those files
//! are not installed everywhere (not on this project's machines), so the tables are
//! computed here with the same arithmetic: the same double-precision loop, `erf` and
//! `pow`, round-half-even (`rint`) and clamping to `i16`. The `distribution normal` golden
//! vector (captured from iproute2 6.1) proves the normal table byte for byte.
//!
//! A table is 4096 signed 16-bit values: the inverse cumulative distribution, scaled by
//! `NETEM_DIST_SCALE` (8192), sampled at every 4th of 16384 points.

use std::sync::OnceLock;

use crate::spec::Distribution;

/// The kernel's `NETEM_DIST_SCALE`.
pub const NETEM_DIST_SCALE: f64 = 8192.0;
const TABLESIZE: usize = 16384;

/// The table for a distribution (computed once).
pub fn table(dist: Distribution) -> &'static [i16] {
    static NORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETO: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETONORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    match dist {
        Distribution::Normal => NORMAL.get_or_init(normal_table),
        Distribution::Pareto => PARETO.get_or_init(pareto_table),
        Distribution::ParetoNormal => PARETONORMAL.get_or_init(paretonormal_table),
    }
}

/// Which distribution a table is, if it is one of ours.
pub fn identify(values: &[i16]) -> Option<Distribution> {
    Distribution::ALL.into_iter().find(|d| table(*d) == values)
}

fn clamp_i16(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// The standard normal CDF, as normal.c writes it.
fn normal_cdf(x: f64) -> f64 {
    let (mu, sigma) = (0.0, 1.0);
    0.5 + 0.5 * libm::erf((x - mu) / (2.0f64.sqrt() * sigma))
}

/// normal.c's inverse-CDF table over x in [-10, 10.05) by steps of 0.00005: for each of the
/// 16385 CDF buckets, the largest x that rounds into it.
fn inverse_normal() -> Vec<f64> {
    let mut table = vec![0.0f64; TABLESIZE + 1];
    let mut x = -10.0f64;
    while x < 10.05 {
        let i = (TABLESIZE as f64 * normal_cdf(x)).round_ties_even() as usize;
        table[i] = x;
        x += 0.00005;
    }
    table
}

fn normal_table() -> Vec<i16> {
    let table = inverse_normal();
    (0..TABLESIZE)
        .step_by(4)
        .map(|i| clamp_i16((table[i] * NETEM_DIST_SCALE).round_ties_even() as i32))
        .collect()
}

/// pareto.c's value for a (scaled) cumulative probability `i / 65536`.
fn pareto_value(i: i32) -> i32 {
    let a = 3.0f64;
    let mut dvalue = f64::from(i) / 65536.0;
    dvalue = 1.0 / dvalue.powf(1.0 / a);
    dvalue -= 1.5;
    dvalue *= (4.0 / 3.0) * NETEM_DIST_SCALE;
    if dvalue > 32767.0 {
        dvalue = 32767.0;
    }
    dvalue.round_ties_even() as i32
}

fn pareto_table() -> Vec<i16> {
    (1..=4096)
        .rev()
        .map(|k| clamp_i16(pareto_value(k * 16)))
        .collect()
}

fn paretonormal_table() -> Vec<i16> {
    let table = inverse_normal();
    (0..TABLESIZE)
        .step_by(4)
        .map(|i| {
            let normvalue = (table[i] * NETEM_DIST_SCALE).round_ties_even() as i32;
            let parvalue = pareto_value(65536 - 4 * i as i32);
            // C integer division truncates toward zero, as Rust's does.
            clamp_i16((normvalue + 3 * parvalue) / 4)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_4096_monotonic_entries() {
        for dist in Distribution::ALL {
            let t = table(dist);
            assert_eq!(t.len(), 4096, "{dist:?}");
            assert!(t.windows(2).all(|w| w[0] <= w[1]), "{dist:?} not monotonic");
            assert_eq!(identify(t), Some(dist));
        }
        let normal = table(Distribution::Normal);
        assert_eq!(normal[0], i16::MIN);
        // The median of a standard normal is 0.
        assert!(normal[2048].abs() <= 1, "{}", normal[2048]);
        assert_eq!(table(Distribution::Pareto)[0], -5461);
    }
}
