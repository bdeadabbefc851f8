//! Shared helpers for the criterion benchmarks: the data sets they run on.

use tsload_workload::{CpuOnly, Devops, TsbsConfig};

/// 2016-01-01T00:00:00Z, TSBS's default start.
pub const START_NS: i64 = 1_451_606_400_000_000_000;

/// TSBS settings for `scale` hosts over `hours` hours at 10 s, seed 123.
pub fn tsbs(scale: u32, hours: i64) -> TsbsConfig {
    TsbsConfig {
        seed: 123,
        scale,
        start_ns: START_NS,
        end_ns: START_NS + hours * 3_600_000_000_000,
        interval_ns: 10_000_000_000,
        churn: None,
        arrival: tsload_workload::Arrival::default(),
        pods: 1,
        wave: None,
    }
}

/// TSBS cpu-only; the settings are valid, so this cannot fail.
pub fn cpu_only(scale: u32, hours: i64) -> CpuOnly {
    CpuOnly::new(tsbs(scale, hours)).expect("valid cpu-only settings")
}

/// TSBS devops; the settings are valid, so this cannot fail.
pub fn devops(scale: u32, hours: i64) -> Devops {
    Devops::new(tsbs(scale, hours)).expect("valid devops settings")
}
